/* Benchmark (not a test): the SBP mesh search on AutoDDL 4.6's 4-layer MLP
 * (widths 32768, 16384, 4096, 2048, 512; batch 8192, 2-byte elements,
 * NVLink-class links in a node, 100 Gbit/s between nodes). Goal: coordinate
 * descent for 4,096 devices under 1 s. For each machine: the time of
 * coordinate descent, Metropolis-Hastings and the exhaustive search (with
 * bounds, and as a plain enumeration where the space allows), best of
 * several runs, their ratios and each result's cost against the optimum.
 * Usage: bench_sbp [DEVICES GPUS_PER_NODE [REPEATS]] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "plan/sbp.h"
#include "plan/sbp_search.h"

#define PLAIN_MAX 1e8 /* plain enumeration only for spaces up to this many strategies */

static struct wp_sbp_layer mlp[4] = {
    {"fc0", 32768, 16384}, {"fc1", 16384, 4096}, {"fc2", 4096, 2048}, {"fc3", 2048, 512}};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Best time of `repeats` searches; the result of the last in *res. */
static double timed(const struct wp_sbp_problem *pr, const struct wp_sbp_search_opts *o, int repeats,
                    struct wp_sbp_result *res)
{
    double best = 1e30;
    for (int i = 0; i < repeats; i++) {
        struct wp_err err;
        double t0 = now_s();
        int rc = wp_sbp_plan(pr, o, res, &err);
        double t = now_s() - t0;
        if (rc) {
            fprintf(stderr, "bench_sbp: %s\n", err.msg);
            exit(1);
        }
        if (t < best)
            best = t;
        if (i + 1 < repeats)
            wp_sbp_result_destroy(res);
    }
    return best;
}

/* Seconds per strategy of the last plain enumeration, to estimate larger ones. */
struct plain_rate {
    double s_per_strategy;
};

static void machine(int devices, int gpus_per_node, int repeats, struct plain_rate *rate)
{
    struct wp_sbp_problem pr;
    wp_sbp_problem_default(&pr);
    pr.layers = mlp;
    pr.nlayers = 4;
    pr.batch = 8192;
    pr.devices = devices;
    pr.gpus_per_node = gpus_per_node;
    pr.element_bytes = 2;
    pr.intra = (struct wp_link_cost){3e-6, 1 / 150e9};
    pr.inter = (struct wp_link_cost){15e-6, 1 / 12.5e9};
    struct wp_sbp_search_opts o;
    wp_sbp_search_default(&o);
    o.exhaustive_max = 1e12;
    struct wp_sbp_result cd, mh, ex, plain = {0};
    o.kind = WP_SBP_COORDINATE_DESCENT;
    double t_cd = timed(&pr, &o, repeats, &cd);
    o.kind = WP_SBP_METROPOLIS;
    double t_mh = timed(&pr, &o, repeats, &mh);
    o.kind = WP_SBP_EXHAUSTIVE;
    double t_ex = timed(&pr, &o, repeats, &ex);
    double t_plain = 0;
    if (ex.space <= PLAIN_MAX) {
        o.exhaustive_bounds = 0;
        t_plain = timed(&pr, &o, 1, &plain);
        rate->s_per_strategy = t_plain / plain.costed;
    }
    printf("%d devices (%d GPUs per node): %.4g strategies, optimum %.6g s per step\n", devices, gpus_per_node,
           ex.space, ex.comm_s);
    printf("  cd          %8.4f s  cost/optimum %.6f  (%.4g single-layer changes costed; goal < 1 s)\n", t_cd,
           cd.comm_s / ex.comm_s, cd.costed);
    printf("  mh          %8.4f s  cost/optimum %.6f  (%.4g proposals costed)\n", t_mh, mh.comm_s / ex.comm_s,
           mh.costed);
    printf("  exhaustive  %8.4f s  (with bounds: %.4g partial strategies costed); cd/exhaustive time %.3g\n", t_ex,
           ex.costed, t_cd / t_ex);
    if (plain.layers)
        printf("  plain enum. %8.4f s  (%.4g partial strategies costed, optimum %s); cd/plain time %.3g\n",
               t_plain, plain.costed, plain.comm_s == ex.comm_s ? "the same" : "DIFFERS", t_cd / t_plain);
    else if (rate->s_per_strategy > 0)
        printf("  plain enum. not run (over %.0g strategies); at the last one's rate about %.3g s; cd/plain "
               "time about %.3g\n",
               PLAIN_MAX, ex.space * rate->s_per_strategy, t_cd / (ex.space * rate->s_per_strategy));
    else
        printf("  plain enum. not run (over %.0g strategies)\n", PLAIN_MAX);
    wp_sbp_result_destroy(&cd);
    wp_sbp_result_destroy(&mh);
    wp_sbp_result_destroy(&ex);
    wp_sbp_result_destroy(&plain);
}

int main(int argc, char **argv)
{
    struct plain_rate rate = {0};
    if (argc >= 3) {
        machine(atoi(argv[1]), atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 3, &rate);
        return 0;
    }
    machine(128, 1, 3, &rate); /* AutoDDL Figure 8's two sizes, one GPU per node */
    machine(4096, 1, 3, &rate);
    machine(4096, 8, 3, &rate); /* 512 nodes of 8 GPUs */
    return 0;
}
