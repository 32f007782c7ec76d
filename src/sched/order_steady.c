/* Orders from a steady state: every rank runs the F and the B of each of
 * its stages once per period, in a cyclic order and from a phase of its
 * own; a pass takes the first time of its place in the cycle at or after
 * its input is ready (its predecessor's end, plus tc across ranks). That
 * gives each (stage, pass) the start of micro-batch 0, and micro-batch m
 * starts m periods later. The schedule is the steady state compacted:
 * every rank runs its passes sorted by those times, each as soon as it
 * can. The times respect every dependency, so the order never deadlocks.
 * The uniform cycle (F and B of each stage in turn, rank r from phase r
 * times a stagger) reaches the interleaved bound M (tf+tb) + (P-1)(tf+tb)/2W
 * for Hanayo's waves when memory allows (about W P micro-batches a rank);
 * order_search.c tries it when --max-inflight gives more than P, and
 * bench/bench_waves searches other cycles. Pipelines of one copy, without
 * replicas or a split backward. */
#include "sched/order_steady.h"

#include <math.h>
#include <stdlib.h>

#include "sched/emit.h"

static double pass_cost(const struct wp_schedule *s, int stage, int backward)
{
    const struct wp_sched_params *p = &s->params;
    return (backward ? p->tb + p->tw : p->tf) * wp_stage_weight(s, stage);
}

static int local_stage(const struct wp_schedule *s, int rank, int stage)
{
    int c = 0;
    for (int st = 0; st < stage; st++)
        c += s->place[st].ranks[0] == rank;
    return c;
}

int wp_steady_check(const struct wp_schedule *s, struct wp_err *err)
{
    for (int st = 0; st < s->nstages; st++)
        if (s->place[st].ncopies != 1 || s->place[st].nreplicas != 1)
            return wp_errorf(err, "steady-state orders need one copy of every stage on one rank (stage %d has %d x %d)",
                             st, s->place[st].ncopies, s->place[st].nreplicas);
    if (s->split_backward)
        return wp_errorf(err, "steady-state orders run whole backwards (B and W together)");
    return 0;
}

/* The first time at or after `earliest` that is `offset` modulo period. */
static double next_time(double earliest, double offset, double period)
{
    double k = ceil((earliest - offset) / period - 1e-9);
    return offset + k * period;
}

int wp_steady_times(const struct wp_schedule *s, const struct wp_steady_cycle *cy, double *start_f,
                    double *start_b, struct wp_err *err)
{
    int P = s->nranks, S = s->nstages;
    if (wp_steady_check(s, err))
        return -1;
    /* each pass's offset in its rank's cycle, per (stage, pass) */
    double *offset = malloc((size_t)(2 * S) * sizeof *offset);
    int *stage_of = malloc((size_t)S * sizeof *stage_of); /* per rank in turn: its c-th stage */
    if (!offset || !stage_of) {
        free(offset);
        free(stage_of);
        return wp_errorf(err, "out of memory");
    }
    for (int r = 0; r < P; r++) {
        int n = 0;
        for (int st = 0; st < S; st++)
            if (s->place[st].ranks[0] == r)
                stage_of[n++] = st;
        double t = cy->phase_s[r];
        for (int k = 0; k < 2 * n; k++) {
            int id = cy->order[r * cy->stride + k], c = id / 2, backward = id % 2;
            if (id < 0 || id >= 2 * n) {
                free(offset);
                free(stage_of);
                return wp_errorf(err, "steady cycle of rank %d: pass %d of %d stages", r, id, n);
            }
            offset[2 * stage_of[c] + backward] = t;
            t += pass_cost(s, stage_of[c], backward);
        }
    }
    double end = 0;
    for (int st = 0; st < S; st++) {
        int hop = st > 0 && s->place[st].ranks[0] != s->place[st - 1].ranks[0];
        start_f[st] = st == 0 ? offset[0] : next_time(end + (hop ? s->params.tc : 0), offset[2 * st], cy->period_s);
        end = start_f[st] + pass_cost(s, st, 0);
    }
    for (int st = S - 1; st >= 0; st--) {
        int hop = st < S - 1 && s->place[st].ranks[0] != s->place[st + 1].ranks[0];
        start_b[st] = next_time(end + (hop ? s->params.tc : 0), offset[2 * st + 1], cy->period_s);
        end = start_b[st] + pass_cost(s, st, 1);
    }
    free(offset);
    free(stage_of);
    return 0;
}

struct timed_pass {
    double t;
    int op, stage, mb;
};

static int by_time(const void *a, const void *b)
{
    const struct timed_pass *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->mb != y->mb ? x->mb - y->mb : x->stage - y->stage;
}

int wp_sched_order_steady(struct wp_schedule *s, const struct wp_steady_cycle *cy, struct wp_err *err)
{
    int P = s->nranks, S = s->nstages, M = s->nmicro;
    double *start = malloc((size_t)(2 * S) * sizeof *start);
    int most = 0; /* stages on the busiest rank */
    for (int r = 0; r < P; r++) {
        int n = local_stage(s, r, S);
        most = n > most ? n : most;
    }
    struct timed_pass *passes = malloc((size_t)(2 * most) * (size_t)M * sizeof *passes);
    int rc = !start || !passes ? wp_errorf(err, "out of memory") : wp_steady_times(s, cy, start, start + S, err);
    for (int r = 0; r < P && rc == 0; r++) {
        long n = 0;
        for (int st = 0; st < S; st++) {
            if (s->place[st].ranks[0] != r)
                continue;
            for (int m = 0; m < M; m++) {
                passes[n++] = (struct timed_pass){start[st] + m * cy->period_s, WP_OP_F, st, m};
                passes[n++] = (struct timed_pass){start[S + st] + m * cy->period_s, WP_OP_B, st, m};
            }
        }
        qsort(passes, (size_t)n, sizeof *passes, by_time);
        for (long i = 0; i < n && rc == 0; i++)
            rc = wp_sched_emit(s, r, passes[i].op, passes[i].stage, passes[i].mb, err);
    }
    free(start);
    free(passes);
    return rc;
}

int wp_steady_uniform(const struct wp_schedule *s, double stagger, struct wp_steady_cycle *cy, struct wp_err *err)
{
    int P = s->nranks, S = s->nstages, most = 0;
    for (int r = 0; r < P; r++) {
        int n = local_stage(s, r, S);
        most = n > most ? n : most;
    }
    int *order = malloc((size_t)P * (size_t)(2 * most) * sizeof *order);
    double *phase = malloc((size_t)P * sizeof *phase);
    cy->order = NULL;
    cy->phase_s = NULL;
    if (!order || !phase) {
        free(order);
        free(phase);
        return wp_errorf(err, "out of memory");
    }
    cy->stride = 2 * most;
    cy->period_s = 0;
    for (int r = 0; r < P; r++) {
        double busy = 0;
        for (int k = 0; k < 2 * most; k++)
            order[r * cy->stride + k] = k;
        for (int st = 0; st < S; st++)
            if (s->place[st].ranks[0] == r)
                busy += pass_cost(s, st, 0) + pass_cost(s, st, 1);
        cy->period_s = busy > cy->period_s ? busy : cy->period_s;
    }
    for (int r = 0; r < P; r++)
        phase[r] = r * stagger * cy->period_s;
    cy->order = order;
    cy->phase_s = phase;
    return 0;
}

void wp_steady_cycle_free(struct wp_steady_cycle *cy)
{
    free((void *)cy->order);
    free((void *)cy->phase_s);
    cy->order = NULL;
    cy->phase_s = NULL;
}
