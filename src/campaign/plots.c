/* Gnuplot scripts and data for a harvested campaign (plots.h): series are
 * the values of the axes other than nodes that vary over the campaign;
 * each script draws SVG and PNG into temporary names that are renamed
 * when gnuplot succeeds (gnuplot.h); the per-iteration plots of adaptive
 * runs are plots_adapt.c's, those of points whose shape changed
 * plots_shape.c's. */
#include "campaign/plots.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "campaign/gnuplot.h"
#include "campaign/plots_adapt.h"
#include "campaign/plots_shape.h"
#include "util/atomic_file.h"

/* one point of a series: the runs (repetitions) at one node count */
struct spoint {
    int nodes;
    double t_mean, t_min, t_max; /* samples/s: mean of medians, min of mins, max of maxes */
    double bubble, pred_bubble;  /* means (pred_bubble NAN when no run has a prediction) */
    double ideal;
};

struct series {
    char label[128];
    int npts, npred;
    struct spoint *pts;
};

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void free_series(struct series *s, int n)
{
    for (int i = 0; i < n; i++)
        free(s[i].pts);
    free(s);
}

/* Groups the runs into series, points sorted by nodes. */
static struct series *build_series(const struct wp_harvest *h, int *nseries)
{
    struct series *s = calloc((size_t)h->nruns, sizeof *s);
    int *which = calloc((size_t)h->nruns, sizeof *which);
    int *nodes = calloc((size_t)h->nruns, sizeof *nodes);
    int ns = 0;
    if (!s || !which || !nodes)
        goto fail;
    for (int i = 0; i < h->nruns; i++) {
        char label[128];
        wp_harvest_series_label(h, &h->runs[i], label, sizeof label);
        int k = 0;
        while (k < ns && strcmp(s[k].label, label) != 0)
            k++;
        if (k == ns)
            memcpy(s[ns++].label, label, sizeof label);
        which[i] = k;
    }
    for (int k = 0; k < ns; k++) {
        int nn = 0;
        for (int i = 0; i < h->nruns; i++)
            if (which[i] == k)
                nodes[nn++] = h->runs[i].nodes;
        qsort(nodes, (size_t)nn, sizeof *nodes, cmp_int);
        if (!(s[k].pts = calloc((size_t)nn, sizeof *s[k].pts)))
            goto fail;
        for (int j = 0; j < nn; j++) {
            if (j > 0 && nodes[j] == nodes[j - 1])
                continue;
            struct spoint *p = &s[k].pts[s[k].npts++];
            p->nodes = nodes[j];
            p->t_min = INFINITY;
            p->t_max = -INFINITY;
            int cnt = 0, pcnt = 0;
            double pb = 0;
            for (int i = 0; i < h->nruns; i++) {
                const struct wp_harvest_run *r = &h->runs[i];
                if (which[i] != k || r->nodes != p->nodes)
                    continue;
                p->t_mean += r->samples_per_s.median;
                p->bubble += r->bubble_ratio.median;
                p->t_min = fmin(p->t_min, r->samples_per_s.min);
                p->t_max = fmax(p->t_max, r->samples_per_s.max);
                cnt++;
                if (r->has_prediction) {
                    pb += r->pred_bubble_ratio;
                    pcnt++;
                    s[k].npred++;
                }
            }
            p->t_mean /= cnt;
            p->bubble /= cnt;
            p->pred_bubble = pcnt ? pb / pcnt : NAN;
        }
        for (int j = 0; j < s[k].npts; j++)
            s[k].pts[j].ideal = s[k].pts[0].t_mean * s[k].pts[j].nodes / s[k].pts[0].nodes;
    }
    free(which);
    free(nodes);
    *nseries = ns;
    return s;
fail:
    free(which);
    free(nodes);
    if (s)
        free_series(s, ns);
    return NULL;
}

static void dat_num(FILE *fp, double v)
{
    if (isfinite(v))
        fprintf(fp, " %.6f", v);
    else
        fputs(" -", fp);
}

static int write_data(const char *dir, const struct series *s, int ns, const struct wp_harvest *h,
                      struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_gnuplot_open(&af, dir, "harvest", "dat", err))
        return -1;
    for (int k = 0; k < ns; k++) {
        fprintf(af.fp, "%s# series %s\n# nodes samples_per_s min max ideal bubble_ratio predicted_bubble_ratio\n",
                k ? "\n\n" : "", s[k].label);
        for (int j = 0; j < s[k].npts; j++) {
            const struct spoint *p = &s[k].pts[j];
            fprintf(af.fp, "%d", p->nodes);
            dat_num(af.fp, p->t_mean);
            dat_num(af.fp, p->t_min);
            dat_num(af.fp, p->t_max);
            dat_num(af.fp, p->ideal);
            dat_num(af.fp, p->bubble);
            dat_num(af.fp, p->pred_bubble);
            fputc('\n', af.fp);
        }
    }
    if (wp_atomic_commit(&af, err))
        return -1;

    if (wp_gnuplot_open(&af, dir, "predicted", "dat", err))
        return -1;
    int block = 0;
    for (int k = 0; k < ns; k++) {
        if (!s[k].npred)
            continue;
        fprintf(af.fp, "%s# series %s\n# predicted_samples_per_s measured_samples_per_s nodes repetition\n",
                block++ ? "\n\n" : "", s[k].label);
        for (int i = 0; i < h->nruns; i++) {
            const struct wp_harvest_run *r = &h->runs[i];
            char label[128];
            wp_harvest_series_label(h, r, label, sizeof label);
            if (!r->has_prediction || strcmp(label, s[k].label) != 0)
                continue;
            fprintf(af.fp, "%.6f %.6f %d %d\n", r->pred_samples_per_s, r->samples_per_s.median, r->nodes,
                    r->point.repetition);
        }
    }
    return wp_atomic_commit(&af, err);
}

enum plot_kind { PLOT_THROUGHPUT, PLOT_BUBBLE, PLOT_PREDICTED };
static const char *const plot_names[] = {"throughput", "bubble", "predicted"};

static void write_xtics(FILE *fp, const struct series *s, int ns)
{
    int lo = 0, hi = 0;
    fputs("set xtics (", fp);
    int first = 1;
    /* every node count of every series, once, ascending */
    for (int n = 1;; ) {
        int next = 0;
        for (int k = 0; k < ns; k++)
            for (int j = 0; j < s[k].npts; j++)
                if (s[k].pts[j].nodes >= n && (next == 0 || s[k].pts[j].nodes < next))
                    next = s[k].pts[j].nodes;
        if (next == 0)
            break;
        fprintf(fp, "%s%d", first ? "" : ", ", next);
        if (first)
            lo = next;
        hi = next;
        first = 0;
        n = next + 1;
    }
    fputs(")\n", fp);
    double pad = hi > lo ? 0.05 * (hi - lo) : 0.5;
    fprintf(fp, "set xrange [%.3f:%.3f]\n", lo - pad, hi + pad);
}

static void write_plot_command(FILE *fp, enum plot_kind kind, const struct series *s, int ns)
{
    int first = 1;
    fputs("plot ", fp);
    if (kind == PLOT_PREDICTED) {
        int block = 0;
        for (int k = 0; k < ns; k++) {
            if (!s[k].npred)
                continue;
            fprintf(fp, "%s'predicted.dat' index %d using 1:2 with points lc %d pt 7 ps 1.2 title ",
                    first ? "" : ", \\\n     ", block++, k + 1);
            wp_gnuplot_string(fp, s[k].label);
            first = 0;
        }
        fputs(", \\\n     x with lines lc rgb \"#808080\" dt 2 title \"y = x\"\n", fp);
        return;
    }
    for (int k = 0; k < ns; k++) {
        fprintf(fp, "%s", first ? "" : ", \\\n     ");
        first = 0;
        if (kind == PLOT_THROUGHPUT) {
            fprintf(fp, "'harvest.dat' index %d using 1:2:3:4 with yerrorlines lc %d lw 2 pt 7 title ", k, k + 1);
            wp_gnuplot_string(fp, s[k].label);
            fprintf(fp, ", \\\n     'harvest.dat' index %d using 1:5 with lines lc %d dt 2 title ", k, k + 1);
            char t[160];
            snprintf(t, sizeof t, "ideal (%s)", s[k].label);
            wp_gnuplot_string(fp, t);
        } else {
            fprintf(fp, "'harvest.dat' index %d using 1:6 with linespoints lc %d lw 2 pt 7 title ", k, k + 1);
            wp_gnuplot_string(fp, s[k].label);
            int any_pred = 0;
            for (int j = 0; j < s[k].npts; j++)
                any_pred |= isfinite(s[k].pts[j].pred_bubble);
            if (any_pred) {
                fprintf(fp, ", \\\n     'harvest.dat' index %d using 1:7 with linespoints lc %d dt 2 pt 6 title ",
                        k, k + 1);
                char t[160];
                snprintf(t, sizeof t, "%s (simulated)", s[k].label);
                wp_gnuplot_string(fp, t);
            }
        }
    }
    fputc('\n', fp);
}

static int write_script(const char *dir, enum plot_kind kind, const struct series *s, int ns,
                        const struct wp_harvest *h, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_gnuplot_open(&af, dir, plot_names[kind], "gp", err))
        return -1;
    FILE *fp = af.fp;
    char title[256];
    const char *campaign = h->runs[0].point.campaign;
    fprintf(fp, "# %s plot of campaign %s, written by wavepipe harvest; run: gnuplot %s.gp\n", plot_names[kind],
            campaign, plot_names[kind]);
    fputs("set datafile missing \"-\"\nset grid\nset key outside right top\n", fp);
    if (kind == PLOT_PREDICTED) {
        double max = 0;
        for (int i = 0; i < h->nruns; i++)
            if (h->runs[i].has_prediction)
                max = fmax(max, fmax(h->runs[i].pred_samples_per_s, h->runs[i].samples_per_s.median));
        max = max > 0 ? max * 1.1 : 1;
        snprintf(title, sizeof title, "%s: measured against predicted samples/s", campaign);
        fprintf(fp, "set xlabel \"predicted samples/s (simulator)\"\nset ylabel \"measured samples/s (median)\"\n"
                    "set xrange [0:%.6g]\nset yrange [0:%.6g]\nset size ratio -1\nset samples 2\n",
                max, max);
    } else {
        write_xtics(fp, s, ns);
        fputs("set xlabel \"nodes\"\n", fp);
        if (kind == PLOT_THROUGHPUT) {
            snprintf(title, sizeof title, "%s: throughput against nodes (%s scaling)", campaign,
                     h->runs[0].point.scaling);
            fputs("set ylabel \"samples/s (median, min-max)\"\nset yrange [0:*]\n", fp);
        } else {
            snprintf(title, sizeof title, "%s: bubble ratio against nodes", campaign);
            fputs("set ylabel \"bubble ratio (median; dashed: simulated)\"\nset yrange [0:1]\n", fp);
        }
    }
    fputs("set title ", fp);
    wp_gnuplot_string(fp, title);
    fputc('\n', fp);
    for (int t = 0; t < WP_GNUPLOT_TERMINALS; t++) {
        wp_gnuplot_output(fp, t, plot_names[kind]);
        write_plot_command(fp, kind, s, ns);
        fputs("unset output\n", fp);
    }
    return wp_atomic_commit(&af, err);
}

int wp_plots_write(const char *plots_dir, const struct wp_harvest *h, FILE *log, struct wp_err *err)
{
    if (h->nruns == 0)
        return wp_errorf(err, "no harvested run to plot");
    if (mkdir(plots_dir, 0777) && errno != EEXIST)
        return wp_errorf(err, "cannot create %s: %s", plots_dir, strerror(errno));
    int ns = 0;
    struct series *s = build_series(h, &ns);
    if (!s)
        return wp_errorf(err, "out of memory building the plot series");
    int npred = 0;
    for (int k = 0; k < ns; k++)
        npred += s[k].npred;
    int rc = write_data(plots_dir, s, ns, h, err);
    for (int kind = 0; rc == 0 && kind < 3; kind++)
        if (kind != PLOT_PREDICTED || npred)
            rc = write_script(plots_dir, (enum plot_kind)kind, s, ns, h, err);
    free_series(s, ns);
    struct wp_plots_adapt adapt = {0}, shape = {0};
    if (rc == 0)
        rc = wp_plots_adapt_write(plots_dir, h, &adapt, err);
    if (rc == 0)
        rc = wp_plots_shape_write(plots_dir, h, &shape, err);
    if (rc) {
        wp_plots_adapt_free(&adapt);
        return -1;
    }
    if (!npred)
        fprintf(log, "%s: no run has a prediction (run.log summary) — predicted plot not drawn\n", plots_dir);
    int status = 0;
    for (int p = 0; p < 3 + adapt.nplots + shape.nplots; p++) {
        if (p == PLOT_PREDICTED && !npred)
            continue;
        const char *name = p < 3 ? plot_names[p] : p < 3 + adapt.nplots ? adapt.name[p - 3]
                                                                          : shape.name[p - 3 - adapt.nplots];
        int g = wp_gnuplot_draw(plots_dir, name, log);
        if (g == 127) {
            fprintf(log, "gnuplot is not installed (or $WP_GNUPLOT not found) — plots not drawn; scripts and data "
                         "are in %s\n",
                    plots_dir);
            status = 1;
            break;
        }
        if (g)
            status = 1;
    }
    wp_plots_adapt_free(&adapt);
    wp_plots_adapt_free(&shape);
    return status;
}
