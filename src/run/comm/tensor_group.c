/* A stage's tensor group and its counted collectives (tensor_group.h). */
#include "run/comm/tensor_group.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wp_tensor_group_init(struct wp_tensor_group *tg, int p0, int p1, int p2, int rank,
                         const struct wp_comm_ops *cops, struct wp_comm *comm, const struct wp_kernel_ops *k,
                         struct wp_err *err)
{
    memset(tg, 0, sizeof *tg);
    int t = p0 * p1 * p2, base = rank / t * t;
    tg->lane = rank - base;
    int j1 = tg->lane % p1, j2 = tg->lane / p1 % p2, j0 = tg->lane / (p1 * p2);
    tg->shard = (struct wp_tp_shard){p1, p2, j1, j2};
    tg->p0 = p0;
    tg->j0 = j0;
    tg->cops = cops;
    tg->comm = comm;
    tg->k = k;
    tg->axis0 = malloc((size_t)p0 * sizeof *tg->axis0);
    tg->axis1 = malloc((size_t)p1 * sizeof *tg->axis1);
    tg->axis2 = malloc((size_t)p2 * sizeof *tg->axis2);
    tg->group = malloc((size_t)(p1 * p2) * sizeof *tg->group);
    if (!tg->axis0 || !tg->axis1 || !tg->axis2 || !tg->group) {
        wp_tensor_group_destroy(tg);
        return wp_errorf(err, "out of memory");
    }
    for (int i = 0; i < p0; i++)
        tg->axis0[i] = base + j1 + p1 * (j2 + p2 * i);
    for (int i = 0; i < p1; i++)
        tg->axis1[i] = base + i + p1 * (j2 + p2 * j0);
    for (int i = 0; i < p2; i++)
        tg->axis2[i] = base + j1 + p1 * (i + p2 * j0);
    for (int i = 0; i < p1 * p2; i++)
        tg->group[i] = base + i + p1 * p2 * j0;
    return 0;
}

void wp_tensor_group_destroy(struct wp_tensor_group *tg)
{
    free(tg->axis0);
    free(tg->group);
    free(tg->axis1);
    free(tg->axis2);
    if (tg->scratch)
        tg->k->release(tg->scratch);
    memset(tg, 0, sizeof *tg);
}

void wp_tensor_group_reset(struct wp_tensor_group *tg)
{
    memset(tg->calls, 0, sizeof tg->calls);
    memset(tg->elements, 0, sizeof tg->elements);
    tg->axis0_calls = 0;
    tg->axis0_elements = 0;
    tg->boundary_calls = 0;
    tg->boundary_elements = 0;
}

/* A collective that fails leaves the group's ranks out of step: the job
 * ends here, named, rather than later in a hang. */
static void check(int rc, const struct wp_tensor_group *tg, enum wp_tp_call c)
{
    if (rc == 0)
        return;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "wavepipe run: rank %d: the tensor group's %s (lane %d of %d x %d) failed\n", rank,
            wp_tp_call_name(c), tg->lane, tg->shard.p1, tg->shard.p2);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void count(struct wp_tensor_group *tg, enum wp_tp_call c, int group, double elements)
{
    if (group <= 1)
        return; /* as tp_block.h: a group of one makes no call */
    tg->calls[c]++;
    tg->elements[c] += elements;
}

void wp_tg_reduce_scatter_rows(struct wp_tensor_group *tg, const float *whole, float *part, size_t rows,
                               size_t cols)
{
    int p2 = tg->shard.p2;
    count(tg, WP_TP_REDUCE_SCATTER_ROWS, p2, (double)rows * cols);
    check(tg->cops->reduce_scatter_sum(tg->comm, whole, part, rows / (size_t)p2 * cols, tg->axis2, p2), tg,
          WP_TP_REDUCE_SCATTER_ROWS);
}

void wp_tg_all_gather_rows(struct wp_tensor_group *tg, const float *part, float *whole, size_t rows, size_t cols)
{
    int p2 = tg->shard.p2;
    count(tg, WP_TP_ALL_GATHER_ROWS, p2, (double)rows * cols);
    check(tg->cops->allgather(tg->comm, part, whole, rows / (size_t)p2 * cols, tg->axis2, p2), tg,
          WP_TP_ALL_GATHER_ROWS);
}

/* Column blocks of rows x cols_part from the g ranks listed gathered into
 * rows x (cols_part g), block j from ranks[j]; 0, or -1 when it failed. */
static int gather_columns(struct wp_tensor_group *tg, const float *part, float *whole, size_t rows,
                          size_t cols_part, const int *ranks, int g)
{
    size_t n = rows * cols_part;
    if (g == 1) {
        if (whole != part)
            tg->k->copy_block(whole, cols_part, part, cols_part, rows, cols_part);
        return 0;
    }
    if (tg->scratch_floats < n * (size_t)g) {
        if (tg->scratch)
            tg->k->release(tg->scratch);
        tg->scratch_floats = n * (size_t)g;
        tg->scratch = tg->k->alloc(tg->scratch_floats * sizeof(float));
        if (!tg->scratch)
            return -1;
    }
    if (tg->cops->allgather(tg->comm, part, tg->scratch, n, ranks, g))
        return -1;
    size_t cols = cols_part * (size_t)g;
    for (int j = 0; j < g; j++)
        tg->k->copy_block(whole + (size_t)j * cols_part, cols, tg->scratch + (size_t)j * n, cols_part, rows,
                          cols_part);
    return 0;
}

void wp_tg_all_gather_cols(struct wp_tensor_group *tg, const float *part, float *whole, size_t rows,
                           size_t cols_part)
{
    int p2 = tg->shard.p2;
    count(tg, WP_TP_ALL_GATHER_COLS, p2, (double)rows * cols_part * p2);
    check(gather_columns(tg, part, whole, rows, cols_part, tg->axis2, p2), tg, WP_TP_ALL_GATHER_COLS);
}

void wp_tg_gather_boundary(struct wp_tensor_group *tg, const float *piece, float *whole, size_t rows,
                           size_t cols_piece)
{
    int t = tg->shard.p1 * tg->shard.p2;
    if (t > 1) {
        tg->boundary_calls++;
        tg->boundary_elements += (double)rows * cols_piece * t;
    }
    if (gather_columns(tg, piece, whole, rows, cols_piece, tg->group, t) == 0)
        return;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "wavepipe run: rank %d: the tensor group's gather of a stage boundary failed\n", rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void wp_tg_scatter_boundary(const struct wp_tensor_group *tg, const float *whole, float *piece, size_t rows,
                            size_t cols_piece)
{
    int t = tg->shard.p1 * tg->shard.p2, l = tg->lane % t;
    tg->k->copy_block(piece, cols_piece, whole + (size_t)l * cols_piece, cols_piece * (size_t)t, rows, cols_piece);
}

void wp_tg_all_reduce(struct wp_tensor_group *tg, float *buf, size_t n)
{
    int p1 = tg->shard.p1;
    count(tg, WP_TP_ALL_REDUCE, p1, (double)n);
    check(tg->cops->allreduce_sum(tg->comm, buf, n, tg->axis1, p1), tg, WP_TP_ALL_REDUCE);
}

void wp_tg_sum_over_axis0(struct wp_tensor_group *tg, float *buf, size_t n)
{
    if (tg->p0 <= 1)
        return;
    tg->axis0_calls++;
    tg->axis0_elements += (double)n;
    if (tg->cops->allreduce_sum(tg->comm, buf, n, tg->axis0, tg->p0) == 0)
        return;
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "wavepipe run: rank %d: the gradients' sum over the mesh's axis 0 (%d ranks) failed\n", rank,
            tg->p0);
    MPI_Abort(MPI_COMM_WORLD, 1);
}
