/* The kernels and the communication a training run computes and talks
 * with: CPU kernels over MPI, or CUDA kernels over NCCL with one GPU per
 * local rank (CUDA build); timed per kernel on request; and with a mesh,
 * its tensor group's collectives on the backend and the interpreter's
 * messages on this rank's lane (comm_lanes.h); in bf16 the interpreter's
 * messages cross the wire as bfloat16 (comm_bf16.h). */
#ifndef WP_RUN_TRAIN_BACKEND_H
#define WP_RUN_TRAIN_BACKEND_H

#include "kernels/kernels.h"
#include "run/comm/comm.h"
#include "run/comm/tensor_group.h"

struct wp_train_backend {
    const struct wp_kernel_ops *kernels;
    const struct wp_comm_ops *cops;        /* the backend's */
    struct wp_comm *comm;
    const struct wp_comm_ops *interp_cops; /* what the interpreter talks through: the backend, or a lane,
                                            * and in bf16 the bfloat16 wire in front (comm_bf16.h) */
    struct wp_comm *interp_comm;
    struct wp_comm *lane, *wire;           /* the wrappers made (NULL: none) */
    double message_scale;                  /* wire bytes per byte of a message's buffer (0.5 in bf16) */
    int tensor;                            /* mesh size p0 p1 p2 */
    struct wp_tensor_group tgroup;         /* when tensor > 1 */
};

/* device: NULL or "cpu", or "cuda"; precision: the kernels' (kernels.h
 * set_precision); timed: kernel times on (kernel_times.h); mesh p0 x p1 x
 * p2. On an error the backend is as far as it got (kernels chosen), for
 * wp_train_backend_destroy. */
int wp_train_backend_init(struct wp_train_backend *b, const char *device, enum wp_precision precision, int timed,
                          const int *mesh, int rank, struct wp_err *err);
void wp_train_backend_destroy(struct wp_train_backend *b);

#endif
