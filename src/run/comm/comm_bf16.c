/* Point-to-point messages as bfloat16 on the wire (comm_bf16.h). */
#include "run/comm/comm_bf16.h"

#include <stdlib.h>

/* A staging buffer of the backend's memory, kept for reuse when released. */
struct staging {
    uint16_t *p;
    size_t cap; /* elements */
    int busy;
};

struct wp_comm {
    const struct wp_comm_ops *ops; /* the wrapped table */
    struct wp_comm *inner;
    const struct wp_kernel_ops *k;
    struct staging *pool;
    int npool;
};

/* Every request of this table: the inner one, and for a message its staging
 * buffer (a receive's floats are written when it completes). */
struct wrapped {
    struct wp_comm_request inner;
    uint16_t *staged;      /* the message's bfloat16 bits; NULL for a sum */
    float *recv_into;      /* a receive's floats; NULL for a send */
    size_t count;
};

int wp_comm_bf16_make(const struct wp_comm_ops *inner_ops, struct wp_comm *inner, const struct wp_kernel_ops *k,
                      struct wp_comm **out, struct wp_err *err)
{
    struct wp_comm *c = calloc(1, sizeof *c);
    if (!c)
        return wp_errorf(err, "out of memory");
    *c = (struct wp_comm){inner_ops, inner, k, NULL, 0};
    *out = c;
    return 0;
}

static int bf16_init(struct wp_comm **c, struct wp_err *err)
{
    (void)c;
    return wp_errorf(err, "internal: the bf16 wire's comm is made by wp_comm_bf16_make");
}

static void bf16_destroy(struct wp_comm *c)
{
    for (int i = 0; c && i < c->npool; i++)
        c->k->release(c->pool[i].p);
    if (c)
        free(c->pool);
    free(c);
}

/* A free staging buffer of at least n elements (the smallest free one that
 * fits, else a new one); NULL when out of memory. */
static struct staging *stage_take(struct wp_comm *c, size_t n)
{
    struct staging *best = NULL;
    for (int i = 0; i < c->npool; i++)
        if (!c->pool[i].busy && c->pool[i].cap >= n && (!best || c->pool[i].cap < best->cap))
            best = &c->pool[i];
    if (!best) {
        uint16_t *p = c->k->alloc(n ? n * sizeof *p : 1);
        struct staging *grown = p ? realloc(c->pool, (size_t)(c->npool + 1) * sizeof *grown) : NULL;
        if (!grown) {
            if (p)
                c->k->release(p);
            return NULL;
        }
        c->pool = grown;
        best = &c->pool[c->npool++];
        *best = (struct staging){p, n, 0};
    }
    best->busy = 1;
    return best;
}

/* The pool may move when it grows: requests keep the buffer, not the slot. */
static void stage_give(struct wp_comm *c, uint16_t *p)
{
    for (int i = 0; i < c->npool; i++)
        if (c->pool[i].p == p)
            c->pool[i].busy = 0;
}

static struct wrapped *wrap(struct wp_comm_request *r)
{
    struct wrapped *w = calloc(1, sizeof *w);
    r->impl = w;
    return w;
}

/* A message of bytes / 4 floats through a staging buffer: a send's floats
 * packed into it first, a receive's unpacked from it when it completes. */
static int staged(struct wp_comm *c, float *recv_into, const float *send_from, size_t bytes, int peer, int tag,
                  struct wp_comm_request *r)
{
    size_t n = bytes / sizeof(float);
    struct staging *s = stage_take(c, n);
    struct wrapped *w = s ? wrap(r) : NULL;
    if (!w) {
        if (s)
            s->busy = 0;
        return -1;
    }
    uint16_t *p = s->p;
    if (send_from) {
        c->k->to_bf16(p, send_from, n);
        c->k->synchronize(); /* packed before the inner table reads it (NCCL's own stream) */
    }
    *w = (struct wrapped){{NULL, peer, NULL}, p, recv_into, n};
    int rc = send_from ? c->ops->isend(c->inner, p, n * sizeof *p, peer, tag, &w->inner)
                       : c->ops->irecv(c->inner, p, n * sizeof *p, peer, tag, &w->inner);
    r->peer = w->inner.peer;
    r->what = w->inner.what;
    return rc;
}

static int bf16_isend(struct wp_comm *c, const void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    return staged(c, NULL, buf, bytes, peer, tag, r);
}

static int bf16_irecv(struct wp_comm *c, void *buf, size_t bytes, int peer, int tag, struct wp_comm_request *r)
{
    return staged(c, buf, NULL, bytes, peer, tag, r);
}

static int bf16_test(struct wp_comm *c, struct wp_comm_request *r)
{
    struct wrapped *w = r->impl;
    if (!w)
        return 1;
    if (w->inner.impl && !c->ops->test(c->inner, &w->inner))
        return 0;
    if (w->recv_into)
        c->k->from_bf16(w->recv_into, w->staged, w->count);
    if (w->staged)
        stage_give(c, w->staged);
    free(w);
    r->impl = NULL;
    return 1;
}

static int bf16_rank(const struct wp_comm *c) { return c->ops->rank(c->inner); }
static int bf16_size(const struct wp_comm *c) { return c->ops->size(c->inner); }

static int bf16_allreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks)
{
    return c->ops->allreduce_sum(c->inner, buf, count, ranks, nranks);
}

static int bf16_allreduce_double(struct wp_comm *c, double *values, int count)
{
    return c->ops->allreduce_double(c->inner, values, count);
}

static void bf16_barrier(struct wp_comm *c) { c->ops->barrier(c->inner); }

static int bf16_allgather(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                          int nranks)
{
    return c->ops->allgather(c->inner, send, recv, count, ranks, nranks);
}

static int bf16_reduce_scatter_sum(struct wp_comm *c, const float *send, float *recv, size_t count, const int *ranks,
                                   int nranks)
{
    return c->ops->reduce_scatter_sum(c->inner, send, recv, count, ranks, nranks);
}

static int bf16_open_channel(struct wp_comm *c, const int *ranks, int nranks, int channel)
{
    return c->ops->open_channel(c->inner, ranks, nranks, channel);
}

/* a sum's request is wrapped too, so that test knows every request it gets */
static int bf16_iallreduce_sum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int nranks,
                               int channel, struct wp_comm_request *r)
{
    struct wrapped *w = wrap(r);
    if (!w)
        return -1;
    int rc = c->ops->iallreduce_sum(c->inner, buf, count, ranks, nranks, channel, &w->inner);
    r->peer = w->inner.peer;
    r->what = w->inner.what;
    return rc;
}

const struct wp_comm_ops wp_comm_bf16 = {
    "bf16 wire", bf16_init, bf16_destroy, bf16_rank, bf16_size, bf16_isend, bf16_irecv, bf16_test,
    bf16_allreduce_sum, bf16_allreduce_double, bf16_barrier, bf16_allgather, bf16_reduce_scatter_sum,
    bf16_open_channel, bf16_iallreduce_sum,
};
