/* Lifetime and output of schedules and their action lists. */
#include "sched/schedule.h"

#include <stdlib.h>
#include <string.h>

#include "util/huge_pages.h"

static const char *const kind_names[WP_SCHED_KIND_COUNT] = {
    [WP_SCHED_GPIPE] = "gpipe",   [WP_SCHED_1F1B] = "1f1b",       [WP_SCHED_KFKB] = "kfkb",
    [WP_SCHED_INTERLEAVED] = "interleaved", [WP_SCHED_CHIMERA] = "chimera",
    [WP_SCHED_HANAYO] = "hanayo", [WP_SCHED_ZBH1] = "zb-h1",
    [WP_SCHED_ZBV] = "zb-v",      [WP_SCHED_DUALPIPEV] = "dualpipev",
    [WP_SCHED_BFS] = "bfs",
    [WP_SCHED_FILE] = "file",
};

const char *wp_sched_kind_name(enum wp_sched_kind kind)
{
    return (unsigned)kind < WP_SCHED_KIND_COUNT ? kind_names[kind] : "?";
}

int wp_sched_kind_from_name(const char *name)
{
    for (int i = 0; i < WP_SCHED_KIND_COUNT; i++)
        if (strcmp(kind_names[i], name) == 0)
            return i;
    return -1;
}

void wp_sched_params_default(struct wp_sched_params *p)
{
    memset(p, 0, sizeof *p);
    p->kind = WP_SCHED_1F1B;
    p->ranks = 4;
    p->microbatches = 8;
    p->k = 1;
    p->waves = 1;
    p->chunks = 1;
    p->policy = 'A';
    p->tf = 1;
    p->tb = 2;
}

int wp_schedule_init(struct wp_schedule *s, const struct wp_sched_params *p, int nstages,
                     struct wp_err *err)
{
    memset(s, 0, sizeof *s);
    s->params = *p;
    s->nranks = p->ranks;
    s->nstages = nstages;
    s->nmicro = p->microbatches;
    s->place = calloc((size_t)nstages, sizeof *s->place);
    s->mb_copy = calloc((size_t)p->microbatches, sizeof *s->mb_copy);
    s->lists = calloc((size_t)p->ranks, sizeof *s->lists);
    s->activation_bound = calloc((size_t)p->ranks, sizeof *s->activation_bound);
    s->stage_weight = calloc((size_t)nstages, sizeof *s->stage_weight);
    if (p->nreplicas) {
        s->replicas_store = malloc((size_t)p->nreplicas * sizeof *s->replicas_store);
        if (s->replicas_store)
            memcpy(s->replicas_store, p->replicas, (size_t)p->nreplicas * sizeof *p->replicas);
        s->params.replicas = s->replicas_store;
    }
    if (p->nstage_costs) {
        s->stage_cost_store = malloc((size_t)p->nstage_costs * sizeof *s->stage_cost_store);
        if (s->stage_cost_store)
            memcpy(s->stage_cost_store, p->stage_cost_scale,
                   (size_t)p->nstage_costs * sizeof *p->stage_cost_scale);
        s->params.stage_cost_scale = s->stage_cost_store;
    }
    if (!s->place || !s->mb_copy || !s->lists || !s->activation_bound || !s->stage_weight || (p->nreplicas && !s->replicas_store) ||
        (p->nstage_costs && !s->stage_cost_store)) {
        wp_schedule_destroy(s);
        return wp_errorf(err, "out of memory for a schedule of %d ranks", p->ranks);
    }
    return 0;
}

void wp_schedule_destroy(struct wp_schedule *s)
{
    for (int i = 0; s->place && i < s->nstages; i++)
        free(s->place[i].ranks);
    for (int r = 0; s->lists && r < s->nranks; r++)
        if (!s->lists[r].in_store)
            free(s->lists[r].actions);
    wp_huge_free(s->action_store);
    free(s->place);
    free(s->mb_copy);
    free(s->lists);
    free(s->activation_bound);
    free(s->stage_weight);
    free(s->replicas_store);
    free(s->stage_cost_store);
    memset(s, 0, sizeof *s);
}

int wp_schedule_reserve(struct wp_schedule *s, const long *capacity, struct wp_err *err)
{
    long total = 0;
    for (int r = 0; r < s->nranks; r++) {
        if (s->lists[r].count || capacity[r] < 0 || capacity[r] > INT32_MAX)
            return wp_errorf(err, "rank %d: cannot reserve %ld actions for a list of %d", r, capacity[r],
                             s->lists[r].count);
        total += capacity[r];
    }
    struct wp_action *store = wp_huge_calloc((size_t)(total ? total : 1), sizeof *store);
    if (!store)
        return wp_errorf(err, "out of memory for %ld actions", total);
    wp_huge_free(s->action_store);
    s->action_store = store;
    for (int r = 0; r < s->nranks; r++) {
        if (!s->lists[r].in_store)
            free(s->lists[r].actions);
        s->lists[r] = (struct wp_action_list){store, 0, (int)capacity[r], 1};
        store += capacity[r];
    }
    return 0;
}

int wp_schedule_push_grow(struct wp_schedule *s, int rank, int op, int stage, int mb, int peer,
                          struct wp_err *err)
{
    struct wp_action_list *l = &s->lists[rank];
    if (l->count == l->capacity) {
        if (l->capacity > INT32_MAX / 2)
            return wp_errorf(err, "the action list of rank %d is full (%d actions)", rank, l->count);
        int cap = l->capacity ? 2 * l->capacity : 64;
        struct wp_action *grown = l->in_store ? malloc((size_t)cap * sizeof *grown)
                                              : realloc(l->actions, (size_t)cap * sizeof *grown);
        if (!grown)
            return wp_errorf(err, "out of memory for the action list of rank %d", rank);
        if (l->in_store && l->count)
            memcpy(grown, l->actions, (size_t)l->count * sizeof *grown);
        l->actions = grown;
        l->capacity = cap;
        l->in_store = 0;
    }
    l->actions[l->count++] = (struct wp_action){(uint64_t)op, stage, mb, peer};
    return 0;
}

int wp_schedule_stages_per_rank(const struct wp_schedule *s, int rank)
{
    int n = 0;
    for (int st = 0; st < s->nstages; st++) {
        const struct wp_stage_place *pl = &s->place[st];
        for (int i = 0; i < pl->ncopies * pl->nreplicas; i++)
            if (pl->ranks[i] == rank) {
                n++;
                break;
            }
    }
    return n;
}

void wp_schedule_write_text(FILE *out, const struct wp_schedule *s)
{
    for (int r = 0; r < s->nranks; r++) {
        fprintf(out, "rank %d:", r);
        const struct wp_action_list *l = &s->lists[r];
        for (int i = 0; i < l->count; i++) {
            const struct wp_action *a = &l->actions[i];
            if (wp_op_is_compute(a->op))
                fprintf(out, " %s%d.%d", wp_op_name(a->op), a->stage, a->microbatch);
            else if (a->microbatch >= 0)
                fprintf(out, " %s%d.%d%s%d", wp_op_name(a->op), a->stage, a->microbatch,
                        wp_op_is_send(a->op) ? ">" : "<", a->peer);
            else
                fprintf(out, " %s%d", wp_op_name(a->op), a->stage);
        }
        fputc('\n', out);
    }
}

void wp_schedule_write_csv(FILE *out, const struct wp_schedule *s)
{
    fprintf(out, "rank,step,op,stage,microbatch,peer\n");
    for (int r = 0; r < s->nranks; r++) {
        const struct wp_action_list *l = &s->lists[r];
        for (int i = 0; i < l->count; i++) {
            const struct wp_action *a = &l->actions[i];
            fprintf(out, "%d,%d,%s,%d,", r, i, wp_op_name(a->op), a->stage);
            if (a->microbatch >= 0)
                fprintf(out, "%d", a->microbatch);
            fputc(',', out);
            if (a->peer >= 0)
                fprintf(out, "%d", a->peer);
            fputc('\n', out);
        }
    }
}

int wp_schedule_rename_ranks(struct wp_schedule *s, const int *to, struct wp_err *err)
{
    int P = s->nranks;
    struct wp_action_list *lists = calloc((size_t)P, sizeof *lists);
    double *bound = calloc((size_t)P, sizeof *bound);
    char *seen = calloc((size_t)P, 1);
    int rc = lists && bound && seen ? 0 : wp_errorf(err, "out of memory");
    for (int r = 0; r < P && rc == 0; r++) {
        if (to[r] < 0 || to[r] >= P || seen[to[r]])
            rc = wp_errorf(err, "rank renaming is not a permutation of 0..%d (rank %d -> %d)", P - 1, r, to[r]);
        else
            seen[to[r]] = 1;
    }
    if (rc == 0) {
        for (int r = 0; r < P; r++) {
            lists[to[r]] = s->lists[r];
            bound[to[r]] = s->activation_bound[r];
            for (int i = 0; i < lists[to[r]].count; i++) {
                struct wp_action *a = &lists[to[r]].actions[i];
                if (a->peer >= 0)
                    a->peer = to[a->peer];
            }
        }
        for (int st = 0; st < s->nstages; st++)
            for (int i = 0; i < s->place[st].ncopies * s->place[st].nreplicas; i++)
                s->place[st].ranks[i] = to[s->place[st].ranks[i]];
        free(s->lists);
        free(s->activation_bound);
        s->lists = lists;
        s->activation_bound = bound;
        lists = NULL;
        bound = NULL;
    }
    free(lists);
    free(bound);
    free(seen);
    return rc;
}

int wp_stage_holders_sorted(const struct wp_schedule *s, int stage, int *ranks)
{
    const struct wp_stage_place *pl = &s->place[stage];
    int n = 0;
    for (int i = 0; i < pl->ncopies * pl->nreplicas; i++) {
        int r = pl->ranks[i], k = n++;
        while (k > 0 && ranks[k - 1] > r) {
            ranks[k] = ranks[k - 1];
            k--;
        }
        ranks[k] = r;
    }
    return n;
}
