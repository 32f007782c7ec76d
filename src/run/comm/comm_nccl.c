/* The NCCL communication backend of the CUDA build: ncclSend/ncclRecv on
 * streams separate from compute (Ada-Grouper 5.3), one per peer and
 * direction, so that a send waits only for its own receiver (NCCL sends
 * are not buffered: on one shared stream two ranks sending to each other
 * would wait forever); each message first waits for the compute stream by
 * an event, and its completion is an event the interpreter polls. Group sums
 * run on NCCL communicators made once per group (the unique id travels over
 * MPI). Host-side double sums use MPI. Gradient buckets (run/core/grad_reduce.h)
 * are group sums on a communicator per channel with a stream of its own,
 * after the compute stream's work so far, polled as messages are. */
#include <config.h>

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/comm/comm.h"

#define NCCL_OK(call) ((call) == ncclSuccess ? 0 : -1)

struct peer_streams {
    cudaStream_t send, recv;
};

struct nccl_group {
    int nranks;
    int *ranks;
    ncclComm_t comm;
    int channel;         /* -1: the group's sums; else a channel of gradient buckets */
    cudaStream_t stream; /* a channel's sums (made at its first) */
};

struct wp_comm {
    int rank, size;
    ncclComm_t world;
    struct peer_streams *peers; /* per rank, created lazily */
    struct nccl_group *groups;
    int ngroups;
};

struct nccl_request {
    cudaEvent_t done;
};

static int nccl_init(struct wp_comm **out, struct wp_err *err)
{
    struct wp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return wp_errorf(err, "out of memory");
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    c->peers = calloc((size_t)c->size, sizeof *c->peers);
    ncclUniqueId id;
#ifdef WP_CUDA_HOST_EMULATION /* tests/wavepipe_cuda_host: the emulated NCCL runs over its own MPI communicator */
    if (wp_host_nccl_bootstrap(MPI_COMM_WORLD) != ncclSuccess)
        return wp_errorf(err, "the host emulation's NCCL bootstrap failed");
#endif
    if (c->rank == 0)
        ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (!c->peers || ncclCommInitRank(&c->world, c->size, id, c->rank) != ncclSuccess) {
        free(c->peers);
        free(c);
        return wp_errorf(err, "NCCL initialisation failed");
    }
    *out = c;
    return 0;
}

static void nccl_destroy(struct wp_comm *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->ngroups; i++) {
        ncclCommDestroy(c->groups[i].comm);
        if (c->groups[i].stream)
            cudaStreamDestroy(c->groups[i].stream);
        free(c->groups[i].ranks);
    }
    for (int r = 0; r < c->size; r++) {
        if (c->peers[r].send)
            cudaStreamDestroy(c->peers[r].send);
        if (c->peers[r].recv)
            cudaStreamDestroy(c->peers[r].recv);
    }
    ncclCommDestroy(c->world);
    free(c->groups);
    free(c->peers);
    free(c);
}

static int nccl_rank(const struct wp_comm *c) { return c->rank; }
static int nccl_size(const struct wp_comm *c) { return c->size; }

static cudaStream_t stream_for(struct wp_comm *c, int peer, int sending)
{
    cudaStream_t *s = sending ? &c->peers[peer].send : &c->peers[peer].recv;
    if (!*s)
        cudaStreamCreateWithFlags(s, cudaStreamNonBlocking);
    return *s;
}

/* Makes stream s wait for the compute stream's work so far. */
static int after_compute(cudaStream_t s)
{
    cudaEvent_t ready;
    if (cudaEventCreateWithFlags(&ready, cudaEventDisableTiming) != cudaSuccess)
        return -1;
    cudaEventRecord(ready, 0);
    cudaStreamWaitEvent(s, ready, 0);
    cudaEventDestroy(ready);
    return 0;
}

/* r completes when stream s's work so far is done (rc: whether the work
 * was enqueued). */
static int completion(cudaStream_t s, int rc, struct wp_comm_request *r)
{
    struct nccl_request *req = rc == 0 ? calloc(1, sizeof *req) : NULL;
    if (req && cudaEventCreateWithFlags(&req->done, cudaEventDisableTiming) == cudaSuccess) {
        cudaEventRecord(req->done, s);
        r->impl = req;
        return 0;
    }
    free(req);
    return -1;
}

/* Enqueues a message after the compute stream's work so far. */
static int message(struct wp_comm *c, void *buf, size_t bytes, int peer, int sending, struct wp_comm_request *r)
{
    cudaStream_t s = stream_for(c, peer, sending);
    if (after_compute(s))
        return -1;
    int rc = sending ? NCCL_OK(ncclSend(buf, bytes, ncclChar, peer, c->world, s))
                     : NCCL_OK(ncclRecv(buf, bytes, ncclChar, peer, c->world, s));
    r->peer = peer;
    r->what = sending ? "a send to" : "a receive from";
    return completion(s, rc, r);
}

static int nccl_isend(struct wp_comm *c, const void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    (void)tag; /* NCCL matches messages per peer in order: the channel order the validator checks */
    return message(c, (void *)buf, bytes, peer, 1, r);
}

static int nccl_irecv(struct wp_comm *c, void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    (void)tag;
    return message(c, buf, bytes, peer, 0, r);
}

static int nccl_test(struct wp_comm *c, struct wp_comm_request *r)
{
    (void)c;
    struct nccl_request *req = r->impl;
    if (!req)
        return 1;
    if (cudaEventQuery(req->done) != cudaSuccess)
        return 0;
    /* later compute reads the buffer: make the compute stream wait too */
    cudaStreamWaitEvent(0, req->done, 0);
    cudaEventDestroy(req->done);
    free(req);
    r->impl = NULL;
    return 1;
}

static struct nccl_group *group_on(struct wp_comm *c, const int *ranks, int n, int channel)
{
    for (int i = 0; i < c->ngroups; i++)
        if (c->groups[i].nranks == n && c->groups[i].channel == channel &&
            memcmp(c->groups[i].ranks, ranks, (size_t)n * sizeof *ranks) == 0)
            return &c->groups[i];
    struct nccl_group *grown = realloc(c->groups, (size_t)(c->ngroups + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    c->groups = grown;
    struct nccl_group *g = &c->groups[c->ngroups];
    g->nranks = n;
    g->channel = channel;
    g->stream = NULL;
    g->ranks = malloc((size_t)n * sizeof *g->ranks);
    if (!g->ranks)
        return NULL;
    memcpy(g->ranks, ranks, (size_t)n * sizeof *ranks);
    int me = 0;
    for (int i = 0; i < n; i++)
        if (ranks[i] == c->rank)
            me = i;
    MPI_Group world, group;
    MPI_Comm mpi_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &group);
    MPI_Comm_create_group(MPI_COMM_WORLD, group, 4242, &mpi_group);
    ncclUniqueId id;
    if (me == 0)
        ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, mpi_group);
    MPI_Comm_free(&mpi_group);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    if (ncclCommInitRank(&g->comm, n, id, me) != ncclSuccess)
        return NULL;
    c->ngroups++;
    return g;
}

static ncclComm_t group_comm(struct wp_comm *c, const int *ranks, int n)
{
    struct nccl_group *g = group_on(c, ranks, n, -1);
    return g ? g->comm : NULL;
}

static int nccl_allreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks)
{
    if (nranks <= 1)
        return 0;
    ncclComm_t comm = group_comm(c, ranks, nranks);
    if (!comm)
        return -1;
    int rc = NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, 0));
    return rc == 0 && cudaStreamSynchronize(0) == cudaSuccess ? 0 : -1;
}

static int nccl_allreduce_double(struct wp_comm *c, double *values, int count)
{
    (void)c;
    return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static void nccl_barrier(struct wp_comm *c)
{
    (void)c;
    cudaDeviceSynchronize();
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The communicator of an in-group collective, or NULL with *rc its result
 * when there is nothing to exchange (one rank: recv gets send) or none. */
static ncclComm_t collective_comm(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                                  int nranks, int *rc)
{
    ncclComm_t comm = nranks > 1 ? group_comm(c, ranks, nranks) : NULL;
    if (comm)
        return comm;
    *rc = nranks == 1 ? (send == recv || cudaMemcpy(recv, send, count * sizeof *recv, cudaMemcpyDeviceToDevice) ==
                                            cudaSuccess ? 0 : -1)
                      : -1;
    return NULL;
}

static int nccl_allgather(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                          int nranks)
{
    int rc;
    ncclComm_t comm = collective_comm(c, send, recv, count, ranks, nranks, &rc);
    if (!comm)
        return rc;
    rc = NCCL_OK(ncclAllGather(send, recv, count, ncclFloat, comm, 0));
    return rc == 0 && cudaStreamSynchronize(0) == cudaSuccess ? 0 : -1;
}

static int nccl_reduce_scatter_sum(struct wp_comm *c, const float *send, float *recv, size_t count,
                                   const int *ranks, int nranks)
{
    int rc;
    ncclComm_t comm = collective_comm(c, send, recv, count, ranks, nranks, &rc);
    if (!comm)
        return rc;
    rc = NCCL_OK(ncclReduceScatter(send, recv, count, ncclFloat, ncclSum, comm, 0));
    return rc == 0 && cudaStreamSynchronize(0) == cudaSuccess ? 0 : -1;
}

static int nccl_open_channel(struct wp_comm *c, const int *ranks, int nranks, int channel)
{
    return nranks <= 1 || group_on(c, ranks, nranks, channel) ? 0 : -1;
}

static int nccl_iallreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks,
                               int channel, struct wp_comm_request *r)
{
    r->impl = NULL;
    r->what = NULL;
    if (nranks <= 1 || count == 0)
        return 0;
    struct nccl_group *g = group_on(c, ranks, nranks, channel);
    if (!g || (!g->stream && cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess))
        return -1;
    if (after_compute(g->stream))
        return -1;
    return completion(g->stream, NCCL_OK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, g->comm, g->stream)), r);
}

const struct wp_comm_ops wp_comm_nccl = {
    "nccl", nccl_init, nccl_destroy, nccl_rank, nccl_size, nccl_isend, nccl_irecv, nccl_test,
    nccl_allreduce_sum, nccl_allreduce_double, nccl_barrier, nccl_allgather, nccl_reduce_scatter_sum,
    nccl_open_channel, nccl_iallreduce_sum,
};
