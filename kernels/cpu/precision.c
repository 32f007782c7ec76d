/* The CPU backend's training precision (kernels.h set_precision): the mode
 * every kernel reads, the rounding of what a kernel stores in bf16, and
 * the matrix products through one CBLAS sgemm call that reads its
 * operands as the tensor cores do: with 10 mantissa bits in tf32, rounded
 * to bfloat16 in bf16 (activations already are; attention's softmax and
 * its gradient are float until a product reads them); floats to bfloat16
 * bits and back for messages. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/precision.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum wp_precision mode = WP_PRECISION_FP32;

void wp_cpu_set_precision(enum wp_precision p)
{
    mode = p;
}

enum wp_precision wp_cpu_precision(void)
{
    return mode;
}

void wp_cpu_round_copy(float *dst, const float *src, size_t n)
{
    if (mode != WP_PRECISION_BF16) {
        if (dst != src && n)
            memcpy(dst, src, n * sizeof *dst);
        return;
    }
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] = wp_bf16_round(src[i]);
}

void wp_cpu_to_bf16(uint16_t *dst, const float *src, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] = wp_bf16_from_float(src[i]);
}

void wp_cpu_from_bf16(float *dst, const uint16_t *src, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] = wp_bf16_to_float(src[i]);
}

void wp_cpu_store(float *x, size_t n)
{
    if (mode == WP_PRECISION_BF16 && x)
        wp_cpu_round_copy(x, x, n);
}

/* The rows x cols block at x (leading dimension ld) as a product reads it
 * in this precision (truncated to TF32, rounded to bfloat16), packed
 * (leading dimension cols) into a new allocation; NULL when out of memory. */
static float *operand_copy(const float *x, int rows, int cols, int ld)
{
    float *out = malloc(((size_t)rows * (size_t)cols + 1) * sizeof *out);
    for (int r = 0; out && r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const float v = x[(size_t)r * ld + c];
            out[(size_t)r * cols + c] = mode == WP_PRECISION_TF32 ? wp_tf32_truncate(v) : wp_bf16_round(v);
        }
    return out;
}

void wp_cpu_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    const enum CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
    if (mode == WP_PRECISION_FP32) {
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    /* row-major A is M x K (K x M transposed), B is K x N (N x K transposed) */
    int a_rows = trans_a ? K : M, a_cols = trans_a ? M : K, b_rows = trans_b ? N : K, b_cols = trans_b ? K : N;
    float *a = operand_copy(A, a_rows, a_cols, lda), *b = operand_copy(B, b_rows, b_cols, ldb);
    if (a && b)
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, a, a_cols, b, b_cols, beta, C, ldc);
    else { /* a kernel has no error path */
        fprintf(stderr, "wavepipe: out of memory for the %s operands of a %d x %d x %d product\n",
                wp_precision_name(mode), M, N, K);
        abort();
    }
    free(a);
    free(b);
}
