/* One timeline for the ranks of a job: each rank's MPI_Wtime less its
 * offset to rank 0's, estimated once by ping-pong (Cristian's method: of
 * several round trips the shortest, its midpoint against the time rank 0
 * replied), so message times taken on two ranks can be subtracted. On one
 * machine the clocks agree and the estimate is within a round trip of 0. */
#ifndef WP_RUN_CLOCK_OFFSET_H
#define WP_RUN_CLOCK_OFFSET_H

#include <mpi.h>

struct wp_clock {
    double offset_s; /* this rank's clock minus rank 0's */
    double origin_s; /* rank 0's clock at the estimate: times count from it */
    double rtt_s;    /* the shortest round trip to rank 0 (0 on rank 0) */
};

/* Collective over comm; rounds round trips per rank. */
int wp_clock_estimate(struct wp_clock *c, MPI_Comm comm, int rounds);

/* Now, on the common timeline, in seconds since the origin. */
static inline double wp_clock_now(const struct wp_clock *c)
{
    return MPI_Wtime() - c->offset_s - c->origin_s;
}

#endif
