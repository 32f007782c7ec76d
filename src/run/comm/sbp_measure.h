/* `wavepipe sbp --measure`: one strategy's communication executed over
 * MPI (run/comm/sbp_exec.h) and printed beside the cost model's prediction,
 * per layer and term, in total, and as one `summary:` line for scripts. */
#ifndef WP_SBP_MEASURE_H
#define WP_SBP_MEASURE_H

#include "plan/sbp.h"
#include "run/comm/sbp_exec.h"

/* What the report says about where its inputs came from. */
struct wp_sbp_measure_labels {
    const char *strategy; /* "chosen:cd", "megatron", "dp", or the meshes as given (no spaces) */
    const char *intra;    /* where the model's intra-node link comes from */
    const char *inter;    /* and its inter-node link */
};

/* Collective over MPI_COMM_WORLD, after MPI_Init: runs the executor for
 * res (pr's strategy) and prints the report on rank 0 (errors too, once).
 * Returns the exit status, the same on every rank: 0, or 1 on an error. */
int wp_sbp_measure(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                   const struct wp_sbp_exec_opts *o, const struct wp_sbp_measure_labels *labels);

#endif
