/* Schedule validation: completeness, dependencies, matching, deadlock
 * freedom and the activation bound, all from one lock-step walk. */
#include "sched/validate.h"

#include <stdlib.h>
#include <string.h>

#include "sched/generate.h"
#include "sched/walk.h"

/* Per slice (stage, micro-batch, replica) bookkeeping. */
struct slice_state {
    int8_t f, b, w;          /* times run */
    int16_t acts_in, grads_in;
};

struct check {
    const struct wp_schedule *s;
    long *slice_offset;       /* per stage: index of (stage, 0, 0) */
    struct slice_state *slices;
    int *backward_left;       /* per (stage, holder slot): passes still to run */
    int8_t *reduced;          /* per (stage, holder slot): ALLREDUCE done */
    double *held, *peak;      /* per rank */
};

static int slot_of(const struct wp_schedule *s, int stage, int rank)
{
    const struct wp_stage_place *pl = &s->place[stage];
    for (int i = 0; i < pl->ncopies * pl->nreplicas; i++)
        if (pl->ranks[i] == rank)
            return i;
    return -1;
}

static struct slice_state *slice(struct check *c, int stage, int mb, int j)
{
    return &c->slices[c->slice_offset[stage] + (long)mb * c->s->place[stage].nreplicas + j];
}

/* Counts a locally produced input for the overlapping slices of stage
 * `other` that live on the same rank. */
static void local_handoff(struct check *c, int rank, int mb, int from_stage, int j, int other, int acts)
{
    const struct wp_schedule *s = c->s;
    if (other < 0 || other >= s->nstages)
        return;
    int r_from = s->place[from_stage].nreplicas, r_other = s->place[other].nreplicas;
    for (int i = 0; i < r_other; i++)
        if (wp_slices_overlap(j, r_from, i, r_other) && wp_stage_rank(s, other, mb, i) == rank) {
            if (acts)
                slice(c, other, mb, i)->acts_in++;
            else
                slice(c, other, mb, i)->grads_in++;
        }
}

static int overlapping(const struct wp_schedule *s, int stage, int j, int other)
{
    int n = 0;
    if (other < 0 || other >= s->nstages)
        return 0;
    for (int i = 0; i < s->place[other].nreplicas; i++)
        n += wp_slices_overlap(i, s->place[other].nreplicas, j, s->place[stage].nreplicas);
    return n;
}

static int fail(struct wp_err *err, int rank, int step, const struct wp_action *a, const char *why)
{
    char what[160];
    wp_action_describe(a, what, sizeof what);
    return wp_errorf(err, "rank %d step %d: %s: %s", rank, step, what, why);
}

static int check_run(void *ctx, int rank, int step, const struct wp_action *a, struct wp_err *err)
{
    struct check *c = ctx;
    const struct wp_schedule *s = c->s;
    int st = a->stage, m = a->microbatch;
    int S = s->nstages;
    if (st < 0 || st >= S || (a->op != WP_OP_STEP && (m < 0 || m >= s->nmicro)))
        return fail(err, rank, step, a, "stage or micro-batch out of range");
    if (a->op == WP_OP_STEP) {
        int slot = slot_of(s, st, rank);
        if (slot < 0)
            return fail(err, rank, step, a, "this rank does not hold the stage");
        if (c->backward_left[st * 2 * s->nranks + slot] > 0)
            return fail(err, rank, step, a, "runs before every backward of the stage on this rank");
        const struct wp_stage_place *pl = &s->place[st];
        if (pl->ncopies * pl->nreplicas > 1 && !c->reduced[st * 2 * s->nranks + slot])
            return fail(err, rank, step, a, "runs before the stage's gradients are allreduced");
        return 0;
    }
    int j = wp_stage_replica_of(s, st, m, rank);
    if (j < 0)
        return fail(err, rank, step, a, "this rank does not hold that stage for that micro-batch");
    struct slice_state *sl = slice(c, st, m, j);
    double weight = wp_stage_weight(s, st);
    switch (a->op) {
    case WP_OP_F:
        if (sl->f++)
            return fail(err, rank, step, a, "runs twice");
        if (sl->acts_in != overlapping(s, st, j, st - 1))
            return fail(err, rank, step, a, "runs before its input activation arrived");
        c->held[rank] += weight;
        if (c->held[rank] > c->peak[rank])
            c->peak[rank] = c->held[rank];
        local_handoff(c, rank, m, st, j, st + 1, 1);
        return 0;
    case WP_OP_B:
        if (sl->b++)
            return fail(err, rank, step, a, "runs twice");
        if (!sl->f)
            return fail(err, rank, step, a, "runs before its forward");
        if (sl->grads_in != overlapping(s, st, j, st + 1))
            return fail(err, rank, step, a, "runs before its output gradient arrived");
        if (wp_sched_frees_op(s) == WP_OP_B)
            c->held[rank] -= weight;
        if (!s->split_backward)
            c->backward_left[st * 2 * s->nranks + slot_of(s, st, rank)]--;
        local_handoff(c, rank, m, st, j, st - 1, 0);
        return 0;
    case WP_OP_W:
        if (!s->split_backward)
            return fail(err, rank, step, a, "W in a schedule whose backward is not split");
        if (sl->w++)
            return fail(err, rank, step, a, "runs twice");
        if (!sl->b)
            return fail(err, rank, step, a, "runs before its B");
        c->held[rank] -= weight; /* W frees what a split backward held */
        c->backward_left[st * 2 * s->nranks + slot_of(s, st, rank)]--;
        return 0;
    case WP_OP_SEND_ACT:
        if (!sl->f)
            return fail(err, rank, step, a, "sends an activation not yet computed");
        if (st == S - 1 || wp_stage_replica_of(s, st + 1, m, a->peer) < 0)
            return fail(err, rank, step, a, "the peer does not run the next stage of this micro-batch");
        return 0;
    case WP_OP_SEND_GRAD:
        if (!sl->b)
            return fail(err, rank, step, a, "sends a gradient not yet computed");
        if (st == 0 || wp_stage_replica_of(s, st - 1, m, a->peer) < 0)
            return fail(err, rank, step, a, "the peer does not run the previous stage of this micro-batch");
        return 0;
    case WP_OP_RECV_ACT:
        sl->acts_in++;
        return 0;
    case WP_OP_RECV_GRAD:
        sl->grads_in++;
        return 0;
    default:
        return fail(err, rank, step, a, "unknown operation");
    }
}

static int check_collective(void *ctx, int stage, int n, const int *ranks, const int *steps, struct wp_err *err)
{
    struct check *c = ctx;
    const struct wp_schedule *s = c->s;
    for (int i = 0; i < n; i++) {
        int slot = slot_of(s, stage, ranks[i]);
        if (c->backward_left[stage * 2 * s->nranks + slot] > 0)
            return fail(err, ranks[i], steps[i], &s->lists[ranks[i]].actions[steps[i]],
                        "allreduces before every backward of the stage on this rank");
        c->reduced[stage * 2 * s->nranks + slot] = 1;
    }
    return 0;
}

void wp_validation_destroy(struct wp_validation *v)
{
    free(v->peak_activations);
    memset(v, 0, sizeof *v);
}

int wp_schedule_validate(const struct wp_schedule *s, struct wp_validation *v, struct wp_err *err)
{
    memset(v, 0, sizeof *v);
    v->nranks = s->nranks;
    struct check c;
    memset(&c, 0, sizeof c);
    c.s = s;
    int S = s->nstages, P = s->nranks;
    c.slice_offset = malloc((size_t)(S + 1) * sizeof *c.slice_offset);
    long nslices = 0;
    for (int st = 0; c.slice_offset && st < S; st++) {
        c.slice_offset[st] = nslices;
        nslices += (long)s->nmicro * s->place[st].nreplicas;
    }
    c.slices = calloc((size_t)(nslices ? nslices : 1), sizeof *c.slices);
    c.backward_left = calloc((size_t)S * 2 * P, sizeof *c.backward_left);
    c.reduced = calloc((size_t)S * 2 * P, sizeof *c.reduced);
    c.held = calloc((size_t)P, sizeof *c.held);
    c.peak = calloc((size_t)P, sizeof *c.peak);
    struct wp_msg_match mm;
    memset(&mm, 0, sizeof mm);
    int rc = c.slice_offset && c.slices && c.backward_left && c.reduced && c.held && c.peak
                 ? 0 : wp_errorf(err, "out of memory");
    for (int st = 0; rc == 0 && st < S; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        for (int slot = 0; slot < pl->ncopies * pl->nreplicas; slot++) {
            int copy = slot / pl->nreplicas, n = 0;
            for (int m = 0; m < s->nmicro; m++)
                n += s->mb_copy[m] == copy;
            c.backward_left[st * 2 * P + slot] = n;
        }
    }
    if (rc == 0)
        rc = wp_match_messages(s, &mm, err);
    if (rc == 0) {
        struct wp_walk_visitor visitor = {&c, check_run, check_collective};
        rc = wp_walk(s, &mm, &visitor, err);
    }
    /* Everything ran exactly once? */
    for (int st = 0; rc == 0 && st < S; st++)
        for (int m = 0; rc == 0 && m < s->nmicro; m++)
            for (int j = 0; rc == 0 && j < s->place[st].nreplicas; j++) {
                struct slice_state *sl = slice(&c, st, m, j);
                const char *missing = !sl->f ? "F" : !sl->b ? "B" : s->split_backward && !sl->w ? "W" : NULL;
                if (missing)
                    rc = wp_errorf(err, "rank %d never runs %s of stage %d micro-batch %d", wp_stage_rank(s, st, m, j),
                                   missing, st, m);
            }
    for (int r = 0; rc == 0 && r < P; r++) {
        int steps = 0;
        for (int i = 0; i < s->lists[r].count; i++)
            steps += s->lists[r].actions[i].op == WP_OP_STEP;
        if (steps != wp_schedule_stages_per_rank(s, r))
            rc = wp_errorf(err, "rank %d has %d STEP actions for %d stages", r, steps, wp_schedule_stages_per_rank(s, r));
    }
    if (rc == 0) {
        v->peak_activations = c.peak;
        c.peak = NULL;
        for (int r = 0; r < P; r++) {
            if (v->peak_activations[r] > v->peak_max)
                v->peak_max = v->peak_activations[r];
            if (v->peak_activations[r] > s->activation_bound[r] + 1e-9) {
                rc = wp_errorf(err, "rank %d holds %.4g activations at its peak, above the bound %.4g of %s", r,
                               v->peak_activations[r], s->activation_bound[r], wp_sched_kind_name(s->params.kind));
                break;
            }
        }
        v->actions = mm.total;
        for (long g = 0; g < mm.total; g++)
            v->messages += mm.partner[g] >= 0;
        v->messages /= 2;
    }
    wp_match_destroy(&mm);
    free(c.slice_offset);
    free(c.slices);
    free(c.backward_left);
    free(c.reduced);
    free(c.held);
    free(c.peak);
    if (rc)
        wp_validation_destroy(v);
    return rc;
}
