/* `wavepipe topo`: describe a cluster through hwloc (live, recorded XML
 * exports, or every node of an MPI job: topo/cluster_build.h), print it,
 * write the cluster file, or read one back and check it. */
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "kernels/device_info.h"
#include "topo/cluster_build.h"
#include "topo/cluster_io.h"
#include "topo/network.h"
#include "topo/report.h"
#include "util/strutil.h"
#include "util/units.h"

#define CMD "topo"
#define MAX_XML 64

static void usage(void)
{
    printf("Usage: wavepipe topo [--xml FILE[:COUNT]]... [--network NAME,BW,LAT] [--out FILE]\n"
           "       wavepipe topo --cluster FILE [--network NAME,BW,LAT] [--out FILE]\n"
           "       mpiexec -n P wavepipe topo [--out FILE]   (or srun --mpi=pmi2)\n\n"
           "Describes a cluster: packages, NUMA nodes, cores, GPUs (as CUDA, NVML, RSMI,\n"
           "OpenCL OS devices or bare PCI functions), NICs, the GPU interconnect (hwloc's\n"
           "NVLinkBandwidth/XGMIBandwidth matrices with NVSwitch ports merged, else the\n"
           "PCIe path), and which NUMA node and NIC each GPU is nearest to. Without --xml\n"
           "or --cluster it describes this machine, or under a parallel launch every node\n"
           "of the job (hostnames, ranks per node, local ranks).\n\n"
           "Options:\n"
           "  -x, --xml FILE[:COUNT]    a node type from an hwloc XML export, COUNT nodes of\n"
           "                            it (default 1); repeat for a cluster of several types.\n"
           "                            Recorded topologies are reported as emulated.\n"
           "  -c, --cluster FILE        read a cluster description, check it, print it\n"
           "  -n, --network NAME,BW,LAT the inter-node network, e.g. ib-hdr,200Gbit/s,1.5us\n"
           "                            (bandwidth units B/s..TB/s or bit/s..Tbit/s; latency s,\n"
           "                            ms, us, ns) until `wavepipe calibrate` measures it\n"
           "      --name NAME           name of the cluster (default: the first node type)\n"
           "      --nodes N             with --cluster: N nodes of its one node type (the job's node\n"
           "                            and rank lists dropped), e.g. a calibration of 2 nodes\n"
           "                            made over for a job of 4\n"
           "      --gpus-per-node G     with --cluster: G emulated GPUs a node (ranks of a CPU cluster\n"
           "                            standing in for GPUs, as run --compute emulated does), linked\n"
           "                            by its intra-node network (calibrate's fit); for wavepipe plan\n"
           "      --gpu-memory BYTES    the emulated GPUs' memory (default 80GB)\n"
           "  -o, --out FILE            write the cluster description (libconfig) to FILE\n"
           "  -q, --quiet               do not print the summary\n"
           "  -h, --help                this text\n\n"
           "Examples:\n"
           "  wavepipe topo --xml tests/topology/hwloc-nvidiaDGX2.xml:2 \\\n"
           "                --network ib-edr,100Gbit/s,2us --out dgx2x2.cfg\n"
           "  wavepipe topo --cluster dgx2x2.cfg\n");
}

struct topo_options {
    const char *xml[MAX_XML];
    int xml_count[MAX_XML];
    int nxml;
    const char *cluster_path;
    const char *out_path;
    const char *name;
    const char *network_spec;
    int quiet;
    int nodes, gpus_per_node;
    double gpu_memory_bytes;
};

/* Splits "FILE:COUNT" (COUNT digits only) into its parts. */
static int parse_xml_arg(char *arg, struct topo_options *o)
{
    if (o->nxml == MAX_XML)
        return wp_usage_error(CMD, "at most %d --xml options", MAX_XML);
    int count = 1;
    char *colon = strrchr(arg, ':');
    if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
        *colon = '\0';
        if (wp_parse_int_option(CMD, "--xml COUNT", colon + 1, 1, 1000000, &count))
            return 2;
    }
    o->xml[o->nxml] = arg;
    o->xml_count[o->nxml++] = count;
    return 0;
}

static int parse_options(int argc, char **argv, struct topo_options *o)
{
    static const struct option longopts[] = {
        {"xml", required_argument, NULL, 'x'},     {"cluster", required_argument, NULL, 'c'},
        {"network", required_argument, NULL, 'n'}, {"name", required_argument, NULL, 'N'},
        {"out", required_argument, NULL, 'o'},     {"quiet", no_argument, NULL, 'q'},
        {"nodes", required_argument, NULL, 'R'},   {"gpus-per-node", required_argument, NULL, 'G'},
        {"gpu-memory", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->gpu_memory_bytes = 80e9;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":x:c:n:o:qh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'x':
            if (parse_xml_arg(optarg, o))
                return 2;
            break;
        case 'c': o->cluster_path = optarg; break;
        case 'n': o->network_spec = optarg; break;
        case 'N': o->name = optarg; break;
        case 'o': o->out_path = optarg; break;
        case 'q': o->quiet = 1; break;
        case 'R':
            if (wp_parse_int_option(CMD, "--nodes", optarg, 1, 1 << 20, &o->nodes))
                return 2;
            break;
        case 'G':
            if (wp_parse_int_option(CMD, "--gpus-per-node", optarg, 1, 4096, &o->gpus_per_node))
                return 2;
            break;
        case 'M': {
            struct wp_err err;
            if (wp_parse_bytes(optarg, &o->gpu_memory_bytes, &err) || !(o->gpu_memory_bytes > 0))
                return wp_usage_error(CMD, "--gpu-memory '%s': expected bytes > 0 such as 80GB", optarg);
            break;
        }
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->cluster_path && o->nxml)
        return wp_usage_error(CMD, "--cluster and --xml cannot be combined");
    if ((o->nodes || o->gpus_per_node) && !o->cluster_path)
        return wp_usage_error(CMD, "--nodes and --gpus-per-node make over a cluster description: give --cluster FILE");
    return 0;
}

static void report_devices(void)
{
    struct wp_device_info info;
    wp_device_query(&info);
    if (info.cuda_build)
        printf("CUDA on this process: %s\n", info.summary);
}

int wp_cmd_topo(int argc, char **argv)
{
    struct topo_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    struct wp_network net;
    struct wp_err err;
    if (o.network_spec && wp_network_parse_spec(o.network_spec, &net, &err)) {
        wp_err_print(CMD, &err);
        return 2;
    }
    int live = !o.cluster_path && o.nxml == 0;
    if (live)
        MPI_Init(&argc, &argv);
    struct wp_cluster c;
    int is_root;
    struct wp_cluster_source src = {o.cluster_path, o.nodes, o.gpus_per_node, o.gpu_memory_bytes,
                                    o.xml, o.xml_count, o.nxml};
    int status = wp_cluster_build(&src, &c, &is_root, &err);
    if (status == 0 && is_root) {
        if (o.network_spec)
            c.network = net;
        if (o.name)
            wp_strlcpy(c.name, o.name, sizeof c.name);
        else if (!c.name[0])
            wp_strlcpy(c.name, c.types[0].name, sizeof c.name);
        status = wp_cluster_check(&c, &err);
        if (status == 0 && !o.quiet) {
            wp_cluster_report(stdout, &c);
            if (live)
                report_devices();
        }
        if (status == 0 && o.out_path) {
            status = wp_cluster_write(&c, o.out_path, &err);
            if (status == 0 && !o.quiet)
                printf("wrote %s\n", o.out_path);
        }
    }
    if (status && is_root)
        wp_err_print(CMD, &err);
    if (is_root)
        wp_cluster_destroy(&c);
    if (live)
        MPI_Finalize();
    return status ? 1 : 0;
}
