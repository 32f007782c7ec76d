/* Checkpoint directories: one per save, an atomic `latest` link, pruning
 * and resolution (see checkpoint_dir.h). */
#include "run/train/checkpoint_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *const wp_checkpoint_files[WP_CHECKPOINT_FILES] = {"optimizer.safetensors", "model.safetensors",
                                                              "config.json"};

#define PARTIAL_SUFFIX ".partial"
#define LATEST "latest"

/* The steps of a directory entry named step-<digits>[.partial]: -1 for any
 * other name; *partial says which. */
static long step_of_name(const char *name, int *partial)
{
    if (strncmp(name, "step-", 5) != 0 || name[5] < '0' || name[5] > '9')
        return -1;
    char *end;
    errno = 0;
    long steps = strtol(name + 5, &end, 10);
    if (errno || steps < 0)
        return -1;
    *partial = strcmp(end, PARTIAL_SUFFIX) == 0;
    return *partial || *end == '\0' ? steps : -1;
}

static void step_name(long steps, int partial, char *buf, size_t size)
{
    snprintf(buf, size, "step-%08ld%s", steps, partial ? PARTIAL_SUFFIX : "");
}

/* fsync on a directory makes its renames durable (where the file system
 * allows it: some return EINVAL, which is no failure) */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd) != 0 && errno != EINVAL ? -1 : 0;
    close(fd);
    return rc;
}

/* Removes a step directory: it holds only plain files (the checkpoint's and
 * temporaries of an interrupted write), so nothing is followed or recursed. */
static int remove_step_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    char file[4400];
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        unlink(file);
    }
    closedir(d);
    return rmdir(path);
}

/* A directory holding every checkpoint file (the loader checks their contents) */
static int complete(const char *path)
{
    char file[4400];
    for (int i = 0; i < WP_CHECKPOINT_FILES; i++) {
        struct stat st;
        snprintf(file, sizeof file, "%s/%s", path, wp_checkpoint_files[i]);
        if (stat(file, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0)
            return 0;
    }
    return 1;
}

/* DIR/name becomes a symbolic link to target, replacing whatever was there
 * in one rename (a reader sees the old link or the new one). */
static int swap_link(const char *dir, const char *name, const char *target, struct wp_err *err)
{
    char tmp[4400], path[4400];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.%ld", dir, name, (long)getpid());
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(tmp);
    if (symlink(target, tmp) != 0)
        return wp_errorf(err, "cannot create the link %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        return wp_errorf(err, "cannot replace %s: %s", path, strerror(saved));
    }
    return 0;
}

/* Whether DIR/name is already a link to target */
static int links_to(const char *dir, const char *name, const char *target)
{
    char path[4400], buf[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n < 0)
        return 0;
    buf[n] = '\0';
    return strcmp(buf, target) == 0;
}

struct step_list {
    long *steps;
    int n;
};

static int by_steps_descending(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x < y) - (x > y);
}

/* The step directories of dir (partial ones or complete ones), newest first */
static int list_steps(const char *dir, int want_partial, struct step_list *out)
{
    out->steps = NULL;
    out->n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    int cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int partial;
        long steps = step_of_name(e->d_name, &partial);
        if (steps < 0 || partial != want_partial)
            continue;
        if (out->n == cap) {
            cap = cap ? 2 * cap : 16;
            long *grown = realloc(out->steps, (size_t)cap * sizeof *grown);
            if (!grown) {
                closedir(d);
                return -1;
            }
            out->steps = grown;
        }
        out->steps[out->n++] = steps;
    }
    closedir(d);
    if (out->n > 1) /* none: no array to sort (qsort takes no null pointer) */
        qsort(out->steps, (size_t)out->n, sizeof *out->steps, by_steps_descending);
    return 0;
}

int wp_checkpoint_dir_begin(const char *dir, long steps_done, char *partial, size_t size, struct wp_err *err)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return wp_errorf(err, "cannot create checkpoint directory %s: %s", dir, strerror(errno));
    char name[64];
    step_name(steps_done, 1, name, sizeof name);
    if ((size_t)snprintf(partial, size, "%s/%s", dir, name) >= size)
        return wp_errorf(err, "checkpoint directory name too long: %s", dir);
    if (remove_step_dir(partial) != 0 && errno != ENOENT)
        return wp_errorf(err, "cannot remove the leftover %s: %s", partial, strerror(errno));
    if (mkdir(partial, 0755) != 0)
        return wp_errorf(err, "cannot create %s: %s", partial, strerror(errno));
    return 0;
}

void wp_checkpoint_dir_abort(const char *partial)
{
    remove_step_dir(partial);
}

/* Removes step directories beyond the newest `keep` (never `current`) and
 * every partial one. Failures here cost only disk space: not errors. */
static void prune(const char *dir, long current, int keep)
{
    char path[4400], name[64];
    struct step_list l;
    if (keep > 0 && list_steps(dir, 0, &l) == 0) {
        int kept = 1; /* current */
        for (int i = 0; i < l.n; i++) {
            if (l.steps[i] == current)
                continue;
            if (kept < keep) {
                kept++;
                continue;
            }
            step_name(l.steps[i], 0, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", dir, name);
            remove_step_dir(path);
        }
        free(l.steps);
    }
    if (list_steps(dir, 1, &l) == 0) {
        for (int i = 0; i < l.n; i++) {
            step_name(l.steps[i], 1, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", dir, name);
            remove_step_dir(path);
        }
        free(l.steps);
    }
}

int wp_checkpoint_dir_commit(const char *dir, long steps_done, int keep, struct wp_err *err)
{
    char partial_name[64], final_name[64], partial[4400], final[4400];
    step_name(steps_done, 1, partial_name, sizeof partial_name);
    step_name(steps_done, 0, final_name, sizeof final_name);
    snprintf(partial, sizeof partial, "%s/%s", dir, partial_name);
    snprintf(final, sizeof final, "%s/%s", dir, final_name);
    if (sync_dir(partial) != 0)
        return wp_errorf(err, "cannot sync %s: %s", partial, strerror(errno));
    /* the same step saved again (a resumed run stopped before its first step) */
    if (remove_step_dir(final) != 0 && errno != ENOENT)
        return wp_errorf(err, "cannot replace %s: %s", final, strerror(errno));
    if (rename(partial, final) != 0)
        return wp_errorf(err, "cannot rename %s to %s: %s", partial, final, strerror(errno));
    if (sync_dir(dir) != 0)
        return wp_errorf(err, "cannot sync %s: %s", dir, strerror(errno));
    if (swap_link(dir, LATEST, final_name, err))
        return -1;
    /* DIR's own file names follow latest (a checkpoint written before this
     * layout had plain files there: the new step supersedes them) */
    for (int i = 0; i < WP_CHECKPOINT_FILES; i++) {
        char target[128];
        snprintf(target, sizeof target, LATEST "/%s", wp_checkpoint_files[i]);
        if (!links_to(dir, wp_checkpoint_files[i], target) && swap_link(dir, wp_checkpoint_files[i], target, err))
            return -1;
    }
    if (sync_dir(dir) != 0)
        return wp_errorf(err, "cannot sync %s: %s", dir, strerror(errno));
    prune(dir, steps_done, keep);
    return 0;
}

int wp_checkpoint_dir_resolve(const char *dir, char *out, size_t size, char *fallback, size_t fallback_size,
                              struct wp_err *err)
{
    char path[4400], target[256];
    fallback[0] = '\0';
    snprintf(path, sizeof path, "%s/" LATEST, dir);
    ssize_t n = readlink(path, target, sizeof target - 1);
    int has_latest = n >= 0;
    if (has_latest) {
        target[n] = '\0';
        snprintf(path, sizeof path, "%s/%s", dir, target);
        if (complete(path)) {
            if ((size_t)snprintf(out, size, "%s", path) >= size)
                return wp_errorf(err, "checkpoint path too long: %s", path);
            return 0;
        }
    }
    struct step_list l;
    if (list_steps(dir, 0, &l) != 0)
        return wp_errorf(err, "cannot read the checkpoint directory %s: %s", dir, strerror(errno));
    for (int i = 0; i < l.n; i++) {
        char name[64];
        step_name(l.steps[i], 0, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (!complete(path))
            continue;
        if (has_latest)
            snprintf(fallback, fallback_size, "%s/" LATEST " points to %s, which is missing or incomplete: loading %s",
                     dir, target, name);
        else
            snprintf(fallback, fallback_size, "%s has no " LATEST " link: loading its newest complete %s", dir, name);
        free(l.steps);
        if ((size_t)snprintf(out, size, "%s", path) >= size)
            return wp_errorf(err, "checkpoint path too long: %s", path);
        return 0;
    }
    free(l.steps);
    if ((size_t)snprintf(out, size, "%s", dir) >= size)
        return wp_errorf(err, "checkpoint path too long: %s", dir);
    return 0;
}
