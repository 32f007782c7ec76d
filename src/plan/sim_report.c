/* The simulate command's procedure (see sim_report.h). */
#include "plan/sim_report.h"

#include <stdlib.h>
#include <string.h>

#include "plan/layer_stages.h"
#include "sched/makespan_bound.h"
#include "sched/trace.h"
#include "sched/validate.h"
#include "topo/cluster_io.h"

int wp_sim_files_load(struct wp_sim_files *f, const char *layers_path, const char *cluster_path, const char *bw_path,
                      struct wp_cost_model *cost, struct wp_err *err)
{
    memset(f, 0, sizeof *f);
    wp_layer_table_init(&f->table);
    if (layers_path) {
        if (wp_layer_table_read(&f->table, layers_path, 0, WP_CONTRACT_AUTO, err))
            return -1;
        f->have_table = 1;
    }
    if (cluster_path) {
        if (wp_cluster_read(cluster_path, &f->cluster, err))
            return -1;
        f->have_cluster = 1;
        cost->cluster = &f->cluster;
    }
    if (bw_path) {
        struct wp_bandwidth_change *changes = NULL; /* f's only once read: a failed read frees its own */
        if (wp_bandwidth_trace_read(bw_path, &changes, &cost->nchanges, err))
            return -1;
        f->changes = changes;
    }
    cost->changes = f->changes;
    return 0;
}

void wp_sim_files_destroy(struct wp_sim_files *f)
{
    free(f->changes);
    if (f->have_cluster)
        wp_cluster_destroy(&f->cluster);
    wp_layer_table_destroy(&f->table);
    f->changes = NULL;
    f->have_cluster = f->have_table = 0;
}

/* With a layer table: the schedule's per-stage costs into cost (arrays in *a). */
static int table_costs(const struct wp_layer_table *t, const char *partition, int global_batch,
                       const struct wp_schedule *s, struct wp_cost_model *cost, struct wp_layer_stage_arrays *a,
                       struct wp_err *err)
{
    int S = s->nstages, rc;
    int *first = malloc((size_t)S * sizeof *first), *last = malloc((size_t)S * sizeof *last);
    if (!first || !last)
        rc = wp_errorf(err, "out of memory");
    else if (partition)
        rc = wp_layer_stages_parse(t, partition, S, first, last, err);
    else
        rc = wp_layer_stages_balanced(t, S, first, last, err);
    if (rc == 0 && global_batch % s->nmicro)
        rc = wp_errorf(err, "--global-batch %d is not a multiple of the %d micro-batches", global_batch, s->nmicro);
    if (rc == 0)
        rc = wp_layer_stage_arrays_make(t, s, global_batch, first, last, a, err);
    if (rc == 0) {
        cost->stage_f = a->forward_s;
        cost->stage_b = a->backward_s;
        cost->stage_w = a->weights_s;
        cost->stage_step_s = a->step_s;
        cost->boundary_bytes = a->boundary_bytes;
        cost->stage_gradient_bytes = a->gradient_bytes;
        cost->stage_grad_layers = a->grad_layers;
    }
    free(first);
    free(last);
    return rc;
}

void wp_sim_report_csv_header(FILE *out)
{
    fprintf(out, "kind,ranks,micro_batches,k,waves,chunks,makespan,bubble_ratio,peak_activations_max\n");
}

int wp_sim_report(FILE *out, const struct wp_schedule *s, const struct wp_cost_model *base,
                  const struct wp_sim_table *table, int validate, int csv, const char *trace, const char *svg,
                  struct wp_err *err)
{
    struct wp_cost_model copy = *base, *cost = &copy;
    struct wp_layer_stage_arrays arrays = {0};
    if (table->t) {
        int G = table->global_batch > 0 ? table->global_batch : s->nmicro * table->t->profile_batch;
        if (table_costs(table->t, table->partition, G, s, cost, &arrays, err))
            return -1;
    }
    struct wp_sim_result res;
    struct wp_validation v;
    /* validating walks the lists once, and the simulation rides along */
    int sim_rc = validate ? wp_validate_and_simulate(s, cost, &v, &res, err) : wp_simulate(s, cost, &res, err);
    if (sim_rc == 0 && validate)
        wp_validation_destroy(&v);
    wp_layer_stage_arrays_free(&arrays);
    if (sim_rc)
        return -1;
    const struct wp_sched_params *p = &s->params;
    int k = p->kind == WP_SCHED_KFKB ? p->k : p->kind == WP_SCHED_GPIPE ? s->nmicro : 1;
    int waves = p->kind == WP_SCHED_HANAYO ? p->waves : 1;
    int chunks = wp_sched_kind_has_chunks(p->kind) ? p->chunks : 1;
    if (csv) {
        fprintf(out, "%s,%d,%d,%d,%d,%d,%.9g,%.9g,%.9g\n", wp_sched_kind_name(p->kind), s->nranks, s->nmicro, k,
                waves, chunks, res.makespan, res.bubble_ratio, res.peak_max);
    } else {
        char copies[32] = ""; /* data-parallel copies of the pipeline, when there are */
        if (p->data_parallel > 1)
            snprintf(copies, sizeof copies, " D=%d", p->data_parallel);
        fprintf(out, "%-12s P=%d%s M=%d stages=%d k=%d W=%d V=%d: makespan %.6g s, bubble ratio %.4f, peak activations",
                wp_sched_kind_name(p->kind), s->nranks, copies, s->nmicro, s->nstages, k, waves, chunks, res.makespan,
                res.bubble_ratio);
        for (int r = 0; r < s->nranks && r < 16; r++)
            fprintf(out, " %.3g", res.peak_activations[r]);
        fprintf(out, "%s\n", s->nranks > 16 ? " ..." : "");
        struct wp_hop_bound bound;
        wp_makespan_bound_hops(s, cost, &bound);
        if (bound.makespan_s > 0)
            fprintf(out,
                    "             lower bound %.6g s at tc %g a hop (rank %d: %.4g s before its first pass, %.4g s "
                    "of passes, %.4g s after its last): makespan %+.2f %%\n",
                    bound.makespan_s, cost->tc, bound.rank, bound.head_s, bound.busy_s, bound.tail_s,
                    100 * (res.makespan / bound.makespan_s - 1));
    }
    char title[256];
    snprintf(title, sizeof title, "%s, P=%d, M=%d, W=%d, V=%d, k=%d (simulated)", wp_sched_kind_name(p->kind),
             s->nranks, s->nmicro, waves, chunks, k);
    int rc = 0;
    if (trace)
        rc = wp_trace_write_json(trace, &res, title, err);
    if (rc == 0 && svg)
        rc = wp_trace_write_svg(svg, &res, title, err);
    wp_sim_result_destroy(&res);
    return rc;
}
