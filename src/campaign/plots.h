/* The plots of a harvested campaign, drawn by gnuplot: data files and
 * scripts written into DIR/plots, then gnuplot run on each script (fork and
 * exec, no shell) to make SVG and PNG:
 *   throughput.{gp,svg,png}  samples/s against nodes, one line per series
 *                            (median over iterations, mean over repetitions,
 *                            error bars min..max) and its ideal line
 *                            T0 * n / n0 from the series' smallest node count
 *   bubble.{gp,svg,png}      measured bubble ratio against nodes per series,
 *                            the simulator's prediction dashed
 *   predicted.{gp,svg,png}   measured against predicted samples/s per
 *                            series, with the line y = x
 *   harvest.dat, predicted.dat  the data the scripts read
 *   adapt_*.{gp,dat,svg,png} when the campaign sweeps adapt: samples/s per
 *                            iteration of each set of twins, plan changes
 *                            marked (plots_adapt.h)
 * Everything written is a function of the harvest only (no dates, no
 * paths), and the terminals (svg, pngcairo) write no time stamps, so two
 * runs give identical files. The gnuplot program is "gnuplot" on PATH, or
 * $WP_GNUPLOT (gnuplot.h). */
#ifndef WP_CAMPAIGN_PLOTS_H
#define WP_CAMPAIGN_PLOTS_H

#include <stdio.h>

#include "campaign/harvest.h"
#include "util/error.h"

/* Writes the scripts and data into plots_dir (created if needed) and runs
 * gnuplot. Returns 0 when every plot was drawn, 1 when gnuplot is not
 * installed (said once on log; scripts and data are still written) or a
 * plot failed (named on log), -1 with err when the files cannot be written. */
int wp_plots_write(const char *plots_dir, const struct wp_harvest *h, FILE *log, struct wp_err *err);

#endif
