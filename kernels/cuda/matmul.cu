/* Matmul (CUDA) through cuBLAS (wp_cuda_gemm: SGEMM, or bf16 GemmEx in
 * bf16), weight (C,OC) "in-out" or (OC,C) "out-in": forward, and backward
 * dinp, dweight (beta = 1) and dbias; out and dinp stored in the backend's
 * precision (precision.cu). */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

/* cuBLAS is column-major: a row-major (R,K) array with row stride K is, to
 * cuBLAS, the column-major K x R matrix X^T with leading dimension K. So every
 * row-major product Y (R,S) = A @ B is computed as the column-major
 * Y^T (S x R) = B^T @ A^T with ldc = S, the operands swapped:
 *
 *   row-major (this file's comments)      wp_cuda_gemm(opA, opB, m, n, k, A, lda, B, ldb, C, ldc)
 *   IN_OUT  out  (N,OC)  = inp  @ W       N, N, OC, N,  C,  W,    OC, inp,  C,  out,  OC
 *   OUT_IN  out  (N,OC)  = inp  @ W^T     T, N, OC, N,  C,  W,    C,  inp,  C,  out,  OC
 *   IN_OUT  dinp (N,C)  += dout @ W^T     T, N, C,  N,  OC, W,    OC, dout, OC, dinp, C
 *   OUT_IN  dinp (N,C)  += dout @ W       N, N, C,  N,  OC, W,    C,  dout, OC, dinp, C
 *   IN_OUT  dW   (C,OC) += inp^T @ dout   N, T, OC, C,  N,  dout, OC, inp,  C,  dW,   OC
 *   OUT_IN  dW   (OC,C) += dout^T @ inp   N, T, C,  OC, N,  inp,  C,  dout, OC, dW,   C
 *
 * (W (C,OC) is W^T (OC x C, ld OC) to cuBLAS, W (OC,C) is W^T (C x OC, ld C),
 * inp (N,C) is inp^T (C x N, ld C), dout (N,OC) is dout^T (OC x N, ld OC).) */

/* out (N,OC) = bias broadcast over the rows; one thread per element */
static __global__ void bias_fill_kernel(float *out, const float *bias, int OC, size_t n)
{
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x)
        out[idx] = bias[idx % OC];
}

/* dbias (OC) += column sums of dout (N,OC); one thread per column, rows in
 * order, in double like the CPU (no atomics, deterministic) */
static __global__ void dbias_kernel(float *dbias, const float *dout, int N, int OC)
{
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= OC)
        return;
    double acc = 0.0;
    for (int r = 0; r < N; r++)
        acc += (double)dout[(size_t)r * OC + o];
    dbias[o] += (float)acc;
}

/* out (N,OC) = inp (N,C) @ W + bias; W (C,OC) for WP_WEIGHT_IN_OUT, W^T of
 * (OC,C) for WP_WEIGHT_OUT_IN; bias (OC) may be NULL */
extern "C" void wp_cuda_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N,
                                       int C, int OC, enum wp_weight_layout layout)
{
    if (N <= 0 || OC <= 0)
        return;
    const float one = 1.0f;
    float beta = 0.0f;
    if (bias) {
        const size_t n = (size_t)N * OC;
        WP_LAUNCH(bias_fill_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, out, bias, OC, n);
        WP_CUDA_CHECK(cudaGetLastError());
        beta = 1.0f;
    }
    if (layout == WP_WEIGHT_IN_OUT)
        wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_N, OC, N, C, one, weight, OC, 0, inp, C, 0, beta, out, OC, 0, 1);
    else
        wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, one, weight, C, 0, inp, C, 0, beta, out, OC, 0, 1);
    wp_cuda_store(out, (size_t)N * OC);
}

/* dinp (N,C) += dout (N,OC) @ W^T; dweight (weight's layout) += inp^T @ dout
 * (or dout^T @ inp); dbias (OC, may be NULL) += column sums of dout */
extern "C" void wp_cuda_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                        const float *inp, const float *weight, int N, int C, int OC,
                                        enum wp_weight_layout layout)
{
    if (N <= 0 || C <= 0 || OC <= 0)
        return;
    const float one = 1.0f;
    if (layout == WP_WEIGHT_IN_OUT) {
        /* dinp (N,C) += dout (N,OC) @ W(C,OC)^T */
        if (dinp)
            wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, C, N, OC, one, weight, OC, 0, dout, OC, 0, one, dinp, C, 0, 1);
        /* dW (C,OC) += inp^T (C,N) @ dout (N,OC) */
        if (dweight)
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_T, OC, C, N, one, dout, OC, 0, inp, C, 0, one, dweight, OC, 0, 1);
    } else {
        /* dinp (N,C) += dout (N,OC) @ W(OC,C) */
        if (dinp)
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, one, weight, C, 0, dout, OC, 0, one, dinp, C, 0, 1);
        /* dW (OC,C) += dout^T (OC,N) @ inp (N,C) */
        if (dweight)
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, one, inp, C, 0, dout, OC, 0, one, dweight, C, 0, 1);
    }
    if (dinp)
        wp_cuda_store(dinp, (size_t)N * C);
    if (dbias) {
        const unsigned int blocks = (unsigned int)((OC + WP_CUDA_BLOCK - 1) / WP_CUDA_BLOCK);
        WP_LAUNCH(dbias_kernel, blocks, WP_CUDA_BLOCK, dbias, dout, N, OC);
        WP_CUDA_CHECK(cudaGetLastError());
    }
}
