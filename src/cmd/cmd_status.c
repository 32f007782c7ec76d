/* `wavepipe status`: the state of every point of a campaign, from the files
 * in its point directory (DONE, FAILED, jobids) and Slurm (squeue; sacct
 * when accounting is there): pending, running, done or failed, one line per
 * point (campaign/status.h). */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "campaign/campaign.h"
#include "campaign/status.h"
#include "cli/cli.h"
#include "cmd/commands.h"
#include "util/datadir.h"

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
           "files alone. A point whose probe failed is failed, with the probe's error\n"
           "file (or, when the probe could not write one, that its node cannot reach\n"
           "the point directory); its run is then cancelled by Slurm, or named when an\n"
           "older sweep left it waiting for ever. `wavepipe sweep --submit` resubmits\n"
           "failed points. A job is recognised by its id, cluster and submit time, so a\n"
           "restarted cluster's new job of the same id is not taken for it. A relative\n"
           "CAMPAIGN.cfg not found from here is the installed one, as for sweep. Exit\n"
           "status 1 when no point of the campaign is under DIR yet (sweep it first).\n\n"
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
    int counts[WP_POINT_STATES] = {0}, slurm_warned = 0, swept = 0;
    printf("%-40s %-8s %s\n", "point", "state", "detail");
    for (int i = 0; i < npoints; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s/%s", results, c->name, points[i].point.id);
        struct wp_point_report r;
        if (wp_point_status(dir, !no_slurm, &r, &err) && !slurm_warned++)
            fprintf(stderr, "wavepipe status: %s; states from files only\n", err.msg);
        swept |= r.rendered || r.submitted || r.state == WP_POINT_DONE || r.state == WP_POINT_FAILED;
        counts[r.state]++;
        printf("%-40s %-8s %s\n", points[i].point.id, wp_point_state_name(r.state), r.detail);
    }
    printf("%s: %d points: %d pending, %d running, %d done, %d failed\n", c->name, npoints, counts[0], counts[1],
           counts[2], counts[3]);
    if (!swept) /* nothing under RESULTS yet: say how to make it */
        fprintf(stderr, "wavepipe status: no point of %s is in %s/%s: `wavepipe sweep %s --dry-run` renders them, "
                        "`--submit` submits them (with --results %s when they go elsewhere)\n",
                c->name, results, c->name, campaign_path, results);
    int rc = swept ? 0 : 1;
    free(points);
    free(c);
    return rc;
}
