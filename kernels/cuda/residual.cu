/* Residual connection (CUDA): out = a + b and its backward da += dout,
 * db += dout, elementwise. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

/* out (n) = a + b; one thread per element */
static __global__ void residual_forward_kernel(float *out, const float *a, const float *b, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = a[i] + b[i];
}

/* da, db (n) += dout; one thread per element */
static __global__ void residual_backward_kernel(float *da, float *db, const float *dout, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
}

extern "C" void wp_cuda_residual_forward(float *out, const float *a, const float *b, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(residual_forward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, out, a, b, n);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(out, n);
}

extern "C" void wp_cuda_residual_backward(float *da, float *db, const float *dout, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(residual_backward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, da, db, dout, n);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(da, n);
    wp_cuda_store(db, n);
}
