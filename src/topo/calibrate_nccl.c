/* The NCCL backend of `wavepipe calibrate` (CUDA build): the same sweep as
 * over MPI (calibrate_mpi.c), on device buffers and an NCCL communicator
 * per timed group (its unique id travels over the group's MPI
 * communicator), each operation on one stream and waited for, so the
 * sweep's wall-clock timing sees it complete. p2p is a ping-pong of
 * ncclSend/ncclRecv between the group's two ranks; alltoall is p
 * send/receive pairs in one NCCL group call, as nccl-tests does. Each
 * rank uses the GPU of its node-local rank (cmd_calibrate sets it). */
#include <config.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>

#include "topo/calibrate_mpi.h"

struct nccl_group {
    ncclComm_t comm;
    cudaStream_t stream;
    int grank, p;
    char *send, *recv;
};

static int nccl_open(void **ctx, MPI_Comm g, int grank, int p, size_t max_bytes)
{
    struct nccl_group *n = calloc(1, sizeof *n);
    if (!n)
        return -1;
    n->grank = grank;
    n->p = p;
    ncclUniqueId id;
    if (grank == 0)
        ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, g);
    size_t bytes = max_bytes + 4 * (size_t)p;
    if (cudaStreamCreate(&n->stream) != cudaSuccess || cudaMalloc((void **)&n->send, bytes) != cudaSuccess ||
        cudaMalloc((void **)&n->recv, bytes) != cudaSuccess || cudaMemset(n->send, 0, bytes) != cudaSuccess ||
        ncclCommInitRank(&n->comm, p, id, grank) != ncclSuccess) {
        cudaFree(n->send);
        cudaFree(n->recv);
        free(n);
        return -1;
    }
    *ctx = n;
    return 0;
}

static void nccl_run(void *ctx, enum wp_collective coll, size_t bytes)
{
    struct nccl_group *n = ctx;
    size_t floats = bytes / 4, part = bytes / (size_t)n->p;
    switch (coll) {
    case WP_COLL_P2P:
        if (n->grank == 0) {
            ncclSend(n->send, bytes, ncclChar, 1, n->comm, n->stream);
            cudaStreamSynchronize(n->stream);
            ncclRecv(n->recv, bytes, ncclChar, 1, n->comm, n->stream);
        } else if (n->grank == 1) {
            ncclRecv(n->recv, bytes, ncclChar, 0, n->comm, n->stream);
            cudaStreamSynchronize(n->stream);
            ncclSend(n->send, bytes, ncclChar, 0, n->comm, n->stream);
        }
        break;
    case WP_COLL_ALLREDUCE: ncclAllReduce(n->send, n->recv, floats, ncclFloat, ncclSum, n->comm, n->stream); break;
    case WP_COLL_ALLGATHER: ncclAllGather(n->send, n->recv, part, ncclChar, n->comm, n->stream); break;
    case WP_COLL_REDUCE_SCATTER:
        ncclReduceScatter(n->send, n->recv, floats / (size_t)n->p, ncclFloat, ncclSum, n->comm, n->stream);
        break;
    case WP_COLL_ALLTOALL:
        ncclGroupStart();
        for (int r = 0; r < n->p; r++) {
            ncclSend(n->send + (size_t)r * part, part, ncclChar, r, n->comm, n->stream);
            ncclRecv(n->recv + (size_t)r * part, part, ncclChar, r, n->comm, n->stream);
        }
        ncclGroupEnd();
        break;
    case WP_COLL_COUNT: break;
    }
    cudaStreamSynchronize(n->stream);
}

static void nccl_close(void *ctx)
{
    struct nccl_group *n = ctx;
    ncclCommDestroy(n->comm);
    cudaStreamDestroy(n->stream);
    cudaFree(n->send);
    cudaFree(n->recv);
    free(n);
}

const struct wp_calib_backend wp_calib_nccl = {"NCCL", nccl_open, nccl_run, nccl_close};
