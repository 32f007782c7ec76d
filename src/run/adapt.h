/* `wavepipe run --adapt`: the run's self-tuning, between the interpreter's
 * iterations and beside it. Every iteration hands the agreed measurements
 * to the tuner (tune_k.h); every N iterations rank 0 predicts the
 * candidates and the arbiter's pick is broadcast, so that every rank runs
 * the same plan from the same iteration on. Each decision is a line on
 * stdout and, with a log, a CSV row (switch or stay, and why); a log can
 * be replayed (--adapt-replay): the same switches at the same iterations,
 * without tuning, to reproduce an adaptive run exactly. */
#ifndef WP_RUN_ADAPT_H
#define WP_RUN_ADAPT_H

#include "run/measure.h"
#include "run/tune_k.h"

#define WP_ADAPT_LOG_HEADER \
    "iteration,adapt,from_k,from_micro_batch,to_k,to_micro_batch,predicted_from_s,predicted_to_s,switched,reasons"

struct wp_adapt_options {
    int k;                   /* --adapt k */
    int every;               /* --adapt-every N */
    double min_gain;         /* --adapt-min-gain, relative */
    int max_k;               /* candidates k = 1 .. max_k on the memory-limit curve, unless */
    const int *given;        /* given (k, micro-batch) pairs: --adapt-candidates, or the plan's */
    int ngiven;
    const char *log_path;    /* --adapt-log FILE.csv */
    const char *replay_path; /* --adapt-replay FILE.csv */
};

struct wp_adapt_switch {
    long iteration;
    int k, micro_batch;
};

struct wp_adapt {
    struct wp_adapt_options o;
    int rank;
    struct wp_tune_k tune;
    struct wp_adapt_switch *replay; /* rank 0: the replayed switches */
    int nreplay, next_replay;
    int switches;
};

/* The candidates from the start schedule (every rank makes them). */
int wp_adapt_init(struct wp_adapt *a, const struct wp_adapt_options *o, const struct wp_schedule *start, int start_k,
                  int global_batch, int rank, wp_tune_make_fn make, void *make_ctx, struct wp_err *err);
void wp_adapt_destroy(struct wp_adapt *a);

/* After iteration `iteration`'s measurements are agreed (collective):
 * *next is the schedule to run from the next iteration on, or NULL to go
 * on as before. last: no iteration follows (nothing is decided). */
int wp_adapt_iteration(struct wp_adapt *a, const struct wp_measure *m, long iteration, int last,
                       const struct wp_schedule **next, struct wp_err *err);

/* The running plan's k (1: 1F1B). */
int wp_adapt_current_k(const struct wp_adapt *a);

#endif
