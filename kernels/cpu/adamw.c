/* AdamW (CPU), llm.c's form: bias-corrected moments and decoupled weight
 * decay, p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), elementwise
 * (kernels/elementwise_math.h), vectorised (omp simd: the four vectors do
 * not overlap; sqrtf in SIMD needs -fno-math-errno, configure.ac). */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/elementwise_math.h"

#include <math.h>

/* params, m, v (n) updated in place from grads (n); t is the step, from 1 */
void wp_cpu_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t)
{
    const float bc1 = 1.0f - powf(beta1, (float)t);
    const float bc2 = 1.0f - powf(beta2, (float)t);
#pragma omp parallel for simd schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        wp_adamw_element(params, grads, m, v, i, lr, beta1, beta2, bc1, bc2, eps, weight_decay);
}
