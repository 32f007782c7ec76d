/* The inter-node network of a cluster description: given by the user until
 * `wavepipe calibrate` measures it. */
#ifndef WP_TOPO_NETWORK_H
#define WP_TOPO_NETWORK_H

#include "topo/cluster.h"

/* Parses "NAME,BANDWIDTH,LATENCY", e.g. "ib-hdr,200Gbit/s,1.5us". */
int wp_network_parse_spec(const char *spec, struct wp_network *net, struct wp_err *err);

#endif
