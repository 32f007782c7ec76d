/* One timeline for the ranks of a job: each rank's MPI_Wtime less its
 * offset to rank 0's, so message times taken on two ranks can be
 * subtracted. The ranks of a node share its clock: rank 0's node has
 * offset 0, and each other node's first rank estimates the node's offset
 * once by ping-pong with rank 0 (Cristian's method: of several round trips
 * the shortest, its midpoint against the time rank 0 replied; the error is
 * within half that round trip, so a time taken on one node less one taken
 * on another is off by at most error_s). A dilated run (wavepipe run --dilate F)
 * divides the timeline by F: its times are those of the undilated run. */
#ifndef WP_RUN_CLOCK_OFFSET_H
#define WP_RUN_CLOCK_OFFSET_H

#include <mpi.h>

struct wp_clock {
    double offset_s; /* this rank's clock minus rank 0's */
    double origin_s; /* rank 0's clock at the estimate: times count from it */
    double rtt_s;    /* the node's shortest round trip to rank 0 (0 on rank 0's node) */
    double error_s;  /* the most two ranks' times on the timeline can be off from each other: half of
                      * the two largest nodes' shortest round trips, summed (the same on every rank) */
    double dilation; /* the timeline's seconds are dilation seconds of MPI_Wtime (1 unless set) */
};

/* Collective over comm; rounds round trips per rank. */
int wp_clock_estimate(struct wp_clock *c, MPI_Comm comm, int rounds);

/* This rank's MPI_Wtime wtime_s on the common timeline, in seconds since
 * the origin. */
static inline double wp_clock_at(const struct wp_clock *c, double wtime_s)
{
    return (wtime_s - c->offset_s - c->origin_s) / c->dilation;
}

/* Now, on the common timeline. */
static inline double wp_clock_now(const struct wp_clock *c)
{
    return wp_clock_at(c, MPI_Wtime());
}

#endif
