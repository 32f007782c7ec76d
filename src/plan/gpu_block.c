/* A GPT model's layers kernel by kernel on the GPU model (see gpu_block.h). */
#include <string.h>

#include "plan/gpu_block.h"

/* Y (m x n) = X (m x k) W (k x n), `batch` times: its forward into f, its
 * backward (dX = dY W^T: m x k x n; dW = X^T dY: k x n x m) into b. */
static void product(const struct wp_gpu_spec *g, enum wp_precision p, double batch, double m, double n, double k,
                    struct wp_gpu_pass *f, struct wp_gpu_pass *b)
{
    f->matmul_s += wp_gpu_gemm_s(g, batch, m, n, k, p);
    b->matmul_s += wp_gpu_gemm_s(g, batch, m, k, n, p) + wp_gpu_gemm_s(g, batch, k, n, m, p);
}

/* The attention core: into core (its forward) and b (its backward). */
static int attention_core(const struct wp_gpu_spec *g, const struct wp_gpu_block *blk, struct wp_gpu_pass *core,
                          struct wp_gpu_pass *b)
{
    double e = wp_precision_bytes(blk->precision).activation, s = blk->seq_len, t = blk->tensor;
    double d = (double)blk->channels / blk->heads, heads = blk->rows / s * blk->heads / t;
    double scores = heads * s * s, context = blk->rows * blk->channels / t;
    if (blk->flash) {
        double f = wp_gpu_flash_forward_s(g, heads, blk->seq_len, d), bw = wp_gpu_flash_backward_s(g, heads, blk->seq_len, d);
        if (f < 0 || bw < 0)
            return -1;
        core->matmul_s += f;
        b->matmul_s += bw;
    } else {
        product(g, blk->precision, heads, s, s, d, core, b); /* scores Q K^T */
        product(g, blk->precision, heads, s, d, s, core, b); /* context P V */
        core->memory_s += wp_gpu_memory_s(g, 2 * e * scores) + wp_gpu_memory_s(g, (2 * e + 1) * scores);
        b->memory_s += wp_gpu_memory_s(g, 3 * e * scores) + wp_gpu_memory_s(g, (2 * e + 1) * scores);
    }
    /* the context back to (tokens, channels) */
    core->memory_s += wp_gpu_memory_s(g, 2 * e * context);
    b->memory_s += wp_gpu_memory_s(g, 2 * e * context);
    return 0;
}

int wp_gpu_block_times(const struct wp_gpu_spec *g, const struct wp_gpu_block *blk, struct wp_gpu_layer_times *out)
{
    memset(out, 0, sizeof *out);
    double e = wp_precision_bytes(blk->precision).activation, N = blk->rows, h = blk->channels, t = blk->tensor;
    double stream = N * h / (blk->sequence_parallel ? t : 1), hidden = 4 * N * h / t;
    struct wp_gpu_pass *f = &out->forward, *b = &out->backward, core = {0, 0};
    if (attention_core(g, blk, &core, b))
        return -1;
    f->matmul_s += core.matmul_s;
    f->memory_s += core.memory_s;
    out->core_forward_s = core.matmul_s + core.memory_s;
    product(g, blk->precision, 1, N, 3 * h / t, h, f, b);     /* QKV */
    product(g, blk->precision, 1, N, h, h / t, f, b);         /* output projection */
    product(g, blk->precision, 1, N, 4 * h / t, h, f, b);     /* up-projection */
    product(g, blk->precision, 1, N, h, 4 * h / t, f, b);     /* down-projection */
    for (int i = 0; i < 2; i++) {                /* each half: LayerNorm, bias+dropout+add */
        f->memory_s += wp_gpu_memory_s(g, 2 * e * stream) + wp_gpu_memory_s(g, (3 * e + 1) * stream);
        b->memory_s += wp_gpu_memory_s(g, 5 * e * stream) + wp_gpu_memory_s(g, (3 * e + 1) * stream) +
                       wp_gpu_memory_s(g, 3 * e * stream);
    }
    f->memory_s += wp_gpu_memory_s(g, 2 * e * hidden); /* bias + GeLU */
    b->memory_s += wp_gpu_memory_s(g, 3 * e * hidden);
    double params = (12 * h * h + 7 * h) / t + 6 * h;  /* split weights and biases; LayerNorms, replicated biases */
    b->memory_s += wp_gpu_memory_s(g, 3 * e * params);
    return 0;
}

void wp_gpu_head_times(const struct wp_gpu_spec *g, const struct wp_gpu_block *blk, int vocab, struct wp_gpu_layer_times *out)
{
    memset(out, 0, sizeof *out);
    double e = wp_precision_bytes(blk->precision).activation, N = blk->rows, h = blk->channels, t = blk->tensor;
    double V = vocab / t;
    struct wp_gpu_pass *f = &out->forward, *b = &out->backward;
    f->memory_s += wp_gpu_memory_s(g, 2 * e * N * h); /* final LayerNorm */
    b->memory_s += wp_gpu_memory_s(g, 5 * e * N * h);
    product(g, blk->precision, 1, N, V, h, f, b);                   /* logits with the tied embedding */
    /* cross-entropy in float32: the cast (e + 4), max (4), subtracting it
     * (8), exp (8), the sum (4), the division kept for the backward (8);
     * backward: scaling the kept softmax (8), the cast back (4 + e) */
    f->memory_s += wp_gpu_memory_s(g, (e + 36) * N * V);
    b->memory_s += wp_gpu_memory_s(g, (e + 12) * N * V);
    b->memory_s += wp_gpu_memory_s(g, 3 * e * V * h); /* accumulating the embedding's gradient */
}

void wp_gpu_embedding_times(const struct wp_gpu_spec *g, const struct wp_gpu_block *blk, int vocab, int tensor,
                            struct wp_gpu_layer_times *out)
{
    memset(out, 0, sizeof *out);
    double e = wp_precision_bytes(blk->precision).activation, N = blk->rows, h = blk->channels;
    double shard = (double)vocab / tensor * h;
    /* lookup (read, write), position embedding added (3e), dropout (2e + 1) */
    out->forward.memory_s = wp_gpu_memory_s(g, (7 * e + 1) * N * h);
    /* dropout's and the add's gradients, the dense gradient of the shard
     * written and the rows added in, then accumulated */
    out->backward.memory_s = wp_gpu_memory_s(g, (5 * e + 1) * N * h) + wp_gpu_memory_s(g, e * shard + 3 * e * N * h) +
                             wp_gpu_memory_s(g, 3 * e * (shard + (double)blk->seq_len * h));
}

double wp_gpu_optimizer_s(const struct wp_gpu_spec *g, double params)
{
    return wp_gpu_memory_s(g, WP_GPU_ADAM_BYTES_PER_PARAM * params);
}
