/* The per-iteration plots of a campaign that sweeps the axis adapt: for
 * each set of twins (repetition-0 runs equal in every axis except adapt,
 * at least two of them), samples/s of every kept iteration, one series per
 * adapt value (the static run first), and dotted vertical marks at the
 * iterations where an adaptive run changed plan (its k or partition
 * differs from the previous row's). Files in DIR/plots, named from the
 * twins' values of the axes other than adapt that vary over the campaign
 * (letters, digits, '.', '-' and '_' only):
 *   adapt_<axis>-<value>_....{dat,gp,svg,png}   ("adapt_all" when no other
 *                                                axis varies)
 * The .dat holds one block per series (iteration samples_per_s
 * plan_changed), then one block of marks per adaptive run that changed
 * plan (iteration mark_height). */
#ifndef WP_CAMPAIGN_PLOTS_ADAPT_H
#define WP_CAMPAIGN_PLOTS_ADAPT_H

#include "campaign/harvest.h"
#include "util/error.h"

/* the longest name of a per-iteration plot, its extensions left out */
#define WP_PLOTS_ADAPT_NAME_MAX 128

struct wp_plots_adapt {
    int nplots;
    char (*name)[WP_PLOTS_ADAPT_NAME_MAX]; /* each plot's NAME: NAME.gp, NAME.dat, NAME.svg, NAME.png */
};

/* Writes the data and script of every set of twins into plots_dir (which
 * exists); gnuplot is not run. None when the campaign does not sweep adapt.
 * 0, or -1 with err; plots holds the names (free with
 * wp_plots_adapt_free) when 0. */
int wp_plots_adapt_write(const char *plots_dir, const struct wp_harvest *h, struct wp_plots_adapt *plots,
                         struct wp_err *err);
void wp_plots_adapt_free(struct wp_plots_adapt *plots);

#endif
