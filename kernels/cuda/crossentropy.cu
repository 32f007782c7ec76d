/* Softmax + cross-entropy (CUDA): probs (N,V), losses (N) = -log probs[target],
 * and the fused backward dlogits += (probs - onehot) * dloss, per row. */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/elementwise_math.h"

#include <float.h>

/* Max over the block (blockDim.x a multiple of 32); every thread gets it.
 * shared: 32 floats of the caller's shared memory, free again on return. */
static __device__ float block_max(float v, float *shared)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    v = lane < nwarps ? shared[lane] : -FLT_MAX;
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    __syncthreads();
    return v;
}

/* Sum over the block, in double; as block_max */
static __device__ double block_sum(double v, double *shared)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    v = lane < nwarps ? shared[lane] : 0.0;
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    __syncthreads();
    return v;
}

/* probs (N,V) = softmax(logits (N,V)) with the row max subtracted; losses (N)
 * = -log probs[target] = log(sum exp(l - max)) - (l[target] - max), in double
 * (finite even when probs[target] underflows). One block per row; the sum of
 * exponentials is in double like the CPU's, in a different order. */
static __global__ void crossentropy_forward_kernel(float *losses, float *probs, const float *logits,
                                                   const int *targets, int V)
{
    __shared__ float shared_max[32];
    __shared__ double shared_sum[32];
    const size_t r = blockIdx.x;
    const float *l = logits + r * V;
    float *p = probs + r * V;

    float maxval = -FLT_MAX;
    for (int i = threadIdx.x; i < V; i += blockDim.x)
        maxval = fmaxf(maxval, l[i]);
    maxval = block_max(maxval, shared_max);

    double sum = 0.0;
    for (int i = threadIdx.x; i < V; i += blockDim.x) {
        const float e = wp_fast_expf(l[i] - maxval);
        p[i] = e;
        sum += e;
    }
    sum = block_sum(sum, shared_sum);

    const float inv = (float)(1.0 / sum);
    for (int i = threadIdx.x; i < V; i += blockDim.x) /* each thread rescales the p[i] it wrote */
        p[i] *= inv;
    if (threadIdx.x == 0)
        losses[r] = (float)(log(sum) - (double)(l[targets[r]] - maxval));
}

/* dlogits (N,V) += (probs - onehot(targets)) * dloss; one thread per element */
static __global__ void crossentropy_backward_kernel(float *dlogits, const float *probs, const int *targets,
                                                    float dloss, int V, size_t n)
{
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += (size_t)gridDim.x * blockDim.x) {
        const size_t r = idx / V;
        const int i = (int)(idx % V);
        const float indicator = i == targets[r] ? 1.0f : 0.0f;
        dlogits[idx] += (probs[idx] - indicator) * dloss;
    }
}

extern "C" void wp_cuda_crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets,
                                             int N, int V)
{
    if (N <= 0 || V <= 0)
        return;
    WP_LAUNCH(crossentropy_forward_kernel, (unsigned int)N, WP_CUDA_BLOCK, losses, probs, logits, targets, V);
    WP_CUDA_CHECK(cudaGetLastError());
}

extern "C" void wp_cuda_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss,
                                              int N, int V)
{
    const size_t n = (size_t)(N > 0 ? N : 0) * (size_t)(V > 0 ? V : 0);
    if (n == 0)
        return;
    WP_LAUNCH(crossentropy_backward_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, dlogits, probs, targets,
              dloss, V, n);
    WP_CUDA_CHECK(cudaGetLastError());
    wp_cuda_store(dlogits, n);
}
