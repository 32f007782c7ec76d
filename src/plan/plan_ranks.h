/* Where a plan's devices are among the ranks of a running job, found from
 * the job itself: node i of the plan is the job's i-th host (hosts in the
 * order of their lowest rank), GPU g there the rank with node-local rank g
 * (the rank that binds GPU g). */
#ifndef WP_RUN_PLAN_RANKS_H
#define WP_RUN_PLAN_RANKS_H

#include "plan/plan.h"
#include "util/error.h"

/* Collective over MPI_COMM_WORLD. to[r] = the world rank that runs the
 * plan's r-th device (stage 0's devices first, in plan order: the schedule
 * rank r of the plan's stages and replicas). With tensor groups of t GPUs
 * (plan.h) r counts groups and to[r] is the schedule rank v whose lanes
 * are world ranks v t .. v t + t - 1, which the group's GPUs must be. The
 * same result, or the same error, on every rank. */
int wp_plan_rank_map(const struct wp_plan *p, int *to, struct wp_err *err);

#endif
