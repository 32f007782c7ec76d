/* Executing action lists in lock step, the semantics every consumer of a
 * schedule shares: sends are buffered, a receive blocks until its matching
 * send has run, an ALLREDUCE blocks until every rank holding the stage has
 * reached it. The validator walks with checks, the simulator with clocks. */
#ifndef WP_SCHED_WALK_H
#define WP_SCHED_WALK_H

#include <stdint.h>
#include "sched/schedule.h"

/* Which send each receive gets. A channel is (sender, receiver, kind,
 * stage boundary): messages on it must be received in the order sent. */
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
    /* Every action but ALLREDUCE, when it runs. */
    int (*run)(void *ctx, int rank, int step, const struct wp_action *a, struct wp_err *err);
    /* An ALLREDUCE once all n holders arrived: ranks[i] at steps[i]. */
    int (*collective)(void *ctx, int stage, int n, const int *ranks, const int *steps, struct wp_err *err);
};

/* Runs every list to the end; a deadlock is an error naming each blocked
 * rank, its step and the action it waits at. */
int wp_walk(const struct wp_schedule *s, const struct wp_msg_match *mm, const struct wp_walk_visitor *v,
            struct wp_err *err);

/* "RECV_ACT stage 3 micro-batch 5 from rank 2" */
void wp_action_describe(const struct wp_action *a, char *buf, size_t len);

#endif
