/* AutoPipe's live re-partitioning (section 4.4), beside the interpreter:
 * between two iterations the stages' layer ranges change and the moved
 * layers' training state (parameters and AdamW moments; the run has no
 * other per-layer state: no dropout, the data order is the step's) goes
 * from a rank that held them to every rank that holds them now, without
 * stopping the job. Ranks whose stages keep their layers take no part
 * beyond the agreement that every rank makes the same move. A stage whose
 * range changed is made again (its kind's make, whose context already
 * describes the new ranges) with its slots as before; the layers it keeps
 * are copied over locally. Replicated stages: replica i of the gaining
 * stage gets the layers from replica i mod n of the losing one (replicas
 * hold equal state), so every replica moves consistently. */
#ifndef WP_RUN_REPARTITION_H
#define WP_RUN_REPARTITION_H

#include "run/core/interpreter.h"

/* Stage st's movable layers (the kind's units: GPT-2 blocks, or the
 * table's layers) go from [old_lo[st], old_hi[st]) to [new_lo[st],
 * new_hi[st]). Collective over MPI_COMM_WORLD (every rank calls it with
 * the same ranges); each rank holds at most one stage. *moved_bytes gets
 * the bytes this rank sent. */
int wp_interp_repartition(struct wp_interp *in, const int *old_lo, const int *old_hi, const int *new_lo,
                          const int *new_hi, wp_stage_make_fn make, void *make_ctx, double *moved_bytes,
                          struct wp_err *err);

#endif
