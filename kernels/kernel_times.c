/* Timing wrappers of the kernel table (kernel_times.h): each calls the inner
 * backend's kernel, waits for it (synchronize: a no-op on the CPU), and adds
 * the wall and process CPU seconds to the kernel's counters. */
#include "kernels/kernel_times.h"

#include <string.h>
#include <time.h>

enum kop {
    K_ENC_F, K_ENC_B, K_LN_F, K_LN_B, K_MM_F, K_MM_B, K_HEAD_F, K_HEAD_B, K_ATT_F, K_ATT_B, K_GELU_F, K_GELU_B,
    K_RES_F, K_RES_B, K_CE_F, K_CE_B, K_ADAMW, K_ZERO, K_ACC, K_SCALE, K_SUMSQ, K_COPY, K_ROUND, K_COUNT
};
static const char *const names[K_COUNT] = {
    "encoder_forward", "encoder_backward", "layernorm_forward", "layernorm_backward", "matmul_forward",
    "matmul_backward", "lm_head_matmul_forward", "lm_head_matmul_backward", "attention_forward",
    "attention_backward", "gelu_forward", "gelu_backward", "residual_forward", "residual_backward",
    "crossentropy_forward", "crossentropy_backward", "adamw_update", "zero", "accumulate", "scale",
    "sum_squares", "copy_block", "round_copy"};

static const struct wp_kernel_ops *in;
static struct wp_kernel_ops timed;
static double wall_s[K_COUNT], cpu_s[K_COUNT];
static long calls[K_COUNT];

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct t0 {
    double wall, cpu;
};
static struct t0 start(void)
{
    struct t0 t = {clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_PROCESS_CPUTIME_ID)};
    return t;
}
static void stop(enum kop k, struct t0 t)
{
    in->synchronize();
    wall_s[k] += clock_s(CLOCK_MONOTONIC) - t.wall;
    cpu_s[k] += clock_s(CLOCK_PROCESS_CPUTIME_ID) - t.cpu;
    calls[k]++;
}
/* KOP(k, call): time the inner call */
#define KOP(k, call)                                                                                       \
    do {                                                                                                   \
        struct t0 t_ = start();                                                                            \
        call;                                                                                              \
        stop(k, t_);                                                                                       \
    } while (0)

static void zero(void *p, size_t bytes)
{
    KOP(K_ZERO, in->zero(p, bytes));
}
static void encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    KOP(K_ENC_F, in->encoder_forward(out, inp, wte, wpe, B, T, C));
}
static void encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C)
{
    KOP(K_ENC_B, in->encoder_backward(dwte, dwpe, dout, inp, B, T, C));
}
static void layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                              const float *bias, int N, int C)
{
    KOP(K_LN_F, in->layernorm_forward(out, mean, rstd, inp, weight, bias, N, C));
}
static void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C)
{
    KOP(K_LN_B, in->layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C));
}
static void matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC,
                           enum wp_weight_layout layout)
{
    KOP(layout == WP_WEIGHT_OUT_IN ? K_HEAD_F : K_MM_F, in->matmul_forward(out, inp, weight, bias, N, C, OC, layout));
}
static void matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC, enum wp_weight_layout layout)
{
    KOP(layout == WP_WEIGHT_OUT_IN ? K_HEAD_B : K_MM_B,
        in->matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, C, OC, layout));
}
static void attention_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH)
{
    KOP(K_ATT_F, in->attention_forward(out, lse, inp, B, T, C, NH));
}
static void attention_backward(float *dinp, const float *dout, const float *inp, const float *lse, int B, int T, int C,
                               int NH)
{
    KOP(K_ATT_B, in->attention_backward(dinp, dout, inp, lse, B, T, C, NH));
}
static void gelu_forward(float *out, const float *inp, size_t n)
{
    KOP(K_GELU_F, in->gelu_forward(out, inp, n));
}
static void gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    KOP(K_GELU_B, in->gelu_backward(dinp, inp, dout, n));
}
static void residual_forward(float *out, const float *a, const float *b, size_t n)
{
    KOP(K_RES_F, in->residual_forward(out, a, b, n));
}
static void residual_backward(float *da, float *db, const float *dout, size_t n)
{
    KOP(K_RES_B, in->residual_backward(da, db, dout, n));
}
static void crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N, int V)
{
    KOP(K_CE_F, in->crossentropy_forward(losses, probs, logits, targets, N, V));
}
static void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N, int V)
{
    KOP(K_CE_B, in->crossentropy_backward(dlogits, probs, targets, dloss, N, V));
}
static void adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t)
{
    KOP(K_ADAMW, in->adamw_update(params, grads, m, v, n, lr, beta1, beta2, eps, weight_decay, t));
}
static void accumulate(float *dst, const float *src, size_t n)
{
    KOP(K_ACC, in->accumulate(dst, src, n));
}
static void scale(float *x, float s, size_t n)
{
    KOP(K_SCALE, in->scale(x, s, n));
}
static void sum_squares(double *host_out, const float *x, size_t n)
{
    KOP(K_SUMSQ, in->sum_squares(host_out, x, n));
}
static void copy_block(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols)
{
    KOP(K_COPY, in->copy_block(dst, dst_ld, src, src_ld, rows, cols));
}
static void round_copy(float *dst, const float *src, size_t n)
{
    KOP(K_ROUND, in->round_copy(dst, src, n));
}

const struct wp_kernel_ops *wp_kernels_timed(const struct wp_kernel_ops *inner)
{
    in = inner;
    timed = *inner; /* name, memory operations and set_precision pass through */
    timed.zero = zero;
    timed.encoder_forward = encoder_forward;
    timed.encoder_backward = encoder_backward;
    timed.layernorm_forward = layernorm_forward;
    timed.layernorm_backward = layernorm_backward;
    timed.matmul_forward = matmul_forward;
    timed.matmul_backward = matmul_backward;
    timed.attention_forward = attention_forward;
    timed.attention_backward = attention_backward;
    timed.gelu_forward = gelu_forward;
    timed.gelu_backward = gelu_backward;
    timed.residual_forward = residual_forward;
    timed.residual_backward = residual_backward;
    timed.crossentropy_forward = crossentropy_forward;
    timed.crossentropy_backward = crossentropy_backward;
    timed.adamw_update = adamw_update;
    timed.accumulate = accumulate;
    timed.scale = scale;
    timed.sum_squares = sum_squares;
    timed.copy_block = copy_block;
    timed.round_copy = round_copy;
    wp_kernel_times_reset();
    return &timed;
}

void wp_kernel_times_reset(void)
{
    memset(wall_s, 0, sizeof wall_s);
    memset(cpu_s, 0, sizeof cpu_s);
    memset(calls, 0, sizeof calls);
}

void wp_kernel_times_write(FILE *f, int rank, long steps, int header)
{
    double d = steps > 1 ? (double)steps : 1.0;
    if (header)
        fprintf(f, "rank,kernel,calls,wall_s,cpu_s\n");
    for (int k = 0; k < K_COUNT; k++)
        if (calls[k])
            fprintf(f, "%d,%s,%.6g,%.6f,%.6f\n", rank, names[k], calls[k] / d, wall_s[k] / d, cpu_s[k] / d);
}
