/* How long one decision of `wavepipe run --adapt` takes on rank 0 (AutoPipe's
 * figure 12: the time of its work-partition decision): the partition tuner
 * (tune_partition.h: every move of one boundary by up to 4 layers, bounded
 * below and the rest simulated, then the arbiter) and the k tuner
 * (tune_k.h: every candidate kFkB plan simulated, k = 1 .. 8), both as
 * the run calls them, on measurements made up to need a move: every stage
 * as fast as the table says except stage 1, twice as slow (a contended
 * GPU), every link at LINK_GBPS. Each decision is timed whole, REPEATS
 * times; the median and the slowest are printed, one CSV row a tuner:
 *   model,layers,stages,micro_batches,tuner,candidates,simulated,decided,median_ms,max_ms
 * (candidates: the moves tried or the plans predicted; simulated: those the
 * simulator ran; decided: move/stay, or the k picked). Nothing runs on a
 * GPU or over MPI: the decision is arithmetic and simulation on this CPU.
 *
 * Usage: bench_tune MODEL STAGES MICRO_BATCHES [REPEATS [LINK_GBPS]]
 *   MODEL: a layer table or profile (wavepipe profile; DAPPLE/PipeDream
 *   text), or gpt:L (an analytic GPT-2-medium-wide table of L blocks:
 *   C = 1024, 16 heads, T = 1024, fp16, 100 TFLOP/s). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/layer_stages.h"
#include "plan/layers.h"
#include "run/adapt/measure.h"
#include "run/adapt/tune_k.h"
#include "run/adapt/tune_partition.h"
#include "sched/generate.h"
#include "util/clock.h"

static int make_plan(void *ctx, int k, int nmicro, struct wp_schedule *out, struct wp_err *err)
{
    struct wp_sched_params p = *(const struct wp_sched_params *)ctx;
    p.kind = k > 1 ? WP_SCHED_KFKB : WP_SCHED_1F1B;
    p.k = k;
    p.microbatches = nmicro;
    return wp_schedule_generate(&p, out, err);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int load(struct wp_layer_table *t, const char *model, struct wp_err *err)
{
    wp_layer_table_init(t);
    if (strncmp(model, "gpt:", 4) == 0) {
        struct wp_gpt_shape m = {.layers = atoi(model + 4), .channels = 1024, .heads = 16, .seq_len = 1024,
                                 .vocab = 50257, .micro_batch = 1, .precision = WP_PRECISION_BF16};
        if (m.layers < 1)
            return wp_errorf(err, "gpt:L needs L >= 1 blocks, not '%s'", model + 4);
        return wp_layer_table_gpt(t, &m, 1e14, err);
    }
    return wp_layer_table_read(t, model, 0, WP_CONTRACT_AUTO, err);
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 6) {
        fprintf(stderr, "usage: bench_tune MODEL STAGES MICRO_BATCHES [REPEATS [LINK_GBPS]]\n");
        return 2;
    }
    int S = atoi(argv[2]), M = atoi(argv[3]), R = argc > 4 ? atoi(argv[4]) : 5;
    double gbps = argc > 5 ? atof(argv[5]) : 10;
    if (S < 2 || M < S || R < 1 || gbps <= 0) {
        fprintf(stderr, "bench_tune: STAGES >= 2, MICRO_BATCHES >= STAGES, REPEATS >= 1, LINK_GBPS > 0\n");
        return 2;
    }
    struct wp_err err;
    struct wp_layer_table table;
    if (load(&table, argv[1], &err)) {
        fprintf(stderr, "bench_tune: %s\n", err.msg);
        return 1;
    }
    const char *name = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
    int L = table.nlayers, rc = 1;
    int *first = calloc((size_t)3 * S, sizeof *first), *last = first ? first + S : NULL, *count = last ? last + S : NULL;
    double *ms = calloc((size_t)R, sizeof *ms);
    struct wp_sched_params params;
    wp_sched_params_default(&params);
    params.kind = WP_SCHED_1F1B;
    params.ranks = S;
    params.microbatches = M;
    struct wp_schedule start;
    memset(&start, 0, sizeof start);
    struct wp_tune_partition parts;
    struct wp_tune_k tune;
    struct wp_measure m;
    memset(&parts, 0, sizeof parts);
    memset(&tune, 0, sizeof tune);
    memset(&m, 0, sizeof m);
    if (!first || !ms) {
        fprintf(stderr, "bench_tune: out of memory\n");
        goto out;
    }
    if (wp_layer_stages_balanced(&table, S, first, last, &err) || wp_schedule_generate(&params, &start, &err) ||
        wp_measure_init(&m, S, &err))
        goto fail;
    for (int st = 0; st < S; st++)
        count[st] = last[st] - first[st] + 1;
    double link_s_per_byte = 8 / (gbps * 1e9);

    /* the partition tuner: stage 1 at half speed, every link at gbps */
    if (wp_tune_partition_init(&parts, &table, 0, 0, 0, S, count, &err))
        goto fail;
    for (int st = 0; st < S; st++) {
        double f = st == 1 ? 2 : 1;
        parts.speed_f[st] = parts.speed_b[st] = parts.speed_w[st] = f;
        if (st + 1 < S)
            parts.link_s_per_byte[st] = link_s_per_byte;
    }
    int *to = calloc((size_t)S, sizeof *to), moved = 0, simulated = 0, tried = 0;
    char why[1536];
    if (!to) {
        fprintf(stderr, "bench_tune: out of memory\n");
        goto out;
    }
    for (int r = 0; r < R; r++) {
        double now_s, new_s, t0 = wp_monotonic_s();
        moved = wp_tune_partition_decide(&parts, &start, M, to, &now_s, &new_s, why, sizeof why, &err);
        ms[r] = 1e3 * (wp_monotonic_s() - t0);
        if (moved < 0) {
            free(to);
            goto fail;
        }
    }
    const char *said = strstr(why, "; predicted");
    if (!said || sscanf(said, "; predicted %*fs now; %d of %d moves simulated", &simulated, &tried) != 2)
        simulated = tried = -1;
    free(to);
    qsort(ms, (size_t)R, sizeof *ms, cmp_double);
    printf("%s,%d,%d,%d,partition,%d,%d,%s,%.3f,%.3f\n", name, L, S, M, tried, simulated, moved ? "move" : "stay",
           ms[R / 2], ms[R - 1]);

    /* the k tuner: k = 2 .. 8 (at most M) and the start's 1F1B, one
     * sequence a micro-batch (bench/adaptive.sh's --adapt-candidates: with
     * one sequence a micro-batch the memory-limit curve has no other plan),
     * the start plan measured as the table and the half-speed stage 1 say,
     * each link's message as gbps carries it */
    int given[2 * 7], ngiven = 0;
    for (int k = 2; k <= 8 && k <= M; k++) {
        given[2 * ngiven] = k;
        given[2 * ngiven++ + 1] = 1;
    }
    if (wp_tune_k_init_given(&tune, &start, 1, M, given, ngiven, make_plan, &params, &err))
        goto fail;
    for (int st = 0; st < S; st++) {
        struct wp_layer_stage_cost c;
        wp_layer_stage_cost(&table, first[st], last[st], 1, start.split_backward, &c);
        double f = st == 1 ? 2 : 1;
        wp_measure_compute(&m, WP_OP_F, st, f * c.forward_s);
        wp_measure_compute(&m, WP_OP_B, st, f * c.backward_s);
        if (st + 1 < S)
            tune.link_s_per_seq[st] = c.out_seq_bytes * link_s_per_byte;
    }
    wp_tune_k_observe(&tune, &m);
    int pick = 0;
    for (int r = 0; r < R; r++) {
        double t0 = wp_monotonic_s();
        pick = wp_tune_k_decide(&tune, NULL, NULL, why, sizeof why, &err);
        ms[r] = 1e3 * (wp_monotonic_s() - t0);
        if (pick < 0)
            goto fail;
    }
    qsort(ms, (size_t)R, sizeof *ms, cmp_double);
    printf("%s,%d,%d,%d,k,%d,%d,k=%d,%.3f,%.3f\n", name, L, S, M, tune.nplans, tune.nplans, tune.plans[pick].k,
           ms[R / 2], ms[R - 1]);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "bench_tune: %s: %s\n", argv[1], err.msg);
out:
    wp_tune_k_destroy(&tune);
    wp_tune_partition_destroy(&parts);
    if (m.sums)
        wp_measure_destroy(&m);
    wp_schedule_destroy(&start);
    wp_layer_table_destroy(&table);
    free(first);
    free(ms);
    return rc;
}
