/* The fuzz harnesses' scratch directory and the input written into it
 * (fuzz_input.h). */
#include "fuzz_input.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef WP_FUZZ_SRCDIR
#define WP_FUZZ_SRCDIR "."
#endif

static char scratch[512];

static void remove_tree(const char *dir)
{
    /* the harnesses write a handful of names at most: rm -r is enough */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

static void remove_scratch(void)
{
    if (scratch[0])
        remove_tree(scratch);
}

const char *wp_fuzz_dir(void)
{
    if (scratch[0])
        return scratch;
    const char *env = getenv("TMPDIR");
    const char *bases[] = {env && env[0] ? env : NULL, "/dev/shm", "/tmp"};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        if (!bases[i] || access(bases[i], W_OK) != 0)
            continue;
        snprintf(scratch, sizeof scratch, "%s/wp-fuzz-XXXXXX", bases[i]);
        if (mkdtemp(scratch)) {
            atexit(remove_scratch);
            return scratch;
        }
    }
    fprintf(stderr, "fuzz: no scratch directory: %s\n", strerror(errno));
    abort();
}

static void make_parents(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + strlen(wp_fuzz_dir()) + 1; (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        mkdir(buf, 0700);
        *s = '/';
    }
}

const char *wp_fuzz_file(const char *name, const uint8_t *data, size_t size)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", wp_fuzz_dir(), name);
    make_parents(path);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) {
        fprintf(stderr, "fuzz: cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
    return path;
}

void wp_fuzz_remove(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", wp_fuzz_dir(), name);
    unlink(path);
}

char *wp_fuzz_text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

FILE *wp_fuzz_sink(void)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    return sink;
}

void wp_fuzz_link_source(const char *name, const char *source_path)
{
    char path[1024], target[1024];
    snprintf(path, sizeof path, "%s/%s", wp_fuzz_dir(), name);
    snprintf(target, sizeof target, "%s/%s", WP_FUZZ_SRCDIR, source_path);
    make_parents(path);
    if (symlink(target, path) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuzz: cannot link %s to %s: %s\n", path, target, strerror(errno));
        abort();
    }
}
