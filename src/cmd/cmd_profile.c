/* `wavepipe profile`: the planner's layer table for a model, three ways:
 *  - measured: GPT-2's embedding, one transformer block and the head timed
 *    with the runtime's own kernels (the stages `wavepipe run` executes),
 *    forward, input-gradient backward (B) and weight-gradient backward (W);
 *  - analytic: the same layers from FLOP counts at a given FLOP/s;
 *  - converted: a DAPPLE/PipeDream profile text file, contracted to a chain
 *    (or a wavepipe-layers file, read back and checked).
 * Prints the table and writes it in wavepipe's libconfig layer format. */
#include <config.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "cli/cli.h"
#include "cmd/commands.h"
#include "kernels/kernels.h"
#include "plan/layers.h"
#include "run/model/gpt2_config.h"
#include "run/model/gpt2_stage.h"
#include "util/rng.h"
#include "util/clock.h"
#include "util/stats.h"
#include "util/strutil.h"

#define CMD "profile"
#define MAX_REPEAT 1000
#define MAX_SIZES 16

static void usage(void)
{
    printf("Usage: wavepipe profile --model MODEL.cfg [--micro-batch B,...] [--repeat N] [--device cpu|cuda] [-o OUT.cfg]\n"
           "       wavepipe profile --model MODEL.cfg --analytic --flops-per-s X [--micro-batch B] [-o OUT.cfg]\n"
           "       wavepipe profile --convert PROFILE.txt [--contract auto|lines|cuts|frontier] [--batch B] [-o OUT.cfg]\n\n"
           "Makes the planner's layer table: per layer, the forward and backward time of\n"
           "one micro-batch, the activation bytes at its output, its parameter bytes and\n"
           "its optimizer state (AdamW's m and v in float32).\n\n"
           "Measured (default with --model): builds the GPT-2 of MODEL.cfg as three\n"
           "one-block stages (embedding+block, block, block+head) with the runtime's\n"
           "kernels and times forward, backward (B: input gradients) and weight gradients\n"
           "(W) N times after one warm-up; the median is kept. Every block of the model\n"
           "has the middle block's times; the embedding and the head are the first and\n"
           "last stage less one block (0 when that difference is below the noise).\n"
           "The table's backward is B + W.\n\n"
           "Analytic: the layers of wavepipe's GPT table from FLOP counts at X FLOP/s.\n"
           "Converted: a DAPPLE/PipeDream profile (shared/layer-profiles format), or a\n"
           "wavepipe-layers file (read back and checked). How a graph becomes a chain:\n"
           "'lines' takes the node lines in file order (DAPPLE's BERT, XLNet, AmoebaNet),\n"
           "'cuts' contracts branches at nodes every path passes (files whose lines are\n"
           "not in order: PipeDream's), 'frontier' keeps every node and counts every\n"
           "tensor crossing a boundary; 'auto' (default) is lines when every edge points\n"
           "forward in line order, else cuts.\n\n"
           "Options:\n"
           "  --model FILE         GPT-2 model settings (as for `wavepipe run`)\n"
           "  --micro-batch B,...  sequences per micro-batch, one table per size (default:\n"
           "                       the model file's global_batch / micro_batches); with\n"
           "                       several sizes, -o OUT.cfg writes OUT.bB.cfg for each\n"
           "  --repeat N           timed repetitions per pass (default 5)\n"
           "  --device cpu|cuda    kernels to time (cuda: CUDA build with a GPU)\n"
           "  --analytic           FLOP counts instead of measuring\n"
           "  --flops-per-s X      for --analytic, e.g. 1.25e14\n"
           "  --convert FILE       read a profile text file instead\n"
           "  --contract MODE      auto (default), lines, cuts or frontier\n"
           "  --batch B            profile batch when the file name has no pbs-N\n"
           "  -o, --output FILE    write the table (wavepipe-layers libconfig)\n"
           "  -h, --help           this text\n");
}

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
                   int B, int repeat, struct wp_err *err)
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
    printf("timing %s kernels: %d repetitions after %d warm-up, micro-batch %d x %d tokens\n", k->name, repeat,
           WARMUP, B, g3.sequence_length);
    fflush(stdout);
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

    printf("%-10s %12s %12s %12s %12s\n", "pass", "forward_ms", "backward_ms", "weights_ms", "fwd_GFLOP/s");
    const char *names[3] = {"embedding", "block", "head"};
    int layer_of[3] = {0, 1, t->nlayers - 1};
    for (int i = 0; i < 3; i++) {
        double flops = t->layers[layer_of[i]].forward_s; /* the table holds FLOPs at 1 FLOP/s */
        double gflops = rows[i].forward_s > 0 ? flops / rows[i].forward_s / 1e9 : 0;
        printf("%-10s %12.4f %12.4f %12.4f %12.2f\n", names[i], 1e3 * rows[i].forward_s, 1e3 * rows[i].backward_s,
               1e3 * rows[i].weights_s, gflops);
    }
    printf("block forward spread (max - min) / median: %.0f%%; embedding and head are their\n"
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
             "measured with wavepipe's %s kernels: GPT-2 L=%d C=%d NH=%d T=%d V=%d, micro-batch %d, median of %d; "
             "every block timed as one",
             k->name, model->layers, model->channels, model->heads, model->sequence_length, model->vocabulary, B,
             repeat);
    return 0;
}

static void print_table(const struct wp_layer_table *t)
{
    printf("%s: %d layers, profile batch %d%s\n", t->name, t->nlayers, t->profile_batch,
           t->profile_batch_assumed ? " (assumed)" : "");
    printf("source: %s\n", t->source);
    printf("%-4s %-28s %12s %12s %14s %14s %14s\n", "#", "layer", "forward_ms", "backward_ms", "activation_B",
           "parameter_B", "optimizer_B");
    for (int i = 0; i < t->nlayers; i++) {
        const struct wp_layer *l = &t->layers[i];
        printf("%-4d %-28.28s %12.4f %12.4f %14.0f %14.0f %14.0f\n", i, l->name, 1e3 * l->forward_s,
               1e3 * l->backward_s, l->activation_bytes, l->parameter_bytes, l->optimizer_bytes);
    }
    printf("total: forward %.4f ms, backward %.4f ms, parameters %.0f bytes, optimizer state %.0f bytes\n",
           1e3 * wp_layer_table_forward_s(t), 1e3 * wp_layer_table_backward_s(t), wp_layer_table_parameter_bytes(t),
           wp_layer_table_optimizer_bytes(t));
}

/* Prints the table; writes it to path (atomically) when path is not NULL. */
static int print_and_write(const struct wp_layer_table *t, const char *path, struct wp_err *err)
{
    print_table(t);
    if (!path)
        return 0;
    if (wp_layer_table_write(path, t, err))
        return -1;
    printf("wrote %s\n", path);
    return 0;
}

/* "1,2,4" -> sizes; 0 or a usage error (2). */
static int parse_sizes(const char *text, int *sizes, int *n)
{
    char buf[256];
    wp_strlcpy(buf, text, sizeof buf);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_SIZES)
            return wp_usage_error(CMD, "--micro-batch: at most %d sizes", MAX_SIZES);
        if (wp_parse_int_option(CMD, "--micro-batch", tok, 1, 1 << 20, &sizes[(*n)++]))
            return 2;
    }
    if (*n == 0)
        return wp_usage_error(CMD, "--micro-batch '%s': expected sizes such as 1,2,4", text);
    return 0;
}

int wp_cmd_profile(int argc, char **argv)
{
    enum { OPT_MODEL = 1000, OPT_MB, OPT_REPEAT, OPT_DEVICE, OPT_ANALYTIC, OPT_FLOPS, OPT_CONVERT, OPT_CONTRACT,
           OPT_BATCH };
    static const struct option longopts[] = {{"model", required_argument, NULL, OPT_MODEL},
                                             {"micro-batch", required_argument, NULL, OPT_MB},
                                             {"repeat", required_argument, NULL, OPT_REPEAT},
                                             {"device", required_argument, NULL, OPT_DEVICE},
                                             {"analytic", no_argument, NULL, OPT_ANALYTIC},
                                             {"flops-per-s", required_argument, NULL, OPT_FLOPS},
                                             {"convert", required_argument, NULL, OPT_CONVERT},
                                             {"contract", required_argument, NULL, OPT_CONTRACT},
                                             {"batch", required_argument, NULL, OPT_BATCH},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *model_path = NULL, *convert = NULL, *output = NULL, *device = "cpu";
    int sizes[MAX_SIZES], nsizes = 0, repeat = 5, analytic = 0, batch = 0;
    const char *measure_option = NULL, *convert_option = NULL; /* one given, to name in errors */
    double flops_per_s = 0;
    enum wp_layer_contract contract = WP_CONTRACT_AUTO;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_MODEL: model_path = optarg; break;
        case OPT_CONVERT: convert = optarg; break;
        case 'o': output = optarg; break;
        case OPT_ANALYTIC: analytic = 1; break;
        case OPT_DEVICE:
            measure_option = "--device";
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0)
                return wp_usage_error(CMD, "--device '%s': expected cpu or cuda", optarg);
            device = optarg;
            break;
        case OPT_MB:
            if (parse_sizes(optarg, sizes, &nsizes))
                return 2;
            break;
        case OPT_REPEAT:
            measure_option = "--repeat";
            if (wp_parse_int_option(CMD, "--repeat", optarg, 1, MAX_REPEAT, &repeat))
                return 2;
            break;
        case OPT_BATCH:
            convert_option = "--batch";
            if (wp_parse_int_option(CMD, "--batch", optarg, 1, 1 << 20, &batch))
                return 2;
            break;
        case OPT_FLOPS: {
            char *end;
            flops_per_s = strtod(optarg, &end);
            if (end == optarg || *end || !(flops_per_s > 0))
                return wp_usage_error(CMD, "--flops-per-s '%s' must be a number > 0", optarg);
            break;
        }
        case OPT_CONTRACT:
            convert_option = "--contract";
            if (wp_layer_contract_from_name(optarg, &contract))
                return wp_usage_error(CMD, "--contract '%s': expected auto, lines, cuts or frontier", optarg);
            break;
        case 'h': usage(); return 0;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (!model_path == !convert)
        return wp_usage_error(CMD, "give exactly one of --model and --convert");
    if (analytic && !(flops_per_s > 0))
        return wp_usage_error(CMD, "--analytic needs --flops-per-s");
    if (!analytic && flops_per_s > 0)
        return wp_usage_error(CMD, "--flops-per-s is for --analytic");
    if (convert && (analytic || nsizes))
        return wp_usage_error(CMD, "--convert takes the sizes from the file; no --analytic or --micro-batch");
    if (measure_option && (convert || analytic))
        return wp_usage_error(CMD, "%s is for measuring (--model without --analytic)", measure_option);
    if (convert_option && !convert)
        return wp_usage_error(CMD, "%s is for --convert", convert_option);

    struct wp_err err = {{0}};
    struct wp_layer_table t;
    wp_layer_table_init(&t);
    int rc = 0;
    if (convert) {
        rc = wp_layer_table_read(&t, convert, batch, contract, &err);
        if (rc == 0)
            rc = print_and_write(&t, output, &err);
        wp_layer_table_destroy(&t);
    } else {
        struct wp_run_config cfg;
        wp_run_config_default(&cfg);
        rc = wp_run_config_read(model_path, &cfg, &err) || wp_run_config_check(&cfg, &err) ? -1 : 0;
        if (rc == 0 && nsizes == 0)
            sizes[nsizes++] = cfg.train.global_batch % cfg.train.micro_batches == 0
                                  ? cfg.train.global_batch / cfg.train.micro_batches
                                  : 1;
        const struct wp_kernel_ops *k = &wp_kernels_cpu;
        if (rc == 0 && !analytic && strcmp(device, "cuda") == 0) {
#ifdef WP_HAVE_CUDA
            int ndev = 0;
            if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
                rc = wp_errorf(&err, "--device cuda: no CUDA device visible");
            k = &wp_kernels_cuda;
#else
            rc = wp_errorf(&err, "--device cuda: this build has no CUDA (configure found no nvcc)");
#endif
        }
        double block_s[MAX_SIZES] = {0};
        for (int i = 0; i < nsizes && rc == 0; i++) {
            const struct wp_gpt2_config *g = &cfg.model;
            struct wp_gpt_shape shape = {g->layers, g->channels, g->heads, g->sequence_length, g->vocabulary,
                                         sizes[i], 4, 4};
            rc = wp_layer_table_gpt(&t, &shape, analytic ? flops_per_s : 1.0, &err);
            if (rc == 0) {
                const char *slash = strrchr(model_path, '/');
                wp_strlcpy(t.name, slash ? slash + 1 : model_path, sizeof t.name);
                char *dot = strrchr(t.name, '.');
                if (dot)
                    *dot = '\0';
            }
            if (rc == 0 && !analytic)
                rc = measure(&t, k, g, sizes[i], repeat, &err);
            char path[4200];
            if (output && nsizes > 1) {
                /* OUT.cfg -> OUT.b4.cfg, one file per micro-batch size */
                const char *dot = strrchr(output, '.'), *slash = strrchr(output, '/');
                if (!dot || (slash && dot < slash))
                    dot = output + strlen(output);
                snprintf(path, sizeof path, "%.*s.b%d%s", (int)(dot - output), output, sizes[i], dot);
            } else if (output) {
                wp_strlcpy(path, output, sizeof path);
            }
            if (rc == 0) {
                block_s[i] = t.nlayers > 2 ? t.layers[1].forward_s + t.layers[1].backward_s : 0;
                rc = print_and_write(&t, output ? path : NULL, &err);
                if (nsizes > 1)
                    printf("\n");
            }
            wp_layer_table_destroy(&t);
        }
        if (rc == 0 && nsizes > 1) {
            printf("%-12s %22s %22s\n", "micro_batch", "block_fwd+bwd_ms", "per_sequence_ms");
            for (int i = 0; i < nsizes; i++)
                printf("%-12d %22.4f %22.4f\n", sizes[i], 1e3 * block_s[i], 1e3 * block_s[i] / sizes[i]);
        }
    }
    if (rc)
        wp_err_print(CMD, &err);
    return rc ? 1 : 0;
}
