/* A calibration from start to end (see calibrate_network.h): the job and
 * its checks, the sweep, the fits and their report, and the cluster
 * description with the fitted network. */
#include <config.h>

#include "topo/calibrate_network.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "topo/calibrate_fit.h"
#include "topo/cluster_io.h"
#include "topo/gather_mpi.h"
#include "util/strutil.h"
#include "util/units.h"

static void print_header(FILE *out, const struct wp_calib_network_options *o, const struct wp_calib_job *job)
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
    fprintf(out, "wavepipe calibrate: %d MPI ranks on %d node%s (%d", job->size, job->nnodes,
           job->nnodes == 1 ? "" : "s", per_node_min);
    if (per_node_max != per_node_min)
        fprintf(out, " to %d", per_node_max);
    fprintf(out, " per node)%s; timing %s%s\n",
            job->emulated ? ", nodes EMULATED: blocks of consecutive ranks on one machine" : "", o->backend->name,
            o->backend == &wp_calib_mpi ? " on host buffers" : " on each rank's GPU");
    fprintf(out, "messages %s to %s (x%d), %d repetitions per point (median of the slowest rank)\n",
           wp_format_bytes(o->sweep.min_bytes, lo, sizeof lo), wp_format_bytes(o->sweep.max_bytes, hi, sizeof hi),
           o->sweep.size_factor, o->sweep.repeat);
    if (o->sweep.dilation > 1 || o->sweep.byte_scale > 1)
        fprintf(out, "dilation=%g byte_scale=%g: each operation moves 1/%g of its size and its time is divided by "
                     "%g (links shaped %g x %g times slower): the fit is the undilated network's\n",
                o->sweep.dilation, o->sweep.byte_scale, o->sweep.byte_scale, o->sweep.dilation, o->sweep.dilation,
                o->sweep.byte_scale);
    for (int level = 0; level < WP_LEVEL_COUNT; level++) {
        int ranks = wp_calib_level_ranks(job, (enum wp_link_level)level);
        if (ranks < 2)
            fprintf(out, "%s: not measured (%s)\n", wp_link_level_name((enum wp_link_level)level),
                   level == WP_LEVEL_INTRA ? "one rank on the first node" : "one node");
    }
}

static void print_points(FILE *out, const struct wp_calib_point *pts, int n, const struct wp_ab_fit *fits,
                         const int *fitted)
{
    fprintf(out, "\n%-10s %-13s %5s %11s %11s %11s %11s %7s %12s %12s\n", "level", "operation", "ranks", "bytes",
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
        fprintf(out, "%-10s %-13s %5d %11s %11s %11s %11s %7s %12s %12s\n", wp_link_level_name(pts[i].level),
               wp_collective_name(s->coll), s->ranks, wp_format_bytes(s->bytes, bytes, sizeof bytes),
               wp_format_time(s->time_s, t, sizeof t), wp_format_time(pts[i].min_s, tmin, sizeof tmin),
               model, resid, wp_format_bandwidth(algbw, alg, sizeof alg),
               wp_format_bandwidth(algbw * wp_collective_busbw_factor(s->coll, s->ranks), bus, sizeof bus));
    }
}

static void print_fit(FILE *out, enum wp_link_level level, const struct wp_ab_fit *f)
{
    char alpha[32], bw[32], rms[32];
    fprintf(out, "fit %s (%d measurements): alpha = %s, beta = %.4g s/B (1/beta = %s); residuals: rms %s, "
           "largest %.1f%% of a time\n",
           wp_link_level_name(level), f->nsamples, wp_format_time(f->alpha_s, alpha, sizeof alpha),
           f->beta_s_per_byte, wp_format_bandwidth(1 / f->beta_s_per_byte, bw, sizeof bw),
           wp_format_time(f->rms_residual_s, rms, sizeof rms), 100 * f->max_rel_residual);
    if (f->alpha_clamped)
        fprintf(out, "  (the unconstrained alpha was negative, the latency lost in the noise: alpha = 0)\n");
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

/* The fits as the cluster's networks: inter-node always, intra-node when measured. */
static void set_network(struct wp_cluster *c, const struct wp_calib_network_options *o, const struct wp_calib_job *job,
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


/* Rank 0 reads the cluster description; every rank learns the status. */
static int read_cluster_in(const struct wp_calib_network_options *o, int rank, struct wp_cluster *c,
                           struct wp_err *err)
{
    int status = 0;
    if (rank == 0)
        status = wp_cluster_read(o->cluster_path, c, err);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return status;
}

/* With NCCL, each rank takes the GPU of its node-local rank; the same
 * status on every rank. */
static int select_device(const struct wp_calib_network_options *o, const struct wp_calib_job *job, int rank,
                         struct wp_err *err)
{
    int status = 0;
#ifdef WP_HAVE_CUDA
    if (o->backend == &wp_calib_nccl) {
        int ndev = 0;
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
            status = wp_errorf(err, "--device cuda: rank %d sees no CUDA device", rank);
        else
            cudaSetDevice(job->local_rank[rank] % ndev);
        int any = status != 0;
        MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any && status == 0)
            status = wp_errorf(err, "--device cuda: a rank sees no CUDA device");
    }
#endif
    return status;
}

/* Rank 0, after the sweep: the fits, the report and the file. */
static int fit_report_write(const struct wp_calib_network_options *o, const struct wp_calib_job *job,
                            const struct wp_calib_point *points, int npoints, struct wp_cluster *cluster, FILE *out,
                            struct wp_err *err)
{
    struct wp_ab_fit fits[WP_LEVEL_COUNT];
    int fitted[WP_LEVEL_COUNT] = {0};
    int status = fit_levels(points, npoints, fits, fitted, err);
    print_points(out, points, npoints, fits, fitted);
    fprintf(out, "\n");
    for (int level = 0; level < WP_LEVEL_COUNT; level++)
        if (fitted[level])
            print_fit(out, (enum wp_link_level)level, &fits[level]);
    if (status || !o->out_path)
        return status;
    if (!cluster->name[0])
        wp_strlcpy(cluster->name, cluster->types[0].name, sizeof cluster->name);
    set_network(cluster, o, job, &fits[WP_LEVEL_INTER], fitted[WP_LEVEL_INTRA] ? &fits[WP_LEVEL_INTRA] : NULL);
    if (wp_cluster_check(cluster, err) || wp_cluster_write(cluster, o->out_path, err))
        return -1;
    char bw[32], lat[32];
    fprintf(out, "wrote %s: network %s, bandwidth %s (1/beta inter-node), latency %s (alpha inter-node), source "
                 "calibrated\n",
            o->out_path, cluster->network.name, wp_format_bandwidth(cluster->network.bandwidth_Bps, bw, sizeof bw),
            wp_format_time(cluster->network.latency_s, lat, sizeof lat));
    if (cluster->intra_network.given)
        fprintf(out, "wrote %s: intra-node network, bandwidth %s (1/beta intra-node), latency %s\n", o->out_path,
                wp_format_bandwidth(cluster->intra_network.bandwidth_Bps, bw, sizeof bw),
                wp_format_time(cluster->intra_network.latency_s, lat, sizeof lat));
    return 0;
}

int wp_calibrate_network(const struct wp_calib_network_options *o, FILE *out, struct wp_err *err)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct wp_cluster cluster; /* on rank 0, with out_path */
    wp_cluster_init(&cluster);
    if (o->cluster_path && read_cluster_in(o, rank, &cluster, err))
        return -1;
    struct wp_calib_job job;
    int status = wp_calib_job_init(&job, MPI_COMM_WORLD, o->emulate_nodes, err);
    if (status == 0)
        status = select_device(o, &job, rank, err);
    if (status == 0 && o->out_path && job.nnodes < 2)
        status = wp_errorf(err, "all %d ranks are on one node, so there is no inter-node link to "
                                "write to %s (run across nodes, or --emulate-nodes K)",
                           size, o->out_path);
    if (status == 0 && o->out_path && !o->cluster_path) /* like `wavepipe topo --out`, before the sweep */
        status = wp_gather_cluster_mpi(MPI_COMM_WORLD, &cluster, err);
    struct wp_calib_point *points = NULL;
    int npoints = 0;
    if (status == 0) {
        if (rank == 0) {
            print_header(out, o, &job);
            fflush(out);
        }
        status = wp_calibrate(&job, &o->sweep, o->backend, &points, &npoints, err);
    }
    if (status == 0 && rank == 0)
        status = fit_report_write(o, &job, points, npoints, &cluster, out, err);
    free(points);
    wp_calib_job_destroy(&job);
    wp_cluster_destroy(&cluster);
    return status ? -1 : 0;
}
