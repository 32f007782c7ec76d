/* Test helper: whether two schedules are the same, part by part: their
 * action lists (every op, stage, micro-batch and peer, in order), their
 * placement (stages, copies, replicas, ranks, micro-batch copies, split
 * backward) and their numbers (stage weights, activation bounds). */
#ifndef WP_TESTS_SCHED_COMPARE_H
#define WP_TESTS_SCHED_COMPARE_H

#include "sched/schedule.h"

static inline int sched_same_lists(const struct wp_schedule *a, const struct wp_schedule *b)
{
    int same = a->nranks == b->nranks;
    for (int r = 0; same && r < a->nranks; r++) {
        same = a->lists[r].count == b->lists[r].count;
        for (int i = 0; same && i < a->lists[r].count; i++) {
            const struct wp_action *x = &a->lists[r].actions[i], *y = &b->lists[r].actions[i];
            same = x->op == y->op && x->stage == y->stage && x->microbatch == y->microbatch && x->peer == y->peer;
        }
    }
    return same;
}

static inline int sched_same_placement(const struct wp_schedule *a, const struct wp_schedule *b)
{
    int same = a->nstages == b->nstages && a->nranks == b->nranks && a->nmicro == b->nmicro &&
               a->split_backward == b->split_backward;
    for (int st = 0; same && st < a->nstages; st++) {
        const struct wp_stage_place *p = &a->place[st], *q = &b->place[st];
        same = p->ncopies == q->ncopies && p->nreplicas == q->nreplicas;
        for (int i = 0; same && i < p->ncopies * p->nreplicas; i++)
            same = p->ranks[i] == q->ranks[i];
    }
    for (int m = 0; same && m < a->nmicro; m++)
        same = a->mb_copy[m] == b->mb_copy[m];
    return same;
}

static inline int sched_same_numbers(const struct wp_schedule *a, const struct wp_schedule *b)
{
    int same = a->nstages == b->nstages && a->nranks == b->nranks;
    for (int st = 0; same && st < a->nstages; st++)
        same = a->stage_weight[st] == b->stage_weight[st];
    for (int r = 0; same && r < a->nranks; r++)
        same = a->activation_bound[r] == b->activation_bound[r];
    return same;
}

#endif
