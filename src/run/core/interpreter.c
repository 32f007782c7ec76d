/* The action-list interpreter (see interpreter.h). */
#include "run/core/interpreter.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* ---- where things are -------------------------------------------------------------- */

/* Sequences [lo, hi) of a micro-batch that replica j of r holds. */
static void slice(int b, int j, int r, int *lo, int *hi)
{
    *lo = j * b / r;
    *hi = (j + 1) * b / r;
}

static int tag_of(int kind_grad, int boundary)
{
    return 2 * boundary + kind_grad;
}

/* ---- static slot assignment --------------------------------------------------------- */

struct pool {
    int *busy; /* per slot */
    int n, cap;
};

static int pool_take(struct pool *p)
{
    for (int i = 0; i < p->n; i++)
        if (!p->busy[i]) {
            p->busy[i] = 1;
            return i;
        }
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 8;
        int *grown = realloc(p->busy, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        p->busy = grown;
        p->cap = cap;
    }
    p->busy[p->n] = 1;
    return p->n++;
}

static int next_compute(const struct wp_action_list *l, int i)
{
    for (int j = i + 1; j < l->count; j++)
        if (wp_op_is_compute(l->actions[j].op))
            return j;
    return l->count;
}

/* Does the previous stage of this micro-batch run on this rank (an
 * activation and a gradient are handed over locally, as at Hanayo's turns)? */
static int local_neighbour(const struct wp_interp *in, int stage, int mb, int other)
{
    if (other < 0 || other >= in->s->nstages)
        return 0;
    return wp_stage_replica_of(in->s, other, mb, in->rank) >= 0 && wp_stage_replica_of(in->s, stage, mb, in->rank) >= 0;
}

/* Plays the list with the runtime's posting rule and fills slot_of_mb;
 * returns the slots each held stage needs through nslots. A slot is free
 * again once its own backward (B, or W when split) has run and, when the
 * previous stage is on this rank too, once that stage's B has read the
 * slot's input gradient. */
static int assign_slots(struct wp_interp *in, int *nslots, struct wp_err *err)
{
    const struct wp_action_list *l = &in->s->lists[in->rank];
    struct pool *pools = calloc((size_t)in->nheld, sizeof *pools);
    int *refs = calloc((size_t)in->nheld * (size_t)in->s->nmicro, sizeof *refs);
    if (!pools || !refs) {
        free(pools);
        free(refs);
        return wp_errorf(err, "out of memory");
    }
    int posted = -1, rc = 0;
#define ALLOC(h, m)                                                                        \
    do {                                                                                   \
        if (in->held[h].slot_of_mb[m] < 0 && (in->held[h].slot_of_mb[m] = pool_take(&pools[h])) < 0) \
            rc = wp_errorf(err, "out of memory");                                          \
    } while (0)
    int first = next_compute(l, -1);
    for (int i = 0; i < l->count && rc == 0; i++) {
        const struct wp_action *a = &l->actions[i];
        if (!wp_op_is_compute(a->op))
            continue;
        int upto = i == first ? next_compute(l, i) : next_compute(l, i);
        for (int j = posted + 1; j < upto; j++) {
            const struct wp_action *r = &l->actions[j];
            if (r->op == WP_OP_RECV_ACT)
                ALLOC(in->local_of_stage[r->stage], r->microbatch);
        }
        if (upto - 1 > posted)
            posted = upto - 1;
        int h = in->local_of_stage[a->stage], m = a->microbatch, M = in->s->nmicro;
        if (a->op == WP_OP_F) {
            ALLOC(h, m);
            refs[h * M + m] = 1 + local_neighbour(in, a->stage, m, a->stage - 1);
        }
        int frees = a->op == wp_sched_frees_op(in->s);
        if (frees && rc == 0 && --refs[h * M + m] == 0)
            pools[h].busy[in->held[h].slot_of_mb[m]] = 0;
        if (a->op == WP_OP_B && rc == 0 && local_neighbour(in, a->stage, m, a->stage + 1)) {
            int hn = in->local_of_stage[a->stage + 1];
            if (--refs[hn * M + m] == 0)
                pools[hn].busy[in->held[hn].slot_of_mb[m]] = 0;
        }
    }
#undef ALLOC
    for (int h = 0; h < in->nheld; h++) {
        nslots[h] = pools[h].n > 0 ? pools[h].n : 1;
        free(pools[h].busy);
    }
    free(pools);
    free(refs);
    return rc;
}

/* ---- setup ---------------------------------------------------------------------------- */

static void received(struct wp_interp *in, int i);

/* Tests every request this rank has in flight (posted receives, sends
 * from slot buffers): MPI moves messages only when asked. A receive seen
 * complete here is measured complete now. */
static int poll_requests(void *ctx)
{
    struct wp_interp *in = ctx;
    int pending = 0;
    for (int i = 0; i < in->s->lists[in->rank].count; i++)
        if (in->reqs[i].impl) {
            if (in->cops->test(in->comm, &in->reqs[i]))
                received(in, i);
            else
                pending++;
        }
    for (int h = 0; h < in->nheld; h++) {
        for (int sl = 0; sl < 2 * in->held[h].exec.nslots; sl++)
            if (in->held[h].slot_sends[sl].impl)
                pending += !in->cops->test(in->comm, &in->held[h].slot_sends[sl]);
        pending += wp_grad_reducer_poll(&in->held[h].reducer);
    }
    return pending;
}

/* Each held stage's last pass of the list that adds to its weight
 * gradients: W where the backward is split, else B. */
static void find_final_grad_actions(struct wp_interp *in)
{
    const struct wp_action_list *l = &in->s->lists[in->rank];
    int grad_op = in->s->split_backward ? WP_OP_W : WP_OP_B;
    for (int h = 0; h < in->nheld; h++)
        in->held[h].final_grad_action = -1;
    for (int i = 0; i < l->count; i++)
        if (l->actions[i].op == grad_op && in->local_of_stage[l->actions[i].stage] >= 0)
            in->held[in->local_of_stage[l->actions[i].stage]].final_grad_action = i;
}

/* The per-action arrays and the slots of the schedule in->s, for the held
 * stages found; nslots gets each held stage's slot count. */
static int lay_out(struct wp_interp *in, int *nslots, struct wp_err *err)
{
    const struct wp_schedule *s = in->s;
    size_t nactions = (size_t)(s->lists[in->rank].count ? s->lists[in->rank].count : 1);
    free(in->reqs);
    free(in->msg_posted_s);
    in->reqs = calloc(nactions, sizeof *in->reqs);
    in->msg_posted_s = calloc(3 * nactions, sizeof *in->msg_posted_s);
    in->msg_done_s = in->msg_posted_s ? in->msg_posted_s + nactions : NULL;
    in->msg_bytes = in->msg_posted_s ? in->msg_posted_s + 2 * nactions : NULL;
    if (!in->reqs || !in->msg_posted_s)
        return wp_errorf(err, "out of memory");
    for (int h = 0; h < in->nheld; h++) {
        struct wp_held_stage *hs = &in->held[h];
        free(hs->slot_of_mb);
        hs->slot_of_mb = malloc((size_t)s->nmicro * sizeof *hs->slot_of_mb);
        if (!hs->slot_of_mb)
            return wp_errorf(err, "out of memory");
        for (int m = 0; m < s->nmicro; m++)
            hs->slot_of_mb[m] = -1;
    }
    find_final_grad_actions(in);
    return assign_slots(in, nslots, err);
}

/* Sends from slot buffers: two per slot. */
static int make_slot_sends(struct wp_held_stage *h, struct wp_err *err)
{
    free(h->slot_sends);
    h->slot_sends = calloc((size_t)h->exec.nslots * 2, sizeof *h->slot_sends);
    return h->slot_sends ? 0 : wp_errorf(err, "out of memory");
}

static int check_slicing(const struct wp_interp *in, const struct wp_schedule *s, struct wp_err *err)
{
    if (in->global_batch % s->nmicro)
        return wp_errorf(err, "a global batch of %d sequences does not split into %d micro-batches",
                         in->global_batch, s->nmicro);
    for (int h = 0; h < in->nheld; h++) {
        int st = in->held[h].stage, r = s->place[st].nreplicas;
        if (in->global_batch / s->nmicro % r)
            return wp_errorf(err, "a micro-batch of %d sequences cannot be split evenly over the %d replicas of "
                                  "stage %d",
                             in->global_batch / s->nmicro, r, st);
    }
    return 0;
}

int wp_interp_init(struct wp_interp *in, const struct wp_schedule *s, int rank, const struct wp_kernel_ops *k,
                   const struct wp_comm_ops *cops, struct wp_comm *comm, int global_batch, float dloss,
                   wp_stage_make_fn make, void *make_ctx, struct wp_err *err)
{
    memset(in, 0, sizeof *in);
    in->s = s;
    in->rank = rank;
    in->k = k;
    in->cops = cops;
    in->comm = comm;
    in->global_batch = global_batch;
    in->dloss = dloss;
    in->mb_sequences = global_batch / s->nmicro;
    in->progress = (struct wp_progress){poll_requests, in};
    in->dilation = in->byte_scale = in->message_scale = 1;
    in->local_of_stage = malloc((size_t)s->nstages * sizeof *in->local_of_stage);
    in->held = calloc((size_t)s->nstages, sizeof *in->held);
    if (!in->local_of_stage || !in->held)
        return wp_errorf(err, "out of memory");
    for (int st = 0; st < s->nstages; st++) {
        in->local_of_stage[st] = -1;
        const struct wp_stage_place *pl = &s->place[st];
        for (int i = 0; i < pl->ncopies * pl->nreplicas; i++)
            if (pl->ranks[i] == rank && in->local_of_stage[st] < 0) {
                in->local_of_stage[st] = in->nheld;
                in->held[in->nheld++].stage = st;
            }
    }
    int *nslots = calloc((size_t)(in->nheld ? in->nheld : 1), sizeof *nslots);
    if (!nslots)
        return wp_errorf(err, "out of memory");
    int *group = malloc((size_t)s->nranks * sizeof *group);
    int rc = !group || check_slicing(in, s, err) || lay_out(in, nslots, err) ? -1 : 0;
    if (!group)
        wp_errorf(err, "out of memory");
    /* in ascending stage order: each stage's reducer opens its channel, collectively over its holders */
    for (int h = 0; h < in->nheld && rc == 0; h++) {
        struct wp_held_stage *hs = &in->held[h];
        int st = hs->stage;
        const struct wp_stage_place *pl = &s->place[st];
        struct wp_stage_request rq = {st, s->nstages, in->mb_sequences / pl->nreplicas, nslots[h],
                                      s->split_backward, pl->ncopies * pl->nreplicas > 1, &in->progress,
                                      &hs->reducer.hook};
        rc = make(make_ctx, &rq, &hs->exec, err);
        if (rc == 0) {
            in->tied |= hs->exec.ops->tied_grad != NULL;
            rc = make_slot_sends(hs, err);
        }
        if (rc == 0)
            rc = wp_grad_reducer_init(&hs->reducer, cops, comm, k, &in->progress, &hs->exec, group,
                                      wp_stage_holders_sorted(s, st, group), st, err);
    }
    free(group);
    free(nslots);
    return rc;
}

/* Do two schedules put every stage on the same ranks in the same roles? */
static int same_placement(const struct wp_schedule *a, const struct wp_schedule *b)
{
    if (a->nstages != b->nstages || a->nranks != b->nranks || a->split_backward != b->split_backward)
        return 0;
    for (int st = 0; st < a->nstages; st++) {
        const struct wp_stage_place *p = &a->place[st], *q = &b->place[st];
        if (p->ncopies != q->ncopies || p->nreplicas != q->nreplicas)
            return 0;
        for (int i = 0; i < p->ncopies * p->nreplicas; i++)
            if (p->ranks[i] != q->ranks[i])
                return 0;
    }
    return 1;
}

int wp_interp_reschedule(struct wp_interp *in, const struct wp_schedule *s, struct wp_err *err)
{
    if (!same_placement(in->s, s))
        return wp_errorf(err, "the new schedule places its stages otherwise; only k, the micro-batches and the "
                              "order may change between iterations");
    if (check_slicing(in, s, err))
        return -1;
    in->s = s;
    in->mb_sequences = in->global_batch / s->nmicro;
    int *nslots = calloc((size_t)(in->nheld ? in->nheld : 1), sizeof *nslots);
    if (!nslots)
        return wp_errorf(err, "out of memory");
    int rc = lay_out(in, nslots, err);
    for (int h = 0; h < in->nheld && rc == 0; h++) {
        struct wp_held_stage *hs = &in->held[h];
        if (!hs->exec.ops->reshape) {
            rc = wp_errorf(err, "the %s stages cannot change their micro-batches", hs->exec.ops->name);
            break;
        }
        int nseq = in->mb_sequences / s->place[hs->stage].nreplicas;
        rc = hs->exec.ops->reshape(hs->exec.impl, nseq, nslots[h], &hs->exec, err);
        if (rc == 0)
            rc = make_slot_sends(hs, err);
    }
    free(nslots);
    return rc;
}

void wp_interp_destroy(struct wp_interp *in)
{
    for (int h = 0; in->held && h < in->nheld; h++) {
        wp_grad_reducer_destroy(&in->held[h].reducer);
        free(in->held[h].slot_of_mb);
        free(in->held[h].slot_sends);
        if (in->held[h].exec.ops)
            in->held[h].exec.ops->destroy(in->held[h].exec.impl);
    }
    free(in->held);
    free(in->local_of_stage);
    free(in->reqs);
    free(in->msg_posted_s);
    free(in->timing.events);
    memset(in, 0, sizeof *in);
}

/* ---- execution ------------------------------------------------------------------------ */

/* The buffer and byte range a message of action a uses on this rank. */
static int message_buffer(struct wp_interp *in, const struct wp_action *a, char **buf, size_t *bytes)
{
    const struct wp_schedule *s = in->s;
    int st = a->stage, m = a->microbatch;
    struct wp_held_stage *h = &in->held[in->local_of_stage[st]];
    int other = a->op == WP_OP_SEND_ACT || a->op == WP_OP_RECV_GRAD ? st + 1 : st - 1;
    int j = wp_stage_replica_of(s, st, m, in->rank), i = wp_stage_replica_of(s, other, m, a->peer);
    if (j < 0 || i < 0)
        return -1;
    int b = in->mb_sequences, lo_self, hi_self, lo_other, hi_other;
    slice(b, j, s->place[st].nreplicas, &lo_self, &hi_self);
    slice(b, i, s->place[other].nreplicas, &lo_other, &hi_other);
    int lo = lo_self > lo_other ? lo_self : lo_other, hi = hi_self < hi_other ? hi_self : hi_other;
    enum wp_stage_buffer which = a->op == WP_OP_SEND_ACT   ? WP_STAGE_OUTPUT
                                 : a->op == WP_OP_RECV_ACT   ? WP_STAGE_INPUT
                                 : a->op == WP_OP_SEND_GRAD ? WP_STAGE_DINPUT
                                                             : WP_STAGE_DOUT;
    int input_side = which == WP_STAGE_INPUT || which == WP_STAGE_DINPUT;
    size_t seq_bytes = (input_side ? h->exec.in_seq_floats : h->exec.out_seq_floats) * sizeof(float);
    float *base = h->exec.ops->buffer(h->exec.impl, h->slot_of_mb[m], which);
    if (!base)
        return -1;
    *buf = (char *)base + (size_t)(lo - lo_self) * seq_bytes;
    *bytes = (size_t)(hi - lo) * seq_bytes;
    return 0;
}

/* Copies what a neighbouring stage on this rank made for (stage, mb): its
 * output into our input before F, its input gradient into our output
 * gradient before B, slice by overlapping slice. */
static void local_handoff(struct wp_interp *in, int stage, int mb, int backward)
{
    const struct wp_schedule *s = in->s;
    int other = backward ? stage + 1 : stage - 1;
    if (!local_neighbour(in, stage, mb, other))
        return;
    struct wp_held_stage *h = &in->held[in->local_of_stage[stage]], *o = &in->held[in->local_of_stage[other]];
    int j = wp_stage_replica_of(s, stage, mb, in->rank), i = wp_stage_replica_of(s, other, mb, in->rank);
    int b = in->mb_sequences, lo_self, hi_self, lo_other, hi_other;
    slice(b, j, s->place[stage].nreplicas, &lo_self, &hi_self);
    slice(b, i, s->place[other].nreplicas, &lo_other, &hi_other);
    int lo = lo_self > lo_other ? lo_self : lo_other, hi = hi_self < hi_other ? hi_self : hi_other;
    if (hi <= lo)
        return;
    /* the boundary between the two: our input (forward) or output (backward) */
    size_t seq = backward ? h->exec.out_seq_floats : h->exec.in_seq_floats;
    float *dst = h->exec.ops->buffer(h->exec.impl, h->slot_of_mb[mb], backward ? WP_STAGE_DOUT : WP_STAGE_INPUT);
    const float *src = o->exec.ops->buffer(o->exec.impl, o->slot_of_mb[mb], backward ? WP_STAGE_DINPUT : WP_STAGE_OUTPUT);
    if (!dst || !src)
        return;
    dst += (size_t)(lo - lo_self) * seq;
    src += (size_t)(lo - lo_other) * seq;
    in->k->zero(dst, (size_t)(hi - lo) * seq * sizeof(float));
    in->k->accumulate(dst, src, (size_t)(hi - lo) * seq);
}

/* Receive i of this rank's list completed now. */
static void received(struct wp_interp *in, int i)
{
    if (in->measure)
        in->msg_done_s[i] = wp_clock_now(in->clock);
}

static int post_recv(struct wp_interp *in, int i, struct wp_err *err)
{
    const struct wp_action *a = &in->s->lists[in->rank].actions[i];
    char *buf;
    size_t bytes;
    if (message_buffer(in, a, &buf, &bytes))
        return wp_errorf(err, "rank %d step %d: no buffer for the receive", in->rank, i);
    int boundary = a->op == WP_OP_RECV_ACT ? a->stage - 1 : a->stage + 1;
    if (in->measure) {
        in->msg_posted_s[i] = wp_clock_now(in->clock);
        in->msg_bytes[i] = (double)bytes * in->byte_scale * in->message_scale;
    }
    if (in->cops->irecv(in->comm, buf, bytes, a->peer, tag_of(a->op == WP_OP_RECV_GRAD, boundary), &in->reqs[i]))
        return wp_errorf(err, "rank %d: posting a receive from rank %d failed", in->rank, a->peer);
    return 0;
}

/* Waits for the sends that still read a slot's buffers before they change. */
static void settle_slot(struct wp_interp *in, struct wp_held_stage *h, int slot, int which)
{
    wp_comm_wait(in->cops, in->comm, &h->slot_sends[2 * slot + which]);
}

/* The thread's CPU seconds and the wall-clock seconds, both divided by
 * the run's dilation. */
static double thread_cpu_s(const struct wp_interp *in)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (ts.tv_sec + ts.tv_nsec * 1e-9) / in->dilation;
}

static double now_s(const struct wp_interp *in)
{
    return MPI_Wtime() / in->dilation;
}

static void record(struct wp_interp *in, int op, int stage, int mb, double start, double end, double cpu)
{
    struct wp_interp_timing *t = &in->timing;
    t->busy_s += end - start;
    if (in->measure)
        wp_measure_compute(in->measure, op, stage, end - start);
    if (!in->record_events)
        return;
    if (t->nevents == t->cap) {
        long cap = t->cap ? 2 * t->cap : 256;
        void *grown = realloc(t->events, (size_t)cap * sizeof *t->events);
        if (!grown)
            return;
        t->events = grown;
        t->cap = cap;
    }
    t->events[t->nevents].op = op;
    t->events[t->nevents].stage = stage;
    t->events[t->nevents].mb = mb;
    t->events[t->nevents].start = start;
    t->events[t->nevents].cpu = cpu;
    t->events[t->nevents++].end = end;
}

/* The tied wte: the first stage's copy (embedding) and the last stage's
 * copy (LM head) get the sum of both gradients. */
static int sync_tied_embedding(struct wp_interp *in, struct wp_err *err)
{
    const struct wp_schedule *s = in->s;
    int S = s->nstages;
    int *group = malloc((size_t)4 * s->nranks * sizeof *group);
    if (!group)
        return wp_errorf(err, "out of memory");
    int n0 = wp_stage_holders_sorted(s, 0, group), n1 = wp_stage_holders_sorted(s, S - 1, group + n0), n = 0;
    for (int i = 0; i < n0 + n1; i++) { /* sorted union */
        int r = group[i], k, dup = 0;
        for (k = 0; k < n; k++)
            dup |= group[2 * s->nranks + k] == r;
        if (!dup)
            group[2 * s->nranks + n++] = r;
    }
    int *members = group + 2 * s->nranks;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && members[b - 1] > members[b]; b--) {
            int t = members[b];
            members[b] = members[b - 1];
            members[b - 1] = t;
        }
    /* only holders of the first or the last stage come here */
    size_t n_floats = 0;
    for (int h = 0; h < in->nheld; h++)
        if (in->held[h].exec.tied_floats)
            n_floats = in->held[h].exec.tied_floats;
    float *sum = in->k->alloc(n_floats * sizeof(float));
    if (!sum) {
        free(group);
        return wp_errorf(err, "out of memory");
    }
    /* E (the embedding's part, from one holder of the first stage) + H (the
     * head's part, from one holder of the last), every other rank adding 0 */
    int leaders[2] = {s->place[0].ranks[0], s->place[S - 1].ranks[0]};
    int ends[2] = {0, S - 1};
    for (int e = 0; e < 2; e++) {
        int h = in->local_of_stage[ends[e]];
        if (h >= 0 && leaders[e] == in->rank)
            in->k->accumulate(sum, in->held[h].exec.ops->tied_grad(in->held[h].exec.impl, e), n_floats);
    }
    int rc = in->cops->allreduce_sum(in->comm, sum, n_floats, members, n);
    if (n > 1) {
        in->bytes.tied_sums++;
        in->bytes.tied_sum_bytes += (double)n_floats * sizeof(float);
    }
    for (int e = 0; rc == 0 && e < 2; e++) {
        int h = in->local_of_stage[ends[e]];
        if (h >= 0) {
            float *g = in->held[h].exec.ops->tied_grad(in->held[h].exec.impl, e);
            in->k->zero(g, n_floats * sizeof(float));
            in->k->accumulate(g, sum, n_floats);
        }
    }
    in->k->release(sum);
    free(group);
    return rc ? wp_errorf(err, "rank %d: allreduce of the tied embedding failed", in->rank) : 0;
}

void wp_interp_set_scaling(struct wp_interp *in, double dilation, double byte_scale)
{
    in->dilation = dilation >= 1 ? dilation : 1;
    in->byte_scale = byte_scale >= 1 ? byte_scale : 1;
}

void wp_interp_set_message_scale(struct wp_interp *in, double scale)
{
    in->message_scale = scale > 0 ? scale : 1;
}

void wp_interp_set_grad_overlap(struct wp_interp *in, int overlap, double bucket_bytes)
{
    for (int h = 0; h < in->nheld; h++)
        wp_grad_reducer_set(&in->held[h].reducer, overlap, bucket_bytes);
}

int wp_interp_step(struct wp_interp *in, long step, double *loss_sum, struct wp_err *err)
{
    const struct wp_schedule *s = in->s;
    const struct wp_action_list *l = &s->lists[in->rank];
    const struct wp_kernel_ops *k = in->k;
    float dloss = in->dloss;
    for (int h = 0; h < in->nheld; h++)
        in->held[h].exec.ops->zero_grads(in->held[h].exec.impl);
    in->timing.busy_s = 0;
    in->timing.nevents = 0;
    memset(&in->bytes, 0, sizeof in->bytes);
    *loss_sum = 0;
    double t0 = now_s(in);
    in->timing.start_s = in->clock ? wp_clock_now(in->clock) : 0;
    int posted = -1, tied_done = 0, rc = 0;
    for (int i = 0; i < l->count && rc == 0; i++) {
        const struct wp_action *a = &l->actions[i];
        int h = in->local_of_stage[a->stage];
        struct wp_held_stage *hs = h >= 0 ? &in->held[h] : NULL;
        if (wp_op_is_compute(a->op)) {
            /* prefetch: post every receive up to the next compute */
            int upto = next_compute(l, i);
            for (int j = posted + 1; j < upto && rc == 0; j++)
                if (wp_op_is_recv(l->actions[j].op))
                    rc = post_recv(in, j, err);
            if (upto - 1 > posted)
                posted = upto - 1;
        }
        if (rc)
            break;
        int slot = hs && a->microbatch >= 0 ? hs->slot_of_mb[a->microbatch] : -1;
        int final_grads = hs && i == hs->final_grad_action; /* its gradients are final in this pass */
        if (final_grads)
            wp_grad_reducer_pass_begin(&hs->reducer);
        double start = now_s(in) - t0, cpu0 = thread_cpu_s(in);
        switch (a->op) {
        case WP_OP_RECV_ACT:
        case WP_OP_RECV_GRAD:
            if (i > posted && (rc = post_recv(in, i, err)) != 0)
                break;
            if (i > posted)
                posted = i;
            if (in->reqs[i].impl) { /* else a poll saw it complete */
                wp_comm_wait(in->cops, in->comm, &in->reqs[i]);
                received(in, i);
            }
            break;
        case WP_OP_SEND_ACT:
        case WP_OP_SEND_GRAD: {
            char *buf;
            size_t bytes;
            int grad = a->op == WP_OP_SEND_GRAD;
            if (message_buffer(in, a, &buf, &bytes)) {
                rc = wp_errorf(err, "rank %d step %d: no buffer for the send", in->rank, i);
                break;
            }
            struct wp_comm_request *r = &hs->slot_sends[2 * slot + grad];
            settle_slot(in, hs, slot, grad); /* one pending send per slot buffer and kind */
            k->synchronize();
            /* stamped before: an eager send over TCP may return only once
             * much of the message is on its way */
            if (in->measure)
                in->msg_posted_s[i] = wp_clock_now(in->clock);
            if (in->cops->isend(in->comm, buf, bytes, a->peer, tag_of(grad, a->stage), r))
                rc = wp_errorf(err, "rank %d: send to rank %d failed", in->rank, a->peer);
            in->bytes.sends++;
            in->bytes.send_bytes += (double)bytes * in->byte_scale * in->message_scale;
            break;
        }
        case WP_OP_F:
            settle_slot(in, hs, slot, 0);
            local_handoff(in, a->stage, a->microbatch, 0);
            {
                int j = wp_stage_replica_of(s, a->stage, a->microbatch, in->rank), lo, hi;
                slice(in->mb_sequences, j, s->place[a->stage].nreplicas, &lo, &hi);
                struct wp_stage_slice sl = {step, a->microbatch, a->microbatch * in->mb_sequences + lo, hi - lo};
                *loss_sum += hs->exec.ops->forward(hs->exec.impl, slot, &sl);
            }
            record(in, a->op, a->stage, a->microbatch, start, now_s(in) - t0, thread_cpu_s(in) - cpu0);
            break;
        case WP_OP_B:
            settle_slot(in, hs, slot, 1);
            local_handoff(in, a->stage, a->microbatch, 1);
            hs->exec.ops->backward(hs->exec.impl, slot, dloss);
            record(in, a->op, a->stage, a->microbatch, start, now_s(in) - t0, thread_cpu_s(in) - cpu0);
            break;
        case WP_OP_W:
            hs->exec.ops->backward_weights(hs->exec.impl, slot);
            record(in, a->op, a->stage, a->microbatch, start, now_s(in) - t0, thread_cpu_s(in) - cpu0);
            break;
        case WP_OP_ALLREDUCE:
            rc = wp_grad_reducer_finish(&hs->reducer, err);
            if (hs->reducer.active) { /* the stage's gradient summed once, whatever its buckets */
                in->bytes.grad_sums++;
                in->bytes.grad_sum_bytes += (double)hs->exec.grad_floats * sizeof(float) * in->byte_scale;
            }
            record(in, a->op, a->stage, -1, start, now_s(in) - t0, thread_cpu_s(in) - cpu0);
            break;
        case WP_OP_STEP:
            if (s->nstages == 1 && hs->exec.ops->tie_local)
                hs->exec.ops->tie_local(hs->exec.impl);
            else if (in->tied && !tied_done && (a->stage == 0 || a->stage == s->nstages - 1)) {
                rc = sync_tied_embedding(in, err);
                tied_done = 1;
            }
            if (rc == 0)
                hs->exec.ops->optimizer_step(hs->exec.impl, (int)step + 1);
            break;
        default:
            rc = wp_errorf(err, "rank %d step %d: unknown action", in->rank, i);
        }
        if (final_grads)
            wp_grad_reducer_pass_end(&hs->reducer);
    }
    for (int h = 0; h < in->nheld; h++)
        for (int sl = 0; sl < 2 * in->held[h].exec.nslots; sl++)
            wp_comm_wait(in->cops, in->comm, &in->held[h].slot_sends[sl]);
    k->synchronize();
    in->timing.iter_s = now_s(in) - t0;
    return rc;
}
