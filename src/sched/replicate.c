/* Data-parallel copies of a schedule (replicate.h): placement with D times
 * the replicas, each rank's list copied to its D replicas with peers moved
 * replica to replica, and the lists' ends, weights and bounds made the way
 * the generators make them (emit.c, place.c), not written again here. */
#include "sched/replicate.h"

#include <stdlib.h>
#include <string.h>

#include "sched/emit.h"
#include "sched/place.h"

/* ranks[copy * r D + j r + i] = one's ranks[copy * r + i] * D + j: slice
 * j r + i of D r is slice i of r within the j-th D-th of the micro-batch,
 * so that replica j's messages go to replica j (wp_slices_overlap). */
static int place_copies(const struct wp_schedule *one, int D, struct wp_schedule *out, struct wp_err *err)
{
    for (int st = 0; st < one->nstages; st++) {
        const struct wp_stage_place *pl = &one->place[st];
        int r = pl->nreplicas;
        if (wp_sched_set_place(out, st, pl->ncopies, r * D, err))
            return -1;
        for (int c = 0; c < pl->ncopies; c++)
            for (int j = 0; j < D; j++)
                for (int i = 0; i < r; i++)
                    out->place[st].ranks[c * r * D + j * r + i] = pl->ranks[c * r + i] * D + j;
    }
    memcpy(out->mb_copy, one->mb_copy, (size_t)one->nmicro * sizeof *out->mb_copy);
    wp_sched_set_weights(out);
    return 0;
}

static int is_list_end(int op)
{
    return op == WP_OP_ALLREDUCE || op == WP_OP_STEP;
}

/* Every list but its ALLREDUCEs and STEPs, on each of the rank's replicas
 * with its peers the same replica of theirs; room for the ends to come (at
 * most an ALLREDUCE for each STEP, one STEP per stage the rank holds). */
static int copy_lists(const struct wp_schedule *one, int D, struct wp_schedule *out, struct wp_err *err)
{
    long *capacity = malloc((size_t)out->nranks * sizeof *capacity);
    if (!capacity)
        return wp_errorf(err, "out of memory");
    for (int r = 0; r < one->nranks; r++) {
        const struct wp_action_list *l = &one->lists[r];
        long steps = 0;
        for (int i = 0; i < l->count; i++)
            steps += l->actions[i].op == WP_OP_STEP;
        for (int j = 0; j < D; j++)
            capacity[r * D + j] = l->count + steps;
    }
    int rc = wp_schedule_reserve(out, capacity, err);
    free(capacity);
    for (int to = 0; to < out->nranks && rc == 0; to++) {
        const struct wp_action_list *l = &one->lists[to / D];
        int j = to % D;
        for (int i = 0; i < l->count && rc == 0; i++) {
            const struct wp_action *a = &l->actions[i];
            if (!is_list_end((int)a->op))
                rc = wp_schedule_push(out, to, (int)a->op, (int)a->stage, (int)a->microbatch,
                                      a->peer >= 0 ? (int)a->peer * D + j : -1, err);
        }
    }
    return rc;
}

int wp_schedule_replicate(const struct wp_schedule *one, int copies, struct wp_schedule *out, struct wp_err *err)
{
    if (copies < 1)
        return wp_errorf(err, "data-parallel copies must be >= 1 (got %d)", copies);
    if ((long)one->nranks * copies > WP_ACTION_FIELD_MAX)
        return wp_errorf(err, "%d data-parallel copies of %d ranks make %ld ranks; at most %d", copies, one->nranks,
                         (long)one->nranks * copies, WP_ACTION_FIELD_MAX);
    struct wp_sched_params p = one->params;
    p.ranks = one->nranks * copies;
    p.data_parallel = (one->params.data_parallel > 1 ? one->params.data_parallel : 1) * copies;
    if (wp_schedule_init(out, &p, one->nstages, err))
        return -1;
    out->split_backward = one->split_backward;
    int rc = place_copies(one, copies, out, err);
    if (rc == 0)
        rc = copy_lists(one, copies, out, err);
    if (rc == 0)
        rc = wp_sched_finish_lists(out, err);
    if (rc == 0)
        for (int r = 0; r < out->nranks; r++)
            out->activation_bound[r] = one->activation_bound[r / copies];
    if (rc)
        wp_schedule_destroy(out);
    return rc;
}
