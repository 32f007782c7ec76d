/* Orders made by list scheduling in simulated time, for the kinds whose
 * order is best found by playing them out: Chimera and Hanayo. Whenever a
 * rank is idle it starts the ready task of highest priority: a backward
 * first (the oldest micro-batch), then a forward if the memory rule admits
 * it (the oldest micro-batch, the deepest stage). Activations are held from
 * a stage's F until its B, and no rank holds more than P micro-batches'
 * worth (the papers' bound), or the D given. Two memory rules (and a
 * plain one for lap groups, below):
 *  - hold with headroom: a forward runs when its activation fits, and one
 *    that brings a micro-batch to a rank for the first time must also leave
 *    room for one of the rank's later stages. Later stages of a wave (the
 *    way back up, the next waves) then always find room, so the pipeline
 *    keeps 1F1B's depth on every rank (a V holds up to 2P micro-batches in
 *    its first stage when P fit in memory).
 *  - reserve at admission (banker's rule): a micro-batch enters stage 0 only
 *    when every rank can reserve all it will hold there; each backward gives
 *    its stage's share back. It cannot deadlock, but it holds room for the
 *    way back from the start and so admits fewer micro-batches.
 * With alternation, a rank that ran a forward runs a ready backward next if
 * it has one, and after a backward a ready forward (1F1B's steady state;
 * with the headroom rule on one wave this is the V-shaped 1F1B of the
 * zero-bubble paper's ZB-V, and with more waves it keeps the pipeline from
 * draining wave by wave). Or, instead of a memory rule, a cap per stage copy on the micro-batches
 * between its F and B (1F1B's warm-up per stage: Chimera's two pipelines).
 * Lap groups (Hanayo's waves), with the plain memory rule (a forward runs
 * when its activation fits): each wave is a lap of a V, and micro-batches
 * run in groups of G (P): a group's forwards go lap after lap, its
 * backwards the laps in reverse, before the next group's (Megatron-LM's
 * interleaved 1F1B, whose chunks are these laps). A rank starts the ready
 * backward, else forward, of the lowest place in that order (the deeper
 * stage on a tie), alternating the two; optionally the last group's
 * forwards on the last lap's way back go first, so that its micro-batches
 * turn and the drain's backwards start sooner. That keeps a rank's held
 * activations at the bound in the steady state, and for M a multiple of
 * P from 2P on (P = 4 ... 16, W = 2 ... 4 tested) reaches the least
 * makespan within P micro-batches, M (tf+tb) + (P-1) tb / W (README,
 * "Comparing schedules").
 * The order search (order_search.c) plays these at the given tc and at tc = 0,
 * and keeps the order its simulator times fastest; a rule that stalls (the
 * headroom rule can with several waves) is simply not a candidate. */
#include "sched/order_greedy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/emit.h"

/* A min-heap of event times. */
struct event_heap {
    double *t;
    int n, cap;
};

static int heap_push(struct event_heap *h, double t)
{
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 1024;
        double *grown = realloc(h->t, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        h->t = grown;
        h->cap = cap;
    }
    int i = h->n++;
    h->t[i] = t;
    while (i > 0 && h->t[(i - 1) / 2] > h->t[i]) {
        double tmp = h->t[i];
        h->t[i] = h->t[(i - 1) / 2];
        h->t[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
    return 0;
}

static double heap_pop(struct event_heap *h)
{
    double top = h->t[0];
    h->t[0] = h->t[--h->n];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && h->t[l] < h->t[m])
            m = l;
        if (r < h->n && h->t[r] < h->t[m])
            m = r;
        if (m == i)
            break;
        double tmp = h->t[i];
        h->t[i] = h->t[m];
        h->t[m] = tmp;
        i = m;
    }
    return top;
}

/* One stage copy held by a rank: its micro-batches in order, and how far
 * each kind of pass has got through them. */
struct held {
    int stage;
    int *mbs;
    int count;
    int next[2]; /* next index for F, B */
    int copy;
    int first_visit; /* no earlier stage of this copy lives on the rank */
};

struct greedy {
    struct wp_schedule *s;
    enum wp_greedy_memory rule;
    double tc;              /* what a message costs while ordering */
    const int *cap;         /* per (stage, copy): micro-batches between F and B at most, or NULL */
    int alternate;          /* after a forward prefer a backward, and the other way round */
    int *last_op;           /* per rank: the pass it ran last, -1 before the first */
    int S, M, P;
    double *finish[2];      /* per pass kind, [stage * M + mb], -1 = not scheduled */
    struct held **held;     /* per rank */
    int *nheld;
    double *busy_until;
    double *in_use;         /* per rank: activations held (headroom) or reserved (admission) */
    double *headroom;       /* per rank: the largest later stage a first visit leaves room for */
    double *footprint;      /* per copy and rank: what one micro-batch holds there */
    double limit;           /* per rank */
    /* backwards scheduled whose activation is given back at their finish */
    int *pending_stage, *pending_mb, npending;
    /* lap groups: per stage its lap, per micro-batch its group's first
     * micro-batch and size; NULL without */
    int *lap, *group_first, *group_size, laps;
    int turn_first; /* the last group's forwards on the last lap's way back first */
};

static double cost(const struct greedy *g, int op, int stage)
{
    const struct wp_sched_params *p = &g->s->params;
    return (op == WP_OP_F ? p->tf : p->tb + p->tw) * wp_stage_weight(g->s, stage);
}

static double comm_time(const struct greedy *g, int from_rank, int to_rank)
{
    return from_rank == to_rank ? 0 : g->tc;
}

/* Whether the memory rule lets the forward of (h's stage, m) start on rank. */
static int admits(const struct greedy *g, int rank, const struct held *h, int m)
{
    const struct wp_schedule *s = g->s;
    if (g->cap)
        return h->next[WP_OP_F] - h->next[WP_OP_B] < g->cap[2 * h->stage + h->copy];
    if (g->rule == WP_GREEDY_RESERVE_AT_ADMISSION) {
        if (h->stage != 0)
            return 1; /* reserved when the micro-batch entered */
        const double *foot = &g->footprint[s->mb_copy[m] * g->P];
        for (int q = 0; q < g->P; q++)
            if (g->in_use[q] + foot[q] > g->limit + 1e-9)
                return 0;
        return 1;
    }
    double need = wp_stage_weight(s, h->stage) +
                  (g->rule == WP_GREEDY_HOLD_WITH_HEADROOM && h->first_visit ? g->headroom[rank] : 0);
    return g->in_use[rank] + need <= g->limit + 1e-9;
}

/* Ready time of the next pass op of h on rank, or INFINITY when its inputs
 * are not scheduled yet or the memory rule forbids it now. */
static double ready_time(const struct greedy *g, int rank, const struct held *h, int op)
{
    if (h->next[op] >= h->count)
        return INFINITY;
    int st = h->stage, m = h->mbs[h->next[op]];
    const struct wp_schedule *s = g->s;
    if (op == WP_OP_F) {
        double ready = 0;
        if (st > 0) {
            double f = g->finish[WP_OP_F][(st - 1) * g->M + m];
            if (f < 0)
                return INFINITY;
            ready = f + comm_time(g, wp_stage_rank(s, st - 1, m, 0), rank);
        }
        return admits(g, rank, h, m) ? ready : INFINITY;
    }
    double ready = g->finish[WP_OP_F][st * g->M + m];
    if (ready < 0)
        return INFINITY;
    if (st < g->S - 1) {
        double b = g->finish[WP_OP_B][(st + 1) * g->M + m];
        if (b < 0)
            return INFINITY;
        b += comm_time(g, wp_stage_rank(s, st + 1, m, 0), rank);
        if (b > ready)
            ready = b;
    }
    return ready;
}

/* Lap groups: the place of pass op of (stage, m) in its rank's order, lower
 * first. Forwards take the group's laps in order, backwards in reverse;
 * within a lap the group's micro-batches in turn; the deeper stage first. */
static long lap_place(const struct greedy *g, int op, int stage, int m)
{
    int lap = g->lap[stage], first = g->group_first[m];
    int turn = op == WP_OP_F ? lap : g->laps - 1 - lap;
    long place = (long)first * g->laps + (long)turn * g->group_size[m] + (m - first);
    return place * g->S + (g->S - 1 - stage);
}

/* Lap groups: the ready pass op of lowest place on rank, or NULL. */
static struct held *lowest_place(const struct greedy *g, int rank, double t, int op)
{
    struct held *best = NULL;
    long best_place = 0;
    for (int i = 0; i < g->nheld[rank]; i++) {
        struct held *h = &g->held[rank][i];
        if (ready_time(g, rank, h, op) > t + 1e-9)
            continue;
        long place = lap_place(g, op, h->stage, h->mbs[h->next[op]]);
        if (!best || place < best_place) {
            best = h;
            best_place = place;
        }
    }
    return best;
}

/* With alternation: the pass other than the rank's last, if one is ready (a
 * backward of the oldest micro-batch, a forward of the deepest stage; with
 * lap groups the lowest place). */
static int pick_alternating(const struct greedy *g, int rank, double t, int *op_out, struct held **h_out)
{
    if (g->last_op[rank] < 0)
        return 0;
    int want = g->last_op[rank] == WP_OP_F ? WP_OP_B : WP_OP_F, best_m = 0;
    struct held *best = NULL;
    if (g->lap)
        best = lowest_place(g, rank, t, want);
    for (int i = 0; !g->lap && i < g->nheld[rank]; i++) {
        struct held *h = &g->held[rank][i];
        if (ready_time(g, rank, h, want) > t)
            continue;
        int m = h->mbs[h->next[want]];
        if (!best || (want == WP_OP_F ? h->stage > best->stage : m < best_m || (m == best_m && h->stage < best->stage))) {
            best = h;
            best_m = m;
        }
    }
    if (!best)
        return 0;
    *op_out = want;
    *h_out = best;
    return 1;
}

/* Picks the best task ready by time t on rank; returns 0 if none. */
static int pick(const struct greedy *g, int rank, double t, int *op_out, struct held **h_out)
{
    if (g->lap && g->turn_first) {
        struct held *h = lowest_place(g, rank, t, WP_OP_F);
        int m = h ? h->mbs[h->next[WP_OP_F]] : 0;
        if (h && g->group_first[m] + g->group_size[m] == g->M && h->stage >= g->S - g->S / (2 * g->laps)) {
            *op_out = WP_OP_F;
            *h_out = h;
            return 1;
        }
    }
    if (g->alternate && pick_alternating(g, rank, t, op_out, h_out))
        return 1;
    if (g->lap) { /* a backward before a forward, each of lowest place */
        for (int op = WP_OP_B; op >= WP_OP_F; op--)
            if ((*h_out = lowest_place(g, rank, t, op)) != NULL) {
                *op_out = op;
                return 1;
            }
        return 0;
    }
    int best_op = -1, best_m = 0;
    struct held *best = NULL;
    for (int op = WP_OP_F; op <= WP_OP_B; op++) {
        for (int i = 0; i < g->nheld[rank]; i++) {
            struct held *h = &g->held[rank][i];
            if (ready_time(g, rank, h, op) > t)
                continue;
            int m = h->mbs[h->next[op]];
            /* the oldest micro-batch, its backward before its forward; among
             * forwards of one micro-batch the deepest stage, among backwards
             * the shallowest */
            int better = !best || m < best_m ||
                         (m == best_m && ((op == WP_OP_B && best_op == WP_OP_F) ||
                                          (op == best_op && (op == WP_OP_F ? h->stage > best->stage
                                                                           : h->stage < best->stage))));
            if (better) {
                best = h;
                best_op = op;
                best_m = m;
            }
        }
    }
    if (!best)
        return 0;
    *op_out = best_op;
    *h_out = best;
    return 1;
}

static void greedy_free(struct greedy *g)
{
    for (int k = 0; k < 2; k++)
        free(g->finish[k]);
    for (int r = 0; g->held && r < g->P; r++) {
        for (int i = 0; i < g->nheld[r]; i++)
            free(g->held[r][i].mbs);
        free(g->held[r]);
    }
    free(g->held);
    free(g->nheld);
    free(g->busy_until);
    free(g->in_use);
    free(g->headroom);
    free(g->footprint);
    free(g->pending_stage);
    free(g->pending_mb);
    free(g->last_op);
    free(g->lap);
    free(g->group_first);
    free(g->group_size);
}

/* Lap groups: each stage's lap (Hanayo's wave) and each micro-batch's group. */
static int lap_groups_init(struct greedy *g, const struct wp_greedy_opts *o, struct wp_err *err)
{
    int G = o->lap_group, M = g->M, laps = g->s->params.waves > 0 ? g->s->params.waves : 1;
    if (g->S % laps)
        return wp_errorf(err, "lap groups: %d stages do not make %d laps", g->S, laps);
    g->laps = laps;
    g->turn_first = o->lap_turn_first;
    g->lap = malloc((size_t)g->S * sizeof *g->lap);
    g->group_first = malloc((size_t)M * sizeof *g->group_first);
    g->group_size = malloc((size_t)M * sizeof *g->group_size);
    if (!g->lap || !g->group_first || !g->group_size)
        return wp_errorf(err, "out of memory");
    for (int st = 0; st < g->S; st++)
        g->lap[st] = st / (g->S / laps);
    int full = M / G, rest = M % G, first = 0;
    for (int k = 0; first < M; k++) {
        int size = G;
        if (rest && o->lap_remainder == WP_LAP_REMAINDER_FIRST && k == 0)
            size = rest;
        else if (rest && o->lap_remainder == WP_LAP_REMAINDER_JOINS_LAST && k == full - 1)
            size = G + rest;
        if (size > M - first)
            size = M - first;
        for (int m = first; m < first + size; m++) {
            g->group_first[m] = first;
            g->group_size[m] = size;
        }
        first += size;
    }
    return 0;
}

static int greedy_init(struct greedy *g, struct wp_schedule *s, const struct wp_greedy_opts *o, struct wp_err *err)
{
    memset(g, 0, sizeof *g);
    g->s = s;
    g->rule = o->rule;
    g->tc = o->tc;
    g->cap = o->cap;
    g->S = s->nstages;
    g->M = s->nmicro;
    g->P = s->nranks;
    g->limit = s->params.max_inflight > 0 ? s->params.max_inflight : g->P;
    size_t n = (size_t)g->S * (size_t)g->M;
    for (int k = 0; k < 2; k++) {
        g->finish[k] = malloc(n * sizeof(double));
        if (!g->finish[k])
            return wp_errorf(err, "out of memory");
        for (size_t i = 0; i < n; i++)
            g->finish[k][i] = -1;
    }
    g->held = calloc((size_t)g->P, sizeof *g->held);
    g->nheld = calloc((size_t)g->P, sizeof *g->nheld);
    g->busy_until = calloc((size_t)g->P, sizeof *g->busy_until);
    g->in_use = calloc((size_t)g->P, sizeof *g->in_use);
    g->headroom = calloc((size_t)g->P, sizeof *g->headroom);
    g->footprint = calloc((size_t)g->P * 2, sizeof *g->footprint);
    g->pending_stage = malloc(n * sizeof *g->pending_stage);
    g->pending_mb = malloc(n * sizeof *g->pending_mb);
    g->last_op = malloc((size_t)g->P * sizeof *g->last_op);
    g->alternate = o->alternate;
    if (!g->held || !g->nheld || !g->busy_until || !g->in_use || !g->headroom || !g->footprint ||
        !g->pending_stage || !g->pending_mb || !g->last_op)
        return wp_errorf(err, "out of memory");
    for (int r = 0; r < g->P; r++)
        g->last_op[r] = -1;
    if (o->lap_group > 0 && lap_groups_init(g, o, err))
        return -1;
    for (int st = 0; st < g->S; st++)
        for (int c = 0; c < s->place[st].ncopies; c++)
            g->footprint[c * g->P + s->place[st].ranks[c]] += wp_stage_weight(s, st);
    for (int st = 0; st < g->S; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        for (int c = 0; c < pl->ncopies; c++) {
            int r = pl->ranks[c];
            int first = 1;
            for (int i = 0; i < g->nheld[r]; i++)
                first &= !(g->held[r][i].stage < st && s->place[g->held[r][i].stage].ranks[c] == r);
            if (!first && wp_stage_weight(s, st) > g->headroom[r])
                g->headroom[r] = wp_stage_weight(s, st);
            struct held *grown = realloc(g->held[r], (size_t)(g->nheld[r] + 1) * sizeof *grown);
            if (!grown)
                return wp_errorf(err, "out of memory");
            g->held[r] = grown;
            struct held *h = &g->held[r][g->nheld[r]++];
            memset(h, 0, sizeof *h);
            h->stage = st;
            h->copy = c;
            h->first_visit = first;
            h->mbs = malloc((size_t)g->M * sizeof *h->mbs);
            if (!h->mbs)
                return wp_errorf(err, "out of memory");
            for (int m = 0; m < g->M; m++)
                if (s->mb_copy[m] == c)
                    h->mbs[h->count++] = m;
        }
    }
    return 0;
}

int wp_sched_order_greedy(struct wp_schedule *s, const struct wp_greedy_opts *o, struct wp_err *err)
{
    struct greedy g;
    struct event_heap events = {NULL, 0, 0};
    enum wp_greedy_memory rule = o->rule;
    double tc = o->tc;
    int rc = greedy_init(&g, s, o, err);
    long remaining = (long)g.S * g.M * 2;
    double t = 0;
    if (rc == 0 && heap_push(&events, 0))
        rc = wp_errorf(err, "out of memory");
    while (rc == 0 && remaining > 0) {
        if (events.n == 0) {
            rc = wp_errorf(err, "%s: list scheduling stalled with %ld passes left (memory limit too small?)",
                           wp_sched_kind_name(s->params.kind), remaining);
            break;
        }
        t = heap_pop(&events);
        while (events.n && events.t[0] <= t)
            heap_pop(&events);
        /* backwards finished by now give their activations back */
        for (int i = 0; i < g.npending;) {
            int st = g.pending_stage[i], m = g.pending_mb[i];
            if (g.finish[WP_OP_B][st * g.M + m] <= t) {
                g.in_use[wp_stage_rank(s, st, m, 0)] -= wp_stage_weight(s, st);
                g.npending--;
                g.pending_stage[i] = g.pending_stage[g.npending];
                g.pending_mb[i] = g.pending_mb[g.npending];
            } else {
                i++;
            }
        }
        for (int r = 0; r < g.P && rc == 0; r++) {
            int op;
            struct held *h;
            if (g.busy_until[r] > t || !pick(&g, r, t, &op, &h))
                continue;
            int st = h->stage, m = h->mbs[h->next[op]++];
            g.last_op[r] = op;
            double end = t + cost(&g, op, st);
            g.finish[op][st * g.M + m] = end;
            g.busy_until[r] = end;
            remaining--;
            if (op == WP_OP_F && rule != WP_GREEDY_RESERVE_AT_ADMISSION)
                g.in_use[r] += wp_stage_weight(s, st);
            if (op == WP_OP_F && rule == WP_GREEDY_RESERVE_AT_ADMISSION && st == 0)
                for (int q = 0; q < g.P; q++)
                    g.in_use[q] += g.footprint[s->mb_copy[m] * g.P + q];
            if (op == WP_OP_B) {
                g.pending_stage[g.npending] = st;
                g.pending_mb[g.npending++] = m;
            }
            rc = wp_sched_emit(s, r, op, st, m, err);
            if (rc == 0 && (heap_push(&events, end) || heap_push(&events, end + tc)))
                rc = wp_errorf(err, "out of memory");
        }
    }
    free(events.t);
    greedy_free(&g);
    return rc;
}
