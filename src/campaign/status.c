/* A campaign point's state (see status.h): the files of its directory
 * first, then the latest probe and run jobs' states in Slurm, and for a
 * failed point why. */
#include "campaign/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "campaign/failure.h"
#include "campaign/recovery.h"
#include "util/strutil.h"

const char *wp_point_state_name(enum wp_point_state state)
{
    static const char *const names[WP_POINT_STATES] = {"pending", "running", "done", "failed"};
    return names[state];
}

static void append(char *detail, size_t size, const char *text)
{
    size_t len = strlen(detail);
    if (text[0] && len < size)
        snprintf(detail + len, size - len, "%s%s", len ? "; " : "", text);
}

/* The last non-empty line of dir/name into line (""); 0 when the file is there. */
static int last_line(const char *dir, const char *name, char *line, size_t size)
{
    char path[4400], buf[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    line[0] = '\0';
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -1;
    while (fgets(buf, sizeof buf, fp)) {
        buf[strcspn(buf, "\r\n")] = '\0';
        if (buf[strspn(buf, " \t")])
            wp_strlcpy(line, buf, size);
    }
    fclose(fp);
    return 0;
}

/* Why the probe job failed, from what it left in the point directory: its
 * error file (probe-JOB.err, the template's --error), else probe.log; when
 * it left nothing, that the job could not write there. */
static void probe_reason(const char *dir, const char *job_id, char *out, size_t size)
{
    char name[64], line[300];
    snprintf(name, sizeof name, "probe-%s.err", job_id);
    if (last_line(dir, name, line, sizeof line) == 0 && line[0]) {
        snprintf(out, size, "the probe failed, %s/%s: %s", dir, name, line);
        return;
    }
    char out_name[64];
    snprintf(out_name, sizeof out_name, "probe-%s.out", job_id);
    if (last_line(dir, "probe.log", line, sizeof line) == 0 && line[0]) {
        snprintf(out, size, "the probe failed, %s/probe.log: %s", dir, line);
        return;
    }
    if (last_line(dir, name, line, sizeof line) == 0 || last_line(dir, out_name, line, sizeof line) == 0) {
        snprintf(out, size, "the probe failed (job %s; %s/%s is empty)", job_id, dir, name);
        return;
    }
    snprintf(out, size, "the probe (job %s) left no %s here: its node could not write to the point directory "
                        "(on a file system the nodes share? each node of the test cluster has its own /tmp)",
             job_id, name);
}

/* From the Slurm states of the latest probe and run jobs. */
static void state_of_jobs(const char *dir, struct wp_slurm_job *jobs, int m, int have_sacct,
                          struct wp_point_report *r)
{
    int running = 0, queued = 0, bad = 0, never = -1, probe = -1;
    char words[600] = "";
    for (int j = 0; j < m; j++) {
        const struct wp_slurm_job *jb = &jobs[j];
        char w[640];
        snprintf(w, sizeof w, "%s%s %s %s%s%s%s", j ? ", " : "", jb->step, jb->id, jb->state[0] ? jb->state : "gone",
                 jb->reason[0] ? " (" : "", jb->reason, jb->reason[0] ? ")" : "");
        strncat(words, w, sizeof words - strlen(words) - 1);
        running |= strcmp(jb->state, "RUNNING") == 0 || strcmp(jb->state, "COMPLETING") == 0;
        int waits = strcmp(jb->state, "PENDING") == 0 || strcmp(jb->state, "REQUEUED") == 0 ||
                    strcmp(jb->state, "CONFIGURING") == 0 || strcmp(jb->state, "SUSPENDED") == 0;
        if (waits && strcmp(jb->reason, "DependencyNeverSatisfied") == 0)
            never = j; /* its probe failed: it can never start */
        else
            queued |= waits;
        bad |= strncmp(jb->state, "FAIL", 4) == 0 || strncmp(jb->state, "CANCEL", 6) == 0 ||
               strcmp(jb->state, "TIMEOUT") == 0 || strcmp(jb->state, "NODE_FAIL") == 0 ||
               strcmp(jb->state, "OUT_OF_MEMORY") == 0;
        if (strcmp(jb->step, "probe") == 0)
            probe = j;
    }
    if (running)
        r->state = WP_POINT_RUNNING;
    else if (queued && !bad)
        r->state = WP_POINT_PENDING;
    else
        r->state = WP_POINT_FAILED; /* out of the queue without DONE, or waiting for a failed probe */
    snprintf(r->detail, sizeof r->detail, "%s%s", words,
             r->state == WP_POINT_FAILED && !have_sacct && never < 0 ? " (no DONE file; no accounting to ask)" : "");
    if (r->state != WP_POINT_FAILED)
        return;
    if (never >= 0) {
        r->stuck = jobs[never];
        append(r->detail, sizeof r->detail, "it waits for a probe that failed and can never start");
    }
    char cluster[4400];
    snprintf(cluster, sizeof cluster, "%s/cluster.cfg", dir);
    if (probe >= 0 && access(cluster, F_OK) != 0) {
        char why[600];
        probe_reason(dir, jobs[probe].id, why, sizeof why);
        append(r->detail, sizeof r->detail, why);
    }
}

/* The latest probe and the latest run of the jobs recorded, asked of Slurm. */
static int state_in_slurm(const char *dir, struct wp_slurm_job *jobs, int n, struct wp_point_report *r,
                          struct wp_err *err)
{
    struct wp_slurm_job latest[2];
    int m = 0;
    for (int j = n - 1; j >= 0 && m < 2; j--)
        if (m == 0 || strcmp(jobs[j].step, latest[0].step) != 0)
            latest[m++] = jobs[j];
    int have_sacct = 0;
    if (wp_slurm_states(latest, m, &have_sacct, err)) {
        snprintf(r->detail, sizeof r->detail, "submitted (%s %s)", latest[0].step, latest[0].id);
        return -1;
    }
    r->asked = 1;
    state_of_jobs(dir, latest, m, have_sacct, r);
    return 0;
}

/* The point's chain of recoveries (recovery.h), newest last: "recovered
 * twice: job 12 lost wpn2, again on 2 nodes as job 13; ...". */
static void recoveries(const char *dir, struct wp_point_report *r)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/recoveries.txt", dir);
    struct wp_recovery_chain *c = malloc(sizeof *c);
    struct wp_err ignored;
    if (!c || wp_recovery_chain_read(path, c, &ignored) || c->n == 0) {
        free(c);
        return;
    }
    char text[600];
    int len = snprintf(text, sizeof text, "recovered %d time%s:", c->n, c->n == 1 ? "" : "s");
    for (int i = 0; i < c->n && len > 0 && (size_t)len < sizeof text; i++) {
        const struct wp_recovery_entry *e = &c->entries[i];
        len += snprintf(text + len, sizeof text - (size_t)len, "%s job %s lost %s, again on %d node%s%s%s as job %s",
                        i ? ";" : "", e->job, e->lost[0] ? e->lost : "a rank", e->nodes, e->nodes == 1 ? "" : "s",
                        e->exclude[0] ? " without " : "", e->exclude, e->next[0] ? e->next : "-");
    }
    append(r->detail, sizeof r->detail, text);
    free(c);
}

int wp_point_status(const char *dir, int ask_slurm, struct wp_point_report *r, struct wp_err *err)
{
    char path[4300];
    memset(r, 0, sizeof *r);
    r->state = WP_POINT_PENDING;
    snprintf(path, sizeof path, "%s/job.sbatch", dir);
    r->rendered = access(path, F_OK) == 0;
    snprintf(path, sizeof path, "%s/DONE", dir);
    int done = access(path, F_OK) == 0;
    snprintf(path, sizeof path, "%s/FAILED", dir);
    int failed = access(path, F_OK) == 0;
    struct wp_slurm_job jobs[8];
    int n = wp_slurm_read_jobs(dir, jobs, 8), rc = 0;
    r->submitted = n > 0;
    if (done) {
        r->state = WP_POINT_DONE;
    } else if (failed) {
        r->state = WP_POINT_FAILED;
        last_line(dir, "FAILED", r->detail, sizeof r->detail);
        char job[WP_SLURM_ID_MAX];
        if (sscanf(r->detail, "probe failed: exit status %*d (job %31[0-9_]", job) == 1) {
            char why[600];
            probe_reason(dir, job, why, sizeof why);
            append(r->detail, sizeof r->detail, why);
        }
    } else if (n == 0) {
        wp_strlcpy(r->detail, r->rendered ? "rendered, not submitted" : "not rendered", sizeof r->detail);
    } else if (!ask_slurm) {
        snprintf(r->detail, sizeof r->detail, "submitted (%s %s)", jobs[n - 1].step, jobs[n - 1].id);
    } else {
        rc = state_in_slurm(dir, jobs, n, r, err);
    }
    char reason[200];
    snprintf(path, sizeof path, "%s/run.log", dir);
    if (r->state == WP_POINT_FAILED && wp_point_failure_reason(path, reason, sizeof reason))
        append(r->detail, sizeof r->detail, reason);
    recoveries(dir, r);
    return rc;
}
