/* Megatron-LM's SC21 table 1 runs as plans (see megatron.h). */
#include "plan/megatron.h"
#include "plan/plan_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct wp_megatron_run wp_megatron_runs[] = {
    {"1.7B", 24, 2304, 24, 1, 1, 16, 512, 32, 0, 1, 1, 0, 137},
    {"3.6B", 30, 3072, 32, 2, 1, 16, 512, 64, 0, 1, 1, 0, 138},
    {"7.5B", 36, 4096, 32, 4, 1, 16, 512, 128, 0, 1, 1, 0, 142},
    {"18B", 40, 6144, 48, 8, 1, 8, 1024, 256, 0, 1, 1, 0, 135},
    {"39B", 48, 8192, 64, 8, 2, 4, 1536, 512, 0, 0, 1, 0, 138},
    {"76B", 60, 10240, 80, 8, 4, 2, 1792, 1024, 5, 0, 1, 0, 140},
    {"145B", 80, 12288, 96, 8, 8, 2, 2304, 1536, 5, 0, 1, 0, 148},
    {"310B", 96, 16384, 128, 8, 16, 1, 2160, 1920, 3, 0, 1, 0, 155},
    {"530B", 105, 20480, 128, 8, 35, 1, 2520, 2520, 1, 0, 1, 0, 163},
    {"1T", 128, 25600, 160, 8, 64, 1, 3072, 3072, 0, 0, 1, 0, 163},
};
const struct wp_megatron_run wp_megatron_gpt3_h100 = {"GPT-3 175B", 96, 12288, 96, 8, 16, 1, 1536, 4096, 0, 0, 0, 1, 0};
const int wp_megatron_nruns = sizeof wp_megatron_runs / sizeof wp_megatron_runs[0];

const struct wp_megatron_run *wp_megatron_find(const char *name)
{
    for (int i = 0; i < wp_megatron_nruns; i++)
        if (strcmp(wp_megatron_runs[i].name, name) == 0)
            return &wp_megatron_runs[i];
    return NULL;
}

double wp_megatron_flops(const struct wp_megatron_run *r)
{
    double B = r->global_batch, s = WP_MEGATRON_SEQ_LEN, l = r->layers, h = r->hidden, V = WP_MEGATRON_VOCAB;
    /* forward, backward (twice) and, recomputing, the forward again; the logits once each way */
    return (3 + r->recompute) * 24.0 * B * s * l * h * h * (1 + s / (6 * h)) + 6.0 * B * s * h * V;
}

int wp_megatron_table(struct wp_layer_table *t, const struct wp_megatron_run *r, const char *gpu, double flops_per_s,
                      struct wp_err *err)
{
    struct wp_gpt_shape g = {r->layers, r->hidden, r->heads, WP_MEGATRON_SEQ_LEN, WP_MEGATRON_VOCAB,
                             r->micro_batch, WP_PRECISION_BF16};
    if (gpu ? wp_layer_table_gpt_gpu(t, &g, gpu, r->flash, err) : wp_layer_table_gpt(t, &g, flops_per_s, err))
        return -1;
    t->layers[0].vocab_parallel = t->layers[t->nlayers - 1].vocab_parallel = 1; /* embedding, head */
    for (int i = 0; i < t->nlayers; i++) { /* float16 gradients; the optimizer's float32 copy of them */
        struct wp_layer *l = &t->layers[i];
        l->gradient_bytes = l->parameter_bytes;
        l->optimizer_bytes = 8.0 * l->parameter_bytes;
    }
    snprintf(t->name, sizeof t->name, "megatron-%s", r->name);
    return 0;
}

int wp_megatron_plan(struct wp_plan_model *m, const struct wp_megatron_run *r, struct wp_plan *p, struct wp_err *err)
{
    int S = r->pp, per_stage = r->layers / S, dp = r->gpus / (r->tp * r->pp);
    int v = r->layers_per_chunk ? per_stage / r->layers_per_chunk : 1;
    if (r->layers % S || (r->layers_per_chunk && per_stage % r->layers_per_chunk) || dp * r->tp * r->pp != r->gpus)
        return wp_errorf(err, "Megatron run %s: %d layers, %d GPUs do not split as TP %d x PP %d", r->name, r->layers,
                         r->gpus, r->tp, r->pp);
    struct wp_plan_point pt = {{r->tp, 1}, r->micro_batch, 0}; /* SC21 ran before sequence parallelism */
    m->even_slices = 1;
    m->recompute = r->recompute ? WP_RECOMPUTE_ALWAYS : WP_RECOMPUTE_NEVER;
    m->grad_overlap = r->torch_ddp;
    if (wp_plan_model_set_point(m, &pt, err))
        return -1;
    int V = v * S, *counts = calloc((size_t)V, sizeof *counts), *reps = calloc((size_t)S, sizeof *reps);
    if (!counts || !reps) {
        free(counts);
        free(reps);
        return wp_errorf(err, "out of memory");
    }
    /* PP stages first, then (interleaved) their chunks of layers_per_chunk
     * blocks; the embedding rides with the first, the head with the last */
    for (int s = 0; s < S; s++) {
        counts[s] = per_stage + (s == 0) + (s == S - 1);
        reps[s] = dp;
    }
    wp_plan_init(p);
    int rc = wp_plan_fixed(m, S, counts, reps, p, err);
    if (rc == 0 && v > 1) {
        for (int j = 0; j < V; j++)
            counts[j] = r->layers_per_chunk + (j == 0) + (j == V - 1);
        struct wp_plan base = *p;
        wp_plan_init(p);
        rc = wp_plan_interleave(m, &base, v, counts, p, err);
        wp_plan_destroy(&base);
    }
    free(counts);
    free(reps);
    return rc;
}
