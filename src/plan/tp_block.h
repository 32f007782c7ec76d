/* One GPT-2 block on a tensor group of p1 x p2 ranks (AutoDDL's mesh
 * p0 x p1 x p2 with p0 the stage's data-parallel replicas): the collectives
 * the runtime makes (run/model/gpt2_stage.c) and the sizes it keeps, so that the
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

#include "topo/collective_cost.h"

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
/* The forward's part of them alone (what a stage that recomputes makes
 * again before each backward). */
void wp_tp_block_forward_volume(int p1, int p2, double n_rows, int channels, struct wp_tp_block_volume *v);

/* Floats of one block's parameters on a rank of the group (its shards and
 * the replicated tensors). */
size_t wp_tp_block_param_floats(int p1, int p2, int channels);

/* Seconds of one block's collectives, forward and backward together, for a
 * slice of n_rows = B T rows of element_bytes each: every call of
 * wp_tp_block_volume at the ring cost of collective_cost.h, the AllReduces
 * on axis1's link, the calls over axis 2 on axis2's (axis 1 is the inner,
 * consecutive axis of the group). The backward makes the duals of the
 * forward's calls, of the same sizes: each direction takes half. */
double wp_tp_block_comm_s(int p1, int p2, double n_rows, int channels, double element_bytes,
                          const struct wp_link_cost *axis1, const struct wp_link_cost *axis2);

/* Bytes a rank of the group keeps from one block's forward for its
 * backward, for `seqs` sequences of seq_len tokens: Korthikanti et al.'s
 * accounting of a GPT block with dropout (arXiv:2205.05198, section 4.1:
 * 34 s b h + 5 a s^2 b bytes at 2-byte activations) laid onto the dataflow
 * above. Kept whole on every rank: the two LayerNorms' inputs and the two
 * dropout masks of the residual stream; split by p2: the QKV and
 * up-projection inputs (columns j2); split by p1: the gathered inputs of
 * the two projections; split by the whole group: Q, K, V, GELU's input and
 * the attention scores, softmax and its dropout mask. element_bytes per
 * activation element, one byte per dropout-mask element:
 *   element_bytes (s b h (2 + 2/p2 + 5/p1 + 7/t) + 2 a s^2 b / t)
 *   + 2 s b h + a s^2 b / t,   t = p1 p2. */
double wp_tp_block_stored_bytes(int p1, int p2, double seqs, int seq_len, int channels, int heads,
                                double element_bytes);
/* Of those, the attention core's: its scores and softmax (element_bytes
 * each) and the softmax's dropout mask (1 byte), (2 element_bytes + 1)
 * a s^2 b / t: what a block that recomputes only the core (Korthikanti et
 * al.'s selective recomputation) does not keep. */
double wp_tp_block_core_bytes(int p1, int p2, double seqs, int seq_len, int heads, double element_bytes);

/* 0 when the group p1 x p2 can split a model of `heads` heads and `channels`
 * channels with slices of `seqs` sequences; else -1 with why in why (64+). */
int wp_tp_group_check(int p1, int p2, int heads, int channels, int seqs, char *why, size_t why_len);

#endif
