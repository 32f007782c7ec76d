/* The generator driver: checks what was asked, places stages, orders the
 * compute of every rank (closed form, or searched among candidate orders:
 * order_search.c), adds the communication, and records each rank's
 * activation bound. Debug builds (--enable-debug-checks) run the validator
 * on every schedule made. */
#include "sched/generate.h"

#include <config.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/emit.h"
#include "sched/order_direct.h"
#include "sched/order_greedy.h"
#include "sched/order_steady.h"
#include "sched/order_zero_bubble.h"
#include "sched/place.h"
#include "sched/validate.h"

static int check_params(const struct wp_sched_params *p, int *nstages, struct wp_err *err)
{
    const char *kind = wp_sched_kind_name(p->kind);
    int P = p->ranks, M = p->microbatches;
    if (!wp_sched_kind_generated(p->kind))
        return wp_errorf(err, "schedules of kind %s are read from a file (--schedule-file), not generated", kind);
    if (P < 1 || M < 1)
        return wp_errorf(err, "%s needs at least 1 rank and 1 micro-batch (got %d ranks, %d)", kind, P, M);
    if (P > WP_ACTION_FIELD_MAX || M > WP_ACTION_FIELD_MAX)
        return wp_errorf(err, "at most %d ranks and %d micro-batches (got %d, %d)", WP_ACTION_FIELD_MAX,
                         WP_ACTION_FIELD_MAX, P, M);
    if (!(p->tf > 0) || !(p->tb > 0) || p->tw < 0 || p->tc < 0 || !isfinite(p->tf + p->tb + p->tw + p->tc))
        return wp_errorf(err, "costs must be finite with tf > 0, tb > 0, tw >= 0, tc >= 0");
    if (p->policy != 'A' && p->policy != 'B')
        return wp_errorf(err, "policy must be A or B");
    if (p->max_inflight < 0)
        return wp_errorf(err, "--max-inflight must be >= 1 (0 means no limit)");
    int straight = p->kind == WP_SCHED_GPIPE || p->kind == WP_SCHED_1F1B || p->kind == WP_SCHED_KFKB;
    if (p->nreplicas && !straight)
        return wp_errorf(err, "stage replication (--replicas) is supported by gpipe, 1f1b and kfkb, not %s", kind);
    *nstages = P;
    switch (p->kind) {
    case WP_SCHED_KFKB:
        if (p->k < 1 || p->k > M)
            return wp_errorf(err, "kfkb needs 1 <= k <= M (k = %d, M = %d)", p->k, M);
        break;
    case WP_SCHED_INTERLEAVED:
        if (p->chunks < 1)
            return wp_errorf(err, "interleaved needs at least 1 chunk per rank");
        if (M % P != 0)
            return wp_errorf(err, "interleaved needs the number of micro-batches to be a multiple of the "
                                  "ranks (Megatron-LM's order): M = %d, P = %d",
                             M, P);
        *nstages = P * p->chunks;
        break;
    case WP_SCHED_HANAYO:
        if (p->waves < 1)
            return wp_errorf(err, "hanayo needs at least 1 wave");
        *nstages = 2 * p->waves * P;
        break;
    case WP_SCHED_ZBV:
        *nstages = 2 * P;
        break;
    case WP_SCHED_DUALPIPEV:
        if (M < 2 * P)
            return wp_errorf(err, "dualpipev needs at least as many micro-batches as stages (2P = %d): M = %d",
                             2 * P, M);
        *nstages = 2 * P;
        break;
    case WP_SCHED_CHIMERA:
        if (P % 2 != 0)
            return wp_errorf(err, "chimera needs an even number of ranks (two pipelines in opposite "
                                  "directions share them): P = %d",
                             P);
        break;
    default:
        break;
    }
    if (p->nreplicas) {
        int sum = 0;
        for (int i = 0; i < p->nreplicas; i++) {
            if (p->replicas[i] < 1)
                return wp_errorf(err, "replica count of stage %d is %d; every stage needs >= 1", i, p->replicas[i]);
            sum += p->replicas[i];
        }
        if (sum != P)
            return wp_errorf(err, "replicas add up to %d ranks, but --ranks is %d", sum, P);
        *nstages = p->nreplicas;
    }
    if (*nstages > WP_ACTION_FIELD_MAX)
        return wp_errorf(err, "%s on these settings has %d stages; at most %d", kind, *nstages, WP_ACTION_FIELD_MAX);
    if (p->nstage_costs) {
        if (p->nstage_costs != *nstages)
            return wp_errorf(err, "%d stage costs given, but %s on these settings has %d stages", p->nstage_costs,
                             kind, *nstages);
        for (int i = 0; i < p->nstage_costs; i++)
            if (!(p->stage_cost_scale[i] > 0) || !isfinite(p->stage_cost_scale[i]))
                return wp_errorf(err, "stage cost %d must be a positive number", i);
    }
    return 0;
}

/* Peak activations each kind promises per rank (weighted as in
 * wp_stage_weight; an activation is held from F until B). */
static void set_bounds(struct wp_schedule *s)
{
    const struct wp_sched_params *p = &s->params;
    int P = s->nranks, M = s->nmicro, S = s->nstages;
    for (int r = 0; r < P; r++)
        s->activation_bound[r] = 0;
    switch (p->kind) {
    case WP_SCHED_INTERLEAVED:
        for (int r = 0; r < P; r++) {
            int warmup = (P - r - 1) * 2 + (p->chunks - 1) * P;
            double chunks = warmup + 1 < M * p->chunks ? warmup + 1 : M * p->chunks;
            s->activation_bound[r] = chunks / p->chunks;
        }
        return;
    case WP_SCHED_HANAYO:
    case WP_SCHED_CHIMERA:
    case WP_SCHED_ZBH1:
    case WP_SCHED_ZBV:
    case WP_SCHED_DUALPIPEV:
        /* P micro-batches through a rank's share of the model, held from F
         * until B (W when split), as 1F1B's first rank; DualPipeV one more
         * (DeepSeek-V3, table 2: PP + 1) */
        for (int r = 0; r < P; r++)
            s->activation_bound[r] = p->max_inflight > 0 ? p->max_inflight : P + (p->kind == WP_SCHED_DUALPIPEV);
        if (p->kind != WP_SCHED_CHIMERA)
            for (int r = 0; r < P; r++)
                s->activation_bound[r] = s->activation_bound[r] < M ? s->activation_bound[r] : M;
        return;
    default:
        break;
    }
    int k = p->kind == WP_SCHED_GPIPE ? M : p->kind == WP_SCHED_1F1B ? 1 : p->k;
    int groups = (M + k - 1) / k;
    for (int st = 0; st < S; st++) {
        int warmup = p->kind == WP_SCHED_GPIPE ? groups : p->policy == 'B' ? 2 * (S - st) - 1 : S - st;
        if (p->max_inflight > 0 && warmup * k > p->max_inflight)
            warmup = p->max_inflight / k > 0 ? p->max_inflight / k : 1;
        if (warmup > groups)
            warmup = groups;
        int held = warmup * k < M ? warmup * k : M;
        for (int j = 0; j < s->place[st].nreplicas; j++)
            s->activation_bound[s->place[st].ranks[j]] = held * wp_stage_weight(s, st);
    }
}

int wp_sched_generate_variant(const struct wp_sched_params *p, int nstages, const struct wp_order_variant *how,
                              struct wp_schedule *s, struct wp_err *err)
{
    if (wp_schedule_init(s, p, nstages, err))
        return -1;
    s->split_backward = p->kind == WP_SCHED_ZBH1 || p->kind == WP_SCHED_ZBV || p->kind == WP_SCHED_DUALPIPEV;
    int rc = wp_sched_place(s, err);
    if (rc == 0)
        rc = wp_sched_reserve_lists(s, err);
    if (rc == 0) {
        switch (p->kind) {
        case WP_SCHED_GPIPE:
        case WP_SCHED_1F1B:
        case WP_SCHED_KFKB:
            rc = wp_sched_order_grouped(s, err);
            break;
        case WP_SCHED_INTERLEAVED:
            rc = wp_sched_order_interleaved(s, err);
            break;
        case WP_SCHED_ZBH1:
            rc = wp_sched_order_zbh1(s, err);
            break;
        case WP_SCHED_ZBV:
            rc = wp_sched_order_zbv(s, err);
            break;
        case WP_SCHED_DUALPIPEV:
            rc = wp_sched_order_dualpipev(s, err);
            break;
        default:
            if (how->given) {
                rc = wp_sched_emit_given(s, how->given, err);
            } else if (how->v_order) {
                rc = wp_sched_order_zbv(s, err);
            } else if (how->steady && how->cycle) {
                rc = wp_sched_order_steady(s, how->cycle, err);
            } else if (how->steady) {
                struct wp_steady_cycle uniform;
                rc = wp_steady_uniform(s, how->stagger, &uniform, err);
                if (rc == 0)
                    rc = wp_sched_order_steady(s, &uniform, err);
                wp_steady_cycle_free(&uniform);
            } else {
                rc = wp_sched_order_greedy(s, &how->greedy, err);
            }
            break;
        }
    }
    if (rc == 0)
        rc = wp_sched_finish_lists(s, err);
    if (rc == 0)
        set_bounds(s);
    if (rc)
        wp_schedule_destroy(s);
    return rc;
}

int wp_schedule_generate(const struct wp_sched_params *p, struct wp_schedule *s, struct wp_err *err)
{
    int nstages = 0;
    if (check_params(p, &nstages, err))
        return -1;
    int searched = p->kind == WP_SCHED_CHIMERA || p->kind == WP_SCHED_HANAYO;
    static const struct wp_order_variant direct = {.greedy = {WP_GREEDY_HOLD_WITH_HEADROOM, 0, 0, NULL}};
    int rc = searched ? wp_sched_search_order(p, nstages, s, err)
                      : wp_sched_generate_variant(p, nstages, &direct, s, err);
#ifdef WP_DEBUG_CHECKS
    if (rc == 0) {
        struct wp_validation v;
        rc = wp_schedule_validate(s, &v, err);
        wp_validation_destroy(&v);
        if (rc)
            wp_schedule_destroy(s);
    }
#endif
    return rc;
}
