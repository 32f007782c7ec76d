/* A training run's settings, checked before any rank computes: the model
 * and training configuration, the schedule (generated, read from a file,
 * or a plan's), each stage's blocks or layers, the stages that recompute,
 * the corpus and the scenario of changes. Every rank finds the same
 * settings, or the same error. */
#ifndef WP_RUN_TRAIN_SETUP_H
#define WP_RUN_TRAIN_SETUP_H

#include "plan/layers.h"
#include "plan/plan.h"
#include "run/adapt/changes.h"
#include "run/model/data.h"
#include "run/model/gpt2_config.h"
#include "run/train/train_options.h"
#include "sched/schedule.h"

struct wp_train_setup {
    int world_rank, world_ranks; /* MPI_COMM_WORLD */
    int mesh[3];                 /* every stage's P0 x P1 x P2 (a plan's tensor group: 1 x p1 x p2) */
    int tensor;                  /* ranks per mesh: P0 P1 P2 */
    int lane, srank;             /* this rank's lane in its mesh, and its schedule rank */
    int ranks;                   /* the schedule's: world ranks / tensor */
    struct wp_plan plan;         /* --plan (nstages 0 without one) */
    struct wp_layer_table table; /* emulated: the layer table */
    struct wp_run_config cfg;    /* the model and training, the options applied */
    struct wp_sched_params params; /* what the schedule was made from */
    int replicas[WP_SCHED_MAX_STAGES]; /* params.replicas when given */
    struct wp_schedule s;
    int *first, *end;            /* per stage: blocks [first, end); emulated: the table's layers [first, end] */
    int *rank_map;               /* --plan: schedule rank r runs on world rank group rank_map[r]; else NULL */
    int *recompute;              /* per stage 1 when it recomputes its forward; NULL: none does */
    char units_text[4096];       /* --plan: its units per stage "n0,n1,...", as printed */
    struct wp_corpus corpus;     /* real compute: the tokens */
    struct wp_changes changes;   /* --changes */
};

/* Collective over MPI_COMM_WORLD (a plan's ranks are found from the job).
 * Rank 0 prints what it read and decided: a schedule file's shape, the
 * plan, a partition resumed from a checkpoint, the stages that recompute.
 * On an error every rank returns -1 with the same err; ts is then freed
 * by wp_train_setup_destroy as after a success. */
int wp_train_setup_init(struct wp_train_setup *ts, const struct wp_train_options *o, struct wp_err *err);
void wp_train_setup_destroy(struct wp_train_setup *ts);

#endif
