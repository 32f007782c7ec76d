/* What a training run is asked to do, as data: the options of `wavepipe
 * run` without the command line (the command fills them; a test can too),
 * their defaults, and the rules of which go together. */
#ifndef WP_RUN_TRAIN_OPTIONS_H
#define WP_RUN_TRAIN_OPTIONS_H

#include <stddef.h>

#include "run/adapt/adapt.h"
#include "sched/schedule.h"

struct wp_train_options {
    const char *command;          /* messages begin "wavepipe COMMAND:" (default "run") */
    /* the schedule: generated from sched (kind, k, waves, chunks, policy,
     * replicas, micro-batches, order search, stage costs), or read */
    struct wp_sched_params sched;
    int kind_given;               /* sched.kind was chosen (else 1f1b) */
    int micro_given;              /* sched.microbatches was chosen (else the config's) */
    const char *schedule_file;    /* run this schedule instead: its ranks, stages and micro-batches */
    int stages;                   /* > 0: ranks of a pipeline copied data-parallel over the ranks (sets
                                   * sched.data_parallel to ranks / stages) */
    const char *partition;        /* "n0,n1,...": units (blocks, or layers) per stage; NULL: even */
    int mesh[3];                  /* P0 x P1 x P2 of every stage (1 x 1 x 1: none) */
    const char *plan_path;        /* a plan of wavepipe plan: schedule, partition, replicas, group */
    /* the model and its training */
    const char *config;           /* the model and training settings (libconfig) */
    const char *data;             /* corpus; NULL: the config's, or the shipped one */
    int synthetic;                /* random tokens */
    int precision;                /* enum wp_precision, or -1: the config's (fp32 by default) */
    int global_batch, steps;      /* -1: the config's */
    long long seed;               /* -1: the config's */
    int recompute;                /* every stage recomputes its forward before its backward */
    /* compute and communication */
    const char *device;           /* "cpu" (or NULL) or "cuda" */
    int emulated;                 /* compute emulated from the layer table */
    const char *layers_path;      /* emulated: the layer table */
    int progress_us;              /* emulated: wake to move messages every N us */
    double dilation;              /* emulated: F >= 1, every pass F times its table time, times reported / F */
    double byte_scale;            /* emulated: S >= 1, messages of 1/S of the model's bytes, counted x S */
    const char *slowdown_path;    /* per-rank factors on the passes */
    const char *changes_path;     /* a scenario of changes at iteration boundaries */
    const char *changes_hook;     /* what makes changes other than slow */
    int grad_overlap;             /* replicated stages sum gradients in buckets during the backward */
    double grad_bucket_bytes;
    struct wp_adapt_options adapt; /* the online tuner (k, partition, both or neither) */
    int watchdog_s;               /* a wait that does not progress this long ends the job (0: never) */
    /* outputs */
    const char *results;          /* one CSV row per iteration */
    const char *measure;          /* what every iteration measured */
    const char *kernel_times;     /* where the compute went, per rank and kernel */
    const char *trace, *svg;      /* the last iteration's measured timeline */
    /* checkpoints */
    const char *save;             /* DIR: at the end, every save_every steps, and when stopped */
    int save_every, keep;
    const char *resume;           /* continue from DIR's latest, or one step directory */
};

/* What `wavepipe run` does without options: the config's settings, 1f1b
 * (wp_sched_params_default), gradients overlapped in 25 MiB buckets, a
 * 6 s watchdog, emulated waits of 200 us, the tuner's defaults (every 10
 * iterations, k up to 8, a 10 % gain, a 50-iteration horizon) off. */
void wp_train_options_default(struct wp_train_options *o);

/* 0 when the options go together, else -1 and why not in why (one
 * sentence, what a usage error says): e.g. emulated compute without a
 * layer table, or a plan together with the settings it fixes. */
int wp_train_options_check(const struct wp_train_options *o, char *why, size_t size);

/* The watchdog's limit in wall-clock seconds (0: no watchdog): --watchdog-s
 * F times over, as a run dilated F times waits F times as long for
 * everything, plus hook_timeout_s when rank 0 runs a --changes-hook that
 * the other ranks wait on. */
double wp_train_options_watch_s(const struct wp_train_options *o, double hook_timeout_s);

#endif
