/* A per-rank slowdown factor that can change while a job runs, to emulate
 * a contended GPU: a text file the run re-reads whenever it changes
 * (checked before every emulated pass), one rule a line:
 *     RANK FACTOR     (this rank's passes take FACTOR times as long)
 *     * FACTOR        (every rank without a rule of its own)
 * '#' starts a comment. A missing file means 1 everywhere; a file that
 * cannot be parsed keeps the last good factor and is reported once. */
#ifndef WP_RUN_SLOWDOWN_H
#define WP_RUN_SLOWDOWN_H

#include <time.h>
#include "util/error.h"

struct wp_slowdown {
    char path[1024];
    int rank;
    double factor;
    struct timespec mtime; /* of the version read */
    long size;
    int reported;          /* a bad file was reported */
};

void wp_slowdown_init(struct wp_slowdown *s, const char *path, int rank);
/* The current factor (re-reads the file when it changed). */
double wp_slowdown_factor(struct wp_slowdown *s);
/* Parses rules from text; the factor for rank, or -1 with err (file:line). */
double wp_slowdown_parse(const char *text, const char *name, int rank, struct wp_err *err);

#endif
