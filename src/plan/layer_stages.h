/* Stages of consecutive layers of a layer table: what one stage costs for a
 * slice of a micro-batch, and a balanced split of a table into stages. One
 * place for both, so that the runtime's emulated compute (run/stage_emulated)
 * and the simulator's prediction from the same table (wavepipe simulate
 * --layers) cannot disagree on a single number. */
#ifndef WP_PLAN_LAYER_STAGES_H
#define WP_PLAN_LAYER_STAGES_H

#include "plan/layers.h"
#include "sched/grad_overlap.h"
#include "sched/schedule.h"

/* Costs of layers [first, last] for a slice of nseq sequences. Times scale
 * linearly from the table's profile batch (nseq / profile_batch), as the
 * planner scales them; bytes per sequence are the table's per profile batch. */
struct wp_layer_stage_cost {
    double forward_s;
    double backward_s;    /* B alone when the backward is split, else B + W */
    double weights_s;     /* W when split (0 otherwise) */
    double optimizer_s;   /* the optimizer step over the stage's parameters */
    double in_seq_bytes;  /* activation entering the stage, per sequence (0 for the first layer) */
    double out_seq_bytes; /* activation leaving it, per sequence */
    double parameter_bytes;
    double activation_bytes; /* the layers' outputs for the slice: what it keeps from F to B */
};

/* When the table does not separate W from the backward (weights_known == 0),
 * W is taken as half of it (zero-bubble's T_B = T_W); the caller says so. */
void wp_layer_stage_cost(const struct wp_layer_table *t, int first, int last, double nseq, int split_backward,
                         struct wp_layer_stage_cost *c);

/* Layer i's part of the pass that adds its weight gradients, at the profile
 * batch: W where the backward is split (the table's, or half of B as
 * above), else the whole backward. The parts of a stage's layers add up to
 * its weights_s or backward_s. */
double wp_layer_grad_pass_s(const struct wp_layer_table *t, int layer, int split_backward);

/* Splits the table's layers into nstages contiguous stages, each at least
 * one layer, minimising the largest forward + backward time (exact, by
 * dynamic programming): first[s] and last[s] inclusive. -1 with err when
 * there are fewer layers than stages. */
int wp_layer_stages_balanced(const struct wp_layer_table *t, int nstages, int *first, int *last, struct wp_err *err);

/* Stages from a list of layer counts "n0,n1,..." that adds up to the table's
 * layer count; -1 with err otherwise. */
int wp_layer_stages_parse(const struct wp_layer_table *t, const char *spec, int nstages, int *first, int *last,
                          struct wp_err *err);
/* The same from n counts (a plan's); spec names them in errors. */
int wp_layer_stages_from_counts(const struct wp_layer_table *t, const int *count, int n, const char *spec,
                                int nstages, int *first, int *last, struct wp_err *err);

/* Per-stage costs of a schedule run on the table (stages [first[s],
 * last[s]], global_batch sequences in s->nmicro micro-batches, each split
 * over the stage's replicas), the arrays the simulator takes (each
 * s->nstages long): F, B, W of one slice, the optimizer step, the bytes one
 * whole micro-batch sends across the boundary after each stage, each
 * stage's gradient bytes (summed over its replicas by the allreduce), and
 * its layers' parts of the pass that makes them and their gradient bytes
 * (for buckets overlapped with that pass: sched/grad_overlap.h). */
struct wp_layer_stage_arrays {
    double *forward_s, *backward_s, *weights_s, *step_s, *boundary_bytes, *gradient_bytes;
    struct wp_grad_layers *grad_layers;
    double *grad_cum; /* the running sums grad_layers point into */
};
int wp_layer_stage_arrays_make(const struct wp_layer_table *t, const struct wp_schedule *s, int global_batch,
                               const int *first, const int *last, struct wp_layer_stage_arrays *a, struct wp_err *err);
void wp_layer_stage_arrays_free(struct wp_layer_stage_arrays *a);

#endif
