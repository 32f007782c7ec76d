/* Data-parallel copies of every schedule kind (sched/replicate.h and
 * --data-parallel in the generator): for each kind at several P, D and M the
 * copies validate; rank r's replica j is rank r D + j and runs rank r's
 * list with every peer moved to replica j; each stage's holders are its
 * one-pipeline holders' replicas; the simulated makespan and bubble at
 * tc = 0 are the one pipeline's (stage weights say a replica's slice of
 * 1/D of a micro-batch through D times the ranks' share of the model costs
 * what a whole micro-batch did on P/D ranks) and so are each replica's
 * peak activations and bound; gpipe, 1f1b and kfkb are exactly
 * --replicas D,D,.. (lists, placement, weights, bounds), which run
 * --stages relies on; one copy is the schedule itself; DAPPLE's uneven
 * replicas copied validate; and what does not divide is refused. */
#include <stdlib.h>

#include "sched/generate.h"
#include "sched/replicate.h"
#include "sched/simulate.h"
#include "sched/validate.h"
#include "sched_compare.h"
#include "sched_params.h"
#include "tap.h"

/* The kind with the options its tests use elsewhere (k, waves, chunks), on
 * P ranks in D copies, costs tf = tb = tw = 1 (a backward not split is 2). */
static struct wp_sched_params kind_params(enum wp_sched_kind kind, int P, int D, int M)
{
    struct wp_sched_params p = params(kind, P, M);
    p.data_parallel = D;
    p.k = 2 <= M ? 2 : 1;
    p.waves = 2;
    p.chunks = 2;
    p.tf = p.tb = p.tw = 1;
    return p;
}

static int simulate(const struct wp_schedule *s, struct wp_sim_result *res)
{
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    cost.tf = s->params.tf;
    cost.tb = s->params.tb;
    cost.tw = s->params.tw;
    cost.tc = 0;
    struct wp_err err;
    return wp_simulate(s, &cost, res, &err);
}

/* Rank r D + j's list is rank r's with peers p -> p D + j, up to the ends
 * (ALLREDUCE, STEP), and the ends are an ALLREDUCE of every stage the
 * rank holds (each is now held by several ranks), then its STEPs. */
static int lists_copied(const struct wp_schedule *one, const struct wp_schedule *dp, int D)
{
    for (int to = 0; to < dp->nranks; to++) {
        const struct wp_action_list *a = &one->lists[to / D], *b = &dp->lists[to];
        int i = 0, k = 0, held = wp_schedule_stages_per_rank(one, to / D);
        for (; i < a->count && a->actions[i].op != WP_OP_ALLREDUCE && a->actions[i].op != WP_OP_STEP; i++, k++) {
            const struct wp_action *x = &a->actions[i], *y = &b->actions[k];
            if (k >= b->count || x->op != y->op || x->stage != y->stage || x->microbatch != y->microbatch ||
                y->peer != (x->peer >= 0 ? x->peer * D + to % D : -1))
                return 0;
        }
        if (b->count != k + 2 * held)
            return 0;
        for (int e = 0; e < 2 * held; e++)
            if (b->actions[k + e].op != (e < held ? WP_OP_ALLREDUCE : WP_OP_STEP))
                return 0;
    }
    return 1;
}

/* Every holder of every stage is a one-pipeline holder's replica, slice
 * j r + i of copy c on rank (rank of slice i) D + j. */
static int placed_as_replicas(const struct wp_schedule *one, const struct wp_schedule *dp, int D)
{
    if (dp->nstages != one->nstages)
        return 0;
    for (int st = 0; st < one->nstages; st++) {
        const struct wp_stage_place *p = &one->place[st], *q = &dp->place[st];
        int r = p->nreplicas;
        if (q->ncopies != p->ncopies || q->nreplicas != r * D)
            return 0;
        for (int c = 0; c < p->ncopies; c++)
            for (int j = 0; j < D; j++)
                for (int i = 0; i < r; i++)
                    if (q->ranks[c * r * D + j * r + i] != p->ranks[c * r + i] * D + j)
                        return 0;
    }
    return 1;
}

/* One kind at P ranks in D copies of M micro-batches against its one
 * pipeline of P / D ranks. */
static void check_copies(enum wp_sched_kind kind, int P, int D, int M)
{
    struct wp_sched_params p1 = kind_params(kind, P / D, 1, M), pd = kind_params(kind, P, D, M);
    const char *name = wp_sched_kind_name(kind);
    struct wp_schedule one, dp;
    struct wp_err err = {""};
    int nstages = 0;
    if (wp_sched_check(&p1, &nstages, &err))
        return; /* the kind does not take these settings: nothing to copy */
    if (wp_schedule_generate(&p1, &one, &err)) {
        ok(0, "%s P=%d M=%d generates (%s)", name, P / D, M, err.msg);
        return;
    }
    if (wp_schedule_generate(&pd, &dp, &err)) {
        ok(0, "%s P=%d D=%d M=%d generates (%s)", name, P, D, M, err.msg);
        wp_schedule_destroy(&one);
        return;
    }
    struct wp_validation v;
    int valid = wp_schedule_validate(&dp, &v, &err) == 0;
    ok(valid, "%s P=%d D=%d M=%d: the copies validate%s%s", name, P, D, M, valid ? "" : ": ", valid ? "" : err.msg);
    ok(dp.nranks == P && dp.params.data_parallel == D && dp.params.ranks == P,
       "%s P=%d D=%d M=%d: %d ranks, params say D and all P", name, P, D, M, dp.nranks);
    ok(placed_as_replicas(&one, &dp, D), "%s P=%d D=%d M=%d: stage holders are rank r's replicas r D + j", name, P,
       D, M);
    ok(lists_copied(&one, &dp, D), "%s P=%d D=%d M=%d: each replica runs its rank's list, peers replica to replica, "
       "then ALLREDUCE and STEP of each stage it holds", name, P, D, M);
    struct wp_sim_result r1, rd;
    if (simulate(&one, &r1) == 0 && simulate(&dp, &rd) == 0) {
        is_near(rd.makespan, r1.makespan, 1e-12, "%s P=%d D=%d M=%d: makespan at tc = 0 is the one pipeline's on "
                "P/D ranks (%g)", name, P, D, M, r1.makespan);
        is_near(rd.bubble_ratio, r1.bubble_ratio, 1e-12, "%s P=%d D=%d M=%d: and so is the bubble ratio", name, P, D,
                M);
        int same_peaks = 1;
        for (int r = 0; r < P; r++)
            same_peaks &= rd.peak_activations[r] == r1.peak_activations[r / D] &&
                          dp.activation_bound[r] == one.activation_bound[r / D] &&
                          (!valid || v.peak_activations[r] <= dp.activation_bound[r] + 1e-9);
        ok(same_peaks, "%s P=%d D=%d M=%d: each replica's peak activations and bound are its rank's", name, P, D, M);
        wp_sim_result_destroy(&r1);
        wp_sim_result_destroy(&rd);
    } else {
        ok(0, "%s P=%d D=%d M=%d: both simulate", name, P, D, M);
    }
    if (valid)
        wp_validation_destroy(&v);
    wp_schedule_destroy(&one);
    wp_schedule_destroy(&dp);
}

static void test_every_kind(void)
{
    static const int shapes[][3] = {{4, 2, 4}, {4, 2, 8}, {6, 3, 4}, {8, 2, 8}, {8, 4, 6}, {12, 3, 8}, {8, 2, 5}};
    for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++) {
        if (!wp_sched_kind_generated((enum wp_sched_kind)kind))
            continue;
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            check_copies((enum wp_sched_kind)kind, shapes[i][0], shapes[i][1], shapes[i][2]);
    }
}

/* The closed form of the straight kinds holds for the pipeline of P / D:
 * (M + P/D - 1)(tf + tb) with the backward whole (tb + tw here). */
static void test_closed_form(void)
{
    for (int kind = WP_SCHED_GPIPE; kind <= WP_SCHED_KFKB; kind++) {
        struct wp_sched_params p = kind_params((enum wp_sched_kind)kind, 12, 3, 7);
        struct wp_schedule s;
        struct wp_sim_result res;
        struct wp_err err;
        if (wp_schedule_generate(&p, &s, &err) || simulate(&s, &res)) {
            ok(0, "%s P=12 D=3 M=7 generates and simulates (%s)", wp_sched_kind_name(p.kind), err.msg);
            continue;
        }
        is_near(res.makespan, (7 + 4 - 1) * (p.tf + p.tb + p.tw), 1e-12,
                "%s P=12 D=3 M=7: makespan (M + P/D - 1)(tf + tb + tw) = 30", wp_sched_kind_name(p.kind));
        wp_sim_result_destroy(&res);
        wp_schedule_destroy(&s);
    }
}

/* gpipe, 1f1b (both policies, and a memory limit) and kfkb in D copies are
 * exactly the stages replicated D times each: run --stages makes them so. */
static void test_straight_as_replicas(void)
{
    static const int shapes[][3] = {{4, 2, 4}, {6, 2, 5}, {8, 4, 8}, {9, 3, 6}};
    for (int kind = WP_SCHED_GPIPE; kind <= WP_SCHED_KFKB; kind++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            for (int variant = 0; variant < 3; variant++) {
                int P = shapes[i][0], D = shapes[i][1], M = shapes[i][2], S = P / D;
                struct wp_sched_params pd = kind_params((enum wp_sched_kind)kind, P, D, M);
                pd.policy = variant == 1 ? 'B' : 'A';
                pd.max_inflight = variant == 2 ? 2 : 0;
                struct wp_sched_params pr = pd;
                int reps[16];
                for (int st = 0; st < S; st++)
                    reps[st] = D;
                pr.data_parallel = 0;
                pr.replicas = reps;
                pr.nreplicas = S;
                struct wp_schedule a, b;
                struct wp_err err = {""};
                if (wp_schedule_generate(&pd, &a, &err)) {
                    ok(0, "%s P=%d D=%d generates (%s)", wp_sched_kind_name(pd.kind), P, D, err.msg);
                    continue;
                }
                if (wp_schedule_generate(&pr, &b, &err)) {
                    ok(0, "%s with replicas generates (%s)", wp_sched_kind_name(pd.kind), err.msg);
                    wp_schedule_destroy(&a);
                    continue;
                }
                ok(sched_same_lists(&a, &b) && sched_same_placement(&a, &b) && sched_same_numbers(&a, &b),
                   "%s P=%d M=%d policy %c max-inflight %d: --data-parallel %d is --replicas %d x %d (lists, "
                   "placement, weights, bounds)", wp_sched_kind_name(pd.kind), P, M, pd.policy, pd.max_inflight, D, D,
                   S);
                wp_schedule_destroy(&a);
                wp_schedule_destroy(&b);
            }
}

/* One copy is the schedule itself; DAPPLE's uneven replicas in copies. */
static void test_identity_and_uneven(void)
{
    static const enum wp_sched_kind kinds[] = {WP_SCHED_1F1B, WP_SCHED_CHIMERA, WP_SCHED_HANAYO, WP_SCHED_DUALPIPEV};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        struct wp_sched_params p = kind_params(kinds[i], 4, 1, 8);
        struct wp_schedule s, same;
        struct wp_err err = {""};
        if (wp_schedule_generate(&p, &s, &err) || wp_schedule_replicate(&s, 1, &same, &err)) {
            ok(0, "%s: one copy (%s)", wp_sched_kind_name(kinds[i]), err.msg);
            continue;
        }
        ok(sched_same_lists(&s, &same) && sched_same_placement(&s, &same) && sched_same_numbers(&s, &same),
           "%s: one data-parallel copy is the schedule as generated", wp_sched_kind_name(kinds[i]));
        wp_schedule_destroy(&s);
        wp_schedule_destroy(&same);
    }
    static int uneven[][3] = {{2, 1, 0}, {1, 3, 0}, {2, 1, 2}};
    static const char *const uneven_text[] = {"2,1", "1,3", "2,1,2"};
    for (size_t i = 0; i < sizeof uneven / sizeof uneven[0]; i++) {
        int n = uneven[i][2] ? 3 : 2, S = uneven[i][0] + uneven[i][1] + uneven[i][2];
        struct wp_sched_params p = kind_params(WP_SCHED_1F1B, 2 * S, 2, 4);
        p.replicas = uneven[i];
        p.nreplicas = n;
        struct wp_schedule s;
        struct wp_validation v;
        struct wp_err err = {""};
        int valid = wp_schedule_generate(&p, &s, &err) == 0;
        if (valid) {
            valid = wp_schedule_validate(&s, &v, &err) == 0;
            if (valid)
                wp_validation_destroy(&v);
            wp_schedule_destroy(&s);
        }
        ok(valid, "1f1b with replicas %s in 2 data-parallel copies on %d ranks validates (slices split and "
           "joined within each copy's half of the micro-batch)%s%s", uneven_text[i], 2 * S, valid ? "" : ": ",
           valid ? "" : err.msg);
    }
}

static void test_refused(void)
{
    struct wp_sched_params p = kind_params(WP_SCHED_HANAYO, 6, 4, 8);
    struct wp_schedule s;
    struct wp_err err = {""};
    ok(wp_schedule_generate(&p, &s, &err) == -1, "--data-parallel 4 on 6 ranks is refused");
    has_substr(err.msg, "--data-parallel 4 does not divide the 6 ranks into pipeline copies", "and says why");
    p = kind_params(WP_SCHED_CHIMERA, 6, 2, 8);
    ok(wp_schedule_generate(&p, &s, &err) == -1, "chimera in copies of 3 ranks is refused");
    has_substr(err.msg, "chimera in 2 data-parallel copies of 3 ranks: chimera needs an even number of ranks",
               "and says it of a copy");
    p = kind_params(WP_SCHED_INTERLEAVED, 8, 2, 6);
    ok(wp_schedule_generate(&p, &s, &err) == -1, "interleaved with M not a multiple of a copy's ranks is refused");
    has_substr(err.msg, "M = 6, P = 4", "and names a copy's P");
    int reps[2] = {2, 2};
    p = kind_params(WP_SCHED_1F1B, 8, 2, 4);
    p.replicas = reps;
    p.nreplicas = 2;
    ok(wp_schedule_generate(&p, &s, &err) == 0, "replicas adding up to a copy's ranks are taken");
    wp_schedule_destroy(&s);
    p.ranks = 4;
    ok(wp_schedule_generate(&p, &s, &err) == -1, "and those adding up to all of them are not");
    has_substr(err.msg, "replicas add up to 4 ranks, but --ranks / --data-parallel is 2", "and says so");
    p = kind_params(WP_SCHED_ZBV, 4, -1, 4);
    ok(wp_schedule_generate(&p, &s, &err) == -1, "a negative --data-parallel is refused");
    int nstages = 0;
    p = kind_params(WP_SCHED_HANAYO, 8, 2, 8);
    ok(wp_sched_check(&p, &nstages, &err) == 0 && nstages == 2 * 2 * 4,
       "hanayo W=2 on 8 ranks in 2 copies has 2 W (P/D) = 16 stages");
}

int main(void)
{
    test_every_kind();
    test_closed_form();
    test_straight_as_replicas();
    test_identity_and_uneven();
    test_refused();
    return tap_done();
}
