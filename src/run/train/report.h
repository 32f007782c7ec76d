/* What a training run reports: one CSV row per iteration (and its header),
 * the line per step, the summary of measured against simulated, the
 * `bytes:` line of what the comm table moved against the model, the
 * measured timeline (Chrome trace and SVG), the kernels' times, and what
 * measuring cost. Collective where it says so; rank 0 prints and writes. */
#ifndef WP_RUN_TRAIN_REPORT_H
#define WP_RUN_TRAIN_REPORT_H

#include <stddef.h>

#include "plan/layer_stages.h"
#include "run/adapt/adapt.h"
#include "run/adapt/clock_offset.h"
#include "run/adapt/measure.h"
#include "run/comm/tensor_group.h"
#include "run/core/interpreter.h"
#include "sched/schedule.h"

/* The results file's header (its columns, real or emulated compute) and
 * the name of its rows in errors: rows of the two do not share a file. */
const char *wp_report_results_header(int emulated);
const char *wp_report_results_kind(int emulated);

/* One iteration as its results row says it. */
struct wp_report_row {
    const struct wp_schedule *ran;    /* the schedule the iteration ran */
    int world_ranks, nodes;
    const char *replicas;             /* per stage, "r0:r1:..." */
    long step;
    double iter_s, bubble, peak_bytes, loss;
    int global_batch, sequence_length;
    int emulated;
    const char *compute_cols;         /* emulated: "emulated,TABLE,DILATION,BYTE_SCALE"; real: the precision */
    double host_busy;                 /* emulated: the host's busy share of the iteration (-1: unknown) */
    const struct wp_adapt_options *adapt;
    const char *partition;            /* units per stage the iteration ran, "n0:n1:..." */
    double pause_s;                   /* a move of layers after it */
    const struct wp_measure *measure; /* what it measured (agreed over the ranks) */
};
/* The row (timestamped now, ending in a newline) into row; its length, or
 * -1 when it does not fit. */
int wp_report_results_row(const struct wp_report_row *r, char *row, size_t cap);
/* Rank 0's line per step: a progress line on a terminal, else one line a step. */
void wp_report_step_line(long step, int steps, double loss, double iter_s, int global_batch, double bubble);

/* Measured against simulated (collective): the simulator replays the
 * schedule with each stage's measured mean F, B and W work of the last
 * step on the node's shared cores (real compute), or with the layer
 * table's costs (emulated); rank 0 prints the `summary:` line. */
struct wp_report_summary {
    int P, rank, shared_cores;
    int speaks;      /* 0 on a tensor group's lanes other than 0: their sums are lane 0's again */
    const int *mesh; /* p0 x p1 x p2 (1 x 1 x 1: none) */
    double peak_bytes, median_iter_s;
    const struct wp_layer_stage_arrays *table; /* emulated: its costs; NULL for real compute */
    const char *table_name;
    double dilation, byte_scale; /* emulated: the run's (train_options.h) */
    double host_busy;            /* the host's busy share over the steps after the first (-1: unknown) */
    const char *precision;       /* real compute: the kernels' precision */
};
void wp_report_summary(const struct wp_interp *in, const struct wp_schedule *s, const struct wp_report_summary *rs);

/* The last step's bytes by kind against the cost model's volumes
 * (collective; rank 0 prints the `bytes:` line). */
void wp_report_bytes(const struct wp_interp *in, const struct wp_tensor_group *tg, const struct wp_schedule *s,
                     const struct wp_gpt2_config *g, enum wp_precision precision, int rank);

/* With --adapt, the trace's place in the run (rank 0's). */
struct wp_report_timeline {
    const struct wp_adapt *adapt; /* its decisions; NULL: the trace is the iteration alone */
    const struct wp_clock *clock; /* MPI_Wtime to the common timeline */
    double run_start_s;           /* the run's first iteration's start, on the common timeline */
    long traced_iteration;
};
/* The measured timeline of the last step (collective), gathered into rank
 * 0's trace (JSON) and SVG on the common clock; a write error is printed
 * as command's. */
void wp_report_measured_trace(const struct wp_interp *in, const struct wp_schedule *sched, const double *msg_sent_s,
                              const char *trace_path, const char *svg_path, const struct wp_report_timeline *tl,
                              int world_rank, int world_P, int lane, const char *command);

/* --kernel-times (collective): every rank's rows gathered to rank 0, which
 * writes the file (temporary name, then renamed). */
int wp_report_kernel_times(const char *path, int rank, int P, long steps, struct wp_err *err);

/* Rank 0's line on what measuring (and tuning) cost per iteration, from
 * measure_s[1..n] (the steps after the first, sorted here) against the
 * median iteration. */
void wp_report_measuring(double *measure_s, long n, double median_iter_s, int tuning);

#endif
