/* Clock offsets to rank 0 by ping-pong (see clock_offset.h). */
#include "run/clock_offset.h"

enum { TAG_PING = 7301, TAG_PONG = 7302 };

int wp_clock_estimate(struct wp_clock *c, MPI_Comm comm, int rounds)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    c->offset_s = 0;
    c->rtt_s = 0;
    int rc = MPI_SUCCESS;
    if (rank == 0) {
        /* answer each rank in turn, its pings in order */
        for (int r = 1; r < size && rc == MPI_SUCCESS; r++)
            for (int i = 0; i < rounds && rc == MPI_SUCCESS; i++) {
                char ping;
                rc = MPI_Recv(&ping, 1, MPI_CHAR, r, TAG_PING, comm, MPI_STATUS_IGNORE);
                double now = MPI_Wtime();
                if (rc == MPI_SUCCESS)
                    rc = MPI_Send(&now, 1, MPI_DOUBLE, r, TAG_PONG, comm);
            }
    } else {
        double best = -1;
        for (int i = 0; i < rounds && rc == MPI_SUCCESS; i++) {
            char ping = 0;
            double sent = MPI_Wtime(), theirs = 0;
            rc = MPI_Send(&ping, 1, MPI_CHAR, 0, TAG_PING, comm);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(&theirs, 1, MPI_DOUBLE, 0, TAG_PONG, comm, MPI_STATUS_IGNORE);
            double back = MPI_Wtime(), rtt = back - sent;
            if (rc == MPI_SUCCESS && (best < 0 || rtt < best)) {
                best = rtt;
                c->offset_s = (sent + back) / 2 - theirs;
            }
        }
        c->rtt_s = best > 0 ? best : 0;
    }
    double origin = MPI_Wtime();
    if (rc == MPI_SUCCESS)
        rc = MPI_Bcast(&origin, 1, MPI_DOUBLE, 0, comm);
    c->origin_s = origin;
    return rc == MPI_SUCCESS ? 0 : -1;
}
