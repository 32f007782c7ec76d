/* The cluster description as a libconfig file (format "wavepipe-cluster"),
 * and a single node type as text for sending between ranks. */
#ifndef WP_TOPO_CLUSTER_IO_H
#define WP_TOPO_CLUSTER_IO_H

#include "topo/cluster.h"

/* Writes c to path (temporary file + rename). */
int wp_cluster_write(const struct wp_cluster *c, const char *path, struct wp_err *err);
/* Reads and checks path; errors carry file:line. */
int wp_cluster_read(const char *path, struct wp_cluster *c, struct wp_err *err);

/* One node type as libconfig text (malloc'ed), and back. */
char *wp_node_type_to_text(const struct wp_node_type *t);
int wp_node_type_from_text(const char *text, const char *origin, struct wp_node_type *t,
                           struct wp_err *err);

#endif
