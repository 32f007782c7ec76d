/* Token and position embedding (CUDA): out = wte[token] + wpe[t] and its
 * backward, the scatter-add into dwte and dwpe with atomicAdd. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

/* out (B,T,C) = wte[inp] + wpe[t]; one thread per element of out */
static __global__ void encoder_forward_kernel(float *out, const int *inp, const float *wte, const float *wpe,
                                              int T, int C, size_t n)
{
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        const size_t bt = idx / C;
        const size_t i = idx % C;
        const size_t t = bt % T;
        out[idx] = wte[(size_t)inp[bt] * C + i] + wpe[t * C + i];
    }
}

/* dwte (V,C), dwpe (maxT,C) += from dout (B,T,C); one thread per element of
 * dout. Rows with the same token (and every batch row at the same t) add into
 * the same place, hence atomicAdd: the order of those additions is not the
 * CPU's (rows in order) and differs from run to run, so the result may differ
 * from the CPU's, and between runs, in the last bits. */
static __global__ void encoder_backward_kernel(float *dwte, float *dwpe, const float *dout, const int *inp, int T,
                                               int C, size_t n)
{
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        const size_t bt = idx / C;
        const size_t i = idx % C;
        const size_t t = bt % T;
        atomicAdd(&dwte[(size_t)inp[bt] * C + i], dout[idx]);
        atomicAdd(&dwpe[t * C + i], dout[idx]);
    }
}

extern "C" void wp_cuda_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T,
                                        int C)
{
    const size_t n = (size_t)B * T * C;
    if (n == 0)
        return;
    WP_LAUNCH(encoder_forward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, out, inp, wte, wpe, T, C, n);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(out, n);
}

extern "C" void wp_cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T,
                                         int C)
{
    const size_t n = (size_t)B * T * C;
    if (n == 0)
        return;
    WP_LAUNCH(encoder_backward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dwte, dwpe, dout, inp, T, C, n);
    WP_CUDA_CHECK(cudaGetLastError());
}
