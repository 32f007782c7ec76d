/* Orders built in closed form. Grouped early backward covers three kinds:
 * with groups of k micro-batches a stage runs its warm-up groups of
 * forwards, then alternates one group of backwards and one of forwards,
 * then drains (Ada-Grouper's kFkB; k = 1 is DAPPLE's 1F1B with warm-up
 * K_i = min(S-i, D) under policy A or min(2(S-i)-1, D) under policy B, and
 * k = M is GPipe). Interleaved is Megatron-LM's 1F1B over V chunks, bfs
 * its breadth-first counterpart (order_direct.h). */
#include "sched/order_direct.h"

#include <stdlib.h>

#include "sched/emit.h"

static int push_group(struct wp_schedule *s, int rank, int op, int stage, int group, int k,
                      struct wp_err *err)
{
    for (int m = group * k; m < (group + 1) * k && m < s->nmicro; m++)
        if (wp_sched_emit(s, rank, op, stage, m, err))
            return -1;
    return 0;
}

int wp_sched_order_grouped(struct wp_schedule *s, struct wp_err *err)
{
    const struct wp_sched_params *p = &s->params;
    int S = s->nstages, M = s->nmicro;
    int k = p->kind == WP_SCHED_GPIPE ? M : p->kind == WP_SCHED_1F1B ? 1 : p->k;
    int groups = (M + k - 1) / k;
    for (int st = 0; st < S; st++) {
        int warmup;
        if (p->kind == WP_SCHED_GPIPE)
            warmup = groups;
        else if (p->policy == 'B')
            warmup = 2 * (S - st) - 1;
        else
            warmup = S - st;
        if (p->max_inflight > 0 && warmup * k > p->max_inflight)
            warmup = p->max_inflight / k > 0 ? p->max_inflight / k : 1;
        if (warmup > groups)
            warmup = groups;
        for (int j = 0; j < s->place[st].nreplicas; j++) {
            int rank = s->place[st].ranks[j];
            int next_f = 0, next_b = 0;
            for (; next_f < warmup; next_f++)
                if (push_group(s, rank, WP_OP_F, st, next_f, k, err))
                    return -1;
            while (next_b < groups) {
                if (push_group(s, rank, WP_OP_B, st, next_b++, k, err))
                    return -1;
                if (next_f < groups && push_group(s, rank, WP_OP_F, st, next_f++, k, err))
                    return -1;
            }
        }
    }
    return 0;
}

/* Megatron-LM's interleaved order over V chunks per rank (chunk c of a rank
 * is the c-th lowest stage it holds, stage cP + r): micro-batches go in
 * groups of P; forward unit u of a rank runs chunk c of every micro-batch
 * of a group before chunk c + 1, backward units run the chunks in reverse;
 * warm-up (P - r - 1) * 2 + (V - 1) * P units, then one forward and one
 * backward per step, then the remaining backwards. */
int wp_sched_order_interleaved(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, M = s->nmicro, V = s->nstages / P;
    int total = M * V;
    int *stage_of = malloc((size_t)V * sizeof *stage_of);
    int *unit_chunk = malloc((size_t)total * sizeof *unit_chunk);
    int *unit_mb = malloc((size_t)total * sizeof *unit_mb);
    int rc = stage_of && unit_chunk && unit_mb ? 0 : wp_errorf(err, "out of memory");
    /* the unit sequence: groups of P micro-batches, chunk by chunk */
    for (int g = 0, u = 0; rc == 0 && g * P < M; g++) {
        int end = (g + 1) * P < M ? (g + 1) * P : M;
        for (int c = 0; c < V; c++)
            for (int m = g * P; m < end; m++, u++) {
                unit_chunk[u] = c;
                unit_mb[u] = m;
            }
    }
    for (int r = 0; r < P && rc == 0; r++) {
        for (int st = 0, c = 0; st < s->nstages; st++)
            if (s->place[st].ranks[0] == r && c < V)
                stage_of[c++] = st;
        int warmup = (P - r - 1) * 2 + (V - 1) * P;
        if (warmup > total)
            warmup = total;
        int remaining = total - warmup;
#define FWD(u) wp_sched_emit(s, r, WP_OP_F, stage_of[unit_chunk[u]], unit_mb[u], err)
#define BWD(u) wp_sched_emit(s, r, WP_OP_B, stage_of[V - 1 - unit_chunk[u]], unit_mb[u], err)
        for (int u = 0; u < warmup && rc == 0; u++)
            rc = FWD(u);
        for (int i = 0; i < remaining && rc == 0; i++)
            rc = FWD(warmup + i) || BWD(i) ? -1 : 0;
        for (int i = remaining; i < total && rc == 0; i++)
            rc = BWD(i);
#undef FWD
#undef BWD
    }
    free(stage_of);
    free(unit_chunk);
    free(unit_mb);
    return rc;
}

int wp_sched_order_bfs(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, M = s->nmicro, V = s->nstages / P;
    for (int r = 0; r < P; r++) {
        for (int c = 0; c < V; c++) /* chunk c of rank r is stage cP + r (place.c) */
            for (int m = 0; m < M; m++)
                if (wp_sched_emit(s, r, WP_OP_F, c * P + r, m, err))
                    return -1;
        for (int c = V - 1; c >= 0; c--)
            for (int m = 0; m < M; m++)
                if (wp_sched_emit(s, r, WP_OP_B, c * P + r, m, err))
                    return -1;
    }
    return 0;
}
