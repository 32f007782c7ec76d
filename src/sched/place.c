/* Stage placement of every schedule kind: straight pipelines (with DAPPLE's
 * replicated stages), Megatron's interleaved chunks and breadth-first's
 * looped ones (stage c*P + r on rank r), Hanayo's waves (down the ranks, back up, W times; one wave is the V of
 * zb-v and dualpipev: stages r and 2P-1-r on rank r), and Chimera's two
 * pipelines in opposite directions (stage s on ranks s and P-1-s); and the
 * stage weights that follow from a placement (schedule files, whose
 * placement is read, use both helpers too). */
#include "sched/place.h"

#include <stdlib.h>

int wp_sched_set_place(struct wp_schedule *s, int stage, int ncopies, int nreplicas, struct wp_err *err)
{
    struct wp_stage_place *pl = &s->place[stage];
    pl->ncopies = ncopies;
    pl->nreplicas = nreplicas;
    pl->ranks = calloc((size_t)(ncopies * nreplicas), sizeof *pl->ranks);
    return pl->ranks ? 0 : wp_errorf(err, "out of memory");
}

static int place(struct wp_schedule *s, struct wp_err *err)
{
    const struct wp_sched_params *p = &s->params;
    int P = s->nranks;
    switch (p->kind) {
    case WP_SCHED_INTERLEAVED:
    case WP_SCHED_BFS:
    case WP_SCHED_ZBH1:
        for (int st = 0; st < s->nstages; st++) {
            if (wp_sched_set_place(s, st, 1, 1, err))
                return -1;
            s->place[st].ranks[0] = st % P;
        }
        return 0;
    case WP_SCHED_HANAYO:
    case WP_SCHED_ZBV:
    case WP_SCHED_DUALPIPEV:
        for (int st = 0; st < s->nstages; st++) {
            if (wp_sched_set_place(s, st, 1, 1, err))
                return -1;
            int j = st % (2 * P);
            s->place[st].ranks[0] = j < P ? j : 2 * P - 1 - j;
        }
        return 0;
    case WP_SCHED_CHIMERA:
        for (int st = 0; st < s->nstages; st++) {
            if (wp_sched_set_place(s, st, 2, 1, err))
                return -1;
            s->place[st].ranks[0] = st;
            s->place[st].ranks[1] = P - 1 - st;
        }
        /* Even micro-batches go down, odd ones up: each direction gets half
         * of every P, as in Chimera's basic unit, and the two pipelines
         * advance together, so that oldest-first list scheduling interleaves
         * them (with the unit's first half down and its second half up, the
         * up pipeline started late and Chimera lost to 1F1B beyond M = P). */
        for (int m = 0; m < s->nmicro; m++)
            s->mb_copy[m] = m % 2;
        return 0;
    default: {
        int next_rank = 0;
        for (int st = 0; st < s->nstages; st++) {
            int r = p->nreplicas ? p->replicas[st] : 1;
            if (wp_sched_set_place(s, st, 1, r, err))
                return -1;
            for (int j = 0; j < r; j++)
                s->place[st].ranks[j] = next_rank++;
        }
        return 0;
    }
    }
}

void wp_sched_set_weights(struct wp_schedule *s)
{
    for (int st = 0; st < s->nstages; st++)
        s->stage_weight[st] =
            (double)s->nranks / s->nstages * wp_stage_cost_scale(s, st) / s->place[st].nreplicas;
}

int wp_sched_place(struct wp_schedule *s, struct wp_err *err)
{
    if (place(s, err))
        return -1;
    wp_sched_set_weights(s);
    return 0;
}
