/* Orders made by list scheduling in simulated time, for the kinds whose
 * order is best found by playing them out: Chimera, Hanayo and zb-h1.
 * Whenever a rank is idle it starts the ready task of highest priority:
 * a backward first (the oldest micro-batch), then a forward if the memory
 * rule admits it (the oldest micro-batch, the deepest stage), then a
 * weight-gradient pass (zb-h1 only: W passes fill what would be bubbles).
 * Memory rules: for Hanayo and Chimera a micro-batch enters the pipeline
 * only when every rank can reserve the activations it will hold there (P
 * micro-batches' worth per rank, or the D given), and each backward gives its
 * chunk's share back; this cannot deadlock and lets a new micro-batch in as
 * soon as older ones have passed a rank's later chunks. zb-h1 keeps at most
 * P - r activations on rank r as 1F1B does (an activation is held from F
 * until B; W keeps only layer inputs). */
#include "sched/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    int next[3]; /* next index for F, B, W */
};

struct greedy {
    struct wp_schedule *s;
    int S, M, P, split;
    double *finish[3];      /* per pass kind, [stage * M + mb], -1 = not scheduled */
    struct held **held;     /* per rank */
    int *nheld;
    double *busy_until;
    int *active_on_rank;    /* F done minus B done (zb-h1 memory rule) */
    double *reserved;       /* per rank: activations reserved by admitted micro-batches */
    double *footprint;      /* per copy and rank: what one micro-batch holds there */
    /* backwards scheduled whose reservation is returned at their finish */
    int *pending_stage, *pending_mb, npending;
};

static double cost(const struct greedy *g, int op, int stage)
{
    const struct wp_sched_params *p = &g->s->params;
    double t = op == WP_OP_F ? p->tf : op == WP_OP_B ? (g->split ? p->tb : p->tb + p->tw) : p->tw;
    return t * wp_stage_weight(g->s, stage);
}

static double comm_time(const struct greedy *g, int from_rank, int to_rank)
{
    return from_rank == to_rank ? 0 : g->s->params.tc;
}

static int admission_limit(const struct greedy *g, int rank)
{
    const struct wp_sched_params *p = &g->s->params;
    if (p->kind == WP_SCHED_ZBH1)
        return p->max_inflight > 0 && p->max_inflight < g->P - rank ? p->max_inflight : g->P - rank;
    /* Hanayo and Chimera: P micro-batches' worth per rank (the papers'
     * bound), or the D the user says fits */
    return p->max_inflight > 0 ? p->max_inflight : g->P;
}

/* Ready time of the next pass op of h on rank, or INFINITY when its inputs
 * are not scheduled yet or the memory rule forbids it at time t. */
static double ready_time(const struct greedy *g, int rank, const struct held *h, int op, double t)
{
    if (h->next[op] >= h->count)
        return INFINITY;
    int st = h->stage, m = h->mbs[h->next[op]];
    const struct wp_schedule *s = g->s;
    double ready;
    if (op == WP_OP_F) {
        if (st == 0) {
            if (g->s->params.kind != WP_SCHED_ZBH1) {
                const double *foot = &g->footprint[s->mb_copy[m] * g->P];
                for (int q = 0; q < g->P; q++)
                    if (g->reserved[q] + foot[q] > admission_limit(g, q) + 1e-9)
                        return INFINITY;
            }
            ready = 0;
        } else {
            double f = g->finish[WP_OP_F][(st - 1) * g->M + m];
            if (f < 0)
                return INFINITY;
            ready = f + comm_time(g, wp_stage_rank(s, st - 1, m, 0), rank);
        }
        if (g->s->params.kind == WP_SCHED_ZBH1 && g->active_on_rank[rank] >= admission_limit(g, rank))
            return INFINITY;
        return ready;
    }
    if (op == WP_OP_B) {
        double f = g->finish[WP_OP_F][st * g->M + m];
        if (f < 0)
            return INFINITY;
        ready = f;
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
    double b = g->finish[WP_OP_B][st * g->M + m];
    return b < 0 ? INFINITY : b;
}

/* Picks the best task ready by time t on rank; returns 0 if none. */
static int pick(const struct greedy *g, int rank, double t, int *op_out, struct held **h_out)
{
    int best_op = -1, best_m = 0, best_rank = 0;
    struct held *best = NULL;
    for (int op = WP_OP_F; op <= WP_OP_W; op++) {
        if (op == WP_OP_W && !g->split)
            continue;
        for (int i = 0; i < g->nheld[rank]; i++) {
            struct held *h = &g->held[rank][i];
            if (ready_time(g, rank, h, op, t) > t)
                continue;
            int m = h->mbs[h->next[op]];
            /* W last; else the oldest micro-batch, its backward before its forward */
            int type_rank = op == WP_OP_W ? 2 : op == WP_OP_B ? 0 : 1;
            int better = !best || (type_rank == 2) < (best_rank == 2) ||
                         ((type_rank == 2) == (best_rank == 2) &&
                          (m < best_m || (m == best_m && (type_rank < best_rank ||
                           (type_rank == best_rank && (op == WP_OP_F ? h->stage > best->stage : h->stage < best->stage))))));
            if (better) {
                best = h;
                best_op = op;
                best_m = m;
                best_rank = type_rank;
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
    for (int k = 0; k < 3; k++)
        free(g->finish[k]);
    for (int r = 0; g->held && r < g->P; r++) {
        for (int i = 0; i < g->nheld[r]; i++)
            free(g->held[r][i].mbs);
        free(g->held[r]);
    }
    free(g->held);
    free(g->nheld);
    free(g->busy_until);
    free(g->active_on_rank);
    free(g->reserved);
    free(g->footprint);
    free(g->pending_stage);
    free(g->pending_mb);
}

static int greedy_init(struct greedy *g, struct wp_schedule *s, struct wp_err *err)
{
    memset(g, 0, sizeof *g);
    g->s = s;
    g->S = s->nstages;
    g->M = s->nmicro;
    g->P = s->nranks;
    g->split = s->split_backward;
    size_t n = (size_t)g->S * (size_t)g->M;
    for (int k = 0; k < 3; k++) {
        g->finish[k] = malloc(n * sizeof(double));
        if (!g->finish[k])
            return wp_errorf(err, "out of memory");
        for (size_t i = 0; i < n; i++)
            g->finish[k][i] = -1;
    }
    g->held = calloc((size_t)g->P, sizeof *g->held);
    g->nheld = calloc((size_t)g->P, sizeof *g->nheld);
    g->busy_until = calloc((size_t)g->P, sizeof *g->busy_until);
    g->active_on_rank = calloc((size_t)g->P, sizeof *g->active_on_rank);
    g->reserved = calloc((size_t)g->P, sizeof *g->reserved);
    g->footprint = calloc((size_t)g->P * 2, sizeof *g->footprint);
    g->pending_stage = malloc(n * sizeof *g->pending_stage);
    g->pending_mb = malloc(n * sizeof *g->pending_mb);
    if (!g->held || !g->nheld || !g->busy_until || !g->active_on_rank || !g->reserved || !g->footprint ||
        !g->pending_stage || !g->pending_mb)
        return wp_errorf(err, "out of memory");
    for (int st = 0; st < g->S; st++)
        for (int c = 0; c < s->place[st].ncopies; c++)
            g->footprint[c * g->P + s->place[st].ranks[c]] += wp_stage_weight(s, st);
    for (int st = 0; st < g->S; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        for (int c = 0; c < pl->ncopies; c++) {
            int r = pl->ranks[c];
            struct held *grown = realloc(g->held[r], (size_t)(g->nheld[r] + 1) * sizeof *grown);
            if (!grown)
                return wp_errorf(err, "out of memory");
            g->held[r] = grown;
            struct held *h = &g->held[r][g->nheld[r]++];
            memset(h, 0, sizeof *h);
            h->stage = st;
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

int wp_sched_order_greedy(struct wp_schedule *s, struct wp_err *err)
{
    struct greedy g;
    struct event_heap events = {NULL, 0, 0};
    int rc = greedy_init(&g, s, err);
    long remaining = (long)g.S * g.M * (g.split ? 3 : 2);
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
        /* backwards finished by now give their reservation back */
        for (int i = 0; i < g.npending;) {
            int st = g.pending_stage[i], m = g.pending_mb[i];
            if (g.finish[WP_OP_B][st * g.M + m] <= t) {
                g.reserved[wp_stage_rank(s, st, m, 0)] -= wp_stage_weight(s, st);
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
            double end = t + cost(&g, op, st);
            g.finish[op][st * g.M + m] = end;
            g.busy_until[r] = end;
            remaining--;
            if (op == WP_OP_F && st == 0)
                for (int q = 0; q < g.P; q++)
                    g.reserved[q] += g.footprint[s->mb_copy[m] * g.P + q];
            if (op == WP_OP_F)
                g.active_on_rank[r]++;
            if (op == WP_OP_B) {
                g.active_on_rank[r]--;
                g.pending_stage[g.npending] = st;
                g.pending_mb[g.npending++] = m;
            }
            rc = wp_schedule_push(s, r, op, st, m, -1, err);
            if (rc == 0 && (heap_push(&events, end) || heap_push(&events, end + s->params.tc)))
                rc = wp_errorf(err, "out of memory");
        }
    }
    free(events.t);
    greedy_free(&g);
    return rc;
}
