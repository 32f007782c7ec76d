/* Schemas for libconfig files: every input file of wavepipe is checked
 * against one before it is used, so a bad file gets one error with file:line,
 * unknown keys are named with the nearest valid key, and numbers outside
 * their range are reported with the allowed range. */
#ifndef WP_CONFIG_SCHEMA_H
#define WP_CONFIG_SCHEMA_H

#include <libconfig.h>
#include "util/error.h"

enum wp_cfg_kind {
    WP_CFG_INT,          /* 32-bit integer */
    WP_CFG_INT64,        /* 64-bit integer (an int is accepted) */
    WP_CFG_FLOAT,        /* float (an integer is accepted) */
    WP_CFG_BOOL,
    WP_CFG_STRING,
    WP_CFG_GROUP,        /* { ... } checked against children */
    WP_CFG_GROUP_LIST,   /* ( {...}, {...} ) each checked against children */
    WP_CFG_INT_ARRAY,    /* [ 1, 2 ] elements in [min, max] when ranged */
    WP_CFG_FLOAT_ARRAY,
    WP_CFG_STRING_ARRAY,
    WP_CFG_FLOAT_MATRIX  /* ( [..], [..] ) rows of numbers */
};

struct wp_cfg_key {
    const char *name;
    enum wp_cfg_kind kind;
    int required;
    int ranged;                        /* check min <= value <= max */
    double min, max;
    const char *const *choices;        /* strings: NULL-terminated allowed values */
    const struct wp_cfg_key *children; /* groups: terminated by a NULL name */
};

/* Readers for schema tables. */
#define WP_KEY(n, k, req) {(n), (k), (req), 0, 0, 0, NULL, NULL}
#define WP_KEY_RANGE(n, k, req, lo, hi) {(n), (k), (req), 1, (lo), (hi), NULL, NULL}
#define WP_KEY_CHOICE(n, req, ch) {(n), WP_CFG_STRING, (req), 0, 0, 0, (ch), NULL}
#define WP_KEY_GROUP(n, k, req, ch) {(n), (k), (req), 0, 0, 0, NULL, (ch)}
#define WP_KEY_END {NULL, WP_CFG_INT, 0, 0, 0, 0, NULL, NULL}

/* Reads path into cfg (config_init'ed by the caller) and checks the root
 * group against schema. Errors read "path:line: message". */
int wp_cfg_read_file(config_t *cfg, const char *path, const struct wp_cfg_key *schema,
                     struct wp_err *err);
/* The same for text held in memory; name stands in for the file name. */
int wp_cfg_read_text(config_t *cfg, const char *text, const char *name,
                     const struct wp_cfg_key *schema, struct wp_err *err);
/* Checks one group against a schema (used for nested and partial files). */
int wp_cfg_check_group(const config_setting_t *group, const struct wp_cfg_key *schema,
                       const char *name, struct wp_err *err);

/* "file:line: " message about a setting; returns -1. */
int wp_cfg_errorf(struct wp_err *err, const config_setting_t *setting, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Typed lookups for files already checked by a schema; dflt when absent. */
int wp_cfg_int(const config_setting_t *group, const char *name, int dflt);
long long wp_cfg_int64(const config_setting_t *group, const char *name, long long dflt);
double wp_cfg_float(const config_setting_t *group, const char *name, double dflt);
int wp_cfg_bool(const config_setting_t *group, const char *name, int dflt);
const char *wp_cfg_string(const config_setting_t *group, const char *name, const char *dflt);
/* Number element i of an array (int or float). */
double wp_cfg_number_elem(const config_setting_t *array, int i);

/* Writers: add a child setting to a group. */
config_setting_t *wp_cfg_add_group(config_setting_t *parent, const char *name);
config_setting_t *wp_cfg_add_list(config_setting_t *parent, const char *name);
config_setting_t *wp_cfg_add_array(config_setting_t *parent, const char *name);
void wp_cfg_add_int(config_setting_t *parent, const char *name, int value);
void wp_cfg_add_int64(config_setting_t *parent, const char *name, long long value);
void wp_cfg_add_float(config_setting_t *parent, const char *name, double value);
void wp_cfg_add_bool(config_setting_t *parent, const char *name, int value);
void wp_cfg_add_string(config_setting_t *parent, const char *name, const char *value);
/* Appends an element to an array or list (name-less settings). */
void wp_cfg_append_int(config_setting_t *array, int value);
void wp_cfg_append_float(config_setting_t *array, double value);
void wp_cfg_append_string(config_setting_t *array, const char *value);

/* Writes cfg to path through a temporary file and rename, with a comment
 * header (lines without the leading "# "). */
int wp_cfg_write_file(config_t *cfg, const char *path, const char *header, struct wp_err *err);
/* Serialises cfg into a malloc'ed string (for transport between ranks). */
char *wp_cfg_write_text(config_t *cfg);

#endif
