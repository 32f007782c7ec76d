/* The order of Chimera and Hanayo, searched: the generator makes each
 * candidate order in full (variant.c), the simulator times it at the costs
 * the schedule is made for (tf, tb, tw and tc), and the fastest within the
 * kind's memory bound is kept. So an order built for a slow network is never
 * slower on it than the one built for none, and a rule that stalls (the
 * list scheduler's headroom rule can with several waves) is simply not a
 * candidate. With --order-search N the winner is then improved by N steps
 * of hill climbing (order_improve.c). */
#include "sched/order_search.h"

#include <math.h>
#include <stdlib.h>

#include "sched/order_greedy.h"
#include "sched/order_improve.h"
#include "sched/simulate.h"
#include "sched/variant.h"

/* The fastest candidate so far within the bound, and the first error of a
 * candidate that could not be made. */
struct search {
    struct wp_schedule *best;
    double makespan, peak;
    int have;
    struct wp_err first_err;
};

/* Makes the candidate `how` and keeps it when it is within the bound and
 * faster than the best, or as fast with a lower peak (the first on a
 * tie); -1 only when the simulator fails. */
static int consider(const struct wp_sched_params *p, int nstages, const struct wp_order_variant *how,
                    struct search *sr, struct wp_err *err)
{
    struct wp_schedule cand;
    struct wp_err cerr = {""};
    double makespan, peak;
    int within;
    if (wp_sched_generate_variant(p, nstages, how, &cand, &cerr)) {
        if (!sr->first_err.msg[0])
            sr->first_err = cerr;
        return 0;
    }
    if (wp_simulate_own_costs(&cand, &makespan, &peak, &within, err)) {
        wp_schedule_destroy(&cand);
        return -1;
    }
    double tie = 1e-12 * (1 + makespan);
    if (within && (!sr->have || makespan < sr->makespan - tie ||
                   (makespan <= sr->makespan + tie && peak < sr->peak - 1e-12))) {
        if (sr->have)
            wp_schedule_destroy(sr->best);
        *sr->best = cand;
        sr->makespan = makespan;
        sr->peak = peak;
        sr->have = 1;
    } else {
        wp_schedule_destroy(&cand);
    }
    return 0;
}

/* Candidates: list scheduling under both memory rules, with and without
 * alternation, at the given tc and at tc = 0; for Chimera also with 1F1B's
 * warm-up caps per stage copy; for one Hanayo wave the V-shaped 1F1B in
 * closed form; for Hanayo its waves as laps in groups of P micro-batches
 * (order_greedy.c; the least makespan within P at tc = 0 for M a multiple
 * of P from 2P on), with and without the last group's turn first, and the
 * short group first, last or joined to the last where P does not divide
 * M; for Hanayo given more memory than P (--max-inflight) the
 * uniform steady state at every stagger of a chunk's F (order_steady.c),
 * which reaches the interleaved bound where it fits. The winner is the
 * candidate within the bound that the simulator times fastest at the given
 * costs, the one of lower peak among equally fast (the first on a tie). */
int wp_sched_search_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best,
                          struct wp_err *err)
{
    struct wp_order_variant variants[32];
    int nvariants = 0;
    for (int ti = 0; ti < (p->tc > 0 ? 2 : 1); ti++) {
        double tc = ti == 0 ? p->tc : 0;
        for (int alternate = 0; alternate <= 1; alternate++) {
            variants[nvariants++] = (struct wp_order_variant){.greedy = {WP_GREEDY_HOLD_WITH_HEADROOM, tc, alternate, NULL}};
            variants[nvariants++] = (struct wp_order_variant){.greedy = {WP_GREEDY_RESERVE_AT_ADMISSION, tc, alternate, NULL}};
        }
    }
    if (p->kind == WP_SCHED_HANAYO && p->waves == 1 && p->max_inflight == 0)
        variants[nvariants++] = (struct wp_order_variant){.v_order = 1};
    if (p->kind == WP_SCHED_HANAYO) {
        /* the waves as laps in groups of P micro-batches (order_greedy.c);
         * where M is not a multiple of P, each place for the short group */
        int remainders = p->microbatches > p->ranks && p->microbatches % p->ranks ? 3 : 1;
        for (int ti = 0; ti < (p->tc > 0 ? 2 : 1); ti++)
            for (int rem = 0; rem < remainders; rem++)
                for (int turn_first = 0; turn_first <= 1; turn_first++)
                    variants[nvariants++] = (struct wp_order_variant){
                        .greedy = {WP_GREEDY_HOLD, ti == 0 ? p->tc : 0, 1, NULL, p->ranks, (enum wp_lap_remainder)rem,
                                   turn_first}};
    }
    int *caps = NULL;
    if (p->kind == WP_SCHED_CHIMERA) {
        /* two 1F1B pipelines sharing the ranks: stage s of either copy warms
         * up with P - s micro-batches (1F1B's, its distance to the end), one
         * fewer on the rank's stage with the longer warm-up (copy 0's on a
         * tie), so that a rank holds P */
        int P = p->ranks;
        caps = malloc((size_t)(2 * nstages) * sizeof *caps);
        if (!caps)
            return wp_errorf(err, "out of memory");
        for (int st = 0; st < nstages; st++)
            for (int c = 0; c < 2; c++) {
                int r = c == 0 ? st : P - 1 - st, other = c == 0 ? P - 1 - r : r; /* the rank's other stage */
                int mine = P - st, theirs = P - other;
                caps[2 * st + c] = mine > theirs || (mine == theirs && c == 0) ? mine - 1 : mine;
                if (caps[2 * st + c] < 1)
                    caps[2 * st + c] = 1;
            }
        for (int ti = 0; ti < (p->tc > 0 ? 2 : 1); ti++)
            for (int alternate = 0; alternate <= 1; alternate++)
                variants[nvariants++] =
                    (struct wp_order_variant){.greedy = {WP_GREEDY_HOLD_WITH_HEADROOM, ti == 0 ? p->tc : 0, alternate, caps}};
    }
    struct search sr = {best, INFINITY, INFINITY, 0, {""}};
    int rc = 0;
    for (int i = 0; i < nvariants && rc == 0; i++)
        rc = consider(p, nstages, &variants[i], &sr, err);
    /* staggers of 0, 1, ... 6W - 1 sixths of a period over W: a chunk's F
     * at tb = 2 tf */
    int staggers = p->kind == WP_SCHED_HANAYO && p->max_inflight > p->ranks ? 6 * p->waves : 0;
    for (int j = 0; j < staggers && rc == 0; j++) {
        struct wp_order_variant steady = {.steady = 1, .stagger = (double)j / staggers};
        rc = consider(p, nstages, &steady, &sr, err);
    }
    free(caps);
    if (rc) {
        if (sr.have)
            wp_schedule_destroy(best);
        return -1;
    }
    if (!sr.have && !sr.first_err.msg[0])
        wp_errorf(&sr.first_err, "%s: no order within the memory bound", wp_sched_kind_name(p->kind));
    if (!sr.have) {
        *err = sr.first_err;
        return -1;
    }
    /* then, when asked, hill climbing from the winner (order_improve.c);
     * Chimera's two copies are not climbed */
    if (p->order_search > 0 && p->kind == WP_SCHED_HANAYO && wp_sched_improve_order(p, nstages, best, &sr.makespan, err)) {
        wp_schedule_destroy(best);
        return -1;
    }
    return 0;
}
