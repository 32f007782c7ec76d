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
#include "campaign/status.h"
#include "config/schema.h"
#include "util/atomic_file.h"
#include "util/datadir.h"
#include "util/strutil.h"

/* The template file NAME.sbatch: in --templates DIR, else as the
 * campaign's own paths (templates/NAME.sbatch beside the campaign, in the
 * data directory, from here: wp_campaign_find). */
static int find_template(const struct wp_sweep_options *o, const char *name, char *out, size_t size,
                         struct wp_err *err)
{
    char rel[64 + WP_POINT_NAME_MAX], tried[3 * PATH_MAX + 8];
    if (o->templates) {
        snprintf(out, size, "%s/%s.sbatch", o->templates, name);
        if (access(out, R_OK) != 0)
            return wp_errorf(err, "template %s.sbatch not found (tried %s)", name, out);
        return 0;
    }
    snprintf(rel, sizeof rel, "templates/%s.sbatch", name);
    if (wp_campaign_find(o->campaign, rel, out, size, tried, sizeof tried))
        return wp_errorf(err, "template %s.sbatch not found (looked for %s; --templates DIR)", name, tried);
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
    struct wp_slurm_job stuck; /* a run waiting for ever on a failed probe: cancelled before resubmitting */
    int asked;                 /* Slurm was asked about its jobs */
    char *probe, *job, *model, *changes; /* model: NULL for emulated compute; changes: NULL without a scenario */
};

/* What to do with a point on disk, as `wavepipe status` sees it (status.h),
 * the same with --dry-run and --submit: DONE, skipped; failed (FAILED,
 * out of the queue without DONE, or its run waiting for a failed probe),
 * rendered again; pending or running in the queue, left alone; not yet
 * submitted, rendered. Without Slurm to ask (a dry run where squeue is
 * not), a submitted point is left alone. */
static int decide(const char *dir, int ask_slurm, int submit, struct rendered *r, struct wp_err *err)
{
    struct wp_point_report rep;
    if (wp_point_status(dir, ask_slurm, &rep, err) && submit)
        return -1; /* a dry run goes on from the files */
    r->asked = rep.asked;
    r->stuck = rep.stuck;
    if (rep.state == WP_POINT_DONE)
        r->action = ACT_SKIP_DONE;
    else if (rep.state == WP_POINT_FAILED)
        r->action = ACT_RERENDER_FAILED;
    else if (rep.submitted)
        r->action = ACT_SKIP_SUBMITTED;
    else
        r->action = ACT_RENDER;
    return 0;
}

/* A campaign's points and what is made of them. */
struct sweep {
    struct wp_campaign *c;
    struct wp_campaign_point *points;
    int npoints;
    struct rendered *r;
    int ask_slurm; /* squeue can be asked (always with --submit) */
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

/* With --submit, Slurm's commands before anything is written: sbatch to
 * submit, squeue (and sacct where there is accounting) to tell what is in
 * the queue. A dry run asks squeue when it is there. */
static int find_slurm(const struct wp_sweep_options *o, struct sweep *w, struct wp_err *err)
{
    w->ask_slurm = wp_slurm_have("squeue");
    if (!o->submit)
        return 0;
    const char *missing = !wp_slurm_have("sbatch") ? "sbatch" : !w->ask_slurm ? "squeue" : NULL;
    if (missing)
        return wp_errorf(err, "%s is not on PATH, so nothing was rendered or submitted: load Slurm's commands "
                              "(module load slurm; on the test cluster `. DIR/env`), or render the points and "
                              "see the sbatch commands with --dry-run", missing);
    return 0;
}

/* Whether path is under /tmp, and not one of the colon-separated paths of
 * $WAVEPIPE_SHARED_TMP (what the test cluster keeps visible on its nodes). */
static int private_tmp(const char *path)
{
    if (strncmp(path, "/tmp/", 5) != 0 && strcmp(path, "/tmp") != 0)
        return 0;
    const char *shared = getenv("WAVEPIPE_SHARED_TMP");
    for (const char *p = shared ? shared : ""; *p;) {
        size_t len = strcspn(p, ":");
        if (len > 1 && strncmp(path, p, len) == 0 && (path[len] == '/' || path[len] == '\0'))
            return 0;
        p += len + (p[len] == ':');
    }
    return 1;
}

/* Warns (on out, before anything is submitted) about the program or the
 * results under a /tmp the nodes may not share. */
static void warn_unshared(const struct wp_sweep_options *o, const struct sweep *w, FILE *out)
{
    if (!o->submit && !o->dry_run)
        return;
    const char *what[2][2] = {{"the program the jobs run", w->wavepipe}, {"the results folder", w->base}};
    for (int i = 0; i < 2; i++)
        if (private_tmp(what[i][1]))
            fprintf(out, "warning: %s, %s, is under /tmp, which compute nodes do not share as a rule (each node of "
                         "the test cluster has its own, unless `vcluster.sh up` keeps it: WAVEPIPE_SHARED_TMP); the "
                         "jobs would not find it there: put it on a shared file system%s\n",
                    what[i][0], what[i][1], i ? " (--results DIR)" : " (--wavepipe PATH)");
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
        if (decide(r->dir, w->ask_slurm, o->submit, r, err))
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

/* The files a point gets, in the order they are written. */
static const char *const point_files[] = {"point.cfg", "model.cfg", "changes.txt", "probe.sbatch", "job.sbatch"};

/* How a point was before this sweep wrote it, to put it back when its
 * submission fails: whether its directory was there, and its FAILED line. */
struct before {
    int existed;
    char failed[512];
};

/* Writes one rendered point's files (FAILED removed, its reason said). */
static int write_point(const struct wp_campaign_point *p, const struct rendered *r, struct before *was, FILE *out,
                       struct wp_err *err)
{
    const char *dir = r->dir;
    char path[PATH_MAX + 64];
    struct stat st;
    was->existed = stat(dir, &st) == 0;
    was->failed[0] = '\0';
    if (mkdir_p(dir, err))
        return -1;
    if (r->action == ACT_RERENDER_FAILED) {
        snprintf(path, sizeof path, "%s/FAILED", dir);
        FILE *fp = fopen(path, "r");
        if (fp) {
            size_t got = fread(was->failed, 1, sizeof was->failed - 1, fp);
            was->failed[got] = '\0';
            fclose(fp);
        }
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

/* A point whose submission failed goes back to how it was: a new one not
 * rendered at all, a failed one failed again (to be resubmitted). */
static void put_back(const struct rendered *r, const struct before *was)
{
    char path[PATH_MAX + 64];
    if (!was->existed) {
        for (size_t i = 0; i < sizeof point_files / sizeof point_files[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", r->dir, point_files[i]);
            unlink(path);
        }
        rmdir(r->dir);
        return;
    }
    if (was->failed[0]) {
        struct wp_err ignored;
        write_text(r->dir, "FAILED", was->failed, 0, &ignored);
    }
}

/* A written point's sbatch commands: printed (dry run) or run, the jobs
 * appended to its jobids. A run an older sweep left waiting for a failed
 * probe is cancelled first. Nothing is recorded unless both were taken
 * (a probe whose run was refused is cancelled). */
static int submit_point(const struct wp_sweep_options *o, const struct wp_campaign_point *p, const struct rendered *r,
                        const char *verb, struct written *n, FILE *out, struct wp_err *err)
{
    const char *dir = r->dir;
    char path[PATH_MAX + 64], dep[128];
    int prev = n->submitted - o->max_concurrent;
    if (o->dry_run) {
        fprintf(out, "%-40s %s\n", p->point.id, verb);
        if (r->stuck.id[0])
            fprintf(out, "  scancel %s\n", r->stuck.id);
        fprintf(out, "  sbatch --parsable --chdir=%s %s/probe.sbatch\n", dir, dir);
        snprintf(dep, sizeof dep, "afterok:$PROBE%s%s", o->max_concurrent && prev >= 0 ? ",afterany:" : "",
                 o->max_concurrent && prev >= 0 ? "$RUN" : "");
        fprintf(out, "  sbatch --parsable --kill-on-invalid-dep=yes --dependency=%s --chdir=%s %s/job.sbatch\n", dep,
                dir, dir);
        wp_strlcpy(n->run_ids[n->submitted++], "RUN", sizeof n->run_ids[0]);
        return 0;
    }
    if (r->stuck.id[0] && wp_slurm_cancel(r->stuck.id, err))
        return -1;
    struct wp_slurm_job jobs[2] = {{.step = "probe"}, {.step = "run"}};
    snprintf(path, sizeof path, "%s/probe.sbatch", dir);
    if (wp_slurm_sbatch(path, dir, NULL, &jobs[0], err))
        return -1;
    if (o->max_concurrent && prev >= 0)
        snprintf(dep, sizeof dep, "afterok:%s,afterany:%s", jobs[0].id, n->run_ids[prev]);
    else
        snprintf(dep, sizeof dep, "afterok:%s", jobs[0].id);
    snprintf(path, sizeof path, "%s/job.sbatch", dir);
    struct wp_err ignored;
    if (wp_slurm_sbatch(path, dir, dep, &jobs[1], err)) {
        wp_slurm_cancel(jobs[0].id, &ignored);
        return -1;
    }
    if (wp_slurm_append_jobs(dir, jobs, 2, err)) {
        wp_slurm_cancel(jobs[1].id, &ignored);
        wp_slurm_cancel(jobs[0].id, &ignored);
        return -1;
    }
    wp_strlcpy(n->run_ids[n->submitted], jobs[1].id, sizeof n->run_ids[0]);
    fprintf(out, "%-40s %s, submitted: probe %s, run %s%s%s\n", p->point.id, verb, jobs[0].id, jobs[1].id,
            r->stuck.id[0] ? ", cancelled the run waiting for ever: " : "", r->stuck.id);
    n->submitted++;
    return 0;
}

static void summary(const struct wp_sweep_options *o, const struct sweep *w, const struct written *n, FILE *out)
{
    fprintf(out, "%s: %d points in %s: %d rendered, %d done (skipped), %d submitted earlier and not finished%s",
            w->c->name, w->npoints, w->base, n->rendered, n->skipped_done, n->skipped_submitted, o->submit ? "" : "\n");
    if (o->submit)
        fprintf(out, ", %d submitted now\n", n->submitted);
}

/* Phase 2: write (and submit), one line per point, then the summary. A
 * point whose submission fails is put back as it was and the sweep stops
 * there: every point is submitted whole or not at all, and the next
 * --submit goes on from it. */
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
            fprintf(out, "%-40s submitted and not finished, left alone%s\n", p->point.id,
                    r->asked ? "" : " (Slurm not asked: no squeue here, or it did not answer)");
            continue;
        }
        struct before was;
        if (write_point(p, r, &was, out, err)) {
            status = -1;
            break;
        }
        const char *verb = r->action == ACT_RERENDER_FAILED ? "failed, rendered again" : "rendered";
        if (!o->submit && !o->dry_run)
            fprintf(out, "%-40s %s\n", p->point.id, verb);
        else if ((status = submit_point(o, p, r, verb, &n, out, err)) != 0) {
            put_back(r, &was);
            wp_err_prefix(err, "point %s not submitted (put back as it was; %d points submitted before it, the "
                               "rest not rendered: `wavepipe sweep --submit` again goes on from it): ",
                          p->point.id, n.submitted);
            break;
        }
        n.rendered++;
    }
    if (status == 0)
        summary(o, w, &n, out);
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
             find_slurm(o, &w, err) == 0 && sweep_paths(o, &w, err) == 0 && render_all(o, &w, err) == 0) {
        warn_unshared(o, &w, out);
        status = write_all(o, &w, out, err);
    }
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
