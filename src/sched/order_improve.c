/* The order search (--order-search N): N steps of hill climbing over the
 * compute order of every rank, from the order the generator chose. A step
 * moves one pass of one rank up to a few places earlier or later, past no
 * pass of its own stage and kind (each stage keeps micro-batch order); it
 * is kept when the rank's held activations stay within its bound and the
 * pipeline, every pass played as soon as its inputs and its rank allow,
 * ends no later (so the search also drifts along equal makespans). The
 * steps are drawn from a fixed seed: the same N gives the same schedule.
 * The result is made into a schedule again (variant.c, the order given)
 * and kept only when the simulator times it faster within the bound, so
 * the search never makes a schedule slower on its own costs.
 * Used for the kinds whose order is searched (order_search.c); pipelines
 * with whole backwards and one rank per stage. */
#include "sched/order_improve.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/emit.h"
#include "sched/order_steady.h"
#include "sched/simulate.h"
#include "sched/variant.h"

/* A pass: (stage * M + micro-batch) * 2 + (0 forward, 1 backward). */
static int pass_code(int M, int stage, int mb, int backward)
{
    return (stage * M + mb) * 2 + backward;
}

struct climb {
    const struct wp_schedule *s;
    int P, S, M;
    int **order;       /* per rank: its passes in order */
    int *count;        /* per rank */
    double *held;      /* per rank: held activations after each of its passes */
    int *held_offset;  /* per rank: where its prefix starts in held */
    double *ends;      /* per rank, with held's layout: when each of its passes ends */
    double *finish;    /* per pass code: when it ends, -1 not yet played */
    int *log_code;     /* what replay() played again, saved: pass codes, */
    double *log_finish, *log_end; /* their ends before, */
    int *log_start;    /* per rank: from which of its passes */
    int *cursor;       /* per rank, while playing */
    double *free_at;   /* per rank, while playing */
    double tf, tb, tc;
};

static double pass_seconds(const struct climb *c, int code)
{
    int stage = code / 2 / c->M;
    return (code % 2 ? c->tb : c->tf) * wp_stage_weight(c->s, stage);
}

static int rank_of(const struct climb *c, int code)
{
    return wp_stage_rank(c->s, code / 2 / c->M, code / 2 % c->M, 0);
}

/* Plays every rank's order from position cursor[q] on (free from
 * free_at[q]), each pass as soon as its input (the previous stage's
 * forward, or the next stage's backward and its own forward) has arrived
 * and its rank is free, writing finish[] and ends; the makespan, or
 * INFINITY when the orders wait on each other for ever. */
static double play_from(struct climb *c, double makespan)
{
    long left = 0;
    for (int r = 0; r < c->P; r++)
        left += c->count[r] - c->cursor[r];
    while (left > 0) {
        long before = left;
        for (int r = 0; r < c->P; r++) {
            double *ends = c->ends + c->held_offset[r];
            while (c->cursor[r] < c->count[r]) {
                int code = c->order[r][c->cursor[r]], stage = code / 2 / c->M, backward = code % 2;
                double ready = 0;
                int from = -1; /* the pass whose output this one needs across ranks */
                if (!backward && stage > 0)
                    from = code - 2 * c->M;
                else if (backward) {
                    ready = c->finish[code - 1];
                    if (ready < 0)
                        break;
                    if (stage < c->S - 1)
                        from = code + 2 * c->M;
                }
                if (from >= 0) {
                    double f = c->finish[from];
                    if (f < 0)
                        break;
                    f += rank_of(c, from) == r ? 0 : c->tc;
                    ready = f > ready ? f : ready;
                }
                double start = ready > c->free_at[r] ? ready : c->free_at[r];
                c->free_at[r] = c->finish[code] = ends[c->cursor[r]] = start + pass_seconds(c, code);
                makespan = c->free_at[r] > makespan ? c->free_at[r] : makespan;
                c->cursor[r]++;
                left--;
            }
        }
        if (left == before)
            return INFINITY;
    }
    return makespan;
}

static double play(struct climb *c)
{
    for (int r = 0; r < c->P; r++) {
        c->cursor[r] = 0;
        c->free_at[r] = 0;
    }
    for (long i = 0; i < (long)c->S * c->M * 2; i++)
        c->finish[i] = -1;
    return play_from(c, 0);
}

/* Plays again after rank r's order changed from position lo on. Nothing
 * that started before the end of r's pass lo - 1 can depend on what moved
 * (it finishes later), so every rank replays from its first pass starting
 * at or after that time; what is replayed is first saved (log_*) so that
 * undo() can put it back. */
static double replay(struct climb *c, int r, int lo)
{
    const double *ends_r = c->ends + c->held_offset[r];
    double since = lo > 0 ? ends_r[lo - 1] : 0, makespan = 0;
    long n = 0; /* passes saved */
    for (int q = 0; q < c->P; q++) {
        const double *ends = c->ends + c->held_offset[q];
        int k = 0;
        if (q == r) {
            k = lo;
        } else { /* the first pass starting at or after since (starts rise along a rank) */
            int a = 0, b = c->count[q];
            while (a < b) {
                int mid = a + (b - a) / 2;
                if (ends[mid] - pass_seconds(c, c->order[q][mid]) < since)
                    a = mid + 1;
                else
                    b = mid;
            }
            k = a;
        }
        c->cursor[q] = c->log_start[q] = k;
        c->free_at[q] = k > 0 ? ends[k - 1] : 0;
        makespan = c->free_at[q] > makespan ? c->free_at[q] : makespan;
        for (int i = k; i < c->count[q]; i++) {
            int code = c->order[q][i];
            c->log_code[n] = code;
            c->log_finish[n] = c->finish[code];
            c->log_end[n++] = ends[i];
            c->finish[code] = -1;
        }
    }
    return play_from(c, makespan);
}

/* Puts back what replay() saved (the order itself is put back first). */
static void undo(struct climb *c)
{
    long n = 0;
    for (int q = 0; q < c->P; q++) {
        double *ends = c->ends + c->held_offset[q];
        for (int i = c->log_start[q]; i < c->count[q]; i++, n++) {
            ends[i] = c->log_end[n];
            c->finish[c->log_code[n]] = c->log_finish[n];
        }
    }
}

/* Moves rank r's pass at i to j when the held activations stay within the
 * bound; returns 0 when it would not fit (nothing moved). The prefix of
 * held activations changes only between i and j. */
static int try_move(struct climb *c, int r, int i, int j)
{
    int *o = c->order[r], x = o[i];
    double *held = c->held + c->held_offset[r];
    double w = wp_stage_weight(c->s, x / 2 / c->M), bound = c->s->activation_bound[r] + 1e-9;
    int forward = x % 2 == 0;
    /* every stage keeps its forwards, and its backwards, in micro-batch
     * order: the messages of a stage boundary then leave and arrive in one
     * order (its channel's, see walk.c) */
    int lo = i < j ? i : j, hi = i < j ? j : i;
    for (int k = lo; k <= hi; k++)
        if (k != i && o[k] % 2 == x % 2 && o[k] / 2 / c->M == x / 2 / c->M)
            return 0;
    /* a forward moved earlier or a backward moved later raises the prefix
     * over the places it passes */
    if (forward && j < i) {
        if ((j > 0 ? held[j - 1] : 0) + w > bound)
            return 0;
        for (int k = j; k < i; k++)
            if (held[k] + w > bound)
                return 0;
    } else if (!forward && j > i) {
        for (int k = i + 1; k <= j; k++)
            if (held[k] + w > bound)
                return 0;
    }
    if (j > i)
        memmove(&o[i], &o[i + 1], (size_t)(j - i) * sizeof *o);
    else
        memmove(&o[j + 1], &o[j], (size_t)(i - j) * sizeof *o);
    o[j] = x;
    double h = lo > 0 ? held[lo - 1] : 0;
    for (int k = lo; k <= hi; k++) {
        int y = o[k];
        h += (y % 2 ? -1 : 1) * wp_stage_weight(c->s, y / 2 / c->M);
        held[k] = h;
    }
    return 1;
}

static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static void climb_free(struct climb *c)
{
    for (int r = 0; c->order && r < c->P; r++)
        free(c->order[r]);
    free(c->order);
    free(c->count);
    free(c->held);
    free(c->held_offset);
    free(c->finish);
    free(c->ends);
    free(c->log_code);
    free(c->log_finish);
    free(c->log_end);
    free(c->log_start);
    free(c->cursor);
    free(c->free_at);
}

/* The compute passes of every list of s, in order. */
static int climb_init(struct climb *c, const struct wp_schedule *s, struct wp_err *err)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    c->P = s->nranks;
    c->S = s->nstages;
    c->M = s->nmicro;
    c->tf = s->params.tf;
    c->tb = s->params.tb + s->params.tw;
    c->tc = s->params.tc;
    long total = 0;
    for (int r = 0; r < c->P; r++)
        total += s->lists[r].count;
    size_t nranks = (size_t)(c->P > 0 ? c->P : 1);
    c->order = calloc(nranks, sizeof *c->order);
    c->count = calloc(nranks, sizeof *c->count);
    c->held = malloc((size_t)(total > 0 ? total : 1) * sizeof *c->held);
    c->held_offset = malloc((size_t)c->P * sizeof *c->held_offset);
    c->finish = malloc((size_t)c->S * (size_t)c->M * 2 * sizeof *c->finish);
    size_t room = (size_t)(total > 0 ? total : 1);
    c->ends = malloc(room * sizeof *c->ends);
    c->log_code = malloc(room * sizeof *c->log_code);
    c->log_finish = malloc(room * sizeof *c->log_finish);
    c->log_end = malloc(room * sizeof *c->log_end);
    c->log_start = malloc(nranks * sizeof *c->log_start);
    c->cursor = malloc((size_t)c->P * sizeof *c->cursor);
    c->free_at = malloc((size_t)c->P * sizeof *c->free_at);
    if (!c->order || !c->count || !c->held || !c->held_offset || !c->finish || !c->cursor || !c->free_at ||
        !c->ends || !c->log_code || !c->log_finish || !c->log_end || !c->log_start)
        return wp_errorf(err, "out of memory");
    long offset = 0;
    for (int r = 0; r < c->P; r++) {
        const struct wp_action_list *l = &s->lists[r];
        c->order[r] = malloc((size_t)(l->count > 0 ? l->count : 1) * sizeof **c->order);
        if (!c->order[r])
            return wp_errorf(err, "out of memory");
        c->held_offset[r] = (int)offset;
        double h = 0;
        for (int i = 0; i < l->count; i++) {
            const struct wp_action *a = &l->actions[i];
            if (a->op != WP_OP_F && a->op != WP_OP_B)
                continue;
            int backward = a->op == WP_OP_B;
            c->order[r][c->count[r]] = pass_code(c->M, (int)a->stage, (int)a->microbatch, backward);
            h += (backward ? -1 : 1) * wp_stage_weight(s, a->stage);
            c->held[offset + c->count[r]] = h;
            c->count[r]++;
        }
        offset += c->count[r];
    }
    return 0;
}

int wp_sched_improve_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best, double *makespan,
                           struct wp_err *err)
{
    if (wp_steady_check(best, err))
        return -1;
    struct climb c;
    if (climb_init(&c, best, err)) {
        climb_free(&c);
        return -1;
    }
    double current = play(&c);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    long total = 0;
    for (int r = 0; r < c.P; r++)
        total += c.count[r];
    int *saved = malloc((size_t)(total > 0 ? total : 1) * sizeof *saved);
    double *saved_held = malloc((size_t)(total > 0 ? total : 1) * sizeof *saved_held);
    if (!saved || !saved_held) {
        free(saved);
        free(saved_held);
        climb_free(&c);
        return wp_errorf(err, "out of memory");
    }
    for (long step = 0; step < p->order_search && isfinite(current); step++) {
        uint64_t x = next_random(&state);
        int r = (int)(x % (uint64_t)c.P);
        int n = c.count[r];
        if (n < 2)
            continue;
        int i = (int)((x >> 16) % (uint64_t)n), d = 1 + (int)((x >> 40) % 6);
        int j = (x >> 48) & 1 ? i + d : i - d;
        if (j < 0 || j >= n)
            continue;
        int lo = i < j ? i : j, hi = i < j ? j : i;
        double *held = c.held + c.held_offset[r];
        memcpy(saved, &c.order[r][lo], (size_t)(hi - lo + 1) * sizeof *saved);
        memcpy(saved_held, &held[lo], (size_t)(hi - lo + 1) * sizeof *saved_held);
        if (!try_move(&c, r, i, j))
            continue;
        double m = replay(&c, r, lo);
        if (m <= current + 1e-12 * (1 + current)) {
            current = m;
        } else {
            memcpy(&c.order[r][lo], saved, (size_t)(hi - lo + 1) * sizeof *saved);
            memcpy(&held[lo], saved_held, (size_t)(hi - lo + 1) * sizeof *saved_held);
            undo(&c);
        }
    }
    free(saved);
    free(saved_held);
    struct wp_given_order given = {(const int *const *)c.order, c.count};
    struct wp_order_variant how = {.given = &given};
    struct wp_schedule cand;
    int rc = wp_sched_generate_variant(p, nstages, &how, &cand, err);
    climb_free(&c);
    if (rc)
        return -1;
    double m, peak;
    int within;
    if (wp_simulate_own_costs(&cand, &m, &peak, &within, err)) {
        wp_schedule_destroy(&cand);
        return -1;
    }
    if (within && m < *makespan - 1e-12 * (1 + *makespan)) {
        wp_schedule_destroy(best);
        *best = cand;
        *makespan = m;
    } else {
        wp_schedule_destroy(&cand);
    }
    return 0;
}
