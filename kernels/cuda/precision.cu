/* The CUDA backend's training precision (kernels.h set_precision), the
 * mirror of kernels/cpu/precision.c: the mode every kernel reads, the
 * rounding of what a kernel stores in bf16 (a pass over the stored
 * elements, as the CPU's), and tf32 as cuBLAS's TF32 tensor-op math mode,
 * which reads the operands of every product with 10 mantissa bits; floats
 * to bfloat16 bits and back for messages. In bf16
 * the products run as cuBLAS SGEMM over bfloat16 values held in floats:
 * each product of two of them is exact in float and the sums are float's,
 * the arithmetic of a bf16 GEMM with FP32 accumulation. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/precision.h"

static enum wp_precision mode = WP_PRECISION_FP32;

/* dst (n) = src rounded to bfloat16; one thread per element, dst may be src */
static __global__ void round_bf16_kernel(float *dst, const float *src, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = wp_bf16_round(src[i]);
}

/* dst (n) = bfloat16 bits of src; one thread per element */
static __global__ void to_bf16_kernel(uint16_t *dst, const float *src, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = wp_bf16_from_float(src[i]);
}

/* dst (n) = the floats of bfloat16 bits src; one thread per element */
static __global__ void from_bf16_kernel(float *dst, const uint16_t *src, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = wp_bf16_to_float(src[i]);
}

extern "C" void wp_cuda_to_bf16(uint16_t *dst, const float *src, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(to_bf16_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dst, src, n);
    WP_CUDA_CHECK(cudaGetLastError());
}

extern "C" void wp_cuda_from_bf16(float *dst, const uint16_t *src, size_t n)
{
    if (n == 0)
        return;
    WP_LAUNCH(from_bf16_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dst, src, n);
    WP_CUDA_CHECK(cudaGetLastError());
}

extern "C" void wp_cuda_set_precision(enum wp_precision p)
{
    mode = p;
    WP_CUDA_CHECK(cublasSetMathMode(wp_cuda_cublas(),
                                    p == WP_PRECISION_TF32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
}

extern "C" enum wp_precision wp_cuda_precision(void)
{
    return mode;
}

extern "C" void wp_cuda_round_copy(float *dst, const float *src, size_t n)
{
    if (n == 0)
        return;
    if (mode != WP_PRECISION_BF16) {
        if (dst != src)
            WP_CUDA_CHECK(cudaMemcpy(dst, src, n * sizeof *dst, cudaMemcpyDeviceToDevice));
        return;
    }
    WP_LAUNCH(round_bf16_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dst, src, n);
    WP_CUDA_CHECK(cudaGetLastError());
}

extern "C" void wp_cuda_store(float *x, size_t n)
{
    if (mode == WP_PRECISION_BF16 && x)
        wp_cuda_round_copy(x, x, n);
}
