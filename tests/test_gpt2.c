/* GPT-2 stages on the CPU kernels: the initial loss is ln V, gradients of
 * the whole model agree with finite differences, the split backward (B then
 * W) gives the whole backward's gradients bit for bit, a model cut into
 * two stages gives the one-stage loss and gradients bit for bit (the tied
 * wte's two gradient halves summed), two micro-batches of one sequence
 * match one micro-batch of two within float rounding, and AdamW steps lower
 * the loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "run/data.h"
#include "run/gpt2_stage.h"
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
    test_training_lowers_loss();
    return tap_done();
}
