/* A cluster description from a file, XML exports or the MPI job (see
 * cluster_build.h). */
#include "topo/cluster_build.h"

#include <mpi.h>

#include "topo/cluster_io.h"
#include "topo/cluster_resize.h"
#include "topo/discover.h"
#include "topo/gather_mpi.h"

int wp_cluster_build(const struct wp_cluster_source *src, struct wp_cluster *c, int *is_root, struct wp_err *err)
{
    *is_root = 1;
    if (src->cluster_path) {
        if (wp_cluster_read(src->cluster_path, c, err))
            return -1;
        if ((src->nodes || src->gpus_per_node) &&
            wp_cluster_resize(c, src->nodes, src->gpus_per_node, src->gpu_memory_bytes, err))
            return -1;
        return 0;
    }
    wp_cluster_init(c);
    if (src->nxml) {
        for (int i = 0; i < src->nxml; i++) {
            struct wp_node_type t;
            if (wp_discover_node(src->xml[i], &t, err))
                return -1;
            t.count = src->xml_count[i];
            if (wp_cluster_add_type(c, &t, err) < 0)
                return -1;
        }
        return 0;
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    *is_root = rank == 0;
    return wp_gather_cluster_mpi(MPI_COMM_WORLD, c, err);
}
