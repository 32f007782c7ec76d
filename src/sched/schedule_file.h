/* Schedules from files, and PyTorch's schedule CSV out: reads wavepipe's own
 * CSV (rank,step,op,stage,microbatch,peer, as `wavepipe schedule --format
 * csv` writes it) and the compute-only CSV of torch.distributed.pipelining
 * (PipelineScheduleMulti._dump_csv/_load_csv: no header, row r is rank r,
 * cells like 0F3, 1B0, 1I0, 1W0, empty cells no-ops), and writes the latter. */
#ifndef WP_SCHED_SCHEDULE_FILE_H
#define WP_SCHED_SCHEDULE_FILE_H

#include <stdio.h>
#include "sched/schedule.h"

/* Reads the schedule in path; its first line tells the form (wavepipe's
 * header, else PyTorch's). What a generator sets is inferred: ranks
 * (PyTorch: rows; wavepipe: highest rank + 1), stages and micro-batches
 * (highest indices + 1), the rank of each stage from the compute actions (one
 * rank per stage; in wavepipe's CSV also one rank per copy, as Chimera's two
 * pipelines; replicated stages cannot be read), and a split backward (a W;
 * PyTorch's I is wavepipe's B, the input-gradient half). A file of compute
 * actions only gets its sends, receives and STEPs from wp_sched_add_comm, as
 * generated lists do; one with any other action is taken as it is. The kind
 * is WP_SCHED_FILE; of *costs only tf, tb, tw and tc are kept.
 *
 * Activation bound: a file promises none. Each rank's bound is the most it
 * could ever hold, every micro-batch of every stage it holds (M times the sum
 * of its stage weights), so the validator reports peaks and never rejects one.
 *
 * The schedule is validated before it is returned. Format errors name
 * path:line (and the cell, in PyTorch's form); an invalid list the rank, step
 * and action (steps count the communication added). On error *s is empty. */
int wp_schedule_load(const char *path, const struct wp_sched_params *costs, struct wp_schedule *s,
                     struct wp_err *err);

/* Writes PyTorch's compute-only form: one row per rank, cells F as 0F3, B as
 * 0B3 (0I3 where the backward is split) and W as 0W3, on the lock-step grid
 * PipelineScheduleMulti runs (an action one step after what it needs from
 * another rank; empty cells in between). Fails, writing nothing, where a stage
 * is on several ranks (PyTorch places each stage on one rank). */
int wp_schedule_write_torch_csv(FILE *out, const struct wp_schedule *s, struct wp_err *err);

#endif
