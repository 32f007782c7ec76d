/* Why a campaign point's run failed, read from its run.log: the lost rank
 * and its host, as the run and the launcher said it. Lines looked for (the
 * last run in the log counts; a requeued job appends):
 *   srun: error: HOST: task R: Killed            (or "tasks R-S"; a signal, not an exit code,
 *                                                before any line of the run's below, or
 *                                                after "srun: Job step aborted" that was, or
 *                                                naming the rank a failed MPI call waited on)
 *   wavepipe run: rank R on HOST: no progress for T s waiting on a receive from rank P (on HOST2) ...
 *   wavepipe run: rank R on HOST: MPI failed ...
 *   = PID N RUNNING AT HOST                      (mpiexec; the start's map gives its rank)
 * For the watchdog's lines, the rank waited on that did not itself report a
 * stall is the one lost (the others wait on it, directly or in a chain);
 * where they waited on sums (no peer), a host none of whose ranks spoke is
 * (a node cut off). */
#ifndef WP_CAMPAIGN_FAILURE_H
#define WP_CAMPAIGN_FAILURE_H

#include <stddef.h>

/* Writes a one-line reason ("rank 2 on wpn2: Killed (srun)") into buf and
 * returns 1, or returns 0 (buf "") when the log names no lost rank. */
int wp_point_failure_reason(const char *run_log_path, char *buf, size_t size);

/* What kind of failure that reason is, for recovery (recovery.h):
 *  LOST: a rank or node was lost, not the run's doing: a task ended by
 *        SIGKILL, SIGTERM, SIGHUP or SIGBUS, a rank or node gone silent
 *        (watchdog), an MPI call that failed on a peer;
 *  OWN:  the run itself crashed: a task ended by SIGSEGV, SIGABRT, SIGFPE
 *        or SIGILL (srun's words, or mpiexec's exit code 128 + n or n);
 *  NONE: the log names no lost rank (a run that failed on bad input, say,
 *        is the run's own: recovery treats NONE as OWN).
 * host: the node lost where the log names one ("" otherwise). */
enum wp_failure_kind { WP_FAILURE_NONE, WP_FAILURE_LOST, WP_FAILURE_OWN };
struct wp_point_failure {
    enum wp_failure_kind kind;
    char host[64];
    char reason[256];
};
void wp_point_failure_read(const char *run_log_path, struct wp_point_failure *out);

#endif
