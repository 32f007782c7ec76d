/* A campaign's scenarios: reading and checking them, and the --changes
 * file of each (see scenarios.h). */
#include "campaign/scenarios.h"

#include <stdlib.h>
#include <string.h>

#include "campaign/point.h"
#include "config/schema.h"
#include "run/adapt/changes.h"
#include "util/strutil.h"

static int read_one(const config_setting_t *list, struct wp_scenario *sc, struct wp_err *err)
{
    const char *name = config_setting_name(list);
    int t = config_setting_type(list);
    if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST)
        return wp_cfg_errorf(err, list, "scenario '%s' must be an array of changes, e.g. [\"20 slow 1 2\"]", name);
    if (!wp_point_safe_name(name) || strcmp(name, "none") == 0 || strlen(name) >= sizeof sc->name)
        return wp_cfg_errorf(err, list, "scenario name '%s' must be of [A-Za-z0-9._-], shorter than %d characters, "
                             "and not \"none\" (no change)", name, (int)sizeof sc->name);
    int n = config_setting_length(list);
    if (n < 1 || n > WP_SCENARIO_CHANGES_MAX)
        return wp_cfg_errorf(err, list, "scenario '%s' has %d changes: 1 to %d", name, n, WP_SCENARIO_CHANGES_MAX);
    memset(sc, 0, sizeof *sc);
    wp_strlcpy(sc->name, name, sizeof sc->name);
    struct wp_changes parsed = {0}; /* parsed as `wavepipe run --changes` parses them */
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *text = config_setting_get_string(config_setting_get_elem(list, (unsigned)i));
        struct wp_err why = {""};
        int added = !text ? wp_errorf(&why, "a string such as \"20 slow 1 2\"")
                    : strchr(text, '\n') || strlen(text) >= sizeof sc->changes[0]
                        ? wp_errorf(&why, "one change a string, shorter than %d characters", (int)sizeof sc->changes[0])
                        : wp_changes_add(&parsed, text, i + 1, &why);
        if (added == 0)
            added = wp_errorf(&why, "no change in \"%s\"", text);
        if (added < 0)
            rc = wp_cfg_errorf(err, list, "scenario '%s', change %d: %s", name, i + 1, why.msg);
        else
            wp_strlcpy(sc->changes[sc->nchanges++], text, sizeof sc->changes[0]);
    }
    sc->max_rank = wp_changes_max_rank(&parsed);
    sc->need_hook = wp_changes_need_hook(&parsed);
    wp_changes_free(&parsed);
    return rc;
}

int wp_scenarios_read(const config_setting_t *group, struct wp_scenarios *s, struct wp_err *err)
{
    memset(s, 0, sizeof *s);
    if (!group)
        return 0;
    int n = config_setting_length(group);
    if (n > WP_SCENARIOS_MAX)
        return wp_cfg_errorf(err, group, "at most %d scenarios", WP_SCENARIOS_MAX);
    for (int i = 0; i < n; i++)
        if (read_one(config_setting_get_elem(group, (unsigned)i), &s->v[s->n++], err))
            return -1;
    return 0;
}

const struct wp_scenario *wp_scenarios_find(const struct wp_scenarios *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0)
            return &s->v[i];
    return NULL;
}

char *wp_scenario_changes_text(const struct wp_scenario *sc)
{
    size_t size = 128;
    for (int i = 0; i < sc->nchanges; i++)
        size += strlen(sc->changes[i]) + 1;
    char *text = malloc(size);
    if (!text)
        return NULL;
    size_t len = (size_t)snprintf(text, size, "# scenario %s (wavepipe run --changes; written by wavepipe sweep)\n",
                                  sc->name);
    for (int i = 0; i < sc->nchanges; i++)
        len += (size_t)snprintf(text + len, size - len, "%s\n", sc->changes[i]);
    return text;
}
