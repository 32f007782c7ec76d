/* Schedule files: wavepipe's CSV and PyTorch's compute-only CSV read into a
 * schedule (placement and split backward inferred, communication added where
 * the file has none, validated), and PyTorch's form written (schedule_file.h). */
#include "sched/schedule_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sched/emit.h"
#include "sched/place.h"
#include "sched/validate.h"
#include "sched/walk.h"
#include "util/read_file.h"

#define WAVEPIPE_HEADER "rank,step,op,stage,microbatch,peer"
#define DIGITS "0123456789"

/* One action as read, and where it was. */
struct cell {
    int rank, op, stage, mb, peer;
    int line;
    int column;  /* PyTorch's form: the cell's place in its row, from 1; 0 in wavepipe's */
    char letter; /* PyTorch's form: F, B, I or W as written */
};

struct reading {
    const char *path;
    int torch;
    struct cell *cells;
    long n, cap;
    int nranks;     /* rows (PyTorch) or highest rank + 1 (wavepipe) */
    int *next_step; /* wavepipe: per rank, the step its next row must have */
    int steps_cap;
};

/* "path:line: cell c (0F3)" or "path:line: F stage 0 micro-batch 3" */
static void where(const struct reading *rd, const struct cell *c, char *buf, size_t len)
{
    if (rd->torch) {
        snprintf(buf, len, "%s:%d: cell %d (%d%c%d)", rd->path, c->line, c->column, c->stage, c->letter, c->mb);
    } else {
        char what[160];
        struct wp_action a = {(uint64_t)c->op, c->stage, c->mb, c->peer};
        wp_action_describe(&a, what, sizeof what);
        snprintf(buf, len, "%s:%d: %s", rd->path, c->line, what);
    }
}

static char *trim(char *text)
{
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        text[--n] = '\0';
    return text;
}

/* A whole decimal of len digits in [0, WP_ACTION_FIELD_MAX]; -1 otherwise. */
static int parse_index(const char *text, size_t len)
{
    if (len == 0 || len > 7 || strspn(text, DIGITS) < len)
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++)
        v = v * 10 + (text[i] - '0');
    return v <= WP_ACTION_FIELD_MAX ? (int)v : -1;
}

static int push_cell(struct reading *rd, const struct cell *c, struct wp_err *err)
{
    if (rd->n == rd->cap) {
        long cap = rd->cap ? 2 * rd->cap : 256;
        struct cell *grown = realloc(rd->cells, (size_t)cap * sizeof *grown);
        if (!grown)
            return wp_errorf(err, "out of memory reading %s", rd->path);
        rd->cells = grown;
        rd->cap = cap;
    }
    rd->cells[rd->n++] = *c;
    return 0;
}

/* ---- wavepipe's CSV ------------------------------------------------------- */

/* A field that must hold an index (or be empty where empty_ok: -1). */
static int field_index(const struct reading *rd, int line, const char *name, const char *text, int empty_ok,
                       int *out, struct wp_err *err)
{
    if (!*text && empty_ok) {
        *out = -1;
        return 0;
    }
    *out = parse_index(text, strlen(text));
    if (*out < 0)
        return wp_errorf(err, "%s:%d: %s '%s' is not an integer from 0 to %d", rd->path, line, name, text,
                         WP_ACTION_FIELD_MAX);
    return 0;
}

static int read_wavepipe_row(struct reading *rd, char *row, int line, struct wp_err *err)
{
    char *field[6];
    int n = 0;
    for (char *p = row; p && n < 7; n++) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n < 6)
            field[n] = trim(p);
        p = comma ? comma + 1 : NULL;
    }
    if (n != 6)
        return wp_errorf(err, "%s:%d: %s fields; a row is %s", rd->path, line, n > 6 ? "more than 6" : "fewer than 6",
                         WAVEPIPE_HEADER);
    struct cell c = {0};
    c.line = line;
    int step;
    if (field_index(rd, line, "rank", field[0], 0, &c.rank, err) ||
        field_index(rd, line, "step", field[1], 0, &step, err))
        return -1;
    c.op = wp_op_from_name(field[2]);
    if (c.op < 0)
        return wp_errorf(err, "%s:%d: unknown op '%s' (F, B, W, SEND_ACT, RECV_ACT, SEND_GRAD, RECV_GRAD, "
                              "ALLREDUCE, STEP)",
                         rd->path, line, field[2]);
    int per_stage = c.op == WP_OP_ALLREDUCE || c.op == WP_OP_STEP;
    int message = wp_op_is_send(c.op) || wp_op_is_recv(c.op);
    if (field_index(rd, line, "stage", field[3], 0, &c.stage, err) ||
        field_index(rd, line, "microbatch", field[4], per_stage, &c.mb, err) ||
        field_index(rd, line, "peer", field[5], !message, &c.peer, err))
        return -1;
    if (per_stage && c.mb >= 0)
        return wp_errorf(err, "%s:%d: %s has no micro-batch (leave it empty)", rd->path, line, field[2]);
    if (!message && c.peer >= 0)
        return wp_errorf(err, "%s:%d: %s has no peer (leave it empty)", rd->path, line, field[2]);
    if (c.rank >= rd->steps_cap) {
        int cap = c.rank + 1 > 2 * rd->steps_cap ? c.rank + 1 : 2 * rd->steps_cap;
        int *grown = realloc(rd->next_step, (size_t)cap * sizeof *grown);
        if (!grown)
            return wp_errorf(err, "out of memory reading %s", rd->path);
        memset(grown + rd->steps_cap, 0, (size_t)(cap - rd->steps_cap) * sizeof *grown);
        rd->next_step = grown;
        rd->steps_cap = cap;
    }
    if (step != rd->next_step[c.rank])
        return wp_errorf(err, "%s:%d: rank %d step %d, but its next step is %d (each rank's steps count up from 0)",
                         rd->path, line, c.rank, step, rd->next_step[c.rank]);
    rd->next_step[c.rank]++;
    if (c.rank + 1 > rd->nranks)
        rd->nranks = c.rank + 1;
    return push_cell(rd, &c, err);
}

/* ---- PyTorch's CSV ------------------------------------------------------------ */

/* PyTorch's actions that are not compute (_ComputationType): its
 * compute_comms form, FSDP and overlapped F/B, none of which is read. */
static int torch_other_action(const char *type, size_t len)
{
    static const char *const names[] = {"UNSHARD", "RESHARD", "REDUCE_GRAD", "SEND_F", "RECV_F", "SEND_B", "RECV_B"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && strncmp(names[i], type, len) == 0)
            return 1;
    return 0;
}

/* One non-empty cell: [stage][F|B|I|W][micro-batch], as _Action.from_str reads it. */
static int read_torch_cell(struct reading *rd, const char *text, int line, int column, int rank, struct wp_err *err)
{
    size_t nd = strspn(text, DIGITS);
    const char *type = text + nd;
    size_t nt = strspn(type, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
    const char *mb = type + nt;
    size_t nm = strspn(mb, DIGITS);
    int whole = mb[nm] == '\0';
    if (text[0] == '(' || (nd && whole && torch_other_action(type, nt)))
        return wp_errorf(err, "%s:%d: cell %d '%s' (rank %d) is one of PyTorch's communication, FSDP or overlap "
                              "actions: give the compute-only form (F, B, I, W; wavepipe adds the sends and receives)",
                         rd->path, line, column, text, rank);
    if (!nd || nt != 1 || !strchr("FBIW", type[0]) || !nm || !whole)
        return wp_errorf(err, "%s:%d: cell %d '%s' (rank %d) is not an action such as 0F3 (stage 0, forward, "
                              "micro-batch 3), 1B0 (backward), 1I0 and 1W0 (backward split into input and weight "
                              "gradients)",
                         rd->path, line, column, text, rank);
    struct cell c = {rank, WP_OP_F, parse_index(text, nd), parse_index(mb, nm), -1, line, column, type[0]};
    if (c.stage < 0 || c.mb < 0)
        return wp_errorf(err, "%s:%d: cell %d '%s' (rank %d): stages and micro-batches go up to %d", rd->path, line,
                         column, text, rank, WP_ACTION_FIELD_MAX);
    c.op = type[0] == 'F' ? WP_OP_F : type[0] == 'W' ? WP_OP_W : WP_OP_B;
    return push_cell(rd, &c, err);
}

static int read_torch_row(struct reading *rd, char *row, int line, struct wp_err *err)
{
    int rank = rd->nranks++;
    if (rank > WP_ACTION_FIELD_MAX)
        return wp_errorf(err, "%s:%d: more than %d ranks", rd->path, line, WP_ACTION_FIELD_MAX + 1);
    int column = 0;
    for (char *p = row; p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        column++;
        char *text = trim(p);
        size_t n = strlen(text);
        if (n >= 2 && text[0] == '"' && text[n - 1] == '"') { /* a quoting writer's cell */
            text[n - 1] = '\0';
            text = trim(text + 1);
        }
        if (*text && read_torch_cell(rd, text, line, column, rank, err))
            return -1;
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* Every line of text: wavepipe's rows after the header (blank lines
 * skipped), or PyTorch's rows (each line a rank, as csv.reader gives them). */
static int read_lines(struct reading *rd, char *text, size_t len, struct wp_err *err)
{
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) /* a byte-order mark */
        text += 3;
    char *end = text + strlen(text);
    int line = 0;
    for (char *row = text; row < end;) {
        char *nl = strchr(row, '\n');
        char *next = nl ? nl + 1 : end;
        if (nl)
            *nl = '\0';
        size_t n = strlen(row);
        if (n && row[n - 1] == '\r')
            row[n - 1] = '\0';
        line++;
        if (line == 1)
            rd->torch = strcmp(trim(row), WAVEPIPE_HEADER) != 0;
        int rc = 0;
        if (rd->torch)
            rc = read_torch_row(rd, row, line, err);
        else if (line > 1 && *trim(row))
            rc = read_wavepipe_row(rd, row, line, err);
        if (rc)
            return -1;
        row = next;
    }
    if (line == 0)
        return wp_errorf(err, "%s: empty file", rd->path);
    return 0;
}

/* ---- from what was read to a schedule --------------------------------------- */

/* PyTorch's I/W against B: wavepipe splits the backward of every stage or of none. */
static int check_backward_kinds(const struct reading *rd, int S, struct wp_err *err)
{
    long *first_b = malloc((size_t)S * sizeof *first_b), *first_iw = malloc((size_t)S * sizeof *first_iw);
    if (!first_b || !first_iw) {
        free(first_b);
        free(first_iw);
        return wp_errorf(err, "out of memory");
    }
    for (int st = 0; st < S; st++)
        first_b[st] = first_iw[st] = -1;
    long any_b = -1, any_iw = -1;
    for (long i = 0; i < rd->n; i++) {
        const struct cell *c = &rd->cells[i];
        if (c->letter == 'B' && first_b[c->stage] < 0)
            first_b[c->stage] = i;
        if ((c->letter == 'I' || c->letter == 'W') && first_iw[c->stage] < 0)
            first_iw[c->stage] = i;
        if (c->letter == 'B' && any_b < 0)
            any_b = i;
        if ((c->letter == 'I' || c->letter == 'W') && any_iw < 0)
            any_iw = i;
    }
    long b = any_b, iw = any_iw;
    for (int st = 0; st < S; st++)
        if (first_b[st] >= 0 && first_iw[st] >= 0) {
            b = first_b[st];
            iw = first_iw[st];
            break;
        }
    free(first_b);
    free(first_iw);
    if (b < 0 || iw < 0)
        return 0;
    char at_b[1200], at_iw[1200];
    where(rd, &rd->cells[b], at_b, sizeof at_b);
    where(rd, &rd->cells[iw], at_iw, sizeof at_iw);
    return wp_errorf(err, "%s is a full backward (B) and %s a split one (I/W)%s: wavepipe splits the backward of "
                          "every stage or of none; write I and W for every backward, or B",
                     at_b, at_iw, rd->cells[b].stage == rd->cells[iw].stage ? ", of the same stage" : "");
}

/* The rank of every stage and the copy of every micro-batch, from the compute
 * actions: each (stage, micro-batch) on one rank; a stage on one rank, or (in
 * wavepipe's form) one rank per copy where micro-batches take fixed sets of
 * ranks (Chimera). owner[stage * M + mb] is the rank; *ncopies and rep (the
 * first micro-batch of each copy) describe the copies. */
static int infer_placement(const struct reading *rd, int S, int M, int *owner, long *owner_cell, int *mb_copy,
                           int *rep, int *ncopies, struct wp_err *err)
{
    char a[1200], b[1200];
    for (long k = 0; k < (long)S * M; k++)
        owner[k] = -1;
    for (long i = 0; i < rd->n; i++) {
        const struct cell *c = &rd->cells[i];
        if (!wp_op_is_compute(c->op))
            continue;
        long k = (long)c->stage * M + c->mb;
        if (owner[k] >= 0 && owner[k] != c->rank) {
            where(rd, c, a, sizeof a);
            where(rd, &rd->cells[owner_cell[k]], b, sizeof b);
            return wp_errorf(err, "%s is on rank %d, but %s is on rank %d: a micro-batch of a stage runs on one rank "
                                  "(replicated stages cannot be read from a file)",
                             a, c->rank, b, owner[k]);
        }
        if (owner[k] < 0) {
            owner[k] = c->rank;
            owner_cell[k] = i;
        }
    }
    int multi = 0;
    for (int st = 0; st < S; st++) {
        long first = -1;
        for (int m = 0; m < M; m++) {
            long k = (long)st * M + m;
            if (owner[k] < 0)
                continue;
            if (first < 0)
                first = k;
            else if (owner[k] != owner[first]) {
                if (rd->torch) {
                    where(rd, &rd->cells[owner_cell[k]], a, sizeof a);
                    where(rd, &rd->cells[owner_cell[first]], b, sizeof b);
                    return wp_errorf(err, "%s puts stage %d on rank %d, but %s on rank %d: PyTorch's schedules run "
                                          "each stage on one rank",
                                     a, st, owner[k], b, owner[first]);
                }
                multi = 1;
            }
        }
        if (first < 0)
            return wp_errorf(err, "%s: stage %d has no compute action (the stages are those from 0 to the highest, %d)",
                             rd->path, st, S - 1);
    }
    *ncopies = 1;
    rep[0] = 0;
    for (int m = 0; m < M; m++)
        mb_copy[m] = 0;
    if (!multi)
        return 0;
    /* Chimera's copies: each micro-batch's ranks, stage by stage, name its copy */
    for (long k = 0; k < (long)S * M; k++)
        if (owner[k] < 0)
            return wp_errorf(err, "%s: stage %ld micro-batch %ld has no compute action; where stages are on several "
                                  "ranks (copies), every micro-batch's ranks must be in the file",
                             rd->path, k / M, k % M);
    *ncopies = 0;
    for (int m = 0; m < M; m++) {
        int c = 0;
        for (; c < *ncopies; c++) {
            int st = 0;
            while (st < S && owner[(long)st * M + m] == owner[(long)st * M + rep[c]])
                st++;
            if (st == S)
                break;
        }
        if (c == *ncopies) {
            for (int d = 0; d < *ncopies; d++)
                for (int st = 0; st < S; st++)
                    if (owner[(long)st * M + m] == owner[(long)st * M + rep[d]])
                        return wp_errorf(err, "%s: stage %d is on rank %d for micro-batches %d and %d, which run other "
                                              "stages on other ranks: a stage on several ranks has one rank per copy, "
                                              "and the micro-batches of a copy run every stage on its ranks (Chimera)",
                                         rd->path, st, owner[(long)st * M + m], rep[d], m);
            rep[(*ncopies)++] = m;
        }
        mb_copy[m] = c;
    }
    return 0;
}

static int holds(const struct wp_schedule *s, int stage, int rank)
{
    const struct wp_stage_place *pl = &s->place[stage];
    for (int i = 0; i < pl->ncopies * pl->nreplicas; i++)
        if (pl->ranks[i] == rank)
            return 1;
    return 0;
}

static int build(const struct reading *rd, const struct wp_sched_params *costs, struct wp_schedule *s,
                 struct wp_err *err)
{
    int S = 0, M = 0, P = rd->nranks, has_comm = 0, has_w = 0;
    long ncompute = 0;
    for (long i = 0; i < rd->n; i++) {
        const struct cell *c = &rd->cells[i];
        if (!wp_op_is_compute(c->op)) {
            has_comm = 1;
            continue;
        }
        ncompute++;
        has_w |= c->op == WP_OP_W || c->letter == 'I';
        if (c->stage + 1 > S)
            S = c->stage + 1;
        if (c->mb + 1 > M)
            M = c->mb + 1;
    }
    if (S == 0)
        return wp_errorf(err, "%s: no compute action (F, B, W) in the file", rd->path);
    /* every (stage, micro-batch) has its F: fewer actions than that is a stray
     * index, and the tables below would be that large */
    if ((long long)S * M > ncompute)
        return wp_errorf(err, "%s: %d stages and %d micro-batches (the highest indices + 1) need %lld forwards, "
                         "and the file has %ld compute actions in all: an index out of place?", rd->path, S, M,
                         (long long)S * M, ncompute);
    char *busy = calloc((size_t)P, 1);
    if (!busy)
        return wp_errorf(err, "out of memory");
    for (long i = 0; i < rd->n; i++)
        busy[rd->cells[i].rank] = 1;
    int idle = 0;
    while (idle < P && busy[idle])
        idle++;
    free(busy);
    if (idle < P && rd->torch)
        return wp_errorf(err, "%s:%d: rank %d has no action: each row is a rank (a blank line too)", rd->path,
                         idle + 1, idle);
    if (idle < P)
        return wp_errorf(err, "%s: rank %d has no action, below the highest rank, %d", rd->path, idle, P - 1);
    if (rd->torch && check_backward_kinds(rd, S, err))
        return -1;
    int *owner = malloc((size_t)S * M * sizeof *owner), *mb_copy = malloc((size_t)M * sizeof *mb_copy);
    long *owner_cell = malloc((size_t)S * M * sizeof *owner_cell);
    int *rep = malloc((size_t)P * sizeof *rep);
    int ncopies = 0;
    int rc = owner && mb_copy && owner_cell && rep ? 0 : wp_errorf(err, "out of memory");
    if (rc == 0)
        rc = infer_placement(rd, S, M, owner, owner_cell, mb_copy, rep, &ncopies, err);
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = WP_SCHED_FILE;
    p.ranks = P;
    p.microbatches = M;
    p.tf = costs->tf;
    p.tb = costs->tb;
    p.tw = costs->tw;
    p.tc = costs->tc;
    if (rc == 0)
        rc = wp_schedule_init(s, &p, S, err);
    if (rc) {
        free(owner);
        free(owner_cell);
        free(mb_copy);
        free(rep);
        return -1;
    }
    s->split_backward = has_w;
    for (int st = 0; st < S && rc == 0; st++) {
        rc = wp_sched_set_place(s, st, ncopies, 1, err);
        for (int c = 0; rc == 0 && c < ncopies; c++)
            s->place[st].ranks[c] = owner[(long)st * M + rep[c]];
    }
    memcpy(s->mb_copy, mb_copy, (size_t)M * sizeof *mb_copy);
    free(owner);
    free(owner_cell);
    free(mb_copy);
    free(rep);
    if (rc == 0)
        wp_sched_set_weights(s);
    for (long i = 0; i < rd->n && rc == 0; i++) {
        const struct cell *c = &rd->cells[i];
        if (c->stage >= S || c->mb >= M || c->peer >= P) {
            char at[1200];
            where(rd, c, at, sizeof at);
            rc = wp_errorf(err, "%s: beyond the schedule's %d ranks, %d stages and %d micro-batches (the highest "
                                "in its compute actions)",
                           at, P, S, M);
        } else if (c->mb < 0 && !holds(s, c->stage, c->rank)) {
            char at[1200];
            where(rd, c, at, sizeof at);
            rc = wp_errorf(err, "%s on rank %d, which runs no F, B or W of the stage: stages are placed by their "
                                "compute (a copy without micro-batches, as Chimera's with M <= P/2 has, cannot be read)",
                           at, c->rank);
        } else {
            rc = wp_schedule_push(s, c->rank, c->op, c->stage, c->mb, c->peer, err);
        }
    }
    if (rc == 0 && !has_comm)
        rc = wp_sched_add_comm(s, err);
    for (int r = 0; rc == 0 && r < P; r++) {
        s->activation_bound[r] = 0;
        for (int st = 0; st < S; st++)
            for (int c = 0; c < ncopies; c++)
                if (s->place[st].ranks[c] == r)
                    s->activation_bound[r] += M * wp_stage_weight(s, st);
    }
    struct wp_validation v;
    if (rc == 0 && wp_schedule_validate(s, &v, err) == 0)
        wp_validation_destroy(&v);
    else if (rc == 0)
        rc = wp_err_prefix(err, "%s%s: ", rd->path,
                           has_comm ? "" : " (with the sends, receives and STEPs wavepipe adds to compute-only lists)");
    if (rc)
        wp_schedule_destroy(s);
    return rc;
}

int wp_schedule_load(const char *path, const struct wp_sched_params *costs, struct wp_schedule *s,
                     struct wp_err *err)
{
    memset(s, 0, sizeof *s);
    size_t len = 0;
    char *text = wp_read_file(path, &len);
    if (!text)
        return wp_errorf(err, "cannot read schedule file %s: %s", path, strerror(errno));
    struct reading rd = {0};
    rd.path = path;
    int rc = read_lines(&rd, text, len, err);
    if (rc == 0)
        rc = build(&rd, costs, s, err);
    free(text);
    free(rd.cells);
    free(rd.next_step);
    return rc;
}

/* ---- PyTorch's form out -------------------------------------------------------- */

/* The lock-step grid: each compute action's step, one after the rank's previous
 * action and one after the action on another rank it needs (F of stage s-1 for
 * F of s; B of s+1 for B of s), as PipelineScheduleMulti posts a receive in the
 * step its sender computes. steps[r][i] for compute action i of rank r. */
static int grid_steps(const struct wp_schedule *s, int **steps, struct wp_err *err)
{
    int P = s->nranks, S = s->nstages, M = s->nmicro;
    int *f_at = malloc((size_t)S * M * sizeof *f_at), *b_at = malloc((size_t)S * M * sizeof *b_at);
    int *pos = calloc((size_t)P, sizeof *pos), *last = malloc((size_t)P * sizeof *last);
    int rc = f_at && b_at && pos && last ? 0 : wp_errorf(err, "out of memory");
    long left = 0;
    for (long k = 0; rc == 0 && k < (long)S * M; k++)
        f_at[k] = b_at[k] = -1;
    for (int r = 0; rc == 0 && r < P; r++) {
        last[r] = -1;
        for (int i = 0; i < s->lists[r].count; i++)
            left += wp_op_is_compute(s->lists[r].actions[i].op);
    }
    while (rc == 0 && left > 0) {
        int progress = 0;
        for (int r = 0; r < P; r++) {
            const struct wp_action_list *l = &s->lists[r];
            for (; pos[r] < l->count; pos[r]++) {
                const struct wp_action *a = &l->actions[pos[r]];
                if (!wp_op_is_compute(a->op))
                    continue;
                long k = (long)a->stage * M + a->microbatch;
                int need = -2; /* the step of what it needs from before; -2: nothing */
                if (a->op == WP_OP_F && a->stage > 0)
                    need = f_at[k - M];
                else if (a->op == WP_OP_B && a->stage < S - 1)
                    need = b_at[k + M];
                if (need == -1)
                    break; /* not yet on the grid */
                int at = last[r] + 1 > need + 1 ? last[r] + 1 : need + 1;
                steps[r][pos[r]] = last[r] = at;
                if (a->op == WP_OP_F)
                    f_at[k] = at;
                else if (a->op == WP_OP_B)
                    b_at[k] = at;
                left--;
                progress = 1;
            }
        }
        if (!progress)
            rc = wp_errorf(err, "the compute order cannot be laid out in lock step (a rank waits for itself)");
    }
    free(f_at);
    free(b_at);
    free(pos);
    free(last);
    return rc;
}

int wp_schedule_write_torch_csv(FILE *out, const struct wp_schedule *s, struct wp_err *err)
{
    for (int st = 0; st < s->nstages; st++)
        if (s->place[st].ncopies * s->place[st].nreplicas != 1)
            return wp_errorf(err, "PyTorch's schedules run each stage on one rank; this %s schedule has stage %d on "
                                  "%d ranks",
                             wp_sched_kind_name(s->params.kind), st, s->place[st].ncopies * s->place[st].nreplicas);
    int P = s->nranks, rc = 0;
    int **steps = calloc((size_t)P, sizeof *steps);
    if (!steps)
        return wp_errorf(err, "out of memory");
    for (int r = 0; r < P && rc == 0; r++) {
        steps[r] = malloc((size_t)(s->lists[r].count ? s->lists[r].count : 1) * sizeof **steps);
        if (!steps[r])
            rc = wp_errorf(err, "out of memory");
    }
    if (rc == 0)
        rc = grid_steps(s, steps, err);
    for (int r = 0; r < P && rc == 0; r++) {
        int cells = 0; /* written in this row, empty ones included */
        for (int i = 0; i < s->lists[r].count; i++) {
            const struct wp_action *a = &s->lists[r].actions[i];
            if (!wp_op_is_compute(a->op))
                continue;
            for (; cells < steps[r][i]; cells++)
                fputs(cells ? "," : "", out);
            char letter = a->op == WP_OP_F ? 'F' : a->op == WP_OP_W ? 'W' : s->split_backward ? 'I' : 'B';
            fprintf(out, "%s%d%c%d", cells++ ? "," : "", a->stage, letter, a->microbatch);
        }
        fputc('\n', out);
    }
    for (int r = 0; r < P; r++)
        free(steps[r]);
    free(steps);
    return rc;
}
