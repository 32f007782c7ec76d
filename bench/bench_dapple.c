/* DAPPLE's evaluation (Fan et al., PPoPP 2021, section VI) simulated at the
 * paper's scale: its V100 profiles on its configurations A, B and C
 * (topology/dapple-config-*.cfg) through wavepipe's planner, cost model and
 * simulator. One experiment per call, a tidy CSV on stdout, for
 * bench/reproduce/dapple.sh (make reproduce-dapple):
 *   table5     the planner's plan beside table V's (shape, split, ACR), and
 *              both plans simulated on the same costs
 *   speedup    figure 12: the planner's plan, data parallelism with and
 *              without overlap, and the same stages in GPipe's order, as
 *              speed-ups over one GPU running every micro-batch (VI-C)
 *   policy     table IV: warm-up policy B over A on configuration A
 *   placement  IV-B: the search with one placement policy only
 *   gpipe      table VI: BERT-48 on 2 GPUs of configuration B, GPipe and
 *              DAPPLE, with and without recomputation, micro-batch 2
 *   pipedream  table VII / figure 13: DAPPLE's and PipeDream's plans of
 *              table VII on 2 x 8 GPUs of configuration A
 *   strong     figure 14: 1 to 16 GPUs of configuration A, fixed batch
 *   weak       table VIII: the deepest BERT whose straight pipeline with
 *              recomputation fits 1, 2, 4 and 8 GPUs of configuration A
 * Planning follows the paper: DAPPLE's micro-batch rule (uneven slices),
 * no recomputation unless said, gradients overlapped with the backward
 * (wavepipe run's default) unless said.
 *
 * Usage: bench_dapple SRCDIR EXPERIMENT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/dapple_table5.h"
#include "plan/plan.h"
#include "plan/plan_search.h"

#define GIB (1024.0 * 1024 * 1024)

static const char *srcdir;

/* A case loaded and its cost model at the paper's settings. */
struct setup {
    struct wp_layer_table t;
    struct wp_plan_hw hw;
    struct wp_plan_model m;
};

static int setup_open(struct setup *s, const struct dapple_case *c, int devices, int global_batch)
{
    struct wp_err err;
    if (dapple_load(srcdir, c, devices, &s->t, &s->hw, &err)) {
        fprintf(stderr, "bench_dapple: %s: %s\n", c->file, err.msg);
        return -1;
    }
    if (wp_plan_model_init(&s->m, &s->t, &s->hw, global_batch, &err)) {
        fprintf(stderr, "bench_dapple: %s: %s\n", c->file, err.msg);
        wp_layer_table_destroy(&s->t);
        return -1;
    }
    s->m.even_slices = 0; /* DAPPLE's rule */
    s->m.recompute = WP_RECOMPUTE_NEVER;
    return 0;
}

static void setup_close(struct setup *s)
{
    wp_plan_model_destroy(&s->m);
    wp_layer_table_destroy(&s->t);
}

/* Seconds per iteration by the simulator (k = 1: 1F1B under the plan's
 * warm-up policy; k = M: GPipe), the fullest GPU's bytes into *peak. */
static double simulate(const struct wp_plan_model *m, const struct wp_plan *p, int k, double *peak)
{
    struct wp_err err;
    double s = NAN, b = NAN;
    if (wp_plan_simulate(m, p, k, 0, &s, &b, &err)) {
        fprintf(stderr, "bench_dapple: simulate: %s\n", err.msg);
        s = b = NAN;
    }
    if (peak)
        *peak = b;
    return s;
}

/* One GPU running every micro-batch in turn (the paper's speed-up base, VI-C). */
static double sequential_s(const struct wp_layer_table *t, int global_batch)
{
    return (wp_layer_table_forward_s(t) + wp_layer_table_backward_s(t)) * global_batch / t->profile_batch;
}

static char config_letter(const struct dapple_case *c)
{
    return (char)(c->config - 'a' + 'A');
}

/* "P:Q" in blocks for a two-stage plan, else "-". */
static void split_of(const struct wp_plan *p, const struct wp_layer_table *t, const char *block, char *buf,
                     size_t size)
{
    if (p->nstages != 2)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%d:%d", dapple_blocks_in(t, block, 0, p->stages[0].last_layer),
                 dapple_blocks_in(t, block, p->stages[1].first_layer, t->nlayers - 1));
}

static int plan_best(struct wp_plan_model *m, struct wp_plan *p)
{
    struct wp_err err;
    if (wp_plan_dapple(m, p, &err) == 0)
        return 0;
    fprintf(stderr, "bench_dapple: %s: %s\n", m->layers->name, err.msg);
    return -1;
}

static int table5(void)
{
    printf("model,config,global_batch,paper_plan,paper_split,paper_acr,plan,split,acr,iter_s,paper_plan_iter_s,"
           "paper_plan_fits\n");
    for (int i = 0; i < dapple_ncases; i++) {
        const struct dapple_case *c = &dapple_cases[i];
        struct setup s;
        if (setup_open(&s, c, 0, c->global_batch))
            return 1;
        struct wp_plan best, paper;
        struct wp_err err;
        wp_plan_init(&best);
        wp_plan_init(&paper);
        int rc = plan_best(&s.m, &best);
        if (rc == 0 && dapple_paper_plan(&s.m, c, &paper, &err)) {
            fprintf(stderr, "bench_dapple: %s: the paper's plan: %s\n", c->file, err.msg);
            rc = 1;
        }
        if (rc == 0) {
            char shape[256], split[32], paper_split[32] = "-", acr[16] = "-", paper_acr[16] = "-";
            wp_plan_shape(&best, shape, sizeof shape);
            split_of(&best, &s.t, c->block, split, sizeof split);
            if (c->split)
                snprintf(paper_split, sizeof paper_split, "%d:%d", c->split,
                         dapple_blocks_in(&s.t, c->block, 0, s.t.nlayers - 1) - c->split);
            if (best.acr >= 0)
                snprintf(acr, sizeof acr, "%.2f", best.acr);
            if (c->acr >= 0)
                snprintf(paper_acr, sizeof paper_acr, "%.2f", c->acr);
            printf("%s,%c,%d,%s,%s,%s,%s,%s,%s,%.6f,%.6f,%d\n", dapple_model_name(c), config_letter(c),
                   c->global_batch, c->paper, paper_split, paper_acr, shape, split, acr, simulate(&s.m, &best, 1, NULL),
                   simulate(&s.m, &paper, 1, NULL), paper.fits);
        }
        wp_plan_destroy(&best);
        wp_plan_destroy(&paper);
        setup_close(&s);
        if (rc)
            return 1;
    }
    return 0;
}

/* Data parallelism over every GPU, gradients accumulated over the
 * micro-batches; overlapped with the backward or not. */
static int data_parallel(struct wp_plan_model *m, int overlap, double *iter_s, double *peak, int *fits)
{
    int counts[1] = {m->layers->nlayers}, reps[1] = {wp_plan_hw_devices(&m->hw)};
    struct wp_plan p;
    struct wp_err err;
    wp_plan_init(&p);
    int saved = m->grad_overlap;
    m->grad_overlap = overlap;
    int rc = wp_plan_fixed(m, 1, counts, reps, &p, &err);
    if (rc == 0) {
        *iter_s = simulate(m, &p, 1, peak);
        *fits = p.fits;
    } else {
        fprintf(stderr, "bench_dapple: data parallel: %s\n", err.msg);
    }
    m->grad_overlap = saved;
    wp_plan_destroy(&p);
    return rc;
}

static void speedup_row(const char *model, const char *config, int gpus, int global_batch, const char *variant,
                        const char *plan, double seq_s, double iter_s, double peak, int fits)
{
    printf("%s,%s,%d,%d,%s,%s,%.6f,%.4f,%.3f,%d\n", model, config, gpus, global_batch, variant, plan, iter_s,
           seq_s / iter_s, peak / GIB, fits);
}

/* The planner's plan, DP with and without overlap and, with_gpipe and a
 * plan of several stages, its stages in GPipe's order (without
 * recomputation, and recomputing where its deeper in-flight count needs it)
 * on s. */
static int speedup_variants(struct setup *s, const char *model, const char *config, int global_batch,
                            int with_gpipe)
{
    int gpus = wp_plan_hw_devices(&s->hw);
    double seq = sequential_s(&s->t, global_batch), it, peak;
    int fits;
    if (data_parallel(&s->m, 0, &it, &peak, &fits))
        return -1;
    speedup_row(model, config, gpus, global_batch, "dp_no_overlap", "DP", seq, it, peak, fits);
    if (data_parallel(&s->m, 1, &it, &peak, &fits))
        return -1;
    speedup_row(model, config, gpus, global_batch, "dp_overlap", "DP", seq, it, peak, fits);
    struct wp_plan best;
    wp_plan_init(&best);
    if (plan_best(&s->m, &best)) {
        wp_plan_destroy(&best);
        return -1;
    }
    char shape[256];
    wp_plan_shape(&best, shape, sizeof shape);
    if (strlen(shape) > 40)
        snprintf(shape, sizeof shape, "%d stages", best.nstages);
    it = simulate(&s->m, &best, 1, &peak);
    speedup_row(model, config, gpus, global_batch, "dapple", shape, seq, it, peak, best.fits);
    if (!with_gpipe || best.nstages < 2) {
        wp_plan_destroy(&best);
        return 0;
    }
    it = simulate(&s->m, &best, best.microbatches, &peak);
    speedup_row(model, config, gpus, global_batch, "gpipe", shape, seq, it, peak, peak <= s->hw.memory_bytes);
    s->m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
    it = simulate(&s->m, &best, best.microbatches, &peak);
    s->m.recompute = WP_RECOMPUTE_NEVER;
    speedup_row(model, config, gpus, global_batch, "gpipe_rc", shape, seq, it, peak, peak <= s->hw.memory_bytes);
    wp_plan_destroy(&best);
    return 0;
}

static const char *speedup_header =
    "model,config,gpus,global_batch,variant,plan,iter_s,speedup,peak_gib,fits\n";

static int speedup(void)
{
    fputs(speedup_header, stdout);
    for (int i = 0; i < dapple_ncases; i++) {
        const struct dapple_case *c = &dapple_cases[i];
        struct setup s;
        if (setup_open(&s, c, 0, c->global_batch))
            return 1;
        char config[2] = {config_letter(c), 0};
        int rc = speedup_variants(&s, dapple_model_name(c), config, c->global_batch, 1);
        setup_close(&s);
        if (rc)
            return 1;
    }
    return 0;
}

static int policy(void)
{
    printf("model,config,plan,policy_chosen,iter_a_s,iter_b_s,speedup_b_over_a,peak_a_gib,peak_b_gib\n");
    for (int i = 0; i < dapple_ncases; i++) {
        const struct dapple_case *c = &dapple_cases[i];
        if (c->config != 'a' || strncmp(c->file, "dapple-v100/", 12) != 0)
            continue;
        struct setup s;
        if (setup_open(&s, c, 0, c->global_batch))
            return 1;
        struct wp_plan best;
        wp_plan_init(&best);
        int rc = plan_best(&s.m, &best);
        if (rc == 0) {
            char shape[256], chosen = best.policy;
            double pa, pb;
            wp_plan_shape(&best, shape, sizeof shape);
            best.policy = 'A';
            double a = simulate(&s.m, &best, 1, &pa);
            best.policy = 'B';
            double b = simulate(&s.m, &best, 1, &pb);
            printf("%s,A,%s,%c,%.6f,%.6f,%.4f,%.3f,%.3f\n", dapple_model_name(c), shape, chosen, a, b, a / b,
                   pa / GIB, pb / GIB);
        }
        wp_plan_destroy(&best);
        setup_close(&s);
        if (rc)
            return 1;
    }
    return 0;
}

static int placement(void)
{
    static const char *names[] = {"all", "fresh", "append", "scatter"};
    printf("model,config,policy,plan,placements,iter_s,fits\n");
    for (int i = 0; i < dapple_ncases; i++) {
        const struct dapple_case *c = &dapple_cases[i];
        struct setup s;
        if (setup_open(&s, c, 0, c->global_batch))
            return 1;
        for (int pol = 0; pol < 4; pol++) {
            s.m.place_only = pol; /* 0 all, else 1 + WP_PLACE_FRESH .. SCATTER */
            struct wp_plan best;
            wp_plan_init(&best);
            if (plan_best(&s.m, &best)) {
                printf("%s,%c,%s,none,-,nan,0\n", dapple_model_name(c), config_letter(c), names[pol]);
            } else {
                char shape[256], used[256] = "";
                wp_plan_shape(&best, shape, sizeof shape);
                if (strlen(shape) > 40)
                    snprintf(shape, sizeof shape, "%d stages", best.nstages);
                /* where the stages went: GPUs per node of each stage */
                for (int k = 0; k < best.nstages; k++) {
                    int per_node[64] = {0};
                    for (int d = 0; d < best.stages[k].replicas && d < 4096; d++)
                        if (best.stages[k].devices[d].node < 64)
                            per_node[best.stages[k].devices[d].node]++;
                    size_t len = strlen(used);
                    snprintf(used + len, sizeof used - len, "%s%s(", k ? " " : "",
                             wp_place_policy_name(best.stages[k].policy));
                    for (int n = 0, first = 1; n < s.hw.nodes && n < 64; n++)
                        if (per_node[n]) {
                            len = strlen(used);
                            snprintf(used + len, sizeof used - len, "%sn%d:%d", first ? "" : "+", n, per_node[n]);
                            first = 0;
                        }
                    len = strlen(used);
                    snprintf(used + len, sizeof used - len, ")");
                }
                if (strlen(used) > 120)
                    snprintf(used, sizeof used, "-");
                printf("%s,%c,%s,%s,%s,%.6f,%d\n", dapple_model_name(c), config_letter(c), names[pol], shape, used,
                       simulate(&s.m, &best, 1, NULL), best.fits);
            }
            wp_plan_destroy(&best);
        }
        setup_close(&s);
    }
    return 0;
}

/* Table VI: BERT-48 as 2 stages of 24 blocks on 2 GPUs of configuration B,
 * micro-batches of 2 (the profile batch). */
static int gpipe(void)
{
    static const struct dapple_case bert2 = {"dapple-v100/bert-48-pbs-2.txt", "auto", "layer_", 0, 0, 'b',
                                             "straight", 0, -1};
    static const int ms[] = {2, 3, 5, 8, 16};
    printf("schedule,micro_batches,micro_batch,iter_s,throughput_samples_s,peak_gib,fits\n");
    for (int v = 0; v < 4; v++) {
        int is_gpipe = v < 2, rc_on = v % 2;
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            struct setup s;
            if (setup_open(&s, &bert2, 2, 2 * ms[i]))
                return 1;
            s.m.recompute = rc_on ? WP_RECOMPUTE_ALWAYS : WP_RECOMPUTE_NEVER;
            struct wp_plan p;
            struct wp_err err;
            wp_plan_init(&p);
            int rc = dapple_paper_plan(&s.m, &bert2, &p, &err);
            if (rc == 0) {
                p.policy = 'A';
                double peak, it = simulate(&s.m, &p, is_gpipe ? p.microbatches : 1, &peak);
                printf("%s%s,%d,%d,%.6f,%.4f,%.3f,%d\n", is_gpipe ? "gpipe" : "dapple", rc_on ? "_rc" : "",
                       p.microbatches, p.micro_batch, it, p.global_batch / it, peak / GIB,
                       peak <= s.hw.memory_bytes);
            } else {
                fprintf(stderr, "bench_dapple: gpipe: %s\n", err.msg);
            }
            wp_plan_destroy(&p);
            setup_close(&s);
            if (rc)
                return 1;
        }
    }
    return 0;
}

/* Table VII and figure 13: DAPPLE's and PipeDream's plans on 2 x 8 GPUs
 * of configuration A as the table gives them ((start, end) layers @ GPUs;
 * PipeDream's VGG-19 ranges share their end layer with the next start, read
 * as [start, end)), on wavepipe's costs, with DP and wavepipe's planner. */
static int pipedream(void)
{
    static const struct {
        int model_case, global_batch, dapple_n, dapple_layers[2], dapple_reps[2], pd_n, pd_layers[4],
            pd_reps[4]; /* pd_n 0: straight */
    } runs[] = {
        {3, 1024, 2, {17, 9}, {14, 2}, 4, {11, 6, 2, 7}, {8, 6, 1, 1}}, /* VGG-19: (0,16)@G0-13 (17,25)@G14-15 */
        {15, 128, 2, {31, 13}, {8, 8}, 0, {0}, {0}},                   /* AmoebaNet-36: (0,30) (31,43) */
        {12, 128, 2, {23, 0}, {8, 8}, 0, {0}, {0}},                    /* XLNet-36: (0,22) (23,41) */
    };
    printf("model,config,global_batch,plan_by,plan,iter_s,speedup_over_dp,fits\n");
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const struct dapple_case *c = &dapple_cases[runs[r].model_case];
        struct setup s;
        if (setup_open(&s, c, 0, runs[r].global_batch))
            return 1;
        double dp, peak;
        int fits, rc = data_parallel(&s.m, 1, &dp, &peak, &fits);
        struct wp_plan plans[3];
        const char *by[3] = {"dapple_table7", "pipedream_table7", "wavepipe"};
        struct wp_err err;
        for (int k = 0; k < 3; k++)
            wp_plan_init(&plans[k]);
        if (rc == 0) {
            int layers[2] = {runs[r].dapple_layers[0], runs[r].dapple_layers[1]};
            if (layers[1] == 0) /* the rest of the table */
                layers[1] = s.t.nlayers - layers[0];
            rc = wp_plan_fixed(&s.m, runs[r].dapple_n, layers, runs[r].dapple_reps, &plans[0], &err);
        }
        if (rc == 0) {
            if (runs[r].pd_n) {
                rc = wp_plan_fixed(&s.m, runs[r].pd_n, runs[r].pd_layers, runs[r].pd_reps, &plans[1], &err);
            } else {
                struct dapple_case straight = *c;
                straight.paper = "straight";
                rc = dapple_paper_plan(&s.m, &straight, &plans[1], &err);
            }
        }
        if (rc)
            fprintf(stderr, "bench_dapple: pipedream: %s: %s\n", c->file, err.msg);
        else
            rc = plan_best(&s.m, &plans[2]);
        if (rc == 0) {
            printf("%s,A,%d,dp,DP,%.6f,1.0000,%d\n", dapple_model_name(c), runs[r].global_batch, dp, fits);
            for (int k = 0; k < 3; k++) {
                char shape[256];
                wp_plan_shape(&plans[k], shape, sizeof shape);
                double it = simulate(&s.m, &plans[k], 1, NULL);
                printf("%s,A,%d,%s,%s,%.6f,%.4f,%d\n", dapple_model_name(c), runs[r].global_batch, by[k], shape, it,
                       dp / it, plans[k].fits);
            }
        }
        for (int k = 0; k < 3; k++)
            wp_plan_destroy(&plans[k]);
        setup_close(&s);
        if (rc)
            return 1;
    }
    return 0;
}

/* Figure 14: GNMT-16 (2048), BERT-48 (128), XLNet-36 (128), AmoebaNet-36
 * (256) on 1, 2, 4, 8 and 16 GPUs of configuration A (the planner takes
 * one node's GPUs or whole nodes: 10, 12 and 14 are not among them). */
static int strong(void)
{
    static const struct {
        int model_case, global_batch;
    } runs[] = {{6, 2048}, {9, 128}, {12, 128}, {15, 256}};
    static const int gpus[] = {1, 2, 4, 8, 16};
    fputs(speedup_header, stdout);
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        const struct dapple_case *c = &dapple_cases[runs[r].model_case];
        for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++) {
            struct setup s;
            if (setup_open(&s, c, gpus[g], runs[r].global_batch))
                return 1;
            int rc = speedup_variants(&s, dapple_model_name(c), "A", runs[r].global_batch, 0);
            setup_close(&s);
            if (rc)
                return 1;
        }
    }
    return 0;
}

/* BERT-48's profile with `blocks` copies of its first encoder layer in
 * place of its 48 (embeddings before, head after, as in the profile). */
static int bert_deep(const struct wp_layer_table *bert, int blocks, struct wp_layer_table *out, struct wp_err *err)
{
    int first = -1, last = -1;
    for (int i = 0; i < bert->nlayers; i++)
        if (dapple_blocks_in(bert, "layer_", i, i)) {
            if (first < 0)
                first = i;
            last = i;
        }
    if (first < 0)
        return wp_errorf(err, "%s: no encoder layers (layer_N)", bert->name);
    wp_layer_table_init(out);
    snprintf(out->name, sizeof out->name, "bert-%d", blocks);
    out->profile_batch = bert->profile_batch;
    int rc = 0;
    for (int i = 0; i < first && rc == 0; i++)
        rc = wp_layer_table_append(out, &bert->layers[i], err);
    for (int b = 0; b < blocks && rc == 0; b++) {
        struct wp_layer l = bert->layers[first];
        snprintf(l.name, sizeof l.name, "layer_%d", b);
        rc = wp_layer_table_append(out, &l, err);
    }
    for (int i = last + 1; i < bert->nlayers && rc == 0; i++)
        rc = wp_layer_table_append(out, &bert->layers[i], err);
    if (rc)
        wp_layer_table_destroy(out);
    return rc;
}

/* The straight pipeline of BERT-`blocks` on s's GPUs with recomputation:
 * 1 when it fits; its time, parameters and busy fraction. */
static int bert_fits(const struct setup *s, int blocks, int global_batch, double *iter_s, double *params,
                     double *busy)
{
    static const struct dapple_case straight = {"dapple-v100/bert-48-pbs-2.txt", "auto", "layer_", 0, 0, 'a',
                                                "straight", 0, -1};
    struct wp_layer_table t;
    struct wp_plan_model m;
    struct wp_plan p;
    struct wp_err err;
    if (bert_deep(&s->t, blocks, &t, &err)) {
        fprintf(stderr, "bench_dapple: %s\n", err.msg);
        return -1;
    }
    int fits = -1;
    wp_plan_init(&p);
    if (wp_plan_model_init(&m, &t, &s->hw, global_batch, &err) == 0) {
        m.even_slices = 0;
        m.recompute = WP_RECOMPUTE_ALWAYS;
        if (dapple_paper_plan(&m, &straight, &p, &err) == 0) {
            fits = p.fits;
            if (iter_s) {
                *iter_s = simulate(&m, &p, 1, NULL);
                *params = wp_layer_table_parameter_bytes(&t) / 4; /* fp32 */
                *busy = sequential_s(&t, global_batch) / (wp_plan_hw_devices(&s->hw) * *iter_s);
            }
        }
        wp_plan_model_destroy(&m);
    }
    if (fits < 0)
        fprintf(stderr, "bench_dapple: bert-%d: %s\n", blocks, err.msg);
    wp_plan_destroy(&p);
    wp_layer_table_destroy(&t);
    return fits;
}

/* Table VIII: the deepest BERT (encoder layers L) whose straight pipeline
 * over G GPUs of configuration A fits with recomputation; the global batch
 * 64 in micro-batches of 2 (the paper gives only "reasonable input size"). */
static int weak(void)
{
    static const struct dapple_case bert = {"dapple-v100/bert-48-pbs-2.txt", "auto", "layer_", 0, 0, 'a',
                                            "straight", 0, -1};
    static const int gpus[] = {1, 2, 4, 8};
    const int global_batch = 64;
    printf("gpus,max_layers,params_b,weights_gib,iter_s,busy\n");
    for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++) {
        struct setup s;
        if (setup_open(&s, &bert, gpus[g], global_batch))
            return 1;
        int lo = 0, hi = 4096; /* lo fits (or 0), hi does not */
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2, f = bert_fits(&s, mid, global_batch, NULL, NULL, NULL);
            if (f < 0) {
                setup_close(&s);
                return 1;
            }
            if (f)
                lo = mid;
            else
                hi = mid;
        }
        double it = NAN, params = NAN, busy = NAN;
        if (lo > 0 && bert_fits(&s, lo, global_batch, &it, &params, &busy) < 0) {
            setup_close(&s);
            return 1;
        }
        printf("%d,%d,%.3f,%.2f,%.6f,%.3f\n", gpus[g], lo, params / 1e9, params * 16 / GIB, it, busy);
        setup_close(&s);
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(void);
    } experiments[] = {{"table5", table5}, {"speedup", speedup}, {"policy", policy}, {"placement", placement},
                       {"gpipe", gpipe},   {"pipedream", pipedream}, {"strong", strong},
                       {"weak", weak}};
    if (argc != 3) {
        fprintf(stderr, "usage: bench_dapple SRCDIR table5|speedup|policy|placement|gpipe|pipedream|strong|weak\n");
        return 2;
    }
    srcdir = argv[1];
    for (size_t i = 0; i < sizeof experiments / sizeof experiments[0]; i++)
        if (strcmp(argv[2], experiments[i].name) == 0)
            return experiments[i].run();
    fprintf(stderr, "bench_dapple: unknown experiment '%s' (table5, speedup, policy, placement, gpipe, "
                    "pipedream, strong, weak)\n", argv[2]);
    return 2;
}
