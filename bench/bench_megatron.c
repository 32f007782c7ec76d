/* Megatron-LM's weak-scaling table (Narayanan et al., SC21, table 1; see
 * src/plan/megatron.h for where each number comes from) on wavepipe's cost
 * model: for each run, its own configuration (TP, PP, DP, micro-batch,
 * global batch, interleaving, recomputation, DDP) planned on DGX A100
 * nodes (topology/dgx-a100-x384-ib-hdr.cfg) and simulated, its predicted
 * teraFLOP/s per GPU (Megatron's FLOP count over the predicted time)
 * against the published one, by the per-operation model of the A100
 * (gpu_model.h: spec sheet and microbenchmarks, never these runs; goal:
 * every row within 8 %, the mean |error| at most 3.5 %) and, for
 * reference, by one sustained rate for every FLOP (WP_A100_SUSTAINED_FLOPS
 * or $A100_FLOPS); where the predicted time goes (per GPU: matrix
 * products, memory-bound kernels, the tensor group's collectives, and the
 * rest: the pipeline's bubble, its transfers, the data-parallel sum and
 * the optimizer step); and the planner's own choice for the same model,
 * GPUs and global batch (goal: at least as fast), with its degrees beside
 * Megatron's (PP 4x3: 4 stages of 3 interleaved chunks; rc: recomputation
 * on every stage, rc-some on some; sel: the attention core's (selective);
 * sp: sequence parallel; do: distributed optimizer -- the planner may use
 * all three, Megatron's SC21 runs used none).
 *
 * Then GPT-3 175B on 512 DGX H100 nodes: Megatron-LM's example
 * configuration against the planner's choice (megatron.h).
 *
 * Usage: bench_megatron [SRCDIR [RUN ...]]   (RUN: 1.7B, 3.6B, ... 1T, gpt3-h100; all by default) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/gpu_block.h"
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

/* Where Megatron's configuration p of run r spends its predicted iter_s,
 * per GPU: matrix products and memory-bound kernels (every layer's
 * forward, again before its backward, and backward, over the PP stages),
 * the tensor group's collectives; the rest is the pipeline's bubble and
 * transfers, the data-parallel sum and the optimizer step. */
static void breakdown(const struct wp_plan_model *m, const struct wp_plan *p, const struct wp_megatron_run *r,
                      double iter_s, char *buf, size_t size)
{
    const struct wp_gpu_spec *g = m->gpu;
    int slice = p->stages[0].slice, n = m->layers->nlayers;
    double micro = (double)p->microbatches, matmul = 0, memory = 0;
    struct wp_gpu_block b = {(double)slice * WP_MEGATRON_SEQ_LEN, WP_MEGATRON_SEQ_LEN, r->hidden, r->heads, r->tp, 0,
                             r->flash, WP_PRECISION_BF16};
    for (int i = 0; i < n; i++) {
        struct wp_gpu_layer_times x;
        if (i == 0)
            wp_gpu_embedding_times(g, &b, WP_MEGATRON_VOCAB, r->tp, &x);
        else if (i == n - 1)
            wp_gpu_head_times(g, &b, WP_MEGATRON_VOCAB, &x);
        else
            wp_gpu_block_times(g, &b, &x);
        matmul += (1 + r->recompute) * x.forward.matmul_s + x.backward.matmul_s;
        memory += (1 + r->recompute) * x.forward.memory_s + x.backward.memory_s;
    }
    double tp = (2 + r->recompute) * (m->cum_tp_fixed[n] + slice * m->cum_tp_per_sample[n]);
    matmul *= micro / r->pp;
    memory *= micro / r->pp;
    tp *= micro / r->pp;
    snprintf(buf, size, "%3.0f %3.0f %3.0f %3.0f", 100 * matmul / iter_s, 100 * memory / iter_s, 100 * tp / iter_s,
             100 * (iter_s - matmul - memory - tp) / iter_s);
}

/* Megatron's configuration of r on c, timed by the GPU model (gpu) or at
 * one rate: its predicted seconds per iteration, and when where is not
 * NULL, the breakdown. 0 or -1 with err. */
static int predict(const struct wp_megatron_run *r, const struct wp_cluster *c, const char *gpu, double flops_per_s,
                   double *iter_s, int *fits, char *where, size_t where_size, struct wp_err *err)
{
    struct wp_layer_table t;
    struct wp_plan_hw hw;
    struct wp_plan_model m;
    if (wp_megatron_table(&t, r, gpu, flops_per_s, err))
        return -1;
    if (wp_plan_hw_from_cluster(&hw, c, r->gpus, 0, err) || wp_plan_model_init(&m, &t, &hw, r->global_batch, err)) {
        wp_layer_table_destroy(&t);
        return -1;
    }
    struct wp_plan p;
    wp_plan_init(&p);
    int rc = wp_megatron_plan(&m, r, &p, err) || wp_plan_simulate(&m, &p, 1, 0, iter_s, NULL, err);
    if (rc == 0) {
        *fits = p.fits;
        if (where && m.gpu)
            breakdown(&m, &p, r, *iter_s, where, where_size);
    }
    wp_plan_destroy(&p);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
    return rc ? -1 : 0;
}

/* The planner's free choice for r's model, GPUs and global batch: every
 * feature Megatron-LM offers today. */
static int choose(const struct wp_megatron_run *r, const struct wp_cluster *c, const char *gpu, struct wp_plan *ours,
                  struct wp_err *err)
{
    struct wp_layer_table t;
    struct wp_plan_hw hw;
    struct wp_plan_model m;
    if (wp_megatron_table(&t, r, gpu, 0, err))
        return -1;
    if (wp_plan_hw_from_cluster(&hw, c, r->gpus, 0, err) || wp_plan_model_init(&m, &t, &hw, r->global_batch, err)) {
        wp_layer_table_destroy(&t);
        return -1;
    }
    m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
    m.sequence_parallel = 2;
    m.distributed_optimizer = 1;
    m.max_chunks = 4;
    m.fixed_tensor = (struct wp_plan_tensor){0, 0};
    int rc = wp_plan_search(&m, ours, err);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
    return rc;
}

struct totals {
    int rows, within;
    double sum_abs, max_abs;
};

static int run(const struct wp_megatron_run *r, const struct wp_cluster *c, double flops_per_s, struct totals *tot)
{
    struct wp_err err = {""};
    double t_theirs = 0, t_rate = 0;
    int fits = 0, fits_rate = 0;
    char where[64] = "", d1[96], d2[96];
    if (predict(r, c, WP_MEGATRON_GPU, 0, &t_theirs, &fits, where, sizeof where, &err) ||
        predict(r, c, NULL, flops_per_s, &t_rate, &fits_rate, NULL, 0, &err)) {
        printf("%s: %s\n", r->name, err.msg);
        return 1;
    }
    double flops = wp_megatron_flops(r), pred = flops / t_theirs / r->gpus / 1e12, rate = flops / t_rate / r->gpus / 1e12;
    double e = pred / r->published_tflops - 1;
    tot->rows++;
    tot->within += fabs(e) <= 0.08;
    tot->sum_abs += fabs(e);
    tot->max_abs = fabs(e) > tot->max_abs ? fabs(e) : tot->max_abs;
    struct wp_plan theirs, ours;
    wp_plan_init(&theirs);
    wp_plan_init(&ours);
    theirs.chunks = r->layers_per_chunk ? r->layers / r->pp / r->layers_per_chunk : 1;
    double t0 = wp_monotonic_s();
    int rc = choose(r, c, WP_MEGATRON_GPU, &ours, &err);
    double search_s = wp_monotonic_s() - t0;
    snprintf(d1, sizeof d1, "TP %d PP %d%s DP %d b %d rc", r->tp, r->pp, "", r->gpus / (r->tp * r->pp), r->micro_batch);
    if (theirs.chunks > 1)
        snprintf(d1, sizeof d1, "TP %d PP %dx%d DP %d b %d rc", r->tp, r->pp, theirs.chunks, r->gpus / (r->tp * r->pp),
                 r->micro_batch);
    printf("%-5s %5d  %-26s %5.0f %6.1f %+6.1f%% %s %+6.1f%%  %-15s ", r->name, r->gpus, d1, r->published_tflops, pred,
           100 * e, fabs(e) <= 0.08 ? "ok " : "OFF", 100 * (rate / r->published_tflops - 1), where);
    if (!fits)
        printf("(does not fit) ");
    if (rc == 0) {
        degrees(d2, sizeof d2, &ours);
        printf("%-34s %6.1f %5.2fx %s %5.1f s\n", d2, flops / ours.predicted_iter_s / r->gpus / 1e12,
               t_theirs / ours.predicted_iter_s, ours.fits ? "fits" : "OVER", search_s);
    } else {
        printf("\n%s: %s\n", r->name, err.msg);
    }
    int slower = rc == 0 && ours.predicted_iter_s > t_theirs * (1 + 1e-9);
    wp_plan_destroy(&theirs);
    wp_plan_destroy(&ours);
    return rc != 0 || slower;
}

/* GPT-3 175B on 512 DGX H100 nodes: Megatron-LM's example configuration
 * predicted, and the planner's choice, side by side. */
static int gpt3_h100(const char *srcdir)
{
    const struct wp_megatron_run *r = &wp_megatron_gpt3_h100;
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/dgx-h100-x512-ib-ndr.cfg", srcdir);
    struct wp_cluster c;
    struct wp_err err = {""};
    wp_cluster_init(&c);
    if (wp_cluster_read(path, &c, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double t_theirs = 0;
    int fits = 0;
    char where[64] = "", d2[96];
    struct wp_plan ours;
    wp_plan_init(&ours);
    double t0 = wp_monotonic_s();
    int rc = predict(r, &c, WP_MEGATRON_GPT3_GPU, 0, &t_theirs, &fits, where, sizeof where, &err) ||
             choose(r, &c, WP_MEGATRON_GPT3_GPU, &ours, &err);
    double search_s = wp_monotonic_s() - t0;
    printf("\n%s on %s (%d GPUs), global batch %d, layer times modelled for the %s (FlashAttention), not measured\n",
           r->name, c.name, r->gpus, r->global_batch, WP_MEGATRON_GPT3_GPU);
    if (rc) {
        printf("%s\n", err.msg);
    } else {
        double flops = wp_megatron_flops(r);
        degrees(d2, sizeof d2, &ours);
        printf("  Megatron-LM's examples/gpt3 configuration  TP %d PP %d DP %d b %d, no recomputation: %.2f s, %.1f "
               "TFLOP/s per GPU, %s (mm mem tp rest: %s %%)\n",
               r->tp, r->pp, r->gpus / (r->tp * r->pp), r->micro_batch, t_theirs, flops / t_theirs / r->gpus / 1e12,
               fits ? "fits in 80 GB" : "does NOT fit in 80 GB", where);
        printf("  the planner's choice                        %s: %.2f s, %.1f TFLOP/s per GPU, %.1f GiB a GPU (%s), "
               "%.2fx; searched in %.1f s\n",
               d2, ours.predicted_iter_s, flops / ours.predicted_iter_s / r->gpus / 1e12,
               ours.peak_memory_bytes / (1024.0 * 1024 * 1024), ours.fits ? "fits" : "OVER", t_theirs / ours.predicted_iter_s,
               search_s);
        rc = !ours.fits || (fits && ours.predicted_iter_s > t_theirs * (1 + 1e-9));
    }
    wp_plan_destroy(&ours);
    wp_cluster_destroy(&c);
    return rc;
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
    const struct wp_gpu_spec *g = wp_gpu_spec_find(WP_MEGATRON_GPU);
    printf("Megatron-LM SC21 table 1 on %s: TFLOP/s per GPU in Megatron's count (equation 3, recomputation counted) "
           "over the predicted iteration time.\nCompute modelled per operation for the %s (%s; GEMM main loop at %.1f %% "
           "of peak to meet the measured %.1f TFLOP/s), not measured; one-rate: every FLOP at %.0f TFLOP/s.\n"
           "Time per GPU (%%): mm matrix products, mem memory-bound kernels, tp the tensor group's collectives, rest "
           "the bubble, pipeline transfers, data-parallel sum and optimizer step.\n",
           c.name, g->name, g->source, 100 * wp_gpu_gemm_inner_efficiency(g), g->mamf_flops / 1e12, flops_per_s / 1e12);
    printf("%-5s %5s  %-26s %5s %6s %7s %3s %7s  %-15s %-34s %6s %6s %4s %7s\n", "run", "GPUs", "Megatron's configuration",
           "paper", "pred", "error", "8%", "1-rate", " mm mem  tp rest", "planner's choice", "TFLOPs", "speed", "mem",
           "search");
    int rc = 0;
    struct totals tot = {0, 0, 0, 0};
    for (int i = 0; i < wp_megatron_nruns; i++) {
        int wanted = argc <= 2;
        for (int a = 2; a < argc && !wanted; a++)
            wanted = strcmp(argv[a], wp_megatron_runs[i].name) == 0;
        if (wanted)
            rc |= run(&wp_megatron_runs[i], &c, flops_per_s, &tot);
    }
    wp_cluster_destroy(&c);
    int h100 = argc <= 2;
    for (int a = 2; a < argc; a++)
        h100 |= strcmp(argv[a], "gpt3-h100") == 0;
    if (h100)
        rc |= gpt3_h100(srcdir);
    if (tot.rows == 0 && !h100) {
        fprintf(stderr, "no such run (1.7B, 3.6B, 7.5B, 18B, 39B, 76B, 145B, 310B, 530B, 1T, gpt3-h100)\n");
        return 1;
    }
    if (tot.rows == 0)
        return rc;
    int met = tot.within == tot.rows && tot.sum_abs / tot.rows <= 0.035;
    printf("\n%d of %d rows within 8 %%, mean |error| %.1f %%, largest %.1f %%: the goal (every row within 8 %%, mean "
           "at most 3.5 %%) is %s\n",
           tot.within, tot.rows, 100 * tot.sum_abs / tot.rows, 100 * tot.max_abs, met ? "met" : "NOT met");
    return rc;
}
