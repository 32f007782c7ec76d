/* wavepipe plan: DAPPLE's planner over a layer table and a cluster
 * description (src/plan/plan.h), with the plan compared against data
 * parallelism, a straight pipeline and even splits by the same cost model
 * and by the simulator, and Ada-Grouper's kFkB candidates for it. */
#include <config.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "plan/plan.h"
#include "run/gpt2_config.h"
#include "topo/cluster_io.h"
#include "util/units.h"

#define CMD "plan"

enum { OPT_LAYERS = 3000, OPT_PROFILE_BATCH, OPT_GLOBAL_BATCH, OPT_CLUSTER, OPT_MEMORY, OPT_OUT, OPT_FORMAT,
       OPT_CONTRACT, OPT_DEVICES, OPT_COMPARE, OPT_MODEL };

static void usage(void)
{
    printf("Usage: wavepipe plan --layers FILE [--profile-batch N] [--contract MODE] --global-batch G\n"
           "         --cluster FILE [--devices N] [--memory BYTES] [--out plan.cfg] [--format text|csv]\n"
           "         [--compare] [--model MODEL.cfg]\n\n"
           "DAPPLE's planner: splits the model of the layer table into stages, replicates\n"
           "each stage on a set of GPUs and places the sets on the cluster's nodes (fresh,\n"
           "append or scatter first) so that the pipeline latency of one global batch,\n"
           "L = Tw + Ts + Te with DAPPLE's pivot stage, is smallest and every GPU's memory\n"
           "(weights, gradients, optimizer state and the activations 1F1B keeps in flight)\n"
           "fits. Data parallelism and straight pipelines are plans like any other. The\n"
           "plan file also lists Ada-Grouper's kFkB candidates (k, micro-batch size).\n\n"
           "Options:\n"
           "  --layers FILE        layer table: DAPPLE/PipeDream profile text or wavepipe-layers\n"
           "                       (wavepipe profile -o)\n"
           "  --profile-batch N    the profile's micro-batch when its file name has no pbs-N\n"
           "  --contract MODE      how a profile graph becomes a chain: auto (default), lines,\n"
           "                       cuts or frontier (see wavepipe profile --help)\n"
           "  --global-batch G     samples per iteration\n"
           "  --cluster FILE       cluster description (wavepipe topo --out, topology/*.cfg)\n"
           "  --devices N          plan for N of its GPUs (at most one node's, or whole nodes)\n"
           "  --memory BYTES       per-GPU memory (e.g. 16GiB); default: from the GPU model name\n"
           "  --out FILE           write the plan file (libconfig) for wavepipe run --plan\n"
           "  --format text|csv    summary (default) or CSV stage,first_layer,last_layer,replicas,\n"
           "                       devices,predicted_iter_s\n"
           "  --compare            also print data parallelism, straight and even splits as the\n"
           "                       cost model and the simulator time them\n"
           "  --model MODEL.cfg    the GPT model of a wavepipe-profile table: each replicated stage\n"
           "                       also gets AutoDDL's SBP meshes for its blocks' MLP matmuls\n"
           "  -h, --help           this text\n");
}

struct plan_options {
    const char *layers, *cluster, *out, *format, *model;
    int profile_batch, global_batch, devices, compare;
    double memory_bytes;
    enum wp_layer_contract contract;
};

static int parse(int argc, char **argv, struct plan_options *o)
{
    static const struct option longopts[] = {
        {"layers", required_argument, NULL, OPT_LAYERS},
        {"profile-batch", required_argument, NULL, OPT_PROFILE_BATCH},
        {"contract", required_argument, NULL, OPT_CONTRACT},
        {"global-batch", required_argument, NULL, OPT_GLOBAL_BATCH},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"out", required_argument, NULL, OPT_OUT},
        {"format", required_argument, NULL, OPT_FORMAT},
        {"compare", no_argument, NULL, OPT_COMPARE},
        {"model", required_argument, NULL, OPT_MODEL},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->format = "text";
    o->contract = WP_CONTRACT_AUTO;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        case OPT_LAYERS: o->layers = optarg; break;
        case OPT_CLUSTER: o->cluster = optarg; break;
        case OPT_OUT: o->out = optarg; break;
        case OPT_COMPARE: o->compare = 1; break;
        case OPT_MODEL: o->model = optarg; break;
        case OPT_FORMAT:
            if (strcmp(optarg, "text") != 0 && strcmp(optarg, "csv") != 0)
                return wp_usage_error(CMD, "--format '%s': expected text or csv", optarg);
            o->format = optarg;
            break;
        case OPT_CONTRACT:
            if (wp_layer_contract_from_name(optarg, &o->contract))
                return wp_usage_error(CMD, "--contract '%s': expected auto, lines, cuts or frontier", optarg);
            break;
        case OPT_PROFILE_BATCH:
            if (wp_parse_int_option(CMD, "--profile-batch", optarg, 1, 1 << 24, &o->profile_batch))
                return 2;
            break;
        case OPT_GLOBAL_BATCH:
            if (wp_parse_int_option(CMD, "--global-batch", optarg, 1, 1 << 30, &o->global_batch))
                return 2;
            break;
        case OPT_DEVICES:
            if (wp_parse_int_option(CMD, "--devices", optarg, 1, 1 << 24, &o->devices))
                return 2;
            break;
        case OPT_MEMORY: {
            struct wp_err err;
            if (wp_parse_bytes(optarg, &o->memory_bytes, &err) || !(o->memory_bytes > 0))
                return wp_usage_error(CMD, "--memory '%s': expected bytes > 0 such as 16GiB or 8e9", optarg);
            break;
        }
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (!o->layers)
        return wp_usage_error(CMD, "--layers FILE is required (a profile or a wavepipe-layers table)");
    if (!o->cluster)
        return wp_usage_error(CMD, "--cluster FILE is required (e.g. topology/dapple-config-a.cfg)");
    if (!o->global_batch)
        return wp_usage_error(CMD, "--global-batch G is required");
    return 0;
}

/* The cost model's and the simulator's time of a plan, on one line. */
static void compare_line(const struct wp_plan_model *m, const char *label, struct wp_plan *p)
{
    char shape[256];
    wp_plan_shape(p, shape, sizeof shape);
    double sim = 0;
    struct wp_err err;
    int simulated = wp_plan_simulate(m, p, 1, 0, &sim, NULL, &err) == 0;
    printf("  %-22s %-16s L %9.4f s   simulated %9.4f s%s\n", label, shape, p->latency.total_s,
           simulated ? sim : 0.0, p->fits ? "" : "   (does not fit in memory)");
}

static void compare(const struct wp_plan_model *m, const struct wp_plan *best)
{
    int N = m->layers->nlayers, G = wp_plan_hw_devices(&m->hw);
    printf("\ncompared (the same cost model, and the simulator on the plan's stage costs):\n");
    struct wp_plan p;
    struct wp_err err;
    compare_line(m, "chosen", (struct wp_plan *)best);
    int one = N, all = G;
    wp_plan_init(&p);
    if (wp_plan_fixed(m, 1, &one, &all, &p, &err) == 0)
        compare_line(m, "data parallel", &p);
    wp_plan_destroy(&p);
    int S = N < G ? N : G;
    int *counts = calloc((size_t)S, sizeof *counts), *reps = calloc((size_t)S, sizeof *reps);
    for (int stages = 2; counts && reps && stages <= S; stages *= 2) {
        if (G % stages)
            continue;
        for (int s = 0; s < stages; s++) {
            counts[s] = (int)((long)(s + 1) * N / stages) - (int)((long)s * N / stages);
            reps[s] = G / stages;
        }
        char label[64];
        snprintf(label, sizeof label, stages == G ? "straight, even layers" : "%d even stages", stages);
        wp_plan_init(&p);
        if (wp_plan_fixed(m, stages, counts, reps, &p, &err) == 0)
            compare_line(m, label, &p);
        wp_plan_destroy(&p);
    }
    free(counts);
    free(reps);
}

int wp_cmd_plan(int argc, char **argv)
{
    struct plan_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    struct wp_err err;
    struct wp_layer_table t;
    struct wp_cluster c;
    struct wp_plan_model m;
    struct wp_plan plan;
    struct wp_plan_hw hw;
    wp_cluster_init(&c);
    wp_plan_init(&plan);
    memset(&m, 0, sizeof m);
    int status = 1;
    if (wp_layer_table_read(&t, o.layers, o.profile_batch, o.contract, &err))
        goto fail_layers;
    if (o.profile_batch && !t.profile_batch_assumed && t.profile_batch != o.profile_batch) {
        wp_errorf(&err, "%s: the table is for micro-batch %d, not --profile-batch %d", o.layers, t.profile_batch,
                  o.profile_batch);
        goto fail;
    }
    if (wp_cluster_read(o.cluster, &c, &err) || wp_plan_hw_from_cluster(&hw, &c, o.devices, o.memory_bytes, &err) ||
        wp_plan_model_init(&m, &t, &hw, o.global_batch, &err) || wp_plan_dapple(&m, &plan, &err))
        goto fail;
    if (wp_plan_kfkb_candidates(&m, &plan, &err))
        goto fail;
    if (o.model) {
        struct wp_run_config rc_model;
        wp_run_config_default(&rc_model);
        if (wp_run_config_read(o.model, &rc_model, &err))
            goto fail;
        if (t.nlayers != rc_model.model.layers + 2) {
            wp_errorf(&err, "--model %s has %d blocks (a table of %d layers); %s has %d layers", o.model,
                      rc_model.model.layers, rc_model.model.layers + 2, o.layers, t.nlayers);
            goto fail;
        }
        if (wp_plan_sbp(&plan, &t, rc_model.model.channels, rc_model.model.sequence_length, &err))
            goto fail;
    }
    if (strcmp(o.format, "csv") == 0) {
        wp_plan_print_csv(stdout, &plan);
    } else {
        if (t.nnodes > 2 * t.nlayers)
            printf("note: the profile's %d nodes were contracted to %d layers at the nodes every path passes; "
                   "splits fall only there (--contract frontier keeps every node)\n",
                   t.nnodes, t.nlayers);
        wp_plan_print_text(stdout, &plan, &t);
        printf("\nsearch: %s; %ld states, %ld plans evaluated in %.3f s\n", plan.search, plan.states,
               plan.evaluations, plan.search_s);
        if (o.compare)
            compare(&m, &plan);
    }
    if (o.out) {
        if (wp_plan_write(o.out, &plan, &t, &err))
            goto fail;
        if (strcmp(o.format, "csv") != 0)
            printf("wrote %s (run it: mpiexec -n %d wavepipe run --plan %s --config MODEL.cfg)\n", o.out,
                   plan.devices_used, o.out);
    }
    status = 0;
fail:
    wp_layer_table_destroy(&t);
fail_layers:
    if (status)
        wp_err_print(CMD, &err);
    wp_plan_destroy(&plan);
    wp_plan_model_destroy(&m);
    wp_cluster_destroy(&c);
    return status;
}
