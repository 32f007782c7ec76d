/* Wave orders studied: how close can a Hanayo pipeline of W waves (stage
 * r and 2P-1-r of every wave on rank r) come to the interleaved bound
 * M (tf+tb) + (P-1)(tf+tb)/(2W) within a memory bound D (micro-batches
 * through a rank's share of the model, held from F until B)? Beside what
 * the generator makes, it searches orders of another family: a steady
 * state of period tf+tb in which every rank runs each of its 2W chunks'
 * F and B once, in a cyclic order of its own from a phase of its own
 * (each pass taking the first slot of its kind at or after its input is
 * ready), compacted into a finite schedule by sorting every rank's passes
 * by their steady-state times and playing them as soon as they can run.
 * Simulated annealing (seeded, so reproducible) first looks for a steady
 * state within D, then for the compacted schedule of least makespan
 * within D. The uniform steady state (F0 B0 F1 B1 ... on every rank) is
 * shown with the memory it needs. Units: tf = 1, tb = 2, tc = 0.
 *
 *   bench/bench_waves P M W [D] [ITERATIONS] [SEED]                       */
#include <config.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/generate.h"
#include "sched/simulate.h"
#include "sched/validate.h"

/* A steady state: per rank the cyclic order of its 4W passes (id 2c + op,
 * op 0 = F of chunk c, 1 = B) and a phase, in units of one chunk's F. */
struct study {
    int P, M, W, S, C, K, period; /* period = tf + tb = 6W units */
    double D;
    int *order, *phase, *slot;    /* slot[r * K + id]: start within the period */
    long *start_f, *start_b;      /* per stage: steady-state start of micro-batch 0 */
};

static int rank_of(const struct study *st, int s)
{
    int j = s % (2 * st->P);
    return j < st->P ? j : 2 * st->P - 1 - j;
}

static int stage_of(const struct study *st, int r, int c)
{
    return c * st->P + (c % 2 == 0 ? r : st->P - 1 - r);
}

/* The first time at or after `earliest` that is `offset` modulo the period. */
static long next_slot(const struct study *st, long earliest, int offset)
{
    long q = earliest - offset, T = st->period;
    long k = q >= 0 ? (q + T - 1) / T : -((-q) / T);
    return offset + k * T;
}

/* Start times of micro-batch 0 of every stage's F and B, and the steady
 * state's peak of held activations over the ranks. */
static double steady_state(struct study *st)
{
    int P = st->P, K = st->K, T = st->period;
    for (int r = 0; r < P; r++) {
        int t = st->phase[r];
        for (int k = 0; k < K; k++) {
            int id = st->order[r * K + k];
            st->slot[r * K + id] = t % T;
            t += id & 1 ? 2 : 1; /* B takes tb = 2 units, F one */
        }
    }
    long end = 0;
    for (int s = 0; s < st->S; s++) {
        int r = rank_of(st, s), c = s / P;
        st->start_f[s] = s == 0 ? st->slot[r * K] : next_slot(st, end, st->slot[r * K + 2 * c]);
        end = st->start_f[s] + 1;
    }
    for (int s = st->S - 1; s >= 0; s--) {
        int r = rank_of(st, s), c = s / P;
        st->start_b[s] = next_slot(st, end, st->slot[r * K + 2 * c + 1]);
        end = st->start_b[s] + 2;
    }
    double worst = 0;
    for (int r = 0; r < P; r++)
        for (int t = 0; t < T; t++) {
            double held = 0;
            for (int c = 0; c < st->C; c++) {
                int s = stage_of(st, r, c);
                /* micro-batches m with start_f + mT <= t' < start_b + 2 + mT, t' = t far into the steady state */
                long from = st->start_f[s], to = st->start_b[s] + 2, tt = t + 1000000L * T;
                long newest = (tt - from) / T, oldest = tt - to < 0 ? 0 : (tt - to) / T + 1;
                held += (double)(newest - oldest + 1) / st->C;
            }
            worst = held > worst ? held : worst;
        }
    return worst;
}

static struct wp_sched_params params_of(enum wp_sched_kind kind, int P, int M, int W)
{
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = kind;
    p.ranks = P;
    p.microbatches = M;
    p.waves = W;
    return p;
}

struct pass {
    long t;
    int op, stage, mb;
};

static int by_time(const void *a, const void *b)
{
    const struct pass *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->mb != y->mb ? x->mb - y->mb : x->stage - y->stage;
}

/* The steady state compacted into a schedule of M micro-batches, validated
 * and simulated; INFINITY when it is not a valid schedule. */
static double compacted(const struct study *st, double *peak)
{
    struct wp_sched_params p = params_of(WP_SCHED_HANAYO, st->P, st->M, st->W);
    struct wp_schedule s;
    struct wp_err err = {""};
    double makespan = INFINITY;
    if (wp_schedule_init(&s, &p, st->S, &err))
        return INFINITY;
    struct pass *passes = malloc((size_t)2 * st->C * st->M * sizeof *passes);
    int rc = !passes || wp_sched_place(&s, &err) || wp_sched_reserve_lists(&s, &err);
    for (int r = 0; r < st->P && rc == 0; r++) {
        int n = 0;
        for (int c = 0; c < st->C; c++) {
            int stage = stage_of(st, r, c);
            for (int m = 0; m < st->M; m++) {
                passes[n++] = (struct pass){st->start_f[stage] + (long)m * st->period, WP_OP_F, stage, m};
                passes[n++] = (struct pass){st->start_b[stage] + (long)m * st->period, WP_OP_B, stage, m};
            }
        }
        qsort(passes, (size_t)n, sizeof *passes, by_time);
        for (int i = 0; i < n && rc == 0; i++)
            rc = wp_sched_emit(&s, r, passes[i].op, passes[i].stage, passes[i].mb, &err);
    }
    free(passes);
    if (rc == 0)
        rc = wp_sched_finish_lists(&s, &err);
    for (int r = 0; r < st->P; r++)
        s.activation_bound[r] = INFINITY; /* measured here, not promised */
    struct wp_validation v;
    if (rc == 0 && wp_schedule_validate(&s, &v, &err) == 0) {
        wp_validation_destroy(&v);
        struct wp_cost_model cost;
        wp_cost_model_default(&cost);
        struct wp_sim_result res;
        if (wp_simulate(&s, &cost, &res, &err) == 0) {
            makespan = res.makespan;
            *peak = res.peak_max;
            wp_sim_result_destroy(&res);
        }
    }
    wp_schedule_destroy(&s);
    return makespan;
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
 * takes another phase. undo() puts it back. */
struct move {
    int r, i, j, phase;
};

static struct move propose(struct study *st)
{
    struct move mv = {(int)(rng() % (uint64_t)st->P), (int)(rng() % (uint64_t)st->K), (int)(rng() % (uint64_t)st->K),
                      -1};
    int *o = st->order + mv.r * st->K;
    if (rng() % 3 == 0) {
        mv.phase = st->phase[mv.r];
        st->phase[mv.r] = (int)(rng() % (uint64_t)st->period);
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
    double now = steady_state(st);
    for (long it = 0; it < 20 * iterations && now > st->D - 1e-9; it++) {
        struct move mv = propose(st);
        double cand = steady_state(st);
        if (accept(now, cand, 0.5 * (1 - (double)it / (20.0 * iterations)) + 0.01))
            now = cand;
        else
            undo(st, mv);
    }
    size_t bytes = (size_t)(st->P * st->K) * sizeof(int);
    int *keep_order = malloc(bytes), *keep_phase = malloc((size_t)st->P * sizeof(int));
    double best = INFINITY, peak = 0;
    now = INFINITY;
    for (long it = 0; it < iterations && keep_order && keep_phase; it++) {
        struct move mv = propose(st);
        double cand = steady_state(st) > st->D + 1e-9 ? INFINITY : compacted(st, &peak);
        if (peak > st->D + 1e-9)
            cand = INFINITY;
        if (isfinite(cand) && accept(now, cand, 1.0 * (1 - (double)it / iterations) + 0.02)) {
            now = cand;
            if (cand < best) {
                best = cand;
                *best_peak = peak;
                memcpy(keep_order, st->order, bytes);
                memcpy(keep_phase, st->phase, (size_t)st->P * sizeof(int));
            }
        } else {
            undo(st, mv);
        }
    }
    if (isfinite(best)) {
        memcpy(st->order, keep_order, bytes);
        memcpy(st->phase, keep_phase, (size_t)st->P * sizeof(int));
    }
    free(keep_order);
    free(keep_phase);
    return best;
}

/* F0 B0 F1 B1 ... on every rank, rank r from phase r * stagger: the best
 * makespan over the staggers, with the peak it needs. */
static double uniform(struct study *st, double *peak_out)
{
    double best = INFINITY;
    for (int stagger = 0; stagger < st->period; stagger++) {
        for (int r = 0; r < st->P; r++) {
            for (int k = 0; k < st->K; k++)
                st->order[r * st->K + k] = k;
            st->phase[r] = (r * stagger) % st->period;
        }
        steady_state(st);
        double peak = 0, m = compacted(st, &peak);
        if (m < best || (m == best && peak < *peak_out)) {
            best = m;
            *peak_out = peak;
        }
    }
    return best;
}

static double generated(enum wp_sched_kind kind, int P, int M, int W, double *peak)
{
    struct wp_sched_params p = params_of(kind, P, M, W);
    struct wp_schedule s;
    struct wp_err err = {""};
    if (wp_schedule_generate(&p, &s, &err))
        return INFINITY;
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    struct wp_sim_result res;
    double m = INFINITY;
    if (wp_simulate(&s, &cost, &res, &err) == 0) {
        m = res.makespan;
        *peak = res.peak_max;
        wp_sim_result_destroy(&res);
    }
    wp_schedule_destroy(&s);
    return m;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s P M W [D (default P)] [ITERATIONS (default 20000)] [SEED (default 1)]\n", argv[0]);
        return 2;
    }
    struct study st = {atoi(argv[1]), atoi(argv[2]), atoi(argv[3]), 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL};
    if (st.P < 2 || st.M < 1 || st.W < 1 || st.P > 64 || st.W > 8) {
        fprintf(stderr, "%s: need 2 <= P <= 64, M >= 1, 1 <= W <= 8\n", argv[0]);
        return 2;
    }
    st.D = argc > 4 ? atof(argv[4]) : st.P;
    long iterations = argc > 5 ? atol(argv[5]) : 20000;
    rng_state = argc > 6 ? strtoull(argv[6], NULL, 10) * 2654435761ULL + 1 : 88172645463325252ULL;
    st.C = 2 * st.W;
    st.S = st.C * st.P;
    st.K = 2 * st.C;
    st.period = 3 * st.C;
    st.order = malloc((size_t)(st.P * st.K) * sizeof(int));
    st.phase = malloc((size_t)st.P * sizeof(int));
    st.slot = malloc((size_t)(st.P * st.K) * sizeof(int));
    st.start_f = malloc((size_t)st.S * sizeof(long));
    st.start_b = malloc((size_t)st.S * sizeof(long));
    if (!st.order || !st.phase || !st.slot || !st.start_f || !st.start_b)
        return 1;
    double pk_1f1b = 0, pk_gen = 0, pk_uniform = 0, pk_search = 0;
    double t_1f1b = generated(WP_SCHED_1F1B, st.P, st.M, 1, &pk_1f1b);
    double t_gen = generated(WP_SCHED_HANAYO, st.P, st.M, st.W, &pk_gen);
    double t_uniform = uniform(&st, &pk_uniform);
    for (int r = 0; r < st.P; r++) /* the search starts from the uniform order, stagger 2 */
        st.phase[r] = (2 * r) % st.period;
    double t_search = search(&st, iterations, &pk_search);
    double bound = 3.0 * st.M + 3.0 * (st.P - 1) / st.C;
    printf("P=%d M=%d W=%d, tf=1 tb=2 tc=0, memory bound D=%g (micro-batches of a rank's share)\n", st.P, st.M,
           st.W, st.D);
    printf("  %-46s %10s %8s\n", "order", "makespan", "peak");
    printf("  %-46s %10g %8.3g\n", "1f1b", t_1f1b, pk_1f1b);
    printf("  %-46s %10g %8.3g\n", "hanayo, the generator's (within P)", t_gen, pk_gen);
    printf("  %-46s %10g %8.3g\n", "uniform steady state (memory unbounded)", t_uniform, pk_uniform);
    printf("  %-46s %10g %8.3g   (%ld iterations)\n", "searched steady state, compacted, within D", t_search,
           pk_search, iterations);
    printf("  %-46s %10g\n", "interleaved bound M T + (P-1) T / 2W", bound);
    if (isfinite(t_search)) {
        printf("  searched cycles (phase: passes):\n");
        for (int r = 0; r < st.P; r++) {
            printf("    rank %2d (%2d):", r, st.phase[r]);
            for (int k = 0; k < st.K; k++)
                printf(" %c%d", st.order[r * st.K + k] & 1 ? 'B' : 'F', st.order[r * st.K + k] >> 1);
            printf("\n");
        }
    }
    free(st.order);
    free(st.phase);
    free(st.slot);
    free(st.start_f);
    free(st.start_b);
    return 0;
}
