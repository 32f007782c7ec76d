/* Private to the planner's searches (plan_dapple.c, plan_uniform.c): the
 * tally of a search and the uniform plans one search hands the other. */
#ifndef WP_PLAN_PLAN_SEARCH_H
#define WP_PLAN_PLAN_SEARCH_H

#include "plan/plan.h"

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
