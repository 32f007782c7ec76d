/* `wavepipe simulate`: generate a schedule (or read one from a file) and time
 * it with the discrete-event simulator; prints makespan, bubble ratio and peak
 * activations (text or CSV), and writes the timeline (Chrome trace, SVG). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "plan/layer_stages.h"
#include "sched/trace.h"
#include "sched/validate.h"
#include "cli/sched_cli.h"
#include "topo/cluster_io.h"
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
           "CSV columns: kind,ranks,micro_batches,k,waves,chunks,makespan,bubble_ratio,peak_activations_max\n"
           "Example: wavepipe simulate --kind hanayo --ranks 4 --micro-batches 8 --waves 2 --tf 1 --tb 2 --svg t.svg\n");
}

/* With a layer table: the schedule's per-stage costs into cost (arrays in *a). */
static int table_costs(const struct wp_layer_table *t, const char *partition, int global_batch,
                       const struct wp_schedule *s, struct wp_cost_model *cost, struct wp_layer_stage_arrays *a,
                       struct wp_err *err)
{
    int S = s->nstages, rc;
    int *first = malloc((size_t)S * sizeof *first), *last = malloc((size_t)S * sizeof *last);
    if (!first || !last)
        rc = wp_errorf(err, "out of memory");
    else if (partition)
        rc = wp_layer_stages_parse(t, partition, S, first, last, err);
    else
        rc = wp_layer_stages_balanced(t, S, first, last, err);
    if (rc == 0 && global_batch % s->nmicro)
        rc = wp_errorf(err, "--global-batch %d is not a multiple of the %d micro-batches", global_batch, s->nmicro);
    if (rc == 0)
        rc = wp_layer_stage_arrays_make(t, s, global_batch, first, last, a, err);
    if (rc == 0) {
        cost->stage_f = a->forward_s;
        cost->stage_b = a->backward_s;
        cost->stage_w = a->weights_s;
        cost->stage_step_s = a->step_s;
        cost->boundary_bytes = a->boundary_bytes;
        cost->stage_gradient_bytes = a->gradient_bytes;
        cost->stage_grad_layers = a->grad_layers;
    }
    free(first);
    free(last);
    return rc;
}

struct table_opts {
    const struct wp_layer_table *t; /* NULL: --tf/--tb costs */
    const char *partition;
    int global_batch;
};

static int simulate_one(const struct wp_sched_cli *o, const struct wp_cost_model *base, const struct table_opts *to,
                        const char *trace, const char *svg, int csv, struct wp_err *err)
{
    struct wp_schedule s;
    if (wp_sched_cli_make(o, &s, err))
        return -1;
    struct wp_cost_model copy = *base, *cost = &copy;
    struct wp_layer_stage_arrays arrays = {0};
    if (to->t) {
        int G = to->global_batch > 0 ? to->global_batch : s.nmicro * to->t->profile_batch;
        if (table_costs(to->t, to->partition, G, &s, cost, &arrays, err)) {
            wp_schedule_destroy(&s);
            return -1;
        }
    }
    struct wp_sim_result res;
    struct wp_validation v;
    /* validating walks the lists once, and the simulation rides along */
    int sim_rc = o->validate ? wp_validate_and_simulate(&s, cost, &v, &res, err) : wp_simulate(&s, cost, &res, err);
    if (sim_rc == 0 && o->validate)
        wp_validation_destroy(&v);
    wp_layer_stage_arrays_free(&arrays);
    if (sim_rc) {
        wp_schedule_destroy(&s);
        return -1;
    }
    const struct wp_sched_params *p = &s.params;
    int k = p->kind == WP_SCHED_KFKB ? p->k : p->kind == WP_SCHED_GPIPE ? s.nmicro : 1;
    int waves = p->kind == WP_SCHED_HANAYO ? p->waves : 1;
    int chunks = p->kind == WP_SCHED_INTERLEAVED ? p->chunks : 1;
    if (csv) {
        printf("%s,%d,%d,%d,%d,%d,%.9g,%.9g,%.9g\n", wp_sched_kind_name(p->kind), s.nranks, s.nmicro, k, waves,
               chunks, res.makespan, res.bubble_ratio, res.peak_max);
    } else {
        printf("%-12s P=%d M=%d stages=%d k=%d W=%d V=%d: makespan %.6g s, bubble ratio %.4f, peak activations",
               wp_sched_kind_name(p->kind), s.nranks, s.nmicro, s.nstages, k, waves, chunks, res.makespan,
               res.bubble_ratio);
        for (int r = 0; r < s.nranks && r < 16; r++)
            printf(" %.3g", res.peak_activations[r]);
        printf("%s\n", s.nranks > 16 ? " ..." : "");
    }
    char title[256];
    snprintf(title, sizeof title, "%s, P=%d, M=%d, W=%d, V=%d, k=%d (simulated)", wp_sched_kind_name(p->kind),
             s.nranks, s.nmicro, waves, chunks, k);
    int rc = 0;
    if (trace)
        rc = wp_trace_write_json(trace, &res, title, err);
    if (rc == 0 && svg)
        rc = wp_trace_write_svg(svg, &res, title, err);
    wp_sim_result_destroy(&res);
    wp_schedule_destroy(&s);
    return rc;
}

int wp_cmd_simulate(int argc, char **argv)
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
    int n = 0;
    for (int i = 0; i < wp_sched_long_option_count; i++)
        longopts[n++] = wp_sched_long_options[i];
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        longopts[n++] = own[i];
    longopts[n] = (struct option){NULL, 0, NULL, 0};

    struct wp_sched_cli o;
    wp_sched_cli_init(&o);
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    cost.grad_overlap = 1; /* as wavepipe run */
    cost.grad_bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    const char *trace = NULL, *svg = NULL, *cluster_path = NULL, *bw_path = NULL, *layers_path = NULL;
    struct table_opts to = {NULL, NULL, 0};
    double message_bytes = -1, gradient_bytes = 0;
    struct wp_err err;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 0;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        case OPT_TRACE: trace = optarg; break;
        case OPT_SVG: svg = optarg; break;
        case OPT_CLUSTER: cluster_path = optarg; break;
        case OPT_BW_TRACE: bw_path = optarg; break;
        case OPT_NO_PREFETCH: cost.prefetch = 0; break;
        case OPT_LAYERS: layers_path = optarg; break;
        case OPT_PARTITION: to.partition = optarg; break;
        case OPT_GLOBAL_BATCH:
            if (wp_parse_int_option(CMD, "--global-batch", optarg, 1, 1 << 20, &to.global_batch))
                return 2;
            break;
        case OPT_RANKS_PER_NODE:
            if (wp_parse_int_option(CMD, "--ranks-per-node", optarg, 1, 1 << 20, &cost.ranks_per_node))
                return 2;
            break;
        case OPT_GRAD_OVERLAP:
            if (wp_parse_grad_overlap(CMD, optarg, &cost.grad_overlap))
                return 2;
            break;
        case OPT_GRAD_BUCKET_MB:
            if (wp_parse_grad_bucket_mb(CMD, optarg, &cost.grad_bucket_bytes))
                return 2;
            break;
        case OPT_CORES:
            if (wp_parse_int_option(CMD, "--cores", optarg, 1, 1 << 20, &cost.cores))
                return 2;
            break;
        case OPT_MSG_BYTES:
        case OPT_GRAD_BYTES:
            if (wp_parse_bytes(optarg, opt == OPT_MSG_BYTES ? &message_bytes : &gradient_bytes, &err)) {
                wp_err_print(CMD, &err);
                return 2;
            }
            break;
        case OPT_TAR: {
            char *end;
            cost.tar = strtod(optarg, &end);
            if (end == optarg || *end || !(cost.tar >= 0))
                return wp_usage_error(CMD, "--tar '%s' must be a number >= 0", optarg);
            break;
        }
        default:
            if (wp_sched_cli_option(CMD, opt, optarg, &o) == 2)
                return 2;
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (cluster_path && o.tc_given)
        return wp_usage_error(CMD, "--cluster and --tc are two ways to time messages: give one");
    if (cluster_path && message_bytes < 0 && !layers_path)
        return wp_usage_error(CMD, "--cluster needs --message-bytes (the size of one activation message) or "
                                   "--layers TABLE");
    if (!layers_path && (to.partition || to.global_batch))
        return wp_usage_error(CMD, "--partition and --global-batch go with --layers TABLE");
    if (cost.ranks_per_node && !cluster_path)
        return wp_usage_error(CMD, "--ranks-per-node places ranks on the nodes of --cluster FILE");
    if (o.all_kinds && (trace || svg))
        return wp_usage_error(CMD, "--trace and --svg draw one schedule: give a single --kind");
    cost.tf = o.params.tf;
    cost.tb = o.params.tb;
    cost.tw = o.params.tw;
    cost.tc = o.params.tc;
    struct wp_layer_table table;
    wp_layer_table_init(&table);
    if (layers_path) {
        if (wp_layer_table_read(&table, layers_path, 0, WP_CONTRACT_AUTO, &err)) {
            wp_err_print(CMD, &err);
            return 1;
        }
        to.t = &table;
    }
    struct wp_cluster cluster;
    int have_cluster = 0;
    struct wp_bandwidth_change *changes = NULL;
    if (cluster_path) {
        if (wp_cluster_read(cluster_path, &cluster, &err)) {
            wp_err_print(CMD, &err);
            wp_layer_table_destroy(&table);
            return 1;
        }
        have_cluster = 1;
        cost.cluster = &cluster;
        cost.message_bytes = message_bytes;
        cost.gradient_bytes = gradient_bytes;
    }
    if (bw_path && wp_bandwidth_trace_read(bw_path, &changes, &cost.nchanges, &err)) {
        wp_err_print(CMD, &err);
        if (have_cluster)
            wp_cluster_destroy(&cluster);
        wp_layer_table_destroy(&table);
        return 1;
    }
    cost.changes = changes;
    cost.record_events = trace || svg;
    int csv = strcmp(o.format, "csv") == 0;
    if (csv)
        printf("kind,ranks,micro_batches,k,waves,chunks,makespan,bubble_ratio,peak_activations_max\n");
    int status = 0;
    if (o.all_kinds) {
        for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++) {
            if (!wp_sched_kind_generated((enum wp_sched_kind)kind))
                continue;
            o.params.kind = (enum wp_sched_kind)kind;
            if (simulate_one(&o, &cost, &to, NULL, NULL, csv, &err))
                fprintf(stderr, "wavepipe simulate: %s skipped: %s\n", wp_sched_kind_name((enum wp_sched_kind)kind),
                        err.msg);
        }
    } else if (simulate_one(&o, &cost, &to, trace, svg, csv, &err)) {
        wp_err_print(CMD, &err);
        status = 1;
    }
    free(changes);
    if (have_cluster)
        wp_cluster_destroy(&cluster);
    wp_layer_table_destroy(&table);
    return status;
}
