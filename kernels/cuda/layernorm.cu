/* LayerNorm (CUDA), eps 1e-5, population variance: forward and dinp one warp
 * per row, backward dweight/dbias one thread per column (rows in order). */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

#define LN_EPS 1e-5f
#define WARPS_PER_BLOCK (WP_CUDA_BLOCK / 32)

/* out (N,C) = (inp - mean) * rstd * weight + bias; mean, rstd (N); one warp per row */
static __global__ void layernorm_forward_kernel(float *out, float *mean, float *rstd, const float *inp,
                                                const float *weight, const float *bias, int N, int C)
{
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    if (r >= N) /* the whole warp leaves together: the shuffles below see 32 lanes */
        return;
    const float *x = inp + (size_t)r * C;
    float *o = out + (size_t)r * C;
    float m = 0.0f;
    for (int i = lane; i < C; i += 32)
        m += x[i];
    m = wp_warp_sum(m) / C;
    float v = 0.0f;
    for (int i = lane; i < C; i += 32) {
        const float d = x[i] - m;
        v += d * d;
    }
    v = wp_warp_sum(v) / C;
    const float s = 1.0f / sqrtf(v + LN_EPS);
    for (int i = lane; i < C; i += 32)
        o[i] = (s * (x[i] - m)) * weight[i] + bias[i];
    if (lane == 0) {
        mean[r] = m;
        rstd[r] = s;
    }
}

/* dinp (N,C) += ; one warp per row */
static __global__ void layernorm_backward_dinp_kernel(float *dinp, const float *dout, const float *inp,
                                                      const float *weight, const float *mean, const float *rstd,
                                                      int N, int C)
{
    const int lane = threadIdx.x % 32;
    const int r = blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32;
    if (r >= N)
        return;
    const float *x = inp + (size_t)r * C;
    const float *dy = dout + (size_t)r * C;
    float *dx = dinp + (size_t)r * C;
    const float m = mean[r], s = rstd[r];
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = lane; i < C; i += 32) {
        const float norm = (x[i] - m) * s;
        const float dnorm = weight[i] * dy[i];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * norm;
    }
    dnorm_mean = wp_warp_sum(dnorm_mean) / C;
    dnorm_norm_mean = wp_warp_sum(dnorm_norm_mean) / C;
    for (int i = lane; i < C; i += 32) {
        const float norm = (x[i] - m) * s;
        const float dnorm = weight[i] * dy[i];
        dx[i] += (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
    }
}

/* dweight, dbias (C) += sums over the N rows; one thread per column, rows in
 * order, in double like the CPU (no atomics, deterministic) */
static __global__ void layernorm_backward_params_kernel(float *dweight, float *dbias, const float *dout,
                                                        const float *inp, const float *mean, const float *rstd,
                                                        int N, int C)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= C)
        return;
    double dw = 0.0, db = 0.0;
    for (int r = 0; r < N; r++) {
        const float dy = dout[(size_t)r * C + i];
        const float norm = (inp[(size_t)r * C + i] - mean[r]) * rstd[r];
        dw += (double)(norm * dy);
        db += (double)dy;
    }
    dweight[i] += (float)dw;
    dbias[i] += (float)db;
}

extern "C" void wp_cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                          const float *weight, const float *bias, int N, int C)
{
    if (N <= 0 || C <= 0)
        return;
    const unsigned int blocks = (unsigned int)((N + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
    WP_LAUNCH(layernorm_forward_kernel, blocks, WP_CUDA_BLOCK, out, mean, rstd, inp, weight, bias, N, C);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(out, (size_t)N * C);
}

extern "C" void wp_cuda_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                           const float *inp, const float *weight, const float *mean,
                                           const float *rstd, int N, int C)
{
    if (N <= 0 || C <= 0)
        return;
    /* either half may be skipped (NULL), as on the CPU: the B and W passes */
    if (dinp) {
        const unsigned int row_blocks = (unsigned int)((N + WARPS_PER_BLOCK - 1) / WARPS_PER_BLOCK);
        WP_LAUNCH(layernorm_backward_dinp_kernel, row_blocks, WP_CUDA_BLOCK, dinp, dout, inp, weight, mean, rstd, N,
                  C);
        WP_CUDA_CHECK(cudaGetLastError());
        wp_cuda_store(dinp, (size_t)N * C);
    }
    if (dweight && dbias) {
        const unsigned int col_blocks = (unsigned int)((C + WP_CUDA_BLOCK - 1) / WP_CUDA_BLOCK);
        WP_LAUNCH(layernorm_backward_params_kernel, col_blocks, WP_CUDA_BLOCK, dweight, dbias, dout, inp, mean, rstd,
                  N, C);
        WP_CUDA_CHECK(cudaGetLastError());
    }
}
