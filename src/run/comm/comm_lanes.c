/* Schedule ranks onto one lane of the job's tensor groups (comm_lanes.h). */
#include "run/comm/comm_lanes.h"

#include <stdlib.h>

struct wp_comm {
    const struct wp_comm_ops *ops; /* the wrapped backend */
    struct wp_comm *inner;
    int t, lane;
    int *world; /* a group's ranks, mapped */
    int cap;
};

int wp_comm_lanes_make(const struct wp_comm_ops *inner_ops, struct wp_comm *inner, int t, int lane,
                       struct wp_comm **out, struct wp_err *err)
{
    struct wp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return wp_errorf(err, "out of memory");
    *c = (struct wp_comm){inner_ops, inner, t, lane, NULL, 0};
    *out = c;
    return 0;
}

static int lanes_init(struct wp_comm **c, struct wp_err *err)
{
    (void)c;
    return wp_errorf(err, "internal: the lanes' comm is made by wp_comm_lanes_make");
}

static void lanes_destroy(struct wp_comm *c)
{
    if (c)
        free(c->world);
    free(c);
}

static int world_of(const struct wp_comm *c, int rank) { return rank * c->t + c->lane; }

/* ranks mapped into c->world (NULL when out of memory) */
static const int *mapped(struct wp_comm *c, const int *ranks, int n)
{
    if (n > c->cap) {
        int *grown = realloc(c->world, (size_t)n * sizeof *grown);
        if (!grown)
            return NULL;
        c->world = grown;
        c->cap = n;
    }
    for (int i = 0; i < n; i++)
        c->world[i] = world_of(c, ranks[i]);
    return c->world;
}

static int lanes_rank(const struct wp_comm *c) { return c->ops->rank(c->inner) / c->t; }
static int lanes_size(const struct wp_comm *c) { return c->ops->size(c->inner) / c->t; }

static int lanes_isend(struct wp_comm *c, const void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    return c->ops->isend(c->inner, buf, bytes, world_of(c, peer), tag, r);
}

static int lanes_irecv(struct wp_comm *c, void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    return c->ops->irecv(c->inner, buf, bytes, world_of(c, peer), tag, r);
}

static int lanes_test(struct wp_comm *c, struct wp_comm_request *r) { return c->ops->test(c->inner, r); }

static int lanes_allreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks)
{
    const int *w = mapped(c, ranks, nranks);
    return w ? c->ops->allreduce_sum(c->inner, buf, count, w, nranks) : -1;
}

static int lanes_allreduce_double(struct wp_comm *c, double *values, int count)
{
    return c->ops->allreduce_double(c->inner, values, count);
}

static void lanes_barrier(struct wp_comm *c) { c->ops->barrier(c->inner); }

static int lanes_allgather(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                           int nranks)
{
    const int *w = mapped(c, ranks, nranks);
    return w ? c->ops->allgather(c->inner, send, recv, count, w, nranks) : -1;
}

static int lanes_open_channel(struct wp_comm *c, const int *ranks, int nranks, int channel)
{
    const int *w = mapped(c, ranks, nranks);
    return w ? c->ops->open_channel(c->inner, w, nranks, channel) : -1;
}

static int lanes_iallreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks,
                                int channel, struct wp_comm_request *r)
{
    const int *w = mapped(c, ranks, nranks);
    return w ? c->ops->iallreduce_sum(c->inner, buf, count, w, nranks, channel, r) : -1;
}

static int lanes_reduce_scatter_sum(struct wp_comm *c, const float *send, float *recv, size_t count,
                                    const int *ranks, int nranks)
{
    const int *w = mapped(c, ranks, nranks);
    return w ? c->ops->reduce_scatter_sum(c->inner, send, recv, count, w, nranks) : -1;
}

const struct wp_comm_ops wp_comm_lanes = {
    "lanes", lanes_init, lanes_destroy, lanes_rank, lanes_size, lanes_isend, lanes_irecv, lanes_test,
    lanes_allreduce_sum, lanes_allreduce_double, lanes_barrier, lanes_allgather, lanes_reduce_scatter_sum,
    lanes_open_channel, lanes_iallreduce_sum,
};
