/* Gradient buckets overlapped with the backward: the timing the simulator
 * and the planner share (grad_overlap.h) worked out by hand for a sum fully
 * hidden, partly hidden and not hidden by the pass, the simulator's
 * iteration for the same cases, the runtime reducer's buckets (grad_reduce.h)
 * over a recording comm table, and the stages' hooks: the emulated and the
 * GPT-2 stage tell every gradient float exactly once, last layer first,
 * and only in an armed pass. */
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "plan/layer_stages.h"
#include "run/model/gpt2_stage.h"
#include "run/core/grad_reduce.h"
#include "run/model/stage_emulated.h"
#include "sched/generate.h"
#include "sched/grad_overlap.h"
#include "sched/simulate.h"
#include "tap.h"

/* ---- the timing ------------------------------------------------------------------- */

/* A bucket's sum takes as many seconds as it has bytes. */
static double linear_s(const void *ctx, double bytes)
{
    (void)ctx;
    return bytes;
}

/* Four layers of the pass, 0.5 s each of a 2 s pass; the first layer (its
 * gradient final last) has none, the others 0.375 or 0.75 bytes each
 * (exact in binary: the cap is reached exactly). */
static const double four_pass[] = {0, 1, 2, 3, 4};
static const double small[] = {0, 0, 0.375, 0.75, 1.125}, big[] = {0, 0, 0.75, 1.5, 2.25};

static void test_timing(void)
{
    struct wp_bucket_cost cost = {linear_s, NULL, NULL, NULL};
    struct wp_grad_overlap o;
    /* buckets of one layer each, 0.375 s a sum: ready at 0.5, 1.0, 1.5 s
     * (from the pass's start), each done before the next is ready */
    struct wp_grad_layers l = {4, four_pass, small};
    wp_grad_overlap_time(2, 1.125, &l, 0.375, &cost, &o);
    is_int(o.nbuckets, 3, "fully hidden: a bucket per layer that has a gradient");
    is_near(o.first_start_s, 0.5, 1e-12, "the first starts when the last layer's part of the pass ends");
    is_near(o.end_s, 1.875, 1e-12, "the last ends at 1.5 + 0.375 s, before the pass's 2 s");
    is_near(o.exposed_s, 0, 1e-12, "nothing exposed");
    /* 0.75 s a sum: each waits for the one before: [0.5, 1.25] [1.25, 2] [2, 2.75] */
    l.cum_bytes = big;
    wp_grad_overlap_time(2, 2.25, &l, 0.75, &cost, &o);
    is_near(o.end_s, 2.75, 1e-12, "partly hidden: buckets queue behind each other and end at 2.75 s");
    is_near(o.exposed_s, 0.75, 1e-12, "0.75 s past the pass, against 2.25 s without overlap");
    /* a cap no layer reaches: one bucket at the pass's end, all exposed */
    l.cum_bytes = small;
    wp_grad_overlap_time(2, 1.125, &l, 10, &cost, &o);
    is_int(o.nbuckets, 1, "not hidden: one bucket when the cap is never reached");
    is_near(o.first_start_s, 2, 1e-12, "started at the pass's end");
    is_near(o.exposed_s, 1.125, 1e-12, "the whole sum exposed, as without overlap");
    /* two layers reaching the cap together make one bucket (DDP's rule) */
    wp_grad_overlap_time(2, 1.125, &l, 0.7, &cost, &o);
    is_int(o.nbuckets, 2, "cap 0.7: layers 3 and 2 together, then layer 1 at the end");
    is_near(o.end_s, 2.375, 1e-12, "the pair ready at 1 s, done at 1.75 s; layer 1's ready at 2 s: ends 2.375 s");
    is_near(o.exposed_s, 0.375, 1e-12, "layer 1's 0.375 s exposed");
    /* layers not known: the bytes become final evenly; 1.125 in buckets of
     * 0.375 ready at 2/3, 4/3 and 2 s: the last one exposed */
    wp_grad_overlap_time(2, 1.125, NULL, 0.375, &cost, &o);
    is_int(o.nbuckets, 3, "an even split: 3 buckets of the cap");
    is_near(o.first_start_s, 2.0 / 3, 1e-12, "the first at a third of the pass");
    is_near(o.exposed_s, 0.375, 1e-9, "the last bucket, ready at the pass's end, exposed");
    wp_grad_overlap_time(0, 1.125, NULL, 0.375, &cost, &o);
    is_near(o.exposed_s, 1.125, 1e-9, "a pass of 0 s hides nothing");
    /* the hierarchical allreduce as a bucket's cost */
    struct wp_hier_allreduce h = {2, 8, 1, {1e-6, 1 / 25e9}, {25e-6, 1 / 3.125e9}};
    is_near(wp_hier_allreduce_s(&h, 16e6), wp_allreduce_hier_s(2, 8, 16e6, &h.intra, &h.inter), 1e-15,
            "a bucket on 2 nodes x 8 costs collective_cost's hierarchical allreduce");
}

/* ---- the simulator ---------------------------------------------------------------- */

/* 1F1B on 2 ranks holding one stage (data parallelism), one micro-batch:
 * F 1 s, B 2 s, then the allreduce (1 s per byte of the whole: the
 * planner's seconds scaled by the bytes of a bucket). */
static double simulated(const double *cum_bytes, double total_bytes, int overlap, double cap, int cores)
{
    int reps[1] = {2};
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = WP_SCHED_1F1B;
    p.ranks = 2;
    p.microbatches = 1;
    p.replicas = reps;
    p.nreplicas = 1;
    struct wp_schedule s;
    struct wp_err err = {""};
    if (wp_schedule_generate(&p, &s, &err)) {
        ok(0, "the schedule: %s", err.msg);
        return -1;
    }
    double f[1] = {1}, b[1] = {2}, w[1] = {0}, boundary[1] = {0}, ar[1] = {total_bytes}, bytes[1] = {total_bytes};
    struct wp_grad_layers layers = {4, four_pass, cum_bytes};
    struct wp_cost_model c;
    wp_cost_model_per_stage(&c, f, b, w, boundary, ar);
    c.stage_gradient_bytes = bytes;
    c.stage_grad_layers = &layers;
    c.grad_overlap = overlap;
    c.grad_bucket_bytes = cap;
    c.cores = cores;
    struct wp_sim_result res;
    double makespan = -1;
    if (wp_simulate(&s, &c, &res, &err) == 0) {
        makespan = res.makespan;
        wp_sim_result_destroy(&res);
    } else {
        ok(0, "simulating: %s", err.msg);
    }
    wp_schedule_destroy(&s);
    return makespan;
}

static void test_simulator(void)
{
    is_near(simulated(small, 1.125, 0, 0.375, 0), 3 + 1.125, 1e-12, "off: F 1 s + B 2 s + the 1.125 s sum");
    is_near(simulated(small, 1.125, 1, 0.375, 0), 3, 1e-12, "on, fully hidden: the iteration is F + B alone");
    is_near(simulated(big, 2.25, 0, 0.75, 0), 3 + 2.25, 1e-12, "off, the 2.25 s sum: 5.25 s");
    is_near(simulated(big, 2.25, 1, 0.75, 0), 3 + 0.75, 1e-12, "on, partly hidden: 0.75 s past B (3.75 s)");
    is_near(simulated(small, 1.125, 1, 10, 0), 3 + 1.125, 1e-12, "on, one bucket: nothing hidden (4.125 s)");
    /* both ranks on one core: F 2 s, B 4 s; the buckets follow the pass as it ran */
    is_near(simulated(big, 2.25, 0, 0.75, 1), 6 + 2.25, 1e-12, "one shared core, off: 6 s + the 2.25 s sum");
    is_near(simulated(big, 2.25, 1, 0.75, 1), 6, 1e-12,
            "one shared core, on: buckets ready at 3, 4, 5 s end at 5.75 s, hidden by the 4 s B");
}

/* ---- the reducer over a recording comm table -------------------------------------- */

static struct {
    float *base;
    size_t first[64], count[64];
    int ncalls, channel, opened, in_flight;
} rec;

static int rec_open(struct wp_comm *c, const int *ranks, int n, int channel)
{
    (void)c;
    (void)ranks;
    (void)n;
    rec.opened = channel;
    return 0;
}

static int rec_isum(struct wp_comm *c, float *buf, size_t count, const int *ranks, int n, int channel,
                    struct wp_comm_request *r)
{
    (void)c;
    (void)ranks;
    (void)n;
    if (rec.ncalls < 64) {
        rec.first[rec.ncalls] = (size_t)(buf - rec.base);
        rec.count[rec.ncalls] = count;
    }
    rec.ncalls++;
    rec.channel = channel;
    rec.in_flight++;
    r->impl = &rec;
    return 0;
}

static int rec_test(struct wp_comm *c, struct wp_comm_request *r)
{
    (void)c;
    if (r->impl) {
        r->impl = NULL;
        rec.in_flight--;
    }
    return 1;
}

static const struct wp_comm_ops rec_ops = {.name = "recording", .test = rec_test, .open_channel = rec_open,
                                           .iallreduce_sum = rec_isum};

static int bucket_is(int i, size_t first, size_t count)
{
    return i < rec.ncalls && rec.first[i] == first && rec.count[i] == count;
}

static void test_reducer(void)
{
    float grads[100] = {0};
    struct wp_stage_exec exec = {.grads = grads, .grad_floats = 100};
    int ranks[2] = {3, 5};
    struct wp_grad_reducer r;
    struct wp_err err = {""};
    memset(&rec, 0, sizeof rec);
    rec.base = grads;
    rec.opened = -1;
    ok(wp_grad_reducer_init(&r, &rec_ops, NULL, NULL, NULL, &exec, ranks, 2, 7, &err) == 0, "init (%s)", err.msg);
    is_int(rec.opened, 7, "init opens the stage's channel");
    wp_grad_reducer_set(&r, 1, 10 * sizeof(float)); /* buckets of 10 floats */
    r.hook.added(r.hook.ctx, 40, 5);
    is_int(rec.ncalls, 0, "a layer told outside the final pass starts nothing");
    wp_grad_reducer_pass_begin(&r);
    ok(r.hook.armed, "the final pass arms the hook");
    r.hook.added(r.hook.ctx, 90, 10);
    ok(bucket_is(0, 90, 10), "a layer of the cap is a bucket at once");
    r.hook.added(r.hook.ctx, 85, 5);
    r.hook.added(r.hook.ctx, 80, 5);
    ok(rec.ncalls == 2 && bucket_is(1, 80, 10), "two adjacent layers below fill the next bucket");
    r.hook.added(r.hook.ctx, 0, 4);
    is_int(rec.ncalls, 2, "a layer under the cap waits");
    r.hook.added(r.hook.ctx, 70, 4);
    ok(rec.ncalls == 3 && bucket_is(2, 0, 4), "a layer not adjacent sends the open bucket as it is");
    wp_grad_reducer_pass_end(&r);
    ok(rec.ncalls == 4 && bucket_is(3, 70, 4), "the pass's end starts the open bucket");
    ok(!r.hook.armed, "and disarms the hook");
    is_int(rec.in_flight, 4, "4 buckets in flight while the rank goes on");
    is_int(wp_grad_reducer_poll(&r), 0, "a poll sees them done");
    ok(wp_grad_reducer_finish(&r, &err) == 0, "the ALLREDUCE finishes (%s)", err.msg);
    ok(rec.ncalls == 6 && bucket_is(4, 4, 66) && bucket_is(5, 74, 6),
       "then sums the floats never told, in ascending order: [4, 70) and [74, 80)");
    is_int(rec.channel, 7, "on the stage's channel");
    is_int(rec.in_flight, 0, "nothing in flight after it");
    /* off: the same path, one bucket of everything at the ALLREDUCE */
    rec.ncalls = 0;
    wp_grad_reducer_set(&r, 0, 10 * sizeof(float));
    wp_grad_reducer_pass_begin(&r);
    r.hook.added(r.hook.ctx, 90, 10);
    wp_grad_reducer_pass_end(&r);
    is_int(rec.ncalls, 0, "off: nothing starts during the pass");
    wp_grad_reducer_finish(&r, &err);
    ok(rec.ncalls == 1 && bucket_is(0, 0, 100), "off: the ALLREDUCE sums all 100 floats at once");
    wp_grad_reducer_destroy(&r);
    /* a stage on one rank sums nothing */
    rec.ncalls = 0;
    wp_grad_reducer_init(&r, &rec_ops, NULL, NULL, NULL, &exec, ranks, 1, 0, &err);
    wp_grad_reducer_pass_begin(&r);
    r.hook.added(r.hook.ctx, 90, 10);
    ok(wp_grad_reducer_finish(&r, &err) == 0 && rec.ncalls == 0, "one holder: no sum at all");
    wp_grad_reducer_destroy(&r);
}

/* ---- the stages' hooks ------------------------------------------------------------- */

static struct {
    int *told;   /* per float: how often told */
    size_t n;
    size_t order[64]; /* first float of each range told */
    int nranges, outside;
} seen;

static void record_told(void *ctx, size_t first, size_t count)
{
    (void)ctx;
    if (seen.nranges < 64)
        seen.order[seen.nranges] = first;
    seen.nranges++;
    for (size_t i = first; i < first + count; i++) {
        if (i < seen.n)
            seen.told[i]++;
        else
            seen.outside++;
    }
}

static void seen_reset(size_t n)
{
    free(seen.told);
    memset(&seen, 0, sizeof seen);
    seen.told = calloc(n, sizeof *seen.told);
    seen.n = n;
}

static int each_once(void)
{
    for (size_t i = 0; i < seen.n; i++)
        if (seen.told[i] != 1)
            return 0;
    return seen.outside == 0;
}

static void test_emulated_hook(void)
{
    struct wp_layer_table t;
    wp_layer_table_init(&t);
    t.profile_batch = 1;
    for (int i = 0; i < 3; i++) {
        struct wp_layer l;
        memset(&l, 0, sizeof l);
        snprintf(l.name, sizeof l.name, "l%d", i);
        l.forward_s = 1e-4;
        l.backward_s = 2e-4;
        l.activation_bytes = 64;
        l.parameter_bytes = 400.0 * (i + 1); /* 100, 200, 300 floats */
        struct wp_err err;
        wp_layer_table_append(&t, &l, &err);
    }
    int first[1] = {0}, last[1] = {2};
    struct wp_stage_emulated_ctx ctx = {&t, first, last, NULL, 1e-4};
    struct wp_grad_hook hook = {record_told, NULL, 0};
    struct wp_stage_request rq = {0, 1, 1, 1, 0, 1, NULL, &hook};
    struct wp_stage_exec e;
    struct wp_err err = {""};
    if (wp_stage_emulated_make(&ctx, &rq, &e, &err)) {
        ok(0, "emulated stage: %s", err.msg);
        wp_layer_table_destroy(&t);
        return;
    }
    seen_reset(e.grad_floats);
    e.ops->backward(e.impl, 0, 1);
    is_int(seen.nranges, 0, "emulated: a backward with the hook not armed tells nothing");
    hook.armed = 1;
    e.ops->backward(e.impl, 0, 1);
    is_int(e.grad_floats, 600, "the gradient: the layers' 1,200 + 800 + 400 bytes");
    ok(seen.nranges == 3 && seen.order[0] == 300 && seen.order[1] == 100 && seen.order[2] == 0,
       "an armed B tells the layers last to first: floats 300, 100, 0 on");
    ok(each_once(), "every gradient float told exactly once");
    e.ops->destroy(e.impl);
    /* split: W tells, B does not */
    rq.split_backward = 1;
    if (wp_stage_emulated_make(&ctx, &rq, &e, &err) == 0) {
        seen_reset(e.grad_floats);
        e.ops->backward(e.impl, 0, 1);
        is_int(seen.nranges, 0, "split: B makes no weight gradient and tells nothing");
        e.ops->backward_weights(e.impl, 0);
        ok(seen.nranges == 3 && each_once(), "split: W tells each layer's floats once");
        e.ops->destroy(e.impl);
    }
    wp_layer_table_destroy(&t);
}

static void test_gpt2_hook(int first_block, int end_block, int split, const char *what)
{
    struct wp_gpt2_config g = {2, 16, 2, 8, 8, 32};
    struct wp_gpt2_stage st;
    struct wp_err err = {""};
    if (wp_gpt2_stage_init(&st, &wp_kernels_cpu, &g, first_block, end_block, 1, 1, split, 0, 42, NULL, &err)) {
        ok(0, "%s: %s", what, err.msg);
        return;
    }
    struct wp_grad_hook hook = {record_told, NULL, 1};
    st.grad_hook = &hook;
    int tokens[8] = {1, 2, 3, 4, 5, 6, 7, 8}, targets[8] = {2, 3, 4, 5, 6, 7, 8, 9};
    wp_gpt2_stage_set_tokens(&st, 0, st.layout.has_embedding ? tokens : NULL, st.layout.has_head ? targets : NULL);
    wp_gpt2_stage_forward(&st, 0);
    seen_reset(st.grad_floats);
    wp_gpt2_stage_backward(&st, 0, 1.0f / 8);
    if (split) {
        is_int(seen.nranges, 0, "%s: B alone tells nothing", what);
        wp_gpt2_stage_backward_weights(&st, 0);
    }
    ok(each_once(), "%s: every one of its %zu gradient floats told exactly once (%d ranges)", what, st.grad_floats,
       seen.nranges);
    wp_gpt2_stage_destroy(&st);
}

int main(void)
{
    test_timing();
    test_simulator();
    test_reducer();
    test_emulated_hook();
    test_gpt2_hook(0, 2, 0, "GPT-2 whole model, B");
    test_gpt2_hook(0, 2, 1, "GPT-2 whole model, B then W");
    test_gpt2_hook(0, 1, 0, "GPT-2 first stage (embedding, block 0)");
    test_gpt2_hook(1, 2, 1, "GPT-2 last stage (block 1, head), split");
    free(seen.told);
    return tap_done();
}
