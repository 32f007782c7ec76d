/* Wave orders studied: how close can a Hanayo pipeline of W waves (stage
 * r and 2P-1-r of every wave on rank r) come to the interleaved bound
 * M (tf+tb) + (P-1)(tf+tb)/(2W) within a memory bound D (micro-batches
 * through a rank's share of the model, held from F until B), and to the
 * least makespan possible within P, M (tf+tb) + (P-1) tb / W (README,
 * "Comparing schedules")? Beside the
 * generator's order (within P), and that order climbed (--order-search
 * CLIMB_STEPS, src/sched/order_improve.c, within P), it shows steady-state orders compacted
 * into M micro-batches (src/sched/order_steady.c): the uniform cycle at
 * its best stagger, with the memory it needs, and cycles searched by
 * simulated annealing (seeded, so reproducible): each rank's cyclic order
 * of its passes and its phase, first for a steady state within D, then
 * for the compacted schedule of least makespan within D. tf = 1, tb = 2,
 * tc = 0.
 *
 *   bench/bench_waves P M W [D] [ITERATIONS] [SEED] [CLIMB_STEPS]         */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/generate.h"
#include "sched/order_steady.h"
#include "sched/place.h"
#include "sched/simulate.h"
#include "sched/variant.h"

struct study {
    struct wp_sched_params params; /* hanayo, P, M, W, memory unbounded */
    struct wp_schedule placed;     /* its placement, for the steady-state times */
    int P, W, S, K;                /* K = 4W passes a rank */
    double D, unit;                /* unit = one chunk's F; a period is 6W units */
    int *order;
    double *phase;
    struct wp_steady_cycle cycle;
    double *start_f, *start_b;
};

static struct wp_sched_params params_of(enum wp_sched_kind kind, int P, int M, int W, int max_inflight)
{
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = kind;
    p.ranks = P;
    p.microbatches = M;
    p.waves = W;
    p.max_inflight = max_inflight;
    return p;
}

/* Makespan and peak of a schedule made as `how` asks; INFINITY when it
 * cannot be made. */
static double timed(const struct wp_sched_params *p, int nstages, const struct wp_order_variant *how, double *peak)
{
    struct wp_schedule s;
    struct wp_err err = {""};
    int made = how ? wp_sched_generate_variant(p, nstages, how, &s, &err) == 0
                   : wp_schedule_generate(p, &s, &err) == 0;
    if (!made)
        return INFINITY;
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    struct wp_sim_result res;
    double makespan = INFINITY;
    if (wp_simulate(&s, &cost, &res, &err) == 0) {
        makespan = res.makespan;
        *peak = res.peak_max;
        wp_sim_result_destroy(&res);
    }
    wp_schedule_destroy(&s);
    return makespan;
}

/* The steady state's peak of held activations over the ranks (at each F's
 * start, where a rank's count peaks), INFINITY when the cycle is invalid. */
static double steady_peak(struct study *st)
{
    struct wp_err err = {""};
    if (wp_steady_times(&st->placed, &st->cycle, st->start_f, st->start_b, &err))
        return INFINITY;
    double T = st->cycle.period_s, worst = 0, w = 1.0 / (2 * st->W), eps = 1e-9;
    for (int r = 0; r < st->P; r++)
        for (int a = 0; a < st->S; a++) {
            if (st->placed.place[a].ranks[0] != r)
                continue;
            double t = st->start_f[a] + 1e6 * T, held = 0;
            for (int s = 0; s < st->S; s++) {
                if (st->placed.place[s].ranks[0] != r)
                    continue;
                double from = st->start_f[s], to = st->start_b[s] + 2 * st->unit;
                double newest = floor((t - from) / T + eps), oldest = floor((t - to) / T + eps) + 1;
                held += w * (newest - oldest + 1);
            }
            worst = held > worst ? held : worst;
        }
    return worst;
}

static double compacted(struct study *st, double *peak)
{
    struct wp_order_variant how = {.steady = 1, .cycle = &st->cycle};
    return timed(&st->params, st->S, &how, peak);
}

static uint64_t rng_state;
static uint64_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* One move: two passes of a rank swap places in its cycle, or the rank
 * takes another phase (a whole number of units); undo() puts it back. */
struct move {
    int r, i, j;
    double phase;
};

static struct move propose(struct study *st)
{
    struct move mv = {(int)(rng() % (uint64_t)st->P), (int)(rng() % (uint64_t)st->K),
                      (int)(rng() % (uint64_t)st->K), -1};
    int *o = st->order + mv.r * st->K;
    if (rng() % 3 == 0) {
        mv.phase = st->phase[mv.r];
        st->phase[mv.r] = (double)(rng() % (uint64_t)(6 * st->W)) * st->unit;
    } else {
        int t = o[mv.i];
        o[mv.i] = o[mv.j];
        o[mv.j] = t;
    }
    return mv;
}

static void undo(struct study *st, struct move mv)
{
    int *o = st->order + mv.r * st->K;
    if (mv.phase >= 0) {
        st->phase[mv.r] = mv.phase;
    } else {
        int t = o[mv.i];
        o[mv.i] = o[mv.j];
        o[mv.j] = t;
    }
}

static int accept(double now, double cand, double temperature)
{
    return cand <= now || exp((now - cand) / temperature) > (double)(rng() % 1000000) / 1e6;
}

/* Annealing: a steady state within D, then the fastest compacted schedule
 * within D; the best found is left in st. */
static double search(struct study *st, long iterations, double *best_peak)
{
    double now = steady_peak(st);
    for (long it = 0; it < 20 * iterations && now > st->D - 1e-9; it++) {
        struct move mv = propose(st);
        double cand = steady_peak(st);
        if (accept(now, cand, 0.5 * (1 - (double)it / (20.0 * iterations)) + 0.01))
            now = cand;
        else
            undo(st, mv);
    }
    size_t bytes = (size_t)(st->P * st->K) * sizeof(int);
    int *keep_order = malloc(bytes);
    double *keep_phase = malloc((size_t)st->P * sizeof(double));
    double best = INFINITY;
    now = INFINITY;
    for (long it = 0; it < iterations && keep_order && keep_phase; it++) {
        struct move mv = propose(st);
        double peak = INFINITY, cand = steady_peak(st) > st->D + 1e-9 ? INFINITY : compacted(st, &peak);
        if (peak > st->D + 1e-9)
            cand = INFINITY;
        if (isfinite(cand) && accept(now, cand, 1.0 * (1 - (double)it / iterations) + 0.02)) {
            now = cand;
            if (cand < best) {
                best = cand;
                *best_peak = peak;
                memcpy(keep_order, st->order, bytes);
                memcpy(keep_phase, st->phase, (size_t)st->P * sizeof(double));
            }
        } else {
            undo(st, mv);
        }
    }
    if (isfinite(best)) {
        memcpy(st->order, keep_order, bytes);
        memcpy(st->phase, keep_phase, (size_t)st->P * sizeof(double));
    }
    free(keep_order);
    free(keep_phase);
    return best;
}

/* The uniform cycle at every stagger of a whole number of units: the best
 * makespan, and the least peak that reaches it. */
static double uniform(struct study *st, double *peak_out)
{
    double best = INFINITY;
    for (int j = 0; j < 6 * st->W; j++) {
        struct wp_order_variant how = {.steady = 1, .stagger = (double)j / (6 * st->W)};
        double peak = 0, m = timed(&st->params, st->S, &how, &peak);
        if (m < best - 1e-12 || (m <= best + 1e-12 && peak < *peak_out)) {
            best = m;
            *peak_out = peak;
        }
    }
    return best;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s P M W [D (default P)] [ITERATIONS (default 20000)] [SEED (default 1)] "
                        "[CLIMB_STEPS (default 1000000)]\n",
                argv[0]);
        return 2;
    }
    int P = atoi(argv[1]), M = atoi(argv[2]), W = atoi(argv[3]);
    if (P < 2 || M < 1 || W < 1 || P > 64 || W > 8 || M > 4096) {
        fprintf(stderr, "%s: need 2 <= P <= 64, 1 <= M <= 4096, 1 <= W <= 8\n", argv[0]);
        return 2;
    }
    struct study st = {.params = params_of(WP_SCHED_HANAYO, P, M, W, M), .P = P, .W = W, .S = 2 * W * P, .K = 4 * W};
    st.D = argc > 4 ? atof(argv[4]) : P;
    long iterations = argc > 5 ? atol(argv[5]) : 20000;
    rng_state = argc > 6 ? strtoull(argv[6], NULL, 10) * 2654435761ULL + 1 : 88172645463325252ULL;
    st.unit = st.params.tf / (2 * W);
    struct wp_err err = {""};
    st.order = malloc((size_t)(P * st.K) * sizeof(int));
    st.phase = malloc((size_t)P * sizeof(double));
    st.start_f = malloc((size_t)st.S * sizeof(double));
    st.start_b = malloc((size_t)st.S * sizeof(double));
    if (!st.order || !st.phase || !st.start_f || !st.start_b ||
        wp_schedule_init(&st.placed, &st.params, st.S, &err) || wp_sched_place(&st.placed, &err)) {
        fprintf(stderr, "%s: %s\n", argv[0], err.msg[0] ? err.msg : "out of memory");
        return 1;
    }
    /* the search starts from the uniform cycle, a stagger of two units */
    for (int r = 0; r < P; r++) {
        for (int k = 0; k < st.K; k++)
            st.order[r * st.K + k] = k;
        st.phase[r] = fmod(2.0 * r, 6.0 * W) * st.unit;
    }
    st.cycle = (struct wp_steady_cycle){st.order, st.K, st.phase, st.params.tf + st.params.tb};
    struct wp_sched_params f1b = params_of(WP_SCHED_1F1B, P, M, 1, 0), gen = params_of(WP_SCHED_HANAYO, P, M, W, 0);
    double pk_1f1b = 0, pk_gen = 0, pk_uniform = 0, pk_search = 0;
    double t_1f1b = timed(&f1b, P, NULL, &pk_1f1b);
    double t_gen = timed(&gen, st.S, NULL, &pk_gen);
    double t_uniform = uniform(&st, &pk_uniform);
    double t_search = search(&st, iterations, &pk_search);
    struct wp_sched_params climbed = gen;
    climbed.order_search = argc > 7 ? atol(argv[7]) : 1000000;
    double pk_climbed = 0, t_climbed = timed(&climbed, st.S, NULL, &pk_climbed);
    double bound = 3.0 * M + 3.0 * (P - 1) / (2 * W);
    printf("P=%d M=%d W=%d, tf=1 tb=2 tc=0, memory bound D=%g (micro-batches of a rank's share)\n", P, M, W, st.D);
    printf("  %-46s %10s %8s\n", "order", "makespan", "peak");
    printf("  %-46s %10g %8.3g\n", "1f1b", t_1f1b, pk_1f1b);
    printf("  %-46s %10g %8.3g\n", "hanayo, the generator's (within P)", t_gen, pk_gen);
    printf("  %-46s %10g %8.3g   (%ld steps)\n", "hanayo, the generator's, --order-search", t_climbed, pk_climbed,
           climbed.order_search);
    printf("  %-46s %10g %8.3g\n", "uniform steady state (memory unbounded)", t_uniform, pk_uniform);
    printf("  %-46s %10g %8.3g   (%ld iterations)\n", "searched steady state, compacted, within D", t_search,
           pk_search, iterations);
    printf("  %-46s %10g\n", "interleaved bound M T + (P-1) T / 2W", bound);
    printf("  %-46s %10g\n", "bound within P: M T + (P-1) tb / W", 3.0 * M + 2.0 * (P - 1) / W);
    if (isfinite(t_search)) {
        printf("  searched cycles (phase in units of a chunk's F: passes):\n");
        for (int r = 0; r < P; r++) {
            printf("    rank %2d (%2g):", r, st.phase[r] / st.unit);
            for (int k = 0; k < st.K; k++)
                printf(" %c%d", st.order[r * st.K + k] & 1 ? 'B' : 'F', st.order[r * st.K + k] >> 1);
            printf("\n");
        }
    }
    wp_schedule_destroy(&st.placed);
    free(st.order);
    free(st.phase);
    free(st.start_f);
    free(st.start_b);
    return 0;
}
