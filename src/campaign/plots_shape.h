/* The per-iteration plots of points whose shape changed (issue 34: a point
 * recovered after a lost node runs on fewer ranks from its new job on):
 * for each harvested run with a change of ranks, nodes, stages or replicas
 * between two kept iterations, samples/s of every kept iteration and a
 * dotted mark at each change, labelled with the shape from then on. Files
 * in DIR/plots: shape_<point>.{dat,gp,svg,png}. The .dat holds the
 * iterations (iteration samples_per_s), then a block of marks
 * (iteration mark_height). */
#ifndef WP_CAMPAIGN_PLOTS_SHAPE_H
#define WP_CAMPAIGN_PLOTS_SHAPE_H

#include "campaign/harvest.h"
#include "campaign/plots_adapt.h"
#include "util/error.h"

/* Writes the data and script of every run whose shape changed into
 * plots_dir (which exists); gnuplot is not run. 0, or -1 with err; plots
 * holds the names (free with wp_plots_adapt_free) when 0. */
int wp_plots_shape_write(const char *plots_dir, const struct wp_harvest *h, struct wp_plots_adapt *plots,
                         struct wp_err *err);

#endif
