/* Residual connection (CPU): out = a + b and its backward da += dout,
 * db += dout, elementwise. */
#include "kernels/cpu/cpu_kernels.h"

void wp_cpu_residual_forward(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    wp_cpu_store(out, n);
}

void wp_cpu_residual_backward(float *da, float *db, const float *dout, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        da[i] += dout[i];
        db[i] += dout[i];
    }
    wp_cpu_store(da, n);
    wp_cpu_store(db, n);
}
