/* Template rendering for campaign points: @NAME@ placeholders, every value
 * shell-quoted, #SBATCH lines from the campaign (see render.h). */
#include "campaign/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/schedule.h"

/* A growing string. */
struct buf {
    char *s;
    size_t len, cap;
    int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

static void putf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof tmp) {
        b->oom = 1; /* lines are short by construction */
        return;
    }
    put(b, tmp, (size_t)n);
}

static void put_quoted(struct buf *b, const char *s)
{
    puts_(b, "'");
    for (const char *p = s; *p; p++) {
        if (*p == '\'')
            puts_(b, "'\\''");
        else
            put(b, p, 1);
    }
    puts_(b, "'");
}

int wp_shell_quote(const char *s, char *out, size_t size)
{
    struct buf b = {0};
    put_quoted(&b, s);
    int rc = (!b.oom && strlen(out) + b.len < size) ? 0 : -1;
    if (rc == 0)
        strcat(out, b.s);
    free(b.s);
    return rc;
}

static void put_opt(struct buf *b, const char *opt, const char *value)
{
    putf(b, " %s ", opt);
    put_quoted(b, value);
}

static void put_opt_int(struct buf *b, const char *opt, int value)
{
    char v[32];
    snprintf(v, sizeof v, "%d", value);
    put_opt(b, opt, v);
}

/* #SBATCH lines are read by sbatch, not bash: values there come from the
 * validated safe sets, and the point directory is checked by the caller. */
static void sbatch_lines(struct buf *b, const struct wp_render_input *in)
{
    const struct wp_campaign *c = in->campaign;
    const struct wp_campaign_point *p = in->point;
    const struct wp_campaign_slurm *s = &c->slurm;
    putf(b, "#SBATCH --job-name=%s-%s%s%s\n", c->name, p->point.id, strcmp(in->step, "run") ? "-" : "",
         strcmp(in->step, "run") ? in->step : "");
    putf(b, "#SBATCH --nodes=%d\n", p->nodes);
    putf(b, "#SBATCH --ntasks-per-node=%d\n", p->ranks_per_node);
    putf(b, "#SBATCH --cpus-per-task=%d\n", s->cpus_per_task);
    int gpus = s->gpus_per_node ? s->gpus_per_node : (strcmp(c->device, "cuda") == 0 ? p->ranks_per_node : 0);
    if (gpus > 0)
        putf(b, "#SBATCH --gpus-per-node=%d\n", gpus);
    putf(b, "#SBATCH --time=%s\n", s->time);
    putf(b, "#SBATCH --output=%s/%s-%%j.out\n", in->point_dir, in->step);
    putf(b, "#SBATCH --error=%s/%s-%%j.err\n", in->point_dir, in->step);
    if (s->partition[0])
        putf(b, "#SBATCH --partition=%s\n", s->partition);
    if (s->account[0])
        putf(b, "#SBATCH --account=%s\n", s->account);
    if (s->qos[0])
        putf(b, "#SBATCH --qos=%s\n", s->qos);
    if (s->constraint[0])
        putf(b, "#SBATCH --constraint=%s\n", s->constraint);
    if (strcmp(in->step, "run") == 0) {
        /* the warning before the time limit reaches the batch shell, which passes it on (templates/README.md) */
        if (s->signal_warning_s > 0)
            putf(b, "#SBATCH --signal=B:USR1@%d\n", s->signal_warning_s);
        puts_(b, s->requeue ? "#SBATCH --requeue\n" : "#SBATCH --no-requeue\n");
    }
    for (int i = 0; i < s->nextra; i++)
        putf(b, "#SBATCH %s\n", s->extra[i]);
}

/* The point's schedule: kind, its parameters, micro-batches, global batch
 * (what a plan file gives instead: run --plan refuses them). */
static void schedule_args(struct buf *b, const struct wp_render_input *in)
{
    const struct wp_campaign_point *p = in->point;
    put_opt(b, "--schedule", p->schedule);
    if (strcmp(p->schedule, "kfkb") == 0)
        put_opt_int(b, "--k", p->k);
    if (strcmp(p->schedule, "hanayo") == 0)
        put_opt_int(b, "--waves", p->waves);
    if (wp_sched_kind_from_name(p->schedule) >= 0 && wp_sched_kind_has_chunks(wp_sched_kind_from_name(p->schedule)))
        put_opt_int(b, "--chunks", p->chunks);
    if (p->data_parallel > 1)
        put_opt_int(b, "--data-parallel", p->data_parallel);
    if (wp_point_axis(&p->point, "policy"))
        put_opt(b, "--policy", p->policy);
    put_opt_int(b, "--micro-batches", p->micro_batches);
    put_opt_int(b, "--global-batch", p->global_batch);
}

/* The rest of the point's run options. */
static void base_args(struct buf *b, const struct wp_render_input *in)
{
    const struct wp_campaign *c = in->campaign;
    const struct wp_campaign_point *p = in->point;
    if (wp_point_axis(&p->point, "precision"))
        put_opt(b, "--precision", p->precision);
    if (strcmp(p->adapt, "none") != 0) {
        put_opt(b, "--adapt", p->adapt);
        put_opt_int(b, "--adapt-every", c->adapt_every);
        if (c->adapt_candidates[0] && strcmp(p->adapt, "partition") != 0)
            put_opt(b, "--adapt-candidates", c->adapt_candidates);
        char log[WP_CAMPAIGN_PATH_MAX + 16]; /* every decision and its reasons */
        snprintf(log, sizeof log, "%s/adapt.csv", in->point_dir);
        put_opt(b, "--adapt-log", log);
    }
    if (c->watchdog_s)
        put_opt_int(b, "--watchdog-s", c->watchdog_s);
    put_opt_int(b, "--steps", c->steps);
    if (c->data_path[0])
        put_opt(b, "--data", c->data_path);
    if (strcmp(c->compute, "emulated") == 0) {
        put_opt(b, "--compute", "emulated");
        put_opt(b, "--layers", c->layer_table_path);
        char factor[32];
        if (c->dilation != 1) { /* the scenario hook the run calls shapes the links alike */
            snprintf(factor, sizeof factor, "%g", c->dilation);
            put_opt(b, "--dilate", factor);
        }
        if (c->byte_scale != 1) {
            snprintf(factor, sizeof factor, "%g", c->byte_scale);
            put_opt(b, "--scale-bytes", factor);
        }
    }
    if (wp_scenarios_find(&c->scenarios, p->scenario)) { /* sweep writes the point's changes.txt */
        char changes[WP_CAMPAIGN_PATH_MAX + 16];
        snprintf(changes, sizeof changes, "%s/changes.txt", in->point_dir);
        put_opt(b, "--changes", changes);
        if (c->scenario_hook_path[0])
            put_opt(b, "--changes-hook", c->scenario_hook_path);
    }
}

static int render(const char *text, const char *name, const struct wp_render_input *in, const char *include_dir,
                  struct buf *b, struct wp_err *err);
static int read_whole(const char *path, struct buf *b, struct wp_err *err);

/* @RUN_STEP@: templates/run-step.sh from the template's own directory,
 * rendered in place (one copy of the launch, signal and exit handling for
 * every run template; the job script stays self-contained) */
static int include_run_step(struct buf *b, const struct wp_render_input *in, const char *include_dir,
                            struct wp_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/run-step.sh", include_dir);
    struct buf text = {0};
    int rc = read_whole(path, &text, err);
    if (rc == 0)
        rc = render(text.s ? text.s : "", path, in, NULL, b, err);
    free(text.s);
    return rc;
}

static int placeholder(struct buf *b, const char *name, const struct wp_render_input *in, int alone_on_line)
{
    const struct wp_campaign *c = in->campaign;
    const struct wp_campaign_point *p = in->point;
    char v[64];
    const char *value = NULL;
    if (strcmp(name, "SBATCH") == 0) {
        if (!alone_on_line)
            return -2;
        sbatch_lines(b, in);
        return 0;
    }
    if (strcmp(name, "MPI_LAUNCH") == 0) {
        if (strcmp(c->launcher, "mpiexec") == 0)
            putf(b, "mpiexec -n %d -ppn %d", p->nodes * p->ranks_per_node, p->ranks_per_node);
        else /* a task that dies ends the step at once (mpiexec does so by itself) */
            puts_(b, "srun --mpi=pmi2 --kill-on-bad-exit=1");
        return 0;
    }
    if (strcmp(name, "RUN_ARGS") == 0) {
        schedule_args(b, in);
        base_args(b, in);
        return 0;
    }
    if (strcmp(name, "RUN_ARGS_BASE") == 0) {
        base_args(b, in);
        return 0;
    }
    if (strcmp(name, "WAVEPIPE") == 0) value = in->wavepipe;
    else if (strcmp(name, "POINT_DIR") == 0) value = in->point_dir;
    else if (strcmp(name, "CAMPAIGN") == 0) value = c->name;
    else if (strcmp(name, "POINT") == 0) value = p->point.id;
    else if (strcmp(name, "STEP") == 0) value = in->step;
    else if (strcmp(name, "SCHEDULE") == 0) value = p->schedule;
    else if (strcmp(name, "DEVICE") == 0) value = c->device;
    else if (strcmp(name, "MODEL") == 0) value = "model.cfg";
    else if (strcmp(name, "PARTITION") == 0) value = c->slurm.partition;
    else if (strcmp(name, "LAYER_TABLE") == 0) value = c->layer_table_path; /* "" unless emulated */
    else {
        int iv;
        if (strcmp(name, "NODES") == 0) iv = p->nodes;
        else if (strcmp(name, "RANKS_PER_NODE") == 0) iv = p->ranks_per_node;
        else if (strcmp(name, "NTASKS") == 0) iv = p->nodes * p->ranks_per_node;
        else if (strcmp(name, "STEPS") == 0) iv = c->steps;
        else if (strcmp(name, "SAVE_EVERY") == 0) iv = c->save_every;
        else if (strcmp(name, "KEEP") == 0) iv = c->keep_checkpoints;
        else if (strcmp(name, "REQUEUE") == 0) iv = c->slurm.requeue;
        else if (strcmp(name, "RECOVER") == 0) iv = c->recovery.replan;
        else if (strcmp(name, "MIN_NODES") == 0) iv = c->recovery.min_nodes;
        else if (strcmp(name, "MAX_RECOVERIES") == 0) iv = c->recovery.max_recoveries;
        else if (strcmp(name, "REPETITION") == 0) iv = p->point.repetition;
        else if (strcmp(name, "GLOBAL_BATCH") == 0) iv = p->global_batch;
        else return -1;
        snprintf(v, sizeof v, "%d", iv);
        value = v;
    }
    put_quoted(b, value);
    return 0;
}

static int path_ok_for_sbatch(const char *s)
{
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+-") == strlen(s);
}

/* Appends text with its placeholders replaced to *b; include_dir: where
 * @RUN_STEP@ comes from (NULL: not here) */
static int render(const char *text, const char *name, const struct wp_render_input *in, const char *include_dir,
                  struct buf *b, struct wp_err *err)
{
    int line = 1;
    const char *line_start = text;
    for (const char *p = text; *p;) {
        if (*p == '@' && p[1] == '@') {
            puts_(b, "@");
            p += 2;
            continue;
        }
        if (*p == '@' && p[1] >= 'A' && p[1] <= 'Z') {
            size_t n = 1 + strspn(p + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
            if (p[n] == '@' && n - 1 < 64) {
                char key[64];
                memcpy(key, p + 1, n - 1);
                key[n - 1] = '\0';
                int alone = p == line_start && (p[n + 1] == '\n' || p[n + 1] == '\0');
                int included = strcmp(key, "RUN_STEP") == 0;
                int rc = !included ? placeholder(b, key, in, alone) : !alone ? -2 : !include_dir ? -3 : 0;
                if (rc == -1)
                    return wp_errorf(err, "%s:%d: unknown placeholder @%s@ (see templates/README.md)", name, line,
                                     key);
                if (rc == -2)
                    return wp_errorf(err, "%s:%d: @%s@ must stand alone on its line", name, line, key);
                if (rc == -3)
                    return wp_errorf(err, "%s:%d: @%s@ is not allowed here (only in a template file)", name, line,
                                     key);
                if (included && include_run_step(b, in, include_dir, err))
                    return -1;
                p += n + 1;
                if (alone && (strcmp(key, "SBATCH") == 0 || included) && *p == '\n') {
                    p++; /* the generated lines end with their own newlines */
                    line++;
                    line_start = p;
                }
                continue;
            }
        }
        put(b, p, 1);
        if (*p == '\n') {
            line++;
            line_start = p + 1;
        }
        p++;
    }
    return b->oom ? wp_errorf(err, "out of memory rendering %s", name) : 0;
}

static int render_script(const char *text, const char *name, const struct wp_render_input *in,
                         const char *include_dir, char **script, struct wp_err *err)
{
    *script = NULL;
    if (!path_ok_for_sbatch(in->point_dir))
        return wp_errorf(err, "the point directory %s has characters #SBATCH --output cannot take "
                         "(use letters, digits and . _ / + -)", in->point_dir);
    for (const char *q = in->wavepipe; *q; q++)
        if ((unsigned char)*q < 32 || *q == 127)
            return wp_errorf(err, "the program path %s has control characters", in->wavepipe);
    struct buf b = {0};
    if (render(text, name, in, include_dir, &b, err)) {
        free(b.s);
        return -1;
    }
    *script = b.s ? b.s : strdup("");
    return *script ? 0 : wp_errorf(err, "out of memory rendering %s", name);
}

int wp_render_text(const char *text, const char *name, const struct wp_render_input *in, char **script,
                   struct wp_err *err)
{
    return render_script(text, name, in, NULL, script, err);
}

static int read_whole(const char *path, struct buf *b, struct wp_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return wp_errorf(err, "cannot read template %s: %s", path, strerror(errno));
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
        put(b, chunk, n);
    int bad = ferror(fp);
    fclose(fp);
    if (bad || b->oom) {
        free(b->s);
        b->s = NULL;
        return wp_errorf(err, "cannot read template %s", path);
    }
    return 0;
}

int wp_render_file(const char *template_path, const struct wp_render_input *in, char **script,
                   struct wp_err *err)
{
    struct buf b = {0};
    if (read_whole(template_path, &b, err))
        return -1;
    char dir[4200];
    const char *slash = strrchr(template_path, '/');
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - template_path), template_path);
    else
        snprintf(dir, sizeof dir, ".");
    int rc = render_script(b.s ? b.s : "", template_path, in, dir, script, err);
    free(b.s);
    return rc;
}
