/* AutoDDL's SBP search and costing (sbp.h describes the problem): the
 * mesh per layer class that minimises communication within memory
 * (sbp_search.c), the cost of given meshes (sbp_cost.c), and the least
 * memory any strategy needs. */
#ifndef WP_PLAN_SBP_SEARCH_H
#define WP_PLAN_SBP_SEARCH_H

#include "plan/sbp.h"

/* Chooses one mesh per layer class minimising the total communication time
 * within the memory limit. res is filled (wp_sbp_result_destroy frees it).
 * Errors: a bad problem (a chain whose n_out does not match the next n_in,
 * devices not a multiple of G, a layer no mesh of p devices splits evenly),
 * a memory limit below the least any strategy needs (the message gives that
 * least), an exhaustive search stopped at exhaustive_max. */
int wp_sbp_plan(const struct wp_sbp_problem *pr, const struct wp_sbp_search_opts *opts,
                struct wp_sbp_result *res, struct wp_err *err);

/* Costs a given mesh per layer (layers of a class need not agree here),
 * with the cheapest directions between layers; res->space and costed are
 * left 0 (the plan-file group says search = "given"). Errors: a bad
 * problem, a mesh not of N nodes x G GPUs or not valid for its layer. */
int wp_sbp_evaluate(const struct wp_sbp_problem *pr, const struct wp_sbp_mesh *meshes,
                    struct wp_sbp_result *res, struct wp_err *err);

/* The least memory per device any strategy needs, in bytes. */
int wp_sbp_min_memory_bytes(const struct wp_sbp_problem *pr, double *bytes, struct wp_err *err);

#endif
