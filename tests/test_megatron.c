/* Megatron-LM's published weak-scaling runs (SC21 table 1, plan/megatron.h)
 * on wavepipe's cost model, the rows CI can afford: Megatron's own
 * configuration of the 18B (TP 8, no pipeline), 76B (TP 8, PP 4,
 * interleaved) and 145B (TP 8, PP 8, interleaved) runs predicted within
 * 15 % of the published teraFLOP/s per GPU on DGX A100 nodes, and for the
 * 76B run the planner's own choice at least as fast. bench/bench_megatron
 * prints every row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan/megatron.h"
#include "plan/plan_search.h"
#include "tap.h"
#include "topo/cluster_io.h"

struct setup {
    struct wp_layer_table t;
    struct wp_plan_model m;
};

static int setup(struct setup *s, const struct wp_megatron_run *r, const struct wp_cluster *c, struct wp_err *err)
{
    struct wp_plan_hw hw;
    if (wp_megatron_table(&s->t, r, WP_A100_SUSTAINED_FLOPS, err))
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

int main(void)
{
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
