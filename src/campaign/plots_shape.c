/* Per-iteration plots of points whose shape changed (plots_shape.h). */
#include "campaign/plots_shape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/gnuplot.h"
#include "util/atomic_file.h"

static double max_samples_per_s(const struct wp_harvest_run *r)
{
    double max = 0;
    for (int i = 0; i < r->iterations; i++)
        max = fmax(max, r->per_iteration[i].samples_per_s);
    return max > 0 ? max : 1;
}

static const char *point_of(const struct wp_harvest_run *r)
{
    return r->point.id[0] ? r->point.id : r->dir;
}

static int write_data(const char *dir, const char *name, const struct wp_harvest_run *r, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_gnuplot_open(&af, dir, name, "dat", err))
        return -1;
    FILE *fp = af.fp;
    fprintf(fp, "# samples/s per kept iteration of point %s\n# iteration samples_per_s\n", point_of(r));
    for (int i = 0; i < r->iterations; i++)
        fprintf(fp, "%ld %.6f\n", r->per_iteration[i].iteration, r->per_iteration[i].samples_per_s);
    fputs("\n\n# shape changes\n# iteration mark_height\n", fp);
    for (int i = 0; i < r->iterations; i++)
        if (r->per_iteration[i].shape_changed)
            fprintf(fp, "%ld %.6f\n", r->per_iteration[i].iteration, 1.08 * max_samples_per_s(r));
    return wp_atomic_commit(&af, err);
}

static int write_script(const char *dir, const char *name, const struct wp_harvest_run *r, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_gnuplot_open(&af, dir, name, "gp", err))
        return -1;
    FILE *fp = af.fp;
    fprintf(fp, "# per-iteration plot of point %s of campaign %s, written by wavepipe harvest; run: gnuplot %s.gp\n",
            point_of(r), r->point.campaign, name);
    fputs("set datafile missing \"-\"\nset grid\nset key outside right top\n", fp);
    fprintf(fp, "set xlabel \"iteration\"\nset ylabel \"samples/s (each kept iteration)\"\nset yrange [0:%.6g]\n",
            1.25 * max_samples_per_s(r));
    int n = 0;
    for (int i = 0; i < r->iterations; i++) {
        if (!r->per_iteration[i].shape_changed)
            continue;
        char text[200];
        snprintf(text, sizeof text, "from here: %s", r->per_iteration[i].shape);
        fputs("set label ", fp);
        wp_gnuplot_string(fp, text);
        fprintf(fp, " at %ld, graph %.2f left offset 0.3,0 font \",9\"\n", r->per_iteration[i].iteration,
                0.97 - 0.04 * (n++ % 2));
    }
    char title[400];
    snprintf(title, sizeof title, "%s, point %s: samples/s per iteration (dotted: its shape changed)",
             r->point.campaign, point_of(r));
    fputs("set title ", fp);
    wp_gnuplot_string(fp, title);
    fputc('\n', fp);
    for (int t = 0; t < WP_GNUPLOT_TERMINALS; t++) {
        wp_gnuplot_output(fp, t, name);
        fprintf(fp, "plot '%s.dat' index 0 using 1:2 with linespoints lc 1 lw 2 pt 7 ps 0.6 title \"samples/s\", \\\n"
                    "     '%s.dat' index 1 using 1:2 with impulses lc 2 lw 1.5 dt 3 title \"shape changed\"\n",
                name, name);
        fputs("unset output\n", fp);
    }
    return wp_atomic_commit(&af, err);
}

int wp_plots_shape_write(const char *plots_dir, const struct wp_harvest *h, struct wp_plots_adapt *plots,
                         struct wp_err *err)
{
    memset(plots, 0, sizeof *plots);
    int n = 0;
    for (int i = 0; i < h->nruns; i++)
        n += h->runs[i].shape_changes > 0;
    if (!n)
        return 0;
    if (!(plots->name = calloc((size_t)n, sizeof *plots->name)))
        return wp_errorf(err, "out of memory building the per-iteration plots");
    int rc = 0;
    for (int i = 0; rc == 0 && i < h->nruns; i++) {
        const struct wp_harvest_run *r = &h->runs[i];
        if (!r->shape_changes)
            continue;
        char name[WP_PLOTS_ADAPT_NAME_MAX];
        snprintf(name, sizeof name, "shape_%.100s", point_of(r));
        rc = write_data(plots_dir, name, r, err);
        if (rc == 0)
            rc = write_script(plots_dir, name, r, err);
        if (rc == 0)
            memcpy(plots->name[plots->nplots++], name, sizeof name);
    }
    if (rc)
        wp_plots_adapt_free(plots);
    return rc ? -1 : 0;
}
