/* Message matching by channel, and the lock-step walk over all ranks: the
 * walk pairs sends and receives as it goes (a queue of messages in flight
 * per channel); matching them all up front is for naming the first channel
 * that does not pair up, and for the simulator of shared cores. */
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

/* The channel of a send or receive of rank (whose peer is a valid other
 * rank) as one number: sender and receiver (20 bits each), the sending
 * stage (21 bits, signed: a broken list may name a stage beyond either
 * end) and the kind. SEND_ACT s goes to RECV_ACT s+1, SEND_GRAD s to
 * RECV_GRAD s-1. */
static inline uint64_t channel_key(int rank, const struct wp_action *a)
{
    int send = wp_op_is_send(a->op), act = a->op == WP_OP_SEND_ACT || a->op == WP_OP_RECV_ACT;
    int boundary = a->op == WP_OP_RECV_ACT ? a->stage - 1 : a->op == WP_OP_RECV_GRAD ? a->stage + 1 : a->stage;
    uint64_t src = (uint64_t)(send ? rank : a->peer), dst = (uint64_t)(send ? a->peer : rank);
    return src << 42 | dst << 22 | (uint64_t)(boundary & 0x1FFFFF) << 1 | (uint64_t)act;
}

static int peer_valid(int nranks, int rank, const struct wp_action *a)
{
    return a->peer >= 0 && a->peer < nranks && a->peer != rank;
}

/* ---- matching up front ------------------------------------------------------------- */

/* One channel: its key and the global ids of its sends and receives in order. */
struct match_channel {
    uint64_t key;
    int dst;
    int32_t *sends, *recvs;
    int nsends, nrecvs, cap_s, cap_r;
};

struct match_table {
    struct match_channel **by_src; /* per sender rank: its channels, in the order first named */
    int *count;
};

static struct match_channel *match_channel_get(struct match_table *t, int src, int dst, uint64_t key)
{
    struct match_channel *list = t->by_src[src];
    for (int i = 0; i < t->count[src]; i++)
        if (list[i].key == key)
            return &list[i];
    struct match_channel *grown = realloc(list, (size_t)(t->count[src] + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    t->by_src[src] = grown;
    struct match_channel *c = &grown[t->count[src]++];
    memset(c, 0, sizeof *c);
    c->key = key;
    c->dst = dst;
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

static int match_channel(const struct wp_schedule *s, struct wp_msg_match *mm, int src,
                         const struct match_channel *c, struct wp_err *err)
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
    struct match_table t = {calloc((size_t)P, sizeof(struct match_channel *)), calloc((size_t)P, sizeof(int))};
    int rc = mm->partner && t.by_src && t.count ? 0 : wp_errorf(err, "out of memory");
    for (long g = 0; rc == 0 && g < mm->total; g++)
        mm->partner[g] = -1;
    char what[160];
    for (int r = 0; rc == 0 && r < P; r++) {
        for (int i = 0; rc == 0 && i < s->lists[r].count; i++) {
            const struct wp_action *a = &s->lists[r].actions[i];
            if (!wp_op_is_send(a->op) && !wp_op_is_recv(a->op))
                continue;
            if (!peer_valid(P, r, a)) {
                wp_action_describe(a, what, sizeof what);
                rc = wp_errorf(err, "rank %d step %d: %s names an invalid peer", r, i, what);
                break;
            }
            int src = wp_op_is_send(a->op) ? r : a->peer, dst = wp_op_is_send(a->op) ? a->peer : r;
            struct match_channel *c = match_channel_get(&t, src, dst, channel_key(r, a));
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

/* ---- channels of the walk ------------------------------------------------------------ */

/* A message sent and not yet received: what its send carried (the
 * simulator: when it arrives), and its micro-batch. */
struct in_flight {
    double value;
    int microbatch;
};

/* The messages in flight on one channel, oldest first, in one cache line:
 * up to two live in the channel itself (a pipeline mostly has one or two
 * in flight per channel, and the walk meets every channel once per
 * micro-batch); a burst (a warm-up sends many before the first is
 * received) goes to a ring on the heap until it has drained to one. The
 * line also says whether the receiver waits on the channel, so that a
 * send need not look at the receiver's cursor. */
struct channel {
    uint64_t key;
    int dst;                /* the receiving rank */
    int waiting;            /* dst stopped at a receive on the channel, which had nothing */
    unsigned count;         /* in flight */
    unsigned head;          /* the oldest, in near or ring */
    unsigned mask;          /* ring has mask + 1 entries (a power of two) */
    struct in_flight *ring; /* NULL: the messages are in near */
    double near_value[2];
    int near_mb[2];
};

/* The i-th oldest message (i < count). */
static inline struct in_flight channel_at(const struct channel *ch, unsigned i)
{
    if (ch->ring)
        return ch->ring[(ch->head + i) & ch->mask];
    unsigned k = (ch->head + i) & 1;
    return (struct in_flight){ch->near_value[k], ch->near_mb[k]};
}

static inline int channel_push(struct channel *ch, int microbatch, double value)
{
    if (!ch->ring && ch->count < 2) {
        unsigned k = (ch->head + ch->count++) & 1;
        ch->near_value[k] = value;
        ch->near_mb[k] = microbatch;
        return 0;
    }
    if (!ch->ring || ch->count == ch->mask + 1) { /* to a ring, or a ring twice as long */
        unsigned cap = ch->ring ? 2 * (ch->mask + 1) : 16;
        struct in_flight *ring = malloc(cap * sizeof *ring);
        if (!ring)
            return -1;
        for (unsigned i = 0; i < ch->count; i++)
            ring[i] = channel_at(ch, i);
        free(ch->ring);
        ch->ring = ring;
        ch->head = 0;
        ch->mask = cap - 1;
    }
    ch->ring[(ch->head + ch->count++) & ch->mask] = (struct in_flight){value, microbatch};
    return 0;
}

static inline void channel_pop(struct channel *ch)
{
    if (!ch->ring) {
        ch->head = --ch->count ? (ch->head + 1) & 1 : 0;
        return;
    }
    ch->head = (ch->head + 1) & ch->mask;
    if (--ch->count <= 1) { /* drained: back to near */
        if (ch->count) {
            ch->near_value[0] = ch->ring[ch->head].value;
            ch->near_mb[0] = ch->ring[ch->head].microbatch;
        }
        free(ch->ring);
        ch->ring = NULL;
        ch->head = 0;
    }
}

/* The walk's channels, found by key in a hash table (open addressing). */
struct channels {
    struct channel *v; /* cache-line aligned */
    int n, cap;
    int *table;        /* channel index or -1 */
    unsigned table_mask;
};

static int channels_init(struct channels *c)
{
    memset(c, 0, sizeof *c);
    c->table_mask = 1023;
    c->table = malloc((c->table_mask + 1) * sizeof *c->table);
    if (!c->table)
        return -1;
    memset(c->table, 0xff, (c->table_mask + 1) * sizeof *c->table);
    return 0;
}

static void channels_destroy(struct channels *c)
{
    for (int i = 0; i < c->n; i++)
        free(c->v[i].ring);
    free(c->v);
    free(c->table);
}

static unsigned key_hash(uint64_t key, unsigned mask)
{
    return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
}

/* The index of the channel of key (new and empty if it was never used), or
 * -1 (no memory). */
static int channel_lookup(struct channels *c, uint64_t key, int dst)
{
    unsigned h = key_hash(key, c->table_mask);
    for (; c->table[h] >= 0; h = (h + 1) & c->table_mask)
        if (c->v[c->table[h]].key == key)
            return c->table[h];
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        struct channel *grown = aligned_alloc(64, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        if (c->n)
            memcpy(grown, c->v, (size_t)c->n * sizeof *grown);
        free(c->v);
        c->v = grown;
        c->cap = cap;
    }
    if (2 * (unsigned)(c->n + 1) > c->table_mask + 1) { /* keep the table at most half full */
        unsigned mask = 2 * c->table_mask + 1;
        int *table = malloc((mask + 1) * sizeof *table);
        if (!table)
            return -1;
        memset(table, 0xff, (mask + 1) * sizeof *table);
        for (int i = 0; i < c->n; i++) {
            unsigned g = key_hash(c->v[i].key, mask);
            while (table[g] >= 0)
                g = (g + 1) & mask;
            table[g] = i;
        }
        free(c->table);
        c->table = table;
        c->table_mask = mask;
        for (h = key_hash(key, mask); table[h] >= 0; h = (h + 1) & mask)
            ;
    }
    memset(&c->v[c->n], 0, sizeof c->v[c->n]);
    c->v[c->n].key = key;
    c->v[c->n].dst = dst;
    c->table[h] = c->n;
    return c->n++;
}

/* ---- the walk ---------------------------------------------------------------------- */

/* Messages in one run handed to the visitor, at most (a longer run is
 * handed over in parts: a rank never receives what it sends itself, so
 * where a run is cut changes nothing). */
#define RUN_MESSAGES 64

/* What a send or receive's channel depends on besides its rank: its bits
 * without the micro-batch. Never 0 (its op is no F), so an unused cache
 * entry (0) matches no action. */
static inline uint64_t channel_signature(const struct wp_action *a)
{
    struct wp_action b = *a;
    b.microbatch = 0;
    uint64_t bits;
    memcpy(&bits, &b, sizeof bits);
    return bits;
}

/* Where a rank is, in two cache lines: the walk switches ranks about once
 * per micro-batch and stage, so what it reads of a rank comes at once. */
struct cursor {
    const struct wp_action *actions;
    int count, pc;
    char queued;
    char arrived; /* at the ALLREDUCE it is stopped at */
    /* per op SEND_ACT .. RECV_GRAD, the channels of the two signatures it
     * used last: a rank's list repeats one or two per op (one stage, or the
     * two of a V), so the hash table is seldom asked */
    int channel[4][2];
    uint64_t signature[4][2];
} __attribute__((aligned(64)));

struct walk_state {
    const struct wp_schedule *s;
    int P;
    struct cursor *at;          /* per rank */
    int *queue, qhead, qtail;   /* ranks that can go on, in the order they run */
    int pending;                /* in the queue */
    int *stage_arrivals;        /* per stage: ranks arrived at its ALLREDUCE */
    struct channels ch;
};

/* The channel of a send or receive of rank, or -1: its peer is no valid
 * other rank (*unpaired set), or no memory. */
static int channel_of_new(struct walk_state *w, struct cursor *cur, int rank, const struct wp_action *a,
                          uint64_t sig, int *unpaired)
{
    if (!peer_valid(w->P, rank, a)) {
        *unpaired = 1;
        return -1;
    }
    int i = channel_lookup(&w->ch, channel_key(rank, a), wp_op_is_send(a->op) ? a->peer : rank);
    int k = a->op - WP_OP_SEND_ACT;
    cur->channel[k][1] = cur->channel[k][0];
    cur->signature[k][1] = cur->signature[k][0];
    cur->channel[k][0] = i;
    cur->signature[k][0] = sig;
    return i;
}

static inline int channel_of(struct walk_state *w, struct cursor *cur, int rank, const struct wp_action *a,
                             int *unpaired)
{
    uint64_t sig = channel_signature(a);
    int k = a->op - WP_OP_SEND_ACT;
    if (cur->signature[k][0] == sig)
        return cur->channel[k][0];
    if (cur->signature[k][1] == sig)
        return cur->channel[k][1];
    return channel_of_new(w, cur, rank, a, sig, unpaired);
}

static void enqueue(struct walk_state *w, int r)
{
    struct cursor *cur = &w->at[r];
    if (cur->queued)
        return;
    cur->queued = 1;
    w->queue[w->qtail] = r;
    if (++w->qtail == w->P)
        w->qtail = 0;
    w->pending++;
}

/* Visits ahead at which fetch_ahead asks for a rank's cursor, then its
 * next actions and channels, then the visitor's data. */
#define AHEAD_CURSOR 24
#define AHEAD_ACTIONS 16
#define AHEAD_VISITOR 8

/* The queue says which ranks run next; switching between a thousand ranks
 * is what the walk waits on, so what they will read is fetched a few visits
 * before, in three steps that each read what the one before fetched. */
static void fetch_ahead(struct walk_state *w, const struct wp_walk_visitor *v)
{
    int P = w->P, h = w->qhead, q;
    if (w->pending > AHEAD_CURSOR) {
        q = h + AHEAD_CURSOR;
        const struct cursor *cur = &w->at[w->queue[q < P ? q : q - P]];
        __builtin_prefetch(cur);
        __builtin_prefetch((const char *)cur + 64);
    }
    if (w->pending > AHEAD_ACTIONS) {
        q = h + AHEAD_ACTIONS;
        const struct cursor *cur = &w->at[w->queue[q < P ? q : q - P]];
        if (cur->pc < cur->count) {
            __builtin_prefetch(&cur->actions[cur->pc]);
            __builtin_prefetch(&cur->actions[cur->pc] + 8);
        }
        for (int k = 0; k < 4; k++)
            if (cur->channel[k][0] >= 0)
                __builtin_prefetch(&w->ch.v[cur->channel[k][0]]);
    }
    if (w->pending > AHEAD_VISITOR && v->upcoming) {
        q = h + AHEAD_VISITOR;
        int r = w->queue[q < P ? q : q - P];
        if (w->at[r].pc < w->at[r].count)
            v->upcoming(v->ctx, r, w->at[r].pc);
    }
}

static int holders_of(const struct wp_schedule *s, int stage, int *ranks)
{
    const struct wp_stage_place *pl = &s->place[stage];
    int n = pl->ncopies * pl->nreplicas;
    memcpy(ranks, pl->ranks, (size_t)n * sizeof *ranks);
    return n;
}

/* Why a run ended. */
enum run_end { RUN_GOES_ON, RUN_STOPPED, RUN_ALLREDUCE, RUN_UNPAIRED, RUN_FAILED };

/* Runs rank r from its pc as far as it goes before a receive with nothing
 * to receive, an ALLREDUCE or RUN_MESSAGES messages: takes the messages it
 * receives, hands the run to the visitor, then sends what it sends (waking
 * a rank that waits for it). */
static enum run_end run_rank(struct walk_state *w, int r, const struct wp_walk_visitor *v, long *delivered,
                             struct wp_err *err)
{
    struct cursor *cur = &w->at[r];
    const struct wp_action *first = cur->actions + cur->pc, *a = first, *last = cur->actions + cur->count;
    double msg[RUN_MESSAGES];
    struct {
        int channel, slot, microbatch;
    } sends[RUN_MESSAGES];
    int nmsg = 0, nsends = 0;
    enum run_end end = RUN_GOES_ON;
    for (; a < last; a++) {
        unsigned op = a->op;
        if (op - WP_OP_SEND_ACT >= 4) { /* not a message: the visitor's */
            if (op != WP_OP_ALLREDUCE)
                continue;
            end = RUN_ALLREDUCE;
            break;
        }
        if (nmsg == RUN_MESSAGES)
            break;
        int unpaired = 0, c = channel_of(w, cur, r, a, &unpaired);
        if (c < 0) {
            end = unpaired ? RUN_UNPAIRED : RUN_FAILED;
            if (!unpaired)
                wp_errorf(err, "out of memory");
            break;
        }
        if (wp_op_is_send((int)op)) {
            sends[nsends].channel = c;
            sends[nsends].slot = nmsg++;
            sends[nsends++].microbatch = a->microbatch;
            continue;
        }
        struct channel *ch = &w->ch.v[c];
        if (ch->count == 0) {
            ch->waiting = 1;
            end = RUN_STOPPED;
            break;
        }
        struct in_flight m = channel_at(ch, 0);
        if (m.microbatch != a->microbatch) {
            end = RUN_UNPAIRED;
            break;
        }
        msg[nmsg++] = m.value;
        channel_pop(ch);
    }
    int from = (int)(first - cur->actions), pc = (int)(a - cur->actions);
    cur->pc = pc;
    *delivered += nmsg - nsends;
    if (end != RUN_FAILED && pc > from && v->run && v->run(v->ctx, r, from, pc, msg, err))
        end = RUN_FAILED;
    for (int i = 0; end != RUN_FAILED && i < nsends; i++) {
        struct channel *ch = &w->ch.v[sends[i].channel];
        if (channel_push(ch, sends[i].microbatch, msg[sends[i].slot])) {
            end = RUN_FAILED;
            wp_errorf(err, "out of memory");
        } else if (ch->waiting) {
            ch->waiting = 0;
            enqueue(w, ch->dst);
        }
    }
    return end == RUN_GOES_ON && a == last ? RUN_STOPPED : end;
}

/* Rank r at an ALLREDUCE: counts its arrival, and once every holder of the
 * stage is there, runs the collective and moves them all past it. */
static int arrive_at_allreduce(struct walk_state *w, int r, int *ranks, int *steps, const struct wp_walk_visitor *v,
                               int *done, struct wp_err *err)
{
    const struct wp_action *a = &w->at[r].actions[w->at[r].pc];
    if ((unsigned)a->stage >= (unsigned)w->s->nstages) { /* lists walked before they are checked (validate.h) */
        *done = 0;
        return wp_errorf(err, "rank %d step %d: ALLREDUCE of stage %d, out of range", r, w->at[r].pc, (int)a->stage);
    }
    if (!w->at[r].arrived) {
        w->at[r].arrived = 1;
        w->stage_arrivals[a->stage]++;
    }
    int n = holders_of(w->s, a->stage, ranks);
    *done = w->stage_arrivals[a->stage] >= n;
    if (!*done)
        return 0;
    for (int i = 0; i < n; i++)
        steps[i] = w->at[ranks[i]].pc;
    int rc = v->collective ? v->collective(v->ctx, a->stage, n, ranks, steps, err) : 0;
    w->stage_arrivals[a->stage] = 0;
    for (int i = 0; i < n; i++) {
        w->at[ranks[i]].arrived = 0;
        w->at[ranks[i]].pc++;
        if (ranks[i] != r)
            enqueue(w, ranks[i]);
    }
    return rc;
}

/* The error of a walk that did not finish: the first message that does not
 * pair up, as wp_match_messages names it, else what the walk found. */
static int diagnose(const struct wp_schedule *s, int rc, int unpaired, struct wp_err *err)
{
    struct wp_msg_match mm;
    struct wp_err match_err = {""};
    if (wp_match_messages(s, &mm, &match_err)) {
        if (err)
            *err = match_err;
        return -1;
    }
    wp_match_destroy(&mm);
    if (unpaired && rc == 0)
        return wp_errorf(err, "messages do not pair up, but no channel shows it (bug)");
    return rc;
}

/* The deadlock a walk that stopped early ended in: each blocked rank, its
 * step and the action it waits at; 0 when every list ran to its end. */
static int deadlock(const struct walk_state *w, struct wp_err *err)
{
    char msg[WP_ERR_MAX] = "", what[160];
    int blocked = 0;
    for (int r = 0; r < w->P; r++) {
        const struct cursor *cur = &w->at[r];
        if (cur->pc >= cur->count)
            continue;
        wp_action_describe(&cur->actions[cur->pc], what, sizeof what);
        if (blocked++ < 4) {
            size_t len = strlen(msg);
            snprintf(msg + len, sizeof msg - len, "%srank %d step %d waits at %s", blocked > 1 ? "; " : "", r, cur->pc,
                     what);
        }
    }
    return blocked ? wp_errorf(err, "deadlock: %s%s", msg, blocked > 4 ? "; ..." : "") : 0;
}

static void walk_destroy(struct walk_state *w)
{
    channels_destroy(&w->ch);
    free(w->at);
    free(w->queue);
    free(w->stage_arrivals);
}

static int walk_init(struct walk_state *w, const struct wp_schedule *s)
{
    int P = s->nranks;
    memset(w, 0, sizeof *w);
    w->s = s;
    w->P = P;
    w->at = aligned_alloc(64, (size_t)P * sizeof *w->at);
    w->queue = calloc((size_t)P, sizeof *w->queue);
    w->stage_arrivals = calloc((size_t)s->nstages + 1, sizeof *w->stage_arrivals);
    if (channels_init(&w->ch) || !w->at || !w->queue || !w->stage_arrivals)
        return -1;
    for (int r = 0; r < P; r++) {
        w->at[r] = (struct cursor){s->lists[r].actions, s->lists[r].count, 0, 0, 0,
                                   {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}}, {{0}}};
        enqueue(w, r);
    }
    return 0;
}

int wp_walk(const struct wp_schedule *s, const struct wp_walk_visitor *v, long *delivered, struct wp_err *err)
{
    struct walk_state w;
    int *ranks = calloc((size_t)s->nranks, sizeof *ranks), *steps = calloc((size_t)s->nranks, sizeof *steps);
    int rc = walk_init(&w, s) == 0 && ranks && steps ? 0 : wp_errorf(err, "out of memory");
    int unpaired = 0; /* a send or receive that cannot pair up: diagnose() names it */
    long messages = 0;
    while (rc == 0 && !unpaired && w.pending > 0) {
        fetch_ahead(&w, v);
        int r = w.queue[w.qhead];
        if (++w.qhead == w.P)
            w.qhead = 0;
        w.at[r].queued = 0;
        w.pending--;
        for (;;) {
            enum run_end end = run_rank(&w, r, v, &messages, err);
            if (end == RUN_GOES_ON)
                continue;
            int done = 0;
            if (end == RUN_ALLREDUCE)
                rc = arrive_at_allreduce(&w, r, ranks, steps, v, &done, err);
            else if (end == RUN_FAILED)
                rc = -1;
            unpaired = end == RUN_UNPAIRED;
            if (!done || rc)
                break;
        }
    }
    if (rc == 0 && !unpaired) {
        rc = deadlock(&w, err);
        for (int i = 0; rc == 0 && i < w.ch.n; i++)
            unpaired |= w.ch.v[i].count > 0; /* sent, never received */
    }
    if (rc || unpaired)
        rc = diagnose(s, rc, unpaired, err);
    if (delivered)
        *delivered = messages;
    walk_destroy(&w);
    free(ranks);
    free(steps);
    return rc;
}
