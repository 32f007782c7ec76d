/* Reading and writing point.cfg (see point.h). */
#include "campaign/point.h"

#include <libconfig.h>
#include <string.h>

#include "config/schema.h"
#include "util/strutil.h"

static const char *const scalings[] = {"weak", "strong", NULL};

static const struct wp_cfg_key axis_keys[] = {
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY("value", WP_CFG_STRING, 1),
    WP_KEY_END};

static const struct wp_cfg_key point_keys[] = {
    WP_KEY("format", WP_CFG_STRING, 1),
    WP_KEY_RANGE("version", WP_CFG_INT, 1, 1, 1),
    WP_KEY("campaign", WP_CFG_STRING, 1),
    WP_KEY("point", WP_CFG_STRING, 1),
    WP_KEY_CHOICE("scaling", 1, scalings),
    WP_KEY_RANGE("repetition", WP_CFG_INT, 0, 0, 1e6),
    WP_KEY_RANGE("warmup", WP_CFG_INT, 0, 0, 1e6),
    WP_KEY_GROUP("axes", WP_CFG_GROUP_LIST, 1, axis_keys),
    WP_KEY_END};

int wp_point_write(const char *path, const struct wp_point *p, struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    config_setting_t *root = config_root_setting(&cfg);
    wp_cfg_add_string(root, "format", "wavepipe-point");
    wp_cfg_add_int(root, "version", 1);
    wp_cfg_add_string(root, "campaign", p->campaign);
    wp_cfg_add_string(root, "point", p->id);
    wp_cfg_add_string(root, "scaling", p->scaling);
    wp_cfg_add_int(root, "repetition", p->repetition);
    wp_cfg_add_int(root, "warmup", p->warmup);
    config_setting_t *axes = wp_cfg_add_list(root, "axes");
    for (int i = 0; i < p->naxes; i++) {
        config_setting_t *a = config_setting_add(axes, NULL, CONFIG_TYPE_GROUP);
        wp_cfg_add_string(a, "name", p->axis_name[i]);
        wp_cfg_add_string(a, "value", p->axis_value[i]);
    }
    int rc = wp_cfg_write_file(&cfg, path, "wavepipe campaign point (written by wavepipe sweep, read by harvest)", err);
    config_destroy(&cfg);
    return rc;
}

int wp_point_read(const char *path, struct wp_point *p, struct wp_err *err)
{
    memset(p, 0, sizeof *p);
    config_t cfg;
    config_init(&cfg);
    int rc = wp_cfg_read_file(&cfg, path, point_keys, err);
    if (rc == 0) {
        const config_setting_t *root = config_root_setting(&cfg);
        if (strcmp(wp_cfg_string(root, "format", ""), "wavepipe-point") != 0)
            rc = wp_cfg_errorf(err, config_setting_get_member(root, "format"), "format must be \"wavepipe-point\"");
        wp_strlcpy(p->campaign, wp_cfg_string(root, "campaign", ""), sizeof p->campaign);
        wp_strlcpy(p->id, wp_cfg_string(root, "point", ""), sizeof p->id);
        wp_strlcpy(p->scaling, wp_cfg_string(root, "scaling", "weak"), sizeof p->scaling);
        p->repetition = wp_cfg_int(root, "repetition", 0);
        p->warmup = wp_cfg_int(root, "warmup", 1);
        const config_setting_t *axes = config_setting_get_member(root, "axes");
        int n = config_setting_length(axes);
        if (n > WP_POINT_MAX_AXES)
            rc = wp_cfg_errorf(err, axes, "at most %d axes", WP_POINT_MAX_AXES);
        for (int i = 0; rc == 0 && i < n; i++) {
            const config_setting_t *a = config_setting_get_elem(axes, (unsigned)i);
            wp_strlcpy(p->axis_name[i], wp_cfg_string(a, "name", ""), sizeof p->axis_name[i]);
            wp_strlcpy(p->axis_value[i], wp_cfg_string(a, "value", ""), sizeof p->axis_value[i]);
            p->naxes++;
        }
    }
    config_destroy(&cfg);
    return rc;
}

const char *wp_point_axis(const struct wp_point *p, const char *name)
{
    for (int i = 0; i < p->naxes; i++)
        if (strcmp(p->axis_name[i], name) == 0)
            return p->axis_value[i];
    return NULL;
}

int wp_point_safe_name(const char *s)
{
    if (!s || !*s || *s == '-')
        return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(s);
}
