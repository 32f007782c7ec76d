/* Timing p2p messages and collectives over MPI (see calibrate_mpi.h). Each
 * point: one warm-up, then per repetition a barrier of the group and the
 * operation timed on every member; the slowest member's time counts (the
 * operation is done when its last rank is), the median over repetitions is
 * kept; repetitions go round the sizes (see time_operation). Ranks outside
 * the group being timed wait in a non-blocking barrier that sleeps between
 * polls, so that on a machine with fewer cores than ranks they do not steal
 * the cores of the ranks being timed. */
#include "topo/calibrate_mpi.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/stats.h"

#define P2P_TAG 4242
#define MAX_SIZES 64
#define IDLE_POLL_NS 20000

const char *wp_link_level_name(enum wp_link_level level)
{
    return level == WP_LEVEL_INTRA ? "intra-node" : level == WP_LEVEL_INTER ? "inter-node" : "?";
}

int wp_calib_job_init(struct wp_calib_job *job, MPI_Comm comm, int emulate_nodes, struct wp_err *err)
{
    memset(job, 0, sizeof *job);
    job->comm = comm;
    MPI_Comm_rank(comm, &job->rank);
    MPI_Comm_size(comm, &job->size);
    if (emulate_nodes > 0 && job->size % emulate_nodes != 0)
        return wp_errorf(err, "%d emulated nodes do not divide the %d ranks evenly", emulate_nodes,
                         job->size);
    int mine[2]; /* lowest rank of my node, my local rank */
    if (emulate_nodes > 0) {
        int per_node = job->size / emulate_nodes;
        mine[0] = job->rank - job->rank % per_node;
        mine[1] = job->rank % per_node;
        job->emulated = 1;
    } else {
        MPI_Comm local;
        MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, job->rank, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &mine[1]);
        MPI_Allreduce(&job->rank, &mine[0], 1, MPI_INT, MPI_MIN, local);
        MPI_Comm_free(&local);
    }
    int *all = malloc(sizeof *all * 2 * (size_t)job->size);
    job->node = malloc(sizeof *job->node * (size_t)job->size);
    job->local_rank = malloc(sizeof *job->local_rank * (size_t)job->size);
    int failed = !all || !job->node || !job->local_rank, any_failed;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, comm);
    if (any_failed) {
        free(all);
        wp_calib_job_destroy(job);
        return wp_errorf(err, "out of memory");
    }
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, comm);
    /* a node's lowest rank comes first, so its number is known by then */
    for (int r = 0; r < job->size; r++) {
        int lowest = all[2 * r];
        job->node[r] = lowest == r ? job->nnodes++ : job->node[lowest];
        job->local_rank[r] = all[2 * r + 1];
    }
    free(all);
    return 0;
}

void wp_calib_job_destroy(struct wp_calib_job *job)
{
    free(job->node);
    free(job->local_rank);
    job->node = job->local_rank = NULL;
}

int wp_calib_level_ranks(const struct wp_calib_job *job, enum wp_link_level level)
{
    if (level == WP_LEVEL_INTER)
        return job->nnodes;
    int on_first = 0;
    for (int r = 0; r < job->size; r++)
        on_first += job->node[r] == 0;
    return on_first;
}

double wp_calib_group_bytes(double bytes, enum wp_collective coll, int ranks)
{
    if (coll == WP_COLL_P2P)
        return bytes < 1 ? 1 : (double)(size_t)bytes;
    size_t unit = 4 * (size_t)ranks;
    size_t n = (size_t)bytes / unit * unit;
    return (double)(n < unit ? unit : n);
}

/* Is rank r in the level's group of p ranks? */
static int in_group(const struct wp_calib_job *job, enum wp_link_level level, int ranks, int r)
{
    if (level == WP_LEVEL_INTRA)
        return job->node[r] == 0 && job->local_rank[r] < ranks;
    return job->local_rank[r] == 0 && job->node[r] < ranks;
}

/* Group sizes 2, 4, 8, ... and then the largest. */
static int next_group_size(int p, int largest)
{
    return p < largest && 2 * p > largest ? largest : 2 * p;
}

/* A barrier over comm that sleeps between polls instead of spinning. */
static void idle_barrier(MPI_Comm comm)
{
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    int done = 0;
    const struct timespec pause = {0, IDLE_POLL_NS};
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        nanosleep(&pause, NULL);
    }
}

/* ---- the MPI backend: host buffers, MPI's own algorithms ---- */

struct mpi_group {
    MPI_Comm g;
    int grank, p;
    float *send, *recv;
};

static int mpi_open(void **ctx, MPI_Comm g, int grank, int p, size_t max_bytes)
{
    struct mpi_group *m = calloc(1, sizeof *m);
    size_t nfloats = max_bytes / 4 + 1;
    if (m) {
        *m = (struct mpi_group){g, grank, p, malloc(sizeof(float) * nfloats), malloc(sizeof(float) * nfloats)};
        if (m->send && m->recv)
            for (size_t i = 0; i < nfloats; i++)
                m->send[i] = 1.0f;
    }
    if (!m || !m->send || !m->recv) {
        if (m) {
            free(m->send);
            free(m->recv);
        }
        free(m);
        return -1;
    }
    *ctx = m;
    return 0;
}

static void mpi_run(void *ctx, enum wp_collective coll, size_t bytes)
{
    struct mpi_group *m = ctx;
    MPI_Comm g = m->g;
    int grank = m->grank, p = m->p, count = (int)bytes;
    float *send = m->send, *recv = m->recv;
    switch (coll) {
    case WP_COLL_P2P:
        if (grank == 0) {
            MPI_Send(send, count, MPI_BYTE, 1, P2P_TAG, g);
            MPI_Recv(recv, count, MPI_BYTE, 1, P2P_TAG, g, MPI_STATUS_IGNORE);
        } else if (grank == 1) {
            MPI_Recv(recv, count, MPI_BYTE, 0, P2P_TAG, g, MPI_STATUS_IGNORE);
            MPI_Send(send, count, MPI_BYTE, 0, P2P_TAG, g);
        }
        break;
    case WP_COLL_ALLREDUCE: MPI_Allreduce(send, recv, count / 4, MPI_FLOAT, MPI_SUM, g); break;
    case WP_COLL_ALLGATHER: MPI_Allgather(send, count / p, MPI_BYTE, recv, count / p, MPI_BYTE, g); break;
    case WP_COLL_REDUCE_SCATTER:
        MPI_Reduce_scatter_block(send, recv, count / 4 / p, MPI_FLOAT, MPI_SUM, g);
        break;
    case WP_COLL_ALLTOALL: MPI_Alltoall(send, count / p, MPI_BYTE, recv, count / p, MPI_BYTE, g); break;
    case WP_COLL_COUNT: break;
    }
}

static void mpi_close(void *ctx)
{
    struct mpi_group *m = ctx;
    free(m->send);
    free(m->recv);
    free(m);
}

const struct wp_calib_backend wp_calib_mpi = {"MPI", mpi_open, mpi_run, mpi_close};

struct sweep {
    const struct wp_calib_options *o;
    const struct wp_calib_backend *be;
    double sizes[MAX_SIZES];
    int nsizes;
    double *times, *slowest;   /* [size][repetition] */
    struct wp_calib_point *points;
    int npoints, cap;
};

static int append_point(struct sweep *s, struct wp_calib_point point)
{
    if (s->npoints == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        struct wp_calib_point *grown = realloc(s->points, sizeof *grown * (size_t)cap);
        if (!grown)
            return -1;
        s->points = grown;
        s->cap = cap;
    }
    s->points[s->npoints++] = point;
    return 0;
}

/* Times one operation at every size on group g; the group's rank 0 appends
 * the points. Each repetition round times every size once (after a warm-up
 * of each), so a burst of other load on a shared machine slows one
 * repetition of several sizes, which the medians drop, rather than every
 * repetition of one size. */
static int time_operation(struct sweep *s, void *ctx, MPI_Comm g, enum wp_link_level level, enum wp_collective coll,
                          int p)
{
    int grank;
    MPI_Comm_rank(g, &grank);
    int repeat = s->o->repeat;
    double dilation = s->o->dilation > 0 ? s->o->dilation : 1, scale = s->o->byte_scale > 0 ? s->o->byte_scale : 1;
    size_t bytes[MAX_SIZES], sent[MAX_SIZES]; /* the size timed, and what moves for it */
    for (int i = 0; i < s->nsizes; i++) {
        bytes[i] = (size_t)wp_calib_group_bytes(s->sizes[i], coll, p);
        sent[i] = (size_t)wp_calib_group_bytes(s->sizes[i] / scale, coll, p);
        s->be->run(ctx, coll, sent[i]);
    }
    for (int r = 0; r < repeat; r++)
        for (int i = 0; i < s->nsizes; i++) {
            MPI_Barrier(g);
            double t0 = MPI_Wtime();
            s->be->run(ctx, coll, sent[i]);
            double dt = (MPI_Wtime() - t0) / dilation;
            /* p2p: the first rank's round trip, halved */
            s->times[i * repeat + r] = coll != WP_COLL_P2P ? dt : grank == 0 ? dt / 2 : 0;
        }
    MPI_Reduce(s->times, s->slowest, s->nsizes * repeat, MPI_DOUBLE, MPI_MAX, 0, g);
    if (grank != 0)
        return 0;
    for (int i = 0; i < s->nsizes; i++) {
        struct wp_stat3 st = wp_stat3_sorted(s->slowest + i * repeat, (size_t)repeat);
        struct wp_calib_point point = {level, {coll, p, (double)bytes[i], st.median}, st.min};
        if (append_point(s, point))
            return -1;
    }
    return 0;
}

/* Every operation and size on the group of p ranks of a level. */
static int time_group(struct sweep *s, const struct wp_calib_job *job, enum wp_link_level level, int p)
{
    int member = in_group(job, level, p, job->rank);
    MPI_Comm g;
    MPI_Comm_split(job->comm, member ? 0 : MPI_UNDEFINED, job->rank, &g);
    int failed = 0;
    if (member) {
        int grank;
        void *ctx = NULL;
        MPI_Comm_rank(g, &grank);
        failed = s->be->open(&ctx, g, grank, p, (size_t)s->o->max_bytes) != 0;
        for (int c = 0; c < WP_COLL_COUNT && !failed; c++) {
            if (!(s->o->coll_mask & (1u << c)) || (c == WP_COLL_P2P && p != 2))
                continue;
            failed = time_operation(s, ctx, g, level, (enum wp_collective)c, p) != 0;
        }
        if (ctx)
            s->be->close(ctx);
        MPI_Comm_free(&g);
    }
    idle_barrier(job->comm);
    return failed;
}

int wp_calibrate(const struct wp_calib_job *job, const struct wp_calib_options *o, const struct wp_calib_backend *be,
                 struct wp_calib_point **points, int *npoints, struct wp_err *err)
{
    struct sweep s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.be = be;
    for (double b = o->min_bytes; b <= o->max_bytes * (1 + 1e-12) && s.nsizes < MAX_SIZES; b *= o->size_factor)
        s.sizes[s.nsizes++] = b;
    s.times = malloc(sizeof *s.times * (size_t)(o->repeat * s.nsizes));
    s.slowest = malloc(sizeof *s.slowest * (size_t)(o->repeat * s.nsizes));
    int failed = !s.times || !s.slowest, any_failed;
    MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, job->comm);
    if (!any_failed) {
        for (int level = 0; level < WP_LEVEL_COUNT && !any_failed; level++) {
            int largest = wp_calib_level_ranks(job, (enum wp_link_level)level);
            for (int p = 2; p <= largest && !any_failed; p = next_group_size(p, largest)) {
                failed = time_group(&s, job, (enum wp_link_level)level, p);
                MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, job->comm);
            }
        }
    }
    free(s.times);
    free(s.slowest);
    if (any_failed) {
        free(s.points);
        return wp_errorf(err, "%s: no message buffers of %g bytes (out of memory, or the backend failed to set "
                              "up a group), or no memory for the results",
                         be->name, o->max_bytes);
    }
    *points = s.points;
    *npoints = s.npoints;
    return 0;
}
