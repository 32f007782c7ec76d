/* Stopping a run cleanly on a signal: Slurm's time-limit warning
 * (`#SBATCH --signal=B:USR1@SECONDS`, SIGUSR1), its SIGTERM at the limit or
 * at scancel, and SIGINT. The handler only notes the signal; the training
 * loop asks at each iteration's end, the ranks agree (any rank's signal
 * stops all), and the run checkpoints and exits with WP_EXIT_STOPPED. */
#ifndef WP_RUN_STOP_SIGNAL_H
#define WP_RUN_STOP_SIGNAL_H

/* The exit status of a run stopped by a signal after a whole iteration,
 * its checkpoint written (sysexits.h's EX_TEMPFAIL: try again, resuming). */
#define WP_EXIT_STOPPED 75

/* Installs the handlers for SIGTERM, SIGINT and SIGUSR1, none received yet. */
void wp_stop_signals_install(void);
/* The first of those signals received so far, or 0. */
int wp_stop_signal(void);

#endif
