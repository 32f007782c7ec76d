/* Message matching by channel, and the lock-step walk over all ranks. */
#include "sched/walk.h"

#include <stdlib.h>
#include <string.h>

void wp_action_describe(const struct wp_action *a, char *buf, size_t len)
{
    if (wp_op_is_send(a->op))
        snprintf(buf, len, "%s stage %d micro-batch %d to rank %d", wp_op_name(a->op), a->stage, a->microbatch, a->peer);
    else if (wp_op_is_recv(a->op))
        snprintf(buf, len, "%s stage %d micro-batch %d from rank %d", wp_op_name(a->op), a->stage, a->microbatch,
                 a->peer);
    else if (a->microbatch >= 0)
        snprintf(buf, len, "%s stage %d micro-batch %d", wp_op_name(a->op), a->stage, a->microbatch);
    else
        snprintf(buf, len, "%s stage %d", wp_op_name(a->op), a->stage);
}

/* One channel: its key and the global ids of its sends and receives in order. */
struct channel {
    int dst, kind, boundary;
    int32_t *sends, *recvs;
    int nsends, nrecvs, cap_s, cap_r;
};

struct channel_table {
    struct channel **by_src; /* per sender rank: its channels */
    int *count;
};

static struct channel *channel_get(struct channel_table *t, int src, int dst, int kind, int boundary)
{
    struct channel *list = t->by_src[src];
    for (int i = 0; i < t->count[src]; i++)
        if (list[i].dst == dst && list[i].kind == kind && list[i].boundary == boundary)
            return &list[i];
    struct channel *grown = realloc(list, (size_t)(t->count[src] + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    t->by_src[src] = grown;
    struct channel *c = &grown[t->count[src]++];
    memset(c, 0, sizeof *c);
    c->dst = dst;
    c->kind = kind;
    c->boundary = boundary;
    return c;
}

static int append(int32_t **v, int *n, int *cap, long x)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 16;
        int32_t *g = realloc(*v, (size_t)c * sizeof *g);
        if (!g)
            return -1;
        *v = g;
        *cap = c;
    }
    (*v)[(*n)++] = (int32_t)x;
    return 0;
}

void wp_match_locate(const struct wp_msg_match *mm, int nranks, long gid, int *rank, int *step)
{
    int lo = 0, hi = nranks - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (mm->offset[mid] <= gid)
            lo = mid;
        else
            hi = mid - 1;
    }
    *rank = lo;
    *step = (int)(gid - mm->offset[lo]);
}

static int match_channel(const struct wp_schedule *s, struct wp_msg_match *mm, int src, const struct channel *c,
                         struct wp_err *err)
{
    char what[160];
    int dst = c->dst;
    int n = c->nsends < c->nrecvs ? c->nsends : c->nrecvs;
    const struct wp_action *sends = s->lists[src].actions, *recvs = s->lists[dst].actions;
    long soff = mm->offset[src], roff = mm->offset[dst];
    for (int i = 0; i < n; i++) {
        const struct wp_action *send = &sends[c->sends[i] - soff], *recv = &recvs[c->recvs[i] - roff];
        if (send->microbatch != recv->microbatch) {
            wp_action_describe(recv, what, sizeof what);
            return wp_errorf(err, "rank %d step %ld: %s, but the next message rank %d sends on that channel "
                                  "is micro-batch %d (its step %ld): sends and receives are out of order",
                             dst, c->recvs[i] - roff, what, src, send->microbatch, c->sends[i] - soff);
        }
        mm->partner[c->recvs[i]] = c->sends[i];
        mm->partner[c->sends[i]] = c->recvs[i];
    }
    if (c->nsends > n) {
        wp_action_describe(&sends[c->sends[n] - soff], what, sizeof what);
        return wp_errorf(err, "rank %d step %ld: %s is never received", src, c->sends[n] - soff, what);
    }
    if (c->nrecvs > n) {
        wp_action_describe(&recvs[c->recvs[n] - roff], what, sizeof what);
        return wp_errorf(err, "rank %d step %ld: %s has no matching send", dst, c->recvs[n] - roff, what);
    }
    return 0;
}

void wp_match_destroy(struct wp_msg_match *mm)
{
    free(mm->offset);
    free(mm->partner);
    memset(mm, 0, sizeof *mm);
}

int wp_match_messages(const struct wp_schedule *s, struct wp_msg_match *mm, struct wp_err *err)
{
    memset(mm, 0, sizeof *mm);
    int P = s->nranks;
    mm->offset = malloc((size_t)(P + 1) * sizeof *mm->offset);
    if (!mm->offset)
        return wp_errorf(err, "out of memory");
    for (int r = 0; r < P; r++) {
        mm->offset[r] = mm->total;
        mm->total += s->lists[r].count;
    }
    mm->offset[P] = mm->total;
    if (mm->total > INT32_MAX) {
        wp_match_destroy(mm);
        return wp_errorf(err, "schedule too large: %ld actions", mm->total);
    }
    mm->partner = malloc((size_t)(mm->total ? mm->total : 1) * sizeof *mm->partner);
    struct channel_table t = {calloc((size_t)P, sizeof(struct channel *)), calloc((size_t)P, sizeof(int))};
    int rc = mm->partner && t.by_src && t.count ? 0 : wp_errorf(err, "out of memory");
    for (long g = 0; rc == 0 && g < mm->total; g++)
        mm->partner[g] = -1;
    char what[160];
    for (int r = 0; rc == 0 && r < P; r++) {
        for (int i = 0; rc == 0 && i < s->lists[r].count; i++) {
            const struct wp_action *a = &s->lists[r].actions[i];
            if (!wp_op_is_send(a->op) && !wp_op_is_recv(a->op))
                continue;
            if (a->peer < 0 || a->peer >= P || a->peer == r) {
                wp_action_describe(a, what, sizeof what);
                rc = wp_errorf(err, "rank %d step %d: %s names an invalid peer", r, i, what);
                break;
            }
            int act = a->op == WP_OP_SEND_ACT || a->op == WP_OP_RECV_ACT;
            /* The boundary is the sending stage: SEND_ACT s -> RECV_ACT s+1,
             * SEND_GRAD s -> RECV_GRAD s-1. */
            int boundary = a->op == WP_OP_RECV_ACT ? a->stage - 1 : a->op == WP_OP_RECV_GRAD ? a->stage + 1 : a->stage;
            int src = wp_op_is_send(a->op) ? r : a->peer, dst = wp_op_is_send(a->op) ? a->peer : r;
            struct channel *c = channel_get(&t, src, dst, act, boundary);
            long gid = mm->offset[r] + i;
            if (!c || (wp_op_is_send(a->op) ? append(&c->sends, &c->nsends, &c->cap_s, gid)
                                             : append(&c->recvs, &c->nrecvs, &c->cap_r, gid)))
                rc = wp_errorf(err, "out of memory");
        }
    }
    for (int r = 0; t.by_src && r < P; r++) {
        for (int i = 0; i < t.count[r]; i++) {
            if (rc == 0)
                rc = match_channel(s, mm, r, &t.by_src[r][i], err);
            free(t.by_src[r][i].sends);
            free(t.by_src[r][i].recvs);
        }
        free(t.by_src[r]);
    }
    free(t.by_src);
    free(t.count);
    if (rc)
        wp_match_destroy(mm);
    return rc;
}

/* ---- the walk ---------------------------------------------------------------------- */

struct walk_state {
    int *pc;
    int *queue, qhead, qtail, *queued;
    int *waiter_stage_arrivals; /* per stage: ranks arrived at its ALLREDUCE */
    int *arrived_flag;          /* per rank: arrived at the ALLREDUCE it is stopped at */
};

static void enqueue(struct walk_state *w, const struct wp_schedule *s, int P, int r)
{
    if (w->queued[r])
        return;
    /* the rank runs when it reaches the queue's head: fetch its next action
     * now, since switching between ranks is what the walk waits on */
    if (w->pc[r] < s->lists[r].count)
        __builtin_prefetch(&s->lists[r].actions[w->pc[r]]);
    w->queued[r] = 1;
    w->queue[w->qtail] = r;
    w->qtail = (w->qtail + 1) % P;
}

static int holders_of(const struct wp_schedule *s, int stage, int *ranks)
{
    const struct wp_stage_place *pl = &s->place[stage];
    int n = pl->ncopies * pl->nreplicas;
    memcpy(ranks, pl->ranks, (size_t)n * sizeof *ranks);
    return n;
}

int wp_walk(const struct wp_schedule *s, const struct wp_msg_match *mm, const struct wp_walk_visitor *v,
            struct wp_err *err)
{
    int P = s->nranks;
    struct walk_state w;
    w.pc = calloc((size_t)P, sizeof *w.pc);
    w.queue = calloc((size_t)P, sizeof *w.queue);
    w.queued = calloc((size_t)P, sizeof *w.queued);
    w.waiter_stage_arrivals = calloc((size_t)s->nstages, sizeof(int));
    w.arrived_flag = calloc((size_t)P, sizeof(int));
    int *ranks = calloc((size_t)P, sizeof *ranks), *steps = calloc((size_t)P, sizeof *steps);
    /* per rank: the global id of the send its receive waits for, or -1 */
    long *blocked_on = malloc((size_t)P * sizeof *blocked_on);
    int rc = w.pc && w.queue && w.queued && w.waiter_stage_arrivals && w.arrived_flag && ranks && steps && blocked_on
                 ? 0 : wp_errorf(err, "out of memory");
    for (int r = 0; rc == 0 && r < P; r++)
        blocked_on[r] = -1;
    w.qhead = w.qtail = 0;
    for (int r = 0; rc == 0 && r < P; r++)
        enqueue(&w, s, P, r);
    int pending = P; /* ranks in the queue */
    while (rc == 0 && pending > 0) {
        int r = w.queue[w.qhead];
        w.qhead = (w.qhead + 1) % P;
        w.queued[r] = 0;
        pending--;
        const struct wp_action_list *l = &s->lists[r];
        while (rc == 0 && w.pc[r] < l->count) {
            const struct wp_action *a = &l->actions[w.pc[r]];
            long gid = mm->offset[r] + w.pc[r];
            if (wp_op_is_recv(a->op)) {
                /* the matching send is on the peer rank */
                long ss = mm->partner[gid] - mm->offset[a->peer];
                if (w.pc[a->peer] <= ss) {
                    blocked_on[r] = mm->partner[gid];
                    break;
                }
                blocked_on[r] = -1;
            } else if (a->op == WP_OP_ALLREDUCE) {
                if (!w.arrived_flag[r]) {
                    w.arrived_flag[r] = 1;
                    w.waiter_stage_arrivals[a->stage]++;
                }
                int n = holders_of(s, a->stage, ranks);
                if (w.waiter_stage_arrivals[a->stage] < n)
                    break;
                for (int i = 0; i < n; i++)
                    steps[i] = w.pc[ranks[i]];
                rc = v->collective ? v->collective(v->ctx, a->stage, n, ranks, steps, err) : 0;
                w.waiter_stage_arrivals[a->stage] = 0;
                for (int i = 0; i < n; i++) {
                    w.arrived_flag[ranks[i]] = 0;
                    w.pc[ranks[i]]++;
                    if (ranks[i] != r && !w.queued[ranks[i]]) {
                        enqueue(&w, s, P, ranks[i]);
                        pending++;
                    }
                }
                continue;
            }
            rc = v->run ? v->run(v->ctx, r, w.pc[r], a, err) : 0;
            w.pc[r]++;
            if (rc == 0 && wp_op_is_send(a->op) && blocked_on[a->peer] == gid && !w.queued[a->peer]) {
                enqueue(&w, s, P, a->peer);
                pending++;
            }
        }
    }
    if (rc == 0) {
        char msg[WP_ERR_MAX] = "", what[160];
        int blocked = 0;
        for (int r = 0; r < P; r++) {
            if (w.pc[r] >= s->lists[r].count)
                continue;
            wp_action_describe(&s->lists[r].actions[w.pc[r]], what, sizeof what);
            if (blocked++ < 4) {
                size_t len = strlen(msg);
                snprintf(msg + len, sizeof msg - len, "%srank %d step %d waits at %s", blocked > 1 ? "; " : "", r,
                         w.pc[r], what);
            }
        }
        if (blocked)
            rc = wp_errorf(err, "deadlock: %s%s", msg, blocked > 4 ? "; ..." : "");
    }
    free(w.pc);
    free(w.queue);
    free(w.queued);
    free(w.waiter_stage_arrivals);
    free(w.arrived_flag);
    free(ranks);
    free(steps);
    free(blocked_on);
    return rc;
}
