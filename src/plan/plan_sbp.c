/* AutoDDL meshes inside a DAPPLE plan (issue: "for the matmul-heavy layers
 * of a stage, choose the 3D device mesh"): for each replicated stage of a
 * plan of wavepipe's GPT layer table, the stage's r devices become an SBP
 * mesh for the MLP of its blocks (C -> 4C -> C, the blocks' largest
 * matmuls, a true chain), the micro-batch's tokens as the batch, the
 * blocks sharing one strategy. Data parallelism is the mesh (r, 1, 1); the
 * search says when another mesh communicates less. The plan file records
 * the mesh per layer for the runtime to execute (a later issue). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/sbp_search.h"

/* Blocks ("blockN") of layers [first, last] of the table. */
static int blocks_in(const struct wp_layer_table *t, int first, int last)
{
    int n = 0;
    for (int i = first; i <= last; i++)
        n += strncmp(t->layers[i].name, "block", 5) == 0;
    return n;
}

int wp_plan_sbp(struct wp_plan *p, const struct wp_layer_table *t, int channels, int seq_len, struct wp_err *err)
{
    wp_plan_sbp_destroy(p);
    p->sbp = calloc((size_t)p->nstages, sizeof *p->sbp);
    if (!p->sbp)
        return wp_errorf(err, "out of memory");
    for (int s = 0; s < p->nstages; s++) {
        const struct wp_plan_stage *st = &p->stages[s];
        struct wp_plan_sbp *sb = &p->sbp[s];
        int blocks = blocks_in(t, st->first_layer, st->last_layer);
        int r = st->replicas, g = st->max_per_node;
        if (wp_plan_tensor_size(p->tensor) > 1) {
            snprintf(sb->why, sizeof sb->why, "its replicas are tensor groups of %d x %d GPUs already",
                     p->tensor.p1, p->tensor.p2);
            continue;
        }
        if (r < 2 || blocks == 0 || (r > g && r % g))
            continue; /* nothing to mesh, or replicas not whole nodes */
        sb->nlayers = 2 * blocks;
        sb->layers = calloc((size_t)sb->nlayers, sizeof *sb->layers);
        if (!sb->layers)
            return wp_errorf(err, "out of memory");
        for (int b = 0, i = 0; b < blocks; b++) {
            snprintf(sb->layers[i].name, sizeof sb->layers[i].name, "stage%d.mlp%d.fc", s, b);
            sb->layers[i].n_in = channels;
            sb->layers[i++].n_out = 4 * channels;
            snprintf(sb->layers[i].name, sizeof sb->layers[i].name, "stage%d.mlp%d.proj", s, b);
            sb->layers[i].n_in = 4 * channels;
            sb->layers[i++].n_out = channels;
        }
        /* the last proj's output feeds the next block's fc: a chain of
         * C -> 4C -> C -> 4C ...; n_out of proj = n_in of the next fc */
        wp_sbp_problem_default(&sb->problem);
        sb->problem.layers = sb->layers;
        sb->problem.nlayers = sb->nlayers;
        sb->problem.batch = p->micro_batch * seq_len;
        sb->problem.devices = r;
        sb->problem.gpus_per_node = r > g ? g : r;
        sb->problem.intra = p->hw.intra;
        sb->problem.inter = p->hw.inter;
        struct wp_sbp_search_opts opts;
        wp_sbp_search_default(&opts);
        opts.kind = WP_SBP_COORDINATE_DESCENT;
        struct wp_err why;
        if (wp_sbp_plan(&sb->problem, &opts, &sb->result, &why) == 0) {
            sb->planned = 1;
            /* data parallelism on the same devices, for comparison */
            struct wp_sbp_mesh *dp = calloc((size_t)sb->nlayers, sizeof *dp);
            struct wp_sbp_result dres;
            int G = sb->problem.gpus_per_node;
            for (int i = 0; dp && i < sb->nlayers; i++)
                dp[i] = (struct wp_sbp_mesh){{r / G, 1, 1}, {G, 1, 1}};
            sb->dp_comm_s = -1;
            if (dp && wp_sbp_evaluate(&sb->problem, dp, &dres, &why) == 0) {
                sb->dp_comm_s = dres.comm_s;
                wp_sbp_result_destroy(&dres);
            }
            free(dp);
        } else {
            /* no mesh of r devices splits these shapes: the stage stays data parallel */
            snprintf(sb->why, sizeof sb->why, "%.200s", why.msg);
        }
    }
    (void)err;
    return 0;
}

void wp_plan_sbp_destroy(struct wp_plan *p)
{
    if (!p->sbp)
        return;
    for (int s = 0; s < p->nstages; s++) {
        if (p->sbp[s].planned)
            wp_sbp_result_destroy(&p->sbp[s].result);
        free(p->sbp[s].layers);
    }
    free(p->sbp);
    p->sbp = NULL;
}
