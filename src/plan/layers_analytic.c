/* Analytic layer tables for GPT-2/GPT-3-style models (see layers.h). */
#include <stdio.h>
#include <string.h>

#include "plan/gpu_block.h"
#include "plan/layers.h"
#include "util/strutil.h"

double wp_gpt_block_forward_flops(const struct wp_gpt_shape *m)
{
    double b = m->micro_batch, T = m->seq_len, C = m->channels;
    return 2.0 * b * T * 12.0 * C * C + 2.0 * 2.0 * b * T * T * C;
}

double wp_gpt_block_params(const struct wp_gpt_shape *m)
{
    double C = m->channels;
    return 12.0 * C * C + 13.0 * C;
}

double wp_gpt_total_params(const struct wp_gpt_shape *m)
{
    double C = m->channels;
    return (double)m->vocab * C + (double)m->seq_len * C + m->layers * wp_gpt_block_params(m) + 2.0 * C;
}

/* n parameters with their gradients and AdamW in the precision's bytes:
 * in float32 as they are; bf16 parameters in Megatron-LM's mixed
 * precision, float32 gradients (accumulated and summed in float32), float32
 * master weights beside the moments (18 bytes a parameter,
 * megatron_memory.h). A gradient as big as its parameters is left 0 (the
 * table's "as the parameters"). */
static void set_state(struct wp_layer *l, double n, struct wp_precision_bytes pb)
{
    l->parameter_bytes = n * pb.parameter;
    l->gradient_bytes = pb.gradient != pb.parameter ? pb.gradient * n : 0;
    l->optimizer_bytes = wp_adam_state_bytes_fp32(4 * n) + (pb.optimizer > 8 ? (pb.optimizer - 8) * n : 0);
}

int wp_layer_table_gpt(struct wp_layer_table *t, const struct wp_gpt_shape *m, double flops_per_s,
                       struct wp_err *err)
{
    wp_layer_table_init(t);
    if (m->layers < 1 || m->channels < 1 || m->heads < 1 || m->seq_len < 1 || m->vocab < 1 ||
        m->micro_batch < 1)
        return wp_errorf(err, "GPT shape: layers, channels, heads, sequence, vocabulary and micro-batch "
                              "must be positive");
    if (m->channels % m->heads != 0)
        return wp_errorf(err, "GPT shape: %d heads do not divide %d channels", m->heads, m->channels);
    if (!(flops_per_s > 0))
        return wp_errorf(err, "GPT shape: sustained FLOP/s must be positive");
    if ((unsigned)m->precision >= WP_PRECISION_COUNT)
        return wp_errorf(err, "GPT shape: no precision %d", (int)m->precision);
    struct wp_precision_bytes pb = wp_precision_bytes(m->precision);
    double ab = pb.activation;
    double b = m->micro_batch, T = m->seq_len, C = m->channels, V = m->vocab;
    double boundary = b * T * C * ab;

    struct wp_layer l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "embedding");
    l.activation_bytes = boundary;
    set_state(&l, V * C + T * C, pb);
    if (wp_layer_table_append(t, &l, err))
        goto fail;

    double ff = wp_gpt_block_forward_flops(m);
    for (int i = 0; i < m->layers; i++) {
        memset(&l, 0, sizeof l);
        snprintf(l.name, sizeof l.name, "block%d", i);
        l.forward_s = ff / flops_per_s;
        l.backward_s = 2.0 * ff / flops_per_s;
        l.forward_flops = ff;
        l.block = (struct wp_layer_block){m->channels, m->heads, m->seq_len, ab};
        l.activation_bytes = boundary;
        set_state(&l, wp_gpt_block_params(m), pb);
        if (wp_layer_table_append(t, &l, err))
            goto fail;
    }

    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "head");
    double hf = 2.0 * b * T * C * V;
    l.forward_s = hf / flops_per_s;
    l.backward_s = 2.0 * hf / flops_per_s;
    l.forward_flops = hf;
    l.activation_bytes = 0;
    set_state(&l, 2.0 * C, pb); /* final LayerNorm; LM head tied to wte */
    if (wp_layer_table_append(t, &l, err))
        goto fail;

    snprintf(t->name, sizeof t->name, "gpt-L%d-C%d-T%d-V%d", m->layers, m->channels, m->seq_len, m->vocab);
    t->profile_batch = m->micro_batch;
    t->profile_batch_assumed = 0;
    t->nnodes = t->nlayers;
    snprintf(t->source, sizeof t->source,
             "analytic GPT: L=%d C=%d heads=%d T=%d V=%d b=%d, %s: %d bytes/activation, %d bytes/parameter%s, "
             "%.6g FLOP/s sustained",
             m->layers, m->channels, m->heads, m->seq_len, m->vocab, m->micro_batch, wp_precision_name(m->precision),
             pb.activation, pb.parameter, pb.parameter < 4 ? " (float32 gradients and master weights)" : "",
             flops_per_s);
    return 0;
fail:
    wp_layer_table_destroy(t);
    return -1;
}

/* Layer i of a GPT table timed on GPU g: its forward and backward at the
 * table's micro-batch, its optimizer step. */
static void time_layer(const struct wp_gpu_spec *g, const struct wp_gpt_shape *m, int flash, struct wp_layer *l, int i)
{
    double pb = wp_precision_bytes(m->precision).parameter;
    struct wp_gpu_block b = {(double)m->micro_batch * m->seq_len, m->seq_len, m->channels, m->heads, 1, 0, flash,
                             m->precision};
    struct wp_gpu_layer_times x;
    if (i == 0)
        wp_gpu_embedding_times(g, &b, m->vocab, 1, &x);
    else if (i > m->layers)
        wp_gpu_head_times(g, &b, m->vocab, &x);
    else
        wp_gpu_block_times(g, &b, &x);
    l->forward_s = x.forward.matmul_s + x.forward.memory_s;
    l->backward_s = x.backward.matmul_s + x.backward.memory_s;
    l->optimizer_s = wp_gpu_optimizer_s(g, l->parameter_bytes / pb);
}

int wp_layer_table_gpt_gpu(struct wp_layer_table *t, const struct wp_gpt_shape *m, const char *gpu, int flash,
                           struct wp_err *err)
{
    const struct wp_gpu_spec *g = wp_gpu_spec_find(gpu);
    if (!g) {
        char known[256];
        wp_gpu_spec_names(known, sizeof known);
        return wp_errorf(err, "no model of the GPU '%s' (known: %s)", gpu ? gpu : "", known);
    }
    if (flash && g->flash_forward_efficiency <= 0)
        return wp_errorf(err, "the %s has no FlashAttention kernel: model its attention unfused", g->name);
    if (flash && m->precision != WP_PRECISION_BF16)
        return wp_errorf(err, "FlashAttention runs on 16-bit operands: model %s attention unfused, or train in bf16",
                         wp_precision_name(m->precision));
    if (wp_layer_table_gpt(t, m, 1.0, err))
        return -1;
    for (int i = 0; i < t->nlayers; i++)
        time_layer(g, m, flash, &t->layers[i], i);
    wp_strlcpy(t->gpu, g->name, sizeof t->gpu);
    t->flash_attention = flash;
    t->precision = m->precision;
    snprintf(t->source, sizeof t->source,
             "modelled GPT: L=%d C=%d heads=%d T=%d V=%d b=%d, %s: %d bytes/activation, %d bytes/parameter; times "
             "from the per-operation model of the %s (spec sheet and microbenchmarks, not measured here), matmuls at "
             "%.4g TFLOP/s peak, attention %s",
             m->layers, m->channels, m->heads, m->seq_len, m->vocab, m->micro_batch, wp_precision_name(m->precision),
             wp_precision_bytes(m->precision).activation, wp_precision_bytes(m->precision).parameter, g->name,
             1e-12 * wp_gpu_matmul_peak(g, m->precision), flash ? "one FlashAttention kernel" : "unfused");
    return 0;
}
