/* Campaign files: schema, validation of every value, expansion into points
 * (cartesian product, zip groups, exclude rules), weak/strong derivation and
 * point ids. See campaign.h for the format. */
#include "campaign/campaign.h"

#include <libconfig.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/schema.h"
#include "plan/layers.h"
#include "sched/generate.h"
#include "util/datadir.h"
#include "util/strutil.h"

const char *const wp_campaign_axis_names[] = {
    "schedule", "k", "waves", "chunks", "data_parallel", "micro_batches", "nodes", "ranks_per_node", "policy", "model",
    "adapt", "scenario", "precision", NULL};

static const char *const adapt_modes[] = {"none", "k", "partition", "both", NULL}; /* run --adapt */
static const char *const scalings[] = {"weak", "strong", NULL};
static const char *const launchers[] = {"srun", "mpiexec", NULL};
static const char *const devices[] = {"cpu", "cuda", NULL};
static const char *const computes[] = {"real", "emulated", NULL}; /* run --compute */
static const char *const recoveries[] = {"none", "replan", NULL};  /* recovery.h */

static const struct wp_cfg_key slurm_keys[] = {
    WP_KEY("partition", WP_CFG_STRING, 0),
    WP_KEY("account", WP_CFG_STRING, 0),
    WP_KEY("qos", WP_CFG_STRING, 0),
    WP_KEY("constraint", WP_CFG_STRING, 0),
    WP_KEY("time", WP_CFG_STRING, 0),
    WP_KEY_RANGE("cpus_per_task", WP_CFG_INT, 0, 1, 1024),
    WP_KEY_RANGE("gpus_per_node", WP_CFG_INT, 0, 0, 64),
    WP_KEY("extra", WP_CFG_STRING_ARRAY, 0),
    WP_KEY_RANGE("signal_warning_s", WP_CFG_INT, 0, 0, 65535),
    WP_KEY("requeue", WP_CFG_BOOL, 0),
    WP_KEY_END};

static const struct wp_cfg_key axes_keys[] = {
    WP_KEY("schedule", WP_CFG_STRING_ARRAY, 0),
    WP_KEY_RANGE("k", WP_CFG_INT_ARRAY, 0, 1, 4096),
    WP_KEY_RANGE("waves", WP_CFG_INT_ARRAY, 0, 1, 64),
    WP_KEY_RANGE("chunks", WP_CFG_INT_ARRAY, 0, 1, 64),
    WP_KEY_RANGE("data_parallel", WP_CFG_INT_ARRAY, 0, 1, 4096),
    WP_KEY_RANGE("micro_batches", WP_CFG_INT_ARRAY, 0, 1, 65536),
    WP_KEY_RANGE("nodes", WP_CFG_INT_ARRAY, 0, 1, 100000),
    WP_KEY_RANGE("ranks_per_node", WP_CFG_INT_ARRAY, 0, 1, 1024),
    WP_KEY("policy", WP_CFG_STRING_ARRAY, 0),
    WP_KEY("model", WP_CFG_STRING_ARRAY, 0),
    WP_KEY("adapt", WP_CFG_STRING_ARRAY, 0),
    WP_KEY("scenario", WP_CFG_STRING_ARRAY, 0),
    WP_KEY("precision", WP_CFG_STRING_ARRAY, 0),
    WP_KEY_END};

/* exclude groups name axes with a value or a list of values, and scenarios
 * have names of the campaign's choosing: checked by hand */
static const struct wp_cfg_key campaign_keys[] = {
    WP_KEY("format", WP_CFG_STRING, 1),
    WP_KEY_RANGE("version", WP_CFG_INT, 1, 1, 1),
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY("template", WP_CFG_STRING, 1),
    WP_KEY("model", WP_CFG_STRING, 0), /* required, but with compute = "emulated" */
    WP_KEY("data", WP_CFG_STRING, 0),
    WP_KEY_CHOICE("scaling", 1, scalings),
    WP_KEY_RANGE("global_batch", WP_CFG_INT, 0, 1, 1 << 20),
    WP_KEY_RANGE("global_batch_per_node", WP_CFG_INT, 0, 1, 1 << 20),
    WP_KEY_RANGE("layers_per_node", WP_CFG_INT, 0, 1, 1024),
    WP_KEY_RANGE("layers", WP_CFG_INT, 0, 1, 1024),
    WP_KEY_RANGE("steps", WP_CFG_INT, 1, 1, 1000000),
    WP_KEY_RANGE("warmup", WP_CFG_INT, 0, 0, 1000000),
    WP_KEY_RANGE("repetitions", WP_CFG_INT, 0, 1, 1000),
    WP_KEY_RANGE("save_every", WP_CFG_INT, 0, 1, 1000000),
    WP_KEY_RANGE("keep_checkpoints", WP_CFG_INT, 0, 0, 1000000),
    WP_KEY_RANGE("adapt_every", WP_CFG_INT, 0, 1, 1000000),
    WP_KEY_RANGE("watchdog_s", WP_CFG_INT, 0, 1, 86400),
    WP_KEY("adapt_candidates", WP_CFG_STRING, 0),
    WP_KEY_CHOICE("launcher", 0, launchers),
    WP_KEY_CHOICE("device", 0, devices),
    WP_KEY_CHOICE("compute", 0, computes),
    WP_KEY("layer_table", WP_CFG_STRING, 0),
    WP_KEY_RANGE("dilation", WP_CFG_FLOAT, 0, 1, 1000),
    WP_KEY_RANGE("byte_scale", WP_CFG_FLOAT, 0, 1, 1000000),
    WP_KEY("scenario_hook", WP_CFG_STRING, 0),
    WP_KEY_CHOICE("recover", 0, recoveries),
    WP_KEY_RANGE("min_nodes", WP_CFG_INT, 0, 1, 100000),
    WP_KEY_RANGE("max_recoveries", WP_CFG_INT, 0, 0, 1000),
    WP_KEY_GROUP("slurm", WP_CFG_GROUP, 0, slurm_keys),
    WP_KEY_GROUP("axes", WP_CFG_GROUP, 1, axes_keys),
    WP_KEY_END};

static int only_chars(const char *s, const char *set)
{
    return *s && strspn(s, set) == strlen(s);
}

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

/* A clear message about an unsafe value: what is allowed, and why. */
static int unsafe(struct wp_err *err, const config_setting_t *s, const char *what, const char *v,
                  const char *allowed)
{
    char shown[80];
    size_t j = 0;
    for (size_t i = 0; v[i] && j + 5 < sizeof shown; i++) {
        unsigned char ch = (unsigned char)v[i];
        if (ch == '\n') { shown[j++] = '\\'; shown[j++] = 'n'; }
        else if (ch < 32 || ch == 127) j += (size_t)snprintf(shown + j, sizeof shown - j, "\\x%02x", ch);
        else shown[j++] = (char)ch;
    }
    shown[j] = '\0';
    return wp_cfg_errorf(err, s, "%s \"%s\" is not allowed: use only %s (values reach job scripts; "
                         "nothing was written)", what, shown, allowed);
}

static int check_safe(struct wp_err *err, const config_setting_t *s, const char *what, const char *v)
{
    if (!wp_point_safe_name(v))
        return unsafe(err, s, what, v, "letters, digits, '.', '_' and '-' (not first)");
    if (strlen(v) >= WP_POINT_NAME_MAX)
        return wp_cfg_errorf(err, s, "%s \"%s\" is longer than %d characters", what, v, WP_POINT_NAME_MAX - 1);
    return 0;
}

/* A schedule the runtime runs: every kind the generator makes (the list
 * `wavepipe run --schedule` takes, sched/schedule.h). */
static int check_schedule(struct wp_err *err, const config_setting_t *s, const char *v)
{
    int kind = wp_sched_kind_from_name(v);
    if (kind >= 0 && wp_sched_kind_generated((enum wp_sched_kind)kind))
        return 0;
    const char *names[WP_SCHED_KIND_COUNT + 1];
    int n = 0;
    for (int k = 0; k < WP_SCHED_KIND_COUNT; k++)
        if (wp_sched_kind_generated((enum wp_sched_kind)k))
            names[n++] = wp_sched_kind_name((enum wp_sched_kind)k);
    names[n] = NULL;
    const char *near = wp_nearest_name(v, names);
    return wp_cfg_errorf(err, s, "unknown schedule \"%s\"%s%s%s (" WP_SCHED_KIND_LIST ")", v,
                         near ? "; did you mean \"" : "", near ? near : "", near ? "\"?" : "");
}

int wp_campaign_find(const char *campaign_path, const char *rel, char *out, size_t size, char *tried,
                     size_t tried_size)
{
    char cand[3][WP_CAMPAIGN_PATH_MAX];
    int n = 0;
    if (rel[0] == '/') {
        snprintf(cand[n++], sizeof cand[0], "%s", rel);
    } else {
        const char *slash = strrchr(campaign_path, '/');
        int dlen = slash ? (int)(slash - campaign_path) : 1;
        const char *dir = slash ? campaign_path : ".";
        snprintf(cand[n++], sizeof cand[0], "%.*s/%s", dlen, dir, rel);
        wp_data_path(rel, cand[n++], sizeof cand[0]);
        snprintf(cand[n++], sizeof cand[0], "%s", rel);
    }
    if (tried && tried_size)
        tried[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (access(cand[i], R_OK) == 0) {
            char *abs = realpath(cand[i], NULL);
            if (!abs)
                continue;
            wp_strlcpy(out, abs, size);
            free(abs);
            return 0;
        }
        if (tried && strlen(tried) + strlen(cand[i]) + 3 < tried_size)
            snprintf(tried + strlen(tried), tried_size - strlen(tried), "%s%s", i ? ", " : "", cand[i]);
    }
    return -1;
}

/* A path the campaign names (model, data, layer_table, scenario_hook), as
 * wp_campaign_find looks it up; else an error at its line saying where. */
static int resolve(const char *campaign_path, const config_setting_t *s, const char *what, char *out, size_t size,
                   struct wp_err *err)
{
    char tried[3 * WP_CAMPAIGN_PATH_MAX + 8];
    const char *rel = config_setting_get_string(s);
    if (wp_campaign_find(campaign_path, rel, out, size, tried, sizeof tried) == 0)
        return 0;
    return wp_cfg_errorf(err, s, "%s \"%s\" not found (looked for %s)", what, rel, tried);
}

/* Reads a model file's layers and micro-batches (the defaults for points). */
static int model_info(const char *path, int *layers, int *micro_batches, struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    int rc = 0;
    if (config_read_file(&cfg, path) != CONFIG_TRUE) {
        rc = wp_errorf(err, "%s:%d: %s", path, config_error_line(&cfg), config_error_text(&cfg));
    } else {
        int v;
        if (config_lookup_int(&cfg, "model.layers", &v) != CONFIG_TRUE || v < 1)
            rc = wp_errorf(err, "%s: no model.layers (is this a model configuration?)", path);
        else
            *layers = v;
        *micro_batches = 4;
        if (config_lookup_int(&cfg, "train.micro_batches", &v) == CONFIG_TRUE && v >= 1)
            *micro_batches = v;
    }
    config_destroy(&cfg);
    return rc;
}

static int axis_index(const struct wp_campaign *c, const char *name)
{
    for (int i = 0; i < c->naxes; i++)
        if (strcmp(c->axes[i].name, name) == 0)
            return i;
    return -1;
}

static int read_axes(const config_setting_t *axes, struct wp_campaign *c, struct wp_err *err)
{
    int n = config_setting_length(axes);
    for (int i = 0; i < n; i++) {
        const config_setting_t *a = config_setting_get_elem(axes, (unsigned)i);
        const char *name = config_setting_name(a);
        if (c->naxes == WP_CAMPAIGN_MAX_AXES)
            return wp_cfg_errorf(err, a, "at most %d axes", WP_CAMPAIGN_MAX_AXES);
        struct wp_campaign_axis *ax = &c->axes[c->naxes++];
        wp_strlcpy(ax->name, name, sizeof ax->name);
        ax->zip_group = -1;
        int nv = config_setting_length(a);
        if (nv < 1)
            return wp_cfg_errorf(err, a, "axis '%s' has no values", name);
        if (nv > WP_CAMPAIGN_MAX_VALUES)
            return wp_cfg_errorf(err, a, "axis '%s' has %d values; at most %d", name, nv, WP_CAMPAIGN_MAX_VALUES);
        for (int j = 0; j < nv; j++) {
            const config_setting_t *e = config_setting_get_elem(a, (unsigned)j);
            char *dst = ax->values[j];
            if (config_setting_type(e) == CONFIG_TYPE_STRING) {
                const char *v = config_setting_get_string(e);
                char what[96];
                snprintf(what, sizeof what, "axis '%s' value", name);
                if (check_safe(err, a, what, v))
                    return -1;
                if (strcmp(name, "schedule") == 0 && check_schedule(err, a, v))
                    return -1;
                if (strcmp(name, "policy") == 0 && strcmp(v, "A") != 0 && strcmp(v, "B") != 0)
                    return wp_cfg_errorf(err, a, "policy \"%s\" must be \"A\" or \"B\"", v);
                if (strcmp(name, "scenario") == 0 && strcmp(v, "none") != 0 && !wp_scenarios_find(&c->scenarios, v))
                    return wp_cfg_errorf(err, a, "scenario \"%s\" is not in 'scenarios' (nor \"none\", no change)", v);
                if (strcmp(name, "precision") == 0 && wp_precision_parse(v) < 0)
                    return wp_cfg_errorf(err, a, "precision \"%s\": expected one of %s", v, wp_precision_names());
                if (strcmp(name, "adapt") == 0) {
                    int found = 0;
                    for (const char *const *m = adapt_modes; *m; m++)
                        found |= strcmp(*m, v) == 0;
                    if (!found)
                        return wp_cfg_errorf(err, a, "adapt \"%s\" must be \"none\", \"k\", \"partition\" or \"both\"",
                                             v);
                }
                wp_strlcpy(dst, v, WP_POINT_NAME_MAX);
            } else {
                snprintf(dst, WP_POINT_NAME_MAX, "%lld", (long long)config_setting_get_int64(e));
            }
        }
        ax->nvalues = nv;
    }
    return 0;
}

static int read_zip(const config_setting_t *zip, struct wp_campaign *c, struct wp_err *err)
{
    if (config_setting_type(zip) != CONFIG_TYPE_LIST)
        return wp_cfg_errorf(err, zip, "'zip' must be a list of axis-name arrays, e.g. ( [\"nodes\", \"ranks_per_node\"] )");
    int n = config_setting_length(zip);
    if (n > WP_CAMPAIGN_MAX_ZIP)
        return wp_cfg_errorf(err, zip, "at most %d zip groups", WP_CAMPAIGN_MAX_ZIP);
    for (int g = 0; g < n; g++) {
        const config_setting_t *grp = config_setting_get_elem(zip, (unsigned)g);
        int t = config_setting_type(grp);
        if ((t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) || config_setting_length(grp) < 2)
            return wp_cfg_errorf(err, grp, "zip group %d must be an array of at least two axis names", g);
        int len = -1;
        for (int i = 0; i < config_setting_length(grp); i++) {
            const config_setting_t *e = config_setting_get_elem(grp, (unsigned)i);
            if (config_setting_type(e) != CONFIG_TYPE_STRING)
                return wp_cfg_errorf(err, grp, "zip group %d must hold axis names (strings)", g);
            const char *name = config_setting_get_string(e);
            int a = axis_index(c, name);
            if (a < 0) {
                const char *near = wp_nearest_name(name, wp_campaign_axis_names);
                return wp_cfg_errorf(err, grp, "zip names axis '%s', which the campaign does not sweep%s%s%s",
                                     name, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
            }
            if (c->axes[a].zip_group >= 0)
                return wp_cfg_errorf(err, grp, "axis '%s' is in two zip groups", name);
            if (len >= 0 && c->axes[a].nvalues != len)
                return wp_cfg_errorf(err, grp, "zipped axes must have as many values each: '%s' has %d, not %d",
                                     name, c->axes[a].nvalues, len);
            len = c->axes[a].nvalues;
            c->axes[a].zip_group = g;
        }
    }
    c->nzip = n;
    return 0;
}

static int read_value_pattern(const config_setting_t *s, const char *axis, char *dst, int *negate,
                              struct wp_err *err)
{
    if (config_setting_type(s) == CONFIG_TYPE_STRING) {
        const char *v = config_setting_get_string(s);
        if (v[0] == '!') {
            *negate = 1;
            v++;
        }
        char what[96];
        snprintf(what, sizeof what, "exclude value for '%s'", axis);
        if (check_safe(err, s, what, v))
            return -1;
        wp_strlcpy(dst, v, WP_POINT_NAME_MAX);
        return 0;
    }
    if (config_setting_type(s) == CONFIG_TYPE_INT || config_setting_type(s) == CONFIG_TYPE_INT64) {
        snprintf(dst, WP_POINT_NAME_MAX, "%lld", (long long)config_setting_get_int64(s));
        return 0;
    }
    return wp_cfg_errorf(err, s, "exclude value for '%s' must be a string, an integer or an array of them", axis);
}

static int read_exclude(const config_setting_t *ex, struct wp_campaign *c, struct wp_err *err)
{
    if (config_setting_type(ex) != CONFIG_TYPE_LIST)
        return wp_cfg_errorf(err, ex, "'exclude' must be a list of groups, e.g. ( { schedule = \"!kfkb\"; k = \"!1\"; } )");
    int n = config_setting_length(ex);
    if (n > WP_CAMPAIGN_MAX_EXCLUDE)
        return wp_cfg_errorf(err, ex, "at most %d exclude rules", WP_CAMPAIGN_MAX_EXCLUDE);
    for (int r = 0; r < n; r++) {
        const config_setting_t *grp = config_setting_get_elem(ex, (unsigned)r);
        if (config_setting_type(grp) != CONFIG_TYPE_GROUP || config_setting_length(grp) < 1)
            return wp_cfg_errorf(err, grp, "exclude rule %d must be a non-empty group { axis = value; ... }", r);
        struct wp_campaign_rule *rule = &c->rules[r];
        for (int i = 0; i < config_setting_length(grp); i++) {
            const config_setting_t *s = config_setting_get_elem(grp, (unsigned)i);
            const char *name = config_setting_name(s);
            int a = axis_index(c, name);
            if (a < 0) {
                const char *near = wp_nearest_name(name, wp_campaign_axis_names);
                return wp_cfg_errorf(err, s, "exclude rule names axis '%s', which the campaign does not sweep%s%s%s",
                                     name, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
            }
            struct wp_campaign_cond *cond = &rule->conds[rule->nconds++];
            cond->axis = a;
            int t = config_setting_type(s);
            if (t == CONFIG_TYPE_ARRAY || t == CONFIG_TYPE_LIST) {
                int nv = config_setting_length(s);
                if (nv < 1 || nv > WP_CAMPAIGN_MAX_VALUES)
                    return wp_cfg_errorf(err, s, "exclude values for '%s': 1 to %d of them", name, WP_CAMPAIGN_MAX_VALUES);
                for (int j = 0; j < nv; j++) {
                    int neg = 0;
                    if (read_value_pattern(config_setting_get_elem(s, (unsigned)j), name, cond->values[j], &neg, err))
                        return -1;
                    if (neg)
                        return wp_cfg_errorf(err, s, "'!' negates a single value, not an element of a list");
                }
                cond->nvalues = nv;
            } else {
                if (read_value_pattern(s, name, cond->values[0], &cond->negate, err))
                    return -1;
                cond->nvalues = 1;
            }
        }
        c->nrules++;
    }
    return 0;
}

static int read_slurm(const config_setting_t *sl, struct wp_campaign *c, struct wp_err *err)
{
    struct wp_campaign_slurm *s = &c->slurm;
    wp_strlcpy(s->time, "01:00:00", sizeof s->time);
    s->cpus_per_task = 1;
    s->signal_warning_s = 120;
    s->requeue = 1;
    if (!sl)
        return 0;
    s->signal_warning_s = wp_cfg_int(sl, "signal_warning_s", 120);
    s->requeue = wp_cfg_bool(sl, "requeue", 1);
    static const char *const names[] = {"partition", "account", "qos"};
    char *dsts[] = {s->partition, s->account, s->qos};
    for (int i = 0; i < 3; i++) {
        const config_setting_t *m = config_setting_get_member(sl, names[i]);
        if (!m)
            continue;
        char what[64];
        snprintf(what, sizeof what, "slurm %s", names[i]);
        if (check_safe(err, m, what, config_setting_get_string(m)))
            return -1;
        wp_strlcpy(dsts[i], config_setting_get_string(m), WP_POINT_NAME_MAX);
    }
    const config_setting_t *m = config_setting_get_member(sl, "constraint");
    if (m) {
        const char *v = config_setting_get_string(m);
        if (!only_chars(v, ALNUM "._-,&|") || strlen(v) >= sizeof s->constraint)
            return unsafe(err, m, "slurm constraint", v, "letters, digits and . _ - , & |");
        wp_strlcpy(s->constraint, v, sizeof s->constraint);
    }
    m = config_setting_get_member(sl, "time");
    if (m) {
        const char *v = config_setting_get_string(m);
        if (!only_chars(v, "0123456789:-") || strlen(v) >= sizeof s->time)
            return unsafe(err, m, "slurm time", v, "digits, ':' and '-' (e.g. \"00:30:00\" or \"1-00:00:00\")");
        wp_strlcpy(s->time, v, sizeof s->time);
    }
    s->cpus_per_task = wp_cfg_int(sl, "cpus_per_task", 1);
    s->gpus_per_node = wp_cfg_int(sl, "gpus_per_node", 0);
    m = config_setting_get_member(sl, "extra");
    if (m) {
        int n = config_setting_length(m);
        if (n > WP_CAMPAIGN_MAX_EXTRA)
            return wp_cfg_errorf(err, m, "at most %d extra #SBATCH options", WP_CAMPAIGN_MAX_EXTRA);
        for (int i = 0; i < n; i++) {
            const char *v = config_setting_get_string(config_setting_get_elem(m, (unsigned)i));
            const char *eq = strchr(v, '=');
            size_t optlen = eq ? (size_t)(eq - v) : strlen(v);
            char opt[128];
            if (optlen >= sizeof opt || strlen(v) >= sizeof s->extra[0])
                return wp_cfg_errorf(err, m, "extra option %d is too long", i);
            memcpy(opt, v, optlen);
            opt[optlen] = '\0';
            if (strncmp(opt, "--", 2) != 0 || !only_chars(opt + 2, "abcdefghijklmnopqrstuvwxyz0123456789-") ||
                (eq && !only_chars(eq + 1, ALNUM "._-,:=/+%")))
                return unsafe(err, m, "slurm extra option", v,
                              "--name or --name=value with a value of letters, digits and . _ - , : = / + %");
            wp_strlcpy(s->extra[s->nextra++], v, sizeof s->extra[0]);
        }
    }
    return 0;
}

/* compute = "emulated": the layer table is the model (its layers the
 * points' layers unless the campaign sets them); no checkpoints, no device
 * and no corpus, so not the templates that take them. */
static int emulated_compute(const config_setting_t *root, const char *path, struct wp_campaign *c,
                            struct wp_err *err)
{
    const config_setting_t *m = config_setting_get_member(root, "layer_table");
    c->dilation = wp_cfg_float(root, "dilation", 1);
    c->byte_scale = wp_cfg_float(root, "byte_scale", 1);
    const config_setting_t *axes = config_setting_get_member(root, "axes");
    const config_setting_t *precision = axes ? config_setting_get_member(axes, "precision") : NULL;
    if (precision && strcmp(c->compute, "emulated") == 0)
        return wp_cfg_errorf(err, precision, "precision is the kernels' (run --precision): emulated compute takes the "
                                             "layer table's bytes (wavepipe profile --analytic --precision P)");
    if (strcmp(c->compute, "emulated") != 0) {
        const char *scaled = config_setting_get_member(root, "dilation") ? "dilation" : "byte_scale";
        if (m)
            return wp_cfg_errorf(err, m, "layer_table goes with compute = \"emulated\"");
        if (config_setting_get_member(root, scaled))
            return wp_cfg_errorf(err, config_setting_get_member(root, scaled),
                                 "%s slows emulated compute (run --dilate, --scale-bytes): it goes with compute = "
                                 "\"emulated\"", scaled);
        return 0;
    }
    if (!m)
        return wp_cfg_errorf(err, config_setting_get_member(root, "compute"),
                             "compute = \"emulated\" needs layer_table (wavepipe profile -o TABLE, or a DAPPLE profile)");
    if (resolve(path, m, "layer table", c->layer_table_path, sizeof c->layer_table_path, err))
        return -1;
    struct wp_layer_table t;
    if (wp_layer_table_read(&t, c->layer_table_path, 0, WP_CONTRACT_AUTO, err))
        return wp_err_prefix(err, "%s:%d: layer_table: ", path, config_setting_source_line(m));
    int nlayers = t.nlayers;
    wp_layer_table_destroy(&t);
    if (!c->model_path[0])
        c->model_layers = nlayers;
    else if (c->model_layers != nlayers)
        return wp_cfg_errorf(err, m, "the layer table has %d layers, the model %d: give one of them", nlayers,
                             c->model_layers);
    const config_setting_t *bad = config_setting_get_member(root, "data");
    if (bad)
        return wp_cfg_errorf(err, bad, "emulated compute reads no data");
    const char *tpl = c->template_name;
    if (strcmp(tpl, "run-cpu") == 0 || strcmp(tpl, "run-gpu") == 0)
        return wp_cfg_errorf(err, config_setting_get_member(root, "template"),
                             "template %s checkpoints and picks a device, which emulated compute has not: "
                             "use \"run-emulated\"", tpl);
    return 0;
}

/* scenarios and scenario_hook (scenarios.h) */
static int read_scenarios(const config_setting_t *root, const char *path, struct wp_campaign *c, struct wp_err *err)
{
    const config_setting_t *g = config_setting_get_member(root, "scenarios");
    if (g && config_setting_type(g) != CONFIG_TYPE_GROUP)
        return wp_cfg_errorf(err, g, "'scenarios' must be a group { name = [\"ITERATION ACTION ...\", ...]; ... }");
    if (wp_scenarios_read(g, &c->scenarios, err))
        return -1;
    const config_setting_t *h = config_setting_get_member(root, "scenario_hook");
    if (h && resolve(path, h, "scenario_hook", c->scenario_hook_path, sizeof c->scenario_hook_path, err))
        return -1;
    for (int i = 0; i < c->scenarios.n; i++)
        if (c->scenarios.v[i].need_hook && !h)
            return wp_cfg_errorf(err, g, "scenario '%s' changes more than a rank's speed: it needs scenario_hook "
                                 "(tests/cluster/scenario-hook.sh on the test cluster)", c->scenarios.v[i].name);
    return 0;
}

static int campaign_from_cfg(config_t *cfg, const char *path, struct wp_campaign *c, struct wp_err *err)
{
    const config_setting_t *root = config_root_setting(cfg);
    memset(c, 0, sizeof *c);
    wp_strlcpy(c->path, path, sizeof c->path);
    const config_setting_t *m = config_setting_get_member(root, "format");
    if (strcmp(config_setting_get_string(m), "wavepipe-campaign") != 0)
        return wp_cfg_errorf(err, m, "format must be \"wavepipe-campaign\"");
    m = config_setting_get_member(root, "name");
    if (check_safe(err, m, "campaign name", config_setting_get_string(m)))
        return -1;
    wp_strlcpy(c->name, config_setting_get_string(m), sizeof c->name);
    m = config_setting_get_member(root, "template");
    if (check_safe(err, m, "template name", config_setting_get_string(m)))
        return -1;
    wp_strlcpy(c->template_name, config_setting_get_string(m), sizeof c->template_name);

    wp_strlcpy(c->compute, wp_cfg_string(root, "compute", "real"), sizeof c->compute);
    int emulated = strcmp(c->compute, "emulated") == 0;
    int mb_default = 4;
    m = config_setting_get_member(root, "model");
    if (m) {
        if (resolve(path, m, "model file", c->model_path, sizeof c->model_path, err))
            return -1;
        if (model_info(c->model_path, &c->model_layers, &mb_default, err))
            return -1;
    } else if (!emulated) {
        return wp_cfg_errorf(err, root, "no 'model' (a model file such as \"jobs/models/gpt-tiny.cfg\"; "
                             "compute = \"emulated\" takes a layer_table instead)");
    }
    if (emulated_compute(root, path, c, err))
        return -1;
    const config_setting_t *fixed_layers = config_setting_get_member(root, "layers");
    if (fixed_layers)
        c->model_layers = config_setting_get_int(fixed_layers); /* overrides the model file's */
    c->layers_fixed = fixed_layers != NULL;
    m = config_setting_get_member(root, "data");
    if (m && resolve(path, m, "data file", c->data_path, sizeof c->data_path, err))
        return -1;

    wp_strlcpy(c->scaling, wp_cfg_string(root, "scaling", "weak"), sizeof c->scaling);
    const config_setting_t *gb = config_setting_get_member(root, "global_batch");
    const config_setting_t *gbn = config_setting_get_member(root, "global_batch_per_node");
    const config_setting_t *lpn = config_setting_get_member(root, "layers_per_node");
    const config_setting_t *sc = config_setting_get_member(root, "scaling");
    if (strcmp(c->scaling, "strong") == 0) {
        if (!gb)
            return wp_cfg_errorf(err, sc, "strong scaling needs 'global_batch' (the fixed problem)");
        if (gbn || lpn)
            return wp_cfg_errorf(err, gbn ? gbn : lpn, "'%s' is for weak scaling; strong scaling takes 'global_batch'",
                                 config_setting_name(gbn ? gbn : lpn));
        c->global_batch = config_setting_get_int(gb);
    } else {
        if (!gbn)
            return wp_cfg_errorf(err, sc, "weak scaling needs 'global_batch_per_node' (the batch grows with nodes)");
        if (gb)
            return wp_cfg_errorf(err, gb, "'global_batch' is for strong scaling; weak scaling takes 'global_batch_per_node'");
        c->global_batch = config_setting_get_int(gbn);
        c->layers_per_node = lpn ? config_setting_get_int(lpn) : 0;
    }
    c->steps = wp_cfg_int(root, "steps", 10);
    c->warmup = wp_cfg_int(root, "warmup", 1);
    if (c->warmup >= c->steps)
        return wp_cfg_errorf(err, config_setting_get_member(root, "warmup"),
                             "warmup (%d) must be below steps (%d), or no iteration is measured", c->warmup, c->steps);
    c->repetitions = wp_cfg_int(root, "repetitions", 1);
    c->save_every = wp_cfg_int(root, "save_every", 50);
    c->keep_checkpoints = wp_cfg_int(root, "keep_checkpoints", 2);
    c->adapt_every = wp_cfg_int(root, "adapt_every", 10);
    c->watchdog_s = wp_cfg_int(root, "watchdog_s", 0);
    m = config_setting_get_member(root, "adapt_candidates");
    if (m) { /* run --adapt-candidates checks the pairs; here only what may reach a script */
        const char *v = config_setting_get_string(m);
        if (!only_chars(v, "0123456789:,") || strlen(v) >= sizeof c->adapt_candidates)
            return unsafe(err, m, "adapt_candidates", v, "K:B pairs joined by ',' (e.g. \"2:1,4:1\")");
        wp_strlcpy(c->adapt_candidates, v, sizeof c->adapt_candidates);
    }
    wp_strlcpy(c->launcher, wp_cfg_string(root, "launcher", "srun"), sizeof c->launcher);
    wp_strlcpy(c->device, wp_cfg_string(root, "device", "cpu"), sizeof c->device);
    c->recovery.replan = strcmp(wp_cfg_string(root, "recover", "none"), "replan") == 0;
    c->recovery.min_nodes = wp_cfg_int(root, "min_nodes", 1);
    c->recovery.max_recoveries = wp_cfg_int(root, "max_recoveries", 3);
    if (c->recovery.replan && strcmp(c->launcher, "srun") != 0)
        return wp_cfg_errorf(err, config_setting_get_member(root, "recover"),
                             "recover = \"replan\" resubmits through Slurm (sbatch --exclude): it needs launcher "
                             "\"srun\"");
    if (read_scenarios(root, path, c, err))
        return -1;
    if (read_slurm(config_setting_get_member(root, "slurm"), c, err))
        return -1;
    if (read_axes(config_setting_get_member(root, "axes"), c, err))
        return -1;
    if (axis_index(c, "model") >= 0 && !c->model_path[0])
        return wp_cfg_errorf(err, config_setting_get_member(config_setting_get_member(root, "axes"), "model"),
                             "axis model names files beside 'model', and the campaign has none");
    m = config_setting_get_member(root, "zip");
    if (m && read_zip(m, c, err))
        return -1;
    m = config_setting_get_member(root, "exclude");
    if (m && read_exclude(m, c, err))
        return -1;
    for (int a = 0; a < c->naxes; a++) { /* a zipped axis may repeat values, a free one may not */
        const struct wp_campaign_axis *ax = &c->axes[a];
        for (int j = 0; ax->zip_group < 0 && j < ax->nvalues; j++)
            for (int k = 0; k < j; k++)
                if (strcmp(ax->values[k], ax->values[j]) == 0)
                    return wp_cfg_errorf(err, config_setting_get_member(config_setting_get_member(root, "axes"), ax->name),
                                         "axis '%s' lists %s twice", ax->name, ax->values[j]);
    }
    c->default_micro_batches = mb_default;
    return 0;
}


int wp_campaign_read(const char *path, struct wp_campaign *c, struct wp_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return wp_errorf(err, "cannot read campaign %s: %m", path);
    fclose(fp);
    config_t full, chk;
    config_init(&full);
    config_init(&chk);
    int rc = 0;
    if (config_read_file(&full, path) != CONFIG_TRUE || config_read_file(&chk, path) != CONFIG_TRUE) {
        rc = wp_errorf(err, "%s:%d: %s", path, config_error_line(&full), config_error_text(&full));
    } else {
        /* zip and exclude have shapes the schema cannot express: checked by hand */
        config_setting_t *root = config_root_setting(&chk);
        if (config_setting_get_member(root, "zip"))
            config_setting_remove(root, "zip");
        if (config_setting_get_member(root, "exclude"))
            config_setting_remove(root, "exclude");
        if (config_setting_get_member(root, "scenarios"))
            config_setting_remove(root, "scenarios");
        rc = wp_cfg_check_group(root, campaign_keys, path, err);
        if (rc == 0)
            rc = campaign_from_cfg(&full, path, c, err);
    }
    config_destroy(&chk);
    config_destroy(&full);
    return rc;
}

/* ---- expansion ------------------------------------------------------------- */

static int rule_matches(const struct wp_campaign_rule *r, const int *choice, const struct wp_campaign *c)
{
    for (int i = 0; i < r->nconds; i++) {
        const struct wp_campaign_cond *cond = &r->conds[i];
        const char *v = c->axes[cond->axis].values[choice[cond->axis]];
        int in = 0;
        for (int j = 0; j < cond->nvalues; j++)
            in |= strcmp(v, cond->values[j]) == 0;
        if (in == cond->negate)
            return 0;
    }
    return 1;
}

static const char *axis_tag(const char *name)
{
    static const char *const map[][2] = {{"k", "k"},     {"waves", "w"},          {"chunks", "v"},
                                         {"data_parallel", "dp"},
                                         {"micro_batches", "m"}, {"nodes", "n"}, {"ranks_per_node", "g"},
                                         {"policy", "pol"}, {"adapt", "adapt"}, {NULL, NULL}};
    for (int i = 0; map[i][0]; i++)
        if (strcmp(map[i][0], name) == 0)
            return map[i][1];
    return ""; /* schedule, model: the value alone */
}

/* Checks that `wavepipe run` can run the point; message names it. */
static int check_point(const struct wp_campaign *c, const struct wp_campaign_point *p, struct wp_err *err)
{
    int P = p->nodes * p->ranks_per_node;
    int M = p->micro_batches;
    const char *id = p->point.id;
    if (p->global_batch % M)
        return wp_errorf(err, "%s: point %s: global batch %d cannot be split into %d micro-batches", c->path, id,
                         p->global_batch, M);
    /* what the generator refuses, as `wavepipe run` would say it */
    struct wp_sched_params sp;
    wp_sched_params_default(&sp);
    sp.kind = (enum wp_sched_kind)wp_sched_kind_from_name(p->schedule);
    sp.ranks = P;
    sp.microbatches = M;
    sp.k = p->k;
    sp.waves = p->waves;
    sp.chunks = p->chunks;
    sp.data_parallel = p->data_parallel;
    sp.policy = p->policy[0] ? p->policy[0] : 'A';
    int S = 0;
    struct wp_err why = {""};
    if (wp_sched_check(&sp, &S, &why))
        return wp_errorf(err, "%s: point %s: %s; exclude the point or change the axes", c->path, id, why.msg);
    if (p->global_batch / M % p->data_parallel)
        return wp_errorf(err, "%s: point %s: a micro-batch of %d sequences cannot be split evenly over %d "
                         "data-parallel copies", c->path, id, p->global_batch / M, p->data_parallel);
    if (p->layers < S)
        return wp_errorf(err, "%s: point %s: %s on %d ranks%s has %d stages but the model has %d layers "
                         "(each stage needs one)%s", c->path, id, p->schedule, P / p->data_parallel,
                         p->data_parallel > 1 ? " (a data-parallel copy's)" : "", S, p->layers,
                         strcmp(p->schedule, "hanayo") == 0 ? "; hanayo needs layers >= 2*W*P" : "");
    const struct wp_scenario *sc = wp_scenarios_find(&c->scenarios, p->scenario);
    if (sc && sc->max_rank >= P)
        return wp_errorf(err, "%s: point %s: scenario %s slows rank %d of %d ranks; exclude the point", c->path, id,
                         sc->name, sc->max_rank, P);
    /* what `wavepipe run --adapt` refuses */
    int tunes_k = strcmp(p->adapt, "k") == 0 || strcmp(p->adapt, "both") == 0;
    int moves = strcmp(p->adapt, "partition") == 0 || strcmp(p->adapt, "both") == 0;
    if (tunes_k && strcmp(p->schedule, "1f1b") != 0 && strcmp(p->schedule, "kfkb") != 0)
        return wp_errorf(err, "%s: point %s: adapt %s tunes 1f1b and kfkb runs, not %s; exclude the point",
                         c->path, id, p->adapt, p->schedule);
    if (moves && (S != P / p->data_parallel || strcmp(p->schedule, "chimera") == 0))
        return wp_errorf(err, "%s: point %s: adapt %s moves layers between ranks that hold one stage each, and %s "
                         "gives a rank two; exclude the point", c->path, id, p->adapt, p->schedule);
    return 0;
}

static void add_axis(struct wp_point *pt, const char *name, const char *value)
{
    for (int i = 0; i < pt->naxes; i++)
        if (strcmp(pt->axis_name[i], name) == 0) {
            wp_strlcpy(pt->axis_value[i], value, sizeof pt->axis_value[i]);
            return;
        }
    if (pt->naxes == WP_POINT_MAX_AXES)
        return;
    wp_strlcpy(pt->axis_name[pt->naxes], name, sizeof pt->axis_name[0]);
    wp_strlcpy(pt->axis_value[pt->naxes], value, sizeof pt->axis_value[0]);
    pt->naxes++;
}

static void add_axis_int(struct wp_point *pt, const char *name, int value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", value);
    add_axis(pt, name, buf);
}

static int build_point(const struct wp_campaign *c, const int *choice, int index, int rep,
                       struct wp_campaign_point *p, struct wp_err *err)
{
    memset(p, 0, sizeof *p);
    p->index = index;
    wp_strlcpy(p->schedule, "1f1b", sizeof p->schedule);
    wp_strlcpy(p->policy, "A", sizeof p->policy);
    wp_strlcpy(p->adapt, "none", sizeof p->adapt);
    wp_strlcpy(p->scenario, "none", sizeof p->scenario);
    wp_strlcpy(p->precision, "fp32", sizeof p->precision);
    p->k = p->waves = p->chunks = p->data_parallel = p->nodes = p->ranks_per_node = 1;
    p->micro_batches = c->default_micro_batches;
    const char *named = c->model_path[0] ? c->model_path : c->layer_table_path; /* emulated: the table's name */
    const char *slash = strrchr(named, '/');
    wp_strlcpy(p->model_name, slash ? slash + 1 : named, sizeof p->model_name);
    char *dot = strrchr(p->model_name, '.');
    if (dot && strcmp(dot, ".cfg") == 0)
        *dot = '\0';
    int model_layers = c->model_layers;
    char id[256];
    int len = snprintf(id, sizeof id, "p%03d", index);
    struct wp_point *pt = &p->point;
    for (int a = 0; a < c->naxes; a++) {
        const struct wp_campaign_axis *ax = &c->axes[a];
        const char *v = ax->values[choice[a]];
        int iv = atoi(v);
        if (strcmp(ax->name, "schedule") == 0) wp_strlcpy(p->schedule, v, sizeof p->schedule);
        else if (strcmp(ax->name, "policy") == 0) wp_strlcpy(p->policy, v, sizeof p->policy);
        else if (strcmp(ax->name, "adapt") == 0) wp_strlcpy(p->adapt, v, sizeof p->adapt);
        else if (strcmp(ax->name, "scenario") == 0) wp_strlcpy(p->scenario, v, sizeof p->scenario);
        else if (strcmp(ax->name, "precision") == 0) wp_strlcpy(p->precision, v, sizeof p->precision);
        else if (strcmp(ax->name, "k") == 0) p->k = iv;
        else if (strcmp(ax->name, "waves") == 0) p->waves = iv;
        else if (strcmp(ax->name, "chunks") == 0) p->chunks = iv;
        else if (strcmp(ax->name, "data_parallel") == 0) p->data_parallel = iv;
        else if (strcmp(ax->name, "micro_batches") == 0) p->micro_batches = iv;
        else if (strcmp(ax->name, "nodes") == 0) p->nodes = iv;
        else if (strcmp(ax->name, "ranks_per_node") == 0) p->ranks_per_node = iv;
        else if (strcmp(ax->name, "model") == 0) {
            wp_strlcpy(p->model_name, v, sizeof p->model_name);
            char path[WP_CAMPAIGN_PATH_MAX];
            int dlen = slash ? (int)(slash - c->model_path) : 1;
            snprintf(path, sizeof path, "%.*s/%s.cfg", dlen, slash ? c->model_path : ".", v);
            int mb = 0;
            if (model_info(path, &model_layers, &mb, err))
                return wp_err_prefix(err, "%s: axis model \"%s\": ", c->path, v);
            if (c->layers_fixed)
                model_layers = c->model_layers;
        }
        add_axis(pt, ax->name, v);
        if (ax->nvalues > 1 || strcmp(ax->name, "nodes") == 0)
            len += snprintf(id + len, sizeof id - (size_t)len, "-%s%s", axis_tag(ax->name), v);
    }
    if (!wp_point_axis(pt, "nodes")) {
        add_axis(pt, "nodes", "1");
        len += snprintf(id + len, sizeof id - (size_t)len, "-n1");
    }
    if (strcmp(c->scaling, "weak") == 0) {
        p->global_batch = c->global_batch * p->nodes;
        p->layers = c->layers_per_node ? c->layers_per_node * p->nodes : model_layers;
    } else {
        p->global_batch = c->global_batch;
        p->layers = model_layers;
    }
    add_axis_int(pt, "global_batch", p->global_batch);
    add_axis_int(pt, "layers", p->layers);
    if (!wp_point_axis(pt, "micro_batches"))
        add_axis_int(pt, "micro_batches", p->micro_batches);
    snprintf(id + len, sizeof id - (size_t)len, "-r%d", rep);
    if (strlen(id) >= sizeof pt->id)
        return wp_errorf(err, "%s: point id %s is longer than %d characters (shorter axis values?)", c->path, id,
                         WP_POINT_NAME_MAX - 1);
    wp_strlcpy(pt->id, id, sizeof pt->id);
    wp_strlcpy(pt->campaign, c->name, sizeof pt->campaign);
    wp_strlcpy(pt->scaling, c->scaling, sizeof pt->scaling);
    pt->repetition = rep;
    pt->warmup = c->warmup;
    return check_point(c, p, err);
}

int wp_campaign_expand(const struct wp_campaign *c, struct wp_campaign_point **points, int *npoints,
                       struct wp_err *err)
{
    *points = NULL;
    *npoints = 0;
    /* dimensions: each free axis, and each zip group, in order of first appearance */
    int dim_len[WP_CAMPAIGN_MAX_AXES], dim_of[WP_CAMPAIGN_MAX_AXES], ndims = 0;
    int zip_dim[WP_CAMPAIGN_MAX_ZIP];
    for (int g = 0; g < WP_CAMPAIGN_MAX_ZIP; g++)
        zip_dim[g] = -1;
    for (int a = 0; a < c->naxes; a++) {
        int g = c->axes[a].zip_group;
        if (g >= 0 && zip_dim[g] >= 0) {
            dim_of[a] = zip_dim[g];
            continue;
        }
        dim_len[ndims] = c->axes[a].nvalues;
        dim_of[a] = ndims;
        if (g >= 0)
            zip_dim[g] = ndims;
        ndims++;
    }
    long total = 1;
    for (int d = 0; d < ndims; d++) {
        total *= dim_len[d];
        if (total * c->repetitions > WP_CAMPAIGN_MAX_POINTS)
            return wp_errorf(err, "%s: the axes make more than %d points", c->path, WP_CAMPAIGN_MAX_POINTS);
    }
    struct wp_campaign_point *out = calloc((size_t)(total * c->repetitions), sizeof *out);
    if (!out)
        return wp_errorf(err, "out of memory expanding %s", c->path);
    int n = 0, index = 0;
    int digit[WP_CAMPAIGN_MAX_AXES] = {0};
    for (long t = 0; t < total; t++) {
        int choice[WP_CAMPAIGN_MAX_AXES];
        for (int a = 0; a < c->naxes; a++)
            choice[a] = digit[dim_of[a]];
        int excluded = 0;
        for (int r = 0; r < c->nrules && !excluded; r++)
            excluded = rule_matches(&c->rules[r], choice, c);
        if (!excluded) {
            for (int rep = 0; rep < c->repetitions; rep++)
                if (build_point(c, choice, index, rep, &out[n++], err)) {
                    free(out);
                    return -1;
                }
            index++;
        }
        /* odometer: the last dimension turns fastest */
        for (int d = ndims - 1; d >= 0; d--) {
            if (++digit[d] < dim_len[d])
                break;
            digit[d] = 0;
        }
    }
    if (n == 0) {
        free(out);
        return wp_errorf(err, "%s: every point is excluded", c->path);
    }
    *points = out;
    *npoints = n;
    return 0;
}
