/* GPT-2 behind the stage executor table (stage_gpt2.h). */
#include "run/model/stage_gpt2.h"

#include "run/model/stage_emulated.h"
#include "run/comm/tensor_group.h"

#include <stdlib.h>
#include <string.h>

struct gpt2_exec {
    struct wp_gpt2_stage model; /* first: wp_stage_gpt2_model returns it */
    const struct wp_stage_gpt2_ctx *ctx;
    const struct wp_progress *progress;
    /* a tensor group's stage boundaries (Megatron-LM's scatter/gather): per
     * slot the lane's column block of the input, output, input gradient
     * and output gradient, piece_floats each, in the enum's order; the
     * messages carry these, the passes gather and cut the whole */
    float *pieces;
    size_t piece_floats;
};

/* The boundary's pieces, when the stage's tensor group has more than one lane. */
static int split_boundaries(const struct gpt2_exec *g)
{
    const struct wp_tensor_group *tg = g->ctx->tensor_group;
    return tg && tg->shard.p1 * tg->shard.p2 > 1;
}

static float *piece_of(const struct gpt2_exec *g, int slot, enum wp_stage_buffer which)
{
    return g->pieces + ((size_t)slot * 4 + (size_t)which) * g->piece_floats;
}

/* (Re)makes the pieces for the model's slots: B sequences of T C / t floats. */
static int alloc_pieces(struct gpt2_exec *g, struct wp_err *err)
{
    if (g->pieces)
        g->ctx->k->release(g->pieces);
    g->pieces = NULL;
    if (!split_boundaries(g))
        return 0;
    const struct wp_tensor_group *tg = g->ctx->tensor_group;
    size_t TC = (size_t)g->model.g.sequence_length * (size_t)g->model.g.channels;
    g->piece_floats = (size_t)g->model.B * TC / (size_t)(tg->shard.p1 * tg->shard.p2);
    g->pieces = g->ctx->k->alloc((size_t)g->model.nslots * 4 * g->piece_floats * sizeof(float));
    return g->pieces ? 0 : wp_errorf(err, "cannot allocate the stage boundaries' pieces");
}

/* Whole from the group's pieces (gather) or this lane's piece of whole (scatter). */
static void boundary(struct gpt2_exec *g, int slot, enum wp_stage_buffer which, float *whole, int gather)
{
    struct wp_tensor_group *tg = g->ctx->tensor_group;
    size_t rows = (size_t)g->model.B, cols = g->piece_floats / rows;
    if (gather)
        wp_tg_gather_boundary(tg, piece_of(g, slot, which), whole, rows, cols);
    else
        wp_tg_scatter_boundary(tg, whole, piece_of(g, slot, which), rows, cols);
}

/* A slowed rank (--slowdown-file): the pass since t0 lasts factor times as long. */
static void contend(const struct gpt2_exec *g, double t0)
{
    double f = g->ctx->slowdown ? wp_slowdown_factor(g->ctx->slowdown) : 1;
    if (f > 1) {
        double now = wp_monotonic_s();
        wp_emulated_wait_until(now + (f - 1) * (now - t0), g->progress, g->ctx->progress_slice_s);
    }
}

static float *gpt2_buffer(void *impl, int slot, enum wp_stage_buffer which)
{
    struct gpt2_exec *g = impl;
    struct wp_stage_slot *s = &g->model.slots[slot];
    if (split_boundaries(g))
        return piece_of(g, slot, which);
    switch (which) {
    case WP_STAGE_INPUT: return s->input;
    case WP_STAGE_OUTPUT: return wp_gpt2_stage_output(&g->model, slot);
    case WP_STAGE_DINPUT: return s->dinput;
    default: return s->dout;
    }
}

/* The slice's tokens (first stage) and targets (last stage) from the corpus. */
static void load_tokens(struct gpt2_exec *g, int slot, const struct wp_stage_slice *sl)
{
    const struct wp_run_config *cfg = g->ctx->cfg;
    int T = cfg->model.sequence_length, n = sl->nseq;
    int *inputs = malloc((size_t)n * T * sizeof *inputs), *targets = malloc((size_t)n * T * sizeof *targets);
    if (inputs && targets) {
        wp_corpus_batch(g->ctx->corpus, sl->step, cfg->train.global_batch, T, sl->first_seq, n, inputs, targets);
        wp_gpt2_stage_set_tokens(&g->model, slot, g->model.layout.has_embedding ? inputs : NULL,
                                 g->model.layout.has_head ? targets : NULL);
    }
    free(inputs);
    free(targets);
}

static double gpt2_forward(void *impl, int slot, const struct wp_stage_slice *sl)
{
    struct gpt2_exec *g = impl;
    const struct wp_tensor_group *tg = g->ctx->tensor_group;
    double t0 = wp_monotonic_s();
    if (g->model.layout.has_embedding || g->model.layout.has_head) {
        /* a mesh's axis 0 splits the slice's sequences */
        struct wp_stage_slice mine = *sl;
        if (tg) {
            mine.nseq = sl->nseq / tg->p0;
            mine.first_seq = sl->first_seq + tg->j0 * mine.nseq;
        }
        load_tokens(g, slot, &mine);
    }
    int split = split_boundaries(g);
    if (split && !g->model.layout.has_embedding)
        boundary(g, slot, WP_STAGE_INPUT, g->model.slots[slot].input, 1);
    wp_gpt2_stage_forward(&g->model, slot);
    if (split && !g->model.layout.has_head)
        boundary(g, slot, WP_STAGE_OUTPUT, wp_gpt2_stage_output(&g->model, slot), 0);
    /* a tensor group's ranks all compute the head of their sequences: one of them counts */
    int counts = !tg || tg->lane % (tg->shard.p1 * tg->shard.p2) == 0;
    double loss = g->model.layout.has_head && counts ? wp_gpt2_stage_loss_sum(&g->model, slot) : 0;
    g->ctx->k->synchronize();
    contend(g, t0);
    return loss;
}

static void gpt2_backward(void *impl, int slot, float dloss)
{
    struct gpt2_exec *g = impl;
    double t0 = wp_monotonic_s();
    int split = split_boundaries(g);
    if (split && !g->model.layout.has_head)
        boundary(g, slot, WP_STAGE_DOUT, g->model.slots[slot].dout, 1);
    wp_gpt2_stage_backward(&g->model, slot, dloss);
    if (split && !g->model.layout.has_embedding)
        boundary(g, slot, WP_STAGE_DINPUT, g->model.slots[slot].dinput, 0);
    g->ctx->k->synchronize();
    contend(g, t0);
}

static void gpt2_backward_weights(void *impl, int slot)
{
    struct gpt2_exec *g = impl;
    double t0 = wp_monotonic_s();
    wp_gpt2_stage_backward_weights(&g->model, slot);
    g->ctx->k->synchronize();
    contend(g, t0);
}

static void gpt2_zero_grads(void *impl) { wp_gpt2_stage_zero_grads(&((struct gpt2_exec *)impl)->model); }

static void gpt2_optimizer_step(void *impl, int step)
{
    struct gpt2_exec *g = impl;
    if (g->ctx->tensor_group) /* the mesh's axis 0 ran other sequences on the same weights */
        wp_tg_sum_over_axis0(g->ctx->tensor_group, g->model.grads, g->model.grad_floats);
    wp_gpt2_stage_adamw(&g->model, &g->ctx->cfg->train, step);
}

static float *gpt2_tied_grad(void *impl, int last_stage_half)
{
    struct gpt2_exec *g = impl;
    return last_stage_half ? g->model.wte_grad_head : g->model.wte_grad_embedding;
}

static void gpt2_tie_local(void *impl) { wp_gpt2_stage_tie_wte_local(&((struct gpt2_exec *)impl)->model); }

static int gpt2_reshape(void *impl, int nseq, int nslots, struct wp_stage_exec *e, struct wp_err *err)
{
    struct gpt2_exec *g = impl;
    const struct wp_tensor_group *tg = g->ctx->tensor_group;
    if (wp_gpt2_stage_reshape(&g->model, tg ? nseq / tg->p0 : nseq, nslots, err) || alloc_pieces(g, err))
        return -1;
    e->nslots = nslots;
    e->slot_bytes = (double)wp_gpt2_stage_slot_bytes(&g->model);
    e->work_bytes = (double)wp_gpt2_stage_work_bytes(&g->model);
    return 0;
}

static size_t gpt2_layers_state(void *impl, int lo, int hi, float *out)
{
    return wp_gpt2_stage_blocks_state(&((struct gpt2_exec *)impl)->model, lo, hi, out);
}

static void gpt2_set_layers_state(void *impl, int lo, int hi, const float *in)
{
    wp_gpt2_stage_set_blocks_state(&((struct gpt2_exec *)impl)->model, lo, hi, in);
}

static int gpt2_adopt(void *impl, const void *old_impl, struct wp_err *err)
{
    if (wp_gpt2_stage_adopt(&((struct gpt2_exec *)impl)->model, &((const struct gpt2_exec *)old_impl)->model))
        return wp_errorf(err, "out of memory");
    return 0;
}

static void gpt2_destroy(void *impl)
{
    struct gpt2_exec *g = impl;
    if (g->pieces)
        g->ctx->k->release(g->pieces);
    if (g->model.k)
        wp_gpt2_stage_destroy(&g->model);
    free(g);
}

static const struct wp_stage_exec_ops gpt2_ops = {
    "gpt2", gpt2_buffer, gpt2_forward, gpt2_backward, gpt2_backward_weights, gpt2_zero_grads,
    gpt2_optimizer_step, gpt2_tied_grad, gpt2_tie_local, gpt2_reshape,
    gpt2_layers_state, gpt2_set_layers_state, gpt2_adopt, gpt2_destroy,
};

int wp_stage_gpt2_make(void *ctx, const struct wp_stage_request *rq, struct wp_stage_exec *out, struct wp_err *err)
{
    const struct wp_stage_gpt2_ctx *c = ctx;
    char why[160];
    const struct wp_tensor_group *tg = c->tensor_group;
    int p0 = tg ? tg->p0 : 1, nseq = rq->nseq / p0, lanes = tg ? tg->shard.p1 * tg->shard.p2 : 1;
    size_t TC = (size_t)c->cfg->model.sequence_length * (size_t)c->cfg->model.channels;
    if (tg && TC % ((size_t)lanes * (size_t)p0))
        return wp_errorf(err, "mesh %dx%dx%d: %d does not divide a sequence's %zu floats (T C) into the pieces a stage "
                              "boundary sends", p0, tg->shard.p1, tg->shard.p2, lanes * p0, TC);
    if (tg && (rq->nseq % p0 || TC % (size_t)p0 || wp_tp_group_check(tg->shard.p1, tg->shard.p2, c->cfg->model.heads,
                                                   c->cfg->model.channels, nseq, why, sizeof why)))
        return wp_errorf(err, "stage %d, slices of %d sequences, mesh %dx%dx%d: %s%s", rq->stage, rq->nseq, p0,
                         tg->shard.p1, tg->shard.p2,
                         rq->nseq % p0 || TC % (size_t)p0 ? "axis 0 does not divide the sequences of a slice" : why,
                         p0 > 1 && rq->nseq % p0 == 0 && TC % (size_t)p0 == 0 ? " (each rank of axis 0's share)" : "");
    struct gpt2_exec *g = calloc(1, sizeof *g);
    if (!g)
        return wp_errorf(err, "out of memory");
    g->ctx = c;
    g->progress = rq->progress;
    int recompute = c->recompute && c->recompute[rq->stage];
    if (wp_gpt2_stage_init(&g->model, c->k, &c->cfg->model, c->first_block[rq->stage], c->end_block[rq->stage],
                           nseq, rq->nslots, rq->split_backward, recompute, c->cfg->train.seed, c->tensor_group,
                           err)) {
        free(g);
        return -1;
    }
    if (alloc_pieces(g, err)) {
        gpt2_destroy(g);
        return -1;
    }
    g->model.grad_hook = rq->grad_hook;
    /* floats per sequence of the slice, as the interpreter counts them: a
     * mesh's rank holds 1/p0 of the sequences and sends 1/(p1 p2) of each */
    size_t seq = TC / (size_t)p0 / (size_t)lanes;
    *out = (struct wp_stage_exec){&gpt2_ops, g, rq->nslots, seq, seq, g->model.grads, g->model.grad_floats,
                                  (size_t)c->cfg->model.vocabulary * (size_t)c->cfg->model.channels,
                                  (double)wp_gpt2_stage_slot_bytes(&g->model),
                                  (double)wp_gpt2_stage_work_bytes(&g->model)};
    return 0;
}

struct wp_gpt2_stage *wp_stage_gpt2_model(const struct wp_stage_exec *e)
{
    return e->ops == &gpt2_ops ? &((struct gpt2_exec *)e->impl)->model : NULL;
}
