/* Schedules against closed forms and the papers: makespan and bubble ratio
 * of gpipe, 1f1b and kfkb ((M+P-1)(tf+tb), (P-1)/(M+P-1)), interleaved
 * ((P-1)/(VM+P-1)), bfs ((V max(M,P) + min(M,P) - 1)(tf+tb)/V), zb-h1's idle time ((P-1)(tf+tb-tw) against 1F1B's
 * (P-1)(tf+tb+tw)), peak activations (gpipe M, 1f1b min(P-r, M), policy B
 * min(2(P-r)-1, M), kfkb between, hanayo within P), Hanayo's bubble falling
 * with waves (and its closed form at M = P), Ada-Grouper's communication
 * hiding, validation over a grid of every kind, stage replication, and the
 * validator rejecting hand-broken lists, validating and simulating in one
 * walk against the two calls, and the makespan's lower bound
 * from per-stage costs (never above the simulation, exact for a balanced
 * 1F1B, none for ranks of two stages). */
#include <math.h>
#include <stdlib.h>

#include "sched/generate.h"
#include "sched/makespan_bound.h"
#include "sched/simulate.h"
#include "sched/validate.h"
#include "sched_compare.h"
#include "sched_params.h"
#include "tap.h"


/* Generates, validates and simulates; returns 0 on success. */
static int run(const struct wp_sched_params *p, struct wp_sim_result *res, struct wp_validation *v)
{
    struct wp_schedule s;
    struct wp_err err = {""};
    if (wp_schedule_generate(p, &s, &err)) {
        ok(0, "%s P=%d M=%d generates (%s)", wp_sched_kind_name(p->kind), p->ranks, p->microbatches, err.msg);
        return -1;
    }
    struct wp_validation local;
    int rc = wp_schedule_validate(&s, v ? v : &local, &err);
    if (rc)
        ok(0, "%s P=%d M=%d validates (%s)", wp_sched_kind_name(p->kind), p->ranks, p->microbatches, err.msg);
    else if (!v)
        wp_validation_destroy(&local);
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    cost.tf = p->tf;
    cost.tb = p->tb;
    cost.tw = p->tw;
    cost.tc = p->tc;
    if (rc == 0 && res && wp_simulate(&s, &cost, res, &err)) {
        ok(0, "simulates (%s)", err.msg);
        rc = -1;
    }
    wp_schedule_destroy(&s);
    return rc;
}

static void test_closed_forms(void)
{
    static const int shapes[][2] = {{4, 8}, {4, 5}, {3, 7}, {8, 16}, {5, 3}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int P = shapes[i][0], M = shapes[i][1];
        for (int kind = WP_SCHED_GPIPE; kind <= WP_SCHED_KFKB; kind++) {
            for (int k = 1; k <= (kind == WP_SCHED_KFKB ? M : 1); k++) {
                struct wp_sched_params p = params(kind, P, M);
                p.k = k;
                p.tf = 1.5;
                p.tb = 2.5;
                struct wp_sim_result res;
                if (run(&p, &res, NULL))
                    continue;
                double want = (M + P - 1) * (p.tf + p.tb);
                is_near(res.makespan, want, 1e-12, "%s k=%d P=%d M=%d: makespan (M+P-1)(tf+tb) = %g",
                        wp_sched_kind_name(kind), k, P, M, want);
                is_near(res.bubble_ratio, (double)(P - 1) / (M + P - 1), 1e-12, "%s k=%d P=%d M=%d: bubble (P-1)/(M+P-1)",
                        wp_sched_kind_name(kind), k, P, M);
                wp_sim_result_destroy(&res);
            }
        }
    }
}

static int same_lists(const struct wp_sched_params *a, const struct wp_sched_params *b)
{
    struct wp_schedule sa, sb;
    struct wp_err err;
    if (wp_schedule_generate(a, &sa, &err))
        return 0;
    if (wp_schedule_generate(b, &sb, &err)) {
        wp_schedule_destroy(&sa);
        return 0;
    }
    int same = sched_same_lists(&sa, &sb);
    wp_schedule_destroy(&sa);
    wp_schedule_destroy(&sb);
    return same;
}

static void test_kfkb_limits(void)
{
    struct wp_sched_params k1 = params(WP_SCHED_KFKB, 4, 8), f1b = params(WP_SCHED_1F1B, 4, 8);
    k1.k = 1;
    ok(same_lists(&k1, &f1b), "kfkb with k = 1 is exactly 1f1b");
    struct wp_sched_params km = params(WP_SCHED_KFKB, 4, 8), gp = params(WP_SCHED_GPIPE, 4, 8);
    km.k = 8;
    ok(same_lists(&km, &gp), "kfkb with k = M is exactly gpipe");
}

static void test_interleaved(void)
{
    static const int shapes[][3] = {{4, 8, 2}, {4, 4, 3}, {2, 6, 4}, {8, 16, 2}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int P = shapes[i][0], M = shapes[i][1], V = shapes[i][2];
        struct wp_sched_params p = params(WP_SCHED_INTERLEAVED, P, M);
        p.chunks = V;
        struct wp_sim_result res;
        if (run(&p, &res, NULL))
            continue;
        is_near(res.bubble_ratio, (double)(P - 1) / (V * M + P - 1), 1e-12,
                "interleaved P=%d M=%d V=%d: bubble (P-1)/(VM+P-1)", P, M, V);
        wp_sim_result_destroy(&res);
    }
    struct wp_sched_params p = params(WP_SCHED_INTERLEAVED, 4, 6);
    p.chunks = 2;
    struct wp_schedule s;
    struct wp_err err = {""};
    ok(wp_schedule_generate(&p, &s, &err) == -1, "interleaved rejects M not a multiple of P");
    has_substr(err.msg, "multiple of the ranks", "and says why");
}

/* Breadth-first over V looped chunks: a rank never waits within a phase
 * once M >= P (its chunk's micro-batches are back before it needs them),
 * so the makespan is (V max(M, P) + min(M, P) - 1)(tf + tb) / V (GPipe's
 * (M + P - 1)(tf + tb) at V = 1); every rank holds all M micro-batches;
 * any M, not only multiples of P. */
static void test_bfs(void)
{
    static const int shapes[][3] = {{4, 8, 2}, {4, 4, 3}, {2, 6, 4}, {8, 16, 2}, {4, 13, 2}, {3, 5, 1}, {8, 3, 2}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int P = shapes[i][0], M = shapes[i][1], V = shapes[i][2];
        struct wp_sched_params p = params(WP_SCHED_BFS, P, M);
        p.chunks = V;
        struct wp_sim_result res;
        struct wp_validation v;
        if (run(&p, &res, &v))
            continue;
        int most = M > P ? M : P, least = M < P ? M : P;
        is_near(res.makespan, (V * most + least - 1) * (p.tf + p.tb) / V, 1e-9,
                "bfs P=%d M=%d V=%d: makespan (V max(M,P) + min(M,P) - 1)(tf+tb)/V", P, M, V);
        int all_m = 1;
        for (int r = 0; r < P; r++)
            all_m &= fabs(v.peak_activations[r] - M) < 1e-9;
        ok(all_m, "bfs P=%d M=%d V=%d: every rank holds all %d micro-batches", P, M, V, M);
        wp_validation_destroy(&v);
        wp_sim_result_destroy(&res);
    }
    /* the compute order of rank 1 of P = 2, M = 2, V = 2: chunk 0 (stage 1)
     * then chunk 1 (stage 3) forward, then back last chunk first, each
     * chunk's micro-batches in their forwards' order */
    struct wp_sched_params p = params(WP_SCHED_BFS, 2, 2);
    p.chunks = 2;
    struct wp_schedule s;
    struct wp_err err = {""};
    if (wp_schedule_generate(&p, &s, &err) == 0) {
        static const int want[][3] = {{WP_OP_F, 1, 0}, {WP_OP_F, 1, 1}, {WP_OP_F, 3, 0}, {WP_OP_F, 3, 1},
                                      {WP_OP_B, 3, 0}, {WP_OP_B, 3, 1}, {WP_OP_B, 1, 0}, {WP_OP_B, 1, 1}};
        int n = 0, same = 1;
        const struct wp_action_list *l = &s.lists[1];
        for (int i = 0; i < l->count; i++) {
            const struct wp_action *a = &l->actions[i];
            if (a->op != WP_OP_F && a->op != WP_OP_B)
                continue;
            same &= n < 8 && a->op == want[n][0] && a->stage == want[n][1] && a->microbatch == want[n][2];
            n++;
        }
        ok(same && n == 8, "bfs: rank 1's passes F1.0 F1.1 F3.0 F3.1 B3.0 B3.1 B1.0 B1.1");
        wp_schedule_destroy(&s);
    } else {
        ok(0, "bfs P=2 M=2 V=2 generates (%s)", err.msg);
    }
}

/* The lower bound with a hop time (makespan_bound.h): never above the
 * simulation for any kind, P, M, costs and tc; met by gpipe at every tc
 * (bfs at M = P waits tc for a micro-batch's lap back to rank 0), by bfs at
 * tc = 0, and at tc = 0 with tf = tb = tw by zb-h1 with V chunks at every
 * M a multiple of P (M (tf+tb+tw) + (P-1) tf / V: PyTorch's interleaved
 * zero bubble at M = P, 13.5 at P = 4 and 27.5 at P = 8 with two chunks,
 * and one chunk's ZB-H1 alike). */
static void test_hop_bound(void)
{
    static const double costs[][3] = {{1, 2, 0}, {1, 1, 1}};
    static const double tcs[] = {0, 0.25, 1};
    int checked = 0, above = 0, met_ok = 1;
    char first[256] = "";
    for (int P = 2; P <= 8; P *= 2)
        for (int f = 1; f <= 4; f *= 2)
            for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++)
                for (int V = 1; V <= 3 && wp_sched_kind_generated((enum wp_sched_kind)kind); V++)
                    for (size_t ci = 0; ci < 2; ci++)
                        for (size_t ti = 0; ti < 3; ti++) {
                            int M = f * P;
                            if ((V > 1 && !wp_sched_kind_has_chunks((enum wp_sched_kind)kind)) ||
                                (kind == WP_SCHED_DUALPIPEV && M < 2 * P))
                                continue;
                            struct wp_sched_params p = params(kind, P, M);
                            p.chunks = V;
                            p.tf = costs[ci][0];
                            p.tb = costs[ci][1];
                            p.tw = costs[ci][2];
                            p.tc = tcs[ti];
                            struct wp_schedule s;
                            struct wp_err err = {""};
                            if (wp_schedule_generate(&p, &s, &err))
                                continue;
                            struct wp_cost_model c;
                            wp_cost_model_default(&c);
                            c.tf = p.tf;
                            c.tb = p.tb;
                            c.tw = p.tw;
                            c.tc = p.tc;
                            struct wp_sim_result res;
                            struct wp_hop_bound b;
                            wp_makespan_bound_hops(&s, &c, &b);
                            if (wp_simulate(&s, &c, &res, &err) == 0) {
                                checked++;
                                if (b.makespan_s > res.makespan + 1e-9 && !above++)
                                    snprintf(first, sizeof first, "%s P=%d M=%d V=%d tc=%g: bound %g > %g",
                                             wp_sched_kind_name(kind), P, M, V, p.tc, b.makespan_s, res.makespan);
                                int must_meet = kind == WP_SCHED_GPIPE || (kind == WP_SCHED_BFS && p.tc == 0) ||
                                                (kind == WP_SCHED_ZBH1 && p.tc == 0 && ci == 1);
                                if (must_meet && fabs(res.makespan - b.makespan_s) > 1e-9) {
                                    if (met_ok)
                                        snprintf(first, sizeof first, "%s P=%d M=%d V=%d tc=%g: %g, bound %g",
                                                 wp_sched_kind_name(kind), P, M, V, p.tc, res.makespan,
                                                 b.makespan_s);
                                    met_ok = 0;
                                }
                                wp_sim_result_destroy(&res);
                            }
                            wp_schedule_destroy(&s);
                        }
    ok(checked > 300 && above == 0, "the hop bound is never above the simulation (%d schedules, tc 0, 0.25, 1)%s%s",
       checked, above ? ": " : "", above ? first : "");
    ok(met_ok, "gpipe meets it at every tc, bfs at tc = 0, zb-h1 with V chunks at tc = 0, tf = tb = tw%s%s",
       met_ok ? "" : ": ", met_ok ? "" : first);
    struct wp_sched_params p = params(WP_SCHED_ZBH1, 8, 8);
    p.chunks = 2;
    p.tb = 1;
    p.tw = 1;
    struct wp_sim_result res;
    if (run(&p, &res, NULL) == 0) {
        is_near(res.makespan, 27.5, 1e-9, "zb-h1 V=2 at P = M = 8, tf = tb = tw = 1: 27.5 (PyTorch's interleaved "
                                          "zero bubble: 27.5; hanayo with four waves 27.75)");
        ok(res.peak_max <= 8 + 1e-9, "within P = 8 micro-batches (%g)", res.peak_max);
        wp_sim_result_destroy(&res);
    }
}

static double idle_per_rank(const struct wp_sim_result *res, int r)
{
    return res->makespan - res->busy[r];
}

static void test_zero_bubble(void)
{
    static const int shapes[][2] = {{4, 8}, {4, 16}, {6, 12}, {3, 9}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        int P = shapes[i][0], M = shapes[i][1];
        struct wp_sched_params zb = params(WP_SCHED_ZBH1, P, M), f1b = params(WP_SCHED_1F1B, P, M);
        zb.tf = f1b.tf = 1;
        zb.tb = f1b.tb = 1;
        zb.tw = f1b.tw = 1;
        struct wp_sim_result rz, rf;
        struct wp_validation vz;
        if (run(&zb, &rz, &vz) || run(&f1b, &rf, NULL))
            continue;
        double want_zb = (P - 1) * (zb.tf + zb.tb - zb.tw), want_1f1b = (P - 1) * (zb.tf + zb.tb + zb.tw);
        int all = 1;
        for (int r = 0; r < P; r++)
            all &= fabs(idle_per_rank(&rz, r) - want_zb) < 1e-9 && fabs(idle_per_rank(&rf, r) - want_1f1b) < 1e-9;
        ok(all, "zb-h1 P=%d M=%d: idle per rank (P-1)(tf+tb-tw) = %g, 1F1B's (P-1)(tf+tb+tw) = %g", P, M, want_zb,
           want_1f1b);
        is_near(idle_per_rank(&rz, 0) / idle_per_rank(&rf, 0), 1.0 / 3, 1e-12,
                "zb-h1 P=%d M=%d: with tf = tb = tw the idle time is one third of 1F1B's", P, M);
        /* held from F until W: at most P micro-batches on every rank (the
         * zero-bubble paper's ZB-H1 keeps 1F1B's peak, that of its first
         * rank), and exactly P on the first: W fills the bubbles instead of
         * waiting for the end */
        int mem = 1, agree = 1;
        for (int r = 0; r < P; r++) {
            mem &= vz.peak_activations[r] <= (P < M ? P : M) + 1e-12;
            agree &= fabs(vz.peak_activations[r] - rz.peak_activations[r]) < 1e-12;
        }
        ok(mem && fabs(vz.peak_activations[0] - (P < M ? P : M)) < 1e-12,
           "zb-h1 P=%d M=%d: activations held until W within min(P, M) on every rank, min(P, M) on rank 0", P, M);
        ok(agree, "zb-h1 P=%d M=%d: simulator and validator count the same activations (held until W)", P, M);
        wp_validation_destroy(&vz);
        wp_sim_result_destroy(&rz);
        wp_sim_result_destroy(&rf);
    }
}

/* The V-shaped zero-bubble kinds at tf = tb = tw: every rank is busy from
 * its first input to the end, so the makespan is the work, M (tf + tb + tw),
 * plus the V's start-up, P - 1 forwards of half a rank's layers (the
 * zero-bubble paper's ZB-V: no bubble in the steady state; DualPipeV the
 * same at these costs); memory as 1F1B (zb-v, P) or one more (DualPipeV,
 * DeepSeek-V3's table 2: PP + 1), held until W. */
static void test_zero_bubble_v(void)
{
    static const int kinds[] = {WP_SCHED_ZBV, WP_SCHED_DUALPIPEV};
    for (size_t k = 0; k < 2; k++)
        for (int P = 4; P <= 8; P *= 2)
            for (int f = 2; f <= 4; f *= 2) {
                int M = f * P;
                struct wp_sched_params p = params(kinds[k], P, M);
                p.tf = p.tb = p.tw = 1;
                struct wp_sim_result res;
                struct wp_validation v;
                if (run(&p, &res, &v))
                    continue;
                double want = M * 3.0 + (P - 1) * 0.5, bound = kinds[k] == WP_SCHED_ZBV ? P : P + 1;
                is_near(res.makespan, want, 1e-9, "%s P=%d M=%d: makespan M (tf+tb+tw) + (P-1) tf/2 = %g",
                        wp_sched_kind_name(kinds[k]), P, M, want);
                int agree = 1;
                for (int r = 0; r < P; r++)
                    agree &= fabs(v.peak_activations[r] - res.peak_activations[r]) < 1e-12;
                ok(v.peak_max <= bound + 1e-12 && agree,
                   "%s P=%d M=%d: peak %.3g held until W within %g, simulator and validator agree",
                   wp_sched_kind_name(kinds[k]), P, M, v.peak_max, bound);
                wp_validation_destroy(&v);
                wp_sim_result_destroy(&res);
            }
}

static double makespan_of(const struct wp_sched_params *p)
{
    struct wp_sim_result res;
    if (run(p, &res, NULL))
        return -1;
    double m = res.makespan;
    wp_sim_result_destroy(&res);
    return m;
}

/* Hanayo with one wave (a V: stage r and 2P-1-r on rank r) against 1F1B
 * and against the best V-shaped 1F1B order of the same memory, the
 * zero-bubble paper's ZB-V order with whole backwards (zb-v at tw = 0: its
 * W take no time, so it times as the V-shaped 1F1B), at tf = 1, tb = 2 for
 * M = P to 8P and one M that is not a multiple of P. */
static void test_hanayo_beats_1f1b(void)
{
    for (int P = 4; P <= 16; P *= 2) {
        int ms[] = {P, 2 * P, 4 * P, 8 * P, 2 * P + 1};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            int M = ms[i];
            struct wp_sched_params h = params(WP_SCHED_HANAYO, P, M), f = params(WP_SCHED_1F1B, P, M),
                                   v = params(WP_SCHED_ZBV, P, M);
            double th = makespan_of(&h), tf = makespan_of(&f), tv = makespan_of(&v);
            ok(th > 0 && th < tf && th <= tv + 1e-9,
               "hanayo W=1 P=%d M=%d: makespan %g below 1f1b's %g and not above the V-shaped 1F1B's %g", P, M, th,
               tf, tv);
        }
    }
}

/* Hanayo's waves within the papers' bound of P micro-batches a rank, as
 * generated, at tf = 1, tb = 2, tc = 0, for P = 4, 8, 16 and M = P, 2P, 4P,
 * 8P. No order within that bound can beat M (tf+tb) + (P-1) tb / W: rank
 * P-1's first backward (of its stage 2WP-P) cannot start before the first
 * micro-batch's 2WP forwards and P-1 backwards, at most P micro-batches of
 * forwards fit before it, and its last pass (a backward of its stage P-1)
 * leaves P-1 backwards after it. One wave (the V-shaped 1F1B) meets that
 * bound, and so do the lap groups (order_greedy.c) for W = 2, 3, 4 from
 * M = 2P on; at M = P they come within P tb / 4W of it. So the makespan
 * is below 1F1B's, falls with W (1, 2, 3, 4),
 * is never above the V-shaped 1F1B's of the same memory (zb-v at tw = 0),
 * and the peaks validate within P. At M not a multiple of P every W still
 * beats 1F1B. */
static void test_hanayo_waves_within_p(void)
{
    for (int P = 4; P <= 16; P *= 2) {
        int ms[] = {P, 2 * P, 4 * P, 8 * P, P + 1, 2 * P + 1, 5 * P + 3};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            int M = ms[i], multiple = M % P == 0;
            struct wp_sched_params f = params(WP_SCHED_1F1B, P, M), v = params(WP_SCHED_ZBV, P, M);
            double t1f1b = makespan_of(&f), tv = makespan_of(&v), prev = INFINITY;
            for (int W = 1; W <= 4; W++) {
                struct wp_sched_params h = params(WP_SCHED_HANAYO, P, M);
                h.waves = W;
                struct wp_sim_result res;
                struct wp_validation val;
                if (run(&h, &res, &val))
                    continue;
                double t = res.makespan, bound = M * (h.tf + h.tb) + (P - 1) * h.tb / W;
                ok(t < t1f1b, "hanayo W=%d P=%d M=%d: makespan %g below 1f1b's %g", W, P, M, t, t1f1b);
                ok(val.peak_max <= P + 1e-9, "hanayo W=%d P=%d M=%d: peak %.3g within P", W, P, M, val.peak_max);
                if (multiple) {
                    ok(t < prev && t <= tv + 1e-9,
                       "hanayo W=%d P=%d M=%d: makespan %g below W-1's %g, not above the V-shaped 1F1B's %g", W, P,
                       M, t, prev, tv);
                    double slack = W == 1 || M >= 2 * P ? 0 : P * h.tb / (4 * W);
                    ok(t >= bound - 1e-9 && t <= bound + slack + 1e-9,
                       "hanayo W=%d P=%d M=%d: makespan %g within %g of the bound M(tf+tb) + (P-1)tb/W = %g", W, P, M,
                       t, slack, bound);
                }
                prev = t;
                wp_validation_destroy(&val);
                wp_sim_result_destroy(&res);
            }
        }
    }
}

/* The order search (--order-search N, order_improve.c) within the papers'
 * bound of P micro-batches a rank, at P = 4 where the generated order is
 * not yet the least makespan possible within P, M (tf+tb) + (P-1) tb / W
 * (see test_hanayo_waves_within_p): M = P for two and four waves, and
 * M = 2P + 1, not a multiple of P, for two. A million steps take each to
 * that bound, and every result validates within P. The search is seeded
 * (the same N, the same makespan) and N = 0 leaves the generator's
 * order. */
static void test_hanayo_order_search(void)
{
    const int P = 4;
    static const int cases[][2] = {{P, 2}, {P, 4}, {2 * P + 1, 2}}; /* M, W */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int M = cases[i][0], W = cases[i][1];
        struct wp_sched_params h = params(WP_SCHED_HANAYO, P, M);
        h.waves = W;
        double generated = makespan_of(&h), bound = M * (h.tf + h.tb) + (P - 1) * h.tb / W;
        h.order_search = 1000000;
        struct wp_sim_result res;
        struct wp_validation v;
        if (run(&h, &res, &v))
            continue;
        ok(generated > bound + 1e-9, "hanayo W=%d P=%d M=%d: generated %g, above the bound %g", W, P, M, generated,
           bound);
        is_near(res.makespan, bound, 1e-9, "hanayo W=%d P=%d M=%d, order searched: the least makespan within P, %g",
                W, P, M, bound);
        ok(v.peak_max <= P + 1e-9, "hanayo W=%d P=%d M=%d, order searched: peak %.3g within P", W, P, M, v.peak_max);
        wp_validation_destroy(&v);
        wp_sim_result_destroy(&res);
    }
    struct wp_sched_params a = params(WP_SCHED_HANAYO, P, 2 * P + 1), b = a, none = a, plain = a;
    a.waves = b.waves = none.waves = plain.waves = 2;
    a.order_search = b.order_search = 100000;
    none.order_search = 0;
    double ta = makespan_of(&a), tb = makespan_of(&b), t0 = makespan_of(&none), tp = makespan_of(&plain);
    ok(ta == tb && ta < t0, "hanayo W=2 P=4 M=9: the same search twice gives %g and %g, below none's %g", ta, tb, t0);
    ok(t0 == tp, "hanayo W=2 P=4 M=9: --order-search 0 keeps the generator's order (%g, %g)", t0, tp);
}

/* Hanayo given the memory of 2 W P micro-batches a rank (--max-inflight):
 * from M = 2P on, whether M is a multiple of P or not, every W reaches the
 * interleaved bound M (tf+tb) + (P-1)(tf+tb)/2W (the uniform steady state,
 * order_steady.c; the list-scheduled orders stop short of it), so the
 * makespan falls with W, within
 * the bound the run was given, as the validator counts it. */
static void test_hanayo_waves_with_memory(void)
{
    for (int P = 2; P <= 16; P *= 2) {
        int ms[] = {2 * P, 2 * P + 1, 4 * P, 8 * P};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
            for (int W = 1; W <= 4; W *= 2) {
                struct wp_sched_params p = params(WP_SCHED_HANAYO, P, ms[i]);
                p.waves = W;
                p.max_inflight = 2 * W * P;
                struct wp_sim_result res;
                struct wp_validation v;
                if (run(&p, &res, &v))
                    continue;
                double bound = 3.0 * ms[i] + 3.0 * (P - 1) / (2 * W);
                is_near(res.makespan, bound, 1e-9, "hanayo W=%d P=%d M=%d with memory %d: the interleaved bound %g", W,
                        P, ms[i], p.max_inflight, bound);
                ok(v.peak_max <= p.max_inflight + 1e-9, "hanayo W=%d P=%d M=%d: peak %.3g within %d", W, P, ms[i],
                   v.peak_max, p.max_inflight);
                wp_validation_destroy(&v);
                wp_sim_result_destroy(&res);
            }
    }
}

/* Chimera: its bubble at M = P is the one Hanayo's figure 2 gives for it
 * (T_C = 0: 2 K T_B / ((2P^2 - 2P) T_B + P^2 T_F), K = P^2/2 - P), and with
 * the micro-batches split between its two pipelines it is no slower than
 * 1F1B at any M (Chimera 3.4-3.5: units of P concatenated). */
static void test_chimera(void)
{
    for (int P = 2; P <= 16; P *= 2) {
        struct wp_sched_params c = params(WP_SCHED_CHIMERA, P, P);
        struct wp_sim_result res;
        if (run(&c, &res, NULL) == 0) {
            double K = P * P / 2.0 - P, tf = c.tf, tb = c.tb;
            double want = 2 * K * tb / ((2.0 * P * P - 2 * P) * tb + (double)P * P * tf);
            is_near(res.bubble_ratio, want, 1e-9, "chimera P=%d M=P: bubble %.4f is Hanayo's figure 2's %.4f", P,
                    res.bubble_ratio, want);
            wp_sim_result_destroy(&res);
        }
        int ms[] = {P, 2 * P, 2 * P + 1, 4 * P, 8 * P};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            struct wp_sched_params ch = params(WP_SCHED_CHIMERA, P, ms[i]), f = params(WP_SCHED_1F1B, P, ms[i]);
            double tc = makespan_of(&ch), t1 = makespan_of(&f);
            ok(tc > 0 && tc <= t1 + 1e-9, "chimera P=%d M=%d: makespan %g not above 1f1b's %g", P, ms[i], tc, t1);
        }
    }
}

/* An order built for a slow network is never slower on it than the order
 * built for none (the list-scheduled kinds keep the faster of the two; the
 * closed forms do not depend on tc). */
static void test_orders_hold_up_under_tc(void)
{
    static const int kinds[] = {WP_SCHED_CHIMERA, WP_SCHED_HANAYO, WP_SCHED_HANAYO, WP_SCHED_ZBH1, WP_SCHED_ZBV,
                                WP_SCHED_DUALPIPEV};
    static const double tcs[] = {0.1, 0.5, 2};
    int cases = 0, worse = 0;
    char first[256] = "";
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int P = 2; P <= 8; P *= 2)
            for (int f = 1; f <= 4; f *= 2)
                for (size_t ti = 0; ti < 3; ti++) {
                    int M = f * P;
                    if (kinds[k] == WP_SCHED_DUALPIPEV && M < 2 * P)
                        continue;
                    struct wp_sched_params at_tc = params(kinds[k], P, M), at_zero;
                    at_tc.waves = k == 2 ? 2 : 1;
                    at_tc.tw = kinds[k] == WP_SCHED_ZBH1 || kinds[k] >= WP_SCHED_ZBV ? 1 : 0;
                    at_zero = at_tc;
                    at_tc.tc = tcs[ti];
                    struct wp_schedule a, z;
                    struct wp_err err;
                    if (wp_schedule_generate(&at_tc, &a, &err) || wp_schedule_generate(&at_zero, &z, &err))
                        continue;
                    struct wp_cost_model c;
                    wp_cost_model_default(&c);
                    c.tf = at_tc.tf;
                    c.tb = at_tc.tb;
                    c.tw = at_tc.tw;
                    c.tc = tcs[ti];
                    struct wp_sim_result ra, rz;
                    if (wp_simulate(&a, &c, &ra, &err) == 0 && wp_simulate(&z, &c, &rz, &err) == 0) {
                        cases++;
                        if (ra.makespan > rz.makespan + 1e-9 && !worse++)
                            snprintf(first, sizeof first, "; first: %s W=%d P=%d M=%d tc=%g: %g against %g",
                                     wp_sched_kind_name(kinds[k]), at_tc.waves, P, M, tcs[ti], ra.makespan,
                                     rz.makespan);
                        wp_sim_result_destroy(&ra);
                        wp_sim_result_destroy(&rz);
                    }
                    wp_schedule_destroy(&a);
                    wp_schedule_destroy(&z);
                }
    ok(cases > 100 && worse == 0, "orders built at tc are never slower at tc than those built at tc = 0 (%d cases)%s",
       cases, first);
}

static void test_peak_activations(void)
{
    int P = 4, M = 12;
    struct wp_validation v;
    struct wp_sched_params p = params(WP_SCHED_GPIPE, P, M);
    if (run(&p, NULL, &v) == 0) {
        int all = 1;
        for (int r = 0; r < P; r++)
            all &= fabs(v.peak_activations[r] - M) < 1e-12;
        ok(all, "gpipe holds M activations on every rank");
        wp_validation_destroy(&v);
    }
    for (int policy = 'A'; policy <= 'B'; policy++) {
        p = params(WP_SCHED_1F1B, P, M);
        p.policy = (char)policy;
        if (run(&p, NULL, &v) == 0) {
            int all = 1;
            for (int r = 0; r < P; r++) {
                int k = policy == 'A' ? P - r : 2 * (P - r) - 1;
                all &= fabs(v.peak_activations[r] - (k < M ? k : M)) < 1e-12;
            }
            ok(all, "1f1b policy %c holds %s on rank r", policy, policy == 'A' ? "min(P-r, M)" : "min(2(P-r)-1, M)");
            wp_validation_destroy(&v);
        }
    }
    p = params(WP_SCHED_1F1B, P, M);
    p.max_inflight = 2;
    if (run(&p, NULL, &v) == 0) {
        ok(v.peak_max <= 2 + 1e-12, "1f1b with D = 2 holds at most 2 activations");
        wp_validation_destroy(&v);
    }
    double prev = 0;
    int grows = 1, between = 1;
    for (int k = 1; k <= M; k++) {
        p = params(WP_SCHED_KFKB, P, M);
        p.k = k;
        if (run(&p, NULL, &v))
            continue;
        grows &= v.peak_max >= prev - 1e-12;
        between &= v.peak_max >= P - 1e-12 && v.peak_max <= M + 1e-12;
        prev = v.peak_max;
        wp_validation_destroy(&v);
    }
    ok(grows, "kfkb peak activations grow with k");
    ok(between, "kfkb peak activations lie between 1f1b's (P) and gpipe's (M)");
    for (int W = 1; W <= 4; W *= 2) {
        p = params(WP_SCHED_HANAYO, P, M);
        p.waves = W;
        if (run(&p, NULL, &v) == 0) {
            ok(v.peak_max <= P + 1e-12, "hanayo W=%d within Hanayo's bound P M_a (peak %.3g)", W, v.peak_max);
            wp_validation_destroy(&v);
        }
    }
}

static void test_hanayo_waves(void)
{
    /* Hanayo's closed form (section 3.4, T_B = 2 T_F, T_C = 0, M = P):
     * (2P-2)/(3PW+P-1). Ours is never above it by more than 0.01 (it is
     * below it for one wave: the paper counts bubbles our list scheduling
     * fills) and below 1F1B's. */
    static const int shapes[][2] = {{4, 4}, {8, 8}};
    for (size_t i = 0; i < 2; i++) {
        int P = shapes[i][0], M = shapes[i][1];
        struct wp_sim_result res;
        struct wp_sched_params f1b = params(WP_SCHED_1F1B, P, M);
        if (run(&f1b, &res, NULL))
            continue;
        double bubble_1f1b = res.bubble_ratio, prev = 1;
        wp_sim_result_destroy(&res);
        for (int W = 1; W <= 4; W *= 2) {
            struct wp_sched_params p = params(WP_SCHED_HANAYO, P, M);
            p.waves = W;
            if (run(&p, &res, NULL))
                continue;
            double paper = (2.0 * P - 2) / (3.0 * P * W + P - 1);
            ok(res.bubble_ratio < prev, "hanayo P=%d M=%d: bubble falls from W=%d/2 to W=%d (%.4f)", P, M, W, W,
               res.bubble_ratio);
            ok(res.bubble_ratio < bubble_1f1b, "hanayo P=%d M=%d W=%d: bubble %.4f below 1f1b's %.4f", P, M, W,
               res.bubble_ratio, bubble_1f1b);
            ok(res.bubble_ratio <= paper + 0.01, "hanayo P=%d M=%d W=%d: bubble %.4f not above the paper's %.4f", P,
               M, W, res.bubble_ratio, paper);
            prev = res.bubble_ratio;
            wp_sim_result_destroy(&res);
        }
    }
}

static void test_communication_hiding(void)
{
    /* Ada-Grouper figure 2: with tc comparable to tf, kFkB (k >= 2) overlaps
     * the transfers 1F1B waits for. */
    for (int k = 2; k <= 4; k++) {
        struct wp_sched_params a = params(WP_SCHED_1F1B, 4, 16), b = params(WP_SCHED_KFKB, 4, 16);
        a.tc = b.tc = 1;
        b.k = k;
        struct wp_sim_result ra, rb;
        if (run(&a, &ra, NULL) || run(&b, &rb, NULL))
            continue;
        ok(rb.makespan < ra.makespan, "tc = tf: kfkb k=%d makespan %.4g below 1f1b's %.4g", k, rb.makespan,
           ra.makespan);
        wp_sim_result_destroy(&ra);
        wp_sim_result_destroy(&rb);
    }
    struct wp_sched_params a = params(WP_SCHED_1F1B, 4, 8);
    a.tc = 0.5;
    struct wp_sim_result with, without;
    struct wp_schedule s;
    struct wp_err err;
    if (wp_schedule_generate(&a, &s, &err) == 0) {
        struct wp_cost_model c;
        wp_cost_model_default(&c);
        c.tc = 0.5;
        wp_simulate(&s, &c, &with, &err);
        c.prefetch = 0;
        wp_simulate(&s, &c, &without, &err);
        ok(with.makespan <= without.makespan, "prefetching receives is never slower (%.4g vs %.4g)", with.makespan,
           without.makespan);
        wp_sim_result_destroy(&with);
        wp_sim_result_destroy(&without);
        wp_schedule_destroy(&s);
    }
}

static void test_grid(void)
{
    static const int ranks[] = {1, 2, 3, 4, 6, 8, 16};
    static const int micro[] = {1, 2, 3, 5, 8, 16, 33, 64};
    int generated = 0, failures = 0;
    char first[WP_ERR_MAX] = "";
    for (size_t pi = 0; pi < sizeof ranks / sizeof ranks[0]; pi++)
        for (size_t mi = 0; mi < sizeof micro / sizeof micro[0]; mi++)
            for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++)
                for (int x = 1; x <= 4 && wp_sched_kind_generated((enum wp_sched_kind)kind); x++) {
                    int P = ranks[pi], M = micro[mi];
                    struct wp_sched_params p = params(kind, P, M);
                    if (kind == WP_SCHED_KFKB)
                        p.k = x == 4 ? M : x <= M ? x : M;
                    else if (kind == WP_SCHED_HANAYO)
                        p.waves = x;
                    else if (wp_sched_kind_has_chunks((enum wp_sched_kind)kind))
                        p.chunks = x;
                    else if (kind == WP_SCHED_1F1B)
                        p.policy = x % 2 ? 'A' : 'B';
                    else if (x > 1)
                        continue;
                    int looped = kind == WP_SCHED_INTERLEAVED || (kind == WP_SCHED_ZBH1 && p.chunks > 1);
                    if ((looped && M % P) || (kind == WP_SCHED_CHIMERA && P % 2) ||
                        (kind == WP_SCHED_DUALPIPEV && M < 2 * P))
                        continue;
                    struct wp_schedule s;
                    struct wp_validation v;
                    struct wp_err err = {""};
                    generated++;
                    if (wp_schedule_generate(&p, &s, &err) || wp_schedule_validate(&s, &v, &err)) {
                        if (!failures++)
                            snprintf(first, sizeof first, "%s P=%d M=%d x=%d: %s", wp_sched_kind_name(kind), P, M, x,
                                     err.msg);
                        continue;
                    }
                    wp_validation_destroy(&v);
                    wp_schedule_destroy(&s);
                }
    ok(failures == 0, "every kind validates over P <= 16, M <= 64 and each k, W, V, policy (%d schedules)%s%s",
       generated, failures ? "; first failure: " : "", first);
}

static void test_replication(void)
{
    static const int layouts[][4] = {{2, 1, 2, 0}, {1, 3, 0, 0}, {3, 1, 0, 0}, {2, 3, 1, 0}, {4, 0, 0, 0}};
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        int reps[4], n = 0, P = 0;
        for (int j = 0; j < 4 && layouts[i][j]; j++) {
            reps[n++] = layouts[i][j];
            P += layouts[i][j];
        }
        for (int kind = WP_SCHED_GPIPE; kind <= WP_SCHED_KFKB; kind++) {
            struct wp_sched_params p = params(kind, P, 6);
            p.k = 2;
            p.replicas = reps;
            p.nreplicas = n;
            struct wp_sim_result res;
            if (run(&p, &res, NULL) == 0) {
                ok(res.makespan > 0, "%s with replicas %d%s%s%s%s%s validates (%s)", wp_sched_kind_name(kind), reps[0],
                   n > 1 ? "," : "", n > 1 ? (char[]){(char)('0' + reps[1]), 0} : "", n > 2 ? "," : "",
                   n > 2 ? (char[]){(char)('0' + reps[2]), 0} : "", "", "split/concat between stages");
                wp_sim_result_destroy(&res);
            }
        }
    }
    /* DP as a special case: one stage on every rank, gradients allreduced. */
    int dp[1] = {4};
    struct wp_sched_params p = params(WP_SCHED_1F1B, 4, 4);
    p.replicas = dp;
    p.nreplicas = 1;
    struct wp_schedule s;
    struct wp_err err;
    if (wp_schedule_generate(&p, &s, &err) == 0) {
        int ar = 0, msgs = 0;
        for (int r = 0; r < 4; r++)
            for (int i = 0; i < s.lists[r].count; i++) {
                ar += s.lists[r].actions[i].op == WP_OP_ALLREDUCE;
                msgs += wp_op_is_send(s.lists[r].actions[i].op);
            }
        ok(ar == 4 && msgs == 0, "one stage on 4 ranks is data parallelism: 4 ALLREDUCE, no messages");
        wp_schedule_destroy(&s);
    }
    int bad[2] = {2, 1};
    p = params(WP_SCHED_1F1B, 4, 4);
    p.replicas = bad;
    p.nreplicas = 2;
    ok(wp_schedule_generate(&p, &s, &err) == -1, "replicas that do not add up to P are rejected");
    has_substr(err.msg, "replicas add up to 3 ranks, but --ranks is 4", "and the sums are named");
    p = params(WP_SCHED_HANAYO, 3, 4);
    p.replicas = bad;
    p.nreplicas = 2;
    ok(wp_schedule_generate(&p, &s, &err) == -1, "replication with hanayo is rejected");
    p = params(WP_SCHED_CHIMERA, 3, 4);
    ok(wp_schedule_generate(&p, &s, &err) == -1, "chimera with an odd P is rejected");
    has_substr(err.msg, "even number of ranks", "and says why");
    p = params(WP_SCHED_KFKB, 4, 4);
    p.k = 5;
    ok(wp_schedule_generate(&p, &s, &err) == -1, "kfkb with k > M is rejected");
}

static void test_unequal_stages(void)
{
    double costs[4] = {1, 2, 1, 1};
    struct wp_sched_params g = params(WP_SCHED_GPIPE, 4, 8), f = params(WP_SCHED_1F1B, 4, 8);
    g.stage_cost_scale = f.stage_cost_scale = costs;
    g.nstage_costs = f.nstage_costs = 4;
    struct wp_sim_result rg, rf;
    if (run(&g, &rg, NULL) || run(&f, &rf, NULL))
        return;
    /* GPipe: (sum c + (M-1) max c)(tf+tb) */
    is_near(rg.makespan, (5 + 7 * 2) * 3.0, 1e-12, "gpipe with stage costs 1,2,1,1: (sum c + (M-1) max c)(tf+tb)");
    ok(rf.makespan <= rg.makespan + 1e-12 && rf.makespan >= 8 * 2 * 3.0,
       "1f1b with unequal stages: between the bottleneck's work and gpipe (%.4g)", rf.makespan);
    wp_sim_result_destroy(&rg);
    wp_sim_result_destroy(&rf);
}

/* Ranks sharing cores: one core runs all the work back to back; C cores
 * never beat total work / C; as many cores as ranks is the plain walk. */
static void test_shared_cores(void)
{
    struct wp_sched_params p = params(WP_SCHED_1F1B, 4, 8);
    struct wp_schedule s;
    struct wp_err err;
    if (wp_schedule_generate(&p, &s, &err)) {
        ok(0, "generate (%s)", err.msg);
        return;
    }
    double work = 4.0 * 8 * (p.tf + p.tb);
    struct wp_cost_model c;
    wp_cost_model_default(&c);
    struct wp_sim_result one, two, all, plain;
    c.cores = 1;
    wp_simulate(&s, &c, &one, &err);
    c.cores = 2;
    wp_simulate(&s, &c, &two, &err);
    c.cores = 4;
    wp_simulate(&s, &c, &all, &err);
    c.cores = 0;
    wp_simulate(&s, &c, &plain, &err);
    is_near(one.makespan, work, 1e-9, "4 ranks on 1 core: the makespan is the total work %g", work);
    ok(two.makespan >= work / 2 - 1e-9 && two.makespan < one.makespan,
       "4 ranks on 2 cores: between work/2 and one core's (%g)", two.makespan);
    is_near(all.makespan, plain.makespan, 1e-12, "as many cores as ranks: the plain simulation's makespan");
    wp_sim_result_destroy(&one);
    wp_sim_result_destroy(&two);
    wp_sim_result_destroy(&all);
    wp_sim_result_destroy(&plain);
    wp_schedule_destroy(&s);
}

/* ---- hand-broken lists --------------------------------------------------------------- */

static int find(const struct wp_schedule *s, int rank, int op, int stage, int mb)
{
    for (int i = 0; i < s->lists[rank].count; i++) {
        const struct wp_action *a = &s->lists[rank].actions[i];
        if (a->op == op && a->stage == stage && a->microbatch == mb)
            return i;
    }
    return -1;
}

static void expect_broken(struct wp_schedule *s, const char *what, const char *fragment)
{
    struct wp_validation v;
    struct wp_sim_result res;
    struct wp_cost_model cost;
    struct wp_err err = {""}, one_walk_err = {""};
    ok(wp_schedule_validate(s, &v, &err) == -1, "validator rejects %s", what);
    has_substr(err.msg, fragment, "%s: the message names it", what);
    wp_cost_model_default(&cost);
    ok(wp_validate_and_simulate(s, &cost, &v, &res, &one_walk_err) == -1 && strcmp(err.msg, one_walk_err.msg) == 0,
       "%s: validating and simulating in one walk rejects it with the same message", what);
}

/* Whether two validations and simulations agree to the bit (events too). */
static int same_outcome(const struct wp_validation *v1, const struct wp_sim_result *r1,
                        const struct wp_validation *v2, const struct wp_sim_result *r2)
{
    if (v1->actions != v2->actions || v1->messages != v2->messages || v1->peak_max != v2->peak_max ||
        r1->makespan != r2->makespan || r1->bubble_ratio != r2->bubble_ratio || r1->peak_max != r2->peak_max ||
        r1->nevents != r2->nevents)
        return 0;
    for (int r = 0; r < v1->nranks; r++)
        if (v1->peak_activations[r] != v2->peak_activations[r] || r1->busy[r] != r2->busy[r] ||
            r1->peak_activations[r] != r2->peak_activations[r])
            return 0;
    for (long i = 0; i < r1->nevents; i++) { /* field by field: an event has padding */
        const struct wp_sim_event *a = &r1->events[i], *b = &r2->events[i];
        if (a->rank != b->rank || a->op != b->op || a->stage != b->stage || a->microbatch != b->microbatch ||
            a->peer != b->peer || a->start != b->start || a->end != b->end)
            return 0;
    }
    return 1;
}

/* wp_validate_and_simulate against wp_schedule_validate, then
 * wp_simulate: every kind, with messages that take time and a timeline,
 * with replicas, and on shared cores (which walks apart). */
static void test_validate_and_simulate(void)
{
    static const int ranks[] = {1, 2, 3, 4, 8};
    static const int micro[] = {1, 3, 8, 16};
    static const int reps[] = {2, 1, 3};
    int compared = 0, differ = 0;
    char first[WP_ERR_MAX] = "";
    for (size_t pi = 0; pi < sizeof ranks / sizeof ranks[0]; pi++)
        for (size_t mi = 0; mi < sizeof micro / sizeof micro[0]; mi++)
            for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++)
                for (int variant = 0; variant < 3 && wp_sched_kind_generated((enum wp_sched_kind)kind); variant++) {
                    int P = variant == 1 ? 6 : ranks[pi], M = micro[mi];
                    if ((kind == WP_SCHED_INTERLEAVED && M % P) || (kind == WP_SCHED_CHIMERA && P % 2) ||
                        (kind == WP_SCHED_DUALPIPEV && M < 2 * P) || (variant == 1 && kind > WP_SCHED_KFKB))
                        continue;
                    struct wp_sched_params p = params(kind, P, M);
                    if (variant == 1) { /* replicas 2, 1, 3 */
                        p.replicas = reps;
                        p.nreplicas = 3;
                    }
                    struct wp_cost_model cost;
                    wp_cost_model_default(&cost);
                    cost.tc = 0.25;
                    cost.record_events = 1;
                    if (variant == 2)
                        cost.cores = 1;
                    struct wp_schedule s;
                    struct wp_validation v1, v2;
                    struct wp_sim_result r1, r2;
                    struct wp_err err = {""};
                    if (wp_schedule_generate(&p, &s, &err))
                        continue;
                    compared++;
                    int rc1 = wp_schedule_validate(&s, &v1, &err) || wp_simulate(&s, &cost, &r1, &err);
                    int rc2 = wp_validate_and_simulate(&s, &cost, &v2, &r2, &err);
                    if (rc1 || rc2 || !same_outcome(&v1, &r1, &v2, &r2)) {
                        if (!differ++)
                            snprintf(first, sizeof first, "%s P=%d M=%d variant %d (%s)", wp_sched_kind_name(kind), P,
                                     M, variant, err.msg);
                    }
                    if (!rc1) {
                        wp_validation_destroy(&v1);
                        wp_sim_result_destroy(&r1);
                    }
                    if (!rc2) {
                        wp_validation_destroy(&v2);
                        wp_sim_result_destroy(&r2);
                    }
                    wp_schedule_destroy(&s);
                }
    ok(differ == 0, "validating and simulating in one walk gives what the two calls give (%d schedules)%s%s", compared,
       differ ? "; first difference: " : "", first);
}

static void test_broken(void)
{
    struct wp_sched_params p = params(WP_SCHED_1F1B, 2, 2);
    struct wp_schedule s;
    struct wp_err err;
    /* rank 0: F0.0 SEND_ACT0.0>1 F0.1 SEND_ACT0.1>1 RECV_GRAD0.0<1 B0.0 RECV_GRAD0.1<1 B0.1 STEP0 */
    wp_schedule_generate(&p, &s, &err);
    int i = find(&s, 1, WP_OP_RECV_ACT, 1, 1);
    memmove(&s.lists[1].actions[i], &s.lists[1].actions[i + 1], (size_t)(s.lists[1].count - i - 1) * sizeof(struct wp_action));
    s.lists[1].count--;
    expect_broken(&s, "a dropped receive", "rank 0 step 3: SEND_ACT stage 0 micro-batch 1 to rank 1 is never received");
    wp_schedule_destroy(&s);

    wp_schedule_generate(&p, &s, &err);
    int a = find(&s, 0, WP_OP_SEND_ACT, 0, 0), b = find(&s, 0, WP_OP_SEND_ACT, 0, 1);
    struct wp_action tmp = s.lists[0].actions[a];
    s.lists[0].actions[a] = s.lists[0].actions[b];
    s.lists[0].actions[b] = tmp;
    expect_broken(&s, "swapped sends", "out of order");
    wp_schedule_destroy(&s);

    wp_schedule_generate(&p, &s, &err);
    a = find(&s, 0, WP_OP_RECV_GRAD, 0, 0);
    b = find(&s, 0, WP_OP_F, 0, 0);
    tmp = s.lists[0].actions[a];
    memmove(&s.lists[0].actions[b + 1], &s.lists[0].actions[b], (size_t)(a - b) * sizeof(struct wp_action));
    s.lists[0].actions[b] = tmp;
    expect_broken(&s, "a receive moved before the send it waits for (deadlock)",
                  "deadlock: rank 0 step 0 waits at RECV_GRAD stage 0 micro-batch 0 from rank 1");
    wp_schedule_destroy(&s);

    wp_schedule_generate(&p, &s, &err);
    a = find(&s, 1, WP_OP_RECV_ACT, 1, 0);
    b = find(&s, 1, WP_OP_F, 1, 0);
    tmp = s.lists[1].actions[a];
    s.lists[1].actions[a] = s.lists[1].actions[b];
    s.lists[1].actions[b] = tmp;
    expect_broken(&s, "a forward before its input", "rank 1 step 0: F stage 1 micro-batch 0: runs before its input activation arrived");
    wp_schedule_destroy(&s);

    wp_schedule_generate(&p, &s, &err);
    a = find(&s, 1, WP_OP_B, 1, 1);
    s.lists[1].actions[a].microbatch = 0;
    expect_broken(&s, "a duplicated backward", "runs twice");
    wp_schedule_destroy(&s);

    wp_schedule_generate(&p, &s, &err);
    a = find(&s, 0, WP_OP_SEND_ACT, 0, 1);
    s.lists[0].actions[a].peer = 0;
    expect_broken(&s, "a send to itself", "names an invalid peer");
    wp_schedule_destroy(&s);

    /* lists long enough to be checked on two threads: a fault in either half */
    struct wp_sched_params big = params(WP_SCHED_1F1B, 64, 8192);
    for (int rank = 10; rank < 64; rank += 40) {
        wp_schedule_generate(&big, &s, &err);
        a = find(&s, rank, WP_OP_B, rank, 1);
        s.lists[rank].actions[a].microbatch = 0;
        char names[64];
        snprintf(names, sizeof names, "B stage %d micro-batch 0: runs twice", rank);
        expect_broken(&s, rank < 32 ? "a duplicated backward in the first half of 2M actions"
                                    : "a duplicated backward in the second half of 2M actions",
                      names);
        wp_schedule_destroy(&s);
    }

    /* the walk runs beside the checks there, on lists not yet checked: a
     * stage out of range must not take it (or the simulator) out of bounds */
    wp_schedule_generate(&big, &s, &err);
    a = find(&s, 50, WP_OP_F, 50, 7);
    s.lists[50].actions[a].stage = 100000;
    expect_broken(&s, "a forward of a stage out of range in 2M actions", "stage or micro-batch out of range");
    wp_schedule_destroy(&s);
    wp_schedule_generate(&big, &s, &err);
    s.lists[3].actions[s.lists[3].count - 1].stage = 70000; /* its STEP */
    expect_broken(&s, "a STEP of a stage out of range in 2M actions", "stage or micro-batch out of range");
    wp_schedule_destroy(&s);

    wp_schedule_generate(&p, &s, &err);
    s.activation_bound[0] = 1;
    expect_broken(&s, "a peak above the documented bound", "rank 0 holds 2 activations at its peak, above the bound 1");
    wp_schedule_destroy(&s);
}

/* wp_makespan_bound against the simulator: per-stage costs drawn at random
 * (uneven stages, slow links, allreduces) on the one-stage-a-rank kinds,
 * with and without replicas: never above the makespan; equal to it for a
 * balanced 1F1B without links ((M + P - 1)(tf + tb)); 0 for chimera. */
static void test_makespan_bound(void)
{
    unsigned seed = 12345;
    int below = 1, cases = 0, tightest_pct = 100;
    const int kinds[] = {WP_SCHED_GPIPE, WP_SCHED_1F1B, WP_SCHED_KFKB, WP_SCHED_ZBH1};
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++)
        for (int P = 2; P <= 6; P += 2)
            for (int M = 2; M <= 12; M += 5)
                for (int trial = 0; trial < 4; trial++) {
                    struct wp_sched_params p = params(kinds[ki], P, M);
                    p.k = 2 < M ? 2 : 1;
                    struct wp_schedule s;
                    struct wp_err err = {""};
                    if (wp_schedule_generate(&p, &s, &err)) {
                        ok(0, "%s P=%d M=%d generates (%s)", wp_sched_kind_name(p.kind), P, M, err.msg);
                        continue;
                    }
                    double c[5][8];
                    for (int a = 0; a < 5; a++)
                        for (int st = 0; st < 8; st++) {
                            seed = seed * 1103515245u + 12345u;
                            c[a][st] = (a == 3 && trial == 0 ? 0 : 0.2) + (double)(seed >> 16 & 0x7fff) / 32768.0;
                        }
                    struct wp_rank_work work[8];
                    int applies = wp_makespan_bound_prepare(&s, work);
                    double zero[8] = {0};
                    const double *w = s.split_backward ? c[2] : zero; /* unsplit: B holds W */
                    const double *ar = trial == 3 ? c[4] : NULL;
                    double bound = wp_makespan_bound(&s, work, applies, c[0], c[1], w, c[3], ar);
                    struct wp_cost_model cost;
                    wp_cost_model_per_stage(&cost, c[0], c[1], w, c[3], ar);
                    struct wp_sim_result res;
                    if (applies && wp_simulate(&s, &cost, &res, &err) == 0) {
                        cases++;
                        below &= bound <= res.makespan * (1 + 1e-12) && bound > 0;
                        int pct = (int)(100 * bound / res.makespan);
                        tightest_pct = pct < tightest_pct ? pct : tightest_pct;
                        wp_sim_result_destroy(&res);
                    } else {
                        ok(0, "%s P=%d M=%d: the bound applies and the schedule simulates", wp_sched_kind_name(p.kind),
                           P, M);
                    }
                    wp_schedule_destroy(&s);
                }
    ok(below && cases == 4 * 3 * 3 * 4,
       "makespan bound never above the simulated makespan nor 0 (%d random cases, lowest at %d %% of it)", cases,
       tightest_pct);

    struct wp_sched_params p = params(WP_SCHED_1F1B, 4, 8);
    struct wp_schedule s;
    struct wp_err err = {""};
    if (wp_schedule_generate(&p, &s, &err) == 0) {
        double f[4] = {1, 1, 1, 1}, b[4] = {2, 2, 2, 2}, w[4] = {0}, link[4] = {0};
        struct wp_rank_work work[4];
        int applies = wp_makespan_bound_prepare(&s, work);
        ok(applies && fabs(wp_makespan_bound(&s, work, applies, f, b, w, link, NULL) - (8 + 4 - 1) * 3.0) < 1e-9,
           "balanced 1F1B P=4 M=8: the bound is (M + P - 1)(tf + tb) = 33");
        wp_schedule_destroy(&s);
    }
    p = params(WP_SCHED_CHIMERA, 4, 8);
    if (wp_schedule_generate(&p, &s, &err) == 0) {
        struct wp_rank_work work[4];
        ok(wp_makespan_bound_prepare(&s, work) == 0, "chimera (two stages a rank): no bound");
        wp_schedule_destroy(&s);
    }
}

int main(void)
{
    test_closed_forms();
    test_kfkb_limits();
    test_interleaved();
    test_bfs();
    test_hop_bound();
    test_zero_bubble();
    test_zero_bubble_v();
    test_hanayo_beats_1f1b();
    test_hanayo_waves_within_p();
    test_hanayo_waves_with_memory();
    test_hanayo_order_search();
    test_chimera();
    test_orders_hold_up_under_tc();
    test_peak_activations();
    test_hanayo_waves();
    test_communication_hiding();
    test_grid();
    test_replication();
    test_unequal_stages();
    test_shared_cores();
    test_broken();
    test_validate_and_simulate();
    test_makespan_bound();
    return tap_done();
}
