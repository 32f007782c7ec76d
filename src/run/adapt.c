/* The run's self-tuning between iterations (see adapt.h). */
#include "run/adapt.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/csv_append.h"
#include "util/read_file.h"

/* "n0:n1:..." of nstages counts >= 1 into count; 0 when it is one. */
static int parse_partition(const char *text, int nstages, int *count)
{
    const char *c = text;
    for (int s = 0; s < nstages; s++) {
        char *end;
        long n = strtol(c, &end, 10);
        if (end == c || n < 1 || n > 1 << 20 || (s + 1 < nstages ? *end != ':' : *end != '\0'))
            return -1;
        count[s] = (int)n;
        c = end + 1;
    }
    return 0;
}

void wp_adapt_partition_text(const int *count, int nstages, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int s = 0; s < nstages && len < size; s++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", s ? ":" : "", count[s]);
}

/* The switched rows of a decision log: k rows give to_k and
 * to_micro_batch, partition rows to_partition. */
static int read_replay(struct wp_adapt *a, const char *path, struct wp_err *err)
{
    size_t len;
    char *text = wp_read_file(path, &len);
    if (!text)
        return wp_errorf(err, "%s: %s", path, strerror(errno));
    int line = 0, rc = 0, cap = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
        line++;
        if (line == 1) {
            if (strncmp(l, WP_ADAPT_LOG_HEADER, strlen(WP_ADAPT_LOG_HEADER)) != 0)
                rc = wp_errorf(err, "%s:1: not a decision log of wavepipe run --adapt-log (header %s)", path,
                               WP_ADAPT_LOG_HEADER);
            continue;
        }
        long it;
        int from_k, from_b, to_k, to_b, switched;
        char what[32], from_p[512], to_p[512];
        double pf, pt;
        if (sscanf(l, "%ld,%31[^,],%d,%d,%511[^,],%d,%d,%511[^,],%lf,%lf,%d", &it, what, &from_k, &from_b, from_p,
                   &to_k, &to_b, to_p, &pf, &pt, &switched) != 11 ||
            it < 0 || to_k < 1 || to_b < 1 || (strcmp(what, "k") != 0 && strcmp(what, "partition") != 0)) {
            rc = wp_errorf(err, "%s:%d: expected %s (adapt k or partition)", path, line, WP_ADAPT_LOG_HEADER);
            break;
        }
        if (!switched)
            continue;
        if (a->nreplay && it <= a->replay[a->nreplay - 1].iteration) {
            rc = wp_errorf(err, "%s:%d: iteration %ld is not after the previous switch's", path, line, it);
            break;
        }
        if (a->nreplay == cap) {
            cap = cap ? 2 * cap : 16;
            void *grown = realloc(a->replay, (size_t)cap * sizeof *a->replay);
            if (!grown) {
                rc = wp_errorf(err, "out of memory");
                break;
            }
            a->replay = grown;
        }
        struct wp_adapt_switch *w = &a->replay[a->nreplay];
        *w = (struct wp_adapt_switch){it, strcmp(what, "partition") == 0, to_k, to_b, NULL};
        a->nreplay++;
        if (w->partition) {
            w->to_count = malloc((size_t)a->nstages * sizeof *w->to_count);
            int total = 0, now = 0;
            for (int s = 0; w->to_count && s < a->nstages; s++)
                now += a->parts.count ? a->parts.count[s] : 0;
            if (!w->to_count || parse_partition(to_p, a->nstages, w->to_count)) {
                rc = wp_errorf(err, "%s:%d: to_partition '%s' must be %d counts >= 1 joined by ':'", path, line, to_p,
                               a->nstages);
                break;
            }
            for (int s = 0; s < a->nstages; s++)
                total += w->to_count[s];
            if (total != now)
                rc = wp_errorf(err, "%s:%d: to_partition '%s' has %d layers; this run moves %d", path, line, to_p,
                               total, now);
        }
    }
    free(text);
    return rc;
}

static int find_plan(const struct wp_tune_k *t, int k, int b)
{
    for (int i = 0; i < t->nplans; i++)
        if (t->plans[i].k == k && t->plans[i].micro_batch == b)
            return i;
    return -1;
}

int wp_adapt_init(struct wp_adapt *a, const struct wp_adapt_options *o, const struct wp_schedule *start, int start_k,
                  int global_batch, const struct wp_adapt_units *units, int rank, wp_tune_make_fn make,
                  void *make_ctx, struct wp_err *err)
{
    memset(a, 0, sizeof *a);
    a->o = *o;
    a->rank = rank;
    a->nstages = start->nstages;
    a->global_batch = global_batch;
    a->start = start;
    if (o->k) {
        if (o->ngiven ? wp_tune_k_init_given(&a->tune, start, start_k, global_batch, o->given, o->ngiven, make,
                                             make_ctx, err)
                      : wp_tune_k_init(&a->tune, start, start_k, global_batch, o->max_k, make, make_ctx, err))
            return -1;
        a->tune.min_gain = o->min_gain;
    }
    if (o->partition) {
        if (wp_tune_partition_init(&a->parts, units->table, units->unit_offset, units->lead, units->tail,
                                   start->nstages, units->count, err))
            return -1;
        a->parts.horizon_iters = o->horizon;
    }
    if (rank == 0 && o->replay_path && read_replay(a, o->replay_path, err))
        return -1;
    for (int i = 0; i < a->nreplay; i++) {
        const struct wp_adapt_switch *w = &a->replay[i];
        if (w->partition ? !o->partition : !o->k || find_plan(&a->tune, w->k, w->micro_batch) < 0)
            return wp_errorf(err, "%s: the switch after iteration %ld is to %s%d with micro-batches of %d, which is "
                                  "not one of this run's candidates (--adapt k, partition or both)",
                             o->replay_path, w->iteration, w->partition ? "a partition; k=" : "k=", w->k,
                             w->micro_batch);
    }
    if (rank == 0 && o->log_path &&
        wp_csv_check_header(o->log_path, WP_ADAPT_LOG_HEADER, "decision rows", "--adapt-log", err))
        return -1;
    return 0;
}

void wp_adapt_destroy(struct wp_adapt *a)
{
    if (a->o.k)
        wp_tune_k_destroy(&a->tune);
    if (a->o.partition)
        wp_tune_partition_destroy(&a->parts);
    for (int i = 0; i < a->nreplay; i++)
        free(a->replay[i].to_count);
    free(a->replay);
    memset(a, 0, sizeof *a);
}

const struct wp_schedule *wp_adapt_schedule(const struct wp_adapt *a)
{
    return a->o.k ? &a->tune.plans[a->tune.current].sched : a->start;
}

/* A decision: what (0 nothing to say, 1 k, 2 partition), k's pick or the
 * new counts, the predictions and the reasons. */
struct decision {
    int what, switched, pick;
    int *count;
    double predicted_from_s, predicted_to_s;
    char why[2048];
};

/* Rank 0: the replayed switch of this iteration, if any. */
static int replayed(struct wp_adapt *a, long iteration, struct decision *d)
{
    if (a->next_replay >= a->nreplay || a->replay[a->next_replay].iteration != iteration)
        return 0;
    const struct wp_adapt_switch *w = &a->replay[a->next_replay++];
    snprintf(d->why, sizeof d->why, "replayed from %s", a->o.replay_path);
    d->switched = 1;
    if (w->partition) {
        d->what = 2;
        memcpy(d->count, w->to_count, (size_t)a->nstages * sizeof *d->count);
    } else {
        d->what = 1;
        d->pick = find_plan(&a->tune, w->k, w->micro_batch);
    }
    return 1;
}

static int decide(struct wp_adapt *a, long iteration, struct decision *d, struct wp_err *err)
{
    if (a->o.replay_path)
        return replayed(a, iteration, d), 0;
    if (a->o.partition) {
        int moved = wp_tune_partition_decide(&a->parts, wp_adapt_schedule(a), a->global_batch, d->count,
                                             &d->predicted_from_s, &d->predicted_to_s, d->why, sizeof d->why, err);
        if (moved < 0)
            return -1;
        d->what = 2;
        d->switched = moved;
        if (moved || !a->o.k)
            return 0;
    }
    if (a->o.k) {
        char why[1536];
        int pick = wp_tune_k_decide(&a->tune, why, sizeof why, err);
        if (pick < 0)
            return -1;
        if (d->what == 2) /* the partition's reasons first */
            snprintf(d->why + strlen(d->why), sizeof d->why - strlen(d->why), "; k: %s", why);
        else
            snprintf(d->why, sizeof d->why, "%s", why);
        d->what = 1;
        d->pick = pick;
        d->switched = pick != a->tune.current;
        d->predicted_from_s = a->tune.plans[a->tune.current].predicted_s;
        d->predicted_to_s = a->tune.plans[pick].predicted_s;
    }
    return 0;
}

static void say(struct wp_adapt *a, long iteration, struct decision *d, const int *from_count)
{
    int S = a->nstages, k0 = a->o.k ? a->tune.plans[a->tune.current].k : 0;
    int b0 = a->o.k ? a->tune.plans[a->tune.current].micro_batch : a->global_batch / a->start->nmicro;
    int k1 = d->what == 1 ? a->tune.plans[d->pick].k : k0;
    int b1 = d->what == 1 ? a->tune.plans[d->pick].micro_batch : b0;
    if (!a->o.k) { /* the start schedule's k */
        k0 = k1 = a->start->params.kind == WP_SCHED_KFKB ? a->start->params.k : 1;
    }
    char from_p[512], to_p[512];
    wp_adapt_partition_text(from_count, S, from_p, sizeof from_p);
    wp_adapt_partition_text(d->what == 2 ? d->count : from_count, S, to_p, sizeof to_p);
    if (d->what == 2)
        printf("adapt partition after iteration %ld: %s %s (layers per stage): %s\n", iteration,
               d->switched ? "move to" : "stay at", to_p, d->why);
    else
        printf("adapt k after iteration %ld: %s k=%d (micro-batch %d, %d micro-batches): %s\n", iteration,
               d->switched ? "switch to" : "stay at", k1, b1, a->global_batch / b1, d->why);
    fflush(stdout);
    if (!a->o.log_path)
        return;
    char row[2900];
    for (char *c = d->why; *c; c++) /* one field */
        if (*c == ',' || *c == '"' || *c == '\n')
            *c = ';';
    int len = snprintf(row, sizeof row, "%ld,%s,%d,%d,%s,%d,%d,%s,%.6f,%.6f,%d,%s\n", iteration,
                       d->what == 2 ? "partition" : "k", k0, b0, from_p, k1, b1, to_p, d->predicted_from_s,
                       d->predicted_to_s, d->switched, d->why);
    if (len >= (int)sizeof row) { /* reasons cut short, the row whole */
        len = (int)sizeof row - 1;
        row[len - 1] = '\n';
    }
    struct wp_err log_err;
    if (wp_csv_append(a->o.log_path, WP_ADAPT_LOG_HEADER, "decision rows", "--adapt-log", row, (size_t)len,
                      &log_err))
        fprintf(stderr, "wavepipe run: %s (the run goes on)\n", log_err.msg);
}

int wp_adapt_iteration(struct wp_adapt *a, const struct wp_measure *m, long iteration, int last,
                       const struct wp_schedule **next, int *moved, int *next_count, struct wp_err *err)
{
    *next = NULL;
    *moved = 0;
    int S = a->nstages;
    if (a->o.k)
        wp_tune_k_observe(&a->tune, m);
    if (a->o.partition)
        wp_tune_partition_observe(&a->parts, m, wp_adapt_schedule(a), a->global_batch);
    int due = a->o.replay_path || (iteration + 1) % a->o.every == 0;
    if (last || !due)
        return 0;
    int *msg = calloc((size_t)S + 4, sizeof *msg), *from = malloc((size_t)S * sizeof *from);
    struct decision d;
    memset(&d, 0, sizeof d);
    d.count = msg ? msg + 4 : NULL;
    int rc = msg && from ? 0 : wp_errorf(err, "out of memory");
    for (int s = 0; rc == 0 && s < S; s++)
        from[s] = d.count[s] = a->o.partition ? a->parts.count[s] : 0;
    if (rc == 0 && a->rank == 0 && decide(a, iteration, &d, err))
        rc = -1;
    if (msg) {
        msg[0] = rc;
        msg[1] = d.what;
        msg[2] = d.switched;
        msg[3] = d.pick;
        MPI_Bcast(msg, S + 4, MPI_INT, 0, MPI_COMM_WORLD);
        rc = msg[0];
    }
    if (rc) {
        free(msg);
        free(from);
        return a->rank == 0 ? -1 : wp_errorf(err, "rank 0's tuner failed");
    }
    d.what = msg[1];
    d.switched = msg[2];
    d.pick = msg[3];
    if (a->rank == 0 && d.what)
        say(a, iteration, &d, from);
    if (d.switched && d.what == 1) {
        a->tune.current = d.pick;
        a->switches++;
        *next = &a->tune.plans[d.pick].sched;
    } else if (d.switched && d.what == 2) {
        memcpy(next_count, d.count, (size_t)S * sizeof *next_count);
        *moved = 1;
    }
    free(msg);
    free(from);
    return 0;
}

void wp_adapt_moved(struct wp_adapt *a, const int *count, double pause_s)
{
    a->moves++;
    if (a->o.partition) {
        memcpy(a->parts.count, count, (size_t)a->nstages * sizeof *count);
        a->parts.pause_s = pause_s;
    }
    /* k's plans were measured on the old partition: measured anew from here */
    for (int i = 0; a->o.k && i < a->tune.nplans; i++)
        a->tune.plans[i].measured = 0;
}
