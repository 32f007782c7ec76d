/* `wavepipe status`: the state of every point of a campaign, from the files
 * in its point directory (DONE, FAILED, jobids) and Slurm (squeue; sacct
 * when accounting is there): pending, running, done or failed. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "campaign/campaign.h"
#include "campaign/failure.h"
#include "campaign/slurm.h"
#include "cli/cli.h"
#include "cmd/commands.h"
#include "util/datadir.h"
#include "util/strutil.h"

#define CMD "status"

static void usage(void)
{
    printf("Usage: wavepipe status CAMPAIGN.cfg [--results DIR] [--no-slurm]\n\n"
           "Shows each point of the campaign with its state:\n"
           "  pending   not submitted yet (rendered or not), or waiting in the queue\n"
           "  running   its job is running\n"
           "  done      the job wrote DONE\n"
           "  failed    the job wrote FAILED, or left the queue without DONE; the detail\n"
           "            names a lost rank and its host when run.log does (srun, the\n"
           "            watchdog of `wavepipe run`, an MPI error, mpiexec)\n"
           "The job states come from squeue, and from sacct for jobs that left the\n"
           "queue when Slurm keeps accounting; without it, from the DONE and FAILED\n"
           "files alone. `wavepipe sweep --submit` resubmits failed points. A relative\n"
           "CAMPAIGN.cfg not found from here is the installed one, as for sweep.\n\n"
           "Options:\n"
           "  --results DIR   where the point directories are (default: results)\n"
           "  --no-slurm      do not ask squeue/sacct; files only\n"
           "  -h, --help      this text\n");
}

int wp_cmd_status(int argc, char **argv)
{
    enum { OPT_RESULTS = 1000, OPT_NO_SLURM };
    static const struct option longopts[] = {{"results", required_argument, NULL, OPT_RESULTS},
                                             {"no-slurm", no_argument, NULL, OPT_NO_SLURM},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *results = "results";
    int no_slurm = 0;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_RESULTS: results = optarg; break;
        case OPT_NO_SLURM: no_slurm = 1; break;
        case 'h': usage(); return 0;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return wp_usage_error(CMD, "no campaign file given");
    char shipped[PATH_MAX]; /* a relative campaign not found from here: the installed one, as sweep */
    const char *campaign_path = wp_data_input(argv[optind++], shipped, sizeof shipped);
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);

    struct wp_err err = {{0}};
    struct wp_campaign *c = calloc(1, sizeof *c);
    struct wp_campaign_point *points = NULL;
    int npoints = 0;
    if (!c || wp_campaign_read(campaign_path, c, &err) || wp_campaign_expand(c, &points, &npoints, &err)) {
        if (!c)
            wp_errorf(&err, "out of memory");
        wp_err_print(CMD, &err);
        free(c);
        return 1;
    }
    int counts[4] = {0};
    static const char *const names[4] = {"pending", "running", "done", "failed"};
    int slurm_warned = 0;
    printf("%-40s %-8s %s\n", "point", "state", "detail");
    for (int i = 0; i < npoints; i++) {
        char dir[4200], path[4300];
        snprintf(dir, sizeof dir, "%s/%s/%s", results, c->name, points[i].point.id);
        int state = 0;
        char detail[512] = "";
        snprintf(path, sizeof path, "%s/DONE", dir);
        int done = access(path, F_OK) == 0;
        snprintf(path, sizeof path, "%s/FAILED", dir);
        int failed = access(path, F_OK) == 0;
        char steps[8][16], ids[8][WP_SLURM_ID_MAX];
        int n = wp_slurm_read_jobids(dir, steps, ids, 8);
        if (done) {
            state = 2;
        } else if (failed) {
            state = 3;
            FILE *fp = fopen(path, "r");
            if (fp) {
                if (fgets(detail, sizeof detail, fp))
                    detail[strcspn(detail, "\n")] = '\0';
                fclose(fp);
            }
        } else if (n == 0) {
            snprintf(path, sizeof path, "%s/job.sbatch", dir);
            wp_strlcpy(detail, access(path, F_OK) == 0 ? "rendered, not submitted" : "not rendered", sizeof detail);
        } else if (no_slurm) {
            snprintf(detail, sizeof detail, "submitted (%s %s)", steps[n - 1], ids[n - 1]);
        } else {
            /* the latest probe and run */
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
            if (wp_slurm_states(idp, m, st, &have_sacct, &err)) {
                if (!slurm_warned++)
                    fprintf(stderr, "wavepipe status: %s; states from files only\n", err.msg);
                snprintf(detail, sizeof detail, "submitted (%s %s)", stp[0], idp[0]);
            } else {
                int running = 0, queued = 0, bad = 0;
                char words[160] = "";
                for (int j = 0; j < m; j++) {
                    char w[64];
                    snprintf(w, sizeof w, "%s%s %s %s", j ? ", " : "", stp[j], idp[j], st[j][0] ? st[j] : "gone");
                    strncat(words, w, sizeof words - strlen(words) - 1);
                    running |= strcmp(st[j], "RUNNING") == 0 || strcmp(st[j], "COMPLETING") == 0;
                    queued |= strcmp(st[j], "PENDING") == 0 || strcmp(st[j], "REQUEUED") == 0 ||
                              strcmp(st[j], "CONFIGURING") == 0 || strcmp(st[j], "SUSPENDED") == 0;
                    bad |= strncmp(st[j], "FAIL", 4) == 0 || strncmp(st[j], "CANCEL", 6) == 0 ||
                           strcmp(st[j], "TIMEOUT") == 0 || strcmp(st[j], "NODE_FAIL") == 0 ||
                           strcmp(st[j], "OUT_OF_MEMORY") == 0;
                }
                if (running)
                    state = 1;
                else if (queued && !bad)
                    state = 0;
                else
                    state = 3; /* out of the queue without DONE */
                snprintf(detail, sizeof detail, "%s%s", words,
                         state == 3 && !have_sacct ? " (no DONE file; no accounting to ask)" : "");
            }
        }
        char reason[200];
        snprintf(path, sizeof path, "%s/run.log", dir);
        if (state == 3 && wp_point_failure_reason(path, reason, sizeof reason)) {
            size_t len = strlen(detail);
            snprintf(detail + len, sizeof detail - len, "%s%s", len ? "; " : "", reason);
        }
        counts[state]++;
        printf("%-40s %-8s %s\n", points[i].point.id, names[state], detail);
    }
    printf("%s: %d points: %d pending, %d running, %d done, %d failed\n", c->name, npoints, counts[0], counts[1],
           counts[2], counts[3]);
    free(points);
    free(c);
    return 0;
}
