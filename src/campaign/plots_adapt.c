/* Per-iteration plots of adaptive runs against their static twins
 * (plots_adapt.h): sets of twins, their file names, data and gnuplot
 * scripts. */
#include "campaign/plots_adapt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "campaign/gnuplot.h"
#include "util/atomic_file.h"
#include "util/strutil.h"

/* longest base of a name before the set's number is appended */
#define NAME_BASE_MAX 100

/* one set of twins: the runs, the static ones first, then scan order */
struct twin_set {
    int nruns;
    int *run;
    char name[WP_PLOTS_ADAPT_NAME_MAX];
    char label[512]; /* the twins' values of the varying axes, for titles */
};

static const char *adapt_of(const struct wp_harvest_run *r)
{
    const char *adapt = wp_point_axis(&r->point, "adapt");
    return adapt ? adapt : "-";
}

static void free_sets(struct twin_set *sets, int nsets)
{
    for (int i = 0; i < nsets; i++)
        free(sets[i].run);
    free(sets);
}

/* Appends to name (of length *used) s with every character other than
 * letters, digits, '.' and '-' made '_', up to NAME_BASE_MAX; 1 when cut. */
static int append_safe(char *name, size_t *used, const char *s)
{
    for (; *s; s++) {
        if (*used >= NAME_BASE_MAX)
            return 1;
        char c = *s;
        int safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
        name[(*used)++] = safe ? c : '_';
    }
    name[*used] = '\0';
    return 0;
}

/* The name and title label of set number `index` (0-based) from its first
 * run's values of the axes other than adapt that vary over the campaign;
 * a name cut short or taken by an earlier set gets "-<index + 1>". */
static void name_set(const struct wp_harvest *h, struct twin_set *sets, int index)
{
    struct twin_set *set = &sets[index];
    const struct wp_harvest_run *r = &h->runs[set->run[0]];
    size_t used = 0, lused = 0;
    int cut = append_safe(set->name, &used, "adapt");
    set->label[0] = '\0';
    for (int a = 0; a < h->naxes; a++) {
        const char *axis = h->axis_name[a];
        if (strcmp(axis, "adapt") == 0 || !wp_harvest_axis_varies(h, axis))
            continue;
        const char *v = wp_point_axis(&r->point, axis);
        cut |= append_safe(set->name, &used, "_");
        cut |= append_safe(set->name, &used, axis);
        cut |= append_safe(set->name, &used, "-");
        cut |= append_safe(set->name, &used, v ? v : "");
        if (lused < sizeof set->label)
            lused += (size_t)snprintf(set->label + lused, sizeof set->label - lused, "%s%s=%s", lused ? " " : "",
                                      axis, v ? v : "-");
    }
    if (used == strlen("adapt"))
        append_safe(set->name, &used, "_all");
    if (!set->label[0])
        wp_strlcpy(set->label, "all", sizeof set->label);
    for (int j = 0; j < index && !cut; j++)
        cut = strcmp(sets[j].name, set->name) == 0;
    if (cut)
        snprintf(set->name + used, sizeof set->name - used, "-%d", index + 1);
}

/* The sets of twins among the repetition-0 runs that have at least two
 * runs; NULL on out of memory. */
static struct twin_set *build_sets(const struct wp_harvest *h, int *nsets)
{
    struct twin_set *sets = calloc((size_t)(h->nruns ? h->nruns : 1), sizeof *sets);
    int *set_of = calloc((size_t)(h->nruns ? h->nruns : 1), sizeof *set_of);
    int n = 0;
    if (!sets || !set_of)
        goto fail;
    for (int i = 0; i < h->nruns; i++) {
        set_of[i] = -1;
        if (h->runs[i].point.repetition != 0)
            continue;
        for (int j = 0; j < i && set_of[i] < 0; j++)
            if (set_of[j] >= 0 && wp_harvest_twins(h, &h->runs[i], &h->runs[j]))
                set_of[i] = set_of[j];
        if (set_of[i] < 0)
            set_of[i] = n++;
        sets[set_of[i]].nruns++;
    }
    int kept = 0;
    for (int s = 0; s < n; s++) {
        int m = sets[s].nruns;
        if (m < 2)
            continue;
        struct twin_set *set = &sets[kept];
        int *run = malloc((size_t)m * sizeof *run);
        if (!run)
            goto fail;
        int at = 0;
        for (int pass = 0; pass < 2; pass++) /* the static runs first */
            for (int i = 0; i < h->nruns; i++)
                if (set_of[i] == s && wp_harvest_is_static(&h->runs[i]) == (pass == 0))
                    run[at++] = i;
        memset(set, 0, sizeof *set);
        set->nruns = m;
        set->run = run;
        name_set(h, sets, kept);
        kept++;
    }
    free(set_of);
    *nsets = kept;
    return sets;
fail:
    free(set_of);
    if (sets)
        free_sets(sets, n);
    return NULL;
}

static int nchanges(const struct wp_harvest_run *r)
{
    int n = 0;
    for (int i = 0; i < r->iterations; i++)
        n += r->per_iteration[i].plan_changed;
    return n;
}

/* whether run r's plan changes are drawn: adaptive runs only */
static int has_marks(const struct wp_harvest_run *r)
{
    return !wp_harvest_is_static(r) && nchanges(r) > 0;
}

static double set_max_samples_per_s(const struct wp_harvest *h, const struct twin_set *set)
{
    double max = 0;
    for (int s = 0; s < set->nruns; s++) {
        const struct wp_harvest_run *r = &h->runs[set->run[s]];
        for (int i = 0; i < r->iterations; i++)
            max = fmax(max, r->per_iteration[i].samples_per_s);
    }
    return max > 0 ? max : 1;
}

static int write_data(const char *dir, const struct wp_harvest *h, const struct twin_set *set, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_gnuplot_open(&af, dir, set->name, "dat", err))
        return -1;
    FILE *fp = af.fp;
    double mark_height = 1.08 * set_max_samples_per_s(h, set);
    fprintf(fp, "# samples/s per kept iteration of the twins %s (repetition 0)\n", set->label);
    int block = 0;
    for (int s = 0; s < set->nruns; s++) {
        const struct wp_harvest_run *r = &h->runs[set->run[s]];
        fprintf(fp, "%s# series adapt=%s (point %s)\n# iteration samples_per_s plan_changed\n", block++ ? "\n\n" : "",
                adapt_of(r), r->point.id[0] ? r->point.id : r->dir);
        for (int i = 0; i < r->iterations; i++)
            fprintf(fp, "%ld %.6f %d\n", r->per_iteration[i].iteration, r->per_iteration[i].samples_per_s,
                    r->per_iteration[i].plan_changed);
    }
    for (int s = 0; s < set->nruns; s++) {
        const struct wp_harvest_run *r = &h->runs[set->run[s]];
        if (!has_marks(r))
            continue;
        fprintf(fp, "\n\n# plan changes of adapt=%s (point %s)\n# iteration mark_height\n", adapt_of(r),
                r->point.id[0] ? r->point.id : r->dir);
        for (int i = 0; i < r->iterations; i++)
            if (r->per_iteration[i].plan_changed)
                fprintf(fp, "%ld %.6f\n", r->per_iteration[i].iteration, mark_height);
    }
    return wp_atomic_commit(&af, err);
}

static void write_plot_command(FILE *fp, const struct wp_harvest *h, const struct twin_set *set)
{
    fputs("plot ", fp);
    for (int s = 0; s < set->nruns; s++) {
        char title[128];
        snprintf(title, sizeof title, "adapt=%s", adapt_of(&h->runs[set->run[s]]));
        fprintf(fp, "%s'%s.dat' index %d using 1:2 with linespoints lc %d lw 2 pt 7 ps 0.6 title ", s ? ", \\\n     " : "",
                set->name, s, s + 1);
        wp_gnuplot_string(fp, title);
    }
    int block = set->nruns;
    for (int s = 0; s < set->nruns; s++) {
        const struct wp_harvest_run *r = &h->runs[set->run[s]];
        if (!has_marks(r))
            continue;
        char title[160];
        snprintf(title, sizeof title, "adapt=%s: plan changed", adapt_of(r));
        fprintf(fp, ", \\\n     '%s.dat' index %d using 1:2 with impulses lc %d lw 1.5 dt 3 title ", set->name, block++,
                s + 1);
        wp_gnuplot_string(fp, title);
    }
    fputc('\n', fp);
}

static int write_script(const char *dir, const struct wp_harvest *h, const struct twin_set *set, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_gnuplot_open(&af, dir, set->name, "gp", err))
        return -1;
    FILE *fp = af.fp;
    const char *campaign = h->runs[set->run[0]].point.campaign;
    fprintf(fp, "# per-iteration plot of the twins %s of campaign %s, written by wavepipe harvest; run: gnuplot %s.gp\n",
            set->label, campaign, set->name);
    fputs("set datafile missing \"-\"\nset grid\nset key outside right top\n", fp);
    fprintf(fp, "set xlabel \"iteration\"\nset ylabel \"samples/s (each kept iteration)\"\nset yrange [0:%.6g]\n",
            1.15 * set_max_samples_per_s(h, set));
    /* the scenario's changes (the twins share it) as grey lines, named */
    const struct wp_changes *scen = &h->runs[set->run[0]].scenario;
    int marked = 0;
    for (int i = 0; i < scen->n; i++) {
        if (scen->v[i].iteration == 0)
            continue; /* the start */
        char text[400];
        wp_change_text(&scen->v[i], text, sizeof text);
        fprintf(fp, "set arrow from %ld, graph 0 to %ld, graph 1 nohead dt 2 lc rgb \"gray40\"\n", scen->v[i].iteration,
                scen->v[i].iteration);
        fputs("set label ", fp);
        wp_gnuplot_string(fp, text);
        fprintf(fp, " at %ld, graph %.2f left offset 0.3,0 font \",9\"\n", scen->v[i].iteration,
                0.97 - 0.04 * (marked++ % 2));
    }
    char title[800], marks[128]; /* two lines: which runs, what the marks are */
    snprintf(title, sizeof title, "%s: samples/s per iteration, %s", campaign, set->label);
    snprintf(marks, sizeof marks, "%sdotted: plan changes", marked ? "dashed grey: the scenario's changes; " : "");
    fputs("set title ", fp);
    wp_gnuplot_string(fp, title);
    fputs(" . \"\\n\" . ", fp);
    wp_gnuplot_string(fp, marks);
    fputc('\n', fp);
    for (int t = 0; t < WP_GNUPLOT_TERMINALS; t++) {
        wp_gnuplot_output(fp, t, set->name);
        write_plot_command(fp, h, set);
        fputs("unset output\n", fp);
    }
    return wp_atomic_commit(&af, err);
}

int wp_plots_adapt_write(const char *plots_dir, const struct wp_harvest *h, struct wp_plots_adapt *plots,
                         struct wp_err *err)
{
    memset(plots, 0, sizeof *plots);
    if (!wp_harvest_axis_varies(h, "adapt"))
        return 0;
    int nsets = 0;
    struct twin_set *sets = build_sets(h, &nsets);
    if (!sets)
        return wp_errorf(err, "out of memory building the per-iteration plots");
    if (nsets && !(plots->name = calloc((size_t)nsets, sizeof *plots->name))) {
        free_sets(sets, nsets);
        return wp_errorf(err, "out of memory building the per-iteration plots");
    }
    int rc = 0;
    for (int i = 0; rc == 0 && i < nsets; i++) {
        rc = write_data(plots_dir, h, &sets[i], err);
        if (rc == 0)
            rc = write_script(plots_dir, h, &sets[i], err);
        if (rc == 0)
            memcpy(plots->name[plots->nplots++], sets[i].name, sizeof sets[i].name);
    }
    free_sets(sets, nsets);
    if (rc)
        wp_plots_adapt_free(plots);
    return rc ? -1 : 0;
}

void wp_plots_adapt_free(struct wp_plots_adapt *plots)
{
    free(plots->name);
    plots->name = NULL;
    plots->nplots = 0;
}
