/* Ada-Grouper's online tuning of k (see tune_k.h). */
#include "run/adapt/tune_k.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/simulate.h"

/* Peak sequences whose activations each rank holds at once under s (F
 * takes, the schedule's freeing pass gives back), times b. */
static void peak_sequences(const struct wp_schedule *s, int b, int *peak)
{
    int frees = wp_sched_frees_op(s);
    for (int r = 0; r < s->nranks; r++) {
        const struct wp_action_list *l = &s->lists[r];
        int held = 0, most = 0;
        for (int i = 0; i < l->count; i++) {
            int op = l->actions[i].op;
            held += op == WP_OP_F ? 1 : op == frees ? -1 : 0;
            most = held > most ? held : most;
        }
        peak[r] = most * b;
    }
}

/* The largest replica count of any stage: a micro-batch must split over it. */
static int widest_stage(const struct wp_schedule *s)
{
    int r = 1;
    for (int st = 0; st < s->nstages; st++)
        r = s->place[st].nreplicas > r ? s->place[st].nreplicas : r;
    return r;
}

static int plan_arrays(struct wp_kfkb_plan *p, int S)
{
    p->f_s = calloc((size_t)4 * S, sizeof *p->f_s);
    if (!p->f_s)
        return -1;
    p->b_s = p->f_s + S;
    p->w_s = p->f_s + 2 * S;
    p->allreduce_s = p->f_s + 3 * S;
    return 0;
}

/* The tuner's fields and room for nplans plans (either way of init). */
static int setup(struct wp_tune_k *t, const struct wp_schedule *start, int global_batch, int nplans,
                 struct wp_err *err)
{
    memset(t, 0, sizeof *t);
    int S = start->nstages;
    t->nstages = S;
    t->global_batch = global_batch;
    t->min_gain = 0.05;
    t->average_weight = 0.5;
    t->plans = calloc((size_t)nplans, sizeof *t->plans);
    t->link_s_per_seq = calloc((size_t)2 * S, sizeof *t->link_s_per_seq);
    t->link_last_s_per_seq = t->link_s_per_seq ? t->link_s_per_seq + S : NULL;
    if (!t->plans || !t->link_s_per_seq) {
        wp_tune_k_destroy(t);
        return wp_errorf(err, "out of memory");
    }
    return 0;
}

int wp_tune_k_init(struct wp_tune_k *t, const struct wp_schedule *start, int start_k, int global_batch, int max_k,
                   wp_tune_make_fn make, void *make_ctx, struct wp_err *err)
{
    int S = start->nstages, P = start->nranks, R = widest_stage(start);
    if (setup(t, start, global_batch, max_k + 1, err))
        return -1;
    int *budget = calloc((size_t)2 * P, sizeof *budget), *peak = budget ? budget + P : NULL;
    if (!budget) {
        wp_tune_k_destroy(t);
        return wp_errorf(err, "out of memory");
    }
    int b0 = global_batch / start->nmicro;
    peak_sequences(start, b0, budget);
    int rc = 0;
    for (int k = 1; k <= max_k && rc == 0; k++) {
        struct wp_kfkb_plan *p = &t->plans[t->nplans];
        if (k == start_k) { /* the start plan as it is */
            p->k = k;
            p->micro_batch = b0;
            p->nmicro = start->nmicro;
            if ((rc = make(make_ctx, k, start->nmicro, &p->sched, err)) == 0 && plan_arrays(p, S))
                rc = wp_errorf(err, "out of memory");
            if (rc == 0)
                t->current = t->nplans++;
            continue;
        }
        /* the largest b on the memory-limit curve for this k */
        for (int b = global_batch / k; b >= R && rc == 0; b--) {
            if (global_batch % b || b % R)
                continue;
            struct wp_schedule s;
            memset(&s, 0, sizeof s);
            if (make(make_ctx, k, global_batch / b, &s, err)) {
                rc = -1;
                break;
            }
            peak_sequences(&s, b, peak);
            int fits = 1;
            for (int r = 0; r < P; r++)
                fits &= peak[r] <= budget[r];
            if (!fits) {
                wp_schedule_destroy(&s);
                continue;
            }
            p->k = k;
            p->micro_batch = b;
            p->nmicro = global_batch / b;
            p->sched = s;
            if (plan_arrays(p, S))
                rc = wp_errorf(err, "out of memory");
            t->nplans++;
            break;
        }
    }
    free(budget);
    if (rc)
        wp_tune_k_destroy(t);
    return rc;
}

int wp_tune_k_init_given(struct wp_tune_k *t, const struct wp_schedule *start, int start_k, int global_batch,
                         const int *k_b, int ngiven, wp_tune_make_fn make, void *make_ctx, struct wp_err *err)
{
    int S = start->nstages, R = widest_stage(start), b0 = global_batch / start->nmicro;
    if (setup(t, start, global_batch, ngiven + 1, err))
        return -1;
    int rc = 0, have_start = 0;
    for (int i = 0; i <= ngiven && rc == 0; i++) {
        int k = i < ngiven ? k_b[2 * i] : start_k, b = i < ngiven ? k_b[2 * i + 1] : b0;
        if (i == ngiven && have_start)
            break;
        if (k < 1 || b < 1 || global_batch % b || b % R || global_batch / b < k) {
            rc = wp_errorf(err, "candidate k=%d with micro-batches of %d: the micro-batch must divide the global "
                                "batch of %d and the largest replica count %d, and give at least k micro-batches",
                           k, b, global_batch, R);
            break;
        }
        for (int j = 0; j < t->nplans; j++)
            if (t->plans[j].k == k && t->plans[j].micro_batch == b)
                rc = wp_errorf(err, "candidate k=%d with micro-batches of %d is given twice", k, b);
        struct wp_kfkb_plan *p = &t->plans[t->nplans];
        if (rc == 0 && (rc = make(make_ctx, k, global_batch / b, &p->sched, err)) == 0) {
            p->k = k;
            p->micro_batch = b;
            p->nmicro = global_batch / b;
            if (plan_arrays(p, S))
                rc = wp_errorf(err, "out of memory");
            if (k == start_k && b == b0) {
                have_start = 1;
                t->current = t->nplans;
            }
            t->nplans++;
        }
    }
    if (rc)
        wp_tune_k_destroy(t);
    return rc;
}

void wp_tune_k_destroy(struct wp_tune_k *t)
{
    for (int i = 0; t->plans && i < t->nplans; i++) {
        wp_schedule_destroy(&t->plans[i].sched);
        free(t->plans[i].f_s);
    }
    free(t->plans);
    free(t->link_s_per_seq);
    memset(t, 0, sizeof *t);
}

static void average(double *avg, double now, int first, double weight)
{
    *avg = first ? now : (1 - weight) * *avg + weight * now;
}

void wp_tune_k_observe(struct wp_tune_k *t, const struct wp_measure *m)
{
    struct wp_kfkb_plan *p = &t->plans[t->current];
    int first = p->measured == 0;
    for (int st = 0; st < t->nstages; st++) {
        double *to[4] = {p->f_s, p->b_s, p->w_s, p->allreduce_s};
        int ops[4] = {WP_OP_F, WP_OP_B, WP_OP_W, WP_OP_ALLREDUCE};
        for (int i = 0; i < 4; i++) {
            struct wp_measure_pass pass = wp_measure_pass_of(m, ops[i], st);
            if (pass.count > 0)
                average(&to[i][st], pass.mean_s, first, t->average_weight);
        }
    }
    /* the links as measured now: the slower direction, per sequence */
    for (int b = 0; b + 1 < t->nstages; b++) {
        double worst = -1;
        for (int dir = WP_MEASURE_ACT; dir <= WP_MEASURE_GRAD; dir++) {
            struct wp_measure_link l = wp_measure_link_of(m, b, dir);
            if (l.timed > 0 && l.mean_s > worst)
                worst = l.mean_s;
        }
        if (worst >= 0) {
            double now = worst / p->micro_batch, before = t->link_last_s_per_seq[b];
            t->link_s_per_seq[b] = before > 0 && before < now ? before : now;
            t->link_last_s_per_seq[b] = now;
        }
    }
    p->measured++;
}

/* The measured plan nearest to b in micro-batch size (current when none). */
static const struct wp_kfkb_plan *nearest_measured(const struct wp_tune_k *t, int b)
{
    const struct wp_kfkb_plan *best = &t->plans[t->current];
    for (int i = 0; i < t->nplans; i++) {
        const struct wp_kfkb_plan *q = &t->plans[i];
        if (q->measured && abs(q->micro_batch - b) < abs(best->micro_batch - b))
            best = q;
    }
    return best;
}

/* The simulator's iteration time for plan i on the current measurements. */
static int predict(const struct wp_tune_k *t, int i, const double *stage_scale, const double *link_scale,
                   double *iter_s, struct wp_err *err)
{
    const struct wp_kfkb_plan *p = &t->plans[i];
    int S = t->nstages;
    double *buf = calloc((size_t)5 * S, sizeof *buf);
    if (!buf)
        return wp_errorf(err, "out of memory");
    double *f = buf, *b = buf + S, *w = buf + 2 * S, *link = buf + 3 * S, *ar = buf + 4 * S;
    const struct wp_kfkb_plan *src = p->measured ? p : nearest_measured(t, p->micro_batch);
    double scale = (double)p->micro_batch / src->micro_batch; /* compute per sequence */
    for (int st = 0; st < S; st++) {
        double moved = stage_scale ? stage_scale[st] : 1; /* a partition about to change */
        f[st] = src->f_s[st] * scale * moved;
        b[st] = src->b_s[st] * scale * moved;
        w[st] = src->w_s[st] * scale * moved;
        ar[st] = src->allreduce_s[st];
        if (st + 1 < S)
            link[st] = t->link_s_per_seq[st] * p->micro_batch * (link_scale ? link_scale[st] : 1);
    }
    struct wp_cost_model cost;
    wp_cost_model_per_stage(&cost, f, b, w, link, ar);
    cost.cores = t->cores;
    struct wp_sim_result res;
    int rc = wp_simulate(&p->sched, &cost, &res, err);
    if (rc == 0) {
        *iter_s = res.makespan;
        wp_sim_result_destroy(&res);
    }
    free(buf);
    return rc;
}

int wp_tune_k_decide(struct wp_tune_k *t, const double *stage_scale, const double *link_scale, char *why,
                            size_t size, struct wp_err *err)
{
    for (int i = 0; i < t->nplans; i++)
        if (predict(t, i, stage_scale, link_scale, &t->plans[i].predicted_s, err))
            return -1;
    int best = t->current;
    for (int i = 0; i < t->nplans; i++)
        if (t->plans[i].predicted_s < t->plans[best].predicted_s)
            best = i;
    const struct wp_kfkb_plan *cur = &t->plans[t->current], *win = &t->plans[best];
    double gain = win->predicted_s > 0 ? cur->predicted_s / win->predicted_s - 1 : 0;
    int pick = best != t->current && gain > t->min_gain ? best : t->current;
    size_t len = (size_t)snprintf(why, size, "predicted");
    for (int i = 0; i < t->nplans && len < size; i++)
        len += (size_t)snprintf(why + len, size - len, " k=%d b=%d %.4fs%s", t->plans[i].k, t->plans[i].micro_batch,
                                t->plans[i].predicted_s, t->plans[i].measured ? "" : "*");
    if (len < size) {
        if (pick != t->current)
            snprintf(why + len, size - len, "; k=%d is %.1f%% faster than k=%d (> %.0f%%): switch", win->k,
                     100 * gain, cur->k, 100 * t->min_gain);
        else if (best != t->current)
            snprintf(why + len, size - len, "; k=%d would gain %.1f%% over k=%d (<= %.0f%%): stay", win->k,
                     100 * gain, cur->k, 100 * t->min_gain);
        else
            snprintf(why + len, size - len, "; k=%d is the fastest: stay", cur->k);
    }
    return pick;
}
