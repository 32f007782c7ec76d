/* MPI_Finalize under a watchdog thread. Why: in MPICH 4.0.2 (ch4:ucx) each
 * rank disconnects its UCX endpoints and then waits in a PMI barrier. A
 * rank in that barrier no longer progresses UCX, so a peer whose endpoint
 * to it still needs an answer (a TCP connection handshake not finished)
 * waits forever; seen with UCX_TLS=tcp on 3 or more ranks (MPICH fixed it
 * upstream by dropping the barrier, pmodels/mpich#6596). Every rank then
 * sits in MPI_Finalize, so every rank's watchdog fires and the job ends. */
#include "util/mpi_finalize.h"

#include <errno.h>
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
    int finalized; /* under lock: MPI_Finalize returned */
    pthread_mutex_t lock;
    pthread_cond_t returned;
};

/* Waits for MPI_Finalize to return, and ends the process if it has not
 * within the timeout. The thread is told, not cancelled: a cancelled
 * thread's unwound stack keeps AddressSanitizer's poison, which it then
 * reports as an overflow when the thread exits. */
static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    double whole = (double)(time_t)w->timeout_s;
    deadline.tv_sec += (time_t)whole;
    deadline.tv_nsec += (long)((w->timeout_s - whole) * 1e9);
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (!w->finalized && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&w->returned, &w->lock, &deadline);
    int finalized = w->finalized;
    pthread_mutex_unlock(&w->lock);
    if (!finalized) {
        ssize_t written = write(STDERR_FILENO, w->message, strlen(w->message));
        (void)written;
        _exit(w->exit_status);
    }
    return NULL;
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
    w->finalized = 0;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->returned, NULL);
    fflush(NULL);
    if (pthread_create(&thread, NULL, watchdog_main, w) != 0) {
        pthread_cond_destroy(&w->returned);
        pthread_mutex_destroy(&w->lock);
        free(w);
        MPI_Finalize();
        return;
    }
    MPI_Finalize();
    pthread_mutex_lock(&w->lock);
    w->finalized = 1;
    pthread_cond_signal(&w->returned);
    pthread_mutex_unlock(&w->lock);
    pthread_join(thread, NULL);
    pthread_cond_destroy(&w->returned);
    pthread_mutex_destroy(&w->lock);
    free(w);
}
