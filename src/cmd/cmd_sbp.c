/* `wavepipe sbp`: AutoDDL's SBP mesh search for a chain of matmul layers
 * given by their widths (plan/sbp.h), or a strategy named or written out
 * (plan/sbp_strategy.h): prints each layer's 3D mesh, its tuples of nodes
 * and GPUs per axis, and its communication, and writes the plan file's
 * `sbp` group with -o. With --measure (an MPI job of one rank per device)
 * the strategy's communication runs and is timed (sbp_measure.h). */
#include <fcntl.h>
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "config/schema.h"
#include "plan/plan.h"
#include "plan/sbp.h"
#include "plan/sbp_search.h"
#include "plan/sbp_strategy.h"
#include "run/comm/sbp_measure.h"
#include "topo/cluster_io.h"
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

static void print_plan(const struct wp_sbp_problem *pr, const struct wp_sbp_result *r)
{
    const struct wp_sbp_mesh *m0 = &r->layers[0].mesh;
    printf("SBP meshes: %d layers (%d shapes), batch %d, %d devices (%d nodes x %d GPUs), search %s\n",
           pr->nlayers, r->nclasses, pr->batch, pr->devices, m0->nodes[0] * m0->nodes[1] * m0->nodes[2],
           m0->gpus[0] * m0->gpus[1] * m0->gpus[2], r->space > 0 ? wp_sbp_search_name(r->search) : "given");
    printf("%-8s %7s %7s %-14s %-12s %-12s %11s %10s %10s %10s %10s %10s %10s\n", "layer", "n_in", "n_out",
           "mesh", "nodes", "gpus", "alltoall_ms", "gather_ms", "reduce_ms", "wsync_ms", "comm_ms", "sent_MiB",
           "memory_MiB");
    for (int l = 0; l < r->nlayers; l++) {
        const struct wp_sbp_layer_cost *c = &r->layers[l];
        const struct wp_sbp_mesh *m = &c->mesh;
        char mesh_s[32], nodes_s[32], gpus_s[32];
        snprintf(mesh_s, sizeof mesh_s, "(%d,%d,%d)", wp_sbp_mesh_axis(m, 0), wp_sbp_mesh_axis(m, 1),
                 wp_sbp_mesh_axis(m, 2));
        snprintf(nodes_s, sizeof nodes_s, "(%d,%d,%d)", m->nodes[0], m->nodes[1], m->nodes[2]);
        snprintf(gpus_s, sizeof gpus_s, "(%d,%d,%d)", m->gpus[0], m->gpus[1], m->gpus[2]);
        printf("%-8s %7d %7d %-14s %-12s %-12s %11.4f %10.4f %10.4f %10.4f %10.4f %10.2f %10.2f\n",
               pr->layers[l].name, pr->layers[l].n_in, pr->layers[l].n_out, mesh_s, nodes_s, gpus_s,
               1e3 * c->alltoall_s, 1e3 * c->gather_s, 1e3 * c->reduce_s, 1e3 * c->weight_sync_s, 1e3 * c->comm_s,
               c->sent_bytes / 1048576, c->memory_bytes / 1048576);
    }
    printf("total: communication %.4f ms per step, %.2f MiB sent and %.2f MiB held per device\n", 1e3 * r->comm_s,
           r->sent_bytes / 1048576, r->memory_bytes / 1048576);
    if (r->space > 0)
        printf("search: %.4g strategies, %.4g costed\n", r->space, r->costed);
}

/* The model's links from a cluster description (see usage); the labels say
 * which entry each came from. Only the levels the problem has are needed. */
static int links_from_cluster(const char *path, struct wp_sbp_problem *pr, char *intra_label, char *inter_label,
                              size_t label_size, struct wp_err *err)
{
    struct wp_cluster c;
    wp_cluster_init(&c);
    int nodes, gpus, status = wp_cluster_read(path, &c, err);
    if (status == 0)
        status = wp_sbp_check_problem(pr, &nodes, &gpus, err);
    if (status == 0 && c.intra_network.given && c.intra_network.bandwidth_Bps > 0) {
        pr->intra = (struct wp_link_cost){c.intra_network.latency_s, 1 / c.intra_network.bandwidth_Bps};
        snprintf(intra_label, label_size, "%s: intra_network %s, %s", path, c.intra_network.name,
                 c.intra_network.source);
    } else if (status == 0 && c.ntypes > 0 && c.types[0].ngpus > 1) {
        struct wp_plan_hw hw;
        status = wp_plan_hw_from_cluster(&hw, &c, pr->devices, 1 /* memory: not needed here */, err);
        if (status == 0) {
            pr->intra = hw.intra;
            snprintf(intra_label, label_size, "%s: the slowest pair of a node's GPUs", path);
        }
    } else if (status == 0 && gpus > 1) {
        status = wp_errorf(err, "%s has no intra-node link (no intra_network, no GPUs): calibrate with two or "
                                "more ranks per node (wavepipe calibrate --out)", path);
    }
    if (status == 0 && c.network.given && c.network.bandwidth_Bps > 0) {
        pr->inter = (struct wp_link_cost){c.network.latency_s, 1 / c.network.bandwidth_Bps};
        snprintf(inter_label, label_size, "%s: network %s, %s", path, c.network.name, c.network.source);
    } else if (status == 0 && nodes > 1) {
        status = wp_errorf(err, "%s has no network between nodes (add one, or run wavepipe calibrate --out)", path);
    }
    wp_cluster_destroy(&c);
    return status;
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

/* The command; measure: NULL, or this is an MPI job (--measure) whose
 * rank parses quietly unless it is rank 0. */
static int sbp_main(int argc, char **argv, struct quiet *measure)
{
    enum {
        OPT_WIDTHS = 1000, OPT_REPEAT, OPT_BATCH, OPT_DEVICES, OPT_GPN, OPT_INTRA, OPT_INTER, OPT_SEARCH,
        OPT_MEMORY, OPT_ELEMENT, OPT_WEIGHT_STATE, OPT_ACTIVATION, OPT_INPUT, OPT_SEED, OPT_RESTARTS,
        OPT_ITERATIONS, OPT_STRATEGY, OPT_CLUSTER, OPT_MEASURE, OPT_REPEATS, OPT_COMPUTE, OPT_BUCKET, OPT_WAIT
    };
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
    static int widths[MAX_WIDTHS];
    int nwidths = 0, repeat = 1, seed = 1;
    const char *output = NULL, *strategy = "chosen", *cluster = NULL;
    int exec_option = 0; /* --repeats, --compute-s, --bucket or --wait given */
    int intra_given = 0, inter_given = 0;
    struct wp_sbp_exec_opts xo;
    wp_sbp_exec_default(&xo);
    struct wp_sbp_problem pr;
    wp_sbp_problem_default(&pr);
    pr.batch = 0;
    pr.devices = 0;
    pr.intra = (struct wp_link_cost){3e-6, 1 / 150e9};
    pr.inter = (struct wp_link_cost){15e-6, 1 / 12.5e9};
    struct wp_sbp_search_opts so;
    wp_sbp_search_default(&so);
    struct wp_err err = {""};
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 0;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        case '?': return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        case 'o': output = optarg; break;
        case OPT_WIDTHS:
            if (parse_widths(optarg, widths, &nwidths))
                return 2;
            break;
        case OPT_REPEAT:
            if (wp_parse_int_option(CMD, "--repeat", optarg, 1, MAX_WIDTHS, &repeat))
                return 2;
            break;
        case OPT_BATCH:
            if (wp_parse_int_option(CMD, "--batch", optarg, 1, 2147483647, &pr.batch))
                return 2;
            break;
        case OPT_DEVICES:
            if (wp_parse_int_option(CMD, "--devices", optarg, 1, 1 << 24, &pr.devices))
                return 2;
            break;
        case OPT_GPN:
            if (wp_parse_int_option(CMD, "--gpus-per-node", optarg, 1, 1 << 16, &pr.gpus_per_node))
                return 2;
            break;
        case OPT_INTRA:
        case OPT_INTER:
            if (parse_link(opt == OPT_INTRA ? "--intra" : "--inter", optarg, opt == OPT_INTRA ? &pr.intra : &pr.inter))
                return 2;
            *(opt == OPT_INTRA ? &intra_given : &inter_given) = 1;
            break;
        case OPT_SEARCH: {
            int kind = wp_sbp_search_from_name(optarg);
            if (kind < 0)
                return wp_usage_error(CMD, "--search '%s' must be exhaustive, cd or mh", optarg);
            so.kind = (enum wp_sbp_search)kind;
            break;
        }
        case OPT_MEMORY:
            if (wp_parse_bytes(optarg, &pr.memory_limit_bytes, &err))
                return wp_usage_error(CMD, "--memory '%s': %s", optarg, err.msg);
            break;
        case OPT_ELEMENT:
            if (parse_positive("--element-bytes", optarg, &pr.element_bytes))
                return 2;
            break;
        case OPT_WEIGHT_STATE:
            if (parse_positive("--weight-state-bytes", optarg, &pr.weight_state_bytes))
                return 2;
            break;
        case OPT_ACTIVATION:
            if (parse_positive("--activation-bytes", optarg, &pr.activation_bytes))
                return 2;
            break;
        case OPT_INPUT:
            if (strcmp(optarg, "batch-split") == 0)
                pr.input = WP_SBP_INPUT_BATCH_SPLIT;
            else if (strcmp(optarg, "free") == 0)
                pr.input = WP_SBP_INPUT_FREE;
            else
                return wp_usage_error(CMD, "--input '%s' must be batch-split or free", optarg);
            break;
        case OPT_SEED:
            if (wp_parse_int_option(CMD, "--seed", optarg, 0, 2147483647, &seed))
                return 2;
            so.seed = (unsigned long long)seed;
            break;
        case OPT_RESTARTS:
            if (wp_parse_int_option(CMD, "--restarts", optarg, 0, 1 << 20, &so.restarts))
                return 2;
            break;
        case OPT_ITERATIONS: {
            int it;
            if (wp_parse_int_option(CMD, "--iterations", optarg, 0, 2147483647, &it))
                return 2;
            so.iterations = it;
            break;
        }
        case OPT_STRATEGY: strategy = optarg; break;
        case OPT_CLUSTER: cluster = optarg; break;
        case OPT_MEASURE: break; /* seen before parsing */
        case OPT_REPEATS:
            if (wp_parse_int_option(CMD, "--repeats", optarg, 1, 1000, &xo.repeats))
                return 2;
            exec_option = 1;
            break;
        case OPT_COMPUTE:
            if (parse_positive("--compute-s", optarg, &xo.compute_s))
                return 2;
            exec_option = 1;
            break;
        case OPT_BUCKET:
            if (wp_parse_bytes(optarg, &xo.bucket_bytes, &err))
                return wp_usage_error(CMD, "--bucket '%s': %s", optarg, err.msg);
            exec_option = 1;
            break;
        case OPT_WAIT:
            if (strcmp(optarg, "yield") != 0 && strcmp(optarg, "spin") != 0)
                return wp_usage_error(CMD, "--wait '%s' must be yield or spin", optarg);
            xo.spin = strcmp(optarg, "spin") == 0;
            exec_option = 1;
            break;
        }
    }
    if (cluster && (intra_given || inter_given))
        return wp_usage_error(CMD, "--cluster gives the links: leave out --intra and --inter");
    if (exec_option && !measure)
        return wp_usage_error(CMD, "--repeats, --compute-s, --bucket and --wait need --measure");
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (nwidths == 0 || pr.batch == 0 || pr.devices == 0)
        return wp_usage_error(CMD, "--widths, --batch and --devices are needed");
    if (repeat > 1 && widths[nwidths - 1] != widths[0])
        return wp_usage_error(CMD, "--repeat needs the last width (%d) to equal the first (%d)",
                              widths[nwidths - 1], widths[0]);
    int per_repeat = nwidths - 1;
    if ((long)per_repeat * repeat > MAX_WIDTHS)
        return wp_usage_error(CMD, "%d layers repeated %d times: more than %d layers", per_repeat, repeat,
                              MAX_WIDTHS);
    pr.nlayers = per_repeat * repeat;
    struct wp_sbp_layer *layers = calloc((size_t)pr.nlayers, sizeof *layers);
    if (!layers) {
        wp_errorf(&err, "out of memory");
        wp_err_print(CMD, &err);
        return 1;
    }
    for (int l = 0; l < pr.nlayers; l++) {
        snprintf(layers[l].name, sizeof layers[l].name, "fc%d", l);
        layers[l].n_in = widths[l % per_repeat];
        layers[l].n_out = widths[l % per_repeat + 1];
    }
    pr.layers = layers;

    char intra_label[WP_ERR_MAX], inter_label[WP_ERR_MAX], strategy_label[WP_ERR_MAX];
    snprintf(intra_label, sizeof intra_label, "%s", intra_given ? "--intra" : "the default; --intra");
    snprintf(inter_label, sizeof inter_label, "%s", inter_given ? "--inter" : "the default; --inter");
    int status = cluster ? links_from_cluster(cluster, &pr, intra_label, inter_label, sizeof intra_label, &err) : 0;
    struct wp_sbp_result res;
    memset(&res, 0, sizeof res);
    if (status == 0 && strcmp(strategy, "chosen") == 0) {
        status = wp_sbp_plan(&pr, &so, &res, &err);
        snprintf(strategy_label, sizeof strategy_label, "chosen:%s", wp_sbp_search_name(so.kind));
    } else if (status == 0) {
        struct wp_sbp_mesh *meshes = calloc((size_t)pr.nlayers, sizeof *meshes);
        status = meshes ? wp_sbp_strategy_meshes(&pr, strategy, meshes, &err) : wp_errorf(&err, "out of memory");
        if (status == 0)
            status = wp_sbp_evaluate(&pr, meshes, &res, &err);
        free(meshes);
        snprintf(strategy_label, sizeof strategy_label, "%s", strategy);
    }
    if (measure) { /* every rank read and planned: one verdict for all, the first failing rank's message */
        int rank, size, first;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        int mine = status ? rank : size;
        MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (first > 0 && first < size) {
            MPI_Bcast(err.msg, WP_ERR_MAX, MPI_CHAR, first, MPI_COMM_WORLD);
            status = wp_err_prefix(&err, "rank %d: ", first);
        }
    }
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
        rc = wp_sbp_measure(&pr, &res, &xo, &labels);
    } else {
        print_plan(&pr, &res);
    }
    if (output && rank == 0) {
        config_t cfg;
        config_init(&cfg);
        wp_sbp_config_add(config_root_setting(&cfg), &pr, &res);
        if (wp_cfg_write_file(&cfg, output,
                              "wavepipe sbp: AutoDDL SBP mesh per layer (p0, p1, p2 as nodes x GPUs),\n"
                              "communication seconds per step (forward + backward), bytes per device",
                              &err)) {
            wp_err_print(CMD, &err);
            rc = 1;
        } else {
            printf("wrote %s\n", output);
        }
        config_destroy(&cfg);
    }
    wp_sbp_result_destroy(&res);
    free(layers);
    return rc;
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
