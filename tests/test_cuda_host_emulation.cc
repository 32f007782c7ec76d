/* The CUDA host emulation (tests/cuda_host) tested on its own: the builtins
 * over 3D grids, warp shuffles and block barriers as CUDA defines them,
 * cuBLAS's column-major SGEMM against a plain loop, the order of streams and
 * events, and every fault it promises to catch (bad launch geometry, GEMM
 * arguments and extents, copies in the wrong direction, writes out of
 * bounds, exited or absent lanes in a shuffle, deadlocked barriers, stalled
 * streams), the fatal ones in a child process. */
#include <config.h>

#include "cuda_host/host_emulation.h"
#include "kernels/cuda/cuda_kernels.h"
#include "tap.h"

#include <csignal>
#include <cstdlib>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

/* ---- device buffers ---------------------------------------------------------- */
template <typename T> static T *device_array(size_t n)
{
    T *p = nullptr;
    if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess || cudaMemset(p, 0, n * sizeof(T)) != cudaSuccess) {
        printf("Bail out! cudaMalloc of %zu bytes\n", n * sizeof(T));
        exit(1);
    }
    return p;
}

template <typename T> static std::vector<T> to_host(const T *d, size_t n)
{
    std::vector<T> h(n);
    cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
}

/* ---- kernels -------------------------------------------------------------------- */
/* out[global linear id] = that id, from every builtin */
static __global__ void linear_id_kernel(unsigned int *out)
{
    const unsigned int threads = blockDim.x * blockDim.y * blockDim.z;
    const unsigned int block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[block * threads + thread] = block * threads + thread;
}

/* per thread: the warp sum of the lane numbers (xor butterfly), lane 0's sum
 * by a down tree, and lane 5's value broadcast */
static __global__ void shuffle_kernel(float *xor_sum, float *down_sum, float *broadcast)
{
    const unsigned int t = threadIdx.x;
    const float lane = (float)(t % 32);
    xor_sum[t] = wp_warp_sum(lane);
    float v = lane;
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(0xffffffffu, v, offset);
    down_sum[t] = v;
    broadcast[t] = __shfl_sync(0xffffffffu, lane * 10.0f, 5);
}

/* the block's sum of x (blockDim.x = 256) by a tree in shared memory; with
 * barriers = 0 the tree runs without its __syncthreads, a race */
static __global__ void block_sum_kernel(float *sum, const float *x, int barriers)
{
    __shared__ float shared[256];
    shared[threadIdx.x] = x[threadIdx.x];
    if (barriers)
        __syncthreads();
    for (unsigned int half = blockDim.x / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            shared[threadIdx.x] += shared[threadIdx.x + half];
        if (barriers)
            __syncthreads();
    }
    if (threadIdx.x == 0)
        *sum = shared[0];
}

/* x[i] = i for i <= n: one element too many */
static __global__ void write_one_past_kernel(float *x, int n)
{
    for (int i = (int)threadIdx.x; i <= n; i += (int)blockDim.x)
        x[i] = (float)i;
}

/* half of the warp leaves, then the other half shuffles with the full mask */
static __global__ void shuffle_after_exit_kernel(float *out)
{
    if (threadIdx.x < 16)
        return;
    out[threadIdx.x] = wp_warp_sum(1.0f);
}

/* out[t] = the warp's count of threads */
static __global__ void warp_count_kernel(float *out)
{
    out[threadIdx.x] = wp_warp_sum(1.0f);
}

/* half of the warp waits at a barrier, the other half in a shuffle */
static __global__ void split_warp_kernel(float *out)
{
    if (threadIdx.x < 16)
        __syncthreads();
    else
        out[threadIdx.x] = wp_warp_sum(1.0f);
}

/* ---- the builtins, shuffles and barriers ----------------------------------------- */
static void test_builtins(void)
{
    const dim3 grid(3, 2, 2), block(5, 4, 2);
    const size_t n = 3 * 2 * 2 * 5 * 4 * 2;
    unsigned int *d = device_array<unsigned int>(n);
    WP_LAUNCH(linear_id_kernel, grid, block, d);
    is_int(cudaGetLastError(), cudaSuccess, "a 3D grid of 3D blocks launches");
    std::vector<unsigned int> h = to_host(d, n);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += h[i] != i;
    ok(wrong == 0, "threadIdx, blockIdx, blockDim, gridDim: every thread of %zu once, in its place", n);
    cudaFree(d);
}

static void test_shuffles(void)
{
    const unsigned int threads = 64;
    float *xor_sum = device_array<float>(threads), *down_sum = device_array<float>(threads);
    float *broadcast = device_array<float>(threads);
    WP_LAUNCH(shuffle_kernel, 1, threads, xor_sum, down_sum, broadcast);
    std::vector<float> x = to_host(xor_sum, threads), d = to_host(down_sum, threads), b = to_host(broadcast, threads);
    size_t wrong_xor = 0, wrong_broadcast = 0;
    for (unsigned int t = 0; t < threads; t++) {
        wrong_xor += x[t] != 496.0f; /* 0 + 1 + ... + 31 */
        wrong_broadcast += b[t] != 50.0f;
    }
    ok(wrong_xor == 0, "__shfl_xor_sync butterfly: every lane of both warps has the warp's sum");
    /* lane 31 gets its own value back at every step (no lane 31 + offset): 31 * 2^5 */
    ok(d[0] == 496.0f && d[32] == 496.0f && d[31] == 992.0f,
       "__shfl_down_sync tree: lane 0 has the sum, lanes past the warp's end keep their own value");
    ok(wrong_broadcast == 0, "__shfl_sync broadcasts lane 5 in each warp");
    cudaFree(xor_sum);
    cudaFree(down_sum);
    cudaFree(broadcast);
}

static void test_barriers(void)
{
    float *x = device_array<float>(256), *sum = device_array<float>(1);
    /* with barriers, then without on other data (the stale shared memory of
     * the first run is then wrong for the second) */
    for (int barriers = 1; barriers >= 0; barriers--) {
        std::vector<float> h(256);
        float want = 0.0f;
        for (int i = 0; i < 256; i++) {
            h[i] = (float)(i % 7) + (barriers ? 1.0f : 100.0f);
            want += h[i];
        }
        cudaMemcpy(x, h.data(), 256 * sizeof(float), cudaMemcpyHostToDevice);
        WP_LAUNCH(block_sum_kernel, 1, 256, sum, x, barriers);
        const float got = to_host(sum, 1)[0];
        if (barriers)
            ok(got == want, "__syncthreads and __shared__: a block's tree sum is %g", want);
        else
            ok(got != want, "the same tree without its barriers reads stale shared memory (%g, not %g)", got, want);
    }
    cudaFree(x);
    cudaFree(sum);
}

static void test_launch_geometry(void)
{
    float *x = device_array<float>(1);
    struct {
        dim3 grid, block;
        const char *what;
    } const bad[] = {
        {dim3(1), dim3(2048), "2048 threads in a block"},
        {dim3(1), dim3(0), "an empty block"},
        {dim3(0), dim3(32), "an empty grid"},
        {dim3(1, 70000), dim3(32), "grid.y past 65535"},
        {dim3(1), dim3(8, 8, 128), "block.z past 64"},
    };
    for (const auto &b : bad) {
        WP_LAUNCH(write_one_past_kernel, b.grid, b.block, x, 0);
        is_int(cudaGetLastError(), cudaErrorInvalidConfiguration, "%s is an invalid configuration", b.what);
    }
    is_int(cudaGetLastError(), cudaSuccess, "cudaGetLastError clears the error");
    cudaFree(x);
}

/* ---- cuBLAS ------------------------------------------------------------------------- */
/* C (m x n, ldc) = alpha op(A) op(B) + beta C in double, column-major */
static void gemm_reference(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                           const std::vector<float> &A, int lda, const std::vector<float> &B, int ldb, float beta,
                           std::vector<float> &C, int ldc)
{
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0.0;
            for (int l = 0; l < k; l++) {
                const float a = ta == CUBLAS_OP_N ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                const float b = tb == CUBLAS_OP_N ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                acc += (double)a * b;
            }
            C[i + (size_t)j * ldc] = (float)(alpha * acc + beta * C[i + (size_t)j * ldc]);
        }
}

static void test_sgemm(void)
{
    cublasHandle_t handle;
    cublasCreate(&handle);
    const int m = 7, n = 5, k = 3, pad = 2;
    const float alpha = 1.5f, beta = 0.5f;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
            const int lda = (ta ? k : m) + pad, ldb = (tb ? n : k) + pad, ldc = m + pad;
            const size_t na = (size_t)lda * (ta ? m : k), nb = (size_t)ldb * (tb ? k : n), nc = (size_t)ldc * n;
            std::vector<float> A(na), B(nb), C(nc);
            for (size_t i = 0; i < na; i++)
                A[i] = (float)((i * 7) % 11) - 5.0f;
            for (size_t i = 0; i < nb; i++)
                B[i] = (float)((i * 5) % 13) - 6.0f;
            for (size_t i = 0; i < nc; i++)
                C[i] = (float)(i % 3);
            float *dA = device_array<float>(na), *dB = device_array<float>(nb), *dC = device_array<float>(nc);
            cudaMemcpy(dA, A.data(), na * sizeof(float), cudaMemcpyHostToDevice);
            cudaMemcpy(dB, B.data(), nb * sizeof(float), cudaMemcpyHostToDevice);
            cudaMemcpy(dC, C.data(), nc * sizeof(float), cudaMemcpyHostToDevice);
            const cublasStatus_t rc =
                cublasSgemm(handle, opa, opb, m, n, k, &alpha, dA, lda, dB, ldb, &beta, dC, ldc);
            gemm_reference(opa, opb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
            std::vector<float> got = to_host(dC, nc);
            size_t wrong = 0;
            for (size_t i = 0; i < nc; i++)
                wrong += fabsf(got[i] - C[i]) > 1e-5f * (1.0f + fabsf(C[i]));
            ok(rc == CUBLAS_STATUS_SUCCESS && wrong == 0,
               "cublasSgemm %c%c with padded leading dimensions: column-major op(A) op(B), rows past m untouched",
               ta ? 'T' : 'N', tb ? 'T' : 'N');
            cudaFree(dA);
            cudaFree(dB);
            cudaFree(dC);
        }

    /* the argument checks: what cuBLAS refuses, and what would read or write
     * outside a buffer or race between batches */
    float *A = device_array<float>(6 * 5), *B = device_array<float>(4 * 5), *C = device_array<float>(6 * 5);
    is_int(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 6, 5, 4, &alpha, A, 5, B, 4, &beta, C, 6),
           CUBLAS_STATUS_INVALID_VALUE, "lda smaller than op(A)'s stored rows is refused");
    is_int(cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, 6, 5, 4, &alpha, A, 4, B, 4, &beta, C, 5),
           CUBLAS_STATUS_INVALID_VALUE, "ldc smaller than m is refused");
    is_int(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 6, 5, 4, &alpha, A, 6, B, 5, &beta, C, 6),
           CUBLAS_STATUS_INVALID_VALUE, "B (4 x 5, ld 5) reaching past its 20 floats is refused");
    is_int(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 6, 5, 4, &alpha, A, 6, B, 4, &beta, C, 6),
           CUBLAS_STATUS_SUCCESS, "the same product with the right leading dimensions runs");
    is_int(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 6, 5, 4, &alpha, A, 6, B, 4, &beta, A, 6),
           CUBLAS_STATUS_INVALID_VALUE, "C overlapping A is refused");
    is_int(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, 6, 5, 4, A, A, 6, B, 4, &beta, C, 6),
           CUBLAS_STATUS_INVALID_VALUE, "alpha in device memory is refused (host pointer mode)");
    /* batches: C_i of 2 x 3 (ldc 6) at strideC 1 share elements; at strideC 2 they interleave without sharing */
    is_int(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 1, &alpha, A, 2, 2, B, 1, 3, &beta, C,
                                     6, 1, 3),
           CUBLAS_STATUS_INVALID_VALUE, "strided batches whose C overlap are refused");
    is_int(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 1, &alpha, A, 2, 2, B, 1, 3, &beta, C,
                                     6, 2, 3),
           CUBLAS_STATUS_SUCCESS, "strided batches interleaved in C's columns without sharing run");
    is_int(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, 2, 3, 1, &alpha, A, 2, 2, B, 1, 9, &beta, C,
                                     6, 2, 3),
           CUBLAS_STATUS_INVALID_VALUE, "a batch of B past the end of its buffer is refused");
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    cublasDestroy(handle);
}

/* ---- streams and events ------------------------------------------------------------ */
/* Stream work that completes at its polls_left-th poll (never when -1)
 * once *released (when given) is set, and says when it did in a sequence
 * shared with the kernel below. */
static int sequence;

struct counted_work : wp_host_async_work {
    int polls_left, *finished_at;
    const int *released;
    counted_work(int polls, int *at, const int *release = nullptr)
        : polls_left(polls), finished_at(at), released(release)
    {
    }
    void start() override {}
    int done() override
    {
        if ((released && !*released) || polls_left < 0 || --polls_left > 0)
            return 0;
        if (*finished_at < 0)
            *finished_at = sequence++;
        return 1;
    }
};

/* *ran_at = the sequence number when the kernel ran */
static __global__ void mark_kernel(int *ran_at, int at)
{
    *ran_at = at;
}

static int kernel_ran_at(void)
{
    int *d = device_array<int>(1), h = -1;
    WP_LAUNCH(mark_kernel, 1, 1, d, sequence++);
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    return h;
}

static void test_streams(void)
{
    cudaStream_t blocking, non_blocking;
    cudaEvent_t event;
    cudaStreamCreate(&blocking);
    cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&event, cudaEventDisableTiming);

    int finished = -1, released = 0;
    wp_host_stream_enqueue(non_blocking, new counted_work(1, &finished, &released));
    cudaEventRecord(event, non_blocking);
    const cudaError_t before = cudaEventQuery(event);
    int ran = kernel_ran_at(); /* would stall (and fail) if it waited for the unreleased work */
    ok(before == cudaErrorNotReady && finished < 0 && ran >= 0,
       "a kernel on the default stream does not wait for a non-blocking stream's work");
    released = 1;
    cudaStreamSynchronize(non_blocking);
    ok(finished >= 0 && cudaEventQuery(event) == cudaSuccess,
       "an event is done once its stream's work before it is, cudaStreamSynchronize waits for that");

    finished = -1;
    wp_host_stream_enqueue(blocking, new counted_work(5, &finished));
    ran = kernel_ran_at();
    ok(finished >= 0 && ran > finished, "a kernel on the default stream runs after a blocking stream's work (legacy)");

    finished = -1;
    wp_host_stream_enqueue(non_blocking, new counted_work(3, &finished));
    cudaEventRecord(event, non_blocking);
    cudaStreamWaitEvent(0, event, 0);
    ran = kernel_ran_at();
    ok(finished >= 0 && ran > finished, "cudaStreamWaitEvent orders the default stream after the event");

    cudaEventDestroy(event);
    cudaStreamDestroy(blocking);
    cudaStreamDestroy(non_blocking);
}

static void test_copies(void)
{
    float *d = device_array<float>(16);
    float h[16] = {0};
    is_int(cudaMemcpy2D(d, 4 * sizeof(float), h, 2 * sizeof(float), 3 * sizeof(float), 2, cudaMemcpyHostToDevice),
           cudaErrorInvalidPitchValue, "cudaMemcpy2D with a pitch narrower than a row is refused");
    is_int(cudaFree(d + 1), cudaErrorInvalidDevicePointer, "cudaFree of a pointer inside an allocation is refused");
    cudaGetLastError();
    cudaFree(d);
}

/* ---- faults that end the run: each in a child, which must abort saying why ---------- */
static void expect_abort(const char *what, const char *message, void (*fault)(void))
{
    int fds[2];
    if (pipe(fds) != 0) {
        ok(0, "%s: pipe", what);
        return;
    }
    fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
        dup2(fds[1], STDERR_FILENO);
        if (!freopen("/dev/null", "w", stdout))
            _exit(3);
        close(fds[0]);
        fault();
        _exit(0); /* not caught */
    }
    close(fds[1]);
    std::string err;
    char buf[512];
    ssize_t got;
    while ((got = read(fds[0], buf, sizeof buf)) > 0)
        err.append(buf, (size_t)got);
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    const int aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
    if (!ok(aborted && err.find(message) != std::string::npos, "%s", what))
        printf("#   child %s; stderr: %s\n", aborted ? "aborted" : "did not abort", err.c_str());
}

static void fault_write_past_end(void)
{
    float *x = device_array<float>(100);
    WP_LAUNCH(write_one_past_kernel, 1, 64, x, 100);
}

static void fault_shuffle_after_exit(void)
{
    float *out = device_array<float>(32);
    WP_LAUNCH(shuffle_after_exit_kernel, 1, 32, out);
}

static void fault_split_warp(void)
{
    float *out = device_array<float>(32);
    WP_LAUNCH(split_warp_kernel, 1, 32, out);
}

static void fault_partial_warp_mask(void)
{
    float *out = device_array<float>(48);
    WP_LAUNCH(warp_count_kernel, 1, 48, out); /* the second warp has 16 lanes; the mask names 32 */
}

static void fault_host_pointer_argument(void)
{
    static float host[100];
    WP_LAUNCH(write_one_past_kernel, 1, 64, host, 10);
}

static void fault_copy_direction(void)
{
    float *d = device_array<float>(8);
    float h[8];
    cudaMemcpy(d, h, sizeof h, cudaMemcpyDeviceToHost); /* the arguments of a HostToDevice copy */
}

static void fault_copy_past_end(void)
{
    float *d = device_array<float>(8);
    float h[9] = {0};
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
}

static void fault_stalled_stream(void)
{
    static int never = -1;
    cudaStream_t s;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    wp_host_stream_enqueue(s, new counted_work(-1, &never));
    cudaStreamSynchronize(s);
}

static void test_faults(void)
{
    expect_abort("a kernel writing one element past its buffer is caught", "wrote outside the allocation",
                 fault_write_past_end);
    expect_abort("a shuffle naming lanes that have exited is caught", "which has exited", fault_shuffle_after_exit);
    expect_abort("half a warp at a barrier and half in a shuffle is a deadlock", "deadlocks", fault_split_warp);
    expect_abort("a full-warp mask in a block's 16-lane last warp is caught", "past the block's last thread",
                 fault_partial_warp_mask);
    expect_abort("a host pointer passed to a kernel is caught", "is not device memory", fault_host_pointer_argument);
    expect_abort("a copy in the wrong direction is caught", "the direction is wrong", fault_copy_direction);
    expect_abort("a copy past the end of device memory is caught", "past its allocation", fault_copy_past_end);
    setenv("WP_CUDA_HOST_STALL_S", "1", 1); /* read by the child's first poll */
    expect_abort("stream work that never completes fails the run after the stall limit", "has not moved",
                 fault_stalled_stream);
}

int main(void)
{
    test_builtins();
    test_shuffles();
    test_barriers();
    test_launch_geometry();
    test_sgemm();
    test_streams();
    test_copies();
    test_faults();
    return tap_done();
}
