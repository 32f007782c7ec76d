/* Harvesting a campaign directory (see point.h for the point contract):
 * every point's results.csv rows and run.log prediction gathered into one
 * row per run, with median/min/max over the iterations after warm-up and
 * scaling efficiencies, written as one tidy CSV.
 *
 * Rules (also in `wavepipe harvest --help`):
 *  - point directories are read in strcmp order of their names; a directory
 *    without point.cfg, a corrupt point.cfg, a missing or empty results.csv,
 *    or a point left with no iteration after warm-up is skipped and named;
 *  - results.csv columns are found by name in its header: a file of an
 *    older wavepipe (no adapt, partition, pause_s, ... columns) is read
 *    alike, the columns taken from the missing ones left empty;
 *  - a results.csv row is skipped and named (file:line) when it has the wrong
 *    number of fields, an unparsable or out-of-range number, or is the last
 *    line without its newline (a torn write);
 *  - an iteration present more than once (a requeued job resumed from its
 *    checkpoint) keeps the row written last;
 *  - the first `warmup` iterations (point.cfg, or --warmup) are dropped;
 *  - a point without DONE is still harvested (state "incomplete", or
 *    "failed" with FAILED): its rows are good rows;
 *  - scaling groups: points with the same scaling kind and the same value of
 *    every axis except "nodes" (an adaptive run, axis adapt, and a static
 *    one of otherwise equal settings are two groups and two series);
 *    repetitions share their group. The baseline
 *    is the mean over repetitions of samples_per_s_median at the group's
 *    smallest node count n0; every run (repetition) keeps its own row:
 *      weak:   weak_efficiency   = (T/n) / (T0/n0)
 *      strong: strong_speedup    = T / T0,
 *              strong_efficiency = strong_speedup / (n/n0)
 *    (the columns of the other kind are left empty).
 *  - samples_per_s_mean is what a self-tuning job delivers: the kept
 *    iterations' samples over their time, pauses to move layers included,
 *    sum(global_batch) / sum(iter_time_s + pause_s) (pause_s 0 in a file
 *    without the column); the medians leave out the pauses and the slow
 *    iterations before a switch;
 *  - twins: runs equal in every axis except "adapt" (nodes, scenario and
 *    any other axis included; a run without an axis the other has differs).
 *    A run with axis adapt other than "none" gets adapt_vs_static = its
 *    samples_per_s_mean over the mean samples_per_s_mean of its twins with
 *    adapt = "none" (their repetitions pooled); NAN for static runs, runs
 *    without the adapt axis and runs without such a twin.
 */
#ifndef WP_CAMPAIGN_HARVEST_H
#define WP_CAMPAIGN_HARVEST_H

#include <stdio.h>

#include "campaign/point.h"
#include "run/adapt/changes.h"
#include "util/error.h"
#include "util/stats.h" /* struct wp_stat3: median, min and max over the kept iterations */

/* one kept iteration of a run, for the per-iteration plots */
struct wp_harvest_iteration {
    long iteration;
    double samples_per_s;
    int plan_changed; /* its k or partition differs from the previous row's (warm-up rows count) */
    int shape_changed; /* its ranks, nodes, stages or replicas differ from the previous row's */
    char shape[160];  /* "4 ranks on 2 nodes in 1 stages (replicas 4)" ("" without the columns) */
};

struct wp_harvest_run {
    struct wp_point point;
    char dir[256];          /* the point directory's name inside DIR */
    char state[16];         /* "done", "failed", "incomplete" */
    int nodes;              /* the "nodes" axis */
    int iterations;         /* kept iterations (after de-duplication and warm-up) */
    int duplicates;         /* rows replaced by a later row of the same iteration */
    int global_batch;       /* from the last kept row */
    struct wp_stat3 iter_time_s, samples_per_s, tokens_per_s, bubble_ratio;
    double peak_activation_bytes; /* max over kept iterations */
    double loss_last;             /* loss of the last kept iteration */
    int has_prediction;           /* run.log had a parsable summary line */
    double pred_iter_time_s, pred_samples_per_s, pred_bubble_ratio;
    int group;                    /* scaling group index */
    double weak_efficiency, strong_speedup, strong_efficiency; /* NAN when not applicable */
    double pause_s_total;         /* the kept iterations' pauses to move layers (NAN: no pause_s column) */
    char partition_last[256];     /* units per stage of the last kept iteration ("": no partition column) */
    int shape_changes;            /* kept iterations whose shape differs from the row before (a recovery) */
    char shape_last[160];         /* the last kept iteration's shape ("" without the columns) */
    double samples_per_s_mean;    /* sum(global_batch) / sum(iter_time_s + pause_s) over the kept iterations */
    double adapt_vs_static;       /* samples_per_s_mean over its static twins' mean (NAN: not adaptive, no twin) */
    struct wp_harvest_iteration *per_iteration; /* the kept iterations, ascending; `iterations` of them */
    struct wp_changes scenario;   /* the point's changes.txt (axis scenario; n == 0 without one) */
};

struct wp_harvest {
    struct wp_harvest_run *runs;
    int nruns;
    int skipped_points; /* point directories skipped */
    int skipped_rows;   /* results.csv rows skipped */
    int ngroups;
    int micro_batches_follow_nodes; /* the node count sets the micro-batch count (M = 4P) */
    int data_parallel_follows_nodes; /* the node count sets the data-parallel copies (weak scaling by copies) */
    /* every axis name over all runs, in first-seen order (point.cfg order) */
    int naxes;
    char axis_name[WP_POINT_MAX_AXES][WP_POINT_NAME_MAX];
};

/* Reads every point of the campaign directory dir. warmup >= 0 overrides
 * point.cfg's warmup. Skipped files are named on `log` (stderr) with the
 * reason. Returns -1 only when dir cannot be read at all; a campaign with
 * no good point gives nruns == 0. */
int wp_harvest_scan(const char *dir, int warmup, FILE *log, struct wp_harvest *h, struct wp_err *err);
/* Frees the runs and their per-iteration rows. */
void wp_harvest_free(struct wp_harvest *h);

/* The CSV (header, then one row per run in scan order), fixed number formats. */
void wp_harvest_write_csv(FILE *fp, const struct wp_harvest *h);
/* Writes the CSV to path atomically (temporary file, then rename). */
int wp_harvest_write_csv_file(const char *path, const struct wp_harvest *h, struct wp_err *err);
/* A human-readable summary table. */
void wp_harvest_print_table(FILE *fp, const struct wp_harvest *h);

/* Whether the axis takes more than one value (or is missing somewhere)
 * over the campaign's runs. */
int wp_harvest_axis_varies(const struct wp_harvest *h, const char *name);

/* Whether run r is a static run with adaptive twins: its axis adapt is "none". */
int wp_harvest_is_static(const struct wp_harvest_run *r);

/* Whether runs a and b are twins: equal in every axis of the campaign
 * except "adapt" (an axis missing from both is equal). */
int wp_harvest_twins(const struct wp_harvest *h, const struct wp_harvest_run *a, const struct wp_harvest_run *b);

/* The label of a run's series in tables and plots: the values of the axes
 * other than nodes that vary over the campaign, joined by spaces ("all"
 * when none varies). */
void wp_harvest_series_label(const struct wp_harvest *h, const struct wp_harvest_run *r, char *buf,
                             size_t size);

#endif
