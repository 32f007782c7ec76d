/* A calibration from start to end, between MPI_Init and MPI_Finalize: the
 * job's nodes, the sweep (calibrate_mpi.h), the alpha-beta fit per link
 * level (calibrate_fit.h), the report, and the inter-node fit written as the
 * network of a cluster description. */
#ifndef WP_TOPO_CALIBRATE_NETWORK_H
#define WP_TOPO_CALIBRATE_NETWORK_H

#include <stdio.h>

#include "topo/calibrate_mpi.h"
#include "util/error.h"

struct wp_calib_network_options {
    struct wp_calib_options sweep;
    int emulate_nodes;                      /* 0: nodes are machines; K: K blocks of consecutive ranks */
    const struct wp_calib_backend *backend; /* wp_calib_mpi, or wp_calib_nccl (CUDA build) */
    const char *cluster_path;               /* the description to add the network to; NULL: this job's nodes */
    const char *out_path;                   /* where to write it; NULL: nothing written */
    const char *network_name;               /* NULL: the one in cluster_path, else mpi-inter-node
                                             * (mpi-emulated-nodes when emulated) */
};

/* Collective over MPI_COMM_WORLD (at least 2 ranks). Rank 0 reads
 * cluster_path, prints on out the job, every measurement with the model's
 * time, residual and bus bandwidth, and each level's fit, then writes
 * out_path (a temporary file renamed) with the inter-node fit as the
 * network (the intra-node fit as intra_network when measured) and says so.
 * 0, or -1 with err: up to the sweep the same on every rank; the fit and
 * the file are rank 0's, and so is any failure of theirs. */
int wp_calibrate_network(const struct wp_calib_network_options *o, FILE *out, struct wp_err *err);

#endif
