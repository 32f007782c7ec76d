/* CUDA kernels against the CPU ones (the tested reference): every op of the
 * table on the same random inputs and several shapes, outputs and gradients
 * compared. Built twice: tests/test_kernels_cuda on a real GPU (skipped
 * without one) and tests/test_kernels_cuda_host, with WP_CUDA_HOST_TEST, on
 * the host emulation of tests/cuda_host, in every build. */
#include <config.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/kernels.h"
#include "tap.h"

/* Tolerance: |cuda - cpu| <= RTOL * (|cpu| + max |cpu| of the array), for
 * every element. Both sides are float32 but sum in different orders (cuBLAS
 * blocking, warp and block reductions, atomicAdd in the encoder backward),
 * the GPU contracts a*b+c into FMAs, and its expf/tanhf/logf are within 2 ulp
 * rather than correctly rounded. Each of these costs a few units of float32
 * rounding (u = 6e-8) per operation; the longest chains here are sums of at
 * most a few hundred terms (matmul K <= 320, softmax over V with its sum in
 * double), whose typical error is ~sqrt(K) u ~ 1e-6 of the terms' magnitude.
 * 1e-4 is a margin of 10-100 over that, while any wrong index, layout,
 * missing term or += / = confusion is an error of order 1. The max |cpu|
 * term is an absolute floor: an element that is a sum with cancellation
 * (near zero next to terms of size 1) carries the terms' absolute error, not
 * a small relative one. */
#ifndef WP_CUDA_HOST_TEST
#define RTOL 1e-4
#else
/* On the host emulation the kernels use the CPU's libm and no FMA
 * contraction, and cuBLAS is the CPU's CBLAS: every difference left is the
 * summation order of a warp or block reduction or of the encoder's
 * atomicAdds, a few float rounding steps (the worst seen is 4.6e-7, the
 * layernorm mean over C = 768); most ops agree bit for bit. 1e-5 is a margin
 * of 20 over that, 10 times tighter than on a GPU. */
#define RTOL 1e-5
#endif
/* In bf16 both backends round every activation they store to bfloat16: two
 * float results a few float roundings apart round to the same bfloat16
 * unless a rounding boundary lies between them, and then to neighbours one
 * bfloat16 step apart, at most 2^-7 of the value (8 bits of mantissa).
 * Each case runs one kernel (one rounding), so 2^-7 bounds the difference;
 * weight gradients stay float and meet it with room. In tf32 both truncate
 * the products' operands alike (the same function): the fp32 tolerance. */
#define RTOL_BF16 (1.0 / 128)
static double rtol = RTOL;

static const struct wp_kernel_ops *const CPU = &wp_kernels_cpu;
static const struct wp_kernel_ops *const GPU = &wp_kernels_cuda;

/* ---- deterministic random numbers (xorshift64*) ------------------------------ */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static float rng_uniform(uint64_t *s, float lo, float hi)
{
    return lo + (hi - lo) * (float)((rng_next(s) >> 40) / 16777216.0);
}

/* ---- one array held by both backends ----------------------------------------- */
struct twin {
    void *cpu, *gpu; /* CPU (host) and CUDA (device) copies */
    size_t bytes;
};

/* Both copies hold host[bytes] (zeros when host is NULL). */
static struct twin twin_new(const void *host, size_t bytes)
{
    struct twin t = {CPU->alloc(bytes), GPU->alloc(bytes), bytes};
    if (!t.cpu || !t.gpu) {
        printf("Bail out! cannot allocate %zu bytes\n", bytes);
        exit(1);
    }
    if (host) {
        CPU->to_device(t.cpu, host, bytes);
        GPU->to_device(t.gpu, host, bytes);
    }
    return t;
}

/* n floats uniform in [lo, hi), the same on both sides */
static struct twin twin_rand(uint64_t *s, size_t n, float lo, float hi)
{
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = rng_uniform(s, lo, hi);
    struct twin t = twin_new(h, n * sizeof *h);
    free(h);
    return t;
}

/* n token ids in [0, V) */
static struct twin twin_tokens(uint64_t *s, size_t n, int V)
{
    int *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = (int)(rng_next(s) % (uint64_t)V);
    struct twin t = twin_new(h, n * sizeof *h);
    free(h);
    return t;
}

static void twin_free(struct twin *t)
{
    CPU->release(t->cpu);
    GPU->release(t->gpu);
    t->cpu = t->gpu = NULL;
}

#define F(t) ((float *)(t).cpu)
#define G(t) ((float *)(t).gpu)
#define FI(t) ((const int *)(t).cpu)
#define GI(t) ((const int *)(t).gpu)

/* One TAP line: the CUDA copy of a float array against the CPU copy (rtol above). */
static void check(const char *what, const struct twin *t)
{
    const size_t n = t->bytes / sizeof(float);
    float *want = malloc(t->bytes), *got = malloc(t->bytes);
    CPU->to_host(want, t->cpu, t->bytes);
    GPU->to_host(got, t->gpu, t->bytes);
    double maxabs = 0.0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(want[i]) && fabs(want[i]) > maxabs)
            maxabs = fabs(want[i]);
    size_t worst = 0;
    double worst_ratio = 0.0;
    for (size_t i = 0; i < n; i++) {
        double ratio;
        if (!isfinite(got[i]) || !isfinite(want[i])) {
            ratio = INFINITY;
        } else {
            const double err = fabs((double)got[i] - want[i]);
            const double tol = rtol * (fabs(want[i]) + maxabs);
            ratio = err == 0.0 ? 0.0 : tol == 0.0 ? INFINITY : err / tol;
        }
        if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst = i;
        }
    }
    if (!ok(worst_ratio <= 1.0, "%s: %zu values, worst error %.3g of the tolerance", what, n, worst_ratio))
        printf("#   at [%zu]: cuda %.9g, cpu %.9g (max |cpu| %.3g)\n", worst, got[worst], want[worst], maxabs);
    free(want);
    free(got);
}

/* check() of t under the name fmt, ... formats */
static void checkf(const struct twin *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void checkf(const struct twin *t, const char *fmt, ...)
{
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    check(what, t);
}

/* ---- memory ------------------------------------------------------------------- */
static void test_memory(void)
{
    const size_t n = 1000;
    float *h = malloc(n * sizeof *h);
    float *d = GPU->alloc(n * sizeof *h);
    ok(d != NULL, "alloc %zu floats", n);
    if (!d) {
        free(h);
        return;
    }
    GPU->to_host(h, d, n * sizeof *h);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++)
        nonzero += h[i] != 0.0f;
    ok(nonzero == 0, "alloc returns zeroed memory");
    for (size_t i = 0; i < n; i++)
        h[i] = (float)i + 0.5f;
    GPU->to_device(d, h, n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = -1.0f;
    GPU->to_host(h, d, n * sizeof *h);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += h[i] != (float)i + 0.5f;
    ok(wrong == 0, "to_device then to_host gives the data back");
    GPU->zero(d + 10, 5 * sizeof *h);
    GPU->synchronize();
    GPU->to_host(h, d, n * sizeof *h);
    wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += h[i] != (i >= 10 && i < 15 ? 0.0f : (float)i + 0.5f);
    ok(wrong == 0, "zero clears exactly the bytes asked for");
    GPU->release(d);
    free(h);
}

/* ---- the kernels ---------------------------------------------------------------- */
static void test_encoder_case(uint64_t *s, int B, int T, int C, int V, int maxT)
{
    const size_t BT = (size_t)B * T;
    struct twin inp = twin_tokens(s, BT, V);
    struct twin wte = twin_rand(s, (size_t)V * C, -1, 1), wpe = twin_rand(s, (size_t)maxT * C, -1, 1);
    struct twin out = twin_rand(s, BT * C, -9, 9); /* garbage: must be overwritten */
    CPU->encoder_forward(F(out), FI(inp), F(wte), F(wpe), B, T, C);
    GPU->encoder_forward(G(out), GI(inp), G(wte), G(wpe), B, T, C);
    checkf(&out, "encoder_forward B=%d T=%d C=%d out", B, T, C);

    struct twin dout = twin_rand(s, BT * C, -1, 1);
    struct twin dwte = twin_rand(s, (size_t)V * C, -1, 1), dwpe = twin_rand(s, (size_t)maxT * C, -1, 1); /* += */
    CPU->encoder_backward(F(dwte), F(dwpe), F(dout), FI(inp), B, T, C);
    GPU->encoder_backward(G(dwte), G(dwpe), G(dout), GI(inp), B, T, C);
    checkf(&dwte, "encoder_backward B=%d T=%d C=%d dwte", B, T, C);
    checkf(&dwpe, "encoder_backward B=%d T=%d C=%d dwpe", B, T, C);
    struct twin *all[] = {&inp, &wte, &wpe, &out, &dout, &dwte, &dwpe};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

static void test_encoder(uint64_t *s)
{
    test_encoder_case(s, 3, 17, 40, 11, 20); /* few tokens: rows collide in dwte */
    test_encoder_case(s, 1, 3, 5, 4, 3);     /* fewer elements than a block */
}

static void test_layernorm_case(uint64_t *s, int N, int C)
{
    const size_t NC = (size_t)N * C;
    struct twin inp = twin_rand(s, NC, -2, 3);
    struct twin weight = twin_rand(s, C, 0.5f, 1.5f), bias = twin_rand(s, C, -0.5f, 0.5f);
    struct twin out = twin_rand(s, NC, -9, 9), mean = twin_rand(s, N, -9, 9), rstd = twin_rand(s, N, -9, 9);
    CPU->layernorm_forward(F(out), F(mean), F(rstd), F(inp), F(weight), F(bias), N, C);
    GPU->layernorm_forward(G(out), G(mean), G(rstd), G(inp), G(weight), G(bias), N, C);
    checkf(&out, "layernorm_forward N=%d C=%d out", N, C);
    checkf(&mean, "layernorm_forward N=%d C=%d mean", N, C);
    checkf(&rstd, "layernorm_forward N=%d C=%d rstd", N, C);

    /* each side's backward uses its own saved mean and rstd */
    struct twin dout = twin_rand(s, NC, -1, 1);
    struct twin dinp = twin_rand(s, NC, -1, 1), dweight = twin_rand(s, C, -1, 1), dbias = twin_rand(s, C, -1, 1);
    CPU->layernorm_backward(F(dinp), F(dweight), F(dbias), F(dout), F(inp), F(weight), F(mean), F(rstd), N, C);
    GPU->layernorm_backward(G(dinp), G(dweight), G(dbias), G(dout), G(inp), G(weight), G(mean), G(rstd), N, C);
    checkf(&dinp, "layernorm_backward N=%d C=%d dinp", N, C);
    checkf(&dweight, "layernorm_backward N=%d C=%d dweight", N, C);
    checkf(&dbias, "layernorm_backward N=%d C=%d dbias", N, C);
    struct twin *all[] = {&inp, &weight, &bias, &out, &mean, &rstd, &dout, &dinp, &dweight, &dbias};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

static void test_layernorm(uint64_t *s)
{
    test_layernorm_case(s, 29, 53); /* rows: a partial last block; columns: a partial last lane round */
    test_layernorm_case(s, 3, 7);   /* fewer columns than lanes, fewer rows than warps in a block */
    test_layernorm_case(s, 16, 768); /* GPT-2's C; whole blocks of rows */
    test_layernorm_case(s, 2, 300); /* dweight, dbias over two blocks of columns */
}

static void test_matmul_case(uint64_t *s, int N, int C, int OC, enum wp_weight_layout layout, int with_bias)
{
    const char *lay = layout == WP_WEIGHT_IN_OUT ? "in-out" : "out-in";
    struct twin inp = twin_rand(s, (size_t)N * C, -1, 1), weight = twin_rand(s, (size_t)C * OC, -1, 1);
    struct twin bias = twin_rand(s, (size_t)OC, -1, 1);
    struct twin out = twin_rand(s, (size_t)N * OC, -9, 9);
    CPU->matmul_forward(F(out), F(inp), F(weight), with_bias ? F(bias) : NULL, N, C, OC, layout);
    GPU->matmul_forward(G(out), G(inp), G(weight), with_bias ? G(bias) : NULL, N, C, OC, layout);
    checkf(&out, "matmul_forward %s%s N=%d C=%d OC=%d out", lay, with_bias ? "" : " no bias", N, C, OC);

    struct twin dout = twin_rand(s, (size_t)N * OC, -1, 1);
    struct twin dinp = twin_rand(s, (size_t)N * C, -1, 1), dweight = twin_rand(s, (size_t)C * OC, -1, 1);
    struct twin dbias = twin_rand(s, (size_t)OC, -1, 1);
    CPU->matmul_backward(F(dinp), F(dweight), with_bias ? F(dbias) : NULL, F(dout), F(inp), F(weight), N, C, OC,
                         layout);
    GPU->matmul_backward(G(dinp), G(dweight), with_bias ? G(dbias) : NULL, G(dout), G(inp), G(weight), N, C, OC,
                         layout);
    checkf(&dinp, "matmul_backward %s%s N=%d C=%d OC=%d dinp", lay, with_bias ? "" : " no bias", N, C, OC);
    checkf(&dweight, "matmul_backward %s%s N=%d C=%d OC=%d dweight", lay, with_bias ? "" : " no bias", N, C, OC);
    /* without a bias dbias must stay as it was on both sides */
    checkf(&dbias, "matmul_backward %s%s N=%d C=%d OC=%d dbias", lay, with_bias ? "" : " no bias", N, C, OC);
    struct twin *all[] = {&inp, &weight, &bias, &out, &dout, &dinp, &dweight, &dbias};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

/* The B and W halves of a split backward (zero-bubble schedules): each
 * gradient computed alone, the others' pointers NULL, as the CPU does. */
static void test_split_backward(uint64_t *s)
{
    const int N = 19, C = 45, OC = 33;
    struct twin inp = twin_rand(s, (size_t)N * C, -1, 1), weight = twin_rand(s, (size_t)C * OC, -1, 1);
    struct twin dout = twin_rand(s, (size_t)N * OC, -1, 1);
    struct twin dinp = twin_rand(s, (size_t)N * C, -1, 1), dweight = twin_rand(s, (size_t)C * OC, -1, 1);
    struct twin dbias = twin_rand(s, (size_t)OC, -1, 1);
    for (int layout = 0; layout < 2; layout++) {
        const enum wp_weight_layout l = (enum wp_weight_layout)layout;
        CPU->matmul_backward(F(dinp), NULL, NULL, F(dout), F(inp), F(weight), N, C, OC, l);
        GPU->matmul_backward(G(dinp), NULL, NULL, G(dout), G(inp), G(weight), N, C, OC, l);
        CPU->matmul_backward(NULL, F(dweight), F(dbias), F(dout), F(inp), F(weight), N, C, OC, l);
        GPU->matmul_backward(NULL, G(dweight), G(dbias), G(dout), G(inp), G(weight), N, C, OC, l);
    }
    checkf(&dinp, "matmul_backward B half alone (both layouts) dinp");
    checkf(&dweight, "matmul_backward W half alone (both layouts) dweight");
    checkf(&dbias, "matmul_backward W half alone (both layouts) dbias");

    struct twin ln_w = twin_rand(s, C, 0.5f, 1.5f), ln_b = twin_rand(s, C, -0.5f, 0.5f);
    struct twin out = twin_rand(s, (size_t)N * C, -9, 9), mean = twin_rand(s, N, -9, 9), rstd = twin_rand(s, N, -9, 9);
    struct twin ln_dout = twin_rand(s, (size_t)N * C, -1, 1), ln_dinp = twin_rand(s, (size_t)N * C, -1, 1);
    struct twin ln_dw = twin_rand(s, C, -1, 1), ln_db = twin_rand(s, C, -1, 1);
    CPU->layernorm_forward(F(out), F(mean), F(rstd), F(inp), F(ln_w), F(ln_b), N, C);
    GPU->layernorm_forward(G(out), G(mean), G(rstd), G(inp), G(ln_w), G(ln_b), N, C);
    CPU->layernorm_backward(F(ln_dinp), NULL, NULL, F(ln_dout), F(inp), F(ln_w), F(mean), F(rstd), N, C);
    GPU->layernorm_backward(G(ln_dinp), NULL, NULL, G(ln_dout), G(inp), G(ln_w), G(mean), G(rstd), N, C);
    CPU->layernorm_backward(NULL, F(ln_dw), F(ln_db), F(ln_dout), F(inp), F(ln_w), F(mean), F(rstd), N, C);
    GPU->layernorm_backward(NULL, G(ln_dw), G(ln_db), G(ln_dout), G(inp), G(ln_w), G(mean), G(rstd), N, C);
    checkf(&ln_dinp, "layernorm_backward B half alone dinp");
    checkf(&ln_dw, "layernorm_backward W half alone dweight");
    checkf(&ln_db, "layernorm_backward W half alone dbias");
    struct twin *all[] = {&inp, &weight, &dout, &dinp, &dweight, &dbias, &ln_w, &ln_b, &out, &mean, &rstd,
                          &ln_dout, &ln_dinp, &ln_dw, &ln_db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

static void test_matmul(uint64_t *s)
{
    /* distinct odd sizes, so that a swapped dimension or leading dimension fails */
    for (int layout = 0; layout < 2; layout++)
        for (int with_bias = 1; with_bias >= 0; with_bias--)
            test_matmul_case(s, 37, 53, 71, (enum wp_weight_layout)layout, with_bias);
    test_matmul_case(s, 128, 320, 200, WP_WEIGHT_IN_OUT, 1);
    test_matmul_case(s, 128, 320, 200, WP_WEIGHT_OUT_IN, 0);
    for (int layout = 0; layout < 2; layout++) {
        test_matmul_case(s, 1, 7, 3, (enum wp_weight_layout)layout, 1);   /* one row */
        test_matmul_case(s, 5, 33, 300, (enum wp_weight_layout)layout, 1); /* dbias over two blocks */
    }
}

static void test_attention_case(uint64_t *s, int B, int T, int C, int NH)
{
    const size_t BT = (size_t)B * T;
    struct twin inp = twin_rand(s, BT * 3 * C, -1, 1);
    struct twin out = twin_rand(s, BT * C, -9, 9), lse = twin_rand(s, (size_t)B * NH * T, -9, 9);
    CPU->attention_forward(F(out), F(lse), F(inp), B, T, C, NH);
    GPU->attention_forward(G(out), G(lse), G(inp), B, T, C, NH);
    checkf(&out, "attention_forward B=%d T=%d C=%d NH=%d out", B, T, C, NH);
    checkf(&lse, "attention_forward B=%d T=%d C=%d NH=%d lse", B, T, C, NH);

    /* from each side's own lse (compared above) */
    struct twin dout = twin_rand(s, BT * C, -1, 1), dinp = twin_rand(s, BT * 3 * C, -1, 1);
    CPU->attention_backward(F(dinp), F(dout), F(inp), F(lse), B, T, C, NH);
    GPU->attention_backward(G(dinp), G(dout), G(inp), G(lse), B, T, C, NH);
    checkf(&dinp, "attention_backward B=%d T=%d C=%d NH=%d dinp", B, T, C, NH);
    struct twin *all[] = {&inp, &out, &lse, &dout, &dinp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

static void test_attention(uint64_t *s)
{
    test_attention_case(s, 2, 13, 48, 4);
    test_attention_case(s, 2, 64, 64, 2);
    test_attention_case(s, 1, 1, 8, 2);  /* one position */
    test_attention_case(s, 3, 5, 12, 1); /* one head */
    test_attention_case(s, 1, 70, 16, 4); /* more softmax rows (NH T = 280) than a block */
    test_attention_case(s, 2, 150, 32, 2); /* three blocks of WP_ATTENTION_ROW_BLOCK query rows, the last partial */
}

static void test_gelu_residual_case(uint64_t *s, size_t n)
{
    struct twin inp = twin_rand(s, n, -5, 5), out = twin_rand(s, n, -9, 9);
    CPU->gelu_forward(F(out), F(inp), n);
    GPU->gelu_forward(G(out), G(inp), n);
    checkf(&out, "gelu_forward n=%zu out", n);
    struct twin dout = twin_rand(s, n, -1, 1), dinp = twin_rand(s, n, -1, 1);
    CPU->gelu_backward(F(dinp), F(inp), F(dout), n);
    GPU->gelu_backward(G(dinp), G(inp), G(dout), n);
    checkf(&dinp, "gelu_backward n=%zu dinp", n);

    struct twin a = twin_rand(s, n, -1, 1), b = twin_rand(s, n, -1, 1);
    CPU->residual_forward(F(out), F(a), F(b), n);
    GPU->residual_forward(G(out), G(a), G(b), n);
    checkf(&out, "residual_forward n=%zu out", n);
    CPU->residual_backward(F(a), F(b), F(dout), n);
    GPU->residual_backward(G(a), G(b), G(dout), n);
    checkf(&a, "residual_backward n=%zu da", n);
    checkf(&b, "residual_backward n=%zu db", n);
    struct twin *all[] = {&inp, &out, &dout, &dinp, &a, &b};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

static void test_gelu_residual(uint64_t *s)
{
    const size_t sizes[] = {1, 257, 1000};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
        test_gelu_residual_case(s, sizes[k]);
}

static void test_crossentropy_case(uint64_t *s, int N, int V)
{
    const size_t NV = (size_t)N * V;
    struct twin logits = twin_rand(s, NV, -4, 4), targets = twin_tokens(s, (size_t)N, V);
    struct twin losses = twin_rand(s, (size_t)N, -9, 9), probs = twin_rand(s, NV, -9, 9);
    CPU->crossentropy_forward(F(losses), F(probs), F(logits), FI(targets), N, V);
    GPU->crossentropy_forward(G(losses), G(probs), G(logits), GI(targets), N, V);
    checkf(&losses, "crossentropy_forward N=%d V=%d losses", N, V);
    checkf(&probs, "crossentropy_forward N=%d V=%d probs", N, V);

    struct twin dlogits = twin_rand(s, NV, -1e-3f, 1e-3f);
    CPU->crossentropy_backward(F(dlogits), F(probs), FI(targets), 1.0f / N, N, V);
    GPU->crossentropy_backward(G(dlogits), G(probs), GI(targets), 1.0f / N, N, V);
    checkf(&dlogits, "crossentropy_backward N=%d V=%d dlogits", N, V);
    struct twin *all[] = {&logits, &targets, &losses, &probs, &dlogits};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        twin_free(all[i]);
}

static void test_crossentropy(uint64_t *s)
{
    test_crossentropy_case(s, 7, 1000);
    test_crossentropy_case(s, 3, 50257); /* GPT-2's vocabulary */
    test_crossentropy_case(s, 1, 5);     /* fewer classes than a warp: most threads idle */
    test_crossentropy_case(s, 4, 300);   /* a partial second round of the block */
}

static void test_adamw_case(uint64_t *s, size_t n)
{
    struct twin params = twin_rand(s, n, -1, 1), m = twin_rand(s, n, -0.1f, 0.1f), v = twin_rand(s, n, 0, 0.01f);
    for (int t = 3; t <= 4; t++) { /* two steps: the second starts from each side's own moments */
        struct twin grads = twin_rand(s, n, -1, 1);
        CPU->adamw_update(F(params), F(grads), F(m), F(v), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
        GPU->adamw_update(G(params), G(grads), G(m), G(v), n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
        twin_free(&grads);
    }
    checkf(&params, "adamw_update n=%zu params (2 steps)", n);
    checkf(&m, "adamw_update n=%zu m", n);
    checkf(&v, "adamw_update n=%zu v", n);
    twin_free(&params);
    twin_free(&m);
    twin_free(&v);
}

static void test_adamw(uint64_t *s)
{
    test_adamw_case(s, 1);
    test_adamw_case(s, 1000);
}

/* rows x cols from whole (row stride whole_ld, from column first) into piece
 * (row stride piece_ld): a copy, so exact */
static void test_copy_block_case(uint64_t *s, size_t rows, size_t cols, size_t whole_ld, size_t first,
                                 size_t piece_ld)
{
    struct twin whole = twin_rand(s, rows * whole_ld, -1, 1), piece = twin_rand(s, rows * piece_ld, -1, 1);
    CPU->copy_block(F(piece), piece_ld, F(whole) + first, whole_ld, rows, cols);
    GPU->copy_block(G(piece), piece_ld, G(whole) + first, whole_ld, rows, cols);
    checkf(&piece, "copy_block %zu x %zu from ld %zu into ld %zu", rows, cols, whole_ld, piece_ld);
    twin_free(&whole);
    twin_free(&piece);
}

static void test_vector(uint64_t *s)
{
    const size_t lengths[] = {1, 100003};
    for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
        const size_t n = lengths[k];
        struct twin dst = twin_rand(s, n, -1, 1), src = twin_rand(s, n, -1, 1);
        CPU->accumulate(F(dst), F(src), n);
        GPU->accumulate(G(dst), G(src), n);
        checkf(&dst, "accumulate n=%zu dst", n);
        CPU->scale(F(dst), 0.37f, n);
        GPU->scale(G(dst), 0.37f, n);
        checkf(&dst, "scale n=%zu x", n);
        /* a message's round trip through bfloat16 bits, and the rounded copy */
        struct twin bits = twin_new(NULL, n * sizeof(uint16_t)), back = twin_new(NULL, n * sizeof(float));
        CPU->to_bf16(bits.cpu, F(dst), n);
        GPU->to_bf16(bits.gpu, G(dst), n);
        CPU->from_bf16(F(back), bits.cpu, n);
        GPU->from_bf16(G(back), bits.gpu, n);
        checkf(&back, "to_bf16 then from_bf16 n=%zu", n);
        CPU->round_copy(F(src), F(dst), n);
        GPU->round_copy(G(src), G(dst), n);
        checkf(&src, "round_copy n=%zu", n);
        twin_free(&bits);
        twin_free(&back);
        twin_free(&dst);
        twin_free(&src);
    }

    /* a column block between matrices of other widths (tensor parallelism's
     * slices and gathers), the last columns of a row, whole rows */
    test_copy_block_case(s, 37, 24, 96, 24, 40);
    test_copy_block_case(s, 5, 7, 21, 14, 7);
    test_copy_block_case(s, 3, 33, 33, 0, 33);

    /* Every square is exact in double and every term positive: both sums are
     * within n * 1.1e-16 = 1.1e-10 (relative) of the exact sum whatever the
     * order, so 1e-9 holds here where a float accumulator (1e-4 or worse)
     * or a lost block would not. */
    const size_t sizes[] = {1, 1000, 1000003};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        struct twin x = twin_rand(s, sizes[k], -2, 2);
        double want = -1.0, got = -2.0;
        CPU->sum_squares(&want, F(x), sizes[k]);
        GPU->sum_squares(&got, G(x), sizes[k]);
        is_near(got, want, 1e-9, "sum_squares of %zu floats", sizes[k]);
        twin_free(&x);
    }
}

int main(void)
{
    char why[256];
    if (!wp_cuda_device_usable(why, sizeof why)) {
        printf("1..0 # SKIP no CUDA device: %s\n", why);
        return 0;
    }
#ifdef WP_CUDA_HOST_TEST
    printf("# %s against %s on the host emulation of tests/cuda_host (RTOL %g)\n", GPU->name, CPU->name, RTOL);
#else
    printf("# %s against %s: %s (RTOL %g)\n", GPU->name, CPU->name, why, RTOL);
#endif
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    test_memory();
    static const enum wp_precision precisions[] = {WP_PRECISION_FP32, WP_PRECISION_BF16, WP_PRECISION_TF32};
    for (size_t i = 0; i < sizeof precisions / sizeof precisions[0]; i++) {
        const enum wp_precision p = precisions[i];
        CPU->set_precision(p);
        GPU->set_precision(p);
        rtol = p == WP_PRECISION_BF16 ? RTOL_BF16 : RTOL;
        printf("# every kernel in %s on both backends (rtol %g)\n", wp_precision_name(p), rtol);
        test_encoder(&seed);
        test_layernorm(&seed);
        test_matmul(&seed);
        test_split_backward(&seed);
        test_attention(&seed);
        test_gelu_residual(&seed);
        test_crossentropy(&seed);
        test_adamw(&seed);
        test_vector(&seed);
    }
    CPU->set_precision(WP_PRECISION_FP32);
    GPU->set_precision(WP_PRECISION_FP32);
    return tap_done();
}
