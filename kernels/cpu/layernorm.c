/* LayerNorm (CPU), eps 1e-5, population variance: forward parallel over
 * rows, backward dinp over rows and dweight/dbias over column blocks; out
 * and dinp stored in the backend's precision, mean and rstd in float. */
#include "kernels/cpu/cpu_kernels.h"

#include <math.h>

#define LN_EPS 1e-5f

/* out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N) */
void wp_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                              const float *bias, int N, int C)
{
#pragma omp parallel for schedule(static) if ((size_t)N * C >= WP_CPU_PAR_MIN)
    for (int r = 0; r < N; r++) {
        const float *x = inp + (size_t)r * C;
        float *o = out + (size_t)r * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++)
            m += x[i];
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            const float d = x[i] - m;
            v += d * d;
        }
        v = v / C;
        const float s = 1.0f / sqrtf(v + LN_EPS);
        for (int i = 0; i < C; i++)
            o[i] = (s * (x[i] - m)) * weight[i] + bias[i];
        mean[r] = m;
        rstd[r] = s;
    }
    wp_cpu_store(out, (size_t)N * C);
}

/* dinp (N,C) +=, dweight, dbias (C) += ; from dout (N,C), inp, weight, mean, rstd */
void wp_cpu_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C)
{
    /* dinp: every row on its own (skipped when NULL: the W half of a split backward) */
#pragma omp parallel for schedule(static) if ((size_t)N * C >= WP_CPU_PAR_MIN)
    for (int r = 0; r < (dinp ? N : 0); r++) {
        const float *x = inp + (size_t)r * C;
        const float *dy = dout + (size_t)r * C;
        float *dx = dinp + (size_t)r * C;
        const float m = mean[r], s = rstd[r];
        float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
        for (int i = 0; i < C; i++) {
            const float norm = (x[i] - m) * s;
            const float dnorm = weight[i] * dy[i];
            dnorm_mean += dnorm;
            dnorm_norm_mean += dnorm * norm;
        }
        dnorm_mean = dnorm_mean / C;
        dnorm_norm_mean = dnorm_norm_mean / C;
        for (int i = 0; i < C; i++) {
            const float norm = (x[i] - m) * s;
            const float dnorm = weight[i] * dy[i];
            dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
        }
    }
    wp_cpu_store(dinp, (size_t)N * C);

    /* dweight, dbias: sums over rows, parallel over column blocks, rows in
     * order (skipped when NULL: the B half of a split backward) */
    const int nblocks = dweight && dbias ? (C + WP_CPU_COL_BLOCK - 1) / WP_CPU_COL_BLOCK : 0;
#pragma omp parallel for schedule(static) if ((size_t)N * C >= WP_CPU_PAR_MIN)
    for (int blk = 0; blk < nblocks; blk++) {
        const int c0 = blk * WP_CPU_COL_BLOCK;
        const int n = (c0 + WP_CPU_COL_BLOCK < C ? c0 + WP_CPU_COL_BLOCK : C) - c0;
        double dw[WP_CPU_COL_BLOCK], db[WP_CPU_COL_BLOCK];
        for (int j = 0; j < n; j++)
            dw[j] = db[j] = 0.0;
        for (int r = 0; r < N; r++) {
            const float *x = inp + (size_t)r * C + c0;
            const float *dy = dout + (size_t)r * C + c0;
            const float m = mean[r], s = rstd[r];
            for (int j = 0; j < n; j++) {
                const float norm = (x[j] - m) * s;
                dw[j] += (double)(norm * dy[j]);
                db[j] += (double)dy[j];
            }
        }
        for (int j = 0; j < n; j++) {
            dweight[c0 + j] += (float)dw[j];
            dbias[c0 + j] += (float)db[j];
        }
    }
}
