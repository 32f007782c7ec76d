/* A plan as the runtime runs it (`wavepipe run --plan`): the schedule
 * generator's settings and each stage's share of the model, as arrays,
 * beside where the plan's devices are among a job's ranks (plan_ranks.h). */
#ifndef WP_PLAN_PLAN_SCHEDULE_H
#define WP_PLAN_PLAN_SCHEDULE_H

#include "plan/plan.h"
#include "sched/schedule.h"
#include "util/error.h"

/* The schedule the plan asks for into p (its other fields left as they
 * are): 1F1B with the plan's policy, replicas and micro-batches, or, for
 * an interleaved plan, Megatron-LM's interleaved order of its chunks
 * (virtual stage j on the ranks of stage j mod P). replicas (the plan's
 * nstages entries) receives each stage's replica count and p->replicas
 * points to it. Errors (naming plan_path) when the runtime cannot run the
 * plan's shape: chunks over replicated stages, more stages than
 * WP_SCHED_MAX_STAGES. */
int wp_plan_schedule_params(const struct wp_plan *pl, const char *plan_path, struct wp_sched_params *p,
                            int *replicas, struct wp_err *err);

/* Per stage, what the runtime computes of it: with blocks > 0, the
 * transformer blocks of a GPT of that many blocks whose layer table is
 * the embedding, the blocks and the head (the embedding and the head go
 * with the first and the last block); with blocks == 0, the layers of the
 * table itself (emulated compute). units gets the plan's nstages counts,
 * each at least 1; an error names the stage that holds none. */
int wp_plan_stage_units(const struct wp_plan *pl, const char *plan_path, int blocks, int *units,
                        struct wp_err *err);

#endif
