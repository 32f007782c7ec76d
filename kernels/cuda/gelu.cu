/* GELU (CUDA), tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))):
 * elementwise forward and backward (dinp +=). */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

/* the CPU's rational tanh (kernels/cpu/gelu.c), so both give the same GELU */
__device__ static inline float fast_tanhf(float x)
{
    const float clamp = 7.90531110763549805f;
    x = x > clamp ? clamp : x < -clamp ? -clamp : x;
    const float x2 = x * x;
    float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
    p = x2 * p + -8.60467152213735e-11f;
    p = x2 * p + 5.12229709037114e-08f;
    p = x2 * p + 1.48572235717979e-05f;
    p = x2 * p + 6.37261928875436e-04f;
    p = x2 * p + 4.89352455891786e-03f;
    p = x * p;
    float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
    q = x2 * q + 2.26843463243900e-03f;
    q = x2 * q + 4.89352518554385e-03f;
    return p / q;
}

/* out (n) = gelu(inp (n)); one thread per element */
static __global__ void gelu_forward_kernel(float *out, const float *inp, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + fast_tanhf(GELU_SCALING_FACTOR * (x + cube)));
    }
}

/* dinp (n) += gelu'(inp) * dout; sech^2 = 1 - tanh^2 (no coshf overflow) */
static __global__ void gelu_backward_kernel(float *dinp, const float *inp, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        const float tanh_out = fast_tanhf(GELU_SCALING_FACTOR * (x + cube));
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
