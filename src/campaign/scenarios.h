/* A campaign's scenarios: named lists of timed changes (the lines of
 * `wavepipe run --changes`, run/adapt/changes.h) that the axis "scenario" picks
 * per point, so that static and adaptive runs meet the same changes and
 * `wavepipe harvest` compares them (issue 12):
 *
 *   scenarios = {
 *     contended-gpu = ["20 slow 1 2", "40 slow 1 3"];
 *     rate-drop = ["0 rate none", "12 rate 100mbit"];
 *   };
 *   scenario_hook = "tests/cluster/scenario-hook.sh";  (changes other than slow)
 *   axes = { scenario = ["none", "rate-drop"]; adapt = ["none", "both"]; ... };
 *
 * "none" is no change. Each change is checked where it is written
 * (file:line), and a point's slowed ranks against its rank count. */
#ifndef WP_CAMPAIGN_SCENARIOS_H
#define WP_CAMPAIGN_SCENARIOS_H

#include <libconfig.h>

#include "campaign/point.h"
#include "util/error.h"

#define WP_SCENARIOS_MAX 16
#define WP_SCENARIO_CHANGES_MAX 32

struct wp_scenario {
    char name[WP_POINT_NAME_MAX];
    int nchanges;
    char changes[WP_SCENARIO_CHANGES_MAX][128]; /* one --changes line each */
    int max_rank;  /* the highest rank a slow change names (-1: none) */
    int need_hook; /* a change other than slow */
};

struct wp_scenarios {
    int n;
    struct wp_scenario v[WP_SCENARIOS_MAX];
};

/* Reads the group `scenarios` (NULL: none) and checks every change. */
int wp_scenarios_read(const config_setting_t *group, struct wp_scenarios *s, struct wp_err *err);

/* The scenario named name, or NULL ("none" is no scenario). */
const struct wp_scenario *wp_scenarios_find(const struct wp_scenarios *s, const char *name);

/* The --changes file of a scenario (malloc'ed text), NULL when out of memory. */
char *wp_scenario_changes_text(const struct wp_scenario *sc);

#endif
