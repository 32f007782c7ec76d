/* The SBP cost model's building blocks (sbp_cost.c), shared by
 * wp_sbp_evaluate and the searches so both cost a strategy the same way.
 * The model itself is described in sbp.h. */
#ifndef WP_PLAN_SBP_COST_H
#define WP_PLAN_SBP_COST_H

#include "plan/sbp.h"

/* Checks the problem; sets the node count N and the GPUs per node G used
 * (G is the device count when all devices fit in one node). */
int wp_sbp_check_problem(const struct wp_sbp_problem *pr, int *nodes, int *gpus, struct wp_err *err);

/* 1 when m has p devices as N x G and splits layer's b, n_in, n_out evenly. */
int wp_sbp_mesh_fits(const struct wp_sbp_problem *pr, int nodes, int gpus, int layer,
                     const struct wp_sbp_mesh *m);

/* A layer's own terms (forward + backward): gather (0 for layer 0 with a
 * free input), reduce and weight_sync, seconds and bytes sent. */
struct wp_sbp_terms {
    double gather_s, reduce_s, weight_sync_s;
    double sent_bytes;
};
void wp_sbp_layer_terms(const struct wp_sbp_problem *pr, int layer, const struct wp_sbp_mesh *m,
                        struct wp_sbp_terms *t);

/* The alltoall (forward + backward) from the reduced output of a layer with
 * mesh `from` (NULL: the chain's batch-split input) into the pre-gather
 * input of layer `to_layer` with mesh `to`, with the cheapest directions
 * (cols before rows on a tie); each out-pointer may be NULL. */
double wp_sbp_alltoall_s(const struct wp_sbp_problem *pr, int nodes, int gpus, const struct wp_sbp_mesh *from,
                         int to_layer, const struct wp_sbp_mesh *to, enum wp_sbp_dim *reduce_to,
                         enum wp_sbp_dim *gather_from, double *sent_bytes);

/* Per-device bytes of layer's local weights' state and kept input. */
double wp_sbp_layer_memory_bytes(const struct wp_sbp_problem *pr, int layer, const struct wp_sbp_mesh *m);

/* Index of each layer's shape class (classes numbered by first
 * appearance); returns the number of classes. */
int wp_sbp_layer_classes(const struct wp_sbp_problem *pr, int *layer_class);

#endif
