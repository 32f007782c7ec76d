/* When a replicated stage's gradient sum ends if it runs in buckets
 * overlapped with the backward (PyTorch DDP's buckets, Megatron's overlapped
 * grad reduce): one timing, used by the simulator and the planner alike, and
 * the one rule for when a bucket is full, used by the runtime's reducer
 * (run/core/grad_reduce.h) too. Gradients become final during the stage's final
 * backward-weights pass of the step (W when the backward is split, else B),
 * layer by layer from the last layer to the first; a bucket's sum starts
 * when it is full (or at the pass's end, for the rest) and after the
 * bucket before it, and only the part that runs past the pass counts. */
#ifndef WP_SCHED_GRAD_OVERLAP_H
#define WP_SCHED_GRAD_OVERLAP_H

#include "topo/collective_cost.h"

/* PyTorch DDP's bucket_cap_mb default, 25 MiB */
#define WP_GRAD_BUCKET_BYTES_DEFAULT (25.0 * 1024 * 1024)

/* A bucket holding bucket_bytes is started (DDP: a bucket closes once its
 * tensors reach the cap; a layer larger than the cap is a bucket alone). */
static inline int wp_grad_bucket_full(double bucket_bytes, double cap_bytes)
{
    return bucket_bytes > 0 && bucket_bytes >= cap_bytes;
}

/* A stage's layers in forward order, as running sums (nlayers + 1 entries
 * each, from any base): each layer's part of the final pass (any unit: only
 * shares of the whole count) and its gradient bytes. nlayers 0: not known;
 * the bytes then become final evenly over the pass. */
struct wp_grad_layers {
    int nlayers;
    const double *cum_pass;
    const double *cum_bytes;
};

/* Seconds of one bucket's sum of `bytes` bytes; optionally, when a sum of
 * *seconds that may start at ready_s (from the pass's start) does start,
 * and the seconds it then takes: the simulator's network lanes, busy with
 * other traffic (NULL: at once, as long as alone). */
struct wp_bucket_cost {
    double (*seconds)(const void *ctx, double bytes);
    const void *ctx;
    double (*start)(void *ctx, double ready_s, double *seconds);
    void *start_ctx;
};

/* The hierarchical allreduce the simulator and the planner charge
 * (collective_cost.h: wp_allreduce_lanes_s, lanes 1: wp_allreduce_hier_s;
 * the planner's tensor groups run `lanes` side by side), as a
 * wp_bucket_cost's ctx. */
struct wp_hier_allreduce {
    int nodes, per_node, lanes;
    struct wp_link_cost intra, inter;
};
double wp_hier_allreduce_s(const void *hier, double bytes);

struct wp_grad_overlap {
    double first_start_s; /* the first bucket's start, from the final pass's start */
    double end_s;         /* the last bucket's end, from the final pass's start */
    double exposed_s;     /* end_s past the pass's end (0 when fully hidden) */
    int nbuckets;
};

/* The timing of a stage's buckets: pass_s the final pass's seconds,
 * total_bytes the stage's gradient bytes (those of layers when given),
 * bucket_bytes the cap. A pass of 0 s or a cap the whole gradient does not
 * reach gives one bucket at the pass's end (the sum without overlap, only
 * started earlier). */
void wp_grad_overlap_time(double pass_s, double total_bytes, const struct wp_grad_layers *layers,
                          double bucket_bytes, const struct wp_bucket_cost *cost, struct wp_grad_overlap *out);

#endif
