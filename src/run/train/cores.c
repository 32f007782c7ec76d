/* How the ranks of a training run share a node's cores (cores.h). */
#include "run/train/cores.h"

#include <config.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "kernels/cpu/cpu_kernels.h"

static int count_nodes(void)
{
    MPI_Comm local;
    int rank, lrank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_free(&local);
    int leader = lrank == 0;
    MPI_Allreduce(&leader, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return n;
}

/* One thread per rank unless OMP_NUM_THREADS says otherwise: with several
 * ranks per node, threads of busy-waiting OpenMP barriers steal the cores
 * the ranks compute on (measured here: a 2-thread rank ran its step 20x
 * slower on a loaded 2-core node). The CBLAS gets as many threads as OpenMP
 * (the matrix products are most of a step; kernels/cpu/blas_library.c). Denormals are flushed on every
 * thread (kernels/cpu/fp_env.c). Rank 0 says when ranks outnumber cores. */
int wp_train_share_cores(int rank, int *nodes_out)
{
    MPI_Comm local;
    int lsize;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_size(local, &lsize);
    MPI_Comm_free(&local);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = 1;
#ifdef _OPENMP
    if (!getenv("OMP_NUM_THREADS"))
        omp_set_num_threads(1);
    threads = omp_get_max_threads();
#endif
    int flushing = wp_cpu_flush_denormals();
    wp_cpu_blas_set_threads(threads);
    if (rank == 0 && !flushing)
        printf("note: this CPU keeps denormal floats (no FTZ/DAZ here): steps with tiny values run slower\n");
    if (rank == 0 && lsize > cores)
        printf("note: %d ranks share %ld cores on this node; waiting ranks poll and sleep instead of spinning, "
               "and timings include the sharing\n",
               lsize, cores);
    int nodes = count_nodes();
    *nodes_out = nodes;
    /* the simulator shares cores only for a job on one node */
    return nodes == 1 && lsize > cores ? (int)cores : 0;
}
