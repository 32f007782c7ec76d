/* A lower bound of the simulated iteration time from per-stage costs (see
 * makespan_bound.h). */
#include "sched/makespan_bound.h"

#include <string.h>

/* The index of op among the counted ones (F, B, W, ALLREDUCE), or -1. */
static int counted(int op)
{
    switch (op) {
    case WP_OP_F: return 0;
    case WP_OP_B: return 1;
    case WP_OP_W: return 2;
    case WP_OP_ALLREDUCE: return 3;
    default: return -1;
    }
}

int wp_makespan_bound_prepare(const struct wp_schedule *s, struct wp_rank_work *work)
{
    int applies = 1;
    for (int r = 0; r < s->nranks; r++) {
        struct wp_rank_work *wk = &work[r];
        memset(wk, 0, sizeof *wk);
        wk->stage = -1;
        const struct wp_action_list *l = &s->lists[r];
        int last_b = -1;
        for (int i = 0; i < l->count; i++) {
            const struct wp_action *a = &l->actions[i];
            if (counted(a->op) < 0)
                continue;
            if (wk->stage < 0)
                wk->stage = (int)a->stage;
            else if (wk->stage != a->stage)
                applies = 0; /* two stages on one rank: their passes interleave with the chain */
            if (a->op == WP_OP_B)
                last_b = i;
        }
        for (int i = 0; i < l->count; i++) {
            int c = counted(l->actions[i].op);
            if (c >= 0) {
                if (i <= last_b)
                    wk->upto[c]++;
                else
                    wk->after[c]++;
            }
        }
    }
    return applies;
}

double wp_makespan_bound(const struct wp_schedule *s, const struct wp_rank_work *work, int applies, const double *f,
                         const double *b, const double *w, const double *link, const double *allreduce)
{
    if (!applies)
        return 0;
    int S = s->nstages;
    double bound = 0;
    for (int r = 0; r < s->nranks; r++) {
        const struct wp_rank_work *wk = &work[r];
        int st = wk->stage;
        if (st < 0)
            continue; /* a rank without work */
        double before = 0, after = 0;
        for (int q = 0; q < st && q + 1 < S; q++) {
            before += f[q] + link[q];
            after += b[q] + link[q];
        }
        double cost[4] = {f[st], b[st], w[st], allreduce ? allreduce[st] : 0};
        double upto = 0, rest = 0;
        for (int c = 0; c < 4; c++) {
            upto += wk->upto[c] * cost[c];
            rest += wk->after[c] * cost[c];
        }
        double busy = before + upto + rest;
        double chain = wk->upto[1] ? before + upto + after : 0; /* no B: no chain after it */
        double rank_bound = busy > chain ? busy : chain;
        if (rank_bound > bound)
            bound = rank_bound;
    }
    return bound;
}
