/* A lower bound of the simulated iteration time from per-stage costs (see
 * makespan_bound.h). */
#include "sched/makespan_bound.h"

#include <stdlib.h>
#include <string.h>

#include "sched/simulate.h"

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

/* Per stage copy c (Chimera's two; one elsewhere) and stage st, the chain
 * below st: the passes of stages 0 .. st-1 (pass_s) and tc for every
 * boundary whose two stages' copies run on different ranks, into
 * below[c * (S + 1) + st]; once per schedule, so each action looks its
 * chain up. */
static void chains_below(const struct wp_schedule *s, const double *pass_s, double tc, int ncopies, double *below)
{
    int S = s->nstages;
    for (int c = 0; c < ncopies; c++) {
        double *row = below + (size_t)c * (size_t)(S + 1);
        row[0] = 0;
        for (int q = 0; q < S; q++) {
            int here = s->place[q].ranks[c < s->place[q].ncopies ? c : 0];
            int next = q + 1 < S ? s->place[q + 1].ranks[c < s->place[q + 1].ncopies ? c : 0] : here;
            row[q + 1] = row[q] + pass_s[q] + (here != next ? tc : 0);
        }
    }
}

void wp_makespan_bound_hops(const struct wp_schedule *s, const struct wp_cost_model *c, struct wp_hop_bound *out)
{
    *out = (struct wp_hop_bound){0, -1, 0, 0, 0};
    int S = s->nstages, ncopies = 1;
    if (c->cluster || c->stage_f || c->boundary_s)
        return;
    for (int st = 0; st < S; st++) {
        if (s->place[st].nreplicas != 1)
            return;
        ncopies = s->place[st].ncopies > ncopies ? s->place[st].ncopies : ncopies;
    }
    size_t row = (size_t)(S + 1) * (size_t)ncopies;
    double *f = malloc((2 * (size_t)S + 2 * row) * sizeof *f);
    if (!f)
        return;
    double *b = f + S, *fbelow = b + S, *bbelow = fbelow + row;
    double whole_b = s->split_backward ? c->tb : c->tb + c->tw;
    for (int st = 0; st < S; st++) {
        f[st] = c->tf * wp_stage_weight(s, st);
        b[st] = whole_b * wp_stage_weight(s, st);
    }
    chains_below(s, f, c->tc, ncopies, fbelow);
    chains_below(s, b, c->tc, ncopies, bbelow);
    for (int r = 0; r < s->nranks; r++) {
        const struct wp_action_list *l = &s->lists[r];
        double head = -1, tail = -1, busy = 0;
        for (int i = 0; i < l->count; i++) {
            const struct wp_action *a = &l->actions[i];
            int st = (int)a->stage;
            size_t at = (size_t)(a->microbatch >= 0 ? s->mb_copy[a->microbatch] : 0) * (size_t)(S + 1) + (size_t)st;
            if (a->op == WP_OP_F) {
                busy += f[st];
                head = head < 0 || fbelow[at] < head ? fbelow[at] : head;
            } else if (a->op == WP_OP_B) {
                busy += b[st];
                double t = s->split_backward ? 0 : bbelow[at];
                tail = tail < 0 || t < tail ? t : tail;
            } else if (a->op == WP_OP_W) {
                busy += c->tw * wp_stage_weight(s, st);
            }
        }
        if (head < 0)
            continue; /* a rank without passes */
        double rank_bound = head + busy + (tail > 0 ? tail : 0);
        if (rank_bound > out->makespan_s)
            *out = (struct wp_hop_bound){rank_bound, r, head, busy, tail > 0 ? tail : 0};
    }
    free(f);
}
