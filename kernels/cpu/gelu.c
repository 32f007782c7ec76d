/* GELU (CPU), tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))):
 * elementwise forward and backward (dinp +=); the math is kernels/elementwise_math.h. */
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/elementwise_math.h"

void wp_cpu_gelu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for simd schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        out[i] = wp_gelu(inp[i]);
    wp_cpu_store(out, n);
}

/* dinp += gelu'(inp) * dout */
void wp_cpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for simd schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dinp[i] += wp_gelu_grad(inp[i]) * dout[i];
    wp_cpu_store(dinp, n);
}
