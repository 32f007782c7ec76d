/* DAPPLE's pipeline latency (plan/latency.c): the 1F1B closed form for equal
 * stages, the pivot heuristic (formula 3) worked by hand, the ending phase
 * with an allreduce, and the estimate against the discrete-event simulator
 * running the 1F1B schedule with the same per-stage costs. */
#include <stdio.h>
#include <string.h>

#include "plan/latency.h"
#include "sched/generate.h"
#include "sched/simulate.h"
#include "tap.h"

/* Makespan of DAPPLE's 1F1B on one rank per stage with these F and B
 * (messages free), or -1. */
static double simulated(const struct wp_pipe_stage *st, int S, int M)
{
    double f[16], b[16], w[16] = {0};
    for (int s = 0; s < S; s++) {
        f[s] = st[s].forward_s;
        b[s] = st[s].backward_s;
    }
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = WP_SCHED_1F1B;
    p.ranks = S;
    p.microbatches = M;
    struct wp_schedule sch;
    struct wp_err err = {""};
    if (wp_schedule_generate(&p, &sch, &err)) {
        printf("# %s\n", err.msg);
        return -1;
    }
    struct wp_cost_model cost;
    wp_cost_model_default(&cost);
    cost.tc = 0;
    cost.tw = 0;
    cost.stage_f = f;
    cost.stage_b = b;
    cost.stage_w = w;
    struct wp_sim_result res;
    double makespan = -1;
    if (wp_simulate(&sch, &cost, &res, &err) == 0) {
        makespan = res.makespan;
        wp_sim_result_destroy(&res);
    } else {
        printf("# %s\n", err.msg);
    }
    wp_schedule_destroy(&sch);
    return makespan;
}

int main(void)
{
    /* equal stages: (M + S - 1)(F + B) */
    struct wp_pipe_stage eq[4] = {{1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 0}};
    struct wp_pipe_latency l = wp_dapple_latency(eq, 4, 8);
    is_int(l.pivot, 3, "equal stages: the pivot stays the last stage");
    is_near(l.total_s, 33, 1e-12, "equal stages: (8+4-1)(1+2) = 33");
    is_near(l.warmup_s, 4, 1e-12, "Tw = 4 forwards");
    is_near(l.steady_s, 21, 1e-12, "Ts = 7 x 3");
    is_near(l.ending_s, 8, 1e-12, "Te = the last micro-batch's backward through all 4 stages");
    is_near(simulated(eq, 4, 8), 33, 1e-9, "the simulator agrees: 33");

    /* an allreduce on stage 0 extends the ending phase: 8 + 5 */
    struct wp_pipe_stage ar[4] = {{1, 2, 5}, {1, 2, 0}, {1, 2, 0}, {1, 2, 1}};
    l = wp_dapple_latency(ar, 4, 8);
    is_near(l.ending_s, 13, 1e-12, "Te = max(sum B + AR_0, B_3 + AR_3) = 13");
    is_near(l.total_s, 38, 1e-12, "L = 4 + 21 + 13");
    struct wp_pipe_stage ar_last[4] = {{1, 2, 0}, {1, 2, 0}, {1, 2, 0}, {1, 2, 9}};
    is_near(wp_dapple_latency(ar_last, 4, 8).ending_s, 11, 1e-12, "the pivot's own allreduce: B_3 + 9 = 11");

    /* formula 3 by hand: (M-1)(F_1+B_1) = 84 > 21 + 3 moves Q to stage 1 */
    struct wp_pipe_stage slow[4] = {{1, 2, 0}, {4, 8, 0}, {1, 2, 0}, {1, 2, 0}};
    l = wp_dapple_latency(slow, 4, 8);
    is_int(l.pivot, 1, "a slow stage 1 becomes the pivot");
    is_near(l.total_s, 5 + 84 + 10, 1e-12, "L = (1+4) + 7x12 + (8+2) = 99");
    is_near(simulated(slow, 4, 8), 99, 1e-9, "the simulator agrees: the slow stage never idles");

    /* stages after the pivot end before it: they count with a negative offset */
    struct wp_pipe_stage late[5] = {{1, 1, 0}, {5, 5, 0}, {1, 3, 0}, {1, 4, 6}, {1, 2, 0}};
    l = wp_dapple_latency(late, 5, 6);
    is_int(l.pivot, 1, "pivot at stage 1");
    /* stage 3 ends -B_2 = -3 before the pivot's last backward starts, then its allreduce 6 -> 3;
     * the pivot's own end: B_1 = 5, stage 0: 6 */
    is_near(l.ending_s, 6, 1e-12, "Te = max(6, 5, 0, -3 + 6, -7) = 6");
    is_near(l.total_s, 6 + 50 + 6, 1e-12, "L = 6 + 5 x 10 + 6 = 62");
    struct wp_pipe_stage late_noar[5] = {{1, 1, 0}, {5, 5, 0}, {1, 3, 0}, {1, 4, 0}, {1, 2, 0}};
    is_near(simulated(late_noar, 5, 6), wp_dapple_latency(late_noar, 5, 6).total_s, 1e-9,
            "without the allreduce the simulator agrees: %.3f", wp_dapple_latency(late_noar, 5, 6).total_s);

    /* a single stage: data parallelism, L = M (F + B) + AR */
    struct wp_pipe_stage one[1] = {{2, 4, 3}};
    is_near(wp_dapple_latency(one, 1, 4).total_s, 4 * 6 + 3, 1e-12, "one stage: M(F+B) + AR = 27");
    return tap_done();
}
