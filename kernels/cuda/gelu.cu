/* GELU (CUDA), tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))):
 * elementwise forward and backward (dinp +=). */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

/* out (n) = gelu(inp (n)); one thread per element */
static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
    }
}

/* dinp (n) += gelu'(inp) * dout; sech^2 = 1 - tanh^2 (no coshf overflow) */
static __global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        const float tanh_out = tanhf(GELU_SCALING_FACTOR * (x + cube));
        const float sech2 = 1.0f - tanh_out * tanh_out;
        const float local_grad =
            0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += local_grad * dout[i];
    }
}

extern "C" void wp_cuda_gelu_forward(float *out, const float *inp, size_t n)
{
    if (n == 0)
        return;
    gelu_forward_kernel<<<wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK>>>(out, inp, n);
    WP_CUDA_CHECK(cudaGetLastError());
}

extern "C" void wp_cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    if (n == 0)
        return;
    gelu_backward_kernel<<<wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK>>>(dinp, inp, dout, n);
    WP_CUDA_CHECK(cudaGetLastError());
}
