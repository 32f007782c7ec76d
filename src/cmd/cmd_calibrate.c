/* `wavepipe calibrate`: times p2p messages and collectives over MPI (or NCCL
 * on the GPUs, CUDA build) within a node and across nodes, fits latency alpha and inverse bandwidth beta per
 * link level (AutoDDL 3.2), prints the measurements with the model's
 * residuals and nccl-tests' bus bandwidth, and writes the inter-node fit as
 * the network of a cluster description (topo/calibrate_network.h). */
#include <config.h>
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cmd/commands.h"
#include "topo/calibrate_network.h"
#include "topo/cluster_io.h"
#include "util/mpi_finalize.h"
#include "util/strutil.h"
#include "util/units.h"

#define CMD "calibrate"
#define MAX_MESSAGE_BYTES (1024.0 * 1024 * 1024)
#define MAX_REPEAT 1000
#define FINALIZE_TIMEOUT_S 20.0

static void usage(void)
{
    printf("Usage: mpiexec -n P wavepipe calibrate [OPTIONS] [--out FILE]\n"
           "       srun --mpi=pmi2 wavepipe calibrate [--cluster IN] --out OUT\n\n"
           "Measures the network the way the planner models it. Times point-to-point\n"
           "messages (half a ping-pong) and MPI AllReduce, AllGather, ReduceScatter and\n"
           "AlltoAll over a range of message sizes and group sizes, within a node (ranks\n"
           "of the first node) and across nodes (one rank per node), each point the\n"
           "median of N repetitions of the slowest rank's time. Fits, per link level, the\n"
           "latency alpha (s) and inverse bandwidth beta (s/byte) by least squares on\n"
           "the ring-collective costs of AutoDDL (Table 2):\n"
           "  p2p                           alpha + n beta\n"
           "  allreduce                     2(p-1) alpha + 2(p-1)/p n beta\n"
           "  allgather, reducescatter,     (p-1) alpha + (p-1)/p n beta\n"
           "  alltoall\n"
           "(n: bytes in and out of allreduce, out of allgather, into reducescatter, per\n"
           "rank of alltoall) and prints each measurement with the model's time, the\n"
           "residual, and the bus bandwidth of nccl-tests (algbw = n / time; busbw =\n"
           "algbw x 2(p-1)/p for allreduce, x (p-1)/p for the others).\n\n"
           "With --out, the inter-node fit becomes the cluster's network (bandwidth_Bps =\n"
           "1/beta, latency_s = alpha, source \"calibrated\"), written to a temporary file\n"
           "and renamed: into the description read from --cluster IN, or into one of\n"
           "this job's nodes made as `wavepipe topo --out` makes it. Nodes are found with\n"
           "MPI_Comm_split_type (MPI_COMM_TYPE_SHARED). Everything is printed and\n"
           "written before MPI_Finalize, which is given %g s: Debian 12's MPICH 4.0.2\n"
           "over UCX's TCP transport can hang there in jobs of 3 or more ranks.\n\n"
           "Options:\n"
           "      --min-bytes SIZE     smallest message (default 4KiB; B, KiB, MiB, KB, MB)\n"
           "      --max-bytes SIZE     largest message (default 16MiB, at most 1GiB)\n"
           "      --size-factor F      sizes grow by F (default 4)\n"
           "  -r, --repeat N           timed repetitions per point, after a warm-up (default 5)\n"
           "      --collectives LIST   comma-separated subset of p2p,allreduce,allgather,\n"
           "                           reducescatter,alltoall (default: all)\n"
           "      --device cpu|cuda    MPI on host buffers (default), or NCCL on each rank's GPU (the\n"
           "                           node-local rank's; CUDA build): NCCL's own algorithms are timed\n"
           "      --dilate F           on a test cluster dilated F times (links F times slower,\n"
           "                           wavepipe run --dilate F): every time divided by F\n"
           "      --scale-bytes S      and byte-scaled (links S times slower again): each operation\n"
           "                           moves 1/S of its size, reported as the size; the fit is then\n"
           "                           the undilated network's, for simulate --cluster as it is\n"
           "      --emulate-nodes K    treat K equal blocks of consecutive ranks as nodes\n"
           "                           (one machine posing as K; reported as emulated)\n"
           "  -c, --cluster FILE       the cluster description to add the network to\n"
           "  -o, --out FILE           write the cluster description with the network\n"
           "      --network-name NAME  name of the network (default: the one in --cluster,\n"
           "                           else mpi-inter-node)\n"
           "  -h, --help               this text\n\n"
           "Example (two nodes, one rank each):\n"
           "  srun -N 2 --ntasks-per-node=1 --mpi=pmi2 wavepipe calibrate --out job.cfg\n",
           FINALIZE_TIMEOUT_S);
}

static int parse_size(const char *option, const char *text, double *bytes)
{
    struct wp_err err;
    if (wp_parse_bytes(text, bytes, &err))
        return wp_usage_error(CMD, "%s: %s", option, err.msg);
    if (*bytes < 1 || *bytes > MAX_MESSAGE_BYTES)
        return wp_usage_error(CMD, "%s '%s' must be from 1 byte to 1GiB", option, text);
    return 0;
}

static int parse_collectives(const char *text, unsigned *mask)
{
    char copy[256];
    if (strlen(text) >= sizeof copy)
        return wp_usage_error(CMD, "--collectives list too long");
    wp_strlcpy(copy, text, sizeof copy);
    *mask = 0;
    char *save = NULL;
    for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        int c = wp_collective_from_name(name);
        if (c < 0)
            return wp_usage_error(CMD, "--collectives: unknown '%s' (choose from p2p, allreduce, "
                                       "allgather, reducescatter, alltoall)",
                                  name);
        *mask |= 1u << c;
    }
    if (!*mask)
        return wp_usage_error(CMD, "--collectives names none");
    return 0;
}

static int parse_options(int argc, char **argv, struct wp_calib_network_options *o)
{
    enum { OPT_MIN = 256, OPT_MAX, OPT_FACTOR, OPT_COLLS, OPT_EMULATE, OPT_NAME, OPT_DEVICE, OPT_DILATE,
           OPT_SCALE_BYTES };
    static const struct option longopts[] = {
        {"min-bytes", required_argument, NULL, OPT_MIN},
        {"max-bytes", required_argument, NULL, OPT_MAX},
        {"size-factor", required_argument, NULL, OPT_FACTOR},
        {"repeat", required_argument, NULL, 'r'},
        {"collectives", required_argument, NULL, OPT_COLLS},
        {"emulate-nodes", required_argument, NULL, OPT_EMULATE},
        {"cluster", required_argument, NULL, 'c'},
        {"out", required_argument, NULL, 'o'},
        {"network-name", required_argument, NULL, OPT_NAME},
        {"device", required_argument, NULL, OPT_DEVICE},
        {"dilate", required_argument, NULL, OPT_DILATE},
        {"scale-bytes", required_argument, NULL, OPT_SCALE_BYTES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->sweep = (struct wp_calib_options){4096, 16.0 * 1024 * 1024, 4, 5, (1u << WP_COLL_COUNT) - 1, 1, 1};
    o->backend = &wp_calib_mpi;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":r:c:o:h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_MIN:
            if (parse_size("--min-bytes", optarg, &o->sweep.min_bytes))
                return 2;
            break;
        case OPT_MAX:
            if (parse_size("--max-bytes", optarg, &o->sweep.max_bytes))
                return 2;
            break;
        case OPT_FACTOR:
            if (wp_parse_int_option(CMD, "--size-factor", optarg, 2, 1024, &o->sweep.size_factor))
                return 2;
            break;
        case 'r':
            if (wp_parse_int_option(CMD, "--repeat", optarg, 1, MAX_REPEAT, &o->sweep.repeat))
                return 2;
            break;
        case OPT_COLLS:
            if (parse_collectives(optarg, &o->sweep.coll_mask))
                return 2;
            break;
        case OPT_EMULATE:
            if (wp_parse_int_option(CMD, "--emulate-nodes", optarg, 1, 1000000, &o->emulate_nodes))
                return 2;
            break;
        case OPT_DILATE:
            if (wp_parse_factor_option(CMD, "--dilate", optarg, 1, 1000, &o->sweep.dilation))
                return 2;
            break;
        case OPT_SCALE_BYTES:
            if (wp_parse_factor_option(CMD, "--scale-bytes", optarg, 1, 1e6, &o->sweep.byte_scale))
                return 2;
            break;
        case 'c': o->cluster_path = optarg; break;
        case 'o': o->out_path = optarg; break;
        case OPT_NAME:
            if (!optarg[0] || strlen(optarg) >= WP_NAME_MAX)
                return wp_usage_error(CMD, "--network-name must be 1 to %d characters", WP_NAME_MAX - 1);
            o->network_name = optarg;
            break;
        case OPT_DEVICE:
            if (strcmp(optarg, "cpu") == 0) {
                o->backend = &wp_calib_mpi;
            } else if (strcmp(optarg, "cuda") == 0) {
#ifdef WP_HAVE_CUDA
                o->backend = &wp_calib_nccl;
#else
                o->backend = NULL; /* refused after MPI_Init, by rank 0 alone */
#endif
            } else {
                return wp_usage_error(CMD, "--device must be cpu or cuda");
            }
            break;
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->sweep.min_bytes >= o->sweep.max_bytes)
        return wp_usage_error(CMD, "--min-bytes must be below --max-bytes: the fit needs two sizes or more");
    if (o->cluster_path && !o->out_path)
        return wp_usage_error(CMD, "--cluster needs --out (the file to write; it may be the same)");
    return 0;
}

/* Everything between MPI_Init and MPI_Finalize; returns the exit status. */
static int calibrate(const struct wp_calib_network_options *o)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "wavepipe %s: needs at least 2 MPI ranks (mpiexec -n 2 ..., or srun -n 2 "
                        "--mpi=pmi2 ...)\n", CMD);
        return 1;
    }
    if (!o->backend) {
        if (rank == 0)
            wp_usage_error(CMD, "--device cuda: this build has no CUDA (configure --with-cuda)");
        return 2;
    }
    struct wp_err err = {""};
    int status = wp_calibrate_network(o, stdout, &err);
    if (status && rank == 0)
        wp_err_print(CMD, &err);
    fflush(stdout);
    return status ? 1 : 0;
}

int wp_cmd_calibrate(int argc, char **argv)
{
    struct wp_calib_network_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    MPI_Init(&argc, &argv);
    int status = calibrate(&o);
    wp_mpi_finalize_bounded(CMD, FINALIZE_TIMEOUT_S, status);
    return status;
}
