/* MPI_Finalize with a time limit, for commands whose results are complete
 * before it: with Debian 12's MPICH 4.0.2 over UCX's TCP transport a rank
 * can wait in MPI_Finalize forever (see mpi_finalize.c). */
#ifndef WP_UTIL_MPI_FINALIZE_H
#define WP_UTIL_MPI_FINALIZE_H

/* Calls MPI_Finalize. If it has not returned after timeout_s seconds, says
 * so on stderr ("wavepipe COMMAND: ...") and ends the process with
 * exit_status, the status the command would have returned. */
void wp_mpi_finalize_bounded(const char *command, double timeout_s, int exit_status);

#endif
