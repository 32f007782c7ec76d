/* Clock offsets to rank 0 by ping-pong (see clock_offset.h). Ranks of one
 * node read one clock: only each node's first rank plays ping-pong with
 * rank 0 and passes its offset to the others (rank 0's node: 0). */
#include "run/adapt/clock_offset.h"

enum { TAG_PING = 7301, TAG_PONG = 7302 };

/* This rank's offset to rank 0 and the shortest round trip, by rounds of
 * ping-pong; rank 0 answers every rank in leaders (n of them) in turn. */
static int ping_pong(MPI_Comm comm, int rank, const int *leaders, int n, int rounds, double *offset, double *rtt)
{
    int rc = MPI_SUCCESS;
    *offset = 0;
    *rtt = 0;
    if (rank == 0) {
        for (int j = 0; j < n && rc == MPI_SUCCESS; j++)
            for (int i = 0; leaders[j] != 0 && i < rounds && rc == MPI_SUCCESS; i++) {
                char ping;
                rc = MPI_Recv(&ping, 1, MPI_CHAR, leaders[j], TAG_PING, comm, MPI_STATUS_IGNORE);
                double now = MPI_Wtime();
                if (rc == MPI_SUCCESS)
                    rc = MPI_Send(&now, 1, MPI_DOUBLE, leaders[j], TAG_PONG, comm);
            }
        return rc;
    }
    double best = -1;
    for (int i = 0; i < rounds && rc == MPI_SUCCESS; i++) {
        char ping = 0;
        double sent = MPI_Wtime(), theirs = 0;
        rc = MPI_Send(&ping, 1, MPI_CHAR, 0, TAG_PING, comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Recv(&theirs, 1, MPI_DOUBLE, 0, TAG_PONG, comm, MPI_STATUS_IGNORE);
        double back = MPI_Wtime(), r = back - sent;
        if (rc == MPI_SUCCESS && (best < 0 || r < best)) {
            best = r;
            *offset = (sent + back) / 2 - theirs;
        }
    }
    *rtt = best > 0 ? best : 0;
    return rc;
}

int wp_clock_estimate(struct wp_clock *c, MPI_Comm comm, int rounds)
{
    int rank, size, local_rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm node;
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(node, &local_rank);
    /* every node's first rank, by world rank; rank 0's node is the one
     * whose first rank is 0 */
    int leader = local_rank == 0 ? rank : -1, first = rank;
    MPI_Bcast(&first, 1, MPI_INT, 0, node);
    int leaders[size > 0 ? size : 1];
    int rc = MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, comm);
    int n = 0;
    for (int r = 0; r < size; r++)
        if (leaders[r] >= 0)
            leaders[n++] = leaders[r];
    double pair[2] = {0, 0}; /* offset, round trip */
    if (rc == MPI_SUCCESS && (rank == 0 || (leader >= 0 && first != 0)))
        rc = ping_pong(comm, rank, leaders, n, rounds, &pair[0], &pair[1]);
    if (rc == MPI_SUCCESS && first != 0)
        rc = MPI_Bcast(pair, 2, MPI_DOUBLE, 0, node);
    MPI_Comm_free(&node);
    c->offset_s = first == 0 ? 0 : pair[0];
    c->rtt_s = first == 0 ? 0 : pair[1];
    double origin = MPI_Wtime();
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&origin, 1, MPI_DOUBLE, 0, comm);
    c->origin_s = origin;
    c->dilation = 1;
    /* the two largest round trips over the nodes (each node's first rank
     * gives its own) bound a difference of times */
    double rtts[size > 0 ? size : 1], mine = leader >= 0 ? c->rtt_s : 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Allgather(&mine, 1, MPI_DOUBLE, rtts, 1, MPI_DOUBLE, comm);
    double most = 0, next = 0;
    for (int r = 0; rc == MPI_SUCCESS && r < size; r++)
        if (rtts[r] > most) {
            next = most;
            most = rtts[r];
        } else if (rtts[r] > next) {
            next = rtts[r];
        }
    c->error_s = (most + next) / 2;
    return rc == MPI_SUCCESS ? 0 : -1;
}
