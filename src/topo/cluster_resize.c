/* wavepipe topo --cluster FILE --nodes N --gpus-per-node G: a cluster
 * description made over for another job size (cluster_resize.h). */
#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/cluster_resize.h"
#include "util/strutil.h"

static int emulate_gpus(struct wp_cluster *c, int gpus, double memory_bytes, struct wp_err *err)
{
    if (!c->intra_network.given || !(c->intra_network.bandwidth_Bps > 0))
        return wp_errorf(err, "emulated GPUs are linked by the cluster's intra-node network, and '%s' has none "
                              "(wavepipe calibrate on 2 ranks a node writes it)", c->name);
    if (!(memory_bytes > 0))
        return wp_errorf(err, "emulated GPUs need their memory in bytes (> 0)");
    struct wp_node_type *t = &c->types[0];
    int nnics = t->nnics;
    struct wp_nic *nics = t->nics;
    t->nics = NULL;
    free(t->gpus);
    free(t->link_kind);
    free(t->link_Bps);
    t->gpus = NULL;
    t->link_kind = NULL;
    t->link_Bps = NULL;
    if (wp_node_type_alloc(t, gpus, 0, err)) {
        free(nics);
        return -1;
    }
    free(t->nics);
    t->nics = nics;
    t->nnics = nnics;
    for (int g = 0; g < gpus; g++) {
        struct wp_gpu *d = &t->gpus[g];
        d->index = g;
        snprintf(d->model, sizeof d->model, "emulated GPU (%.0f GB)", memory_bytes / 1e9);
        wp_strlcpy(d->apis, "emulated", sizeof d->apis);
        d->numa_node = -1;
        d->package = -1;
        d->nic = nnics > 0 ? 0 : -1;
        d->pcie_Bps = c->intra_network.bandwidth_Bps;
        d->memory_bytes = memory_bytes;
        for (int h = 0; h < gpus; h++)
            if (h != g) {
                t->link_kind[(size_t)g * gpus + h] = WP_LINK_SYS;
                t->link_Bps[(size_t)g * gpus + h] = c->intra_network.bandwidth_Bps;
            }
    }
    wp_strlcpy(t->gpu_matrix, "PCIe", sizeof t->gpu_matrix);
    t->emulated = 1;
    size_t n = strlen(t->source);
    snprintf(t->source + n, sizeof t->source - n, "%s%d emulated GPUs (ranks), linked by the intra-node network",
             n ? "; " : "", gpus);
    return 0;
}

int wp_cluster_resize(struct wp_cluster *c, int nodes, int gpus_per_node, double memory_bytes,
                      struct wp_err *err)
{
    if (c->ntypes != 1)
        return wp_errorf(err, "'%s' has %d node types: --nodes and --gpus-per-node take a cluster of one", c->name,
                         c->ntypes);
    if (gpus_per_node > 0 && emulate_gpus(c, gpus_per_node, memory_bytes, err))
        return -1;
    if (nodes > 0) {
        c->types[0].count = nodes;
        free(c->nodes);
        free(c->ranks);
        c->nodes = NULL;
        c->ranks = NULL;
        c->nnodes = 0;
        c->nranks = 0;
        wp_strlcpy(c->launcher, "none", sizeof c->launcher);
    }
    return 0;
}
