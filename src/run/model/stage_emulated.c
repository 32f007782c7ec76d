/* Compute emulated from a layer table (see stage_emulated.h). */
#include "run/model/stage_emulated.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/layer_stages.h"

struct emu_exec {
    const struct wp_stage_emulated_ctx *ctx;
    struct wp_layer_stage_cost cost; /* of one slice of this rank */
    const struct wp_progress *progress;
    int stage, split_backward;
    int nslots;
    size_t in_floats, out_floats;    /* per slot */
    float **buf;                     /* per slot: input, output, dinput, dout */
    float *grads;
    const struct wp_grad_hook *grad_hook; /* told of each layer's gradients (may be NULL) */
    int nlayers;
    double *layer_pass_s;            /* per layer: its part of the pass that adds its weight gradients */
    size_t *grad_at;                 /* nlayers + 1: where each layer's floats begin in grads */
    double dilation, byte_scale;     /* the context's, 1 where it gives none */
};

double wp_monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void wp_emulated_wait_until(double deadline_s, const struct wp_progress *progress, double slice_s)
{
    for (;;) {
        double now = wp_monotonic_s();
        if (now >= deadline_s)
            return;
        /* poll first: a message that can move now should not wait a slice */
        int in_flight = progress && progress->poll ? progress->poll(progress->ctx) : 0;
        double next = in_flight && now + slice_s < deadline_s ? now + slice_s : deadline_s;
        struct timespec ts;
        ts.tv_sec = (time_t)floor(next);
        ts.tv_nsec = (long)((next - floor(next)) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
}

/* What a table second lasts: the slowdown factor times the dilation. */
static double stretch(const struct emu_exec *e)
{
    return (e->ctx->slowdown ? wp_slowdown_factor(e->ctx->slowdown) : 1) * e->dilation;
}

static double slice_s(const struct emu_exec *e)
{
    return e->ctx->progress_slice_s * e->dilation;
}

/* Floats of a buffer of bytes of the table's, byte-scaled. */
static size_t scaled_floats(const struct emu_exec *e, double bytes)
{
    return (size_t)ceil(bytes / e->byte_scale / sizeof(float));
}

static void spend(struct emu_exec *e, double seconds)
{
    wp_emulated_wait_until(wp_monotonic_s() + seconds * stretch(e), e->progress, slice_s(e));
}

/* A pass that adds the weight gradients (seconds in all). In the step's
 * final one (the hook armed) it goes layer by layer from the last, each
 * layer's gradients told as its part ends, as a GPU's backward finishes
 * them. */
static void spend_grads(struct emu_exec *e, double seconds)
{
    const struct wp_grad_hook *h = e->grad_hook;
    if (!h || !h->armed || !e->grads) {
        spend(e, seconds);
        return;
    }
    double f = stretch(e), deadline = wp_monotonic_s();
    for (int l = e->nlayers - 1; l >= 0; l--) {
        deadline += e->layer_pass_s[l] * f;
        wp_emulated_wait_until(deadline, e->progress, slice_s(e));
        h->added(h->ctx, e->grad_at[l], e->grad_at[l + 1] - e->grad_at[l]);
    }
}

static float *emu_buffer(void *impl, int slot, enum wp_stage_buffer which)
{
    struct emu_exec *e = impl;
    return e->buf[4 * slot + (int)which];
}

static double emu_forward(void *impl, int slot, const struct wp_stage_slice *sl)
{
    (void)slot;
    (void)sl;
    struct emu_exec *e = impl;
    spend(e, e->cost.forward_s);
    return 0;
}

static void emu_backward(void *impl, int slot, float dloss)
{
    (void)slot;
    (void)dloss;
    struct emu_exec *e = impl;
    if (e->split_backward)
        spend(e, e->cost.backward_s);
    else
        spend_grads(e, e->cost.backward_s);
}

static void emu_backward_weights(void *impl, int slot)
{
    (void)slot;
    struct emu_exec *e = impl;
    spend_grads(e, e->cost.weights_s);
}

static void emu_zero_grads(void *impl) { (void)impl; }

static void emu_optimizer_step(void *impl, int step)
{
    (void)step;
    struct emu_exec *e = impl;
    if (e->cost.optimizer_s > 0)
        spend(e, e->cost.optimizer_s);
}

static void free_buffers(struct emu_exec *e)
{
    for (int i = 0; e->buf && i < 4 * e->nslots; i++)
        free(e->buf[i]);
    free(e->buf);
    e->buf = NULL;
}

static void emu_destroy(void *impl)
{
    struct emu_exec *e = impl;
    free_buffers(e);
    free(e->grads);
    free(e->layer_pass_s);
    free(e->grad_at);
    free(e);
}

/* The cost of a slice of nseq and nslots slots of message buffers; fills
 * the sizes of out that depend on them. */
static int shape(struct emu_exec *e, int stage, int nseq, int nslots, int split_backward, struct wp_stage_exec *out,
                 struct wp_err *err)
{
    const struct wp_stage_emulated_ctx *c = e->ctx;
    free_buffers(e);
    e->nslots = nslots;
    wp_layer_stage_cost(c->table, c->first_layer[stage], c->last_layer[stage], nseq, split_backward, &e->cost);
    double scale = (double)nseq / (c->table->profile_batch > 0 ? c->table->profile_batch : 1);
    for (int l = 0; l < e->nlayers; l++) /* as wp_layer_stage_cost scales them */
        e->layer_pass_s[l] = wp_layer_grad_pass_s(c->table, c->first_layer[stage] + l, split_backward) * scale;
    size_t in_seq = scaled_floats(e, e->cost.in_seq_bytes);
    size_t out_seq = scaled_floats(e, e->cost.out_seq_bytes);
    /* one float at least: a boundary the table gives 0 bytes still passes a message */
    if (c->first_layer[stage] > 0 && in_seq == 0)
        in_seq = 1;
    if (out_seq == 0)
        out_seq = 1;
    e->in_floats = in_seq * (size_t)nseq;
    e->out_floats = out_seq * (size_t)nseq;
    e->buf = calloc((size_t)4 * (size_t)nslots, sizeof *e->buf);
    int rc = e->buf ? 0 : -1;
    for (int s = 0; rc == 0 && s < nslots; s++) {
        size_t n[4] = {e->in_floats, e->out_floats, e->in_floats, e->out_floats};
        for (int b = 0; b < 4 && rc == 0; b++)
            if (n[b] && !(e->buf[4 * s + b] = calloc(n[b], sizeof(float))))
                rc = -1;
    }
    if (rc)
        return wp_errorf(err, "out of memory for the emulated stage %d's buffers", stage);
    out->nslots = nslots;
    out->in_seq_floats = in_seq;
    out->out_seq_floats = out_seq;
    out->slot_bytes = e->cost.activation_bytes;
    return 0;
}

static int emu_reshape(void *impl, int nseq, int nslots, struct wp_stage_exec *ex, struct wp_err *err)
{
    struct emu_exec *e = impl;
    return shape(e, e->stage, nseq, nslots, e->split_backward, ex, err);
}

/* No model: the state a move would carry, zeros of its true size (the
 * layers' parameters and AdamW moments in float32), so that a re-partition
 * moves as many bytes as it would with the model (byte-scaled). */
static size_t emu_layers_state(void *impl, int lo, int hi, float *out)
{
    const struct emu_exec *e = impl;
    double bytes = 0;
    for (int l = lo; l < hi; l++)
        bytes += e->ctx->table->layers[l].parameter_bytes + e->ctx->table->layers[l].optimizer_bytes;
    size_t n = scaled_floats(e, bytes);
    if (out)
        memset(out, 0, n * sizeof *out);
    return n;
}

static void emu_set_layers_state(void *impl, int lo, int hi, const float *in)
{
    (void)impl;
    (void)lo;
    (void)hi;
    (void)in;
}

static int emu_adopt(void *impl, const void *old_impl, struct wp_err *err)
{
    (void)impl;
    (void)old_impl;
    (void)err;
    return 0;
}

static const struct wp_stage_exec_ops emu_ops = {
    "emulated", emu_buffer, emu_forward, emu_backward, emu_backward_weights, emu_zero_grads,
    emu_optimizer_step, NULL, NULL, emu_reshape, emu_layers_state, emu_set_layers_state,
    emu_adopt, emu_destroy,
};

int wp_stage_emulated_make(void *ctx, const struct wp_stage_request *rq, struct wp_stage_exec *out,
                           struct wp_err *err)
{
    const struct wp_stage_emulated_ctx *c = ctx;
    struct emu_exec *e = calloc(1, sizeof *e);
    if (!e)
        return wp_errorf(err, "out of memory");
    e->ctx = c;
    e->dilation = c->dilation > 0 ? c->dilation : 1;
    e->byte_scale = c->byte_scale > 0 ? c->byte_scale : 1;
    e->stage = rq->stage;
    e->split_backward = rq->split_backward;
    e->progress = rq->progress;
    e->grad_hook = rq->grad_hook;
    e->nlayers = c->last_layer[rq->stage] - c->first_layer[rq->stage] + 1;
    e->layer_pass_s = calloc((size_t)e->nlayers, sizeof *e->layer_pass_s);
    e->grad_at = calloc((size_t)e->nlayers + 1, sizeof *e->grad_at);
    *out = (struct wp_stage_exec){.ops = &emu_ops, .impl = e};
    if (!e->layer_pass_s || !e->grad_at) {
        emu_destroy(e);
        return wp_errorf(err, "out of memory");
    }
    if (shape(e, rq->stage, rq->nseq, rq->nslots, rq->split_backward, out, err)) {
        emu_destroy(e);
        return -1;
    }
    double bytes = 0; /* each layer's gradient floats, in layer order */
    for (int l = 0; l < e->nlayers; l++) {
        bytes += c->table->layers[c->first_layer[rq->stage] + l].parameter_bytes;
        e->grad_at[l + 1] = scaled_floats(e, bytes);
    }
    /* the gradients a replicated stage sums: as many bytes as its parameters (byte-scaled) */
    size_t grad_floats = rq->replicated ? scaled_floats(e, e->cost.parameter_bytes) : 0;
    if (grad_floats && !(e->grads = calloc(grad_floats, sizeof(float)))) {
        emu_destroy(e);
        return wp_errorf(err, "out of memory for the emulated stage %d's gradients", rq->stage);
    }
    out->grads = e->grads;
    out->grad_floats = grad_floats;
    return 0;
}
