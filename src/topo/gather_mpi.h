/* Describing every node of an MPI job (mpiexec, srun --mpi=pmi2): one rank
 * per node runs hwloc, rank 0 gathers the descriptions. */
#ifndef WP_TOPO_GATHER_MPI_H
#define WP_TOPO_GATHER_MPI_H

#include <mpi.h>
#include "topo/cluster.h"

/* Collective over comm. On rank 0, fills c (nodes, ranks, node types) and
 * returns 0 or -1 with err; on other ranks returns the same status. */
int wp_gather_cluster_mpi(MPI_Comm comm, struct wp_cluster *c, struct wp_err *err);

#endif
