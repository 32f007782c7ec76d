/* The run's self-tuning between iterations (see adapt.h). */
#include "run/adapt/adapt.h"

#include <errno.h>
#include <stdarg.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/csv_append.h"
#include "util/json.h"
#include "util/read_file.h"
#include "util/strutil.h"

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
        const struct wp_adapt_switch *prev = a->nreplay ? &a->replay[a->nreplay - 1] : NULL;
        if (prev && (it < prev->iteration ||
                     (it == prev->iteration && prev->partition == (strcmp(what, "partition") == 0)))) {
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
    for (int i = 0; i < a->ndecisions; i++) {
        free(a->decisions[i].from_partition);
        free(a->decisions[i].to_partition);
        free(a->decisions[i].reasons);
    }
    free(a->decisions);
    memset(a, 0, sizeof *a);
}

const struct wp_schedule *wp_adapt_schedule(const struct wp_adapt *a)
{
    return a->o.k ? &a->tune.plans[a->tune.current].sched : a->start;
}

/* A decision point: whether the partition and k were decided (a line and
 * a row each), whether each changes, k's pick, the new counts, the
 * predictions, the reasons and when each was decided (rank 0's MPI_Wtime). */
struct decision {
    int part_said, moved, k_said, switched, pick;
    int *count;
    double part_from_s, part_to_s;
    double part_decided_wtime_s, k_decided_wtime_s;
    char part_why[1536], k_why[1536];
};

/* Rank 0: the replayed switch of this iteration, if any. */
static void replayed(struct wp_adapt *a, long iteration, struct decision *d)
{
    while (a->next_replay < a->nreplay && a->replay[a->next_replay].iteration == iteration) {
        const struct wp_adapt_switch *w = &a->replay[a->next_replay++];
        if (w->partition) {
            d->part_said = d->moved = 1;
            memcpy(d->count, w->to_count, (size_t)a->nstages * sizeof *d->count);
            snprintf(d->part_why, sizeof d->part_why, "replayed from %s", a->o.replay_path);
            d->part_decided_wtime_s = MPI_Wtime();
        } else {
            d->k_said = d->switched = 1;
            d->pick = find_plan(&a->tune, w->k, w->micro_batch);
            snprintf(d->k_why, sizeof d->k_why, "replayed from %s", a->o.replay_path);
            d->k_decided_wtime_s = MPI_Wtime();
        }
    }
}

/* Rank 0: a move first; k then on the partition that will run (its
 * compute and messages scaled by the move). */
static int decide(struct wp_adapt *a, long iteration, struct decision *d, struct wp_err *err)
{
    if (a->o.replay_path) {
        replayed(a, iteration, d);
        return 0;
    }
    double *scales = NULL;
    if (a->o.partition) {
        int moved = wp_tune_partition_decide(&a->parts, wp_adapt_schedule(a), a->global_batch, d->count,
                                             &d->part_from_s, &d->part_to_s, d->part_why, sizeof d->part_why, err);
        if (moved < 0)
            return -1;
        d->part_said = 1;
        d->moved = moved;
        d->part_decided_wtime_s = MPI_Wtime();
        if (moved && a->o.k) {
            scales = malloc((size_t)2 * a->nstages * sizeof *scales);
            if (!scales)
                return wp_errorf(err, "out of memory");
            wp_tune_partition_scales(&a->parts, d->count, scales, scales + a->nstages);
        }
    }
    if (a->o.k) {
        int pick = wp_tune_k_decide(&a->tune, scales, scales ? scales + a->nstages : NULL, d->k_why,
                                           sizeof d->k_why, err);
        free(scales);
        if (pick < 0)
            return -1;
        d->k_said = 1;
        d->pick = pick;
        d->switched = pick != a->tune.current;
        if (d->moved)
            snprintf(d->k_why + strlen(d->k_why), sizeof d->k_why - strlen(d->k_why), " (on the moved partition)");
        d->k_decided_wtime_s = MPI_Wtime();
    }
    return 0;
}

/* d's --adapt-log row, appended when there is a log. */
static void log_row(const struct wp_adapt *a, const struct wp_adapt_decision *d)
{
    if (!a->o.log_path)
        return;
    char why[1536], row[3400];
    wp_strlcpy(why, d->reasons, sizeof why);
    wp_csv_field(why, ';');
    int len = snprintf(row, sizeof row, "%ld,%s,%d,%d,%s,%d,%d,%s,%.6f,%.6f,%d,%s\n", d->iteration, d->adapt,
                       d->from_k, d->from_micro_batch, d->from_partition, d->to_k, d->to_micro_batch,
                       d->to_partition, d->predicted_from_s, d->predicted_to_s, d->switched, why);
    struct wp_err log_err;
    if (wp_csv_append(a->o.log_path, WP_ADAPT_LOG_HEADER, "decision rows", "--adapt-log", row,
                      len < (int)sizeof row ? (size_t)len : sizeof row - 1, &log_err))
        fprintf(stderr, "wavepipe run: %s (the run goes on)\n", log_err.msg);
}

/* A copy of d among the decisions kept for the trace. */
static void keep(struct wp_adapt *a, const struct wp_adapt_decision *d)
{
    if (a->ndecisions == a->decisions_cap) {
        int cap = a->decisions_cap ? 2 * a->decisions_cap : 16;
        void *grown = realloc(a->decisions, (size_t)cap * sizeof *a->decisions);
        if (!grown) {
            fprintf(stderr, "wavepipe run: out of memory keeping the decisions for the trace (the run goes on)\n");
            return;
        }
        a->decisions = grown;
        a->decisions_cap = cap;
    }
    struct wp_adapt_decision *kept = &a->decisions[a->ndecisions];
    *kept = *d;
    kept->from_partition = strdup(d->from_partition);
    kept->to_partition = strdup(d->to_partition);
    kept->reasons = strdup(d->reasons);
    if (!kept->from_partition || !kept->to_partition || !kept->reasons) {
        free(kept->from_partition);
        free(kept->to_partition);
        free(kept->reasons);
        fprintf(stderr, "wavepipe run: out of memory keeping the decisions for the trace (the run goes on)\n");
        return;
    }
    a->ndecisions++;
}

/* Rank 0: each decision's line, its row and its copy for the trace. */
static void say(struct wp_adapt *a, long iteration, struct decision *d, const int *from_count)
{
    int S = a->nstages;
    int k0 = a->o.k ? a->tune.plans[a->tune.current].k
                    : a->start->params.kind == WP_SCHED_KFKB ? a->start->params.k : 1;
    int b0 = a->o.k ? a->tune.plans[a->tune.current].micro_batch : a->global_batch / a->start->nmicro;
    int k1 = d->switched ? a->tune.plans[d->pick].k : k0, b1 = d->switched ? a->tune.plans[d->pick].micro_batch : b0;
    char from_p[512], to_p[512];
    wp_adapt_partition_text(from_count, S, from_p, sizeof from_p);
    wp_adapt_partition_text(d->moved ? d->count : from_count, S, to_p, sizeof to_p);
    if (d->part_said) { /* the move, if any, comes first */
        struct wp_adapt_decision part = {.iteration = iteration, .decided_wtime_s = d->part_decided_wtime_s,
                                         .adapt = "partition", .switched = d->moved, .from_k = k0,
                                         .from_micro_batch = b0, .to_k = k0, .to_micro_batch = b0,
                                         .from_partition = from_p, .to_partition = to_p,
                                         .predicted_from_s = d->part_from_s, .predicted_to_s = d->part_to_s,
                                         .reasons = d->part_why};
        printf("adapt partition after iteration %ld: %s %s (layers per stage): %s\n", iteration,
               part.switched ? "move to" : "stay at", part.to_partition, part.reasons);
        log_row(a, &part);
        keep(a, &part);
    }
    if (d->k_said) { /* k on the partition that will run */
        struct wp_adapt_decision k = {.iteration = iteration, .decided_wtime_s = d->k_decided_wtime_s, .adapt = "k",
                                      .switched = d->switched, .from_k = k0, .from_micro_batch = b0, .to_k = k1,
                                      .to_micro_batch = b1, .from_partition = to_p, .to_partition = to_p,
                                      .predicted_from_s = a->tune.plans[a->tune.current].predicted_s,
                                      .predicted_to_s = a->tune.plans[d->pick].predicted_s, .reasons = d->k_why};
        printf("adapt k after iteration %ld: %s k=%d (micro-batch %d, %d micro-batches): %s\n", iteration,
               k.switched ? "switch to" : "stay at", k.to_k, k.to_micro_batch, a->global_batch / k.to_micro_batch,
               k.reasons);
        log_row(a, &k);
        keep(a, &k);
    }
    fflush(stdout);
}

/* JSON text into buf as far as it fits, len counting it whole (as snprintf) */
struct json_out {
    char *buf;
    size_t size, len;
};


static void json_put(struct json_out *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void json_put(struct json_out *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(out->len < out->size ? out->buf + out->len : NULL, out->len < out->size ? out->size - out->len : 0,
                      fmt, ap);
    va_end(ap);
    out->len += n > 0 ? (size_t)n : 0;
}

/* ,"key":"value" with value escaped */
static void json_put_string(struct json_out *out, const char *key, const char *value)
{
    json_put(out, ",\"%s\":", key);
    out->len += wp_json_string(out->len < out->size ? out->buf + out->len : NULL,
                               out->len < out->size ? out->size - out->len : 0, value);
}

size_t wp_adapt_decision_json(const struct wp_adapt_decision *d, char *buf, size_t size)
{
    struct json_out out = {buf, size, 0};
    if (size > 0)
        buf[0] = '\0';
    json_put(&out, "\"iteration\":%ld", d->iteration);
    json_put_string(&out, "adapt", d->adapt);
    json_put(&out, ",\"switched\":%d,\"from_k\":%d,\"from_micro_batch\":%d", d->switched, d->from_k,
             d->from_micro_batch);
    json_put_string(&out, "from_partition", d->from_partition);
    json_put(&out, ",\"to_k\":%d,\"to_micro_batch\":%d", d->to_k, d->to_micro_batch);
    json_put_string(&out, "to_partition", d->to_partition);
    json_put(&out, ",\"predicted_from_s\":%.6f,\"predicted_to_s\":%.6f", d->predicted_from_s, d->predicted_to_s);
    json_put_string(&out, "reasons", d->reasons);
    return out.len;
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
    enum { RC, PART_SAID, MOVED, K_SAID, SWITCHED, PICK, HEAD };
    int *msg = calloc((size_t)S + HEAD, sizeof *msg), *from = malloc((size_t)S * sizeof *from);
    struct decision d;
    memset(&d, 0, sizeof d);
    d.count = msg ? msg + HEAD : NULL;
    d.pick = a->o.k ? a->tune.current : 0;
    int rc = msg && from ? 0 : wp_errorf(err, "out of memory");
    for (int s = 0; rc == 0 && s < S; s++)
        from[s] = d.count[s] = a->o.partition ? a->parts.count[s] : 0;
    if (rc == 0 && a->rank == 0 && decide(a, iteration, &d, err))
        rc = -1;
    if (msg) {
        msg[RC] = rc;
        msg[PART_SAID] = d.part_said;
        msg[MOVED] = d.moved;
        msg[K_SAID] = d.k_said;
        msg[SWITCHED] = d.switched;
        msg[PICK] = d.pick;
        MPI_Bcast(msg, S + HEAD, MPI_INT, 0, MPI_COMM_WORLD);
        rc = msg[RC];
    }
    if (rc) {
        free(msg);
        free(from);
        return a->rank == 0 ? -1 : wp_errorf(err, "rank 0's tuner failed");
    }
    d.moved = msg[MOVED];
    d.switched = msg[SWITCHED];
    d.pick = msg[PICK];
    if (a->rank == 0 && (d.part_said || d.k_said))
        say(a, iteration, &d, from);
    if (d.switched) {
        a->tune.current = d.pick;
            *next = &a->tune.plans[d.pick].sched;
    }
    if (d.moved) {
        memcpy(next_count, d.count, (size_t)S * sizeof *next_count);
        *moved = 1;
    }
    free(msg);
    free(from);
    return 0;
}

void wp_adapt_moved(struct wp_adapt *a, const int *count, double pause_s)
{
    if (a->o.partition) {
        memcpy(a->parts.count, count, (size_t)a->nstages * sizeof *count);
        a->parts.pause_s = pause_s;
    }
    /* k's plans were measured on the old partition: measured anew from here */
    for (int i = 0; a->o.k && i < a->tune.nplans; i++)
        a->tune.plans[i].measured = 0;
}
