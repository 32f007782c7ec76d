/* Gradient buckets overlapped with the backward (see grad_reduce.h). */
#include "run/core/grad_reduce.h"

#include <stdlib.h>
#include <string.h>

#include "sched/grad_overlap.h"

/* Starts the sum of floats [first, first + count) as the next bucket. */
static void start_bucket(struct wp_grad_reducer *r, size_t first, size_t count)
{
    if (count == 0)
        return;
    if (r->nbuckets == r->cap) {
        int cap = r->cap ? 2 * r->cap : 16;
        struct wp_grad_bucket *grown = realloc(r->buckets, (size_t)cap * sizeof *grown);
        if (!grown) {
            r->failed = 1;
            return;
        }
        r->buckets = grown;
        r->cap = cap;
    }
    struct wp_grad_bucket *b = &r->buckets[r->nbuckets++];
    *b = (struct wp_grad_bucket){first, count, {NULL}};
    if (r->k)
        r->k->synchronize(); /* MPI reads the floats now (NCCL's stream waits by itself) */
    if (r->cops->iallreduce_sum(r->comm, r->exec->grads + first, count, r->ranks, r->nranks, r->channel, &b->req))
        r->failed = 1;
}

static void start_open(struct wp_grad_reducer *r)
{
    start_bucket(r, r->open_first, r->open_count);
    r->open_count = 0;
}

/* wp_grad_hook: floats [first, first + count) are final. */
static void told(void *ctx, size_t first, size_t count)
{
    struct wp_grad_reducer *r = ctx;
    if (!r->hook.armed || count == 0)
        return;
    if (r->open_count == 0) {
        r->open_first = first;
        r->open_count = count;
    } else if (first + count == r->open_first) { /* the layer below: a backward's usual order */
        r->open_first = first;
        r->open_count += count;
    } else if (first == r->open_first + r->open_count) {
        r->open_count += count;
    } else { /* not adjacent: the open bucket goes as it is */
        start_open(r);
        r->open_first = first;
        r->open_count = count;
    }
    if (wp_grad_bucket_full((double)r->open_count * sizeof(float), r->bucket_bytes))
        start_open(r);
    if (r->progress && r->progress->poll)
        r->progress->poll(r->progress->ctx);
}

int wp_grad_reducer_init(struct wp_grad_reducer *r, const struct wp_comm_ops *cops, struct wp_comm *comm,
                         const struct wp_kernel_ops *k, const struct wp_progress *progress,
                         const struct wp_stage_exec *exec, const int *ranks, int nranks, int channel,
                         struct wp_err *err)
{
    memset(r, 0, sizeof *r);
    r->hook = (struct wp_grad_hook){told, r, 0};
    r->overlap = 1;
    r->bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    r->cops = cops;
    r->comm = comm;
    r->k = k;
    r->progress = progress;
    r->exec = exec;
    r->channel = channel;
    r->active = cops && exec->grads && exec->grad_floats > 0 && nranks > 1;
    if (!r->active)
        return 0;
    r->ranks = malloc((size_t)nranks * sizeof *r->ranks);
    if (!r->ranks)
        return wp_errorf(err, "out of memory");
    memcpy(r->ranks, ranks, (size_t)nranks * sizeof *ranks);
    r->nranks = nranks;
    if (cops->open_channel(comm, ranks, nranks, channel))
        return wp_errorf(err, "making the communicator of stage %d's gradient buckets failed", channel);
    return 0;
}

void wp_grad_reducer_destroy(struct wp_grad_reducer *r)
{
    free(r->ranks);
    free(r->buckets);
    memset(r, 0, sizeof *r);
}

void wp_grad_reducer_set(struct wp_grad_reducer *r, int overlap, double bucket_bytes)
{
    r->overlap = overlap;
    r->bucket_bytes = bucket_bytes;
}

void wp_grad_reducer_pass_begin(struct wp_grad_reducer *r)
{
    r->hook.armed = r->active && r->overlap;
}

void wp_grad_reducer_pass_end(struct wp_grad_reducer *r)
{
    if (r->hook.armed)
        start_open(r);
    r->hook.armed = 0;
}

int wp_grad_reducer_poll(struct wp_grad_reducer *r)
{
    int pending = 0;
    for (int i = 0; i < r->nbuckets; i++)
        if (r->buckets[i].req.impl)
            pending += !r->cops->test(r->comm, &r->buckets[i].req);
    return pending;
}

static int buckets_pending(void *ctx)
{
    return wp_grad_reducer_poll(ctx);
}

static int by_first(const void *a, const void *b)
{
    size_t x = ((const struct wp_grad_bucket *)a)->first, y = ((const struct wp_grad_bucket *)b)->first;
    return x < y ? -1 : x > y;
}

int wp_grad_reducer_finish(struct wp_grad_reducer *r, struct wp_err *err)
{
    if (!r->active)
        return 0;
    wp_grad_reducer_pass_end(r);
    /* the floats no bucket covers, in ascending order: the same on every holder */
    int told_buckets = r->nbuckets;
    struct wp_grad_bucket *sorted = malloc((size_t)(told_buckets ? told_buckets : 1) * sizeof *sorted);
    if (!sorted)
        r->failed = 1;
    else {
        if (told_buckets) /* none (--grad-overlap off): r->buckets is NULL, which memcpy must not get */
            memcpy(sorted, r->buckets, (size_t)told_buckets * sizeof *sorted);
        qsort(sorted, (size_t)told_buckets, sizeof *sorted, by_first);
        size_t at = 0;
        for (int i = 0; i <= told_buckets; i++) {
            size_t next = i < told_buckets ? sorted[i].first : r->exec->grad_floats;
            if (next > at)
                start_bucket(r, at, next - at);
            if (i < told_buckets && sorted[i].first + sorted[i].count > at)
                at = sorted[i].first + sorted[i].count;
        }
        free(sorted);
    }
    /* every bucket tested at each poll: a node-aware sum's next step starts at once */
    wp_comm_wait_until(buckets_pending, r);
    r->nbuckets = 0;
    int failed = r->failed;
    r->failed = 0;
    return failed ? wp_errorf(err, "a gradient bucket's sum of stage %d could not start", r->channel) : 0;
}
