/* The readable summary of a cluster description that `wavepipe topo` and
 * `wavepipe probe` print. */
#ifndef WP_TOPO_REPORT_H
#define WP_TOPO_REPORT_H

#include <stdio.h>
#include "topo/cluster.h"

void wp_cluster_report(FILE *out, const struct wp_cluster *c);

#endif
