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

/* A job a campaign point submitted, as its jobids file records it, one
 * line "STEP JOBID CLUSTER SUBMIT": the cluster's name and the time Slurm
 * took the job ("-" where unknown; files of older sweeps have neither).
 * The pair tells the job from a later one of the same id (a cluster
 * restarted numbers its jobs again). */
struct wp_slurm_job {
    char step[16];                   /* "probe", "run", ... */
    char id[WP_SLURM_ID_MAX];
    char cluster[64];
    char submit[32];                 /* Slurm's SubmitTime, YYYY-MM-DDTHH:MM:SS */
    /* what Slurm says of it now (wp_slurm_states) */
    char state[WP_SLURM_STATE_MAX];  /* "" when no job of this identity is known */
    char reason[64];                 /* why it is pending (squeue), e.g. DependencyNeverSatisfied */
};

/* Whether program is an executable on PATH. */
int wp_slurm_have(const char *program);

/* The cluster's name (scontrol show config: ClusterName), "-" when it
 * cannot be asked; asked once. */
const char *wp_slurm_cluster_name(void);

/* sbatch --parsable [--kill-on-invalid-dep=yes --dependency=DEP] --chdir=DIR
 * SCRIPT: a job whose dependency can never be met (its probe failed) is
 * cancelled by Slurm, not left pending. job gets its id, the cluster's name
 * and Slurm's submit time (its step is left as it is). dependency may be
 * NULL or "". */
int wp_slurm_sbatch(const char *script, const char *chdir_to, const char *dependency, struct wp_slurm_job *job,
                    struct wp_err *err);

/* sbatch --parsable --nodes=NODES [--exclude=LIST] --chdir=DIR SCRIPT: a
 * point submitted again on other nodes (recovery.h); the command line's
 * --nodes overrides the script's #SBATCH line. */
int wp_slurm_sbatch_resized(const char *script, const char *chdir_to, int nodes, const char *exclude,
                            struct wp_slurm_job *job, struct wp_err *err);

/* The nodes of partition ("" or NULL: every partition) that Slurm can
 * allocate (idle, allocated, mixed, completing: not down or drained), each
 * once, into *names (malloc'ed strings and array, *n of them). */
int wp_slurm_usable_nodes(const char *partition, char ***names, int *n, struct wp_err *err);

/* scancel JOBID. */
int wp_slurm_cancel(const char *id, struct wp_err *err);

/* The state (Slurm's words: PENDING, RUNNING, COMPLETED, FAILED, ...) and,
 * for a pending job, the reason of jobs[0..n-1], from squeue, else sacct
 * when accounting is there; a job of the same id but another cluster or
 * submit time is not the one recorded, and gets "". *have_sacct says
 * whether sacct answered. Fails only when squeue cannot run. */
int wp_slurm_states(struct wp_slurm_job *jobs, int n, int *have_sacct, struct wp_err *err);

/* The jobs of DIR/jobids: up to max of them, the latest last. Returns how
 * many (0 when the file is absent). */
int wp_slurm_read_jobs(const char *dir, struct wp_slurm_job *jobs, int max);

/* Appends jobs' lines to DIR/jobids (written whole under another name,
 * then renamed). */
int wp_slurm_append_jobs(const char *dir, const struct wp_slurm_job *jobs, int n, struct wp_err *err);

#endif
