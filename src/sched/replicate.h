/* Data parallelism for every schedule kind (replicate.c): the schedule of
 * one pipeline on S ranks made into D data-parallel copies of it on D x S
 * ranks, which the generator does for --data-parallel D (generate.h).
 * Replica j of rank r is rank r D + j (replicas of a rank side by side,
 * as run --stages has always laid them out), talks only to replica j of
 * its peers, and takes the j-th D-th of every micro-batch; the copies meet
 * at the ALLREDUCE of each stage, over all of its holders. */
#ifndef WP_SCHED_REPLICATE_H
#define WP_SCHED_REPLICATE_H

#include "sched/schedule.h"

/* out = one in `copies` data-parallel copies (copies >= 1). Every copy of
 * every stage gets copies times its replicas: slice j r + i of a stage of
 * r replicas is slice i of the micro-batch's j-th copies-th, on replica j
 * of the rank that ran slice i. Each rank's list is copied to its replicas
 * with every peer moved to the same replica, and ends as the generators
 * end lists (emit.h): an ALLREDUCE of each stage held by more than one
 * rank, then the STEPs. out's params are one's with ranks and
 * data_parallel multiplied by copies; its stage weights are set as
 * placement sets them (wp_sched_set_weights: the same as one's, a slice
 * being 1/copies of the work of a stage on copies times the ranks), so each
 * rank's activation bound is its original's. */
int wp_schedule_replicate(const struct wp_schedule *one, int copies, struct wp_schedule *out, struct wp_err *err);

#endif
