/* From compute order to action list: every activation or gradient that
 * crosses ranks gets a receive just before the compute that needs it and a
 * send just after the compute that makes it (the runtime posts receives
 * ahead of time, so the place of a receive says when the data is needed,
 * not when the transfer starts). Between stages of different replication
 * each slice goes to every slice it overlaps (DAPPLE's split and concat).
 * At the end come ALLREDUCE for each stage held by several ranks and STEP
 * for each stage, in ascending stage order on every rank. Generators emit
 * each compute with its messages as they order it (the lists are reserved
 * up front); compute-only lists read from a file are expanded afterwards,
 * and an order given pass by pass (the order search's) is emitted as it is. */
#include "sched/emit.h"

#include <stdlib.h>
#include <string.h>

int wp_sched_reserve_lists(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, S = s->nstages, passes = s->split_backward ? 3 : 2, ncopies = 1;
    for (int st = 0; st < S; st++)
        ncopies = s->place[st].ncopies > ncopies ? s->place[st].ncopies : ncopies;
    long *capacity = calloc((size_t)P, sizeof *capacity);
    int *per_copy = calloc((size_t)ncopies, sizeof *per_copy); /* micro-batches of each copy */
    if (!capacity || !per_copy) {
        free(capacity);
        free(per_copy);
        return wp_errorf(err, "out of memory");
    }
    for (int m = 0; m < s->nmicro; m++)
        if (s->mb_copy[m] >= 0 && s->mb_copy[m] < ncopies)
            per_copy[s->mb_copy[m]]++;
    for (int st = 0; st < S; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        for (int slot = 0; slot < pl->ncopies * pl->nreplicas; slot++) {
            int j = slot % pl->nreplicas, copy = slot / pl->nreplicas;
            long messages = wp_slices_overlapping(s, st, j, st - 1) + wp_slices_overlapping(s, st, j, st + 1);
            /* F and B each with their messages (some may stay on the rank),
             * W alone; an ALLREDUCE and a STEP */
            capacity[pl->ranks[slot]] += (long)per_copy[copy] * (passes + 2 * messages) + 2;
        }
    }
    int rc = wp_schedule_reserve(s, capacity, err);
    free(capacity);
    free(per_copy);
    return rc;
}

/* Pushes one message action per remote overlapping slice of stage other
 * (slice j of stage on rank, micro-batch mb of copy). */
static int push_exchange(struct wp_schedule *s, int rank, int op, int stage, int mb, int copy, int j, int other,
                         struct wp_err *err)
{
    const struct wp_stage_place *self = &s->place[stage], *them = &s->place[other];
    for (int i = 0; i < them->nreplicas; i++) {
        if (!wp_slices_overlap(i, them->nreplicas, j, self->nreplicas))
            continue;
        int peer = them->ranks[copy * them->nreplicas + i];
        if (peer != rank && wp_schedule_push(s, rank, op, stage, mb, peer, err))
            return -1;
    }
    return 0;
}

/* Where both stages have one slice (the common case), the rank of stage
 * other's: -1 when there is no message (past either end, or on the same
 * rank); -2 when either stage is replicated (push_exchange's case). */
static inline int single_peer(const struct wp_schedule *s, int rank, int copy, int stage, int other)
{
    if (other < 0 || other >= s->nstages)
        return -1;
    const struct wp_stage_place *them = &s->place[other];
    if (s->place[stage].nreplicas != 1 || them->nreplicas != 1)
        return -2;
    return them->ranks[copy] != rank ? them->ranks[copy] : -1;
}

int wp_sched_emit(struct wp_schedule *s, int rank, int op, int stage, int mb, struct wp_err *err)
{
    const struct wp_stage_place *pl = &s->place[stage];
    int copy = s->mb_copy[mb], j = 0;
    while (j < pl->nreplicas && pl->ranks[copy * pl->nreplicas + j] != rank)
        j++;
    if (j == pl->nreplicas)
        return wp_errorf(err, "generator placed %s of stage %d on rank %d, which does not hold it", wp_op_name(op),
                         stage, rank);
    if (op != WP_OP_F && op != WP_OP_B)
        return wp_schedule_push(s, rank, op, stage, mb, -1, err);
    /* F receives from the stage before and sends to the one after, B the other way round */
    int from = op == WP_OP_F ? stage - 1 : stage + 1, to = op == WP_OP_F ? stage + 1 : stage - 1;
    int recv = op == WP_OP_F ? WP_OP_RECV_ACT : WP_OP_RECV_GRAD;
    int send = op == WP_OP_F ? WP_OP_SEND_ACT : WP_OP_SEND_GRAD;
    int before = single_peer(s, rank, copy, stage, from), after = single_peer(s, rank, copy, stage, to);
    struct wp_action_list *l = &s->lists[rank];
    if (before != -2 && after != -2 && l->count <= l->capacity - 3) { /* all three at once */
        struct wp_action *out = l->actions + l->count;
        if (before >= 0)
            *out++ = (struct wp_action){(uint64_t)recv, stage, mb, before};
        *out++ = (struct wp_action){(uint64_t)op, stage, mb, -1};
        if (after >= 0)
            *out++ = (struct wp_action){(uint64_t)send, stage, mb, after};
        l->count = (int)(out - l->actions);
        return 0;
    }
    return (from >= 0 && from < s->nstages && push_exchange(s, rank, recv, stage, mb, copy, j, from, err)) ||
                   wp_schedule_push(s, rank, op, stage, mb, -1, err) ||
                   (to >= 0 && to < s->nstages && push_exchange(s, rank, send, stage, mb, copy, j, to, err))
               ? -1 : 0;
}

int wp_sched_finish_lists(struct wp_schedule *s, struct wp_err *err)
{
    /* stage by stage, each rank that holds it once: every rank gets its
     * ALLREDUCEs, then its STEPs, each in ascending stage order */
    for (int pass = 0; pass < 2; pass++) {
        for (int st = 0; st < s->nstages; st++) {
            const struct wp_stage_place *pl = &s->place[st];
            int holders = pl->ncopies * pl->nreplicas;
            if (pass == 0 && holders == 1)
                continue;
            for (int i = 0; i < holders; i++) {
                int seen = 0;
                for (int k = 0; k < i && !seen; k++)
                    seen = pl->ranks[k] == pl->ranks[i];
                if (!seen && wp_schedule_push(s, pl->ranks[i], pass == 0 ? WP_OP_ALLREDUCE : WP_OP_STEP, st, -1,
                                              -1, err))
                    return -1;
            }
        }
    }
    return 0;
}

int wp_sched_add_comm(struct wp_schedule *s, struct wp_err *err)
{
    struct wp_action_list *compute = s->lists;
    s->lists = calloc((size_t)s->nranks, sizeof *s->lists);
    if (!s->lists) {
        s->lists = compute;
        return wp_errorf(err, "out of memory");
    }
    int rc = 0;
    for (int r = 0; r < s->nranks && rc == 0; r++)
        for (int i = 0; i < compute[r].count && rc == 0; i++) {
            const struct wp_action *a = &compute[r].actions[i];
            rc = wp_sched_emit(s, r, a->op, a->stage, a->microbatch, err);
        }
    if (rc == 0)
        rc = wp_sched_finish_lists(s, err);
    for (int r = 0; r < s->nranks; r++)
        if (!compute[r].in_store)
            free(compute[r].actions);
    free(compute);
    return rc;
}

int wp_sched_emit_given(struct wp_schedule *s, const struct wp_given_order *given, struct wp_err *err)
{
    int M = s->nmicro;
    for (int r = 0; r < s->nranks; r++)
        for (int i = 0; i < given->count[r]; i++) {
            int code = given->passes[r][i];
            if (wp_sched_emit(s, r, code % 2 ? WP_OP_B : WP_OP_F, code / 2 / M, code / 2 % M, err))
                return -1;
        }
    return 0;
}
