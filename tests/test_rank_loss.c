/* The watchdog's limits (the first iteration's, scaled by the longest
 * iteration, a save's own, after a stop signal) and its expiry on a stalled
 * wait but never on compute; and, in child processes of one MPI rank each,
 * the two ways a lost rank ends a job: the watchdog's message and an MPI
 * error through the handler, both naming the rank and host and exiting 69. */
#include <mpi.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/fault/rank_loss.h"
#include "run/fault/stop_signal.h"
#include "run/fault/watchdog.h"
#include "tap.h"

static atomic_int expired;
static char expired_what[64];
static int expired_peer;

static void note_expiry(void *ctx, const char *what, int peer, double stalled_s)
{
    (void)ctx;
    (void)stalled_s;
    snprintf(expired_what, sizeof expired_what, "%s", what);
    expired_peer = peer;
    atomic_store(&expired, 1);
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static void limits(void)
{
    ok(wp_watchdog_start(0.2, note_expiry, NULL) == 0, "the watchdog starts");
    is_near(wp_watchdog_limit_s(), 0.2 * WP_WATCHDOG_FIRST_FACTOR, 1e-9, "until the first iteration ends: %d x S",
            WP_WATCHDOG_FIRST_FACTOR);
    wp_watchdog_iteration_end(0.05);
    is_near(wp_watchdog_limit_s(), 0.2, 1e-9, "then S while 2 x the longest iteration is shorter");
    wp_watchdog_iteration_end(0.4);
    wp_watchdog_iteration_end(0.1);
    is_near(wp_watchdog_limit_s(), 0.8, 1e-9, "2 x the longest iteration (0.4 s) when longer");
    wp_watchdog_pause_begin("a checkpoint save");
    is_near(wp_watchdog_limit_s(), WP_WATCHDOG_PAUSE_FLOOR_S, 1e-9, "a pause: at least %d s", WP_WATCHDOG_PAUSE_FLOOR_S);
    wp_watchdog_wait_begin("a receive from", 1);
    wp_watchdog_wait_end();
    int peer;
    is_str(wp_watchdog_waiting_on(&peer), "a checkpoint save", "a wait inside a pause ended: the pause watched on");
    is_near(wp_watchdog_limit_s(), WP_WATCHDOG_PAUSE_FLOOR_S, 1e-9, "with the pause's limit");
    wp_watchdog_pause_end();
    ok(!wp_watchdog_waiting_on(&peer) && peer == -1, "after the pause, no wait");
    is_near(wp_watchdog_limit_s(), 0.8, 1e-9, "and the iteration's limit again");

    sleep_s(1.2); /* compute: no wait in progress, however long */
    ok(!atomic_load(&expired), "1.2 s outside any wait (compute) is never a stall");
    wp_watchdog_wait_begin("a receive from", 3);
    sleep_s(0.5);
    wp_watchdog_wait_end();
    ok(!atomic_load(&expired), "a wait of 0.5 s under a limit of 0.8 s passes");

    wp_watchdog_stop();

    ok(wp_watchdog_start(5, note_expiry, NULL) == 0, "started again, S = 5 s");
    wp_watchdog_iteration_end(0.1);
    is_near(wp_watchdog_limit_s(), 5.0, 1e-9, "S");
    wp_stop_signals_install();
    raise(SIGUSR1);
    wp_watchdog_iteration_end(0.1);
    is_near(wp_watchdog_limit_s(), 1.0, 1e-9, "after a stop signal: max(1 s, 2 x the longest iteration) when shorter");
    wp_watchdog_wait_begin("a send to", 2);
    for (int i = 0; i < 40 && !atomic_load(&expired); i++)
        sleep_s(0.05);
    ok(atomic_load(&expired), "a wait without progress past the limit expires");
    is_str(expired_what, "a send to", "the expiry names what was waited on");
    is_int(expired_peer, 2, "and the peer");
    wp_watchdog_wait_end();
    wp_watchdog_stop();
}

/* Runs fn in a child (one MPI rank, a singleton) with stderr captured into
 * buf; returns its exit status (-1: not exited). */
static int in_child(void (*fn)(void), char *buf, size_t size)
{
    int fds[2];
    if (pipe(fds))
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        fn();
        _exit(0); /* fn ends the process itself */
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t n;
    while (got + 1 < size && (n = read(fds[0], buf + got, size - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void stall(void)
{
    MPI_Init(NULL, NULL);
    struct wp_rank_loss rl;
    struct wp_err err = {""};
    if (wp_rank_loss_init(&rl, &err) || wp_rank_loss_watch(&rl, 1, &err))
        _exit(3);
    wp_watchdog_iteration_end(0.01);
    wp_watchdog_wait_begin("a receive from", 0);
    sleep_s(10);
    _exit(4);
}

static void mpi_error(void)
{
    MPI_Init(NULL, NULL);
    struct wp_rank_loss rl;
    struct wp_err err = {""};
    if (wp_rank_loss_init(&rl, &err))
        _exit(3);
    int x = 0;
    wp_watchdog_wait_begin("a send to", 7);
    MPI_Send(&x, 1, MPI_INT, 7, 0, MPI_COMM_WORLD); /* no rank 7 in a job of one */
    _exit(4);
}

int main(void)
{
    limits();
    char host[MPI_MAX_PROCESSOR_NAME] = "", want[512], out[8192];
    gethostname(host, sizeof host);
    int rc = in_child(stall, out, sizeof out);
    is_int(rc, WP_EXIT_RANK_LOST, "a stalled wait ends the job with exit status %d", WP_EXIT_RANK_LOST);
    snprintf(want, sizeof want, "wavepipe run: rank 0 on %s: no progress for 1.", host);
    has_substr(out, want, "the watchdog's message names the rank and its host");
    snprintf(want, sizeof want, "waiting on a receive from rank 0 (on %s) (watchdog limit 1.0 s)", host);
    has_substr(out, want, "what it waited on, the peer and its host");
    rc = in_child(mpi_error, out, sizeof out);
    is_int(rc, WP_EXIT_RANK_LOST, "an MPI error ends the job with exit status %d", WP_EXIT_RANK_LOST);
    snprintf(want, sizeof want, "wavepipe run: rank 0 on %s: MPI failed waiting on a send to rank 7 (on ?): ", host);
    has_substr(out, want, "the handler's message names the rank, its host and the wait");
    return tap_done();
}
