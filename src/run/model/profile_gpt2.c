/* A GPT-2 model's layer tables (see profile_gpt2.h): the analytic table
 * per micro-batch size, its times replaced by those of a 3-block copy of the
 * model timed stage by stage when measuring. */
#include <config.h>

#include "run/model/profile_gpt2.h"

#include <stdlib.h>
#include <string.h>

#ifdef WP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "kernels/kernels.h"
#include "plan/layers.h"
#include "plan/layers_report.h"
#include "run/model/gpt2_config.h"
#include "run/model/gpt2_stage.h"
#include "util/clock.h"
#include "util/rng.h"
#include "util/stats.h"
#include "util/strutil.h"

struct pass_times {
    double forward_s, backward_s, weights_s; /* medians */
    double forward_spread;                   /* (max - min) / median of the forward */
};

/* Fills n floats of backend memory with N(0, scale) values. */
static int fill_normal(const struct wp_kernel_ops *k, float *dst, size_t n, float scale, struct wp_rng *r,
                       struct wp_err *err)
{
    float *host = malloc(n * sizeof *host);
    if (!host)
        return wp_errorf(err, "out of memory");
    for (size_t i = 0; i < n; i++)
        host[i] = scale * (float)wp_rng_normal(r);
    k->to_device(dst, host, n * sizeof *host);
    free(host);
    return 0;
}

/* Builds stage [first, end) of g with one slot and a split backward, its
 * tokens, targets, input and output gradient drawn at random. */
static int stage_open(struct wp_gpt2_stage *st, const struct wp_kernel_ops *k, const struct wp_gpt2_config *g,
                      int first, int end, int B, struct wp_err *err)
{
    if (wp_gpt2_stage_init(st, k, g, first, end, B, 1, 1, 0, 1234, NULL, err))
        return -1;
    int T = g->sequence_length, rc = 0;
    size_t n_act = (size_t)B * T * g->channels;
    struct wp_rng r;
    wp_rng_seed(&r, 1234, (unsigned long long)first);
    int *tokens = malloc((size_t)B * T * sizeof *tokens), *targets = malloc((size_t)B * T * sizeof *targets);
    if (!tokens || !targets) {
        rc = wp_errorf(err, "out of memory");
    } else {
        for (int i = 0; i < B * T; i++) {
            tokens[i] = (int)(wp_rng_next(&r) % (unsigned long long)g->vocabulary);
            targets[i] = (int)(wp_rng_next(&r) % (unsigned long long)g->vocabulary);
        }
        wp_gpt2_stage_set_tokens(st, 0, tokens, targets);
        if (!st->layout.has_embedding)
            rc = fill_normal(k, st->slots[0].input, n_act, 1.0f, &r, err);
        if (rc == 0 && !st->layout.has_head)
            rc = fill_normal(k, st->slots[0].dout, n_act, 1e-3f, &r, err);
    }
    free(tokens);
    free(targets);
    if (rc)
        wp_gpt2_stage_destroy(st);
    return rc;
}

/* One forward, B and W of the stage: seconds into t[0..2]. */
static void time_passes(struct wp_gpt2_stage *st, double t[3])
{
    const struct wp_kernel_ops *k = st->k;
    float dloss = 1.0f / (float)(st->B * st->g.sequence_length);
    k->synchronize();
    double t0 = wp_monotonic_s();
    wp_gpt2_stage_forward(st, 0);
    k->synchronize();
    double t1 = wp_monotonic_s();
    wp_gpt2_stage_backward(st, 0, dloss);
    k->synchronize();
    double t2 = wp_monotonic_s();
    wp_gpt2_stage_backward_weights(st, 0);
    k->synchronize();
    double t3 = wp_monotonic_s();
    t[0] = t1 - t0;
    t[1] = t2 - t1;
    t[2] = t3 - t2;
}

/* Replaces the FLOP-count times of table t (built at 1 FLOP/s) with times
 * measured on a 3-block copy of the model: stages [0,1), [1,2), [2,3) are
 * timed in turn within each repetition, so drift on a shared machine hits
 * all three alike, and the embedding and the head are the medians of the
 * per-repetition differences to the middle block. Prints the figures. */
static int measure(struct wp_layer_table *t, const struct wp_kernel_ops *k, const struct wp_gpt2_config *model,
                   int B, int repeat, FILE *out, struct wp_err *err)
{
    enum { WARMUP = 2 };
    struct wp_gpt2_config g3 = *model;
    g3.layers = 3;
    struct wp_gpt2_stage st[3];
    int opened = 0, rc = 0;
    while (opened < 3 && rc == 0) /* stage_open cleans up after itself when it fails */
        if ((rc = stage_open(&st[opened], k, &g3, opened, opened + 1, B, err)) == 0)
            opened++;
    /* samples[row][pass][rep]: rows embedding, block, head */
    double *samples = rc ? NULL : malloc(9 * (size_t)repeat * sizeof *samples);
    if (rc == 0 && !samples)
        rc = wp_errorf(err, "out of memory");
    if (rc) {
        for (int i = 0; i < opened; i++)
            wp_gpt2_stage_destroy(&st[i]);
        return -1;
    }
    fprintf(out, "timing %s kernels: %d repetitions after %d warm-up, micro-batch %d x %d tokens\n", k->name, repeat,
           WARMUP, B, g3.sequence_length);
    fflush(out);
    for (int it = -WARMUP; it < repeat; it++) {
        double tt[3][3];
        for (int s = 0; s < 3; s++)
            time_passes(&st[s], tt[s]);
        if (it < 0)
            continue;
        for (int p = 0; p < 3; p++) {
            samples[(0 * 3 + p) * repeat + it] = tt[0][p] - tt[1][p];
            samples[(1 * 3 + p) * repeat + it] = tt[1][p];
            samples[(2 * 3 + p) * repeat + it] = tt[2][p] - tt[1][p];
        }
    }
    struct pass_times rows[3];
    for (int r = 0; r < 3; r++) {
        double med[3];
        for (int p = 0; p < 3; p++) {
            struct wp_stat3 s3 = wp_stat3_sorted(samples + (r * 3 + p) * repeat, (size_t)repeat);
            med[p] = s3.median > 0 ? s3.median : 0; /* a difference below the noise */
            if (p == 0)
                rows[r].forward_spread = r == 1 && s3.median > 0 ? (s3.max - s3.min) / s3.median : 0;
        }
        rows[r].forward_s = med[0];
        rows[r].backward_s = med[1];
        rows[r].weights_s = med[2];
    }
    free(samples);
    /* The embedding's parameters as the runtime holds them (wte and all
     * max_positions rows of wpe): the first stage less a block. */
    t->layers[0].parameter_bytes = sizeof(float) * (double)(st[0].layout.total - st[1].layout.total);
    t->layers[0].optimizer_bytes = wp_adam_state_bytes_fp32(t->layers[0].parameter_bytes);
    for (int i = 0; i < 3; i++)
        wp_gpt2_stage_destroy(&st[i]);

    fprintf(out, "%-10s %12s %12s %12s %12s\n", "pass", "forward_ms", "backward_ms", "weights_ms", "fwd_GFLOP/s");
    const char *names[3] = {"embedding", "block", "head"};
    int layer_of[3] = {0, 1, t->nlayers - 1};
    for (int i = 0; i < 3; i++) {
        double flops = t->layers[layer_of[i]].forward_s; /* the table holds FLOPs at 1 FLOP/s */
        double gflops = rows[i].forward_s > 0 ? flops / rows[i].forward_s / 1e9 : 0;
        fprintf(out, "%-10s %12.4f %12.4f %12.4f %12.2f\n", names[i], 1e3 * rows[i].forward_s, 1e3 * rows[i].backward_s,
               1e3 * rows[i].weights_s, gflops);
    }
    fprintf(out, "block forward spread (max - min) / median: %.0f%%; embedding and head are their\n"
           "stage less the middle block, median over repetitions (0: below the noise)\n\n",
           100 * rows[1].forward_spread);
    for (int i = 0; i < t->nlayers; i++) {
        const struct pass_times *p = &rows[i == 0 ? 0 : i == t->nlayers - 1 ? 2 : 1];
        t->layers[i].forward_s = p->forward_s;
        t->layers[i].backward_s = p->backward_s + p->weights_s;
        t->layers[i].weights_s = p->weights_s;
    }
    t->weights_known = 1;
    snprintf(t->source, sizeof t->source,
             "measured with wavepipe's %s kernels in %s: GPT-2 L=%d C=%d NH=%d T=%d V=%d, micro-batch %d, median of "
             "%d; every block timed as one",
             k->name, wp_precision_name(k->get_precision()), model->layers, model->channels, model->heads,
             model->sequence_length, model->vocabulary, B, repeat);
    return 0;
}

/* The kernels to time: the CPU's, or the GPU's (checked to be there). */
static int kernels_for(int cuda, const struct wp_kernel_ops **k, struct wp_err *err)
{
    *k = &wp_kernels_cpu;
    if (!cuda)
        return 0;
#ifdef WP_HAVE_CUDA
    int ndev = 0;
    *k = &wp_kernels_cuda;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        return wp_errorf(err, "--device cuda: no CUDA device visible");
    return 0;
#else
    return wp_errorf(err, "--device cuda: this build has no CUDA (configure found no nvcc)");
#endif
}

/* Where the table of micro-batch B goes: OUT.cfg, or OUT.bB.cfg with
 * several sizes. */
static void output_path(const char *output, int several, int B, char *path, size_t size)
{
    if (several) {
        const char *dot = strrchr(output, '.'), *slash = strrchr(output, '/');
        if (!dot || (slash && dot < slash))
            dot = output + strlen(output);
        snprintf(path, size, "%.*s.b%d%s", (int)(dot - output), output, B, dot);
    } else {
        wp_strlcpy(path, output, size);
    }
}

/* One micro-batch size's table: made, measured unless analytic, printed
 * and written; *block_s its block's forward + backward. */
static int profile_size(const struct wp_profile_gpt2_options *o, const struct wp_gpt2_config *g,
                        const struct wp_kernel_ops *k, int B, int several, double *block_s, FILE *out,
                        struct wp_err *err)
{
    struct wp_layer_table t;
    wp_layer_table_init(&t);
    struct wp_gpt_shape shape = {g->layers, g->channels, g->heads, g->sequence_length, g->vocabulary, B, o->precision};
    int rc = o->gpu ? wp_layer_table_gpt_gpu(&t, &shape, o->gpu, o->flash, err)
                    : wp_layer_table_gpt(&t, &shape, o->analytic ? o->flops_per_s : 1.0, err);
    if (rc == 0) {
        const char *slash = strrchr(o->model_path, '/');
        wp_strlcpy(t.name, slash ? slash + 1 : o->model_path, sizeof t.name);
        char *dot = strrchr(t.name, '.');
        if (dot)
            *dot = '\0';
    }
    if (rc == 0 && !o->analytic)
        rc = measure(&t, k, g, B, o->repeat, out, err);
    char path[4200];
    if (o->output)
        output_path(o->output, several, B, path, sizeof path);
    if (rc == 0) {
        *block_s = t.nlayers > 2 ? t.layers[1].forward_s + t.layers[1].backward_s : 0;
        rc = wp_layer_table_print_and_write(out, &t, o->output ? path : NULL, err);
        if (several)
            fprintf(out, "\n");
    }
    wp_layer_table_destroy(&t);
    return rc;
}

int wp_profile_gpt2(const struct wp_profile_gpt2_options *o, FILE *out, struct wp_err *err)
{
    struct wp_run_config cfg;
    wp_run_config_default(&cfg);
    if (wp_run_config_read(o->model_path, &cfg, err) || wp_run_config_check(&cfg, err))
        return -1;
    int sizes[WP_PROFILE_MAX_SIZES], nsizes = o->nsizes < WP_PROFILE_MAX_SIZES ? o->nsizes : WP_PROFILE_MAX_SIZES;
    if (nsizes)
        memcpy(sizes, o->sizes, (size_t)nsizes * sizeof *sizes);
    if (nsizes == 0)
        sizes[nsizes++] = cfg.train.global_batch % cfg.train.micro_batches == 0
                              ? cfg.train.global_batch / cfg.train.micro_batches
                              : 1;
    const struct wp_kernel_ops *k = &wp_kernels_cpu;
    if (!o->analytic && kernels_for(o->cuda, &k, err))
        return -1;
    if (!o->analytic)
        k->set_precision(o->precision); /* the kernels timed as a run in that precision runs them */
    double block_s[WP_PROFILE_MAX_SIZES] = {0};
    for (int i = 0; i < nsizes; i++)
        if (profile_size(o, &cfg.model, k, sizes[i], nsizes > 1, &block_s[i], out, err))
            return -1;
    if (nsizes > 1) {
        fprintf(out, "%-12s %22s %22s\n", "micro_batch", "block_fwd+bwd_ms", "per_sequence_ms");
        for (int i = 0; i < nsizes; i++)
            fprintf(out, "%-12d %22.4f %22.4f\n", sizes[i], 1e3 * block_s[i], 1e3 * block_s[i] / sizes[i]);
    }
    return 0;
}
