/* Benchmark (not a test): generate, validate and simulate a schedule of
 * 1,024 ranks and 4,096 micro-batches (goals on the 2-core development
 * machine: 1f1b under 1 s in all, zb-v under 1.5 s), phase by phase, best of
 * several runs.
 * Usage: bench_schedule [P M KIND REPEATS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "sched/generate.h"
#include "sched/simulate.h"
#include "sched/validate.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.ranks = argc > 1 ? atoi(argv[1]) : 1024;
    p.microbatches = argc > 2 ? atoi(argv[2]) : 4096;
    if (argc > 3 && wp_sched_kind_from_name(argv[3]) >= 0)
        p.kind = (enum wp_sched_kind)wp_sched_kind_from_name(argv[3]);
    int repeats = argc > 4 ? atoi(argv[4]) : 3;
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    long actions = 0;
    double makespan = 0, bubble = 0;
    for (int rep = 0; rep < repeats; rep++) {
        struct wp_schedule s;
        struct wp_validation v;
        struct wp_sim_result res;
        struct wp_cost_model cost;
        struct wp_err err;
        wp_cost_model_default(&cost);
        double t0 = now_s();
        if (wp_schedule_generate(&p, &s, &err)) {
            fprintf(stderr, "generate: %s\n", err.msg);
            return 1;
        }
        double t1 = now_s();
        if (wp_schedule_validate(&s, &v, &err)) {
            fprintf(stderr, "validate: %s\n", err.msg);
            return 1;
        }
        double t2 = now_s();
        if (wp_simulate(&s, &cost, &res, &err)) {
            fprintf(stderr, "simulate: %s\n", err.msg);
            return 1;
        }
        double t3 = now_s();
        actions = v.actions;
        makespan = res.makespan;
        bubble = res.bubble_ratio;
        wp_sim_result_destroy(&res);
        wp_validation_destroy(&v);
        wp_schedule_destroy(&s);
        double phase[4] = {t1 - t0, t2 - t1, t3 - t2, t3 - t0};
        for (int i = 0; i < 4; i++)
            if (phase[i] < best[i])
                best[i] = phase[i];
    }
    printf("%s P=%d M=%d: %ld actions; makespan %.6g, bubble %.6f\n", wp_sched_kind_name(p.kind), p.ranks,
           p.microbatches, actions, makespan, bubble);
    /* issue 11's goals: 1f1b under 1 s, zb-v (twice the stages, W passes) under 1.5 s */
    double goal_s = p.kind == WP_SCHED_ZBV ? 1.5 : 1.0;
    printf("best of %d: generate %.3f s, validate %.3f s, simulate %.3f s, total %.3f s (goal < %g s: %s)\n",
           repeats, best[0], best[1], best[2], best[3], goal_s, best[3] < goal_s ? "met" : "not met");
    return 0;
}
