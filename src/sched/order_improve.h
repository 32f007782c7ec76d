/* The order search's hill climbing (--order-search N, order_improve.c):
 * steps over a schedule's compute order within its activation bound, the
 * result kept only when the simulator times it faster. */
#ifndef WP_SCHED_ORDER_IMPROVE_H
#define WP_SCHED_ORDER_IMPROVE_H

#include "sched/schedule.h"

/* p->order_search steps of hill climbing over best's compute order (one
 * rank per stage, whole backwards); best is replaced when the simulator
 * times the result faster within the bound (makespan: best's, updated). */
int wp_sched_improve_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best, double *makespan,
                           struct wp_err *err);

#endif
