/* `wavepipe sbp`: AutoDDL's SBP mesh search for a chain of matmul layers
 * given by their widths (plan/sbp.h), or a strategy named or written out
 * (plan/sbp_strategy.h): prints each layer's 3D mesh, its tuples of nodes
 * and GPUs per axis, and its communication, and writes the plan file's
 * `sbp` group with -o (plan/sbp_chain.h). With --measure (an MPI job of one
 * rank per device) the strategy's communication runs and is timed
 * (run/comm/sbp_measure.h). */
#include <fcntl.h>
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "plan/sbp.h"
#include "plan/sbp_chain.h"
#include "plan/sbp_search.h"
#include "run/comm/sbp_measure.h"
#include "util/mpi_finalize.h"
#include "util/units.h"

#define CMD "sbp"
#define MAX_WIDTHS 1024
#define FINALIZE_TIMEOUT_S 20.0

static void usage(void)
{
    printf("Usage: wavepipe sbp --widths W0,W1,...,WL --batch B --devices P [--gpus-per-node G]\n"
           "                    [--search exhaustive|cd|mh] [--memory BYTES] [-o OUT.cfg] [options]\n"
           "       mpiexec -n P wavepipe sbp --widths ... --batch B --devices P --gpus-per-node G\n"
           "                    --measure [--strategy chosen|megatron|dp|MESHES] [--cluster FILE]\n\n"
           "Chooses, for every matmul layer of a chain (layer l: a B x W(l) input times a\n"
           "W(l) x W(l+1) weight), AutoDDL's 3D device mesh p0 x p1 x p2 = P: input\n"
           "(S0:p0, B:p1, S1:p2), weight (B:p0, S1:p1, S0:p2), output (S0:p0, S1:p1, P:p2),\n"
           "each axis split into nodes x GPUs per node. Costs are ring collectives under\n"
           "the alpha-beta model on the link each crosses, forward and backward: the\n"
           "partial output's reduce-scatter, the input's all-gather, the alltoall between\n"
           "layers and the weight-gradient allreduce over p0. Layers of the same shape\n"
           "share a mesh. Memory per device: weights with their gradient and optimizer\n"
           "state, and the input kept for the backward.\n\n"
           "With --measure, one MPI rank per device (rank d on node d / G, as srun's\n"
           "block distribution places them) runs the strategy's communication for one\n"
           "training step: every collective above with the model's group and bytes, on\n"
           "real buffers; compute is emulated (nothing computed, at most a sleep), so\n"
           "only communication is timed. Each collective is timed after a barrier (the\n"
           "slowest rank, the median of --repeats rounds), then whole steps back to back;\n"
           "the report gives per layer and term the predicted and measured time and the\n"
           "bytes each device sends (model, counted from the calls), and a summary line.\n\n"
           "Options:\n"
           "  --widths W0,...,WL     layer widths: L layers (at least two widths)\n"
           "  --repeat N             the layers N times over (needs WL = W0; default 1)\n"
           "  --batch B              rows of every input (samples or tokens)\n"
           "  --devices P            devices in all\n"
           "  --gpus-per-node G      devices per node (default 1: every axis on the network)\n"
           "  --intra LAT,BW         link within a node (default 3us,150GB/s)\n"
           "  --inter LAT,BW         link between nodes (default 15us,100Gbit/s)\n"
           "  --search KIND          exhaustive, cd (coordinate descent, default) or mh\n"
           "                         (Metropolis-Hastings)\n"
           "  --memory BYTES         memory limit per device, e.g. 40GiB (default none)\n"
           "  --element-bytes E      bytes per communicated element (default 4)\n"
           "  --weight-state-bytes S bytes held per weight element (default 16: float32\n"
           "                         weight and gradient, AdamW's m and v)\n"
           "  --activation-bytes A   bytes per input element kept for the backward (default 4)\n"
           "  --input KIND           batch-split (default: the input arrives split by rows\n"
           "                         over all devices, its gradient sent back) or free (any\n"
           "                         layout, no gradient: a data loader)\n"
           "  --strategy S           chosen (default: the search's), megatron (Megatron's 1D\n"
           "                         split: column-parallel (1,P,1) then row-parallel (1,1,P)\n"
           "                         layers), dp ((P,1,1) everywhere) or meshes per layer,\n"
           "                         P0xP1xP2[@N0xN1xN2],... (repeated over the layers; @ the\n"
           "                         nodes of each axis where the split is not unique)\n"
           "  --cluster FILE         the model's links from a cluster description: intra-node\n"
           "                         its intra_network (calibrate's fit) or else its slowest GPU\n"
           "                         pair, inter-node its network (instead of --intra, --inter)\n"
           "  --measure              run and time the strategy's communication (MPI job of P ranks)\n"
           "  --repeats N            with --measure: timed rounds and steps (default 5)\n"
           "  --compute-s S          with --measure: seconds slept per layer in the forward and\n"
           "                         again in the backward of a timed step (default 0)\n"
           "  --bucket BYTES         with --measure: weight_sync's AllReduce in calls of at most\n"
           "                         BYTES, as DDP's buckets (default 256MiB; 0: one call)\n"
           "  --wait yield|spin      with --measure: poll non-blocking calls, sleeping between\n"
           "                         polls as wavepipe run does (default: ranks that outnumber\n"
           "                         cores yield them), or wait in MPI_Wait\n"
           "  --seed N               seed of cd's restarts and mh's chain (default 1)\n"
           "  --restarts N           cd's random restarts (default 8)\n"
           "  --iterations N         mh's proposals (default 100000)\n"
           "  -o, --output FILE      write the plan file's sbp group (libconfig)\n"
           "  -h, --help             this text\n");
}

static int parse_widths(const char *text, int *widths, int *n)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 2147483647L || (*end && *end != ',') || *n == MAX_WIDTHS)
            return wp_usage_error(CMD, "--widths '%s' must be positive integers separated by commas", text);
        widths[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    if (*n < 2)
        return wp_usage_error(CMD, "--widths '%s' needs at least two widths (one layer)", text);
    return 0;
}

/* "LATENCY,BANDWIDTH" into alpha and beta. */
static int parse_link(const char *option, const char *text, struct wp_link_cost *link)
{
    const char *comma = strchr(text, ',');
    char latency[64];
    struct wp_err err;
    double alpha_s, Bps;
    if (!comma || (size_t)(comma - text) >= sizeof latency)
        return wp_usage_error(CMD, "%s '%s' must be LATENCY,BANDWIDTH (e.g. 3us,150GB/s)", option, text);
    memcpy(latency, text, (size_t)(comma - text));
    latency[comma - text] = '\0';
    if (wp_parse_time_s(latency, &alpha_s, &err) || wp_parse_bandwidth_Bps(comma + 1, &Bps, &err))
        return wp_usage_error(CMD, "%s '%s': %s", option, text, err.msg);
    if (!(Bps > 0))
        return wp_usage_error(CMD, "%s '%s': the bandwidth must be positive", option, text);
    link->alpha_s = alpha_s;
    link->beta_s_per_byte = 1 / Bps;
    return 0;
}

static int parse_positive(const char *option, const char *text, double *value)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= 0))
        return wp_usage_error(CMD, "%s '%s' must be a number >= 0", option, text);
    *value = v;
    return 0;
}

/* Is flag one of the arguments? (--measure decides, before parsing,
 * whether this is an MPI job.) */
static int has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], flag) == 0)
            return 1;
    return 0;
}

/* Ranks other than 0 of a --measure job parse quietly, so that a bad
 * option is reported once: their stdout and stderr go to /dev/null
 * until unquiet. */
struct quiet {
    int saved[2];
};

static void quiet_begin(struct quiet *q, int on)
{
    q->saved[0] = q->saved[1] = -1;
    if (!on)
        return;
    fflush(stdout);
    fflush(stderr);
    int null = open("/dev/null", O_WRONLY);
    if (null < 0)
        return;
    for (int i = 0; i < 2; i++) {
        q->saved[i] = dup(i + 1);
        dup2(null, i + 1);
    }
    close(null);
}

static void quiet_end(struct quiet *q)
{
    fflush(stdout);
    fflush(stderr);
    for (int i = 0; i < 2; i++)
        if (q->saved[i] >= 0) {
            dup2(q->saved[i], i + 1);
            close(q->saved[i]);
            q->saved[i] = -1;
        }
}

enum {
    OPT_WIDTHS = 1000, OPT_REPEAT, OPT_BATCH, OPT_DEVICES, OPT_GPN, OPT_INTRA, OPT_INTER, OPT_SEARCH,
    OPT_MEMORY, OPT_ELEMENT, OPT_WEIGHT_STATE, OPT_ACTIVATION, OPT_INPUT, OPT_SEED, OPT_RESTARTS,
    OPT_ITERATIONS, OPT_STRATEGY, OPT_CLUSTER, OPT_MEASURE, OPT_REPEATS, OPT_COMPUTE, OPT_BUCKET, OPT_WAIT
};

struct sbp_options {
    int widths[MAX_WIDTHS];
    int nwidths, repeat;
    const char *output, *strategy, *cluster;
    int exec_option; /* --repeats, --compute-s, --bucket or --wait given */
    int intra_given, inter_given;
    struct wp_sbp_exec_opts xo;
    struct wp_sbp_problem pr; /* its layers not yet */
    struct wp_sbp_search_opts so;
};

/* The problem's options (one getopt_long result); 0 or a usage error (2). */
static int parse_problem_option(int opt, const char *arg, struct sbp_options *o)
{
    struct wp_err err;
    switch (opt) {
    case OPT_WIDTHS: return parse_widths(arg, o->widths, &o->nwidths) ? 2 : 0;
    case OPT_REPEAT: return wp_parse_int_option(CMD, "--repeat", arg, 1, MAX_WIDTHS, &o->repeat) ? 2 : 0;
    case OPT_BATCH: return wp_parse_int_option(CMD, "--batch", arg, 1, 2147483647, &o->pr.batch) ? 2 : 0;
    case OPT_DEVICES: return wp_parse_int_option(CMD, "--devices", arg, 1, 1 << 24, &o->pr.devices) ? 2 : 0;
    case OPT_GPN: return wp_parse_int_option(CMD, "--gpus-per-node", arg, 1, 1 << 16, &o->pr.gpus_per_node) ? 2 : 0;
    case OPT_INTRA:
    case OPT_INTER:
        if (parse_link(opt == OPT_INTRA ? "--intra" : "--inter", arg, opt == OPT_INTRA ? &o->pr.intra : &o->pr.inter))
            return 2;
        *(opt == OPT_INTRA ? &o->intra_given : &o->inter_given) = 1;
        return 0;
    case OPT_MEMORY:
        if (wp_parse_bytes(arg, &o->pr.memory_limit_bytes, &err))
            return wp_usage_error(CMD, "--memory '%s': %s", arg, err.msg);
        return 0;
    case OPT_ELEMENT: return parse_positive("--element-bytes", arg, &o->pr.element_bytes) ? 2 : 0;
    case OPT_WEIGHT_STATE: return parse_positive("--weight-state-bytes", arg, &o->pr.weight_state_bytes) ? 2 : 0;
    case OPT_ACTIVATION: return parse_positive("--activation-bytes", arg, &o->pr.activation_bytes) ? 2 : 0;
    case OPT_INPUT:
        if (strcmp(arg, "batch-split") == 0)
            o->pr.input = WP_SBP_INPUT_BATCH_SPLIT;
        else if (strcmp(arg, "free") == 0)
            o->pr.input = WP_SBP_INPUT_FREE;
        else
            return wp_usage_error(CMD, "--input '%s' must be batch-split or free", arg);
        return 0;
    case OPT_STRATEGY: o->strategy = arg; return 0;
    case OPT_CLUSTER: o->cluster = arg; return 0;
    }
    return 1;
}

/* The search's and --measure's options; 0 or a usage error (2). */
static int parse_run_option(int opt, const char *arg, struct sbp_options *o)
{
    struct wp_err err;
    switch (opt) {
    case OPT_SEARCH: {
        int kind = wp_sbp_search_from_name(arg);
        if (kind < 0)
            return wp_usage_error(CMD, "--search '%s' must be exhaustive, cd or mh", arg);
        o->so.kind = (enum wp_sbp_search)kind;
        return 0;
    }
    case OPT_SEED: {
        int seed;
        if (wp_parse_int_option(CMD, "--seed", arg, 0, 2147483647, &seed))
            return 2;
        o->so.seed = (unsigned long long)seed;
        return 0;
    }
    case OPT_RESTARTS: return wp_parse_int_option(CMD, "--restarts", arg, 0, 1 << 20, &o->so.restarts) ? 2 : 0;
    case OPT_ITERATIONS: {
        int it;
        if (wp_parse_int_option(CMD, "--iterations", arg, 0, 2147483647, &it))
            return 2;
        o->so.iterations = it;
        return 0;
    }
    case OPT_MEASURE: return 0; /* seen before parsing */
    }
    o->exec_option = 1;
    switch (opt) {
    case OPT_REPEATS: return wp_parse_int_option(CMD, "--repeats", arg, 1, 1000, &o->xo.repeats) ? 2 : 0;
    case OPT_COMPUTE: return parse_positive("--compute-s", arg, &o->xo.compute_s) ? 2 : 0;
    case OPT_BUCKET:
        if (wp_parse_bytes(arg, &o->xo.bucket_bytes, &err))
            return wp_usage_error(CMD, "--bucket '%s': %s", arg, err.msg);
        return 0;
    case OPT_WAIT:
        if (strcmp(arg, "yield") != 0 && strcmp(arg, "spin") != 0)
            return wp_usage_error(CMD, "--wait '%s' must be yield or spin", arg);
        o->xo.spin = strcmp(arg, "spin") == 0;
        return 0;
    }
    return 0;
}

/* 0, 1 after --help, or 2 after a usage error; measure: this is an MPI job. */
static int parse(int argc, char **argv, int measure, struct sbp_options *o)
{
    static const struct option longopts[] = {
        {"widths", required_argument, NULL, OPT_WIDTHS},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"batch", required_argument, NULL, OPT_BATCH},
        {"devices", required_argument, NULL, OPT_DEVICES},
        {"gpus-per-node", required_argument, NULL, OPT_GPN},
        {"intra", required_argument, NULL, OPT_INTRA},
        {"inter", required_argument, NULL, OPT_INTER},
        {"search", required_argument, NULL, OPT_SEARCH},
        {"memory", required_argument, NULL, OPT_MEMORY},
        {"element-bytes", required_argument, NULL, OPT_ELEMENT},
        {"weight-state-bytes", required_argument, NULL, OPT_WEIGHT_STATE},
        {"activation-bytes", required_argument, NULL, OPT_ACTIVATION},
        {"input", required_argument, NULL, OPT_INPUT},
        {"seed", required_argument, NULL, OPT_SEED},
        {"restarts", required_argument, NULL, OPT_RESTARTS},
        {"iterations", required_argument, NULL, OPT_ITERATIONS},
        {"strategy", required_argument, NULL, OPT_STRATEGY},
        {"cluster", required_argument, NULL, OPT_CLUSTER},
        {"measure", no_argument, NULL, OPT_MEASURE},
        {"repeats", required_argument, NULL, OPT_REPEATS},
        {"compute-s", required_argument, NULL, OPT_COMPUTE},
        {"bucket", required_argument, NULL, OPT_BUCKET},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->repeat = 1;
    o->strategy = "chosen";
    wp_sbp_exec_default(&o->xo);
    wp_sbp_problem_default(&o->pr);
    o->pr.batch = 0;
    o->pr.devices = 0;
    o->pr.intra = (struct wp_link_cost){3e-6, 1 / 150e9};
    o->pr.inter = (struct wp_link_cost){15e-6, 1 / 12.5e9};
    wp_sbp_search_default(&o->so);
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        int rc;
        switch (opt) {
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        case 'o': o->output = optarg; break;
        default:
            rc = parse_problem_option(opt, optarg, o);
            if (rc == 1)
                rc = parse_run_option(opt, optarg, o);
            if (rc)
                return 2;
        }
    }
    if (o->cluster && (o->intra_given || o->inter_given))
        return wp_usage_error(CMD, "--cluster gives the links: leave out --intra and --inter");
    if (o->exec_option && !measure)
        return wp_usage_error(CMD, "--repeats, --compute-s, --bucket and --wait need --measure");
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->nwidths == 0 || o->pr.batch == 0 || o->pr.devices == 0)
        return wp_usage_error(CMD, "--widths, --batch and --devices are needed");
    if (o->repeat > 1 && o->widths[o->nwidths - 1] != o->widths[0])
        return wp_usage_error(CMD, "--repeat needs the last width (%d) to equal the first (%d)",
                              o->widths[o->nwidths - 1], o->widths[0]);
    int per_repeat = o->nwidths - 1;
    if ((long)per_repeat * o->repeat > MAX_WIDTHS)
        return wp_usage_error(CMD, "%d layers repeated %d times: more than %d layers", per_repeat, o->repeat,
                              MAX_WIDTHS);
    return 0;
}

/* Every rank of a --measure job read and planned: one verdict for all, the
 * first failing rank's message. */
static int agree(int status, struct wp_err *err)
{
    int rank, size, first;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int mine = status ? rank : size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first > 0 && first < size) {
        MPI_Bcast(err->msg, WP_ERR_MAX, MPI_CHAR, first, MPI_COMM_WORLD);
        status = wp_err_prefix(err, "rank %d: ", first);
    }
    return status;
}

/* The problem solved, then printed or measured (measure: NULL, or this is
 * an MPI job whose ranks other than 0 are quiet until now), and written. */
static int sbp_run(struct sbp_options *o, struct quiet *measure)
{
    struct wp_err err = {""};
    struct wp_sbp_layer *layers;
    if (wp_sbp_chain_layers(o->widths, o->nwidths, o->repeat, &layers, &o->pr.nlayers, &err)) {
        wp_err_print(CMD, &err);
        return 1;
    }
    o->pr.layers = layers;
    char intra_label[WP_ERR_MAX], inter_label[WP_ERR_MAX], strategy_label[WP_ERR_MAX];
    snprintf(intra_label, sizeof intra_label, "%s", o->intra_given ? "--intra" : "the default; --intra");
    snprintf(inter_label, sizeof inter_label, "%s", o->inter_given ? "--inter" : "the default; --inter");
    int status = o->cluster ? wp_sbp_links_from_cluster(o->cluster, &o->pr, intra_label, inter_label,
                                                         sizeof intra_label, &err)
                            : 0;
    struct wp_sbp_result res;
    memset(&res, 0, sizeof res);
    if (status == 0)
        status = wp_sbp_solve(&o->pr, &o->so, o->strategy, &res, strategy_label, sizeof strategy_label, &err);
    if (measure)
        status = agree(status, &err);
    if (status) { /* printed once: ranks other than 0 are still quiet */
        wp_err_print(CMD, &err);
        wp_sbp_result_destroy(&res);
        free(layers);
        return 1;
    }
    if (measure)
        quiet_end(measure);
    int rc = 0, rank = 0;
    if (measure) {
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        struct wp_sbp_measure_labels labels = {strategy_label, intra_label, inter_label};
        rc = wp_sbp_measure(&o->pr, &res, &o->xo, &labels);
    } else {
        wp_sbp_print(stdout, &o->pr, &res);
    }
    if (o->output && rank == 0) {
        if (wp_sbp_write(o->output, &o->pr, &res, &err)) {
            wp_err_print(CMD, &err);
            rc = 1;
        } else {
            printf("wrote %s\n", o->output);
        }
    }
    wp_sbp_result_destroy(&res);
    free(layers);
    return rc;
}

/* The command; measure: NULL, or this is an MPI job (--measure) whose
 * rank parses quietly unless it is rank 0. */
static int sbp_main(int argc, char **argv, struct quiet *measure)
{
    struct sbp_options o;
    int rc = parse(argc, argv, measure != NULL, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    return sbp_run(&o, measure);
}

int wp_cmd_sbp(int argc, char **argv)
{
    if (!has_flag(argc, argv, "--measure"))
        return sbp_main(argc, argv, NULL);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct quiet q;
    quiet_begin(&q, rank != 0);
    int status = sbp_main(argc, argv, &q);
    quiet_end(&q);
    fflush(stdout);
    wp_mpi_finalize_bounded(CMD, FINALIZE_TIMEOUT_S, status);
    return status;
}
