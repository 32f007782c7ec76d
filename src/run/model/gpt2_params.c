/* GPT-2 tensor table, stage layouts and deterministic initialisation. */
#include "run/model/gpt2_params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/rng.h"

static const char *const block_suffix[WP_BLOCK_TENSORS] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
    "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
    "mlp.c_proj.weight", "mlp.c_proj.bias"};

static void set_shape(struct wp_tensor_desc *d, int rows, int cols)
{
    d->ndim = cols ? 2 : 1;
    d->shape[0] = rows;
    d->shape[1] = cols;
    d->numel = (size_t)rows * (size_t)(cols ? cols : 1);
}

void wp_gpt2_tensor_desc(const struct wp_gpt2_config *g, int i, struct wp_tensor_desc *d)
{
    int C = g->channels, L = g->layers;
    memset(d, 0, sizeof *d);
    d->block = -1;
    if (i == 0) {
        d->role = WP_T_WTE;
        snprintf(d->name, sizeof d->name, "transformer.wte.weight");
        set_shape(d, g->vocabulary, C);
    } else if (i == 1) {
        d->role = WP_T_WPE;
        snprintf(d->name, sizeof d->name, "transformer.wpe.weight");
        set_shape(d, g->max_positions, C);
    } else if (i >= 2 + WP_BLOCK_TENSORS * L) {
        d->role = (enum wp_tensor_role)(WP_T_LNFW + (i - 2 - WP_BLOCK_TENSORS * L));
        snprintf(d->name, sizeof d->name, "transformer.ln_f.%s", d->role == WP_T_LNFW ? "weight" : "bias");
        set_shape(d, C, 0);
    } else {
        int k = (i - 2) % WP_BLOCK_TENSORS;
        d->block = (i - 2) / WP_BLOCK_TENSORS;
        d->role = (enum wp_tensor_role)(WP_T_LN1W + k);
        snprintf(d->name, sizeof d->name, "transformer.h.%d.%s", d->block, block_suffix[k]);
        static const int rows_of[WP_BLOCK_TENSORS] = {1, 1, 1, 3, 1, 1, 1, 1, 1, 4, 4, 1};
        switch (d->role) {
        case WP_T_QKVW: set_shape(d, C, 3 * C); break;
        case WP_T_ATTPROJW: set_shape(d, C, C); break;
        case WP_T_FCW: set_shape(d, C, 4 * C); break;
        case WP_T_FCPROJW: set_shape(d, 4 * C, C); break;
        default: set_shape(d, rows_of[k] * C, 0); break;
        }
    }
}

/* How tensor i is cut (see wp_tp_shard): rows in rparts, this rank's ridx;
 * columns in `groups` equal groups (q, k, v) each cut in cparts, cidx. */
struct cut {
    int rparts, ridx, groups, cparts, cidx;
};

static struct cut cut_of(enum wp_tensor_role role, const struct wp_tp_shard *sh)
{
    struct cut c = {1, 0, 1, 1, 0};
    if (!sh)
        return c;
    switch (role) {
    case WP_T_QKVW: c = (struct cut){sh->p2, sh->j2, 3, sh->p1, sh->j1}; break;
    case WP_T_QKVB: c = (struct cut){1, 0, 3, sh->p1, sh->j1}; break;
    case WP_T_ATTPROJW: case WP_T_FCPROJW: c = (struct cut){sh->p1, sh->j1, 1, sh->p2, sh->j2}; break;
    case WP_T_ATTPROJB: case WP_T_FCPROJB: c = (struct cut){1, 0, 1, sh->p2, sh->j2}; break;
    case WP_T_FCW: c = (struct cut){sh->p2, sh->j2, 1, sh->p1, sh->j1}; break;
    case WP_T_FCB: c = (struct cut){1, 0, 1, sh->p1, sh->j1}; break;
    default: break;
    }
    return c;
}

size_t wp_gpt2_shard_numel(const struct wp_gpt2_config *g, int i, const struct wp_tp_shard *sh)
{
    struct wp_tensor_desc d;
    wp_gpt2_tensor_desc(g, i, &d);
    struct cut c = cut_of(d.role, sh);
    return d.numel / ((size_t)c.rparts * (size_t)c.cparts);
}

size_t wp_gpt2_shard_copy(const struct wp_gpt2_config *g, int i, const struct wp_tp_shard *sh, float *whole,
                          float *piece, int to_shard)
{
    struct wp_tensor_desc d;
    wp_gpt2_tensor_desc(g, i, &d);
    struct cut c = cut_of(d.role, sh);
    size_t rows = d.ndim == 2 ? (size_t)d.shape[0] : 1, cols = d.numel / rows;
    size_t lrows = rows / (size_t)c.rparts, gcols = cols / (size_t)c.groups, pcols = gcols / (size_t)c.cparts;
    size_t lcols = pcols * (size_t)c.groups;
    for (size_t r = 0; r < lrows; r++)
        for (int k = 0; k < c.groups; k++) {
            float *w = whole + ((size_t)c.ridx * lrows + r) * cols + (size_t)k * gcols + (size_t)c.cidx * pcols;
            float *p = piece + r * lcols + (size_t)k * pcols;
            memcpy(to_shard ? p : w, to_shard ? w : p, pcols * sizeof *p);
        }
    return lrows * lcols;
}

int wp_stage_layout_init(struct wp_stage_layout *l, const struct wp_gpt2_config *g, int first_block,
                         int end_block, const struct wp_tp_shard *shard, struct wp_err *err)
{
    memset(l, 0, sizeof *l);
    l->shard = shard ? *shard : (struct wp_tp_shard){1, 1, 0, 0};
    if (first_block < 0 || end_block > g->layers || first_block >= end_block)
        return wp_errorf(err, "stage blocks [%d, %d) outside the model's %d blocks", first_block, end_block,
                         g->layers);
    l->first_block = first_block;
    l->end_block = end_block;
    l->has_embedding = first_block == 0;
    l->has_head = end_block == g->layers;
    int n = wp_gpt2_tensor_count(g->layers);
    l->tensors = malloc((size_t)n * sizeof *l->tensors);
    l->offset = malloc((size_t)n * sizeof *l->offset);
    l->numel = malloc((size_t)n * sizeof *l->numel);
    if (!l->tensors || !l->offset || !l->numel) {
        wp_stage_layout_destroy(l);
        return wp_errorf(err, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(g, i, &d);
        int held = d.block >= first_block && d.block < end_block;
        held |= d.role == WP_T_WTE && (l->has_embedding || l->has_head);
        held |= d.role == WP_T_WPE && l->has_embedding;
        held |= (d.role == WP_T_LNFW || d.role == WP_T_LNFB) && l->has_head;
        if (!held)
            continue;
        l->tensors[l->ntensors] = i;
        l->numel[l->ntensors] = wp_gpt2_shard_numel(g, i, &l->shard);
        l->offset[l->ntensors] = l->total;
        l->total += l->numel[l->ntensors++];
    }
    return 0;
}

void wp_stage_layout_destroy(struct wp_stage_layout *l)
{
    free(l->tensors);
    free(l->offset);
    free(l->numel);
    memset(l, 0, sizeof *l);
}

long wp_stage_layout_find(const struct wp_stage_layout *l, int tensor)
{
    for (int i = 0; i < l->ntensors; i++)
        if (l->tensors[i] == tensor)
            return (long)l->offset[i];
    return -1;
}

int wp_stage_params_init(const struct wp_stage_layout *l, const struct wp_gpt2_config *g, unsigned long long seed,
                         float *host)
{
    double residual_std = 0.02 / sqrt(2.0 * g->layers);
    size_t most = 0;
    for (int i = 0; i < l->ntensors; i++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(g, l->tensors[i], &d);
        most = l->numel[i] < d.numel && d.numel > most ? d.numel : most;
    }
    float *whole = most ? malloc(most * sizeof *whole) : NULL; /* a sharded tensor, made whole first */
    if (most && !whole)
        return -1;
    for (int i = 0; i < l->ntensors; i++) {
        struct wp_tensor_desc d;
        wp_gpt2_tensor_desc(g, l->tensors[i], &d);
        int cut = l->numel[i] < d.numel;
        float *p = cut ? whole : host + l->offset[i];
        struct wp_rng rng;
        wp_rng_seed(&rng, seed, (unsigned long long)l->tensors[i]);
        switch (d.role) {
        case WP_T_LN1W: case WP_T_LN2W: case WP_T_LNFW:
            for (size_t k = 0; k < d.numel; k++)
                p[k] = 1.0f;
            break;
        case WP_T_LN1B: case WP_T_LN2B: case WP_T_LNFB: case WP_T_QKVB: case WP_T_ATTPROJB:
        case WP_T_FCB: case WP_T_FCPROJB:
            memset(p, 0, d.numel * sizeof *p);
            break;
        case WP_T_ATTPROJW: case WP_T_FCPROJW:
            for (size_t k = 0; k < d.numel; k++)
                p[k] = (float)(residual_std * wp_rng_normal(&rng));
            break;
        default:
            for (size_t k = 0; k < d.numel; k++)
                p[k] = (float)(0.02 * wp_rng_normal(&rng));
            break;
        }
        if (cut)
            wp_gpt2_shard_copy(g, l->tensors[i], &l->shard, whole, host + l->offset[i], 1);
    }
    free(whole);
    return 0;
}
