/* One schedule of a kind with a chosen order: placement, the kind's compute
 * order (closed form, or for chimera and hanayo the variant asked: list
 * scheduling, the V, a steady state or an order given), the lists' ends, and
 * the activation bound each kind promises per rank. */
#include "sched/variant.h"

#include "sched/emit.h"
#include "sched/order_direct.h"
#include "sched/order_greedy.h"
#include "sched/order_steady.h"
#include "sched/order_zero_bubble.h"
#include "sched/place.h"

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
    case WP_SCHED_BFS: /* every micro-batch of every chunk, as GPipe's */
        for (int st = 0; st < S; st++)
            s->activation_bound[s->place[st].ranks[0]] += M * wp_stage_weight(s, st);
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
        case WP_SCHED_BFS:
            rc = wp_sched_order_bfs(s, err);
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
