/* The state of a campaign point from its directory (DONE, FAILED, jobids,
 * job.sbatch, run.log) and from Slurm (squeue; sacct when accounting is
 * there): pending, running, done or failed, with a one-line detail. */
#ifndef WP_CAMPAIGN_STATUS_H
#define WP_CAMPAIGN_STATUS_H

#include <stddef.h>

#include "util/error.h"

enum wp_point_state { WP_POINT_PENDING, WP_POINT_RUNNING, WP_POINT_DONE, WP_POINT_FAILED, WP_POINT_STATES };

/* "pending", "running", "done", "failed". */
const char *wp_point_state_name(enum wp_point_state state);

/* The state of the point directory dir, its detail into detail (the FAILED
 * file's first line, the jobs' Slurm states, or what the files say; a lost
 * rank from run.log appended for a failed point). ask_slurm 0: the files
 * only. When Slurm cannot be asked, *slurm_failed is set, err says why and
 * the state comes from the files. */
enum wp_point_state wp_point_status(const char *dir, int ask_slurm, char *detail, size_t size, int *slurm_failed,
                                    struct wp_err *err);

#endif
