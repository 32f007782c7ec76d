/* A plan's devices onto the job's ranks (see plan_ranks.h). */
#include <mpi.h>
#include <stdlib.h>

#include "plan/plan_ranks.h"

int wp_plan_rank_map(const struct wp_plan *p, int *to, struct wp_err *err)
{
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    int mine[2];
    MPI_Comm_rank(local, &mine[1]);
    MPI_Allreduce(&rank, &mine[0], 1, MPI_INT, MPI_MIN, local);
    MPI_Comm_free(&local);
    int *all = malloc((size_t)P * 2 * sizeof *all), *node = malloc((size_t)P * sizeof *node);
    if (!all || !node) {
        free(all);
        free(node);
        return wp_errorf(err, "out of memory");
    }
    MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
    /* node index: how many hosts have a lower lowest rank */
    int nodes = 0;
    for (int w = 0; w < P; w++) {
        node[w] = 0;
        for (int v = 0; v < P; v++)
            if (all[2 * v + 1] == 0 && all[2 * v] < all[2 * w]) /* v leads a host ahead of w's */
                node[w]++;
        if (all[2 * w + 1] == 0)
            nodes++;
    }
    int rc = 0, r = 0, t = wp_plan_tensor_size(p->tensor);
    /* interleaved (chunks v): the first P of the v P virtual stages name the ranks */
    int nstages = p->chunks > 1 ? p->nstages / p->chunks : p->nstages;
    for (int s = 0; s < nstages && rc == 0; s++)
        for (int i = 0; i < p->stages[s].replicas * t && rc == 0; i++) {
            const struct wp_plan_device *d = &p->stages[s].devices[i];
            int world = -1;
            for (int w = 0; w < P && world < 0; w++)
                if (node[w] == d->node && all[2 * w + 1] == d->gpu)
                    world = w;
            if (world >= 0 && i % t == 0) { /* a group's lane 0: its schedule rank */
                to[r] = world / t;
                r += t == 1;
                if (world % t)
                    rc = wp_errorf(err, "the plan's tensor group of stage %d, replica %d, starts at rank %d, not at a "
                                        "multiple of its %d ranks (one rank per GPU, nodes in the order of their "
                                        "lowest rank)", s, i / t, world, t);
                continue;
            }
            if (world >= 0) { /* lane i % t sits right after lane 0 */
                if (world != to[r] * t + i % t)
                    rc = wp_errorf(err, "the plan's tensor group of stage %d, replica %d, is not on consecutive "
                                        "ranks (its lane %d on rank %d, lane 0 on rank %d)",
                                   s, i / t, i % t, world, to[r] * t);
                if (i % t == t - 1)
                    r++;
                continue;
            }
            if (d->node >= nodes) {
                rc = wp_errorf(err, "the plan puts stage %d on node %d, but the job runs on %d node%s", s, d->node,
                               nodes, nodes == 1 ? "" : "s");
            } else {
                int here = 0;
                for (int w = 0; w < P; w++)
                    here += node[w] == d->node;
                rc = wp_errorf(err, "the plan puts stage %d on GPU %d of node %d, but the job has %d rank%s there "
                                    "(one rank per GPU, nodes in the order of their lowest rank)",
                               s, d->gpu, d->node, here, here == 1 ? "" : "s");
            }
        }
    free(all);
    free(node);
    return rc;
}
