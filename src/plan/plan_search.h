/* The planner's searches: DAPPLE's at one point, the hybrid search over
 * every point, a given plan and Megatron-LM's interleaved form of one
 * (plan_dapple.c, plan_uniform.c); and, between the two files, the tally
 * of a search and the uniform plans one search hands the other. */
#ifndef WP_PLAN_PLAN_SEARCH_H
#define WP_PLAN_PLAN_SEARCH_H

#include "plan/plan.h"

/* ---- plan_dapple.c ---- */

/* The search at m's point. Writes the best plan (fits in memory) into
 * *best; errors when none fits, saying the smallest device memory that
 * would. */
int wp_plan_dapple(struct wp_plan_model *m, struct wp_plan *best, struct wp_err *err);
/* The search over every point of the hybrid space in m's scope: the tensor
 * groups that divide a node's GPUs (or m->fixed_tensor) and can split the
 * table's blocks, and, when the table's
 * times scale (analytic tables), slices of 1, 2, 4, ... samples (else the
 * profile batch); recomputation as m->recompute says. The best plans by L
 * of every point are re-ranked by the simulator together. Leaves m at the
 * chosen plan's point (for wp_plan_evaluate, wp_plan_simulate, kFkB, ...). */
int wp_plan_search(struct wp_plan_model *m, struct wp_plan *best, struct wp_err *err);

/* ---- plan_uniform.c ---- */

/* A given plan at m's point: stages of the layer counts given (sum =
 * layers), replicas (groups) per stage, devices taken in order by append.
 * For baselines and tests. */
int wp_plan_fixed(const struct wp_plan_model *m, int nstages, const int *layer_counts,
                  const int *replicas, struct wp_plan *p, struct wp_err *err);

/* Megatron-LM's interleaved schedule of a plan whose stages all have the
 * same replica count (m at its point): its P stages' devices run `chunks`
 * virtual stages each (plan.h), of the layer counts given (chunks x P
 * entries) or, when NULL, balanced by F + B. */
int wp_plan_interleave(const struct wp_plan_model *m, const struct wp_plan *base, int chunks, const int *layer_counts,
                       struct wp_plan *out, struct wp_err *err);

/* ---- between the searches ---- */

/* Plans evaluated, and the least peak memory per device any of them needs
 * (for the error when none fits). */
struct wp_plan_tally {
    long evaluations;
    double least_peak;
};

/* wp_plan_latency, counted in the tally. */
double wp_plan_tally_latency(const struct wp_plan_model *m, struct wp_plan_tally *tally,
                             const struct wp_stage_shape *shapes, int n, int *fits, double *peak);

/* One uniform plan: nstages stages of r replicas, stage s from layer first[s]. */
struct wp_uniform_plan {
    int nstages, r, fits;
    double value;  /* L */
    int *first;
};

struct wp_uniform_list {
    struct wp_uniform_plan *v;
    int n, cap;
};

/* Every (S, r) that fits on the GPUs: the balanced split moved while L
 * drops, one entry each. Returns -1 when out of memory. */
int wp_plan_search_uniform(const struct wp_plan_model *m, struct wp_plan_tally *tally, struct wp_uniform_list *out);
void wp_uniform_list_destroy(struct wp_uniform_list *l);
/* The plan of an entry, devices by append. */
int wp_plan_of_uniform(const struct wp_plan_model *m, const struct wp_uniform_plan *u, struct wp_plan *p,
                       struct wp_err *err);

#endif
