/* Every matrix product of the CUDA backend, the mirror of the CPU's
 * wp_cpu_sgemm (kernels/cpu/precision.c): cuBLAS SGEMM in fp32 and tf32
 * (the handle's math mode, precision.cu), and in bf16 cublasGemmEx over
 * bfloat16 copies of the operands (CUDA_R_16BF in, float32 out,
 * CUBLAS_COMPUTE_32F): the tensor cores' bf16 GEMM with float32
 * accumulation, on operands rounded as the CPU rounds them. Strided
 * batched alike. Column-major, as cuBLAS. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

/* Elements from a column-major matrix's first to its last, over its batches. */
static size_t span(int rows, int cols, int ld, long long stride, int batches)
{
    if (rows <= 0 || cols <= 0 || batches <= 0)
        return 0;
    return (size_t)(cols - 1) * (size_t)ld + (size_t)rows + (size_t)stride * (size_t)(batches - 1);
}

void wp_cuda_gemm(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, float alpha,
                               const float *A, int lda, long long strideA, const float *B, int ldb,
                               long long strideB, float beta, float *C, int ldc, long long strideC, int batches)
{
    cublasHandle_t handle = wp_cuda_cublas();
    if (wp_cuda_precision() != WP_PRECISION_BF16) {
        if (batches == 1)
            WP_CUDA_CHECK(cublasSgemm(handle, transa, transb, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc));
        else
            WP_CUDA_CHECK(cublasSgemmStridedBatched(handle, transa, transb, m, n, k, &alpha, A, lda, strideA, B, ldb,
                                                    strideB, &beta, C, ldc, strideC, batches));
        return;
    }
    /* as op(A) is m x k: A is stored m x k (N) or k x m (T); B likewise k x n or n x k */
    const size_t a_n = span(transa == CUBLAS_OP_N ? m : k, transa == CUBLAS_OP_N ? k : m, lda, strideA, batches);
    const size_t b_n = span(transb == CUBLAS_OP_N ? k : n, transb == CUBLAS_OP_N ? n : k, ldb, strideB, batches);
    uint16_t *a16 = (uint16_t *)wp_cuda_scratch(0, (a_n ? a_n : 1) * sizeof(uint16_t));
    uint16_t *b16 = (uint16_t *)wp_cuda_scratch(1, (b_n ? b_n : 1) * sizeof(uint16_t));
    wp_cuda_to_bf16(a16, A, a_n);
    wp_cuda_to_bf16(b16, B, b_n);
    if (batches == 1)
        WP_CUDA_CHECK(cublasGemmEx(handle, transa, transb, m, n, k, &alpha, a16, CUDA_R_16BF, lda, b16, CUDA_R_16BF,
                                   ldb, &beta, C, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        WP_CUDA_CHECK(cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, &alpha, a16, CUDA_R_16BF, lda,
                                                 strideA, b16, CUDA_R_16BF, ldb, strideB, &beta, C, CUDA_R_32F, ldc,
                                                 strideC, batches, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
