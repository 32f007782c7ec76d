/* The SBP searches (AutoDDL 4.5-4.6): the meshes each layer class may take
 * (every factorisation of the N nodes and of the G GPUs per node over the
 * three axes that splits the layer evenly), tables of their costs, and
 * three searches over one mesh per class: exhaustive (depth first with
 * bounds, exact), coordinate descent with random restarts, and
 * Metropolis-Hastings. Both random searches are seeded and deterministic;
 * and the cost of given meshes, one per layer (wp_sbp_evaluate). */
#include "plan/sbp_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/sbp_cost.h"
#include "util/rng.h"
#include "util/units.h"

/* The alltoall between consecutive layers of classes a then b, for every
 * pair of their meshes, times how often the chain has a then b. */
struct pair_table {
    int a, b;
    int to_layer; /* a layer of class b after one of class a */
    int times;
    double *cost_s; /* [s_a * meshes of b + s_b] */
};

struct space {
    const struct wp_sbp_problem *pr;
    int nodes, gpus;
    int nlayers, nclasses;
    int *layer_class;
    int *nmeshes;                 /* per class */
    struct wp_sbp_mesh **meshes;  /* per class, cheapest own cost first */
    double **own_s;               /* per class and mesh: what depends on that class alone */
    double **memory_bytes;        /* per class and mesh */
    double *least_memory_bytes;   /* per class */
    double limit_bytes;           /* +inf without a limit */
    int npairs;
    struct pair_table *pairs;
    int *nadjacent;               /* per class: pairs that involve it */
    int **adjacent;
};

static void space_destroy(struct space *sp)
{
    for (int c = 0; c < sp->nclasses; c++) {
        if (sp->meshes)
            free(sp->meshes[c]);
        if (sp->own_s)
            free(sp->own_s[c]);
        if (sp->memory_bytes)
            free(sp->memory_bytes[c]);
        if (sp->adjacent)
            free(sp->adjacent[c]);
    }
    for (int i = 0; i < sp->npairs; i++)
        free(sp->pairs[i].cost_s);
    free(sp->layer_class);
    free(sp->nmeshes);
    free(sp->meshes);
    free(sp->own_s);
    free(sp->memory_bytes);
    free(sp->least_memory_bytes);
    free(sp->pairs);
    free(sp->nadjacent);
    free(sp->adjacent);
    memset(sp, 0, sizeof *sp);
}

/* Every (a, b, c) of positive integers with a b c = n, into out (NULL:
 * count only); returns the count. */
static int factor_triples(int n, int (*out)[3])
{
    int count = 0;
    for (int a = 1; a <= n; a++) {
        if (n % a)
            continue;
        for (int b = 1; b <= n / a; b++) {
            if ((n / a) % b)
                continue;
            if (out) {
                out[count][0] = a;
                out[count][1] = b;
                out[count][2] = n / a / b;
            }
            count++;
        }
    }
    return count;
}

/* Own cost of class c on mesh m: its layers' gather, reduce and weight
 * synchronisation, the alltoall between consecutive layers both of class c,
 * and the alltoall from the chain's batch-split input into layer 0. */
static double class_own_s(const struct space *sp, int c, const struct wp_sbp_mesh *m)
{
    const struct wp_sbp_problem *pr = sp->pr;
    double s = 0;
    for (int l = 0; l < sp->nlayers; l++) {
        if (sp->layer_class[l] != c)
            continue;
        struct wp_sbp_terms t;
        wp_sbp_layer_terms(pr, l, m, &t);
        s += t.gather_s + t.reduce_s + t.weight_sync_s;
        if (l > 0 && sp->layer_class[l - 1] == c)
            s += wp_sbp_alltoall_s(pr, sp->nodes, sp->gpus, m, l, m, NULL, NULL, NULL);
        if (l == 0 && pr->input == WP_SBP_INPUT_BATCH_SPLIT)
            s += wp_sbp_alltoall_s(pr, sp->nodes, sp->gpus, NULL, 0, m, NULL, NULL, NULL);
    }
    return s;
}

static double class_memory_bytes(const struct space *sp, int c, const struct wp_sbp_mesh *m)
{
    double bytes = 0;
    for (int l = 0; l < sp->nlayers; l++)
        if (sp->layer_class[l] == c)
            bytes += wp_sbp_layer_memory_bytes(sp->pr, l, m);
    return bytes;
}

struct ranked {
    double own_s;
    int index;
};

static int by_own_cost(const void *x, const void *y)
{
    const struct ranked *a = x, *b = y;
    if (a->own_s != b->own_s)
        return a->own_s < b->own_s ? -1 : 1;
    return a->index - b->index;
}

/* The meshes of class c, cheapest own cost first, with their own costs and memory. */
static int class_meshes(struct space *sp, int c, struct wp_err *err)
{
    int first = 0;
    while (sp->layer_class[first] != c)
        first++;
    int nn = factor_triples(sp->nodes, NULL), ng = factor_triples(sp->gpus, NULL);
    int(*nt)[3] = malloc((size_t)nn * sizeof *nt);
    int(*gt)[3] = malloc((size_t)ng * sizeof *gt);
    struct wp_sbp_mesh *all = malloc((size_t)nn * ng * sizeof *all);
    struct ranked *rank = malloc((size_t)nn * ng * sizeof *rank);
    sp->meshes[c] = malloc((size_t)nn * ng * sizeof *sp->meshes[c]);
    sp->own_s[c] = malloc((size_t)nn * ng * sizeof *sp->own_s[c]);
    sp->memory_bytes[c] = malloc((size_t)nn * ng * sizeof *sp->memory_bytes[c]);
    int rc = 0, k = 0;
    if (!nt || !gt || !all || !rank || !sp->meshes[c] || !sp->own_s[c] || !sp->memory_bytes[c]) {
        rc = wp_errorf(err, "out of memory");
        goto done;
    }
    factor_triples(sp->nodes, nt);
    factor_triples(sp->gpus, gt);
    for (int i = 0; i < nn; i++)
        for (int j = 0; j < ng; j++) {
            struct wp_sbp_mesh m = {{nt[i][0], nt[i][1], nt[i][2]}, {gt[j][0], gt[j][1], gt[j][2]}};
            if (!wp_sbp_mesh_fits(sp->pr, sp->nodes, sp->gpus, first, &m))
                continue;
            all[k] = m;
            rank[k] = (struct ranked){class_own_s(sp, c, &m), k};
            k++;
        }
    if (k == 0) {
        const struct wp_sbp_layer *L = &sp->pr->layers[first];
        rc = wp_errorf(err,
                       "layer %s: no mesh of %d devices (%d nodes x %d GPUs) splits its batch %d, n_out %d "
                       "and n_in %d evenly",
                       L->name, sp->pr->devices, sp->nodes, sp->gpus, sp->pr->batch, L->n_out, L->n_in);
        goto done;
    }
    qsort(rank, (size_t)k, sizeof *rank, by_own_cost);
    sp->nmeshes[c] = k;
    sp->least_memory_bytes[c] = INFINITY;
    for (int i = 0; i < k; i++) {
        sp->meshes[c][i] = all[rank[i].index];
        sp->own_s[c][i] = rank[i].own_s;
        sp->memory_bytes[c][i] = class_memory_bytes(sp, c, &sp->meshes[c][i]);
        if (sp->memory_bytes[c][i] < sp->least_memory_bytes[c])
            sp->least_memory_bytes[c] = sp->memory_bytes[c][i];
    }
done:
    free(nt);
    free(gt);
    free(all);
    free(rank);
    return rc;
}

/* Classes and their meshes (no pair tables yet). */
static int space_meshes(struct space *sp, const struct wp_sbp_problem *pr, struct wp_err *err)
{
    memset(sp, 0, sizeof *sp);
    sp->pr = pr;
    if (wp_sbp_check_problem(pr, &sp->nodes, &sp->gpus, err))
        return -1;
    sp->nlayers = pr->nlayers;
    /* a limit of exactly the least memory fits whatever order the sums take */
    sp->limit_bytes = pr->memory_limit_bytes > 0 ? pr->memory_limit_bytes * (1 + 1e-12) : INFINITY;
    sp->layer_class = malloc((size_t)pr->nlayers * sizeof *sp->layer_class);
    if (!sp->layer_class)
        return wp_errorf(err, "out of memory");
    sp->nclasses = wp_sbp_layer_classes(pr, sp->layer_class);
    size_t C = (size_t)sp->nclasses;
    sp->nmeshes = calloc(C, sizeof *sp->nmeshes);
    sp->meshes = calloc(C, sizeof *sp->meshes);
    sp->own_s = calloc(C, sizeof *sp->own_s);
    sp->memory_bytes = calloc(C, sizeof *sp->memory_bytes);
    sp->least_memory_bytes = calloc(C, sizeof *sp->least_memory_bytes);
    sp->nadjacent = calloc(C, sizeof *sp->nadjacent);
    sp->adjacent = calloc(C, sizeof *sp->adjacent);
    sp->pairs = calloc((size_t)pr->nlayers, sizeof *sp->pairs);
    if (!sp->nmeshes || !sp->meshes || !sp->own_s || !sp->memory_bytes || !sp->least_memory_bytes ||
        !sp->nadjacent || !sp->adjacent || !sp->pairs) {
        space_destroy(sp);
        return wp_errorf(err, "out of memory");
    }
    for (int c = 0; c < sp->nclasses; c++)
        if (class_meshes(sp, c, err)) {
            space_destroy(sp);
            return -1;
        }
    return 0;
}

static double least_memory_bytes(const struct space *sp)
{
    double bytes = 0;
    for (int c = 0; c < sp->nclasses; c++)
        bytes += sp->least_memory_bytes[c];
    return bytes;
}

/* The pair tables and, per class, the pairs that involve it. */
static int space_pairs(struct space *sp, struct wp_err *err)
{
    for (int l = 1; l < sp->nlayers; l++) {
        int a = sp->layer_class[l - 1], b = sp->layer_class[l];
        if (a == b) /* in the class's own cost */
            continue;
        int i = 0;
        while (i < sp->npairs && !(sp->pairs[i].a == a && sp->pairs[i].b == b))
            i++;
        if (i == sp->npairs)
            sp->pairs[sp->npairs++] = (struct pair_table){a, b, l, 0, NULL};
        sp->pairs[i].times++;
    }
    for (int i = 0; i < sp->npairs; i++) {
        struct pair_table *t = &sp->pairs[i];
        int na = sp->nmeshes[t->a], nb = sp->nmeshes[t->b];
        t->cost_s = malloc((size_t)na * nb * sizeof *t->cost_s);
        if (!t->cost_s)
            return wp_errorf(err, "out of memory");
        for (int x = 0; x < na; x++)
            for (int y = 0; y < nb; y++)
                t->cost_s[(size_t)x * nb + y] =
                    t->times * wp_sbp_alltoall_s(sp->pr, sp->nodes, sp->gpus, &sp->meshes[t->a][x], t->to_layer,
                                                 &sp->meshes[t->b][y], NULL, NULL, NULL);
        sp->nadjacent[t->a]++;
        sp->nadjacent[t->b]++;
    }
    for (int c = 0; c < sp->nclasses; c++) {
        sp->adjacent[c] = malloc((size_t)(sp->nadjacent[c] + 1) * sizeof *sp->adjacent[c]);
        if (!sp->adjacent[c])
            return wp_errorf(err, "out of memory");
        sp->nadjacent[c] = 0;
    }
    for (int i = 0; i < sp->npairs; i++) {
        sp->adjacent[sp->pairs[i].a][sp->nadjacent[sp->pairs[i].a]++] = i;
        sp->adjacent[sp->pairs[i].b][sp->nadjacent[sp->pairs[i].b]++] = i;
    }
    return 0;
}

static double pair_cost_s(const struct space *sp, const struct pair_table *t, int mesh_a, int mesh_b)
{
    return t->cost_s[(size_t)mesh_a * sp->nmeshes[t->b] + mesh_b];
}

/* The cost that depends on class c when it takes mesh s, the others as in assign. */
static double local_cost_s(const struct space *sp, const int *assign, int c, int s)
{
    double cost = sp->own_s[c][s];
    for (int i = 0; i < sp->nadjacent[c]; i++) {
        const struct pair_table *t = &sp->pairs[sp->adjacent[c][i]];
        cost += pair_cost_s(sp, t, t->a == c ? s : assign[t->a], t->b == c ? s : assign[t->b]);
    }
    return cost;
}

static double total_cost_s(const struct space *sp, const int *assign)
{
    double cost = 0;
    for (int c = 0; c < sp->nclasses; c++)
        cost += sp->own_s[c][assign[c]];
    for (int i = 0; i < sp->npairs; i++)
        cost += pair_cost_s(sp, &sp->pairs[i], assign[sp->pairs[i].a], assign[sp->pairs[i].b]);
    return cost;
}

static double memory_of(const struct space *sp, const int *assign)
{
    double bytes = 0;
    for (int c = 0; c < sp->nclasses; c++)
        bytes += sp->memory_bytes[c][assign[c]];
    return bytes;
}

/* ---- exhaustive: depth first over classes, pruned by bounds ----------------- */

struct exhaustive {
    const struct space *sp;
    int *assign, *best;
    double best_cost_s;
    double *rest_cost_s; /* [c]: the least own cost of classes c.. (pairs cost >= 0) */
    double *rest_memory; /* [c]: the least memory of classes c.. */
    int bounds;          /* prune by cost; without, every strategy within memory is costed */
    double costed, budget;
};

static void exhaustive_from(struct exhaustive *x, int c, double cost_s, double memory_bytes)
{
    const struct space *sp = x->sp;
    if (c == sp->nclasses) {
        if (cost_s < x->best_cost_s) {
            x->best_cost_s = cost_s;
            memcpy(x->best, x->assign, (size_t)sp->nclasses * sizeof *x->best);
        }
        return;
    }
    for (int s = 0; s < sp->nmeshes[c] && x->costed <= x->budget; s++) {
        double m = memory_bytes + sp->memory_bytes[c][s];
        if (m + x->rest_memory[c + 1] > sp->limit_bytes)
            continue;
        x->costed++;
        double cost = cost_s + sp->own_s[c][s];
        for (int i = 0; i < sp->nadjacent[c]; i++) { /* pairs whose other class is already set */
            const struct pair_table *t = &sp->pairs[sp->adjacent[c][i]];
            int other = t->a == c ? t->b : t->a;
            if (other < c)
                cost += pair_cost_s(sp, t, t->a == c ? s : x->assign[t->a], t->b == c ? s : x->assign[t->b]);
        }
        if (x->bounds && cost + x->rest_cost_s[c + 1] >= x->best_cost_s)
            continue;
        x->assign[c] = s;
        exhaustive_from(x, c + 1, cost, m);
    }
}

static int search_exhaustive(const struct space *sp, const struct wp_sbp_search_opts *o, double space, int *best,
                             double *costed, struct wp_err *err)
{
    size_t C = (size_t)sp->nclasses;
    struct exhaustive x = {sp,       calloc(C, sizeof(int)), best, INFINITY, calloc(C + 1, sizeof(double)),
                           calloc(C + 1, sizeof(double)), o->exhaustive_bounds, 0, o->exhaustive_max};
    if (!x.assign || !x.rest_cost_s || !x.rest_memory) {
        free(x.assign);
        free(x.rest_cost_s);
        free(x.rest_memory);
        return wp_errorf(err, "out of memory");
    }
    for (int c = sp->nclasses - 1; c >= 0; c--) {
        x.rest_cost_s[c] = x.rest_cost_s[c + 1] + sp->own_s[c][0]; /* meshes are sorted by own cost */
        x.rest_memory[c] = x.rest_memory[c + 1] + sp->least_memory_bytes[c];
    }
    exhaustive_from(&x, 0, 0, 0);
    *costed = x.costed;
    free(x.assign);
    free(x.rest_cost_s);
    free(x.rest_memory);
    if (x.costed > x.budget)
        return wp_errorf(err,
                         "exhaustive search stopped after costing %.4g partial strategies, its limit, in a space of "
                         "%.4g strategies (%d layer classes); use coordinate descent (cd) or Metropolis-Hastings "
                         "(mh)",
                         x.budget, space, sp->nclasses);
    return 0;
}

/* ---- starts for the local searches ------------------------------------------ */

/* Class by class, the cheapest own cost (rng NULL) or a uniformly random mesh
 * among those that leave room for the least memory of the classes after it. */
static void start_assignment(const struct space *sp, struct wp_rng *rng, int *assign)
{
    double used = 0, rest = least_memory_bytes(sp);
    for (int c = 0; c < sp->nclasses; c++) {
        rest -= sp->least_memory_bytes[c];
        int fitting = 0, chosen = -1;
        for (int s = 0; s < sp->nmeshes[c]; s++) {
            if (used + sp->memory_bytes[c][s] + rest > sp->limit_bytes)
                continue;
            fitting++;
            if (!rng) {
                chosen = s; /* sorted by own cost: the first that fits */
                break;
            }
            if (wp_rng_next(rng) % (unsigned long long)fitting == 0) /* reservoir: uniform over the fitting */
                chosen = s;
        }
        if (chosen < 0) /* only by rounding: the least-memory mesh fits by construction */
            for (int s = 0; s < sp->nmeshes[c]; s++)
                if (sp->memory_bytes[c][s] == sp->least_memory_bytes[c])
                    chosen = s;
        assign[c] = chosen;
        used += sp->memory_bytes[c][chosen];
    }
}

/* ---- coordinate descent ----------------------------------------------------- */

/* Sweeps the classes, each to its cheapest mesh given the others, until a
 * sweep changes nothing; returns the cost. */
static double descend(const struct space *sp, int *assign, double *costed)
{
    double memory_bytes = memory_of(sp, assign);
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int c = 0; c < sp->nclasses; c++) {
            int cur = assign[c], best = cur;
            double best_s = local_cost_s(sp, assign, c, cur);
            for (int s = 0; s < sp->nmeshes[c]; s++) {
                if (s == cur ||
                    memory_bytes - sp->memory_bytes[c][cur] + sp->memory_bytes[c][s] > sp->limit_bytes)
                    continue;
                double cost = local_cost_s(sp, assign, c, s);
                (*costed)++;
                if (cost < best_s * (1 - 1e-12)) {
                    best_s = cost;
                    best = s;
                }
            }
            if (best != cur) {
                memory_bytes += sp->memory_bytes[c][best] - sp->memory_bytes[c][cur];
                assign[c] = best;
                changed = 1;
            }
        }
    }
    return total_cost_s(sp, assign);
}

static int search_descent(const struct space *sp, const struct wp_sbp_search_opts *o, int *best, double *costed,
                          struct wp_err *err)
{
    int *assign = malloc((size_t)sp->nclasses * sizeof *assign);
    if (!assign)
        return wp_errorf(err, "out of memory");
    struct wp_rng rng;
    wp_rng_seed(&rng, o->seed, 0);
    double best_s = INFINITY;
    for (int start = 0; start <= o->restarts; start++) {
        start_assignment(sp, start == 0 ? NULL : &rng, assign);
        double cost = descend(sp, assign, costed);
        if (cost < best_s) {
            best_s = cost;
            memcpy(best, assign, (size_t)sp->nclasses * sizeof *best);
        }
    }
    free(assign);
    return 0;
}

/* ---- Metropolis-Hastings ---------------------------------------------------- */

static int search_metropolis(const struct space *sp, const struct wp_sbp_search_opts *o, int *best,
                             double *costed, struct wp_err *err)
{
    int *assign = malloc((size_t)sp->nclasses * sizeof *assign);
    if (!assign)
        return wp_errorf(err, "out of memory");
    start_assignment(sp, NULL, assign);
    memcpy(best, assign, (size_t)sp->nclasses * sizeof *best);
    double cost = total_cost_s(sp, assign), best_s = cost;
    double memory_bytes = memory_of(sp, assign);
    int movable = 0;
    for (int c = 0; c < sp->nclasses; c++)
        movable += sp->nmeshes[c] > 1;
    if (cost <= 0 || movable == 0) { /* nothing is cheaper, or nothing can change */
        free(assign);
        return 0;
    }
    double beta = o->mh_beta / cost;
    struct wp_rng rng;
    wp_rng_seed(&rng, o->seed, 1);
    for (long it = 0; it < o->iterations; it++) {
        int c = (int)(wp_rng_next(&rng) % (unsigned long long)sp->nclasses);
        if (sp->nmeshes[c] < 2)
            continue;
        int cur = assign[c];
        int s = (int)(wp_rng_next(&rng) % (unsigned long long)(sp->nmeshes[c] - 1));
        s += s >= cur; /* any mesh but the current one */
        double memory = memory_bytes - sp->memory_bytes[c][cur] + sp->memory_bytes[c][s];
        if (memory > sp->limit_bytes)
            continue;
        double delta = local_cost_s(sp, assign, c, s) - local_cost_s(sp, assign, c, cur);
        (*costed)++;
        if (delta > 0 && wp_rng_uniform(&rng) >= exp(-beta * delta))
            continue;
        assign[c] = s;
        memory_bytes = memory;
        cost += delta;
        if (cost < best_s * (1 - 1e-12)) {
            cost = total_cost_s(sp, assign); /* no drift from summing deltas */
            if (cost < best_s) {
                best_s = cost;
                memcpy(best, assign, (size_t)sp->nclasses * sizeof *best);
            }
        }
    }
    free(assign);
    return 0;
}

/* ---- the entry points ------------------------------------------------------- */

static int memory_error(const struct space *sp, struct wp_err *err)
{
    char limit[32], least[32];
    double need = least_memory_bytes(sp);
    return wp_errorf(err,
                     "no strategy fits in %s per device: the smallest memory that fits is %s (%.0f bytes, "
                     "every layer on its mesh of least memory)",
                     wp_format_bytes(sp->pr->memory_limit_bytes, limit, sizeof limit),
                     wp_format_bytes(need, least, sizeof least), need);
}

int wp_sbp_min_memory_bytes(const struct wp_sbp_problem *pr, double *bytes, struct wp_err *err)
{
    struct space sp;
    if (space_meshes(&sp, pr, err))
        return -1;
    *bytes = least_memory_bytes(&sp);
    space_destroy(&sp);
    return 0;
}

int wp_sbp_plan(const struct wp_sbp_problem *pr, const struct wp_sbp_search_opts *opts,
                struct wp_sbp_result *res, struct wp_err *err)
{
    memset(res, 0, sizeof *res);
    struct space sp;
    if (space_meshes(&sp, pr, err))
        return -1;
    double space = 1;
    for (int c = 0; c < sp.nclasses; c++)
        space *= sp.nmeshes[c];
    int rc = 0;
    int *best = malloc((size_t)sp.nclasses * sizeof *best);
    struct wp_sbp_mesh *meshes = malloc((size_t)pr->nlayers * sizeof *meshes);
    double costed = 0;
    if (!best || !meshes)
        rc = wp_errorf(err, "out of memory");
    else if (least_memory_bytes(&sp) > sp.limit_bytes)
        rc = memory_error(&sp, err);
    else if (space_pairs(&sp, err))
        rc = -1;
    else if (opts->kind == WP_SBP_EXHAUSTIVE)
        rc = search_exhaustive(&sp, opts, space, best, &costed, err);
    else if (opts->kind == WP_SBP_COORDINATE_DESCENT)
        rc = search_descent(&sp, opts, best, &costed, err);
    else
        rc = search_metropolis(&sp, opts, best, &costed, err);
    if (rc == 0) {
        for (int l = 0; l < pr->nlayers; l++)
            meshes[l] = sp.meshes[sp.layer_class[l]][best[sp.layer_class[l]]];
        rc = wp_sbp_evaluate(pr, meshes, res, err);
        res->search = opts->kind;
        res->space = space;
        res->costed = costed;
    }
    free(best);
    free(meshes);
    space_destroy(&sp);
    return rc;
}

int wp_sbp_evaluate(const struct wp_sbp_problem *pr, const struct wp_sbp_mesh *meshes,
                    struct wp_sbp_result *res, struct wp_err *err)
{
    memset(res, 0, sizeof *res);
    int nodes, gpus;
    if (wp_sbp_check_problem(pr, &nodes, &gpus, err))
        return -1;
    for (int l = 0; l < pr->nlayers; l++) {
        const struct wp_sbp_mesh *m = &meshes[l];
        if (!wp_sbp_mesh_fits(pr, nodes, gpus, l, m))
            return wp_errorf(err,
                             "layer %s: mesh nodes [%d, %d, %d] x GPUs [%d, %d, %d] is not %d nodes x %d GPUs "
                             "splitting batch %d, n_out %d and n_in %d evenly",
                             pr->layers[l].name, m->nodes[0], m->nodes[1], m->nodes[2], m->gpus[0], m->gpus[1],
                             m->gpus[2], nodes, gpus, pr->batch, pr->layers[l].n_out, pr->layers[l].n_in);
    }
    int *layer_class = malloc((size_t)pr->nlayers * sizeof *layer_class);
    res->layers = calloc((size_t)pr->nlayers, sizeof *res->layers);
    if (!layer_class || !res->layers) {
        free(layer_class);
        wp_sbp_result_destroy(res);
        return wp_errorf(err, "out of memory");
    }
    res->nlayers = pr->nlayers;
    res->nclasses = wp_sbp_layer_classes(pr, layer_class);
    for (int l = 0; l < pr->nlayers; l++) {
        struct wp_sbp_layer_cost *c = &res->layers[l];
        struct wp_sbp_terms t;
        wp_sbp_layer_terms(pr, l, &meshes[l], &t);
        c->layer_class = layer_class[l];
        c->mesh = meshes[l];
        c->gather_s = t.gather_s;
        c->reduce_s = t.reduce_s;
        c->weight_sync_s = t.weight_sync_s;
        c->sent_bytes = t.sent_bytes;
        c->weight_sync_sent_bytes = t.weight_sync_sent_bytes;
        c->reduce_to = WP_SBP_COLS; /* the last layer's; the next layer's alltoall sets the others */
        if (l > 0 || pr->input == WP_SBP_INPUT_BATCH_SPLIT) {
            double sent = 0;
            c->alltoall_s = wp_sbp_alltoall_s(pr, nodes, gpus, l > 0 ? &meshes[l - 1] : NULL, l, &meshes[l],
                                              l > 0 ? &res->layers[l - 1].reduce_to : NULL, &c->gather_from, &sent);
            c->sent_bytes += sent;
        }
        c->comm_s = c->alltoall_s + c->gather_s + c->reduce_s + c->weight_sync_s;
        c->memory_bytes = wp_sbp_layer_memory_bytes(pr, l, &meshes[l]);
        res->comm_s += c->comm_s;
        res->sent_bytes += c->sent_bytes;
        res->memory_bytes += c->memory_bytes;
    }
    free(layer_class);
    return 0;
}
