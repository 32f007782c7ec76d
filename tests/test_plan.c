/* The DAPPLE planner: placement policies on a small grid, data parallelism
 * and straight pipelines against closed forms, and DAPPLE's table V: for
 * VGG-19, GNMT-16, BERT-48, XLNet-36, AmoebaNet-36 (DAPPLE's own V100
 * profiles) and ResNet-50 (PipeDream's) on configurations A, B and C, the
 * plan either has the paper's shape and split position (within two layers)
 * or, where it differs, the simulator shows it is not slower than the
 * paper's plan on the same costs; and it is never slower by the simulator
 * than the paper's plan, data parallelism, a straight pipeline or even
 * splits. */
#include <stdlib.h>
#include <string.h>

#include "bench/dapple_table5.h"
#include "plan/plan.h"
#include "plan/plan_search.h"
#include "tap.h"
#include "topo/cluster_io.h"

static char srcdir[512];

/* ---- placement ---- */

static void placement_tests(void)
{
    int used[3] = {0, 0, 0};
    struct wp_plan_device d[24];
    ok(wp_place_take(WP_PLACE_APPEND, used, 3, 4, 2, d) == 0 && used[0] == 2, "append: 2 GPUs on node 0");
    ok(wp_place_take(WP_PLACE_FRESH, used, 3, 4, 3, d) == 0 && used[1] == 3 && d[0].node == 1 && d[2].gpu == 2,
       "fresh: 3 GPUs from the unused node 1");
    ok(wp_place_take(WP_PLACE_APPEND, used, 3, 4, 2, d) == 0 && used[1] == 4 && used[0] == 3,
       "append: the fullest partly used node first (node 1), then node 0");
    ok(wp_place_take(WP_PLACE_SCATTER, used, 3, 4, 1, d) == 0 && used[0] == 4, "scatter: round the used nodes");
    int fresh[2] = {0, 0};
    ok(wp_place_take(WP_PLACE_SCATTER, fresh, 2, 8, 6, d) == 0 && fresh[0] == 3 && fresh[1] == 3,
       "scatter on fresh nodes: 6 GPUs as 3 + 3");
    struct wp_stage_shape sh;
    wp_stage_shape_of(d, 6, &sh);
    ok(sh.nodes_spanned == 2 && sh.max_per_node == 3 && sh.only_node == -1, "its shape: 2 nodes, 3 per node");
    ok(wp_place_take(WP_PLACE_REST, fresh, 2, 8, 0, d) == 0 && fresh[0] == 8 && fresh[1] == 8,
       "rest takes every free GPU");
    ok(wp_place_take(WP_PLACE_APPEND, fresh, 2, 8, 1, d) == -1, "nothing left: -1");
}

/* ---- closed forms on a synthetic chain ---- */

static void closed_form_tests(void)
{
    struct wp_layer_table t;
    struct wp_err err;
    wp_layer_table_init(&t);
    t.profile_batch = 4;
    for (int i = 0; i < 8; i++) {
        struct wp_layer l = {.name = "l", .forward_s = 0.010, .backward_s = 0.020, .activation_bytes = 1e6,
                             .parameter_bytes = 4e6, .optimizer_bytes = 8e6};
        wp_layer_table_append(&t, &l, &err);
    }
    struct wp_plan_hw hw = {"grid", "test GPU", 2, 2, {1e-6, 1 / 100e9}, {1e-5, 1 / 10e9}, 8e9, 0};
    struct wp_plan_model m;
    ok(wp_plan_model_init(&m, &t, &hw, 32, &err) == 0, "model");
    ok(m.grad_overlap, "gradient buckets overlapped with the backward by default, as wavepipe run's");
    /* data parallelism: 4 replicas x 4 = 16 per micro-batch, M = 2;
     * L = M (F + B) + AR, AR hierarchical over 2 nodes x 2 GPUs (without
     * the overlap, DAPPLE's formula) */
    m.grad_overlap = 0;
    int all = 8, four = 4;
    struct wp_plan p;
    wp_plan_init(&p);
    ok(wp_plan_fixed(&m, 1, &all, &four, &p, &err) == 0, "DP plan");
    double P = 8 * 4e6;
    double ar = 2 * (2 - 1) * (1e-6 + P / 2 / 100e9) + 2 * (2 - 1) * (1e-5 + P / 2 / 10e9);
    is_int(p.microbatches, 2, "DP: M = 32 / (4 x 4)");
    is_near(p.stages[0].allreduce_s, ar, 1e-12, "DP: hierarchical allreduce");
    is_near(p.latency.total_s, 2 * 8 * 0.030 + ar, 1e-9, "DP: L = M (F + B) + AR");
    double sim;
    err.msg[0] = 0;
    ok(wp_plan_simulate(&m, &p, 1, 0, &sim, NULL, &err) == 0, "DP simulated (%s)", err.msg);
    is_near(sim, p.latency.total_s, 1e-9, "DP: the simulator agrees");
    wp_plan_destroy(&p);
    /* overlapped, 25 MiB buckets: the last backward (8 layers of 0.020 s)
     * finishes layers 7..1 (28 MB >= 26.2 MB) at 0.14 s, their sum takes
     * 2 (1us + 14 MB / 100 GB/s) + 2 (10us + 14 MB / 10 GB/s) = 3.1 ms,
     * done before layer 0 ends the pass at 0.16 s; layer 0's 4 MB then sum
     * in 2 (1us + 2 MB / 100 GB/s) + 2 (10us + 2 MB / 10 GB/s) = 0.462 ms:
     * only that counts */
    m.grad_overlap = 1;
    wp_plan_init(&p);
    wp_plan_fixed(&m, 1, &all, &four, &p, &err);
    double last = 2 * (1e-6 + 4e6 / 2 / 100e9) + 2 * (1e-5 + 4e6 / 2 / 10e9);
    is_near(p.stages[0].allreduce_s, last, 1e-12, "DP overlapped: only the last bucket's 0.462 ms counts");
    is_near(p.latency.total_s, 2 * 8 * 0.030 + last, 1e-9, "DP overlapped: L = M (F + B) + the exposed part");
    ok(wp_plan_simulate(&m, &p, 1, 0, &sim, NULL, &err) == 0, "DP overlapped simulated (%s)", err.msg);
    is_near(sim, p.latency.total_s, 1e-9, "DP overlapped: the simulator agrees");
    wp_plan_destroy(&p);
    /* straight: 4 stages of 2 layers, micro-batch 4, M = 8:
     * 1F1B's (M + S - 1)(F + B) plus 3 boundary transfers each way */
    int two[4] = {2, 2, 2, 2}, one[4] = {1, 1, 1, 1};
    wp_plan_init(&p);
    ok(wp_plan_fixed(&m, 4, two, one, &p, &err) == 0, "straight plan");
    double send = 1e-6 + 1e6 / 100e9; /* stage 0 -> 1 on node 0: one NVLink-class link */
    ok(p.stages[0].only_node == 0 && p.stages[2].only_node == 1, "stages 0-1 on node 0, 2-3 on node 1");
    is_near(p.stages[0].send_s, send, 1e-12, "intra-node boundary");
    is_near(p.stages[1].send_s, 1e-5 + 1e6 / 10e9, 1e-12, "inter-node boundary");
    ok(p.latency.total_s >= (8 + 4 - 1) * 0.060 && p.latency.total_s < (8 + 4 - 1) * 0.060 + 0.01,
       "straight: L = %.4f s, about (M + S - 1)(F + B) = %.4f s", p.latency.total_s, 11 * 0.060);
    wp_plan_destroy(&p);
    /* memory: weights + gradients + Adam state 16 B per float parameter, 8
     * layers = 8 x (8 + 8) MB = 128 MB per DP replica; a 100 MB limit
     * rules DP out */
    m.hw.memory_bytes = 100e6;
    wp_plan_init(&p);
    ok(wp_plan_dapple(&m, &p, &err) == 0 && p.nstages > 1, "100 MB per GPU: a pipeline (%s)", err.msg);
    ok(p.peak_memory_bytes <= 100e6, "and it fits: %.0f bytes", p.peak_memory_bytes);
    wp_plan_destroy(&p);
    m.hw.memory_bytes = 20e6;
    wp_plan_init(&p);
    ok(wp_plan_dapple(&m, &p, &err) == -1, "20 MB per GPU: no plan");
    has_substr(err.msg, "needs at least 7 such devices", "the error says how many devices would do");
    wp_plan_destroy(&p);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

/* ---- Ada-Grouper's kFkB candidates ---- */

/* On a pipeline plan: for each k the micro-batch is the largest divisor of
 * the global batch whose k-fold warm-up fits, so it never grows with k, it
 * fits, and the next larger divisor does not. */
static void kfkb_tests(void)
{
    struct wp_layer_table t;
    struct wp_err err;
    wp_layer_table_init(&t);
    t.profile_batch = 1;
    for (int i = 0; i < 8; i++) {
        struct wp_layer l = {.name = "l", .forward_s = 0.010, .backward_s = 0.020, .activation_bytes = 4e6,
                             .parameter_bytes = 1e6, .optimizer_bytes = 2e6};
        wp_layer_table_append(&t, &l, &err);
    }
    struct wp_plan_hw hw = {"grid", "test GPU", 4, 1, {1e-6, 1 / 100e9}, {1e-5, 1 / 10e9}, 140e6, 0};
    struct wp_plan_model m;
    wp_plan_model_init(&m, &t, &hw, 64, &err);
    int two[4] = {2, 2, 2, 2}, one[4] = {1, 1, 1, 1};
    struct wp_plan p;
    wp_plan_init(&p);
    ok(wp_plan_fixed(&m, 4, two, one, &p, &err) == 0, "a 4-stage pipeline, 140 MB per GPU");
    int rc = wp_plan_kfkb_candidates(&m, &p, &err);
    ok(rc == 0 && p.nkfkb == 4, "kFkB candidates for k = 1..4 (%d)", p.nkfkb);
    /* stage 0 holds k (S - 0) = 4k micro-batches of 2 layers x 4 MB x b
     * besides 8 MB of weights: b = 4, 2, 1, 1 for k = 1..4 */
    static const int want[4] = {4, 2, 1, 1};
    for (int i = 0; i < p.nkfkb && i < 4; i++)
        is_int(p.kfkb[i].micro_batch, want[i], "k = %d: micro-batch %d by hand", p.kfkb[i].k, want[i]);
    double f[4], b[4], send[4], ar[4], peak;
    for (int i = 0; i < p.nkfkb; i++) {
        const struct wp_kfkb_candidate *c = &p.kfkb[i];
        ok(64 % c->micro_batch == 0 && c->microbatches == 64 / c->micro_batch && c->microbatches >= c->k,
           "k = %d: micro-batch %d divides the global batch, M = %d >= k", c->k, c->micro_batch, c->microbatches);
        ok(c->peak_memory_bytes <= 140e6, "k = %d: fits (%.1f MB)", c->k, c->peak_memory_bytes / 1e6);
        int bigger = c->micro_batch * 2;
        if (bigger <= 64 && 64 / bigger >= c->k) {
            wp_plan_costs_at(&m, &p, bigger, c->k, p.policy, f, b, send, ar, &peak);
            ok(peak > 140e6, "k = %d: micro-batch %d would not fit (%.1f MB)", c->k, bigger, peak / 1e6);
        }
        if (i > 0)
            ok(c->micro_batch <= p.kfkb[i - 1].micro_batch, "k = %d: the micro-batch does not grow with k", c->k);
        double sim;
        wp_plan_simulate(&m, &p, c->k, c->micro_batch, &sim, NULL, &err);
        is_near(c->predicted_iter_s, sim, 1e-12, "k = %d: predicted by the simulator", c->k);
    }
    wp_plan_destroy(&p);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

/* ---- DAPPLE table V (bench/dapple_table5.c) ---- */

static double simulated(const struct wp_plan_model *m, struct wp_plan *p)
{
    double s = -1;
    struct wp_err err;
    if (wp_plan_simulate(m, p, 1, 0, &s, NULL, &err))
        printf("# simulate: %s\n", err.msg);
    return s;
}

static void table_case(const struct dapple_case *c)
{
    char name[160];
    struct wp_err err;
    snprintf(name, sizeof name, "%s on %c", strrchr(c->file, '/') + 1, c->config - 'a' + 'A');
    struct wp_layer_table t;
    struct wp_plan_hw hw;
    struct wp_plan_model m;
    if (!ok(dapple_load(srcdir, c, 0, &t, &hw, &err) == 0, "%s: read (%s)", name, err.msg))
        return;
    memset(&m, 0, sizeof m);
    if (!ok(wp_plan_model_init(&m, &t, &hw, c->global_batch, &err) == 0, "%s: cluster (%s)", name, err.msg)) {
        wp_layer_table_destroy(&t);
        return;
    }
    struct wp_plan best, paper;
    wp_plan_init(&best);
    wp_plan_init(&paper);
    ok(wp_plan_dapple(&m, &best, &err) == 0, "%s: planned (%s)", name, err.msg);
    char shape[256];
    wp_plan_shape(&best, shape, sizeof shape);
    int our_split = best.nstages == 2 ? dapple_blocks_in(&t, c->block, 0, best.stages[0].last_layer) : 0;
    double ours = simulated(&m, &best);
    ok(dapple_paper_plan(&m, c, &paper, &err) == 0, "%s: the paper's plan %s on our costs (%s)", name, c->paper, err.msg);
    double theirs = simulated(&m, &paper);
    int same_kind = strcmp(shape, c->paper) == 0;
    int same_split = c->split == 0 || (our_split >= c->split - 2 && our_split <= c->split + 2);
    printf("# %s: ours %s", name, shape);
    if (best.nstages == 2)
        printf(" split %d:%d", our_split, dapple_blocks_in(&t, c->block, best.stages[1].first_layer, t.nlayers - 1));
    printf(" simulated %.4f s (L %.4f s, fits %d); paper %s", ours, best.latency.total_s, best.fits, c->paper);
    if (c->split)
        printf(" split %d", c->split);
    printf(" simulated %.4f s%s\n", theirs, paper.fits ? "" : " (does not fit in 16 GB on our memory model)");
    if (same_kind && same_split)
        ok(1, "%s: the paper's plan, %s%s", name, c->paper, c->split ? " with its split within 2 blocks" : "");
    else
        ok(ours <= theirs * (1 + 1e-9) || !paper.fits,
           "%s: %s instead of the paper's %s, and not slower by the simulator (%.4f s vs %.4f s%s)", name, shape,
           c->paper, ours, theirs, paper.fits ? "" : "; the paper's does not fit on our memory model");
    ok(!paper.fits || ours <= theirs * (1 + 1e-9), "%s: not slower than the paper's plan by the simulator", name);
    /* never slower than DP, straight or even splits */
    int G = wp_plan_hw_devices(&hw), N = t.nlayers;
    for (int stages = 1; stages <= G && stages <= N; stages *= 2) {
        int counts[64], reps[64];
        for (int s = 0; s < stages; s++) {
            counts[s] = (int)((long)(s + 1) * N / stages) - (int)((long)s * N / stages);
            reps[s] = G / stages;
        }
        struct wp_plan base;
        wp_plan_init(&base);
        if (wp_plan_fixed(&m, stages, counts, reps, &base, &err) == 0) {
            double b = simulated(&m, &base);
            char bs[256];
            wp_plan_shape(&base, bs, sizeof bs);
            ok(!base.fits || ours <= b * (1 + 1e-9), "%s: not slower than %s with even layers (%.4f vs %.4f s%s)",
               name, bs, ours, b, base.fits ? "" : ", which does not fit");
        }
        wp_plan_destroy(&base);
    }
    /* what wavepipe plan gives run --plan by default: a micro-batch that
     * divides the global batch and that every stage's replicas split evenly */
    struct wp_plan runnable;
    wp_plan_init(&runnable);
    m.even_slices = 1;
    if (ok(wp_plan_dapple(&m, &runnable, &err) == 0, "%s: planned with even slices (%s)", name, err.msg)) {
        int even = runnable.micro_batch > 0 && c->global_batch % runnable.micro_batch == 0 &&
                   runnable.microbatches * runnable.micro_batch == c->global_batch;
        for (int s = 0; even && s < runnable.nstages; s++)
            even = runnable.micro_batch % runnable.stages[s].replicas == 0;
        char rs[256];
        wp_plan_shape(&runnable, rs, sizeof rs);
        ok(even, "%s: even slices: %s, %d micro-batches of %d, each split evenly over every stage's replicas",
           name, rs, runnable.microbatches, runnable.micro_batch);
    }
    m.even_slices = 0;
    wp_plan_destroy(&runnable);
    wp_plan_destroy(&best);
    wp_plan_destroy(&paper);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

int main(void)
{
    const char *dir = getenv("WP_SRCDIR");
    snprintf(srcdir, sizeof srcdir, "%s", dir ? dir : ".");
    placement_tests();
    closed_form_tests();
    kfkb_tests();
    for (int i = 0; i < dapple_ncases; i++)
        table_case(&dapple_cases[i]);
    return tap_done();
}
