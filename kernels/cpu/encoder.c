/* Token and position embedding (CPU): out = wte[token] + wpe[t] and its
 * backward, the scatter-add into dwte and dwpe in a fixed row order. */
#include "kernels/cpu/cpu_kernels.h"

/* out (B,T,C) = wte[inp] + wpe[t]; inp (B,T), wte (V,C), wpe (maxT,C) */
void wp_cpu_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
    const long rows = (long)B * T;
#pragma omp parallel for schedule(static) if ((size_t)rows * C >= WP_CPU_PAR_MIN)
    for (long bt = 0; bt < rows; bt++) {
        const size_t t = (size_t)(bt % T);
        float *out_bt = out + (size_t)bt * C;
        const float *wte_ix = wte + (size_t)inp[bt] * C;
        const float *wpe_t = wpe + t * C;
        for (int i = 0; i < C; i++)
            out_bt[i] = wte_ix[i] + wpe_t[i];
    }
    wp_cpu_store(out, (size_t)rows * C);
}

/* dwte (V,C), dwpe (maxT,C) += from dout (B,T,C). Rows with the same token
 * add into the same dwte row, so the work is split over blocks of columns and
 * every block walks the rows in order: no atomics, thread-count independent. */
void wp_cpu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C)
{
    const size_t rows = (size_t)B * T;
    const int nblocks = (C + WP_CPU_COL_BLOCK - 1) / WP_CPU_COL_BLOCK;
#pragma omp parallel for schedule(static) if (rows * C >= WP_CPU_PAR_MIN)
    for (int blk = 0; blk < nblocks; blk++) {
        const int c0 = blk * WP_CPU_COL_BLOCK;
        const int c1 = c0 + WP_CPU_COL_BLOCK < C ? c0 + WP_CPU_COL_BLOCK : C;
        for (size_t bt = 0; bt < rows; bt++) {
            const size_t t = bt % (size_t)T;
            const float *dout_bt = dout + bt * C;
            float *dwte_ix = dwte + (size_t)inp[bt] * C;
            float *dwpe_t = dwpe + t * C;
            for (int i = c0; i < c1; i++) {
                dwte_ix[i] += dout_bt[i];
                dwpe_t[i] += dout_bt[i];
            }
        }
    }
}
