/* Sweeping a campaign (see sweep.h): the point directories decided,
 * rendered in memory, then written and submitted. */
#include "campaign/sweep.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "campaign/campaign.h"
#include "campaign/failure.h"
#include "campaign/point.h"
#include "campaign/render.h"
#include "campaign/slurm.h"
#include "config/schema.h"
#include "util/atomic_file.h"
#include "util/datadir.h"
#include "util/strutil.h"

static int file_exists(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The template file NAME.sbatch, looked up as --help says. */
static int find_template(const struct wp_sweep_options *o, const char *name, char *out, size_t size,
                         struct wp_err *err)
{
    if (o->templates) {
        snprintf(out, size, "%s/%s.sbatch", o->templates, name);
    } else {
        snprintf(out, size, "templates/%s.sbatch", name);
        if (access(out, R_OK) != 0) {
            const char *slash = strrchr(o->campaign, '/');
            int dlen = slash ? (int)(slash - o->campaign) : 1;
            snprintf(out, size, "%.*s/../../templates/%s.sbatch", dlen, slash ? o->campaign : ".", name);
        }
        if (access(out, R_OK) != 0) {
            char rel[64 + WP_POINT_NAME_MAX];
            snprintf(rel, sizeof rel, "templates/%s.sbatch", name);
            wp_data_path(rel, out, size);
        }
    }
    if (access(out, R_OK) != 0)
        return wp_errorf(err, "template %s.sbatch not found (tried %s; --templates DIR)", name, out);
    return 0;
}

static int absolute(const char *path, char *out, size_t size, struct wp_err *err)
{
    if (path[0] == '/') {
        wp_strlcpy(out, path, size);
        return 0;
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return wp_errorf(err, "getcwd: %s", strerror(errno));
    if ((size_t)snprintf(out, size, "%s/%s", cwd, path) >= size)
        return wp_errorf(err, "path too long: %s", path);
    return 0;
}

/* The model file of a point with its layers set, as text. */
static char *model_text(const struct wp_campaign *c, const struct wp_campaign_point *p, struct wp_err *err)
{
    char path[WP_CAMPAIGN_PATH_MAX + 80];
    if (wp_point_axis(&p->point, "model")) {
        const char *slash = strrchr(c->model_path, '/');
        snprintf(path, sizeof path, "%.*s/%s.cfg", (int)(slash - c->model_path), c->model_path, p->model_name);
    } else {
        wp_strlcpy(path, c->model_path, sizeof path);
    }
    config_t cfg;
    config_init(&cfg);
    char *text = NULL;
    if (config_read_file(&cfg, path) != CONFIG_TRUE) {
        wp_errorf(err, "%s:%d: %s", path, config_error_line(&cfg), config_error_text(&cfg));
    } else {
        config_setting_t *layers = config_lookup(&cfg, "model.layers");
        if (!layers || config_setting_set_int(layers, p->layers) != CONFIG_TRUE)
            wp_errorf(err, "%s: cannot set model.layers", path);
        else
            text = wp_cfg_write_text(&cfg);
        if (!text && layers)
            wp_errorf(err, "out of memory");
    }
    config_destroy(&cfg);
    return text;
}

static int write_text(const char *dir, const char *name, const char *text, int executable, struct wp_err *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err))
        return -1;
    if (fputs(text, af.fp) == EOF) {
        wp_atomic_abort(&af);
        return wp_errorf(err, "cannot write %s", path);
    }
    if (executable)
        (void)fchmod(fileno(af.fp), 0755);
    return wp_atomic_commit(&af, err);
}

static int mkdir_p(const char *path, struct wp_err *err)
{
    char tmp[PATH_MAX];
    wp_strlcpy(tmp, path, sizeof tmp);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
            return wp_errorf(err, "cannot create %s: %s", tmp, strerror(errno));
        *p = '/';
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return wp_errorf(err, "cannot create %s: %s", tmp, strerror(errno));
    return 0;
}

enum action { ACT_RENDER, ACT_RERENDER_FAILED, ACT_SKIP_DONE, ACT_SKIP_SUBMITTED };

struct rendered {
    char dir[PATH_MAX];
    enum action action;
    char *probe, *job, *model, *changes; /* model: NULL for emulated compute; changes: NULL without a scenario */
};

/* What to do with a point already on disk. In the queue (or, without
 * --submit, submitted and not finished): leave it alone. */
static enum action decide(const char *dir, int submit, struct wp_err *err, int *query_failed)
{
    if (file_exists(dir, "DONE"))
        return ACT_SKIP_DONE;
    if (file_exists(dir, "FAILED"))
        return ACT_RERENDER_FAILED;
    char steps[8][16], ids[8][WP_SLURM_ID_MAX];
    int n = wp_slurm_read_jobids(dir, steps, ids, 8);
    if (n == 0)
        return ACT_RENDER;
    if (!submit)
        return ACT_SKIP_SUBMITTED;
    const char *idp[8];
    for (int i = 0; i < n; i++)
        idp[i] = ids[i];
    char states[8][WP_SLURM_STATE_MAX];
    int have_sacct = 0;
    if (wp_slurm_states(idp, n, states, &have_sacct, err)) {
        *query_failed = 1;
        return ACT_SKIP_SUBMITTED;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(states[i], "PENDING") == 0 || strcmp(states[i], "RUNNING") == 0 ||
            strcmp(states[i], "CONFIGURING") == 0 || strcmp(states[i], "COMPLETING") == 0 ||
            strcmp(states[i], "REQUEUED") == 0 || strcmp(states[i], "SUSPENDED") == 0)
            return ACT_SKIP_SUBMITTED;
    return ACT_RERENDER_FAILED; /* left the queue without DONE: failed or lost */
}

static int append_jobids(const char *dir, const char *probe_id, const char *run_id, struct wp_err *err)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/jobids", dir);
    char old[8192] = "";
    FILE *fp = fopen(path, "r");
    if (fp) {
        size_t n = fread(old, 1, sizeof old - 1, fp);
        old[n] = '\0';
        fclose(fp);
    }
    char text[8192 + 128];
    snprintf(text, sizeof text, "%sprobe %s\nrun %s\n", old, probe_id, run_id);
    return write_text(dir, "jobids", text, 0, err);
}

/* A campaign's points and what is made of them. */
struct sweep {
    struct wp_campaign *c;
    struct wp_campaign_point *points;
    int npoints;
    struct rendered *r;
    char probe_tpl[PATH_MAX], run_tpl[PATH_MAX], base[PATH_MAX], wavepipe[PATH_MAX];
};

/* The templates, the campaign's folder under the results and the program
 * the jobs run. */
static int sweep_paths(const struct wp_sweep_options *o, struct sweep *w, struct wp_err *err)
{
    char results_abs[PATH_MAX];
    if (find_template(o, "probe", w->probe_tpl, sizeof w->probe_tpl, err) ||
        find_template(o, w->c->template_name, w->run_tpl, sizeof w->run_tpl, err))
        return -1;
    if (absolute(o->results, results_abs, sizeof results_abs, err))
        return -1;
    if ((size_t)snprintf(w->base, sizeof w->base, "%.*s/%s", (int)(sizeof w->base - WP_POINT_NAME_MAX - 2),
                         results_abs, w->c->name) >= sizeof w->base)
        return wp_errorf(err, "path too long: %s", results_abs);
    if (o->wavepipe)
        return absolute(o->wavepipe, w->wavepipe, sizeof w->wavepipe, err);
    char *self = realpath("/proc/self/exe", NULL);
    if (!self)
        return wp_errorf(err, "cannot find this program's path (--wavepipe PATH)");
    wp_strlcpy(w->wavepipe, self, sizeof w->wavepipe);
    free(self);
    return 0;
}

/* Phase 1: decide and render everything in memory. */
static int render_all(const struct wp_sweep_options *o, struct sweep *w, struct wp_err *err)
{
    const struct wp_campaign *c = w->c;
    w->r = calloc((size_t)w->npoints, sizeof *w->r);
    if (!w->r)
        return wp_errorf(err, "out of memory");
    for (int i = 0; i < w->npoints; i++) {
        const struct wp_campaign_point *p = &w->points[i];
        struct rendered *r = &w->r[i];
        if ((size_t)snprintf(r->dir, sizeof r->dir, "%s/%s", w->base, p->point.id) >= sizeof r->dir)
            return wp_errorf(err, "path too long: %s", w->base);
        int query_failed = 0;
        r->action = decide(r->dir, o->submit, err, &query_failed);
        if (query_failed)
            return -1;
        if (r->action == ACT_SKIP_DONE || r->action == ACT_SKIP_SUBMITTED)
            continue;
        struct wp_render_input in = {c, p, r->dir, w->wavepipe, "probe"};
        if (wp_render_file(w->probe_tpl, &in, &r->probe, err))
            return -1;
        in.step = "run";
        if (wp_render_file(w->run_tpl, &in, &r->job, err))
            return -1;
        if (c->model_path[0] && !(r->model = model_text(c, p, err))) /* emulated: the table is the model */
            return -1;
        const struct wp_scenario *sc = wp_scenarios_find(&c->scenarios, p->scenario);
        if (sc && !(r->changes = wp_scenario_changes_text(sc)))
            return wp_errorf(err, "out of memory");
    }
    return 0;
}

/* Phase 2's counts, and the run jobs' ids so far (for --max-concurrent). */
struct written {
    int rendered, skipped_done, skipped_submitted, submitted;
    char (*run_ids)[WP_SLURM_ID_MAX];
};

/* Writes one rendered point's files (FAILED removed, its reason said). */
static int write_point(const struct wp_campaign_point *p, const struct rendered *r, FILE *out, struct wp_err *err)
{
    const char *dir = r->dir;
    char path[PATH_MAX + 64];
    if (mkdir_p(dir, err))
        return -1;
    if (r->action == ACT_RERENDER_FAILED) {
        snprintf(path, sizeof path, "%s/FAILED", dir);
        unlink(path);
        char reason[200];
        snprintf(path, sizeof path, "%s/run.log", dir);
        if (wp_point_failure_reason(path, reason, sizeof reason))
            fprintf(out, "%-40s failed: %s\n", p->point.id, reason);
    }
    snprintf(path, sizeof path, "%s/point.cfg", dir);
    if (wp_point_write(path, &p->point, err) || (r->model && write_text(dir, "model.cfg", r->model, 0, err)) ||
        (r->changes && write_text(dir, "changes.txt", r->changes, 0, err)) ||
        write_text(dir, "probe.sbatch", r->probe, 1, err) || write_text(dir, "job.sbatch", r->job, 1, err))
        return -1;
    return 0;
}

/* A written point's sbatch commands: printed (dry run) or run, the job ids
 * appended to its jobids. */
static int submit_point(const struct wp_sweep_options *o, const struct wp_campaign_point *p, const struct rendered *r,
                        const char *verb, struct written *n, FILE *out, struct wp_err *err)
{
    const char *dir = r->dir;
    char path[PATH_MAX + 64], dep[128];
    int prev = n->submitted - o->max_concurrent;
    char probe_id[WP_SLURM_ID_MAX] = "PROBE";
    if (o->dry_run) {
        fprintf(out, "%-40s %s\n  sbatch --parsable --chdir=%s %s/probe.sbatch\n", p->point.id, verb, dir, dir);
        snprintf(dep, sizeof dep, "afterok:$PROBE%s%s", o->max_concurrent && prev >= 0 ? ",afterany:" : "",
                 o->max_concurrent && prev >= 0 ? "$RUN" : "");
        fprintf(out, "  sbatch --parsable --dependency=%s --chdir=%s %s/job.sbatch\n", dep, dir, dir);
        wp_strlcpy(n->run_ids[n->submitted++], "RUN", sizeof n->run_ids[0]);
        return 0;
    }
    snprintf(path, sizeof path, "%s/probe.sbatch", dir);
    if (wp_slurm_sbatch(path, dir, NULL, probe_id, sizeof probe_id, err))
        return -1;
    if (o->max_concurrent && prev >= 0)
        snprintf(dep, sizeof dep, "afterok:%s,afterany:%s", probe_id, n->run_ids[prev]);
    else
        snprintf(dep, sizeof dep, "afterok:%s", probe_id);
    snprintf(path, sizeof path, "%s/job.sbatch", dir);
    if (wp_slurm_sbatch(path, dir, dep, n->run_ids[n->submitted], sizeof n->run_ids[0], err)) {
        append_jobids(dir, probe_id, "none", NULL);
        return -1;
    }
    if (append_jobids(dir, probe_id, n->run_ids[n->submitted], err))
        return -1;
    fprintf(out, "%-40s %s, submitted: probe %s, run %s\n", p->point.id, verb, probe_id, n->run_ids[n->submitted]);
    n->submitted++;
    return 0;
}

/* Phase 2: write (and submit), one line per point, then the summary. */
static int write_all(const struct wp_sweep_options *o, const struct sweep *w, FILE *out, struct wp_err *err)
{
    struct written n = {0, 0, 0, 0, calloc((size_t)w->npoints, sizeof *n.run_ids)};
    if (!n.run_ids)
        return wp_errorf(err, "out of memory");
    int status = 0;
    for (int i = 0; i < w->npoints && status == 0; i++) {
        const struct wp_campaign_point *p = &w->points[i];
        const struct rendered *r = &w->r[i];
        if (r->action == ACT_SKIP_DONE) {
            n.skipped_done++;
            fprintf(out, "%-40s done, skipped\n", p->point.id);
            continue;
        }
        if (r->action == ACT_SKIP_SUBMITTED) {
            n.skipped_submitted++;
            fprintf(out, "%-40s submitted and not finished, left alone\n", p->point.id);
            continue;
        }
        if (write_point(p, r, out, err)) {
            status = -1;
            break;
        }
        n.rendered++;
        const char *verb = r->action == ACT_RERENDER_FAILED ? "failed, rendered again" : "rendered";
        if (!o->submit && !o->dry_run)
            fprintf(out, "%-40s %s\n", p->point.id, verb);
        else
            status = submit_point(o, p, r, verb, &n, out, err);
    }
    if (status == 0) {
        fprintf(out, "%s: %d points in %s: %d rendered, %d done (skipped), %d submitted earlier and not finished%s",
                w->c->name, w->npoints, w->base, n.rendered, n.skipped_done, n.skipped_submitted,
                o->submit ? "" : "\n");
        if (o->submit)
            fprintf(out, ", %d submitted now\n", n.submitted);
    }
    free(n.run_ids);
    return status;
}

int wp_sweep(const struct wp_sweep_options *o, FILE *out, struct wp_err *err)
{
    struct sweep w;
    memset(&w, 0, sizeof w);
    int status = -1;
    if (!(w.c = calloc(1, sizeof *w.c)))
        wp_errorf(err, "out of memory");
    else if (wp_campaign_read(o->campaign, w.c, err) == 0 && wp_campaign_expand(w.c, &w.points, &w.npoints, err) == 0 &&
             sweep_paths(o, &w, err) == 0 && render_all(o, &w, err) == 0)
        status = write_all(o, &w, out, err);
    if (w.r)
        for (int i = 0; i < w.npoints; i++) {
            free(w.r[i].probe);
            free(w.r[i].job);
            free(w.r[i].model);
            free(w.r[i].changes);
        }
    free(w.r);
    free(w.points);
    free(w.c);
    return status;
}
