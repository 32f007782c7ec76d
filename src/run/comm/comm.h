/* Communication of the training runtime behind one small table (IOR's
 * backend pattern): point-to-point messages that never block compute, the
 * way to wait for them without spinning, and sums over a group of ranks.
 * wp_comm_mpi is always there; an NCCL table joins it in the CUDA build. */
#ifndef WP_RUN_COMM_H
#define WP_RUN_COMM_H

#include <stddef.h>
#include "util/error.h"

struct wp_comm;            /* backend state */
struct wp_comm_request {
    void *impl;            /* backend's request, NULL when none is pending */
    /* a message's peer and kind, set by isend and irecv ("a send to", "a
     * receive from"), for the watchdog's message (run/fault/watchdog.h); what is
     * NULL for a sum */
    int peer;
    const char *what;
};

struct wp_comm_ops {
    const char *name;
    int (*init)(struct wp_comm **c, struct wp_err *err);  /* after MPI_Init */
    void (*destroy)(struct wp_comm *c);
    int (*rank)(const struct wp_comm *c);
    int (*size)(const struct wp_comm *c);
    /* non-blocking point to point; tag separates channels */
    int (*isend)(struct wp_comm *c, const void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r);
    int (*irecv)(struct wp_comm *c, void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r);
    /* 1 when done (the request is released), 0 when still pending */
    int (*test)(struct wp_comm *c, struct wp_comm_request *r);
    /* in-place float sum over the ranks listed (every one of them calls it) */
    int (*allreduce_sum)(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks);
    /* double sum over every rank (host memory) */
    int (*allreduce_double)(struct wp_comm *c, double *values, int count);
    void (*barrier)(struct wp_comm *c);
    /* In-group collectives of the tensor-parallel runtime (every listed
     * rank calls them, in the same order): allgather concatenates count
     * floats from each rank, in list order, into recv (count x nranks);
     * reduce_scatter_sum sums send (count x nranks floats) over the ranks
     * and leaves this rank's piece, in list order, in recv (count). */
    int (*allgather)(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                     int nranks);
    int (*reduce_scatter_sum)(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                              int nranks);
    /* ---- gradient buckets (run/core/grad_reduce.h) ---- */
    /* Makes the group's communicator of `channel` now: collective over the
     * ranks listed, so a rank opens its channels in one order (ascending)
     * before it starts sums on them. */
    int (*open_channel)(struct wp_comm *c, const int *ranks, int nranks, int channel);
    /* allreduce_sum without waiting, on the channel's own communicator
     * (MPI: non-blocking collectives, progressed by test; NCCL: a stream of
     * its own after the compute so far); test or wp_comm_wait completes r.
     * Every rank starts a channel's sums in the same order; sums of
     * different channels may start in any order. */
    int (*iallreduce_sum)(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks, int channel,
                          struct wp_comm_request *r);
};

extern const struct wp_comm_ops wp_comm_mpi;
#ifdef WP_HAVE_CUDA
extern const struct wp_comm_ops wp_comm_nccl; /* CUDA build: device buffers */
#endif

/* Waits for a request, polling and sleeping about 20 us between polls so
 * that ranks which outnumber cores leave them to the ranks that compute.
 * Both waits are watched (run/fault/watchdog.h): a wait that does not progress
 * for the watchdog's limit ends the job. */
int wp_comm_wait(const struct wp_comm_ops *ops, struct wp_comm *c, struct wp_comm_request *r);
/* The same until pending(ctx), which tests what it waits for, returns 0. */
int wp_comm_wait_until(int (*pending)(void *ctx), void *ctx);
/* A run dilated F times (wavepipe run --dilate F): the sleeps between polls
 * F times longer, for this process from now on (default 1). */
void wp_comm_set_wait_dilation(double dilation);

#endif
