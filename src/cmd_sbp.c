/* `wavepipe sbp`: AutoDDL's SBP mesh search for a chain of matmul layers
 * given by their widths (plan/sbp.h): prints each layer's 3D mesh, its
 * tuples of nodes and GPUs per axis, and its communication, and writes the
 * plan file's `sbp` group with -o. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config/schema.h"
#include "plan/sbp.h"
#include "util/units.h"

#define CMD "sbp"
#define MAX_WIDTHS 1024

static void usage(void)
{
    printf("Usage: wavepipe sbp --widths W0,W1,...,WL --batch B --devices P [--gpus-per-node G]\n"
           "                    [--search exhaustive|cd|mh] [--memory BYTES] [-o OUT.cfg] [options]\n\n"
           "Chooses, for every matmul layer of a chain (layer l: a B x W(l) input times a\n"
           "W(l) x W(l+1) weight), AutoDDL's 3D device mesh p0 x p1 x p2 = P: input\n"
           "(S0:p0, B:p1, S1:p2), weight (B:p0, S1:p1, S0:p2), output (S0:p0, S1:p1, P:p2),\n"
           "each axis split into nodes x GPUs per node. Costs are ring collectives under\n"
           "the alpha-beta model on the link each crosses, forward and backward: the\n"
           "partial output's reduce-scatter, the input's all-gather, the alltoall between\n"
           "layers and the weight-gradient allreduce over p0. Layers of the same shape\n"
           "share a mesh. Memory per device: weights with their gradient and optimizer\n"
           "state, and the input kept for the backward.\n\n"
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
           m0->gpus[0] * m0->gpus[1] * m0->gpus[2], wp_sbp_search_name(r->search));
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
    printf("search: %.4g strategies, %.4g costed\n", r->space, r->costed);
}

int wp_cmd_sbp(int argc, char **argv)
{
    enum {
        OPT_WIDTHS = 1000, OPT_REPEAT, OPT_BATCH, OPT_DEVICES, OPT_GPN, OPT_INTRA, OPT_INTER, OPT_SEARCH,
        OPT_MEMORY, OPT_ELEMENT, OPT_WEIGHT_STATE, OPT_ACTIVATION, OPT_INPUT, OPT_SEED, OPT_RESTARTS,
        OPT_ITERATIONS
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
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static int widths[MAX_WIDTHS];
    int nwidths = 0, repeat = 1, seed = 1;
    const char *output = NULL;
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
        }
    }
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

    struct wp_sbp_result res;
    int rc = 0;
    if (wp_sbp_plan(&pr, &so, &res, &err)) {
        wp_err_print(CMD, &err);
        free(layers);
        return 1;
    }
    print_plan(&pr, &res);
    if (output) {
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
