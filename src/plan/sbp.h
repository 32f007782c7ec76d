/* AutoDDL's SBP mesh search (sections 4.2-4.6): for a chain of matmul
 * layers on p devices, the 3D device mesh of each layer, the
 * redistributions between consecutive layers, their ring-collective costs
 * per link level (within a node, between nodes), under a per-device memory
 * limit; found by exhaustive search, coordinate descent or
 * Metropolis-Hastings. The cost model is in sbp_cost.c, the searches in
 * sbp_search.c, the plan-file group in sbp_config.c.
 *
 * Layer l: O[b x n_out] = I[b x n_in] W[n_in x n_out] on p = p0 p1 p2
 * devices (4.2.2):
 *   I (S0:p0, B:p1, S1:p2)  local (b/p0) x (n_in/p2), p1 copies
 *   W (B:p0, S1:p1, S0:p2)  local (n_in/p2) x (n_out/p1), p0 copies
 *   O (S0:p0, S1:p1, P:p2)  local (b/p0) x (n_out/p1), a partial sum over axis 2
 * A mesh is valid for the layer when p0 | b, p1 | n_out and p2 | n_in.
 *
 * Communication, derived again; bytes each device sends with e bytes per
 * element. Every forward collective has a backward dual of the same cost
 * (AllGather <-> ReduceScatter, AlltoAll <-> AlltoAll), hence the 2s:
 *  - reduce: O's partial sums summed over axis 2 by a ReduceScatter (group
 *    p2) of the local output, e b n_out/(p0 p1) bytes, leaving O fully split
 *    as (S0:p0, S1:p1 p2) ("cols") or (S0:p0 p2, S1:p1) ("rows"). Backward:
 *    dO all-gathered over axis 2. Sent: 2 (p2-1)/p2 e b n_out/(p0 p1).
 *  - gather: I replicated over axis 1 by an AllGather (group p1) into the
 *    local input, e b n_in/(p0 p2) bytes, from (S0:p0, S1:p1 p2) ("cols")
 *    or (S0:p0 p1, S1:p2) ("rows"). Backward: dI = dO W^T sums over n_out,
 *    which axis 1 splits, so it is a partial sum reduce-scattered over
 *    axis 1. Sent: 2 (p1-1)/p1 e b n_in/(p0 p2).
 *  - alltoall: from the previous layer's reduced output (S0:r, S1:c) to
 *    this layer's pre-gather input (S0:r', S1:c'), r c = r' c' = p: an
 *    AlltoAll of the fully split block, e b n_in/p bytes, over
 *    g = lcm(r, r')/gcd(r, r') devices (exact when r | r' or r' | r: each
 *    group of g devices trades the pieces of one block; an upper bound
 *    otherwise); none when both states are the same. AutoDDL 4.3's special
 *    cases p0 = p0' (cols to cols) and p1 = p2' (rows to rows) need none;
 *    for every pair of layers the reduce and gather directions that make
 *    it cheapest are chosen. Sent: 2 (g-1)/g e b n_in/p.
 *  - weight_sync: dW = I^T dO sums over the batch, which axis 0 splits: an
 *    AllReduce (group p0, the replica axis) of the local weight gradient,
 *    e n_in n_out/(p1 p2) bytes (a ring ReduceScatter then AllGather; a
 *    sharded optimizer moves the same bytes as a gradient ReduceScatter and
 *    a parameter AllGather). Sent: 2 (p0-1)/p0 e n_in n_out/(p1 p2).
 * For one n x n x n matmul (b = n_in = n_out = n) whose input arrives
 * batch-split (S0:p) and one link level, the gather from rows gives
 *   sent = 2 e n^2/p (p0 + p1 + p2 - 3 + (p2-1)/p2),
 * least near p0 = p1 = p2 = p^(1/3): about 6 e n^2/p^(2/3), against
 * 4 e n^2/p^(1/2) at best for a 2D mesh (one axis 1), as in 4.4.2.
 *
 * Link levels (4.2.3): p = N nodes x G GPUs per node. A layer's mesh gives
 * each axis k a tuple (nodes_k, gpus_k), p_k = nodes_k gpus_k, with
 * nodes_0 nodes_1 nodes_2 = N and gpus_0 gpus_1 gpus_2 = G; the tuples are
 * part of the search. A collective along axis k runs on the intra-node link
 * when nodes_k = 1, else on the inter-node link (its ring crosses the
 * network, the slower link bounds it). A fully split state's rows have a
 * tuple too (merged axes multiply: "rows" after the reduce is
 * (nodes_0 nodes_2, gpus_0 gpus_2)). An AlltoAll between two states stays
 * within nodes when the rows' node-level split is the same (every node
 * keeps its region of the matrix), else it crosses nodes; where only the
 * node-level split changes (r = r') every device sends its whole block to
 * one other device (WP_COLL_P2P: alpha + n beta).
 *
 * The chain's input either arrives batch-split over all devices, (S0:p)
 * with rows tuple (N, G), its gradient sent back (as after data-parallel
 * layers: AutoDDL's VGG convolutions), so layer 0 pays an alltoall and its
 * gather; or is produced in any layout for free with no gradient wanted
 * (a data loader). The last layer's output stays as its reduce leaves it.
 *
 * Memory per device (4.5.2): over all layers, the local weights times the
 * bytes their state takes per element (weight, gradient, optimizer state)
 * plus the local input kept for the backward times the bytes per
 * activation element. The weights' p0 copies dominate: a limit bounds p0.
 *
 * Layers of the same shape (n_in, n_out) form a class and share one mesh
 * (4.5.1); the searches choose one mesh per class. */
#ifndef WP_PLAN_SBP_H
#define WP_PLAN_SBP_H

#include <libconfig.h>

#include "config/schema.h"
#include "topo/collective_cost.h"
#include "util/error.h"

#define WP_SBP_NAME_MAX 64

struct wp_sbp_layer {
    char name[WP_SBP_NAME_MAX];
    int n_in;  /* I is b x n_in, W is n_in x n_out */
    int n_out; /* the next layer's n_in */
};

enum wp_sbp_input {
    WP_SBP_INPUT_BATCH_SPLIT, /* (S0:p), gradient sent back (default) */
    WP_SBP_INPUT_FREE         /* any layout, no gradient */
};

struct wp_sbp_problem {
    const struct wp_sbp_layer *layers;
    int nlayers;
    int batch;                  /* b: rows of every layer's input (samples or tokens) */
    int devices;                /* p */
    int gpus_per_node;          /* G: devices is a multiple of G, or at most G (one node) */
    struct wp_link_cost intra;  /* within a node */
    struct wp_link_cost inter;  /* between nodes */
    double element_bytes;       /* per communicated element (4: float32) */
    double weight_state_bytes;  /* per local weight element: weight, gradient, optimizer state */
    double activation_bytes;    /* per local input element kept for the backward */
    double memory_limit_bytes;  /* per device; 0: no limit */
    enum wp_sbp_input input;
};

/* Defaults: no layers, batch 1, 1 device, G 1, zero-cost links, float32
 * elements (4 bytes), 16 bytes of weight state (float32 weight and
 * gradient, AdamW's m and v), 4 bytes per kept activation, no memory
 * limit, batch-split input. */
void wp_sbp_problem_default(struct wp_sbp_problem *pr);

/* One layer's mesh: axis k has nodes[k] x gpus[k] devices. */
struct wp_sbp_mesh {
    int nodes[3];
    int gpus[3];
};

/* p_k = nodes[k] gpus[k]. */
int wp_sbp_mesh_axis(const struct wp_sbp_mesh *m, int k);

/* How a fully split state splits the matrix: (S0:p0, S1:p1 p2)-like
 * states are "cols" (the merged axes split the columns), else "rows". */
enum wp_sbp_dim { WP_SBP_COLS, WP_SBP_ROWS };

struct wp_sbp_layer_cost {
    int layer_class;             /* index of the layer's shape class */
    struct wp_sbp_mesh mesh;
    enum wp_sbp_dim gather_from; /* the split the gather starts from */
    enum wp_sbp_dim reduce_to;   /* the split the reduce leaves */
    double alltoall_s;           /* into this layer (see above); forward + backward */
    double gather_s;
    double reduce_s;
    double weight_sync_s;
    double comm_s;               /* the sum of the four */
    double sent_bytes;           /* per device, forward + backward */
    double weight_sync_sent_bytes; /* of sent_bytes, the weight gradient's allreduce */
    double memory_bytes;         /* per device */
};

enum wp_sbp_search { WP_SBP_EXHAUSTIVE, WP_SBP_COORDINATE_DESCENT, WP_SBP_METROPOLIS };

struct wp_sbp_result {
    int nlayers;
    struct wp_sbp_layer_cost *layers;
    int nclasses;
    double comm_s;        /* per training step (forward + backward), summed over layers */
    double sent_bytes;    /* per device */
    double memory_bytes;  /* per device */
    enum wp_sbp_search search;
    double space;         /* strategies in the search space: product of meshes per class; 0 from evaluate */
    double costed;        /* exhaustive: partial strategies costed (a class's mesh after the classes
                           * before it); cd, mh: single-class changes costed */
};

struct wp_sbp_search_opts {
    enum wp_sbp_search kind;
    unsigned long long seed; /* cd's random restarts and mh's chain (default 1) */
    int restarts;            /* cd: random starts after the greedy one (default 8) */
    long iterations;         /* mh: proposals (default 100000) */
    double mh_beta;          /* mh: P(S) ~ exp(-mh_beta Cost(S)/Cost(S_start)) (default 200: a
                              * proposal 0.5% of the start's cost worse is taken with probability 1/e) */
    int exhaustive_bounds;   /* exhaustive: prune partial strategies that cannot beat the best so far
                              * (exact: costs are not negative); 0 costs every strategy that fits in
                              * memory, as a plain enumeration (default 1) */
    double exhaustive_max;   /* exhaustive: stop with an error after costing this many partial
                              * strategies (default 1e9) */
};

void wp_sbp_search_default(struct wp_sbp_search_opts *o);
/* "exhaustive", "cd" (or "coordinate-descent"), "mh" (or "metropolis"); -1 if unknown. */
int wp_sbp_search_from_name(const char *name);
const char *wp_sbp_search_name(enum wp_sbp_search kind);

void wp_sbp_result_destroy(struct wp_sbp_result *res);

/* The plan file's group (sbp_config.c):
 *   sbp = { search = "cd"; devices = 64; gpus_per_node = 8; batch = 1024;
 *           comm_s = ...; sent_bytes = ...; memory_bytes = ...;
 *           layers = ( { name = "fc0"; n_in = 32768; n_out = 16384;
 *                        mesh = [4, 4, 4]; nodes = [1, 2, 4]; gpus = [4, 2, 1];
 *                        gather_from = "rows"; reduce_to = "cols";
 *                        alltoall_s = ...; gather_s = ...; reduce_s = ...;
 *                        weight_sync_s = ...; comm_s = ...; sent_bytes = ...;
 *                        weight_sync_sent_bytes = ...; memory_bytes = ...; }, ... ); };
 * wp_sbp_config_add adds it under parent (the plan file's root);
 * wp_sbp_config_text returns it alone as malloc'ed text (NULL when out of
 * memory). wp_sbp_config_keys is its schema, for a reader's own schema:
 * WP_KEY_GROUP("sbp", WP_CFG_GROUP, 1, wp_sbp_config_keys). */
void wp_sbp_config_add(config_setting_t *parent, const struct wp_sbp_problem *pr,
                       const struct wp_sbp_result *res);
char *wp_sbp_config_text(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res);
extern const struct wp_cfg_key wp_sbp_config_keys[];

#endif
