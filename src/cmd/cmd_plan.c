/* wavepipe plan: the planner over a layer table and a cluster description
 * (src/plan/plan.h: DAPPLE's partitions, replication and placement with
 * tensor-parallel groups, micro-batch sizes and recomputation), with the
 * plan compared against data parallelism, a straight pipeline and even
 * splits by the same cost model and by the simulator, and Ada-Grouper's
 * kFkB candidates for it (plan/plan_tables.h, plan/plan_compare.h). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "plan/plan.h"
#include "plan/plan_compare.h"
#include "plan/plan_megatron_args.h"
#include "plan/plan_torch.h"
#include "plan/plan_tables.h"
#include "run/model/gpt2_config.h"
#include "sched/grad_overlap.h"
#include "util/datadir.h"
#include "util/units.h"

#define CMD "plan"
#define WP_PLAN_MAX_TABLES 16

enum { OPT_LAYERS = 3000, OPT_PROFILE_BATCH, OPT_GLOBAL_BATCH, OPT_CLUSTER, OPT_MEMORY, OPT_OUT, OPT_FORMAT,
       OPT_CONTRACT, OPT_DEVICES, OPT_COMPARE, OPT_COMPARE_DIR, OPT_MODEL, OPT_UNEVEN, OPT_TENSOR, OPT_RECOMPUTE,
       OPT_CHUNKS, OPT_GRAD_OVERLAP, OPT_GRAD_BUCKET_MB, OPT_PLACE, OPT_SEQUENCE_PARALLEL, OPT_DISTRIBUTED_OPTIMIZER };

static void usage(void)
{
    printf("Usage: wavepipe plan --layers FILE [--layers FILE ...] [--profile-batch N] [--contract MODE]\n"
           "         --global-batch G --cluster FILE [--devices N] [--memory BYTES] [--out plan.cfg]\n"
           "         [--tensor auto|P1xP2] [--recompute auto|never|always|selective] [--chunks N]\n"
           "         [--sequence-parallel off|on|auto] [--distributed-optimizer off|on]\n"
           "         [--format text|csv|megatron|torch] [--compare] [--compare-dir DIR] [--model MODEL.cfg]\n\n"
           "The planner over pipeline stages x tensor parallelism x data parallelism x\n"
           "micro-batch size: splits the model of the layer table into stages (DAPPLE),\n"
           "runs each stage on replicas that are tensor-parallel groups of P1 x P2\n"
           "consecutive GPUs of a node (Megatron-LM's split of a GPT block at P2 = 1,\n"
           "AutoDDL's 2D mesh otherwise; only layers the table marks as transformer\n"
           "blocks are split, so profiles get groups of one GPU), places the replicas on\n"
           "the cluster's nodes (fresh, append or scatter first) and, for analytic tables,\n"
           "tries micro-batches of 1, 2, 4, ... samples per replica, so that the time of\n"
           "one global batch is smallest and every GPU's memory (weights, gradients,\n"
           "optimizer state of its shards and the activations 1F1B keeps in flight) fits;\n"
           "a stage that would not fit recomputes its blocks' attention core, or its whole\n"
           "forward. Memory is Megatron-LM's: 16-bit tables keep float32 gradients, master\n"
           "weights and Adam moments (18 bytes a parameter; with the distributed optimizer\n"
           "6 + 12/DP), and a block keeps Korthikanti et al.'s activations (table 2 of\n"
           "\"Reducing Activation Recomputation in Large Transformer Models\"). Time: a\n"
           "table modelled for a GPU (wavepipe profile --analytic --gpu) has its blocks\n"
           "timed again at every tensor group, micro-batch and sequence parallelism, kernel\n"
           "by kernel (matrix products by tiles and waves at the GPU's measured matmul\n"
           "rate, memory-bound kernels over HBM), the group's collectives at NCCL's share\n"
           "of the NVLink bandwidth, each stage's Adam step after its last backward; other\n"
           "tables' times are scaled by the split and the micro-batch. Candidates are ranked by\n"
           "DAPPLE's L = Tw + Ts + Te, the best re-ranked by the simulator. The summary\n"
           "gives TP, PP, DP, micro-batch size, predicted time, TFLOP/s and memory per GPU.\n"
           "The plan file also lists Ada-Grouper's kFkB candidates (k, micro-batch size).\n\n"
           "Options:\n"
           "  --layers FILE        layer table: DAPPLE/PipeDream profile text or wavepipe-layers\n"
           "                       (wavepipe profile -o); repeat it with tables of one model at\n"
           "                       several micro-batch sizes (profile --micro-batch 1,2,4 -o T.cfg\n"
           "                       writes T.b1.cfg ...): one plan each, the fastest is kept\n"
           "  --profile-batch N    the profile's micro-batch when its file name has no pbs-N\n"
           "  --contract MODE      how a profile graph becomes a chain: auto (default), lines,\n"
           "                       cuts or frontier (see wavepipe profile --help)\n"
           "  --global-batch G     samples per iteration\n"
           "  --cluster FILE       cluster description (wavepipe topo --out, topology/*.cfg);\n"
           "                       a relative FILE (of --layers too) not found from here is\n"
           "                       looked up in the installed PREFIX/share/wavepipe\n"
           "  --devices N          plan for N of its GPUs (at most one node's, or whole nodes)\n"
           "  --memory BYTES       per-GPU memory (e.g. 16GiB); default: from the GPU model name\n"
           "  --out FILE           write the plan file (libconfig) for wavepipe run --plan\n"
           "  --tensor auto|P1xP2  the tensor-parallel group: searched among those that divide a\n"
           "                       node's GPUs (auto, the default), or only P1 x P2 (1x1: none;\n"
           "                       P1 splits the attention heads, P2 the channels and a slice's\n"
           "                       sequences, so P2 must divide the micro-batch: at micro-batch 1\n"
           "                       only P2 = 1. Splitting sequence positions instead would need\n"
           "                       every rank's keys and values in attention (context parallelism,\n"
           "                       a collective per block the runtime does not make); at\n"
           "                       micro-batch 1 use P1 x 1 with --sequence-parallel)\n"
           "  --recompute MODE     activation recomputation: auto (default; a stage whose\n"
           "                       activations would not fit otherwise recomputes its blocks'\n"
           "                       attention core, and when that does not fit or keeps more, its\n"
           "                       whole forward), never (DAPPLE's setting), always (the whole\n"
           "                       forward on every stage: Megatron-LM's --recompute-granularity\n"
           "                       full --recompute-method uniform) or selective (the attention\n"
           "                       core on every stage: --recompute-granularity selective).\n"
           "                       wavepipe run --plan executes never and always (whole stages)\n"
           "  --sequence-parallel off|on|auto\n"
           "                       Megatron-LM's sequence parallelism on tensor groups of P1 x 1:\n"
           "                       the LayerNorms, dropouts and what they keep split over the group\n"
           "                       (the same bytes moved); off (default), on, or auto (searched both\n"
           "                       ways). Not for wavepipe run --plan\n"
           "  --distributed-optimizer off|on\n"
           "                       Megatron-LM's --use-distributed-optimizer (ZeRO stage 1): the\n"
           "                       optimizer state sharded over each stage's replicas (off by\n"
           "                       default); wavepipe run --plan keeps it whole on each replica\n"
           "  --chunks N           also try Megatron-LM's interleaved 1F1B with up to N virtual\n"
           "                       stages per GPU for the best plans (default 1: none; the plan\n"
           "                       file's schedule is then \"interleaved\" with its chunks)\n"
           "  --format text|csv|megatron|torch\n"
           "                       summary (default); Megatron-LM's arguments for the plan\n"
           "                       (--tensor-model-parallel-size, --pipeline-model-parallel-size,\n"
           "                       --num-layers-per-virtual-pipeline-stage, --micro-batch-size,\n"
           "                       --global-batch-size, --recompute-granularity, --sequence-parallel,\n"
           "                       --use-distributed-optimizer, --bf16, the model's shape; as\n"
           "                       core_v0.15.0's megatron/training/arguments.py defines them), or\n"
           "                       an error when Megatron-LM cannot run it (a 2D tensor group,\n"
           "                       data-parallel sizes that differ by stage); PyTorch's\n"
           "                       torch.distributed.pipelining (torch, as PyTorch 2.15.0 reads\n"
           "                       it): lines '# pipeline: key=value ...' (pipeline_ranks,\n"
           "                       stages, stages_per_rank, n_microbatches, schedule, data_parallel,\n"
           "                       tensor, micro_batch, global_batch, ...), the stage split as\n"
           "                       '# split: stage,rank,chunk,first_layer,last_layer,first_index,\n"
           "                       last_index,replicas,tensor,recompute,devices' and a line per\n"
           "                       stage (PyTorch's stage index chunk x pipeline_ranks + rank;\n"
           "                       layers by name and index; recompute none, selective or full:\n"
           "                       activation checkpointing in the stage's module), then, on lines\n"
           "                       without '#' (grep -v '^#' > schedule.csv), the plan's schedule\n"
           "                       (1F1B or interleaved, wavepipe's generator) as the compute_only\n"
           "                       CSV of PipelineScheduleMulti._load_csv: row r pipeline rank r,\n"
           "                       cells such as 0F3 (stage 0, forward, micro-batch 3) and 1B0 on\n"
           "                       the lock-step grid its step loop runs, empty cells idle; an\n"
           "                       error when the stages differ in data-parallel size; or CSV\n"
           "                       stage,first_layer,last_layer,replicas,\n"
           "                       devices,predicted_iter_s\n"
           "  --compare-dir DIR    --compare, and write each compared plan to DIR (chosen.cfg,\n"
           "                       data-parallel.cfg, stages-2.cfg, ..., straight.cfg) with\n"
           "                       DIR/compared.csv: plan,file,shape,latency_s,simulated_s,fits\n"
           "  --compare            also print data parallelism, straight and even splits as the\n"
           "                       cost model and the simulator time them\n"
           "  --model MODEL.cfg    the GPT model of a wavepipe-profile table: each replicated stage\n"
           "                       also gets AutoDDL's SBP meshes for its blocks' MLP matmuls\n"
           "  --uneven-slices      DAPPLE's own micro-batch rule: the profile batch on each replica\n"
           "                       of the widest stage, split unevenly over other stages' replicas\n"
           "                       (its table V plans such as 15:1); by default every micro-batch\n"
           "                       divides the global batch and every stage's replicas split it\n"
           "                       evenly, as wavepipe run --plan needs\n"
           "  --grad-overlap on|off\n"
           "                       on (default, as wavepipe run): a replicated stage's allreduce\n"
           "                       counts only what runs past its last backward, its gradients summed\n"
           "                       in buckets as that backward finishes their layers; off: all of it\n"
           "                       (DAPPLE's formula)\n"
           "  --grad-bucket-mb MB  the buckets' size in MiB (default 25)\n"
           "  --place POLICY       all (default): each stage placed fresh, append or scatter first,\n"
           "                       whichever is best (uniform plans by append); fresh, append or\n"
           "                       scatter: every stage by that policy only, to compare DAPPLE's\n"
           "                       policies (IV-B)\n"
           "  -h, --help           this text\n");
}

struct plan_options {
    const char *layers[WP_PLAN_MAX_TABLES], *cluster, *out, *format, *model, *compare_dir;
    int nlayers;
    int profile_batch, global_batch, devices, compare, uneven_slices;
    int grad_overlap;
    int place_only; /* wp_plan_model's: 0 all policies, else 1 + one */
    double memory_bytes, grad_bucket_bytes;
    enum wp_layer_contract contract;
    struct wp_plan_tensor tensor; /* p1 0: searched */
    enum wp_recompute recompute;
    int chunks;
    int sequence_parallel, distributed_optimizer;
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
        {"compare-dir", required_argument, NULL, OPT_COMPARE_DIR},
        {"model", required_argument, NULL, OPT_MODEL},
        {"uneven-slices", no_argument, NULL, OPT_UNEVEN},
        {"tensor", required_argument, NULL, OPT_TENSOR},
        {"recompute", required_argument, NULL, OPT_RECOMPUTE},
        {"chunks", required_argument, NULL, OPT_CHUNKS},
        {"grad-overlap", required_argument, NULL, OPT_GRAD_OVERLAP},
        {"grad-bucket-mb", required_argument, NULL, OPT_GRAD_BUCKET_MB},
        {"place", required_argument, NULL, OPT_PLACE},
        {"sequence-parallel", required_argument, NULL, OPT_SEQUENCE_PARALLEL},
        {"distributed-optimizer", required_argument, NULL, OPT_DISTRIBUTED_OPTIMIZER},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->format = "text";
    o->contract = WP_CONTRACT_AUTO;
    o->recompute = WP_RECOMPUTE_WHERE_NEEDED;
    o->chunks = 1;
    o->grad_overlap = 1;
    o->grad_bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        case OPT_LAYERS:
            if (o->nlayers == WP_PLAN_MAX_TABLES)
                return wp_usage_error(CMD, "at most %d --layers tables", WP_PLAN_MAX_TABLES);
            o->layers[o->nlayers++] = optarg;
            break;
        case OPT_CLUSTER: o->cluster = optarg; break;
        case OPT_OUT: o->out = optarg; break;
        case OPT_COMPARE: o->compare = 1; break;
        case OPT_COMPARE_DIR:
            o->compare = 1;
            o->compare_dir = optarg;
            break;
        case OPT_MODEL: o->model = optarg; break;
        case OPT_UNEVEN: o->uneven_slices = 1; break;
        case OPT_TENSOR: {
            char tail;
            if (strcmp(optarg, "auto") == 0)
                o->tensor = (struct wp_plan_tensor){0, 0};
            else if (sscanf(optarg, "%dx%d%c", &o->tensor.p1, &o->tensor.p2, &tail) != 2 || o->tensor.p1 < 1 ||
                     o->tensor.p2 < 1 || o->tensor.p1 > 4096 || o->tensor.p2 > 4096)
                return wp_usage_error(CMD, "--tensor '%s': expected auto or P1xP2 such as 8x1 or 1x1", optarg);
            break;
        }
        case OPT_CHUNKS:
            if (wp_parse_int_option(CMD, "--chunks", optarg, 1, 64, &o->chunks))
                return 2;
            break;
        case OPT_RECOMPUTE: {
            static const enum wp_recompute modes[] = {WP_RECOMPUTE_WHERE_NEEDED, WP_RECOMPUTE_NEVER,
                                                      WP_RECOMPUTE_ALWAYS, WP_RECOMPUTE_SELECTIVE};
            int i;
            if (wp_parse_choice_option(CMD, "--recompute", optarg,
                                       (const char *const[]){"auto", "never", "always", "selective", NULL}, &i))
                return 2;
            o->recompute = modes[i];
            break;
        }
        case OPT_SEQUENCE_PARALLEL: {
            int i;
            if (wp_parse_choice_option(CMD, "--sequence-parallel", optarg,
                                       (const char *const[]){"off", "on", "auto", NULL}, &i))
                return 2;
            o->sequence_parallel = i;
            break;
        }
        case OPT_DISTRIBUTED_OPTIMIZER:
            if (wp_parse_choice_option(CMD, "--distributed-optimizer", optarg,
                                       (const char *const[]){"off", "on", NULL}, &o->distributed_optimizer))
                return 2;
            break;
        case OPT_GRAD_OVERLAP:
            if (wp_parse_grad_overlap(CMD, optarg, &o->grad_overlap))
                return 2;
            break;
        case OPT_GRAD_BUCKET_MB:
            if (wp_parse_grad_bucket_mb(CMD, optarg, &o->grad_bucket_bytes))
                return 2;
            break;
        case OPT_PLACE:
            o->place_only = -1;
            if (strcmp(optarg, "all") == 0)
                o->place_only = 0;
            for (int pol = WP_PLACE_FRESH; pol <= WP_PLACE_SCATTER; pol++)
                if (strcmp(optarg, wp_place_policy_name((enum wp_place_policy)pol)) == 0)
                    o->place_only = 1 + pol;
            if (o->place_only < 0)
                return wp_usage_error(CMD, "--place '%s': expected all, fresh, append or scatter", optarg);
            break;
        case OPT_FORMAT: o->format = optarg; break;
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
    static const char *const formats[] = {"text", "csv", "megatron", "torch", NULL};
    if (wp_parse_choice_option(CMD, "--format", o->format, formats, &(int){0}))
        return 2;
    if (!o->nlayers)
        return wp_usage_error(CMD, "--layers FILE is required (a profile or a wavepipe-layers table)");
    if (!o->cluster)
        return wp_usage_error(CMD, "--cluster FILE is required (e.g. topology/dapple-config-a.cfg)");
    if (!o->global_batch)
        return wp_usage_error(CMD, "--global-batch G is required");
    if (o->compare && strcmp(o->format, "text") != 0)
        return wp_usage_error(CMD, "--compare and --compare-dir print text: leave out --format %s", o->format);
    return 0;
}

/* A comparison's failure, printed as it happens. */
static void report(const char *message)
{
    fprintf(stderr, "wavepipe " CMD ": %s\n", message[0] ? message : "unknown error");
}

/* The GPT model of --model: its blocks' SBP meshes in the chosen plan. */
static int add_sbp(const char *model_path, struct wp_plan_tables *pt, struct wp_err *err)
{
    struct wp_run_config rc_model;
    wp_run_config_default(&rc_model);
    if (wp_run_config_read(model_path, &rc_model, err))
        return -1;
    return wp_plan_tables_sbp(pt, model_path, rc_model.model.layers, rc_model.model.channels,
                              rc_model.model.sequence_length, err);
}

/* 0; 1 after an error in err; 2 after errors already printed. */
static int plan(const struct plan_options *o, struct wp_plan_tables *pt, struct wp_err *err)
{
    struct wp_plan_tables_options to = {o->layers, o->nlayers, o->profile_batch, o->contract, o->cluster,
                                        o->devices, o->memory_bytes, o->global_batch, o->uneven_slices,
                                        o->recompute, o->tensor, o->chunks, o->grad_overlap,
                                        o->grad_bucket_bytes, o->place_only, o->sequence_parallel,
                                        o->distributed_optimizer};
    if (wp_plan_tables_search(pt, &to, err) || (o->model && add_sbp(o->model, pt, err)))
        return 1;
    const struct wp_plan_table *b = &pt->v[pt->best];
    if (strcmp(o->format, "csv") == 0) {
        wp_plan_print_csv(stdout, &b->plan);
    } else if (strcmp(o->format, "megatron") == 0) {
        if (wp_plan_write_megatron_args(stdout, &b->plan, &b->t, err))
            return 1;
    } else if (strcmp(o->format, "torch") == 0) {
        if (wp_plan_write_torch(stdout, &b->plan, &b->t, err))
            return 1;
    } else {
        wp_plan_tables_print(stdout, pt);
        if (o->compare && wp_plan_compare(stdout, &b->m, &b->plan, o->compare_dir, report))
            return 2;
    }
    if (o->out) {
        if (wp_plan_write(o->out, &b->plan, &b->t, err))
            return 1;
        if (strcmp(o->format, "text") == 0)
            printf("wrote %s (run it: mpiexec -n %d wavepipe run --plan %s --config MODEL.cfg)\n", o->out,
                   b->plan.devices_used, o->out);
    }
    return 0;
}

int wp_cmd_plan(int argc, char **argv)
{
    struct plan_options o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    /* relative inputs not found from here: the shipped ones (util/datadir.h) */
    char shipped[WP_PLAN_MAX_TABLES + 1][PATH_MAX];
    o.cluster = wp_data_input(o.cluster, shipped[0], sizeof shipped[0]);
    for (int i = 0; i < o.nlayers; i++)
        o.layers[i] = wp_data_input(o.layers[i], shipped[i + 1], sizeof shipped[i + 1]);
    struct wp_err err = {""};
    struct wp_plan_tables pt;
    wp_plan_tables_init(&pt);
    int status = plan(&o, &pt, &err);
    if (status == 1)
        wp_err_print(CMD, &err);
    wp_plan_tables_destroy(&pt);
    return status ? 1 : 0;
}
