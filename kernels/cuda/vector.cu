/* Vector helpers (CUDA) for gradient handling: dst += src, x *= s, and the
 * sum of squares (double, per-block partials summed on the host); the
 * block copy of tensor parallelism. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

/* Most blocks (and partial sums) of sum_squares. */
#define SS_MAX_BLOCKS 1024

/* dst (n) += src; one thread per element */
static __global__ void accumulate_kernel(float *dst, const float *src, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] += src[i];
}

/* x (n) *= s; one thread per element */
static __global__ void scale_kernel(float *x, float s, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= s;
}

/* partial (gridDim.x) = per-block sums of x^2 in double: grid-stride sums
 * per thread, then a tree over the block's threads (blockDim.x = WP_CUDA_BLOCK) */
static __global__ void sum_squares_kernel(double *partial, const float *x, size_t n)
{
    __shared__ double shared[WP_CUDA_BLOCK];
    double acc = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        acc += (double)x[i] * x[i];
    shared[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            shared[threadIdx.x] += shared[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        partial[blockIdx.x] = shared[0];
}

extern "C" void wp_cuda_accumulate(float *dst, const float *src, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(accumulate_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dst, src, n);
    WP_CUDA_CHECK(cudaGetLastError());
}

extern "C" void wp_cuda_scale(float *x, float s, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(scale_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, x, s, n);
    WP_CUDA_CHECK(cudaGetLastError());
}

/* *host_out = sum of x[i]^2 (n) in double; the block count depends on n only,
 * so the result is the same from run to run */
extern "C" void wp_cuda_sum_squares(double *host_out, const float *x, size_t n)
{
    if (n == 0) {
        *host_out = 0.0;
        return;
    }
    unsigned int blocks = wp_cuda_grid(n, WP_CUDA_BLOCK);
    if (blocks > SS_MAX_BLOCKS)
        blocks = SS_MAX_BLOCKS;
    double *partial = NULL;
    WP_CUDA_CHECK(cudaMalloc(&partial, blocks * sizeof(double)));
    WP_LAUNCH(sum_squares_kernel, blocks, WP_CUDA_BLOCK, partial, x, n);
    WP_CUDA_CHECK(cudaGetLastError());
    double host_partial[SS_MAX_BLOCKS];
    WP_CUDA_CHECK(cudaMemcpy(host_partial, partial, blocks * sizeof(double), cudaMemcpyDeviceToHost));
    WP_CUDA_CHECK(cudaFree(partial));
    double sum = 0.0;
    for (unsigned int k = 0; k < blocks; k++)
        sum += host_partial[k];
    *host_out = sum;
}

/* The CPU's row-by-row block copy as one strided device copy. */
extern "C" void wp_cuda_copy_block(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows,
                                   size_t cols)
{
    if (rows == 0 || cols == 0)
        return;
    WP_CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_ld * sizeof(float), src, src_ld * sizeof(float), cols * sizeof(float),
                                    rows, cudaMemcpyDeviceToDevice, 0));
}
