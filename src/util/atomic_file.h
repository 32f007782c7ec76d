/* Files written whole or not at all: write to a temporary name beside the
 * target, then rename over it, so a crash never leaves a torn file. */
#ifndef WP_UTIL_ATOMIC_FILE_H
#define WP_UTIL_ATOMIC_FILE_H

#include <stdio.h>
#include "util/error.h"

struct wp_atomic_file {
    FILE *fp;
    char path[4096];
    char tmp_path[4096 + 32];
};

/* Opens "<path>.tmp.<pid>" for writing. */
int wp_atomic_open(struct wp_atomic_file *af, const char *path, struct wp_err *err);
/* Flushes, fsyncs, closes and renames onto the target. */
int wp_atomic_commit(struct wp_atomic_file *af, struct wp_err *err);
/* Closes and removes the temporary file; the target is untouched. */
void wp_atomic_abort(struct wp_atomic_file *af);

#endif
