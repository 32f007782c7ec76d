/* The CUDA backend of the kernel table: prototypes of the wp_cuda_<op> functions
 * behind wp_kernels_cuda (same signatures and semantics as kernels/kernels.h). */
#ifndef WP_KERNELS_CUDA_CUDA_KERNELS_H
#define WP_KERNELS_CUDA_CUDA_KERNELS_H

/* The part above the #if is plain C (tests/test_kernels_cuda.c includes it
 * without the CUDA headers); the part below is for the .cu files, compiled by
 * nvcc or, with WP_CUDA_HOST_EMULATION, by a C++ compiler against the host
 * emulation's cuda_runtime.h and cublas_v2.h (tests/cuda_host). */
#include <stddef.h>

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* backend.cu: the table of this backend (kernels/kernels.h declares it too,
 * in the CUDA build only; the host emulation's test links it in every build) */
extern const struct wp_kernel_ops wp_kernels_cuda;

/* backend.cu: 1 when a CUDA device can be used; else 0 with the reason in why[len] */
int wp_cuda_device_usable(char *why, size_t len);

/* precision.cu: the mode (set_precision), what every kernel calls on each
 * activation it writes (rounds it to bfloat16 in bf16, nothing otherwise)
 * and the rounded copy (kernels.h round_copy) */
void wp_cuda_set_precision(enum wp_precision p);
enum wp_precision wp_cuda_precision(void);
void wp_cuda_store(float *x, size_t n);
void wp_cuda_round_copy(float *dst, const float *src, size_t n);
void wp_cuda_to_bf16(uint16_t *dst, const float *src, size_t n);
void wp_cuda_from_bf16(float *dst, const uint16_t *src, size_t n);

/* backend.cu: device memory */
void *wp_cuda_alloc(size_t bytes);
void wp_cuda_release(void *p);
void wp_cuda_to_device(void *dst, const void *host_src, size_t bytes);
void wp_cuda_to_host(void *host_dst, const void *src, size_t bytes);
void wp_cuda_zero(void *p, size_t bytes);
void wp_cuda_synchronize(void);

/* encoder.cu */
void wp_cuda_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C);
void wp_cuda_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C);

/* layernorm.cu */
void wp_cuda_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                               const float *bias, int N, int C);
void wp_cuda_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                                const float *weight, const float *mean, const float *rstd, int N, int C);

/* matmul.cu */
void wp_cuda_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                            int OC, enum wp_weight_layout layout);
void wp_cuda_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                             const float *weight, int N, int C, int OC, enum wp_weight_layout layout);

/* attention.cu */
void wp_cuda_attention_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH);
void wp_cuda_attention_backward(float *dinp, const float *dout, const float *inp, const float *lse, int B, int T,
                                int C, int NH);

/* gelu.cu */
void wp_cuda_gelu_forward(float *out, const float *inp, size_t n);
void wp_cuda_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

/* residual.cu */
void wp_cuda_residual_forward(float *out, const float *a, const float *b, size_t n);
void wp_cuda_residual_backward(float *da, float *db, const float *dout, size_t n);

/* crossentropy.cu */
void wp_cuda_crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N,
                                  int V);
void wp_cuda_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N,
                                   int V);

/* adamw.cu */
void wp_cuda_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                          float beta2, float eps, float weight_decay, int t);

/* vector.cu */
void wp_cuda_accumulate(float *dst, const float *src, size_t n);
void wp_cuda_scale(float *x, float s, size_t n);
void wp_cuda_sum_squares(double *host_out, const float *x, size_t n);
void wp_cuda_copy_block(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols);

#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__) || defined(WP_CUDA_HOST_EMULATION)
/* ---- shared by the .cu files only ---------------------------------------- */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* Every CUDA runtime and cuBLAS call goes through WP_CUDA_CHECK: on failure it
 * prints file:line and the error string and aborts (a broken device has no
 * graceful path). After a kernel launch: WP_CUDA_CHECK(cudaGetLastError()). */
static inline void wp_cuda_check_(cudaError_t rc, const char *what, const char *file, int line)
{
    if (rc != cudaSuccess) {
        fprintf(stderr, "%s:%d: %s: CUDA error %s\n", file, line, what, cudaGetErrorString(rc));
        abort();
    }
}
static inline void wp_cuda_check_(cublasStatus_t rc, const char *what, const char *file, int line)
{
    if (rc != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "%s:%d: %s: cuBLAS error %s\n", file, line, what, cublasGetStatusString(rc));
        abort();
    }
}
#define WP_CUDA_CHECK(call) wp_cuda_check_((call), #call, __FILE__, __LINE__)

/* backend.cu: the process's cuBLAS handle, created on first use (see there) */
cublasHandle_t wp_cuda_cublas(void);

/* backend.cu: a device buffer of at least `bytes` per slot, kept and grown
 * (gemm.cu's bf16 operands in slots 0 and 1, attention.cu's block of scores
 * and its gradient in 2 and 3) */
#define WP_CUDA_SCRATCH_SLOTS 4
void *wp_cuda_scratch(int slot, size_t bytes);

/* gemm.cu: C = alpha op(A) op(B) + beta C, `batches` times at the strides
 * (1: one product), column-major: every product of this backend, in its
 * precision (SGEMM in fp32 and tf32, bf16 operands through cublasGemmEx in
 * bf16). */
void wp_cuda_gemm(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, float alpha,
                  const float *A, int lda, long long strideA, const float *B, int ldb, long long strideB, float beta,
                  float *C, int ldc, long long strideC, int batches);

/* Every kernel launch: WP_LAUNCH(kernel, blocks, threads, arguments...) is
 * kernel<<<blocks, threads>>>(arguments...) under nvcc; the host emulation,
 * whose C++ compiler cannot parse <<<>>>, runs the same grid on the host
 * (wp_host_launch, tests/cuda_host/cuda_runtime.h). */
#ifdef WP_CUDA_HOST_EMULATION
#define WP_LAUNCH(kernel, blocks, threads, ...) wp_host_launch(#kernel, (blocks), (threads), kernel, __VA_ARGS__)
#else
#define WP_LAUNCH(kernel, blocks, threads, ...) kernel<<<(blocks), (threads)>>>(__VA_ARGS__)
#endif

/* Threads per block of the elementwise and per-row kernels. */
#define WP_CUDA_BLOCK 256

/* Blocks for a grid-stride loop over n items (n > 0): ceil(n / block),
 * capped; the kernels' loops cover whatever the cap leaves. */
static inline unsigned int wp_cuda_grid(size_t n, unsigned int block)
{
    const size_t blocks = (n + block - 1) / block;
    return blocks > (1u << 20) ? (1u << 20) : (unsigned int)blocks;
}

/* Sum over the 32 lanes of a warp; every lane gets the result. */
static __device__ __forceinline__ float wp_warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
#endif

#endif
