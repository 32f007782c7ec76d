/* Running gnuplot for the harvest's plots: the quoting of strings in its
 * scripts, the two terminals every plot is drawn on (SVG and PNG, into
 * temporary names), and drawing a script (fork and exec, no shell; the
 * outputs renamed into place only when gnuplot succeeds). The program is
 * "gnuplot" on PATH, or $WP_GNUPLOT. */
#ifndef WP_CAMPAIGN_GNUPLOT_H
#define WP_CAMPAIGN_GNUPLOT_H

#include <stdio.h>

#include "util/atomic_file.h"
#include "util/error.h"

/* the terminals every script draws on: "svg" and "png" */
#define WP_GNUPLOT_TERMINALS 2

/* Opens DIR/NAME.EXT for writing under a temporary name (committed with
 * wp_atomic_commit): every data file and script of the plots. */
int wp_gnuplot_open(struct wp_atomic_file *af, const char *dir, const char *name, const char *ext,
                    struct wp_err *err);

/* Writes s as a gnuplot double-quoted string. */
void wp_gnuplot_string(FILE *fp, const char *s);

/* Writes the "set terminal" and "set output 'NAME.EXT.tmp'" lines of
 * terminal t (0 <= t < WP_GNUPLOT_TERMINALS); the plot command follows,
 * then "unset output". */
void wp_gnuplot_output(FILE *fp, int t, const char *name);

/* Runs `gnuplot NAME.gp` in dir and renames NAME.{svg,png}.tmp to
 * NAME.{svg,png} (removed instead when gnuplot fails). 0 ok, 1 failed
 * (named on log), 127 gnuplot not installed (nothing said). */
int wp_gnuplot_draw(const char *dir, const char *name, FILE *log);

#endif
