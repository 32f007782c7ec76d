/* Matmul (CPU) through CBLAS sgemm (wp_cpu_sgemm), weight (C,OC) "in-out"
 * or (OC,C) "out-in": forward, and backward dinp, dweight (beta = 1) and
 * dbias; out and dinp stored in the backend's precision. */
#include "kernels/cpu/cpu_kernels.h"

/* out (N,OC) = inp (N,C) @ W + bias; W (C,OC) for WP_WEIGHT_IN_OUT, W^T of
 * (OC,C) for WP_WEIGHT_OUT_IN; bias (OC) may be NULL */
void wp_cpu_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                           int OC, enum wp_weight_layout layout)
{
    if (N <= 0 || OC <= 0)
        return;
    float beta = 0.0f;
    if (bias) {
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= WP_CPU_PAR_MIN)
        for (int r = 0; r < N; r++) {
            float *o = out + (size_t)r * OC;
            for (int j = 0; j < OC; j++)
                o[j] = bias[j];
        }
        beta = 1.0f;
    }
    if (layout == WP_WEIGHT_IN_OUT)
        wp_cpu_sgemm(0, 0, N, OC, C, 1.0f, inp, C, weight, OC, beta, out, OC);
    else
        wp_cpu_sgemm(0, 1, N, OC, C, 1.0f, inp, C, weight, C, beta, out, OC);
    wp_cpu_store(out, (size_t)N * OC);
}

/* dinp (N,C) += dout (N,OC) @ W^T; dweight (weight's layout) += inp^T @ dout
 * (or dout^T @ inp); dbias (OC, may be NULL) += column sums of dout */
void wp_cpu_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC, enum wp_weight_layout layout)
{
    if (N <= 0 || C <= 0 || OC <= 0)
        return;
    if (layout == WP_WEIGHT_IN_OUT) {
        /* dinp (N,C) += dout (N,OC) @ W(C,OC)^T */
        if (dinp)
            wp_cpu_sgemm(0, 1, N, C, OC, 1.0f, dout, OC, weight, OC, 1.0f, dinp, C);
        /* dW (C,OC) += inp^T (C,N) @ dout (N,OC) */
        if (dweight)
            wp_cpu_sgemm(1, 0, C, OC, N, 1.0f, inp, C, dout, OC, 1.0f, dweight, OC);
    } else {
        /* dinp (N,C) += dout (N,OC) @ W(OC,C) */
        if (dinp)
            wp_cpu_sgemm(0, 0, N, C, OC, 1.0f, dout, OC, weight, C, 1.0f, dinp, C);
        /* dW (OC,C) += dout^T (OC,N) @ inp (N,C) */
        if (dweight)
            wp_cpu_sgemm(1, 0, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
    }
    if (dinp)
        wp_cpu_store(dinp, (size_t)N * C);
    if (dbias) {
        /* column sums: parallel over column blocks, rows in order (deterministic) */
        const int nblocks = (OC + WP_CPU_COL_BLOCK - 1) / WP_CPU_COL_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= WP_CPU_PAR_MIN)
        for (int blk = 0; blk < nblocks; blk++) {
            const int o0 = blk * WP_CPU_COL_BLOCK;
            const int n = (o0 + WP_CPU_COL_BLOCK < OC ? o0 + WP_CPU_COL_BLOCK : OC) - o0;
            double acc[WP_CPU_COL_BLOCK];
            for (int j = 0; j < n; j++)
                acc[j] = 0.0;
            for (int r = 0; r < N; r++) {
                const float *dy = dout + (size_t)r * OC + o0;
                for (int j = 0; j < n; j++)
                    acc[j] += (double)dy[j];
            }
            for (int j = 0; j < n; j++)
                dbias[o0 + j] += (float)acc[j];
        }
    }
}
