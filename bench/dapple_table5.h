/* DAPPLE's table V (Fan et al., PPoPP 2021, section VI-B) as data: each
 * model (DAPPLE's V100 profiles, PipeDream's ResNet-50) on configurations
 * A, B and C with the paper's plan, split position and ACR, and that plan
 * built on wavepipe's cost model. Shared by tests/test_plan.c (the planner
 * against the table) and bench/bench_dapple.c (make reproduce-dapple). */
#ifndef WP_BENCH_DAPPLE_TABLE5_H
#define WP_BENCH_DAPPLE_TABLE5_H

#include "plan/plan.h"
#include "plan/plan_search.h"
#include "topo/cluster_io.h"

struct dapple_case {
    const char *file, *contract, *block; /* the counted layers: substrings of their names ("a|b"), "!c": not those */
    int profile_batch, global_batch;
    char config;                         /* 'a', 'b' or 'c' */
    const char *paper;                   /* "DP", "straight" or "P:Q" */
    int split;                           /* blocks in the first stage (P:Q plans), else 0 */
    double acr;                          /* the paper's ACR column; < 0 where it gives none */
};

extern const struct dapple_case dapple_cases[];
extern const int dapple_ncases;

/* "VGG-19" and the like, from the profile's file name. */
const char *dapple_model_name(const struct dapple_case *c);
/* Blocks (layers whose names match c's block) among layers first..last. */
int dapple_blocks_in(const struct wp_layer_table *t, const char *block, int first, int last);
/* The paper's plan on m's costs: DP, straight (blocks spread evenly over
 * every GPU) or P:Q split after c->split blocks. */
int dapple_paper_plan(const struct wp_plan_model *m, const struct dapple_case *c, struct wp_plan *p,
                      struct wp_err *err);
/* Reads c's profile (srcdir/profiles/...) and its configuration
 * (srcdir/topology/dapple-config-X.cfg) into t and hw, devices as
 * wp_plan_hw_from_cluster takes them (0: all 16). */
int dapple_load(const char *srcdir, const struct dapple_case *c, int devices, struct wp_layer_table *t,
                struct wp_plan_hw *hw, struct wp_err *err);

#endif
