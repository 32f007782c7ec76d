/* Causal multi-head self-attention (CPU): per (batch, head) the products go
 * through CBLAS (scores Q K^T, output att V, and their four gradients), the
 * causal softmax and its backward row by row in between. The products run
 * by blocks of WP_ATTENTION_ROW_BLOCK query rows [t0, t1) against keys
 * [0, t1) only: entries t2 > t of preatt, att and their gradients are zero
 * (the row loops write them), so the products past t1 would add zeros.
 * With an OpenMP (or sequential) BLAS, parallel over the (b, h) pairs,
 * each pair's products on its own thread: threading each small product
 * instead (1,152 a layer at T = 256, B = 4) costs a fork and a join apiece,
 * and on shared cores a join waits for a descheduled thread. With a BLAS
 * that keeps a pthreads pool, one pair after another, each product on the
 * pool: its calls from several threads at once queue for it (22 s of
 * attention a step instead of 0.7 at 2 threads; bench/README.md). Each pair
 * writes only its own columns and T x T matrices. out and dinp are stored
 * in the backend's precision; att, the saved softmax, stays float. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/elementwise_math.h"

#include <float.h>
#include <math.h>

/* inp (B,T,3C) = q,k,v; out (B,T,C); preatt, att (B,NH,T,T), entries t2 > t zero */
void wp_cpu_attention_forward(float *out, float *preatt, float *att, const float *inp, int B, int T, int C,
                              int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t TT = (size_t)T * T;
#pragma omp parallel for collapse(2) schedule(static) if (wp_cpu_blas_single_in_parallel())
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const float *q = inp + (size_t)b * T * C3 + (size_t)h * hs; /* (T,hs), row stride 3C */
            const float *k = q + C, *v = q + 2 * C;
            float *pre = preatt + ((size_t)b * NH + h) * TT, *a = att + ((size_t)b * NH + h) * TT;
            /* preatt rows [t0,t1), columns [0,t1) = scale * q k^T */
            for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
                const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
                wp_cpu_sgemm(0, 1, t1 - t0, t1, hs, scale, q + (size_t)t0 * C3, C3,
                             k, C3, 0.0f, pre + (size_t)t0 * T, T);
            }
            for (int t = 0; t < T; t++) {
                float *p = pre + (size_t)t * T, *at = a + (size_t)t * T;
                float maxval = -FLT_MAX;
                for (int t2 = 0; t2 <= t; t2++)
                    maxval = p[t2] > maxval ? p[t2] : maxval;
#pragma omp simd
                for (int t2 = 0; t2 <= t; t2++)
                    at[t2] = wp_fast_expf(p[t2] - maxval);
                float expsum = 0.0f;
                for (int t2 = 0; t2 <= t; t2++)
                    expsum += at[t2];
                const float inv = expsum == 0.0f ? 0.0f : 1.0f / expsum;
                for (int t2 = 0; t2 <= t; t2++)
                    at[t2] *= inv;
                for (int t2 = t + 1; t2 < T; t2++)
                    at[t2] = p[t2] = 0.0f;
            }
            /* out rows [t0,t1) (hs each, row stride C) = att rows [t0,t1) (columns [0,t1)) v [0,t1) */
            float *out_bh = out + (size_t)b * T * C + (size_t)h * hs;
            for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
                const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
                wp_cpu_sgemm(0, 0, t1 - t0, hs, t1, 1.0f, a + (size_t)t0 * T, T, v,
                             C3, 0.0f, out_bh + (size_t)t0 * C, C);
            }
        }
    }
    wp_cpu_store(out, (size_t)B * T * C);
}

/* dinp (B,T,3C) +=; dpreatt, datt (B,NH,T,T) scratch, written whole here */
void wp_cpu_attention_backward(float *dinp, float *dpreatt, float *datt, const float *dout, const float *inp,
                               const float *att, int B, int T, int C, int NH)
{
    const int C3 = C * 3, hs = C / NH;
    const float scale = 1.0f / sqrtf((float)hs);
    const size_t TT = (size_t)T * T;
#pragma omp parallel for collapse(2) schedule(static) if (wp_cpu_blas_single_in_parallel())
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            const size_t qkv = (size_t)b * T * C3 + (size_t)h * hs;
            const float *q = inp + qkv, *k = q + C, *v = q + 2 * C;
            float *dq = dinp + qkv, *dk = dq + C, *dv = dq + 2 * C;
            const float *a = att + ((size_t)b * NH + h) * TT, *dout_bh = dout + (size_t)b * T * C + (size_t)h * hs;
            float *da = datt + ((size_t)b * NH + h) * TT, *dp = dpreatt + ((size_t)b * NH + h) * TT;
            /* per block of rows [t0,t1): datt (rows, [0,t1)) = dout v^T; dv [0,t1) += att^T dout */
            for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
                const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
                wp_cpu_sgemm(0, 1, t1 - t0, t1, hs, 1.0f, dout_bh + (size_t)t0 * C, C,
                             v, C3, 0.0f, da + (size_t)t0 * T, T);
                wp_cpu_sgemm(1, 0, t1, hs, t1 - t0, 1.0f, a + (size_t)t0 * T, T,
                             dout_bh + (size_t)t0 * C, C, 1.0f, dv, C3);
            }
            /* softmax: dpreatt[t2] = att[t2] (datt[t2] - sum att datt), zero past t */
            for (int t = 0; t < T; t++) {
                const float *at = a + (size_t)t * T;
                float *dat = da + (size_t)t * T, *dpt = dp + (size_t)t * T;
                float dot = 0.0f;
                for (int t2 = 0; t2 <= t; t2++)
                    dot += at[t2] * dat[t2];
                for (int t2 = 0; t2 <= t; t2++)
                    dpt[t2] = at[t2] * (dat[t2] - dot);
                for (int t2 = t + 1; t2 < T; t2++)
                    dat[t2] = dpt[t2] = 0.0f;
            }
            /* per block: dq [t0,t1) += scale dpreatt k [0,t1); dk [0,t1) += scale dpreatt^T q [t0,t1) */
            for (int t0 = 0; t0 < T; t0 += WP_ATTENTION_ROW_BLOCK) {
                const int t1 = t0 + WP_ATTENTION_ROW_BLOCK < T ? t0 + WP_ATTENTION_ROW_BLOCK : T;
                wp_cpu_sgemm(0, 0, t1 - t0, hs, t1, scale, dp + (size_t)t0 * T, T, k,
                             C3, 1.0f, dq + (size_t)t0 * C3, C3);
                wp_cpu_sgemm(1, 0, t1, hs, t1 - t0, scale, dp + (size_t)t0 * T, T,
                             q + (size_t)t0 * C3, C3, 1.0f, dk, C3);
            }
        }
    }
    wp_cpu_store(dinp, (size_t)B * T * C3);
}
