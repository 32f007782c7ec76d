/* The SBP result as the plan file's `sbp` group (libconfig) and its schema
 * (see sbp.h for the layout). */
#include <stdlib.h>

#include "plan/sbp.h"

static const char *const dim_names[] = {"cols", "rows", NULL};

static const struct wp_cfg_key layer_keys[] = {
    WP_KEY("name", WP_CFG_STRING, 1),
    WP_KEY_RANGE("n_in", WP_CFG_INT, 1, 1, 2147483647),
    WP_KEY_RANGE("n_out", WP_CFG_INT, 1, 1, 2147483647),
    WP_KEY_RANGE("mesh", WP_CFG_INT_ARRAY, 1, 1, 2147483647),
    WP_KEY_RANGE("nodes", WP_CFG_INT_ARRAY, 1, 1, 2147483647),
    WP_KEY_RANGE("gpus", WP_CFG_INT_ARRAY, 1, 1, 2147483647),
    WP_KEY_CHOICE("gather_from", 1, dim_names),
    WP_KEY_CHOICE("reduce_to", 1, dim_names),
    WP_KEY_RANGE("alltoall_s", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("gather_s", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("reduce_s", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("weight_sync_s", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("comm_s", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("sent_bytes", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("weight_sync_sent_bytes", WP_CFG_FLOAT, 0, 0, 1e300),
    WP_KEY_RANGE("memory_bytes", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_END};

static const char *const search_names[] = {"exhaustive", "cd", "mh", "given", NULL};

const struct wp_cfg_key wp_sbp_config_keys[] = {
    WP_KEY_CHOICE("search", 1, search_names),
    WP_KEY_RANGE("devices", WP_CFG_INT, 1, 1, 2147483647),
    WP_KEY_RANGE("gpus_per_node", WP_CFG_INT, 1, 1, 2147483647),
    WP_KEY_RANGE("batch", WP_CFG_INT, 1, 1, 2147483647),
    WP_KEY_RANGE("memory_limit_bytes", WP_CFG_FLOAT, 0, 0, 1e300),
    WP_KEY_RANGE("comm_s", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("sent_bytes", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_RANGE("memory_bytes", WP_CFG_FLOAT, 1, 0, 1e300),
    WP_KEY_GROUP("layers", WP_CFG_GROUP_LIST, 1, layer_keys),
    WP_KEY_END};

static void add_triple(config_setting_t *g, const char *name, int a, int b, int c)
{
    config_setting_t *arr = wp_cfg_add_array(g, name);
    wp_cfg_append_int(arr, a);
    wp_cfg_append_int(arr, b);
    wp_cfg_append_int(arr, c);
}

void wp_sbp_config_add(config_setting_t *parent, const struct wp_sbp_problem *pr,
                       const struct wp_sbp_result *res)
{
    config_setting_t *sbp = wp_cfg_add_group(parent, "sbp");
    /* a result of wp_sbp_evaluate has no search (space 0) */
    wp_cfg_add_string(sbp, "search", res->space > 0 ? wp_sbp_search_name(res->search) : "given");
    wp_cfg_add_int(sbp, "devices", pr->devices);
    wp_cfg_add_int(sbp, "gpus_per_node", pr->gpus_per_node);
    wp_cfg_add_int(sbp, "batch", pr->batch);
    if (pr->memory_limit_bytes > 0)
        wp_cfg_add_float(sbp, "memory_limit_bytes", pr->memory_limit_bytes);
    wp_cfg_add_float(sbp, "comm_s", res->comm_s);
    wp_cfg_add_float(sbp, "sent_bytes", res->sent_bytes);
    wp_cfg_add_float(sbp, "memory_bytes", res->memory_bytes);
    config_setting_t *layers = wp_cfg_add_list(sbp, "layers");
    for (int l = 0; l < res->nlayers; l++) {
        const struct wp_sbp_layer_cost *c = &res->layers[l];
        const struct wp_sbp_mesh *m = &c->mesh;
        config_setting_t *g = config_setting_add(layers, NULL, CONFIG_TYPE_GROUP);
        wp_cfg_add_string(g, "name", pr->layers[l].name);
        wp_cfg_add_int(g, "n_in", pr->layers[l].n_in);
        wp_cfg_add_int(g, "n_out", pr->layers[l].n_out);
        add_triple(g, "mesh", wp_sbp_mesh_axis(m, 0), wp_sbp_mesh_axis(m, 1), wp_sbp_mesh_axis(m, 2));
        add_triple(g, "nodes", m->nodes[0], m->nodes[1], m->nodes[2]);
        add_triple(g, "gpus", m->gpus[0], m->gpus[1], m->gpus[2]);
        wp_cfg_add_string(g, "gather_from", dim_names[c->gather_from]);
        wp_cfg_add_string(g, "reduce_to", dim_names[c->reduce_to]);
        wp_cfg_add_float(g, "alltoall_s", c->alltoall_s);
        wp_cfg_add_float(g, "gather_s", c->gather_s);
        wp_cfg_add_float(g, "reduce_s", c->reduce_s);
        wp_cfg_add_float(g, "weight_sync_s", c->weight_sync_s);
        wp_cfg_add_float(g, "comm_s", c->comm_s);
        wp_cfg_add_float(g, "sent_bytes", c->sent_bytes);
        wp_cfg_add_float(g, "weight_sync_sent_bytes", c->weight_sync_sent_bytes);
        wp_cfg_add_float(g, "memory_bytes", c->memory_bytes);
    }
}

char *wp_sbp_config_text(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res)
{
    config_t cfg;
    config_init(&cfg);
    wp_sbp_config_add(config_root_setting(&cfg), pr, res);
    char *text = wp_cfg_write_text(&cfg);
    config_destroy(&cfg);
    return text;
}
