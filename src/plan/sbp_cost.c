/* The SBP cost model (described in sbp.h): a layer's gather, reduce and
 * weight synchronisation on its mesh, the alltoall between consecutive
 * layers and memory per device. */
#include "plan/sbp_cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct wp_link_cost *link_for(const struct wp_sbp_problem *pr, int crosses_nodes)
{
    return crosses_nodes ? &pr->inter : &pr->intra;
}

static int bad_link(const struct wp_link_cost *l)
{
    return !(l->alpha_s >= 0) || !(l->beta_s_per_byte >= 0) || isinf(l->alpha_s) || isinf(l->beta_s_per_byte);
}

int wp_sbp_check_problem(const struct wp_sbp_problem *pr, int *nodes, int *gpus, struct wp_err *err)
{
    if (pr->nlayers < 1 || !pr->layers)
        return wp_errorf(err, "no layers");
    if (pr->batch < 1)
        return wp_errorf(err, "batch %d must be at least 1", pr->batch);
    if (pr->devices < 1 || pr->gpus_per_node < 1)
        return wp_errorf(err, "devices (%d) and GPUs per node (%d) must be at least 1", pr->devices,
                         pr->gpus_per_node);
    if (pr->devices > pr->gpus_per_node && pr->devices % pr->gpus_per_node)
        return wp_errorf(err, "%d devices are not whole nodes of %d GPUs", pr->devices, pr->gpus_per_node);
    if (bad_link(&pr->intra) || bad_link(&pr->inter))
        return wp_errorf(err, "link alpha and beta must be finite and not negative");
    if (!(pr->element_bytes > 0) || !(pr->weight_state_bytes >= 0) || !(pr->activation_bytes >= 0) ||
        !(pr->memory_limit_bytes >= 0))
        return wp_errorf(err, "element bytes must be positive; weight state, activation and memory limit bytes "
                              "not negative");
    for (int l = 0; l < pr->nlayers; l++) {
        const struct wp_sbp_layer *L = &pr->layers[l];
        if (L->n_in < 1 || L->n_out < 1)
            return wp_errorf(err, "layer %s: n_in %d and n_out %d must be at least 1", L->name, L->n_in, L->n_out);
        if (l > 0 && L->n_in != pr->layers[l - 1].n_out)
            return wp_errorf(err, "layer %s: n_in %d is not the previous layer's n_out %d (the layers are a chain)",
                             L->name, L->n_in, pr->layers[l - 1].n_out);
    }
    *nodes = pr->devices > pr->gpus_per_node ? pr->devices / pr->gpus_per_node : 1;
    *gpus = pr->devices > pr->gpus_per_node ? pr->gpus_per_node : pr->devices;
    return 0;
}

int wp_sbp_mesh_fits(const struct wp_sbp_problem *pr, int nodes, int gpus, int layer,
                     const struct wp_sbp_mesh *m)
{
    long long n = 1, g = 1;
    for (int k = 0; k < 3; k++) {
        if (m->nodes[k] < 1 || m->gpus[k] < 1)
            return 0;
        n *= m->nodes[k];
        g *= m->gpus[k];
    }
    const struct wp_sbp_layer *L = &pr->layers[layer];
    return n == nodes && g == gpus && pr->batch % wp_sbp_mesh_axis(m, 0) == 0 &&
           L->n_out % wp_sbp_mesh_axis(m, 1) == 0 && L->n_in % wp_sbp_mesh_axis(m, 2) == 0;
}

const char *wp_sbp_term_name(enum wp_sbp_term term)
{
    static const char *const names[WP_SBP_TERM_COUNT] = {"alltoall", "gather", "reduce", "weight_sync"};
    return term >= 0 && term < WP_SBP_TERM_COUNT ? names[term] : "?";
}

double wp_sbp_coll_s(const struct wp_sbp_problem *pr, const struct wp_sbp_coll *c)
{
    if (c->passes == 0)
        return 0;
    return c->passes * wp_collective_s(c->kind, c->group, c->n_bytes, link_for(pr, c->crosses_nodes));
}

double wp_sbp_coll_sent_bytes(const struct wp_sbp_coll *c)
{
    if (c->passes == 0)
        return 0;
    return c->passes * wp_collective_sent_bytes(c->kind, c->group, c->n_bytes);
}

void wp_sbp_layer_coll(const struct wp_sbp_problem *pr, int layer, const struct wp_sbp_mesh *m,
                       enum wp_sbp_term term, struct wp_sbp_coll *c)
{
    const struct wp_sbp_layer *L = &pr->layers[layer];
    double p0 = wp_sbp_mesh_axis(m, 0), p1 = wp_sbp_mesh_axis(m, 1), p2 = wp_sbp_mesh_axis(m, 2);
    double e = pr->element_bytes, b = pr->batch;
    memset(c, 0, sizeof *c);
    switch (term) {
    case WP_SBP_GATHER: /* the local input, all-gathered over axis 1 */
        *c = (struct wp_sbp_coll){WP_COLL_ALLGATHER, (int)p1, e * b * L->n_in / (p0 * p2), m->nodes[1] > 1,
                                  layer > 0 || pr->input == WP_SBP_INPUT_BATCH_SPLIT ? 2 : 0};
        break;
    case WP_SBP_REDUCE: /* the local partial output, reduce-scattered over axis 2 */
        *c = (struct wp_sbp_coll){WP_COLL_REDUCE_SCATTER, (int)p2, e * b * L->n_out / (p0 * p1), m->nodes[2] > 1, 2};
        break;
    case WP_SBP_WEIGHT_SYNC: /* the local weight gradient, all-reduced over axis 0 */
        *c = (struct wp_sbp_coll){WP_COLL_ALLREDUCE, (int)p0, e * (double)L->n_in * L->n_out / (p1 * p2),
                                  m->nodes[0] > 1, 1};
        break;
    default:
        break;
    }
}

void wp_sbp_layer_terms(const struct wp_sbp_problem *pr, int layer, const struct wp_sbp_mesh *m,
                        struct wp_sbp_terms *t)
{
    struct wp_sbp_coll gather, reduce, sync;
    wp_sbp_layer_coll(pr, layer, m, WP_SBP_GATHER, &gather);
    wp_sbp_layer_coll(pr, layer, m, WP_SBP_REDUCE, &reduce);
    wp_sbp_layer_coll(pr, layer, m, WP_SBP_WEIGHT_SYNC, &sync);
    memset(t, 0, sizeof *t);
    t->gather_s = wp_sbp_coll_s(pr, &gather);
    t->sent_bytes += wp_sbp_coll_sent_bytes(&gather);
    t->reduce_s = wp_sbp_coll_s(pr, &reduce);
    t->sent_bytes += wp_sbp_coll_sent_bytes(&reduce);
    t->weight_sync_s = wp_sbp_coll_s(pr, &sync);
    t->weight_sync_sent_bytes = wp_sbp_coll_sent_bytes(&sync);
    t->sent_bytes += t->weight_sync_sent_bytes;
}

static struct wp_sbp_rows reduced_rows(const struct wp_sbp_mesh *m, enum wp_sbp_dim d)
{
    if (d == WP_SBP_COLS) /* (S0:p0, S1:p1 p2) */
        return (struct wp_sbp_rows){m->nodes[0], m->gpus[0]};
    return (struct wp_sbp_rows){m->nodes[0] * m->nodes[2], m->gpus[0] * m->gpus[2]}; /* (S0:p0 p2, S1:p1) */
}

static struct wp_sbp_rows gathered_rows(const struct wp_sbp_mesh *m, enum wp_sbp_dim d)
{
    if (d == WP_SBP_COLS) /* (S0:p0, S1:p1 p2) */
        return (struct wp_sbp_rows){m->nodes[0], m->gpus[0]};
    return (struct wp_sbp_rows){m->nodes[0] * m->nodes[1], m->gpus[0] * m->gpus[1]}; /* (S0:p0 p1, S1:p2) */
}

static long long gcd_ll(long long a, long long b)
{
    while (b) {
        long long t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The move (forward + backward) between two fully split states of a block
 * of `bytes` per device. */
static struct wp_sbp_coll redistribution(struct wp_sbp_rows from, struct wp_sbp_rows to, double bytes)
{
    if (from.nodes == to.nodes && from.gpus == to.gpus)
        return (struct wp_sbp_coll){WP_COLL_ALLTOALL, 1, bytes, 0, 0};
    long long r = (long long)from.nodes * from.gpus, r2 = (long long)to.nodes * to.gpus;
    long long g = gcd_ll(r, r2);
    int group = (int)((r / g) * (r2 / g)); /* lcm / gcd, at most p */
    int crosses_nodes = from.nodes != to.nodes;
    enum wp_collective kind = group == 1 ? WP_COLL_P2P : WP_COLL_ALLTOALL;
    return (struct wp_sbp_coll){kind, group, bytes, crosses_nodes, 2};
}

static struct wp_sbp_rows from_rows(int nodes, int gpus, const struct wp_sbp_mesh *from, enum wp_sbp_dim reduce_to)
{
    return from ? reduced_rows(from, reduce_to) : (struct wp_sbp_rows){nodes, gpus};
}

static double block_bytes(const struct wp_sbp_problem *pr, int to_layer)
{
    return pr->element_bytes * pr->batch * pr->layers[to_layer].n_in / pr->devices;
}

void wp_sbp_move(const struct wp_sbp_problem *pr, int nodes, int gpus, const struct wp_sbp_mesh *from,
                 enum wp_sbp_dim reduce_to, int to_layer, const struct wp_sbp_mesh *to, enum wp_sbp_dim gather_from,
                 struct wp_sbp_move *mv)
{
    mv->from = from_rows(nodes, gpus, from, reduce_to);
    mv->to = gathered_rows(to, gather_from);
    mv->coll = redistribution(mv->from, mv->to, block_bytes(pr, to_layer));
}

double wp_sbp_alltoall_s(const struct wp_sbp_problem *pr, int nodes, int gpus, const struct wp_sbp_mesh *from,
                         int to_layer, const struct wp_sbp_mesh *to, enum wp_sbp_dim *reduce_to,
                         enum wp_sbp_dim *gather_from, double *sent_bytes)
{
    double bytes = block_bytes(pr, to_layer);
    double best = INFINITY, best_sent = 0;
    enum wp_sbp_dim best_r = WP_SBP_COLS, best_g = WP_SBP_COLS;
    for (int r = WP_SBP_COLS; r <= (from ? WP_SBP_ROWS : WP_SBP_COLS); r++) {
        struct wp_sbp_rows a = from_rows(nodes, gpus, from, (enum wp_sbp_dim)r);
        for (int g = WP_SBP_COLS; g <= WP_SBP_ROWS; g++) {
            struct wp_sbp_coll c = redistribution(a, gathered_rows(to, (enum wp_sbp_dim)g), bytes);
            double s = wp_sbp_coll_s(pr, &c);
            if (s < best) {
                best = s;
                best_sent = wp_sbp_coll_sent_bytes(&c);
                best_r = (enum wp_sbp_dim)r;
                best_g = (enum wp_sbp_dim)g;
            }
        }
    }
    if (reduce_to)
        *reduce_to = best_r;
    if (gather_from)
        *gather_from = best_g;
    if (sent_bytes)
        *sent_bytes = best_sent;
    return best;
}

double wp_sbp_layer_memory_bytes(const struct wp_sbp_problem *pr, int layer, const struct wp_sbp_mesh *m)
{
    const struct wp_sbp_layer *L = &pr->layers[layer];
    double p0 = wp_sbp_mesh_axis(m, 0), p1 = wp_sbp_mesh_axis(m, 1), p2 = wp_sbp_mesh_axis(m, 2);
    return pr->weight_state_bytes * (double)L->n_in * L->n_out / (p1 * p2) +
           pr->activation_bytes * (double)pr->batch * L->n_in / (p0 * p2);
}

int wp_sbp_layer_classes(const struct wp_sbp_problem *pr, int *layer_class)
{
    int n = 0;
    for (int l = 0; l < pr->nlayers; l++) {
        layer_class[l] = -1;
        for (int j = 0; j < l && layer_class[l] < 0; j++)
            if (pr->layers[j].n_in == pr->layers[l].n_in && pr->layers[j].n_out == pr->layers[l].n_out)
                layer_class[l] = layer_class[j];
        if (layer_class[l] < 0)
            layer_class[l] = n++;
    }
    return n;
}
