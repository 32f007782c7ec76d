/* A GPT model's layers on one GPU, kernel by kernel, timed by the
 * per-operation GPU model (gpu_model.h): a transformer block as Megatron-LM
 * runs it on a GPU of a tensor-parallel group of t (column- then row-split
 * matrix products, the attention heads split over the group), the
 * vocabulary-parallel embedding and LM head with its cross-entropy, and
 * the mixed-precision Adam step. Communication is not here: the tensor
 * group's collectives are tp_block.h's, costed by the planner on the
 * cluster's links.
 *
 * The kernels are Megatron-LM's fused ones (apex's LayerNorm, bias+GeLU,
 * bias+dropout+residual add, the causal scale-mask-softmax), as in its
 * SC21 code and since; the attention core either unfused (two batched
 * products around the softmax and its dropout, what every Megatron-LM run
 * before FlashAttention did) or one FlashAttention kernel. Element counts
 * per GPU, e bytes per activation element, 1 byte per dropout-mask element,
 * N tokens, h channels, a heads, t the group:
 *   forward   LayerNorm 2e N h'; QKV (N x 3h/t x h); core; output
 *             projection (N x h x h/t); bias+dropout+add (3e+1) N h';
 *             LayerNorm; up-projection (N x 4h/t x h); bias+GeLU 2e 4N h/t;
 *             down-projection (N x h x 4h/t); bias+dropout+add
 *   core      scores (a/t x seqs batches of s x s x d); softmax 2e E;
 *             dropout (2e+1) E; context (s x d x s); its layout copy
 *             2e N h/t  (E = seqs a/t s^2; flash: one kernel)
 *   backward  two products per forward product (input and weight
 *             gradients); LayerNorm 5e, bias+dropout+add (3e+1), GeLU 3e 4N
 *             h/t, softmax 3e E, dropout (2e+1) E per element; the two
 *             residual joins summing gradients 3e N h' each; accumulating
 *             the weight gradients 3e bytes per local parameter
 *             (Megatron's main_grad add, or its fused float32 epilogue)
 * with h' = h, or h/t where sequence parallelism splits the LayerNorms and
 * dropouts over the group. */
#ifndef WP_PLAN_GPU_BLOCK_H
#define WP_PLAN_GPU_BLOCK_H

#include "plan/gpu_model.h"

/* One direction of a layer: its matrix products and fused attention
 * kernels, and its memory-bound kernels. */
struct wp_gpu_pass {
    double matmul_s;
    double memory_s;
};

struct wp_gpu_layer_times {
    struct wp_gpu_pass forward, backward;
    double core_forward_s; /* the attention core's forward: what selective recomputation repeats */
};

struct wp_gpu_block {
    double rows;           /* tokens of the slice: sequences x seq_len */
    int seq_len, channels, heads;
    int tensor;            /* GPUs of the tensor group (Megatron's 1D split; a 2D group is costed as
                            * one of the same size) */
    int sequence_parallel; /* LayerNorms and dropouts split over the group */
    int flash;             /* the attention core as one FlashAttention kernel */
    enum wp_precision precision; /* the matmuls' rate and the elements' bytes (bf16: 2) */
};

/* A block's times; -1 when flash is asked of a GPU without the kernel. */
int wp_gpu_block_times(const struct wp_gpu_spec *g, const struct wp_gpu_block *b, struct wp_gpu_layer_times *out);

/* The LM head on the last stage (final LayerNorm, logits N x V/t x h,
 * Megatron's vocabulary-parallel cross-entropy in float32) and the
 * vocabulary-parallel embedding on the first (lookup, position embedding,
 * dropout; backward the dense gradient of its shard of the table). The
 * block's tensor, sequence_parallel and flash are not used. */
void wp_gpu_head_times(const struct wp_gpu_spec *g, const struct wp_gpu_block *b, int vocab, struct wp_gpu_layer_times *out);
void wp_gpu_embedding_times(const struct wp_gpu_spec *g, const struct wp_gpu_block *b, int vocab, int tensor,
                            struct wp_gpu_layer_times *out);

/* Bytes one parameter moves in Megatron-LM's mixed-precision Adam step:
 * the 16-bit gradient copied to float32 (2 + 4), unscaled and checked for
 * infinities (8), its norm for clipping (4), Adam reading the master
 * weight, both moments and the gradient and writing the three back
 * (16 + 12), the master weight copied to the 16-bit one (4 + 2). */
#define WP_GPU_ADAM_BYTES_PER_PARAM 52.0
/* Seconds of the optimizer step over `params` parameters on one GPU. */
double wp_gpu_optimizer_s(const struct wp_gpu_spec *g, double params);

#endif
