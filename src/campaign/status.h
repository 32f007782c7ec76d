/* The state of a campaign point from its directory (DONE, FAILED, jobids,
 * job.sbatch, the probe's files, run.log) and from Slurm (squeue; sacct
 * when accounting is there): pending, running, done or failed, with a
 * one-line detail. `wavepipe status` shows it and `wavepipe sweep` decides
 * by it, so the two never disagree. */
#ifndef WP_CAMPAIGN_STATUS_H
#define WP_CAMPAIGN_STATUS_H

#include <stddef.h>

#include "campaign/slurm.h"
#include "util/error.h"

enum wp_point_state { WP_POINT_PENDING, WP_POINT_RUNNING, WP_POINT_DONE, WP_POINT_FAILED, WP_POINT_STATES };

/* "pending", "running", "done", "failed". */
const char *wp_point_state_name(enum wp_point_state state);

struct wp_point_report {
    enum wp_point_state state;
    int rendered;               /* job.sbatch is there */
    int submitted;              /* jobids names jobs */
    int asked;                  /* Slurm was asked about them (else: files only) */
    struct wp_slurm_job stuck;  /* a job of the point that can never start (its probe failed and
                                 * Slurm left it pending); stuck.id "" when none */
    char detail[768];           /* the FAILED file's line, the jobs' states, what the files say; for a
                                 * failed point the probe's error or a lost rank from run.log */
};

/* The state of the point directory dir. ask_slurm 0: the files only.
 * When Slurm cannot be asked, -1 with err saying why, and the report from
 * the files (r->asked 0). A submitted point whose jobs are all gone from
 * Slurm without DONE is failed; so is one whose probe failed and whose
 * run waits for it forever (DependencyNeverSatisfied: r->stuck). */
int wp_point_status(const char *dir, int ask_slurm, struct wp_point_report *r, struct wp_err *err);

#endif
