/* Schedule generators: one entry point that places stages on ranks, orders
 * each rank's compute (emitting the communication each compute implies
 * with it), ends the lists with ALLREDUCE and STEP, and gives each rank its
 * activation bound. */
#ifndef WP_SCHED_GENERATE_H
#define WP_SCHED_GENERATE_H

#include "sched/schedule.h"

/* Generates the schedule p asks for. Errors explain what does not fit
 * (e.g. interleaved needs M to be a multiple of P). */
int wp_schedule_generate(const struct wp_sched_params *p, struct wp_schedule *s,
                         struct wp_err *err);

/* ---- the parts, one file each ---- */

/* order_search.c: the candidate orders of chimera and hanayo, the fastest
 * within the memory bound on the simulator kept. */
int wp_sched_search_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best,
                          struct wp_err *err);
/* order_improve.c: p->order_search steps of hill climbing over best's
 * compute order (one rank per stage, whole backwards); best is replaced
 * when the simulator times the result faster within the bound (makespan:
 * best's, updated). */
int wp_sched_improve_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best, double *makespan,
                           struct wp_err *err);

#endif
