/* Planning a model given as layer tables at one or several micro-batch
 * sizes: one plan per table on a cluster description's GPUs, the fastest
 * kept with its kFkB candidates (and, for a GPT model, its SBP meshes), and
 * the summary that shows them. */
#ifndef WP_PLAN_PLAN_TABLES_H
#define WP_PLAN_PLAN_TABLES_H

#include <stdio.h>

#include "plan/layers.h"
#include "plan/plan.h"

struct wp_plan_tables_options {
    const char *const *paths;  /* the layer tables, of one model */
    int npaths;
    int profile_batch;         /* a profile's micro-batch when its name has no pbs-N (0: none) */
    enum wp_layer_contract contract;
    const char *cluster_path;
    int devices;               /* 0: all of the cluster's */
    double memory_bytes;       /* per GPU; 0: from the GPU model name */
    int global_batch;
    /* the planner's settings (struct wp_plan_model) */
    int uneven_slices;         /* DAPPLE's micro-batch rule instead of even slices */
    enum wp_recompute recompute;
    struct wp_plan_tensor tensor; /* p1 0: searched */
    int chunks;
    int grad_overlap;
    double grad_bucket_bytes;
    int place_only;            /* 0: all policies, else 1 + one */
    int sequence_parallel;     /* Megatron-LM's: 0 off, 1 on (groups of p1 x 1), 2 both searched */
    int distributed_optimizer; /* the optimizer state sharded over each stage's replicas */
};

/* One layer table and its plan. */
struct wp_plan_table {
    const char *path;
    struct wp_layer_table t;
    struct wp_plan_model m;
    struct wp_plan plan;
    int read, planned;
    struct wp_err err;         /* why it has no plan (planned 0) */
};

struct wp_plan_tables {
    struct wp_plan_table *v;
    int n;
    int best;                  /* the fastest plan's table; -1: none */
};

void wp_plan_tables_init(struct wp_plan_tables *pt);
void wp_plan_tables_destroy(struct wp_plan_tables *pt);

/* Reads the cluster and every table (checked to be of one model, and of
 * profile_batch when given), plans each (a table whose micro-batch fits
 * nowhere leaves the others to choose from), keeps the fastest as best and
 * adds its kFkB candidates. 0, or -1 with err (no table planned: the first
 * table's reason). */
int wp_plan_tables_search(struct wp_plan_tables *pt, const struct wp_plan_tables_options *o, struct wp_err *err);

/* The best plan's SBP meshes for a GPT model of `blocks` transformer
 * blocks (named model_path in errors), which must match its table. */
int wp_plan_tables_sbp(struct wp_plan_tables *pt, const char *model_path, int blocks, int channels, int seq_len,
                       struct wp_err *err);

/* The summary: a note when a profile graph was contracted, one line per
 * table when there are several, the best plan and its search's figures. */
void wp_plan_tables_print(FILE *out, const struct wp_plan_tables *pt);

#endif
