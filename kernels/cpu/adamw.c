/* AdamW (CPU), llm.c's form: bias-corrected moments and decoupled weight
 * decay, p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p), elementwise. */
#include "kernels/cpu/cpu_kernels.h"

#include <math.h>

/* params, m, v (n) updated in place from grads (n); t is the step, from 1 */
void wp_cpu_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t)
{
    const float bc1 = 1.0f - powf(beta1, (float)t);
    const float bc2 = 1.0f - powf(beta2, (float)t);
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const float g = grads[i];
        const float p = params[i];
        const float mi = beta1 * m[i] + (1.0f - beta1) * g;
        const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        const float m_hat = mi / bc1;
        const float v_hat = vi / bc2;
        m[i] = mi;
        v[i] = vi;
        params[i] = p - lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * p);
    }
}
