/* A cluster description from one of its sources, as `wavepipe topo` takes
 * them: a cluster file (made over, on request, into N nodes of G emulated
 * GPUs), node types from recorded hwloc XML exports, or every node of the
 * running MPI job (live discovery, gathered to rank 0). */
#ifndef WP_TOPO_CLUSTER_BUILD_H
#define WP_TOPO_CLUSTER_BUILD_H

#include "topo/cluster.h"
#include "util/error.h"

struct wp_cluster_source {
    const char *cluster_path;       /* a cluster file, or NULL */
    int nodes, gpus_per_node;       /* with cluster_path: make it over (wp_cluster_resize; 0: keep) */
    double gpu_memory_bytes;        /* the emulated GPUs' memory */
    const char *const *xml;         /* without cluster_path: nxml hwloc XML exports, xml_count[i] nodes */
    const int *xml_count;           /* of each (node types in this order) */
    int nxml;                       /* 0 (and no cluster_path): this MPI job's nodes */
};

/* Builds c from src. Live discovery is collective over MPI_COMM_WORLD
 * (after MPI_Init) and only rank 0 (*is_root) holds the cluster; with a
 * file or XML exports *is_root is 1. 0, or -1 with err. */
int wp_cluster_build(const struct wp_cluster_source *src, struct wp_cluster *c, int *is_root, struct wp_err *err);

#endif
