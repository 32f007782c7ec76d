/* MPI_Finalize under a watchdog thread. Why: in MPICH 4.0.2 (ch4:ucx) each
 * rank disconnects its UCX endpoints and then waits in a PMI barrier. A
 * rank in that barrier no longer progresses UCX, so a peer whose endpoint
 * to it still needs an answer (a TCP connection handshake not finished)
 * waits forever; seen with UCX_TLS=tcp on 3 or more ranks (MPICH fixed it
 * upstream by dropping the barrier, pmodels/mpich#6596). Every rank then
 * sits in MPI_Finalize, so every rank's watchdog fires and the job ends. */
#include "util/mpi_finalize.h"

#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct watchdog {
    char message[512];
    double timeout_s;
    int exit_status;
};

static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    struct timespec left = {(time_t)w->timeout_s,
                            (long)((w->timeout_s - (double)(time_t)w->timeout_s) * 1e9)};
    while (nanosleep(&left, &left) != 0) /* a cancellation point */
        ;
    ssize_t written = write(STDERR_FILENO, w->message, strlen(w->message));
    (void)written;
    _exit(w->exit_status);
}

void wp_mpi_finalize_bounded(const char *command, double timeout_s, int exit_status)
{
    struct watchdog *w = malloc(sizeof *w);
    pthread_t thread;
    if (!w) {
        MPI_Finalize();
        return;
    }
    snprintf(w->message, sizeof w->message,
             "wavepipe %s: MPI_Finalize has not returned after %g s (MPICH 4.0.2 over UCX's TCP "
             "transport can wait there forever); the results are complete, exiting\n",
             command, timeout_s);
    w->timeout_s = timeout_s;
    w->exit_status = exit_status;
    fflush(NULL);
    if (pthread_create(&thread, NULL, watchdog_main, w) != 0) {
        free(w);
        MPI_Finalize();
        return;
    }
    MPI_Finalize();
    pthread_cancel(thread);
    pthread_join(thread, NULL);
    free(w);
}
