/* Builds the nodes, ranks and node types of a job from per-process reports. */
#include "topo/job.h"

#include <stdio.h>
#include <string.h>

#include "topo/cluster_io.h"
#include "util/strutil.h"

int wp_cluster_from_job(struct wp_cluster *c, const struct wp_job_proc *procs, int nprocs,
                        const char *launcher, struct wp_err *err)
{
    wp_strlcpy(c->launcher, launcher, sizeof c->launcher);
    for (int r = 0; r < nprocs; r++) {
        if (procs[r].rank != r)
            return wp_errorf(err, "process report %d is for rank %d", r, procs[r].rank);
        int node = -1;
        for (int n = 0; n < c->nnodes; n++)
            if (strcmp(c->nodes[n].host, procs[r].host) == 0)
                node = n;
        if (node < 0) {
            const char *text = NULL;
            for (int q = r; q < nprocs && !text; q++)
                if (strcmp(procs[q].host, procs[r].host) == 0)
                    text = procs[q].node_text;
            if (!text)
                return wp_errorf(err, "no process on node %s described its hardware", procs[r].host);
            struct wp_node_type t;
            char origin[WP_NAME_MAX + 32];
            snprintf(origin, sizeof origin, "node %s", procs[r].host);
            if (wp_node_type_from_text(text, origin, &t, err))
                return -1;
            t.count = 1;
            int type = wp_cluster_add_type(c, &t, err);
            if (type < 0)
                return -1;
            node = wp_cluster_add_node(c, procs[r].host, type, err);
            if (node < 0)
                return -1;
        }
        if (wp_cluster_add_rank(c, r, node, procs[r].local_rank, err) < 0)
            return -1;
    }
    return wp_cluster_check(c, err);
}
