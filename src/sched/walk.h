/* Executing action lists in lock step, the semantics every consumer of a
 * schedule shares: sends are buffered, a receive blocks until its matching
 * send has run, an ALLREDUCE blocks until every rank holding the stage has
 * reached it. The validator walks with checks, the simulator with clocks. */
#ifndef WP_SCHED_WALK_H
#define WP_SCHED_WALK_H

#include <stdint.h>
#include "sched/schedule.h"

/* Which send each receive gets. A channel is (sender, receiver, kind,
 * stage boundary): messages on it must be received in the order sent, so
 * the k-th receive on a channel gets its k-th send. The walk pairs them as
 * it goes; this table pairs them all up front, for the simulator of shared
 * cores (which plays the lists in time order, not by a walk) and to name
 * the first channel whose sends and receives do not pair up. */
struct wp_msg_match {
    long *offset;     /* per rank: global id of its first action */
    long total;
    int32_t *partner; /* per global id: the matching send (for receives) or
                         receive (for sends); -1 for other actions */
};

int wp_match_messages(const struct wp_schedule *s, struct wp_msg_match *mm, struct wp_err *err);
void wp_match_destroy(struct wp_msg_match *mm);
/* Rank and step of a global action id. */
void wp_match_locate(const struct wp_msg_match *mm, int nranks, long gid, int *rank, int *step);

struct wp_walk_visitor {
    void *ctx;
    /* Rank ran steps [from, to) of its list, in order, none of them an
     * ALLREDUCE (a run of actions is handed over at once, so that the
     * visitor loops over them without a call per action). msg[i] belongs
     * to the i-th send or receive among them: a receive finds there what
     * its matching send carried, the visitor writes there what a send
     * carries (the simulator: when it arrives). */
    int (*run)(void *ctx, int rank, int from, int to, double *msg, struct wp_err *err);
    /* An ALLREDUCE once all n holders arrived: ranks[i] at steps[i]. */
    int (*collective)(void *ctx, int stage, int n, const int *ranks, const int *steps, struct wp_err *err);
    /* Optional: rank will run a few visits from now, from step on; the
     * visitor may fetch into cache what it will read then. */
    void (*upcoming)(void *ctx, int rank, int step);
};

/* Runs every list to the end, each receive taking the oldest message not
 * yet received on its channel; *delivered counts the messages. The first
 * error of wp_match_messages comes before any other (a schedule whose
 * messages do not pair up is reported as such, whatever else is wrong with
 * it), then the visitor's, then a deadlock naming each blocked rank, its
 * step and the action it waits at. */
int wp_walk(const struct wp_schedule *s, const struct wp_walk_visitor *v, long *delivered, struct wp_err *err);

/* "RECV_ACT stage 3 micro-batch 5 from rank 2" */
void wp_action_describe(const struct wp_action *a, char *buf, size_t len);

#endif
