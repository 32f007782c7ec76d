/* `wavepipe simulate`: generate a schedule (or read one from a file) and time
 * it with the discrete-event simulator; prints makespan, bubble ratio and peak
 * activations (text or CSV), and writes the timeline (Chrome trace, SVG):
 * plan/sim_report.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/sched_cli.h"
#include "cmd/commands.h"
#include "plan/sim_report.h"
#include "sched/grad_overlap.h"
#include "util/units.h"

#define CMD "simulate"

enum { OPT_TRACE = 2000, OPT_SVG, OPT_CLUSTER, OPT_MSG_BYTES, OPT_GRAD_BYTES, OPT_TAR, OPT_BW_TRACE, OPT_NO_PREFETCH,
       OPT_CORES, OPT_LAYERS, OPT_PARTITION, OPT_GLOBAL_BATCH, OPT_RANKS_PER_NODE, OPT_GRAD_OVERLAP,
       OPT_GRAD_BUCKET_MB };

static void usage(void)
{
    printf("Usage: wavepipe simulate --kind KIND|all --ranks P --micro-batches M --tf TF --tb TB\n"
           "                         [--tw TW] [--tc TC] [options] [--trace T.json] [--svg T.svg]\n"
           "       wavepipe simulate --schedule-file FILE.csv --tf TF --tb TB [options]\n\n"
           "Times a schedule with a discrete-event simulator: compute per stage, each\n"
           "message alpha + n*beta over the link it crosses (or a constant --tc), gradient\n"
           "allreduce by ring costs (with --cluster: a ring in each node, then across nodes),\n"
           "sends and receives progressing while ranks compute\n"
           "(receives are posted ahead of need, so a transfer hides behind compute unless\n"
           "--no-prefetch). Prints the makespan, the bubble ratio = idle / (ranks x\n"
           "makespan) and each rank's peak of held activations (in micro-batches through\n"
           "1/P of the model). --kind all compares every kind that fits the settings;\n"
           "--schedule-file times a schedule read from a file (its kind is `file`).\n\n");
    wp_sched_cli_help();
    printf("Simulator options:\n"
           "  --tar T                 seconds to send one 1/P share of the gradients over a link\n"
           "                          (ring allreduce of replicated stages; default 0)\n"
           "  --cluster FILE          time messages on the cluster's links instead of --tc: ranks\n"
           "                          fill nodes in order (one per GPU); NVLink/PCIe inside a node,\n"
           "                          the network between nodes\n"
           "  --message-bytes BYTES   with --cluster: size of one activation or gradient message\n"
           "  --gradient-bytes BYTES  with --cluster: size of one 1/P share of the gradients\n"
           "  --bandwidth-trace FILE  CSV time_s,src,dst,factor: link bandwidth multiplied by factor\n"
           "                          from time_s on (src/dst a rank or *), to study preempted networks\n"
           "  --no-prefetch           a receive starts its transfer only when the rank reaches it\n"
           "  --layers TABLE          costs from a layer table (wavepipe profile, or a DAPPLE/PipeDream\n"
           "                          profile), as `wavepipe run --compute emulated --layers TABLE` spends\n"
           "                          them: each stage's F, B (W: the table's split, else half of B) for\n"
           "                          its slice, linear in the sequences per profile batch; with --cluster\n"
           "                          its boundary activations and gradients as message and allreduce bytes\n"
           "  --partition n0,n1,...   with --layers: layers per stage (default: balanced F + B)\n"
           "  --global-batch G        with --layers: sequences per step (default M x profile batch)\n"
           "  --ranks-per-node N      with --cluster: N ranks on each node in rank order (srun's block\n"
           "                          distribution); default one per GPU, or the job's ranks in the file\n"
           "  --grad-overlap on|off   on (default, as wavepipe run): a replicated stage's gradients are summed\n"
           "                          in buckets that start as its final W (or B) of the step finishes their\n"
           "                          layers (with --layers each layer's part of that pass and its bytes,\n"
           "                          else the bytes evenly over the pass), one after another at the\n"
           "                          allreduce's cost of a bucket; the ALLREDUCE waits only for what runs\n"
           "                          past. The gradient's bytes come from --layers or --gradient-bytes;\n"
           "                          with --tar the sum is one bucket from the pass's end. off: one sum\n"
           "                          when the last holder reaches the ALLREDUCE\n"
           "  --grad-bucket-mb MB     the buckets' size in MiB (default 25)\n"
           "  --cores C               the ranks share C cores (as on one small node): k ranks computing at\n"
           "                          once each progress at min(1, C/k)\n"
           "  --trace FILE.json       the timeline as Chrome trace events (Perfetto, chrome://tracing)\n"
           "  --svg FILE.svg          the timeline as SVG, one row per rank\n"
           "  -h, --help              this text\n\n"
           "CSV columns: kind,ranks,micro_batches,k,waves,chunks,makespan,bubble_ratio,peak_activations_max\n\n"
           "With --data-parallel D the makespan at tc = 0 and tar = 0 is the pipeline's on P/D ranks:\n"
           "each replica does a D-th of every micro-batch's work, and the copies meet only at the\n"
           "ALLREDUCEs (--tar, --cluster and --gradient-bytes time those).\n\n"
           "Examples:\n"
           "  wavepipe simulate --kind hanayo --ranks 4 --micro-batches 8 --waves 2 --tf 1 --tb 2 --svg t.svg\n"
           "  wavepipe simulate --kind all --ranks 16 --data-parallel 4 --micro-batches 8 --tf 1 --tb 2 --tar 0.1\n");
}

struct simulate_options {
    struct wp_sched_cli o;
    struct wp_cost_model cost;
    const char *trace, *svg, *cluster_path, *bw_path, *layers_path;
    struct wp_sim_table to; /* its table once read */
    double message_bytes, gradient_bytes;
};

/* The simulator's own options (one getopt_long result); 0, 1 when not
 * one of them, or 2 after a usage error. */
static int parse_own(int opt, const char *arg, struct simulate_options *so)
{
    struct wp_cost_model *cost = &so->cost;
    struct wp_err err;
    switch (opt) {
    case OPT_TRACE: so->trace = arg; return 0;
    case OPT_SVG: so->svg = arg; return 0;
    case OPT_CLUSTER: so->cluster_path = arg; return 0;
    case OPT_BW_TRACE: so->bw_path = arg; return 0;
    case OPT_NO_PREFETCH: cost->prefetch = 0; return 0;
    case OPT_LAYERS: so->layers_path = arg; return 0;
    case OPT_PARTITION: so->to.partition = arg; return 0;
    case OPT_GLOBAL_BATCH:
        return wp_parse_int_option(CMD, "--global-batch", arg, 1, 1 << 20, &so->to.global_batch) ? 2 : 0;
    case OPT_RANKS_PER_NODE:
        return wp_parse_int_option(CMD, "--ranks-per-node", arg, 1, 1 << 20, &cost->ranks_per_node) ? 2 : 0;
    case OPT_GRAD_OVERLAP: return wp_parse_grad_overlap(CMD, arg, &cost->grad_overlap) ? 2 : 0;
    case OPT_GRAD_BUCKET_MB: return wp_parse_grad_bucket_mb(CMD, arg, &cost->grad_bucket_bytes) ? 2 : 0;
    case OPT_CORES: return wp_parse_int_option(CMD, "--cores", arg, 1, 1 << 20, &cost->cores) ? 2 : 0;
    case OPT_MSG_BYTES:
    case OPT_GRAD_BYTES:
        if (wp_parse_bytes(arg, opt == OPT_MSG_BYTES ? &so->message_bytes : &so->gradient_bytes, &err)) {
            wp_err_print(CMD, &err);
            return 2;
        }
        return 0;
    case OPT_TAR: {
        char *end;
        cost->tar = strtod(arg, &end);
        if (end == arg || *end || !(cost->tar >= 0))
            return wp_usage_error(CMD, "--tar '%s' must be a number >= 0", arg);
        return 0;
    }
    }
    return 1;
}

/* 0, 1 after --help, or 2 after a usage error. */
static int parse(int argc, char **argv, struct simulate_options *so)
{
    static const struct option own[] = {
        {"trace", required_argument, NULL, OPT_TRACE},
        {"svg", required_argument, NULL, OPT_SVG},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"message-bytes", required_argument, NULL, OPT_MSG_BYTES},
        {"gradient-bytes", required_argument, NULL, OPT_GRAD_BYTES},
        {"tar", required_argument, NULL, OPT_TAR},
        {"bandwidth-trace", required_argument, NULL, OPT_BW_TRACE},
        {"no-prefetch", no_argument, NULL, OPT_NO_PREFETCH},
        {"cores", required_argument, NULL, OPT_CORES},
        {"layers", required_argument, NULL, OPT_LAYERS},
        {"partition", required_argument, NULL, OPT_PARTITION},
        {"global-batch", required_argument, NULL, OPT_GLOBAL_BATCH},
        {"ranks-per-node", required_argument, NULL, OPT_RANKS_PER_NODE},
        {"grad-overlap", required_argument, NULL, OPT_GRAD_OVERLAP},
        {"grad-bucket-mb", required_argument, NULL, OPT_GRAD_BUCKET_MB},
        {"help", no_argument, NULL, 'h'},
    };
    struct option longopts[64];
    wp_sched_cli_long_options(own, sizeof own / sizeof own[0], 1, longopts, 64);

    memset(so, 0, sizeof *so);
    struct wp_sched_cli *o = &so->o;
    struct wp_cost_model *cost = &so->cost;
    wp_sched_cli_init(o);
    wp_cost_model_default(cost);
    cost->grad_overlap = 1; /* as wavepipe run */
    cost->grad_bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    so->message_bytes = -1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        default: {
            int rc = parse_own(opt, optarg, so);
            if (rc == 1)
                rc = wp_sched_cli_option(CMD, opt, optarg, o);
            if (rc == 2)
                return 2;
        }
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (so->cluster_path && o->tc_given)
        return wp_usage_error(CMD, "--cluster and --tc are two ways to time messages: give one");
    if (so->cluster_path && so->message_bytes < 0 && !so->layers_path)
        return wp_usage_error(CMD, "--cluster needs --message-bytes (the size of one activation message) or "
                                   "--layers TABLE");
    if (!so->layers_path && (so->to.partition || so->to.global_batch))
        return wp_usage_error(CMD, "--partition and --global-batch go with --layers TABLE");
    if (cost->ranks_per_node && !so->cluster_path)
        return wp_usage_error(CMD, "--ranks-per-node places ranks on the nodes of --cluster FILE");
    if (o->all_kinds && (so->trace || so->svg))
        return wp_usage_error(CMD, "--trace and --svg draw one schedule: give a single --kind");
    return 0;
}

/* The schedule the options describe, simulated and reported. */
static int simulate_one(const struct simulate_options *so, const char *trace, const char *svg, int csv,
                        struct wp_err *err)
{
    struct wp_schedule s;
    if (wp_sched_cli_make(&so->o, &s, err))
        return -1;
    int rc = wp_sim_report(stdout, &s, &so->cost, &so->to, so->o.validate, csv, trace, svg, err);
    wp_schedule_destroy(&s);
    return rc;
}

int wp_cmd_simulate(int argc, char **argv)
{
    struct simulate_options so;
    int rc = parse(argc, argv, &so);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct wp_cost_model *cost = &so.cost;
    cost->tf = so.o.params.tf;
    cost->tb = so.o.params.tb;
    cost->tw = so.o.params.tw;
    cost->tc = so.o.params.tc;
    if (so.cluster_path) {
        cost->message_bytes = so.message_bytes;
        cost->gradient_bytes = so.gradient_bytes;
    }
    struct wp_err err;
    struct wp_sim_files files;
    if (wp_sim_files_load(&files, so.layers_path, so.cluster_path, so.bw_path, cost, &err)) {
        wp_err_print(CMD, &err);
        wp_sim_files_destroy(&files);
        return 1;
    }
    if (files.have_table)
        so.to.t = &files.table;
    cost->record_events = so.trace || so.svg;
    int csv = strcmp(so.o.format, "csv") == 0;
    if (csv)
        wp_sim_report_csv_header(stdout);
    int status = 0;
    if (so.o.all_kinds) {
        for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++) {
            if (!wp_sched_kind_generated((enum wp_sched_kind)kind))
                continue;
            so.o.params.kind = (enum wp_sched_kind)kind;
            if (simulate_one(&so, NULL, NULL, csv, &err))
                fprintf(stderr, "wavepipe simulate: %s skipped: %s\n", wp_sched_kind_name((enum wp_sched_kind)kind),
                        err.msg);
        }
    } else if (simulate_one(&so, so.trace, so.svg, csv, &err)) {
        wp_err_print(CMD, &err);
        status = 1;
    }
    wp_sim_files_destroy(&files);
    return status;
}
