/* One GPT-2 block on a tensor group of p1 x p2 ranks (AutoDDL's mesh
 * p0 x p1 x p2 with p0 the stage's data-parallel replicas): the collectives
 * the runtime makes (run/gpt2_stage.c) and the sizes it keeps, so that the
 * planner, the simulator and the byte-count test cost one dataflow.
 *
 * Rank (j1, j2) of the group; N = B T rows of the replica's slice, C
 * channels, NH heads; p1 | NH, p2 | C, p2 | B. The residual stream x
 * (N, C) is replicated over the group; LayerNorms run on it on every rank.
 *   QKV (and the MLP's up-projection) on the mesh (p0, p1, p2): input
 *     (S0:p0, B:p1, S1:p2), the columns j2 of the replicated ln1, a free
 *     slice; weight (S0:p2 rows, S1:p1 columns: heads j1 of q, k and v);
 *     output (N, 3C/p1) a partial sum over axis 2, summed by a
 *     ReduceScatter over axis 2 along the sequences ("rows": S0:p0 p2,
 *     S1:p1). Attention then runs on B/p2 sequences x NH/p1 heads with no
 *     communication (GELU likewise on its (N/p2, 4C/p1) piece).
 *   Output projection (and the MLP's down-projection) on the transposed
 *     mesh (p0, p2, p1): an AllGather over axis 2 along the sequences gives
 *     (N, C/p1) (S0:p0, B:p2, S1:p1); weight rows j1 (heads), columns j2;
 *     output (N, C/p2) a partial sum over axis 1, summed by an AllReduce
 *     over axis 1, then an AllGather over axis 2 along the columns makes
 *     the replicated (N, C) the residual add needs (the same bytes as a
 *     ReduceScatter over axis 1 and an AllGather over the whole group).
 *   Backward: every collective's dual of the same size (AllGather <->
 *     ReduceScatter; the AllReduce's dual is the identity, the replicated
 *     input's dual an AllReduce over axis 1 and an AllGather over axis 2 of
 *     the columns). With p2 = 1 this is Megatron-LM's column/row split: two
 *     AllReduces of (N, C) forward and two backward.
 * Biases: QKV's and the up-projection's split by axis 1 (added before
 * the ReduceScatter by j2 = 0), the two projections' split by axis 2
 * (added before the AllReduce by j1 = 0); LayerNorms replicated. Embeddings and the LM
 * head are replicated over the group (computed on every rank). */
#ifndef WP_PLAN_TP_BLOCK_H
#define WP_PLAN_TP_BLOCK_H

#include <stddef.h>

/* Collective kinds and the axis they run on, as the runtime counts them. */
enum wp_tp_call {
    WP_TP_REDUCE_SCATTER_ROWS, /* over axis 2 */
    WP_TP_ALL_GATHER_ROWS,     /* over axis 2 */
    WP_TP_ALL_GATHER_COLS,     /* over axis 2 */
    WP_TP_ALL_REDUCE,          /* over axis 1 */
    WP_TP_CALL_COUNT
};

/* "reducescatter", "allgather", "allgather_cols", "allreduce". */
const char *wp_tp_call_name(enum wp_tp_call c);

struct wp_tp_block_volume {
    int calls[WP_TP_CALL_COUNT];            /* per block and slice, forward + backward */
    double elements[WP_TP_CALL_COUNT];      /* the full vector of each call, summed: AllGather's
                                             * output, ReduceScatter's input, AllReduce's vector */
    double sent_elements[WP_TP_CALL_COUNT]; /* what each rank sends by a ring (collective_cost.h) */
    int group[WP_TP_CALL_COUNT];            /* devices in each kind's group (p2 or p1) */
};

/* One block's volumes for a slice of n_rows = B T rows. */
void wp_tp_block_volume(int p1, int p2, double n_rows, int channels, struct wp_tp_block_volume *v);

/* Floats of one block's parameters on a rank of the group (its shards and
 * the replicated tensors). */
size_t wp_tp_block_param_floats(int p1, int p2, int channels);

/* 0 when the group p1 x p2 can split a model of `heads` heads and `channels`
 * channels with slices of `seqs` sequences; else -1 with why in why (64+). */
int wp_tp_group_check(int p1, int p2, int heads, int channels, int seqs, char *why, size_t why_len);

#endif
