/* Megatron-LM's memory accounting, as closed forms the planner's memory
 * model is checked against:
 *  - the activations one transformer layer keeps for its backward,
 *    Korthikanti et al., "Reducing Activation Recomputation in Large
 *    Transformer Models" (arXiv:2205.05198, MLSys 2023), table 2: s b h
 *    (34 + 5 a s / h) bytes at 2-byte activations and 1-byte dropout masks,
 *    split by tensor parallelism, sequence parallelism and selective or
 *    full recomputation;
 *  - the bytes a parameter costs with the optimizer state: Megatron Core's
 *    developer guide, "Distributed Optimizer" (float16 param and grads 20,
 *    4 + 16/d distributed; float16 param, fp32 grads 18, 6 + 12/d; fp32
 *    param and grads 16, 8 + 8/d, d the data-parallel size). */
#ifndef WP_PLAN_MEGATRON_MEMORY_H
#define WP_PLAN_MEGATRON_MEMORY_H

/* What a layer recomputes before its backward (Megatron-LM's
 * --recompute-granularity): nothing, the attention core (softmax, its
 * dropout and the products with it: "selective"), or the whole layer from
 * its input ("full"). */
enum wp_recompute_granularity { WP_GRANULARITY_NONE, WP_GRANULARITY_SELECTIVE, WP_GRANULARITY_FULL };

/* "none", "selective", "full". */
const char *wp_recompute_granularity_name(enum wp_recompute_granularity g);

/* Bytes one transformer layer keeps for its backward (table 2): sequence
 * length s, micro-batch b, hidden size h, heads a, tensor-parallel size t,
 * sequence parallelism on or off, recomputation g:
 *   none          s b h (10 + 24/t + 5 a s / (h t))   (sequence parallel: s b h (34 + 5 a s / h) / t)
 *   selective     s b h (10 + 24/t)                   (sequence parallel: 34 s b h / t)
 *   full          2 s b h                             (the layer's input; sequence parallel: 2 s b h / t) */
double wp_korthikanti_layer_bytes(double s, double b, double h, double a, int t, int sequence_parallel,
                                  enum wp_recompute_granularity g);

/* Bytes per parameter of the weights, their gradients and Adam's state
 * (fp32 master weights and moments), as Megatron-LM keeps them: params of
 * param_bytes (2: fp16/bf16, 4: fp32) and gradients of grad_bytes (2 or 4),
 * the optimizer state sharded over d data-parallel ranks when distributed
 * (else d is ignored). */
double wp_megatron_bytes_per_param(int param_bytes, int grad_bytes, int distributed, int d);

#endif
