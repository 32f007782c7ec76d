/* What the MPI backend offers beyond the comm table: waiting for a
 * non-blocking MPI operation the way wp_comm_wait waits for a message
 * (polling and sleeping, so that ranks which outnumber cores leave them to
 * the ranks that compute), for the host-side exchanges every backend makes
 * over MPI (measure.c). */
#ifndef WP_RUN_COMM_MPI_H
#define WP_RUN_COMM_MPI_H

#include <mpi.h>

/* started: what the call that began the operation returned; 0 when the
 * operation completed. */
int wp_comm_mpi_wait(int started, MPI_Request *req);

#endif
