/* Zero-bubble orders in closed form, all with the backward split into B
 * (input gradient) and W (weight gradient):
 *  - zb-h1: the zero-bubble paper's ZB-H1 (Qi et al. 2024, section 3;
 *    PyTorch's ZB1P with one stage per rank): rank r warms up with P-1-r
 *    forwards, then runs F B pairs, and after its first r pairs follows
 *    each B with the oldest pending W; the W it kept back fill the drain.
 *    Each rank holds at most P micro-batches from F until W, 1F1B's peak.
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
    int next[2][3];   /* [chunk][op]: next micro-batch */
    int *w_queue;     /* chunks of B whose W is owed, oldest first */
    int w_head, w_tail;
    struct wp_err *err;
    int failed;
};

static int program_init(struct rank_program *pr, struct wp_schedule *s, int rank, int nchunks,
                        const int *stage_of_chunk, struct wp_err *err)
{
    *pr = (struct rank_program){s, rank, nchunks, stage_of_chunk, {{0}}, NULL, 0, 0, err, 0};
    pr->w_queue = malloc((size_t)(2 * s->nmicro + 1) * sizeof *pr->w_queue);
    return pr->w_queue ? 0 : wp_errorf(err, "out of memory");
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
    return rc;
}

int wp_sched_order_zbh1(struct wp_schedule *s, struct wp_err *err)
{
    int P = s->nranks, M = s->nmicro, D = s->params.max_inflight;
    for (int r = 0; r < P; r++) {
        int warmup = P - 1 - r, deferred = r;
        if (D > 0) {
            if (warmup > D - 1)
                warmup = D - 1;
            if (deferred > D - 1 - warmup)
                deferred = D - 1 - warmup;
        }
        if (warmup > M)
            warmup = M;
        struct rank_program pr;
        if (program_init(&pr, s, r, 1, &r, err))
            return -1;
        for (int i = 0; i < warmup; i++)
            emit(&pr, 0, WP_OP_F);
        for (int i = 0; i < M; i++) {
            emit(&pr, 0, WP_OP_F); /* past M in the drain: skipped */
            emit(&pr, 0, WP_OP_B);
            if (i >= deferred)
                emit_owed_w(&pr);
        }
        if (program_end(&pr))
            return -1;
    }
    return 0;
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
