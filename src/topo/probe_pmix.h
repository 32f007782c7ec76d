/* Describing every node of a Slurm allocation as a PMIx client (no MPI):
 * each node publishes its hwloc description, PMIx_Fence collects, rank 0
 * assembles the cluster from PMIx's node and process information. */
#ifndef WP_TOPO_PROBE_PMIX_H
#define WP_TOPO_PROBE_PMIX_H

#include "topo/cluster.h"

/* 1 when this process was started by a PMIx server (PMIX_NAMESPACE set). */
int wp_pmix_launched(void);

/* Runs the exchange. *is_root is set to 1 on PMIx rank 0, which gets the
 * cluster in c. Returns 0 or -1 with err. */
int wp_probe_cluster_pmix(struct wp_cluster *c, int *is_root, struct wp_err *err);

#endif
