/* The report of `wavepipe sbp --measure` (see sbp_measure.h): the job's
 * layout against the model's nodes, the links the model used, and per
 * layer and term the model's collective, its predicted and measured time
 * and its bytes per device (model, counted). Every line says that compute
 * is emulated: only communication runs. */
#include "run/comm/sbp_measure.h"

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "plan/sbp_cost.h"
#include "plan/sbp_strategy.h"
#include "util/error.h"
#include "util/units.h"

#define CMD "sbp"
#define EMULATED "[compute emulated]"

static double predicted_s(const struct wp_sbp_layer_cost *c, enum wp_sbp_term t)
{
    switch (t) {
    case WP_SBP_ALLTOALL: return c->alltoall_s;
    case WP_SBP_GATHER: return c->gather_s;
    case WP_SBP_REDUCE: return c->reduce_s;
    case WP_SBP_WEIGHT_SYNC: return c->weight_sync_s;
    default: return 0;
    }
}

/* The term's calls as words: forward + backward dual, or the one AllReduce. */
static const char *calls_text(enum wp_sbp_term t, const struct wp_sbp_exec_term *x, char *buf, size_t size)
{
    if (x->model.passes == 0 || (x->model.group < 2 && x->model.kind != WP_COLL_P2P)) {
        snprintf(buf, size, "-");
    } else if (t == WP_SBP_ALLTOALL) {
        snprintf(buf, size, "%s fwd+bwd", x->model.kind == WP_COLL_P2P ? "p2p" : "alltoall");
    } else if (t == WP_SBP_GATHER) {
        snprintf(buf, size, "allgather+reducescatter");
    } else if (t == WP_SBP_REDUCE) {
        snprintf(buf, size, "reducescatter+allgather");
    } else if (x->calls > 1) {
        snprintf(buf, size, "allreduce in %d", x->calls);
    } else {
        snprintf(buf, size, "allreduce");
    }
    return buf;
}

static const char *link_text(const struct wp_link_cost *l, char *buf, size_t size)
{
    char t[32], b[32];
    if (l->beta_s_per_byte > 0)
        snprintf(buf, size, "alpha %s, %s", wp_format_time(l->alpha_s, t, sizeof t),
                 wp_format_bandwidth(1 / l->beta_s_per_byte, b, sizeof b));
    else
        snprintf(buf, size, "alpha %s, no bandwidth term", wp_format_time(l->alpha_s, t, sizeof t));
    return buf;
}

static void print_ratio(double measured, double predicted)
{
    if (predicted > 0)
        printf(" %7.2f", measured / predicted);
    else
        printf(" %7s", "-");
}

static void print_header(const struct wp_sbp_problem *pr, const struct wp_sbp_exec_opts *o,
                         const struct wp_sbp_measure_labels *labels, const struct wp_sbp_exec_result *x, int nodes,
                         int gpus)
{
    char lbuf[96], bbuf[32];
    printf("wavepipe sbp --measure: strategy %s, %d layers, batch %d, %d devices (%d nodes x %d GPUs), %g-byte "
           "elements; compute emulated: no matmul runs, %g s slept per layer and pass, only communication is "
           "timed\n",
           labels->strategy, pr->nlayers, pr->batch, pr->devices, nodes, gpus, pr->element_bytes, o->compute_s);
    if (x->node_major)
        printf("job: %d MPI ranks on %d node%s, rank d on node d / %d as the model's devices %s\n", x->ranks,
               x->job_nodes, x->job_nodes == 1 ? "" : "s", gpus, EMULATED);
    else
        printf("job: %d MPI ranks on %d node%s (MPI shared memory), NOT the model's %d nodes x %d with rank d on "
               "node d / %d: its inter-node collectives run on the job's links as they fall %s\n",
               x->ranks, x->job_nodes, x->job_nodes == 1 ? "" : "s", nodes, gpus, gpus, EMULATED);
    printf("model links: intra-node %s (%s) %s\n", link_text(&pr->intra, lbuf, sizeof lbuf), labels->intra, EMULATED);
    printf("model links: inter-node %s (%s) %s\n", link_text(&pr->inter, lbuf, sizeof lbuf), labels->inter, EMULATED);
    printf("timing: %d rounds of every collective after a barrier (slowest rank, median) and %d steps back to back; "
           "non-blocking MPI waited for %s; buffers %s per rank, reused; weight_sync in AllReduces of at most %s %s\n",
           o->repeats, o->repeats, o->spin ? "in MPI_Wait" : "by polling with sleeps (--wait yield)",
           wp_format_bytes(x->buffer_bytes, lbuf, sizeof lbuf),
           o->bucket_bytes > 0 ? wp_format_bytes(o->bucket_bytes, bbuf, sizeof bbuf) : "any size", EMULATED);
}

/* Ranks whose every term counted exactly the model's bytes. */
static int ranks_exact(const struct wp_sbp_exec_result *x)
{
    int exact = 1;
    for (int l = 0; l < x->nlayers; l++)
        for (int t = 0; t < WP_SBP_TERM_COUNT; t++)
            exact &= x->terms[l][t].counted_bytes == wp_sbp_coll_sent_bytes(&x->terms[l][t].model);
    MPI_Allreduce(MPI_IN_PLACE, &exact, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    return exact;
}

static void print_report(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                         const struct wp_sbp_exec_opts *o, const struct wp_sbp_measure_labels *labels,
                         const struct wp_sbp_exec_result *x, int exact)
{
    int nodes, gpus;
    struct wp_err err;
    wp_sbp_check_problem(pr, &nodes, &gpus, &err);
    print_header(pr, o, labels, x, nodes, gpus);
    printf("%-6s %-11s %-13s %-24s %5s %-5s %-5s %10s %10s %7s %13s %13s %s\n", "layer", "term", "mesh",
           "collectives", "group", "model", "job", "pred_ms", "meas_ms", "ratio", "model_bytes", "counted_bytes",
           "compute");
    double model_total_bytes = 0;
    char meshes[512] = "";
    for (int l = 0; l < res->nlayers; l++) {
        const struct wp_sbp_layer_cost *c = &res->layers[l];
        char mesh[48], calls[48];
        wp_sbp_mesh_format(&c->mesh, mesh, sizeof mesh);
        size_t used = strlen(meshes);
        snprintf(meshes + used, sizeof meshes - used, "%s%s", l ? "," : "", mesh);
        for (int t = 0; t < WP_SBP_TERM_COUNT; t++) {
            const struct wp_sbp_exec_term *e = &x->terms[l][t];
            double model_bytes = wp_sbp_coll_sent_bytes(&e->model);
            int runs = e->group > 0;
            model_total_bytes += model_bytes;
            printf("%-6s %-11s %-13s %-24s %5d %-5s %-5s %10.4f %10.4f", pr->layers[l].name,
                   wp_sbp_term_name((enum wp_sbp_term)t), mesh, calls_text((enum wp_sbp_term)t, e, calls, sizeof calls),
                   runs ? e->group : 0, runs ? (e->model.crosses_nodes ? "inter" : "intra") : "-",
                   runs ? (e->job_crosses_nodes ? "inter" : "intra") : "-", 1e3 * predicted_s(c, (enum wp_sbp_term)t),
                   1e3 * e->measured_s);
            print_ratio(e->measured_s, predicted_s(c, (enum wp_sbp_term)t));
            printf(" %13.0f %13.0f%s emulated\n", model_bytes, e->counted_max_bytes,
                   e->counted_min_bytes != e->counted_max_bytes ? "*" : (e->rounded ? "^" : " "));
        }
    }
    printf("total: predicted %.4f ms, measured %.4f ms (sum of the collectives' medians), ratio", 1e3 * res->comm_s,
           1e3 * x->measured_s);
    print_ratio(x->measured_s, res->comm_s);
    printf("; a step back to back %.4f ms (ratio", 1e3 * x->step_s);
    print_ratio(x->step_s, res->comm_s);
    printf(") %s\n", EMULATED);
    printf("bytes per device and step: model %.0f, counted %.0f..%.0f over the ranks; %d of %d ranks count exactly "
           "the model's bytes in every term (^: rounded up to whole elements, *: ranks differ) %s\n",
           res->sent_bytes, x->counted_min_bytes, x->counted_max_bytes, exact, x->ranks, EMULATED);
    if (model_total_bytes != res->sent_bytes)
        printf("note: the terms' model bytes add up to %.0f, the result's total is %.0f %s\n", model_total_bytes,
               res->sent_bytes, EMULATED);
    printf("summary: strategy=%s meshes=%s predicted_s=%.6g measured_s=%.6g step_s=%.6g model_bytes=%.0f "
           "counted_min_bytes=%.0f counted_max_bytes=%.0f ranks_exact=%d/%d job_nodes=%d node_major=%d "
           "compute=emulated\n",
           labels->strategy, meshes, res->comm_s, x->measured_s, x->step_s, res->sent_bytes, x->counted_min_bytes,
           x->counted_max_bytes, exact, x->ranks, x->job_nodes, x->node_major);
}

int wp_sbp_measure(const struct wp_sbp_problem *pr, const struct wp_sbp_result *res,
                   const struct wp_sbp_exec_opts *o, const struct wp_sbp_measure_labels *labels)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct wp_err err = {""};
    struct wp_sbp_exec_result x;
    if (wp_sbp_exec_run(pr, res, o, &x, &err)) {
        if (rank == 0)
            wp_err_print(CMD, &err);
        return 1;
    }
    int exact = ranks_exact(&x);
    if (rank == 0)
        print_report(pr, res, o, labels, &x, exact);
    fflush(stdout);
    wp_sbp_exec_result_destroy(&x);
    return 0;
}
