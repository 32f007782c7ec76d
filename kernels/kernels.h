/* The compute kernels of GPT-2 training behind one table of function
 * pointers (IOR's backend table): wp_kernels_cpu (CBLAS and C, the tested
 * reference) and, in the CUDA build, wp_kernels_cuda (cuBLAS and .cu
 * kernels, a line-for-line sibling). Every pointer argument points into the
 * backend's own memory (host for CPU, device for CUDA). Shapes follow
 * llm.c's comments: B batch, T sequence, C channels, NH heads, V vocabulary,
 * N = B*T rows. Backward functions accumulate (+=) into every gradient
 * they write, input and weight gradients alike: callers zero them first.
 * No backward output may alias dout or another output.
 *
 * Precision (set_precision, kernels/precision.h): every buffer is float. In
 * fp32 (the default) kernels compute as they always have. In bf16
 * (Megatron-LM's --bf16) every activation and activation gradient a kernel
 * writes (outputs, dinp, da/db, dlogits) is rounded to bfloat16 (to the
 * nearest, ties to even) as it is stored, after any +=: the buffers hold
 * bfloat16 values. Weight
 * gradients, LayerNorm's mean and rstd, attention's saved log-sum-exps,
 * the cross-entropy's probabilities and losses, and AdamW's master weights and
 * moments stay float32. Every matrix product reads its operands rounded to
 * bfloat16 (activations already are; attention's float probabilities and
 * their gradients are rounded as a product reads them, as FlashAttention
 * does),
 * as a bf16 GEMM with float32 accumulation. The weights the kernels read
 * are the caller's to round (round_copy of the master weights). In tf32
 * every matrix product reads its operands with 10 mantissa bits (the TF32
 * tensor cores'); all else is fp32. */
#ifndef WP_KERNELS_KERNELS_H
#define WP_KERNELS_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a matmul's weight keeps its dimensions. */
enum wp_weight_layout {
    WP_WEIGHT_IN_OUT, /* (C, OC): Hugging Face Conv1D, out = inp @ W */
    WP_WEIGHT_OUT_IN  /* (OC, C): tied LM head on wte, out = inp @ W^T */
};

/* Causal attention goes by blocks of this many query rows, each against
 * the keys up to its last row only (both backends): about half the T x T
 * work of full products, the entries past the diagonal never computed, and
 * one block's scores in memory at a time. */
#define WP_ATTENTION_ROW_BLOCK 64

struct wp_kernel_ops {
    const char *name;

    /* memory of the backend */
    void *(*alloc)(size_t bytes);                 /* zeroed; NULL on failure */
    void (*release)(void *p);
    void (*to_device)(void *dst, const void *host_src, size_t bytes);
    void (*to_host)(void *host_dst, const void *src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    void (*synchronize)(void);

    /* every kernel of the backend computes in p from now on (fp32 until set) */
    void (*set_precision)(enum wp_precision p);
    enum wp_precision (*get_precision)(void);
    /* dst (n) = src stored as the precision stores activations: rounded to
     * bfloat16 in bf16, copied otherwise; dst may be src */
    void (*round_copy)(float *dst, const float *src, size_t n);
    /* bfloat16 bits of n floats (rounded to nearest even) and back (exact):
     * messages of bf16 values cross the wire in half the bytes */
    void (*to_bf16)(uint16_t *dst, const float *src, size_t n);
    void (*from_bf16)(float *dst, const uint16_t *src, size_t n);

    /* out (B,T,C) = wte[inp] + wpe[t]; inp (B,T) token ids, wte (V,C), wpe (maxT,C) */
    void (*encoder_forward)(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C);
    /* dwte, dwpe += from dout (B,T,C) */
    void (*encoder_backward)(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C);

    /* out (N,C) = (inp - mean) * rstd * weight + bias, eps 1e-5; mean, rstd (N) saved */
    void (*layernorm_forward)(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                              const float *bias, int N, int C);
    /* dinp (N,C) +=, dweight, dbias (C) +=; dinp may be NULL (skip the input
     * gradient) and dweight/dbias may both be NULL (skip the weight gradients):
     * zero-bubble schedules run the two halves apart, with the same results */
    void (*layernorm_backward)(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C);

    /* out (N,OC) = inp (N,C) x weight + bias (OC; may be NULL) */
    void (*matmul_forward)(float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                           int OC, enum wp_weight_layout layout);
    /* dinp (N,C) +=, dweight (weight's layout) +=, dbias (OC) +=; any of the
     * three may be NULL to skip it (the B and W halves of a split backward) */
    void (*matmul_backward)(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC, enum wp_weight_layout layout);

    /* causal multi-head self-attention by blocks of WP_ATTENTION_ROW_BLOCK
     * query rows (FlashAttention's algorithm): inp (B,T,3C) is q,k,v; out
     * (B,T,C); lse (B,NH,T) saved, each row's log-sum-exp of its scaled
     * scores. The scores and probabilities of one block of rows live in the
     * kernel's own scratch; no T x T matrix is kept */
    void (*attention_forward)(float *out, float *lse, const float *inp, int B, int T, int C, int NH);
    /* dinp (B,T,3C) +=, from dout (B,T,C) and the forward's inp and lse (the
     * block's probabilities made again) */
    void (*attention_backward)(float *dinp, const float *dout, const float *inp, const float *lse, int B, int T,
                               int C, int NH);

    /* GELU, tanh approximation, elementwise over n */
    void (*gelu_forward)(float *out, const float *inp, size_t n);
    void (*gelu_backward)(float *dinp, const float *inp, const float *dout, size_t n); /* dinp += */

    /* out = a + b over n; backward: da += dout, db += dout */
    void (*residual_forward)(float *out, const float *a, const float *b, size_t n);
    void (*residual_backward)(float *da, float *db, const float *dout, size_t n);

    /* probs (N,V) = softmax(logits); losses (N) = -log probs[target] */
    void (*crossentropy_forward)(float *losses, float *probs, const float *logits, const int *targets, int N,
                                 int V);
    /* dlogits (N,V) += (probs - onehot(target)) * dloss, one dloss for every row
     * (1 / tokens of the global batch for a mean loss) */
    void (*crossentropy_backward)(float *dlogits, const float *probs, const int *targets, float dloss, int N,
                                  int V);

    /* AdamW with bias correction (step t from 1); decoupled weight decay */
    void (*adamw_update)(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t);

    /* dst += src; x *= s; sum of squares into *out (host) */
    void (*accumulate)(float *dst, const float *src, size_t n);
    void (*scale)(float *x, float s, size_t n);
    void (*sum_squares)(double *host_out, const float *x, size_t n);
    /* dst[r * dst_ld + c] = src[r * src_ld + c] for r < rows, c < cols: a
     * block of columns between row-major matrices (tensor parallelism's
     * column slices and gathers) */
    void (*copy_block)(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols);
};

extern const struct wp_kernel_ops wp_kernels_cpu;
#ifdef WP_HAVE_CUDA
extern const struct wp_kernel_ops wp_kernels_cuda;
#endif

#ifdef __cplusplus
}
#endif

#endif
