/* Discovery of one node's hardware with hwloc: live, or from a recorded XML
 * export (a GPU server we are not on). */
#ifndef WP_TOPO_DISCOVER_H
#define WP_TOPO_DISCOVER_H

#include "topo/cluster.h"

/* Fills *t from hwloc. xml_path NULL means this machine (hwloc still honours
 * HWLOC_XMLFILE, and the result then says it is emulated). */
int wp_discover_node(const char *xml_path, struct wp_node_type *t, struct wp_err *err);

#endif
