/* Orders built in closed form. Grouped early backward covers three kinds:
 * with groups of k micro-batches a stage runs its warm-up groups of
 * forwards, then alternates one group of backwards and one of forwards,
 * then drains (Ada-Grouper's kFkB; k = 1 is DAPPLE's 1F1B with warm-up
 * K_i = min(S-i, D) under policy A or min(2(S-i)-1, D) under policy B, and
 * k = M is GPipe). Interleaved is Megatron-LM's 1F1B over V chunks. */
#include "sched/generate.h"

static int push_group(struct wp_schedule *s, int rank, int op, int stage, int group, int k,
                      struct wp_err *err)
{
    for (int m = group * k; m < (group + 1) * k && m < s->nmicro; m++)
        if (wp_schedule_push(s, rank, op, stage, m, -1, err))
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

/* Megatron-LM's order: virtual step u of a rank runs micro-batch
 * (u / (P V)) P + u mod P in chunk (u / P) mod V (reversed for backward);
 * warm-up (P - r - 1) * 2 + (V - 1) * P steps, then one forward and one
 * backward per step, then the remaining backwards. */
int wp_sched_order_interleaved(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, V = s->params.chunks, M = s->nmicro;
    int total = M * V;
    for (int r = 0; r < P; r++) {
        int warmup = (P - r - 1) * 2 + (V - 1) * P;
        if (warmup > total)
            warmup = total;
        int remaining = total - warmup;
#define UNIT_MB(u) (((u) / (P * V)) * P + (u) % P)
#define UNIT_CHUNK(u) (((u) / P) % V)
        for (int u = 0; u < warmup; u++)
            if (wp_schedule_push(s, r, WP_OP_F, UNIT_CHUNK(u) * P + r, UNIT_MB(u), -1, err))
                return -1;
        for (int i = 0; i < remaining; i++) {
            int uf = warmup + i;
            if (wp_schedule_push(s, r, WP_OP_F, UNIT_CHUNK(uf) * P + r, UNIT_MB(uf), -1, err) ||
                wp_schedule_push(s, r, WP_OP_B, (V - 1 - UNIT_CHUNK(i)) * P + r, UNIT_MB(i), -1, err))
                return -1;
        }
        for (int i = remaining; i < total; i++)
            if (wp_schedule_push(s, r, WP_OP_B, (V - 1 - UNIT_CHUNK(i)) * P + r, UNIT_MB(i), -1, err))
                return -1;
#undef UNIT_MB
#undef UNIT_CHUNK
    }
    return 0;
}
