/* The training object: a run of `wavepipe run` as a library object, beside
 * the one interpreter (core/interpreter.h), never inside it. It owns the
 * settings (train_setup.h), the ranks' sharing of cores, the kernels and
 * communication (backend.h), the interpreter and its stages, measurement,
 * the adaptive tuner's hook (adapt/adapt.h) and the layer moves it asks
 * for, the stop signals, the watchdog and watched checkpoint saves, and the
 * step loop; what it reports is report.h's.
 *
 *   wp_train_init     settings, backends, interpreter; resumes a checkpoint
 *   wp_train_step     one iteration (and what follows it: a row, a tuner's
 *                     switch or move, a change of the scenario, a stop, a
 *                     periodic checkpoint)
 *   wp_train_finish   the last checkpoint, the summary, kernel times, trace
 *   wp_train_destroy  frees everything (before MPI_Finalize)
 *
 * All four are collective over MPI_COMM_WORLD, after MPI_Init. */
#ifndef WP_RUN_TRAIN_H
#define WP_RUN_TRAIN_H

#include <mpi.h>

#include "plan/layer_stages.h"
#include "run/adapt/adapt.h"
#include "run/adapt/clock_offset.h"
#include "run/adapt/measure.h"
#include "run/adapt/slowdown.h"
#include "run/core/interpreter.h"
#include "run/fault/rank_loss.h"
#include "run/model/stage_emulated.h"
#include "run/model/stage_gpt2.h"
#include "run/train/backend.h"
#include "run/train/train_options.h"
#include "run/train/train_setup.h"
#include "util/host_load.h"

/* The tuner's plans: the run's schedule settings with another k and
 * micro-batch count, on the ranks the run's schedule uses. */
struct wp_train_plan_maker {
    struct wp_sched_params params;
    const int *rank_map; /* --plan: its devices' ranks, or NULL */
};

struct wp_train {
    struct wp_train_options o;    /* as given; adapt.given may become the plan's candidates */
    struct wp_train_setup setup;  /* the settings and the schedule */
    int rank, nodes, shared_cores;
    int ready;                    /* how far init got (what destroy frees) */
    struct wp_rank_loss rank_loss;
    struct wp_train_backend backend;
    struct wp_slowdown slowdown;
    struct wp_stage_gpt2_ctx gpt2_ctx;
    struct wp_stage_emulated_ctx emu_ctx;
    struct wp_interp in;
    struct wp_clock clock;
    struct wp_measure measure;
    MPI_Comm lanes0;              /* a mesh's lanes 0, which exchange the messages' times */
    /* the adaptive tuner (--adapt) and the units it moves */
    struct wp_adapt adapt;
    struct wp_train_plan_maker maker;
    int *adapt_given;             /* the plan's kFkB candidates, when they are the tuner's */
    struct wp_layer_table ref_table; /* real compute: GPT-2's analytic table of one sequence */
    int *unit_count;              /* per stage: blocks (emulated: layers) it runs now */
    /* the run */
    const struct wp_schedule *run_s; /* the schedule running (the tuner's may replace setup.s) */
    long first_step;              /* steps done before (a resumed checkpoint's) */
    long step;                    /* the next step */
    long done_steps;              /* steps done at the end (fewer when a signal stopped the run) */
    int stopped_by;               /* the stop signal, or 0 */
    double hook_timeout_s;        /* rank 0's --changes-hook */
    double *msg_sent_s;           /* per action: the send time paired with each receive */
    long msg_sent_cap;
    char *measure_rows;           /* rank 0's --measure rows of a step */
    size_t measure_cap;
    char replicas[256];           /* per stage, "r0:r1:..." */
    double peak_bytes;            /* activation memory of the schedule running, the most of any rank */
    struct wp_layer_stage_arrays table_costs; /* emulated: the stages' costs in the table */
    char compute_cols[700];       /* emulated rows: "emulated,TABLE,DILATION,BYTE_SCALE" */
    /* rank 0: the host's processor counters at this iteration's start and
     * at the first measured one's (the steps after the first) */
    struct wp_host_cpu_sample host_at_step, host_at_measured, host_at_end; /* ... and at the last one's end */
    double host_busy;             /* the last iteration's busy share of the host (-1: unknown) */
    double *iters, *measure_s;    /* per step run: iteration and measuring seconds */
    char *row;                    /* rank 0's results row */
    size_t row_cap;
    char *ran_partition;          /* the units per stage an iteration ran */
    double run_start_s;           /* rank 0's first iteration's start: the adaptive trace's origin */
};

/* 0, or -1 when the run cannot start: err says why (the same on every rank
 * for the settings; empty when every rank that found a problem has said
 * it). A failure once the ranks compute ends the job (MPI_Abort) with a
 * message, as a lost rank does. wp_train_destroy frees t either way. */
int wp_train_init(struct wp_train *t, const struct wp_train_options *o, struct wp_err *err);

/* One iteration: 0 when more follow, 1 when the run has none left (all
 * steps done, or a stop signal on any rank after this one), -1 on an
 * error (err, on rank 0). */
int wp_train_step(struct wp_train *t, struct wp_err *err);

/* Moves layers between the ranks at an iteration boundary so that stage s
 * runs count[s] units (blocks; emulated: the table's layers), as the
 * tuner's moves do: each layer's parameters and AdamW moments go from its
 * old rank to its new one, and the losses go on as before. *pause_s gets
 * how long the job stood. Ends the job when a rank fails half way. */
int wp_train_move_layers(struct wp_train *t, const int *count, double *pause_s, struct wp_err *err);

/* After the last step (status: what the steps returned, 0 or -1): the
 * checkpoint at the end, the summary and bytes lines, kernel times, the
 * measured trace, and the line a stopped run ends with. 0 or -1 (err). */
int wp_train_finish(struct wp_train *t, int status, struct wp_err *err);

/* Steps to the end, then wp_train_finish. */
int wp_train_run(struct wp_train *t, struct wp_err *err);

/* The process's exit status for a run that ended with status (0 or -1):
 * 0, 1, or WP_EXIT_STOPPED when a stop signal ended it early. */
int wp_train_exit_status(const struct wp_train *t, int status);

void wp_train_destroy(struct wp_train *t);

#endif
