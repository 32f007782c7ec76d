/* A plan through the discrete-event simulator, and Ada-Grouper's kFkB
 * candidates (section 4.2): for each group size k the largest micro-batch
 * whose k-fold warm-up still fits in memory, timed by the simulator on the
 * planner's stage, boundary and allreduce costs. The simulator sees what
 * DAPPLE's L leaves out: bubbles inside the pivot stage, transfers that do
 * or do not hide behind compute, allreduces that overlap other stages. */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "sched/generate.h"
#include "sched/simulate.h"

/* Ranks beyond which candidates are timed by L instead of simulated (the
 * simulator keeps a ranks x ranks link table). */
#define WP_KFKB_SIMULATE_MAX_RANKS 512
#define WP_KFKB_MAX_K 8

/* 1 when every stage has the same replica count. */
static int uniform_replicas(const struct wp_plan *p)
{
    for (int s = 1; s < p->nstages; s++)
        if (p->stages[s].replicas != p->stages[0].replicas)
            return 0;
    return 1;
}

int wp_plan_sim_ranks(const struct wp_plan *p)
{
    if (p->chunks > 1)
        return p->nstages / p->chunks;
    if (uniform_replicas(p))
        return p->nstages;
    int ranks = 0;
    for (int s = 0; s < p->nstages; s++)
        ranks += p->stages[s].replicas;
    return ranks;
}

void wp_plan_sched_params(const struct wp_plan *p, int k, int M, int *reps, struct wp_sched_params *sp)
{
    int S = p->nstages, chain = uniform_replicas(p);
    for (int s = 0; s < S; s++)
        reps[s] = chain ? 1 : p->stages[s].replicas;
    wp_sched_params_default(sp);
    sp->kind = k > 1 ? WP_SCHED_KFKB : WP_SCHED_1F1B;
    sp->k = k;
    if (p->chunks > 1) { /* the ranks hold every chunk-th stage (plan.h), as the generator places them */
        sp->kind = WP_SCHED_INTERLEAVED;
        sp->chunks = p->chunks;
    }
    sp->ranks = wp_plan_sim_ranks(p);
    sp->microbatches = M;
    sp->policy = p->policy ? p->policy : 'A';
    if (!chain) {
        sp->nreplicas = S;
        sp->replicas = reps;
    }
}

int wp_plan_simulate(const struct wp_plan_model *m, const struct wp_plan *p, int k, int micro_batch,
                     double *iter_s, double *peak_bytes, struct wp_err *err)
{
    int S = p->nstages;
    if (micro_batch <= 0)
        micro_batch = p->micro_batch;
    if (micro_batch <= 0)
        return wp_errorf(err, "the plan has no micro-batch size (its replicas split no micro-batch evenly)");
    int M = (m->global_batch + micro_batch - 1) / micro_batch;
    double *buf = calloc((size_t)S * 5, sizeof *buf);
    int *reps = calloc((size_t)S, sizeof *reps);
    if (!buf || !reps) {
        free(buf);
        free(reps);
        return wp_errorf(err, "out of memory");
    }
    double *f = buf, *b = buf + S, *send = buf + 2 * S, *ar = buf + 3 * S, *w = buf + 4 * S, peak;
    int chain = uniform_replicas(p);
    int rc = 0;
    if (wp_plan_costs_at(m, p, micro_batch, k, p->policy ? p->policy : 'A', f, b, send, ar, &peak))
        rc = wp_errorf(err, "micro-batch %d leaves a replica without a sample", micro_batch);
    struct wp_sched_params sp;
    wp_plan_sched_params(p, k, M, reps, &sp);
    struct wp_schedule sched;
    struct wp_sim_result res;
    memset(&sched, 0, sizeof sched);
    if (rc == 0 && (rc = wp_schedule_generate(&sp, &sched, err)) == 0) {
        struct wp_cost_model cost;
        wp_cost_model_per_stage(&cost, f, b, w, send, ar);
        if (chain) /* one rank holds each stage: no ALLREDUCE; its time before the STEP instead */
            cost.stage_step_s = ar;
        if ((rc = wp_simulate(&sched, &cost, &res, err)) == 0) {
            *iter_s = res.makespan;
            wp_sim_result_destroy(&res);
        }
        wp_schedule_destroy(&sched);
    }
    if (rc == 0 && peak_bytes)
        *peak_bytes = peak;
    free(buf);
    free(reps);
    return rc;
}

int wp_plan_kfkb_candidates(const struct wp_plan_model *m, struct wp_plan *p, struct wp_err *err)
{
    int S = p->nstages, R = 1;
    for (int s = 0; s < S; s++)
        R = p->stages[s].replicas > R ? p->stages[s].replicas : R;
    double *buf = calloc((size_t)S * 4, sizeof *buf);
    struct wp_kfkb_candidate *c = calloc(WP_KFKB_MAX_K, sizeof *c);
    int *reps = calloc((size_t)S, sizeof *reps);
    if (!buf || !c || !reps) {
        free(buf);
        free(c);
        free(reps);
        return wp_errorf(err, "out of memory");
    }
    int n = 0, rc = 0;
    for (int k = 1; k <= WP_KFKB_MAX_K && rc == 0; k++) {
        /* the largest micro-batch dividing the global batch that fits with groups of k */
        int best = 0;
        double best_peak = 0;
        for (int B = m->global_batch; B >= R; B--) {
            int M = (m->global_batch + B - 1) / B;
            double peak;
            if (M < k || m->global_batch % B)
                continue; /* whole micro-batches only, at least k of them */
            struct wp_sched_params sp;
            struct wp_err refused;
            int nstages;
            wp_plan_sched_params(p, k, M, reps, &sp);
            if (wp_sched_check(&sp, &nstages, &refused))
                continue; /* a count the schedule cannot run (interleaved: M a multiple of the ranks) */
            if (wp_plan_costs_at(m, p, B, k, p->policy, buf, buf + S, buf + 2 * S, buf + 3 * S, &peak) == 0 &&
                peak <= m->hw.memory_bytes) {
                best = B;
                best_peak = peak;
                break;
            }
        }
        if (!best)
            continue;
        int M = (m->global_batch + best - 1) / best;
        c[n] = (struct wp_kfkb_candidate){k, best, M, 0, best_peak};
        if (wp_plan_sim_ranks(p) <= WP_KFKB_SIMULATE_MAX_RANKS) {
            rc = wp_plan_simulate(m, p, k, best, &c[n].predicted_iter_s, NULL, err);
        } else { /* too many ranks to simulate: DAPPLE's L at this micro-batch */
            struct wp_pipe_stage *ps = m->scratch;
            wp_plan_costs_at(m, p, best, k, p->policy, buf, buf + S, buf + 2 * S, buf + 3 * S, &best_peak);
            for (int s = 0; s < S; s++) {
                ps[2 * s] = (struct wp_pipe_stage){buf[s], buf[S + s], buf[3 * S + s]};
                if (s + 1 < S)
                    ps[2 * s + 1] = (struct wp_pipe_stage){buf[2 * S + s], buf[2 * S + s], 0};
            }
            c[n].predicted_iter_s = wp_dapple_latency(ps, 2 * S - 1, M).total_s;
        }
        n++;
    }
    free(buf);
    free(reps);
    if (rc) {
        free(c);
        return -1;
    }
    free(p->kfkb);
    p->kfkb = c;
    p->nkfkb = n;
    return 0;
}
