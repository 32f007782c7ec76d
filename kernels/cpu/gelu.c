/* GELU (CPU), tanh approximation 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))):
 * elementwise forward and backward (dinp +=). */
#include "kernels/cpu/cpu_kernels.h"


#define GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

/* tanh in float as a rational function of x on [-7.9, 7.9] (beyond, tanh
 * is +-1 in float): the form Eigen uses for its vectorised tanh, a few ulp
 * from tanhf (tests/test_kernels.c checks it against libm), and plain
 * arithmetic the compiler vectorises, where glibc's tanhf is a scalar call
 * that took a third of a training step. */
static inline float fast_tanhf(float x)
{
    const float clamp = 7.90531110763549805f;
    x = x > clamp ? clamp : x; /* two plain selects: the compiler vectorises them */
    x = x < -clamp ? -clamp : x;
    const float x2 = x * x;
    float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
    p = x2 * p + -8.60467152213735e-11f;
    p = x2 * p + 5.12229709037114e-08f;
    p = x2 * p + 1.48572235717979e-05f;
    p = x2 * p + 6.37261928875436e-04f;
    p = x2 * p + 4.89352455891786e-03f;
    p = x * p;
    float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
    q = x2 * q + 2.26843463243900e-03f;
    q = x2 * q + 4.89352518554385e-03f;
    return p / q;
}

void wp_cpu_gelu_forward(float *out, const float *inp, size_t n)
{
#pragma omp parallel for simd schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        out[i] = 0.5f * x * (1.0f + fast_tanhf(GELU_SCALING_FACTOR * (x + cube)));
    }
}

/* dinp += gelu'(inp) * dout; sech^2 = 1 - tanh^2 (no coshf overflow) */
void wp_cpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
#pragma omp parallel for simd schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++) {
        const float x = inp[i];
        const float cube = 0.044715f * x * x * x;
        const float tanh_out = fast_tanhf(GELU_SCALING_FACTOR * (x + cube));
        const float sech2 = 1.0f - tanh_out * tanh_out;
        const float local_grad =
            0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
        dinp[i] += local_grad * dout[i];
    }
}
