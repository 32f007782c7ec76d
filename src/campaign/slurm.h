/* Talking to Slurm: sbatch, squeue and sacct run through fork/exec (no
 * shell; the programs are looked up in PATH), their output captured. sacct
 * may be unavailable (no accounting storage, as on the test cluster): the
 * caller then falls back to squeue and the DONE/FAILED files. */
#ifndef WP_CAMPAIGN_SLURM_H
#define WP_CAMPAIGN_SLURM_H

#include <stddef.h>

#include "util/error.h"

#define WP_SLURM_ID_MAX 32
#define WP_SLURM_STATE_MAX 24

/* Runs argv without a shell; stdout into *out (malloc'ed, may be NULL),
 * stderr's first line into errline. Returns the exit status (128+signal
 * when killed), or -1 with err set when the program cannot be started. */
int wp_slurm_exec(char *const argv[], char **out, char *errline, size_t errsize, struct wp_err *err);

/* sbatch --parsable [--dependency=afterok:DEP] --chdir=DIR SCRIPT; the job
 * id into jobid. dependency may be NULL or "". */
int wp_slurm_sbatch(const char *script, const char *chdir_to, const char *dependency, char *jobid,
                    size_t size, struct wp_err *err);

/* The states of jobs ids[0..n-1] into states[i] (Slurm's words: PENDING,
 * RUNNING, COMPLETED, FAILED, ...; "" when neither squeue nor sacct knows
 * the job). *have_sacct says whether sacct answered. Fails only when squeue
 * cannot run. */
int wp_slurm_states(const char *const *ids, int n, char (*states)[WP_SLURM_STATE_MAX], int *have_sacct,
                    struct wp_err *err);



/* The "STEP JOBID" lines of DIR/jobids: up to max of them, the latest last.
 * Returns how many (0 when the file is absent). */
int wp_slurm_read_jobids(const char *dir, char (*steps)[16], char (*ids)[WP_SLURM_ID_MAX], int max);

#endif
