/* Megatron-LM's memory accounting as closed forms (megatron_memory.h). */
#include "plan/megatron_memory.h"

const char *wp_recompute_granularity_name(enum wp_recompute_granularity g)
{
    return g == WP_GRANULARITY_FULL ? "full" : g == WP_GRANULARITY_SELECTIVE ? "selective" : "none";
}

double wp_korthikanti_layer_bytes(double s, double b, double h, double a, int t, int sequence_parallel,
                                  enum wp_recompute_granularity g)
{
    double sbh = s * b * h, tp = t > 0 ? t : 1;
    if (g == WP_GRANULARITY_FULL)
        return 2 * sbh / (sequence_parallel ? tp : 1);
    double attention_core = g == WP_GRANULARITY_SELECTIVE ? 0 : 5 * a * s / h; /* scores, softmax, dropout */
    if (sequence_parallel)
        return sbh * (34 + attention_core) / tp;
    return sbh * (10 + 24 / tp + attention_core / tp);
}

double wp_megatron_bytes_per_param(int param_bytes, int grad_bytes, int distributed, int d)
{
    /* what every rank keeps (the model's params and grads) and what the
     * distributed optimizer shards: Adam's two fp32 moments, the fp32 master
     * weights when the params are 16-bit, and an fp32 copy of 16-bit grads */
    double kept = param_bytes + grad_bytes;
    double sharded = 8 + (param_bytes < 4 ? 4 : 0) + (grad_bytes < 4 ? 4 : 0);
    return kept + (distributed && d > 0 ? sharded / d : sharded);
}
