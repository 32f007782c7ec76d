/* An SBP problem as `wavepipe sbp` states it: a chain of matmul layers
 * given by their widths (repeated), the links from a cluster description,
 * the meshes searched for or given as a named strategy, the table of
 * meshes and costs, and the plan file's `sbp` group written to a file. */
#ifndef WP_PLAN_SBP_CHAIN_H
#define WP_PLAN_SBP_CHAIN_H

#include <stddef.h>
#include <stdio.h>

#include "plan/sbp.h"
#include "util/error.h"

/* Layers fc0, fc1, ... of a chain of widths W0, ..., W(n-1) (layer l:
 * n_in W(l), n_out W(l+1)), the chain repeat times over: *layers
 * (calloc'ed) and *nlayers = (n - 1) x repeat. */
int wp_sbp_chain_layers(const int *widths, int nwidths, int repeat, struct wp_sbp_layer **layers, int *nlayers,
                        struct wp_err *err);

/* The problem's links from a cluster description: intra-node its
 * intra_network, else its slowest GPU pair; inter-node its network. Only
 * the levels the problem has are needed; the labels (label_size bytes
 * each) say which entry each came from. */
int wp_sbp_links_from_cluster(const char *path, struct wp_sbp_problem *pr, char *intra_label, char *inter_label,
                              size_t label_size, struct wp_err *err);

/* Strategy "chosen": the search's meshes (so); else a named or written-out
 * strategy (sbp_strategy.h) costed. label (label_size bytes) gets
 * "chosen:KIND" or the strategy as given. */
int wp_sbp_solve(const struct wp_sbp_problem *pr, const struct wp_sbp_search_opts *so, const char *strategy,
                 struct wp_sbp_result *res, char *label, size_t label_size, struct wp_err *err);

/* Each layer's mesh, its nodes and GPUs per axis and its communication in
 * ms, with the totals and the search's figures. */
void wp_sbp_print(FILE *out, const struct wp_sbp_problem *pr, const struct wp_sbp_result *r);

/* The plan file's sbp group alone, written to path (atomically). */
int wp_sbp_write(const char *path, const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                 struct wp_err *err);

#endif
