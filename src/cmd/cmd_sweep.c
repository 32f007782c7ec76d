/* `wavepipe sweep`: read a campaign file, expand it into points, render one
 * directory per point under results/<campaign>/ (point.cfg, model.cfg,
 * probe.sbatch, job.sbatch) and, with --submit, submit them with sbatch:
 * probe, then the run after it (afterok), job ids recorded in jobids.
 * Everything is validated and rendered in memory before anything is written,
 * so a bad campaign leaves no trace. The sweep itself is campaign/sweep.h's. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "campaign/sweep.h"
#include "cli/cli.h"
#include "cmd/commands.h"
#include "util/datadir.h"

#define CMD "sweep"

static void usage(void)
{
    printf("Usage: wavepipe sweep CAMPAIGN.cfg [--dry-run | --submit] [--max-concurrent N]\n"
           "                      [--results DIR] [--templates DIR] [--wavepipe PATH]\n\n"
           "Expands a campaign file (jobs/campaigns/*.cfg) into points: the cartesian\n"
           "product of its axes (schedule, k, waves, chunks, data_parallel, micro_batches,\n"
           "nodes, ranks_per_node, policy, model, adapt, scenario), axes in a zip group taken\n"
           "together, points matching an exclude rule dropped, each point repeated\n"
           "`repetitions` times. data_parallel D runs D data-parallel copies of the\n"
           "pipeline on a point's ranks (run --data-parallel D, every schedule): D must\n"
           "divide nodes x ranks_per_node and the micro-batch's sequences, or the point\n"
           "is refused.\n"
           "Weak scaling multiplies global_batch_per_node (and layers_per_node, when\n"
           "given) by the point's nodes; strong scaling keeps global_batch fixed.\n"
           "Every value is validated (names of [A-Za-z0-9._-], numbers in range) and\n"
           "shell-quoted where a template uses it; a bad campaign is an error with\n"
           "file:line and nothing is written. A relative CAMPAIGN.cfg not found from\n"
           "here is looked up in the installed PREFIX/share/wavepipe (jobs/campaigns/).\n"
           "The paths a campaign names (model, data, layer_table, scenario_hook) and\n"
           "the templates (templates/NAME.sbatch) are looked up beside the campaign\n"
           "file first, then in the installed PREFIX/share/wavepipe (for the build\n"
           "tree's program, the source tree), then from here; an error lists the\n"
           "places tried. So a campaign copied anywhere still finds the shipped model\n"
           "and templates.\n\n"
           "For each point it renders DIR/<campaign>/<point>/ (DIR: results):\n"
           "  point.cfg     the point's axes (read by wavepipe harvest)\n"
           "  model.cfg     the campaign's model file, layers set for the point (none with\n"
           "                compute = \"emulated\": its layer_table is the model)\n"
           "  changes.txt   the point's scenario (axis scenario): wavepipe run --changes\n"
           "  probe.sbatch  templates/probe.sbatch: srun --mpi=pmix wavepipe probe -> cluster.cfg\n"
           "  job.sbatch    templates/<template>.sbatch: env.txt, wavepipe run -> results.csv,\n"
           "                run.log, ckpt/ (resumed when Slurm requeues), then DONE or FAILED\n"
           "The chain is probe -> run; `wavepipe calibrate` joins it (probe -> calibrate\n"
           "-> run) when that command exists. The jobs must see DIR and the program:\n"
           "a warning says when either is under /tmp, which nodes do not share as a\n"
           "rule (the paths in WAVEPIPE_SHARED_TMP, colon-separated, excepted: the\n"
           "test cluster's DIR/env sets it to what its nodes see).\n\n"
           "Each point is decided as `wavepipe status` sees it, the same with\n"
           "--dry-run and --submit: DONE points are skipped; failed points (FAILED,\n"
           "out of the queue without DONE, or a run waiting for a probe that failed)\n"
           "are rendered again (FAILED removed; results.csv and ckpt/ kept, so the run\n"
           "resumes), saying why each failed when its run.log names a lost rank;\n"
           "points submitted and not finished are left alone. A job is known by its\n"
           "id, cluster and submit time (PT/jobids), so the job of a restarted\n"
           "cluster that got the same id is not taken for the point's.\n\n"
           "Options:\n"
           "  --dry-run             render, and print the sbatch commands --submit would run\n"
           "  --submit              render and submit each point that is not DONE and not in\n"
           "                        the queue: its probe (sbatch --parsable --chdir=PT\n"
           "                        PT/probe.sbatch, job P), then its run (sbatch --parsable\n"
           "                        --kill-on-invalid-dep=yes --dependency=afterok:P\n"
           "                        --chdir=PT PT/job.sbatch, job R), which Slurm cancels if\n"
           "                        the probe fails; \"probe P\" and \"run R\" go to PT/jobids\n"
           "                        with the cluster and the submit time. A run an older\n"
           "                        sweep left waiting for a failed probe is cancelled\n"
           "                        first (scancel). sbatch and squeue must be on PATH,\n"
           "                        checked before anything is written; a point whose\n"
           "                        submission fails is put back as it was and the sweep\n"
           "                        stops there, every point before it submitted: the\n"
           "                        next --submit goes on\n"
           "  --max-concurrent N    at most N run jobs at once: run i also waits for run i-N\n"
           "                        (--dependency=afterok:P,afterany:R)\n"
           "  --results DIR         where point directories go (default: results)\n"
           "  --templates DIR       the templates (default: looked up as the campaign's paths)\n"
           "  --wavepipe PATH       the program the jobs run (default: this one)\n"
           "  -h, --help            this text\n\n"
           "Examples:\n"
           "  wavepipe sweep jobs/campaigns/cpu-weak-test.cfg --dry-run\n"
           "  wavepipe sweep jobs/campaigns/hanayo-weak.cfg --submit --max-concurrent 4\n"
           "  wavepipe status jobs/campaigns/hanayo-weak.cfg\n");
}

struct sweep_options {
    const char *campaign;
    const char *results;
    const char *templates;
    const char *wavepipe;
    int dry_run, submit, max_concurrent;
};

static int parse_options(int argc, char **argv, struct sweep_options *o)
{
    enum { OPT_DRY = 1000, OPT_SUBMIT, OPT_MAX, OPT_RESULTS, OPT_TEMPLATES, OPT_WAVEPIPE };
    static const struct option longopts[] = {
        {"dry-run", no_argument, NULL, OPT_DRY},          {"submit", no_argument, NULL, OPT_SUBMIT},
        {"max-concurrent", required_argument, NULL, OPT_MAX}, {"results", required_argument, NULL, OPT_RESULTS},
        {"templates", required_argument, NULL, OPT_TEMPLATES}, {"wavepipe", required_argument, NULL, OPT_WAVEPIPE},
        {"help", no_argument, NULL, 'h'},                 {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->results = "results";
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_DRY: o->dry_run = 1; break;
        case OPT_SUBMIT: o->submit = 1; break;
        case OPT_MAX:
            if (wp_parse_int_option(CMD, "--max-concurrent", optarg, 1, 100000, &o->max_concurrent))
                return 2;
            break;
        case OPT_RESULTS: o->results = optarg; break;
        case OPT_TEMPLATES: o->templates = optarg; break;
        case OPT_WAVEPIPE: o->wavepipe = optarg; break;
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return wp_usage_error(CMD, "no campaign file given");
    o->campaign = argv[optind++];
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->dry_run && o->submit)
        return wp_usage_error(CMD, "--dry-run and --submit cannot be combined");
    return 0;
}

int wp_cmd_sweep(int argc, char **argv)
{
    struct sweep_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    char shipped[PATH_MAX]; /* a relative campaign not found from here: the installed one */
    struct wp_sweep_options so = {wp_data_input(o.campaign, shipped, sizeof shipped), o.results, o.templates,
                                  o.wavepipe, o.dry_run, o.submit, o.max_concurrent};
    struct wp_err err = {{0}};
    if (wp_sweep(&so, stdout, &err)) {
        wp_err_print(CMD, &err);
        return 1;
    }
    return 0;
}
