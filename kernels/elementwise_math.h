/* The per-element math of the kernels both backends run element by element
 * (GELU, AdamW), written once: the kernels/cpu .c files call it inside their OpenMP
 * loops and the kernels/cuda .cu files inside their grid-stride loops, so the CPU
 * reference and the CUDA mirror cannot drift apart. Plain C11 and CUDA C++. */
#ifndef WP_KERNELS_ELEMENTWISE_MATH_H
#define WP_KERNELS_ELEMENTWISE_MATH_H

#include <math.h>

#ifdef __CUDACC__
#define WP_HOST_DEVICE __host__ __device__
#else
#define WP_HOST_DEVICE
#endif

#define WP_GELU_SCALING_FACTOR 0.7978845608028654f /* sqrt(2 / pi) */

/* tanh in float as a rational function of x on [-7.9, 7.9] (beyond, tanh
 * is +-1 in float): the form Eigen uses for its vectorised tanh, a few ulp
 * from tanhf (tests/test_kernels.c checks it against libm), and plain
 * arithmetic the compiler vectorises, where glibc's tanhf is a scalar call
 * that took a third of a training step. */
WP_HOST_DEVICE static inline float wp_fast_tanhf(float x)
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

/* exp in float for the softmaxes (attention, cross-entropy): x = n ln2 + r
 * with |r| <= ln2 / 2 (ln2 in two parts, Cody and Waite), e^r by a degree-7
 * polynomial (Cephes' minimax coefficients), 2^n put into the exponent
 * bits; within 1.4 ulp of exp on [-87, 0] (tests/test_kernels.c checks it
 * against libm). Plain arithmetic that vectorises, where glibc's expf is a
 * scalar call: the softmaxes' exps were 8 % of a GPT-2-small step at T =
 * 1024. The argument is clamped to [ln FLT_MIN, 88]: below, the
 * result is FLT_MIN, not 0. */
WP_HOST_DEVICE static inline float wp_fast_expf(float x)
{
    x = x < -87.3365447f ? -87.3365447f : x;
    x = x > 88.0f ? 88.0f : x; /* 2^127 at most in the exponent bits */
    /* floor(x log2 e + 1/2) by truncation of a positive number */
    const int n = (int)(x * 1.44269504088896341f + 128.5f) - 128;
    const float nf = (float)n;
    const float r = (x - nf * 0.693359375f) - nf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    const float er = p * r * r + r + 1.0f;
    union {
        int i;
        float f;
    } two_n;
    two_n.i = (n + 127) << 23;
    return er * two_n.f;
}

/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi)(x + 0.044715 x^3))) */
WP_HOST_DEVICE static inline float wp_gelu(float x)
{
    const float cube = 0.044715f * x * x * x;
    return 0.5f * x * (1.0f + wp_fast_tanhf(WP_GELU_SCALING_FACTOR * (x + cube)));
}

/* its derivative; sech^2 = 1 - tanh^2 (no coshf overflow) */
WP_HOST_DEVICE static inline float wp_gelu_grad(float x)
{
    const float cube = 0.044715f * x * x * x;
    const float tanh_out = wp_fast_tanhf(WP_GELU_SCALING_FACTOR * (x + cube));
    const float sech2 = 1.0f - tanh_out * tanh_out;
    return 0.5f * (1.0f + tanh_out) + x * 0.5f * sech2 * WP_GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
}

/* One AdamW step of element i, llm.c's form: bias-corrected moments
 * (bc1, bc2 = 1 - beta^t, computed once by the caller with powf) and
 * decoupled weight decay, p -= lr * (mhat / (sqrt(vhat) + eps) + wd * p). */
WP_HOST_DEVICE static inline void wp_adamw_element(float *params, const float *grads, float *m, float *v, size_t i,
                                                   float lr, float beta1, float beta2, float bc1, float bc2, float eps,
                                                   float weight_decay)
{
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

#endif
