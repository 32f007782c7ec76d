/* Emission: what the orders write with. Each compute goes into its rank's
 * list with the receives it needs before it and the sends after it, and the
 * lists end with ALLREDUCE and STEP (emit.c); nothing here orders anything. */
#ifndef WP_SCHED_EMIT_H
#define WP_SCHED_EMIT_H

#include "sched/schedule.h"

/* Room in every list for what its rank runs (after placement); each
 * compute with the receives it needs before it and the sends after it (for
 * an order, instead of a bare push); the ALLREDUCEs and STEPs that end every
 * list; and the same for compute-only lists already written (schedule
 * files). */
int wp_sched_reserve_lists(struct wp_schedule *s, struct wp_err *err);
int wp_sched_emit(struct wp_schedule *s, int rank, int op, int stage, int mb, struct wp_err *err);
int wp_sched_finish_lists(struct wp_schedule *s, struct wp_err *err);
int wp_sched_add_comm(struct wp_schedule *s, struct wp_err *err);

/* A compute order given pass by pass (the order search's result), emitted
 * as it is with wp_sched_emit_given. */
struct wp_given_order {
    const int *const *passes; /* per rank: (stage * M + mb) * 2 + (0 F, 1 B), in order */
    const int *count;         /* per rank */
};
int wp_sched_emit_given(struct wp_schedule *s, const struct wp_given_order *given, struct wp_err *err);

#endif
