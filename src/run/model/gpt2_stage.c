/* Forward and backward of a GPT-2 pipeline stage (llm.c's algorithm),
 * with the backward split into an input-gradient pass and a
 * weight-gradient pass that make the same calls in the same order whether
 * they run back to back (B) or apart (B, later W); the slots' layouts
 * (full, or thin plus one work slot on a stage that recomputes its forward
 * before each backward). A stage with a tensor group runs each block's
 * matmuls on its pieces with the collectives of plan/tp_block.h between
 * them; without one (a group of 1 x 1) the same code makes no collective
 * and no copy. */
#include "run/model/gpt2_stage.h"

#include "run/comm/tensor_group.h"

#include <stdlib.h>
#include <string.h>

/* Forward activations of one block for one slot, (N = B*T rows). With a
 * tensor group of p1 x p2: C1 = C/p1 (this rank's heads), C2 = C/p2 (its
 * columns of the residual stream), Nl = N/p2 (its sequences' rows); all
 * of them C and N without one. */
struct wp_block_acts {
    float *ln1, *ln1_mean, *ln1_rstd; /* (N,C) (N) (N) */
    float *ln1c;                      /* (N,C2) the matmul's columns of ln1 (ln1 itself when p2 = 1) */
    float *qkv;                       /* (Nl,3C1) */
    float *atty;                      /* (N,C1) attention output before its projection */
    float *lse;                       /* (B/p2,NH/p1,T) attention's log-sum-exp per row */
    float *residual2;                 /* (N,C) x + attproj */
    float *ln2, *ln2_mean, *ln2_rstd; /* (N,C) (N) (N) */
    float *ln2c;                      /* (N,C2) */
    float *fch;                       /* (Nl,4C1) */
    float *fch_gelu;                  /* (N,4C1) */
    float *residual3;                 /* (N,C) block output */
    struct block_grads *saved;        /* split backward: what W needs */
};

/* Gradients a block's weight pass needs (outputs of its matmuls and LNs). */
struct block_grads {
    float *dfcproj, *dfch, *dln2, *dattproj, *dqkv, *dln1; /* (N,C2) (N,4C1) (N,C) (N,C2) (N,3C1) (N,C) */
};

/* The stage's split over its tensor group (1 x 1 without one). */
struct tp_dims {
    int p1, p2, j1, j2;
    size_t N, Nl, C, C1, C2, B, Bl, T, NH1;
};

static struct tp_dims dims_of(const struct wp_gpt2_stage *st)
{
    struct tp_dims d = {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    if (st->tg) {
        d.p1 = st->tg->shard.p1;
        d.p2 = st->tg->shard.p2;
        d.j1 = st->tg->shard.j1;
        d.j2 = st->tg->shard.j2;
    }
    d.B = (size_t)st->B;
    d.T = (size_t)st->g.sequence_length;
    d.C = (size_t)st->g.channels;
    d.N = d.B * d.T;
    d.Bl = d.B / (size_t)d.p2;
    d.Nl = d.Bl * d.T;
    d.C1 = d.C / (size_t)d.p1;
    d.C2 = d.C / (size_t)d.p2;
    d.NH1 = (size_t)st->g.heads / (size_t)d.p1;
    return d;
}

/* A bump allocator over one backend allocation per slot; with base NULL it
 * only counts (what a layout needs, from the same code that lays it out). */
struct carve {
    float *base;
    size_t used;
};

static float *take(struct carve *c, size_t floats)
{
    float *p = c->base ? c->base + c->used : NULL;
    c->used += (floats + 15) & ~(size_t)15; /* 64-byte steps */
    return p;
}

static float *param(const struct wp_gpt2_stage *st, float *base, int block, enum wp_tensor_role role)
{
    long off = wp_stage_layout_find(&st->layout, wp_gpt2_tensor_index(st->g.layers, block, role));
    return off < 0 ? NULL : base + off;
}

static void carve_block_grads(struct carve *c, struct block_grads *bg, const struct tp_dims *d)
{
    bg->dfcproj = take(c, d->N * d->C2);
    bg->dfch = take(c, d->N * 4 * d->C1);
    bg->dln2 = take(c, d->N * d->C);
    bg->dattproj = take(c, d->N * d->C2);
    bg->dqkv = take(c, d->N * 3 * d->C1);
    bg->dln1 = take(c, d->N * d->C);
}

static size_t block_grads_floats(const struct tp_dims *d)
{
    struct carve c = {NULL, 0};
    struct block_grads counted;
    carve_block_grads(&c, &counted, d);
    return c.used;
}

/* What a slot holds. FULL: a micro-batch's boundaries and every activation
 * its backward reads. THIN: what a recomputing stage keeps per micro-batch,
 * the boundaries alone (input, output, gradients, tokens, losses). WORK: a
 * recomputing stage's one set of activations inside the stage, its
 * boundaries those of the thin slot it runs (acts_of). */
enum slot_kind { SLOT_FULL, SLOT_THIN, SLOT_WORK };

/* Lays out a slot of kind in c (s->blocks and their `saved` made by the
 * caller, or NULL to count only). */
static void carve_slot(const struct wp_gpt2_stage *st, struct carve *c, struct wp_stage_slot *s, enum slot_kind kind)
{
    struct tp_dims d = dims_of(st);
    size_t T = d.T, C = d.C, V = (size_t)st->g.vocabulary, N = d.N;
    int nblocks = st->layout.end_block - st->layout.first_block;
    if (kind != SLOT_WORK) {
        s->input = take(c, N * C);
        s->dout = take(c, N * C);
        s->dinput = take(c, N * C);
        s->tokens = (int *)take(c, N);
        s->targets = (int *)take(c, N);
    }
    if (kind == SLOT_THIN) {
        s->output = take(c, N * C);
        if (st->layout.has_head)
            s->losses = take(c, N);
        return;
    }
    for (int b = 0; b < nblocks; b++) {
        struct wp_block_acts counted = {0}, *a = s->blocks ? &s->blocks[b] : &counted;
        a->ln1 = take(c, N * C);
        a->ln1_mean = take(c, N);
        a->ln1_rstd = take(c, N);
        a->qkv = take(c, d.Nl * 3 * d.C1);
        a->atty = take(c, N * d.C1);
        a->lse = take(c, d.Bl * d.NH1 * T);
        a->residual2 = take(c, N * C);
        a->ln2 = take(c, N * C);
        a->ln2_mean = take(c, N);
        a->ln2_rstd = take(c, N);
        a->fch = take(c, d.Nl * 4 * d.C1);
        a->fch_gelu = take(c, N * 4 * d.C1);
        a->residual3 = take(c, N * C);
        (void)take(c, N * C); /* keeps the per-block size a multiple of the C-sized pieces */
        a->ln1c = d.p2 > 1 ? take(c, N * d.C2) : a->ln1;
        a->ln2c = d.p2 > 1 ? take(c, N * d.C2) : a->ln2;
        if (st->split_backward) {
            struct block_grads none;
            carve_block_grads(c, a->saved ? a->saved : &none, &d);
        }
    }
    s->output = s->blocks ? s->blocks[nblocks - 1].residual3 : NULL;
    if (st->layout.has_head) {
        s->lnf = take(c, N * C);
        s->lnf_mean = take(c, N);
        s->lnf_rstd = take(c, N);
        s->losses = take(c, N);
        s->probs = take(c, N * V);
        if (st->split_backward) {
            s->dlogits = take(c, N * V);
            (void)take(c, N * C); /* dlnf, after dlogits (head_grads) */
        }
    }
}

static size_t slot_floats(const struct wp_gpt2_stage *st, enum slot_kind kind)
{
    struct carve c = {NULL, 0};
    struct wp_stage_slot counted = {0};
    carve_slot(st, &c, &counted, kind);
    return c.used;
}

/* The kind of the slots kept per micro-batch in flight. */
static enum slot_kind kept_kind(const struct wp_gpt2_stage *st)
{
    return st->recompute ? SLOT_THIN : SLOT_FULL;
}

size_t wp_gpt2_stage_slot_bytes(const struct wp_gpt2_stage *st)
{
    return slot_floats(st, kept_kind(st)) * sizeof(float);
}

size_t wp_gpt2_stage_work_bytes(const struct wp_gpt2_stage *st)
{
    return st->recompute ? slot_floats(st, SLOT_WORK) * sizeof(float) : 0;
}

size_t wp_gpt2_stage_act_bytes(const struct wp_gpt2_stage *st)
{
    return (size_t)st->B * st->g.sequence_length * st->g.channels * sizeof(float);
}

static int init_slot(struct wp_gpt2_stage *st, struct wp_stage_slot *s, enum slot_kind kind, struct wp_err *err)
{
    int nblocks = kind == SLOT_THIN ? 0 : st->layout.end_block - st->layout.first_block;
    size_t floats = slot_floats(st, kind);
    s->memory = st->k->alloc(floats * sizeof(float));
    s->blocks = nblocks ? calloc((size_t)nblocks, sizeof *s->blocks) : NULL;
    if (!s->memory || (nblocks && !s->blocks))
        return wp_errorf(err, "cannot allocate %.1f MiB of activations for a micro-batch slot",
                         floats * 4.0 / 1048576);
    for (int b = 0; b < nblocks && st->split_backward; b++)
        if (!(s->blocks[b].saved = calloc(1, sizeof *s->blocks[b].saved)))
            return wp_errorf(err, "out of memory");
    struct carve c = {s->memory, 0};
    carve_slot(st, &c, s, kind);
    return 0;
}

static void free_slot(struct wp_gpt2_stage *st, struct wp_stage_slot *s)
{
    int nblocks = st->layout.end_block - st->layout.first_block;
    if (s->memory)
        st->k->release(s->memory);
    for (int b = 0; s->blocks && b < nblocks; b++)
        free(s->blocks[b].saved);
    free(s->blocks);
    memset(s, 0, sizeof *s);
}

/* The scratch and the slots, for st->B sequences in st->nslots slots. */
static int alloc_activations(struct wp_gpt2_stage *st, struct wp_err *err)
{
    const struct wp_kernel_ops *k = st->k;
    size_t T = (size_t)st->g.sequence_length, C = (size_t)st->g.channels, N = (size_t)st->B * T;
    size_t V = (size_t)st->g.vocabulary;
    st->dres = k->alloc(3 * N * C * sizeof(float));
    st->dscratch_c = k->alloc(2 * N * C * sizeof(float));
    st->dscratch_4c = k->alloc(N * 4 * C * sizeof(float));
    struct tp_dims d = dims_of(st);
    st->dscratch_4c2 = k->alloc(block_grads_floats(&d) * sizeof(float));
    st->logits = k->alloc(N * V * sizeof(float));
    st->slots = calloc((size_t)st->nslots, sizeof *st->slots);
    int tp = d.p1 * d.p2 > 1;
    if (tp) {
        st->tp_wide = k->alloc(N * 4 * d.C1 * sizeof(float));
        st->tp_local = k->alloc(d.Nl * 4 * d.C1 * sizeof(float));
        st->tp_narrow = k->alloc(N * d.C2 * sizeof(float));
    }
    if (!st->dres || !st->dscratch_c || !st->dscratch_4c || !st->dscratch_4c2 || !st->logits || !st->slots ||
        (tp && (!st->tp_wide || !st->tp_local || !st->tp_narrow)))
        return wp_errorf(err, "cannot allocate the stage's scratch for micro-batch slices of %d", st->B);
    for (int i = 0; i < st->nslots; i++)
        if (init_slot(st, &st->slots[i], kept_kind(st), err))
            return -1;
    return st->recompute ? init_slot(st, &st->work, SLOT_WORK, err) : 0;
}

static void free_activations(struct wp_gpt2_stage *st)
{
    const struct wp_kernel_ops *k = st->k;
    for (int i = 0; st->slots && i < st->nslots; i++)
        free_slot(st, &st->slots[i]);
    free(st->slots);
    st->slots = NULL;
    free_slot(st, &st->work);
    float **bufs[] = {&st->dres,   &st->dscratch_c, &st->dscratch_4c, &st->dscratch_4c2,
                      &st->logits, &st->tp_wide,    &st->tp_local,    &st->tp_narrow};
    for (size_t i = 0; k && i < sizeof bufs / sizeof bufs[0]; i++) {
        if (*bufs[i])
            k->release(*bufs[i]);
        *bufs[i] = NULL;
    }
}

int wp_gpt2_stage_reshape(struct wp_gpt2_stage *st, int B, int nslots, struct wp_err *err)
{
    free_activations(st);
    st->B = B;
    st->nslots = nslots;
    return alloc_activations(st, err);
}

int wp_gpt2_stage_init(struct wp_gpt2_stage *st, const struct wp_kernel_ops *k, const struct wp_gpt2_config *g,
                       int first_block, int end_block, int B, int nslots, int split_backward, int recompute,
                       unsigned long long seed, struct wp_tensor_group *tg, struct wp_err *err)
{
    memset(st, 0, sizeof *st);
    if (wp_gpt2_stage_modes_check(split_backward, recompute, err))
        return -1;
    st->k = k;
    st->tg = tg;
    st->g = *g;
    st->B = B;
    st->nslots = nslots;
    st->split_backward = split_backward;
    st->recompute = recompute;
    if (wp_stage_layout_init(&st->layout, g, first_block, end_block, tg ? &tg->shard : NULL, err))
        return -1;
    size_t P = st->layout.total * sizeof(float);
    size_t VC = (size_t)g->vocabulary * g->channels;
    int both_ends = st->layout.has_embedding && st->layout.has_head;
    st->grad_floats = st->layout.total + (both_ends ? VC : 0);
    st->params = k->alloc(P);
    st->grads = k->alloc(st->grad_floats * sizeof(float));
    st->m = k->alloc(P);
    st->v = k->alloc(P);
    st->weights = k->get_precision() == WP_PRECISION_BF16 ? k->alloc(P) : st->params;
    if (!st->params || !st->grads || !st->m || !st->v || !st->weights) {
        wp_gpt2_stage_destroy(st);
        return wp_errorf(err, "cannot allocate the stage's parameters (%.1f MiB)", 4.0 * P / 1048576);
    }
    float *wte_grad = param(st, st->grads, -1, WP_T_WTE);
    st->wte_grad_head = st->layout.has_head ? wte_grad : NULL;
    st->wte_grad_embedding = both_ends ? st->grads + st->layout.total : st->layout.has_embedding ? wte_grad : NULL;
    if (alloc_activations(st, err)) {
        wp_gpt2_stage_destroy(st);
        return -1;
    }
    float *host = malloc(P);
    if (!host || wp_stage_params_init(&st->layout, g, seed, host)) {
        free(host);
        wp_gpt2_stage_destroy(st);
        return wp_errorf(err, "out of memory");
    }
    k->to_device(st->params, host, P);
    free(host);
    wp_gpt2_stage_weights_refresh(st);
    return 0;
}

void wp_gpt2_stage_weights_refresh(struct wp_gpt2_stage *st)
{
    if (st->weights != st->params)
        st->k->round_copy(st->weights, st->params, st->layout.total);
}

void wp_gpt2_stage_destroy(struct wp_gpt2_stage *st)
{
    const struct wp_kernel_ops *k = st->k;
    free_activations(st);
    float *bufs[] = {st->params, st->grads, st->m, st->v, st->weights != st->params ? st->weights : NULL};
    for (size_t i = 0; k && i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            k->release(bufs[i]);
    wp_stage_layout_destroy(&st->layout);
    memset(st, 0, sizeof *st);
}

int wp_gpt2_stage_modes_check(int split_backward, int recompute, struct wp_err *err)
{
    if (split_backward && recompute)
        return wp_errorf(err, "a stage that recomputes its forward cannot split its backward into B and W (W would "
                              "need the activations B used, which the stage does not keep): recompute with a "
                              "schedule whose backward is whole");
    return 0;
}

/* Blocks [lo, hi) are one run of tensors in the stage's buffers (model
 * order): their first float and count. */
static void blocks_span(const struct wp_gpt2_stage *st, int lo, int hi, size_t *first, size_t *count)
{
    int L = st->g.layers;
    long a = wp_stage_layout_find(&st->layout, wp_gpt2_tensor_index(L, lo, WP_T_LN1W));
    long z = wp_stage_layout_find(&st->layout, wp_gpt2_tensor_index(L, hi - 1, WP_T_FCPROJB));
    size_t last = wp_gpt2_shard_numel(&st->g, wp_gpt2_tensor_index(L, hi - 1, WP_T_FCPROJB), &st->layout.shard);
    *first = hi > lo && a >= 0 ? (size_t)a : 0;
    *count = hi > lo && a >= 0 && z >= a ? (size_t)z + last - (size_t)a : 0;
}

size_t wp_gpt2_stage_blocks_state(const struct wp_gpt2_stage *st, int lo, int hi, float *out)
{
    size_t first, n;
    blocks_span(st, lo, hi, &first, &n);
    if (out) {
        st->k->to_host(out, st->params + first, n * sizeof(float));
        st->k->to_host(out + n, st->m + first, n * sizeof(float));
        st->k->to_host(out + 2 * n, st->v + first, n * sizeof(float));
    }
    return 3 * n;
}

void wp_gpt2_stage_set_blocks_state(struct wp_gpt2_stage *st, int lo, int hi, const float *in)
{
    size_t first, n;
    blocks_span(st, lo, hi, &first, &n);
    st->k->to_device(st->params + first, in, n * sizeof(float));
    st->k->to_device(st->m + first, in + n, n * sizeof(float));
    st->k->to_device(st->v + first, in + 2 * n, n * sizeof(float));
    wp_gpt2_stage_weights_refresh(st);
}

int wp_gpt2_stage_adopt(struct wp_gpt2_stage *st, const struct wp_gpt2_stage *old)
{
    size_t most = 0;
    for (int i = 0; i < st->layout.ntensors; i++)
        most = st->layout.numel[i] > most ? st->layout.numel[i] : most;
    float *host = malloc((most ? most : 1) * sizeof *host);
    if (!host)
        return -1;
    for (int i = 0; i < st->layout.ntensors; i++) {
        long from = wp_stage_layout_find(&old->layout, st->layout.tensors[i]);
        if (from < 0)
            continue;
        size_t to = st->layout.offset[i], bytes = st->layout.numel[i] * sizeof(float);
        const float *src[3] = {old->params, old->m, old->v};
        float *dst[3] = {st->params, st->m, st->v};
        for (int b = 0; b < 3; b++) { /* through the host: exact on every backend */
            st->k->to_host(host, src[b] + from, bytes);
            st->k->to_device(dst[b] + to, host, bytes);
        }
    }
    free(host);
    wp_gpt2_stage_weights_refresh(st);
    return 0;
}

void wp_gpt2_stage_set_tokens(struct wp_gpt2_stage *st, int slot, const int *inputs, const int *targets)
{
    size_t n = (size_t)st->B * st->g.sequence_length * sizeof(int);
    if (inputs)
        st->k->to_device(st->slots[slot].tokens, inputs, n);
    if (targets)
        st->k->to_device(st->slots[slot].targets, targets, n);
}

static const float *block_input(const struct wp_stage_slot *s, int b)
{
    return b == 0 ? s->input : s->blocks[b - 1].residual3;
}

float *wp_gpt2_stage_output(const struct wp_gpt2_stage *st, int slot)
{
    return st->slots[slot].output;
}

/* The slot a pass of slot `slot` computes in: the slot itself, or, on a
 * recomputing stage, the work slot with the slot's boundaries. */
static struct wp_stage_slot *acts_of(struct wp_gpt2_stage *st, int slot)
{
    struct wp_stage_slot *s = &st->slots[slot], *w = &st->work;
    if (!st->recompute)
        return s;
    w->input = s->input;
    w->dout = s->dout;
    w->dinput = s->dinput;
    w->tokens = s->tokens;
    w->targets = s->targets;
    return w;
}

/* dst = src, (rows,cols), bit for bit. */
static void copy_exact(const struct wp_kernel_ops *k, float *dst, const float *src, size_t rows, size_t cols)
{
    k->copy_block(dst, cols, src, cols, rows, cols);
}

/* ---- the tensor group's steps (none, and no copy, on a group of 1 x 1) ---------------- */

/* Columns j2 of the replicated (N,C) x into xc (N,C2), which is x itself when p2 = 1. */
static void take_columns(const struct wp_gpt2_stage *st, const struct tp_dims *d, float *xc, const float *x)
{
    if (xc != x)
        st->k->copy_block(xc, d->C2, x + (size_t)d->j2 * d->C2, d->C, d->N, d->C2);
}

/* A partial sum over axis 2 of (N, cols) in whole, this rank's rows summed into part. */
static void sum_rows(struct wp_gpt2_stage *st, const float *whole, float *part, size_t cols)
{
    if (whole == part)
        return;
    wp_tg_reduce_scatter_rows(st->tg, whole, part, dims_of(st).N, cols);
    st->k->round_copy(part, part, dims_of(st).Nl * cols); /* stored as the precision stores activations */
}

/* This rank's rows of (N, cols) in part gathered into whole. */
static void gather_rows(struct wp_gpt2_stage *st, const float *part, float *whole, size_t cols)
{
    if (whole != part)
        wp_tg_all_gather_rows(st->tg, part, whole, dims_of(st).N, cols);
}

/* A partial sum over axis 1 of columns j2, (N,C2) in part, made whole and
 * replicated: (N,C) in whole. */
static void sum_and_gather_columns(struct wp_gpt2_stage *st, float *part, float *whole)
{
    struct tp_dims d = dims_of(st);
    if (part == whole)
        return;
    wp_tg_all_reduce(st->tg, part, d.N * d.C2);
    st->k->round_copy(part, part, d.N * d.C2);
    wp_tg_all_gather_cols(st->tg, part, whole, d.N, d.C2);
}

/* The blocks and the head (last stage) of slot s from its input. */
static void forward_from_input(struct wp_gpt2_stage *st, struct wp_stage_slot *s)
{
    const struct wp_kernel_ops *k = st->k;
    struct tp_dims d = dims_of(st);
    int B = st->B, T = st->g.sequence_length, C = st->g.channels, V = st->g.vocabulary;
    int N = B * T, C1 = (int)d.C1, C2 = (int)d.C2, rows_split = d.p2 > 1, tp = d.p1 * d.p2 > 1;
    for (int b = 0; b < st->layout.end_block - st->layout.first_block; b++) {
        int lb = st->layout.first_block + b;
        struct wp_block_acts *a = &s->blocks[b];
        const float *x = block_input(s, b);
        /* a bias is added by one rank of the axis its matmul's partial sum runs over */
        const float *qkv_bias = d.j2 == 0 ? param(st, st->weights, lb, WP_T_QKVB) : NULL;
        const float *fc_bias = d.j2 == 0 ? param(st, st->weights, lb, WP_T_FCB) : NULL;
        const float *proj_bias = d.j1 == 0 ? param(st, st->weights, lb, WP_T_ATTPROJB) : NULL;
        const float *fcproj_bias = d.j1 == 0 ? param(st, st->weights, lb, WP_T_FCPROJB) : NULL;
        k->layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, param(st, st->weights, lb, WP_T_LN1W),
                             param(st, st->weights, lb, WP_T_LN1B), N, C);
        take_columns(st, &d, a->ln1c, a->ln1);
        float *qkv = rows_split ? st->tp_wide : a->qkv;
        k->matmul_forward(qkv, a->ln1c, param(st, st->weights, lb, WP_T_QKVW), qkv_bias, N, C2, 3 * C1,
                          WP_WEIGHT_IN_OUT);
        sum_rows(st, qkv, a->qkv, 3 * d.C1);
        float *atty = rows_split ? st->tp_local : a->atty;
        k->attention_forward(atty, a->lse, a->qkv, (int)d.Bl, T, C1, (int)d.NH1);
        gather_rows(st, atty, a->atty, d.C1);
        /* the projection's output goes through residual2's buffer */
        float *proj = tp ? st->tp_narrow : a->residual2;
        k->matmul_forward(proj, a->atty, param(st, st->weights, lb, WP_T_ATTPROJW), proj_bias, N, C1, C2,
                          WP_WEIGHT_IN_OUT);
        sum_and_gather_columns(st, proj, a->residual2);
        k->residual_forward(a->residual2, x, a->residual2, (size_t)N * C);
        k->layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->residual2, param(st, st->weights, lb, WP_T_LN2W),
                             param(st, st->weights, lb, WP_T_LN2B), N, C);
        take_columns(st, &d, a->ln2c, a->ln2);
        float *fch = rows_split ? st->tp_wide : a->fch;
        k->matmul_forward(fch, a->ln2c, param(st, st->weights, lb, WP_T_FCW), fc_bias, N, C2, 4 * C1,
                          WP_WEIGHT_IN_OUT);
        sum_rows(st, fch, a->fch, 4 * d.C1);
        float *gelu = rows_split ? st->tp_local : a->fch_gelu;
        k->gelu_forward(gelu, a->fch, d.Nl * 4 * d.C1);
        gather_rows(st, gelu, a->fch_gelu, 4 * d.C1);
        float *fcproj = tp ? st->tp_narrow : a->residual3;
        k->matmul_forward(fcproj, a->fch_gelu, param(st, st->weights, lb, WP_T_FCPROJW), fcproj_bias, N, 4 * C1, C2,
                          WP_WEIGHT_IN_OUT);
        sum_and_gather_columns(st, fcproj, a->residual3);
        k->residual_forward(a->residual3, a->residual2, a->residual3, (size_t)N * C);
    }
    if (st->layout.has_head) {
        k->layernorm_forward(s->lnf, s->lnf_mean, s->lnf_rstd, s->output, param(st, st->weights, -1, WP_T_LNFW),
                             param(st, st->weights, -1, WP_T_LNFB), N, C);
        k->matmul_forward(st->logits, s->lnf, param(st, st->weights, -1, WP_T_WTE), NULL, N, C, V, WP_WEIGHT_OUT_IN);
        k->crossentropy_forward(s->losses, s->probs, st->logits, s->targets, N, V);
    }
}

void wp_gpt2_stage_forward(struct wp_gpt2_stage *st, int slot)
{
    const struct wp_kernel_ops *k = st->k;
    struct wp_stage_slot *s = &st->slots[slot], *a = acts_of(st, slot);
    size_t B = (size_t)st->B, T = (size_t)st->g.sequence_length, C = (size_t)st->g.channels;
    if (st->layout.has_embedding)
        k->encoder_forward(s->input, s->tokens, param(st, st->weights, -1, WP_T_WTE),
                           param(st, st->weights, -1, WP_T_WPE), (int)B, (int)T, (int)C);
    forward_from_input(st, a);
    if (a == s)
        return;
    /* a thin slot keeps what leaves the stage; the work slot is the next pass's */
    copy_exact(k, s->output, a->output, B * T, C);
    if (st->layout.has_head)
        copy_exact(k, s->losses, a->losses, B, T);
}

/* ---- backward ------------------------------------------------------------------------ */

static void copy(const struct wp_kernel_ops *k, float *dst, const float *src, size_t n)
{
    k->zero(dst, n * sizeof(float));
    k->accumulate(dst, src, n);
}

/* Tells grad_hook (when armed) that floats [first, first + count) of the
 * gradients are added to for the last time in this pass. */
static void grads_done(const struct wp_gpt2_stage *st, const float *first, size_t count)
{
    const struct wp_grad_hook *h = st->grad_hook;
    if (h && h->armed && first)
        h->added(h->ctx, (size_t)(first - st->grads), count);
}

/* The same for a tensor the stage holds outside its blocks (its piece). */
static void tensor_grads_done(const struct wp_gpt2_stage *st, enum wp_tensor_role role)
{
    int i = wp_gpt2_tensor_index(st->g.layers, -1, role);
    grads_done(st, param(st, st->grads, -1, role), wp_gpt2_shard_numel(&st->g, i, &st->layout.shard));
}

/* The embedding's: wpe, then wte's part (adjacent below block 0's, in turn) */
static void embedding_grads_done(const struct wp_gpt2_stage *st)
{
    tensor_grads_done(st, WP_T_WPE);
    grads_done(st, st->wte_grad_embedding, (size_t)st->g.vocabulary * st->g.channels);
}

/* Weight gradients of block b: every piece's from whole rows, so that
 * they are complete on each rank (replicated tensors' alike on all). */
static void block_weights(struct wp_gpt2_stage *st, const struct wp_stage_slot *s, int b, const struct block_grads *g)
{
    const struct wp_kernel_ops *k = st->k;
    const struct wp_block_acts *a = &s->blocks[b];
    struct tp_dims d = dims_of(st);
    int lb = st->layout.first_block + b, N = st->B * st->g.sequence_length, C = st->g.channels;
    int C1 = (int)d.C1, C2 = (int)d.C2;
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_FCPROJW), param(st, st->grads, lb, WP_T_FCPROJB),
                       g->dfcproj, a->fch_gelu, param(st, st->weights, lb, WP_T_FCPROJW), N, 4 * C1, C2,
                       WP_WEIGHT_IN_OUT);
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_FCW), param(st, st->grads, lb, WP_T_FCB), g->dfch, a->ln2c,
                       param(st, st->weights, lb, WP_T_FCW), N, C2, 4 * C1, WP_WEIGHT_IN_OUT);
    k->layernorm_backward(NULL, param(st, st->grads, lb, WP_T_LN2W), param(st, st->grads, lb, WP_T_LN2B), g->dln2,
                          a->residual2, param(st, st->weights, lb, WP_T_LN2W), a->ln2_mean, a->ln2_rstd, N, C);
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_ATTPROJW), param(st, st->grads, lb, WP_T_ATTPROJB),
                       g->dattproj, a->atty, param(st, st->weights, lb, WP_T_ATTPROJW), N, C1, C2, WP_WEIGHT_IN_OUT);
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_QKVW), param(st, st->grads, lb, WP_T_QKVB), g->dqkv,
                       a->ln1c, param(st, st->weights, lb, WP_T_QKVW), N, C2, 3 * C1, WP_WEIGHT_IN_OUT);
    k->layernorm_backward(NULL, param(st, st->grads, lb, WP_T_LN1W), param(st, st->grads, lb, WP_T_LN1B), g->dln1,
                          block_input(s, b), param(st, st->weights, lb, WP_T_LN1W), a->ln1_mean, a->ln1_rstd, N, C);
    size_t first, count;
    blocks_span(st, lb, lb + 1, &first, &count);
    grads_done(st, st->grads + first, count);
}

/* Input-gradient pass of block b: dres3 (gradient of its output) to dx
 * (gradient of its input, overwritten); fills g for the weight pass. */
/* The gradient of a replicated (N,C) output, dy, as the gradient of the
 * matmul's columns j2, into dcols (N,C2). */
static void columns_of_gradient(const struct wp_gpt2_stage *st, const struct tp_dims *d, float *dcols,
                                const float *dy)
{
    if (d->p2 > 1)
        st->k->copy_block(dcols, d->C2, dy + (size_t)d->j2 * d->C2, d->C, d->N, d->C2);
    else
        copy(st->k, dcols, dy, d->N * d->C);
}

static void block_backward(struct wp_gpt2_stage *st, const struct wp_stage_slot *s, int b, const float *dres3,
                           float *dx, float *dres2, struct block_grads *g)
{
    const struct wp_kernel_ops *k = st->k;
    const struct wp_block_acts *a = &s->blocks[b];
    struct tp_dims d = dims_of(st);
    int lb = st->layout.first_block + b;
    int T = st->g.sequence_length, C = st->g.channels, N = st->B * T, C1 = (int)d.C1, C2 = (int)d.C2;
    int rows_split = d.p2 > 1, tp = d.p1 * d.p2 > 1;
    size_t NC = (size_t)N * C, wide = d.N * 4 * d.C1, local_wide = d.Nl * 4 * d.C1;
    /* the MLP: the down-projection's input gradient is a partial sum over
     * axis 2 of the gathered GELU output's; GELU's on this rank's rows */
    columns_of_gradient(st, &d, g->dfcproj, dres3);
    k->zero(st->dscratch_4c, wide * sizeof(float));
    k->matmul_backward(st->dscratch_4c, NULL, NULL, g->dfcproj, a->fch_gelu, param(st, st->weights, lb, WP_T_FCPROJW),
                       N, 4 * C1, C2, WP_WEIGHT_IN_OUT);
    float *dgelu = rows_split ? st->tp_local : st->dscratch_4c;
    sum_rows(st, st->dscratch_4c, dgelu, 4 * d.C1);
    float *dfch = rows_split ? st->tp_wide : g->dfch;
    k->zero(dfch, local_wide * sizeof(float));
    k->gelu_backward(dfch, a->fch, dgelu, local_wide);
    gather_rows(st, dfch, g->dfch, 4 * d.C1);
    float *dln2 = tp ? st->tp_narrow : g->dln2;
    k->zero(dln2, d.N * d.C2 * sizeof(float));
    k->matmul_backward(dln2, NULL, NULL, g->dfch, a->ln2c, param(st, st->weights, lb, WP_T_FCW), N, C2, 4 * C1,
                       WP_WEIGHT_IN_OUT);
    sum_and_gather_columns(st, dln2, g->dln2);
    copy(k, dres2, dres3, NC);
    k->layernorm_backward(dres2, NULL, NULL, g->dln2, a->residual2, param(st, st->weights, lb, WP_T_LN2W),
                          a->ln2_mean, a->ln2_rstd, N, C);
    /* attention: the same, with the heads' rows */
    columns_of_gradient(st, &d, g->dattproj, dres2);
    float *datty = st->dscratch_c;
    k->zero(datty, d.N * d.C1 * sizeof(float));
    k->matmul_backward(datty, NULL, NULL, g->dattproj, a->atty, param(st, st->weights, lb, WP_T_ATTPROJW), N, C1, C2,
                       WP_WEIGHT_IN_OUT);
    float *datty_rows = rows_split ? st->tp_local : datty;
    sum_rows(st, datty, datty_rows, d.C1);
    float *dqkv = rows_split ? st->tp_wide : g->dqkv;
    k->zero(dqkv, d.Nl * 3 * d.C1 * sizeof(float));
    k->attention_backward(dqkv, datty_rows, a->qkv, a->lse, (int)d.Bl, T, C1, (int)d.NH1);
    gather_rows(st, dqkv, g->dqkv, 3 * d.C1);
    float *dln1 = tp ? st->tp_narrow : g->dln1;
    k->zero(dln1, d.N * d.C2 * sizeof(float));
    k->matmul_backward(dln1, NULL, NULL, g->dqkv, a->ln1c, param(st, st->weights, lb, WP_T_QKVW), N, C2, 3 * C1,
                       WP_WEIGHT_IN_OUT);
    sum_and_gather_columns(st, dln1, g->dln1);
    copy(k, dx, dres2, NC);
    k->layernorm_backward(dx, NULL, NULL, g->dln1, block_input(s, b), param(st, st->weights, lb, WP_T_LN1W),
                          a->ln1_mean, a->ln1_rstd, N, C);
}

/* The head's saved gradients: dlogits and dlnf (split), or scratch. */
static void head_grads(struct wp_gpt2_stage *st, struct wp_stage_slot *s, float **dlogits, float **dlnf)
{
    size_t NC = (size_t)st->B * st->g.sequence_length * st->g.channels;
    size_t NV = (size_t)st->B * st->g.sequence_length * st->g.vocabulary;
    if (st->split_backward) {
        *dlogits = s->dlogits;
        *dlnf = s->dlogits + ((NV + 15) & ~(size_t)15);
    } else {
        *dlogits = st->logits;
        *dlnf = st->dres + 2 * NC;
    }
}

static void head_weights(struct wp_gpt2_stage *st, struct wp_stage_slot *s)
{
    const struct wp_kernel_ops *k = st->k;
    int N = st->B * st->g.sequence_length, C = st->g.channels, V = st->g.vocabulary;
    float *dlogits, *dlnf;
    head_grads(st, s, &dlogits, &dlnf);
    k->matmul_backward(NULL, param(st, st->grads, -1, WP_T_WTE), NULL, dlogits, s->lnf,
                       param(st, st->weights, -1, WP_T_WTE), N, C, V, WP_WEIGHT_OUT_IN);
    k->layernorm_backward(NULL, param(st, st->grads, -1, WP_T_LNFW), param(st, st->grads, -1, WP_T_LNFB), dlnf,
                          s->output, param(st, st->weights, -1, WP_T_LNFW), s->lnf_mean, s->lnf_rstd, N, C);
    grads_done(st, st->wte_grad_head, (size_t)V * C);
    tensor_grads_done(st, WP_T_LNFW);
    tensor_grads_done(st, WP_T_LNFB);
}

/* Backward of the activations in s (a slot, or the work slot bound to one). */
static void run_backward(struct wp_gpt2_stage *st, struct wp_stage_slot *s, float dloss, int weights_now)
{
    const struct wp_kernel_ops *k = st->k;
    int N = st->B * st->g.sequence_length, C = st->g.channels, V = st->g.vocabulary;
    size_t NC = (size_t)N * C;
    int nblocks = st->layout.end_block - st->layout.first_block;
    float *cur = st->dres, *next = st->dres + NC, *dres2 = st->dscratch_c + NC;
    if (st->layout.has_head) {
        float *dlogits, *dlnf;
        head_grads(st, s, &dlogits, &dlnf);
        k->zero(dlogits, (size_t)N * V * sizeof(float));
        k->crossentropy_backward(dlogits, s->probs, s->targets, dloss, N, V);
        k->zero(dlnf, NC * sizeof(float));
        k->matmul_backward(dlnf, NULL, NULL, dlogits, s->lnf, param(st, st->weights, -1, WP_T_WTE), N, C, V,
                           WP_WEIGHT_OUT_IN);
        k->zero(cur, NC * sizeof(float));
        k->layernorm_backward(cur, NULL, NULL, dlnf, s->output, param(st, st->weights, -1, WP_T_LNFW), s->lnf_mean,
                              s->lnf_rstd, N, C);
        if (weights_now)
            head_weights(st, s);
    } else {
        copy(k, cur, s->dout, NC);
    }
    struct block_grads scratch;
    struct carve c = {st->dscratch_4c2, 0};
    struct tp_dims d = dims_of(st);
    carve_block_grads(&c, &scratch, &d);
    for (int b = nblocks - 1; b >= 0; b--) {
        struct block_grads *g = st->split_backward ? s->blocks[b].saved : &scratch;
        float *dx = b == 0 ? s->dinput : next;
        block_backward(st, s, b, cur, dx, dres2, g);
        if (weights_now)
            block_weights(st, s, b, g);
        float *t = cur;
        cur = next;
        next = t;
    }
    if (st->layout.has_embedding && weights_now) {
        k->encoder_backward(st->wte_grad_embedding, param(st, st->grads, -1, WP_T_WPE), s->dinput, s->tokens, st->B,
                            st->g.sequence_length, C);
        embedding_grads_done(st);
    }
}

void wp_gpt2_stage_backward(struct wp_gpt2_stage *st, int slot, float dloss)
{
    struct wp_stage_slot *a = acts_of(st, slot);
    if (st->recompute) /* the activations again, from the input the slot kept */
        forward_from_input(st, a);
    run_backward(st, a, dloss, !st->split_backward);
}

void wp_gpt2_stage_backward_weights(struct wp_gpt2_stage *st, int slot)
{
    struct wp_stage_slot *s = &st->slots[slot];
    int nblocks = st->layout.end_block - st->layout.first_block;
    if (st->layout.has_head)
        head_weights(st, s);
    for (int b = nblocks - 1; b >= 0; b--)
        block_weights(st, s, b, s->blocks[b].saved);
    if (st->layout.has_embedding) {
        st->k->encoder_backward(st->wte_grad_embedding, param(st, st->grads, -1, WP_T_WPE), s->dinput, s->tokens,
                                st->B, st->g.sequence_length, st->g.channels);
        embedding_grads_done(st);
    }
}

double wp_gpt2_stage_loss_sum(const struct wp_gpt2_stage *st, int slot)
{
    size_t N = (size_t)st->B * st->g.sequence_length;
    float *host = malloc(N * sizeof *host);
    if (!host)
        return 0;
    st->k->to_host(host, st->slots[slot].losses, N * sizeof *host);
    double sum = 0;
    for (size_t i = 0; i < N; i++)
        sum += host[i];
    free(host);
    return sum;
}

void wp_gpt2_stage_zero_grads(struct wp_gpt2_stage *st)
{
    st->k->zero(st->grads, st->grad_floats * sizeof(float));
}

void wp_gpt2_stage_tie_wte_local(struct wp_gpt2_stage *st)
{
    if (!st->wte_grad_embedding || !st->wte_grad_head || st->wte_grad_embedding == st->wte_grad_head)
        return;
    size_t VC = (size_t)st->g.vocabulary * st->g.channels;
    float *sum = st->k->alloc(VC * sizeof(float));
    if (!sum)
        return;
    st->k->accumulate(sum, st->wte_grad_embedding, VC);
    st->k->accumulate(sum, st->wte_grad_head, VC);
    st->k->zero(st->wte_grad_head, VC * sizeof(float));
    st->k->accumulate(st->wte_grad_head, sum, VC);
    st->k->release(sum);
}

void wp_gpt2_stage_adamw(struct wp_gpt2_stage *st, const struct wp_train_config *t, int step)
{
    st->k->adamw_update(st->params, st->grads, st->m, st->v, st->layout.total, t->learning_rate, t->beta1, t->beta2,
                        t->eps, t->weight_decay, step);
    wp_gpt2_stage_weights_refresh(st);
}
