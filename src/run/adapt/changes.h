/* A scenario's timed changes (`wavepipe run --changes FILE`): what changes
 * under a running job, and before which iteration, so that a static and an
 * adaptive run meet the same cluster changes at the same iteration numbers
 * (issue 12's scenarios, from bench/adaptive.sh or a campaign). One change
 * a line, '#' starts a comment:
 *     ITERATION slow RANK FACTOR   from ITERATION on, RANK's passes take
 *                                  FACTOR times as long ('*': every rank);
 *                                  what --slowdown-file does, at a known
 *                                  iteration
 *     ITERATION ACTION [ARG...]    any other action: rank 0 runs the hook
 *                                  (--changes-hook PROGRAM) as
 *                                  PROGRAM ACTION ARG..., e.g. "rate 100mbit"
 *                                  or "flow on" on the test cluster
 *                                  (tests/cluster/scenario-hook.sh), with
 *                                  WAVEPIPE_CHANGE_ITERATION set
 * ITERATION 0 is the start. Changes are made at the iteration boundary, in
 * the file's order, after the iteration before has ended everywhere and
 * before the next begins: a change's time is in no iteration's. A run
 * resumed after step S makes every change up to S again first. Words are
 * [A-Za-z0-9._:*+-] (they reach a program's arguments, never a shell). */
#ifndef WP_RUN_CHANGES_H
#define WP_RUN_CHANGES_H

#include "run/adapt/slowdown.h"
#include "util/error.h"

#define WP_CHANGE_ARGS_MAX 4
#define WP_CHANGE_WORD_MAX 64

struct wp_change {
    long iteration;
    int line;                         /* in the file, for messages */
    char action[WP_CHANGE_WORD_MAX];  /* "slow" or the hook's action */
    int slow_rank;                    /* slow: the rank, -1 for every rank */
    double slow_factor;               /* slow */
    int nargs;                        /* the hook's arguments after the action */
    char args[WP_CHANGE_ARGS_MAX][WP_CHANGE_WORD_MAX];
};

struct wp_changes {
    char name[1024]; /* the file, for messages */
    int n;
    struct wp_change *v; /* in file order, iterations not decreasing */
};

/* Parses one line's text and appends its change to c (line: where it
 * stands, for messages): 1 when added, 0 for a blank or comment line, -1
 * with err (no location: the caller adds it) for a bad change or one
 * before the last one's iteration. */
int wp_changes_add(struct wp_changes *c, const char *text, int line, struct wp_err *err);
/* Parses a changes text (name: the file, for "name:line: ..." errors). */
int wp_changes_parse(const char *text, const char *name, struct wp_changes *c, struct wp_err *err);
void wp_changes_free(struct wp_changes *c);
/* Collective over MPI_COMM_WORLD: rank 0 reads path, every rank parses the
 * same text; the same result (and error) on every rank. */
int wp_changes_load(const char *path, struct wp_changes *c, struct wp_err *err);

/* 1 when some change is not "slow" (and needs a hook). */
int wp_changes_need_hook(const struct wp_changes *c);
/* 1 when some change is "slow". */
int wp_changes_slow(const struct wp_changes *c);
/* The highest rank a slow change names (-1: none). */
int wp_changes_max_rank(const struct wp_changes *c);

/* One change as text ("slow 1 2", "rate 100mbit"). */
void wp_change_text(const struct wp_change *ch, char *buf, size_t size);

/* Makes the changes of iterations after_iteration < I <= up_to_iteration,
 * in order: a slow change sets slow's factor when it names this rank (or
 * every rank); on rank 0 (hook non-NULL there) a hook change runs
 * `hook ACTION ARG...` and waits for it, at most timeout_s; rank 0 prints
 * a line per change ("change before iteration I: ..."). A hook that cannot
 * start, fails or runs past the timeout is an error. */
int wp_changes_apply(const struct wp_changes *c, long after_iteration, long up_to_iteration, int rank,
                     const char *hook, double timeout_s, struct wp_slowdown *slow, struct wp_err *err);

#endif
