/* The hybrid planner (plan.h): a GPT block's collectives and stored
 * activations on a tensor group against closed forms (Megatron-LM's 1D
 * split, Korthikanti et al.'s accounting), a stage's costs at a point of
 * the hybrid space by hand, recomputation only where memory needs it,
 * tensor groups when nothing else fits, one chain of stages simulated for
 * replicated ones, Megatron's interleaved order against its closed form,
 * and the plan file's tensor, pipeline, data-parallel and recomputation
 * keys read back (files without them as before). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/plan_search.h"
#include "plan/tp_block.h"
#include "sched/generate.h"
#include "sched/simulate.h"
#include "tap.h"

static const double GIB = 1024.0 * 1024 * 1024;

/* ---- tp_block's time and memory against closed forms ---- */

static void tp_block_tests(void)
{
    struct wp_link_cost link = {2e-6, 1 / 100e9};
    double N = 4096, C = 1024, eb = 2;
    /* Megatron's split (p2 = 1): two AllReduces of (N, C) forward, two backward */
    for (int t = 2; t <= 8; t *= 2) {
        double want = 4 * (2 * (t - 1) * link.alpha_s + 2.0 * (t - 1) / t * N * C * eb * link.beta_s_per_byte);
        is_near(wp_tp_block_comm_s(t, 1, N, (int)C, eb, &link, &link), want, 1e-12,
                "%d x 1: four AllReduces of N C elements", t);
    }
    is_near(wp_tp_block_comm_s(1, 1, N, (int)C, eb, &link, &link), 0, 1e-12, "1 x 1: no collective");
    /* the volume the runtime counts, priced call by call */
    struct wp_tp_block_volume v;
    wp_tp_block_volume(2, 2, N, (int)C, &v);
    double by_call = 0;
    for (int c = 0; c < WP_TP_CALL_COUNT; c++)
        by_call += v.calls[c] * (v.group[c] - 1) * (c == WP_TP_ALL_REDUCE ? 2 : 1) * link.alpha_s +
                   v.sent_elements[c] * eb * link.beta_s_per_byte;
    is_near(wp_tp_block_comm_s(2, 2, N, (int)C, eb, &link, &link), by_call, 1e-12,
            "2 x 2: every call of wp_tp_block_volume at the ring cost");
    /* Korthikanti et al.: 34 s b h + 5 a s^2 b bytes at 2-byte activations,
     * s b h (10 + 24 / t) + 5 a s^2 b / t with Megatron's split */
    double s = 2048, b = 3, h = 1024, a = 16, sbh = s * b * h, att = a * s * s * b;
    is_near(wp_tp_block_stored_bytes(1, 1, b, (int)s, (int)h, (int)a, 2), 34 * sbh + 5 * att, 1e-12,
            "stored activations: 34 sbh + 5 as^2b");
    is_near(wp_tp_block_stored_bytes(8, 1, b, (int)s, (int)h, (int)a, 2), sbh * (10 + 24 / 8.0) + 5 * att / 8, 1e-12,
            "8 x 1: sbh (10 + 24/t) + 5 as^2b / t");
    ok(wp_tp_block_stored_bytes(2, 2, b, (int)s, (int)h, (int)a, 2) < wp_tp_block_stored_bytes(2, 1, b, (int)s,
                                                                                               (int)h, (int)a, 2),
       "a second axis keeps less");
}

/* ---- the cost model at a point ---- */

/* A small GPT: 8 blocks of C 512, 8 heads, T 256, vocabulary 4096, profile
 * batch 1, 2-byte elements, 10 TFLOP/s. */
static int small_gpt(struct wp_layer_table *t)
{
    struct wp_gpt_shape g = {8, 512, 8, 256, 4096, 1, WP_PRECISION_BF16};
    struct wp_err err = {""};
    return wp_layer_table_gpt(t, &g, 10e12, &err);
}

static void stage_cost_tests(void)
{
    struct wp_layer_table t;
    struct wp_err err = {""};
    ok(small_gpt(&t) == 0, "small GPT table");
    ok(t.layers[1].block.channels == 512 && t.layers[1].block.heads == 8 && t.layers[0].block.channels == 0,
       "its blocks are marked, the embedding not");
    struct wp_plan_hw hw = {"one node", "test GPU", 1, 4, {1e-6, 1 / 200e9}, {5e-6, 1 / 25e9}, 64 * GIB, 0};
    struct wp_plan_model m;
    ok(wp_plan_model_init(&m, &t, &hw, 16, &err) == 0, "model");
    struct wp_plan_point pt = {{4, 1}, 2, 0};
    ok(wp_plan_model_set_point(&m, &pt, &err) == 0, "point 4 x 1, slices of 2 (%s)", err.msg);
    is_int(m.groups_per_node, 1, "one group of 4 per node");
    /* one stage of every layer on the one group: DP of one replica */
    int all = t.nlayers, one = 1;
    struct wp_plan p;
    wp_plan_init(&p);
    ok(wp_plan_fixed(&m, 1, &all, &one, &p, &err) == 0, "one stage on one group (%s)", err.msg);
    is_int(p.devices_used, 4, "4 GPUs");
    is_int(p.micro_batch, 2, "micro-batch 2 (the slice on the one replica)");
    /* forward: blocks / 4 + embedding and head whole, at slice 2 = 2 profile
     * batches, plus the blocks' collectives forward (half of both ways) */
    double blocks_f = 0, other_f = 0, comm = 0;
    for (int i = 0; i < t.nlayers; i++) {
        if (t.layers[i].block.channels)
            blocks_f += t.layers[i].forward_s, comm += 0.5 * wp_tp_block_comm_s(4, 1, 2 * 256, 512, 2, &hw.intra,
                                                                               &hw.intra);
        else
            other_f += t.layers[i].forward_s;
    }
    is_near(p.stages[0].forward_s, 2 * (blocks_f / 4 + other_f) + comm, 1e-9,
            "forward: blocks split 4 ways, embedding and head whole, the group's collectives");
    /* weights per GPU: block shards by wp_tp_block_param_floats, the rest whole */
    double w = 0;
    for (int i = 0; i < t.nlayers; i++) {
        const struct wp_layer *l = &t.layers[i];
        double shard = l->block.channels ? (double)wp_tp_block_param_floats(4, 1, 512) / wp_tp_block_param_floats(1, 1, 512)
                                         : 1;
        w += wp_layer_state_bytes(l) * shard; /* parameters, float32 gradients and master weights, moments */
    }
    is_near(p.stages[0].weights_bytes, w, 1e-12, "weights: the shards of wp_tp_block_param_floats");
    ok(p.model_flops > 0 && p.tensor.p1 == 4 && p.tensor.p2 == 1, "the plan carries its group and model FLOPs");
    wp_plan_destroy(&p);
    /* groups that cannot split the blocks */
    struct wp_plan_point bad = {{3, 1}, 1, 0};
    ok(wp_plan_model_set_point(&m, &bad, &err) == -1, "3 x 1: refused (%s)", err.msg);
    struct wp_plan_point bad2 = {{1, 2}, 1, 0};
    ok(wp_plan_model_set_point(&m, &bad2, &err) == -1, "1 x 2 with one sequence a slice: refused (%s)", err.msg);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

/* Recomputation only on the stages that need it; a tensor group when no
 * plan of single GPUs fits. */
static void memory_tests(void)
{
    struct wp_layer_table t;
    struct wp_err err = {""};
    small_gpt(&t);
    struct wp_plan_hw hw = {"one node", "test GPU", 1, 4, {1e-6, 1 / 200e9}, {5e-6, 1 / 25e9}, 64 * GIB, 0};
    struct wp_plan_model m;
    wp_plan_model_init(&m, &t, &hw, 16, &err);
    m.even_slices = 1;
    /* a straight pipeline of 4 single GPUs: stage 0 holds 4 micro-batches,
     * stage 3 one; a limit between their needs */
    int counts[4] = {3, 2, 2, 3}, reps[4] = {1, 1, 1, 1};
    struct wp_plan p;
    wp_plan_init(&p);
    wp_plan_fixed(&m, 4, counts, reps, &p, &err);
    double need0 = p.stages[0].memory_bytes, need3 = p.stages[3].memory_bytes, f0 = p.stages[0].forward_s,
           b0 = p.stages[0].backward_s;
    wp_plan_destroy(&p);
    ok(need0 > need3, "stage 0 needs more (%.1f MB) than stage 3 (%.1f MB)", need0 / 1e6, need3 / 1e6);
    m.hw.memory_bytes = 0.5 * (need0 + need3);
    m.recompute = WP_RECOMPUTE_WHERE_NEEDED;
    wp_plan_init(&p);
    wp_plan_fixed(&m, 4, counts, reps, &p, &err);
    ok(p.stages[0].recompute && !p.stages[3].recompute, "stage 0 recomputes, the last does not (limit %.0f MB)",
       m.hw.memory_bytes / 1e6);
    is_near(p.stages[0].backward_s, b0 + f0, 1e-12, "a recomputing stage's backward runs its forward again");
    ok(p.stages[0].memory_bytes < need0 && p.fits, "and then fits (%.1f MB)", p.stages[0].memory_bytes / 1e6);
    wp_plan_destroy(&p);
    wp_plan_model_destroy(&m);
    /* 180 MB per GPU, at Megatron's 18 bytes a 2-byte parameter (float32
     * gradients, master weights and moments): a single-GPU stage with the
     * embedding (40 MB) and a block (57 MB) already holds 4 micro-batches of
     * 7 MB of activations per block in flight; a group of 2 or 4 keeps the
     * blocks' shards, the embedding and head whole, and part of the
     * activations of a micro-batch. Single GPUs need 220 MB, groups 170 */
    wp_plan_model_init(&m, &t, &hw, 16, &err);
    m.even_slices = 1;
    m.hw.memory_bytes = 180e6;
    m.fixed_tensor = (struct wp_plan_tensor){1, 1};
    wp_plan_init(&p);
    ok(wp_plan_search(&m, &p, &err) == -1, "%.0f MB per GPU: no plan of single GPUs (%s)", m.hw.memory_bytes / 1e6,
       err.msg);
    wp_plan_destroy(&p);
    m.fixed_tensor = (struct wp_plan_tensor){0, 0};
    wp_plan_init(&p);
    int rc = wp_plan_search(&m, &p, &err);
    ok(rc == 0 && wp_plan_tensor_size(p.tensor) > 1 && p.fits, "the hybrid search finds one with groups of %d x %d (%s)",
       p.tensor.p1, p.tensor.p2, rc ? err.msg : "fits");
    ok(p.points > 1 && m.point.tensor.p1 == p.tensor.p1 && m.point.tensor.p2 == p.tensor.p2,
       "it searched %d points and leaves the model at the plan's", p.points);
    wp_plan_destroy(&p);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&t);
}

/* ---- simulation: one chain for replicated stages, interleaving ---- */

static void simulation_tests(void)
{
    struct wp_layer_table t;
    struct wp_err err = {""};
    small_gpt(&t);
    struct wp_plan_hw hw = {"two nodes", "test GPU", 2, 4, {1e-6, 1 / 200e9}, {5e-6, 1 / 25e9}, 64 * GIB, 0};
    struct wp_plan_model m;
    wp_plan_model_init(&m, &t, &hw, 32, &err);
    m.even_slices = 1;
    int counts[2] = {5, 5}, reps[2] = {4, 4};
    struct wp_plan p;
    wp_plan_init(&p);
    ok(wp_plan_fixed(&m, 2, counts, reps, &p, &err) == 0, "2 stages x 4 replicas (%s)", err.msg);
    double chain;
    ok(wp_plan_simulate(&m, &p, 1, 0, &chain, NULL, &err) == 0, "simulated as one chain (%s)", err.msg);
    is_int(wp_plan_sim_ranks(&p), 2, "on 2 ranks");
    /* the same plan with every replica a rank of its own */
    double f[2], b[2], send[2], ar[2], w[2] = {0, 0}, peak;
    wp_plan_costs_at(&m, &p, p.micro_batch, 1, p.policy, f, b, send, ar, &peak);
    struct wp_sched_params sp;
    wp_sched_params_default(&sp);
    sp.kind = WP_SCHED_1F1B;
    sp.ranks = 8;
    sp.microbatches = p.microbatches;
    sp.policy = p.policy;
    sp.nreplicas = 2;
    sp.replicas = reps;
    struct wp_schedule s;
    struct wp_sim_result res;
    memset(&s, 0, sizeof s);
    int rc = wp_schedule_generate(&sp, &s, &err);
    struct wp_cost_model cost;
    wp_cost_model_per_stage(&cost, f, b, w, send, ar);
    if (ok(rc == 0 && wp_simulate(&s, &cost, &res, &err) == 0, "and replica by replica (%s)", err.msg)) {
        is_near(chain, res.makespan, 1e-9, "the chain's makespan is the replicas' (%.4f s)", chain);
        wp_sim_result_destroy(&res);
    }
    wp_schedule_destroy(&s);
    wp_plan_destroy(&p);
    /* Megatron's interleaved 1F1B on equal chunks and free links:
     * M (F + B) + (P - 1)(F + B) / v */
    wp_plan_model_destroy(&m);
    struct wp_layer_table eq;
    wp_layer_table_init(&eq);
    eq.profile_batch = 1;
    for (int i = 0; i < 8; i++) {
        struct wp_layer l;
        memset(&l, 0, sizeof l);
        snprintf(l.name, sizeof l.name, "l%d", i);
        l.forward_s = 0.01;
        l.backward_s = 0.02;
        wp_layer_table_append(&eq, &l, &err);
    }
    struct wp_plan_hw free_links = {"free", "test GPU", 1, 2, {0, 0}, {0, 0}, 64 * GIB, 0};
    wp_plan_model_init(&m, &eq, &free_links, 8, &err);
    int two[2] = {4, 4}, ones[2] = {1, 1};
    struct wp_plan base, inter;
    wp_plan_init(&base);
    wp_plan_fixed(&m, 2, two, ones, &base, &err);
    ok(wp_plan_interleave(&m, &base, 2, NULL, &inter, &err) == 0 && inter.nstages == 4 && inter.chunks == 2,
       "2 stages interleaved as 2 chunks: 4 virtual stages (%s)", err.msg);
    ok(inter.stages[2].devices[0].gpu == inter.stages[0].devices[0].gpu && inter.devices_used == 2,
       "virtual stage 2 on stage 0's GPU, 2 GPUs in all");
    const char *builddir = getenv("WP_BUILDDIR");
    char path[1100];
    snprintf(path, sizeof path, "%s/tests/out/interleaved.plan.cfg", builddir ? builddir : ".");
    struct wp_plan back;
    if (ok(wp_plan_write(path, &inter, &eq, &err) == 0 && wp_plan_read(path, &back, &err) == 0,
           "the interleaved plan written and read back (%s)", err.msg)) {
        ok(back.chunks == 2 && back.nstages == 4 && back.devices_used == 2,
           "schedule interleaved, 2 chunks, 4 virtual stages on 2 GPUs");
        wp_plan_destroy(&back);
    }
    double t1, t2;
    wp_plan_simulate(&m, &base, 1, 0, &t1, NULL, &err);
    ok(wp_plan_simulate(&m, &inter, 1, 0, &t2, NULL, &err) == 0, "interleaved simulated (%s)", err.msg);
    is_near(t1, 8 * 0.12 + 1 * 0.12, 1e-9, "1F1B: (M + P - 1)(F + B)");
    is_near(t2, 8 * 0.12 + 1 * 0.12 / 2, 1e-9, "interleaved: M (F + B) + (P - 1)(F + B) / v");
    /* kFkB candidates of an interleaved plan: the largest micro-batch that
     * fits (8 sequences, M = 1) is no count Megatron's order runs on 2 ranks,
     * which once ended `wavepipe plan --chunks` with an error; every
     * candidate's M is a multiple of the ranks */
    int cand = wp_plan_kfkb_candidates(&m, &inter, &err);
    int multiples = cand == 0 && inter.nkfkb > 0;
    for (int i = 0; multiples && i < inter.nkfkb; i++)
        multiples = inter.kfkb[i].microbatches % 2 == 0;
    ok(multiples, "an interleaved plan's kFkB candidates skip micro-batch counts it cannot run (%d of them; %s)",
       inter.nkfkb, err.msg);
    wp_plan_destroy(&base);
    wp_plan_destroy(&inter);
    wp_plan_model_destroy(&m);
    wp_layer_table_destroy(&eq);
    wp_layer_table_destroy(&t);
}

/* ---- the plan file ---- */

static void plan_file_tests(const char *dir)
{
    char path[1100], old_path[1100], cmd[4400];
    struct wp_layer_table t;
    struct wp_err err = {""};
    small_gpt(&t);
    struct wp_plan_hw hw = {"two nodes", "test GPU", 2, 4, {1e-6, 1 / 200e9}, {5e-6, 1 / 25e9}, 64 * GIB, 0};
    struct wp_plan_model m;
    wp_plan_model_init(&m, &t, &hw, 16, &err);
    m.even_slices = 1;
    m.recompute = WP_RECOMPUTE_ALWAYS;
    struct wp_plan_point pt = {{2, 1}, 1, 0};
    wp_plan_model_set_point(&m, &pt, &err);
    int counts[2] = {5, 5}, reps[2] = {2, 2};
    struct wp_plan p, back;
    wp_plan_init(&p);
    wp_plan_fixed(&m, 2, counts, reps, &p, &err);
    snprintf(path, sizeof path, "%s/hybrid.plan.cfg", dir);
    ok(wp_plan_write(path, &p, &t, &err) == 0, "plan with groups of 2 x 1 written (%s)", err.msg);
    if (ok(wp_plan_read(path, &back, &err) == 0, "and read back (%s)", err.msg)) {
        ok(back.tensor.p1 == 2 && back.tensor.p2 == 1, "tensor = [2, 1]");
        is_int(back.devices_used, 8, "2 stages x 2 replicas x 2 GPUs");
        ok(back.stages[1].recompute && back.stages[0].recompute, "recompute on every stage");
        ok(back.stages[1].devices[1].node == p.stages[1].devices[1].node &&
               back.stages[1].devices[1].gpu == p.stages[1].devices[0].gpu + 1,
           "a group's lanes on consecutive GPUs of one node");
        wp_plan_destroy(&back);
    }
    /* a file from before: no tensor, pipeline_stages, data_parallel or recompute keys */
    snprintf(old_path, sizeof old_path, "%s/old.plan.cfg", dir);
    wp_plan_destroy(&p);
    m.recompute = WP_RECOMPUTE_NEVER;
    struct wp_plan_point none = {{1, 1}, 1, 0};
    wp_plan_model_set_point(&m, &none, &err);
    wp_plan_init(&p);
    wp_plan_fixed(&m, 2, counts, reps, &p, &err);
    wp_plan_write(path, &p, &t, &err);
    snprintf(cmd, sizeof cmd, "grep -v -e '^ *tensor = ' -e '^ *pipeline_stages = ' -e '^ *data_parallel = ' "
                              "-e '^ *recompute = ' '%s' > '%s'", path, old_path);
    ok(system(cmd) == 0, "the plan without its new keys");
    if (ok(wp_plan_read(old_path, &back, &err) == 0, "an old plan file reads (%s)", err.msg)) {
        ok(back.tensor.p1 == 1 && back.tensor.p2 == 1 && back.devices_used == 4 && !back.stages[0].recompute,
           "as groups of one GPU, no recomputation");
        wp_plan_destroy(&back);
    }
    /* a group's GPUs must be consecutive */
    wp_plan_destroy(&p);
    wp_plan_model_set_point(&m, &pt, &err);
    wp_plan_init(&p);
    wp_plan_fixed(&m, 2, counts, reps, &p, &err);
    wp_plan_write(path, &p, &t, &err);
    snprintf(cmd, sizeof cmd, "sed 's/devices = \"0:0 0:1/devices = \"0:1 0:0/' '%s' > '%s'", path, old_path);
    ok(system(cmd) == 0, "a plan with a group's GPUs out of order");
    ok(wp_plan_read(old_path, &back, &err) == -1, "is refused");
    has_substr(err.msg, "must be consecutive GPUs of one node", "and the error says why");
    wp_plan_destroy(&p);
    wp_plan_model_destroy(&m);
    /* the layer table keeps the blocks' shapes and FLOPs */
    struct wp_layer_table back_t;
    snprintf(path, sizeof path, "%s/hybrid.layers.cfg", dir);
    t.layers[0].vocab_parallel = 1;
    ok(wp_layer_table_write(path, &t, &err) == 0 && wp_layer_table_read_config(&back_t, path, &err) == 0,
       "layer table written and read back (%s)", err.msg);
    ok(back_t.layers[3].block.channels == 512 && back_t.layers[3].block.heads == 8 &&
           back_t.layers[3].block.seq_len == 256 && back_t.layers[3].block.element_bytes == 2 &&
           back_t.layers[3].forward_flops == t.layers[3].forward_flops && back_t.layers[0].block.channels == 0 &&
           back_t.layers[0].vocab_parallel && !back_t.layers[3].vocab_parallel,
       "blocks' shapes, FLOPs and the vocabulary-parallel embedding kept");
    wp_layer_table_destroy(&back_t);
    snprintf(cmd, sizeof cmd, "grep -v 'block_heads' '%s' > '%s'", path, old_path);
    ok(system(cmd) == 0 && wp_layer_table_read_config(&back_t, old_path, &err) == -1, "a block without its heads");
    has_substr(err.msg, "(3 of 4 given)", "is refused, saying what is missing");
    wp_layer_table_destroy(&t);
}

int main(void)
{
    const char *builddir = getenv("WP_BUILDDIR");
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/out", builddir ? builddir : ".");
    char cmd[1100];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    tp_block_tests();
    stage_cost_tests();
    memory_tests();
    simulation_tests();
    plan_file_tests(dir);
    return tap_done();
}
