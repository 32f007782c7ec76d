/* `wavepipe harvest DIR`: gather a campaign's point directories into one
 * tidy CSV (one row per run: axes, median/min/max of the measured figures
 * after warm-up, the simulator's prediction, scaling efficiencies, adaptive
 * runs against their static twins), print a summary table and draw the
 * plots with gnuplot. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "campaign/harvest.h"
#include "campaign/plots.h"
#include "cli/cli.h"
#include "cmd/commands.h"

#define CMD "harvest"

static void usage(void)
{
    printf(
        "Usage: wavepipe harvest DIR [--warmup N] [--no-plots] [--out FILE]\n\n"
        "Reads every point directory of the campaign directory DIR (results/<campaign>/,\n"
        "in name order): point.cfg, results.csv, run.log, DONE/FAILED. Writes DIR/harvest.csv\n"
        "(or FILE) with one row per run, prints a summary table and draws the plots in\n"
        "DIR/plots with gnuplot (SVG and PNG; the .gp scripts and .dat data stay beside\n"
        "them). Running it twice gives identical files.\n\n"
        "Safety: a point without point.cfg or results.csv, or with a corrupt one, is named on\n"
        "stderr and skipped; a results.csv row with the wrong field count, a bad number or\n"
        "no final newline (a torn write) is named (file:line) and skipped. Columns are found\n"
        "by name in results.csv's header: files written before the adapt columns are read\n"
        "alike, pause_s_total and partition_last left empty. An iteration written twice\n"
        "(a requeued job resumed from its checkpoint) keeps its last row.\n"
        "Points without DONE are harvested with state incomplete (or failed).\n\n"
        "Columns of harvest.csv:\n"
        "  <axes>                  every axis of point.cfg, in its order (nodes among them)\n"
        "  repetition, point       the repetition number and the point id\n"
        "  state                   done, failed (FAILED present) or incomplete (neither)\n"
        "  scaling                 weak or strong\n"
        "  iterations              iterations kept: distinct iterations after warm-up\n"
        "  duplicate_rows          rows replaced by a later row of the same iteration\n"
        "  iter_time_s_{median,min,max}, samples_per_s_{...}, tokens_per_s_{...},\n"
        "  bubble_ratio_{...}      median, minimum and maximum over the kept iterations\n"
        "  peak_activation_bytes_max, loss_last   (loss of the last kept iteration;\n"
        "                          empty for emulated compute, whose rows say loss nan)\n"
        "  predicted_iter_time_s, predicted_bubble_ratio   the simulator's figures from\n"
        "                          run.log's last summary line; predicted_samples_per_s =\n"
        "                          global_batch / predicted_iter_time_s (empty without run.log)\n"
        "  weak_efficiency         weak points: (T/n) / (T0/n0)\n"
        "  strong_speedup, strong_efficiency   strong points: T/T0, and T/T0 / (n/n0)\n"
        "  pause_s_total           seconds the kept iterations stood to move layers (--adapt\n"
        "                          partition|both)\n"
        "  partition_last          units per stage of the last kept iteration (blocks, or\n"
        "                          emulated compute's table layers)\n"
        "  samples_per_s_mean      what the job delivered: the kept iterations' samples over\n"
        "                          their time, pauses included: sum(global_batch) /\n"
        "                          sum(iter_time_s + pause_s) (the median hides the pauses\n"
        "                          and the slow iterations before a switch)\n"
        "  adapt_vs_static         runs with adapt other than none: samples_per_s_mean over\n"
        "                          the mean samples_per_s_mean of the static twins (adapt =\n"
        "                          none, every other axis equal, nodes and scenario included;\n"
        "                          repetitions pooled); empty without such a twin\n"
        "  shape_changes           kept iterations run on another shape than the one before\n"
        "                          (ranks, nodes, stages, replicas: a point recovered on fewer\n"
        "                          nodes); each gets a mark on plots/shape_<point>.svg\n"
        "  shape_last              the last kept iteration's shape\n"
        "where T is samples_per_s_median, n the nodes, and n0 the smallest node count of\n"
        "the run's group (same scaling and same value of every other axis, adapt among them:\n"
        "an adaptive run and a static one are two groups; micro_batches is left out where\n"
        "each node count has one value of it, as in M = 4P); T0 is the mean over repetitions\n"
        "of T at n0. Every repetition keeps its own row. Columns that do not apply are empty.\n"
        "The summary table shows samples_per_s_mean as \"mean s/s\" and adapt_vs_static as\n"
        "\"vs static\".\n\n"
        "Options:\n"
        "  --warmup N    drop the first N iterations of every point (default: point.cfg's warmup)\n"
        "  --no-plots    write the CSV and the table only\n"
        "  --out FILE    the CSV path (default DIR/harvest.csv)\n"
        "  -h, --help    this text\n\n"
        "Plots (gnuplot, or $WP_GNUPLOT; without it the CSV is still written):\n"
        "  throughput.svg/png  samples/s against nodes per series, with the ideal line\n"
        "  bubble.svg/png      bubble ratio against nodes per series (dashed: simulated)\n"
        "  predicted.svg/png   measured against predicted samples/s, with y = x\n"
        "  adapt_<axis>-<value>_....svg/png   when the campaign sweeps adapt, per set of\n"
        "                      twins (repetition 0, equal in every axis but adapt, at least\n"
        "                      two): samples/s of each kept iteration, one series per adapt\n"
        "                      value, dotted marks where an adaptive run changed plan (its k\n"
        "                      or partition differs from the previous row's); named from\n"
        "                      the twins' values of the other axes that vary (adapt_all\n"
        "                      when none does)\n"
        "A series is the values of the axes other than nodes that vary over the campaign\n"
        "(adapt=none and adapt=k are two series).\n\n"
        "Exit status: 0 when at least one point was harvested, 1 when none, 2 on usage errors.\n"
        "Example: wavepipe harvest results/weak-gpt\n");
}

int wp_cmd_harvest(int argc, char **argv)
{
    enum { OPT_WARMUP = 256, OPT_NO_PLOTS, OPT_OUT };
    static const struct option longopts[] = {
        {"warmup", required_argument, NULL, OPT_WARMUP},
        {"no-plots", no_argument, NULL, OPT_NO_PLOTS},
        {"out", required_argument, NULL, OPT_OUT},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int warmup = -1, plots = 1;
    const char *out = NULL;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'h': usage(); return 0;
        case OPT_WARMUP:
            if (wp_parse_int_option(CMD, "--warmup", optarg, 0, 1000000, &warmup))
                return 2;
            break;
        case OPT_NO_PLOTS: plots = 0; break;
        case OPT_OUT: out = optarg; break;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return wp_usage_error(CMD, "which campaign directory? (wavepipe harvest DIR)");
    if (optind + 1 < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind + 1]);

    char dir[4096];
    size_t dl = strlen(argv[optind]);
    if (dl == 0 || dl >= sizeof dir)
        return wp_usage_error(CMD, "bad directory name '%s'", argv[optind]);
    memcpy(dir, argv[optind], dl + 1);
    while (dl > 1 && dir[dl - 1] == '/')
        dir[--dl] = '\0';
    char csv[4200], plots_dir[4200];
    snprintf(csv, sizeof csv, "%s/harvest.csv", dir);
    snprintf(plots_dir, sizeof plots_dir, "%s/plots", dir);
    if (out)
        snprintf(csv, sizeof csv, "%s", out);

    struct wp_harvest h;
    struct wp_err err;
    if (wp_harvest_scan(dir, warmup, stderr, &h, &err)) {
        wp_err_print(CMD, &err);
        return 1;
    }
    if (h.nruns == 0) {
        fprintf(stderr, "wavepipe %s: no point of %s could be harvested (%d skipped): give a campaign's folder, "
                        "results/<campaign>/ as `wavepipe sweep` rendered it, whose point directories "
                        "(<campaign>/<point>/) hold point.cfg and the rows of results.csv their run appended\n",
                CMD, dir, h.skipped_points);
        wp_harvest_free(&h);
        return 1;
    }
    if (wp_harvest_write_csv_file(csv, &h, &err)) {
        wp_err_print(CMD, &err);
        wp_harvest_free(&h);
        return 1;
    }
    wp_harvest_print_table(stdout, &h);
    int plotted = 0;
    if (plots) {
        int rc = wp_plots_write(plots_dir, &h, stderr, &err);
        if (rc < 0)
            wp_err_print(CMD, &err);
        plotted = rc == 0;
    }
    printf("harvested %d run%s of %s (%d point%s skipped, %d row%s skipped) into %s%s%s\n", h.nruns,
           h.nruns == 1 ? "" : "s", dir, h.skipped_points, h.skipped_points == 1 ? "" : "s", h.skipped_rows,
           h.skipped_rows == 1 ? "" : "s", csv, plotted ? "; plots in " : "", plotted ? plots_dir : "");
    wp_harvest_free(&h);
    return 0;
}
