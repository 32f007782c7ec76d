/* Training precisions and their number formats, written once for both
 * backends and the planner: fp32 (IEEE single everywhere, no tensor cores),
 * tf32 (fp32 storage; matmul operands read with 10 mantissa bits, as
 * Ampere's and Hopper's tensor cores read them, products summed in fp32)
 * and bf16 (Megatron-LM's --bf16: bfloat16 activations and matmul
 * operands, fp32 accumulation, fp32 master weights, gradients and AdamW
 * moments). The conversions are plain C11 and CUDA C++, so the CPU
 * reference and the CUDA mirror round alike. */
#ifndef WP_KERNELS_PRECISION_H
#define WP_KERNELS_PRECISION_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define WP_PRECISION_HD __host__ __device__
#else
#define WP_PRECISION_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum wp_precision {
    WP_PRECISION_FP32, /* the default: what the CPU reference has always computed */
    WP_PRECISION_TF32,
    WP_PRECISION_BF16,
    WP_PRECISION_COUNT
};

/* "fp32", "tf32", "bf16" */
const char *wp_precision_name(enum wp_precision p);
/* The precision named s, or -1 (the names above, case-sensitive). */
int wp_precision_parse(const char *s);
/* "fp32, tf32, bf16": for usage lines and error messages. */
const char *wp_precision_names(void);

/* Bytes the training state and messages take per element in precision p,
 * as Megatron-LM keeps them (megatron_memory.h counts the same): */
struct wp_precision_bytes {
    int activation; /* stored activations and the pipeline's messages: 2 in bf16, else 4 */
    int parameter;  /* the weights the matmuls read: 2 in bf16 (a copy of the master weights), else 4 */
    int gradient;   /* weight gradients, accumulated and summed: 4 (fp32) in every precision */
    int optimizer;  /* AdamW's m and v (8), plus the fp32 master weights where parameters are 16-bit (4) */
};
struct wp_precision_bytes wp_precision_bytes(enum wp_precision p);

/* float -> bfloat16 bits, round to nearest, ties to even (what CUDA's
 * __float2bfloat16 and PyTorch's .to(torch.bfloat16) do). Infinities stay
 * infinite, finite values past the largest bfloat16 round to infinity, a
 * NaN stays a NaN (made quiet, its sign kept), subnormals round like any
 * other value (no flush to zero). */
WP_PRECISION_HD static inline uint16_t wp_bf16_from_float(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* bfloat16 bits -> float: exact (bfloat16 is float's top half). */
WP_PRECISION_HD static inline float wp_bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* f rounded to the nearest bfloat16, as a float. */
WP_PRECISION_HD static inline float wp_bf16_round(float f)
{
    return wp_bf16_to_float(wp_bf16_from_float(f));
}

/* f as a tensor core reads a TF32 operand: the sign, the 8 exponent bits
 * and the top 10 of the 23 mantissa bits, the rest dropped (PyTorch's
 * numerical-accuracy notes: "only the first 10 bits of the input mantissa
 * are read"). Infinities and NaNs pass through. */
WP_PRECISION_HD static inline float wp_tf32_truncate(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u &= 0xffffe000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return r;
}

#ifdef __cplusplus
}
#endif

#endif
