/* From compute order to action list: every activation or gradient that
 * crosses ranks gets a receive just before the compute that needs it and a
 * send just after the compute that makes it (the runtime posts receives
 * ahead of time, so the place of a receive says when the data is needed,
 * not when the transfer starts). Between stages of different replication
 * each slice goes to every slice it overlaps (DAPPLE's split and concat).
 * At the end come ALLREDUCE for each stage held by several ranks and STEP
 * for each stage, in ascending stage order on every rank. */
#include "sched/generate.h"

#include <stdlib.h>
#include <string.h>

/* Pushes one message action per remote overlapping slice of stage other. */
static int push_exchange(struct wp_schedule *s, int rank, int op, int stage, int mb, int j,
                         int other, struct wp_err *err)
{
    int r_self = s->place[stage].nreplicas, r_other = s->place[other].nreplicas;
    for (int i = 0; i < r_other; i++) {
        if (!wp_slices_overlap(i, r_other, j, r_self))
            continue;
        int peer = wp_stage_rank(s, other, mb, i);
        if (peer != rank && wp_schedule_push(s, rank, op, stage, mb, peer, err))
            return -1;
    }
    return 0;
}

int wp_sched_add_comm(struct wp_schedule *s, struct wp_err *err)
{
    int S = s->nstages;
    struct wp_action_list *compute = s->lists;
    s->lists = calloc((size_t)s->nranks, sizeof *s->lists);
    if (!s->lists) {
        s->lists = compute;
        return wp_errorf(err, "out of memory");
    }
    int rc = 0;
    for (int r = 0; r < s->nranks && rc == 0; r++) {
        for (int i = 0; i < compute[r].count && rc == 0; i++) {
            const struct wp_action *a = &compute[r].actions[i];
            int st = a->stage, m = a->microbatch;
            int j = wp_stage_replica_of(s, st, m, r);
            if (j < 0) {
                rc = wp_errorf(err, "generator placed %s of stage %d on rank %d, which does not hold it",
                               wp_op_name(a->op), st, r);
                break;
            }
            if (a->op == WP_OP_F) {
                rc = (st > 0 && push_exchange(s, r, WP_OP_RECV_ACT, st, m, j, st - 1, err)) ||
                     wp_schedule_push(s, r, WP_OP_F, st, m, -1, err) ||
                     (st < S - 1 && push_exchange(s, r, WP_OP_SEND_ACT, st, m, j, st + 1, err));
            } else if (a->op == WP_OP_B) {
                rc = (st < S - 1 && push_exchange(s, r, WP_OP_RECV_GRAD, st, m, j, st + 1, err)) ||
                     wp_schedule_push(s, r, WP_OP_B, st, m, -1, err) ||
                     (st > 0 && push_exchange(s, r, WP_OP_SEND_GRAD, st, m, j, st - 1, err));
            } else {
                rc = wp_schedule_push(s, r, a->op, st, m, -1, err);
            }
            rc = rc ? -1 : 0;
        }
        for (int pass = 0; pass < 2 && rc == 0; pass++) {
            for (int st = 0; st < S && rc == 0; st++) {
                const struct wp_stage_place *pl = &s->place[st];
                int holders = pl->ncopies * pl->nreplicas, here = 0;
                for (int i = 0; i < holders; i++)
                    here |= pl->ranks[i] == r;
                if (!here)
                    continue;
                if (pass == 0 && holders > 1)
                    rc = wp_schedule_push(s, r, WP_OP_ALLREDUCE, st, -1, -1, err);
                else if (pass == 1)
                    rc = wp_schedule_push(s, r, WP_OP_STEP, st, -1, -1, err);
            }
        }
    }
    for (int r = 0; r < s->nranks; r++)
        free(compute[r].actions);
    free(compute);
    return rc;
}
