/* The SBP cost model's building blocks (sbp_cost.c), shared by
 * wp_sbp_evaluate, the searches and the executor of a strategy's
 * communication (run/comm/sbp_exec.c), so all three see the same collectives
 * with the same sizes. The model itself is described in sbp.h. */
#ifndef WP_PLAN_SBP_COST_H
#define WP_PLAN_SBP_COST_H

#include "plan/sbp.h"

/* Checks the problem; sets the node count N and the GPUs per node G used
 * (G is the device count when all devices fit in one node). */
int wp_sbp_check_problem(const struct wp_sbp_problem *pr, int *nodes, int *gpus, struct wp_err *err);

/* 1 when m has p devices as N x G and splits layer's b, n_in, n_out evenly. */
int wp_sbp_mesh_fits(const struct wp_sbp_problem *pr, int nodes, int gpus, int layer,
                     const struct wp_sbp_mesh *m);

/* The four terms of a layer's communication (sbp.h). */
enum wp_sbp_term { WP_SBP_ALLTOALL, WP_SBP_GATHER, WP_SBP_REDUCE, WP_SBP_WEIGHT_SYNC, WP_SBP_TERM_COUNT };
/* "alltoall", "gather", "reduce", "weight_sync". */
const char *wp_sbp_term_name(enum wp_sbp_term term);

/* One term as the model charges it: `passes` calls of `kind` over `group`
 * devices with n_bytes as collective_cost.h defines n, on the inter-node
 * link when crosses_nodes. The forward collective is kind (AllGather for
 * the gather, ReduceScatter for the reduce, AllReduce for weight_sync,
 * AlltoAll or P2P for the alltoall); with passes = 2 the second call is its
 * backward dual (ReduceScatter, AllGather, AlltoAll back, the P2P
 * permutation reversed). passes = 0: the term does not occur. */
struct wp_sbp_coll {
    enum wp_collective kind;
    int group;
    double n_bytes;
    int crosses_nodes;
    int passes;
};

/* Seconds and bytes sent per device of all passes of c. */
double wp_sbp_coll_s(const struct wp_sbp_problem *pr, const struct wp_sbp_coll *c);
double wp_sbp_coll_sent_bytes(const struct wp_sbp_coll *c);

/* The gather (over axis 1), reduce (axis 2) or weight_sync (axis 0) of
 * layer on mesh m; the gather of layer 0 with a free input does not occur. */
void wp_sbp_layer_coll(const struct wp_sbp_problem *pr, int layer, const struct wp_sbp_mesh *m,
                       enum wp_sbp_term term, struct wp_sbp_coll *c);

/* The rows of a fully split state: how many nodes and GPUs per node split
 * them (the columns take the rest, N / nodes and G / gpus). */
struct wp_sbp_rows {
    int nodes, gpus;
};

/* The alltoall into layer to_layer on mesh `to` (gathering from
 * gather_from) from the output of the layer before on mesh `from`, reduced
 * to reduce_to (from NULL: the chain's batch-split input, rows (N, G)):
 * the two states' rows and the collective between them (passes 0 when
 * they are the same state). */
struct wp_sbp_move {
    struct wp_sbp_rows from, to;
    struct wp_sbp_coll coll;
};
void wp_sbp_move(const struct wp_sbp_problem *pr, int nodes, int gpus, const struct wp_sbp_mesh *from,
                 enum wp_sbp_dim reduce_to, int to_layer, const struct wp_sbp_mesh *to, enum wp_sbp_dim gather_from,
                 struct wp_sbp_move *mv);

/* A layer's own terms (forward + backward): gather (0 for layer 0 with a
 * free input), reduce and weight_sync, seconds and bytes sent. */
struct wp_sbp_terms {
    double gather_s, reduce_s, weight_sync_s;
    double sent_bytes;              /* all three */
    double weight_sync_sent_bytes;  /* of them the weight gradient's allreduce */
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
