/* Forward and backward of a GPT-2 pipeline stage (llm.c's algorithm),
 * with the backward split into an input-gradient pass and a
 * weight-gradient pass that make the same calls in the same order whether
 * they run back to back (B) or apart (B, later W). */
#include "run/gpt2_stage.h"

#include <stdlib.h>
#include <string.h>

/* Forward activations of one block for one slot, (N = B*T rows). */
struct wp_block_acts {
    float *ln1, *ln1_mean, *ln1_rstd; /* (N,C) (N) (N) */
    float *qkv;                       /* (N,3C) */
    float *atty;                      /* (N,C) attention output before its projection */
    float *att;                       /* (B,NH,T,T) */
    float *residual2;                 /* (N,C) x + attproj */
    float *ln2, *ln2_mean, *ln2_rstd; /* (N,C) (N) (N) */
    float *fch, *fch_gelu;            /* (N,4C) */
    float *residual3;                 /* (N,C) block output */
    struct block_grads *saved;        /* split backward: what W needs */
};

/* Gradients a block's weight pass needs (outputs of its matmuls and LNs). */
struct block_grads {
    float *dfcproj, *dfch, *dln2, *dattproj, *dqkv, *dln1;
};

/* A bump allocator over one backend allocation per slot. */
struct carve {
    float *base;
    size_t used, cap;
};

static float *take(struct carve *c, size_t floats)
{
    float *p = c->base + c->used;
    c->used += (floats + 15) & ~(size_t)15; /* 64-byte steps */
    return p;
}

static size_t rounded(size_t floats)
{
    return (floats + 15) & ~(size_t)15;
}

static float *param(const struct wp_gpt2_stage *st, float *base, int block, enum wp_tensor_role role)
{
    long off = wp_stage_layout_find(&st->layout, wp_gpt2_tensor_index(st->g.layers, block, role));
    return off < 0 ? NULL : base + off;
}

static size_t block_grads_floats(size_t N, size_t C)
{
    return rounded(N * C) * 4 + rounded(N * 4 * C) + rounded(N * 3 * C);
}

static void carve_block_grads(struct carve *c, struct block_grads *bg, size_t N, size_t C)
{
    bg->dfcproj = take(c, N * C);
    bg->dfch = take(c, N * 4 * C);
    bg->dln2 = take(c, N * C);
    bg->dattproj = take(c, N * C);
    bg->dqkv = take(c, N * 3 * C);
    bg->dln1 = take(c, N * C);
}

static size_t slot_floats(const struct wp_gpt2_stage *st)
{
    size_t B = (size_t)st->B, T = (size_t)st->g.sequence_length, C = (size_t)st->g.channels;
    size_t NH = (size_t)st->g.heads, V = (size_t)st->g.vocabulary, N = B * T;
    size_t nblocks = (size_t)(st->layout.end_block - st->layout.first_block);
    size_t block = rounded(N * C) * 6 + rounded(N) * 4 + rounded(N * 3 * C) + rounded(B * NH * T * T) +
                   rounded(N * 4 * C) * 2;
    if (st->split_backward)
        block += block_grads_floats(N, C);
    size_t total = rounded(N * C) * 3 + rounded(N) * 2 + nblocks * block;
    if (st->layout.has_head) {
        total += rounded(N * C) + rounded(N) * 3 + rounded(N * V);
        if (st->split_backward)
            total += rounded(N * V) + rounded(N * C);
    }
    return total;
}

size_t wp_gpt2_stage_slot_bytes(const struct wp_gpt2_stage *st)
{
    return slot_floats(st) * sizeof(float);
}

size_t wp_gpt2_stage_act_bytes(const struct wp_gpt2_stage *st)
{
    return (size_t)st->B * st->g.sequence_length * st->g.channels * sizeof(float);
}

static int init_slot(struct wp_gpt2_stage *st, struct wp_stage_slot *s, struct wp_err *err)
{
    size_t B = (size_t)st->B, T = (size_t)st->g.sequence_length, C = (size_t)st->g.channels;
    size_t NH = (size_t)st->g.heads, V = (size_t)st->g.vocabulary, N = B * T;
    int nblocks = st->layout.end_block - st->layout.first_block;
    size_t floats = slot_floats(st);
    struct carve c = {st->k->alloc(floats * sizeof(float)), 0, floats};
    s->blocks = calloc((size_t)nblocks, sizeof *s->blocks);
    if (!c.base || !s->blocks)
        return wp_errorf(err, "cannot allocate %.1f MiB of activations for a micro-batch slot",
                         floats * 4.0 / 1048576);
    s->input = take(&c, N * C);
    s->dout = take(&c, N * C);
    s->dinput = take(&c, N * C);
    s->tokens = (int *)take(&c, N);
    s->targets = (int *)take(&c, N);
    for (int b = 0; b < nblocks; b++) {
        struct wp_block_acts *a = &s->blocks[b];
        a->ln1 = take(&c, N * C);
        a->ln1_mean = take(&c, N);
        a->ln1_rstd = take(&c, N);
        a->qkv = take(&c, N * 3 * C);
        a->atty = take(&c, N * C);
        a->att = take(&c, B * NH * T * T);
        a->residual2 = take(&c, N * C);
        a->ln2 = take(&c, N * C);
        a->ln2_mean = take(&c, N);
        a->ln2_rstd = take(&c, N);
        a->fch = take(&c, N * 4 * C);
        a->fch_gelu = take(&c, N * 4 * C);
        a->residual3 = take(&c, N * C);
        (void)take(&c, N * C); /* keeps the per-block size a multiple of the C-sized pieces */
        if (st->split_backward) {
            a->saved = calloc(1, sizeof *a->saved);
            if (!a->saved)
                return wp_errorf(err, "out of memory");
            carve_block_grads(&c, a->saved, N, C);
        }
    }
    if (st->layout.has_head) {
        s->lnf = take(&c, N * C);
        s->lnf_mean = take(&c, N);
        s->lnf_rstd = take(&c, N);
        s->losses = take(&c, N);
        s->probs = take(&c, N * V);
        if (st->split_backward) {
            s->dlogits = take(&c, N * V);
            (void)take(&c, N * C);
        }
    }
    return c.used <= c.cap ? 0 : wp_errorf(err, "internal: slot layout overflows (%zu > %zu)", c.used, c.cap);
}

static void free_slot(struct wp_gpt2_stage *st, struct wp_stage_slot *s)
{
    int nblocks = st->layout.end_block - st->layout.first_block;
    if (s->input)
        st->k->release(s->input);
    for (int b = 0; s->blocks && b < nblocks; b++)
        free(s->blocks[b].saved);
    free(s->blocks);
}

/* The scratch and the slots, for st->B sequences in st->nslots slots. */
static int alloc_activations(struct wp_gpt2_stage *st, struct wp_err *err)
{
    const struct wp_kernel_ops *k = st->k;
    size_t T = (size_t)st->g.sequence_length, C = (size_t)st->g.channels, N = (size_t)st->B * T;
    size_t NH = (size_t)st->g.heads, V = (size_t)st->g.vocabulary;
    st->preatt = k->alloc((size_t)st->B * NH * T * T * sizeof(float));
    st->dpreatt = k->alloc((size_t)st->B * NH * T * T * sizeof(float));
    st->datt = k->alloc((size_t)st->B * NH * T * T * sizeof(float));
    st->dres = k->alloc(3 * N * C * sizeof(float));
    st->dscratch_c = k->alloc(2 * N * C * sizeof(float));
    st->dscratch_4c = k->alloc(N * 4 * C * sizeof(float));
    st->dscratch_4c2 = k->alloc(block_grads_floats(N, C) * sizeof(float));
    st->logits = k->alloc(N * V * sizeof(float));
    st->slots = calloc((size_t)st->nslots, sizeof *st->slots);
    if (!st->preatt || !st->dpreatt || !st->datt || !st->dres || !st->dscratch_c || !st->dscratch_4c ||
        !st->dscratch_4c2 || !st->logits || !st->slots)
        return wp_errorf(err, "cannot allocate the stage's scratch for micro-batch slices of %d", st->B);
    for (int i = 0; i < st->nslots; i++)
        if (init_slot(st, &st->slots[i], err))
            return -1;
    return 0;
}

static void free_activations(struct wp_gpt2_stage *st)
{
    const struct wp_kernel_ops *k = st->k;
    for (int i = 0; st->slots && i < st->nslots; i++)
        free_slot(st, &st->slots[i]);
    free(st->slots);
    st->slots = NULL;
    float **bufs[] = {&st->preatt, &st->dpreatt, &st->datt, &st->dres, &st->dscratch_c, &st->dscratch_4c,
                      &st->dscratch_4c2, &st->logits};
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
                       int first_block, int end_block, int B, int nslots, int split_backward,
                       unsigned long long seed, struct wp_err *err)
{
    memset(st, 0, sizeof *st);
    st->k = k;
    st->g = *g;
    st->B = B;
    st->nslots = nslots;
    st->split_backward = split_backward;
    if (wp_stage_layout_init(&st->layout, g, first_block, end_block, err))
        return -1;
    size_t P = st->layout.total * sizeof(float);
    size_t VC = (size_t)g->vocabulary * g->channels;
    int both_ends = st->layout.has_embedding && st->layout.has_head;
    st->grad_floats = st->layout.total + (both_ends ? VC : 0);
    st->params = k->alloc(P);
    st->grads = k->alloc(st->grad_floats * sizeof(float));
    st->m = k->alloc(P);
    st->v = k->alloc(P);
    if (!st->params || !st->grads || !st->m || !st->v) {
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
    if (!host) {
        wp_gpt2_stage_destroy(st);
        return wp_errorf(err, "out of memory");
    }
    wp_stage_params_init(&st->layout, g, seed, host);
    k->to_device(st->params, host, P);
    free(host);
    return 0;
}

void wp_gpt2_stage_destroy(struct wp_gpt2_stage *st)
{
    const struct wp_kernel_ops *k = st->k;
    free_activations(st);
    float *bufs[] = {st->params, st->grads, st->m, st->v};
    for (size_t i = 0; k && i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            k->release(bufs[i]);
    wp_stage_layout_destroy(&st->layout);
    memset(st, 0, sizeof *st);
}

/* Blocks [lo, hi) are one run of tensors in the stage's buffers (model
 * order): their first float and count. */
static void blocks_span(const struct wp_gpt2_stage *st, int lo, int hi, size_t *first, size_t *count)
{
    int L = st->g.layers;
    long a = wp_stage_layout_find(&st->layout, wp_gpt2_tensor_index(L, lo, WP_T_LN1W));
    long z = wp_stage_layout_find(&st->layout, wp_gpt2_tensor_index(L, hi - 1, WP_T_FCPROJB));
    struct wp_tensor_desc d;
    wp_gpt2_tensor_desc(&st->g, wp_gpt2_tensor_index(L, hi - 1, WP_T_FCPROJB), &d);
    *first = hi > lo && a >= 0 ? (size_t)a : 0;
    *count = hi > lo && a >= 0 && z >= a ? (size_t)z + d.numel - (size_t)a : 0;
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
}

int wp_gpt2_stage_adopt(struct wp_gpt2_stage *st, const struct wp_gpt2_stage *old)
{
    size_t most = 0;
    for (int i = 0; i < st->layout.ntensors; i++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(&st->g, st->layout.tensors[i], &d);
        most = d.numel > most ? d.numel : most;
    }
    float *host = malloc((most ? most : 1) * sizeof *host);
    if (!host)
        return -1;
    for (int i = 0; i < st->layout.ntensors; i++) {
        long from = wp_stage_layout_find(&old->layout, st->layout.tensors[i]);
        if (from < 0)
            continue;
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(&st->g, st->layout.tensors[i], &d);
        size_t to = st->layout.offset[i], bytes = d.numel * sizeof(float);
        const float *src[3] = {old->params, old->m, old->v};
        float *dst[3] = {st->params, st->m, st->v};
        for (int b = 0; b < 3; b++) { /* through the host: exact on every backend */
            st->k->to_host(host, src[b] + from, bytes);
            st->k->to_device(dst[b] + to, host, bytes);
        }
    }
    free(host);
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
    int nblocks = st->layout.end_block - st->layout.first_block;
    return st->slots[slot].blocks[nblocks - 1].residual3;
}

void wp_gpt2_stage_forward(struct wp_gpt2_stage *st, int slot)
{
    const struct wp_kernel_ops *k = st->k;
    struct wp_stage_slot *s = &st->slots[slot];
    int B = st->B, T = st->g.sequence_length, C = st->g.channels, NH = st->g.heads, V = st->g.vocabulary;
    int N = B * T;
    if (st->layout.has_embedding)
        k->encoder_forward(s->input, s->tokens, param(st, st->params, -1, WP_T_WTE),
                           param(st, st->params, -1, WP_T_WPE), B, T, C);
    for (int b = 0; b < st->layout.end_block - st->layout.first_block; b++) {
        int lb = st->layout.first_block + b;
        struct wp_block_acts *a = &s->blocks[b];
        const float *x = block_input(s, b);
        k->layernorm_forward(a->ln1, a->ln1_mean, a->ln1_rstd, x, param(st, st->params, lb, WP_T_LN1W),
                             param(st, st->params, lb, WP_T_LN1B), N, C);
        k->matmul_forward(a->qkv, a->ln1, param(st, st->params, lb, WP_T_QKVW), param(st, st->params, lb, WP_T_QKVB),
                          N, C, 3 * C, WP_WEIGHT_IN_OUT);
        k->attention_forward(a->atty, st->preatt, a->att, a->qkv, B, T, C, NH);
        /* the projection's output goes through residual2's buffer */
        k->matmul_forward(a->residual2, a->atty, param(st, st->params, lb, WP_T_ATTPROJW),
                          param(st, st->params, lb, WP_T_ATTPROJB), N, C, C, WP_WEIGHT_IN_OUT);
        k->residual_forward(a->residual2, x, a->residual2, (size_t)N * C);
        k->layernorm_forward(a->ln2, a->ln2_mean, a->ln2_rstd, a->residual2, param(st, st->params, lb, WP_T_LN2W),
                             param(st, st->params, lb, WP_T_LN2B), N, C);
        k->matmul_forward(a->fch, a->ln2, param(st, st->params, lb, WP_T_FCW), param(st, st->params, lb, WP_T_FCB), N,
                          C, 4 * C, WP_WEIGHT_IN_OUT);
        k->gelu_forward(a->fch_gelu, a->fch, (size_t)N * 4 * C);
        k->matmul_forward(a->residual3, a->fch_gelu, param(st, st->params, lb, WP_T_FCPROJW),
                          param(st, st->params, lb, WP_T_FCPROJB), N, 4 * C, C, WP_WEIGHT_IN_OUT);
        k->residual_forward(a->residual3, a->residual2, a->residual3, (size_t)N * C);
    }
    if (st->layout.has_head) {
        const float *x = wp_gpt2_stage_output(st, slot);
        k->layernorm_forward(s->lnf, s->lnf_mean, s->lnf_rstd, x, param(st, st->params, -1, WP_T_LNFW),
                             param(st, st->params, -1, WP_T_LNFB), N, C);
        k->matmul_forward(st->logits, s->lnf, param(st, st->params, -1, WP_T_WTE), NULL, N, C, V, WP_WEIGHT_OUT_IN);
        k->crossentropy_forward(s->losses, s->probs, st->logits, s->targets, N, V);
    }
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

/* The embedding's: wpe, then wte's part (adjacent below block 0's, in turn) */
static void embedding_grads_done(const struct wp_gpt2_stage *st)
{
    grads_done(st, param(st, st->grads, -1, WP_T_WPE), (size_t)st->g.sequence_length * st->g.channels);
    grads_done(st, st->wte_grad_embedding, (size_t)st->g.vocabulary * st->g.channels);
}

static void block_weights(struct wp_gpt2_stage *st, const struct wp_stage_slot *s, int b, const struct block_grads *g)
{
    const struct wp_kernel_ops *k = st->k;
    const struct wp_block_acts *a = &s->blocks[b];
    int lb = st->layout.first_block + b, N = st->B * st->g.sequence_length, C = st->g.channels;
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_FCPROJW), param(st, st->grads, lb, WP_T_FCPROJB),
                       g->dfcproj, a->fch_gelu, param(st, st->params, lb, WP_T_FCPROJW), N, 4 * C, C,
                       WP_WEIGHT_IN_OUT);
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_FCW), param(st, st->grads, lb, WP_T_FCB), g->dfch, a->ln2,
                       param(st, st->params, lb, WP_T_FCW), N, C, 4 * C, WP_WEIGHT_IN_OUT);
    k->layernorm_backward(NULL, param(st, st->grads, lb, WP_T_LN2W), param(st, st->grads, lb, WP_T_LN2B), g->dln2,
                          a->residual2, param(st, st->params, lb, WP_T_LN2W), a->ln2_mean, a->ln2_rstd, N, C);
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_ATTPROJW), param(st, st->grads, lb, WP_T_ATTPROJB),
                       g->dattproj, a->atty, param(st, st->params, lb, WP_T_ATTPROJW), N, C, C, WP_WEIGHT_IN_OUT);
    k->matmul_backward(NULL, param(st, st->grads, lb, WP_T_QKVW), param(st, st->grads, lb, WP_T_QKVB), g->dqkv,
                       a->ln1, param(st, st->params, lb, WP_T_QKVW), N, C, 3 * C, WP_WEIGHT_IN_OUT);
    k->layernorm_backward(NULL, param(st, st->grads, lb, WP_T_LN1W), param(st, st->grads, lb, WP_T_LN1B), g->dln1,
                          block_input(s, b), param(st, st->params, lb, WP_T_LN1W), a->ln1_mean, a->ln1_rstd, N, C);
    const float *lo = param(st, st->grads, lb, WP_T_LN1W), *hi = param(st, st->grads, lb, WP_T_FCPROJB) + C;
    grads_done(st, lo, (size_t)(hi - lo));
}

/* Input-gradient pass of block b: dres3 (gradient of its output) to dx
 * (gradient of its input, overwritten); fills g for the weight pass. */
static void block_backward(struct wp_gpt2_stage *st, const struct wp_stage_slot *s, int b, const float *dres3,
                           float *dx, float *dres2, struct block_grads *g)
{
    const struct wp_kernel_ops *k = st->k;
    const struct wp_block_acts *a = &s->blocks[b];
    int lb = st->layout.first_block + b;
    int B = st->B, T = st->g.sequence_length, C = st->g.channels, NH = st->g.heads, N = B * T;
    size_t NC = (size_t)N * C;
    copy(k, g->dfcproj, dres3, NC);
    k->zero(st->dscratch_4c, NC * 4 * sizeof(float));
    k->matmul_backward(st->dscratch_4c, NULL, NULL, g->dfcproj, a->fch_gelu, param(st, st->params, lb, WP_T_FCPROJW),
                       N, 4 * C, C, WP_WEIGHT_IN_OUT);
    k->zero(g->dfch, NC * 4 * sizeof(float));
    k->gelu_backward(g->dfch, a->fch, st->dscratch_4c, NC * 4);
    k->zero(g->dln2, NC * sizeof(float));
    k->matmul_backward(g->dln2, NULL, NULL, g->dfch, a->ln2, param(st, st->params, lb, WP_T_FCW), N, C, 4 * C,
                       WP_WEIGHT_IN_OUT);
    copy(k, dres2, dres3, NC);
    k->layernorm_backward(dres2, NULL, NULL, g->dln2, a->residual2, param(st, st->params, lb, WP_T_LN2W),
                          a->ln2_mean, a->ln2_rstd, N, C);
    copy(k, g->dattproj, dres2, NC);
    float *datty = st->dscratch_c;
    k->zero(datty, NC * sizeof(float));
    k->matmul_backward(datty, NULL, NULL, g->dattproj, a->atty, param(st, st->params, lb, WP_T_ATTPROJW), N, C, C,
                       WP_WEIGHT_IN_OUT);
    k->zero(g->dqkv, NC * 3 * sizeof(float));
    k->attention_backward(g->dqkv, st->dpreatt, st->datt, datty, a->qkv, a->att, B, T, C, NH);
    k->zero(g->dln1, NC * sizeof(float));
    k->matmul_backward(g->dln1, NULL, NULL, g->dqkv, a->ln1, param(st, st->params, lb, WP_T_QKVW), N, C, 3 * C,
                       WP_WEIGHT_IN_OUT);
    copy(k, dx, dres2, NC);
    k->layernorm_backward(dx, NULL, NULL, g->dln1, block_input(s, b), param(st, st->params, lb, WP_T_LN1W),
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
                       param(st, st->params, -1, WP_T_WTE), N, C, V, WP_WEIGHT_OUT_IN);
    int nblocks = st->layout.end_block - st->layout.first_block;
    k->layernorm_backward(NULL, param(st, st->grads, -1, WP_T_LNFW), param(st, st->grads, -1, WP_T_LNFB), dlnf,
                          s->blocks[nblocks - 1].residual3, param(st, st->params, -1, WP_T_LNFW), s->lnf_mean,
                          s->lnf_rstd, N, C);
    grads_done(st, st->wte_grad_head, (size_t)V * C);
    grads_done(st, param(st, st->grads, -1, WP_T_LNFW), 2 * (size_t)C);
}

static void run_backward(struct wp_gpt2_stage *st, int slot, float dloss, int weights_now)
{
    const struct wp_kernel_ops *k = st->k;
    struct wp_stage_slot *s = &st->slots[slot];
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
        k->matmul_backward(dlnf, NULL, NULL, dlogits, s->lnf, param(st, st->params, -1, WP_T_WTE), N, C, V,
                           WP_WEIGHT_OUT_IN);
        k->zero(cur, NC * sizeof(float));
        k->layernorm_backward(cur, NULL, NULL, dlnf, s->blocks[nblocks - 1].residual3,
                              param(st, st->params, -1, WP_T_LNFW), s->lnf_mean, s->lnf_rstd, N, C);
        if (weights_now)
            head_weights(st, s);
    } else {
        copy(k, cur, s->dout, NC);
    }
    struct block_grads scratch;
    struct carve c = {st->dscratch_4c2, 0, 0};
    carve_block_grads(&c, &scratch, (size_t)N, (size_t)C);
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
    run_backward(st, slot, dloss, !st->split_backward);
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
}
