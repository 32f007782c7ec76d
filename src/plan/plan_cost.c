/* The planner's cost model: the hardware it plans for, stage times,
 * transfers, allreduce and memory, and DAPPLE's L of a whole plan (see
 * plan.h for the model). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "sched/grad_overlap.h"
#include "util/strutil.h"

/* Latency of one message between two GPUs of a node (the simulator's too). */
#define WP_INTRA_NODE_LATENCY_S 1e-6
/* ACR from which DAPPLE's warm-up policy B (more micro-batches in flight)
 * pays (section VI-D: VGG-19 0.16, GNMT-16 0.10 and AmoebaNet 0.18 gain from
 * B; BERT-48 0.06 and XLNet-36 0.03 do not). */
#define WP_POLICY_B_ACR 0.1

const char *wp_place_policy_name(enum wp_place_policy p)
{
    static const char *const names[] = {"fresh", "append", "scatter", "rest"};
    return p >= WP_PLACE_FRESH && p <= WP_PLACE_REST ? names[p] : "?";
}

/* "...-16GB..." in a GPU model name, in bytes (GiB), or 0. */
static double memory_from_model_name(const char *model)
{
    for (const char *p = model; *p; p++) {
        if (!isdigit((unsigned char)*p) || (p > model && isdigit((unsigned char)p[-1])))
            continue;
        char *end;
        long gb = strtol(p, &end, 10);
        if (gb > 0 && end[0] == 'G' && end[1] == 'B')
            return (double)gb * 1024.0 * 1024.0 * 1024.0;
    }
    return 0;
}

int wp_plan_hw_from_cluster(struct wp_plan_hw *hw, const struct wp_cluster *c, int devices,
                            double memory_bytes, struct wp_err *err)
{
    memset(hw, 0, sizeof *hw);
    wp_strlcpy(hw->cluster, c->name, sizeof hw->cluster);
    if (c->ntypes < 1 || c->types[0].ngpus < 1)
        return wp_errorf(err, "the cluster description '%s' has no GPUs to plan for", c->name);
    const struct wp_node_type *t = &c->types[0];
    for (int i = 1; i < c->ntypes; i++)
        if (c->types[i].ngpus != t->ngpus)
            return wp_errorf(err, "the planner takes nodes of one kind; '%s' has node types with %d and %d GPUs",
                             c->name, t->ngpus, c->types[i].ngpus);
    int g = t->ngpus, nodes = wp_cluster_node_count(c);
    if (nodes < 1)
        nodes = 1;
    hw->gpus_per_node = g;
    hw->nodes = nodes;
    if (devices > 0) {
        if (devices > g * nodes)
            return wp_errorf(err, "--devices %d: the cluster '%s' has %d GPUs (%d nodes x %d)", devices, c->name,
                             g * nodes, nodes, g);
        if (devices <= g) {
            hw->nodes = 1;
            hw->gpus_per_node = devices;
        } else if (devices % g) {
            return wp_errorf(err, "--devices %d: give at most one node's %d GPUs or whole nodes (a multiple of %d)",
                             devices, g, g);
        } else {
            hw->nodes = devices / g;
        }
    }
    wp_strlcpy(hw->gpu_model, t->gpus[0].model, sizeof hw->gpu_model);
    /* the slowest pair of GPUs inside a node; PCIe when no matrix is known */
    double bw = 0;
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++)
            if (a != b && t->link_Bps && t->link_Bps[a * g + b] > 0 && (bw == 0 || t->link_Bps[a * g + b] < bw))
                bw = t->link_Bps[a * g + b];
    if (bw == 0)
        bw = t->gpus[0].pcie_Bps;
    if (bw <= 0 && hw->gpus_per_node > 1)
        return wp_errorf(err, "the cluster '%s' gives no bandwidth between the GPUs of a node", c->name);
    hw->intra = (struct wp_link_cost){WP_INTRA_NODE_LATENCY_S, bw > 0 ? 1.0 / bw : 0};
    if (c->network.given && c->network.bandwidth_Bps > 0) {
        hw->inter = (struct wp_link_cost){c->network.latency_s, 1.0 / c->network.bandwidth_Bps};
    } else if (hw->nodes > 1) {
        return wp_errorf(err, "the cluster '%s' has no network model between its %d nodes (add a network group "
                              "or run wavepipe calibrate)", c->name, hw->nodes);
    }
    if (memory_bytes > 0) {
        hw->memory_bytes = memory_bytes;
    } else if (t->gpus[0].memory_bytes > 0) {
        hw->memory_bytes = t->gpus[0].memory_bytes;
    } else {
        hw->memory_bytes = memory_from_model_name(hw->gpu_model);
        hw->memory_from_model = 1;
        if (hw->memory_bytes <= 0)
            return wp_errorf(err, "neither the cluster description nor the GPU model '%s' says the GPUs' memory: "
                                  "give --memory BYTES", hw->gpu_model);
    }
    return 0;
}

int wp_plan_model_init(struct wp_plan_model *m, const struct wp_layer_table *layers,
                       const struct wp_plan_hw *hw, int global_batch, struct wp_err *err)
{
    memset(m, 0, sizeof *m);
    int n = layers->nlayers;
    if (n < 1)
        return wp_errorf(err, "the layer table '%s' has no layers", layers->name);
    if (global_batch < 1)
        return wp_errorf(err, "the global batch must be at least 1");
    m->layers = layers;
    m->hw = *hw;
    m->global_batch = global_batch;
    m->grad_overlap = 1;
    m->grad_bucket_bytes = WP_GRAD_BUCKET_BYTES_DEFAULT;
    m->cum_f = calloc((size_t)(n + 1), sizeof *m->cum_f);
    m->cum_b = calloc((size_t)(n + 1), sizeof *m->cum_b);
    m->cum_p = calloc((size_t)(n + 1), sizeof *m->cum_p);
    m->cum_w = calloc((size_t)(n + 1), sizeof *m->cum_w);
    m->cum_act = calloc((size_t)(n + 1), sizeof *m->cum_act);
    m->scratch = calloc((size_t)(2 * n + 1), sizeof *m->scratch);
    if (!m->cum_f || !m->cum_b || !m->cum_p || !m->cum_w || !m->cum_act || !m->scratch) {
        wp_plan_model_destroy(m);
        return wp_errorf(err, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        const struct wp_layer *l = &layers->layers[i];
        m->cum_f[i + 1] = m->cum_f[i] + l->forward_s;
        m->cum_b[i + 1] = m->cum_b[i] + l->backward_s;
        m->cum_p[i + 1] = m->cum_p[i] + l->parameter_bytes;
        m->cum_w[i + 1] = m->cum_w[i] + 2.0 * l->parameter_bytes + l->optimizer_bytes;
        m->cum_act[i + 1] = m->cum_act[i] + l->activation_bytes;
    }
    return 0;
}

void wp_plan_model_destroy(struct wp_plan_model *m)
{
    free(m->cum_f);
    free(m->cum_b);
    free(m->cum_p);
    free(m->cum_w);
    free(m->cum_act);
    free(m->scratch);
    memset(m, 0, sizeof *m);
}

/* Micro-batch size and count for a plan whose stages' replica counts have
 * largest max_replicas and least common multiple lcm: the profile batch on
 * each replica of the widest stage (plan.h); with even_slices moved to the
 * nearest size that wavepipe run executes -- a divisor of the global batch
 * that every stage's replicas split evenly (ties to the smaller: more
 * micro-batches). Returns -1 when no size is both. */
static int micro_batches(const struct wp_plan_model *m, int max_replicas, long lcm, int *micro_batch,
                         int *microbatches)
{
    long G = m->global_batch, b = (long)m->layers->profile_batch * max_replicas;
    if (b > G)
        b = G;
    if (b < 1)
        b = 1;
    if (!m->even_slices) {
        int M = (int)((G + b - 1) / b);
        *microbatches = M;
        *micro_batch = (int)((G + M - 1) / M);
        return 0;
    }
    long best = 0;
    if (G % b == 0 && b % lcm == 0) {
        best = b; /* the usual case: no search */
    } else { /* the divisors of G in pairs d, G / d: O(sqrt G) in the DP's inner loop */
        for (long d = 1; d * d <= G; d++) {
            if (G % d)
                continue;
            long pair[2] = {d, G / d};
            for (int i = 0; i < 2; i++)
                if (pair[i] % lcm == 0 && (!best || labs(pair[i] - b) < labs(best - b) ||
                                           (labs(pair[i] - b) == labs(best - b) && pair[i] < best)))
                    best = pair[i];
        }
    }
    if (!best)
        return -1;
    *micro_batch = (int)best;
    *microbatches = (int)(G / best);
    return 0;
}

/* Least common multiple of the stages' replica counts, capped just above
 * the global batch (no micro-batch can serve more). */
static long replica_lcm(const struct wp_plan_model *m, const struct wp_stage_shape *st, int nstages)
{
    long lcm = 1;
    for (int s = 0; s < nstages && lcm <= m->global_batch; s++) {
        long a = lcm, b = st[s].replicas;
        while (b) {
            long t = a % b;
            a = b;
            b = t;
        }
        lcm = lcm / a * st[s].replicas;
    }
    return lcm;
}

static double range(const double *cum, int first, int last)
{
    return cum[last + 1] - cum[first];
}

/* Fills one stage's derived costs (in *out when not NULL) and its
 * wp_pipe_stage; returns 0, or -1 when a replica would get no sample. */
static int stage_costs(const struct wp_plan_model *m, const struct wp_stage_shape *st, int micro_batch,
                       struct wp_pipe_stage *ps, struct wp_plan_stage *out)
{
    if (st->replicas > micro_batch)
        return -1;
    int slice = (micro_batch + st->replicas - 1) / st->replicas;
    double scale = (double)slice / m->layers->profile_batch;
    ps->forward_s = range(m->cum_f, st->first_layer, st->last_layer) * scale;
    ps->backward_s = range(m->cum_b, st->first_layer, st->last_layer) * scale;
    struct wp_hier_allreduce ar = {st->nodes_spanned, st->max_per_node, m->hw.intra, m->hw.inter};
    double grad_bytes = range(m->cum_p, st->first_layer, st->last_layer);
    ps->allreduce_s = wp_hier_allreduce_s(&ar, grad_bytes);
    if (m->grad_overlap && st->replicas > 1) { /* only what the last backward cannot hide */
        struct wp_grad_layers layers = {st->last_layer - st->first_layer + 1, m->cum_b + st->first_layer,
                                        m->cum_p + st->first_layer};
        struct wp_bucket_cost cost = {wp_hier_allreduce_s, &ar, NULL, NULL};
        struct wp_grad_overlap o;
        wp_grad_overlap_time(ps->backward_s, grad_bytes, &layers, m->grad_bucket_bytes, &cost, &o);
        ps->allreduce_s = o.exposed_s;
    }
    if (out) {
        out->slice = slice;
        out->forward_s = ps->forward_s;
        out->backward_s = ps->backward_s;
        out->allreduce_s = ps->allreduce_s;
        out->weights_bytes = range(m->cum_w, st->first_layer, st->last_layer);
        out->activation_bytes = range(m->cum_act, st->first_layer, st->last_layer) * scale;
    }
    return 0;
}

/* One way, one micro-batch, across the boundary after stage a into b. */
static double boundary_s(const struct wp_plan_model *m, const struct wp_stage_shape *a,
                         const struct wp_stage_shape *b, int micro_batch)
{
    double bytes = m->layers->layers[a->last_layer].activation_bytes * micro_batch / m->layers->profile_batch;
    if (a->only_node >= 0 && a->only_node == b->only_node) {
        int links = a->replicas < b->replicas ? a->replicas : b->replicas;
        return m->hw.intra.alpha_s + bytes / links * m->hw.intra.beta_s_per_byte;
    }
    int links = a->nodes_spanned < b->nodes_spanned ? a->nodes_spanned : b->nodes_spanned;
    return m->hw.inter.alpha_s + bytes / links * m->hw.inter.beta_s_per_byte;
}

static int inflight(char policy, int nstages, int s, int M)
{
    int k = policy == 'B' ? 2 * (nstages - s) - 1 : nstages - s;
    return k < M ? k : M;
}

/* The core shared by the search and the full evaluation: L, and per-stage
 * details into out (may be NULL); *fits under the given policy. */
static double plan_cost(const struct wp_plan_model *m, const struct wp_stage_shape *st, int nstages, char policy,
                        struct wp_plan_stage *out, struct wp_pipe_latency *lat, int *fits, double *peak,
                        int *micro_batch, int *microbatches)
{
    *peak = 0;
    int R = 1;
    for (int s = 0; s < nstages; s++)
        R = st[s].replicas > R ? st[s].replicas : R;
    int B = 0, M = 0;
    int runnable = micro_batches(m, R, m->even_slices ? replica_lcm(m, st, nstages) : 1, &B, &M) == 0;
    if (micro_batch) {
        *micro_batch = B;
        *microbatches = M;
    }
    struct wp_pipe_stage *ps = m->scratch;
    *fits = 1;
    for (int s = 0; s < nstages; s++) {
        struct wp_plan_stage detail;
        if (!runnable || stage_costs(m, &st[s], B, &ps[2 * s], &detail)) {
            *fits = 0;
            *peak = INFINITY;
            *lat = (struct wp_pipe_latency){0};
            lat->total_s = INFINITY;
            return INFINITY;
        }
        detail.inflight = inflight(policy, nstages, s, M);
        detail.memory_bytes = detail.weights_bytes + detail.inflight * detail.activation_bytes;
        if (detail.memory_bytes > m->hw.memory_bytes)
            *fits = 0;
        if (detail.memory_bytes > *peak)
            *peak = detail.memory_bytes;
        detail.send_s = 0;
        if (s + 1 < nstages) {
            detail.send_s = boundary_s(m, &st[s], &st[s + 1], B);
            ps[2 * s + 1] = (struct wp_pipe_stage){detail.send_s, detail.send_s, 0};
        }
        if (out) {
            struct wp_plan_stage *o = &out[s];
            o->slice = detail.slice;
            o->forward_s = detail.forward_s;
            o->backward_s = detail.backward_s;
            o->allreduce_s = detail.allreduce_s;
            o->send_s = detail.send_s;
            o->weights_bytes = detail.weights_bytes;
            o->activation_bytes = detail.activation_bytes;
            o->inflight = detail.inflight;
            o->memory_bytes = detail.memory_bytes;
        }
    }
    *lat = wp_dapple_latency(ps, 2 * nstages - 1, M);
    return lat->total_s;
}

double wp_plan_latency(const struct wp_plan_model *m, const struct wp_stage_shape *st, int nstages,
                       struct wp_pipe_latency *lat, int *fits, double *peak_bytes)
{
    return plan_cost(m, st, nstages, 'A', NULL, lat, fits, peak_bytes, NULL, NULL);
}

void wp_plan_evaluate(const struct wp_plan_model *m, struct wp_plan *p)
{
    int S = p->nstages;
    struct wp_stage_shape *shapes = calloc((size_t)S, sizeof *shapes);
    if (!shapes)
        return;
    wp_strlcpy(p->model, m->layers->name, sizeof p->model);
    p->nlayers = m->layers->nlayers;
    p->profile_batch = m->layers->profile_batch;
    p->global_batch = m->global_batch;
    p->hw = m->hw;
    p->devices_used = 0;
    for (int s = 0; s < S; s++) {
        struct wp_plan_stage *ps = &p->stages[s];
        wp_stage_shape_of(ps->devices, ps->replicas, &shapes[s]);
        shapes[s].first_layer = ps->first_layer;
        shapes[s].last_layer = ps->last_layer;
        ps->nodes_spanned = shapes[s].nodes_spanned;
        ps->max_per_node = shapes[s].max_per_node;
        ps->only_node = shapes[s].only_node;
        p->devices_used += ps->replicas;
    }
    double peak;
    plan_cost(m, shapes, S, 'A', p->stages, &p->latency, &p->fits, &peak, &p->micro_batch, &p->microbatches);
    p->acr = -1;
    if (S > 1) {
        double sum = 0;
        for (int s = 0; s + 1 < S; s++) {
            double compute = p->stages[s].forward_s + p->stages[s].backward_s;
            sum += compute > 0 ? 2.0 * p->stages[s].send_s / compute : 0;
        }
        p->acr = sum / (S - 1);
    }
    p->policy = 'A';
    if (p->acr >= WP_POLICY_B_ACR) {
        struct wp_pipe_latency lat;
        int fits_b;
        struct wp_plan_stage *tmp = calloc((size_t)S, sizeof *tmp);
        if (tmp) {
            plan_cost(m, shapes, S, 'B', tmp, &lat, &fits_b, &peak, NULL, NULL);
            if (fits_b) {
                p->policy = 'B';
                for (int s = 0; s < S; s++) {
                    p->stages[s].inflight = tmp[s].inflight;
                    p->stages[s].memory_bytes = tmp[s].memory_bytes;
                }
            }
            free(tmp);
        }
    }
    p->peak_memory_bytes = 0;
    for (int s = 0; s < S; s++)
        if (p->stages[s].memory_bytes > p->peak_memory_bytes)
            p->peak_memory_bytes = p->stages[s].memory_bytes;
    p->predicted_iter_s = p->latency.total_s;
    p->simulated_iter_s = -1;
    free(shapes);
}

int wp_plan_costs_at(const struct wp_plan_model *m, const struct wp_plan *p, int micro_batch, int k, char policy,
                     double *forward_s, double *backward_s, double *send_s, double *allreduce_s,
                     double *peak_bytes)
{
    int S = p->nstages, M = (m->global_batch + micro_batch - 1) / micro_batch;
    *peak_bytes = 0;
    struct wp_stage_shape prev = {0}, cur;
    for (int s = 0; s < S; s++) {
        const struct wp_plan_stage *ps = &p->stages[s];
        cur = (struct wp_stage_shape){ps->first_layer, ps->last_layer, ps->replicas, ps->nodes_spanned,
                                      ps->max_per_node, ps->only_node};
        struct wp_pipe_stage cost;
        struct wp_plan_stage detail;
        if (stage_costs(m, &cur, micro_batch, &cost, &detail))
            return -1;
        forward_s[s] = cost.forward_s;
        backward_s[s] = cost.backward_s;
        allreduce_s[s] = cost.allreduce_s;
        send_s[s] = 0;
        if (s > 0)
            send_s[s - 1] = boundary_s(m, &prev, &cur, micro_batch);
        long held = (long)k * inflight(policy, S, s, M);
        if (held > M)
            held = M;
        double bytes = detail.weights_bytes + (double)held * detail.activation_bytes;
        if (bytes > *peak_bytes)
            *peak_bytes = bytes;
        prev = cur;
    }
    return 0;
}
