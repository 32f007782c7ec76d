/* The checkpoint directory layout (src/run/train/checkpoint_dir.h): one step
 * directory per save, `latest` swapped by rename, --keep pruning, and what
 * a load finds after every state a crash can leave (a partial directory, a
 * renamed one before the swap, a dangling `latest`), plus a directory
 * written before this layout. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/train/checkpoint_dir.h"
#include "tap.h"

static char root[256];

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (fp) {
        fputs(text, fp);
        fclose(fp);
    }
}

/* The checkpoint's files in dir (made if missing), each holding the step as text */
static void write_files(const char *dir, long steps)
{
    char path[4500], text[32];
    mkdir(dir, 0755);
    snprintf(text, sizeof text, "%ld", steps);
    for (int i = 0; i < WP_CHECKPOINT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, wp_checkpoint_files[i]);
        write_text(path, text);
    }
}

/* One save as the runtime makes it: begin, the files, commit */
static int save(const char *dir, long steps, int keep)
{
    char partial[4400];
    struct wp_err err = {0};
    if (wp_checkpoint_dir_begin(dir, steps, partial, sizeof partial, &err))
        return -1;
    write_files(partial, steps);
    return wp_checkpoint_dir_commit(dir, steps, keep, &err);
}

static int exists(const char *dir, const char *name)
{
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return lstat(path, &st) == 0;
}

/* The step a file read through path holds (-1: unreadable) */
static long step_in(const char *path)
{
    FILE *fp = fopen(path, "r");
    long steps = -1;
    if (fp) {
        if (fscanf(fp, "%ld", &steps) != 1)
            steps = -1;
        fclose(fp);
    }
    return steps;
}

/* The directory a load from dir would read, and the step it holds */
static long resolved_step(const char *dir, char *note, size_t size)
{
    char out[4400], path[4500];
    struct wp_err err = {0};
    if (wp_checkpoint_dir_resolve(dir, out, sizeof out, note, size, &err))
        return -2;
    snprintf(path, sizeof path, "%s/model.safetensors", out);
    return step_in(path);
}

static void remove_all(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

int main(void)
{
    char dir[300], path[4500], note[1024];
    snprintf(root, sizeof root, "/tmp/wp-test-ckdir.%ld", (long)getpid());
    remove_all(root);
    mkdir(root, 0755);

    /* saves every step, keep 2 */
    snprintf(dir, sizeof dir, "%s/a", root);
    int rc = 0;
    for (long s = 1; s <= 4; s++)
        rc |= save(dir, s, 2);
    is_int(rc, 0, "four saves with keep 2");
    ok(!exists(dir, "step-00000001") && !exists(dir, "step-00000002"), "the two oldest pruned");
    ok(exists(dir, "step-00000003") && exists(dir, "step-00000004"), "the two newest kept");
    snprintf(path, sizeof path, "%s/latest/model.safetensors", dir);
    is_int(step_in(path), 4, "latest is step 4");
    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    is_int(step_in(path), 4, "DIR/optimizer.safetensors reads the latest through its link");
    is_int(resolved_step(dir, note, sizeof note), 4, "a load from DIR reads step 4");
    ok(note[0] == '\0', "without a warning");

    /* keep 0 keeps everything */
    snprintf(dir, sizeof dir, "%s/all", root);
    rc = 0;
    for (long s = 10; s <= 30; s += 10)
        rc |= save(dir, s, 0);
    is_int(rc, 0, "three saves with keep 0");
    ok(exists(dir, "step-00000010") && exists(dir, "step-00000020") && exists(dir, "step-00000030"), "all kept");

    /* a crash while writing step 5: a partial directory, latest untouched */
    snprintf(dir, sizeof dir, "%s/a", root);
    snprintf(path, sizeof path, "%s/step-00000005.partial", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/step-00000005.partial/optimizer.safetensors", dir);
    write_text(path, "5");
    is_int(resolved_step(dir, note, sizeof note), 4, "a partial step 5 is not loaded: step 4 is");
    rc = save(dir, 6, 2);
    is_int(rc, 0, "the next save");
    ok(!exists(dir, "step-00000005.partial"), "removes the leftover partial directory");
    ok(!exists(dir, "step-00000003") && exists(dir, "step-00000004") && exists(dir, "step-00000006"), "keeps 2");

    /* a crash between the rename and the swap: step 7 whole, latest still 6 */
    snprintf(path, sizeof path, "%s/step-00000007", dir);
    write_files(path, 7);
    is_int(resolved_step(dir, note, sizeof note), 6, "a step directory published before the swap: latest (6) is loaded");

    /* latest dangling (its directory deleted by hand): the newest complete one, said */
    snprintf(path, sizeof path, "%s/step-00000006", dir);
    remove_all(path);
    is_int(resolved_step(dir, note, sizeof note), 7, "latest dangling: the newest complete step directory");
    ok(strstr(note, "latest points to step-00000006") != NULL, "with a note naming the missing target: %s", note);

    /* an incomplete directory is passed over for the next older one */
    snprintf(path, sizeof path, "%s/step-00000007/model.safetensors", dir);
    unlink(path);
    is_int(resolved_step(dir, note, sizeof note), 4, "an incomplete step directory is skipped");

    /* the same step saved twice (a resumed run stopped before its first step) */
    rc = save(dir, 4, 2) | save(dir, 4, 2);
    is_int(rc, 0, "step 4 saved again");
    is_int(resolved_step(dir, note, sizeof note), 4, "and loaded");

    /* a directory written before this layout: plain files, loaded as it is, superseded by the next save */
    snprintf(dir, sizeof dir, "%s/old", root);
    write_files(dir, 3);
    is_int(resolved_step(dir, note, sizeof note), 3, "a single-checkpoint directory is loaded as it is");
    is_int(save(dir, 8, 0), 0, "a save into it");
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    is_int(step_in(path), 8, "its model.safetensors now follows latest");
    is_int(resolved_step(dir, note, sizeof note), 8, "and a load reads step 8");

    /* a step directory named directly */
    snprintf(dir, sizeof dir, "%s/all/step-00000020", root);
    is_int(resolved_step(dir, note, sizeof note), 20, "DIR/step-N given directly");

    /* a checkpoint directory that cannot be made */
    struct wp_err err = {0};
    char partial[4400];
    snprintf(dir, sizeof dir, "%s/a/latest/model.safetensors/x", root);
    ok(wp_checkpoint_dir_begin(dir, 1, partial, sizeof partial, &err) != 0 && strstr(err.msg, "cannot create"),
       "an impossible directory is refused: %s", err.msg);

    remove_all(root);
    printf("1..%d\n", tap.count);
    return tap.failed ? 1 : 0;
}
