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
    for (int i = 0; i < N; i++) {
        double w = m->layers->layers[i].forward_s + m->layers->layers[i].backward_s;
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
    /* cut at hi, then make sure every stage has a layer */
    int s = 0, start = 0;
    first[0] = 0;
    for (int i = 0; i < N; i++) {
        double w = m->cum_f[i + 1] + m->cum_b[i + 1] - m->cum_f[start] - m->cum_b[start];
        if (w > hi * (1 + 1e-12) && s + 1 < nstages && i > start) {
            first[++s] = i;
            start = i;
        }
    }
    for (s = s + 1; s < nstages; s++)
        first[s] = N - (nstages - s);
    for (s = nstages - 1; s > 0; s--) /* strictly increasing, ending before N */
        if (first[s] <= first[s - 1])
            first[s - 1] = first[s] - 1;
    for (s = 1; s < nstages; s++)
        if (first[s] <= first[s - 1])
            first[s] = first[s - 1] + 1;
}

static void uniform_shapes(const struct wp_plan_model *m, int nstages, int r, const int *first,
                           struct wp_stage_shape *shapes)
{
    for (int s = 0; s < nstages; s++) {
        int d0 = s * r; /* devices in node-major order: append */
        int cap = m->hw.gpus_per_node;
        int n0 = d0 / cap, n1 = (d0 + r - 1) / cap;
        shapes[s].first_layer = first[s];
        shapes[s].last_layer = s + 1 < nstages ? first[s + 1] - 1 : m->layers->nlayers - 1;
        shapes[s].replicas = r;
        shapes[s].nodes_spanned = n1 - n0 + 1;
        shapes[s].max_per_node = r < cap ? r : cap;
        shapes[s].only_node = n0 == n1 ? n0 : -1;
    }
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

int wp_plan_search_uniform(const struct wp_plan_model *m, struct wp_plan_tally *tally, struct wp_uniform_list *out)
{
    int N = m->layers->nlayers, G = wp_plan_hw_devices(&m->hw), cap = m->hw.gpus_per_node, rc = 0;
    int *first = calloc((size_t)N, sizeof *first);
    struct wp_stage_shape *shapes = calloc((size_t)N, sizeof *shapes);
    if (!first || !shapes)
        rc = -1;
    for (int ns = 1; rc == 0 && ns <= N && ns <= G; ns++) {
        for (int r = 1; rc == 0 && r * ns <= G; r++) {
            if (r > cap && r % cap)
                continue; /* more than a node: whole nodes only */
            balance(m, ns, first);
            int fits;
            double peak;
            uniform_shapes(m, ns, r, first, shapes);
            double L = wp_plan_tally_latency(m, tally, shapes, ns, &fits, &peak);
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
                        if (fits2 > fits || (fits2 == fits && L2 < L * (1 - 1e-12))) {
                            L = L2;
                            fits = fits2;
                            improved = 1;
                        } else {
                            first[s] = old;
                        }
                    }
            }
            rc = uniform_push(out, ns, r, fits, L, first);
        }
    }
    free(first);
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
    int N = m->layers->nlayers, G = wp_plan_hw_devices(&m->hw), sum = 0, devs = 0;
    for (int s = 0; s < nstages; s++) {
        if (layer_counts[s] < 1 || replicas[s] < 1)
            return wp_errorf(err, "stage %d needs at least one layer and one replica", s);
        sum += layer_counts[s];
        devs += replicas[s];
    }
    if (sum != N)
        return wp_errorf(err, "the stages hold %d layers, the model has %d", sum, N);
    if (devs > G)
        return wp_errorf(err, "the stages need %d devices, there are %d", devs, G);
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
        ps->policy = WP_PLACE_APPEND;
        ps->devices = calloc((size_t)replicas[s], sizeof *ps->devices);
        if (!ps->devices ||
            wp_place_take(WP_PLACE_APPEND, used, m->hw.nodes, m->hw.gpus_per_node, replicas[s], ps->devices)) {
            free(used);
            return wp_errorf(err, "out of memory");
        }
    }
    free(used);
    wp_plan_evaluate(m, p);
    return 0;
}
