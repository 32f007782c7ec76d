/* Orders from a steady state of one period, compacted (order_steady.c):
 * the cycle a rank runs its passes in, the start times it gives, and the
 * order those times make; the uniform cycle the order search tries. */
#ifndef WP_SCHED_ORDER_STEADY_H
#define WP_SCHED_ORDER_STEADY_H

#include "sched/schedule.h"

/* Per rank the cyclic order of its passes, order[r * stride + k] = 2c + (0
 * F, 1 B) for its c-th stage (ascending), from phase_s[r]; one period for
 * all ranks, at least each rank's busy time in it. One copy of each stage,
 * on one rank, backward whole (wp_steady_check says whether s is so). */
struct wp_steady_cycle {
    const int *order;
    int stride;
    const double *phase_s;
    double period_s;
};
int wp_steady_check(const struct wp_schedule *s, struct wp_err *err);
/* Start of micro-batch 0's F and B of every stage in the steady state. */
int wp_steady_times(const struct wp_schedule *s, const struct wp_steady_cycle *cy, double *start_f,
                    double *start_b, struct wp_err *err);
int wp_sched_order_steady(struct wp_schedule *s, const struct wp_steady_cycle *cy, struct wp_err *err);
/* The uniform cycle: F and B of each stage in turn, rank r from phase
 * r * stagger periods, the period the busiest rank's work (free with
 * wp_steady_cycle_free). */
int wp_steady_uniform(const struct wp_schedule *s, double stagger, struct wp_steady_cycle *cy, struct wp_err *err);
void wp_steady_cycle_free(struct wp_steady_cycle *cy);

#endif
