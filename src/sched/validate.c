/* Schedule validation: completeness, dependencies, matching, deadlock
 * freedom and the activation bound: each rank's list checked in its order
 * (large schedules: on a second thread, beside the walk), and one lock-step
 * walk that pairs messages and may play the simulator too (a faulty
 * schedule is checked again along the walk, which names the fault it meets
 * first). */
#include "sched/validate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sched/walk.h"
#include "util/huge_pages.h"

/* Slices remembered per rank between its runs (see check_upcoming). */
#define RECENT_SLICES 4

/* Per slice (stage, micro-batch, replica) bookkeeping. */
struct slice_state {
    int8_t f, b, w;          /* times run */
    int16_t acts_in, grads_in;
};

/* What the checks read of a stage, together: the walk meets each stage
 * about once per micro-batch, among a thousand others. */
struct stage_check {
    long slice_offset;   /* index of (stage, 0, 0) in slices */
    const int *ranks;    /* the placement's, ranks[copy * nreplicas + replica] */
    int nreplicas;
    int nholders;        /* copies * replicas */
    int holder_offset;   /* index of its holder slot 0 in backward_left, reduced */
    int replica_offset;  /* index of its replica 0 in acts_needed, grads_needed */
    double weight;       /* wp_stage_weight */
    char hands_down;     /* some rank also holds the next stage */
    char hands_up;       /* some rank also holds the previous stage */
};

struct check {
    const struct wp_schedule *s;
    struct stage_check *stage;
    int *acts_needed;         /* per (stage, replica): slices of the previous stage it takes activations from */
    int *grads_needed;        /* per (stage, replica): slices of the next stage it takes gradients from */
    struct slice_state *slices;
    int *backward_left;       /* per (stage, holder slot): passes still to run */
    int8_t *reduced;          /* per (stage, holder slot): ALLREDUCE done */
    double *held, *peak;      /* per rank */
    int *steps;               /* per rank: STEP actions run */
    struct slice_state *(*last_slices)[RECENT_SLICES]; /* per rank: slices its last run worked on */
};

static int slot_of(const struct stage_check *sc, int rank)
{
    for (int i = 0; i < sc->nholders; i++)
        if (sc->ranks[i] == rank)
            return i;
    return -1;
}

static inline struct slice_state *slice(struct check *c, int stage, int mb, int j)
{
    return &c->slices[c->stage[stage].slice_offset + (long)mb * c->stage[stage].nreplicas + j];
}

/* Counts a locally produced input for the overlapping slices of stage
 * `other` that live on the same rank. */
static void local_handoff(struct check *c, int rank, int mb, int from_stage, int j, int other, int acts)
{
    const struct wp_schedule *s = c->s;
    int r_from = s->place[from_stage].nreplicas, r_other = s->place[other].nreplicas;
    for (int i = 0; i < r_other; i++)
        if (wp_slices_overlap(j, r_from, i, r_other) && wp_stage_rank(s, other, mb, i) == rank) {
            if (acts)
                slice(c, other, mb, i)->acts_in++;
            else
                slice(c, other, mb, i)->grads_in++;
        }
}

/* Whether some rank holds both stages. */
static int share_a_rank(const struct wp_schedule *s, int a, int b)
{
    const struct wp_stage_place *pa = &s->place[a], *pb = &s->place[b];
    for (int i = 0; i < pa->ncopies * pa->nreplicas; i++)
        for (int k = 0; k < pb->ncopies * pb->nreplicas; k++)
            if (pa->ranks[i] == pb->ranks[k])
                return 1;
    return 0;
}

static int fail(struct wp_err *err, int rank, int step, const struct wp_action *a, const char *why)
{
    char what[160];
    wp_action_describe(a, what, sizeof what);
    return wp_errorf(err, "rank %d step %d: %s: %s", rank, step, what, why);
}

static int check_step(struct check *c, int rank, int step, const struct wp_action *a, struct wp_err *err)
{
    const struct stage_check *sc = &c->stage[a->stage];
    int slot = slot_of(sc, rank);
    if (slot < 0)
        return fail(err, rank, step, a, "this rank does not hold the stage");
    if (c->backward_left[sc->holder_offset + slot] > 0)
        return fail(err, rank, step, a, "runs before every backward of the stage on this rank");
    if (sc->nholders > 1 && !c->reduced[sc->holder_offset + slot])
        return fail(err, rank, step, a, "runs before the stage's gradients are allreduced");
    c->steps[rank]++;
    return 0;
}

/* The slice an action of rank works on, checked once per run of actions
 * on it (a receive, its compute and its send share one). */
struct slice_ref {
    int stage, mb;               /* -1, -1: none yet */
    int j;                       /* the rank's replica */
    const struct stage_check *sc;
    struct slice_state *sl;
};

static inline int resolve_slice(struct check *c, int rank, int step, const struct wp_action *a, struct slice_ref *r,
                                struct wp_err *err)
{
    const struct wp_schedule *s = c->s;
    int st = a->stage, m = a->microbatch;
    if (st == r->stage && m == r->mb)
        return 0;
    if ((unsigned)st >= (unsigned)s->nstages || (unsigned)m >= (unsigned)s->nmicro)
        return fail(err, rank, step, a, "stage or micro-batch out of range");
    const struct stage_check *sc = &c->stage[st];
    int j = wp_stage_replica_of(s, st, m, rank);
    if (j < 0)
        return fail(err, rank, step, a, "this rank does not hold that stage for that micro-batch");
    *r = (struct slice_ref){st, m, j, sc, &c->slices[sc->slice_offset + (long)m * sc->nreplicas + j]};
    return 0;
}

/* Inlined into both callers: per action, a call costs as much as the checks. */
static inline __attribute__((always_inline)) int check_action(struct check *c, int rank, int step,
                                                              const struct wp_action *a, struct slice_ref *ref,
                                                              double *held, double *peak, struct wp_err *err)
{
    const struct wp_schedule *s = c->s;
    int op = a->op;
    if (op == WP_OP_STEP) {
        if ((unsigned)a->stage >= (unsigned)s->nstages)
            return fail(err, rank, step, a, "stage or micro-batch out of range");
        return check_step(c, rank, step, a, err);
    }
    if (resolve_slice(c, rank, step, a, ref, err))
        return -1;
    int st = ref->stage, m = ref->mb, j = ref->j, S = s->nstages;
    const struct stage_check *sc = ref->sc;
    struct slice_state *sl = ref->sl;
    /* an if per op rather than a switch: the jump table's one indirect
     * branch mispredicts far more often than these do */
    if (op == WP_OP_F) {
        if (sl->f++)
            return fail(err, rank, step, a, "runs twice");
        if (sl->acts_in != c->acts_needed[sc->replica_offset + j])
            return fail(err, rank, step, a, "runs before its input activation arrived");
        *held += sc->weight;
        if (*held > *peak)
            *peak = *held;
        if (sc->hands_down)
            local_handoff(c, rank, m, st, j, st + 1, 1);
        return 0;
    }
    if (op == WP_OP_B) {
        if (sl->b++)
            return fail(err, rank, step, a, "runs twice");
        if (!sl->f)
            return fail(err, rank, step, a, "runs before its forward");
        if (sl->grads_in != c->grads_needed[sc->replica_offset + j])
            return fail(err, rank, step, a, "runs before its output gradient arrived");
        if (wp_sched_frees_op(s) == WP_OP_B)
            *held -= sc->weight;
        if (!s->split_backward)
            c->backward_left[sc->holder_offset + slot_of(sc, rank)]--;
        if (sc->hands_up)
            local_handoff(c, rank, m, st, j, st - 1, 0);
        return 0;
    }
    if (op == WP_OP_W) {
        if (!s->split_backward)
            return fail(err, rank, step, a, "W in a schedule whose backward is not split");
        if (sl->w++)
            return fail(err, rank, step, a, "runs twice");
        if (!sl->b)
            return fail(err, rank, step, a, "runs before its B");
        *held -= sc->weight; /* W frees what a split backward held */
        c->backward_left[sc->holder_offset + slot_of(sc, rank)]--;
        return 0;
    }
    if (op == WP_OP_RECV_ACT) {
        sl->acts_in++;
        return 0;
    }
    if (op == WP_OP_RECV_GRAD) {
        sl->grads_in++;
        return 0;
    }
    if (op == WP_OP_SEND_ACT) {
        if (!sl->f)
            return fail(err, rank, step, a, "sends an activation not yet computed");
        if (st == S - 1 || wp_stage_replica_of(s, st + 1, m, a->peer) < 0)
            return fail(err, rank, step, a, "the peer does not run the next stage of this micro-batch");
        return 0;
    }
    if (op == WP_OP_SEND_GRAD) {
        if (!sl->b)
            return fail(err, rank, step, a, "sends a gradient not yet computed");
        if (st == 0 || wp_stage_replica_of(s, st - 1, m, a->peer) < 0)
            return fail(err, rank, step, a, "the peer does not run the previous stage of this micro-batch");
        return 0;
    }
    return fail(err, rank, step, a, "unknown operation");
}

static int check_run(void *ctx, int rank, int from, int to, double *msg, struct wp_err *err)
{
    struct check *c = ctx;
    const struct wp_action *actions = c->s->lists[rank].actions;
    double held = c->held[rank], peak = c->peak[rank]; /* in registers for the run */
    struct slice_ref ref = {-1, -1, 0, NULL, NULL};
    struct slice_state **recent = c->last_slices[rank];
    int rc = 0, nrecent = 0;
    for (int i = from; i < to; i++) {
        struct slice_state *before = ref.sl;
        if ((rc = check_action(c, rank, i, &actions[i], &ref, &held, &peak, err)))
            break;
        if (ref.sl != before) /* a new slice: its successor is what the next run likely needs */
            recent[nrecent++ % RECENT_SLICES] = ref.sl;
    }
    c->held[rank] = held;
    c->peak[rank] = peak;
    return rc;
}

/* Each rank works through its stages' slices in order, a thousand ranks in
 * turn, so a run would wait for its slices; a few visits before it, the
 * slices next to those its last run worked on are fetched (a pipeline's
 * next run mostly takes the next micro-batch of each). */
static void check_upcoming(void *ctx, int rank, int step)
{
    struct check *c = ctx;
    for (int i = 0; i < RECENT_SLICES; i++)
        if (c->last_slices[rank][i])
            __builtin_prefetch(c->last_slices[rank][i] + 1);
}

/* One holder's part of a stage's ALLREDUCE: every backward of the stage on
 * the rank ran before it. */
static int check_reduce(struct check *c, const struct stage_check *sc, int rank, int step, struct wp_err *err)
{
    int slot = slot_of(sc, rank);
    if (c->backward_left[sc->holder_offset + slot] > 0)
        return fail(err, rank, step, &c->s->lists[rank].actions[step],
                    "allreduces before every backward of the stage on this rank");
    c->reduced[sc->holder_offset + slot] = 1;
    return 0;
}

static int check_collective(void *ctx, int stage, int n, const int *ranks, const int *steps, struct wp_err *err)
{
    struct check *c = ctx;
    for (int i = 0; i < n; i++)
        if (check_reduce(c, &c->stage[stage], ranks[i], steps[i], err))
            return -1;
    return 0;
}

/* Every check of one rank's whole list, in its order, its ALLREDUCEs
 * included. What the checks count is the rank's own (its slices, holder
 * slots, activations), so a rank's list checked at once meets the state the
 * lock-step walk would: only which of several faults comes first differs.
 * -1 at the first fault (or an ALLREDUCE the walk would not pass), which
 * err then only roughly names. */
static int check_rank(struct check *c, int rank, struct wp_err *err)
{
    const struct wp_action_list *l = &c->s->lists[rank];
    double held = 0, peak = 0;
    struct slice_ref ref = {-1, -1, 0, NULL, NULL};
    for (int i = 0; i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (a->op != WP_OP_ALLREDUCE) {
            if (check_action(c, rank, i, a, &ref, &held, &peak, err))
                return -1;
            continue;
        }
        if ((unsigned)a->stage >= (unsigned)c->s->nstages || slot_of(&c->stage[a->stage], rank) < 0 ||
            check_reduce(c, &c->stage[a->stage], rank, i, err))
            return -1;
    }
    c->held[rank] = held;
    c->peak[rank] = peak;
    return 0;
}

/* check_rank of every rank, up to the first faulty one; err then names a
 * fault, roughly (the walk with checks names the one to report). */
struct rank_checks {
    struct check *c;
    int faulty;
    struct wp_err err;
};

static void *check_ranks(void *arg)
{
    struct rank_checks *rk = arg;
    for (int r = 0; r < rk->c->s->nranks && !rk->faulty; r++)
        rk->faulty = check_rank(rk->c, r, &rk->err) != 0;
    return NULL;
}

/* Schedules of at least this many actions have their lists checked on a
 * second thread while the walk pairs their messages: the two read the lists
 * and write nothing the other reads, so on two cores validating takes the
 * longer of the two, not their sum. The walk then meets lists not yet
 * checked; it and the simulator refuse a stage out of range (the one thing
 * they index by), and a faulty schedule's walk is thrown away and walked
 * again with checks, as when the lists are checked first. */
#define CHECK_BESIDE_WALK_MIN_ACTIONS (1L << 20)

static long actions_in(const struct wp_schedule *s)
{
    long total = 0;
    for (int r = 0; r < s->nranks; r++)
        total += s->lists[r].count;
    return total;
}

void wp_validation_destroy(struct wp_validation *v)
{
    free(v->peak_activations);
    memset(v, 0, sizeof *v);
}

/* The per-stage tables check_action reads, from the placement. */
static int check_init(struct check *c, const struct wp_schedule *s)
{
    int S = s->nstages, P = s->nranks, ncopies = 1;
    memset(c, 0, sizeof *c);
    c->s = s;
    c->stage = calloc((size_t)S + 1, sizeof *c->stage);
    if (!c->stage)
        return -1;
    long nslices = 0;
    int nreplicas = 0, nholders = 0;
    for (int st = 0; st < S; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        c->stage[st] = (struct stage_check){nslices, pl->ranks, pl->nreplicas, pl->ncopies * pl->nreplicas, nholders,
                                            nreplicas, wp_stage_weight(s, st),
                                            (char)(st + 1 < S && share_a_rank(s, st, st + 1)),
                                            (char)(st > 0 && share_a_rank(s, st, st - 1))};
        nslices += (long)s->nmicro * pl->nreplicas;
        nreplicas += pl->nreplicas;
        nholders += pl->ncopies * pl->nreplicas;
        ncopies = pl->ncopies > ncopies ? pl->ncopies : ncopies;
    }
    c->acts_needed = malloc((size_t)(nreplicas ? nreplicas : 1) * sizeof *c->acts_needed);
    c->grads_needed = malloc((size_t)(nreplicas ? nreplicas : 1) * sizeof *c->grads_needed);
    c->slices = wp_huge_calloc((size_t)(nslices ? nslices : 1), sizeof *c->slices);
    c->backward_left = calloc((size_t)(nholders ? nholders : 1), sizeof *c->backward_left);
    c->reduced = calloc((size_t)(nholders ? nholders : 1), sizeof *c->reduced);
    c->held = calloc((size_t)P, sizeof *c->held);
    c->peak = calloc((size_t)P, sizeof *c->peak);
    c->steps = calloc((size_t)P, sizeof *c->steps);
    c->last_slices = calloc((size_t)P, sizeof *c->last_slices);
    int *per_copy = calloc((size_t)ncopies, sizeof *per_copy); /* micro-batches each copy of a stage runs */
    if (!c->acts_needed || !c->grads_needed || !c->slices || !c->backward_left || !c->reduced || !c->held || !c->peak ||
        !c->steps || !c->last_slices || !per_copy) {
        free(per_copy);
        return -1;
    }
    for (int m = 0; m < s->nmicro; m++)
        if (s->mb_copy[m] >= 0 && s->mb_copy[m] < ncopies)
            per_copy[s->mb_copy[m]]++;
    for (int st = 0; st < S; st++) {
        const struct stage_check *sc = &c->stage[st];
        for (int j = 0; j < sc->nreplicas; j++) {
            c->acts_needed[sc->replica_offset + j] = wp_slices_overlapping(s, st, j, st - 1);
            c->grads_needed[sc->replica_offset + j] = wp_slices_overlapping(s, st, j, st + 1);
        }
        for (int slot = 0; slot < sc->nholders; slot++)
            c->backward_left[sc->holder_offset + slot] = per_copy[slot / sc->nreplicas];
    }
    free(per_copy);
    return 0;
}

static void check_destroy(struct check *c)
{
    free(c->stage);
    free(c->acts_needed);
    free(c->grads_needed);
    wp_huge_free(c->slices);
    free(c->backward_left);
    free(c->reduced);
    free(c->held);
    free(c->peak);
    free(c->steps);
    free(c->last_slices);
}

/* Stages each rank holds. */
static int *stages_per_rank(const struct wp_schedule *s)
{
    int *n = calloc((size_t)s->nranks, sizeof *n);
    for (int st = 0; n && st < s->nstages; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        for (int i = 0; i < pl->ncopies * pl->nreplicas; i++) {
            int seen = 0;
            for (int k = 0; k < i && !seen; k++)
                seen = pl->ranks[k] == pl->ranks[i];
            n[pl->ranks[i]] += !seen;
        }
    }
    return n;
}

int wp_schedule_validate(const struct wp_schedule *s, struct wp_validation *v, struct wp_err *err)
{
    return wp_schedule_validate_walking(s, NULL, NULL, v, err);
}

int wp_schedule_validate_walking(const struct wp_schedule *s, const struct wp_walk_visitor *also, int *also_walked,
                                 struct wp_validation *v, struct wp_err *err)
{
    memset(v, 0, sizeof *v);
    if (also_walked)
        *also_walked = 0;
    v->nranks = s->nranks;
    int S = s->nstages, P = s->nranks;
    struct check c;
    int *held_stages = NULL;
    int ready = check_init(&c, s) == 0;
    int rc = ready ? 0 : wp_errorf(err, "out of memory");
    /* Each rank's list checked at once, in its order (memory read in
     * sequence), and a walk that only pairs messages and finds deadlocks:
     * for a valid schedule the same outcome as checking along the walk. */
    struct rank_checks rk = {&c, 0, {""}};
    pthread_t checker;
    int beside = ready && actions_in(s) >= CHECK_BESIDE_WALK_MIN_ACTIONS &&
                 pthread_create(&checker, NULL, check_ranks, &rk) == 0;
    if (ready && !beside)
        check_ranks(&rk);
    if (ready && (beside || !rk.faulty)) {
        /* the checks need nothing from the walk but its pairing and its
         * end: another visitor may ride along */
        struct wp_walk_visitor pairing = {NULL, NULL, NULL, NULL};
        rc = wp_walk(s, also ? also : &pairing, &v->messages, err);
        if (also_walked)
            *also_walked = also != NULL && rc == 0;
    }
    if (beside)
        pthread_join(checker, NULL);
    int faulty = rk.faulty;
    if (faulty) {
        /* what a walk beside the checks found is not what to report */
        if (also_walked)
            *also_walked = 0;
        if (err)
            *err = rk.err;
        /* Which fault the walk meets first (or a deadlock before any) is
         * the one to report: check again along the walk. */
        check_destroy(&c);
        rc = check_init(&c, s) == 0 ? 0 : wp_errorf(err, "out of memory");
        if (rc == 0) {
            struct wp_walk_visitor visitor = {&c, check_run, check_collective, check_upcoming};
            rc = wp_walk(s, &visitor, &v->messages, err);
        }
    }
    /* Everything ran exactly once? */
    for (int st = 0; rc == 0 && st < S; st++)
        for (int m = 0; rc == 0 && m < s->nmicro; m++)
            for (int j = 0; rc == 0 && j < s->place[st].nreplicas; j++) {
                struct slice_state *sl = slice(&c, st, m, j);
                const char *missing = !sl->f ? "F" : !sl->b ? "B" : s->split_backward && !sl->w ? "W" : NULL;
                if (missing)
                    rc = wp_errorf(err, "rank %d never runs %s of stage %d micro-batch %d", wp_stage_rank(s, st, m, j),
                                   missing, st, m);
            }
    if (rc == 0 && !(held_stages = stages_per_rank(s)))
        rc = wp_errorf(err, "out of memory");
    for (int r = 0; rc == 0 && r < P; r++)
        if (c.steps[r] != held_stages[r])
            rc = wp_errorf(err, "rank %d has %d STEP actions for %d stages", r, c.steps[r], held_stages[r]);
    if (rc == 0) {
        v->peak_activations = c.peak;
        c.peak = NULL;
        for (int r = 0; r < P; r++) {
            if (v->peak_activations[r] > v->peak_max)
                v->peak_max = v->peak_activations[r];
            if (v->peak_activations[r] > s->activation_bound[r] + 1e-9) {
                rc = wp_errorf(err, "rank %d holds %.4g activations at its peak, above the bound %.4g of %s", r,
                               v->peak_activations[r], s->activation_bound[r], wp_sched_kind_name(s->params.kind));
                break;
            }
        }
        for (int r = 0; r < P; r++)
            v->actions += s->lists[r].count;
    }
    free(held_stages);
    check_destroy(&c);
    if (rc)
        wp_validation_destroy(v);
    return rc;
}
