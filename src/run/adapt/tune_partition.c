/* AutoPipe's re-partitioning decisions (see tune_partition.h). */
#include "run/adapt/tune_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/layer_stages.h"
#include "sched/makespan_bound.h"
#include "sched/simulate.h"

int wp_tune_partition_init(struct wp_tune_partition *t, const struct wp_layer_table *table, int unit_offset,
                           int lead, int tail, int nstages, const int *count, struct wp_err *err)
{
    memset(t, 0, sizeof *t);
    t->table = table;
    t->unit_offset = unit_offset;
    t->lead = lead;
    t->tail = tail;
    t->nstages = nstages;
    t->max_shift = 4;
    t->horizon_iters = 50;
    t->min_gain = 0.02;
    t->average_weight = 0.5;
    int S = nstages;
    t->count = calloc((size_t)S, sizeof *t->count);
    t->speed_f = calloc((size_t)5 * S, sizeof *t->speed_f);
    if (!t->count || !t->speed_f) {
        wp_tune_partition_destroy(t);
        return wp_errorf(err, "out of memory");
    }
    t->speed_b = t->speed_f + S;
    t->speed_w = t->speed_f + 2 * S;
    t->link_s_per_byte = t->speed_f + 3 * S;
    t->allreduce_s_per_byte = t->speed_f + 4 * S;
    for (int s = 0; s < S; s++) {
        t->count[s] = count[s];
        t->nunits += count[s];
    }
    if (t->nunits + unit_offset + tail != table->nlayers || unit_offset < lead)
        return wp_errorf(err, "internal: %d units from table layer %d and %d after do not make the %d layers of %s",
                         t->nunits, unit_offset, tail, table->nlayers, table->name);
    return 0;
}

void wp_tune_partition_destroy(struct wp_tune_partition *t)
{
    free(t->count);
    free(t->speed_f);
    memset(t, 0, sizeof *t);
}

void wp_tune_partition_range(const struct wp_tune_partition *t, const int *count, int st, int *first, int *last)
{
    int u = 0;
    for (int s = 0; s < st; s++)
        u += count[s];
    *first = u + t->unit_offset - (st == 0 ? t->lead : 0);
    *last = u + count[st] - 1 + t->unit_offset + (st == t->nstages - 1 ? t->tail : 0);
}

/* Sequences of one slice of stage st, and of one message across boundary b. */
static double slice_of(const struct wp_schedule *s, int global_batch, int st)
{
    return (double)global_batch / s->nmicro / s->place[st].nreplicas;
}

static double message_seqs(const struct wp_schedule *s, int global_batch, int b)
{
    int ra = s->place[b].nreplicas, rb = s->place[b + 1].nreplicas;
    return (double)global_batch / s->nmicro / (ra > rb ? ra : rb);
}

static void average(double *avg, double now, double weight)
{
    *avg = *avg > 0 ? (1 - weight) * *avg + weight * now : now;
}

void wp_tune_partition_observe(struct wp_tune_partition *t, const struct wp_measure *m, const struct wp_schedule *s,
                               int global_batch)
{
    for (int st = 0; st < t->nstages; st++) {
        int a, z;
        wp_tune_partition_range(t, t->count, st, &a, &z);
        struct wp_layer_stage_cost ref;
        wp_layer_stage_cost(t->table, a, z, slice_of(s, global_batch, st), s->split_backward, &ref);
        double refs[3] = {ref.forward_s, ref.backward_s, ref.weights_s}, *to[3] = {t->speed_f, t->speed_b, t->speed_w};
        for (int op = WP_OP_F; op <= WP_OP_W; op++) {
            struct wp_measure_pass p = wp_measure_pass_of(m, op, st);
            if (p.count > 0 && refs[op] > 0)
                average(&to[op][st], p.mean_s / refs[op], t->average_weight);
        }
        struct wp_measure_pass ar = wp_measure_pass_of(m, WP_OP_ALLREDUCE, st);
        if (ar.count > 0 && ref.parameter_bytes > 0)
            t->allreduce_s_per_byte[st] = ar.mean_s / ref.parameter_bytes;
    }
    for (int b = 0; b + 1 < t->nstages; b++) {
        double worst = -1;
        for (int dir = WP_MEASURE_ACT; dir <= WP_MEASURE_GRAD; dir++) {
            struct wp_measure_link l = wp_measure_link_of(m, b, dir);
            if (l.timed > 0 && l.bytes > 0 && l.mean_s / l.bytes > worst)
                worst = l.mean_s / l.bytes;
        }
        if (worst >= 0)
            t->link_s_per_byte[b] = worst;
    }
}

/* Per-stage seconds of schedule s on partition count: f, b, w, link and ar,
 * S each, one after the other in buf (5 S). */
static void stage_costs(const struct wp_tune_partition *t, const struct wp_schedule *s, int global_batch,
                        const int *count, double *buf)
{
    int S = t->nstages;
    double *f = buf, *b = buf + S, *w = buf + 2 * S, *link = buf + 3 * S, *ar = buf + 4 * S;
    for (int st = 0; st < S; st++) {
        int a, z;
        wp_tune_partition_range(t, count, st, &a, &z);
        struct wp_layer_stage_cost c;
        wp_layer_stage_cost(t->table, a, z, slice_of(s, global_batch, st), s->split_backward, &c);
        f[st] = c.forward_s * (t->speed_f[st] > 0 ? t->speed_f[st] : 1);
        b[st] = c.backward_s * (t->speed_b[st] > 0 ? t->speed_b[st] : 1);
        w[st] = c.weights_s * (t->speed_w[st] > 0 ? t->speed_w[st] : 1);
        ar[st] = c.parameter_bytes * t->allreduce_s_per_byte[st];
        link[st] = st + 1 < S ? c.out_seq_bytes * message_seqs(s, global_batch, st) * t->link_s_per_byte[st] : 0;
    }
}

/* The simulator's iteration time of schedule s on the stage costs of buf. */
static int predict(const struct wp_tune_partition *t, const struct wp_schedule *s, const double *buf, double *iter_s,
                   struct wp_err *err)
{
    int S = t->nstages;
    struct wp_cost_model cost;
    wp_cost_model_per_stage(&cost, buf, buf + S, buf + 2 * S, buf + 3 * S, buf + 4 * S);
    struct wp_sim_result res;
    int rc = wp_simulate(s, &cost, &res, err);
    if (rc == 0) {
        *iter_s = res.makespan;
        wp_sim_result_destroy(&res);
    }
    return rc;
}

/* A lower bound of predict's time on the stage costs of buf (0: none). */
static double bound(const struct wp_tune_partition *t, const struct wp_schedule *s, const struct wp_rank_work *work,
                    int applies, const double *buf)
{
    int S = t->nstages;
    return wp_makespan_bound(s, work, applies, buf, buf + S, buf + 2 * S, buf + 3 * S, buf + 4 * S);
}

/* Bytes of the training state of table layers [a, z]. */
static double state_bytes(const struct wp_layer_table *table, int a, int z)
{
    double bytes = 0;
    for (int l = a; l <= z; l++)
        bytes += table->layers[l].parameter_bytes + table->layers[l].optimizer_bytes;
    return bytes;
}

/* Seconds to move the state of every layer that changes stage from count
 * to trial over the links it crosses (its old and new stages are
 * neighbours or next but one). */
static double move_cost_s(const struct wp_tune_partition *t, const int *count, const int *trial, double *bytes_out)
{
    double seconds = 0, bytes = 0;
    int old_st = 0, new_st = 0, old_left = count[0], new_left = trial[0];
    for (int u = 0; u < t->nunits; u++) {
        while (old_left == 0)
            old_left = count[++old_st];
        while (new_left == 0)
            new_left = trial[++new_st];
        if (old_st != new_st) {
            int l = u + t->unit_offset, lo = old_st < new_st ? old_st : new_st, hi = old_st ^ new_st ^ lo;
            double b = state_bytes(t->table, l, l), worst = 0;
            for (int k = lo; k < hi; k++)
                worst = t->link_s_per_byte[k] > worst ? t->link_s_per_byte[k] : worst;
            seconds += b * worst;
            bytes += b;
        }
        old_left--;
        new_left--;
    }
    *bytes_out = bytes;
    return seconds;
}

/* "4 layers from stage 0 to 1, ..." of a move from count to trial. */
static void describe(const int *count, const int *trial, int S, char *buf, size_t size)
{
    size_t len = 0;
    int cum_old = 0, cum_new = 0;
    buf[0] = '\0';
    for (int b = 0; b + 1 < S && len < size; b++) {
        cum_old += count[b];
        cum_new += trial[b];
        int shift = cum_new - cum_old; /* > 0: stage b took layers of b + 1 */
        if (shift)
            len += (size_t)snprintf(buf + len, size - len, "%s%d layer%s from stage %d to %d", len ? " and " : "",
                                    abs(shift), abs(shift) > 1 ? "s" : "", shift > 0 ? b + 1 : b,
                                    shift > 0 ? b : b + 1);
    }
}

int wp_tune_partition_decide(struct wp_tune_partition *t, const struct wp_schedule *s, int global_batch,
                             int *count_out, double *predicted_now_s, double *predicted_new_s, char *why, size_t size,
                             struct wp_err *err)
{
    int S = t->nstages, M = t->max_shift;
    double *buf = malloc((size_t)5 * S * sizeof *buf);
    int *trial = malloc((size_t)2 * S * sizeof *trial), *best = trial ? trial + S : NULL;
    struct wp_rank_work *work = malloc((size_t)s->nranks * sizeof *work);
    if (!buf || !trial || !work) {
        free(buf);
        free(trial);
        free(work);
        return wp_errorf(err, "out of memory");
    }
    double now;
    stage_costs(t, s, global_batch, t->count, buf);
    if (predict(t, s, buf, &now, err)) {
        free(buf);
        free(trial);
        free(work);
        return -1;
    }
    /* a move whose lower bound leaves no room to pay is not simulated:
     * the bound decides nothing the simulator would decide otherwise */
    int applies = wp_makespan_bound_prepare(s, work);
    int found = 0, rc = 0, tried = 0, simulated = 0;
    double best_s = now, best_net = 0, best_cost = 0;
    /* one boundary b by d (d > 0: the last d units of stage b go to b + 1;
     * d < 0: the first -d of b + 1 go to b), or with it the next boundary
     * by e (e > 0: the last e units of b + 1 go to b + 2): AutoPipe's moves
     * between two workers first, and only when none pays a stage giving to
     * or taking from both of its neighbours at once */
    for (int pass = 0; pass < 2 && !found && rc == 0; pass++) { /* pairs only when no single move pays */
        for (int b = 0; b + 1 < S && rc == 0; b++)
            for (int d = -M; d <= M && rc == 0; d++)
                for (int e = pass && b + 2 < S ? -M : 0; e <= (pass && b + 2 < S ? M : 0) && rc == 0; e++) {
                    /* with e: the middle stage b + 1 takes from both sides (d > 0 > e)
                     * or gives to both (d < 0 < e); a shift through it is two moves */
                    if (d == 0 || (pass && e == 0) || (e != 0 && (d > 0) == (e > 0)))
                        continue;
                    memcpy(trial, t->count, (size_t)S * sizeof *trial);
                    trial[b] -= d;
                    trial[b + 1] += d - e;
                    if (e)
                        trial[b + 2] += e;
                    int ok = 1;
                    for (int st = 0; st < S; st++)
                        ok &= trial[st] >= 1;
                    if (!ok)
                        continue;
                    tried++;
                    double iter, bytes;
                    double cost = move_cost_s(t, t->count, trial, &bytes) + t->pause_s;
                    stage_costs(t, s, global_batch, trial, buf);
                    double floor_s = bound(t, s, work, applies, buf) * (1 - 1e-9); /* summed in another order */
                    if (!(floor_s < now * (1 - t->min_gain)) || (now - floor_s) * t->horizon_iters - cost <= best_net)
                        continue; /* iter >= floor_s: it cannot pass the test below */
                    simulated++;
                    if ((rc = predict(t, s, buf, &iter, err)) != 0)
                        break;
                    double net = (now - iter) * t->horizon_iters - cost;
                    if (iter < now * (1 - t->min_gain) && net > best_net) {
                        memcpy(best, trial, (size_t)S * sizeof *best);
                        found = 1;
                        best_s = iter;
                        best_net = net;
                        best_cost = cost;
                    }
                }
    }
    free(buf);
    free(work);
    if (rc) {
        free(trial);
        return -1;
    }
    *predicted_now_s = now;
    *predicted_new_s = best_s;
    size_t len = (size_t)snprintf(why, size, "speed factors F");
    for (int st = 0; st < S && len < size; st++)
        len += (size_t)snprintf(why + len, size - len, " %.2f", t->speed_f[st] > 0 ? t->speed_f[st] : 1);
    if (len < size)
        len += (size_t)snprintf(why + len, size - len, "; predicted %.4fs now; %d of %d moves simulated (the "
                                "others bounded below)", now, simulated, tried);
    memcpy(count_out, found ? best : t->count, (size_t)S * sizeof *count_out);
    if (!found) {
        if (len < size)
            snprintf(why + len, size - len, "; no move gains more than %.0f%% and its cost over %.0f iterations: stay",
                     100 * t->min_gain, t->horizon_iters);
        free(trial);
        return 0;
    }
    char moves[512];
    describe(t->count, best, S, moves, sizeof moves);
    if (len < size)
        snprintf(why + len, size - len,
                 "; moving %s: %.4fs (%.1f%% faster), %.3fs saved over %.0f iterations against %.3fs to switch "
                 "(state over the links and the last pause %.3fs): move",
                 moves, best_s, 100 * (now / best_s - 1), (now - best_s) * t->horizon_iters, t->horizon_iters,
                 best_cost, t->pause_s);
    free(trial);
    return 1;
}

void wp_tune_partition_scales(const struct wp_tune_partition *t, const int *count_new, double *stage_scale,
                              double *link_scale)
{
    for (int st = 0; st < t->nstages; st++) {
        int a0, z0, a1, z1;
        wp_tune_partition_range(t, t->count, st, &a0, &z0);
        wp_tune_partition_range(t, count_new, st, &a1, &z1);
        struct wp_layer_stage_cost was, now;
        wp_layer_stage_cost(t->table, a0, z0, 1, 0, &was);
        wp_layer_stage_cost(t->table, a1, z1, 1, 0, &now);
        double w = was.forward_s + was.backward_s, n = now.forward_s + now.backward_s;
        stage_scale[st] = w > 0 ? n / w : 1;
        if (st + 1 < t->nstages)
            link_scale[st] = was.out_seq_bytes > 0 ? now.out_seq_bytes / was.out_seq_bytes : 1;
    }
}
