/* Emulated compute's numbers: stage costs from a layer table (the ones the
 * runtime sleeps and the simulator predicts with), the balanced split, the
 * slowdown file, the sleep to a deadline, the network lanes' two classes
 * (a message during a sum goes at half the rate, not after it), and the
 * simulator's message, NIC-sharing and step costs on a cluster worked out
 * by hand. */
#include <stdlib.h>
#include <unistd.h>

#include "plan/layer_stages.h"
#include "run/adapt/slowdown.h"
#include "run/model/stage_emulated.h"
#include "sched/generate.h"
#include "sched/lanes.h"
#include "sched/simulate.h"
#include "tap.h"

static void table_of(struct wp_layer_table *t, const double *fb, int n, int pb)
{
    wp_layer_table_init(t);
    t->profile_batch = pb;
    for (int i = 0; i < n; i++) {
        struct wp_layer l;
        memset(&l, 0, sizeof l);
        snprintf(l.name, sizeof l.name, "l%d", i);
        l.forward_s = fb[i] / 3;
        l.backward_s = 2 * fb[i] / 3;
        l.activation_bytes = 1000.0 * (i + 1) * pb;
        l.parameter_bytes = 400;
        l.optimizer_s = 0.001;
        struct wp_err err;
        wp_layer_table_append(t, &l, &err);
    }
}

/* The lanes by hand: messages take turns with messages and sums with sums,
 * a message and a sum at once go at half the rate each. */
static void test_lanes_share(void)
{
    struct wp_lanes l;
    int one = 1, two = 2, lane = -1;
    double end;
    if (!ok(wp_lanes_init(&l, 1, &one) == 0, "one node of one lane"))
        return;
    is_near(wp_lanes_earliest(&l, 0, WP_LANE_BULK, 0, 10, &lane, &end), 0, 0, "a sum alone starts at once");
    is_near(end, 10, 0, "and takes its 10 s");
    wp_lanes_book(&l, 0, lane, WP_LANE_BULK, 0, 10);
    is_near(wp_lanes_earliest(&l, 0, WP_LANE_MESSAGE, 2, 1, &lane, &end), 2, 0,
            "a message during the sum starts when sent, not after the sum");
    is_near(end, 4, 1e-12, "at half the rate: its 1 s takes 2 s");
    wp_lanes_book(&l, 0, lane, WP_LANE_MESSAGE, 2, end);
    is_near(wp_lanes_earliest(&l, 0, WP_LANE_MESSAGE, 3, 1, &lane, &end), 4, 0, "a second message waits for the first");
    is_near(end, 6, 1e-12, "and shares the sum's lane too");
    wp_lanes_book(&l, 0, lane, WP_LANE_MESSAGE, 4, end);
    is_near(wp_lanes_earliest(&l, 0, WP_LANE_MESSAGE, 9.5, 1, &lane, &end), 9.5, 0, "a message at the sum's end");
    is_near(end, 10.75, 1e-12, "0.25 s of it shared until 10 s, 0.75 s alone");
    wp_lanes_book(&l, 0, lane, WP_LANE_MESSAGE, 9.5, end);
    is_near(wp_lanes_earliest(&l, 0, WP_LANE_BULK, 0, 2, &lane, &end), 10, 0, "a second sum waits for the first");
    is_near(end, 12.375, 1e-12, "and is slowed by the message booked before it (0.375 s shared)");
    is_near(wp_lanes_clear(&l, 0, WP_LANE_BULK, 5, 6, &lane), 10, 0, "no sum can use [5, 6): from 10 s one might");
    is_near(wp_lanes_clear(&l, 0, WP_LANE_BULK, 10, 11, &lane), 10, 0, "nor [10, 11) ...");
    wp_lanes_destroy(&l);
    if (!ok(wp_lanes_init(&l, 1, &two) == 0, "one node of two lanes"))
        return;
    wp_lanes_book(&l, 0, 0, WP_LANE_BULK, 0, 10);
    wp_lanes_book(&l, 0, 1, WP_LANE_MESSAGE, 0, 3);
    is_near(wp_lanes_earliest(&l, 0, WP_LANE_MESSAGE, 1, 1, &lane, &end), 1, 0,
            "with two lanes a message takes the one that ends it first");
    is_near(end, 3, 1e-12, "beside the sum (3 s), not after the message (4 s)");
    is_int(lane, 0, "lane 0");
    is_near(wp_lanes_clear(&l, 0, WP_LANE_BULK, 5, 6, &lane), 5, 0, "a sum can use lane 1 at 5 s");
    is_int(lane, 1, "lane 1");
    wp_lanes_destroy(&l);
}

static int polls;

static int poll_count(void *ctx)
{
    (void)ctx;
    polls++;
    return 1; /* always "in flight": the wait must wake every slice */
}

int main(void)
{
    struct wp_err err;
    struct wp_layer_table t;

    /* ---- one stage's costs ---- */
    double fb3[] = {3, 6, 9};
    table_of(&t, fb3, 3, 2);
    struct wp_layer_stage_cost c;
    wp_layer_stage_cost(&t, 1, 2, 1, 0, &c);
    is_near(c.forward_s, (2 + 3) / 2.0, 1e-12, "forward of layers 1-2 for 1 of 2 sequences: half the table's");
    is_near(c.backward_s, (4 + 6) / 2.0, 1e-12, "whole backward (B + W) when not split");
    is_near(c.weights_s, 0, 1e-12, "no W when not split");
    is_near(c.in_seq_bytes, 1000, 1e-12, "input: layer 0's output per sequence");
    is_near(c.out_seq_bytes, 3000, 1e-12, "output: layer 2's per sequence");
    is_near(c.optimizer_s, 0.002, 1e-12, "optimizer step: the layers' sum, whatever the slice");
    is_near(c.parameter_bytes, 800, 1e-12, "parameter bytes of the two layers");
    is_near(c.activation_bytes, (2000 + 3000) * 2 / 2.0, 1e-12, "activations kept: the layers' outputs for the slice");
    wp_layer_stage_cost(&t, 0, 0, 4, 1, &c);
    is_near(c.backward_s, 2 * 2 / 2.0, 1e-12, "split, W unknown: B is half the backward (x2 for 4 sequences)");
    is_near(c.weights_s, 2 * 2 / 2.0, 1e-12, "and W the other half");
    is_near(c.in_seq_bytes, 0, 0, "the first layer receives nothing");
    t.weights_known = 1;
    t.layers[0].weights_s = 0.5;
    wp_layer_stage_cost(&t, 0, 0, 2, 1, &c);
    is_near(c.weights_s, 0.5, 1e-12, "split, W known: the table's W");
    is_near(c.backward_s, 2 - 0.5, 1e-12, "and B the rest");
    wp_layer_table_destroy(&t);

    /* ---- balanced split ---- */
    double fb6[] = {1, 2, 3, 4, 5, 6};
    table_of(&t, fb6, 6, 1);
    int first[8], last[8];
    ok(wp_layer_stages_balanced(&t, 3, first, last, &err) == 0, "6 layers into 3 stages");
    ok(first[0] == 0 && last[0] == 2 && first[1] == 3 && last[1] == 4 && first[2] == 5 && last[2] == 5,
       "1+2+3 | 4+5 | 6: the largest stage 9, the least possible (got %d-%d %d-%d %d-%d)", first[0], last[0],
       first[1], last[1], first[2], last[2]);
    ok(wp_layer_stages_balanced(&t, 7, first, last, &err) != 0, "7 stages of 6 layers refused");
    has_substr(err.msg, "too few for 7 stages", "and said why");
    ok(wp_layer_stages_parse(&t, "2,4", 2, first, last, &err) == 0 && last[0] == 1 && first[1] == 2 && last[1] == 5,
       "--partition 2,4");
    ok(wp_layer_stages_parse(&t, "2,3", 2, first, last, &err) != 0, "--partition 2,3 of 6 layers refused");
    has_substr(err.msg, "adding up to the 6 layers", "with the layer count");
    ok(wp_layer_stages_parse(&t, "2,x4", 2, first, last, &err) != 0, "--partition 2,x4 refused");
    wp_layer_table_destroy(&t);
    double fb8[] = {1, 1, 1, 1, 1, 1, 1, 1};
    table_of(&t, fb8, 8, 1);
    ok(wp_layer_stages_balanced(&t, 4, first, last, &err) == 0 && last[0] == 1 && last[1] == 3 && last[2] == 5,
       "8 equal layers into 4 stages: 2 each");
    wp_layer_table_destroy(&t);

    /* ---- the slowdown file ---- */
    is_near(wp_slowdown_parse("* 2\n1 3 # rank 1 is contended\n", "f", 1, &err), 3, 0, "rank 1's own rule");
    is_near(wp_slowdown_parse("* 2\n1 3\n", "f", 0, &err), 2, 0, "rank 0 takes the * rule");
    is_near(wp_slowdown_parse("# nothing\n\n", "f", 0, &err), 1, 0, "no rule: 1");
    ok(wp_slowdown_parse("* 2\nx 2\n", "slow.txt", 0, &err) < 0, "'x 2' refused");
    has_substr(err.msg, "slow.txt:2:", "with file:line");
    ok(wp_slowdown_parse("0 -1\n", "f", 0, &err) < 0, "a negative factor refused");
    ok(wp_slowdown_parse("0 2 3\n", "f", 0, &err) < 0, "extra words refused");
    char path[] = "/tmp/wp-slowdown-XXXXXX";
    int fd = mkstemp(path);
    ok(fd >= 0, "a temporary slowdown file");
    if (fd >= 0) {
        struct wp_slowdown sd;
        wp_slowdown_init(&sd, path, 0);
        (void)!write(fd, "* 2\n", 4);
        close(fd);
        is_near(wp_slowdown_factor(&sd), 2, 0, "read: 2");
        FILE *fp = fopen(path, "w");
        fputs("0 4.5\n* 2\n", fp); /* another size: re-read even within the same mtime tick */
        fclose(fp);
        is_near(wp_slowdown_factor(&sd), 4.5, 0, "changed while running: re-read, 4.5");
        fp = fopen(path, "w");
        fputs("0 oops\n", fp);
        fclose(fp);
        is_near(wp_slowdown_factor(&sd), 4.5, 0, "a bad version keeps the last good factor");
        unlink(path);
        is_near(wp_slowdown_factor(&sd), 1, 0, "file gone: 1");
    }

    /* ---- sleeping to a deadline, polling meanwhile ---- */
    struct wp_progress pr = {poll_count, NULL};
    double t0 = wp_monotonic_s();
    wp_emulated_wait_until(t0 + 0.02, &pr, 0.002);
    double took = wp_monotonic_s() - t0;
    ok(took >= 0.02 && took < 0.5, "20 ms wait took %.4f s (not less, and not far more)", took);
    ok(polls >= 5, "messages in flight polled every 2 ms slice (%d polls)", polls);
    polls = 0;
    wp_emulated_wait_until(wp_monotonic_s() - 1, &pr, 0.002);
    ok(polls == 0, "a deadline already past returns at once");

    /* ---- network lanes booked out of time order ---- */
    struct wp_lanes ln;
    int one = 1, lane = -1;
    double end;
    const enum wp_lane_class msg = WP_LANE_MESSAGE;
    ok(wp_lanes_init(&ln, 1, &one) == 0, "one node, one lane");
    ok(wp_lanes_book(&ln, 0, 0, msg, 1.0, 2.0) == 0, "booked [1, 2)");
    is_near(wp_lanes_earliest(&ln, 0, msg, 0.0, 0.5, &lane, &end), 0.0, 1e-12, "a message of 0.5 s at 0 fits before it");
    is_near(end, 0.5, 1e-12, "and ends 0.5 s later");
    is_near(wp_lanes_earliest(&ln, 0, msg, 0.8, 0.5, &lane, &end), 2.0, 1e-12, "one at 0.8 waits for its end");
    ok(wp_lanes_book(&ln, 0, 0, msg, 0.0, 0.5) == 0 && wp_lanes_book(&ln, 0, 0, msg, 2.0, 2.5) == 0, "two more booked");
    is_near(wp_lanes_earliest(&ln, 0, msg, 0.2, 0.5, &lane, &end), 0.5, 1e-12, "the gap [0.5, 1) holds 0.5 s");
    is_near(wp_lanes_earliest(&ln, 0, msg, 0.2, 0.6, &lane, &end), 2.5, 1e-12, "0.6 s fits only after [2, 2.5)");
    wp_lanes_destroy(&ln);
    test_lanes_share();

    /* ---- the simulator on a cluster, from a table ---- */
    /* 2 stages of 1 layer, each replicated on 2 ranks; ranks 0,1 on node 0
     * and 2,3 on node 1, one network lane a node at 1e6 B/s */
    double fb2[] = {0.3, 0.6};
    table_of(&t, fb2, 2, 1);
    t.layers[0].parameter_bytes = t.layers[1].parameter_bytes = 0;
    t.layers[0].optimizer_s = t.layers[1].optimizer_s = 0;
    t.layers[0].activation_bytes = 1e5; /* per sequence */
    int reps[2] = {2, 2};
    struct wp_sched_params p = {.kind = WP_SCHED_1F1B, .ranks = 4, .microbatches = 1, .policy = 'A',
                                .nreplicas = 2, .replicas = reps, .tf = 1, .tb = 2};
    struct wp_schedule s;
    ok(wp_schedule_generate(&p, &s, &err) == 0, "1f1b, 2 stages x 2 replicas");
    struct wp_cluster cl;
    wp_cluster_init(&cl);
    cl.ntypes = 1;
    cl.types = calloc(1, sizeof *cl.types);
    cl.types[0].count = 2;
    wp_node_type_alloc(&cl.types[0], 0, 0, &err);
    cl.network = (struct wp_network){1, "test", 1e6, 0, "user"};
    int f2[2] = {0, 1}, l2[2] = {0, 1};
    struct wp_layer_stage_arrays a;
    ok(wp_layer_stage_arrays_make(&t, &s, 4, f2, l2, &a, &err) == 0, "table costs for a global batch of 4");
    is_near(a.boundary_bytes[0], 4e5, 1e-12, "boundary 0: 4 sequences x 1e5 bytes");
    is_near(a.forward_s[0], 0.1 * 2, 1e-12, "stage 0's F for its slice of 2 sequences");
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    cost.cluster = &cl;
    cost.ranks_per_node = 2;
    cost.stage_f = a.forward_s;
    cost.stage_b = a.backward_s;
    cost.stage_w = a.weights_s;
    cost.boundary_bytes = a.boundary_bytes;
    cost.stage_gradient_bytes = a.gradient_bytes;
    cost.stage_step_s = a.step_s;
    struct wp_sim_result res;
    ok(wp_simulate(&s, &cost, &res, &err) == 0, "simulated");
    /* each replica sends half a micro-batch (2e5 B, 0.2 s) over node 0's one
     * lane: the second arrives at f0 + 0.4; rank 3 then runs F1 + B1 and
     * its gradient (0.2 s) comes back for B0 */
    double f0 = 0.2, f1 = 0.4, b0 = 0.4, b1 = 0.8, T = 0.2;
    double want = f0 + 2 * T + f1 + b1 + T + b0;
    is_near(res.makespan, want, 1e-3, "replicas' sends share their node's network lane (%.3f s, %.3f without)",
            want, want - T);
    wp_sim_result_destroy(&res);
    t.layers[0].optimizer_s = 0.05;
    wp_layer_stage_arrays_free(&a);
    wp_layer_stage_arrays_make(&t, &s, 4, f2, l2, &a, &err);
    cost.stage_step_s = a.step_s;
    cost.stage_f = a.forward_s;
    cost.stage_b = a.backward_s;
    cost.stage_w = a.weights_s;
    cost.boundary_bytes = a.boundary_bytes;
    cost.stage_gradient_bytes = a.gradient_bytes;
    ok(wp_simulate(&s, &cost, &res, &err) == 0, "simulated with an optimizer step");
    is_near(res.makespan, want + 0.05, 1e-3, "stage 0's optimizer step adds its 0.05 s at the end");
    wp_sim_result_destroy(&res);
    wp_layer_stage_arrays_free(&a);
    wp_schedule_destroy(&s);

    /* Chimera on 4 ranks, 2 a node: stage pairs (0,3) and (1,2) allreduce
     * across the nodes at the same time; one lane a node makes them take
     * turns (each 1e6 B of gradients, 1 s at 1e6 B/s over 2 ranks) */
    struct wp_layer_table t4;
    double fb4[] = {0.01, 0.01, 0.01, 0.01};
    table_of(&t4, fb4, 4, 1);
    for (int i = 0; i < 4; i++) {
        t4.layers[i].parameter_bytes = 1e6;
        t4.layers[i].optimizer_s = 0;
        t4.layers[i].activation_bytes = 0;
    }
    struct wp_sched_params pc = {.kind = WP_SCHED_CHIMERA, .ranks = 4, .microbatches = 4, .policy = 'A',
                                 .tf = 1, .tb = 2};
    ok(wp_schedule_generate(&pc, &s, &err) == 0, "chimera on 4 ranks");
    int f4[4] = {0, 1, 2, 3}, l4[4] = {0, 1, 2, 3};
    ok(wp_layer_stage_arrays_make(&t4, &s, 4, f4, l4, &a, &err) == 0, "its table costs");
    cost.stage_step_s = a.step_s;
    cost.stage_f = a.forward_s;
    cost.stage_b = a.backward_s;
    cost.stage_w = a.weights_s;
    cost.boundary_bytes = a.boundary_bytes;
    cost.stage_gradient_bytes = a.gradient_bytes;
    cost.record_events = 1;
    ok(wp_simulate(&s, &cost, &res, &err) == 0, "chimera simulated on the cluster");
    int overlapping = 0, allreduces = 0;
    double busiest_end = 0;
    for (long i = 0; i < res.nevents; i++) {
        const struct wp_sim_event *e = &res.events[i];
        if (e->op != WP_OP_ALLREDUCE || e->rank > 1)
            continue; /* node 0's ranks; each allreduce once per rank there */
        allreduces++;
        busiest_end = e->end > busiest_end ? e->end : busiest_end;
        for (long j = 0; j < res.nevents; j++) {
            const struct wp_sim_event *g = &res.events[j];
            if (g->op == WP_OP_ALLREDUCE && g->rank <= 1 && g->rank != e->rank && g->start < e->end - 1e-9 &&
                e->start < g->end - 1e-9)
                overlapping++;
        }
    }
    ok(allreduces == 4, "node 0's ranks take part in 4 allreduces (%d)", allreduces);
    ok(overlapping == 0, "allreduces across one node's network take turns (%d overlaps)", overlapping);
    ok(busiest_end >= 4 * 1.0 - 1e-6, "4 allreduces of 1 s each over node 0's lane end after 4 s (%.3f s)",
       busiest_end);
    wp_sim_result_destroy(&res);
    wp_layer_stage_arrays_free(&a);
    wp_schedule_destroy(&s);
    wp_layer_table_destroy(&t4);
    wp_cluster_destroy(&cl);
    wp_layer_table_destroy(&t);
    return tap_done();
}
