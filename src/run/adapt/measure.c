/* Per-iteration measurements (see measure.h). The flat block of sums:
 *   compute: per stage, per pass F, B, W and ALLREDUCE: seconds, count
 *   links:   per boundary and direction: messages, bytes, timed messages
 *            and their seconds
 * so that one allreduce agrees everything. */
#include "run/adapt/measure.h"

#include "run/comm/comm_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/action.h"

enum { PASSES = 4, PASS_SUMS = 2, LINK_SUMS = 4 };
enum { L_COUNT, L_BYTES, L_TIMED, L_SECONDS };

static int pass_index(int op)
{
    return op == WP_OP_ALLREDUCE ? 3 : op; /* F 0, B 1, W 2 */
}

static double *pass_sums(const struct wp_measure *m, int op, int stage)
{
    return m->sums + ((size_t)stage * PASSES + (size_t)pass_index(op)) * PASS_SUMS;
}

static double *link_sums(const struct wp_measure *m, int boundary, int dir)
{
    return m->sums + (size_t)m->nstages * PASSES * PASS_SUMS + ((size_t)boundary * 2 + (size_t)dir) * LINK_SUMS;
}

int wp_measure_init(struct wp_measure *m, int nstages, struct wp_err *err)
{
    m->nstages = nstages;
    m->messages_comm = MPI_COMM_WORLD;
    m->nsums = nstages * PASSES * PASS_SUMS + (nstages > 1 ? nstages - 1 : 0) * 2 * LINK_SUMS;
    m->sums = calloc((size_t)m->nsums, sizeof *m->sums);
    return m->sums ? 0 : wp_errorf(err, "out of memory");
}

void wp_measure_destroy(struct wp_measure *m)
{
    free(m->sums);
    m->sums = NULL;
}

void wp_measure_reset(struct wp_measure *m)
{
    memset(m->sums, 0, (size_t)m->nsums * sizeof *m->sums);
}

void wp_measure_compute(struct wp_measure *m, int op, int stage, double seconds)
{
    double *p = pass_sums(m, op, stage);
    p[0] += seconds;
    p[1] += 1;
}

/* A message's channel on its receiver: boundary and direction. */
static int channel_of(const struct wp_action *a)
{
    switch (a->op) {
    case WP_OP_SEND_ACT: return 2 * (int)a->stage + WP_MEASURE_ACT;
    case WP_OP_RECV_ACT: return 2 * ((int)a->stage - 1) + WP_MEASURE_ACT;
    case WP_OP_SEND_GRAD: return 2 * ((int)a->stage - 1) + WP_MEASURE_GRAD;
    default: return 2 * (int)a->stage + WP_MEASURE_GRAD; /* WP_OP_RECV_GRAD */
    }
}

/* Adds rank's receives from peer. theirs holds the post times of the
 * peer's sends to rank in the order of its list (n of them); on each
 * channel the k-th send pairs with the k-th receive (MPI's order).
 * ch_of has room for n, cursor for every channel. */
static void pair_with(struct wp_measure *m, const struct wp_schedule *s, int rank, int peer, const double *theirs,
                      int n, const double *posted_s, const double *done_s, const double *bytes, double *sent_s,
                      int *ch_of, int *cursor)
{
    const struct wp_action_list *mine = &s->lists[rank], *them = &s->lists[peer];
    int k = 0;
    for (int j = 0; j < them->count && k < n; j++)
        if (wp_op_is_send(them->actions[j].op) && them->actions[j].peer == rank)
            ch_of[k++] = channel_of(&them->actions[j]);
    for (int c = 0; c < 2 * m->nstages; c++)
        cursor[c] = 0;
    for (int i = 0; i < mine->count; i++) {
        const struct wp_action *a = &mine->actions[i];
        if (!wp_op_is_recv(a->op) || a->peer != peer)
            continue;
        int ch = channel_of(a);
        while (cursor[ch] < n && ch_of[cursor[ch]] != ch)
            cursor[ch]++;
        if (cursor[ch] == n)
            continue; /* no send pairs with it: not a schedule that ran */
        double sent = theirs[cursor[ch]++];
        if (sent_s)
            sent_s[i] = sent;
        double *l = link_sums(m, ch / 2, ch % 2);
        l[L_COUNT] += 1;
        l[L_BYTES] += bytes[i];
        if (posted_s[i] <= sent) { /* the receiver was waiting: the transfer is timed */
            l[L_TIMED] += 1;
            l[L_SECONDS] += done_s[i] - sent;
        }
    }
}

int wp_measure_messages(struct wp_measure *m, const struct wp_schedule *s, int rank, const double *posted_s,
                        const double *done_s, const double *bytes, double *sent_s, struct wp_err *err)
{
    int P = s->nranks;
    const struct wp_action_list *l = &s->lists[rank];
    int *counts = calloc((size_t)P * 4, sizeof *counts); /* send counts, their displacements, receive ... */
    int *scount = counts, *sdispl = counts + P, *rcount = counts + 2 * P, *rdispl = counts + 3 * P;
    if (!counts)
        return wp_errorf(err, "out of memory");
    int nsend = 0, nrecv = 0;
    for (int i = 0; i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (wp_op_is_send(a->op))
            scount[a->peer]++, nsend++;
        else if (wp_op_is_recv(a->op))
            rcount[a->peer]++, nrecv++;
    }
    int most = 0;
    for (int p = 1; p < P; p++) {
        sdispl[p] = sdispl[p - 1] + scount[p - 1];
        rdispl[p] = rdispl[p - 1] + rcount[p - 1];
    }
    for (int p = 0; p < P; p++)
        most = rcount[p] > most ? rcount[p] : most;
    double *out = malloc((size_t)(nsend + 1) * sizeof *out), *in = malloc((size_t)(nrecv + 1) * sizeof *in);
    int *fill = calloc((size_t)P, sizeof *fill);
    int *ch_of = malloc((size_t)(most + 1) * sizeof *ch_of), *cursor = malloc((size_t)(2 * m->nstages) * sizeof *cursor);
    int rc = out && in && fill && ch_of && cursor ? 0 : wp_errorf(err, "out of memory");
    for (int i = 0; rc == 0 && i < l->count; i++) {
        const struct wp_action *a = &l->actions[i];
        if (wp_op_is_send(a->op))
            out[sdispl[a->peer] + fill[a->peer]++] = posted_s[i];
    }
    MPI_Request req;
    if (rc == 0 &&
        wp_comm_mpi_wait(MPI_Ialltoallv(out, scount, sdispl, MPI_DOUBLE, in, rcount, rdispl, MPI_DOUBLE,
                                        m->messages_comm, &req),
                         &req))
        rc = wp_errorf(err, "exchanging the messages' send times failed");
    for (int p = 0; rc == 0 && p < P; p++)
        if (rcount[p])
            pair_with(m, s, rank, p, in + rdispl[p], rcount[p], posted_s, done_s, bytes, sent_s, ch_of, cursor);
    free(counts);
    free(out);
    free(in);
    free(fill);
    free(ch_of);
    free(cursor);
    return rc;
}

int wp_measure_agree(struct wp_measure *m, struct wp_err *err)
{
    MPI_Request req;
    if (wp_comm_mpi_wait(MPI_Iallreduce(MPI_IN_PLACE, m->sums, m->nsums, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req),
                         &req))
        return wp_errorf(err, "the allreduce of the iteration's measurements failed");
    return 0;
}

struct wp_measure_pass wp_measure_pass_of(const struct wp_measure *m, int op, int stage)
{
    const double *p = pass_sums(m, op, stage);
    return (struct wp_measure_pass){p[1], p[1] > 0 ? p[0] / p[1] : 0};
}

struct wp_measure_link wp_measure_link_of(const struct wp_measure *m, int boundary, int dir)
{
    const double *l = link_sums(m, boundary, dir);
    struct wp_measure_link out = {l[L_COUNT], l[L_TIMED], 0, 0, 0};
    if (l[L_COUNT] > 0)
        out.bytes = l[L_BYTES] / l[L_COUNT];
    if (l[L_TIMED] > 0) {
        out.mean_s = l[L_SECONDS] / l[L_TIMED];
        out.bandwidth_Bps = out.mean_s > 0 ? out.bytes / out.mean_s : 0;
    }
    return out;
}

int wp_measure_csv_rows(const struct wp_measure *m, long iteration, char *buf, size_t size)
{
    static const char *const pass_names[] = {"F", "B", "W", "allreduce"};
    static const int pass_ops[] = {WP_OP_F, WP_OP_B, WP_OP_W, WP_OP_ALLREDUCE};
    size_t at = 0;
    for (int st = 0; st < m->nstages; st++)
        for (int k = 0; k < PASSES; k++) {
            struct wp_measure_pass p = wp_measure_pass_of(m, pass_ops[k], st);
            if (p.count == 0)
                continue;
            int n = snprintf(buf + at, size - at, "%ld,%s,%d,%.0f,%.9f,,,\n", iteration, pass_names[k], st, p.count,
                             p.mean_s);
            if (n < 0 || (size_t)n >= size - at)
                return -1;
            at += (size_t)n;
        }
    for (int b = 0; b + 1 < m->nstages; b++)
        for (int dir = 0; dir < 2; dir++) {
            struct wp_measure_link l = wp_measure_link_of(m, b, dir);
            if (l.count == 0)
                continue;
            int n = snprintf(buf + at, size - at, "%ld,%s,%d,%.0f,%.9f,%.0f,%.0f,%.6g\n", iteration,
                             dir == WP_MEASURE_ACT ? "activation" : "gradient", b + 1, l.count, l.mean_s, l.bytes,
                             l.timed, l.bandwidth_Bps);
            if (n < 0 || (size_t)n >= size - at)
                return -1;
            at += (size_t)n;
        }
    return (int)at;
}
