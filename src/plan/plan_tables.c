/* One plan per layer table, the fastest kept (see plan_tables.h). */
#include "plan/plan_tables.h"

#include <stdlib.h>
#include <string.h>

#include "plan/plan_search.h"
#include "topo/cluster_io.h"

void wp_plan_tables_init(struct wp_plan_tables *pt)
{
    memset(pt, 0, sizeof *pt);
    pt->best = -1;
}

void wp_plan_tables_destroy(struct wp_plan_tables *pt)
{
    for (int i = 0; pt->v && i < pt->n; i++) {
        wp_plan_destroy(&pt->v[i].plan);
        wp_plan_model_destroy(&pt->v[i].m);
        if (pt->v[i].read)
            wp_layer_table_destroy(&pt->v[i].t);
    }
    free(pt->v);
    wp_plan_tables_init(pt);
}

/* Tables of one model at several micro-batch sizes must agree layer by layer. */
static int same_model(const struct wp_layer_table *a, const char *pa, const struct wp_layer_table *b, const char *pb,
                      struct wp_err *err)
{
    if (a->nlayers != b->nlayers)
        return wp_errorf(err, "%s has %d layers but %s has %d: give tables of one model (at several micro-batch "
                              "sizes)", pb, b->nlayers, pa, a->nlayers);
    for (int i = 0; i < a->nlayers; i++)
        if (strcmp(a->layers[i].name, b->layers[i].name) != 0)
            return wp_errorf(err, "%s's layer %d is '%s' but %s's is '%s': give tables of one model", pb, i,
                             b->layers[i].name, pa, a->layers[i].name);
    return 0;
}

/* The cluster's GPUs the plans are for. */
static int read_hw(const struct wp_plan_tables_options *o, struct wp_plan_hw *hw, struct wp_err *err)
{
    struct wp_cluster c;
    wp_cluster_init(&c);
    int status = wp_cluster_read(o->cluster_path, &c, err);
    if (status == 0 && wp_plan_hw_from_cluster(hw, &c, o->devices, o->memory_bytes, err))
        status = wp_err_prefix(err, "%s: ", o->cluster_path); /* the file, beside the cluster's name */
    wp_cluster_destroy(&c);
    return status;
}

/* Table i read, checked and planned (x->planned says whether a plan was
 * found; x->err why not). -1 with err when it cannot be read or checked. */
static int plan_table(struct wp_plan_tables *pt, int i, const struct wp_plan_tables_options *o,
                      const struct wp_plan_hw *hw, struct wp_err *err)
{
    struct wp_plan_table *x = &pt->v[i];
    x->path = o->paths[i];
    wp_plan_init(&x->plan);
    if (wp_layer_table_read(&x->t, x->path, o->profile_batch, o->contract, err))
        return -1;
    x->read = 1;
    if (o->profile_batch && !x->t.profile_batch_assumed && x->t.profile_batch != o->profile_batch)
        return wp_errorf(err, "%s: the table is for micro-batch %d, not --profile-batch %d", x->path,
                         x->t.profile_batch, o->profile_batch);
    if (i > 0 && same_model(&pt->v[0].t, pt->v[0].path, &x->t, x->path, err))
        return -1;
    if (wp_plan_model_init(&x->m, &x->t, hw, o->global_batch, err))
        return -1;
    x->m.even_slices = !o->uneven_slices;
    x->m.recompute = o->recompute;
    x->m.fixed_tensor = o->tensor;
    x->m.max_chunks = o->chunks;
    x->m.grad_overlap = o->grad_overlap;
    x->m.grad_bucket_bytes = o->grad_bucket_bytes;
    x->m.place_only = o->place_only;
    x->m.sequence_parallel = o->sequence_parallel;
    x->m.distributed_optimizer = o->distributed_optimizer;
    /* a table whose micro-batch fits nowhere leaves the others to choose from */
    x->planned = wp_plan_search(&x->m, &x->plan, &x->err) == 0;
    return 0;
}

int wp_plan_tables_search(struct wp_plan_tables *pt, const struct wp_plan_tables_options *o, struct wp_err *err)
{
    struct wp_plan_hw hw;
    pt->v = calloc((size_t)o->npaths, sizeof *pt->v);
    if (!pt->v)
        return wp_errorf(err, "out of memory");
    pt->n = o->npaths;
    if (read_hw(o, &hw, err))
        return -1;
    for (int i = 0; i < pt->n; i++) {
        if (plan_table(pt, i, o, &hw, err))
            return -1;
        const struct wp_plan_table *x = &pt->v[i];
        if (x->planned && (pt->best < 0 || x->plan.predicted_iter_s < pt->v[pt->best].plan.predicted_iter_s))
            pt->best = i;
    }
    if (pt->best < 0) {
        *err = pt->v[0].err;
        return -1;
    }
    struct wp_plan_table *b = &pt->v[pt->best];
    return wp_plan_kfkb_candidates(&b->m, &b->plan, err);
}

int wp_plan_tables_sbp(struct wp_plan_tables *pt, const char *model_path, int blocks, int channels, int seq_len,
                       struct wp_err *err)
{
    struct wp_plan_table *b = &pt->v[pt->best];
    if (b->t.nlayers != blocks + 2)
        return wp_errorf(err, "--model %s has %d blocks (a table of %d layers); %s has %d layers", model_path, blocks,
                         blocks + 2, b->path, b->t.nlayers);
    return wp_plan_sbp(&b->plan, &b->t, channels, seq_len, err);
}

void wp_plan_tables_print(FILE *out, const struct wp_plan_tables *pt)
{
    const struct wp_plan_table *b = &pt->v[pt->best];
    if (b->t.nnodes > 2 * b->t.nlayers)
        fprintf(out, "note: the profile's %d nodes were contracted to %d layers at the nodes every path passes; "
                     "splits fall only there (--contract frontier keeps every node)\n",
                b->t.nnodes, b->t.nlayers);
    if (pt->n > 1) {
        fprintf(out, "one plan per layer table (micro-batch size), the fastest kept:\n");
        for (int i = 0; i < pt->n; i++) {
            const struct wp_plan_table *x = &pt->v[i];
            char shape[256];
            if (!x->planned) {
                fprintf(out, "  %s (profile batch %d): %s\n", x->path, x->t.profile_batch, x->err.msg);
                continue;
            }
            wp_plan_shape(&x->plan, shape, sizeof shape);
            fprintf(out, "  %s (profile batch %d): %s, %d micro-batch%s of %d, predicted %.4f s%s\n", x->path,
                    x->t.profile_batch, shape, x->plan.microbatches, x->plan.microbatches == 1 ? "" : "es",
                    x->plan.micro_batch, x->plan.predicted_iter_s, i == pt->best ? "  <- chosen" : "");
        }
        fprintf(out, "\n");
    }
    wp_plan_print_text(out, &b->plan, &b->t);
    fprintf(out, "\nsearch: %s; %d point%s of the hybrid space (tensor group x micro-batch size), %ld states, %ld "
                 "plans evaluated in %.3f s\n",
            b->plan.search, b->plan.points, b->plan.points == 1 ? "" : "s", b->plan.states, b->plan.evaluations,
            b->plan.search_s);
}
