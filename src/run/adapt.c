/* The run's self-tuning between iterations (see adapt.h). */
#include "run/adapt.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/csv_append.h"
#include "util/read_file.h"

/* The switched rows of a decision log: iteration, to_k, to_micro_batch. */
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
        char adapt[32];
        double pf, pt;
        if (sscanf(l, "%ld,%31[^,],%d,%d,%d,%d,%lf,%lf,%d", &it, adapt, &from_k, &from_b, &to_k, &to_b, &pf, &pt,
                   &switched) != 9 ||
            it < 0 || to_k < 1 || to_b < 1) {
            rc = wp_errorf(err, "%s:%d: expected %s", path, line, WP_ADAPT_LOG_HEADER);
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
        a->replay[a->nreplay++] = (struct wp_adapt_switch){it, to_k, to_b};
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
                  int global_batch, int rank, wp_tune_make_fn make, void *make_ctx, struct wp_err *err)
{
    memset(a, 0, sizeof *a);
    a->o = *o;
    a->rank = rank;
    if (o->ngiven ? wp_tune_k_init_given(&a->tune, start, start_k, global_batch, o->given, o->ngiven, make, make_ctx,
                                         err)
                  : wp_tune_k_init(&a->tune, start, start_k, global_batch, o->max_k, make, make_ctx, err))
        return -1;
    a->tune.min_gain = o->min_gain;
    if (rank == 0 && o->replay_path && read_replay(a, o->replay_path, err))
        return -1;
    for (int i = 0; i < a->nreplay; i++)
        if (find_plan(&a->tune, a->replay[i].k, a->replay[i].micro_batch) < 0)
            return wp_errorf(err, "%s: the switch after iteration %ld is to k=%d with micro-batches of %d, which is "
                                  "not one of this run's candidates",
                             o->replay_path, a->replay[i].iteration, a->replay[i].k, a->replay[i].micro_batch);
    if (rank == 0 && o->log_path &&
        wp_csv_check_header(o->log_path, WP_ADAPT_LOG_HEADER, "decision rows", "--adapt-log", err))
        return -1;
    return 0;
}

void wp_adapt_destroy(struct wp_adapt *a)
{
    wp_tune_k_destroy(&a->tune);
    free(a->replay);
    memset(a, 0, sizeof *a);
}

int wp_adapt_current_k(const struct wp_adapt *a)
{
    return a->tune.plans[a->tune.current].k;
}

/* Rank 0: the plan to run next and why. */
static int decide(struct wp_adapt *a, long iteration, char *why, size_t size, int *replayed, struct wp_err *err)
{
    *replayed = 0;
    if (a->o.replay_path) {
        if (a->next_replay < a->nreplay && a->replay[a->next_replay].iteration == iteration) {
            const struct wp_adapt_switch *w = &a->replay[a->next_replay++];
            *replayed = 1;
            snprintf(why, size, "replayed from %s", a->o.replay_path);
            return find_plan(&a->tune, w->k, w->micro_batch);
        }
        return a->tune.current;
    }
    return wp_tune_k_decide(&a->tune, why, size, err);
}

int wp_adapt_iteration(struct wp_adapt *a, const struct wp_measure *m, long iteration, int last,
                       const struct wp_schedule **next, struct wp_err *err)
{
    *next = NULL;
    struct wp_tune_k *t = &a->tune;
    wp_tune_k_observe(t, m);
    int due = a->o.replay_path || (iteration + 1) % a->o.every == 0;
    if (last || !due)
        return 0;
    int pick = t->current, replayed = 0, rc = 0;
    char why[2048] = "";
    if (a->rank == 0 && (pick = decide(a, iteration, why, sizeof why, &replayed, err)) < 0)
        rc = -1;
    int msg[2] = {rc, pick};
    MPI_Bcast(msg, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (msg[0])
        return a->rank == 0 ? -1 : wp_errorf(err, "rank 0's tuner failed");
    pick = msg[1];
    const struct wp_kfkb_plan *from = &t->plans[t->current], *to = &t->plans[pick];
    if (a->rank == 0 && (!a->o.replay_path || replayed)) {
        printf("adapt k after iteration %ld: %s k=%d (micro-batch %d, %d micro-batches): %s\n", iteration,
               pick != t->current ? "switch to" : "stay at", to->k, to->micro_batch, to->nmicro, why);
        if (a->o.log_path) {
            char row[2300];
            for (char *c = why; *c; c++) /* one field */
                if (*c == ',' || *c == '"' || *c == '\n')
                    *c = ';';
            int len = snprintf(row, sizeof row, "%ld,k,%d,%d,%d,%d,%.6f,%.6f,%d,%s\n", iteration, from->k,
                               from->micro_batch, to->k, to->micro_batch, from->predicted_s, to->predicted_s,
                               pick != t->current, why);
            if (len >= (int)sizeof row) { /* reasons cut short, the row whole */
                len = (int)sizeof row - 1;
                row[len - 1] = '\n';
            }
            struct wp_err log_err;
            if (wp_csv_append(a->o.log_path, WP_ADAPT_LOG_HEADER, "decision rows", "--adapt-log", row, (size_t)len,
                              &log_err))
                fprintf(stderr, "wavepipe run: %s (the run goes on)\n", log_err.msg);
        }
        fflush(stdout);
    }
    if (pick != t->current) {
        t->current = pick;
        a->switches++;
        *next = &to->sched;
    }
    return 0;
}
