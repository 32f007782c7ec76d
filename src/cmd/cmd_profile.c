/* `wavepipe profile`: the planner's layer table for a model, three ways:
 *  - measured: GPT-2's embedding, one transformer block and the head timed
 *    with the runtime's own kernels (the stages `wavepipe run` executes),
 *    forward, input-gradient backward (B) and weight-gradient backward (W);
 *  - analytic: the same layers from FLOP counts at a given FLOP/s;
 *  - converted: a DAPPLE/PipeDream profile text file, contracted to a chain
 *    (or a wavepipe-layers file, read back and checked).
 * Prints the table and writes it in wavepipe's libconfig layer format
 * (run/model/profile_gpt2.h makes a model's, plan/layers_report.h prints). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "plan/layers.h"
#include "plan/layers_report.h"
#include "run/model/profile_gpt2.h"
#include "util/strutil.h"

#define CMD "profile"
#define MAX_REPEAT 1000

static void usage(void)
{
    printf("Usage: wavepipe profile --model MODEL.cfg [--micro-batch B,...] [--repeat N] [--device cpu|cuda]\n"
           "                        [--precision P] [-o OUT.cfg]\n"
           "       wavepipe profile --model MODEL.cfg --analytic --flops-per-s X [--precision P]\n"
           "                        [--micro-batch B] [-o OUT.cfg]\n"
           "       wavepipe profile --model MODEL.cfg --analytic --gpu GPU [--precision P]\n"
           "                        [--attention unfused|flash] [--micro-batch B] [-o OUT.cfg]\n"
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
           "Analytic: the layers of wavepipe's GPT table from FLOP counts at X FLOP/s, or\n"
           "modelled for a GPU: each layer as Megatron-LM runs it, kernel by kernel (matrix\n"
           "products by tiles and waves over the SMs at the GPU's measured matmul rate,\n"
           "memory-bound kernels over HBM, the attention core unfused or one FlashAttention\n"
           "kernel), in bf16 by default (Megatron-LM's --bf16: 16-bit activations and\n"
           "parameters with float32 gradients, master weights and moments; --precision\n"
           "tf32 or fp32: 4-byte elements, matmuls at the TF32 tensor cores' or the FP32\n"
           "units' peak); the GPU's spec sheet and published microbenchmarks, not a\n"
           "measurement here. The table names the GPU, and `wavepipe plan` times its blocks\n"
           "again at every tensor group and micro-batch it tries.\n"
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
           "  --gpu GPU            for --analytic: V100-SXM2-32GB, A100-SXM4-40GB,\n"
           "                       A100-SXM4-80GB, H100-SXM5-80GB, H200-SXM-141GB, or a name\n"
           "                       as nvidia-smi gives it (\"NVIDIA H100 80GB HBM3\")\n"
           "  --precision P        fp32, tf32 or bf16: the bytes each element keeps; measured,\n"
           "                       the kernels timed in it (wavepipe run --precision); with\n"
           "                       --gpu, the matmuls' rate (default: bf16 with --gpu, else fp32)\n"
           "  --attention KIND     with --gpu: unfused (default; Megatron-LM before\n"
           "                       FlashAttention) or flash (not on the V100)\n"
           "  --convert FILE       read a profile text file instead\n"
           "  --contract MODE      auto (default), lines, cuts or frontier\n"
           "  --batch B            profile batch when the file name has no pbs-N\n"
           "  -o, --output FILE    write the table (wavepipe-layers libconfig)\n"
           "  -h, --help           this text\n");
}

/* "1,2,4" -> sizes; 0 or a usage error (2). */
static int parse_sizes(const char *text, int *sizes, int *n)
{
    char buf[256];
    wp_strlcpy(buf, text, sizeof buf);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (*n == WP_PROFILE_MAX_SIZES)
            return wp_usage_error(CMD, "--micro-batch: at most %d sizes", WP_PROFILE_MAX_SIZES);
        if (wp_parse_int_option(CMD, "--micro-batch", tok, 1, 1 << 20, &sizes[(*n)++]))
            return 2;
    }
    if (*n == 0)
        return wp_usage_error(CMD, "--micro-batch '%s': expected sizes such as 1,2,4", text);
    return 0;
}

struct profile_options {
    const char *model_path, *convert, *output;
    int sizes[WP_PROFILE_MAX_SIZES], nsizes, repeat, analytic, batch, cuda;
    double flops_per_s;
    const char *gpu;
    int flash;
    int precision; /* enum wp_precision, or -1: the default of --gpu or --flops-per-s */
    enum wp_layer_contract contract;
};

/* 0, 1 after --help, or 2 after a usage error. */
static int parse(int argc, char **argv, struct profile_options *o)
{
    enum { OPT_MODEL = 1000, OPT_MB, OPT_REPEAT, OPT_DEVICE, OPT_ANALYTIC, OPT_FLOPS, OPT_CONVERT, OPT_CONTRACT,
           OPT_BATCH, OPT_GPU, OPT_ATTENTION, OPT_PRECISION };
    static const struct option longopts[] = {{"model", required_argument, NULL, OPT_MODEL},
                                             {"micro-batch", required_argument, NULL, OPT_MB},
                                             {"repeat", required_argument, NULL, OPT_REPEAT},
                                             {"device", required_argument, NULL, OPT_DEVICE},
                                             {"analytic", no_argument, NULL, OPT_ANALYTIC},
                                             {"flops-per-s", required_argument, NULL, OPT_FLOPS},
                                             {"gpu", required_argument, NULL, OPT_GPU},
                                             {"attention", required_argument, NULL, OPT_ATTENTION},
                                             {"precision", required_argument, NULL, OPT_PRECISION},
                                             {"convert", required_argument, NULL, OPT_CONVERT},
                                             {"contract", required_argument, NULL, OPT_CONTRACT},
                                             {"batch", required_argument, NULL, OPT_BATCH},
                                             {"output", required_argument, NULL, 'o'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->repeat = 5;
    o->contract = WP_CONTRACT_AUTO;
    o->precision = -1;
    const char *measure_option = NULL, *convert_option = NULL; /* one given, to name in errors */
    int attention = 0;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_MODEL: o->model_path = optarg; break;
        case OPT_CONVERT: o->convert = optarg; break;
        case 'o': o->output = optarg; break;
        case OPT_ANALYTIC: o->analytic = 1; break;
        case OPT_GPU: o->gpu = optarg; break;
        case OPT_ATTENTION:
            if (strcmp(optarg, "unfused") != 0 && strcmp(optarg, "flash") != 0)
                return wp_usage_error(CMD, "--attention '%s': expected unfused or flash", optarg);
            o->flash = strcmp(optarg, "flash") == 0;
            attention = 1;
            break;
        case OPT_PRECISION:
            if ((o->precision = wp_precision_parse(optarg)) < 0)
                return wp_usage_error(CMD, "--precision '%s': expected one of %s", optarg, wp_precision_names());
            break;
        case OPT_DEVICE:
            measure_option = "--device";
            if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0)
                return wp_usage_error(CMD, "--device '%s': expected cpu or cuda", optarg);
            o->cuda = strcmp(optarg, "cuda") == 0;
            break;
        case OPT_MB:
            if (parse_sizes(optarg, o->sizes, &o->nsizes))
                return 2;
            break;
        case OPT_REPEAT:
            measure_option = "--repeat";
            if (wp_parse_int_option(CMD, "--repeat", optarg, 1, MAX_REPEAT, &o->repeat))
                return 2;
            break;
        case OPT_BATCH:
            convert_option = "--batch";
            if (wp_parse_int_option(CMD, "--batch", optarg, 1, 1 << 20, &o->batch))
                return 2;
            break;
        case OPT_FLOPS: {
            char *end;
            o->flops_per_s = strtod(optarg, &end);
            if (end == optarg || *end || !(o->flops_per_s > 0))
                return wp_usage_error(CMD, "--flops-per-s '%s' must be a number > 0", optarg);
            break;
        }
        case OPT_CONTRACT:
            convert_option = "--contract";
            if (wp_layer_contract_from_name(optarg, &o->contract))
                return wp_usage_error(CMD, "--contract '%s': expected auto, lines, cuts or frontier", optarg);
            break;
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (!o->model_path == !o->convert)
        return wp_usage_error(CMD, "give exactly one of --model and --convert");
    if (o->analytic && (o->flops_per_s > 0) == (o->gpu != NULL))
        return wp_usage_error(CMD, "--analytic needs one of --flops-per-s and --gpu");
    if (!o->analytic && (o->flops_per_s > 0 || o->gpu))
        return wp_usage_error(CMD, "%s is for --analytic", o->gpu ? "--gpu" : "--flops-per-s");
    if (attention && !o->gpu)
        return wp_usage_error(CMD, "--attention is for --gpu");
    if (o->precision >= 0 && o->convert)
        return wp_usage_error(CMD, "--precision is for --model (a converted profile keeps its own bytes)");
    if (o->precision < 0)
        o->precision = o->gpu ? WP_PRECISION_BF16 : WP_PRECISION_FP32;
    if (o->convert && (o->analytic || o->nsizes))
        return wp_usage_error(CMD, "--convert takes the sizes from the file; no --analytic or --micro-batch");
    if (measure_option && (o->convert || o->analytic))
        return wp_usage_error(CMD, "%s is for measuring (--model without --analytic)", measure_option);
    if (convert_option && !o->convert)
        return wp_usage_error(CMD, "%s is for --convert", convert_option);
    return 0;
}

int wp_cmd_profile(int argc, char **argv)
{
    struct profile_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct wp_err err = {{0}};
    if (o.convert) {
        struct wp_layer_table t;
        wp_layer_table_init(&t);
        rc = wp_layer_table_read(&t, o.convert, o.batch, o.contract, &err);
        if (rc == 0)
            rc = wp_layer_table_print_and_write(stdout, &t, o.output, &err);
        wp_layer_table_destroy(&t);
    } else {
        struct wp_profile_gpt2_options po = {o.model_path, o.sizes,  o.nsizes,
                                             o.analytic,   o.flops_per_s, o.gpu,
                                             o.flash,      (enum wp_precision)o.precision,
                                             o.repeat,     o.cuda,   o.output};
        rc = wp_profile_gpt2(&po, stdout, &err);
    }
    if (rc)
        wp_err_print(CMD, &err);
    return rc ? 1 : 0;
}
