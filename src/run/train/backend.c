/* The kernels and communication of a training run (backend.h). */
#include <config.h>

#include "run/train/backend.h"

#include <mpi.h>
#include <string.h>

#ifdef WP_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "kernels/kernel_times.h"
#include "run/comm/comm_bf16.h"
#include "run/comm/comm_lanes.h"

int wp_train_backend_init(struct wp_train_backend *b, const char *device, enum wp_precision precision, int timed,
                          const int *mesh, int rank, struct wp_err *err)
{
    memset(b, 0, sizeof *b);
    int status = 0;
    b->kernels = &wp_kernels_cpu;
    b->cops = &wp_comm_mpi;
    b->tensor = mesh[0] * mesh[1] * mesh[2];
#ifdef WP_HAVE_CUDA
    if (device && strcmp(device, "cuda") == 0) {
        int ndev = 0, lrank;
        MPI_Comm local;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &lrank);
        MPI_Comm_free(&local);
        if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
            status = wp_errorf(err, "--device cuda: rank %d sees no CUDA device", rank);
        else
            cudaSetDevice(lrank % ndev);
        b->kernels = &wp_kernels_cuda;
        b->cops = &wp_comm_nccl;
    }
#else
    (void)device;
#endif
    if (status == 0)
        b->kernels->set_precision(precision); /* after the device is chosen: CUDA's cuBLAS handle is made here */
    if (timed)
        b->kernels = wp_kernels_timed(b->kernels);
    if (status == 0)
        status = b->cops->init(&b->comm, err);
    /* with a mesh: the group's collectives on the backend, the interpreter's
     * messages and sums on this lane (the schedule's ranks) */
    b->interp_cops = b->cops;
    b->interp_comm = b->comm;
    b->message_scale = 1;
    if (status == 0 && b->tensor > 1) {
        status = wp_tensor_group_init(&b->tgroup, mesh[0], mesh[1], mesh[2], rank, b->cops, b->comm, b->kernels, err);
        if (status == 0)
            status = wp_comm_lanes_make(b->cops, b->comm, b->tensor, rank % b->tensor, &b->lane, err);
        if (status == 0) {
            b->interp_cops = &wp_comm_lanes;
            b->interp_comm = b->lane;
        }
    }
    if (status == 0 && precision == WP_PRECISION_BF16) {
        status = wp_comm_bf16_make(b->interp_cops, b->interp_comm, b->kernels, &b->wire, err);
        if (status == 0) {
            b->interp_cops = &wp_comm_bf16;
            b->interp_comm = b->wire;
            b->message_scale = 0.5;
        }
    }
    return status;
}

void wp_train_backend_destroy(struct wp_train_backend *b)
{
    if (b->wire)
        wp_comm_bf16.destroy(b->wire);
    if (b->lane)
        wp_comm_lanes.destroy(b->lane);
    if (b->tensor > 1)
        wp_tensor_group_destroy(&b->tgroup);
    if (b->cops && b->comm)
        b->cops->destroy(b->comm);
    memset(b, 0, sizeof *b);
}
