/* The CPU kernels in bf16 and tf32 (kernels.h set_precision) against the
 * same kernels in fp32 on the same inputs: in bf16 every activation and
 * activation gradient a kernel stores is the bfloat16 rounding of what fp32
 * computes (bit for bit: the mode adds a rounding as the value is stored
 * and nothing else), and everything else (weight gradients, LayerNorm's
 * statistics, attention's log-sum-exps, the cross-entropy's probabilities and
 * losses, AdamW) is fp32's bit for bit; a product reads its operands
 * rounded to bfloat16 (attention's float softmax included, so its output
 * is only near fp32's); in tf32 a product equals fp32's product of the
 * operands truncated to TF32. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/precision.h"
#include "tap.h"

static const struct wp_kernel_ops *const K = &wp_kernels_cpu;

static uint64_t state = 0x2545F4914F6CDD1Dull;

static float unit(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (float)((double)(state >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static float *rnd(size_t n, float offset, float scale)
{
    float *x = malloc(n * sizeof *x);
    for (size_t i = 0; x && i < n; i++)
        x[i] = offset + scale * unit();
    return x;
}

/* n random values that are bfloat16 values, as activations and the
 * weights the kernels read are in bf16 */
static float *rnd_bf16(size_t n, float offset, float scale)
{
    float *x = rnd(n, offset, scale);
    for (size_t i = 0; x && i < n; i++)
        x[i] = wp_bf16_round(x[i]);
    return x;
}

static float *dup(const float *x, size_t n)
{
    float *y = malloc(n * sizeof *y);
    if (y)
        memcpy(y, x, n * sizeof *y);
    return y;
}

/* bf[i] == bfloat16(fp[i]) for every i, and bf holds bfloat16 values */
static void rounded(const float *fp, const float *bf, size_t n, const char *what)
{
    size_t bad = 0, changed = 0;
    for (size_t i = 0; i < n; i++) {
        bad += memcmp(&bf[i], &(float){wp_bf16_round(fp[i])}, sizeof(float)) != 0;
        changed += bf[i] != fp[i];
    }
    ok(bad == 0 && changed > 0, "%s: bf16 stores the bfloat16 rounding of fp32's %zu values (%zu differ; %zu "
                                "rounded away from fp32's)",
       what, n, bad, changed);
}

/* bf holds bfloat16 values within 2^-6 of fp's largest magnitude of fp
 * (a few bfloat16 steps of the largest value) */
static void bf16_near(const float *fp, const float *bf, size_t n, const char *what)
{
    double most = 0, worst = 0;
    size_t not_bf16 = 0;
    for (size_t i = 0; i < n; i++) {
        most = fabs(fp[i]) > most ? fabs(fp[i]) : most;
        not_bf16 += wp_bf16_round(bf[i]) != bf[i];
    }
    for (size_t i = 0; i < n; i++)
        worst = fabs((double)bf[i] - fp[i]) > worst ? fabs((double)bf[i] - fp[i]) : worst;
    ok(not_bf16 == 0 && worst <= most / 64, "%s: bf16 stores bfloat16 values (%zu are not) within %.3g of fp32's "
                                           "(at most %.3g, 2^-6 of the largest)",
       what, not_bf16, worst, most / 64);
}

static void same(const float *a, const float *b, size_t n, const char *what)
{
    ok(memcmp(a, b, n * sizeof *a) == 0, "%s: the same %zu values, bit for bit", what, n);
}

static void test_matmul(void)
{
    const int N = 37, C = 64, OC = 48;
    float *inp = rnd_bf16((size_t)N * C, 0, 1), *w = rnd_bf16((size_t)C * OC, 0, 0.2f), *bias = rnd(OC, 0, 0.1f);
    float *dout = rnd_bf16((size_t)N * OC, 0, 1), *dinp0 = rnd_bf16((size_t)N * C, 0, 0.5f);
    float *out[2], *dinp[2], *dw[2], *db[2];
    for (int m = 0; m < 2; m++) {
        K->set_precision(m ? WP_PRECISION_BF16 : WP_PRECISION_FP32);
        out[m] = calloc((size_t)N * OC, sizeof(float));
        dinp[m] = dup(dinp0, (size_t)N * C);
        dw[m] = calloc((size_t)C * OC, sizeof(float));
        db[m] = calloc(OC, sizeof(float));
        K->matmul_forward(out[m], inp, w, bias, N, C, OC, WP_WEIGHT_IN_OUT);
        K->matmul_backward(dinp[m], dw[m], db[m], dout, inp, w, N, C, OC, WP_WEIGHT_IN_OUT);
    }
    rounded(out[0], out[1], (size_t)N * OC, "matmul_forward out");
    rounded(dinp[0], dinp[1], (size_t)N * C, "matmul_backward dinp (+= then stored)");
    same(dw[0], dw[1], (size_t)C * OC, "matmul_backward dweight");
    same(db[0], db[1], OC, "matmul_backward dbias");

    /* tf32: the product of the operands truncated to TF32, the same sgemm */
    float *raw_i = rnd((size_t)N * C, 0, 1), *raw_w = rnd((size_t)C * OC, 0, 0.2f);
    float *ti = dup(raw_i, (size_t)N * C), *tw = dup(raw_w, (size_t)C * OC),
          *ref = calloc((size_t)N * OC, sizeof(float)), *got = calloc((size_t)N * OC, sizeof(float)),
          *full = calloc((size_t)N * OC, sizeof(float));
    for (size_t i = 0; i < (size_t)N * C; i++)
        ti[i] = wp_tf32_truncate(ti[i]);
    for (size_t i = 0; i < (size_t)C * OC; i++)
        tw[i] = wp_tf32_truncate(tw[i]);
    K->set_precision(WP_PRECISION_FP32);
    K->matmul_forward(ref, ti, tw, bias, N, C, OC, WP_WEIGHT_IN_OUT);
    K->matmul_forward(full, raw_i, raw_w, bias, N, C, OC, WP_WEIGHT_IN_OUT);
    K->set_precision(WP_PRECISION_TF32);
    K->matmul_forward(got, raw_i, raw_w, bias, N, C, OC, WP_WEIGHT_IN_OUT);
    ok(memcmp(ref, got, (size_t)N * OC * sizeof *got) == 0,
       "matmul_forward in tf32 is fp32's product of the operands truncated to TF32, bit for bit");
    ok(memcmp(full, got, (size_t)N * OC * sizeof *got) != 0, "and differs from fp32's");

    /* bf16 reads a product's operands rounded to bfloat16, whatever they hold */
    float *ri = dup(raw_i, (size_t)N * C), *rw = dup(raw_w, (size_t)C * OC), *rref = calloc((size_t)N * OC, 4),
          *rgot = calloc((size_t)N * OC, 4);
    for (size_t i = 0; i < (size_t)N * C; i++)
        ri[i] = wp_bf16_round(ri[i]);
    for (size_t i = 0; i < (size_t)C * OC; i++)
        rw[i] = wp_bf16_round(rw[i]);
    K->set_precision(WP_PRECISION_FP32);
    K->matmul_forward(rref, ri, rw, bias, N, C, OC, WP_WEIGHT_IN_OUT);
    K->set_precision(WP_PRECISION_BF16);
    K->matmul_forward(rgot, raw_i, raw_w, bias, N, C, OC, WP_WEIGHT_IN_OUT);
    rounded(rref, rgot, (size_t)N * OC, "matmul_forward in bf16 on operands that are not bfloat16 values: the "
                                       "product of their roundings, rounded,");
    K->set_precision(WP_PRECISION_FP32);
    float *all[] = {inp, w, bias, dout, dinp0, ti, tw, ref, got, out[0], out[1], dinp[0], dinp[1], dw[0], dw[1],
                    db[0], db[1], raw_i, raw_w, full, ri, rw, rref, rgot};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

static void test_layernorm_gelu_residual(void)
{
    const int N = 29, C = 96;
    const size_t n = (size_t)N * C;
    float *x = rnd(n, 0.3f, 2), *wt = rnd(C, 1, 0.3f), *b = rnd(C, 0, 0.3f), *dout = rnd(n, 0, 1);
    float *d0 = rnd(n, 0, 0.5f), *y = rnd(n, 0, 1);
    float *out[2], *mean[2], *rstd[2], *dinp[2], *dw[2], *db[2], *g[2], *gd[2], *r[2], *ra[2], *rb[2];
    for (int m = 0; m < 2; m++) {
        K->set_precision(m ? WP_PRECISION_BF16 : WP_PRECISION_FP32);
        out[m] = calloc(n, sizeof(float));
        mean[m] = calloc(N, sizeof(float));
        rstd[m] = calloc(N, sizeof(float));
        dinp[m] = dup(d0, n);
        dw[m] = calloc(C, sizeof(float));
        db[m] = calloc(C, sizeof(float));
        K->layernorm_forward(out[m], mean[m], rstd[m], x, wt, b, N, C);
        K->layernorm_backward(dinp[m], dw[m], db[m], dout, x, wt, mean[0], rstd[0], N, C);
        g[m] = calloc(n, sizeof(float));
        gd[m] = dup(d0, n);
        K->gelu_forward(g[m], x, n);
        K->gelu_backward(gd[m], x, dout, n);
        r[m] = calloc(n, sizeof(float));
        ra[m] = dup(d0, n);
        rb[m] = dup(y, n);
        K->residual_forward(r[m], x, y, n);
        K->residual_backward(ra[m], rb[m], dout, n);
    }
    rounded(out[0], out[1], n, "layernorm_forward out");
    same(mean[0], mean[1], N, "layernorm_forward mean");
    same(rstd[0], rstd[1], N, "layernorm_forward rstd");
    rounded(dinp[0], dinp[1], n, "layernorm_backward dinp");
    same(dw[0], dw[1], C, "layernorm_backward dweight");
    same(db[0], db[1], C, "layernorm_backward dbias");
    rounded(g[0], g[1], n, "gelu_forward out");
    rounded(gd[0], gd[1], n, "gelu_backward dinp");
    rounded(r[0], r[1], n, "residual_forward out");
    rounded(ra[0], ra[1], n, "residual_backward da");
    rounded(rb[0], rb[1], n, "residual_backward db");
    K->set_precision(WP_PRECISION_FP32);
    float *all[] = {x, wt, b, dout, d0, y};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    for (int m = 0; m < 2; m++) {
        float *each[] = {out[m], mean[m], rstd[m], dinp[m], dw[m], db[m], g[m], gd[m], r[m], ra[m], rb[m]};
        for (size_t i = 0; i < sizeof each / sizeof *each; i++)
            free(each[i]);
    }
}

static void test_encoder_attention_crossentropy(void)
{
    const int B = 2, T = 70, C = 32, NH = 4, V = 50;
    const size_t bt = (size_t)B * T, nl = (size_t)B * NH * T;
    int *tok = malloc(bt * sizeof *tok);
    for (size_t i = 0; i < bt; i++)
        tok[i] = (int)((unit() + 1) * 0.5f * (V - 1));
    float *wte = rnd((size_t)V * C, 0, 0.5f), *wpe = rnd((size_t)T * C, 0, 0.5f), *qkv = rnd_bf16(bt * 3 * C, 0, 1);
    float *datt_out = rnd_bf16(bt * C, 0, 1), *dq0 = rnd_bf16(bt * 3 * C, 0, 0.5f), *logits = rnd(bt * V, 0, 3);
    float *enc[2], *out[2], *lse[2], *dqkv[2], *loss[2], *probs[2], *dlog[2];
    for (int m = 0; m < 2; m++) {
        K->set_precision(m ? WP_PRECISION_BF16 : WP_PRECISION_FP32);
        enc[m] = calloc(bt * C, sizeof(float));
        K->encoder_forward(enc[m], tok, wte, wpe, B, T, C);
        out[m] = calloc(bt * C, sizeof(float));
        lse[m] = calloc(nl, sizeof(float));
        K->attention_forward(out[m], lse[m], qkv, B, T, C, NH);
        dqkv[m] = dup(dq0, bt * 3 * C);
        K->attention_backward(dqkv[m], datt_out, qkv, lse[0], B, T, C, NH);
        loss[m] = calloc(bt, sizeof(float));
        probs[m] = calloc(bt * V, sizeof(float));
        dlog[m] = calloc(bt * V, sizeof(float));
        K->crossentropy_forward(loss[m], probs[m], logits, tok, (int)bt, V);
        K->crossentropy_backward(dlog[m], probs[0], tok, 1.0f / (float)bt, (int)bt, V);
    }
    rounded(enc[0], enc[1], bt * C, "encoder_forward out");
    /* the products P V, P^T dO, dS K and dS^T Q read the float softmax and
     * its gradient rounded to bfloat16: out and dinp are bfloat16 values
     * within a few bfloat16 steps of fp32's */
    bf16_near(out[0], out[1], bt * C, "attention_forward out");
    same(lse[0], lse[1], nl, "attention_forward lse (the saved log-sum-exps)");
    bf16_near(dqkv[0], dqkv[1], bt * 3 * C, "attention_backward dinp");
    same(loss[0], loss[1], bt, "crossentropy_forward losses");
    same(probs[0], probs[1], bt * V, "crossentropy_forward probs");
    rounded(dlog[0], dlog[1], bt * V, "crossentropy_backward dlogits");
    K->set_precision(WP_PRECISION_FP32);
    free(tok);
    float *all[] = {wte, wpe, qkv, datt_out, dq0, logits};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
    for (int m = 0; m < 2; m++) {
        float *each[] = {enc[m], out[m], lse[m], dqkv[m], loss[m], probs[m], dlog[m]};
        for (size_t i = 0; i < sizeof each / sizeof *each; i++)
            free(each[i]);
    }
}

static void test_round_copy(void)
{
    const size_t n = 1000;
    float *x = rnd(n, 0, 10), *y = calloc(n, sizeof(float));
    K->set_precision(WP_PRECISION_FP32);
    K->round_copy(y, x, n);
    same(x, y, n, "round_copy in fp32 copies");
    K->set_precision(WP_PRECISION_BF16);
    K->round_copy(y, x, n);
    rounded(x, y, n, "round_copy");
    float *z = dup(x, n);
    K->round_copy(z, z, n);
    same(y, z, n, "round_copy in place, as into another buffer");
    uint16_t *bits = calloc(n, sizeof *bits);
    float *back = calloc(n, sizeof *back);
    K->to_bf16(bits, x, n);
    K->from_bf16(back, bits, n);
    rounded(x, back, n, "to_bf16 then from_bf16 (a message's round trip)");
    same(y, back, n, "the round trip, as round_copy");
    K->set_precision(WP_PRECISION_FP32);
    free(x);
    free(y);
    free(z);
    free(bits);
    free(back);
}

int main(void)
{
    test_matmul();
    test_layernorm_gelu_residual();
    test_encoder_attention_crossentropy();
    test_round_copy();
    return tap_done();
}
