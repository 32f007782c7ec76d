/* AdamW (CUDA), llm.c's form: bias-corrected moments and decoupled weight
 * decay, p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), elementwise
 * (kernels/elementwise_math.h). */
#include <config.h>

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/elementwise_math.h"

#include <math.h>

/* params, m, v (n) updated in place from grads (n); bc1, bc2 the bias
 * corrections 1 - beta^t; one thread per element */
static __global__ void adamw_kernel(float *params, const float *grads, float *m, float *v, size_t n, float lr,
                                    float beta1, float beta2, float bc1, float bc2, float eps, float weight_decay)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        wp_adamw_element(params, grads, m, v, i, lr, beta1, beta2, bc1, bc2, eps, weight_decay);
}

/* t is the step, from 1; the bias corrections are computed on the host, once,
 * with the same powf as the CPU */
extern "C" void wp_cuda_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr,
                                     float beta1, float beta2, float eps, float weight_decay, int t)
{
    if (n == 0)
        return;
    const float bc1 = 1.0f - powf(beta1, (float)t);
    const float bc2 = 1.0f - powf(beta2, (float)t);
    WP_LAUNCH(adamw_kernel, wp_cuda_grid(n, WP_CUDA_BLOCK), WP_CUDA_BLOCK, params, grads, m, v, n, lr, beta1, beta2,
              bc1, bc2, eps, weight_decay);
    WP_CUDA_CHECK(cudaGetLastError());
}
