/* Fuzz target: a checkpoint directory's model.safetensors as `run --resume`
 * reads it first (wp_checkpoint_partition: rank 0 reads, the result
 * broadcast; here a one-rank MPI job). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include "fuzz_input.h"
#include "run/train/checkpoint.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* never finalized: libFuzzer exits from within its loop, and MPICH's
     * own teardown is not what this target checks */
    MPI_Init(argc, argv);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wp_fuzz_file("checkpoint/model.safetensors", data, size);
    char dir[600], partition[256];
    snprintf(dir, sizeof dir, "%s/checkpoint", wp_fuzz_dir());
    struct wp_err err;
    (void)wp_checkpoint_partition(dir, partition, sizeof partition, &err);
    return 0;
}
