/* Causal multi-head self-attention (CUDA), the sibling of
 * kernels/cpu/attention.c: per batch the four products go through cuBLAS,
 * batched over the heads (wp_cuda_gemm: strided batched SGEMM, or bf16
 * GemmEx in bf16), and the causal softmax and its backward run one thread
 * per row in between. As on the CPU the products go by blocks of
 * WP_ATTENTION_ROW_BLOCK query rows [t0, t1) against keys [0, t1) only
 * (entries t2 > t of preatt, att and their gradients are zero, written by
 * the row kernels). cuBLAS is column-major: a row-major (R, K) array with
 * row stride ld is the column-major K x R matrix with leading dimension
 * ld, so each row-major product is computed transposed. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/elementwise_math.h"

#include <float.h>

/* one row (b, h, t) of the causal softmax: att = softmax(preatt[0..t]),
 * zero past t in both */
static __global__ void softmax_rows_kernel(float *preatt, float *att, int rows, int T)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int t = r % T;
    float *p = preatt + (size_t)r * T, *a = att + (size_t)r * T;
    float maxval = -FLT_MAX;
    for (int t2 = 0; t2 <= t; t2++)
        maxval = p[t2] > maxval ? p[t2] : maxval;
    float expsum = 0.0f;
    for (int t2 = 0; t2 <= t; t2++) {
        a[t2] = wp_fast_expf(p[t2] - maxval);
        expsum += a[t2];
    }
    const float inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
    for (int t2 = 0; t2 <= t; t2++)
        a[t2] *= inv;
    for (int t2 = t + 1; t2 < T; t2++)
        a[t2] = p[t2] = 0.0f;
}

/* one row of the softmax backward: dpreatt = att (datt - sum att datt) */
static __global__ void softmax_backward_rows_kernel(float *dpreatt, float *datt, const float *att, int rows, int T)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const int t = r % T;
    const float *a = att + (size_t)r * T;
    float *da = datt + (size_t)r * T, *dp = dpreatt + (size_t)r * T;
    float dot = 0.0f;
    for (int t2 = 0; t2 <= t; t2++)
        dot += a[t2] * da[t2];
    for (int t2 = 0; t2 <= t; t2++)
        dp[t2] = a[t2] * (da[t2] - dot);
    for (int t2 = t + 1; t2 < T; t2++)
        da[t2] = dp[t2] = 0.0f;
}

/* inp (B,T,3C) = q,k,v; out (B,T,C); preatt, att (B,NH,T,T), entries t2 > t zero */
extern "C" void wp_cuda_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T,
                                          int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    const long long TT = (long long)T * T;
    for (int b = 0; b < B; b++) {
        const float *q = inp + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *pre = preatt + (size_t)b * NH * TT, *a = att + (size_t)b * NH * TT;
        /* preatt rows [t0,t1), columns [0,t1) = scale * q k^T, per head h at q + h hs, k + h hs */
        for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
            const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
            wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, t1, t1 - t0, hs, scale, k, C3, hs, q + (size_t)t0 * C3, C3, hs, zero,
                         pre + (size_t)t0 * T, T, TT, NH);
        }
        const int rows = NH * T;
        WP_LAUNCH(softmax_rows_kernel, wp_cuda_grid((size_t)rows, WP_CUDA_BLOCK), WP_CUDA_BLOCK, pre, a, rows, T);
        WP_CUDA_CHECK(cudaGetLastError());
        /* out rows [t0,t1) (hs each, row stride C) = att rows [t0,t1) (columns [0,t1)) v [0,t1) */
        for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
            const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_N, hs, t1 - t0, t1, one, v, C3, hs, a + (size_t)t0 * T, T, TT, zero,
                         out + (size_t)b * T * C + (size_t)t0 * C, C, hs, NH);
        }
    }
    wp_cuda_store(out, (size_t)B * T * C);
}

/* dinp (B,T,3C) +=; dpreatt, datt (B,NH,T,T) scratch, written whole here */
extern "C" void wp_cuda_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout,
                                           const float *inp, const float *att, int B, int T, int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs), one = 1.0f, zero = 0.0f;
    const long long TT = (long long)T * T;
    for (int b = 0; b < B; b++) {
        const float *q = inp + (size_t)b * T * C3, *k = q + C, *v = q + 2 * C;
        float *dq = dinp + (size_t)b * T * C3, *dk = dq + C, *dv = dq + 2 * C;
        const float *a = att + (size_t)b * NH * TT, *dout_b = dout + (size_t)b * T * C;
        float *da = datt + (size_t)b * NH * TT, *dp = dpreatt + (size_t)b * NH * TT;
        /* per block of rows [t0,t1): datt (rows, [0,t1)) = dout v^T; dv [0,t1) += att^T dout */
        for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
            const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
            wp_cuda_gemm(CUBLAS_OP_T, CUBLAS_OP_N, t1, t1 - t0, hs, one, v, C3, hs, dout_b + (size_t)t0 * C, C, hs,
                         zero, da + (size_t)t0 * T, T, TT, NH);
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_T, hs, t1, t1 - t0, one, dout_b + (size_t)t0 * C, C, hs,
                         a + (size_t)t0 * T, T, TT, one, dv, C3, hs, NH);
        }
        const int rows = NH * T;
        WP_LAUNCH(softmax_backward_rows_kernel, wp_cuda_grid((size_t)rows, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dp, da, a,
                  rows, T);
        WP_CUDA_CHECK(cudaGetLastError());
        /* per block: dq [t0,t1) += scale dpreatt k [0,t1); dk [0,t1) += scale dpreatt^T q [t0,t1) */
        for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
            const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_N, hs, t1 - t0, t1, scale, k, C3, hs, dp + (size_t)t0 * T, T, TT, one,
                         dq + (size_t)t0 * C3, C3, hs, NH);
            wp_cuda_gemm(CUBLAS_OP_N, CUBLAS_OP_T, hs, t1, t1 - t0, scale, q + (size_t)t0 * C3, C3, hs,
                         dp + (size_t)t0 * T, T, TT, one, dk, C3, hs, NH);
        }
    }
    wp_cuda_store(dinp, (size_t)B * T * C3);
}
