/* Megatron-LM's published weak-scaling runs (SC21 table 1, plan/megatron.h)
 * on wavepipe's cost model, the rows CI can afford: Megatron's own
 * configuration of the 18B (TP 8, no pipeline), 76B (TP 8, PP 4,
 * interleaved) and 145B (TP 8, PP 8, interleaved) runs predicted within
 * 15 % of the published teraFLOP/s per GPU on DGX A100 nodes, and for the
 * 76B run the planner's own choice at least as fast. bench/bench_megatron
 * prints every row. And Megatron-LM's memory accounting: Korthikanti et
 * al.'s activations per layer (table 2) in closed form and as the
 * planner's memory model keeps them, Megatron's bytes per parameter with
 * and without the distributed optimizer, and the recomputation the planner
 * chooses when memory runs short. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan/megatron.h"
#include "plan/megatron_memory.h"
#include "plan/plan_search.h"
#include "plan/tp_block.h"
#include "tap.h"
#include "topo/cluster_io.h"

struct setup {
    struct wp_layer_table t;
    struct wp_plan_model m;
};

static int setup(struct setup *s, const struct wp_megatron_run *r, const struct wp_cluster *c, struct wp_err *err)
{
    struct wp_plan_hw hw;
    if (wp_megatron_table(&s->t, r, NULL, WP_A100_SUSTAINED_FLOPS, err))
        return -1;
    if (wp_plan_hw_from_cluster(&hw, c, r->gpus, 0, err) || wp_plan_model_init(&s->m, &s->t, &hw, r->global_batch, err)) {
        wp_layer_table_destroy(&s->t);
        return -1;
    }
    return 0;
}

static void teardown(struct setup *s)
{
    wp_plan_model_destroy(&s->m);
    wp_layer_table_destroy(&s->t);
}

/* Megatron's configuration of run `name`: its predicted seconds per
 * iteration into *iter_s; 0 or -1. */
static int megatron_config(const char *name, const struct wp_cluster *c, double *iter_s)
{
    const struct wp_megatron_run *r = wp_megatron_find(name);
    struct setup s;
    struct wp_err err = {""};
    struct wp_plan p;
    if (!ok(r && setup(&s, r, c, &err) == 0, "%s: table and DGX A100 nodes", name))
        return -1;
    wp_plan_init(&p);
    int rc = wp_megatron_plan(&s.m, r, &p, &err) || wp_plan_simulate(&s.m, &p, 1, 0, iter_s, NULL, &err);
    if (ok(rc == 0, "%s: Megatron's configuration planned and simulated (%s)", name, err.msg)) {
        int v = p.chunks > 1 ? p.chunks : 1;
        ok(wp_plan_tensor_size(p.tensor) == r->tp && p.nstages / v == r->pp && p.stages[0].replicas * r->tp * r->pp ==
                                                                                 r->gpus,
           "%s: TP %d, PP %d, DP %d as published", name, r->tp, r->pp, p.stages[0].replicas);
        ok(p.fits, "%s: fits in 80 GB per GPU (%.1f GiB)", name, p.peak_memory_bytes / (1024.0 * 1024 * 1024));
        double pred = wp_megatron_flops(r) / *iter_s / r->gpus / 1e12;
        ok(fabs(pred / r->published_tflops - 1) <= 0.15, "%s: %.1f TFLOP/s per GPU predicted, %.0f published (%+.1f %%)",
           name, pred, r->published_tflops, 100 * (pred / r->published_tflops - 1));
    }
    wp_plan_destroy(&p);
    teardown(&s);
    return rc;
}

/* Table 2 of Korthikanti et al. at GPT-3 175B's shape (s 2048, h 12288, a
 * 96, t 8): 5 a s / h = 80, so 23 s b h plain, 13 selective, 2 full; with
 * sequence parallelism (34 + 80) / 8 = 14.25, 34 / 8 = 4.25, 2 / 8. */
static void closed_forms(void)
{
    double s = 2048, h = 12288, a = 96, sbh = s * 1 * h;
    is_near(wp_korthikanti_layer_bytes(s, 1, h, a, 1, 0, WP_GRANULARITY_NONE), sbh * (34 + 5 * a * s / h), 1e-12,
            "no parallelism: s b h (34 + 5 a s / h)");
    is_near(wp_korthikanti_layer_bytes(s, 1, h, a, 8, 0, WP_GRANULARITY_NONE), 23 * sbh, 1e-12,
            "175B, TP 8: 23 s b h");
    is_near(wp_korthikanti_layer_bytes(s, 1, h, a, 8, 1, WP_GRANULARITY_NONE), 14.25 * sbh, 1e-12,
            "TP 8 + sequence parallel: 14.25 s b h");
    is_near(wp_korthikanti_layer_bytes(s, 1, h, a, 8, 0, WP_GRANULARITY_SELECTIVE), 13 * sbh, 1e-12,
            "TP 8 + selective recomputation: 13 s b h");
    is_near(wp_korthikanti_layer_bytes(s, 1, h, a, 8, 1, WP_GRANULARITY_SELECTIVE), 4.25 * sbh, 1e-12,
            "TP 8 + sequence parallel + selective: 4.25 s b h");
    is_near(wp_korthikanti_layer_bytes(s, 1, h, a, 8, 0, WP_GRANULARITY_FULL), 2 * sbh, 1e-12, "full: 2 s b h");
    /* Megatron Core's table of bytes per parameter, d = 8 */
    is_near(wp_megatron_bytes_per_param(2, 2, 0, 8), 20, 1e-12, "fp16 params and grads: 20");
    is_near(wp_megatron_bytes_per_param(2, 2, 1, 8), 4 + 16.0 / 8, 1e-12, "distributed: 4 + 16/d");
    is_near(wp_megatron_bytes_per_param(2, 4, 0, 8), 18, 1e-12, "16-bit params, fp32 grads: 18");
    is_near(wp_megatron_bytes_per_param(2, 4, 1, 8), 6 + 12.0 / 8, 1e-12, "distributed: 6 + 12/d");
    is_near(wp_megatron_bytes_per_param(4, 4, 0, 8), 16, 1e-12, "fp32: 16");
    is_near(wp_megatron_bytes_per_param(4, 4, 1, 8), 8 + 8.0 / 8, 1e-12, "distributed: 8 + 8/d");
}

/* The planner's memory model at its points against the closed forms: a
 * block's activations (the sums' one-block difference), what a whole
 * recomputation keeps of it, and a stage's weights per GPU. */
static void planner_memory(void)
{
    struct wp_gpt_shape g = {2, 1024, 16, 2048, 51200, 1, WP_PRECISION_BF16};
    struct wp_layer_table t;
    struct wp_plan_model m;
    struct wp_err err = {""};
    struct wp_plan_hw hw = {"one node", "A100", 1, 8, {1e-6, 1 / 200e9}, {5e-6, 1 / 25e9}, 80e9, 0};
    if (!ok(wp_layer_table_gpt(&t, &g, 1e14, &err) == 0 && wp_plan_model_init(&m, &t, &hw, 8, &err) == 0,
            "a 2-block GPT of h 1024, s 2048, 16 heads (%s)", err.msg))
        return;
    static const struct { int t, sp; } at[] = {{1, 0}, {8, 0}, {8, 1}, {4, 1}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        struct wp_plan_point pt = {{at[i].t, 1}, 1, at[i].sp};
        if (!ok(wp_plan_model_set_point(&m, &pt, &err) == 0, "point TP %d%s (%s)", at[i].t, at[i].sp ? " + SP" : "",
                err.msg))
            continue;
        /* layer 1 is block 0 (the embedding is layer 0) */
        double none = m.cum_act[2] - m.cum_act[1], sel = m.cum_act_sel[2] - m.cum_act_sel[1], in = m.cum_in[2] - m.cum_in[1];
        is_near(none, wp_korthikanti_layer_bytes(2048, 1, 1024, 16, at[i].t, at[i].sp, WP_GRANULARITY_NONE), 1e-12,
                "TP %d%s: a block keeps table 2's bytes", at[i].t, at[i].sp ? " + SP" : "");
        is_near(sel, wp_korthikanti_layer_bytes(2048, 1, 1024, 16, at[i].t, at[i].sp, WP_GRANULARITY_SELECTIVE), 1e-12,
                "TP %d%s: selective recomputation keeps table 2's bytes", at[i].t, at[i].sp ? " + SP" : "");
        is_near(in, wp_korthikanti_layer_bytes(2048, 1, 1024, 16, at[i].t, at[i].sp, WP_GRANULARITY_FULL), 1e-12,
                "TP %d%s: a whole recomputation keeps its input, table 2's bytes", at[i].t, at[i].sp ? " + SP" : "");
    }
    /* one stage of every layer on 8 replicas: its weights per GPU are
     * Megatron's bytes per parameter, 18 or 6 + 12/8 */
    struct wp_plan_point one = {{1, 1}, 1, 0};
    wp_plan_model_set_point(&m, &one, &err);
    double params = 0;
    for (int i = 0; i < t.nlayers; i++)
        params += t.layers[i].parameter_bytes / 2;
    int counts[1] = {t.nlayers}, reps[1] = {8};
    for (int dist = 0; dist <= 1; dist++) {
        struct wp_plan p;
        m.distributed_optimizer = dist;
        wp_plan_init(&p);
        if (ok(wp_plan_fixed(&m, 1, counts, reps, &p, &err) == 0, "a data-parallel plan on 8 GPUs (%s)", err.msg))
            is_near(p.stages[0].weights_bytes, params * wp_megatron_bytes_per_param(2, 4, dist, 8), 1e-12,
                    "its weights per GPU: %s bytes a parameter", dist ? "6 + 12/8 (distributed optimizer)" : "18");
        wp_plan_destroy(&p);
    }
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

/* Short of memory the planner recomputes the attention core first
 * (selective), and the whole forward only when that does not fit and keeps
 * less (stage 0 of two, 4 blocks, 2 micro-batches in flight): the backward
 * then grows by the core's share of the forward, s / (6 h + s), or by the
 * whole forward. */
static void recompute_ladder(void)
{
    struct wp_gpt_shape g = {8, 1024, 16, 2048, 51200, 4, WP_PRECISION_BF16};
    struct wp_layer_table t;
    struct wp_plan_model m;
    struct wp_err err = {""};
    struct wp_plan_hw hw = {"one node", "A100", 1, 8, {1e-6, 1 / 200e9}, {5e-6, 1 / 25e9}, 80e9, 0};
    if (!ok(wp_layer_table_gpt(&t, &g, 1e14, &err) == 0 && wp_plan_model_init(&m, &t, &hw, 16, &err) == 0,
            "an 8-block GPT, micro-batches of 4 (%s)", err.msg))
        return;
    m.even_slices = 1;
    int counts[2] = {5, 5}, reps[2] = {1, 1}; /* the embedding and 4 blocks, 4 blocks and the head */
    struct wp_plan p;
    m.recompute = WP_RECOMPUTE_NEVER;
    wp_plan_init(&p);
    wp_plan_fixed(&m, 2, counts, reps, &p, &err);
    double plain = p.stages[0].memory_bytes, weights = p.stages[0].weights_bytes, b0 = p.stages[0].backward_s;
    double f0 = p.stages[0].forward_s;
    int held = p.stages[0].inflight;
    wp_plan_destroy(&p);
    double core = 4 * wp_tp_block_core_bytes(1, 1, 4, 2048, 16, 2) * held;
    double limit[3] = {plain, plain - core / 2, weights + 1}, backward[3] = {0, 0, 0};
    m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
    for (int i = 0; i < 3; i++) {
        m.hw.memory_bytes = limit[i];
        wp_plan_init(&p);
        wp_plan_fixed(&m, 2, counts, reps, &p, &err);
        ok(p.stages[0].selective == (i == 1) && p.stages[0].recompute == (i == 2),
           "%s memory (%d micro-batches in flight): %s", i == 0 ? "enough" : i == 1 ? "a little short of" : "far short of",
           held, i == 0 ? "nothing recomputed" : i == 1 ? "the attention core recomputed" : "the whole forward recomputed");
        backward[i] = p.stages[0].backward_s;
        wp_plan_destroy(&p);
    }
    double blocks_f = 0;
    for (int i = 1; i <= 4; i++)
        blocks_f += t.layers[i].forward_s;
    is_near(backward[0], b0, 1e-12, "nothing recomputed: the backward as it was");
    is_near(backward[1] - b0, blocks_f * 2048 / (6.0 * 1024 + 2048), 1e-9,
            "selective: the backward grows by the core's share of the blocks' forward, s / (6 h + s)");
    is_near(backward[2] - b0, f0, 1e-12, "full: the backward grows by the whole forward");
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

int main(void)
{
    closed_forms();
    planner_memory();
    recompute_ladder();
    const char *dir = getenv("WP_SRCDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/dgx-a100-x384-ib-hdr.cfg", dir ? dir : ".");
    struct wp_cluster c;
    struct wp_err err = {""};
    wp_cluster_init(&c);
    if (!ok(wp_cluster_read(path, &c, &err) == 0, "the DGX A100 cluster description (%s)", err.msg))
        return tap_done();
    double t18, t145, t76;
    megatron_config("18B", &c, &t18);
    megatron_config("145B", &c, &t145);
    if (megatron_config("76B", &c, &t76) == 0) {
        /* the planner on the same model, GPUs and global batch */
        const struct wp_megatron_run *r = wp_megatron_find("76B");
        struct setup s;
        struct wp_plan p;
        if (setup(&s, r, &c, &err) == 0) {
            s.m.even_slices = 1;
            s.m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
            s.m.max_chunks = 4;
            wp_plan_init(&p);
            if (ok(wp_plan_search(&s.m, &p, &err) == 0, "76B: planned (%s)", err.msg)) {
                int v = p.chunks > 1 ? p.chunks : 1;
                ok(p.fits && p.predicted_iter_s <= t76 * (1 + 1e-9),
                   "76B: the planner's TP %d, PP %d (%d chunks), DP %d, micro-batch %d: %.2f s, Megatron's %.2f s",
                   wp_plan_tensor_size(p.tensor), p.nstages / v, v, p.stages[0].replicas, p.stages[0].slice,
                   p.predicted_iter_s, t76);
            }
            wp_plan_destroy(&p);
            teardown(&s);
        }
    }
    wp_cluster_destroy(&c);
    return tap_done();
}
