/* Checking libconfig files against schemas, typed lookups and writers. */
#include "config/schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/atomic_file.h"
#include "util/strutil.h"

static const char *setting_file(const config_setting_t *s, const char *fallback)
{
    const char *f = config_setting_source_file(s);
    return f ? f : fallback;
}

/* What a check needs besides the setting: where errors go and the name to
 * print when libconfig does not know the file (text read from memory). */
struct check_ctx {
    const char *source;
    struct wp_err *err;
};

static int vsetting_error(struct wp_err *err, const config_setting_t *setting,
                          const char *source, const char *fmt, va_list ap)
{
    char body[WP_ERR_MAX];
    vsnprintf(body, sizeof body, fmt, ap);
    return wp_errorf(err, "%s:%d: %s", setting_file(setting, source),
                     config_setting_source_line(setting), body);
}

int wp_cfg_errorf(struct wp_err *err, const config_setting_t *setting, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsetting_error(err, setting, "(input)", fmt, ap);
    va_end(ap);
    return -1;
}

static int ctx_error(const struct check_ctx *ctx, const config_setting_t *setting,
                     const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ctx_error(const struct check_ctx *ctx, const config_setting_t *setting,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsetting_error(ctx->err, setting, ctx->source, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *kind_name(enum wp_cfg_kind k)
{
    switch (k) {
    case WP_CFG_INT: return "an integer";
    case WP_CFG_INT64: return "an integer";
    case WP_CFG_FLOAT: return "a number";
    case WP_CFG_BOOL: return "true or false";
    case WP_CFG_STRING: return "a string";
    case WP_CFG_GROUP: return "a group { ... }";
    case WP_CFG_GROUP_LIST: return "a list of groups ( { ... }, ... )";
    case WP_CFG_INT_ARRAY: return "an array of integers [ ... ]";
    case WP_CFG_FLOAT_ARRAY: return "an array of numbers [ ... ]";
    case WP_CFG_STRING_ARRAY: return "an array of strings [ ... ]";
    case WP_CFG_FLOAT_MATRIX: return "a list of number arrays ( [ ... ], ... )";
    }
    return "?";
}

static int is_number_type(int t)
{
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;
}

static int check_range(const config_setting_t *s, const struct wp_cfg_key *key, double v,
                       const char *label, const struct check_ctx *ctx)
{
    if (!isfinite(v))
        return ctx_error(ctx, s, "'%s' is not a finite number", label);
    if (key->ranged && (v < key->min || v > key->max))
        return ctx_error(ctx, s, "'%s' = %g is out of range [%g, %g]", label, v, key->min,
                             key->max);
    return 0;
}

static int check_number_array(const config_setting_t *s, const struct wp_cfg_key *key,
                              int integers, const struct check_ctx *ctx)
{
    int n = config_setting_length(s);
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        int t = config_setting_type(e);
        if (integers ? (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) : !is_number_type(t))
            return ctx_error(ctx, s, "element %d of '%s' must be %s", i, key->name,
                                 integers ? "an integer" : "a number");
        char label[256];
        snprintf(label, sizeof label, "%s[%d]", key->name, i);
        if (check_range(s, key, wp_cfg_number_elem(s, i), label, ctx))
            return -1;
    }
    return 0;
}

static int check_value(const config_setting_t *s, const struct wp_cfg_key *key,
                       const struct check_ctx *ctx);

static int check_children(const config_setting_t *group, const struct wp_cfg_key *schema,
                          const char *group_name, const struct check_ctx *ctx)
{
    int n = config_setting_length(group);
    for (int i = 0; i < n; i++) {
        const config_setting_t *s = config_setting_get_elem(group, (unsigned)i);
        const char *name = config_setting_name(s);
        const struct wp_cfg_key *key = NULL;
        for (const struct wp_cfg_key *k = schema; k->name; k++)
            if (strcmp(k->name, name) == 0)
                key = k;
        if (!key) {
            const char *names[256];
            int count = 0;
            for (const struct wp_cfg_key *k = schema; k->name && count < 255; k++)
                names[count++] = k->name;
            names[count] = NULL;
            const char *near = wp_nearest_name(name, names);
            if (near)
                return ctx_error(ctx, s, "unknown key '%s' in %s; did you mean '%s'?", name,
                                     group_name, near);
            return ctx_error(ctx, s, "unknown key '%s' in %s", name, group_name);
        }
        if (check_value(s, key, ctx))
            return -1;
    }
    for (const struct wp_cfg_key *k = schema; k->name; k++)
        if (k->required && !config_setting_get_member(group, k->name))
            return ctx_error(ctx, group, "%s lacks the required key '%s' (%s)", group_name,
                                 k->name, kind_name(k->kind));
    return 0;
}

static int check_value(const config_setting_t *s, const struct wp_cfg_key *key,
                       const struct check_ctx *ctx)
{
    int t = config_setting_type(s);
    switch (key->kind) {
    case WP_CFG_INT:
    case WP_CFG_INT64:
        if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
            break;
        if (key->kind == WP_CFG_INT && t == CONFIG_TYPE_INT64) {
            long long v = config_setting_get_int64(s);
            if (v < -2147483647LL - 1 || v > 2147483647LL)
                return ctx_error(ctx, s, "'%s' = %lld does not fit a 32-bit integer",
                                     key->name, v);
        }
        return check_range(s, key, (double)config_setting_get_int64(s), key->name, ctx);
    case WP_CFG_FLOAT:
        if (!is_number_type(t))
            break;
        return check_range(s, key, t == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                                          : (double)config_setting_get_int64(s),
                           key->name, ctx);
    case WP_CFG_BOOL:
        if (t != CONFIG_TYPE_BOOL)
            break;
        return 0;
    case WP_CFG_STRING:
        if (t != CONFIG_TYPE_STRING)
            break;
        if (key->choices) {
            const char *v = config_setting_get_string(s);
            for (const char *const *c = key->choices; *c; c++)
                if (strcmp(*c, v) == 0)
                    return 0;
            char allowed[512] = "";
            for (const char *const *c = key->choices; *c; c++) {
                strncat(allowed, c == key->choices ? "" : ", ", sizeof allowed - strlen(allowed) - 1);
                strncat(allowed, *c, sizeof allowed - strlen(allowed) - 1);
            }
            const char *near = wp_nearest_name(v, (const char *const *)key->choices);
            if (near)
                return ctx_error(ctx, s, "'%s' = \"%s\" is not one of: %s; did you mean \"%s\"?",
                                     key->name, v, allowed, near);
            return ctx_error(ctx, s, "'%s' = \"%s\" is not one of: %s", key->name, v, allowed);
        }
        return 0;
    case WP_CFG_GROUP:
        if (t != CONFIG_TYPE_GROUP)
            break;
        return check_children(s, key->children, key->name, ctx);
    case WP_CFG_GROUP_LIST:
        if (t != CONFIG_TYPE_LIST)
            break;
        for (int i = 0; i < config_setting_length(s); i++) {
            const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
            char label[256];
            snprintf(label, sizeof label, "%s[%d]", key->name, i);
            if (config_setting_type(e) != CONFIG_TYPE_GROUP)
                return ctx_error(ctx, e, "element %d of '%s' must be a group { ... }", i,
                                     key->name);
            if (check_children(e, key->children, label, ctx))
                return -1;
        }
        return 0;
    case WP_CFG_INT_ARRAY:
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            break;
        return check_number_array(s, key, 1, ctx);
    case WP_CFG_FLOAT_ARRAY:
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            break;
        return check_number_array(s, key, 0, ctx);
    case WP_CFG_STRING_ARRAY:
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
            break;
        for (int i = 0; i < config_setting_length(s); i++)
            if (config_setting_type(config_setting_get_elem(s, (unsigned)i)) != CONFIG_TYPE_STRING)
                return ctx_error(ctx, s, "element %d of '%s' must be a string", i, key->name);
        return 0;
    case WP_CFG_FLOAT_MATRIX:
        if (t != CONFIG_TYPE_LIST)
            break;
        for (int i = 0; i < config_setting_length(s); i++) {
            const config_setting_t *row = config_setting_get_elem(s, (unsigned)i);
            if (config_setting_type(row) != CONFIG_TYPE_ARRAY)
                return ctx_error(ctx, row, "row %d of '%s' must be an array [ ... ]", i,
                                     key->name);
            if (check_number_array(row, key, 0, ctx))
                return -1;
        }
        return 0;
    }
    return ctx_error(ctx, s, "'%s' must be %s", key->name, kind_name(key->kind));
}

int wp_cfg_check_group(const config_setting_t *group, const struct wp_cfg_key *schema,
                       const char *name, struct wp_err *err)
{
    struct check_ctx ctx = {"(input)", err};
    return check_children(group, schema, name, &ctx);
}

int wp_cfg_read_file(config_t *cfg, const char *path, const struct wp_cfg_key *schema,
                     struct wp_err *err)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        return wp_errorf(err, "cannot read %s: %s", path, strerror(errno));
    fclose(fp);
    if (config_read_file(cfg, path) != CONFIG_TRUE)
        return wp_errorf(err, "%s:%d: %s", config_error_file(cfg) ? config_error_file(cfg) : path,
                         config_error_line(cfg), config_error_text(cfg));
    struct check_ctx ctx = {path, err};
    return check_children(config_root_setting(cfg), schema, "the file", &ctx);
}

int wp_cfg_read_text(config_t *cfg, const char *text, const char *name,
                     const struct wp_cfg_key *schema, struct wp_err *err)
{
    if (config_read_string(cfg, text) != CONFIG_TRUE)
        return wp_errorf(err, "%s:%d: %s", name, config_error_line(cfg), config_error_text(cfg));
    struct check_ctx ctx = {name, err};
    return check_children(config_root_setting(cfg), schema, name, &ctx);
}

int wp_cfg_int(const config_setting_t *group, const char *name, int dflt)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    return s ? (int)config_setting_get_int64(s) : dflt;
}

long long wp_cfg_int64(const config_setting_t *group, const char *name, long long dflt)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    return s ? config_setting_get_int64(s) : dflt;
}

double wp_cfg_float(const config_setting_t *group, const char *name, double dflt)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    if (!s)
        return dflt;
    return config_setting_type(s) == CONFIG_TYPE_FLOAT ? config_setting_get_float(s)
                                                       : (double)config_setting_get_int64(s);
}

int wp_cfg_bool(const config_setting_t *group, const char *name, int dflt)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    return s ? config_setting_get_bool(s) : dflt;
}

const char *wp_cfg_string(const config_setting_t *group, const char *name, const char *dflt)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    return s ? config_setting_get_string(s) : dflt;
}

double wp_cfg_number_elem(const config_setting_t *array, int i)
{
    const config_setting_t *e = config_setting_get_elem(array, (unsigned)i);
    if (!e)
        return 0;
    return config_setting_type(e) == CONFIG_TYPE_FLOAT ? config_setting_get_float(e)
                                                       : (double)config_setting_get_int64(e);
}

config_setting_t *wp_cfg_add_group(config_setting_t *parent, const char *name)
{
    return config_setting_add(parent, name, CONFIG_TYPE_GROUP);
}

config_setting_t *wp_cfg_add_list(config_setting_t *parent, const char *name)
{
    return config_setting_add(parent, name, CONFIG_TYPE_LIST);
}

config_setting_t *wp_cfg_add_array(config_setting_t *parent, const char *name)
{
    return config_setting_add(parent, name, CONFIG_TYPE_ARRAY);
}

void wp_cfg_add_int(config_setting_t *parent, const char *name, int value)
{
    config_setting_set_int(config_setting_add(parent, name, CONFIG_TYPE_INT), value);
}

void wp_cfg_add_int64(config_setting_t *parent, const char *name, long long value)
{
    config_setting_set_int64(config_setting_add(parent, name, CONFIG_TYPE_INT64), value);
}

void wp_cfg_add_float(config_setting_t *parent, const char *name, double value)
{
    config_setting_set_float(config_setting_add(parent, name, CONFIG_TYPE_FLOAT), value);
}

void wp_cfg_add_bool(config_setting_t *parent, const char *name, int value)
{
    config_setting_set_bool(config_setting_add(parent, name, CONFIG_TYPE_BOOL), value);
}

void wp_cfg_add_string(config_setting_t *parent, const char *name, const char *value)
{
    config_setting_set_string(config_setting_add(parent, name, CONFIG_TYPE_STRING), value);
}

void wp_cfg_append_int(config_setting_t *array, int value)
{
    config_setting_set_int(config_setting_add(array, NULL, CONFIG_TYPE_INT), value);
}

void wp_cfg_append_float(config_setting_t *array, double value)
{
    config_setting_set_float(config_setting_add(array, NULL, CONFIG_TYPE_FLOAT), value);
}

void wp_cfg_append_string(config_setting_t *array, const char *value)
{
    config_setting_set_string(config_setting_add(array, NULL, CONFIG_TYPE_STRING), value);
}

int wp_cfg_write_file(config_t *cfg, const char *path, const char *header, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err))
        return -1;
    if (header) {
        const char *line = header;
        while (*line) {
            const char *nl = strchr(line, '\n');
            int len = nl ? (int)(nl - line) : (int)strlen(line);
            fprintf(af.fp, "# %.*s\n", len, line);
            line += len + (nl ? 1 : 0);
        }
    }
    config_write(cfg, af.fp);
    return wp_atomic_commit(&af, err);
}

char *wp_cfg_write_text(config_t *cfg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (!fp)
        return NULL;
    config_write(cfg, fp);
    fclose(fp);
    return buf;
}
