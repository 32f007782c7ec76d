/* GELU (CPU), tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))):
 * elementwise forward and backward (dinp +=). */
#include "kernels/cpu/cpu_kernels.h"

#include <math.h>

#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

void wp_cpu_gelu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_SCALING_FACTOR * (x + cube)));
    }
}

/* dinp += gelu'(inp) * dout; sech^2 = 1 - tanh^2 (no coshf overflow) */
void wp_cpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        const float tanh_out = tanhf(GELU_SCALING_FACTOR * (x + cube));
        const float sech2 = 1.0f - tanh_out * tanh_out;
        const float local_grad =
            0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += local_grad * dout[i];
    }
}
