/* A plan as torch.distributed.pipelining runs it (`wavepipe plan --format
 * torch`): the stage split as comment lines, then the plan's schedule as the
 * compute_only CSV of PipelineScheduleMulti._load_csv, as PyTorch 2.15.0's
 * torch/distributed/pipelining/schedules.py reads it (bench/torch_schedule.sh
 * loads and runs it with that PyTorch; tests/cli_plan_torch.sh checks its
 * form without one). */
#ifndef WP_PLAN_PLAN_TORCH_H
#define WP_PLAN_PLAN_TORCH_H

#include <stdio.h>

#include "plan/layers.h"
#include "plan/plan.h"

/* Writes, for plan p of table t:
 *   # ... (what the lines are, how to use them)
 *   # pipeline: key=value ... (pipeline_ranks, stages, stages_per_rank,
 *     n_microbatches, schedule, warmup_policy, data_parallel, tensor,
 *     micro_batch, samples_per_replica, global_batch, sequence_parallel,
 *     distributed_optimizer)
 *   # split: stage,rank,chunk,first_layer,last_layer,first_index,last_index,
 *     replicas,tensor,recompute,devices  (a CSV header, then one such line
 *     per stage: PyTorch's stage index = chunk x pipeline_ranks + rank)
 *   # schedule: ...
 *   one line per pipeline rank, no '#': the CSV _load_csv reads
 *     (`grep -v '^#'`), the compute actions of the schedule wavepipe's
 *     generator makes for the plan (wp_plan_sched_params: 1F1B with the
 *     plan's warm-up policy, or Megatron-LM's interleaved order), cells
 *     0F3 / 0B3 on the lock-step grid PipelineScheduleMulti's step loop
 *     needs (sched/schedule_file.h).
 * Recomputation has no action of its own in PyTorch: it is activation
 * checkpointing inside a stage's module, the split's recompute column.
 * Nothing is written and -1 returned with why in err when PyTorch cannot run
 * the plan: data-parallel sizes that differ by stage (a device mesh has one). */
int wp_plan_write_torch(FILE *out, const struct wp_plan *p, const struct wp_layer_table *t, struct wp_err *err);

#endif
