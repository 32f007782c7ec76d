/* Assembling a cluster description from the processes of a parallel job,
 * whatever found them (MPI under mpiexec/srun --mpi=pmi2, or PMIx). */
#ifndef WP_TOPO_JOB_H
#define WP_TOPO_JOB_H

#include "topo/cluster.h"

/* What one process of the job reports. node_text (a node type as text, see
 * cluster_io.h) is set on one process per node, NULL on the others. */
struct wp_job_proc {
    int rank;
    int local_rank;
    char host[WP_NAME_MAX];
    const char *node_text;
};

/* Nodes in order of their lowest rank, node types deduplicated by hardware.
 * procs[i].rank must be i. */
int wp_cluster_from_job(struct wp_cluster *c, const struct wp_job_proc *procs, int nprocs,
                        const char *launcher, struct wp_err *err);

#endif
