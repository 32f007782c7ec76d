/* A campaign point's state (see status.h): the files of its directory
 * first, then the latest probe and run jobs' states in Slurm. */
#include "campaign/status.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "campaign/failure.h"
#include "campaign/slurm.h"
#include "util/strutil.h"

const char *wp_point_state_name(enum wp_point_state state)
{
    static const char *const names[WP_POINT_STATES] = {"pending", "running", "done", "failed"};
    return names[state];
}

/* From the Slurm states st of the latest jobs (steps stp, ids idp). */
static enum wp_point_state state_of_jobs(const char *const *stp, const char *const *idp,
                                         char (*st)[WP_SLURM_STATE_MAX], int m, int have_sacct, char *detail,
                                         size_t size)
{
    int running = 0, queued = 0, bad = 0;
    char words[160] = "";
    for (int j = 0; j < m; j++) {
        char w[64];
        snprintf(w, sizeof w, "%s%s %s %s", j ? ", " : "", stp[j], idp[j], st[j][0] ? st[j] : "gone");
        strncat(words, w, sizeof words - strlen(words) - 1);
        running |= strcmp(st[j], "RUNNING") == 0 || strcmp(st[j], "COMPLETING") == 0;
        queued |= strcmp(st[j], "PENDING") == 0 || strcmp(st[j], "REQUEUED") == 0 ||
                  strcmp(st[j], "CONFIGURING") == 0 || strcmp(st[j], "SUSPENDED") == 0;
        bad |= strncmp(st[j], "FAIL", 4) == 0 || strncmp(st[j], "CANCEL", 6) == 0 || strcmp(st[j], "TIMEOUT") == 0 ||
               strcmp(st[j], "NODE_FAIL") == 0 || strcmp(st[j], "OUT_OF_MEMORY") == 0;
    }
    enum wp_point_state state;
    if (running)
        state = WP_POINT_RUNNING;
    else if (queued && !bad)
        state = WP_POINT_PENDING;
    else
        state = WP_POINT_FAILED; /* out of the queue without DONE */
    snprintf(detail, size, "%s%s", words,
             state == WP_POINT_FAILED && !have_sacct ? " (no DONE file; no accounting to ask)" : "");
    return state;
}

/* A point submitted and without DONE or FAILED: the latest probe and run. */
static enum wp_point_state state_in_slurm(char (*steps)[16], char (*ids)[WP_SLURM_ID_MAX], int n, char *detail,
                                          size_t size, int *slurm_failed, struct wp_err *err)
{
    const char *idp[2];
    const char *stp[2];
    int m = 0;
    for (int j = n - 1; j >= 0 && m < 2; j--)
        if (m == 0 || strcmp(steps[j], stp[0]) != 0) {
            stp[m] = steps[j];
            idp[m++] = ids[j];
        }
    char st[2][WP_SLURM_STATE_MAX];
    int have_sacct = 0;
    if (wp_slurm_states(idp, m, st, &have_sacct, err)) {
        *slurm_failed = 1;
        snprintf(detail, size, "submitted (%s %s)", stp[0], idp[0]);
        return WP_POINT_PENDING;
    }
    return state_of_jobs(stp, idp, st, m, have_sacct, detail, size);
}

enum wp_point_state wp_point_status(const char *dir, int ask_slurm, char *detail, size_t size, int *slurm_failed,
                                    struct wp_err *err)
{
    char path[4300];
    enum wp_point_state state = WP_POINT_PENDING;
    detail[0] = '\0';
    snprintf(path, sizeof path, "%s/DONE", dir);
    int done = access(path, F_OK) == 0;
    snprintf(path, sizeof path, "%s/FAILED", dir);
    int failed = access(path, F_OK) == 0;
    char steps[8][16], ids[8][WP_SLURM_ID_MAX];
    int n = wp_slurm_read_jobids(dir, steps, ids, 8);
    if (done) {
        state = WP_POINT_DONE;
    } else if (failed) {
        state = WP_POINT_FAILED;
        FILE *fp = fopen(path, "r");
        if (fp) {
            if (fgets(detail, (int)size, fp))
                detail[strcspn(detail, "\n")] = '\0';
            fclose(fp);
        }
    } else if (n == 0) {
        snprintf(path, sizeof path, "%s/job.sbatch", dir);
        wp_strlcpy(detail, access(path, F_OK) == 0 ? "rendered, not submitted" : "not rendered", size);
    } else if (!ask_slurm) {
        snprintf(detail, size, "submitted (%s %s)", steps[n - 1], ids[n - 1]);
    } else {
        state = state_in_slurm(steps, ids, n, detail, size, slurm_failed, err);
    }
    char reason[200];
    snprintf(path, sizeof path, "%s/run.log", dir);
    if (state == WP_POINT_FAILED && wp_point_failure_reason(path, reason, sizeof reason)) {
        size_t len = strlen(detail);
        snprintf(detail + len, size - len, "%s%s", len ? "; " : "", reason);
    }
    return state;
}
