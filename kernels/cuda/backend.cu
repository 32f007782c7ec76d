/* The CUDA backend's memory operations (device memory: cudaMalloc, cudaMemcpy,
 * cudaMemset), the device check, the cuBLAS handle and the table wp_kernels_cuda. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"

#include <stdio.h>

/* 1 when cudaGetDeviceCount sees a device and the runtime can start on it;
 * otherwise 0 and the reason in why (the error is cleared, not sticky). */
extern "C" int wp_cuda_device_usable(char *why, size_t len)
{
    char scratch[8];
    if (!why || len == 0) {
        why = scratch;
        len = sizeof scratch;
    }
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        snprintf(why, len, "cudaGetDeviceCount: %s", cudaGetErrorString(rc));
        cudaGetLastError();
        return 0;
    }
    if (count == 0) {
        snprintf(why, len, "cudaGetDeviceCount found 0 devices");
        return 0;
    }
    rc = cudaFree(0); /* creates the context on the current device */
    if (rc != cudaSuccess) {
        snprintf(why, len, "cannot start on the device: %s", cudaGetErrorString(rc));
        cudaGetLastError();
        return 0;
    }
    snprintf(why, len, "%d device%s", count, count == 1 ? "" : "s");
    return 1;
}

/* zeroed; NULL when cudaMalloc fails (the error is cleared so that the next
 * cudaGetLastError after a launch does not report it) */
extern "C" void *wp_cuda_alloc(size_t bytes)
{
    void *p = NULL;
    const size_t n = bytes ? bytes : 1;
    if (cudaMalloc(&p, n) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    WP_CUDA_CHECK(cudaMemset(p, 0, n));
    return p;
}

extern "C" void wp_cuda_release(void *p)
{
    if (p)
        WP_CUDA_CHECK(cudaFree(p));
}

/* cudaMemcpy is ordered after the kernels already queued on the default
 * stream, and the host waits for it: no explicit synchronization needed */
extern "C" void wp_cuda_to_device(void *dst, const void *host_src, size_t bytes)
{
    if (bytes)
        WP_CUDA_CHECK(cudaMemcpy(dst, host_src, bytes, cudaMemcpyHostToDevice));
}

extern "C" void wp_cuda_to_host(void *host_dst, const void *src, size_t bytes)
{
    if (bytes)
        WP_CUDA_CHECK(cudaMemcpy(host_dst, src, bytes, cudaMemcpyDeviceToHost));
}

extern "C" void wp_cuda_zero(void *p, size_t bytes)
{
    if (bytes)
        WP_CUDA_CHECK(cudaMemset(p, 0, bytes));
}

/* The kernels' stream only (the legacy default stream, which also waits
 * for blocking streams): not cudaDeviceSynchronize, which waits for the
 * communication backend's non-blocking streams too, where an ncclRecv
 * posted ahead waits for a peer that is itself waiting here (two ranks of
 * a pipeline deadlocked in their first iteration, found on the host
 * emulation). */
extern "C" void wp_cuda_synchronize(void)
{
    WP_CUDA_CHECK(cudaStreamSynchronize(0));
}

static cublasHandle_t create_cublas_handle(void)
{
    cublasHandle_t handle;
    WP_CUDA_CHECK(cublasCreate(&handle));
    /* Plain FP32 until set_precision says otherwise (precision.cu):
     * CUBLAS_DEFAULT_MATH keeps at least the requested precision (no TF32,
     * which needs CUBLAS_TF32_TENSOR_OP_MATH, nor the BF16x9 emulation,
     * which needs CUBLAS_FP32_EMULATED_BF16X9_MATH). Set it explicitly so
     * that the choice is visible here. */
    WP_CUDA_CHECK(cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH));
    return handle;
}

/* The only global mutable state of this backend: one cuBLAS handle for the
 * process, created on the first matmul (a C++ function-local static, so its
 * creation is thread-safe) and never destroyed (the process's exit frees it).
 * It is bound to the device current at creation: choose the device
 * (cudaSetDevice) before the first matmul and keep it. It runs on the default
 * stream, like every kernel of this backend, with host alpha/beta. */
cublasHandle_t wp_cuda_cublas(void)
{
    static const cublasHandle_t handle = create_cublas_handle();
    return handle;
}

/* Scratch slot `slot` (below WP_CUDA_SCRATCH_SLOTS) of at least `bytes`,
 * kept and grown: with the cuBLAS handle, this backend's global state.
 * cudaFree waits for the device, so work still reading an old buffer
 * finishes first. */
void *wp_cuda_scratch(int slot, size_t bytes)
{
    static void *buf[WP_CUDA_SCRATCH_SLOTS];
    static size_t cap[WP_CUDA_SCRATCH_SLOTS];
    if (bytes > cap[slot]) {
        if (buf[slot])
            WP_CUDA_CHECK(cudaFree(buf[slot]));
        WP_CUDA_CHECK(cudaMalloc(&buf[slot], bytes));
        cap[slot] = bytes;
    }
    return buf[slot];
}

extern "C" const struct wp_kernel_ops wp_kernels_cuda = {
    .name = "cuda",
    .alloc = wp_cuda_alloc,
    .release = wp_cuda_release,
    .to_device = wp_cuda_to_device,
    .to_host = wp_cuda_to_host,
    .zero = wp_cuda_zero,
    .synchronize = wp_cuda_synchronize,
    .set_precision = wp_cuda_set_precision,
    .get_precision = wp_cuda_precision,
    .round_copy = wp_cuda_round_copy,
    .to_bf16 = wp_cuda_to_bf16,
    .from_bf16 = wp_cuda_from_bf16,
    .encoder_forward = wp_cuda_encoder_forward,
    .encoder_backward = wp_cuda_encoder_backward,
    .layernorm_forward = wp_cuda_layernorm_forward,
    .layernorm_backward = wp_cuda_layernorm_backward,
    .matmul_forward = wp_cuda_matmul_forward,
    .matmul_backward = wp_cuda_matmul_backward,
    .attention_forward = wp_cuda_attention_forward,
    .attention_backward = wp_cuda_attention_backward,
    .gelu_forward = wp_cuda_gelu_forward,
    .gelu_backward = wp_cuda_gelu_backward,
    .residual_forward = wp_cuda_residual_forward,
    .residual_backward = wp_cuda_residual_backward,
    .crossentropy_forward = wp_cuda_crossentropy_forward,
    .crossentropy_backward = wp_cuda_crossentropy_backward,
    .adamw_update = wp_cuda_adamw_update,
    .accumulate = wp_cuda_accumulate,
    .scale = wp_cuda_scale,
    .sum_squares = wp_cuda_sum_squares,
    .copy_block = wp_cuda_copy_block,
};
