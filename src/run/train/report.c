/* What a training run reports (report.h): results rows, the step line,
 * the summary, the bytes line, the measured trace, kernel times and the
 * cost of measuring. */
#include "run/train/report.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernel_times.h"
#include "plan/tp_block.h"
#include "run/model/stage_gpt2.h"
#include "sched/simulate.h"
#include "sched/trace.h"
#include "util/atomic_file.h"
#include "util/stats.h"

#define RESULTS_HEADER_BASE                                                                                \
    "timestamp,schedule,ranks,nodes,stages,replicas,waves,k,chunks,micro_batches,micro_batch_size,global_batch," \
    "iteration,iter_time_s,samples_per_s,tokens_per_s,bubble_ratio,peak_activation_bytes,loss"
/* every row ends with what adapted and what the iteration measured, so that
 * adaptive and static runs compare from the rows alone (issue 12) */
#define RESULTS_HEADER_ADAPT ",adapt,partition,pause_s,stage_compute_s,link_bandwidth_Bps"
/* real rows add the kernels' precision (fp32, tf32, bf16) */
#define RESULTS_HEADER RESULTS_HEADER_BASE ",precision" RESULTS_HEADER_ADAPT
/* emulated rows add how compute was done, the layer table, the run's time
 * dilation and byte scaling (its times are undilated, its bytes the
 * model's) and how busy the host's processors were in the iteration */
#define RESULTS_HEADER_EMULATED \
    RESULTS_HEADER_BASE ",compute,layer_table,dilation,byte_scale,host_busy" RESULTS_HEADER_ADAPT

/* Rows of real and emulated compute do not share a file, nor do rows
 * without the adapt columns (an older wavepipe's) and rows with them. */
const char *wp_report_results_header(int emulated)
{
    return emulated ? RESULTS_HEADER_EMULATED : RESULTS_HEADER;
}

/* The columns of RESULTS_HEADER_ADAPT (leading comma and newline included)
 * into buf: which tuner ran; the units per stage the iteration ran
 * (partition, as wp_adapt_partition_text joins them); the pause of a move
 * after it; per stage the agreed mean F + B + W seconds of one micro-batch
 * slice (a pass that did not run counts 0); per boundary the achieved
 * bandwidth of the slower direction, 0 where no message was timed. The
 * length, or -1 when buf is too small. */
static int adapt_columns(const struct wp_adapt_options *adapt, const char *partition, double pause_s,
                         const struct wp_measure *m, char *buf, size_t size)
{
    const char *mode = adapt->k && adapt->partition ? "both" : adapt->k ? "k" : adapt->partition ? "partition" : "none";
    size_t at = 0;
    int n = snprintf(buf, size, ",%s,%s,%.6f,", mode, partition, pause_s);
    for (int st = 0; n >= 0 && (at += (size_t)n) < size && st < m->nstages; st++) {
        double s = 0;
        for (int op = WP_OP_F; op <= WP_OP_W; op++)
            s += wp_measure_pass_of(m, op, st).mean_s;
        n = snprintf(buf + at, size - at, "%s%.6g", st ? ":" : "", s);
    }
    if (n < 0 || at >= size)
        return -1;
    n = snprintf(buf + at, size - at, ",");
    for (int b = 0; n >= 0 && (at += (size_t)n) < size && b + 1 < m->nstages; b++) {
        double slower = 0;
        for (int dir = WP_MEASURE_ACT; dir <= WP_MEASURE_GRAD; dir++) {
            struct wp_measure_link l = wp_measure_link_of(m, b, dir);
            if (l.timed > 0 && l.bandwidth_Bps > 0 && (slower == 0 || l.bandwidth_Bps < slower))
                slower = l.bandwidth_Bps;
        }
        n = snprintf(buf + at, size - at, "%s%.6g", b ? ":" : "", slower);
    }
    if (n < 0 || at >= size)
        return -1;
    n = snprintf(buf + at, size - at, "\n");
    return n < 0 || (at += (size_t)n) >= size ? -1 : (int)at;
}

const char *wp_report_results_kind(int emulated)
{
    return emulated ? "emulated compute rows" : "real compute rows";
}

int wp_report_results_row(const struct wp_report_row *r, char *row, size_t cap)
{
    time_t now = time(NULL);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const struct wp_schedule *ran = r->ran;
    int G = r->global_batch;
    double iter = r->iter_s;
    /* emulated: no tokens (the table has none), no loss */
    double tokens = r->emulated ? 0 : (double)G * r->sequence_length / iter;
    const struct wp_sched_params *p = &ran->params;
    int k = p->kind == WP_SCHED_KFKB ? p->k : p->kind == WP_SCHED_GPIPE ? ran->nmicro : 1;
    int row_len = snprintf(row, cap, "%s,%s,%d,%d,%d,%s,%d,%d,%d,%d,%d,%d,%ld,%.6f,%.3f,%.1f,%.4f,%.0f,%.9g%s%s",
                           stamp, wp_sched_kind_name(p->kind), r->world_ranks, r->nodes, ran->nstages, r->replicas,
                           p->kind == WP_SCHED_HANAYO ? p->waves : 1, k,
                           wp_sched_kind_has_chunks(p->kind) ? p->chunks : 1, ran->nmicro, G / ran->nmicro, G, r->step,
                           iter, G / iter, tokens, r->bubble, r->peak_bytes, r->loss, ",", r->compute_cols);
    if (row_len < 0 || (size_t)row_len >= cap)
        return -1;
    if (r->emulated) { /* host_busy: empty where /proc/stat gave nothing */
        int n = r->host_busy >= 0 ? snprintf(row + row_len, cap - (size_t)row_len, ",%.3f", r->host_busy)
                                  : snprintf(row + row_len, cap - (size_t)row_len, ",");
        if (n < 0 || (size_t)(row_len += n) >= cap)
            return -1;
    }
    int tail = adapt_columns(r->adapt, r->partition, r->pause_s, r->measure, row + row_len, cap - (size_t)row_len);
    return tail < 0 ? -1 : row_len + tail;
}

void wp_report_step_line(long step, int steps, double loss, double iter_s, int global_batch, double bubble)
{
    if (isatty(STDOUT_FILENO)) /* a progress line on a terminal, one line per step in logs */
        printf("\rstep %ld/%d: loss %.6f, %.3f s/step, %.1f samples/s, about %.0f s left   %s", step + 1, steps, loss,
               iter_s, global_batch / iter_s, iter_s * (double)(steps - step - 1), step + 1 == steps ? "\n" : "");
    else
        printf("step %ld: loss %.9g, %.3f s, bubble %.3f\n", step, loss, iter_s, bubble);
    fflush(stdout);
}

/* --kernel-times: every rank's rows (kernel_times.h) gathered to rank 0,
 * which writes them (temporary name, then renamed). */
int wp_report_kernel_times(const char *path, int rank, int P, long steps, struct wp_err *err)
{
    char *mine = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&mine, &len);
    if (mem) {
        wp_kernel_times_write(mem, rank, steps, 0);
        fclose(mem);
    }
    int n = mine ? (int)len : 0, *lens = rank == 0 ? calloc((size_t)P, sizeof *lens) : NULL;
    int *offs = rank == 0 ? calloc((size_t)P, sizeof *offs) : NULL;
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    for (int r = 0; rank == 0 && lens && offs && r < P; r++) {
        offs[r] = (int)total;
        total += (size_t)lens[r];
    }
    char *all = rank == 0 ? malloc(total + 1) : NULL;
    MPI_Gatherv(mine, n, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
    int rc = 0;
    if (rank == 0) {
        struct wp_atomic_file af;
        if (!all || !lens || !offs)
            rc = wp_errorf(err, "out of memory");
        else if ((rc = wp_atomic_open(&af, path, err)) == 0) {
            fprintf(af.fp, "rank,kernel,calls,wall_s,cpu_s\n");
            fwrite(all, 1, total, af.fp);
            rc = wp_atomic_commit(&af, err);
        }
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(mine);
    free(all);
    free(lens);
    free(offs);
    if (rc == 0)
        return 0;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", rank == 0 && err->msg[0] ? err->msg : "rank 0 cannot write it");
    return wp_errorf(err, "--kernel-times: %s", why);
}

void wp_report_summary(const struct wp_interp *in, const struct wp_schedule *s, const struct wp_report_summary *rs)
{
    int S = s->nstages, P = rs->P;
    double *sums = calloc((size_t)S * 6 + 2, sizeof *sums); /* F, B, W seconds and counts per stage */
    if (!sums)
        return;
    for (long i = 0; rs->speaks && i < in->timing.nevents; i++) {
        int op = in->timing.events[i].op, st = in->timing.events[i].stage;
        if (op > WP_OP_W)
            continue;
        sums[st * 6 + op] += in->timing.events[i].cpu;
        sums[st * 6 + 3 + op] += 1;
    }
    sums[S * 6] = rs->speaks ? in->timing.busy_s : 0;
    sums[S * 6 + 1] = in->timing.iter_s;
    MPI_Allreduce(MPI_IN_PLACE, sums, S * 6 + 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &sums[S * 6 + 1], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double *f = rs->rank == 0 ? malloc((size_t)S * 3 * sizeof *f) : NULL;
    if (f) {
        for (int st = 0; st < S; st++)
            for (int op = 0; op < 3; op++)
                f[op * S + st] = sums[st * 6 + 3 + op] > 0 ? sums[st * 6 + op] / sums[st * 6 + 3 + op] : 0;
        struct wp_cost_model cost;
        wp_cost_model_default(&cost);
        if (rs->table) {
            cost.stage_f = rs->table->forward_s;
            cost.stage_b = rs->table->backward_s;
            cost.stage_w = rs->table->weights_s;
            cost.stage_step_s = rs->table->step_s;
        } else {
            cost.stage_f = f;
            cost.stage_b = f + S;
            cost.stage_w = f + 2 * S;
            cost.cores = rs->shared_cores;
        }
        struct wp_sim_result res;
        struct wp_err err;
        double last = sums[S * 6 + 1], iter = rs->median_iter_s > 0 ? rs->median_iter_s : last;
        double measured_bubble = last > 0 ? 1.0 - sums[S * 6] / (P * last) : 0;
        if (wp_simulate(s, &cost, &res, &err) == 0) {
            char what[1200];
            if (rs->table && (rs->dilation != 1 || rs->byte_scale != 1))
                snprintf(what, sizeof what, "compute=emulated from %s dilated %gx with messages of 1/%g of the "
                         "model's bytes, times and bytes reported undilated, simulated with the table's costs",
                         rs->table_name, rs->dilation, rs->byte_scale);
            else if (rs->table)
                snprintf(what, sizeof what, "compute=emulated from %s, simulated with the table's costs",
                         rs->table_name);
            else
                snprintf(what, sizeof what, "compute=real in %s, simulated with the measured work per stage%s",
                         rs->precision, rs->shared_cores ? " on the node's shared cores" : "");
            char ranks[160], copies[64] = "";
            int t = rs->mesh[0] * rs->mesh[1] * rs->mesh[2], D = s->params.data_parallel;
            if (D > 1)
                snprintf(copies, sizeof copies, "%s%d data-parallel copies of %d", t > 1 ? ", " : "", D, P / D);
            if (t > 1)
                snprintf(ranks, sizeof ranks, "%d (%d schedule ranks x mesh %dx%dx%d%s)", P * t, P, rs->mesh[0],
                         rs->mesh[1], rs->mesh[2], copies);
            else
                snprintf(ranks, sizeof ranks, D > 1 ? "%d (%s)" : "%d%s", P, copies);
            char host[64] = "";
            if (rs->host_busy >= 0)
                snprintf(host, sizeof host, ", host busy %.1f %%", 100 * rs->host_busy);
            printf("summary: schedule %s, ranks %s, stages %d, micro-batches %d: %.3f samples/s, bubble ratio "
                   "measured %.3f simulated %.3f, iteration measured %.4f s simulated %.4f s (overhead %.2f; %s, "
                   "messages%s free), peak activation memory %.2f MiB, loss %.6f%s\n",
                   wp_sched_kind_name(s->params.kind), ranks, S, s->nmicro, in->global_batch / iter, measured_bubble,
                   res.bubble_ratio, iter, res.makespan, res.makespan > 0 ? iter / res.makespan : 0, what,
                   t > 1 ? " and the mesh's collectives" : "",
                   rs->peak_bytes / 1048576.0, in->last_loss, host);
            wp_sim_result_destroy(&res);
        }
        free(f);
    }
    free(sums);
}

/* The last step's bytes by kind, as this rank handed them to the comm
 * table (run/core/interpreter.h, run/comm/tensor_group.h), against the cost model's
 * volumes: a message carries its micro-batch's share of the more
 * replicated of its two stages, b T C floats (DAPPLE's split and concat),
 * over a mesh's axis 0 too; a replicated stage sums its gradients, the
 * planner's parameter count (plan/tp_block.h per block, the embeddings and
 * the head); the tied embedding V C; a mesh's blocks plan/tp_block.h's
 * collectives (a recomputing stage's forward ones again per backward).
 * Rank 0 prints its own and whether every rank's agree exactly. */
void wp_report_bytes(const struct wp_interp *in, const struct wp_tensor_group *tg, const struct wp_schedule *s,
                     const struct wp_gpt2_config *g, enum wp_precision precision, int rank)
{
    const double message_element_bytes = wp_precision_bytes(precision).activation;
    int p0 = tg ? tg->p0 : 1, p1 = tg ? tg->shard.p1 : 1, p2 = tg ? tg->shard.p2 : 1;
    double C = g->channels, T = g->sequence_length, V = g->vocabulary;
    struct wp_tp_block_volume model, v;
    memset(&model, 0, sizeof model);
    double send_model = 0, grad_model = 0, tied_model = 0, axis0_model = 0, boundary_model = 0;
    long sends = 0, grad_sums = 0, tied_sums = 0, axis0_calls = 0, boundary_calls = 0;
    const struct wp_action_list *l = &s->lists[in->rank];
    for (int i = 0; i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (!wp_op_is_send(a->op))
            continue;
        int other = a->op == WP_OP_SEND_ACT ? a->stage + 1 : a->stage - 1;
        int r = s->place[a->stage].nreplicas > s->place[other].nreplicas ? s->place[a->stage].nreplicas
                                                                           : s->place[other].nreplicas;
        sends++;
        /* a lane's column block, in the precision's bytes (bf16 crosses the wire as bfloat16) */
        send_model += (double)in->mb_sequences / r / p0 / (p1 * p2) * T * C * message_element_bytes;
    }
    int tied_here = 0;
    for (int h = 0; h < in->nheld; h++) {
        const struct wp_gpt2_stage *st = wp_stage_gpt2_model(&in->held[h].exec);
        if (!st)
            continue;
        int stage = in->held[h].stage, forwards = 0, backwards = 0, allreduces = 0;
        int nblocks = st->layout.end_block - st->layout.first_block;
        for (int i = 0; i < l->count; i++) {
            forwards += l->actions[i].op == WP_OP_F && l->actions[i].stage == stage;
            backwards += l->actions[i].op == WP_OP_B && l->actions[i].stage == stage;
            allreduces += l->actions[i].op == WP_OP_ALLREDUCE && l->actions[i].stage == stage;
        }
        if (p1 * p2 > 1) { /* the boundaries' gathers: the input before F, the output's gradient before B */
            int gathers = (st->layout.has_embedding ? 0 : forwards) + (st->layout.has_head ? 0 : backwards);
            boundary_calls += gathers;
            boundary_model += (double)gathers * st->B * T * C;
        }
        double params = (double)nblocks * wp_tp_block_param_floats(p1, p2, g->channels) +
                        (st->layout.has_embedding ? V * C + (double)g->max_positions * C : 0) +
                        (st->layout.has_head ? 2 * C + V * C : 0);
        if (s->place[stage].nreplicas * s->place[stage].ncopies > 1) {
            grad_sums += allreduces;
            grad_model += allreduces * params * 4;
        }
        tied_here |= s->nstages > 1 && (stage == 0 || stage == s->nstages - 1);
        if (tg) {
            wp_tp_block_volume(p1, p2, (double)st->B * T, g->channels, &v);
            struct wp_tp_block_volume again; /* a recomputing stage's forward before each backward */
            wp_tp_block_forward_volume(p1, p2, (double)st->B * T, g->channels, &again);
            int recomputed = st->recompute ? backwards : 0;
            for (int c = 0; c < WP_TP_CALL_COUNT; c++) {
                model.calls[c] += forwards * nblocks * v.calls[c] + recomputed * nblocks * again.calls[c];
                model.elements[c] += (double)forwards * nblocks * v.elements[c] +
                                     (double)recomputed * nblocks * again.elements[c];
            }
            if (p0 > 1) {
                axis0_calls++;
                axis0_model += params;
            }
        }
    }
    if (tied_here) { /* summed between ranks when the two ends' holders are not one rank */
        int *holders = malloc((size_t)2 * s->nranks * sizeof *holders), distinct = 0;
        int n0 = holders ? wp_stage_holders_sorted(s, 0, holders) : 0;
        int n1 = holders ? wp_stage_holders_sorted(s, s->nstages - 1, holders + n0) : 0;
        for (int i = 1; i < n0 + n1; i++)
            distinct |= holders[i] != holders[0];
        free(holders);
        tied_sums = distinct;
        tied_model = distinct ? V * C * 4 : 0;
    }
    int agree = sends == in->bytes.sends && send_model == in->bytes.send_bytes && grad_sums == in->bytes.grad_sums &&
                grad_model == in->bytes.grad_sum_bytes && tied_sums == in->bytes.tied_sums &&
                tied_model == in->bytes.tied_sum_bytes;
    for (int c = 0; tg && c < WP_TP_CALL_COUNT; c++)
        agree &= model.calls[c] == tg->calls[c] && model.elements[c] == tg->elements[c];
    agree &= !tg || (axis0_calls == tg->axis0_calls && axis0_model == tg->axis0_elements &&
                     boundary_calls == tg->boundary_calls && boundary_model == tg->boundary_elements);
    MPI_Allreduce(MPI_IN_PLACE, &agree, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank != 0)
        return;
    printf("bytes: rank 0 in the last step, measured (model), each call's whole vector: p2p %ld sends %.0f B "
           "(%ld, %.0f B); gradient sums %ld calls %.0f B (%ld, %.0f B); tied embedding %ld calls %.0f B (%ld, "
           "%.0f B)",
           in->bytes.sends, in->bytes.send_bytes, sends, send_model, in->bytes.grad_sums, in->bytes.grad_sum_bytes,
           grad_sums, grad_model, in->bytes.tied_sums, in->bytes.tied_sum_bytes, tied_sums, tied_model);
    if (tg) {
        printf("; mesh %dx%dx%d: axis-0 gradient sum %ld calls %.0f B (%ld, %.0f B); boundary gathers %ld calls "
               "%.0f B (%ld, %.0f B)",
               p0, p1, p2, tg->axis0_calls, 4 * tg->axis0_elements, axis0_calls, 4 * axis0_model, tg->boundary_calls,
               4 * tg->boundary_elements, boundary_calls, 4 * boundary_model);
        for (int c = 0; c < WP_TP_CALL_COUNT; c++)
            printf("; %s %ld calls %.0f B (%d, %.0f B)", wp_tp_call_name(c), tg->calls[c], 4 * tg->elements[c],
                   model.calls[c], 4 * model.elements[c]);
    }
    printf("; every rank's equal to the model: %s\n", agree ? "yes" : "NO");
}

/* One instant event per decision of --adapt, on the run's timeline (the
 * common one less run_origin_s); their args are allocated (NULL: none). */
static struct wp_trace_mark *decision_marks(const struct wp_report_timeline *tl, double run_origin_s)
{
    const struct wp_adapt *a = tl->adapt;
    struct wp_trace_mark *marks = calloc((size_t)(a->ndecisions ? a->ndecisions : 1), sizeof *marks);
    for (int i = 0; marks && i < a->ndecisions; i++) {
        const struct wp_adapt_decision *d = &a->decisions[i];
        int is_k = strcmp(d->adapt, "k") == 0;
        size_t args_len = wp_adapt_decision_json(d, NULL, 0) + 1;
        char *args = malloc(args_len);
        if (args)
            wp_adapt_decision_json(d, args, args_len);
        marks[i].t_s = wp_clock_at(tl->clock, d->decided_wtime_s) - run_origin_s;
        marks[i].name = is_k ? (d->switched ? "adapt k: switch" : "adapt k: stay")
                             : (d->switched ? "adapt partition: move" : "adapt partition: stay");
        marks[i].args_json = args;
    }
    return marks;
}

/* The measured timeline of the last step, gathered into rank 0's trace
 * and SVG on the common clock: every rank's computes, and the messages it
 * received, from the send's post (sent_s, per action) to the receive seen
 * complete, drawn as the sender's, the way the simulator draws transfers.
 * Both count from the iteration's first event; with --adapt (tl->adapt)
 * the trace counts from the run's start instead and marks its decisions. */
void wp_report_measured_trace(const struct wp_interp *pin, const struct wp_schedule *sched, const double *msg_sent_s,
                              const char *trace_path, const char *svg_path, const struct wp_report_timeline *tl,
                              int world_rank, int world_P, int lane, const char *command)
{
    struct wp_err err = {""};
    enum { FIELDS = 7 }; /* rank, op, stage, mb, peer, start, end */
    int rank = pin->rank, P = sched->nranks; /* the schedule's (a tensor group's lane 0 draws it) */
    const struct wp_action_list *l = &sched->lists[rank];
    long n = lane == 0 ? pin->timing.nevents : 0, nmsg = 0;
    if (lane != 0)
        msg_sent_s = NULL;
    for (int i = 0; msg_sent_s && i < l->count; i++)
        nmsg += wp_op_is_recv(l->actions[i].op);
    double *mine = malloc((size_t)(n + nmsg + 1) * FIELDS * sizeof *mine);
    long nev = 0;
    for (long i = 0; mine && i < n; i++, nev++) {
        double *e = mine + FIELDS * nev;
        e[0] = rank;
        e[1] = pin->timing.events[i].op;
        e[2] = pin->timing.events[i].stage;
        e[3] = pin->timing.events[i].mb;
        e[4] = -1;
        e[5] = pin->timing.start_s + pin->timing.events[i].start;
        e[6] = pin->timing.start_s + pin->timing.events[i].end;
    }
    for (int i = 0; mine && msg_sent_s && i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (!wp_op_is_recv(a->op))
            continue;
        int act = a->op == WP_OP_RECV_ACT;
        double *e = mine + FIELDS * nev++;
        e[0] = a->peer;
        e[1] = act ? WP_OP_SEND_ACT : WP_OP_SEND_GRAD;
        e[2] = act ? a->stage - 1 : a->stage + 1;
        e[3] = a->microbatch;
        e[4] = rank;
        e[5] = msg_sent_s[i];
        e[6] = pin->msg_done_s[i];
    }
    int count = (int)(FIELDS * nev), *counts = NULL, *displs = NULL;
    double *all = NULL;
    if (world_rank == 0) {
        counts = calloc((size_t)world_P, sizeof *counts);
        displs = calloc((size_t)world_P, sizeof *displs);
    }
    MPI_Gather(&count, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int total = 0;
    if (world_rank == 0) {
        for (int r = 0; r < world_P; r++) {
            displs[r] = total;
            total += counts[r];
        }
        all = malloc((size_t)(total ? total : 1) * sizeof *all);
    }
    MPI_Gatherv(mine, count, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (world_rank == 0) {
        struct wp_sim_result res;
        memset(&res, 0, sizeof res);
        res.nranks = P;
        res.events = calloc((size_t)(total / FIELDS + 1), sizeof *res.events);
        double origin = INFINITY; /* the first event starts the timeline */
        for (int i = 0; i + FIELDS <= total; i += FIELDS)
            origin = all[i + 5] < origin ? all[i + 5] : origin;
        for (int i = 0; res.events && i + FIELDS <= total; i += FIELDS) {
            struct wp_sim_event *e = &res.events[res.nevents++];
            *e = (struct wp_sim_event){(int)all[i], (int8_t)all[i + 1], (int)all[i + 2], (int)all[i + 3],
                                       (int)all[i + 4], all[i + 5] - origin, all[i + 6] - origin};
            if (e->end > res.makespan)
                res.makespan = e->end;
        }
        char title[160], dilated[64] = "";
        if (tl->clock->dilation != 1)
            snprintf(dilated, sizeof dilated, ", dilation=%g: times undilated", tl->clock->dilation);
        snprintf(title, sizeof title, "%s, P=%d, M=%d (measured%s)", wp_sched_kind_name(sched->params.kind), P,
                 sched->nmicro, dilated);
        int rc = svg_path ? wp_trace_write_svg(svg_path, &res, title, &err) : 0;
        if (rc == 0 && trace_path && !tl->adapt) {
            rc = wp_trace_write_json(trace_path, &res, title, &err);
        } else if (rc == 0 && trace_path) {
            /* the run's start is the origin: the iteration after the decisions */
            double run_origin_s = tl->run_start_s < origin ? tl->run_start_s : origin;
            double iteration_at_s = isfinite(origin) ? origin - run_origin_s : 0;
            for (long i = 0; i < res.nevents; i++) {
                res.events[i].start += iteration_at_s;
                res.events[i].end += iteration_at_s;
            }
            res.makespan += iteration_at_s;
            struct wp_trace_mark *marks = decision_marks(tl, run_origin_s);
            char other[160];
            snprintf(other, sizeof other, "\"traced_iteration\":%ld,\"traced_iteration_start_s\":%.6f",
                     tl->traced_iteration, iteration_at_s);
            struct wp_trace_marks extra = {marks, marks ? tl->adapt->ndecisions : 0, "adapt decisions", other};
            rc = wp_trace_write_json_marked(trace_path, &res, title, &extra, &err);
            for (int i = 0; marks && i < tl->adapt->ndecisions; i++)
                free((void *)marks[i].args_json);
            free(marks);
        }
        if (rc)
            wp_err_print(command, &err);
        free(res.events);
    }
    free(mine);
    free(all);
    free(counts);
    free(displs);
}

void wp_report_measuring(double *measure_s, long n, double median_iter_s, int tuning)
{
    double mean = 0; /* before sorting: the decisions' cost shows in the mean */
    for (long i = 1; i <= n; i++)
        mean += measure_s[i] / (double)n;
    double cost = wp_stat3_sorted(measure_s + 1, (size_t)n).median;
    printf("measuring%s: %.3f ms per iteration to pair the messages' times and agree the sums%s (median, "
           "%.2f %% of the iteration; mean %.3f ms, %.2f %%; a rank the machine holds back shows here)\n",
           tuning ? " and tuning" : "", 1e3 * cost, tuning ? ", and every N to decide" : "",
           100 * cost / median_iter_s, 1e3 * mean, 100 * mean / median_iter_s);
}
