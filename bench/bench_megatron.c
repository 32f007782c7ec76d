/* Megatron-LM's weak-scaling table (Narayanan et al., SC21, table 1; see
 * src/plan/megatron.h for where each number comes from) on wavepipe's cost
 * model: for each run, its own configuration (TP, PP, DP, micro-batch,
 * global batch, interleaving, recomputation) planned on DGX A100 nodes
 * (topology/dgx-a100-x384-ib-hdr.cfg) and simulated, its predicted
 * teraFLOP/s per GPU (Megatron's FLOP count over the predicted time)
 * against the published one (goal: within 15 %), and the planner's own
 * choice for the same model, GPUs and global batch (goal: at least as fast),
 * with its degrees beside Megatron's (PP 4x3: 4 stages of 3 interleaved
 * chunks; rc: recomputation on every stage, rc-some on some; sel: the
 * attention core's (selective); sp: sequence parallel; do: distributed
 * optimizer -- the planner may use all three, Megatron's SC21 runs used
 * none). Compute at
 * WP_A100_SUSTAINED_FLOPS (megatron.h says why), or $A100_FLOPS.
 *
 * Usage: bench_megatron [SRCDIR [RUN ...]]   (RUN: 1.7B, 3.6B, ... 1T; all by default) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/megatron.h"
#include "plan/plan_search.h"
#include "topo/cluster_io.h"
#include "util/clock.h"

static void degrees(char *buf, size_t size, const struct wp_plan *p)
{
    int v = p->chunks > 1 ? p->chunks : 1, rc = 0, sel = 0;
    for (int s = 0; s < p->nstages; s++) {
        rc += p->stages[s].recompute;
        sel += p->stages[s].selective;
    }
    char chunks[16] = "";
    if (v > 1)
        snprintf(chunks, sizeof chunks, "x%d", v);
    snprintf(buf, size, "TP %d%s PP %d%s DP %d b %d%s%s%s%s", wp_plan_tensor_size(p->tensor),
             p->tensor.p2 > 1 ? "(2D)" : "", p->nstages / v, chunks, p->stages[0].replicas, p->stages[0].slice,
             rc == 0 ? "" : rc == p->nstages ? " rc" : " rc-some", sel == 0 ? "" : sel == p->nstages ? " sel" : " sel-some",
             p->sequence_parallel ? " sp" : "", p->distributed_optimizer ? " do" : "");
}

static int run(const struct wp_megatron_run *r, const struct wp_cluster *c, double flops_per_s)
{
    struct wp_err err;
    struct wp_layer_table t;
    struct wp_plan_hw hw;
    struct wp_plan_model m;
    if (wp_megatron_table(&t, r, flops_per_s, &err) || wp_plan_hw_from_cluster(&hw, c, r->gpus, 0, &err)) {
        fprintf(stderr, "%s: %s\n", r->name, err.msg);
        return 1;
    }
    if (wp_plan_model_init(&m, &t, &hw, r->global_batch, &err)) {
        fprintf(stderr, "%s: %s\n", r->name, err.msg);
        wp_layer_table_destroy(&t);
        return 1;
    }
    struct wp_plan theirs, ours;
    wp_plan_init(&theirs);
    wp_plan_init(&ours);
    double flops = wp_megatron_flops(r), t_theirs = 0, t_ours = 0;
    int rc = wp_megatron_plan(&m, r, &theirs, &err) || wp_plan_simulate(&m, &theirs, 1, 0, &t_theirs, NULL, &err);
    double pred = rc ? 0 : flops / t_theirs / r->gpus / 1e12;
    double t0 = wp_monotonic_s();
    /* the planner's free choice: every feature Megatron-LM offers today */
    m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
    m.sequence_parallel = 2;
    m.distributed_optimizer = 1;
    m.max_chunks = 4;
    m.fixed_tensor = (struct wp_plan_tensor){0, 0};
    int rc2 = rc ? 1 : wp_plan_search(&m, &ours, &err);
    double search_s = wp_monotonic_s() - t0;
    t_ours = rc2 ? 0 : ours.predicted_iter_s;
    char d1[96], d2[96];
    if (rc == 0) {
        degrees(d1, sizeof d1, &theirs);
        printf("%-6s %5d  %-28s %6.1f %6.1f %+6.1f%% %s  ", r->name, r->gpus, d1, r->published_tflops, pred,
               100 * (pred / r->published_tflops - 1), fabs(pred / r->published_tflops - 1) <= 0.15 ? "ok " : "OFF");
        if (!theirs.fits)
            printf("(does not fit: %.1f GiB) ", theirs.peak_memory_bytes / (1024.0 * 1024 * 1024));
    }
    if (rc == 0 && rc2 == 0) {
        degrees(d2, sizeof d2, &ours);
        printf("%-36s %6.1f %5.2fx  %5.1f s\n", d2, flops / t_ours / r->gpus / 1e12, t_theirs / t_ours, search_s);
    } else {
        printf("\n%s: %s\n", r->name, err.msg);
    }
    wp_plan_destroy(&theirs);
    wp_plan_destroy(&ours);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
    return rc || rc2;
}

int main(int argc, char **argv)
{
    const char *srcdir = argc > 1 ? argv[1] : ".";
    double flops_per_s = getenv("A100_FLOPS") ? atof(getenv("A100_FLOPS")) : WP_A100_SUSTAINED_FLOPS;
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/dgx-a100-x384-ib-hdr.cfg", srcdir);
    struct wp_cluster c;
    struct wp_err err;
    wp_cluster_init(&c);
    if (wp_cluster_read(path, &c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("Megatron-LM SC21 table 1 on %s, compute at %.0f TFLOP/s sustained; TFLOP/s per GPU in Megatron's count "
           "(equation 3, recomputation counted) over the predicted iteration time\n",
           c.name, flops_per_s / 1e12);
    printf("%-6s %5s  %-28s %6s %6s %7s %3s  %-36s %6s %6s  %s\n", "run", "GPUs", "Megatron's configuration",
           "paper", "pred", "error", "15%", "planner's choice", "TFLOPs", "speed", "search");
    int rc = 0, any = 0;
    for (int i = 0; i < wp_megatron_nruns; i++) {
        int wanted = argc <= 2;
        for (int a = 2; a < argc && !wanted; a++)
            wanted = strcmp(argv[a], wp_megatron_runs[i].name) == 0;
        if (!wanted)
            continue;
        any = 1;
        rc |= run(&wp_megatron_runs[i], &c, flops_per_s);
    }
    wp_cluster_destroy(&c);
    if (!any)
        fprintf(stderr, "no such run (1.7B, 3.6B, 7.5B, 18B, 39B, 76B, 145B, 310B, 530B, 1T)\n");
    return rc || !any;
}
