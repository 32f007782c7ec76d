/* GPT-2 stages on the CPU kernels: the initial loss is ln V, gradients of
 * the whole model agree with finite differences, the split backward (B then
 * W) gives the whole backward's gradients bit for bit, a model cut into
 * two stages gives the one-stage loss and gradients bit for bit (the tied
 * wte's two gradient halves summed), two micro-batches of one sequence
 * match one micro-batch of two within float rounding, a recomputing
 * pipeline gives the losses and gradients of one that keeps activations
 * bit for bit in thinner slots, and AdamW steps lower the loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "run/model/data.h"
#include "run/model/gpt2_stage.h"
#include "tap.h"

static const struct wp_kernel_ops *K = &wp_kernels_cpu;

static struct wp_gpt2_config tiny(void)
{
    struct wp_gpt2_config g = {2, 16, 2, 8, 8, 32};
    return g;
}

enum { B = 2 };

static void batch(int *inp, int *tgt, int nseq, int first)
{
    struct wp_corpus c;
    struct wp_err err;
    wp_corpus_synthetic(4096, 32, 7, &c, &err);
    wp_corpus_batch(&c, 0, B, 8, first, nseq, inp, tgt);
    wp_corpus_destroy(&c);
}

/* Loss (sum over tokens, in double) of the whole model on B sequences. */
static double loss_of(struct wp_gpt2_stage *st, const int *inp, const int *tgt)
{
    wp_gpt2_stage_set_tokens(st, 0, inp, tgt);
    wp_gpt2_stage_forward(st, 0);
    return wp_gpt2_stage_loss_sum(st, 0);
}

static void host_copy(const struct wp_gpt2_stage *st, const float *dev, float *host)
{
    K->to_host(host, dev, st->layout.total * sizeof(float));
}

static int whole_model(struct wp_gpt2_stage *st, int split)
{
    struct wp_gpt2_config g = tiny();
    struct wp_err err = {""};
    int rc = wp_gpt2_stage_init(st, K, &g, 0, g.layers, B, 1, split, 0, 42, NULL, &err);
    ok(rc == 0, "whole-model stage initialises (%s)", err.msg);
    return rc;
}

static void test_initial_loss_and_gradients(void)
{
    struct wp_gpt2_stage st;
    if (whole_model(&st, 0))
        return;
    int inp[B * 8], tgt[B * 8];
    batch(inp, tgt, B, 0);
    int N = B * 8;
    double loss = loss_of(&st, inp, tgt) / N;
    is_near(loss, log(32.0), 0.02, "initial loss %.5f is near ln V = %.5f (small random weights)", loss, log(32.0));
    wp_gpt2_stage_zero_grads(&st);
    wp_gpt2_stage_backward(&st, 0, 1.0f / N);
    wp_gpt2_stage_tie_wte_local(&st);
    size_t P = st.layout.total;
    float *grads = malloc(P * sizeof *grads), *params = malloc(P * sizeof *params);
    host_copy(&st, st.grads, grads);
    host_copy(&st, st.params, params);
    /* Central differences of the mean loss on a sample of every tensor.
     * float32 forward passes, loss summed in double: eps 1e-2 gives errors
     * around 1e-4 of the loss; tolerance |a - fd| <= 2e-4 + 5e-2 |fd|. */
    int checked = 0, bad = 0;
    double worst = 0;
    for (int t = 0; t < st.layout.ntensors; t++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(&st.g, st.layout.tensors[t], &d);
        for (int s = 0; s < 6; s++) {
            size_t i = st.layout.offset[t] + (size_t)((s * 7919u + 13u * (unsigned)t) % d.numel);
            float keep = params[i];
            const float eps = 1e-2f;
            params[i] = keep + eps;
            K->to_device(st.params, params, P * sizeof(float));
            double up = loss_of(&st, inp, tgt) / N;
            params[i] = keep - eps;
            K->to_device(st.params, params, P * sizeof(float));
            double down = loss_of(&st, inp, tgt) / N;
            params[i] = keep;
            double fd = (up - down) / (2.0 * eps);
            double diff = fabs(grads[i] - fd);
            if (diff > 2e-4 + 5e-2 * fabs(fd)) {
                if (!bad)
                    printf("# %s[%zu]: backward %.6g, finite difference %.6g\n", d.name, i - st.layout.offset[t],
                           grads[i], fd);
                bad++;
            }
            if (diff > worst)
                worst = diff;
            checked++;
        }
    }
    K->to_device(st.params, params, P * sizeof(float));
    ok(bad == 0, "gradients of %d parameters (6 of every tensor) agree with finite differences (worst %.2g)", checked,
       worst);
    free(grads);
    free(params);
    wp_gpt2_stage_destroy(&st);
}

static void test_split_backward(void)
{
    struct wp_gpt2_stage whole, split;
    if (whole_model(&whole, 0) || whole_model(&split, 1))
        return;
    int inp[B * 8], tgt[B * 8];
    batch(inp, tgt, B, 0);
    loss_of(&whole, inp, tgt);
    loss_of(&split, inp, tgt);
    wp_gpt2_stage_zero_grads(&whole);
    wp_gpt2_stage_zero_grads(&split);
    wp_gpt2_stage_backward(&whole, 0, 1.0f / 16);
    wp_gpt2_stage_backward(&split, 0, 1.0f / 16);
    size_t P = whole.layout.total;
    float *a = malloc(P * sizeof *a), *b = malloc(P * sizeof *b);
    host_copy(&split, split.grads, b);
    int zero = 1;
    for (size_t i = 0; i < P; i++)
        zero &= b[i] == 0;
    ok(zero, "the split B pass leaves weight gradients untouched");
    wp_gpt2_stage_backward_weights(&split, 0);
    host_copy(&whole, whole.grads, a);
    host_copy(&split, split.grads, b);
    ok(memcmp(a, b, P * sizeof *a) == 0, "B then W gives the whole backward's gradients bit for bit");
    free(a);
    free(b);
    wp_gpt2_stage_destroy(&whole);
    wp_gpt2_stage_destroy(&split);
}

static void test_two_stages(void)
{
    struct wp_gpt2_config g = tiny();
    struct wp_gpt2_stage one, s0, s1;
    struct wp_err err = {""};
    if (whole_model(&one, 0) || wp_gpt2_stage_init(&s0, K, &g, 0, 1, B, 1, 0, 0, 42, NULL, &err) ||
        wp_gpt2_stage_init(&s1, K, &g, 1, 2, B, 1, 0, 0, 42, NULL, &err)) {
        ok(0, "stages initialise (%s)", err.msg);
        return;
    }
    int inp[B * 8], tgt[B * 8];
    batch(inp, tgt, B, 0);
    size_t act = wp_gpt2_stage_act_bytes(&s0);
    double l1 = loss_of(&one, inp, tgt);
    wp_gpt2_stage_set_tokens(&s0, 0, inp, NULL);
    wp_gpt2_stage_set_tokens(&s1, 0, NULL, tgt);
    wp_gpt2_stage_forward(&s0, 0);
    memcpy(s1.slots[0].input, wp_gpt2_stage_output(&s0, 0), act); /* the "send" */
    wp_gpt2_stage_forward(&s1, 0);
    double l2 = wp_gpt2_stage_loss_sum(&s1, 0);
    ok(l1 == l2, "two stages give the one-stage loss bit for bit (%.17g)", l1);
    wp_gpt2_stage_zero_grads(&one);
    wp_gpt2_stage_zero_grads(&s0);
    wp_gpt2_stage_zero_grads(&s1);
    wp_gpt2_stage_backward(&one, 0, 1.0f / 16);
    wp_gpt2_stage_backward(&s1, 0, 1.0f / 16);
    memcpy(s0.slots[0].dout, s1.slots[0].dinput, act);
    wp_gpt2_stage_backward(&s0, 0, 1.0f / 16);
    wp_gpt2_stage_tie_wte_local(&one);
    int same = 1, tensors = 0;
    for (int t = 0; t < one.layout.ntensors; t++) {
        int gi = one.layout.tensors[t];
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(&g, gi, &d);
        long o0 = wp_stage_layout_find(&s0.layout, gi), o1 = wp_stage_layout_find(&s1.layout, gi);
        const float *want = one.grads + one.layout.offset[t];
        for (size_t i = 0; i < d.numel; i++) {
            float got = o0 >= 0 ? s0.grads[o0 + (long)i] : s1.grads[o1 + (long)i];
            if (o0 >= 0 && o1 >= 0) /* wte: the embedding's part E plus the head's part H */
                got = s0.wte_grad_embedding[i] + s1.wte_grad_head[i];
            same &= got == want[i];
        }
        tensors++;
    }
    ok(same, "two stages give every gradient of the %d tensors bit for bit (tied wte: both halves summed)", tensors);
    wp_gpt2_stage_destroy(&one);
    wp_gpt2_stage_destroy(&s0);
    wp_gpt2_stage_destroy(&s1);
}

static void test_micro_batches(void)
{
    struct wp_gpt2_config g = tiny();
    struct wp_gpt2_stage big, small;
    struct wp_err err = {""};
    if (whole_model(&big, 0) || wp_gpt2_stage_init(&small, K, &g, 0, g.layers, 1, 2, 0, 0, 42, NULL, &err))
        return;
    int inp[B * 8], tgt[B * 8];
    batch(inp, tgt, B, 0);
    loss_of(&big, inp, tgt);
    wp_gpt2_stage_zero_grads(&big);
    wp_gpt2_stage_backward(&big, 0, 1.0f / 16);
    wp_gpt2_stage_zero_grads(&small);
    double l = 0;
    for (int m = 0; m < 2; m++) {
        wp_gpt2_stage_set_tokens(&small, m, inp + m * 8, tgt + m * 8);
        wp_gpt2_stage_forward(&small, m);
        l += wp_gpt2_stage_loss_sum(&small, m);
    }
    for (int m = 0; m < 2; m++)
        wp_gpt2_stage_backward(&small, m, 1.0f / 16);
    double lb = wp_gpt2_stage_loss_sum(&big, 0);
    /* sgemm sums over a different number of rows: rounding differs at the
     * last bits; 1e-5 relative on the loss, 1e-4 + 1e-3 relative on grads */
    is_near(l, lb, 1e-5, "two micro-batches of one sequence: same loss as one of two");
    double worst = 0;
    int bad = 0;
    for (size_t i = 0; i < big.layout.total; i++) {
        double d = fabs(big.grads[i] - small.grads[i]);
        if (d > 1e-6 + 1e-3 * fabs(big.grads[i]))
            bad++;
        if (d > worst)
            worst = d;
    }
    ok(bad == 0, "and the same accumulated gradients within float rounding (worst %.2g)", worst);
    wp_gpt2_stage_destroy(&big);
    wp_gpt2_stage_destroy(&small);
}

/* One micro-batch of the pipeline below: a step's worth of B sequences. */
static void batch_of(int mb, int *inp, int *tgt)
{
    struct wp_corpus c;
    struct wp_err err;
    wp_corpus_synthetic(4096, 32, 7, &c, &err);
    wp_corpus_batch(&c, mb, B, 8, 0, B, inp, tgt);
    wp_corpus_destroy(&c);
}

/* A two-stage pipeline (block 0 with the embedding, block 1 with the head),
 * three slots per stage, recomputing or not. */
struct pipe {
    struct wp_gpt2_stage s[2];
    double loss[4];       /* per micro-batch */
    float *dinput[4];     /* the last stage's input gradient per micro-batch (host) */
};

static int pipe_init(struct pipe *p, int recompute)
{
    struct wp_gpt2_config g = tiny();
    struct wp_err err = {""};
    memset(p, 0, sizeof *p);
    int rc = wp_gpt2_stage_init(&p->s[0], K, &g, 0, 1, B, 3, 0, recompute, 42, NULL, &err) ||
             wp_gpt2_stage_init(&p->s[1], K, &g, 1, 2, B, 3, 0, recompute, 42, NULL, &err);
    ok(rc == 0, "two stages, 3 slots each, %s (%s)", recompute ? "recomputing" : "keeping activations", err.msg);
    if (rc == 0) {
        wp_gpt2_stage_zero_grads(&p->s[0]);
        wp_gpt2_stage_zero_grads(&p->s[1]);
    }
    return rc;
}

static void pipe_forward(struct pipe *p, int mb, int slot)
{
    int inp[B * 8], tgt[B * 8];
    batch_of(mb, inp, tgt);
    wp_gpt2_stage_set_tokens(&p->s[0], slot, inp, NULL);
    wp_gpt2_stage_set_tokens(&p->s[1], slot, NULL, tgt);
    wp_gpt2_stage_forward(&p->s[0], slot);
    memcpy(p->s[1].slots[slot].input, wp_gpt2_stage_output(&p->s[0], slot), wp_gpt2_stage_act_bytes(&p->s[0]));
    wp_gpt2_stage_forward(&p->s[1], slot);
    p->loss[mb] = wp_gpt2_stage_loss_sum(&p->s[1], slot);
}

static void pipe_backward(struct pipe *p, int mb, int slot)
{
    size_t act = wp_gpt2_stage_act_bytes(&p->s[0]);
    wp_gpt2_stage_backward(&p->s[1], slot, 1.0f / 64);
    p->dinput[mb] = malloc(act);
    memcpy(p->dinput[mb], p->s[1].slots[slot].dinput, act);
    memcpy(p->s[0].slots[slot].dout, p->s[1].slots[slot].dinput, act);
    wp_gpt2_stage_backward(&p->s[0], slot, 1.0f / 64);
}

/* Four micro-batches through three slots in an order that reuses slots and
 * runs backwards out of order (micro-batch: slot) */
static void pipe_run(struct pipe *p)
{
    pipe_forward(p, 0, 0);
    pipe_forward(p, 1, 2);
    pipe_backward(p, 1, 2);
    pipe_forward(p, 2, 1);
    pipe_forward(p, 3, 2);
    pipe_backward(p, 0, 0);
    pipe_backward(p, 3, 2);
    pipe_backward(p, 2, 1);
}

static void pipe_destroy(struct pipe *p)
{
    for (int m = 0; m < 4; m++)
        free(p->dinput[m]);
    wp_gpt2_stage_destroy(&p->s[0]);
    wp_gpt2_stage_destroy(&p->s[1]);
}

static void test_recompute(void)
{
    struct pipe keep, again;
    if (pipe_init(&keep, 0) || pipe_init(&again, 1))
        return;
    pipe_run(&keep);
    pipe_run(&again);
    int losses = 1, dinputs = 1;
    size_t act = wp_gpt2_stage_act_bytes(&keep.s[0]);
    for (int m = 0; m < 4; m++) {
        losses &= keep.loss[m] == again.loss[m];
        dinputs &= memcmp(keep.dinput[m], again.dinput[m], act) == 0;
    }
    ok(losses, "recomputing: every micro-batch's loss bit for bit (%.17g, ...)", again.loss[0]);
    ok(dinputs, "recomputing: every micro-batch's input gradient at the boundary bit for bit");
    for (int st = 0; st < 2; st++) {
        const struct wp_gpt2_stage *a = &keep.s[st], *b = &again.s[st];
        ok(memcmp(a->grads, b->grads, a->grad_floats * sizeof(float)) == 0,
           "recomputing: stage %d's weight gradients (%zu floats, wte's %s half included) bit for bit", st,
           a->grad_floats, st == 0 ? "embedding" : "head");
        size_t full = wp_gpt2_stage_slot_bytes(a), thin = wp_gpt2_stage_slot_bytes(b);
        size_t work = wp_gpt2_stage_work_bytes(b);
        ok(thin < full && wp_gpt2_stage_work_bytes(a) == 0 && 3 * thin + work < 3 * full,
           "stage %d: a thin slot keeps %zu bytes, a full one %zu; 3 slots %zu bytes with the work slot's %zu, "
           "%zu without recomputing", st, thin, full, 3 * thin + work, work, 3 * full);
    }
    pipe_destroy(&keep);
    pipe_destroy(&again);
    struct wp_gpt2_config g = tiny();
    struct wp_gpt2_stage st;
    struct wp_err err = {""};
    int rc = wp_gpt2_stage_init(&st, K, &g, 0, g.layers, B, 1, 1, 1, 42, NULL, &err);
    ok(rc == -1 && strstr(err.msg, "cannot split its backward"), "a split backward with recomputation is refused: %s",
       err.msg);
}

static void test_training_lowers_loss(void)
{
    struct wp_gpt2_stage st;
    if (whole_model(&st, 0))
        return;
    struct wp_train_config t = {0};
    t.learning_rate = 1e-2f;
    t.beta1 = 0.9f;
    t.beta2 = 0.95f;
    t.eps = 1e-8f;
    int inp[B * 8], tgt[B * 8];
    batch(inp, tgt, B, 0);
    double first = 0, last = 0;
    for (int step = 1; step <= 20; step++) {
        double l = loss_of(&st, inp, tgt) / 16;
        if (step == 1)
            first = l;
        last = l;
        wp_gpt2_stage_zero_grads(&st);
        wp_gpt2_stage_backward(&st, 0, 1.0f / 16);
        wp_gpt2_stage_tie_wte_local(&st);
        wp_gpt2_stage_adamw(&st, &t, step);
    }
    ok(last < 0.7 * first, "20 AdamW steps on one batch lower the loss (%.4f -> %.4f)", first, last);
    wp_gpt2_stage_destroy(&st);
}

int main(void)
{
    test_initial_loss_and_gradients();
    test_split_backward();
    test_two_stages();
    test_micro_batches();
    test_recompute();
    test_training_lowers_loss();
    return tap_done();
}
