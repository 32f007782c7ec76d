/* The MPI communication backend: MPI_Isend/MPI_Irecv with tags per channel,
 * MPI_Test for progress, and group sums on communicators made once per
 * group of ranks (MPI_Comm_create_group, collective over the group only).
 * A group sum is non-blocking MPI polled the way a message is waited for
 * (ranks outnumbering cores must not spin in MPI_Allreduce), and, where the
 * group spans nodes with the same number of its ranks on each, node-aware
 * as NCCL's is and as the simulator costs it (collective_cost.h:
 * wp_allreduce_hier_s): a reduce-scatter inside each node, an allreduce of
 * each slice across nodes among the ranks of the same node-local index,
 * an allgather inside each node. Inside a node that is an allreduce; across
 * nodes each node's network carries 2 (N-1)/N of the buffer, not the
 * 2 (P-1)/P x ranks-per-node of a flat allreduce over all P ranks (16 ranks
 * on 4 nodes at 1 Gbit/s: a 300 MB gradient took 32 s flat, predicted
 * 5.5 s). Gradient buckets (run/core/grad_reduce.h) start the same sums without
 * waiting, each group's channel on a communicator of its own: the
 * node-aware sum's three steps then follow one another as test sees each
 * done. Non-blocking collectives on one communicator must be started in the
 * same order on every rank, and a rank sees steps done in its own order:
 * so the in-node reduce-scatters and allgathers run on communicators of
 * their own, and a sum starts a step only after every older sum of its
 * group has started that step (each communicator's calls in bucket order
 * on every rank). */
#include "run/comm/comm.h"
#include "run/comm/comm_mpi.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

struct group_comm {
    int nranks;
    int *ranks;
    MPI_Comm comm;
    int node_aware;  /* 1: the sum goes node by node (local and column below) */
    MPI_Comm local;  /* the group's ranks on this rank's node (the reduce-scatters) */
    MPI_Comm local_gather; /* the same ranks, for the allgathers */
    MPI_Comm column; /* the group's ranks of this rank's node-local index, one per node */
    int channel;     /* -1: the group's sums; else a channel of gradient buckets */
};

/* A node-aware sum in flight: its current step's request first (the
 * request's impl points here, and mpi_test tests it like any other). */
struct node_sum {
    MPI_Request req;
    int step;        /* started: 0 reduce-scatter in the node, 1 allreduce across nodes, 2 allgather in the node */
    float *buf, *slice;
    int *counts, *displs, local_rank;
    MPI_Comm local, column, local_gather;
    struct node_sum *next; /* the sums started before it (c->sums is newest first) */
};

struct wp_comm {
    int rank, size;
    MPI_Group world_group;
    struct group_comm *groups;
    int ngroups;
    struct node_sum *sums; /* node-aware sums in flight */
};

static int mpi_init(struct wp_comm **out, struct wp_err *err)
{
    struct wp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return wp_errorf(err, "out of memory");
    MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c->size);
    MPI_Comm_group(MPI_COMM_WORLD, &c->world_group);
    *out = c;
    return 0;
}

static void mpi_destroy(struct wp_comm *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->ngroups; i++) {
        MPI_Comm_free(&c->groups[i].comm);
        if (c->groups[i].local != MPI_COMM_NULL)
            MPI_Comm_free(&c->groups[i].local);
        if (c->groups[i].column != MPI_COMM_NULL)
            MPI_Comm_free(&c->groups[i].column);
        if (c->groups[i].local_gather != MPI_COMM_NULL)
            MPI_Comm_free(&c->groups[i].local_gather);
        free(c->groups[i].ranks);
    }
    free(c->groups);
    MPI_Group_free(&c->world_group);
    free(c);
}

static int mpi_rank(const struct wp_comm *c) { return c->rank; }
static int mpi_size(const struct wp_comm *c) { return c->size; }

static int mpi_isend(struct wp_comm *c, const void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    (void)c;
    MPI_Request *req = malloc(sizeof *req);
    if (!req)
        return -1;
    if (MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, req) != MPI_SUCCESS) {
        free(req);
        return -1;
    }
    r->impl = req;
    r->peer = peer;
    r->what = "a send to";
    return 0;
}

static int mpi_irecv(struct wp_comm *c, void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    (void)c;
    MPI_Request *req = malloc(sizeof *req);
    if (!req)
        return -1;
    if (MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, req) != MPI_SUCCESS) {
        free(req);
        return -1;
    }
    r->impl = req;
    r->peer = peer;
    r->what = "a receive from";
    return 0;
}

static int node_sum_next(struct wp_comm *c, void *impl);

static int mpi_test(struct wp_comm *c, struct wp_comm_request *r)
{
    if (!r->impl)
        return 1;
    int done = 0;
    MPI_Test((MPI_Request *)r->impl, &done, MPI_STATUS_IGNORE);
    if (done && c && node_sum_next(c, r->impl))
        return 0;
    if (done) {
        free(r->impl);
        r->impl = NULL;
    }
    return done;
}

/* Splits a new group's communicator by node; node_aware when the group has
 * ranks on 2 or more nodes and the same number (2 or more) on each. */
static void split_by_node(struct group_comm *g)
{
    g->node_aware = 0;
    g->local = g->column = g->local_gather = MPI_COMM_NULL;
    int grank, local_size, local_rank;
    MPI_Comm_rank(g->comm, &grank);
    if (MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, grank, MPI_INFO_NULL, &g->local) != MPI_SUCCESS)
        return;
    MPI_Comm_size(g->local, &local_size);
    MPI_Comm_rank(g->local, &local_rank);
    int extremes[2] = {local_size, -local_size}; /* min and -max over the group */
    MPI_Allreduce(MPI_IN_PLACE, extremes, 2, MPI_INT, MPI_MIN, g->comm);
    int same = extremes[0] == -extremes[1];
    if (same && local_size > 1 && g->nranks / local_size > 1 &&
        MPI_Comm_split(g->comm, local_rank, grank, &g->column) == MPI_SUCCESS &&
        MPI_Comm_dup(g->local, &g->local_gather) == MPI_SUCCESS)
        g->node_aware = 1;
}

static struct group_comm *group_comm_on(struct wp_comm *c, const int *ranks, int n, int channel)
{
    for (int i = 0; i < c->ngroups; i++)
        if (c->groups[i].nranks == n && c->groups[i].channel == channel &&
            memcmp(c->groups[i].ranks, ranks, (size_t)n * sizeof *ranks) == 0)
            return &c->groups[i];
    struct group_comm *grown = realloc(c->groups, (size_t)(c->ngroups + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    c->groups = grown;
    struct group_comm *g = &c->groups[c->ngroups];
    g->nranks = n;
    g->channel = channel;
    g->ranks = malloc((size_t)n * sizeof *g->ranks);
    if (!g->ranks)
        return NULL;
    memcpy(g->ranks, ranks, (size_t)n * sizeof *ranks);
    MPI_Group group;
    MPI_Group_incl(c->world_group, n, ranks, &group);
    /* the tag keeps concurrent creations of different groups apart */
    int tag = 0;
    for (int i = 0; i < n; i++)
        tag = (tag * 31 + ranks[i]) & 0x7fff;
    if (channel >= 0)
        tag = (tag * 31 + channel + 1) & 0x7fff;
    MPI_Comm_create_group(MPI_COMM_WORLD, group, tag, &g->comm);
    MPI_Group_free(&group);
    split_by_node(g);
    c->ngroups++;
    return g;
}

static struct group_comm *group_comm(struct wp_comm *c, const int *ranks, int n)
{
    return group_comm_on(c, ranks, n, -1);
}

int wp_comm_mpi_wait(int started, MPI_Request *req)
{
    if (started != MPI_SUCCESS)
        return -1;
    struct wp_comm_request r = {malloc(sizeof *req), -1, "an MPI collective or message"};
    if (!r.impl)
        return MPI_Wait(req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
    *(MPI_Request *)r.impl = *req;
    return wp_comm_wait(&wp_comm_mpi, NULL, &r);
}

/* Waits for a non-blocking collective as for a message (wp_comm_wait). */
static int wait_collective(struct wp_comm *c, int started, MPI_Request *req)
{
    (void)c;
    return wp_comm_mpi_wait(started, req);
}

/* The node-aware sum (see the header): slice i of the buffer is summed
 * inside the node onto local rank i, across nodes by the column, and
 * gathered back inside the node, each step started when the one before is
 * done (node_sum_next). */
static int start_node_sum(struct wp_comm *c, const struct group_comm *g, float *buf, size_t count,
                          struct wp_comm_request *r)
{
    int local_size, local_rank;
    MPI_Comm_size(g->local, &local_size);
    MPI_Comm_rank(g->local, &local_rank);
    struct node_sum *ns = malloc(sizeof *ns);
    int *counts = malloc(2 * (size_t)local_size * sizeof *counts);
    if (!ns || !counts) {
        free(ns);
        free(counts);
        return -1;
    }
    int *displs = counts + local_size;
    for (int i = 0, at = 0; i < local_size; i++) {
        counts[i] = (int)(count / (size_t)local_size) + (i < (int)(count % (size_t)local_size));
        displs[i] = at;
        at += counts[i];
    }
    *ns = (struct node_sum){MPI_REQUEST_NULL, 0, buf, NULL, counts, displs, local_rank, g->local, g->column,
                            g->local_gather, NULL};
    ns->slice = malloc((size_t)(counts[local_rank] ? counts[local_rank] : 1) * sizeof *ns->slice);
    if (!ns->slice ||
        MPI_Ireduce_scatter(buf, ns->slice, counts, MPI_FLOAT, MPI_SUM, g->local, &ns->req) != MPI_SUCCESS) {
        free(ns->slice);
        free(counts);
        free(ns);
        return -1;
    }
    ns->next = c->sums;
    c->sums = ns;
    r->impl = ns;
    return 0;
}

/* When impl is a node-aware sum whose step just ended: starts the next step
 * once every older sum of its group has started it (else tries again at the
 * next test, its request being done) and returns 1, or, after the last,
 * forgets the sum (the caller frees impl) and returns 0. 0 for any other
 * request. */
static int node_sum_next(struct wp_comm *c, void *impl)
{
    struct node_sum **at = &c->sums;
    while (*at && *at != impl)
        at = &(*at)->next;
    struct node_sum *ns = *at;
    if (!ns)
        return 0;
    int mine = ns->counts[ns->local_rank], want = ns->step + 1;
    for (const struct node_sum *older = ns->next; want < 3 && older; older = older->next)
        if (older->local == ns->local && older->step < want)
            return 1;
    ns->step = want;
    switch (want) {
    case 1:
        MPI_Iallreduce(MPI_IN_PLACE, ns->slice, mine, MPI_FLOAT, MPI_SUM, ns->column, &ns->req);
        return 1;
    case 2:
        MPI_Iallgatherv(ns->slice, mine, MPI_FLOAT, ns->buf, ns->counts, ns->displs, MPI_FLOAT, ns->local_gather,
                        &ns->req);
        return 1;
    default:
        *at = ns->next;
        free(ns->slice);
        free(ns->counts);
        return 0;
    }
}

/* Starts the group's sum of buf: node-aware where the group allows, else
 * one MPI_Iallreduce over the group. */
static int start_sum(struct wp_comm *c, const struct group_comm *g, float *buf, size_t count,
                     struct wp_comm_request *r)
{
    r->impl = NULL;
    r->what = NULL;
    if (!g || g->comm == MPI_COMM_NULL)
        return -1;
    if (g->node_aware && count >= (size_t)g->nranks)
        return start_node_sum(c, g, buf, count, r);
    MPI_Request *req = malloc(sizeof *req);
    if (!req)
        return -1;
    if (MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, g->comm, req) != MPI_SUCCESS) {
        free(req);
        return -1;
    }
    r->impl = req;
    return 0;
}

/* Waits for the sum as for a message (wp_comm_wait): ranks that outnumber
 * cores must not spin in MPI_Allreduce. */
static int mpi_allreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks)
{
    if (nranks <= 1)
        return 0;
    struct wp_comm_request r;
    if (start_sum(c, group_comm(c, ranks, nranks), buf, count, &r))
        return -1;
    return wp_comm_wait(&wp_comm_mpi, c, &r);
}

static int mpi_allreduce_double(struct wp_comm *c, double *values, int count)
{
    (void)c;
    return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
}

static void mpi_barrier(struct wp_comm *c)
{
    (void)c;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The group of an in-group collective, or NULL with *rc its result when
 * there is nothing to exchange (one rank: recv gets send) or no group. */
static struct group_comm *collective_group(struct wp_comm *c, const float *send, float *recv, size_t count,
                                           const int *ranks, int nranks, int *rc)
{
    struct group_comm *g = nranks > 1 ? group_comm(c, ranks, nranks) : NULL;
    if (g && g->comm != MPI_COMM_NULL)
        return g;
    if (nranks == 1 && send != recv)
        memcpy(recv, send, count * sizeof *recv);
    *rc = nranks == 1 ? 0 : -1;
    return NULL;
}

static int mpi_allgather(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                         int nranks)
{
    int rc;
    struct group_comm *g = collective_group(c, send, recv, count, ranks, nranks, &rc);
    if (!g)
        return rc;
    MPI_Request req;
    return wait_collective(c, MPI_Iallgather(send, (int)count, MPI_FLOAT, recv, (int)count, MPI_FLOAT, g->comm, &req),
                           &req);
}

static int mpi_reduce_scatter_sum(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                                  int nranks)
{
    int rc;
    struct group_comm *g = collective_group(c, send, recv, count, ranks, nranks, &rc);
    if (!g)
        return rc;
    MPI_Request req;
    return wait_collective(
        c, MPI_Ireduce_scatter_block(send, recv, (int)count, MPI_FLOAT, MPI_SUM, g->comm, &req), &req);
}

static int mpi_open_channel(struct wp_comm *c, const int *ranks, int nranks, int channel)
{
    if (nranks <= 1)
        return 0;
    struct group_comm *g = group_comm_on(c, ranks, nranks, channel);
    return g && g->comm != MPI_COMM_NULL ? 0 : -1;
}

static int mpi_iallreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks, int channel,
                              struct wp_comm_request *r)
{
    r->impl = NULL;
    if (nranks <= 1 || count == 0)
        return 0;
    return start_sum(c, group_comm_on(c, ranks, nranks, channel), buf, count, r);
}

const struct wp_comm_ops wp_comm_mpi = {
    "mpi", mpi_init, mpi_destroy, mpi_rank, mpi_size, mpi_isend, mpi_irecv, mpi_test,
    mpi_allreduce_sum, mpi_allreduce_double, mpi_barrier, mpi_allgather, mpi_reduce_scatter_sum,
    mpi_open_channel, mpi_iallreduce_sum,
};
