/* The SBP problem's defaults and small helpers (sbp.h): a mesh's axes, the
 * searches' names and defaults, freeing a result. */
#include "plan/sbp.h"

#include <stdlib.h>
#include <string.h>

void wp_sbp_problem_default(struct wp_sbp_problem *pr)
{
    memset(pr, 0, sizeof *pr);
    pr->batch = 1;
    pr->devices = 1;
    pr->gpus_per_node = 1;
    pr->element_bytes = 4;
    pr->weight_state_bytes = 16;
    pr->activation_bytes = 4;
    pr->input = WP_SBP_INPUT_BATCH_SPLIT;
}

int wp_sbp_mesh_axis(const struct wp_sbp_mesh *m, int k)
{
    return m->nodes[k] * m->gpus[k];
}

void wp_sbp_search_default(struct wp_sbp_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->kind = WP_SBP_COORDINATE_DESCENT;
    o->seed = 1;
    o->restarts = 8;
    o->iterations = 100000;
    o->mh_beta = 200;
    o->exhaustive_bounds = 1;
    o->exhaustive_max = 1e9;
}

int wp_sbp_search_from_name(const char *name)
{
    if (strcmp(name, "exhaustive") == 0)
        return WP_SBP_EXHAUSTIVE;
    if (strcmp(name, "cd") == 0 || strcmp(name, "coordinate-descent") == 0)
        return WP_SBP_COORDINATE_DESCENT;
    if (strcmp(name, "mh") == 0 || strcmp(name, "metropolis") == 0)
        return WP_SBP_METROPOLIS;
    return -1;
}

const char *wp_sbp_search_name(enum wp_sbp_search kind)
{
    switch (kind) {
    case WP_SBP_EXHAUSTIVE:
        return "exhaustive";
    case WP_SBP_COORDINATE_DESCENT:
        return "cd";
    case WP_SBP_METROPOLIS:
        return "mh";
    }
    return "?";
}

void wp_sbp_result_destroy(struct wp_sbp_result *res)
{
    free(res->layers);
    res->layers = NULL;
    res->nlayers = 0;
}
