/* A campaign point on disk: the contract between `wavepipe sweep` (which
 * writes it) and `wavepipe harvest` (which reads it). One directory per
 * point and repetition, results/<campaign>/<point>/, holding:
 *   point.cfg    this file's format ("wavepipe-point", below)
 *   job.sbatch   the rendered job script (and probe.sbatch for the probe)
 *   results.csv  rows appended by `wavepipe run --results` (one per iteration)
 *   run.log      the run's output; its last "summary:" line holds the
 *                simulator's prediction for the point
 *   env.txt      the environment the job ran in (Slurm ids, hosts, versions)
 *   cluster.cfg  the cluster description `wavepipe probe` wrote
 *   jobids       "STEP JOBID" lines of submitted jobs
 *   DONE/FAILED  written by the job script at its end (exit status inside)
 * point.cfg:
 *   format = "wavepipe-point"; version = 1;
 *   campaign = "NAME"; point = "ID"; scaling = "weak" | "strong";
 *   repetition = N; warmup = N;       (iterations harvest skips)
 *   axes = ( { name = "schedule"; value = "1f1b"; }, { name = "nodes"; value = "2"; }, ... );
 *     in the campaign's column order; values are strings from a safe set
 */
#ifndef WP_CAMPAIGN_POINT_H
#define WP_CAMPAIGN_POINT_H

#include "util/error.h"

#define WP_POINT_MAX_AXES 32
#define WP_POINT_NAME_MAX 64

struct wp_point {
    char campaign[WP_POINT_NAME_MAX];
    char id[WP_POINT_NAME_MAX];
    char scaling[16];
    int repetition;
    int warmup;
    int naxes;
    char axis_name[WP_POINT_MAX_AXES][WP_POINT_NAME_MAX];
    char axis_value[WP_POINT_MAX_AXES][WP_POINT_NAME_MAX];
};

int wp_point_write(const char *path, const struct wp_point *p, struct wp_err *err);
int wp_point_read(const char *path, struct wp_point *p, struct wp_err *err);
/* The value of an axis, or NULL. */
const char *wp_point_axis(const struct wp_point *p, const char *name);
/* 1 when s is a non-empty name from [A-Za-z0-9._-] not starting with '-':
 * safe in a path and a job name (campaigns, points, axis values, scenarios). */
int wp_point_safe_name(const char *s);

#endif
