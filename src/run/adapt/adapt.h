/* `wavepipe run --adapt`: the run's self-tuning, between the interpreter's
 * iterations and beside it. Every iteration hands the agreed measurements
 * to the tuners: Ada-Grouper's k (tune_k.h) and AutoPipe's partition
 * (tune_partition.h). Every N iterations rank 0 decides and broadcasts the
 * decision, so that every rank runs the same plan from the same iteration
 * on: first whether to move a stage boundary, and when it does not, which
 * k. Each decision is a line on stdout and, with a log, a CSV row (switch
 * or stay, and why); a log can be replayed (--adapt-replay): the same
 * switches after the same iterations, without tuning, to reproduce an
 * adaptive run exactly. Rank 0 keeps every decision for the run's trace. */
#ifndef WP_RUN_ADAPT_H
#define WP_RUN_ADAPT_H

#include "run/adapt/measure.h"
#include "run/adapt/tune_k.h"
#include "run/adapt/tune_partition.h"

#define WP_ADAPT_LOG_HEADER                                                                                \
    "iteration,adapt,from_k,from_micro_batch,from_partition,to_k,to_micro_batch,to_partition,predicted_from_s," \
    "predicted_to_s,switched,reasons"

struct wp_adapt_options {
    int k, partition;        /* --adapt k | partition | both */
    int every;               /* --adapt-every N */
    double min_gain;         /* --adapt-min-gain (k), relative */
    int max_k;               /* candidates k = 1 .. max_k on the memory-limit curve, unless */
    const int *given;        /* given (k, micro-batch) pairs: --adapt-candidates, or the plan's */
    int ngiven;
    double horizon;          /* --adapt-horizon: iterations a move's gain counts over */
    const char *log_path;    /* --adapt-log FILE.csv */
    const char *replay_path; /* --adapt-replay FILE.csv */
};

/* What --adapt partition moves: units per stage at the start, and the
 * reference table with its units' place in it (tune_partition.h). */
struct wp_adapt_units {
    const struct wp_layer_table *table;
    int unit_offset, lead, tail;
    const int *count;
};

struct wp_adapt_switch {
    long iteration;
    int partition;           /* 1: to_count; 0: k and micro_batch */
    int k, micro_batch;
    int *to_count;
};

/* One decision of rank 0 (switch or stay), kept for the run's trace: the
 * facts of its line and its --adapt-log row. */
struct wp_adapt_decision {
    long iteration;
    double decided_wtime_s;  /* MPI_Wtime on rank 0 when decided */
    const char *adapt;       /* the tuner: "k" or "partition" */
    int switched;            /* 1: a switch of k or a move; 0: stay */
    int from_k, from_micro_batch, to_k, to_micro_batch;
    char *from_partition, *to_partition; /* units per stage, "n0:n1:..." */
    double predicted_from_s, predicted_to_s;
    char *reasons;
};

struct wp_adapt {
    struct wp_adapt_options o;
    int rank, nstages, global_batch;
    const struct wp_schedule *start;
    struct wp_tune_k tune;          /* o.k */
    struct wp_tune_partition parts; /* o.partition */
    struct wp_adapt_switch *replay; /* rank 0: the replayed switches */
    int nreplay, next_replay;
    struct wp_adapt_decision *decisions; /* rank 0: every decision, in order */
    int ndecisions, decisions_cap;
};

int wp_adapt_init(struct wp_adapt *a, const struct wp_adapt_options *o, const struct wp_schedule *start, int start_k,
                  int global_batch, const struct wp_adapt_units *units, int rank, wp_tune_make_fn make,
                  void *make_ctx, struct wp_err *err);
void wp_adapt_destroy(struct wp_adapt *a);

/* The schedule running now. */
const struct wp_schedule *wp_adapt_schedule(const struct wp_adapt *a);

/* After iteration `iteration`'s measurements are agreed (collective): the
 * schedule to run from the next iteration on (*next, or NULL to go on as
 * before), or new units per stage (*moved set to 1 and next_count filled:
 * the caller moves the layers, then calls wp_adapt_moved). last: no
 * iteration follows (nothing is decided). */
int wp_adapt_iteration(struct wp_adapt *a, const struct wp_measure *m, long iteration, int last,
                       const struct wp_schedule **next, int *moved, int *next_count, struct wp_err *err);

/* The move was made: it paused the run pause_s. */
void wp_adapt_moved(struct wp_adapt *a, const int *count, double pause_s);

/* A decision's facts as the members of a JSON object (its log row's
 * column names); returns the length, as snprintf ((NULL, 0) sizes it). */
size_t wp_adapt_decision_json(const struct wp_adapt_decision *d, char *buf, size_t size);

/* Units per stage as "n0:n1:..." */
void wp_adapt_partition_text(const int *count, int nstages, char *buf, size_t size);

#endif
