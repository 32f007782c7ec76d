/* The host emulation's CUDA runtime header (tests only): what the
 * kernels/cuda .cu files and the NCCL backends (src/run/comm/comm_nccl.c,
 * src/topo/calibrate_nccl.c) use of CUDA, so that they
 * build unchanged against it (this directory first on the include path; the
 * .cu files as C++ with -DWP_CUDA_HOST_EMULATION) and run on the host: each
 * block's threads as fibers (launch.cc), device memory as checked host
 * buffers (device_memory.cc), streams as queues of MPI work (streams.cc).
 * The API is C (comm_nccl.c is C); builtins, shuffles and launches C++. */
#ifndef WP_CUDA_HOST_CUDA_RUNTIME_H
#define WP_CUDA_HOST_CUDA_RUNTIME_H

#include <math.h> /* nvcc's cuda_runtime.h declares the math functions (sqrtf, expf, ...) too */
#include <stddef.h>

#ifdef __cplusplus
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

/* ---- qualifiers: the host is both sides ------------------------------------- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* Shared memory: one copy per kernel (a function-local static), which is one
 * per block because the emulation runs a grid's blocks one after another. */
#define __shared__ static

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
};

extern "C" {
#define WP_HOST_DEFAULT_STREAM = 0
#else
#define WP_HOST_DEFAULT_STREAM
#endif

/* ---- types ------------------------------------------------------------------- */
typedef struct uint3 {
    unsigned int x, y, z;
} uint3;

/* the values of the real runtime's enum cudaError, for the codes used here */
enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidPitchValue = 12,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorLaunchFailure = 719
};
typedef enum cudaError cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

/* Kernels, copies and cuBLAS run when issued (after the work queued on the
 * default stream); streams queue only NCCL's work (streams.cc). */
typedef struct wp_host_stream *cudaStream_t;
typedef struct wp_host_event *cudaEvent_t;
#define cudaStreamDefault 0x0u
#define cudaStreamNonBlocking 0x1u
#define cudaEventDefault 0x0u
#define cudaEventDisableTiming 0x2u

/* ---- runtime calls (device_memory.cc, launch.cc) ------------------------------ */
cudaError_t cudaMalloc(void **ptr, size_t bytes);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream WP_HOST_DEFAULT_STREAM);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream WP_HOST_DEFAULT_STREAM);
cudaError_t cudaMemset(void *ptr, int value, size_t bytes);

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaDeviceSynchronize(void);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream WP_HOST_DEFAULT_STREAM);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);

#ifdef __cplusplus
} /* extern "C" */

template <typename T> static inline cudaError_t cudaMalloc(T **ptr, size_t bytes)
{
    return cudaMalloc(reinterpret_cast<void **>(ptr), bytes);
}

/* ---- the builtins of the running thread (set by launch.cc's scheduler) ------- */
struct wp_host_thread_builtins {
    uint3 thread_idx, block_idx;
    dim3 block_dim, grid_dim;
};
extern wp_host_thread_builtins wp_host_builtins;
#define threadIdx (static_cast<const uint3 &>(wp_host_builtins.thread_idx))
#define blockIdx (static_cast<const uint3 &>(wp_host_builtins.block_idx))
#define blockDim (static_cast<const dim3 &>(wp_host_builtins.block_dim))
#define gridDim (static_cast<const dim3 &>(wp_host_builtins.grid_dim))
#define warpSize 32

/* ---- block and warp synchronisation (launch.cc) ------------------------------- */
void __syncthreads(void);

enum wp_host_shuffle_kind { WP_HOST_SHFL_IDX, WP_HOST_SHFL_UP, WP_HOST_SHFL_DOWN, WP_HOST_SHFL_XOR };

/* The warp exchange: waits until every lane named in mask has reached a
 * shuffle with the same mask and kind, then returns the 8 bytes of the lane
 * that kind and arg select (the caller's own where CUDA keeps them). */
unsigned long long wp_host_shuffle(wp_host_shuffle_kind kind, unsigned int mask, unsigned long long bits, int arg,
                                   int width);

template <typename T>
static inline T wp_host_shuffle_value(wp_host_shuffle_kind kind, unsigned int mask, T value, int arg, int width)
{
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "a shuffle moves at most 8 bytes");
    unsigned long long bits = 0;
    std::memcpy(&bits, &value, sizeof value);
    bits = wp_host_shuffle(kind, mask, bits, arg, width);
    T out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

template <typename T> static inline T __shfl_sync(unsigned int mask, T value, int src_lane, int width = 32)
{
    return wp_host_shuffle_value(WP_HOST_SHFL_IDX, mask, value, src_lane, width);
}
template <typename T> static inline T __shfl_up_sync(unsigned int mask, T value, unsigned int delta, int width = 32)
{
    return wp_host_shuffle_value(WP_HOST_SHFL_UP, mask, value, (int)delta, width);
}
template <typename T> static inline T __shfl_down_sync(unsigned int mask, T value, unsigned int delta, int width = 32)
{
    return wp_host_shuffle_value(WP_HOST_SHFL_DOWN, mask, value, (int)delta, width);
}
template <typename T> static inline T __shfl_xor_sync(unsigned int mask, T value, int lane_mask, int width = 32)
{
    return wp_host_shuffle_value(WP_HOST_SHFL_XOR, mask, value, lane_mask, width);
}

/* One OS thread runs every fiber and a fiber is never preempted: a plain
 * read-modify-write is atomic here. */
template <typename T> static inline T atomicAdd(T *address, T value)
{
    const T old = *address;
    *address = old + value;
    return old;
}

/* ---- launches ------------------------------------------------------------------- */
/* Runs body(closure) once per thread of the grid, each block's threads as
 * fibers; a launch configuration CUDA refuses sets the error that the next
 * cudaGetLastError returns and runs nothing. */
void wp_host_run_grid(const char *kernel_name, dim3 grid, dim3 block, void (*body)(void *), void *closure);

/* Fails the run when a kernel's pointer argument is neither NULL nor inside
 * device memory (a host pointer handed to a kernel). */
void wp_host_check_kernel_pointer(const char *kernel_name, int argument, const void *ptr);

template <typename T> static inline void wp_host_check_argument(const char *kernel_name, int argument, const T &value)
{
    if constexpr (std::is_pointer<T>::value)
        wp_host_check_kernel_pointer(kernel_name, argument, (const void *)value);
}

/* kernel<<<grid, block>>>(args...) of the host emulation (WP_LAUNCH in
 * kernels/cuda/cuda_kernels.h): the arguments converted to the kernel's
 * parameter types once, as a launch does, and each thread calls the kernel
 * with its own copies of them. */
template <typename... Params, typename... Args>
static void wp_host_launch(const char *kernel_name, dim3 grid, dim3 block, void (*kernel)(Params...), Args &&...args)
{
    static_assert(sizeof...(Params) == sizeof...(Args), "a kernel launch passes one argument per parameter");
    struct closure {
        void (*kernel)(Params...);
        std::tuple<Params...> params;
    } launch{kernel, std::tuple<Params...>(std::forward<Args>(args)...)};
    std::apply(
        [kernel_name](const Params &...p) {
            int argument = 0;
            (wp_host_check_argument(kernel_name, argument++, p), ...);
        },
        launch.params);
    wp_host_run_grid(
        kernel_name, grid, block,
        [](void *c) {
            const closure *l = static_cast<const closure *>(c);
            std::apply(l->kernel, l->params); /* by-value parameters: each thread its own copies */
        },
        &launch);
}
#endif /* __cplusplus */

#endif
