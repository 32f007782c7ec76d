/* The generator driver: checks what was asked, then has the schedule made,
 * the closed-form kinds by the variant dispatcher (variant.c: placement,
 * order, communication, bounds), chimera and hanayo by the order search
 * (order_search.c), and with --data-parallel D one pipeline of P / D ranks
 * made so and then copied D times (replicate.c); or, given a schedule
 * file, reads it instead. Debug builds (--enable-debug-checks) run the
 * validator on every schedule made. */
#include "sched/generate.h"

#include <config.h>
#include <math.h>

#include "sched/order_greedy.h"
#include "sched/order_search.h"
#include "sched/replicate.h"
#include "sched/schedule_file.h"
#include "sched/validate.h"
#include "sched/variant.h"

/* The kind's own rules for one pipeline of P ranks and M micro-batches,
 * and its stage count into *nstages; ranks_name says what P is. */
static int check_pipeline(const struct wp_sched_params *p, int P, const char *ranks_name, int *nstages,
                          struct wp_err *err)
{
    const char *kind = wp_sched_kind_name(p->kind);
    int M = p->microbatches;
    int straight = p->kind == WP_SCHED_GPIPE || p->kind == WP_SCHED_1F1B || p->kind == WP_SCHED_KFKB;
    if (p->nreplicas && !straight)
        return wp_errorf(err, "stage replication (--replicas) is supported by gpipe, 1f1b and kfkb, not %s (every "
                              "kind takes --data-parallel)", kind);
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
    case WP_SCHED_BFS:
        if (p->chunks < 1)
            return wp_errorf(err, "bfs needs at least 1 chunk per rank");
        *nstages = P * p->chunks;
        break;
    case WP_SCHED_ZBH1:
        if (p->chunks < 1)
            return wp_errorf(err, "zb-h1 needs at least 1 chunk per rank");
        if (p->chunks > 1 && M % P != 0)
            return wp_errorf(err, "zb-h1 with %d chunks needs the number of micro-batches to be a multiple of the "
                                  "ranks (Megatron-LM's interleaved sequence): M = %d, P = %d",
                             p->chunks, M, P);
        if (p->chunks > 1 && p->max_inflight > 0 && p->max_inflight < P)
            return wp_errorf(err, "zb-h1 with %d chunks needs --max-inflight of at least the ranks (%d): its "
                                  "warm-up runs a micro-batch through every chunk before the first backward",
                             p->chunks, P);
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
            return wp_errorf(err, "replicas add up to %d ranks, but %s is %d", sum, ranks_name, P);
        *nstages = p->nreplicas;
    }
    return 0;
}

int wp_sched_check(const struct wp_sched_params *p, int *nstages, struct wp_err *err)
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
    if (p->data_parallel < 0)
        return wp_errorf(err, "--data-parallel must be >= 1 (got %d)", p->data_parallel);
    int D = p->data_parallel > 1 ? p->data_parallel : 1;
    if (P % D)
        return wp_errorf(err, "--data-parallel %d does not divide the %d ranks into pipeline copies", D, P);
    if (check_pipeline(p, P / D, D > 1 ? "--ranks / --data-parallel" : "--ranks", nstages, err))
        return D > 1 ? wp_err_prefix(err, "%s in %d data-parallel copies of %d ranks: ", kind, D, P / D) : -1;
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

/* One pipeline of p's kind on all of p's ranks. */
static int generate_pipeline(const struct wp_sched_params *p, int nstages, struct wp_schedule *s,
                             struct wp_err *err)
{
    int searched = p->kind == WP_SCHED_CHIMERA || p->kind == WP_SCHED_HANAYO;
    static const struct wp_order_variant direct = {.greedy = {WP_GREEDY_HOLD_WITH_HEADROOM, 0, 0, NULL}};
    return searched ? wp_sched_search_order(p, nstages, s, err)
                    : wp_sched_generate_variant(p, nstages, &direct, s, err);
}

/* D data-parallel copies of the pipeline of P / D ranks (replicate.h). */
static int generate_copies(const struct wp_sched_params *p, int nstages, int D, struct wp_schedule *s,
                           struct wp_err *err)
{
    struct wp_sched_params one_p = *p;
    one_p.ranks = p->ranks / D;
    one_p.data_parallel = 0;
    struct wp_schedule one;
    if (generate_pipeline(&one_p, nstages, &one, err))
        return -1;
    int rc = wp_schedule_replicate(&one, D, s, err);
    wp_schedule_destroy(&one);
    return rc;
}

int wp_schedule_generate(const struct wp_sched_params *p, struct wp_schedule *s, struct wp_err *err)
{
    int nstages = 0;
    if (wp_sched_check(p, &nstages, err))
        return -1;
    int D = p->data_parallel > 1 ? p->data_parallel : 1;
    int rc = D > 1 ? generate_copies(p, nstages, D, s, err) : generate_pipeline(p, nstages, s, err);
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

int wp_schedule_make(const struct wp_sched_params *p, const char *schedule_file, struct wp_schedule *s,
                     struct wp_err *err)
{
    if (schedule_file)
        return wp_schedule_load(schedule_file, p, s, err);
    return wp_schedule_generate(p, s, err);
}
