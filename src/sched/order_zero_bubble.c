/* Zero-bubble orders in closed form, all with the backward split into B
 * (input gradient) and W (weight gradient):
 *  - zb-h1: the zero-bubble paper's ZB-H1 (Qi et al. 2024, section 3;
 *    PyTorch's ZB1P with one stage per rank): rank r warms up with P-1-r
 *    forwards, then runs F B pairs, and after its first r pairs follows
 *    each B with the oldest pending W; the W it kept back fill the drain.
 *    Each rank holds at most P micro-batches from F until W, 1F1B's peak.
 *    With --chunks V (PyTorch's ScheduleInterleavedZeroBubble, the paper's
 *    ZB1P with V stages a rank) the stages are looped (stage cP + r on rank
 *    r) and the passes go in Megatron-LM's interleaved sequence: V P - 1 - r
 *    forwards, then F B pairs, each B after the first r followed by the
 *    oldest W; P micro-batches' worth still. At M = P it takes
 *    M (tf+tb+tw) + (P-1) tf / V with tf = tb = tw (what no order on
 *    either placement of two chunks can beat: rank P-1's first pass waits
 *    for P-1 chunk forwards).
 *  - zb-v: the paper's ZB-V (section 6): two stages per rank in a V
 *    (stage r and 2P-1-r on rank r), warm-up of 2(P-r)-1 forwards of the
 *    first chunk, r pairs of forwards, P-r triples F B W on the second
 *    chunk, then F B W on each chunk in turn; memory as 1F1B.
 *  - dualpipev: DeepSeek's DualPipeV (DeepSeek-V3 report, section 3.2.1,
 *    folded into a V as in PyTorch's ScheduleDualPipeV): the same V, a
 *    steady phase of forward-backward pairs across the two chunks (run one
 *    after the other here: what a GPU overlaps is the pair's all-to-all,
 *    which these models do not have), B without W early and W late.
 * Each order is one list per rank built by counters: the next micro-batch
 * of each (stage, pass) is taken in turn. --max-inflight D caps what a
 * rank keeps between F and W in zb-h1. On a schedule whose backward is not
 * split, the zb-v order is the V-shaped 1F1B (every W joins its B): Hanayo
 * with one wave has that very placement and takes it as a candidate. */
#include "sched/order_zero_bubble.h"

#include <stdlib.h>

#include "sched/emit.h"

/* Per-rank builder: the next micro-batch of each (local chunk, pass) and
 * the queue of W owed after a B. */
struct rank_program {
    struct wp_schedule *s;
    int rank;
    int nchunks;
    const int *stage_of_chunk;
    int (*next)[3];   /* [chunk][op]: next micro-batch */
    int *w_queue;     /* chunks of B whose W is owed, oldest first */
    int w_head, w_tail;
    struct wp_err *err;
    int failed;
};

static int program_init(struct rank_program *pr, struct wp_schedule *s, int rank, int nchunks,
                        const int *stage_of_chunk, struct wp_err *err)
{
    *pr = (struct rank_program){s, rank, nchunks, stage_of_chunk, NULL, NULL, 0, 0, err, 0};
    pr->next = calloc((size_t)nchunks, sizeof *pr->next);
    pr->w_queue = malloc((size_t)(nchunks * s->nmicro + 1) * sizeof *pr->w_queue);
    if (pr->next && pr->w_queue)
        return 0;
    free(pr->next);
    free(pr->w_queue);
    return wp_errorf(err, "out of memory");
}

/* Appends the next micro-batch of pass op on chunk c; returns 0 when
 * every micro-batch had it (the closed forms may ask for more than M). */
static inline int emit(struct rank_program *pr, int c, int op)
{
    int m = pr->next[c][op];
    if (pr->failed || m >= pr->s->nmicro || (op == WP_OP_W && !pr->s->split_backward))
        return 0;
    pr->next[c][op]++;
    if (wp_sched_emit(pr->s, pr->rank, op, pr->stage_of_chunk[c], m, pr->err))
        pr->failed = 1;
    if (op == WP_OP_B && pr->s->split_backward)
        pr->w_queue[pr->w_tail++] = c;
    return 1;
}

/* The oldest W still owed, if any. */
static void emit_owed_w(struct rank_program *pr)
{
    if (pr->w_head < pr->w_tail)
        emit(pr, pr->w_queue[pr->w_head++], WP_OP_W);
}

/* A backward followed at once by its W (what PyTorch calls a full backward). */
static void emit_full_backward(struct rank_program *pr, int c)
{
    if (!emit(pr, c, WP_OP_B) || !pr->s->split_backward)
        return;
    pr->w_tail--; /* its W is not owed: it comes now */
    emit(pr, c, WP_OP_W);
}

static int program_end(struct rank_program *pr)
{
    while (!pr->failed && pr->w_head < pr->w_tail)
        emit_owed_w(pr);
    int rc = pr->failed ? -1 : 0;
    for (int c = 0; c < pr->nchunks && rc == 0; c++)
        for (int op = WP_OP_F; op <= (pr->s->split_backward ? WP_OP_W : WP_OP_B); op++)
            if (pr->next[c][op] != pr->s->nmicro)
                rc = wp_errorf(pr->err, "%s: rank %d ran %d of %d micro-batches of stage %d pass %s (bug)",
                               wp_sched_kind_name(pr->s->params.kind), pr->rank, pr->next[c][op], pr->s->nmicro,
                               pr->stage_of_chunk[c], wp_op_name(op));
    free(pr->w_queue);
    free(pr->next);
    return rc;
}

/* The chunk of rank-local unit u in Megatron-LM's interleaved sequence
 * (groups of P micro-batches, chunk by chunk; M a multiple of P). */
static int unit_chunk(int u, int P, int V)
{
    return (u % (P * V)) / P;
}

int wp_sched_order_zbh1(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, M = s->nmicro, D = s->params.max_inflight, V = s->nstages / P;
    int *stage_of_chunk = malloc((size_t)V * sizeof *stage_of_chunk);
    if (!stage_of_chunk)
        return wp_errorf(err, "out of memory");
    int rc = 0;
    for (int r = 0; r < P && rc == 0; r++) {
        for (int c = 0; c < V; c++) /* stage cP + r (place.c) */
            stage_of_chunk[c] = c * P + r;
        /* in units of a chunk: what rank r holds is its warm-up, the unit
         * between a forward and its backward, and the W it keeps back: V P
         * units, P micro-batches' worth, or V D with --max-inflight D */
        int warmup = V * P - 1 - r, deferred = r;
        if (D > 0) {
            if (warmup > V * D - 1)
                warmup = V * D - 1;
            if (deferred > V * D - 1 - warmup)
                deferred = V * D - 1 - warmup;
        }
        if (warmup > V * M)
            warmup = V * M;
        struct rank_program pr;
        if (program_init(&pr, s, r, V, stage_of_chunk, err)) {
            rc = -1;
            break;
        }
        int f = 0;
        for (; f < warmup; f++)
            emit(&pr, unit_chunk(f, P, V), WP_OP_F);
        for (int i = 0; i < V * M; i++) {
            if (f < V * M) /* none left in the drain */
                emit(&pr, unit_chunk(f++, P, V), WP_OP_F);
            emit(&pr, V - 1 - unit_chunk(i, P, V), WP_OP_B);
            if (i >= deferred)
                emit_owed_w(&pr);
        }
        rc = program_end(&pr);
    }
    free(stage_of_chunk);
    return rc;
}

/* Rank r's program on a V of 2P stages: chunk 0 is stage r, chunk 1 stage
 * 2P-1-r (st keeps them for the program). */
static int v_program_init(struct rank_program *pr, struct wp_schedule *s, int r, int st[2], struct wp_err *err)
{
    st[0] = r;
    st[1] = 2 * s->nranks - 1 - r;
    return program_init(pr, s, r, 2, st, err);
}

int wp_sched_order_zbv(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks;
    /* the construction needs 2P-1 micro-batches to fill the V; with fewer,
     * the ones past M are skipped and the order stays valid */
    int n = s->nmicro > 2 * P - 1 ? s->nmicro : 2 * P - 1;
    for (int r = 0; r < P; r++) {
        int st[2];
        struct rank_program pr;
        if (v_program_init(&pr, s, r, st, err))
            return -1;
        for (int i = 0; i < 2 * (P - r) - 1; i++)
            emit(&pr, 0, WP_OP_F);
        for (int i = 0; i < r; i++) {
            emit(&pr, 1, WP_OP_F);
            emit(&pr, 0, WP_OP_F);
        }
        for (int i = 0; i < P - r; i++) {
            emit(&pr, 1, WP_OP_F);
            emit_full_backward(&pr, 1);
        }
        /* steady: F B W on chunk 0, then on chunk 1, until every forward ran */
        int f0 = 2 * (P - r) - 1 + r, f1 = r + (P - r);
        while (f1 < f0 || f0 < n) {
            if (f0 < n) {
                emit(&pr, 0, WP_OP_F);
                f0++;
            }
            emit_full_backward(&pr, 0);
            emit(&pr, 1, WP_OP_F);
            f1++;
            emit_full_backward(&pr, 1);
        }
        /* drain: B of both chunks with W held back, then B W on chunk 0 */
        for (int i = 0; i < r; i++) {
            emit(&pr, 0, WP_OP_B);
            emit(&pr, 1, WP_OP_B);
        }
        for (int i = 0; i < P - r; i++) {
            emit(&pr, 0, WP_OP_B);
            emit_owed_w(&pr);
        }
        if (program_end(&pr))
            return -1;
    }
    return 0;
}

int wp_sched_order_dualpipev(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, M = s->nmicro;
    for (int r = 0; r < P; r++) {
        int st[2];
        struct rank_program pr;
        if (v_program_init(&pr, s, r, st, err))
            return -1;
        for (int i = 0; i < 2 * (P - r - 1); i++)
            emit(&pr, 0, WP_OP_F);
        for (int i = 0; i < r + 1; i++) {
            emit(&pr, 0, WP_OP_F);
            emit(&pr, 1, WP_OP_F);
        }
        for (int i = 0; i < P - r - 1; i++) {
            emit(&pr, 1, WP_OP_B);
            emit_owed_w(&pr);
            emit(&pr, 1, WP_OP_F);
        }
        /* steady: pairs F(chunk 0) + B(chunk 1), F(chunk 1) + B(chunk 0) */
        for (int i = 0; i < M - 2 * P + r + 1; i++) {
            emit(&pr, 0, WP_OP_F);
            emit_full_backward(&pr, 1);
            emit(&pr, 1, WP_OP_F);
            emit_full_backward(&pr, 0);
        }
        for (int i = 0; i < P - r - 1; i++) {
            emit_full_backward(&pr, 1);
            emit(&pr, 1, WP_OP_F);
            emit_full_backward(&pr, 0);
        }
        /* drain: B of both chunks, the W kept back from halfway on */
        int split = 0;
        for (int i = 0; i < r + 1; i++) {
            if (i == (r + 1) / 2 && r % 2 == 1)
                split = 1;
            if (split)
                emit(&pr, 1, WP_OP_B);
            else
                emit_full_backward(&pr, 1);
            if (i == (r + 1) / 2 && r % 2 == 0)
                split = 1;
            if (split)
                emit(&pr, 0, WP_OP_B);
            else
                emit_full_backward(&pr, 0);
        }
        for (int i = 0; i < P - r - 1; i++) {
            emit_owed_w(&pr);
            if (split)
                emit(&pr, 0, WP_OP_B);
            else
                emit_full_backward(&pr, 0);
        }
        if (program_end(&pr))
            return -1;
    }
    return 0;
}
