/* `wavepipe sbp`'s problem and answer (see sbp_chain.h): the chain's
 * layers and links, the search or a given strategy, the table and the file. */
#include "plan/sbp_chain.h"

#include <stdlib.h>
#include <string.h>

#include "config/schema.h"
#include "plan/plan.h"
#include "plan/sbp_cost.h"
#include "plan/sbp_search.h"
#include "plan/sbp_strategy.h"
#include "topo/cluster_io.h"

int wp_sbp_chain_layers(const int *widths, int nwidths, int repeat, struct wp_sbp_layer **layers, int *nlayers,
                        struct wp_err *err)
{
    int per_repeat = nwidths - 1;
    *nlayers = per_repeat * repeat;
    *layers = calloc((size_t)*nlayers, sizeof **layers);
    if (!*layers)
        return wp_errorf(err, "out of memory");
    for (int l = 0; l < *nlayers; l++) {
        snprintf((*layers)[l].name, sizeof (*layers)[l].name, "fc%d", l);
        (*layers)[l].n_in = widths[l % per_repeat];
        (*layers)[l].n_out = widths[l % per_repeat + 1];
    }
    return 0;
}

int wp_sbp_solve(const struct wp_sbp_problem *pr, const struct wp_sbp_search_opts *so, const char *strategy,
                 struct wp_sbp_result *res, char *label, size_t label_size, struct wp_err *err)
{
    int status;
    if (strcmp(strategy, "chosen") == 0) {
        status = wp_sbp_plan(pr, so, res, err);
        snprintf(label, label_size, "chosen:%s", wp_sbp_search_name(so->kind));
        return status;
    }
    struct wp_sbp_mesh *meshes = calloc((size_t)pr->nlayers, sizeof *meshes);
    status = meshes ? wp_sbp_strategy_meshes(pr, strategy, meshes, err) : wp_errorf(err, "out of memory");
    if (status == 0)
        status = wp_sbp_evaluate(pr, meshes, res, err);
    free(meshes);
    snprintf(label, label_size, "%s", strategy);
    return status;
}

void wp_sbp_print(FILE *out, const struct wp_sbp_problem *pr, const struct wp_sbp_result *r)
{
    const struct wp_sbp_mesh *m0 = &r->layers[0].mesh;
    fprintf(out, "SBP meshes: %d layers (%d shapes), batch %d, %d devices (%d nodes x %d GPUs), search %s\n",
           pr->nlayers, r->nclasses, pr->batch, pr->devices, m0->nodes[0] * m0->nodes[1] * m0->nodes[2],
           m0->gpus[0] * m0->gpus[1] * m0->gpus[2], r->space > 0 ? wp_sbp_search_name(r->search) : "given");
    fprintf(out, "%-8s %7s %7s %-14s %-12s %-12s %11s %10s %10s %10s %10s %10s %10s\n", "layer", "n_in", "n_out",
           "mesh", "nodes", "gpus", "alltoall_ms", "gather_ms", "reduce_ms", "wsync_ms", "comm_ms", "sent_MiB",
           "memory_MiB");
    for (int l = 0; l < r->nlayers; l++) {
        const struct wp_sbp_layer_cost *c = &r->layers[l];
        const struct wp_sbp_mesh *m = &c->mesh;
        char mesh_s[32], nodes_s[32], gpus_s[32];
        snprintf(mesh_s, sizeof mesh_s, "(%d,%d,%d)", wp_sbp_mesh_axis(m, 0), wp_sbp_mesh_axis(m, 1),
                 wp_sbp_mesh_axis(m, 2));
        snprintf(nodes_s, sizeof nodes_s, "(%d,%d,%d)", m->nodes[0], m->nodes[1], m->nodes[2]);
        snprintf(gpus_s, sizeof gpus_s, "(%d,%d,%d)", m->gpus[0], m->gpus[1], m->gpus[2]);
        fprintf(out, "%-8s %7d %7d %-14s %-12s %-12s %11.4f %10.4f %10.4f %10.4f %10.4f %10.2f %10.2f\n",
               pr->layers[l].name, pr->layers[l].n_in, pr->layers[l].n_out, mesh_s, nodes_s, gpus_s,
               1e3 * c->alltoall_s, 1e3 * c->gather_s, 1e3 * c->reduce_s, 1e3 * c->weight_sync_s, 1e3 * c->comm_s,
               c->sent_bytes / 1048576, c->memory_bytes / 1048576);
    }
    fprintf(out, "total: communication %.4f ms per step, %.2f MiB sent and %.2f MiB held per device\n", 1e3 * r->comm_s,
           r->sent_bytes / 1048576, r->memory_bytes / 1048576);
    if (r->space > 0)
        fprintf(out, "search: %.4g strategies, %.4g costed\n", r->space, r->costed);
}

int wp_sbp_links_from_cluster(const char *path, struct wp_sbp_problem *pr, char *intra_label, char *inter_label,
                              size_t label_size, struct wp_err *err)
{
    struct wp_cluster c;
    wp_cluster_init(&c);
    int nodes, gpus, status = wp_cluster_read(path, &c, err);
    if (status == 0)
        status = wp_sbp_check_problem(pr, &nodes, &gpus, err);
    if (status == 0 && c.intra_network.given && c.intra_network.bandwidth_Bps > 0) {
        pr->intra = (struct wp_link_cost){c.intra_network.latency_s, 1 / c.intra_network.bandwidth_Bps};
        snprintf(intra_label, label_size, "%s: intra_network %s, %s", path, c.intra_network.name,
                 c.intra_network.source);
    } else if (status == 0 && c.ntypes > 0 && c.types[0].ngpus > 1) {
        struct wp_plan_hw hw;
        status = wp_plan_hw_from_cluster(&hw, &c, pr->devices, 1 /* memory: not needed here */, err);
        if (status == 0) {
            pr->intra = hw.intra;
            snprintf(intra_label, label_size, "%s: the slowest pair of a node's GPUs", path);
        }
    } else if (status == 0 && gpus > 1) {
        status = wp_errorf(err, "%s has no intra-node link (no intra_network, no GPUs): calibrate with two or "
                                "more ranks per node (wavepipe calibrate --out)", path);
    }
    if (status == 0 && c.network.given && c.network.bandwidth_Bps > 0) {
        pr->inter = (struct wp_link_cost){c.network.latency_s, 1 / c.network.bandwidth_Bps};
        snprintf(inter_label, label_size, "%s: network %s, %s", path, c.network.name, c.network.source);
    } else if (status == 0 && nodes > 1) {
        status = wp_errorf(err, "%s has no network between nodes (add one, or run wavepipe calibrate --out)", path);
    }
    wp_cluster_destroy(&c);
    return status;
}

int wp_sbp_write(const char *path, const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                 struct wp_err *err)
{
    config_t cfg;
    config_init(&cfg);
    wp_sbp_config_add(config_root_setting(&cfg), pr, res);
    int status = wp_cfg_write_file(&cfg, path,
                                   "wavepipe sbp: AutoDDL SBP mesh per layer (p0, p1, p2 as nodes x GPUs),\n"
                                   "communication seconds per step (forward + backward), bytes per device",
                                   err);
    config_destroy(&cfg);
    return status;
}
