/* A cluster description made over for another job size: N nodes of its one
 * node type (the job's node and rank lists dropped), and optionally G
 * emulated GPUs a node -- ranks of a CPU cluster standing in for GPUs, as
 * `wavepipe run --compute emulated` runs them -- linked by the cluster's
 * intra-node network (calibrate's intra-node fit). */
#ifndef WP_TOPO_CLUSTER_RESIZE_H
#define WP_TOPO_CLUSTER_RESIZE_H

#include "topo/cluster.h"
#include "util/error.h"

/* nodes > 0: that many nodes of the cluster's only node type.
 * gpus_per_node > 0: the node type gets that many GPUs named
 * "emulated GPU (MEMORY GB)", all pairs linked at the intra-node network's
 * bandwidth, each with memory_bytes of memory; the type is marked emulated.
 * 0 leaves either as it is. */
int wp_cluster_resize(struct wp_cluster *c, int nodes, int gpus_per_node, double memory_bytes,
                      struct wp_err *err);

#endif
