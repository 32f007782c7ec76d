/* `wavepipe sweep`: read a campaign file, expand it into points, render one
 * directory per point under results/<campaign>/ (point.cfg, model.cfg,
 * probe.sbatch, job.sbatch) and, with --submit, submit them with sbatch:
 * probe, then the run after it (afterok), job ids recorded in jobids.
 * Everything is validated and rendered in memory before anything is written,
 * so a bad campaign leaves no trace. */
#include <errno.h>
#include <getopt.h>
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
#include "cli/cli.h"
#include "cmd/commands.h"
#include "config/schema.h"
#include "util/atomic_file.h"
#include "util/datadir.h"
#include "util/strutil.h"

#define CMD "sweep"

static void usage(void)
{
    printf("Usage: wavepipe sweep CAMPAIGN.cfg [--dry-run | --submit] [--max-concurrent N]\n"
           "                      [--results DIR] [--templates DIR] [--wavepipe PATH]\n\n"
           "Expands a campaign file (jobs/campaigns/*.cfg) into points: the cartesian\n"
           "product of its axes (schedule, k, waves, chunks, micro_batches, nodes,\n"
           "ranks_per_node, policy, model, adapt, scenario), axes in a zip group taken together, points\n"
           "matching an exclude rule dropped, each point repeated `repetitions` times.\n"
           "Weak scaling multiplies global_batch_per_node (and layers_per_node, when\n"
           "given) by the point's nodes; strong scaling keeps global_batch fixed.\n"
           "Every value is validated (names of [A-Za-z0-9._-], numbers in range) and\n"
           "shell-quoted where a template uses it; a bad campaign is an error with\n"
           "file:line and nothing is written. A relative CAMPAIGN.cfg not found from\n"
           "here is looked up in the installed PREFIX/share/wavepipe (jobs/campaigns/).\n\n"
           "For each point it renders DIR/<campaign>/<point>/ (DIR: results):\n"
           "  point.cfg     the point's axes (read by wavepipe harvest)\n"
           "  model.cfg     the campaign's model file, layers set for the point (none with\n"
           "                compute = \"emulated\": its layer_table is the model)\n"
           "  changes.txt   the point's scenario (axis scenario): wavepipe run --changes\n"
           "  probe.sbatch  templates/probe.sbatch: srun --mpi=pmix wavepipe probe -> cluster.cfg\n"
           "  job.sbatch    templates/<template>.sbatch: env.txt, wavepipe run -> results.csv,\n"
           "                run.log, ckpt/ (resumed when Slurm requeues), then DONE or FAILED\n"
           "The chain is probe -> run; `wavepipe calibrate` joins it (probe -> calibrate\n"
           "-> run) when that command exists.\n\n"
           "Re-running skips points that are DONE and renders failed points again\n"
           "(FAILED removed; results.csv and ckpt/ kept, so the run resumes), saying\n"
           "why each failed when its run.log names a lost rank. Points submitted and\n"
           "not finished are left alone.\n\n"
           "Options:\n"
           "  --dry-run             render, and print the sbatch commands --submit would run\n"
           "  --submit              render and submit each point that is not DONE and not in\n"
           "                        the queue:\n"
           "                          sbatch --parsable --chdir=PT PT/probe.sbatch  -> P\n"
           "                          sbatch --parsable --dependency=afterok:P --chdir=PT PT/job.sbatch\n"
           "                        appending \"probe P\" and \"run R\" to PT/jobids\n"
           "  --max-concurrent N    at most N run jobs at once: run i also waits for run i-N\n"
           "                        (--dependency=afterok:P,afterany:R)\n"
           "  --results DIR         where point directories go (default: results)\n"
           "  --templates DIR       the templates (default: ./templates, else the templates/\n"
           "                        folder two levels above the campaign file, else the\n"
           "                        installed ones, PREFIX/share/wavepipe/templates)\n"
           "  --wavepipe PATH       the program the jobs run (default: this one)\n"
           "  -h, --help            this text\n\n"
           "Examples:\n"
           "  wavepipe sweep jobs/campaigns/cpu-weak-test.cfg --dry-run\n"
           "  wavepipe sweep jobs/campaigns/hanayo-weak.cfg --submit --max-concurrent 4\n"
           "  wavepipe status jobs/campaigns/hanayo-weak.cfg\n");
}

struct sweep_options {
    const char *campaign;
    const char *results;
    const char *templates;
    const char *wavepipe;
    int dry_run, submit, max_concurrent;
};

static int parse_options(int argc, char **argv, struct sweep_options *o)
{
    enum { OPT_DRY = 1000, OPT_SUBMIT, OPT_MAX, OPT_RESULTS, OPT_TEMPLATES, OPT_WAVEPIPE };
    static const struct option longopts[] = {
        {"dry-run", no_argument, NULL, OPT_DRY},          {"submit", no_argument, NULL, OPT_SUBMIT},
        {"max-concurrent", required_argument, NULL, OPT_MAX}, {"results", required_argument, NULL, OPT_RESULTS},
        {"templates", required_argument, NULL, OPT_TEMPLATES}, {"wavepipe", required_argument, NULL, OPT_WAVEPIPE},
        {"help", no_argument, NULL, 'h'},                 {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->results = "results";
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_DRY: o->dry_run = 1; break;
        case OPT_SUBMIT: o->submit = 1; break;
        case OPT_MAX:
            if (wp_parse_int_option(CMD, "--max-concurrent", optarg, 1, 100000, &o->max_concurrent))
                return 2;
            break;
        case OPT_RESULTS: o->results = optarg; break;
        case OPT_TEMPLATES: o->templates = optarg; break;
        case OPT_WAVEPIPE: o->wavepipe = optarg; break;
        case 'h': usage(); return 1;
        case ':': return wp_usage_error(CMD, "option %s needs a value", argv[optind - 1]);
        default: return wp_usage_error(CMD, "unknown option %s", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return wp_usage_error(CMD, "no campaign file given");
    o->campaign = argv[optind++];
    if (optind < argc)
        return wp_usage_error(CMD, "unexpected argument '%s'", argv[optind]);
    if (o->dry_run && o->submit)
        return wp_usage_error(CMD, "--dry-run and --submit cannot be combined");
    return 0;
}

static int file_exists(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The template file NAME.sbatch, looked up as --help says. */
static int find_template(const struct sweep_options *o, const char *name, char *out, size_t size,
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

int wp_cmd_sweep(int argc, char **argv)
{
    struct sweep_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : rc;
    char shipped[PATH_MAX]; /* a relative campaign not found from here: the installed one */
    o.campaign = wp_data_input(o.campaign, shipped, sizeof shipped);
    struct wp_err err = {{0}};
    struct wp_campaign *c = calloc(1, sizeof *c);
    struct wp_campaign_point *points = NULL;
    struct rendered *r = NULL;
    int npoints = 0, status = 1;
    char probe_tpl[PATH_MAX], run_tpl[PATH_MAX], results_abs[PATH_MAX], base[PATH_MAX], wavepipe[PATH_MAX];
    if (!c) {
        wp_errorf(&err, "out of memory");
        goto fail;
    }
    if (wp_campaign_read(o.campaign, c, &err) || wp_campaign_expand(c, &points, &npoints, &err))
        goto fail;
    if (find_template(&o, "probe", probe_tpl, sizeof probe_tpl, &err) ||
        find_template(&o, c->template_name, run_tpl, sizeof run_tpl, &err))
        goto fail;
    if (absolute(o.results, results_abs, sizeof results_abs, &err))
        goto fail;
    if ((size_t)snprintf(base, sizeof base, "%.*s/%s", (int)(sizeof base - WP_POINT_NAME_MAX - 2), results_abs,
                         c->name) >= sizeof base) {
        wp_errorf(&err, "path too long: %s", results_abs);
        goto fail;
    }
    if (o.wavepipe) {
        if (absolute(o.wavepipe, wavepipe, sizeof wavepipe, &err))
            goto fail;
    } else {
        char *self = realpath("/proc/self/exe", NULL);
        if (!self) {
            wp_errorf(&err, "cannot find this program's path (--wavepipe PATH)");
            goto fail;
        }
        wp_strlcpy(wavepipe, self, sizeof wavepipe);
        free(self);
    }

    /* phase 1: decide and render everything in memory */
    r = calloc((size_t)npoints, sizeof *r);
    if (!r) {
        wp_errorf(&err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < npoints; i++) {
        const struct wp_campaign_point *p = &points[i];
        if ((size_t)snprintf(r[i].dir, sizeof r[i].dir, "%s/%s", base, p->point.id) >= sizeof r[i].dir) {
            wp_errorf(&err, "path too long: %s", base);
            goto fail;
        }
        int query_failed = 0;
        r[i].action = decide(r[i].dir, o.submit, &err, &query_failed);
        if (query_failed)
            goto fail;
        if (r[i].action == ACT_SKIP_DONE || r[i].action == ACT_SKIP_SUBMITTED)
            continue;
        struct wp_render_input in = {c, p, r[i].dir, wavepipe, "probe"};
        if (wp_render_file(probe_tpl, &in, &r[i].probe, &err))
            goto fail;
        in.step = "run";
        if (wp_render_file(run_tpl, &in, &r[i].job, &err))
            goto fail;
        if (c->model_path[0] && !(r[i].model = model_text(c, p, &err))) /* emulated: the table is the model */
            goto fail;
        const struct wp_scenario *sc = wp_scenarios_find(&c->scenarios, p->scenario);
        if (sc && !(r[i].changes = wp_scenario_changes_text(sc))) {
            wp_errorf(&err, "out of memory");
            goto fail;
        }
    }

    /* phase 2: write */
    int rendered = 0, skipped_done = 0, skipped_submitted = 0, submitted = 0;
    char (*run_ids)[WP_SLURM_ID_MAX] = calloc((size_t)npoints, sizeof *run_ids);
    if (!run_ids) {
        wp_errorf(&err, "out of memory");
        goto fail;
    }
    for (int i = 0; i < npoints; i++) {
        const struct wp_campaign_point *p = &points[i];
        const char *dir = r[i].dir;
        if (r[i].action == ACT_SKIP_DONE) {
            skipped_done++;
            printf("%-40s done, skipped\n", p->point.id);
            continue;
        }
        if (r[i].action == ACT_SKIP_SUBMITTED) {
            skipped_submitted++;
            printf("%-40s submitted and not finished, left alone\n", p->point.id);
            continue;
        }
        char path[PATH_MAX + 64];
        if (mkdir_p(dir, &err))
            goto fail_ids;
        if (r[i].action == ACT_RERENDER_FAILED) {
            snprintf(path, sizeof path, "%s/FAILED", dir);
            unlink(path);
            char reason[200];
            snprintf(path, sizeof path, "%s/run.log", dir);
            if (wp_point_failure_reason(path, reason, sizeof reason))
                printf("%-40s failed: %s\n", p->point.id, reason);
        }
        snprintf(path, sizeof path, "%s/point.cfg", dir);
        if (wp_point_write(path, &p->point, &err) ||
            (r[i].model && write_text(dir, "model.cfg", r[i].model, 0, &err)) ||
            (r[i].changes && write_text(dir, "changes.txt", r[i].changes, 0, &err)) ||
            write_text(dir, "probe.sbatch", r[i].probe, 1, &err) || write_text(dir, "job.sbatch", r[i].job, 1, &err))
            goto fail_ids;
        rendered++;
        const char *verb = r[i].action == ACT_RERENDER_FAILED ? "failed, rendered again" : "rendered";
        if (!o.submit && !o.dry_run) {
            printf("%-40s %s\n", p->point.id, verb);
            continue;
        }
        char dep[128];
        int prev = submitted - o.max_concurrent;
        char probe_id[WP_SLURM_ID_MAX] = "PROBE";
        if (o.dry_run) {
            printf("%-40s %s\n  sbatch --parsable --chdir=%s %s/probe.sbatch\n", p->point.id, verb, dir, dir);
            snprintf(dep, sizeof dep, "afterok:$PROBE%s%s", o.max_concurrent && prev >= 0 ? ",afterany:" : "",
                     o.max_concurrent && prev >= 0 ? "$RUN" : "");
            printf("  sbatch --parsable --dependency=%s --chdir=%s %s/job.sbatch\n", dep, dir, dir);
            wp_strlcpy(run_ids[submitted++], "RUN", sizeof run_ids[0]);
            continue;
        }
        snprintf(path, sizeof path, "%s/probe.sbatch", dir);
        if (wp_slurm_sbatch(path, dir, NULL, probe_id, sizeof probe_id, &err))
            goto fail_ids;
        if (o.max_concurrent && prev >= 0)
            snprintf(dep, sizeof dep, "afterok:%s,afterany:%s", probe_id, run_ids[prev]);
        else
            snprintf(dep, sizeof dep, "afterok:%s", probe_id);
        snprintf(path, sizeof path, "%s/job.sbatch", dir);
        if (wp_slurm_sbatch(path, dir, dep, run_ids[submitted], sizeof run_ids[0], &err)) {
            append_jobids(dir, probe_id, "none", NULL);
            goto fail_ids;
        }
        if (append_jobids(dir, probe_id, run_ids[submitted], &err))
            goto fail_ids;
        printf("%-40s %s, submitted: probe %s, run %s\n", p->point.id, verb, probe_id, run_ids[submitted]);
        submitted++;
    }
    printf("%s: %d points in %s: %d rendered, %d done (skipped), %d submitted earlier and not finished%s",
           c->name, npoints, base, rendered, skipped_done, skipped_submitted, o.submit ? "" : "\n");
    if (o.submit)
        printf(", %d submitted now\n", submitted);
    status = 0;
fail_ids:
    free(run_ids);
fail:
    if (status)
        wp_err_print(CMD, &err);
    if (r)
        for (int i = 0; i < npoints; i++) {
            free(r[i].probe);
            free(r[i].job);
            free(r[i].model);
            free(r[i].changes);
        }
    free(r);
    free(points);
    free(c);
    return status;
}
