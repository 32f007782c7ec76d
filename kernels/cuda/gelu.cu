/* GELU (CUDA), tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))):
 * elementwise forward and backward (dinp +=); the math is kernels/elementwise_math.h. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/elementwise_math.h"

/* out (n) = gelu(inp (n)); one thread per element */
static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = wp_gelu(inp[i]);
}

/* dinp (n) += gelu'(inp) * dout */
static __global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dinp[i] += wp_gelu_grad(inp[i]) * dout[i];
}

extern "C" void wp_cuda_gelu_forward(float *out, const float *inp, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(gelu_forward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, out, inp, n);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(out, n);
}

extern "C" void wp_cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(gelu_backward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dinp, inp, dout, n);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(dinp, n);
}
