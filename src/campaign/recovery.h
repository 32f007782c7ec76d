/* Recovery of a campaign point whose run lost a node (issue 34): the
 * campaign's policy, the point's chain of recoveries (recoveries.txt in its
 * directory, one line each, appended whole), and the decision whether and
 * how to submit the point again.
 *
 * Policy (campaign file): recover = "none" | "replan" (default "none");
 * min_nodes = N (default 1: never below); max_recoveries = N (default 3).
 *
 * The decision, after a run failed (failure.h):
 *  - nothing when the policy is none, the failure is the run's own (a crash
 *    or bad input: kind OWN or NONE), the point was recovered
 *    max_recoveries times already, or fewer than min_nodes would be left;
 *  - else the point again with the lost node excluded, and every node that
 *    failed twice in the chain (once is bad luck; twice stays out), on as
 *    many nodes as it had if the nodes still usable allow, else on those.
 *
 * A recoveries.txt line:
 *   recovery=N job=J lost=HOST nodes=K exclude=H1,H2 next=J2 reason=TEXT
 * (HOST "-" when the log named none; exclude "-" when none; next, the job
 * submitted, "-" when none was). */
#ifndef WP_CAMPAIGN_RECOVERY_H
#define WP_CAMPAIGN_RECOVERY_H

#include <stddef.h>
#include <stdio.h>

#include "campaign/failure.h"
#include "util/error.h"

#define WP_RECOVERY_MAX 64        /* recoveries a chain keeps */
#define WP_RECOVERY_HOST_MAX 64

struct wp_recovery_policy {
    int replan;         /* recover = "replan" */
    int min_nodes;
    int max_recoveries;
};

struct wp_recovery_entry {
    int index;
    char job[32];
    char lost[WP_RECOVERY_HOST_MAX]; /* "" when the log named no node */
    int nodes;                       /* the next job's node count */
    char exclude[1024];              /* "" for none */
    char next[32];                   /* the job submitted ("" when none) */
};

struct wp_recovery_chain {
    int n;
    struct wp_recovery_entry entries[WP_RECOVERY_MAX];
};

struct wp_recovery_decision {
    int resubmit;
    int nodes;          /* ask for this many */
    char exclude[1024]; /* sbatch --exclude, comma-separated ("" for none) */
    char why[256];      /* one sentence either way */
};

/* Reads path's chain (none when the file is absent); errors name
 * file:line. */
int wp_recovery_chain_read(const char *path, struct wp_recovery_chain *c, struct wp_err *err);

/* Decides for a point that ran on nodes_now nodes; usable: the nodes the
 * partition still offers (not down or drained; the lost one may be among
 * them, as Slurm may not have noticed yet), nusable of them. */
void wp_recovery_decide(const struct wp_recovery_policy *p, const struct wp_point_failure *f,
                        const struct wp_recovery_chain *c, int nodes_now, const char *const *usable, int nusable,
                        struct wp_recovery_decision *d);

/* Appends a chain line for a decision to resubmit (whole, or nothing);
 * next: the job submitted. */
int wp_recovery_append(const char *path, const struct wp_recovery_chain *c, const char *job, const char *next,
                       const struct wp_point_failure *f, const struct wp_recovery_decision *d, struct wp_err *err);

/* What `wavepipe recover` is asked, in a point's job after its run failed. */
struct wp_recovery_request {
    const char *point_dir;
    const char *job;       /* the failed job's id ("" outside Slurm) */
    int nodes;             /* the nodes it ran on */
    const char *partition; /* "" or NULL: every partition */
    const char *usable;    /* the usable nodes, comma-separated, or NULL: ask sinfo */
    struct wp_recovery_policy policy;
    int dry_run;           /* decide and say so; submit and record nothing */
};

/* Reads the point's run.log and recoveries.txt, decides, says so on out
 * ("recover: ..."), and when it resubmits: sbatch of the point's job.sbatch
 * on the decided nodes without the excluded ones, the job added to jobids
 * and the chain line appended. *resubmitted says whether it did. */
int wp_recovery_run(const struct wp_recovery_request *rq, FILE *out, int *resubmitted, struct wp_err *err);

#endif
