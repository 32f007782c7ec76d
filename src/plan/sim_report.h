/* A schedule timed by the simulator as `wavepipe simulate` reports it: the
 * files the cost model reads (a layer table, a cluster, a bandwidth trace),
 * per-stage costs from the layer table, the simulation (validated on
 * request), one line of text or CSV, and the timeline as Chrome trace and SVG. */
#ifndef WP_PLAN_SIM_REPORT_H
#define WP_PLAN_SIM_REPORT_H

#include <stdio.h>

#include "plan/layers.h"
#include "sched/schedule.h"
#include "sched/simulate.h"
#include "topo/cluster.h"

/* What the simulator reads from files, with init/destroy. */
struct wp_sim_files {
    struct wp_layer_table table;
    struct wp_cluster cluster;
    struct wp_bandwidth_change *changes;
    int have_table, have_cluster;
};

/* Reads each file whose path is not NULL (a layer table, a cluster
 * description, a bandwidth trace) and points cost at the cluster and the
 * bandwidth changes. 0, or -1 with err (what was read before is freed by
 * wp_sim_files_destroy). */
int wp_sim_files_load(struct wp_sim_files *f, const char *layers_path, const char *cluster_path, const char *bw_path,
                      struct wp_cost_model *cost, struct wp_err *err);
void wp_sim_files_destroy(struct wp_sim_files *f);

/* Costs from a layer table: stages split by partition ("n0,n1,..."; NULL:
 * balanced by F + B), global_batch sequences a step (0: the micro-batches
 * times the table's profile batch). t NULL: the cost model's own. */
struct wp_sim_table {
    const struct wp_layer_table *t;
    const char *partition;
    int global_batch;
};

/* The CSV header of wp_sim_report's lines. */
void wp_sim_report_csv_header(FILE *out);

/* Simulates s under base (its stage costs from table when table->t is
 * given), validating it first when validate is set; prints the kind,
 * makespan, bubble ratio and peak activations on out (one CSV row when csv)
 * and writes the timeline to trace (JSON) and svg when not NULL (base must
 * then record events). 0, or -1 with err. */
int wp_sim_report(FILE *out, const struct wp_schedule *s, const struct wp_cost_model *base,
                  const struct wp_sim_table *table, int validate, int csv, const char *trace, const char *svg,
                  struct wp_err *err);

#endif
