/* How fast the planner plans (issue goals): BERT-48 on 16 GPUs
 * (DAPPLE's configuration A) under 1 s; ResNet-50 from PipeDream's profile
 * on 16 GPUs under 0.5 s, both as its 177 graph nodes (frontier) and with
 * its branches contracted (40 layers); a 96-block GPT (GPT-3's shape,
 * analytic table) on 4,096 GPUs (512 nodes x 8) under 10 s, over the whole
 * hybrid space (tensor groups x micro-batch sizes, recomputation where
 * memory needs it). Each plan is timed whole (search, simulator checks of
 * the best candidates, kFkB candidates), best of REPEATS. For the GPT it
 * also prints the plan DAPPLE's search alone finds (no tensor groups, its
 * micro-batch rule) by the same cost model: issue 13's "before".
 *
 * Usage: bench_plan [SRCDIR [REPEATS]] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/plan_search.h"
#include "topo/cluster_io.h"
#include "util/clock.h"

/* A plan's degrees of parallelism on one line. */
static void print_degrees(const char *label, const struct wp_plan *p)
{
    int recomputing = 0;
    for (int s = 0; s < p->nstages; s++)
        recomputing += p->stages[s].recompute;
    int v = p->chunks > 1 ? p->chunks : 1;
    printf("%s: TP %d (%d x %d), PP %d, %d chunk%s, DP %d, micro-batch %d x %d, recomputing %d of %d stages: %.3f s%s, "
           "%.1f TFLOP/s per GPU (model FLOPs), %.1f GiB per GPU%s\n",
           label, wp_plan_tensor_size(p->tensor), p->tensor.p1, p->tensor.p2, p->nstages / v, v, v == 1 ? "" : "s",
           p->stages[0].replicas,
           p->stages[0].slice, p->microbatches, recomputing, p->nstages, p->predicted_iter_s,
           p->simulated_iter_s >= 0 ? " (simulated)" : " (L)", p->model_flops / p->predicted_iter_s / p->devices_used / 1e12,
           p->peak_memory_bytes / (1024.0 * 1024 * 1024), p->fits ? "" : " (does NOT fit)");
}

/* DAPPLE's search alone on the GPT (one GPU per replica, the profile batch
 * per replica of the widest stage): with memory not binding (what the
 * planner found before activations were counted beyond a layer's output:
 * its times are the same, so this is issue 13's 19.2 s plan), without
 * recomputation, and with it where memory needs it. */
static void dapple_alone(const struct wp_layer_table *t, const struct wp_plan_hw *hw, int global_batch)
{
    struct wp_plan_model m;
    struct wp_err err;
    if (wp_plan_model_init(&m, t, hw, global_batch, &err))
        return;
    struct wp_plan before;
    wp_plan_init(&before);
    m.hw.memory_bytes = 1e18;
    if (wp_plan_dapple(&m, &before, &err) == 0)
        print_degrees("  DAPPLE alone, memory not binding", &before);
    wp_plan_destroy(&before);
    m.hw.memory_bytes = hw->memory_bytes;
    for (int r = WP_RECOMPUTE_NEVER; r <= WP_RECOMPUTE_WHERE_NEEDED; r++) {
        struct wp_plan p;
        wp_plan_init(&p);
        m.recompute = (enum wp_recompute)r;
        if (wp_plan_dapple(&m, &p, &err) == 0)
            print_degrees(r == WP_RECOMPUTE_NEVER ? "  DAPPLE alone" : "  DAPPLE alone, recomputing where needed", &p);
        else
            printf("  DAPPLE alone%s: %s\n", r == WP_RECOMPUTE_NEVER ? "" : ", recomputing where needed", err.msg);
        wp_plan_destroy(&p);
    }
    wp_plan_model_destroy(&m);
}

/* Plans the table on hw REPEATS times; prints the best time against goal_s. */
static int bench(const char *label, const struct wp_layer_table *t, const struct wp_plan_hw *hw, int global_batch,
                 double goal_s, int repeats, int even_slices, int max_chunks)
{
    struct wp_plan_model m;
    struct wp_err err;
    if (wp_plan_model_init(&m, t, hw, global_batch, &err)) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
        return 1;
    }
    m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
    m.even_slices = even_slices;
    m.max_chunks = max_chunks;
    double best = INFINITY;
    struct wp_plan keep;
    wp_plan_init(&keep);
    int rc = 0;
    for (int r = 0; r < repeats && rc == 0; r++) {
        struct wp_plan p;
        wp_plan_init(&p);
        double t0 = wp_monotonic_s();
        rc = wp_plan_search(&m, &p, &err) || wp_plan_kfkb_candidates(&m, &p, &err);
        double dt = wp_monotonic_s() - t0;
        if (rc == 0 && dt < best) {
            best = dt;
            wp_plan_destroy(&keep);
            keep = p;
        } else {
            wp_plan_destroy(&p);
        }
    }
    if (rc) {
        fprintf(stderr, "%s: %s\n", label, err.msg);
    } else {
        char shape[64];
        wp_plan_shape(&keep, shape, sizeof shape);
        if (strlen(shape) > 40)
            snprintf(shape, sizeof shape, "%d stages x %d", keep.nstages, keep.stages[0].replicas);
        printf("%-44s %4d layers %5d GPUs  %8.3f s (goal %4.1f s: %s)  plan %s, %ld plans evaluated at %d "
               "points, predicted %.4f s\n",
               label, t->nlayers, wp_plan_hw_devices(hw), best, goal_s, best < goal_s ? "met" : "NOT met", shape,
               keep.evaluations, keep.points, keep.predicted_iter_s);
        if (keep.model_flops > 0)
            print_degrees("  chosen", &keep);
    }
    wp_plan_destroy(&keep);
    wp_plan_model_destroy(&m);
    return rc;
}

static int from_files(const char *srcdir, const char *label, const char *profile, enum wp_layer_contract contract,
                      int profile_batch, const char *cluster, double memory, int global_batch, double goal,
                      int repeats)
{
    char lpath[1024], cpath[1024];
    snprintf(lpath, sizeof lpath, "%s/profiles/%s", srcdir, profile);
    snprintf(cpath, sizeof cpath, "%s/topology/%s", srcdir, cluster);
    struct wp_layer_table t;
    struct wp_cluster c;
    struct wp_plan_hw hw;
    struct wp_err err;
    wp_cluster_init(&c);
    int rc = wp_layer_table_read(&t, lpath, profile_batch, contract, &err) ||
             wp_cluster_read(cpath, &c, &err) || wp_plan_hw_from_cluster(&hw, &c, 0, memory, &err);
    if (rc)
        fprintf(stderr, "%s: %s\n", label, err.msg);
    else
        rc = bench(label, &t, &hw, global_batch, goal, repeats, 0, 1);
    wp_layer_table_destroy(&t);
    wp_cluster_destroy(&c);
    return rc;
}

int main(int argc, char **argv)
{
    const char *srcdir = argc > 1 ? argv[1] : ".";
    int repeats = argc > 2 ? atoi(argv[2]) : 3;
    if (repeats < 1)
        repeats = 1;
    int rc = 0;
    rc |= from_files(srcdir, "BERT-48, DAPPLE config A (2 x 8 V100)", "dapple-v100/bert-48-pbs-2.txt",
                     WP_CONTRACT_AUTO, 0, "dapple-config-a.cfg", 0, 64, 1.0, repeats);
    /* PipeDream's profile does not say its batch; 128 as DAPPLE's table II.
     * The frontier chain counts a tensor again at every boundary it
     * crosses, so its memory estimate is high: 32 GiB lets plans fit */
    rc |= from_files(srcdir, "ResNet-50 (PipeDream), 177 nodes, config B", "pipedream/resnet50.txt",
                     WP_CONTRACT_FRONTIER, 128, "dapple-config-b.cfg", 32.0 * 1024 * 1024 * 1024, 2048, 0.5,
                     repeats);
    rc |= from_files(srcdir, "ResNet-50 (PipeDream), branches contracted, B", "pipedream/resnet50.txt",
                     WP_CONTRACT_CUTS, 128, "dapple-config-b.cfg", 0, 2048, 0.5, repeats);
    /* GPT-3's shape at 150 TFLOP/s sustained, on 512 nodes of 8 H100 80GB
     * with NVSwitch (450 GB/s per GPU) and 400 Gbit/s per node */
    struct wp_gpt_shape g = {96, 12288, 96, 2048, 50257, 1, WP_PRECISION_BF16};
    struct wp_layer_table t;
    struct wp_err err;
    if (wp_layer_table_gpt(&t, &g, 150e12, &err) == 0) {
        struct wp_plan_hw hw = {"512 x 8 H100", "H100 80GB", 512, 8, {1e-6, 1 / 450e9}, {5e-6, 1 / 50e9},
                                80.0 * 1024 * 1024 * 1024, 0};
        /* with micro-batches wavepipe run executes (wavepipe plan's default) */
        rc |= bench("GPT 96 blocks (GPT-3 shape), 512 x 8 H100", &t, &hw, 1536, 10.0, repeats, 1, 1);
        rc |= bench("... and interleaved schedules (up to 4 chunks)", &t, &hw, 1536, 10.0, repeats, 1, 4);
        printf("  compute alone: %.3f s per iteration\n",
               (wp_layer_table_forward_s(&t) + wp_layer_table_backward_s(&t)) * 1536 / 4096);
        dapple_alone(&t, &hw, 1536);
        wp_layer_table_destroy(&t);
    } else {
        fprintf(stderr, "GPT table: %s\n", err.msg);
        rc = 1;
    }
    return rc;
}
