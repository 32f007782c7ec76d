/* GPT-2's parameter tensors under Hugging Face GPT2LMHeadModel's names and
 * shapes (transformer.h.0.attn.c_attn.weight is [C, 3C], ...), and the
 * subset a pipeline stage holds, in one contiguous buffer with named views
 * (as llm.c keeps them). Initialisation is per tensor from the seed, so
 * every stage makes the same values whatever the partition. */
#ifndef WP_RUN_GPT2_PARAMS_H
#define WP_RUN_GPT2_PARAMS_H

#include <stddef.h>
#include "run/model/gpt2_config.h"

enum wp_tensor_role {
    WP_T_WTE, WP_T_WPE,
    WP_T_LN1W, WP_T_LN1B, WP_T_QKVW, WP_T_QKVB, WP_T_ATTPROJW, WP_T_ATTPROJB,
    WP_T_LN2W, WP_T_LN2B, WP_T_FCW, WP_T_FCB, WP_T_FCPROJW, WP_T_FCPROJB,
    WP_T_LNFW, WP_T_LNFB,
    WP_T_ROLE_COUNT
};
#define WP_BLOCK_TENSORS 12 /* LN1W .. FCPROJB */

struct wp_tensor_desc {
    char name[80];
    int ndim;
    int shape[2];
    size_t numel;
    int block;               /* -1 for embeddings and the final LayerNorm */
    enum wp_tensor_role role;
};

/* Index of a tensor in the model's list: wte, wpe, 12 per block, ln_f. */
static inline int wp_gpt2_tensor_index(int layers, int block, enum wp_tensor_role role)
{
    if (role == WP_T_WTE || role == WP_T_WPE)
        return (int)role;
    if (role == WP_T_LNFW || role == WP_T_LNFB)
        return 2 + WP_BLOCK_TENSORS * layers + (role - WP_T_LNFW);
    return 2 + WP_BLOCK_TENSORS * block + (role - WP_T_LN1W);
}
static inline int wp_gpt2_tensor_count(int layers) { return 4 + WP_BLOCK_TENSORS * layers; }

/* Describes tensor i of the model. */
void wp_gpt2_tensor_desc(const struct wp_gpt2_config *g, int i, struct wp_tensor_desc *d);

/* A rank's place in a tensor group of p1 x p2 ranks (plan/tp_block.h):
 * which piece of each block tensor it holds. Rank (j1, j2) holds
 *   c_attn.weight  rows j2 of p2; columns j1 of p1 within each of q, k, v
 *   c_attn.bias    j1 of p1 within each of q, k, v
 *   c_proj.weight  rows j1 of p1 (heads); columns j2 of p2   (attn and mlp)
 *   c_proj.bias    j2 of p2                                  (attn and mlp)
 *   c_fc.weight    rows j2 of p2; columns j1 of p1
 *   c_fc.bias      j1 of p1
 * and every other tensor whole. NULL or 1 x 1: whole tensors. */
struct wp_tp_shard {
    int p1, p2, j1, j2;
};

/* Copies tensor i's piece between the whole tensor (its Hugging Face
 * shape) and the shard: to_shard 1 reads whole and writes piece, 0 the
 * other way. Returns the piece's floats. */
size_t wp_gpt2_shard_copy(const struct wp_gpt2_config *g, int i, const struct wp_tp_shard *sh, float *whole,
                          float *piece, int to_shard);
/* Floats of tensor i's piece. */
size_t wp_gpt2_shard_numel(const struct wp_gpt2_config *g, int i, const struct wp_tp_shard *sh);

/* Which tensors a stage of blocks [first_block, end_block) holds: the
 * embeddings with the first block, ln_f and the tied wte with the last;
 * of each, the piece the stage's shard says. */
struct wp_stage_layout {
    int first_block, end_block;
    int has_embedding, has_head;
    struct wp_tp_shard shard;
    int ntensors;
    int *tensors;   /* global tensor indices, in model order */
    size_t *offset; /* per held tensor, in floats */
    size_t *numel;  /* per held tensor: floats of its piece */
    size_t total;   /* floats */
};

/* shard NULL: whole tensors. */
int wp_stage_layout_init(struct wp_stage_layout *l, const struct wp_gpt2_config *g, int first_block,
                         int end_block, const struct wp_tp_shard *shard, struct wp_err *err);
void wp_stage_layout_destroy(struct wp_stage_layout *l);
/* Offset (floats) of a global tensor in the stage's buffer, or -1. */
long wp_stage_layout_find(const struct wp_stage_layout *l, int tensor);

/* Fills host buffer (l->total floats) with GPT-2's initialisation: weights
 * N(0, 0.02), the projections into the residual stream N(0, 0.02/sqrt(2L)),
 * biases 0, LayerNorm weights 1; a shard gets its piece of the same
 * values (0 on success, -1 out of memory). */
int wp_stage_params_init(const struct wp_stage_layout *l, const struct wp_gpt2_config *g, unsigned long long seed,
                         float *host);

#endif
