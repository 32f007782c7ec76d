/* Ada-Grouper's online tuning of k (sections 4.2-4.3, 5.4), beside the
 * interpreter: a set of kFkB plans (k, micro-batch size b) that hold no
 * more activations on any rank than the plan the run started with (the
 * memory-limit curve: for each k the largest b that fits), each a schedule
 * made once. Every iteration the run's agreed measurements (measure.h)
 * update the running plan's compute times per stage (a moving average:
 * compute is stable) and the links as measured now (the faster of the
 * last two iterations: one slow iteration is not a slower link). Every N iterations
 * each plan is predicted by the simulator: its stages' F, B, W as measured
 * when it last ran (else scaled per sequence from the plan measured at the
 * nearest b), each boundary's message time as the link's latest bandwidth
 * gives for its bytes, the allreduces as measured. The arbiter keeps the
 * running plan unless another is predicted faster by more than min_gain.
 * Rank 0 decides and broadcasts, so every rank switches at the same
 * iteration boundary; the global batch never changes, so a switch changes
 * no parameter. */
#ifndef WP_RUN_TUNE_K_H
#define WP_RUN_TUNE_K_H

#include "run/adapt/measure.h"
#include "sched/schedule.h"
#include "util/error.h"

/* Makes the schedule of the run's settings with kFkB group size k (1:
 * 1F1B) and nmicro micro-batches, placed as the run's. */
typedef int (*wp_tune_make_fn)(void *ctx, int k, int nmicro, struct wp_schedule *out, struct wp_err *err);

struct wp_kfkb_plan {
    int k, micro_batch, nmicro;
    struct wp_schedule sched;
    int measured;                 /* iterations this plan has run */
    double *f_s, *b_s, *w_s;      /* per stage, one micro-batch slice (moving averages) */
    double *allreduce_s;          /* per stage */
    double predicted_s;           /* at the last decision */
};

struct wp_tune_k {
    int nstages, global_batch, nplans, current;
    struct wp_kfkb_plan *plans;
    /* per boundary: the latest time of a message, per sequence of the
     * micro-batch (the slower direction; 0 until a message is timed) */
    double *link_s_per_seq;
    double *link_last_s_per_seq;  /* per boundary: the iteration before's (0: none) */
    double min_gain;              /* the arbiter's threshold, relative (0.05) */
    double average_weight;        /* weight of the newest iteration in the compute averages */
    int cores;                    /* ranks share this many cores (simulator), 0: their own */
};

/* The candidates: k = 1 .. max_k with, for each, the largest micro-batch
 * size that divides the global batch and the start plan's replica slicing,
 * runs at least k micro-batches, and holds on every rank at most as many
 * sequences' activations at once as the start schedule does. The start
 * plan is always one of them (current). */
int wp_tune_k_init(struct wp_tune_k *t, const struct wp_schedule *start, int start_k, int global_batch, int max_k,
                   wp_tune_make_fn make, void *make_ctx, struct wp_err *err);
/* Or the given (k, micro-batch) pairs (the planner's candidates, or the
 * user's), checked against the global batch and the slicing only; the
 * start plan is added when it is not among them. */
int wp_tune_k_init_given(struct wp_tune_k *t, const struct wp_schedule *start, int start_k, int global_batch,
                         const int *k_b, int ngiven, wp_tune_make_fn make, void *make_ctx, struct wp_err *err);
void wp_tune_k_destroy(struct wp_tune_k *t);

/* The running plan's agreed measurements of one iteration. */
void wp_tune_k_observe(struct wp_tune_k *t, const struct wp_measure *m);

/* Predicts every plan; returns the plan the arbiter picks (maybe current)
 * and writes the reasons into why (one line). For a partition about to
 * change, each stage's compute is scaled by stage_scale and each
 * boundary's messages by link_scale (tune_partition.h's
 * wp_tune_partition_scales); NULL: unchanged. */
int wp_tune_k_decide(struct wp_tune_k *t, const double *stage_scale, const double *link_scale, char *why, size_t size,
                     struct wp_err *err);

#endif
