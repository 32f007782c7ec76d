/* The planner's cost model: the hardware it plans for, stage times,
 * transfers, allreduce and memory, and DAPPLE's L of a whole plan (see
 * plan.h for the model). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/gpu_block.h"
#include "plan/megatron_memory.h"
#include "plan/plan.h"
#include "plan/tp_block.h"
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

/* Rows of the sparse table of per-layer activations: 2^k >= the layers. */
static int sparse_levels(int n)
{
    int k = 1;
    while ((1 << (k - 1)) < n)
        k++;
    return k;
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
    double **sums[] = {&m->cum_f,      &m->cum_b,   &m->cum_p,       &m->cum_kept,         &m->cum_sharded,
                       &m->cum_act,    &m->cum_act_sel, &m->cum_sel_s, &m->cum_in,           &m->cum_out,
                       &m->cum_tp_fixed, &m->cum_tp_per_sample, &m->cum_opt};
    int ok = 1;
    for (size_t i = 0; i < sizeof sums / sizeof sums[0]; i++)
        ok &= (*sums[i] = calloc((size_t)(n + 1), sizeof **sums[i])) != NULL;
    m->act_levels = sparse_levels(n);
    m->act_max = calloc((size_t)m->act_levels * (size_t)n, sizeof *m->act_max);
    m->scratch = calloc((size_t)(2 * n + 1), sizeof *m->scratch);
    if (!ok || !m->act_max || !m->scratch) {
        wp_plan_model_destroy(m);
        return wp_errorf(err, "out of memory");
    }
    if (layers->gpu[0] && !(m->gpu = wp_gpu_spec_find(layers->gpu))) {
        wp_plan_model_destroy(m);
        return wp_errorf(err, "the layer table '%s' is timed for a GPU with no model here: %s", layers->name,
                         layers->gpu);
    }
    const struct wp_gpu_spec *cluster_gpu = wp_gpu_spec_find(hw->gpu_model);
    if (m->gpu && cluster_gpu && cluster_gpu != m->gpu) {
        wp_plan_model_destroy(m);
        return wp_errorf(err, "the layer table '%s' is modelled for the %s, the cluster's GPUs are %s: make it for "
                              "them (wavepipe profile --analytic --gpu \"%s\")",
                         layers->name, layers->gpu, hw->gpu_model, hw->gpu_model);
    }
    struct wp_plan_point none = {{1, 1}, layers->profile_batch, 0};
    if (wp_plan_model_set_point(m, &none, err)) {
        wp_plan_model_destroy(m);
        return -1;
    }
    return 0;
}

/* One layer's costs at a point, per GPU (plan.h's sums, term by term). */
struct layer_at {
    double forward_s, backward_s, grad_bytes, kept_bytes, sharded_bytes, optimizer_s;
    double act, act_sel, sel_s, in, tp_fixed, tp_per_sample;
};

/* A block's compute at the point on the modelled GPU: forward, backward
 * and its attention core's forward as seconds of one profile batch (the
 * slice's times scaled to it: the stage costs scale them back), the
 * core's activations not kept when it is one FlashAttention kernel. */
static void block_on_gpu(const struct wp_plan_model *m, const struct wp_layer_block *b, const struct wp_plan_point *pt,
                         struct layer_at *c)
{
    int g = pt->tensor.p1 * pt->tensor.p2, pb = m->layers->profile_batch;
    struct wp_gpu_block blk = {(double)pt->slice * b->seq_len, b->seq_len, b->channels, b->heads, g,
                               pt->sequence_parallel && g > 1, m->layers->flash_attention, m->layers->precision};
    struct wp_gpu_layer_times x;
    if (wp_gpu_block_times(m->gpu, &blk, &x))
        return; /* no flash kernel: refused when the table was read */
    double to_profile = (double)pb / pt->slice;
    c->forward_s = (x.forward.matmul_s + x.forward.memory_s) * to_profile;
    c->backward_s = (x.backward.matmul_s + x.backward.memory_s) * to_profile;
    c->sel_s = x.core_forward_s * to_profile;
    if (m->layers->flash_attention) {
        c->act = c->act_sel; /* the kernel keeps no scores */
        c->sel_s = 0;
    }
}

static void layer_at_point(const struct wp_plan_model *m, int i, const struct wp_plan_point *pt, struct layer_at *c)
{
    const struct wp_layer_table *t = m->layers;
    const struct wp_layer *l = &t->layers[i];
    const struct wp_layer_block *b = &l->block;
    int p1 = pt->tensor.p1, p2 = pt->tensor.p2, g = p1 * p2, sp = pt->sequence_parallel && g > 1;
    /* a block's compute, parameters and activations are split over the
     * group; everything else runs whole on each of its GPUs */
    double split = 1, shard = 1;
    /* the group's collectives: NCCL's share of the links on a modelled GPU */
    struct wp_link_cost link = m->hw.intra;
    if (m->gpu)
        link.beta_s_per_byte /= m->gpu->link_efficiency;
    memset(c, 0, sizeof *c);
    c->act = c->act_sel = l->activation_bytes;
    /* what a whole recomputation keeps: the layer's input (none for the first: token ids) */
    c->in = i > 0 ? t->layers[i - 1].activation_bytes / (sp && b->channels > 0 ? g : 1) : 0;
    if (b->channels > 0) {
        split = g;
        shard = (double)wp_tp_block_param_floats(p1, p2, b->channels) / wp_tp_block_param_floats(1, 1, b->channels);
        /* sequence parallel: what the group keeps whole is split over it as well (megatron_memory.h) */
        c->act = sp ? wp_tp_block_stored_bytes(1, 1, t->profile_batch, b->seq_len, b->channels, b->heads,
                                               b->element_bytes) / g
                    : wp_tp_block_stored_bytes(p1, p2, t->profile_batch, b->seq_len, b->channels, b->heads,
                                               b->element_bytes);
        c->act_sel = c->act - wp_tp_block_core_bytes(p1, p2, t->profile_batch, b->seq_len, b->heads, b->element_bytes);
        /* the core's share of a block's forward FLOPs, 4 b s^2 h of 24 b s h^2 + 4 b s^2 h */
        c->sel_s = l->forward_s / split * b->seq_len / (6.0 * b->channels + b->seq_len);
        /* forward only: half of both directions' (tp_block.h); linear in
         * the rows, so its value at 0 and its slope per sample; sequence
         * parallelism moves the same bytes (AllGather + ReduceScatter) */
        c->tp_fixed = 0.5 * wp_tp_block_comm_s(p1, p2, 0, b->channels, b->element_bytes, &link, &link);
        c->tp_per_sample = 0.5 * wp_tp_block_comm_s(p1, p2, b->seq_len, b->channels, b->element_bytes, &link, &link) -
                           c->tp_fixed;
    } else if (l->vocab_parallel) {
        /* Megatron's vocabulary-parallel embedding or head: a shard of
         * the vocabulary each, one AllReduce of the residual stream (the
         * embedding's output forward, the head's input backward), half
         * of it booked to each direction */
        split = g;
        shard = 1.0 / g;
        double stream = (l->activation_bytes > 0 ? l->activation_bytes : i > 0 ? t->layers[i - 1].activation_bytes
                                                                               : 0) / t->profile_batch;
        c->tp_fixed = 0.5 * wp_collective_s(WP_COLL_ALLREDUCE, g, 0, &link);
        c->tp_per_sample = 0.5 * wp_collective_s(WP_COLL_ALLREDUCE, g, stream, &link) - c->tp_fixed;
    }
    c->forward_s = l->forward_s / split;
    c->backward_s = l->backward_s / split;
    if (b->channels > 0 && m->gpu)
        block_on_gpu(m, b, pt, c);
    c->optimizer_s = l->optimizer_s * shard;
    c->grad_bytes = wp_layer_gradient_bytes(l) * shard;
    c->kept_bytes = (l->parameter_bytes + wp_layer_gradient_bytes(l)) * shard;
    c->sharded_bytes = l->optimizer_bytes * shard;
}

/* 1 when two layers' costs are the same at every point (all but the name). */
static int layers_alike(const struct wp_layer *a, const struct wp_layer *b)
{
    return a->forward_s == b->forward_s && a->backward_s == b->backward_s && a->activation_bytes == b->activation_bytes &&
           a->parameter_bytes == b->parameter_bytes && a->gradient_bytes == b->gradient_bytes &&
           a->optimizer_bytes == b->optimizer_bytes && a->optimizer_s == b->optimizer_s &&
           a->vocab_parallel == b->vocab_parallel && a->block.channels == b->block.channels &&
           a->block.heads == b->block.heads && a->block.seq_len == b->block.seq_len &&
           a->block.element_bytes == b->block.element_bytes;
}

int wp_plan_model_set_point(struct wp_plan_model *m, const struct wp_plan_point *pt, struct wp_err *err)
{
    const struct wp_layer_table *t = m->layers;
    int p1 = pt->tensor.p1, p2 = pt->tensor.p2, g = p1 * p2, n = t->nlayers;
    if (p1 < 1 || p2 < 1 || pt->slice < 1)
        return wp_errorf(err, "a tensor group of %d x %d ranks and slices of %d samples", p1, p2, pt->slice);
    if (m->hw.gpus_per_node % g)
        return wp_errorf(err, "a tensor group of %d GPUs does not divide a node's %d", g, m->hw.gpus_per_node);
    if (pt->sequence_parallel && (p2 > 1 || p1 < 2))
        return wp_errorf(err, "sequence parallelism splits a tensor group of p1 x 1 ranks (Megatron-LM's), not %d x %d",
                         p1, p2);
    for (int i = 0; i < n && g > 1; i++) {
        const struct wp_layer_block *b = &t->layers[i].block;
        char why[160];
        if (b->channels == 0)
            continue;
        if (wp_tp_group_check(p1, p2, b->heads, b->channels, pt->slice, why, sizeof why))
            return wp_errorf(err, "layer %d (%s): %s", i, t->layers[i].name, why);
        if (pt->sequence_parallel && b->seq_len % p1)
            return wp_errorf(err, "layer %d (%s): sequence parallelism over %d ranks needs a sequence length that "
                                  "they divide, not %d", i, t->layers[i].name, p1, b->seq_len);
    }
    m->point = *pt;
    m->groups_per_node = m->hw.gpus_per_node / g;
    struct layer_at c;
    for (int i = 0; i < n; i++) {
        /* a layer like the one before (the blocks of a model) costs the same */
        if (!(i >= 2 && layers_alike(&t->layers[i], &t->layers[i - 1]) &&
              t->layers[i - 1].activation_bytes == t->layers[i - 2].activation_bytes))
            layer_at_point(m, i, pt, &c);
        m->cum_f[i + 1] = m->cum_f[i] + c.forward_s;
        m->cum_b[i + 1] = m->cum_b[i] + c.backward_s;
        m->cum_p[i + 1] = m->cum_p[i] + c.grad_bytes;
        m->cum_kept[i + 1] = m->cum_kept[i] + c.kept_bytes;
        m->cum_sharded[i + 1] = m->cum_sharded[i] + c.sharded_bytes;
        m->cum_act[i + 1] = m->cum_act[i] + c.act;
        m->cum_act_sel[i + 1] = m->cum_act_sel[i] + c.act_sel;
        m->cum_sel_s[i + 1] = m->cum_sel_s[i] + c.sel_s;
        m->cum_in[i + 1] = m->cum_in[i] + c.in;
        m->cum_out[i + 1] = m->cum_out[i] + t->layers[i].activation_bytes;
        m->cum_tp_fixed[i + 1] = m->cum_tp_fixed[i] + c.tp_fixed;
        m->cum_tp_per_sample[i + 1] = m->cum_tp_per_sample[i] + c.tp_per_sample;
        m->cum_opt[i + 1] = m->cum_opt[i] + c.optimizer_s;
        m->act_max[i] = c.act;
    }
    for (int k = 1; k < m->act_levels; k++) {
        const double *lo = &m->act_max[(size_t)(k - 1) * n];
        double *row = &m->act_max[(size_t)k * n];
        for (int i = 0; i + (1 << k) <= n; i++)
            row[i] = lo[i] > lo[i + (1 << (k - 1))] ? lo[i] : lo[i + (1 << (k - 1))];
    }
    return 0;
}

int wp_plan_model_times_scale(const struct wp_plan_model *m)
{
    if (m->gpu)
        return 1; /* modelled at every slice */
    /* every timed layer has FLOPs, all at one rate: times made from FLOPs
     * (measured times, a profile's, keep their own micro-batch) */
    double rate = 0;
    for (int i = 0; i < m->layers->nlayers; i++) {
        const struct wp_layer *l = &m->layers->layers[i];
        if (l->forward_flops <= 0) {
            if (l->forward_s > 0 || l->backward_s > 0)
                return 0;
            continue;
        }
        double r = l->forward_flops / l->forward_s;
        if (rate == 0)
            rate = r;
        else if (!(fabs(r - rate) <= 1e-6 * rate))
            return 0;
    }
    return rate > 0;
}

void wp_plan_model_destroy(struct wp_plan_model *m)
{
    free(m->cum_f);
    free(m->cum_b);
    free(m->cum_p);
    free(m->cum_kept);
    free(m->cum_sharded);
    free(m->cum_act);
    free(m->cum_act_sel);
    free(m->cum_sel_s);
    free(m->cum_in);
    free(m->cum_out);
    free(m->cum_tp_fixed);
    free(m->cum_tp_per_sample);
    free(m->cum_opt);
    free(m->act_max);
    free(m->scratch);
    memset(m, 0, sizeof *m);
}

/* Micro-batch size and count for a plan whose stages' replica counts have
 * largest max_replicas and least common multiple lcm: the point's slice on
 * each replica of the widest stage (plan.h); with even_slices moved to the
 * nearest size that wavepipe run executes -- a divisor of the global batch
 * that every stage's replicas split evenly (ties to the smaller: more
 * micro-batches). Returns -1 when no size is both. */
static int micro_batches(const struct wp_plan_model *m, int max_replicas, long lcm, int *micro_batch,
                         int *microbatches)
{
    long G = m->global_batch, b = (long)m->point.slice * max_replicas;
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

/* The largest one layer's activations among layers first..last. */
static double range_max(const struct wp_plan_model *m, int first, int last)
{
    int n = m->layers->nlayers, len = last - first + 1, k = 0;
    while ((2 << k) <= len)
        k++;
    const double *row = &m->act_max[(size_t)k * n];
    double a = row[first], b = row[last + 1 - (1 << k)];
    return a > b ? a : b;
}

/* What a stage recomputes before its backward, as m->recompute says:
 * NEVER nothing; ALWAYS its whole forward; SELECTIVE its blocks' attention
 * core; WHERE_NEEDED nothing when its activations fit in limit_bytes, else
 * the attention core when that fits, else whatever keeps least. The
 * memory of each (plain, selective, whole) is given; selective equals
 * plain when the stage has no block to spare it. */
static enum wp_recompute_granularity choose_recompute(enum wp_recompute policy, double plain, double selective,
                                                      double whole, double limit_bytes)
{
    int spares = selective < plain;
    switch (policy) {
    case WP_RECOMPUTE_ALWAYS: return WP_GRANULARITY_FULL;
    case WP_RECOMPUTE_SELECTIVE: return spares ? WP_GRANULARITY_SELECTIVE : WP_GRANULARITY_NONE;
    case WP_RECOMPUTE_WHERE_NEEDED:
        if (plain <= limit_bytes)
            return WP_GRANULARITY_NONE;
        if (spares && selective <= limit_bytes)
            return WP_GRANULARITY_SELECTIVE;
        if (whole < (spares ? selective : plain))
            return WP_GRANULARITY_FULL;
        return spares ? WP_GRANULARITY_SELECTIVE : WP_GRANULARITY_NONE;
    default: return WP_GRANULARITY_NONE;
    }
}

/* One stage at micro_batch, `held` micro-batches in flight, limit_bytes of
 * memory for it: its costs into ps (a recomputing stage's backward with
 * what it computes again) and, when out is not NULL, every derived field
 * of it. Returns 0, or -1 when a replica would get no sample or a slice
 * that the group cannot split. */
static int stage_costs(const struct wp_plan_model *m, const struct wp_stage_shape *st, int micro_batch, int held,
                       double limit_bytes, struct wp_pipe_stage *ps, struct wp_plan_stage *out)
{
    if (st->replicas > micro_batch)
        return -1;
    int slice = (micro_batch + st->replicas - 1) / st->replicas;
    if (slice % m->point.tensor.p2)
        return -1; /* axis 2 splits a slice's sequences (tp_block.h) */
    int a = st->first_layer, z = st->last_layer;
    double scale = (double)slice / m->layers->profile_batch;
    double tp = range(m->cum_tp_fixed, a, z) + slice * range(m->cum_tp_per_sample, a, z);
    double forward = range(m->cum_f, a, z) * scale + tp, backward = range(m->cum_b, a, z) * scale + tp;
    /* parameters and gradients on every replica; the optimizer state on
     * every one, or a 1/replicas shard of it (the distributed optimizer) */
    double weights = range(m->cum_kept, a, z) +
                     range(m->cum_sharded, a, z) / (m->distributed_optimizer ? st->replicas : 1);
    double activations = range(m->cum_act, a, z) * scale;
    /* recomputing whole: each layer's input per micro-batch in flight and
     * one layer's activations at a time; the attention core alone: the
     * rest of the activations */
    double plain = weights + held * activations, selective = weights + held * range(m->cum_act_sel, a, z) * scale;
    double again = weights + held * range(m->cum_in, a, z) * scale + range_max(m, a, z) * scale;
    enum wp_recompute_granularity g = choose_recompute(m->recompute, plain, selective, again, limit_bytes);
    ps->forward_s = forward;
    ps->backward_s = backward + (g == WP_GRANULARITY_FULL        ? forward
                                 : g == WP_GRANULARITY_SELECTIVE ? range(m->cum_sel_s, a, z) * scale
                                                               : 0);
    struct wp_hier_allreduce ar = {st->nodes_spanned, st->max_per_node, wp_plan_tensor_size(m->point.tensor),
                                   m->hw.intra, m->hw.inter};
    double grad_bytes = range(m->cum_p, a, z);
    ps->allreduce_s = wp_hier_allreduce_s(&ar, grad_bytes);
    if (m->grad_overlap && st->replicas > 1) { /* only what the last backward cannot hide */
        struct wp_grad_layers layers = {z - a + 1, m->cum_b + a, m->cum_p + a};
        struct wp_bucket_cost cost = {wp_hier_allreduce_s, &ar, NULL, NULL};
        struct wp_grad_overlap o;
        wp_grad_overlap_time(ps->backward_s, grad_bytes, &layers, m->grad_bucket_bytes, &cost, &o);
        ps->allreduce_s = o.exposed_s;
    }
    /* the optimizer step follows: the distributed optimizer's replicas each step their shard */
    double optimizer_s = range(m->cum_opt, a, z) / (m->distributed_optimizer ? st->replicas : 1);
    ps->allreduce_s += optimizer_s;
    if (out) {
        out->slice = slice;
        out->forward_s = ps->forward_s;
        out->backward_s = ps->backward_s;
        out->allreduce_s = ps->allreduce_s - optimizer_s;
        out->optimizer_s = optimizer_s;
        out->weights_bytes = weights;
        out->activation_bytes = g == WP_GRANULARITY_SELECTIVE ? range(m->cum_act_sel, a, z) * scale : activations;
        out->inflight = held;
        out->recompute = g == WP_GRANULARITY_FULL;
        out->selective = g == WP_GRANULARITY_SELECTIVE;
        out->memory_bytes = g == WP_GRANULARITY_FULL ? again : g == WP_GRANULARITY_SELECTIVE ? selective : plain;
    }
    return 0;
}

/* One way, one micro-batch, across the boundary after stage a into b. */
static double boundary_s(const struct wp_plan_model *m, const struct wp_stage_shape *a,
                         const struct wp_stage_shape *b, int micro_batch)
{
    double bytes = m->layers->layers[a->last_layer].activation_bytes * micro_batch / m->layers->profile_batch;
    int t = wp_plan_tensor_size(m->point.tensor);
    /* each GPU of a group sends 1/t of the slice, the receiving group
     * gathers it (Megatron's scatter/gather) */
    double gather = wp_collective_s(WP_COLL_ALLGATHER, t, bytes / b->replicas, &m->hw.intra);
    if (a->only_node >= 0 && a->only_node == b->only_node) {
        int links = a->replicas < b->replicas ? a->replicas : b->replicas;
        return m->hw.intra.alpha_s + bytes / ((double)links * t) * m->hw.intra.beta_s_per_byte + gather;
    }
    int links = a->nodes_spanned < b->nodes_spanned ? a->nodes_spanned : b->nodes_spanned;
    return m->hw.inter.alpha_s + bytes / links * m->hw.inter.beta_s_per_byte + gather;
}

/* Micro-batches stage s of nstages holds at most, in groups of k (kFkB; 1
 * for 1F1B): policy A S - s, B 2(S - s) - 1. With chunks v > 1 (nstages =
 * v P virtual stages, stage s on rank s mod P): Megatron-LM's interleaved
 * warm-up leaves 2(P - r - 1) + (v - 1) P + 1 chunk passes in flight on
 * rank r, shared by its v chunks. At most M. */
static int held_at(char policy, int nstages, int chunks, int s, int M, int k)
{
    long h;
    if (chunks > 1) {
        int P = nstages / chunks, r = s % P;
        long passes = 2L * (P - r - 1) + (long)(chunks - 1) * P + 1;
        h = ((long)k * passes + chunks - 1) / chunks;
    } else {
        h = (long)k * (policy == 'B' ? 2 * (nstages - s) - 1 : nstages - s);
    }
    return h < M ? (int)h : M;
}

/* DAPPLE's L of an interleaved plan, only to rank it (the simulator times
 * it): L of its ranks with their chunks' costs added up, the warm-up passing
 * a rank in a v-th of the time. */
static void interleaved_latency(const struct wp_pipe_stage *ps, int nstages, int chunks, int M,
                                struct wp_pipe_latency *lat)
{
    int P = nstages / chunks;
    struct wp_pipe_stage *merged = calloc((size_t)(2 * P), sizeof *merged);
    if (!merged) {
        *lat = (struct wp_pipe_latency){0, 0, 0, 0, INFINITY};
        return;
    }
    for (int s = 0; s < nstages; s++) {
        struct wp_pipe_stage *r = &merged[2 * (s % P)];
        r->forward_s += ps[2 * s].forward_s;
        r->backward_s += ps[2 * s].backward_s;
        r->allreduce_s += ps[2 * s].allreduce_s;
        if (s < P - 1)
            merged[2 * s + 1] = ps[2 * s + 1];
    }
    *lat = wp_dapple_latency(merged, 2 * P - 1, M);
    lat->warmup_s /= chunks;
    lat->total_s = lat->warmup_s + lat->steady_s + lat->ending_s;
    free(merged);
}

/* The core shared by the search and the full evaluation: L, and per-stage
 * details into out (may be NULL); *fits under the given policy. With
 * chunks > 1 the stages are an interleaved plan's virtual stages (plan.h):
 * memory and fit are per rank, its chunks together. */
static double plan_cost(const struct wp_plan_model *m, const struct wp_stage_shape *st, int nstages, int chunks,
                        char policy, struct wp_plan_stage *out, struct wp_pipe_latency *lat, int *fits, double *peak,
                        int *micro_batch, int *microbatches)
{
    if (chunks < 1)
        chunks = 1;
    int P = nstages / chunks;
    double *rank_bytes = chunks > 1 ? calloc((size_t)P, sizeof *rank_bytes) : NULL;
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
        /* a chunk of an interleaved rank decides on recomputation against
         * its share of the GPU's memory */
        if (!runnable || (chunks > 1 && !rank_bytes) ||
            stage_costs(m, &st[s], B, held_at(policy, nstages, chunks, s, M, 1), m->hw.memory_bytes / chunks,
                        &ps[2 * s], &detail)) {
            *fits = 0;
            *peak = INFINITY;
            *lat = (struct wp_pipe_latency){0};
            lat->total_s = INFINITY;
            free(rank_bytes);
            return INFINITY;
        }
        double bytes = detail.memory_bytes;
        if (rank_bytes)
            bytes = rank_bytes[s % P] += detail.memory_bytes;
        if (bytes > m->hw.memory_bytes)
            *fits = 0;
        if (bytes > *peak)
            *peak = bytes;
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
            o->recompute = detail.recompute;
            o->selective = detail.selective;
            o->memory_bytes = detail.memory_bytes;
        }
    }
    if (chunks > 1)
        interleaved_latency(ps, nstages, chunks, M, lat);
    else
        *lat = wp_dapple_latency(ps, 2 * nstages - 1, M);
    free(rank_bytes);
    return lat->total_s;
}

double wp_plan_latency(const struct wp_plan_model *m, const struct wp_stage_shape *st, int nstages,
                       struct wp_pipe_latency *lat, int *fits, double *peak_bytes)
{
    return plan_cost(m, st, nstages, 1, 'A', NULL, lat, fits, peak_bytes, NULL, NULL);
}

/* The table's FLOPs of one iteration (forward + backward = 3 x forward),
 * 0 when it does not give them. */
static double model_flops(const struct wp_plan_model *m)
{
    if (!wp_plan_model_times_scale(m))
        return 0;
    double f = 0;
    for (int i = 0; i < m->layers->nlayers; i++)
        f += m->layers->layers[i].forward_flops;
    return 3.0 * f * m->global_batch / m->layers->profile_batch;
}

void wp_plan_evaluate(const struct wp_plan_model *m, struct wp_plan *p)
{
    int S = p->nstages, t = wp_plan_tensor_size(m->point.tensor), v = p->chunks > 1 ? p->chunks : 1;
    struct wp_stage_shape *shapes = calloc((size_t)S, sizeof *shapes);
    if (!shapes)
        return;
    wp_strlcpy(p->model, m->layers->name, sizeof p->model);
    p->nlayers = m->layers->nlayers;
    p->profile_batch = m->layers->profile_batch;
    p->global_batch = m->global_batch;
    p->hw = m->hw;
    p->tensor = m->point.tensor;
    p->sequence_parallel = m->point.sequence_parallel;
    p->distributed_optimizer = m->distributed_optimizer;
    p->model_flops = model_flops(m);
    p->devices_used = 0;
    for (int s = 0; s < S; s++) {
        struct wp_plan_stage *ps = &p->stages[s];
        wp_stage_shape_of_groups(ps->devices, ps->replicas, t, &shapes[s]);
        shapes[s].first_layer = ps->first_layer;
        shapes[s].last_layer = ps->last_layer;
        ps->nodes_spanned = shapes[s].nodes_spanned;
        ps->max_per_node = shapes[s].max_per_node;
        ps->only_node = shapes[s].only_node;
        if (s < S / v) /* an interleaved plan's later chunks run on the same GPUs */
            p->devices_used += ps->replicas * t;
    }
    double peak, peak_b;
    plan_cost(m, shapes, S, v, 'A', p->stages, &p->latency, &p->fits, &peak, &p->micro_batch, &p->microbatches);
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
    if (p->acr >= WP_POLICY_B_ACR && v == 1) {
        struct wp_pipe_latency lat;
        int fits_b;
        struct wp_plan_stage *tmp = calloc((size_t)S, sizeof *tmp);
        if (tmp) {
            plan_cost(m, shapes, S, 1, 'B', tmp, &lat, &fits_b, &peak_b, NULL, NULL);
            /* B's deeper warm-up only where it costs no recomputation */
            for (int s = 0; s < S && fits_b; s++)
                fits_b = tmp[s].recompute == p->stages[s].recompute && tmp[s].selective == p->stages[s].selective;
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
    p->peak_memory_bytes = peak; /* a rank's chunks together */
    for (int s = 0; s < S && v == 1; s++) /* policy B's, when taken */
        if (s == 0 || p->stages[s].memory_bytes > p->peak_memory_bytes)
            p->peak_memory_bytes = p->stages[s].memory_bytes;
    p->predicted_iter_s = p->latency.total_s;
    p->simulated_iter_s = -1;
    free(shapes);
}

int wp_plan_costs_at(const struct wp_plan_model *m, const struct wp_plan *p, int micro_batch, int k, char policy,
                     double *forward_s, double *backward_s, double *send_s, double *allreduce_s,
                     double *peak_bytes)
{
    int S = p->nstages, M = (m->global_batch + micro_batch - 1) / micro_batch, v = p->chunks > 1 ? p->chunks : 1;
    *peak_bytes = 0;
    double *rank_bytes = calloc((size_t)S, sizeof *rank_bytes);
    if (!rank_bytes)
        return -1;
    struct wp_stage_shape prev = {0}, cur;
    for (int s = 0; s < S; s++) {
        const struct wp_plan_stage *ps = &p->stages[s];
        cur = (struct wp_stage_shape){ps->first_layer, ps->last_layer, ps->replicas, ps->nodes_spanned,
                                      ps->max_per_node, ps->only_node};
        struct wp_pipe_stage cost;
        struct wp_plan_stage detail;
        if (stage_costs(m, &cur, micro_batch, held_at(policy, S, v, s, M, k), m->hw.memory_bytes / v, &cost,
                        &detail)) {
            free(rank_bytes);
            return -1;
        }
        forward_s[s] = cost.forward_s;
        backward_s[s] = cost.backward_s;
        allreduce_s[s] = cost.allreduce_s;
        send_s[s] = 0;
        if (s > 0)
            send_s[s - 1] = boundary_s(m, &prev, &cur, micro_batch);
        rank_bytes[s % (S / v)] += detail.memory_bytes;
        if (rank_bytes[s % (S / v)] > *peak_bytes)
            *peak_bytes = rank_bytes[s % (S / v)];
        prev = cur;
    }
    free(rank_bytes);
    return 0;
}
