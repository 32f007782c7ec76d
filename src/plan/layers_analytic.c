/* Analytic layer tables for GPT-2/GPT-3-style models (see layers.h). */
#include <stdio.h>
#include <string.h>

#include "plan/layers.h"

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

/* n parameters of pb bytes with their gradients and AdamW: in float32 as
 * they are; 16-bit parameters in Megatron-LM's mixed precision, float32
 * gradients (accumulated and summed in float32), float32 master weights
 * beside the moments (18 bytes a parameter, megatron_memory.h). */
static void set_state(struct wp_layer *l, double n, double pb)
{
    l->parameter_bytes = n * pb;
    l->gradient_bytes = pb < 4 ? 4 * n : 0;
    l->optimizer_bytes = wp_adam_state_bytes_fp32(4 * n) + (pb < 4 ? 4 * n : 0);
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
    if (m->act_bytes < 0 || m->param_bytes < 0)
        return wp_errorf(err, "GPT shape: bytes per element must not be negative");
    double ab = m->act_bytes > 0 ? m->act_bytes : 4.0;
    double pb = m->param_bytes > 0 ? m->param_bytes : 4.0;
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
             "analytic GPT: L=%d C=%d heads=%d T=%d V=%d b=%d, %g bytes/activation, %g bytes/parameter%s, "
             "%.6g FLOP/s sustained",
             m->layers, m->channels, m->heads, m->seq_len, m->vocab, m->micro_batch, ab, pb,
             pb < 4 ? " (float32 gradients and master weights)" : "", flops_per_s);
    return 0;
fail:
    wp_layer_table_destroy(t);
    return -1;
}
