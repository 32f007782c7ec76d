/* DAPPLE's planner (section IV): split a model's layer chain into stages,
 * replicate each stage over a set of GPUs and place the sets on the
 * cluster's nodes so that the pipeline latency L = Tw + Ts + Te of one
 * global batch (latency.h) is smallest, under the per-device memory limit.
 *
 * The cost model (plan_cost.c), for a plan of S stages over micro-batches of
 * B samples (M = ceil(global batch / B) of them):
 *  - B is the profile batch times the largest replica count (every replica
 *    of the most replicated stage runs a slice of profile-batch size, as
 *    DAPPLE's profiles are taken at the micro-batch size it trains with);
 *    a stage on r replicas runs slices of ceil(B / r) samples, its forward
 *    and backward times the profile's scaled by slice / profile batch;
 *  - between stages a communication stage (AR = 0) carries the boundary
 *    activation of the whole micro-batch, forward and back: over the
 *    intra-node links when both stages sit on one node (min(r, r') links at
 *    once), else over the network (min(k, k') node links at once, k the
 *    nodes a stage spans);
 *  - a replicated stage allreduces its gradients after
 *    its last backward (topo/collective_cost.h: rings in and across nodes);
 *  - memory per device: weights, gradients, optimizer state and the stored
 *    outputs of the stage's layers for the micro-batches in flight (policy
 *    A: S - s of them, B: 2(S - s) - 1, capped by M).
 *
 * The search (plan_dapple.c) is formula 4-5's dynamic programming: a state
 * is "the first j layers planned onto this occupancy of the nodes", its
 * value the latency of the whole plan with the unplanned layers as one last
 * stage on every free GPU; a step splits that last stage, giving the new
 * stage m' GPUs by one of the device-assignment policies of IV-B. DP (one
 * stage) and straight pipelines (one GPU per stage) are states like any
 * other. */
#ifndef WP_PLAN_PLAN_H
#define WP_PLAN_PLAN_H

#include <stdio.h>

#include "plan/latency.h"
#include "plan/layers.h"
#include "plan/sbp.h"
#include "topo/cluster.h"
#include "topo/collective_cost.h"
#include "util/error.h"

/* The GPUs the planner may use: nodes x gpus_per_node identical devices. */
struct wp_plan_hw {
    char cluster[WP_NAME_MAX];
    char gpu_model[96];
    int nodes;
    int gpus_per_node;
    struct wp_link_cost intra;  /* between two GPUs of a node (the slowest pair) */
    struct wp_link_cost inter;  /* a node's network link */
    double memory_bytes;        /* per device */
    int memory_from_model;      /* 1: read from the GPU model name ("16GB") */
};

/* From a cluster description: its first node type, `devices` GPUs of it
 * (0: all; fewer than a node's GPUs uses one node), memory_bytes per device
 * (0: from the GPU model name). Errors say what is missing. */
int wp_plan_hw_from_cluster(struct wp_plan_hw *hw, const struct wp_cluster *c, int devices,
                            double memory_bytes, struct wp_err *err);
static inline int wp_plan_hw_devices(const struct wp_plan_hw *hw)
{
    return hw->nodes * hw->gpus_per_node;
}

/* Device-assignment policies (IV-B). REST is the last stage of a DP state:
 * every GPU still free. */
enum wp_place_policy { WP_PLACE_FRESH, WP_PLACE_APPEND, WP_PLACE_SCATTER, WP_PLACE_REST };
const char *wp_place_policy_name(enum wp_place_policy p);

struct wp_plan_device {
    int node, gpu;
};

struct wp_plan_stage {
    int first_layer, last_layer; /* inclusive, 0-based in the layer table */
    int replicas;
    enum wp_place_policy policy;
    struct wp_plan_device *devices; /* replicas entries */
    int nodes_spanned, max_per_node;
    int only_node;               /* the node when all replicas share one, else -1 */
    /* derived by wp_plan_evaluate */
    int slice;                   /* samples per replica per micro-batch */
    double forward_s, backward_s;/* one slice */
    double send_s;               /* the boundary after the stage, one micro-batch, one way (0: last stage) */
    double allreduce_s;
    double weights_bytes;        /* parameters + gradients + optimizer state */
    double activation_bytes;     /* stored outputs of one slice */
    int inflight;                /* micro-batches whose activations a replica holds at most */
    double memory_bytes;         /* per device */
};

/* An Ada-Grouper kFkB candidate (plan_kfkb.c). */
struct wp_kfkb_candidate {
    int k;                       /* micro-batches per group */
    int micro_batch;             /* the largest that fits with this k */
    int microbatches;
    double predicted_iter_s;     /* by the simulator on the plan's costs */
    double peak_memory_bytes;
};

/* A stage's AutoDDL mesh for its blocks' MLP matmuls (plan_sbp.c). */
struct wp_plan_sbp {
    int planned;                 /* 0: not meshed (one replica, no blocks, or why says) */
    int nlayers;
    struct wp_sbp_layer *layers;
    struct wp_sbp_problem problem;
    struct wp_sbp_result result;
    double dp_comm_s;            /* the same layers as data parallelism (mesh r x 1 x 1) */
    char why[256];
};

struct wp_plan {
    char model[128];
    int nlayers;
    int profile_batch;
    int global_batch;
    struct wp_plan_hw hw;
    int nstages;
    struct wp_plan_stage *stages;
    int micro_batch;             /* samples per micro-batch (all replicas of a stage together) */
    int microbatches;            /* M */
    char policy;                 /* 1F1B warm-up: 'A' or 'B' */
    double acr;                  /* activation communication ratio; < 0 with one stage */
    int fits;                    /* every device within memory */
    struct wp_pipe_latency latency;
    double predicted_iter_s;     /* the simulator's makespan when simulated, else L */
    double simulated_iter_s;     /* the simulator's makespan; < 0 when not simulated */
    double peak_memory_bytes;    /* the fullest device */
    int devices_used;
    int nkfkb;
    struct wp_kfkb_candidate *kfkb;
    struct wp_plan_sbp *sbp;     /* per stage, or NULL */
    /* search statistics */
    const char *search;          /* which searches ran (a static string) */
    long states, evaluations;
    double search_s;
};

void wp_plan_init(struct wp_plan *p);
void wp_plan_destroy(struct wp_plan *p);
/* "DP", "straight" or "P:Q:..." (replicas per stage). */
void wp_plan_shape(const struct wp_plan *p, char *buf, size_t size);

/* ---- plan_cost.c ---- */

/* Layer prefix sums the cost model reads in O(1) per stage. */
struct wp_plan_model {
    const struct wp_layer_table *layers;
    struct wp_plan_hw hw;
    int global_batch;
    /* 1: only micro-batches wavepipe run executes -- a divisor of the global
     * batch that every stage's replica count divides (plans whose replica
     * counts allow none are infeasible); 0 (as initialised): DAPPLE's rule,
     * the profile batch on each replica of the widest stage, other stages'
     * slices rounded up (its table V plans such as 15:1) */
    int even_slices;
    /* 1 (as initialised, as wavepipe run's --grad-overlap on): a replicated
     * stage's allreduce counts only what runs past its last backward when
     * its gradients are summed in buckets of grad_bucket_bytes as that
     * backward finishes their layers (sched/grad_overlap.h); 0: all of it */
    int grad_overlap;
    double grad_bucket_bytes;
    /* n + 1 entries each: forward and backward seconds, parameter bytes,
     * parameters + gradients + optimizer state, activation (output) bytes */
    double *cum_f, *cum_b, *cum_p, *cum_w, *cum_act;
    struct wp_pipe_stage *scratch; /* 2n - 1 stages for wp_dapple_latency */
};
int wp_plan_model_init(struct wp_plan_model *m, const struct wp_layer_table *layers,
                       const struct wp_plan_hw *hw, int global_batch, struct wp_err *err);
void wp_plan_model_destroy(struct wp_plan_model *m);

/* What the cost model needs of a stage: its layers and where its replicas are. */
struct wp_stage_shape {
    int first_layer, last_layer;
    int replicas, nodes_spanned, max_per_node, only_node;
};

/* L of a plan (writes *lat), whether it fits in memory (*fits) under
 * warm-up policy A and the memory of its fullest device (*peak_bytes);
 * returns L (infinite when a replica would get no sample). */
double wp_plan_latency(const struct wp_plan_model *m, const struct wp_stage_shape *st, int nstages,
                       struct wp_pipe_latency *lat, int *fits, double *peak_bytes);

/* Fills every derived field of p (stages' layers, replicas and devices
 * given), chooses policy A or B (B when the ACR is at least 0.1 and B's
 * deeper warm-up fits) and sets predicted_iter_s. */
void wp_plan_evaluate(const struct wp_plan_model *m, struct wp_plan *p);

/* A plan's costs at another micro-batch size: per stage one slice's
 * forward and backward, the boundary after it (one message, 0 for the last)
 * and its allreduce (arrays of nstages); the fullest device's bytes when
 * groups of k micro-batches warm up under policy (kFkB: k times 1F1B's
 * in-flight count, at most M). Returns -1 when a replica gets no sample. */
int wp_plan_costs_at(const struct wp_plan_model *m, const struct wp_plan *p, int micro_batch, int k, char policy,
                     double *forward_s, double *backward_s, double *send_s, double *allreduce_s,
                     double *peak_bytes);

/* ---- plan_kfkb.c ---- */

/* Simulates the plan (1F1B when k = 1, else kFkB with groups of k) at
 * micro_batch (0: the plan's) on the cost model's stage, boundary and
 * allreduce times: seconds per iteration into *iter_s, the fullest
 * device's bytes into *peak_bytes (may be NULL). */
int wp_plan_simulate(const struct wp_plan_model *m, const struct wp_plan *p, int k, int micro_batch,
                     double *iter_s, double *peak_bytes, struct wp_err *err);
/* Ada-Grouper 4.2: for k = 1, 2, ... the largest micro-batch whose kFkB
 * fits in memory, each simulated; into p->kfkb. */
int wp_plan_kfkb_candidates(const struct wp_plan_model *m, struct wp_plan *p, struct wp_err *err);

/* ---- plan_sbp.c ---- */

/* For a plan of wavepipe's GPT layer table (layers "blockN") of a model of
 * `channels` and `seq_len`: each replicated stage's MLP chain (C -> 4C -> C
 * per block) meshed by AutoDDL's coordinate descent over its replicas, the
 * micro-batch's tokens as the batch. Into p->sbp. */
int wp_plan_sbp(struct wp_plan *p, const struct wp_layer_table *t, int channels, int seq_len, struct wp_err *err);
void wp_plan_sbp_destroy(struct wp_plan *p);

/* ---- plan_place.c: device assignment over per-node free-GPU counts ---- */

/* Takes n GPUs by policy from used[] (GPUs taken per node, nodes entries,
 * capacity per node); appends them to out (node, gpu) and updates used.
 * Returns 0, or -1 when fewer than n are free. */
int wp_place_take(enum wp_place_policy policy, int *used, int nodes, int capacity, int n,
                  struct wp_plan_device *out);
/* The shape of a device list (nodes spanned, most on one node, the only node). */
void wp_stage_shape_of(const struct wp_plan_device *d, int n, struct wp_stage_shape *shape);

/* ---- plan_dapple.c ---- */

/* The search. Writes the best plan (fits in memory) into *best; errors
 * when none fits, saying the smallest device memory that would. */
int wp_plan_dapple(const struct wp_plan_model *m, struct wp_plan *best, struct wp_err *err);

/* ---- plan_uniform.c ---- */

/* A given plan: stages of the layer counts given (sum = layers), replicas
 * per stage, devices taken in order by append. For baselines and tests. */
int wp_plan_fixed(const struct wp_plan_model *m, int nstages, const int *layer_counts,
                  const int *replicas, struct wp_plan *p, struct wp_err *err);

/* ---- plan_io.c ---- */

/* The plan file (libconfig, "wavepipe-plan" version 1), written atomically. */
int wp_plan_write(const char *path, const struct wp_plan *p, const struct wp_layer_table *layers,
                  struct wp_err *err);
/* What `wavepipe run --plan` needs back: stages' layer ranges, replicas and
 * devices, micro-batch size and count, policy, model name and layer count. */
int wp_plan_read(const char *path, struct wp_plan *p, struct wp_err *err);
void wp_plan_print_csv(FILE *out, const struct wp_plan *p);
void wp_plan_print_text(FILE *out, const struct wp_plan *p, const struct wp_layer_table *layers);

#endif
