/* The runtime's activation slots against the schedule's memory count: for
 * every kind, the interpreter (built on each rank with a stand-in stage that
 * only records what it is asked for) assigns each held stage enough slots
 * for the activations the validator and the simulator count on that rank,
 * held from F until B, or until W where the backward is split. A runtime
 * that freed a split schedule's slot at B would reuse a buffer W still
 * reads, and show up here as fewer slots than the validator's peak. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "run/core/interpreter.h"
#include "sched/generate.h"
#include "sched/simulate.h"
#include "sched/validate.h"
#include "tap.h"

static void noop_destroy(void *impl) { (void)impl; }
static const struct wp_stage_exec_ops stand_in_ops = {.name = "stand-in", .destroy = noop_destroy};

/* Records the slots the interpreter asks of each stage. */
static int record_slots(void *ctx, const struct wp_stage_request *rq, struct wp_stage_exec *out, struct wp_err *err)
{
    (void)err;
    ((int *)ctx)[rq->stage] = rq->nslots;
    out->ops = &stand_in_ops;
    out->nslots = rq->nslots;
    return 0;
}

static void check_kind(enum wp_sched_kind kind, int P, int M, int x)
{
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = kind;
    p.ranks = P;
    p.microbatches = M;
    p.tw = 1;
    if (kind == WP_SCHED_HANAYO)
        p.waves = x;
    if (wp_sched_kind_has_chunks(kind))
        p.chunks = x;
    struct wp_schedule s;
    struct wp_validation v;
    struct wp_sim_result res;
    struct wp_cost_model c;
    struct wp_err err = {""};
    wp_cost_model_default(&c);
    if (wp_schedule_generate(&p, &s, &err) || wp_schedule_validate(&s, &v, &err)) {
        ok(0, "%s P=%d M=%d: %s", wp_sched_kind_name(kind), P, M, err.msg);
        return;
    }
    if (wp_simulate(&s, &c, &res, &err)) {
        ok(0, "%s P=%d M=%d: %s", wp_sched_kind_name(kind), P, M, err.msg);
        wp_validation_destroy(&v);
        wp_schedule_destroy(&s);
        return;
    }
    int enough = 1, agree = 1, worst_rank = -1;
    double worst_slots = 0, worst_peak = 0;
    int *slots = calloc((size_t)s.nstages, sizeof *slots);
    for (int r = 0; r < P && slots; r++) {
        struct wp_interp in;
        for (int st = 0; st < s.nstages; st++)
            slots[st] = 0;
        /* global batch M: one sequence per micro-batch */
        if (wp_interp_init(&in, &s, r, NULL, NULL, NULL, M, 1.0f, record_slots, slots, &err)) {
            ok(0, "%s P=%d M=%d: interpreter on rank %d: %s", wp_sched_kind_name(kind), P, M, r, err.msg);
            enough = 0;
            break;
        }
        double held = 0; /* slots weighted as the validator weighs activations */
        for (int st = 0; st < s.nstages; st++)
            held += slots[st] * wp_stage_weight(&s, st);
        if (held < v.peak_activations[r] - 1e-9 && enough) {
            enough = 0;
            worst_rank = r;
            worst_slots = held;
            worst_peak = v.peak_activations[r];
        }
        agree &= fabs(v.peak_activations[r] - res.peak_activations[r]) < 1e-9;
        wp_interp_destroy(&in);
    }
    free(slots);
    ok(enough, "%s P=%d M=%d x=%d: the runtime's slots hold every activation the validator counts%s", 
       wp_sched_kind_name(kind), P, M, x, enough ? "" : " (short on a rank)");
    if (!enough && worst_rank >= 0)
        printf("# rank %d: slots worth %g activations, validator's peak %g\n", worst_rank, worst_slots, worst_peak);
    ok(agree, "%s P=%d M=%d x=%d: simulator and validator count the same peaks", wp_sched_kind_name(kind), P, M, x);
    wp_sim_result_destroy(&res);
    wp_validation_destroy(&v);
    wp_schedule_destroy(&s);
}

int main(void)
{
    for (int kind = 0; kind < WP_SCHED_KIND_COUNT; kind++) {
        if (!wp_sched_kind_generated((enum wp_sched_kind)kind))
            continue;
        for (int P = 2; P <= 4; P *= 2)
            for (int f = 2; f <= 4; f *= 2)
                check_kind((enum wp_sched_kind)kind, P, f * P, kind == WP_SCHED_HANAYO || wp_sched_kind_has_chunks((enum wp_sched_kind)kind) ? 2 : 1);
    }
    return tap_done();
}
