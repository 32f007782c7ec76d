/* Causal multi-head self-attention (CPU) by blocks of query rows, as
 * FlashAttention computes it: per (batch, head) and per block of
 * WP_ATTENTION_ROW_BLOCK query rows [t0, t1), the scores of the block
 * against keys [0, t1) only (the entries past the diagonal are never
 * computed), their causal softmax and the block's output, in the kernel's
 * own scratch of one block; only each row's log-sum-exp is kept (lse), and
 * the backward makes the block's probabilities again from it. No T x T
 * matrix outlives a call. The products go through CBLAS (wp_cpu_sgemm:
 * in bf16 the float probabilities and their gradients are rounded to
 * bfloat16 as a product reads them). With an OpenMP (or sequential) BLAS,
 * parallel over the (b, h) pairs, each pair's products on its own thread:
 * threading each small product instead (1,152 a layer at T = 256, B = 4)
 * costs a fork and a join apiece, and on shared cores a join waits for a
 * descheduled thread. With a BLAS that keeps a pthreads pool, one pair after
 * another, each product on the pool: its calls from several threads at once
 * queue for it (22 s of attention a step instead of 0.7 at 2 threads;
 * bench/README.md). Each pair writes only its own columns and lse rows.
 * out and dinp are stored in the backend's precision; lse stays float. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/elementwise_math.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Scratch of `blocks` blocks of WP_ATTENTION_ROW_BLOCK x T floats; a kernel
 * has no error path, so running out of memory ends the process with why. */
static float *block_scratch(int blocks, int T)
{
    float *p = malloc((size_t)blocks * WP_ATTENTION_ROW_BLOCK * (size_t)T * sizeof *p);
    if (!p) {
        fprintf(stderr, "wavepipe: out of memory for attention's scratch (T = %d)\n", T);
        abort();
    }
    return p;
}

/* s (rows [t0,t1) x keys [0,t1), leading dimension T) = scale q k^T */
static void scores(float *s, const float *q, const float *k, int t0, int t1, int T, int hs, int C3, float scale)
{
    wp_cpu_sgemm(0, 1, t1 - t0, t1, hs, scale, q + (size_t)t0 * C3, C3, k, C3, 0.0f, s, T);
}

/* inp (B,T,3C) = q,k,v; out (B,T,C); lse (B,NH,T) */
void wp_cpu_attention_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static) if (wp_cpu_blas_single_in_parallel())
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q = inp + (size_t)b * T * C3 + (size_t)h * hs; /* (T,hs), row stride 3C */
            const float *k = q + C, *v = q + 2 * C;
            float *lse_bh = lse + ((size_t)b * NH + h) * T, *out_bh = out + (size_t)b * T * C + (size_t)h * hs;
            float *p = block_scratch(1, T);
            for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
                const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
                scores(p, q, k, t0, t1, T, hs, C3, scale);
                for (int t = t0; t < t1; t++) { /* the causal softmax of row t, its log-sum-exp kept */
                    float *pt = p + (size_t)(t - t0) * T;
                    float maxval = -FLT_MAX;
                    for (int t2 = 0; t2 <= t; t2++)
                        maxval = pt[t2] > maxval ? pt[t2] : maxval;
#pragma omp simd
                    for (int t2 = 0; t2 <= t; t2++)
                        pt[t2] = wp_fast_expf(pt[t2] - maxval);
                    float expsum = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++)
                        expsum += pt[t2];
                    const float inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
                    for (int t2 = 0; t2 <= t; t2++)
                        pt[t2] *= inv;
                    for (int t2 = t + 1; t2 < t1; t2++)
                        pt[t2] = 0.0f;
                    lse_bh[t] = maxval + logf(expsum);
                }
                /* out rows [t0,t1) (hs each, row stride C) = p (columns [0,t1)) v [0,t1) */
                wp_cpu_sgemm(0, 0, t1 - t0, hs, t1, 1.0f, p, T, v, C3, 0.0f, out_bh + (size_t)t0 * C, C);
            }
            free(p);
        }
    }
    wp_cpu_store(out, (size_t)B * T * C);
}

/* dinp (B,T,3C) +=, from dout (B,T,C) and the forward's inp and lse */
void wp_cpu_attention_backward(float *dinp, const float *dout, const float *inp, const float *lse, int B, int T,
                               int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for collapse(2) schedule(static) if (wp_cpu_blas_single_in_parallel())
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const size_t qkv = (size_t)b * T * C3 + (size_t)h * hs;
            const float *q = inp + qkv, *k = q + C, *v = q + 2 * C;
            float *dq = dinp + qkv, *dk = dq + C, *dv = dq + 2 * C;
            const float *lse_bh = lse + ((size_t)b * NH + h) * T, *dout_bh = dout + (size_t)b * T * C + (size_t)h * hs;
            float *scratch = block_scratch(2, T), *p = scratch, *dp = scratch + (size_t)WP_ATTENTION_ROW_BLOCK * T;
            for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
                const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T, n = t1 - t0;
                /* the block's probabilities again, from the scores and lse */
                scores(p, q, k, t0, t1, T, hs, C3, scale);
                for (int t = t0; t < t1; t++) {
                    float *pt = p + (size_t)(t - t0) * T;
#pragma omp simd
                    for (int t2 = 0; t2 <= t; t2++)
                        pt[t2] = wp_fast_expf(pt[t2] - lse_bh[t]);
                    for (int t2 = t + 1; t2 < t1; t2++)
                        pt[t2] = 0.0f;
                }
                /* dp (rows, [0,t1)) = dout v^T; dv [0,t1) += p^T dout */
                wp_cpu_sgemm(0, 1, n, t1, hs, 1.0f, dout_bh + (size_t)t0 * C, C, v, C3, 0.0f, dp, T);
                wp_cpu_sgemm(1, 0, t1, hs, n, 1.0f, p, T, dout_bh + (size_t)t0 * C, C, 1.0f, dv, C3);
                /* softmax: dp[t2] = p[t2] (dp[t2] - sum p dp), zero past t */
                for (int t = t0; t < t1; t++) {
                    const float *pt = p + (size_t)(t - t0) * T;
                    float *dpt = dp + (size_t)(t - t0) * T;
                    float dot = 0.0f;
                    for (int t2 = 0; t2 <= t; t2++)
                        dot += pt[t2] * dpt[t2];
                    for (int t2 = 0; t2 <= t; t2++)
                        dpt[t2] = pt[t2] * (dpt[t2] - dot);
                    for (int t2 = t + 1; t2 < t1; t2++)
                        dpt[t2] = 0.0f;
                }
                /* dq [t0,t1) += scale dp k [0,t1); dk [0,t1) += scale dp^T q [t0,t1) */
                wp_cpu_sgemm(0, 0, n, hs, t1, scale, dp, T, k, C3, 1.0f, dq + (size_t)t0 * C3, C3);
                wp_cpu_sgemm(1, 0, t1, hs, n, scale, dp, T, q + (size_t)t0 * C3, C3, 1.0f, dk, C3);
            }
            free(scratch);
        }
    }
    wp_cpu_store(dinp, (size_t)B * T * C3);
}
