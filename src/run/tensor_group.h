/* The tensor group of a GPT-2 stage (plan/tp_block.h): p1 x p2 ranks that
 * compute one replica's slice together, rank (j1, j2) holding the pieces
 * wp_tp_shard says. Its four collectives run on the group's two axes over
 * the comm table (MPI, or NCCL in the CUDA build), and every call is
 * counted by kind (its whole vector, as tp_block.h counts the model's),
 * so a run can show its measured volumes beside the model's.
 *
 * The group's ranks are consecutive world ranks base .. base + t - 1
 * (t = p1 p2; lane l = j1 + p1 j2 is rank base + l): axis 1 (the heads'
 * split, the AllReduce) is the inner one, so with one node's ranks
 * numbered together it stays inside a node first. */
#ifndef WP_RUN_TENSOR_GROUP_H
#define WP_RUN_TENSOR_GROUP_H

#include "kernels/kernels.h"
#include "plan/tp_block.h"
#include "run/comm.h"
#include "run/gpt2_params.h"

struct wp_tensor_group {
    struct wp_tp_shard shard;  /* p1, p2 and this rank's j1, j2 */
    int lane;                  /* j1 + p1 j2 */
    int *axis1;                /* world ranks of j1 = 0 .. p1-1 with this j2 */
    int *axis2;                /* world ranks of j2 = 0 .. p2-1 with this j1 */
    const struct wp_comm_ops *cops;
    struct wp_comm *comm;
    const struct wp_kernel_ops *k;
    float *scratch;            /* backend memory for gathering columns */
    size_t scratch_floats;
    long calls[WP_TP_CALL_COUNT];
    double elements[WP_TP_CALL_COUNT]; /* since the last wp_tensor_group_reset */
};

/* The group of world rank `rank` in groups of p1 x p2 consecutive ranks. */
int wp_tensor_group_init(struct wp_tensor_group *tg, int p1, int p2, int rank, const struct wp_comm_ops *cops,
                         struct wp_comm *comm, const struct wp_kernel_ops *k, struct wp_err *err);
void wp_tensor_group_destroy(struct wp_tensor_group *tg);
void wp_tensor_group_reset(struct wp_tensor_group *tg);

/* rows x cols floats summed over axis 2, this rank keeping rows block j2
 * (rows / p2 of them) in part. */
void wp_tg_reduce_scatter_rows(struct wp_tensor_group *tg, const float *whole, float *part, size_t rows,
                               size_t cols);
/* The inverse gather: the p2 row blocks of rows x cols into whole. */
void wp_tg_all_gather_rows(struct wp_tensor_group *tg, const float *part, float *whole, size_t rows, size_t cols);
/* rows x cols_part floats (column block j2) gathered over axis 2 into the
 * rows x (cols_part p2) matrix whole. */
void wp_tg_all_gather_cols(struct wp_tensor_group *tg, const float *part, float *whole, size_t rows,
                           size_t cols_part);
/* n floats summed over axis 1, in place. */
void wp_tg_all_reduce(struct wp_tensor_group *tg, float *buf, size_t n);

#endif
