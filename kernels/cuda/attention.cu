/* Causal multi-head self-attention (CUDA) by blocks of query rows, the
 * sibling of kernels/cpu/attention.c: per batch and per block of
 * WP_ATTENTION_ROW_BLOCK query rows [t0, t1), the four products go through
 * cuBLAS batched over the heads (wp_cuda_gemm: strided batched SGEMM, or
 * bf16 GemmEx in bf16) against keys [0, t1) only, and the causal softmax
 * and its backward run one thread per row in between, in this backend's
 * scratch of one block per head; only each row's log-sum-exp is kept, and
 * the backward makes the block's probabilities again from it. cuBLAS is
 * column-major: a row-major (R, K) array with row stride ld is the
 * column-major K x R matrix with leading dimension ld, so each row-major
 * product is computed transposed. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/elementwise_math.h"

#include <float.h>

/* row r of a block's rows of every head (head r / n, row t = t0 + r % n; its
 * scores at p + head stride + (r % n) T): the causal softmax in place, zero
 * past t up to t1, its log-sum-exp into lse_b (NH,T) */
static __global__ void softmax_block_kernel(float *p, float *lse_b, int rows, int n, int t0, int t1, int T,
                                            size_t stride)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int head = r / n, t = t0 + r % n;
    float *pt = p + (size_t)head * stride + (size_t)(r % n) * T;
    float maxval = -FLT_MAX;
    for (int t2 = 0; t2 <= t; t2++)
        maxval = pt[t2] > maxval ? pt[t2] : maxval;
    float expsum = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        pt[t2] = wp_fast_expf(pt[t2] - maxval);
        expsum += pt[t2];
    }
    const float inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
    for (int t2 = 0; t2 <= t; t2++)
        pt[t2] *= inv;
    for (int t2 = t + 1; t2 < t1; t2++)
        pt[t2] = 0.0f;
    lse_b[(size_t)head * T + t] = maxval + logf(expsum);
}

/* the same rows' probabilities again from their scores and log-sum-exps */
static __global__ void probs_again_kernel(float *p, const float *lse_b, int rows, int n, int t0, int t1, int T,
                                          size_t stride)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int head = r / n, t = t0 + r % n;
    float *pt = p + (size_t)head * stride + (size_t)(r % n) * T;
    const float l = lse_b[(size_t)head * T + t];
    for (int t2 = 0; t2 <= t; t2++)
        pt[t2] = wp_fast_expf(pt[t2] - l);
    for (int t2 = t + 1; t2 < t1; t2++)
        pt[t2] = 0.0f;
}

/* the same rows of the softmax backward: dp = p (dp - sum p dp), zero past t */
static __global__ void softmax_backward_block_kernel(float *dp, const float *p, int rows, int n, int t0, int t1,
                                                     int T, size_t stride)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int t = t0 + r % n;
    const size_t at = (size_t)(r / n) * stride + (size_t)(r % n) * T;
    const float *pt = p + at;
    float *dpt = dp + at;
    float dot = 0.0f;
    for (int t2 = 0; t2 <= t; t2++)
        dot += pt[t2] * dpt[t2];
    for (int t2 = 0; t2 <= t; t2++)
        dpt[t2] = pt[t2] * (dpt[t2] - dot);
    for (int t2 = t + 1; t2 < t1; t2++)
        dpt[t2] = 0.0f;
}

/* inp (B,T,3C) = q,k,v; out (B,T,C); lse (B,NH,T) */
extern "C" void wp_cuda_attention_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t stride = (size_t)WP_ATTENTION_ROW_BLOCK * T; /* one head's block of rows in the scratch */
    float *p = (float *)wp_cuda_scratch(2, stride * NH * sizeof(float));
    for (int b = 0; b < B; b++) {
        const float *q = inp + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
            const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T, n = t1 - t0;
            /* p rows [t0,t1), columns [0,t1) = scale * q k^T, per head h at q + h hs, k + h hs */
            wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, t1, n, hs, scale, k, C3, hs, q + (size_t)t0 * C3, C3, hs, 0.0f, p, T,
                         (long long)stride, NH);
            const int rows = NH * n;
            WP_LAUNCH(softmax_block_kernel, wp_cuda_grid((size_t)rows, WP_CUDA_BLOCK), WP_CUDA_BLOCK, p,
                      lse + (size_t)b * NH * T, rows, n, t0, t1, T, stride);
            WP_CUDA_CHECK(cudaGetLastError());
            /* out rows [t0,t1) (hs each, row stride C) = p (columns [0,t1)) v [0,t1) */
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_N, hs, n, t1, 1.0f, v, C3, hs, p, T, (long long)stride, 0.0f,
                         out + (size_t)b * T * C + (size_t)t0 * C, C, hs, NH);
        }
    }
    wp_cuda_store(out, (size_t)B * T * C);
}

/* dinp (B,T,3C) +=, from dout (B,T,C) and the forward's inp and lse */
extern "C" void wp_cuda_attention_backward(float *dinp, const float *dout, const float *inp, const float *lse, int B,
                                           int T, int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t stride = (size_t)WP_ATTENTION_ROW_BLOCK * T;
    float *p = (float *)wp_cuda_scratch(2, stride * NH * sizeof(float));
    float *dp = (float *)wp_cuda_scratch(3, stride * NH * sizeof(float));
    for (int b = 0; b < B; b++) {
        const float *q = inp + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *dq = dinp + (size_t)b * T * C3, *dk = dq + C, *dv = dq + 2 * C;
        const float *dout_b = dout + (size_t)b * T * C, *lse_b = lse + (size_t)b * NH * T;
        for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
            const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T, n = t1 - t0;
            const int rows = NH * n;
            const unsigned int grid = wp_cuda_grid((size_t)rows, WP_CUDA_BLOCK);
            /* the block's probabilities again, from the scores and lse */
            wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, t1, n, hs, scale, k, C3, hs, q + (size_t)t0 * C3, C3, hs, 0.0f, p, T,
                         (long long)stride, NH);
            WP_LAUNCH(probs_again_kernel, grid, WP_CUDA_BLOCK, p, lse_b, rows, n, t0, t1, T, stride);
            WP_CUDA_CHECK(cudaGetLastError());
            /* dp (rows, [0,t1)) = dout v^T; dv [0,t1) += p^T dout */
            wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, t1, n, hs, 1.0f, v, C3, hs, dout_b + (size_t)t0 * C, C, hs, 0.0f, dp,
                         T, (long long)stride, NH);
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_T, hs, t1, n, 1.0f, dout_b + (size_t)t0 * C, C, hs, p, T,
                         (long long)stride, 1.0f, dv, C3, hs, NH);
            WP_LAUNCH(softmax_backward_block_kernel, grid, WP_CUDA_BLOCK, dp, p, rows, n, t0, t1, T, stride);
            WP_CUDA_CHECK(cudaGetLastError());
            /* dq [t0,t1) += scale dp k [0,t1); dk [0,t1) += scale dp^T q [t0,t1) */
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_N, hs, n, t1, scale, k, C3, hs, dp, T, (long long)stride, 1.0f,
                         dq + (size_t)t0 * C3, C3, hs, NH);
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_T, hs, t1, n, scale, q + (size_t)t0 * C3, C3, hs, dp, T,
                         (long long)stride, 1.0f, dk, C3, hs, NH);
        }
    }
    wp_cuda_store(dinp, (size_t)B * T * C3);
}
