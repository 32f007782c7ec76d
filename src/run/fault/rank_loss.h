/* Ending an MPI training job when a rank or its node is lost, with a
 * message that names the rank and the host: every rank's host and process
 * id are gathered at the start (the peer of a failed wait is named by host
 * too); MPI's errors on MPI_COMM_WORLD and every communicator made from it
 * come to a handler that says which rank failed waiting on what, and ends
 * the job (MPI_Abort) instead of leaving the others waiting; and the
 * watchdog (watchdog.h) ends it the same way when a wait has not progressed
 * (a node whose link is down: no error ever comes). A rank killed outright
 * is reported by the launcher (mpiexec's "BAD TERMINATION ... PID N RUNNING
 * AT HOST", srun's "HOST: task R: Killed"): the map of ranks, hosts and
 * process ids that rank 0 prints at the start turns a process id into its
 * rank. */
#ifndef WP_RUN_RANK_LOSS_H
#define WP_RUN_RANK_LOSS_H

#include <stdio.h>
#include "util/error.h"

/* The exit status of a job ended by a lost rank (sysexits.h's
 * EX_UNAVAILABLE): not resumable by itself, rerun from the last checkpoint. */
#define WP_EXIT_RANK_LOST 69
#define WP_HOST_NAME_MAX 64

struct wp_rank_loss {
    int rank, size;
    char (*hosts)[WP_HOST_NAME_MAX]; /* per rank */
    int *pids;                       /* per rank */
};

/* Collective over MPI_COMM_WORLD, right after MPI_Init (communicators made
 * later inherit the error handler): gathers the hosts and process ids and
 * installs the error handler. */
int wp_rank_loss_init(struct wp_rank_loss *rl, struct wp_err *err);
/* Starts the watchdog with a limit of watchdog_s seconds (watchdog.h; 0:
 * none); its expiry ends the job naming this rank, the peer and their hosts. */
int wp_rank_loss_watch(struct wp_rank_loss *rl, double watchdog_s, struct wp_err *err);
/* The map of ranks to hosts and process ids, one line per host:
 * "ranks on HOST (rank:pid): 0:1234 1:1235 ..." */
void wp_rank_loss_print_map(const struct wp_rank_loss *rl, FILE *out);
/* The host of a rank ("?" when out of range). */
const char *wp_rank_loss_host(const struct wp_rank_loss *rl, int rank);
/* Stops the watchdog and puts back MPI's fatal errors (before
 * MPI_Finalize). */
void wp_rank_loss_destroy(struct wp_rank_loss *rl);

#endif
