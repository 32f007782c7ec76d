/* `wavepipe probe`: a PMIx client for `srun --mpi=pmix` that describes every
 * node of the allocation and writes the cluster description (rank 0). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "topo/cluster_io.h"
#include "topo/network.h"
#include "topo/probe_pmix.h"
#include "topo/report.h"
#include "util/strutil.h"

#define CMD "probe"

static void usage(void)
{
    printf("Usage: srun --mpi=pmix wavepipe probe [--out FILE] [--network NAME,BW,LAT] [--quiet]\n\n"
           "Describes every node of a Slurm allocation without MPI: each node's first\n"
           "process describes it with hwloc and publishes it through PMIx (PMIx_Put,\n"
           "PMIx_Commit, PMIx_Fence); rank 0 assembles the nodes from PMIX_NUM_NODES,\n"
           "PMIX_HOSTNAME, PMIX_NODEID and PMIX_LOCAL_PEERS, prints the summary and\n"
           "writes the cluster description. Outside a PMIx launch it says so and fails.\n\n"
           "Options:\n"
           "  -o, --out FILE            write the cluster description (libconfig) to FILE\n"
           "  -n, --network NAME,BW,LAT the inter-node network, e.g. ib-hdr,200Gbit/s,1.5us\n"
           "      --name NAME           name of the cluster\n"
           "  -q, --quiet               do not print the summary\n"
           "  -h, --help                this text\n");
}

int wp_cmd_probe(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"out", required_argument, NULL, 'o'}, {"network", required_argument, NULL, 'n'},
        {"name", required_argument, NULL, 'N'}, {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},      {NULL, 0, NULL, 0}};
    const char *out_path = NULL, *network_spec = NULL, *name = NULL;
    int quiet = 0, opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":o:n:qh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'o': out_path = optarg; break;
        case 'n': network_spec = optarg; break;
        case 'N': name = optarg; break;
        case 'q': quiet = 1; break;
        case 'h': usage(); return 0;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    struct wp_err err;
    struct wp_network net;
    if (network_spec && wp_network_parse_spec(network_spec, &net, &err)) {
        wp_err_print(CMD, &err);
        return 2;
    }
    if (!wp_pmix_launched()) {
        fprintf(stderr, "wavepipe probe: not started by a PMIx server (PMIX_NAMESPACE is unset); "
                        "run it as 'srun --mpi=pmix wavepipe probe'\n");
        return 1;
    }
    struct wp_cluster c;
    wp_cluster_init(&c);
    int is_root = 0;
    int status = wp_probe_cluster_pmix(&c, &is_root, &err);
    if (status == 0 && is_root) {
        if (network_spec)
            c.network = net;
        wp_strlcpy(c.name, name ? name : (c.nnodes ? c.nodes[0].host : "cluster"), sizeof c.name);
        if (!quiet)
            wp_cluster_report(stdout, &c);
        if (out_path) {
            status = wp_cluster_write(&c, out_path, &err);
            if (status == 0 && !quiet)
                printf("wrote %s\n", out_path);
        }
    }
    if (status)
        wp_err_print(CMD, &err);
    wp_cluster_destroy(&c);
    return status ? 1 : 0;
}
