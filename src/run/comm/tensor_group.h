/* The mesh of a GPT-2 stage, AutoDDL's p0 x p1 x p2 (plan/tp_block.h):
 * ranks that compute one replica's slice together. Axis 0 splits the
 * slice's sequences (each rank of it runs B/p0 of them through every
 * stage, weights replicated, their gradients summed over axis 0 before the
 * optimizer step); the p1 x p2 tensor group of each splits the blocks,
 * rank (j1, j2) holding the pieces wp_tp_shard says. The group's four
 * collectives run on axes 1 and 2 over the comm table (MPI, or NCCL in the
 * CUDA build), and every call is counted by kind (its whole vector, as
 * tp_block.h counts the model's), so a run can show its measured volumes
 * beside the model's.
 *
 * The mesh's ranks are consecutive world ranks base .. base + t - 1
 * (t = p0 p1 p2; lane l = j1 + p1 (j2 + p2 j0) is rank base + l): axis 1
 * (the heads' split, the AllReduce of every block) is the inner one, so
 * with one node's ranks numbered together it stays inside a node first;
 * axis 0 (a sum once a step) the outer one. */
#ifndef WP_RUN_TENSOR_GROUP_H
#define WP_RUN_TENSOR_GROUP_H

#include "kernels/kernels.h"
#include "plan/tp_block.h"
#include "run/comm/comm.h"
#include "run/model/gpt2_params.h"

struct wp_tensor_group {
    struct wp_tp_shard shard;  /* p1, p2 and this rank's j1, j2 */
    int p0, j0;                /* the mesh's data-parallel axis and this rank's place on it */
    int lane;                  /* j1 + p1 (j2 + p2 j0) */
    int *axis0;                /* world ranks of j0 = 0 .. p0-1 with this j1, j2 */
    int *axis1;                /* world ranks of j1 = 0 .. p1-1 with this j0, j2 */
    int *axis2;                /* world ranks of j2 = 0 .. p2-1 with this j0, j1 */
    int *group;                /* world ranks of the p1 p2 lanes with this j0, in lane order */
    const struct wp_comm_ops *cops;
    struct wp_comm *comm;
    const struct wp_kernel_ops *k;
    float *scratch;            /* backend memory for gathering columns */
    size_t scratch_floats;
    long calls[WP_TP_CALL_COUNT];
    double elements[WP_TP_CALL_COUNT]; /* since the last wp_tensor_group_reset */
    long axis0_calls;
    double axis0_elements;             /* the gradients' sums over axis 0 */
    long boundary_calls;
    double boundary_elements;          /* the stage boundaries' gathers of the tensor group */
};

/* The mesh of world rank `rank` in meshes of p0 x p1 x p2 consecutive ranks. */
int wp_tensor_group_init(struct wp_tensor_group *tg, int p0, int p1, int p2, int rank,
                         const struct wp_comm_ops *cops, struct wp_comm *comm, const struct wp_kernel_ops *k,
                         struct wp_err *err);
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
/* A stage boundary split as Megatron-LM's scatter/gather: each of the
 * p1 p2 lanes sends and receives its column block of every sequence
 * (rows x cols_piece floats, cols_piece = T C / (p1 p2)), and the receiver
 * gathers the blocks over the tensor group into the whole rows x
 * (cols_piece p1 p2) matrix. */
void wp_tg_gather_boundary(struct wp_tensor_group *tg, const float *piece, float *whole, size_t rows,
                           size_t cols_piece);
/* This lane's column block of whole into piece (no communication). */
void wp_tg_scatter_boundary(const struct wp_tensor_group *tg, const float *whole, float *piece, size_t rows,
                            size_t cols_piece);

/* n floats summed over axis 1, in place. */
void wp_tg_all_reduce(struct wp_tensor_group *tg, float *buf, size_t n);
/* n floats (the stage's gradients) summed over axis 0, in place. */
void wp_tg_sum_over_axis0(struct wp_tensor_group *tg, float *buf, size_t n);

#endif
