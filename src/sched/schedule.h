/* A pipeline schedule: the placement of stages on ranks, and one action
 * list per rank. Generators fill it (see generate.h); the validator, the
 * simulator and the runtime only read it. */
#ifndef WP_SCHED_SCHEDULE_H
#define WP_SCHED_SCHEDULE_H

#include "sched/action.h"

enum wp_sched_kind {
    WP_SCHED_GPIPE,
    WP_SCHED_1F1B,
    WP_SCHED_KFKB,
    WP_SCHED_INTERLEAVED,
    WP_SCHED_CHIMERA,
    WP_SCHED_HANAYO,
    WP_SCHED_ZBH1,
    WP_SCHED_ZBV,
    WP_SCHED_DUALPIPEV,
    WP_SCHED_BFS, /* breadth-first over looped chunks (Lamy-Poirier 2023; PyTorch's ScheduleLoopedBFS) */
    WP_SCHED_FILE, /* read from a schedule file (schedule_file.h), never generated */
    WP_SCHED_KIND_COUNT
};

/* The kinds' names in enum order, for help texts and messages. */
#define WP_SCHED_KIND_LIST "gpipe, 1f1b, kfkb, interleaved, chimera, hanayo, zb-h1, zb-v, dualpipev, bfs"

const char *wp_sched_kind_name(enum wp_sched_kind kind);
int wp_sched_kind_from_name(const char *name); /* -1 when unknown */
/* Whether a generator makes this kind (every kind but "file"). */
static inline int wp_sched_kind_generated(enum wp_sched_kind kind)
{
    return (unsigned)kind < WP_SCHED_KIND_COUNT && kind != WP_SCHED_FILE;
}

/* Whether the kind puts V chunks of the model on each rank, stage cP + r on
 * rank r (--chunks V): interleaved, bfs and zb-h1 (one chunk unless asked). */
static inline int wp_sched_kind_has_chunks(enum wp_sched_kind kind)
{
    return kind == WP_SCHED_INTERLEAVED || kind == WP_SCHED_BFS || kind == WP_SCHED_ZBH1;
}

/* Where one stage lives. A stage has ncopies independent copies of its
 * weights (2 in Chimera, whose two pipelines run in opposite directions,
 * 1 elsewhere); each copy runs on nreplicas ranks that split every
 * micro-batch into nreplicas slices (DAPPLE's stage replication). */
struct wp_stage_place {
    int ncopies;
    int nreplicas;
    int *ranks; /* ranks[copy * nreplicas + replica] */
};

/* The most stages the command line and a plan describe (room for per-stage
 * lists such as --replicas and --stage-costs). */
#define WP_SCHED_MAX_STAGES 4096

/* What the generator was asked for. */
struct wp_sched_params {
    enum wp_sched_kind kind;
    int ranks;          /* P, all of them (D pipeline copies of P / D ranks each) */
    int data_parallel;  /* D: copies of the pipeline, data-parallel (replicate.h); 0 or 1: one */
    int microbatches;   /* M */
    int k;              /* kfkb group size */
    int waves;          /* hanayo W */
    int chunks;         /* interleaved and bfs: V chunks per rank */
    char policy;        /* 'A' or 'B' (1f1b warm-up) */
    int max_inflight;   /* D: micro-batches that fit in memory; 0 = no limit */
    int nreplicas;      /* entries in replicas (0: one rank per stage); of one pipeline copy */
    const int *replicas;
    int nstage_costs;   /* entries in stage_cost_scale (0: equal stages) */
    const double *stage_cost_scale;
    double tf, tb, tw, tc; /* costs the greedy generators schedule by */
    long order_search;  /* steps of hill climbing over a searched kind's order (0: none) */
};

/* Fills params with defaults (policy A, k 1, waves 1, chunks 1, tf 1, tb 2). */
void wp_sched_params_default(struct wp_sched_params *p);

struct wp_schedule {
    struct wp_sched_params params;
    int nranks;
    int nstages;
    int nmicro;
    int split_backward;        /* B and W are separate actions */
    struct wp_stage_place *place; /* per stage */
    int *mb_copy;              /* per micro-batch: which copy of every stage runs it */
    int *replicas_store;       /* owned copy of params.replicas */
    double *stage_cost_store;  /* owned copy of params.stage_cost_scale */
    struct wp_action_list *lists; /* per rank */
    struct wp_action *action_store; /* one block for every list reserved at once, or NULL */
    double *activation_bound;  /* per rank: the documented peak of held activations */
    double *stage_weight;      /* per stage, see wp_stage_weight (set after placement) */
};

int wp_schedule_init(struct wp_schedule *s, const struct wp_sched_params *p, int nstages,
                     struct wp_err *err);
void wp_schedule_destroy(struct wp_schedule *s);

/* Renames ranks: what rank r did, rank to[r] does (to is a permutation of
 * 0..nranks-1): lists, peers, placement and activation bounds move along.
 * How a plan's devices land on the job's ranks (wavepipe run --plan). */
int wp_schedule_rename_ranks(struct wp_schedule *s, const int *to, struct wp_err *err);
/* The ranks holding any copy or replica of a stage, ascending, into ranks
 * (room for the stage's ncopies x nreplicas); returns their count. */
int wp_stage_holders_sorted(const struct wp_schedule *s, int stage, int *ranks);

/* Gives every list, all of them empty, room for capacity[r] actions, in
 * one block on huge pages (util/huge_pages.h): generators know how long
 * the lists get, and one block keeps the walks over them on few pages. */
int wp_schedule_reserve(struct wp_schedule *s, const long *capacity, struct wp_err *err);

/* Appends an action to a rank's list (beyond its room, the list moves to
 * a block of its own that doubles as it grows). */
int wp_schedule_push_grow(struct wp_schedule *s, int rank, int op, int stage, int mb, int peer,
                          struct wp_err *err);
static inline int wp_schedule_push(struct wp_schedule *s, int rank, int op, int stage, int mb, int peer,
                                   struct wp_err *err)
{
    struct wp_action_list *l = &s->lists[rank];
    if (l->count == l->capacity)
        return wp_schedule_push_grow(s, rank, op, stage, mb, peer, err);
    l->actions[l->count++] = (struct wp_action){(uint64_t)op, stage, mb, peer};
    return 0;
}

/* The rank running (stage, micro-batch) in replica r (0 <= r < nreplicas). */
static inline int wp_stage_rank(const struct wp_schedule *s, int stage, int mb, int replica)
{
    const struct wp_stage_place *pl = &s->place[stage];
    return pl->ranks[s->mb_copy[mb] * pl->nreplicas + replica];
}

/* Which replica of (stage, micro-batch) rank runs, or -1 when none. */
static inline int wp_stage_replica_of(const struct wp_schedule *s, int stage, int mb, int rank)
{
    const struct wp_stage_place *pl = &s->place[stage];
    const int *ranks = pl->ranks + s->mb_copy[mb] * pl->nreplicas;
    for (int j = 0; j < pl->nreplicas; j++)
        if (ranks[j] == rank)
            return j;
    return -1;
}

/* Number of distinct stages each rank holds, at most (chunks per rank). */
int wp_schedule_stages_per_rank(const struct wp_schedule *s, int rank);

/* The pass that frees a (stage, micro-batch)'s activations: its W when the
 * backward is split (the weight gradient still reads the stashed layer
 * inputs), else its B. Simulator, validator, generators and the runtime's
 * slot accounting all hold activations from F until this op. */
static inline int wp_sched_frees_op(const struct wp_schedule *s)
{
    return s->split_backward ? WP_OP_W : WP_OP_B;
}

/* Relative cost of a stage (1 for equal stages). */
static inline double wp_stage_cost_scale(const struct wp_schedule *s, int stage)
{
    return s->params.nstage_costs ? s->stage_cost_store[stage] : 1.0;
}

/* Work and activation weight of one (stage, micro-batch slice) relative to
 * one micro-batch through 1/P of the model: (P / S) * cost scale / replicas
 * (computed once by wp_sched_place). */
static inline double wp_stage_weight(const struct wp_schedule *s, int stage)
{
    return s->stage_weight[stage];
}

/* Slices of consecutive stages that overlap (DAPPLE split/concat). */
static inline int wp_slices_overlap(int i, int ri, int j, int rj)
{
    return (long)i * rj < (long)(j + 1) * ri && (long)j * ri < (long)(i + 1) * rj;
}

/* How many slices of stage other overlap slice j of stage (0 past either
 * end of the pipeline): what slice j receives from other, or sends to it. */
static inline int wp_slices_overlapping(const struct wp_schedule *s, int stage, int j, int other)
{
    if (other < 0 || other >= s->nstages)
        return 0;
    int n = 0;
    for (int i = 0; i < s->place[other].nreplicas; i++)
        n += wp_slices_overlap(i, s->place[other].nreplicas, j, s->place[stage].nreplicas);
    return n;
}

/* Output as text (one line per action, grouped by rank) or as CSV with the
 * header rank,step,op,stage,microbatch,peer. */
void wp_schedule_write_text(FILE *out, const struct wp_schedule *s);
void wp_schedule_write_csv(FILE *out, const struct wp_schedule *s);

#endif
