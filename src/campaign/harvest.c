/* Harvesting a campaign directory into one row per run: reading and
 * validating each point's results.csv (rows named and skipped when torn or
 * corrupt), de-duplicating requeued iterations (last row wins), dropping
 * warm-up, median/min/max per figure, the mean throughput with pauses,
 * the simulator's prediction from run.log's summary line, weak/strong
 * scaling per group and adaptive runs against their static twins
 * (harvest.h). */
#include "campaign/harvest.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sched/schedule.h"
#include "util/atomic_file.h"
#include "util/strutil.h"
#include "util/read_file.h"

/* The columns harvest reads from a results.csv, found by name in its
 * header: every `wavepipe run --results` header has the first eight (the
 * first line starts with "timestamp,"); pause_s and partition came with
 * --adapt (issue 12), and an older file without them is read alike, their
 * harvested columns left empty; k (every header has it) only marks plan
 * changes, so a file without it is read alike too; ranks, nodes, stages and
 * replicas (every header has them) mark changes of shape (a point recovered
 * on fewer nodes, issue 34), likewise optional. Whatever else a header
 * holds (compute, layer_table, stage_compute_s, ...) is counted, not read. */
enum { C_GLOBAL_BATCH, C_ITERATION, C_ITER_TIME, C_SAMPLES, C_TOKENS, C_BUBBLE, C_PEAK, C_LOSS, C_REQUIRED,
       C_PAUSE = C_REQUIRED, C_PARTITION, C_K, C_RANKS, C_NODES, C_STAGES, C_REPLICAS, C_COLUMNS };
static const char *const column_names[C_COLUMNS] = {
    "global_batch", "iteration", "iter_time_s", "samples_per_s", "tokens_per_s", "bubble_ratio",
    "peak_activation_bytes", "loss", "pause_s", "partition", "k", "ranks", "nodes", "stages", "replicas"};
#define RESULTS_FIELDS_MAX 64

/* a results.csv header: its field count and where each column is (-1: absent) */
struct layout {
    int nfields;
    int at[C_COLUMNS];
};

/* one parsed results.csv row */
struct row {
    long iteration;
    long order; /* line number: later lines win */
    int global_batch;
    double iter_time_s, samples_per_s, tokens_per_s, bubble_ratio, peak, loss;
    double pause_s;      /* NAN without the column */
    char partition[256]; /* "" without the column */
    long k;              /* the schedule's k; -1 without the column */
    char shape[160];     /* "6 ranks on 3 nodes in 6 stages (replicas 1:1:..)" ("" without the columns) */
};

struct rows {
    struct row *v;
    size_t n, cap;
};

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* "2026-01-31T10:00:00Z", the time stamp `wavepipe run` starts a row with */
#define TIMESTAMP_LEN 20
static int is_timestamp(const char *s)
{
    static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
    for (int i = 0; i < TIMESTAMP_LEN; i++)
        if (pat[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != pat[i])
            return 0;
    return s[TIMESTAMP_LEN] == '\0';
}

static int parse_double(const char *s, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    return errno || end == s || *end || !isfinite(*v) ? -1 : 0;
}

static int parse_long(const char *s, long *v)
{
    char *end;
    errno = 0;
    *v = strtol(s, &end, 10);
    return errno || end == s || *end ? -1 : 0;
}

/* The layout of header line (split in place); -1 when it is not the
 * header of `wavepipe run --results`. */
static int parse_header(char *line, struct layout *lo)
{
    for (int c = 0; c < C_COLUMNS; c++)
        lo->at[c] = -1;
    lo->nfields = 0;
    if (strncmp(line, "timestamp,", 10) != 0)
        return -1;
    for (char *p = line; p; lo->nfields++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (lo->nfields == RESULTS_FIELDS_MAX)
            return -1;
        for (int c = 0; c < C_COLUMNS; c++)
            if (strcmp(p, column_names[c]) == 0) {
                if (lo->at[c] >= 0)
                    return -1; /* a column twice */
                lo->at[c] = lo->nfields;
            }
        p = comma ? comma + 1 : NULL;
    }
    for (int c = 0; c < C_REQUIRED; c++)
        if (lo->at[c] < 0)
            return -1;
    return 0;
}

/* The row's shape from its ranks, nodes, stages and replicas ("" when the
 * header lacks one of them); -1 with why when a value is not counts. */
static int parse_shape(char **f, const struct layout *lo, struct row *r, char *why, size_t whysize)
{
    r->shape[0] = '\0';
    for (int c = C_RANKS; c <= C_REPLICAS; c++) {
        if (lo->at[c] < 0)
            return 0;
        const char *v = f[lo->at[c]];
        if (!*v || strspn(v, "0123456789:") != strlen(v) || strlen(v) > 64) {
            snprintf(why, whysize, "%s '%.40s' is not a count", column_names[c], v);
            return -1;
        }
    }
    snprintf(r->shape, sizeof r->shape, "%s ranks on %s nodes in %s stages (replicas %.64s)", f[lo->at[C_RANKS]],
             f[lo->at[C_NODES]], f[lo->at[C_STAGES]], f[lo->at[C_REPLICAS]]);
    return 0;
}

/* Parses one row's fields into r; on error writes the reason to why. */
static int parse_row(char **f, const struct layout *lo, struct row *r, char *why, size_t whysize)
{
    long gb;
    const char *g = f[lo->at[C_GLOBAL_BATCH]], *it = f[lo->at[C_ITERATION]];
    if (parse_long(g, &gb) || gb <= 0 || gb > 1000000000L) {
        snprintf(why, whysize, "global_batch '%s' is not a positive integer", g);
        return -1;
    }
    r->global_batch = (int)gb;
    if (parse_long(it, &r->iteration) || r->iteration < 0) {
        snprintf(why, whysize, "iteration '%s' is not a non-negative integer", it);
        return -1;
    }
    static const struct {
        int field;
        const char *name;
        double min, max; /* inclusive bounds; min_excl: strictly above min */
        int min_excl;
    } num[] = {
        {C_ITER_TIME, "iter_time_s", 0, INFINITY, 1},
        {C_SAMPLES, "samples_per_s", 0, INFINITY, 1},
        {C_TOKENS, "tokens_per_s", 0, INFINITY, 0},
        {C_BUBBLE, "bubble_ratio", 0, 1, 0},
        {C_PEAK, "peak_activation_bytes", 0, INFINITY, 0},
        {C_LOSS, "loss", -INFINITY, INFINITY, 0},
        {C_PAUSE, "pause_s", 0, INFINITY, 0},
    };
    double v[7] = {0, 0, 0, 0, 0, 0, NAN};
    for (int i = 0; i < 7; i++) {
        if (lo->at[num[i].field] < 0)
            continue; /* pause_s, in an older file */
        const char *s = f[lo->at[num[i].field]];
        if (num[i].field == C_LOSS && strcmp(s, "nan") == 0) { /* emulated compute has no loss */
            v[i] = NAN;
            continue;
        }
        if (parse_double(s, &v[i])) {
            snprintf(why, whysize, "%s '%.40s' is not a number", num[i].name, s);
            return -1;
        }
        if (v[i] < num[i].min || (num[i].min_excl && v[i] == num[i].min) || v[i] > num[i].max) {
            snprintf(why, whysize, "%s %s is out of range", num[i].name, s);
            return -1;
        }
    }
    r->iter_time_s = v[0];
    r->samples_per_s = v[1];
    r->tokens_per_s = v[2];
    r->bubble_ratio = v[3];
    r->peak = v[4];
    r->loss = v[5];
    r->pause_s = v[6];
    r->partition[0] = '\0';
    if (lo->at[C_PARTITION] >= 0) {
        const char *p = f[lo->at[C_PARTITION]];
        if (!*p || strspn(p, "0123456789:") != strlen(p) || strlen(p) >= sizeof r->partition) {
            snprintf(why, whysize, "partition '%.40s' is not counts joined by ':'", p);
            return -1;
        }
        wp_strlcpy(r->partition, p, sizeof r->partition);
    }
    r->k = -1;
    if (lo->at[C_K] >= 0) {
        const char *k = f[lo->at[C_K]];
        if (parse_long(k, &r->k) || r->k <= 0) {
            snprintf(why, whysize, "k '%.40s' is not a positive integer", k);
            return -1;
        }
    }
    return parse_shape(f, lo, r, why, whysize);
}

static int rows_push(struct rows *rs, const struct row *r)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 64;
        struct row *nv = realloc(rs->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        rs->v = nv;
        rs->cap = cap;
    }
    rs->v[rs->n++] = *r;
    return 0;
}

/* Parses results.csv text: good rows into rs, bad ones named on log.
 * Returns -1 (with why) when the file as a whole is unusable. */
static int parse_results(const char *path, char *text, size_t len, FILE *log, struct rows *rs,
                         int *skipped, char *why, size_t whysize)
{
    size_t pos = 0;
    long line = 0;
    struct layout lo = {0}; /* of this file's header (line 1) */
    while (pos < len) {
        char *start = text + pos;
        char *nl = memchr(start, '\n', len - pos);
        size_t linelen = nl ? (size_t)(nl - start) : len - pos;
        pos += linelen + (nl ? 1 : 0);
        line++;
        int torn = nl == NULL;
        start[linelen] = '\0';
        if (linelen && start[linelen - 1] == '\r')
            start[--linelen] = '\0';
        if (line == 1) {
            if (torn || parse_header(start, &lo)) {
                snprintf(why, whysize, "line 1 is not the header of `wavepipe run --results`");
                return -1;
            }
            continue;
        }
        int nfields = lo.nfields;
        if (strlen(start) != linelen) {
            fprintf(log, "%s:%ld: NUL bytes in the line — row skipped\n", path, line);
            (*skipped)++;
            continue;
        }
        if (linelen == 0 && !torn)
            continue; /* a blank line holds no row */
        if (strncmp(start, "timestamp,", 10) == 0)
            continue; /* a header again; rows start with their time stamp */
        if (torn) {
            fprintf(log, "%s:%ld: last line has no newline (a torn write) — row skipped\n", path, line);
            (*skipped)++;
            continue;
        }
        char *f[RESULTS_FIELDS_MAX];
        int nf = 0;
        for (char *p = start;;) {
            char *c = strchr(p, ',');
            if (nf < nfields)
                f[nf] = p;
            nf++;
            if (!c)
                break;
            *c = '\0';
            p = c + 1;
        }
        int glued = 0;
        if (nf > nfields) {
            /* a torn row followed, on the same line, by the whole row the
             * requeued job appended: keep the last nfields fields when the
             * first of them ends with a time stamp */
            char *g[RESULTS_FIELDS_MAX] = {NULL}; /* nfields >= 9: the header has the required columns */
            char *p = start;
            for (int i = 0; i < nf - nfields; i++)
                p += strlen(p) + 1;
            for (int i = 0; i < nfields; i++) {
                g[i] = p;
                p += strlen(p) + 1;
            }
            size_t tl = strlen(g[0]);
            if (tl >= TIMESTAMP_LEN && is_timestamp(g[0] + tl - TIMESTAMP_LEN)) {
                g[0] += tl - TIMESTAMP_LEN;
                memcpy(f, g, (size_t)nfields * sizeof *f);
                glued = 1;
            }
        }
        if (nf != nfields && !glued) {
            fprintf(log, "%s:%ld: %d fields, expected %d — row skipped\n", path, line, nf, nfields);
            (*skipped)++;
            continue;
        }
        if (glued) {
            fprintf(log, "%s:%ld: a torn row glued to the next row — the torn part skipped, the row after it kept\n",
                    path, line);
            (*skipped)++;
        }
        struct row r;
        char reason[160];
        if (parse_row(f, &lo, &r, reason, sizeof reason)) {
            fprintf(log, "%s:%ld: %s — row skipped\n", path, line, reason);
            (*skipped)++;
            continue;
        }
        r.order = line;
        if (rows_push(rs, &r)) {
            snprintf(why, whysize, "out of memory");
            return -1;
        }
    }
    if (line == 0) {
        snprintf(why, whysize, "empty (the run wrote no row)");
        return -1;
    }
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->iteration != y->iteration)
        return x->iteration < y->iteration ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* Sorts by iteration; keeps the last-written row of each iteration. */
static size_t dedup(struct rows *rs, int *duplicates)
{
    if (rs->n > 1) /* no rows: rs->v is NULL, which qsort must not get */
        qsort(rs->v, rs->n, sizeof *rs->v, cmp_row);
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++) {
        if (k > 0 && rs->v[k - 1].iteration == rs->v[i].iteration) {
            rs->v[k - 1] = rs->v[i]; /* sorted by line within an iteration: later wins */
            (*duplicates)++;
        } else {
            rs->v[k++] = rs->v[i];
        }
    }
    rs->n = k;
    return k;
}

/* The prediction from run.log's last "summary:" line. */
static int parse_summary(const char *text, double *bubble, double *iter_s)
{
    const char *last = NULL;
    for (const char *p = text; p; p = strchr(p, '\n')) {
        if (*p == '\n')
            p++;
        if (strncmp(p, "summary:", 8) == 0)
            last = p;
    }
    if (!last)
        return -1;
    size_t n = strcspn(last, "\n");
    char line[2048];
    if (n >= sizeof line)
        n = sizeof line - 1;
    memcpy(line, last, n);
    line[n] = '\0';
    const char *b = strstr(line, "bubble ratio measured ");
    const char *t = strstr(line, "iteration measured ");
    double mb, mt;
    if (!b || !t || sscanf(b, "bubble ratio measured %lf simulated %lf", &mb, bubble) != 2 ||
        sscanf(t, "iteration measured %lf s simulated %lf s", &mt, iter_s) != 2)
        return -2;
    if (!isfinite(*bubble) || !isfinite(*iter_s) || *iter_s <= 0 || *bubble < 0)
        return -2;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The run's figures from its kept rows kept[0..k-1] (rows after the first
 * warmup good ones); 0, or -1 when out of memory (run->per_iteration NULL). */
static int summarize_kept(struct wp_harvest_run *run, const struct row *kept, size_t k, int warmup)
{
    double *tmp = malloc(k * sizeof *tmp);
    run->per_iteration = malloc(k * sizeof *run->per_iteration);
    if (!tmp || !run->per_iteration) {
        free(tmp);
        free(run->per_iteration);
        run->per_iteration = NULL;
        return -1;
    }
#define STAT(field, member)                                                                        \
    do {                                                                                           \
        for (size_t i = 0; i < k; i++)                                                             \
            tmp[i] = kept[i].field;                                                                \
        run->member = wp_stat3_sorted(tmp, k);                                                               \
    } while (0)
    STAT(iter_time_s, iter_time_s);
    STAT(samples_per_s, samples_per_s);
    STAT(tokens_per_s, tokens_per_s);
    STAT(bubble_ratio, bubble_ratio);
#undef STAT
    free(tmp);
    run->peak_activation_bytes = 0;
    for (size_t i = 0; i < k; i++)
        if (kept[i].peak > run->peak_activation_bytes)
            run->peak_activation_bytes = kept[i].peak;
    run->pause_s_total = 0;
    for (size_t i = 0; i < k; i++)
        run->pause_s_total += kept[i].pause_s; /* NAN from a file without pause_s */
    wp_strlcpy(run->partition_last, kept[k - 1].partition, sizeof run->partition_last);
    /* what the job delivered: the pauses count, as do slow iterations */
    double samples = 0, seconds = 0;
    for (size_t i = 0; i < k; i++) {
        samples += kept[i].global_batch;
        seconds += kept[i].iter_time_s + (isfinite(kept[i].pause_s) ? kept[i].pause_s : 0);
    }
    run->samples_per_s_mean = samples / seconds;
    /* a plan change shows in the first row run on the new plan; the row
     * before it may be a warm-up row */
    for (size_t i = 0; i < k; i++) {
        const struct row *prev = i + (size_t)warmup > 0 ? &kept[i] - 1 : NULL;
        run->per_iteration[i].iteration = kept[i].iteration;
        run->per_iteration[i].samples_per_s = kept[i].samples_per_s;
        run->per_iteration[i].plan_changed =
            prev && (prev->k != kept[i].k || strcmp(prev->partition, kept[i].partition) != 0);
        run->per_iteration[i].shape_changed = prev && strcmp(prev->shape, kept[i].shape) != 0;
        run->shape_changes += run->per_iteration[i].shape_changed;
        wp_strlcpy(run->per_iteration[i].shape, kept[i].shape, sizeof run->per_iteration[i].shape);
    }
    wp_strlcpy(run->shape_last, kept[k - 1].shape, sizeof run->shape_last);
    run->iterations = (int)k;
    run->loss_last = kept[k - 1].loss;
    run->global_batch = kept[k - 1].global_batch;
    return 0;
}

/* The point's results.csv into run's figures; 1 when harvested, 0 when
 * skipped (named on log). */
static int harvest_results(const char *pdir, int warmup, FILE *log, struct wp_harvest_run *run, int *skipped_rows)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/results.csv", pdir);
    size_t len;
    char *text = wp_read_file(path, &len);
    if (!text) {
        if (errno == ENOENT)
            fprintf(log, "%s: no results.csv — point skipped\n", pdir);
        else
            fprintf(log, "%s: cannot read: %s — point skipped\n", path, strerror(errno));
        return 0;
    }
    struct rows rs = {0};
    char why[256];
    int rc = parse_results(path, text, len, log, &rs, skipped_rows, why, sizeof why);
    free(text);
    if (rc) {
        fprintf(log, "%s: %s — point skipped\n", path, why);
        free(rs.v);
        return 0;
    }
    size_t n = dedup(&rs, &run->duplicates);
    if (n == 0) {
        fprintf(log, "%s: no good row — point skipped\n", path);
        free(rs.v);
        return 0;
    }
    if (n <= (size_t)warmup) {
        fprintf(log, "%s: %zu good iteration%s, all within the warm-up of %d — point skipped\n", path, n,
                n == 1 ? "" : "s", warmup);
        free(rs.v);
        return 0;
    }
    if (summarize_kept(run, rs.v + warmup, n - (size_t)warmup, warmup)) {
        fprintf(log, "%s: out of memory — point skipped\n", path);
        free(rs.v);
        return 0;
    }
    free(rs.v);
    return 1;
}

/* The simulator's prediction from the point's run.log, and its state from
 * DONE and FAILED; what is missing is named on log. */
static void harvest_log_and_state(const char *pdir, FILE *log, struct wp_harvest_run *run)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/run.log", pdir);
    size_t len;
    char *text = wp_read_file(path, &len);
    if (!text) {
        fprintf(log, "%s: no run.log — predicted columns left empty\n", pdir);
    } else {
        double bubble, iter_s;
        int src = parse_summary(text, &bubble, &iter_s);
        if (src == -1)
            fprintf(log, "%s: no \"summary:\" line — predicted columns left empty\n", path);
        else if (src == -2)
            fprintf(log, "%s: the last \"summary:\" line has no parsable prediction — predicted columns left empty\n",
                    path);
        else {
            run->has_prediction = 1;
            run->pred_bubble_ratio = bubble;
            run->pred_iter_time_s = iter_s;
            run->pred_samples_per_s = run->global_batch / iter_s;
        }
        free(text);
    }

    snprintf(path, sizeof path, "%s/DONE", pdir);
    if (file_exists(path)) {
        wp_strlcpy(run->state, "done", sizeof run->state);
    } else {
        snprintf(path, sizeof path, "%s/FAILED", pdir);
        int failed = file_exists(path);
        wp_strlcpy(run->state, failed ? "failed" : "incomplete", sizeof run->state);
        fprintf(log, "%s: %s — harvested its %d iteration%s, state %s\n", pdir,
                failed ? "FAILED" : "no DONE (still running, or killed)", run->iterations,
                run->iterations == 1 ? "" : "s", run->state);
    }
}

/* Reads one point directory; 1 when harvested, 0 when skipped (named on log). */
static int harvest_point(const char *dir, const char *name, int warmup, FILE *log, struct wp_harvest_run *run,
                         int *skipped_rows)
{
    char pdir[4096], path[4200];
    snprintf(pdir, sizeof pdir, "%s/%s", dir, name);
    memset(run, 0, sizeof *run);
    wp_strlcpy(run->dir, name, sizeof run->dir);
    run->weak_efficiency = run->strong_speedup = run->strong_efficiency = NAN;
    run->adapt_vs_static = NAN;
    run->pred_iter_time_s = run->pred_samples_per_s = run->pred_bubble_ratio = NAN;

    struct wp_err err;
    snprintf(path, sizeof path, "%s/point.cfg", pdir);
    if (wp_point_read(path, &run->point, &err)) {
        if (strncmp(err.msg, path, strlen(path)) == 0)
            fprintf(log, "%s — point skipped\n", err.msg);
        else
            fprintf(log, "%s: %s — point skipped\n", path, err.msg);
        return 0;
    }
    const char *nodes = wp_point_axis(&run->point, "nodes");
    long nv;
    if (!nodes || parse_long(nodes, &nv) || nv <= 0 || nv > 1000000) {
        fprintf(log, "%s: axis nodes %s%s%s is not a positive integer — point skipped\n", path, nodes ? "'" : "",
                nodes ? nodes : "missing", nodes ? "'" : "");
        return 0;
    }
    run->nodes = (int)nv;
    if (warmup < 0)
        warmup = run->point.warmup;
    /* the scenario's changes, to mark in the plots; a bad file is named, the point kept */
    snprintf(path, sizeof path, "%s/changes.txt", pdir);
    size_t clen;
    char *ctext = file_exists(path) ? wp_read_file(path, &clen) : NULL;
    if (ctext && wp_changes_parse(ctext, path, &run->scenario, &err))
        fprintf(log, "%s — its changes not marked\n", err.msg);
    free(ctext);

    if (!harvest_results(pdir, warmup, log, run, skipped_rows))
        return 0;
    harvest_log_and_state(pdir, log, run);
    return 1;
}

static int same_value(const char *a, const char *b)
{
    return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

/* Whether the runs' values of an axis are set by their node counts: one
 * value at each node count and not the same at all of them (a campaign that
 * cuts each size's batch its own way, as M = 4P, excluding the rest, or
 * adds a data-parallel copy of the pipeline per node). */
static int axis_follows_nodes(const struct wp_harvest *h, const char *axis)
{
    int differ = 0;
    for (int i = 0; i < h->nruns; i++)
        for (int j = 0; j < i; j++) {
            int same = same_value(wp_point_axis(&h->runs[i].point, axis), wp_point_axis(&h->runs[j].point, axis));
            if (h->runs[i].nodes == h->runs[j].nodes && !same)
                return 0;
            differ |= !same;
        }
    return differ;
}

/* Axes that move with the node count: nodes itself, the micro-batch count
 * and the data-parallel copies where the node count sets them, and, in
 * weak scaling, the global batch and the depth that grow with it. A
 * scaling group (and a plot's series) is what stays when they are left out. */
static int follows_nodes(const struct wp_harvest *h, const char *scaling, const char *axis)
{
    if (strcmp(axis, "nodes") == 0)
        return 1;
    if (strcmp(axis, "micro_batches") == 0)
        return h->micro_batches_follow_nodes;
    if (strcmp(axis, "data_parallel") == 0)
        return h->data_parallel_follows_nodes;
    return strcmp(scaling, "weak") == 0 && (strcmp(axis, "global_batch") == 0 || strcmp(axis, "layers") == 0);
}

/* Group key: scaling kind and every axis that does not follow the node
 * count, sorted by name. */
static void group_key(const struct wp_harvest *h, const struct wp_harvest_run *r, char *buf, size_t size)
{
    const char *names[WP_POINT_MAX_AXES];
    int n = 0;
    for (int i = 0; i < r->point.naxes; i++)
        if (!follows_nodes(h, r->point.scaling, r->point.axis_name[i]))
            names[n++] = r->point.axis_name[i];
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    size_t used = (size_t)snprintf(buf, size, "%s", r->point.scaling);
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "\037%s=%s", names[i], wp_point_axis(&r->point, names[i]));
}

static void compute_scaling(struct wp_harvest *h)
{
    enum { KEY = WP_POINT_MAX_AXES * 2 * WP_POINT_NAME_MAX + 32 };
    char (*keys)[KEY] = malloc((size_t)(h->nruns ? h->nruns : 1) * KEY);
    if (!keys)
        return;
    h->ngroups = 0;
    for (int i = 0; i < h->nruns; i++) {
        group_key(h, &h->runs[i], keys[i], KEY);
        h->runs[i].group = -1;
        for (int j = 0; j < i; j++)
            if (strcmp(keys[i], keys[j]) == 0) {
                h->runs[i].group = h->runs[j].group;
                break;
            }
        if (h->runs[i].group < 0)
            h->runs[i].group = h->ngroups++;
    }
    free(keys);
    for (int g = 0; g < h->ngroups; g++) {
        int n0 = 0;
        for (int i = 0; i < h->nruns; i++)
            if (h->runs[i].group == g && (n0 == 0 || h->runs[i].nodes < n0))
                n0 = h->runs[i].nodes;
        double sum = 0;
        int cnt = 0;
        for (int i = 0; i < h->nruns; i++)
            if (h->runs[i].group == g && h->runs[i].nodes == n0) {
                sum += h->runs[i].samples_per_s.median;
                cnt++;
            }
        double t0 = sum / cnt;
        for (int i = 0; i < h->nruns; i++) {
            struct wp_harvest_run *r = &h->runs[i];
            if (r->group != g)
                continue;
            double t = r->samples_per_s.median;
            if (strcmp(r->point.scaling, "strong") == 0) {
                r->strong_speedup = t / t0;
                r->strong_efficiency = r->strong_speedup / ((double)r->nodes / n0);
            } else {
                r->weak_efficiency = (t / r->nodes) / (t0 / n0);
            }
        }
    }
}

/* adapt_vs_static of every adaptive run: against the mean over its static
 * twins (every repetition of them). */
static void compute_adapt_vs_static(struct wp_harvest *h)
{
    for (int i = 0; i < h->nruns; i++) {
        struct wp_harvest_run *r = &h->runs[i];
        if (!wp_point_axis(&r->point, "adapt") || wp_harvest_is_static(r))
            continue;
        double sum = 0;
        int cnt = 0;
        for (int j = 0; j < h->nruns; j++)
            if (wp_harvest_is_static(&h->runs[j]) && wp_harvest_twins(h, r, &h->runs[j])) {
                sum += h->runs[j].samples_per_s_mean;
                cnt++;
            }
        if (cnt)
            r->adapt_vs_static = r->samples_per_s_mean / (sum / cnt);
    }
}

int wp_harvest_scan(const char *dir, int warmup, FILE *log, struct wp_harvest *h, struct wp_err *err)
{
    memset(h, 0, sizeof *h);
    DIR *d = opendir(dir);
    if (!d)
        return wp_errorf(err, "cannot read campaign directory %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t nnames = 0, cap = 0;
    struct dirent *de;
    int oom = 0;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.' || strcmp(de->d_name, "plots") == 0)
            continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) || !S_ISDIR(st.st_mode))
            continue;
        if (nnames == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) {
                oom = 1;
                break;
            }
            names = nn;
        }
        if (!(names[nnames] = strdup(de->d_name))) {
            oom = 1;
            break;
        }
        nnames++;
    }
    closedir(d);
    if (oom || !(h->runs = calloc(nnames ? nnames : 1, sizeof *h->runs))) {
        for (size_t i = 0; i < nnames; i++)
            free(names[i]);
        free(names);
        return wp_errorf(err, "out of memory reading %s", dir);
    }
    if (nnames)
        qsort(names, nnames, sizeof *names, cmp_str);
    for (size_t i = 0; i < nnames; i++) {
        char cfg[4200];
        snprintf(cfg, sizeof cfg, "%s/%s/point.cfg", dir, names[i]);
        if (!file_exists(cfg)) {
            fprintf(log, "%s/%s: no point.cfg — not a point directory, ignored\n", dir, names[i]);
        } else if (harvest_point(dir, names[i], warmup, log, &h->runs[h->nruns], &h->skipped_rows)) {
            h->nruns++;
        } else {
            wp_changes_free(&h->runs[h->nruns].scenario); /* read before the point was skipped */
            h->skipped_points++;
        }
        free(names[i]);
    }
    free(names);
    /* the union of axis names, in point.cfg order of first appearance */
    for (int i = 0; i < h->nruns; i++) {
        const struct wp_point *p = &h->runs[i].point;
        for (int a = 0; a < p->naxes; a++) {
            int seen = 0;
            for (int j = 0; j < h->naxes && !seen; j++)
                seen = strcmp(h->axis_name[j], p->axis_name[a]) == 0;
            if (!seen && h->naxes < WP_POINT_MAX_AXES)
                wp_strlcpy(h->axis_name[h->naxes++], p->axis_name[a], WP_POINT_NAME_MAX);
        }
    }
    h->micro_batches_follow_nodes = axis_follows_nodes(h, "micro_batches");
    h->data_parallel_follows_nodes = axis_follows_nodes(h, "data_parallel");
    compute_scaling(h);
    compute_adapt_vs_static(h);
    return 0;
}

void wp_harvest_free(struct wp_harvest *h)
{
    for (int i = 0; i < h->nruns; i++) {
        free(h->runs[i].per_iteration);
        wp_changes_free(&h->runs[i].scenario);
    }
    free(h->runs);
    h->runs = NULL;
    h->nruns = 0;
}

int wp_harvest_axis_varies(const struct wp_harvest *h, const char *name)
{
    const char *v0 = h->nruns ? wp_point_axis(&h->runs[0].point, name) : NULL;
    for (int i = 1; i < h->nruns; i++)
        if (!same_value(v0, wp_point_axis(&h->runs[i].point, name)))
            return 1;
    return 0;
}

int wp_harvest_is_static(const struct wp_harvest_run *r)
{
    const char *adapt = wp_point_axis(&r->point, "adapt");
    return adapt && strcmp(adapt, "none") == 0;
}

int wp_harvest_twins(const struct wp_harvest *h, const struct wp_harvest_run *a, const struct wp_harvest_run *b)
{
    for (int i = 0; i < h->naxes; i++)
        if (strcmp(h->axis_name[i], "adapt") != 0 &&
            !same_value(wp_point_axis(&a->point, h->axis_name[i]), wp_point_axis(&b->point, h->axis_name[i])))
            return 0;
    return 1;
}

/* Whether an axis means anything to a point of this schedule: k to kfkb,
 * waves to hanayo, chunks to interleaved and bfs (the run is given each only for
 * its kind; a campaign without a schedule axis runs 1f1b). */
static int axis_applies(const char *schedule, const char *axis)
{
    const char *s = schedule ? schedule : "1f1b";
    if (strcmp(axis, "k") == 0)
        return strcmp(s, "kfkb") == 0;
    if (strcmp(axis, "waves") == 0)
        return strcmp(s, "hanayo") == 0;
    if (strcmp(axis, "chunks") == 0)
        return wp_sched_kind_from_name(s) >= 0 && wp_sched_kind_has_chunks(wp_sched_kind_from_name(s));
    return 1;
}

void wp_harvest_series_label(const struct wp_harvest *h, const struct wp_harvest_run *r, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    const char *schedule = wp_point_axis(&r->point, "schedule");
    for (int a = 0; a < h->naxes; a++) {
        const char *name = h->axis_name[a];
        if (follows_nodes(h, r->point.scaling, name) || !wp_harvest_axis_varies(h, name) ||
            !axis_applies(schedule, name))
            continue;
        const char *v = wp_point_axis(&r->point, name);
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%s%s%s", used ? " " : "",
                                     strcmp(name, "schedule") == 0 ? "" : name,
                                     strcmp(name, "schedule") == 0 ? "" : "=", v ? v : "-");
    }
    if (used == 0)
        wp_strlcpy(buf, "all", size);
}

static void csv_text(FILE *fp, const char *s)
{
    if (strpbrk(s, ",\"\n\r") == NULL) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static void csv_num(FILE *fp, const char *fmt, double v)
{
    fputc(',', fp);
    if (isfinite(v))
        fprintf(fp, fmt, v);
}

void wp_harvest_write_csv(FILE *fp, const struct wp_harvest *h)
{
    static const char *const figures[] = {"iter_time_s", "samples_per_s", "tokens_per_s", "bubble_ratio"};
    for (int a = 0; a < h->naxes; a++)
        fprintf(fp, "%s%s", a ? "," : "", h->axis_name[a]);
    fprintf(fp, "%srepetition,point,state,scaling,iterations,duplicate_rows", h->naxes ? "," : "");
    for (int f = 0; f < 4; f++)
        fprintf(fp, ",%s_median,%s_min,%s_max", figures[f], figures[f], figures[f]);
    fprintf(fp, ",peak_activation_bytes_max,loss_last,predicted_iter_time_s,predicted_samples_per_s,"
                "predicted_bubble_ratio,weak_efficiency,strong_speedup,strong_efficiency,pause_s_total,"
                "partition_last,samples_per_s_mean,adapt_vs_static,shape_changes,shape_last\n");
    for (int i = 0; i < h->nruns; i++) {
        const struct wp_harvest_run *r = &h->runs[i];
        for (int a = 0; a < h->naxes; a++) {
            const char *v = wp_point_axis(&r->point, h->axis_name[a]);
            if (a)
                fputc(',', fp);
            csv_text(fp, v ? v : "");
        }
        fprintf(fp, "%s%d,", h->naxes ? "," : "", r->point.repetition);
        csv_text(fp, r->point.id[0] ? r->point.id : r->dir);
        fprintf(fp, ",%s,%s,%d,%d", r->state, r->point.scaling, r->iterations, r->duplicates);
        const struct wp_stat3 *s[4] = {&r->iter_time_s, &r->samples_per_s, &r->tokens_per_s, &r->bubble_ratio};
        static const char *const fmt[4] = {"%.6f", "%.4f", "%.2f", "%.4f"};
        for (int f = 0; f < 4; f++) {
            csv_num(fp, fmt[f], s[f]->median);
            csv_num(fp, fmt[f], s[f]->min);
            csv_num(fp, fmt[f], s[f]->max);
        }
        csv_num(fp, "%.0f", r->peak_activation_bytes);
        csv_num(fp, "%.6f", r->loss_last);
        csv_num(fp, "%.6f", r->pred_iter_time_s);
        csv_num(fp, "%.4f", r->pred_samples_per_s);
        csv_num(fp, "%.4f", r->pred_bubble_ratio);
        csv_num(fp, "%.4f", r->weak_efficiency);
        csv_num(fp, "%.4f", r->strong_speedup);
        csv_num(fp, "%.4f", r->strong_efficiency);
        csv_num(fp, "%.6f", r->pause_s_total);
        fputc(',', fp);
        csv_text(fp, r->partition_last);
        csv_num(fp, "%.4f", r->samples_per_s_mean);
        csv_num(fp, "%.4f", r->adapt_vs_static);
        fprintf(fp, ",%d,", r->shape_changes);
        csv_text(fp, r->shape_last);
        fputc('\n', fp);
    }
}

int wp_harvest_write_csv_file(const char *path, const struct wp_harvest *h, struct wp_err *err)
{
    struct wp_atomic_file af;
    if (wp_atomic_open(&af, path, err))
        return -1;
    wp_harvest_write_csv(af.fp, h);
    return wp_atomic_commit(&af, err);
}

static void fmt_num(char *buf, size_t size, const char *fmt, double v)
{
    if (isfinite(v))
        snprintf(buf, size, fmt, v);
    else
        wp_strlcpy(buf, "-", size);
}

void wp_harvest_print_table(FILE *fp, const struct wp_harvest *h)
{
    int width = 20; /* the series column: as wide as its longest label */
    for (int i = 0; i < h->nruns; i++) {
        char label[128];
        wp_harvest_series_label(h, &h->runs[i], label, sizeof label);
        width = (int)strlen(label) > width ? (int)strlen(label) : width;
    }
    fprintf(fp, "%-*s %5s %3s %5s %10s %21s %10s %9s %7s %7s %10s %7s %7s  %s\n", width, "series", "nodes", "rep",
            "iters", "samples/s", "(min - max)", "mean s/s", "vs static", "bubble", "(pred)", "pred s/s", "eff",
            "speedup", "state");
    for (int i = 0; i < h->nruns; i++) {
        const struct wp_harvest_run *r = &h->runs[i];
        char label[128], range[64], vs[16], pb[16], ps[24], eff[16], sp[16];
        wp_harvest_series_label(h, r, label, sizeof label);
        snprintf(range, sizeof range, "(%.2f - %.2f)", r->samples_per_s.min, r->samples_per_s.max);
        fmt_num(vs, sizeof vs, "%.3f", r->adapt_vs_static);
        fmt_num(pb, sizeof pb, "%.3f", r->pred_bubble_ratio);
        fmt_num(ps, sizeof ps, "%.2f", r->pred_samples_per_s);
        fmt_num(eff, sizeof eff, "%.3f",
                strcmp(r->point.scaling, "strong") == 0 ? r->strong_efficiency : r->weak_efficiency);
        fmt_num(sp, sizeof sp, "%.3f", r->strong_speedup);
        fprintf(fp, "%-*s %5d %3d %5d %10.2f %21s %10.2f %9s %7.3f %7s %10s %7s %7s  %s\n", width, label, r->nodes,
                r->point.repetition, r->iterations, r->samples_per_s.median, range, r->samples_per_s_mean, vs,
                r->bubble_ratio.median, pb, ps, eff, sp, r->state);
    }
}
