/* `wavepipe calibrate`: times p2p messages and collectives over MPI (or NCCL
 * on the GPUs, CUDA build) within a node and across nodes, fits latency alpha and inverse bandwidth beta per
 * link level (AutoDDL 3.2), prints the measurements with the model's
 * residuals and nccl-tests' bus bandwidth, and writes the inter-node fit as
 * the network of a cluster description. */
#include <config.h>
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "cli/cli.h"
#include "cmd/commands.h"
#include "topo/calibrate_fit.h"
#include "topo/calibrate_mpi.h"
#include "topo/cluster_io.h"
#include "topo/gather_mpi.h"
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

struct calibrate_options {
    struct wp_calib_options sweep;
    int emulate_nodes;
    const struct wp_calib_backend *backend;
    const char *cluster_path;
    const char *out_path;
    const char *network_name;
};

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

static int parse_options(int argc, char **argv, struct calibrate_options *o)
{
    enum { OPT_MIN = 256, OPT_MAX, OPT_FACTOR, OPT_COLLS, OPT_EMULATE, OPT_NAME, OPT_DEVICE };
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
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->sweep = (struct wp_calib_options){4096, 16.0 * 1024 * 1024, 4, 5, (1u << WP_COLL_COUNT) - 1};
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

/* ---- the report ------------------------------------------------------------- */

static void print_header(const struct calibrate_options *o, const struct wp_calib_job *job)
{
    char lo[32], hi[32];
    int per_node_max = 0, per_node_min = job->size;
    for (int n = 0; n < job->nnodes; n++) {
        int count = 0;
        for (int r = 0; r < job->size; r++)
            count += job->node[r] == n;
        per_node_max = count > per_node_max ? count : per_node_max;
        per_node_min = count < per_node_min ? count : per_node_min;
    }
    printf("wavepipe calibrate: %d MPI ranks on %d node%s (%d", job->size, job->nnodes,
           job->nnodes == 1 ? "" : "s", per_node_min);
    if (per_node_max != per_node_min)
        printf(" to %d", per_node_max);
    printf(" per node)%s; timing %s%s\n", job->emulated ? ", nodes EMULATED: blocks of consecutive ranks on one machine" : "",
           o->backend->name, o->backend == &wp_calib_mpi ? " on host buffers" : " on each rank's GPU");
    printf("messages %s to %s (x%d), %d repetitions per point (median of the slowest rank)\n",
           wp_format_bytes(o->sweep.min_bytes, lo, sizeof lo), wp_format_bytes(o->sweep.max_bytes, hi, sizeof hi),
           o->sweep.size_factor, o->sweep.repeat);
    for (int level = 0; level < WP_LEVEL_COUNT; level++) {
        int ranks = wp_calib_level_ranks(job, (enum wp_link_level)level);
        if (ranks < 2)
            printf("%s: not measured (%s)\n", wp_link_level_name((enum wp_link_level)level),
                   level == WP_LEVEL_INTRA ? "one rank on the first node" : "one node");
    }
}

static void print_points(const struct wp_calib_point *pts, int n, const struct wp_ab_fit *fits,
                         const int *fitted)
{
    printf("\n%-10s %-13s %5s %11s %11s %11s %11s %7s %12s %12s\n", "level", "operation", "ranks", "bytes",
           "time", "min", "model", "resid", "algbw", "busbw");
    for (int i = 0; i < n; i++) {
        const struct wp_calib_sample *s = &pts[i].sample;
        char bytes[32], t[32], tmin[32], model[32], resid[16], alg[32], bus[32];
        double algbw = s->bytes / s->time_s;
        if (fitted[pts[i].level]) {
            double m = wp_ab_predict(&fits[pts[i].level], s);
            wp_format_time(m, model, sizeof model);
            snprintf(resid, sizeof resid, "%+.1f%%", 100 * (s->time_s - m) / s->time_s);
        } else {
            wp_strlcpy(model, "-", sizeof model);
            wp_strlcpy(resid, "-", sizeof resid);
        }
        printf("%-10s %-13s %5d %11s %11s %11s %11s %7s %12s %12s\n", wp_link_level_name(pts[i].level),
               wp_collective_name(s->coll), s->ranks, wp_format_bytes(s->bytes, bytes, sizeof bytes),
               wp_format_time(s->time_s, t, sizeof t), wp_format_time(pts[i].min_s, tmin, sizeof tmin),
               model, resid, wp_format_bandwidth(algbw, alg, sizeof alg),
               wp_format_bandwidth(algbw * wp_collective_busbw_factor(s->coll, s->ranks), bus, sizeof bus));
    }
}

static void print_fit(enum wp_link_level level, const struct wp_ab_fit *f)
{
    char alpha[32], bw[32], rms[32];
    printf("fit %s (%d measurements): alpha = %s, beta = %.4g s/B (1/beta = %s); residuals: rms %s, "
           "largest %.1f%% of a time\n",
           wp_link_level_name(level), f->nsamples, wp_format_time(f->alpha_s, alpha, sizeof alpha),
           f->beta_s_per_byte, wp_format_bandwidth(1 / f->beta_s_per_byte, bw, sizeof bw),
           wp_format_time(f->rms_residual_s, rms, sizeof rms), 100 * f->max_rel_residual);
    if (f->alpha_clamped)
        printf("  (the unconstrained alpha was negative, the latency lost in the noise: alpha = 0)\n");
}

/* Fits every measured level; fitted[level] says which succeeded. A level
 * whose fit fails does not stop the others; err holds the first failure,
 * naming its level. */
static int fit_levels(const struct wp_calib_point *pts, int n, struct wp_ab_fit *fits, int *fitted,
                      struct wp_err *err)
{
    struct wp_calib_sample *samples = malloc(sizeof *samples * (size_t)(n ? n : 1));
    if (!samples)
        return wp_errorf(err, "out of memory");
    int status = 0;
    for (int level = 0; level < WP_LEVEL_COUNT; level++) {
        int count = 0;
        for (int i = 0; i < n; i++)
            if (pts[i].level == (enum wp_link_level)level)
                samples[count++] = pts[i].sample;
        fitted[level] = 0;
        if (count == 0)
            continue;
        struct wp_err level_err;
        if (wp_ab_fit(samples, count, &fits[level], &level_err) == 0) {
            fitted[level] = 1;
        } else if (status == 0) {
            *err = level_err;
            status = wp_err_prefix(err, "%s fit: ", wp_link_level_name((enum wp_link_level)level));
        }
    }
    free(samples);
    return status;
}

/* ---- the cluster description ------------------------------------------------ */

static void set_network(struct wp_cluster *c, const struct calibrate_options *o, const struct wp_calib_job *job,
                        const struct wp_ab_fit *inter, const struct wp_ab_fit *intra)
{
    if (intra) { /* ranks of one node: what the simulator uses on nodes without GPU links */
        memset(&c->intra_network, 0, sizeof c->intra_network);
        c->intra_network.given = 1;
        wp_strlcpy(c->intra_network.name, "mpi-intra-node", sizeof c->intra_network.name);
        c->intra_network.bandwidth_Bps = 1 / intra->beta_s_per_byte;
        c->intra_network.latency_s = intra->alpha_s;
        wp_strlcpy(c->intra_network.source, "calibrated", sizeof c->intra_network.source);
    }
    struct wp_network net;
    memset(&net, 0, sizeof net);
    net.given = 1;
    const char *name = o->network_name      ? o->network_name
                       : c->network.given   ? c->network.name
                       : job->emulated      ? "mpi-emulated-nodes"
                                            : "mpi-inter-node";
    wp_strlcpy(net.name, name, sizeof net.name);
    net.bandwidth_Bps = 1 / inter->beta_s_per_byte;
    net.latency_s = inter->alpha_s;
    wp_strlcpy(net.source, "calibrated", sizeof net.source);
    c->network = net;
}

/* Rank 0 reads --cluster; every rank learns the status. */
static int read_cluster_in(const struct calibrate_options *o, int rank, struct wp_cluster *c, struct wp_err *err)
{
    int status = 0;
    if (rank == 0)
        status = wp_cluster_read(o->cluster_path, c, err);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
}

/* Everything between MPI_Init and MPI_Finalize; returns the exit status. */
static int calibrate(const struct calibrate_options *o)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct wp_err err = {""};
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
    struct wp_cluster cluster; /* on rank 0, with --out */
    wp_cluster_init(&cluster);
    if (o->cluster_path && read_cluster_in(o, rank, &cluster, &err)) {
        if (rank == 0)
            wp_err_print(CMD, &err);
        return 1;
    }
    struct wp_calib_job job;
    int status = wp_calib_job_init(&job, MPI_COMM_WORLD, o->emulate_nodes, &err);
#ifdef WP_HAVE_CUDA
    if (status == 0 && o->backend == &wp_calib_nccl) { /* the GPU of this rank's node-local rank */
        int ndev = 0;
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
            status = wp_errorf(&err, "--device cuda: rank %d sees no CUDA device", rank);
        else
            cudaSetDevice(job.local_rank[rank] % ndev);
        int any = status != 0;
        MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any && status == 0)
            status = wp_errorf(&err, "--device cuda: a rank sees no CUDA device");
    }
#endif
    if (status == 0 && o->out_path && job.nnodes < 2)
        status = wp_errorf(&err, "all %d ranks are on one node, so there is no inter-node link to "
                                 "write to %s (run across nodes, or --emulate-nodes K)",
                           size, o->out_path);
    if (status == 0 && o->out_path && !o->cluster_path) /* like `wavepipe topo --out`, before the sweep */
        status = wp_gather_cluster_mpi(MPI_COMM_WORLD, &cluster, &err);
    struct wp_calib_point *points = NULL;
    int npoints = 0;
    if (status == 0) {
        if (rank == 0) {
            print_header(o, &job);
            fflush(stdout);
        }
        status = wp_calibrate(&job, &o->sweep, o->backend, &points, &npoints, &err);
    }
    if (status == 0 && rank == 0) {
        struct wp_ab_fit fits[WP_LEVEL_COUNT];
        int fitted[WP_LEVEL_COUNT] = {0};
        status = fit_levels(points, npoints, fits, fitted, &err);
        print_points(points, npoints, fits, fitted);
        printf("\n");
        for (int level = 0; level < WP_LEVEL_COUNT; level++)
            if (fitted[level])
                print_fit((enum wp_link_level)level, &fits[level]);
        if (status == 0 && o->out_path) {
            if (!cluster.name[0])
                wp_strlcpy(cluster.name, cluster.types[0].name, sizeof cluster.name);
            set_network(&cluster, o, &job, &fits[WP_LEVEL_INTER], fitted[WP_LEVEL_INTRA] ? &fits[WP_LEVEL_INTRA] : NULL);
            status = wp_cluster_check(&cluster, &err);
            if (status == 0)
                status = wp_cluster_write(&cluster, o->out_path, &err);
            if (status == 0) {
                char bw[32], lat[32];
                printf("wrote %s: network %s, bandwidth %s (1/beta inter-node), latency %s (alpha "
                       "inter-node), source calibrated\n",
                       o->out_path, cluster.network.name,
                       wp_format_bandwidth(cluster.network.bandwidth_Bps, bw, sizeof bw),
                       wp_format_time(cluster.network.latency_s, lat, sizeof lat));
                if (cluster.intra_network.given)
                    printf("wrote %s: intra-node network, bandwidth %s (1/beta intra-node), latency %s\n",
                           o->out_path, wp_format_bandwidth(cluster.intra_network.bandwidth_Bps, bw, sizeof bw),
                           wp_format_time(cluster.intra_network.latency_s, lat, sizeof lat));
            }
        }
    }
    if (status && rank == 0)
        wp_err_print(CMD, &err);
    free(points);
    wp_calib_job_destroy(&job);
    wp_cluster_destroy(&cluster);
    fflush(stdout);
    return status ? 1 : 0;
}

int wp_cmd_calibrate(int argc, char **argv)
{
    struct calibrate_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    MPI_Init(&argc, &argv);
    int status = calibrate(&o);
    wp_mpi_finalize_bounded(CMD, FINALIZE_TIMEOUT_S, status);
    return status;
}
