/* Plans of a regular shape: S stages of r replicas each (r from 1 to a
 * node's GPUs, or whole nodes), devices taken in node-major order (append),
 * layers balanced over the stages by the bottleneck partition of F + B and
 * then moved one boundary at a time while DAPPLE's L drops; and plans given
 * by hand (wp_plan_fixed) for baselines and tests. The planner's second
 * search beside the DP, and its only one where the DP is too large. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/plan_search.h"

/* Up to this many groups every replica count is tried for every stage
 * count; beyond, only those that use at least a quarter of the groups
 * (fewer replicas of the same slices only make more micro-batches: the
 * planner's time goal at 4,096 GPUs) */
#define WP_UNIFORM_ALL_REPLICAS 64

double wp_plan_tally_latency(const struct wp_plan_model *m, struct wp_plan_tally *tally,
                             const struct wp_stage_shape *shapes, int n, int *fits, double *peak)
{
    struct wp_pipe_latency lat;
    double L = wp_plan_latency(m, shapes, n, &lat, fits, peak);
    tally->evaluations++;
    if (*peak < tally->least_peak)
        tally->least_peak = *peak;
    return L;
}

void wp_uniform_list_destroy(struct wp_uniform_list *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i].first);
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* Layers into nstages contiguous stages whose largest F + B is smallest
 * (binary search on the bottleneck, greedy fill); first[s] per stage. */
static void balance(const struct wp_plan_model *m, int nstages, int *first)
{
    int N = m->layers->nlayers;
    double lo = 0, hi = m->cum_f[N] + m->cum_b[N];
    for (int i = 0; i < N; i++) { /* at the point: blocks split over the tensor group */
        double w = m->cum_f[i + 1] - m->cum_f[i] + m->cum_b[i + 1] - m->cum_b[i];
        lo = w > lo ? w : lo;
    }
    for (int iter = 0; iter < 60 && hi - lo > 1e-12 * (hi + 1e-30); iter++) {
        double cap = 0.5 * (lo + hi);
        int s = 0, start = 0;
        for (int i = 0; i < N && s < nstages; i++) {
            double w = m->cum_f[i + 1] + m->cum_b[i + 1] - m->cum_f[start] - m->cum_b[start];
            if (w > cap) {
                s++;
                start = i;
            }
        }
        if (s < nstages)
            hi = cap;
        else
            lo = cap;
    }
    /* cut at hi */
    int s = 0, start = 0;
    first[0] = 0;
    for (int i = 0; i < N; i++) {
        double w = m->cum_f[i + 1] + m->cum_b[i + 1] - m->cum_f[start] - m->cum_b[start];
        if (w > hi * (1 + 1e-12) && s + 1 < nstages && i > start) {
            first[++s] = i;
            start = i;
        }
    }
    /* coarse layers (a GPT's head next to its blocks) can leave fewer
     * stages than asked at the bottleneck: the heaviest stage of two layers
     * or more is split where its halves are most even, until there are
     * nstages */
    for (int k = s + 1; k < nstages; k++) {
        int split = -1;
        double heaviest = -1;
        for (int j = 0; j < k; j++) {
            int end = j + 1 < k ? first[j + 1] : N;
            double w = m->cum_f[end] + m->cum_b[end] - m->cum_f[first[j]] - m->cum_b[first[j]];
            if (end - first[j] >= 2 && w > heaviest) {
                heaviest = w;
                split = j;
            }
        }
        if (split < 0)
            break; /* one layer each already (nstages <= N: not reached) */
        int a = first[split], end = split + 1 < k ? first[split + 1] : N, cut = a + 1;
        double base = m->cum_f[a] + m->cum_b[a], worst = INFINITY;
        for (int c = a + 1; c < end; c++) {
            double left = m->cum_f[c] + m->cum_b[c] - base, right = heaviest - left;
            double w = left > right ? left : right;
            if (w < worst) {
                worst = w;
                cut = c;
            }
        }
        memmove(&first[split + 2], &first[split + 1], (size_t)(k - split - 1) * sizeof *first);
        first[split + 1] = cut;
    }
}

/* The stages' shapes: devices in node-major order (append), or as
 * m->place_only's policy places them stage by stage. */
static void uniform_shapes(const struct wp_plan_model *m, int nstages, int r, const int *first,
                           struct wp_stage_shape *shapes)
{
    int cap = m->groups_per_node, nodes = m->hw.nodes;
    int *used = m->place_only ? calloc((size_t)nodes, sizeof *used) : NULL;
    struct wp_plan_device *devs = used ? malloc((size_t)r * sizeof *devs) : NULL;
    for (int s = 0; s < nstages; s++) {
        if (devs && wp_place_take((enum wp_place_policy)(m->place_only - 1), used, nodes, cap, r, devs) == 0) {
            wp_stage_shape_of(devs, r, &shapes[s]);
        } else {
            int d0 = s * r; /* devices in node-major order: append */
            int n0 = d0 / cap, n1 = (d0 + r - 1) / cap;
            shapes[s].nodes_spanned = n1 - n0 + 1;
            shapes[s].max_per_node = r < cap ? r : cap;
            shapes[s].only_node = n0 == n1 ? n0 : -1;
        }
        shapes[s].first_layer = first[s];
        shapes[s].last_layer = s + 1 < nstages ? first[s + 1] - 1 : m->layers->nlayers - 1;
        shapes[s].replicas = r;
    }
    free(used);
    free(devs);
}

static int uniform_push(struct wp_uniform_list *l, int ns, int r, int fits, double value, const int *first)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        struct wp_uniform_plan *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    int *copy = malloc((size_t)ns * sizeof *copy);
    if (!copy)
        return -1;
    memcpy(copy, first, (size_t)ns * sizeof *copy);
    l->v[l->n++] = (struct wp_uniform_plan){ns, r, fits, value, copy};
    return 0;
}

/* 1 when ns stages of r replicas are worth a look (see below). */
static int uniform_shape_ok(const struct wp_plan_model *m, int ns, int r)
{
    int G = wp_plan_model_groups(m), cap = m->groups_per_node;
    if (r * ns > G || (r > cap && r % cap))
        return 0; /* more than a node: whole nodes only */
    if (G > WP_UNIFORM_ALL_REPLICAS && 4 * r * ns <= G)
        return 0; /* leaves three quarters of the GPUs idle */
    if (m->even_slices && m->global_batch % r)
        return 0; /* no micro-batch its replicas split evenly divides the global batch */
    return 1;
}

/* ns stages of r replicas from layer first[s] each: L (and *fits), the
 * boundaries moved one layer at a time while L drops. */
static double move_boundaries(const struct wp_plan_model *m, struct wp_plan_tally *tally, int ns, int r, int *first,
                              struct wp_stage_shape *shapes, int *fits)
{
    int N = m->layers->nlayers;
    double peak;
    uniform_shapes(m, ns, r, first, shapes);
    double L = wp_plan_tally_latency(m, tally, shapes, ns, fits, &peak);
    for (int improved = 1, pass = 0; improved && pass < 4 * N; pass++) {
        improved = 0;
        for (int s = 1; s < ns; s++)
            for (int d = -1; d <= 1; d += 2) {
                int f = first[s] + d;
                if (f <= first[s - 1] || f >= (s + 1 < ns ? first[s + 1] : N))
                    continue;
                int old = first[s];
                first[s] = f;
                uniform_shapes(m, ns, r, first, shapes);
                int fits2;
                double L2 = wp_plan_tally_latency(m, tally, shapes, ns, &fits2, &peak);
                if (fits2 > *fits || (fits2 == *fits && L2 < L * (1 - 1e-12))) {
                    L = L2;
                    *fits = fits2;
                    improved = 1;
                } else {
                    first[s] = old;
                }
            }
    }
    return L;
}

int wp_plan_search_uniform(const struct wp_plan_model *m, struct wp_plan_tally *tally, struct wp_uniform_list *out)
{
    int N = m->layers->nlayers, G = wp_plan_model_groups(m), rc = 0;
    int *first = calloc((size_t)N, sizeof *first), *balanced = calloc((size_t)N, sizeof *balanced);
    struct wp_stage_shape *shapes = calloc((size_t)N, sizeof *shapes);
    if (!first || !balanced || !shapes)
        rc = -1;
    for (int ns = 1; rc == 0 && ns <= N && ns <= G; ns++) {
        balance(m, ns, balanced);
        /* beyond WP_UNIFORM_ALL_REPLICAS groups the boundaries are moved once,
         * for the most replicas, and kept for fewer (the same stages and
         * memory, only M and the allreduces differ): the time goal at 4,096
         * GPUs */
        int once = 0;
        if (G > WP_UNIFORM_ALL_REPLICAS)
            for (int r = G / ns; r >= 1 && !once; r--)
                if (uniform_shape_ok(m, ns, r)) {
                    int fits;
                    move_boundaries(m, tally, ns, r, balanced, shapes, &fits);
                    once = 1;
                }
        for (int r = 1; rc == 0 && r * ns <= G; r++) {
            if (!uniform_shape_ok(m, ns, r))
                continue;
            memcpy(first, balanced, (size_t)ns * sizeof *first);
            int fits;
            double L, peak;
            if (once) {
                uniform_shapes(m, ns, r, first, shapes);
                L = wp_plan_tally_latency(m, tally, shapes, ns, &fits, &peak);
            } else {
                L = move_boundaries(m, tally, ns, r, first, shapes, &fits);
            }
            rc = uniform_push(out, ns, r, fits, L, first);
        }
    }
    free(first);
    free(balanced);
    free(shapes);
    return rc;
}

int wp_plan_of_uniform(const struct wp_plan_model *m, const struct wp_uniform_plan *u, struct wp_plan *p,
                       struct wp_err *err)
{
    int *layer_counts = calloc((size_t)u->nstages, sizeof *layer_counts);
    int *replicas = calloc((size_t)u->nstages, sizeof *replicas);
    if (!layer_counts || !replicas) {
        free(layer_counts);
        free(replicas);
        return wp_errorf(err, "out of memory");
    }
    for (int s = 0; s < u->nstages; s++) {
        int end = s + 1 < u->nstages ? u->first[s + 1] : m->layers->nlayers;
        layer_counts[s] = end - u->first[s];
        replicas[s] = u->r;
    }
    int rc = wp_plan_fixed(m, u->nstages, layer_counts, replicas, p, err);
    free(layer_counts);
    free(replicas);
    return rc;
}

int wp_plan_fixed(const struct wp_plan_model *m, int nstages, const int *layer_counts,
                  const int *replicas, struct wp_plan *p, struct wp_err *err)
{
    int N = m->layers->nlayers, G = wp_plan_model_groups(m), t = wp_plan_tensor_size(m->point.tensor), sum = 0,
        devs = 0;
    for (int s = 0; s < nstages; s++) {
        if (layer_counts[s] < 1 || replicas[s] < 1)
            return wp_errorf(err, "stage %d needs at least one layer and one replica", s);
        sum += layer_counts[s];
        devs += replicas[s];
    }
    if (sum != N)
        return wp_errorf(err, "the stages hold %d layers, the model has %d", sum, N);
    if (devs > G)
        return t > 1 ? wp_errorf(err, "the stages need %d groups of %d GPUs, there are %d", devs, t, G)
                     : wp_errorf(err, "the stages need %d devices, there are %d", devs, G);
    p->stages = calloc((size_t)nstages, sizeof *p->stages);
    int *used = calloc((size_t)m->hw.nodes, sizeof *used);
    if (!p->stages || !used) {
        free(used);
        return wp_errorf(err, "out of memory");
    }
    p->nstages = nstages;
    for (int s = 0, next = 0; s < nstages; s++) {
        struct wp_plan_stage *ps = &p->stages[s];
        ps->first_layer = next;
        next += layer_counts[s];
        ps->last_layer = next - 1;
        ps->replicas = replicas[s];
        ps->policy = m->place_only ? (enum wp_place_policy)(m->place_only - 1) : WP_PLACE_APPEND;
        ps->devices = calloc((size_t)replicas[s] * t, sizeof *ps->devices);
        if (!ps->devices ||
            wp_place_take_groups(ps->policy, used, m->hw.nodes, m->groups_per_node, replicas[s], t, ps->devices)) {
            free(used);
            return wp_errorf(err, "out of memory");
        }
    }
    free(used);
    wp_plan_evaluate(m, p);
    return 0;
}

int wp_plan_interleave(const struct wp_plan_model *m, const struct wp_plan *base, int chunks, const int *layer_counts,
                       struct wp_plan *out, struct wp_err *err)
{
    int P = base->nstages, V = chunks * P, N = m->layers->nlayers, t = wp_plan_tensor_size(m->point.tensor);
    if (chunks < 2 || base->chunks > 1 || V > N)
        return wp_errorf(err, "%d chunks of %d stages: give at least 2 chunks, at most one layer per virtual stage "
                              "(%d layers), from a plan not interleaved yet", chunks, P, N);
    for (int s = 1; s < P; s++)
        if (base->stages[s].replicas != base->stages[0].replicas)
            return wp_errorf(err, "an interleaved plan needs the same replica count on every stage");
    int *first = calloc((size_t)V, sizeof *first);
    if (!first)
        return wp_errorf(err, "out of memory");
    if (layer_counts)
        for (int j = 1; j < V; j++)
            first[j] = first[j - 1] + layer_counts[j - 1];
    else
        balance(m, V, first);
    int held = layer_counts ? first[V - 1] + layer_counts[V - 1] : N;
    if (held != N) {
        free(first);
        return wp_errorf(err, "the virtual stages hold %d layers, the model has %d", held, N);
    }
    wp_plan_init(out);
    out->stages = calloc((size_t)V, sizeof *out->stages);
    if (!out->stages) {
        free(first);
        return wp_errorf(err, "out of memory");
    }
    out->nstages = V;
    out->chunks = chunks;
    for (int j = 0; j < V; j++) {
        const struct wp_plan_stage *b = &base->stages[j % P];
        struct wp_plan_stage *st = &out->stages[j];
        size_t n = (size_t)b->replicas * t;
        st->first_layer = first[j];
        st->last_layer = j + 1 < V ? first[j + 1] - 1 : N - 1;
        st->replicas = b->replicas;
        st->policy = b->policy;
        if (st->last_layer < st->first_layer) {
            free(first);
            return wp_errorf(err, "virtual stage %d gets no layer", j);
        }
        if (!(st->devices = malloc(n * sizeof *st->devices))) {
            free(first);
            return wp_errorf(err, "out of memory");
        }
        memcpy(st->devices, b->devices, n * sizeof *st->devices);
    }
    free(first);
    wp_plan_evaluate(m, out);
    return 0;
}
