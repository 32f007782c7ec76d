/* The discrete-event simulator of action lists: compute costs per stage,
 * messages at alpha + n * beta over the link they cross (or a constant tc),
 * allreduce by the ring cost (optionally in buckets overlapped with the
 * backward: sched/grad_overlap.h), receives posted ahead of need
 * (prefetch) so that transfers overlap compute, and optional bandwidth
 * changes over time. */
#ifndef WP_SCHED_SIMULATE_H
#define WP_SCHED_SIMULATE_H

#include "sched/grad_overlap.h"
#include "sched/schedule.h"
#include "topo/cluster.h"

/* A change of link speed from time_s on: factor multiplies bandwidth
 * (0.5 halves it). src/dst -1 stand for every rank. */
struct wp_bandwidth_change {
    double time_s;
    int src, dst;
    double factor;
};

struct wp_cost_model {
    double tf, tb, tw;     /* seconds per micro-batch through 1/P of the model */
    double tc;             /* seconds per message, when no cluster is given */
    double tar;            /* seconds to move one 1/P share of the gradients over a link */
    int prefetch;          /* 1: receives are posted ahead (transfers start at the send) */
    const struct wp_cluster *cluster; /* optional: links by rank placement on its nodes */
    double message_bytes;  /* with a cluster: bytes of one activation or gradient message */
    double gradient_bytes; /* with a cluster: bytes of one 1/P share of the gradients */
    int nchanges;
    const struct wp_bandwidth_change *changes;
    int record_events;     /* keep the timeline (for --trace, --svg) */
    /* measured seconds of F, B, W per stage (one micro-batch slice), used
     * instead of tf, tb, tw when given: how the runtime's timings are replayed */
    const double *stage_f, *stage_b, *stage_w;
    /* the planner's costs, used instead of the link model when given:
     * seconds of one message across the boundary after stage b (either
     * way), and of each stage's gradient allreduce */
    const double *boundary_s, *stage_allreduce_s;
    /* from a layer table (plan/layer_stages.h), with a cluster: bytes of one
     * whole micro-batch across the boundary after stage b (a message between
     * replicas carries its share: bytes over the larger replica count of the
     * two stages), each stage's gradient bytes for its allreduce, and the
     * optimizer step's seconds per stage (at STEP, also without a cluster) */
    const double *boundary_bytes, *stage_gradient_bytes, *stage_step_s;
    /* with a cluster: ranks per node, in rank order (0: the job's rank list
     * when the cluster file has one, else one rank per GPU) */
    int ranks_per_node;
    /* cores the ranks share (0: each rank has its own). With fewer cores than
     * ranks, k ranks computing at once each progress at min(1, cores / k):
     * a compute's cost is then its work alone (CPU seconds) */
    int cores;
    /* gradient buckets overlapped with the backward (wavepipe run
     * --grad-overlap on): 1 sums a replicated stage's gradients in buckets
     * of grad_bucket_bytes started as its holders' final W (or B, unsplit)
     * of the step makes them (grad_overlap.h, timed from the slowest
     * holder's start of that pass), and its ALLREDUCE waits only for what
     * runs past; 0 (the default here): one sum at the ALLREDUCE. Buckets
     * need the gradient's bytes (a cluster, a layer table); with --tar or
     * given seconds alone the sum is one bucket from the pass's end */
    int grad_overlap;
    double grad_bucket_bytes;
    /* optional, per stage: its layers' parts of that pass and their
     * gradient bytes (plan/layer_stages.h); else the bytes become final
     * evenly over the pass */
    const struct wp_grad_layers *stage_grad_layers;
};

struct wp_sim_event {
    int rank;
    int8_t op;
    int stage, microbatch, peer;
    double start, end;
};

struct wp_sim_result {
    int nranks;
    double makespan;
    double bubble_ratio;      /* idle / (ranks * makespan) */
    double *busy;             /* per rank: compute seconds */
    double *peak_activations; /* per rank, weighted */
    double peak_max;
    struct wp_sim_event *events; /* compute, allreduce and transfers */
    long nevents, cap_events;
};

void wp_cost_model_default(struct wp_cost_model *c);
/* The default with per-stage costs instead (one micro-batch slice: F, B, W
 * seconds per stage; a message across each boundary; each stage's
 * allreduce) and receives posted ahead: the planner's and the tuner's. */
void wp_cost_model_per_stage(struct wp_cost_model *c, const double *f, const double *b, const double *w,
                             const double *boundary_s, const double *allreduce_s);
int wp_simulate(const struct wp_schedule *s, const struct wp_cost_model *cost, struct wp_sim_result *res,
                struct wp_err *err);
void wp_sim_result_destroy(struct wp_sim_result *res);

/* The makespan and peak of s on the simulator with the costs it was made
 * for (its params' tf, tb, tw and tc on the default model), and
 * whether every rank kept its activation bound: how the order search and
 * the climber time their candidates. */
int wp_simulate_own_costs(const struct wp_schedule *s, double *makespan, double *peak, int *within_bound,
                          struct wp_err *err);

/* wp_schedule_validate and then wp_simulate, with their results and their
 * first error, in one lock-step walk where the simulation walks (the
 * validator's walk plays the simulator too): what `wavepipe simulate`
 * does. On an error, v and res are both left empty. */
struct wp_validation;
int wp_validate_and_simulate(const struct wp_schedule *s, const struct wp_cost_model *cost,
                             struct wp_validation *v, struct wp_sim_result *res, struct wp_err *err);

/* Reads a bandwidth trace: CSV lines time_s,src,dst,factor (src/dst a rank
 * or *), header optional. *changes is malloc'ed. */
int wp_bandwidth_trace_read(const char *path, struct wp_bandwidth_change **changes, int *n, struct wp_err *err);

#endif
