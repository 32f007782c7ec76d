/* The planner: DAPPLE's (section IV) over pipeline partitions, stage
 * replication and placement, widened to the hybrid space of Megatron-LM
 * (Narayanan et al., SC21): every stage of a plan runs on replicas that are
 * tensor-parallel groups of t = p1 x p2 GPUs (tp_block.h), one group shape
 * for the whole pipeline, kept inside a node; micro-batches of a searched
 * size; and activation recomputation on the stages whose memory needs it.
 * It minimises the time of one global batch under the per-device memory
 * limit.
 *
 * The cost model (plan_cost.c), for a plan of S stages over micro-batches of
 * B samples (M = ceil(global batch / B) of them), at a point of the hybrid
 * space (struct wp_plan_point: the group p1 x p2 and the slice b):
 *  - B is b times the largest replica count (every replica of the most
 *    replicated stage runs a slice of b samples; DAPPLE's rule has b the
 *    profile batch, as its profiles are taken at the micro-batch size it
 *    trains with); a stage on r replicas runs slices of ceil(B / r)
 *    samples, its forward and backward times the table's scaled by slice /
 *    profile batch;
 *  - a tensor group divides the transformer blocks' compute (layers with a
 *    struct wp_layer_block) by t and adds their collectives
 *    (wp_tp_block_comm_s on the intra-node link, half forward, half
 *    backward); other layers (embedding, head, DAPPLE's profiles) run whole
 *    on every GPU of the group;
 *  - between stages a communication stage (AR = 0) carries the boundary
 *    activation of the whole micro-batch, forward and back: over the
 *    intra-node links when both stages sit on one node (min(r, r') group
 *    pairs, each of t GPU pairs, at once), else over the network (min(k, k')
 *    node links at once, k the nodes a stage spans); with t > 1 each GPU of
 *    a group sends 1/t of it and the receiving group gathers the slice over
 *    NVLink (Megatron's scatter/gather, SC21 section 4.1);
 *  - a replicated stage allreduces its gradients after its last backward,
 *    each of the t lanes its own shard (topo/collective_cost.h: rings in
 *    and across nodes, the lanes sharing each node's network link);
 *  - memory per GPU: weights, gradients and optimizer state of its shards
 *    (wp_tp_block_param_floats for blocks) and the activations the backward
 *    needs (wp_tp_block_stored_bytes for blocks, the output for other
 *    layers) of the micro-batches in flight (policy A: S - s of them, B:
 *    2(S - s) - 1, capped by M); a stage that recomputes keeps only its
 *    layers' inputs per micro-batch in flight (a checkpoint per layer, as
 *    Megatron-LM's uniform recomputation; the stage's input alone would
 *    leave one micro-batch's activations of all its layers to hold at once,
 *    255 GB for Megatron's 1.7B row) plus the activations of its largest
 *    layer for one micro-batch, and runs its forward again (collectives
 *    included) before each backward.
 *
 * The search (plan_dapple.c) is formula 4-5's dynamic programming at each
 * point: a state is "the first j layers planned onto this occupancy of the
 * nodes" (in groups of t GPUs), its value the latency of the whole plan
 * with the unplanned layers as one last stage on every free group; a step
 * splits that last stage, giving the new stage m' groups by one of the
 * device-assignment policies of IV-B. DP (one stage) and straight pipelines
 * (one group per stage) are states like any other. Uniform plans
 * (plan_uniform.c) are searched beside it; the best of all points by L are
 * re-ranked by the simulator. */
#ifndef WP_PLAN_PLAN_H
#define WP_PLAN_PLAN_H

#include <stdio.h>

#include "plan/gpu_model.h"
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

/* The tensor-parallel group of a plan (the plan file's `tensor = [p1, p2]`,
 * overall and per stage): t = p1 p2 GPUs of one node, consecutive, run each
 * replica of every stage. p1 is axis 1 of tp_block.h, the inner one (it
 * splits the attention heads; its AllReduces), p2 axis 2 (it splits the
 * channels and the sequences of a slice; its ReduceScatters and
 * AllGathers). Rank (j1, j2) of a group is group rank j1 + p1 j2. The
 * schedule's ranks are the groups: stage by stage, replica by replica (as
 * without tensor parallelism); world rank v t + l is lane l of schedule
 * rank v, and a stage's `devices` list its replicas' GPUs in that order
 * (replicas x t entries, lane 0 first). [1, 1], the default and what plan
 * files without the key mean, is no tensor parallelism. */
struct wp_plan_tensor {
    int p1, p2;
};
static inline int wp_plan_tensor_size(struct wp_plan_tensor g)
{
    return g.p1 * g.p2;
}

struct wp_plan_stage {
    int first_layer, last_layer; /* inclusive, 0-based in the layer table */
    int replicas;                /* data-parallel replicas (tensor groups) */
    enum wp_place_policy policy;
    struct wp_plan_device *devices; /* replicas x t GPUs: replica-major, a group's lanes consecutive */
    int nodes_spanned, max_per_node; /* max_per_node: replicas (groups) on the fullest node */
    int only_node;               /* the node when all replicas share one, else -1 */
    int recompute;               /* 1: forward again before each backward, keeping only the stage's input */
    int selective;               /* 1: its blocks' attention core again before each backward (not with recompute) */
    /* derived by wp_plan_evaluate */
    int slice;                   /* samples per replica per micro-batch */
    double forward_s, backward_s;/* one slice */
    double send_s;               /* the boundary after the stage, one micro-batch, one way (0: last stage) */
    double allreduce_s;          /* what the last backward does not hide of it */
    double optimizer_s;          /* the optimizer step after it (0: not known) */
    double weights_bytes;        /* parameters + gradients + optimizer state */
    double activation_bytes;     /* activations one slice keeps for its backward (per GPU) */
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
    struct wp_plan_tensor tensor; /* every stage's group (see above) */
    int sequence_parallel;        /* Megatron-LM's sequence parallelism over the tensor groups */
    int distributed_optimizer;    /* optimizer state sharded over each stage's replicas */
    /* Megatron-LM's interleaved 1F1B: 0 or 1 for none; v > 1: `stages` are
     * v P virtual stages (the layer chain in order, every one with the same
     * replica count), stage j on the GPUs of stage j mod P, its chunk j / P */
    int chunks;
    int micro_batch;             /* samples per micro-batch (all replicas of a stage together) */
    int microbatches;            /* M */
    char policy;                 /* 1F1B warm-up: 'A' or 'B' */
    double acr;                  /* activation communication ratio; < 0 with one stage */
    int fits;                    /* every device within memory */
    struct wp_pipe_latency latency;
    double predicted_iter_s;     /* the simulator's makespan when simulated, else L */
    double simulated_iter_s;     /* the simulator's makespan; < 0 when not simulated */
    double peak_memory_bytes;    /* the fullest device */
    int devices_used;            /* GPUs: replicas x t over the stages */
    double model_flops;          /* the layer table's forward + backward FLOPs of one
                                  * iteration (3 x forward; recomputation not counted);
                                  * 0 when the table does not give them */
    int nkfkb;
    struct wp_kfkb_candidate *kfkb;
    struct wp_plan_sbp *sbp;     /* per stage, or NULL */
    /* search statistics */
    const char *search;          /* which searches ran at the chosen point (a static string) */
    int points;                  /* points of the hybrid space searched */
    long states, evaluations;
    double search_s;
};

void wp_plan_init(struct wp_plan *p);
void wp_plan_destroy(struct wp_plan *p);
/* "DP", "straight" or "P:Q:..." (replicas per stage). */
void wp_plan_shape(const struct wp_plan *p, char *buf, size_t size);

/* ---- plan_cost.c ---- */

/* One point of the hybrid space: what the layer-level searches hold fixed. */
struct wp_plan_point {
    struct wp_plan_tensor tensor;
    int slice;                   /* samples per replica of the widest stage in a micro-batch */
    /* Megatron-LM's sequence parallelism (tensor groups of p1 x 1): the
     * LayerNorms, dropouts and what they keep split over the group's
     * sequence positions, the same bytes moved (an AllGather and a
     * ReduceScatter for each AllReduce); activations megatron_memory.h's */
    int sequence_parallel;
};

/* When a stage recomputes its forward before its backward. */
enum wp_recompute {
    WP_RECOMPUTE_NEVER,          /* as initialised: DAPPLE's setting */
    WP_RECOMPUTE_WHERE_NEEDED,   /* a stage whose activations would not fit otherwise: its blocks'
                                  * attention core first (selective), else the whole forward */
    WP_RECOMPUTE_ALWAYS,         /* every stage its whole forward (Megatron-LM's
                                  * --recompute-granularity full --recompute-method uniform) */
    WP_RECOMPUTE_SELECTIVE       /* every stage its blocks' attention core (--recompute-granularity
                                  * selective; Korthikanti et al. 2022) */
};

/* Layer prefix sums the cost model reads in O(1) per stage, at one point
 * (wp_plan_model_set_point). */
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
    enum wp_recompute recompute;
    /* Megatron-LM's distributed optimizer (ZeRO stage 1): 1 shards each
     * stage's optimizer state (float32 master weights and moments) over its
     * replicas, the gradients summed by a ReduceScatter and the parameters
     * gathered by an AllGather (an AllReduce's bytes); 0 as initialised */
    int distributed_optimizer;
    /* sequence parallelism at the hybrid search's points: 0 (as
     * initialised) never, 1 on every tensor group of p1 > 1 ranks, 2 both */
    int sequence_parallel;
    /* the hybrid search's scope (wp_plan_search): only this tensor group
     * when p1 > 0, else every one that divides a node's GPUs */
    struct wp_plan_tensor fixed_tensor;
    /* the most chunks (interleaved virtual stages per rank) the final choice
     * tries for plans of one replica count; 0 or 1 (as initialised): none */
    int max_chunks;
    /* 0 (as initialised): the DP places each stage by every policy of IV-B
     * (fresh, append and scatter first) and keeps the best, uniform plans
     * and wp_plan_fixed by append; 1 + a policy: all of them by that one
     * only, to compare the policies (wavepipe plan --place) */
    int place_only;
    /* the point the sums are for: 1 x 1 and the profile batch as initialised */
    struct wp_plan_point point;
    int groups_per_node;         /* hw.gpus_per_node / t: what the searches place */
    /* n + 1 entries each, per GPU at the point: forward and backward seconds
     * of one profile batch (blocks' compute divided by t), parameter bytes
     * (one lane's, which its allreduce carries), parameters + gradients +
     * optimizer state, activations kept for the backward of one profile
     * batch, outputs (a layer's output is the next one's input, all a
     * recomputing stage keeps of it); the group's collectives of one
     * micro-batch's forward (the backward's are the same): seconds whatever
     * its size, and per sample. cum_p: gradient bytes (what a replicated
     * stage sums); cum_kept and cum_sharded: parameters and gradients, and
     * the optimizer state the distributed optimizer shards; cum_act_sel the
     * activations when blocks recompute their attention core, cum_sel_s
     * that recomputation's seconds; cum_in what a stage that recomputes
     * whole keeps of each layer (its input: under sequence parallelism a
     * block's split over the group) */
    double *cum_f, *cum_b, *cum_p, *cum_kept, *cum_sharded, *cum_act, *cum_act_sel, *cum_sel_s, *cum_in, *cum_out,
        *cum_tp_fixed, *cum_tp_per_sample;
    /* per GPU at the point: the optimizer step's seconds (the sharded part
     * of it, which the distributed optimizer splits over the replicas) */
    double *cum_opt;
    /* the GPU whose per-operation model timed the table (layers.h), NULL
     * when its times are measured or made from one FLOP rate: then the
     * point's blocks are timed again at their tensor group, slice and
     * sequence parallelism, and the group's collectives run at the share
     * of the links' bandwidth NCCL reaches */
    const struct wp_gpu_spec *gpu;
    /* the largest activations of one layer in a range (what a recomputing
     * stage holds at once): act_max[k n + i] over layers i .. i + 2^k - 1 */
    double *act_max;
    int act_levels;
    struct wp_pipe_stage *scratch; /* 2n - 1 stages for wp_dapple_latency */
};
int wp_plan_model_init(struct wp_plan_model *m, const struct wp_layer_table *layers,
                       const struct wp_plan_hw *hw, int global_batch, struct wp_err *err);
void wp_plan_model_destroy(struct wp_plan_model *m);
/* Sets the point the costs are for; -1 with why in err when the group
 * cannot split the table's blocks (tp_block.h's conditions, the slice's
 * sequences included) or does not divide a node's GPUs. */
int wp_plan_model_set_point(struct wp_plan_model *m, const struct wp_plan_point *pt, struct wp_err *err);
/* 1 when the table's times are its FLOPs at one rate (analytic tables):
 * they then hold at any micro-batch size, and the search tries several. */
int wp_plan_model_times_scale(const struct wp_plan_model *m);
/* Groups the searches place: nodes x groups per node. */
static inline int wp_plan_model_groups(const struct wp_plan_model *m)
{
    return m->hw.nodes * m->groups_per_node;
}

/* What the cost model needs of a stage: its layers and where its replicas
 * (groups) are. */
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
 * given; m at the plan's point), chooses policy A or B (B when the ACR is at
 * least 0.1 and B's deeper warm-up fits without more recomputation) and
 * sets predicted_iter_s. */
void wp_plan_evaluate(const struct wp_plan_model *m, struct wp_plan *p);

/* A plan's costs at another micro-batch size: per stage one slice's
 * forward and backward (a recomputing stage's forward included), the
 * boundary after it (one message, 0 for the last) and its allreduce (arrays
 * of nstages); the fullest device's bytes when groups of k micro-batches
 * warm up under policy (kFkB: k times 1F1B's in-flight count, at most M),
 * stages recomputing as m->recompute says at that depth. Returns -1 when a
 * replica gets no sample. */
int wp_plan_costs_at(const struct wp_plan_model *m, const struct wp_plan *p, int micro_batch, int k, char policy,
                     double *forward_s, double *backward_s, double *send_s, double *allreduce_s,
                     double *peak_bytes);

/* ---- plan_kfkb.c ---- */

/* Simulates the plan (1F1B when k = 1, else kFkB with groups of k) at
 * micro_batch (0: the plan's) on the cost model's stage, boundary and
 * allreduce times: seconds per iteration into *iter_s, the fullest
 * device's bytes into *peak_bytes (may be NULL). The schedule's ranks are
 * the groups; when every stage has the same replica count one chain of
 * stages stands for them all (the replicas run the same slices in lock
 * step, each to its own peer: the same makespan, S ranks instead of r S). */
int wp_plan_simulate(const struct wp_plan_model *m, const struct wp_plan *p, int k, int micro_batch,
                     double *iter_s, double *peak_bytes, struct wp_err *err);
/* The ranks wp_plan_simulate simulates the plan on (one chain when every
 * stage has the same replica count, else every group). */
int wp_plan_sim_ranks(const struct wp_plan *p);
/* The schedule that runs p with groups of k and M micro-batches: 1F1B or
 * kFkB (Megatron-LM's interleaved order for a plan of chunks), on the
 * ranks wp_plan_sim_ranks counts, replicas per stage where they differ
 * (reps: S entries, filled here). What wp_plan_simulate times, and what
 * `plan --format torch` writes (plan_torch.h). */
struct wp_sched_params;
void wp_plan_sched_params(const struct wp_plan *p, int k, int M, int *reps, struct wp_sched_params *sp);
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
/* The same in tensor groups of t GPUs: used[] and capacity count groups,
 * out gets n x t GPUs (group g of a node is its GPUs g t .. g t + t - 1). */
int wp_place_take_groups(enum wp_place_policy policy, int *used, int nodes, int capacity, int n, int t,
                         struct wp_plan_device *out);
/* The shape of a device list (nodes spanned, most on one node, the only node). */
void wp_stage_shape_of(const struct wp_plan_device *d, int n, struct wp_stage_shape *shape);
/* The same for `replicas` groups of t GPUs listed as above (counts in groups). */
void wp_stage_shape_of_groups(const struct wp_plan_device *d, int replicas, int t, struct wp_stage_shape *shape);

/* ---- plan_io.c ---- */

/* The plan file (libconfig, "wavepipe-plan" version 1), written atomically. */
int wp_plan_write(const char *path, const struct wp_plan *p, const struct wp_layer_table *layers,
                  struct wp_err *err);
/* What `wavepipe run --plan` needs back: stages' layer ranges, replicas,
 * tensor group, recomputation and devices, micro-batch size and count,
 * policy, model name and layer count. Plans written before tensor
 * parallelism (no `tensor` key) read as [1, 1]. */
int wp_plan_read(const char *path, struct wp_plan *p, struct wp_err *err);
void wp_plan_print_csv(FILE *out, const struct wp_plan *p);
/* "0:0 0:1 1:0": every device of a stage (node:gpu, a replica's t GPUs in
 * turn), as the CSV and the plan file give them. */
void wp_plan_devices_list(const struct wp_plan_stage *st, int t, char *buf, size_t size);
/* The readable summary: the degrees of parallelism as Megatron-LM names them
 * (TP, PP, DP, micro-batch size, global batch), predicted time, TFLOP/s per
 * GPU and memory, then the stages. */
void wp_plan_print_text(FILE *out, const struct wp_plan *p, const struct wp_layer_table *layers);

#endif
