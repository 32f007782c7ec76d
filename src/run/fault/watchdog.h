/* A watchdog on the waits of a training run: a rank blocked on a message or
 * a sum that has not progressed for longer than the limit ends the job (a
 * peer died, or its node or link went down, and nothing else will tell).
 * Backend-neutral: the communication layer says when a wait begins and ends
 * (comm.h's wp_comm_wait, wp_comm_wait_until) and the training loop when an
 * iteration ends; what "ending the job" means (MPI_Abort, ncclCommAbort) is
 * the expiry function the run gives. Compute is never watched: only time
 * spent inside a wait counts, from its start or the last progress. The
 * state is the process's, as for signals: waits deep in the comm layer reach
 * it without every caller passing it on. */
#ifndef WP_RUN_WATCHDOG_H
#define WP_RUN_WATCHDOG_H

/* Called once, on the watchdog's thread, when a wait has been stalled past
 * the limit: what the rank waits on ("a receive from", "a send to", "a sum
 * over a group of ranks", ...), the peer rank of a message or -1, and how
 * long it has waited. It should end the process (it is not called again). */
typedef void (*wp_watchdog_expiry)(void *ctx, const char *what, int peer, double stalled_s);

/* Starts watching with a limit of limit_s seconds, 0 or less: never. Until
 * the first iteration has ended the limit is WP_WATCHDOG_FIRST_FACTOR times
 * that (setting up, first touches of memory, a first iteration longer than
 * the others); after it, max(limit_s, 2 x the longest iteration so far), so
 * that a legitimately long wait (a pipeline's warm-up on a slow model) never
 * trips it. Once a stop signal has come (stop_signal.h: the ranks only
 * finish the iteration in flight), max(1 s, 2 x the longest iteration) when
 * that is shorter. 0 on success, -1 when the thread cannot start. */
#define WP_WATCHDOG_FIRST_FACTOR 12
int wp_watchdog_start(double limit_s, wp_watchdog_expiry expire, void *ctx);
/* Stops the thread (before MPI_Finalize). Safe when never started. */
void wp_watchdog_stop(void);

/* A wait begins (what: a string literal; peer: its rank or -1) and ends
 * (progress: the stall clock restarts). Not nested; cheap (atomics). */
void wp_watchdog_wait_begin(const char *what, int peer);
void wp_watchdog_wait_end(void);
/* An iteration of iter_s seconds has ended on this rank. */
void wp_watchdog_iteration_end(double iter_s);
/* A pause of the training begins and ends (what: "a checkpoint save", "a
 * move of layers"): ranks wait on one rank's files or on large transfers,
 * longer than any wait of an iteration. Watched as one wait with a limit of
 * its own, the larger of the limit in force, WP_WATCHDOG_PAUSE_FLOOR_S and 4
 * x the longest pause so far; a wait inside it is watched with that limit,
 * and its end is progress of the pause. */
#define WP_WATCHDOG_PAUSE_FLOOR_S 60
void wp_watchdog_pause_begin(const char *what);
void wp_watchdog_pause_end(void);

/* The limit in force now, in seconds (0: not watching). */
double wp_watchdog_limit_s(void);
/* What the rank waits on now, or NULL, and its peer (-1: none); the MPI
 * error handler names it in its message. */
const char *wp_watchdog_waiting_on(int *peer);

#endif
