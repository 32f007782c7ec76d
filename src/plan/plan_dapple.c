/* The planner's search (DAPPLE formulas 4-5, see plan.h) at each point of
 * the hybrid space, and its final choice among the DP's plans and the
 * uniform ones (plan_uniform.c) of every point.
 *
 * Dynamic programming: a state is (j, occupancy): the first j layers are
 * planned as stages on groups taken from the nodes (occupancy = tensor
 * groups taken per node, nodes being identical compared as a sorted
 * multiset; a group is one GPU without tensor parallelism). Its value
 * is L of the whole plan in which layers j..N-1 form one more stage on every
 * free group, the memoised T_PL(j, m, g). A step from a state cuts that last
 * stage after layer j' - 1 and gives the first part m' groups by fresh,
 * append or scatter first; each state keeps the best way to reach it (a plan
 * that fits in memory before one that does not, then the smaller L). The
 * root (no cut) is data parallelism; cutting everywhere with m' = 1 gives
 * straight pipelines.
 *
 * The state space grows with the layers, the groups and the occupancies of
 * the nodes (C(nodes + g, nodes) sorted vectors for g groups per node). When
 * the DP would cost more than WP_DP_BUDGET plan evaluations it gives a new
 * stage only a divisor of a node's groups or whole nodes; when even that is
 * too much, or beyond WP_DP_MAX_DEVICES groups, the search is over uniform
 * plans only (plan_uniform.c), which always runs too.
 *
 * The points (wp_plan_search): every tensor group p1 x p2 that divides a
 * node's GPUs and the table's blocks, and slices of 1, 2, 4, ... samples
 * when the table's times hold at any size (analytic tables; a profile's
 * only at its profile batch). The best plans by L of each point go into one
 * list.
 *
 * The final choice: L leaves out bubbles inside the pivot stage and how
 * transfers overlap compute, so the best candidates of the list by L (at
 * each point half from each search) are simulated on the same costs, as
 * many as WP_SIMULATE_BUDGET allows, and the fastest wins; its boundaries
 * are then moved a layer at a time while the simulator says it gets faster
 * (polish). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/plan_search.h"
#include "util/clock.h"

#define WP_DP_MAX_DEVICES 64
#define WP_DP_BUDGET 3e7
/* How many of the best plans by L the simulator checks, and how much
 * simulation (ranks x micro-batches summed over the checks) they may take:
 * 512 ranks x 64 micro-batches each for 48 plans, the scale the simulator's
 * ranks x ranks link table was sized for */
#define WP_SIMULATE_CANDIDATES 48
#define WP_SIMULATE_BUDGET (48.0 * 512 * 64)
/* The largest slice (samples per replica in a micro-batch) the hybrid
 * search tries: Megatron-LM's table 1 runs 1 to 16 */
#define WP_MAX_SLICE 16

struct state {
    int j;
    int parent;
    int first, last, replicas; /* the stage added by the step into this state */
    enum wp_place_policy policy;
    struct wp_stage_shape shape;
    int nstages;               /* stages before the rest */
    double value, peak;
    int fits;
};

struct search {
    const struct wp_plan_model *m;
    int nodes, cap, N, G;
    struct state *st;
    int nst, capst;
    int *used;                 /* nst x nodes, actual */
    int *canon;                /* nst x nodes, sorted descending */
    int *canon_tmp, *used_tmp; /* nodes each */
    int *table;                /* hash table of state indices, -1 empty */
    size_t table_size;
    int *bucket_next;          /* per state: next state with the same j */
    int *bucket_head, *bucket_tail;
    struct wp_plan_tally tally;
    char *take;                /* take[m]: a new stage may get m groups (G + 1 entries) */
    int memory_first;          /* a way into a state is better by its peak memory first (search_point) */
};

static int better(int fits_a, double a, int fits_b, double b)
{
    if (fits_a != fits_b)
        return fits_a > fits_b;
    return a < b;
}

/* One way into a DP state over another: by the time, or with memory_first
 * by the peak memory and then the time */
static int better_state(const struct search *S, const struct state *a, const struct state *b)
{
    if (S->memory_first && a->fits == b->fits && a->peak != b->peak)
        return a->peak < b->peak;
    return better(a->fits, a->value, b->fits, b->value);
}

static int cmp_desc(const void *a, const void *b)
{
    return *(const int *)b - *(const int *)a;
}

static unsigned long hash_key(int j, const int *canon, int nodes)
{
    unsigned long h = 1469598103934665603UL ^ (unsigned long)j;
    for (int i = 0; i < nodes; i++)
        h = (h ^ (unsigned long)canon[i]) * 1099511628211UL;
    return h;
}

/* The state (j, occupancy), or -1 (and *slot where it would go). */
static int find(const struct search *S, int j, const int *canon, size_t *slot)
{
    size_t i = hash_key(j, canon, S->nodes) & (S->table_size - 1);
    while (S->table[i] >= 0) {
        int k = S->table[i];
        if (S->st[k].j == j && memcmp(&S->canon[(size_t)k * S->nodes], canon, (size_t)S->nodes * sizeof *canon) == 0)
            return k;
        i = (i + 1) & (S->table_size - 1);
    }
    *slot = i;
    return -1;
}

static int grow(struct search *S)
{
    if (S->nst < S->capst)
        return 0;
    int cap = S->capst ? 2 * S->capst : 1024;
    struct state *st = realloc(S->st, (size_t)cap * sizeof *st);
    if (!st)
        return -1;
    S->st = st;
    int *used = realloc(S->used, (size_t)cap * S->nodes * sizeof *used);
    if (!used)
        return -1;
    S->used = used;
    int *canon = realloc(S->canon, (size_t)cap * S->nodes * sizeof *canon);
    if (!canon)
        return -1;
    S->canon = canon;
    int *next = realloc(S->bucket_next, (size_t)cap * sizeof *next);
    if (!next)
        return -1;
    S->bucket_next = next;
    S->capst = cap;
    /* keep the table at most half full */
    if ((size_t)cap * 2 > S->table_size) {
        size_t size = S->table_size ? S->table_size : 4096;
        while (size < (size_t)cap * 2)
            size *= 2;
        int *table = malloc(size * sizeof *table);
        if (!table)
            return -1;
        for (size_t i = 0; i < size; i++)
            table[i] = -1;
        free(S->table);
        S->table = table;
        S->table_size = size;
        for (int k = 0; k < S->nst; k++) {
            size_t slot;
            find(S, S->st[k].j, &S->canon[(size_t)k * S->nodes], &slot);
            S->table[slot] = k;
        }
    }
    return 0;
}

/* Records a way into (j, used) (canon: used sorted descending): a new
 * state, or a better way into an old one. */
static int offer(struct search *S, const struct state *cand, const int *used, const int *canon)
{
    if (!S->table && grow(S))
        return -1;
    size_t slot = 0;
    int k = find(S, cand->j, canon, &slot);
    if (k >= 0) {
        if (better_state(S, cand, &S->st[k])) {
            S->st[k] = *cand;
            memcpy(&S->used[(size_t)k * S->nodes], used, (size_t)S->nodes * sizeof *used);
        }
        return 0;
    }
    if (grow(S))
        return -1;
    find(S, cand->j, canon, &slot);
    k = S->nst++;
    S->st[k] = *cand;
    memcpy(&S->used[(size_t)k * S->nodes], used, (size_t)S->nodes * sizeof *used);
    memcpy(&S->canon[(size_t)k * S->nodes], canon, (size_t)S->nodes * sizeof *canon);
    S->table[slot] = k;
    S->bucket_next[k] = -1;
    if (S->bucket_head[cand->j] < 0)
        S->bucket_head[cand->j] = k;
    else
        S->bucket_next[S->bucket_tail[cand->j]] = k;
    S->bucket_tail[cand->j] = k;
    return 0;
}

static void canonical(const struct search *S, const int *used, int *canon)
{
    memcpy(canon, used, (size_t)S->nodes * sizeof *canon);
    qsort(canon, (size_t)S->nodes, sizeof *canon, cmp_desc);
}

/* The shape of a stage holding hi[i] - lo[i] GPUs of node i (hi NULL: every
 * GPU not in lo, the rest of a state). */
static void shape_between(const int *lo, const int *hi, int nodes, int cap, struct wp_stage_shape *sh)
{
    sh->replicas = 0;
    sh->nodes_spanned = 0;
    sh->max_per_node = 0;
    sh->only_node = -1;
    for (int i = 0; i < nodes; i++) {
        int f = (hi ? hi[i] : cap) - lo[i];
        if (f <= 0)
            continue;
        sh->replicas += f;
        sh->only_node = sh->nodes_spanned == 0 ? i : -1;
        sh->nodes_spanned++;
        if (f > sh->max_per_node)
            sh->max_per_node = f;
    }
}

static double evaluate(struct search *S, struct wp_stage_shape *shapes, int n, int *fits, double *peak)
{
    return wp_plan_tally_latency(S->m, &S->tally, shapes, n, fits, peak);
}

/* Expands every state with j layers planned. */
static int expand_bucket(struct search *S, int j, struct wp_stage_shape *shapes, int *used2,
                         struct wp_plan_device *devs)
{
    const int N = S->N;
    for (int k = S->bucket_head[j]; k >= 0; k = S->bucket_next[k]) {
        /* the prefix's stages, walking back */
        int ns = S->st[k].nstages;
        for (int a = k, i = ns - 1; i >= 0; a = S->st[a].parent, i--)
            shapes[i] = S->st[a].shape;
        /* a copy: offer() may move the state arrays */
        int *used = S->used_tmp;
        memcpy(used, &S->used[(size_t)k * S->nodes], (size_t)S->nodes * sizeof *used);
        int taken = 0;
        for (int i = 0; i < S->nodes; i++)
            taken += used[i];
        int free_gpus = S->G - taken;
        for (int mp = 1; mp < free_gpus; mp++) {
            if (!S->take[mp])
                continue;
            /* policies that land on the same occupancy make the same states */
            int tried[3][WP_DP_MAX_DEVICES], ntried = 0;
            for (int pol = WP_PLACE_FRESH; pol <= WP_PLACE_SCATTER; pol++) {
                if (S->m->place_only && pol != S->m->place_only - 1)
                    continue;
                memcpy(used2, used, (size_t)S->nodes * sizeof *used2);
                if (wp_place_take((enum wp_place_policy)pol, used2, S->nodes, S->cap, mp, devs))
                    continue;
                int dup = 0;
                for (int q = 0; q < ntried && !dup; q++)
                    dup = memcmp(tried[q], used2, (size_t)S->nodes * sizeof *used2) == 0;
                if (dup)
                    continue;
                memcpy(tried[ntried++], used2, (size_t)S->nodes * sizeof *used2);
                struct wp_stage_shape added, rest;
                canonical(S, used2, S->canon_tmp);
                shape_between(used, used2, S->nodes, S->cap, &added);
                shape_between(used2, NULL, S->nodes, S->cap, &rest);
                for (int j2 = j + 1; j2 < N; j2++) {
                    added.first_layer = j;
                    added.last_layer = j2 - 1;
                    rest.first_layer = j2;
                    rest.last_layer = N - 1;
                    shapes[ns] = added;
                    shapes[ns + 1] = rest;
                    struct state cand = {j2, k, j, j2 - 1, mp, (enum wp_place_policy)pol, added, ns + 1, 0, 0, 0};
                    cand.value = evaluate(S, shapes, ns + 2, &cand.fits, &cand.peak);
                    if (offer(S, &cand, used2, S->canon_tmp))
                        return -1;
                }
            }
        }
    }
    return 0;
}

/* The plan of a state: its stages replayed from empty nodes, and the rest. */
static int plan_of_state(const struct search *S, int k, struct wp_plan *p, struct wp_err *err)
{
    int ns = S->st[k].nstages + 1;
    p->stages = calloc((size_t)ns, sizeof *p->stages);
    int *used = calloc((size_t)S->nodes, sizeof *used);
    int *chain = calloc((size_t)ns, sizeof *chain);
    if (!p->stages || !used || !chain) {
        free(used);
        free(chain);
        return wp_errorf(err, "out of memory");
    }
    p->nstages = ns;
    for (int a = k, i = ns - 2; i >= 0; a = S->st[a].parent, i--)
        chain[i] = a;
    for (int i = 0; i < ns; i++) {
        struct wp_plan_stage *ps = &p->stages[i];
        if (i < ns - 1) {
            const struct state *s = &S->st[chain[i]];
            ps->first_layer = s->first;
            ps->last_layer = s->last;
            ps->replicas = s->replicas;
            ps->policy = s->policy;
        } else {
            ps->first_layer = S->st[k].j;
            ps->last_layer = S->N - 1;
            ps->policy = WP_PLACE_REST;
            ps->replicas = 0;
            for (int n = 0; n < S->nodes; n++)
                ps->replicas += S->cap - used[n];
        }
        int t = wp_plan_tensor_size(S->m->point.tensor);
        ps->devices = calloc((size_t)ps->replicas * t, sizeof *ps->devices);
        if (!ps->devices ||
            wp_place_take_groups(ps->policy, used, S->nodes, S->cap, ps->replicas, t, ps->devices)) {
            free(used);
            free(chain);
            return wp_errorf(err, "internal error: stage %d cannot be placed again", i);
        }
    }
    free(used);
    free(chain);
    wp_plan_evaluate(S->m, p);
    return 0;
}

static void search_destroy(struct search *S)
{
    free(S->st);
    free(S->used);
    free(S->canon);
    free(S->canon_tmp);
    free(S->used_tmp);
    free(S->table);
    free(S->bucket_next);
    free(S->bucket_head);
    free(S->bucket_tail);
    free(S->take);
}

/* Which GPU counts a new stage may get so that the DP fits its budget
 * (*how says which); 0 when none does (the DP is skipped). */
static int dp_scope(struct search *S, const char **how)
{
    S->take = calloc((size_t)S->G + 1, 1);
    if (!S->take || S->G > WP_DP_MAX_DEVICES) {
        *how = "uniform plans only (more devices than the DP takes)";
        return 0;
    }
    /* occupancies: sorted vectors of nodes entries in 0..cap */
    double occ = 1;
    for (int i = 1; i <= S->nodes; i++)
        occ = occ * (S->cap + i) / i;
    double work = 1.5 * (double)S->N * S->N * occ;
    if (work * (S->G - 1) <= WP_DP_BUDGET) {
        memset(S->take, 1, (size_t)S->G + 1);
        *how = "DP over layers and node occupancy, any GPU count per stage, and uniform plans";
        return 1;
    }
    int n = 0;
    for (int m = 1; m <= S->G; m++)
        if ((m <= S->cap && S->cap % m == 0) || m % S->cap == 0)
            n += S->take[m] = 1;
    if (work * n <= WP_DP_BUDGET) {
        *how = "DP over layers and node occupancy with stages of a divisor of a node's GPUs or whole nodes, and "
               "uniform plans";
        return 1;
    }
    *how = "uniform plans only (the DP's state space is too large here)";
    return 0;
}

/* The DP over (layers, occupancy); *best_k the best state. */
static int search_dp(struct search *S, int *best_k, struct wp_err *err)
{
    const int N = S->N;
    S->bucket_head = malloc((size_t)(N + 1) * sizeof *S->bucket_head);
    S->bucket_tail = malloc((size_t)(N + 1) * sizeof *S->bucket_tail);
    struct wp_stage_shape *shapes = calloc((size_t)N + 2, sizeof *shapes);
    int *used0 = calloc((size_t)S->nodes, sizeof *used0);
    int *used2 = calloc((size_t)S->nodes, sizeof *used2);
    struct wp_plan_device *devs = calloc((size_t)S->G + 1, sizeof *devs);
    int rc = 0;
    if (!S->bucket_head || !S->bucket_tail || !shapes || !used0 || !used2 || !devs) {
        rc = wp_errorf(err, "out of memory");
        goto out;
    }
    for (int j = 0; j <= N; j++)
        S->bucket_head[j] = S->bucket_tail[j] = -1;
    /* the root: every layer in one stage on every GPU (data parallelism) */
    struct state root = {0, -1, 0, -1, 0, WP_PLACE_REST, {0}, 0, 0, 0, 0};
    shape_between(used0, NULL, S->nodes, S->cap, &shapes[0]);
    shapes[0].first_layer = 0;
    shapes[0].last_layer = N - 1;
    root.value = evaluate(S, shapes, 1, &root.fits, &root.peak);
    canonical(S, used0, S->canon_tmp);
    if (offer(S, &root, used0, S->canon_tmp)) {
        rc = wp_errorf(err, "out of memory");
        goto out;
    }
    for (int j = 0; j < N; j++)
        if (expand_bucket(S, j, shapes, used2, devs)) {
            rc = wp_errorf(err, "out of memory");
            goto out;
        }
    *best_k = 0;
    for (int k = 1; k < S->nst; k++)
        if (better(S->st[k].fits, S->st[k].value, S->st[*best_k].fits, S->st[*best_k].value))
            *best_k = k;
out:
    free(shapes);
    free(used0);
    free(used2);
    free(devs);
    return rc;
}

/* No plan fits: say what would (least_peak: the least memory per device
 * any plan needed). */
static int explain_no_fit(const struct wp_plan_model *m, double least_peak, struct wp_err *err)
{
    double gib = 1024.0 * 1024 * 1024, mem = m->hw.memory_bytes, weights = 0;
    int G = wp_plan_hw_devices(&m->hw);
    for (int i = 0; i < m->layers->nlayers; i++)
        weights += wp_layer_state_bytes(&m->layers->layers[i]);
    int need = (int)ceil(weights / mem);
    if (need > G)
        return wp_errorf(err, "the model does not fit on %d devices of %.1f GiB: its weights, gradients and optimizer "
                              "state alone take %.1f GiB, so it needs at least %d such devices",
                         G, mem / gib, weights / gib, need);
    return wp_errorf(err, "no plan fits in %.1f GiB per device on %d devices: the least any plan needs is %.2f GiB "
                          "per device (give --memory, more devices or a smaller --global-batch)",
                     mem / gib, G, least_peak / gib);
}

/* The simulator's last word on the split: each boundary moved by one layer
 * while the simulated iteration gets shorter (devices stay where they
 * are; a move that breaks the memory limit is not taken). */
static int polish(const struct wp_plan_model *m, struct wp_plan *p, struct wp_err *err)
{
    double best = p->simulated_iter_s;
    for (int improved = 1, pass = 0; improved && pass < 2 * m->layers->nlayers; pass++) {
        improved = 0;
        for (int s = 1; s < p->nstages; s++)
            for (int d = -1; d <= 1; d += 2) {
                struct wp_plan_stage *a = &p->stages[s - 1], *b = &p->stages[s];
                int first = b->first_layer + d;
                if (first <= a->first_layer || first > b->last_layer)
                    continue;
                a->last_layer = first - 1;
                b->first_layer = first;
                wp_plan_evaluate(m, p);
                double sim;
                if (wp_plan_simulate(m, p, 1, 0, &sim, NULL, err))
                    return -1;
                if (p->fits && sim < best * (1 - 1e-9)) {
                    best = sim;
                    improved = 1;
                } else {
                    a->last_layer = first - 1 - d;
                    b->first_layer = first - d;
                }
            }
    }
    wp_plan_evaluate(m, p);
    p->simulated_iter_s = p->predicted_iter_s = best;
    return 0;
}

/* A candidate for the final choice: a plan at a point, with its L. */
struct candidate {
    struct wp_plan_point point;
    int fits;
    double value;
    struct wp_plan *plan;           /* a DP state's plan (owned), or NULL: */
    struct wp_uniform_plan uniform; /* a uniform plan (its first[] owned) */
};

struct candidate_list {
    struct candidate *v;
    int n, cap;
};

static void candidate_list_destroy(struct candidate_list *l)
{
    for (int i = 0; i < l->n; i++) {
        if (l->v[i].plan) {
            wp_plan_destroy(l->v[i].plan);
            free(l->v[i].plan);
        }
        free(l->v[i].uniform.first);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int candidate_push(struct candidate_list *l, const struct candidate *c)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        struct candidate *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *c;
    return 0;
}

static int cmp_candidate(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* What one point's search says of itself. */
struct point_stats {
    const char *how;
    long states, evaluations;
    double least_peak;
};

/* The DP state or uniform plan behind a ranking entry of one point. */
struct ranked {
    int state;                       /* >= 0: DP state */
    const struct wp_uniform_plan *u; /* else this */
    int fits;
    double value;
};

static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    return x->value < y->value ? -1 : x->value > y->value;
}

/* The searches at m's point: its best DP states (as plans) and uniform
 * plans by L, half of the simulator's checks each so that neither crowds
 * out the other, into l. */
static int search_point(struct wp_plan_model *m, struct candidate_list *l, struct point_stats *st,
                        struct wp_err *err)
{
    struct search S;
    memset(&S, 0, sizeof S);
    S.m = m;
    S.nodes = m->hw.nodes;
    S.cap = m->groups_per_node;
    S.N = m->layers->nlayers;
    S.G = wp_plan_model_groups(m);
    S.tally.least_peak = INFINITY;
    S.canon_tmp = calloc((size_t)S.nodes, sizeof *S.canon_tmp);
    S.used_tmp = calloc((size_t)S.nodes, sizeof *S.used_tmp);
    int rc = S.canon_tmp && S.used_tmp ? 0 : wp_errorf(err, "out of memory"), best_k = -1;
    struct wp_uniform_list ul = {NULL, 0, 0};
    struct ranked *rank = NULL;
    st->how = "";
    if (rc == 0 && dp_scope(&S, &st->how)) {
        rc = search_dp(&S, &best_k, err);
        /* one state per (layers, occupancy) kept by time can drop the only ways that fit a tight memory:
         * then again, keeping the way of least peak memory (the fitting states found are its) */
        if (rc == 0 && S.nst > 0 && !S.st[best_k].fits) {
            free(S.st);
            free(S.used);
            free(S.canon);
            free(S.table);
            free(S.bucket_next);
            free(S.bucket_head);
            free(S.bucket_tail);
            S.st = NULL, S.used = S.canon = S.table = S.bucket_next = S.bucket_head = S.bucket_tail = NULL;
            S.nst = S.capst = 0;
            S.table_size = 0;
            S.memory_first = 1;
            rc = search_dp(&S, &best_k, err);
        }
    }
    if (rc == 0 && wp_plan_search_uniform(m, &S.tally, &ul))
        rc = wp_errorf(err, "out of memory");
    int nc = 0;
    if (rc == 0 && !(rank = calloc((size_t)(S.nst + ul.n + 1), sizeof *rank)))
        rc = wp_errorf(err, "out of memory");
    if (rc == 0) {
        for (int k = 0; k < S.nst; k++)
            rank[nc++] = (struct ranked){k, NULL, S.st[k].fits, S.st[k].value};
        qsort(rank, (size_t)nc, sizeof *rank, cmp_ranked);
        int ndp = nc < WP_SIMULATE_CANDIDATES / 2 ? nc : WP_SIMULATE_CANDIDATES / 2;
        nc = ndp;
        for (int i = 0; i < ul.n; i++)
            rank[nc++] = (struct ranked){-1, &ul.v[i], ul.v[i].fits, ul.v[i].value};
        qsort(rank + ndp, (size_t)(nc - ndp), sizeof *rank, cmp_ranked);
        if (nc > WP_SIMULATE_CANDIDATES)
            nc = WP_SIMULATE_CANDIDATES;
    }
    for (int i = 0; i < nc && rc == 0; i++) {
        struct candidate c = {m->point, rank[i].fits, rank[i].value, NULL, {0, 0, 0, 0, NULL}};
        if (rank[i].state >= 0) {
            if (!(c.plan = malloc(sizeof *c.plan))) {
                rc = wp_errorf(err, "out of memory");
                break;
            }
            wp_plan_init(c.plan);
            rc = plan_of_state(&S, rank[i].state, c.plan, err);
        } else {
            c.uniform = *rank[i].u;
            c.uniform.first = malloc((size_t)c.uniform.nstages * sizeof *c.uniform.first);
            if (c.uniform.first)
                memcpy(c.uniform.first, rank[i].u->first, (size_t)c.uniform.nstages * sizeof *c.uniform.first);
            else
                rc = wp_errorf(err, "out of memory");
        }
        if (rc == 0 && candidate_push(l, &c))
            rc = wp_errorf(err, "out of memory");
        if (rc) {
            if (c.plan) {
                wp_plan_destroy(c.plan);
                free(c.plan);
            }
            free(c.uniform.first);
        }
    }
    st->states = S.nst + ul.n;
    st->evaluations = S.tally.evaluations;
    st->least_peak = S.tally.least_peak;
    wp_uniform_list_destroy(&ul);
    free(rank);
    search_destroy(&S);
    return rc;
}

static int same_point(const struct wp_plan_point *a, const struct wp_plan_point *b)
{
    return a->tensor.p1 == b->tensor.p1 && a->tensor.p2 == b->tensor.p2 && a->slice == b->slice &&
           a->sequence_parallel == b->sequence_parallel;
}

/* A candidate's plan, with m moved to its point. */
static int candidate_plan(struct wp_plan_model *m, const struct candidate *c, struct wp_plan *p, struct wp_err *err)
{
    if (!same_point(&m->point, &c->point) && wp_plan_model_set_point(m, &c->point, err))
        return -1;
    wp_plan_init(p);
    if (c->plan) {
        *p = *c->plan; /* a copy that owns its stages: the candidate's are rebuilt */
        p->stages = calloc((size_t)c->plan->nstages, sizeof *p->stages);
        if (!p->stages)
            return wp_errorf(err, "out of memory");
        int t = wp_plan_tensor_size(c->point.tensor);
        for (int s = 0; s < p->nstages; s++) {
            p->stages[s] = c->plan->stages[s];
            size_t n = (size_t)p->stages[s].replicas * t;
            p->stages[s].devices = malloc(n * sizeof *p->stages[s].devices);
            if (!p->stages[s].devices) {
                p->nstages = s;
                return wp_errorf(err, "out of memory");
            }
            memcpy(p->stages[s].devices, c->plan->stages[s].devices, n * sizeof *p->stages[s].devices);
        }
        p->kfkb = NULL;
        p->sbp = NULL;
        p->nkfkb = 0;
        return 0;
    }
    return wp_plan_of_uniform(m, &c->uniform, p, err);
}

/* Megatron-LM's interleaved schedule for a simulated plan of one replica
 * count (m at its point): 2 .. m->max_chunks chunks whose virtual stages
 * get a layer each at least and whose micro-batches the ranks divide, each
 * balanced and simulated; *best becomes the fastest that fits (when it
 * beats *best_sim). */
static int interleave(struct wp_plan_model *m, const struct wp_plan *base, struct wp_plan *best, double *best_sim,
                      struct wp_err *err)
{
    int P = base->nstages, rc = 0;
    for (int s = 1; s < P; s++)
        if (base->stages[s].replicas != base->stages[0].replicas)
            return 0;
    for (int v = 2; v <= m->max_chunks && v * P <= m->layers->nlayers && P > 1 && rc == 0; v++) {
        if (base->microbatches % P)
            break; /* Megatron's order needs M a multiple of the ranks */
        struct wp_plan p;
        double sim;
        rc = wp_plan_interleave(m, base, v, NULL, &p, err);
        if (rc == 0 && p.fits)
            rc = wp_plan_simulate(m, &p, 1, 0, &sim, NULL, err);
        if (rc == 0 && p.fits && sim < *best_sim * (1 - 1e-9)) {
            *best_sim = sim;
            p.simulated_iter_s = p.predicted_iter_s = sim;
            wp_plan_destroy(best);
            *best = p;
        } else {
            wp_plan_destroy(&p);
        }
    }
    return rc;
}

/* The final choice among the candidates of every point: the best by L
 * simulated within the budget (with their interleaved schedules when
 * m->max_chunks allows), the fastest kept and polished. m ends at its
 * point. Returns 1 when no candidate fits in memory. */
static int choose(struct wp_plan_model *m, struct candidate_list *l, struct wp_plan *best, struct wp_err *err)
{
    qsort(l->v, (size_t)l->n, sizeof *l->v, cmp_candidate);
    if (l->n == 0 || !l->v[0].fits)
        return 1;
    double best_sim = INFINITY, spent = 0;
    int rc = 0, simulated = 0;
    struct wp_plan_point chosen = l->v[0].point;
    for (int i = 0; i < l->n && i < WP_SIMULATE_CANDIDATES && l->v[i].fits && rc == 0; i++) {
        struct wp_plan p;
        rc = candidate_plan(m, &l->v[i], &p, err);
        if (rc) {
            wp_plan_destroy(&p);
            break;
        }
        double size = (double)wp_plan_sim_ranks(&p) * p.microbatches, sim = l->v[i].value;
        int check = spent + size <= WP_SIMULATE_BUDGET;
        if (!check && i > 0) { /* past the budget: the simulated ones decide */
            wp_plan_destroy(&p);
            break;
        }
        int last = !check; /* the first alone past the budget: L decides, as for it alone */
        if (check) {
            rc = wp_plan_simulate(m, &p, 1, 0, &sim, NULL, err);
            spent += size;
            simulated = 1;
        }
        double before = best_sim;
        if (rc == 0 && check && m->max_chunks > 1)
            rc = interleave(m, &p, best, &best_sim, err);
        if (best_sim < before)
            chosen = l->v[i].point;
        if (rc == 0 && sim < best_sim * (1 - 1e-9)) {
            best_sim = sim;
            wp_plan_destroy(best);
            *best = p;
            best->simulated_iter_s = check ? sim : -1;
            if (check)
                best->predicted_iter_s = sim;
            chosen = l->v[i].point;
        } else {
            wp_plan_destroy(&p);
        }
        if (last)
            break;
    }
    if (rc == 0 && !same_point(&m->point, &chosen))
        rc = wp_plan_model_set_point(m, &chosen, err);
    if (rc == 0 && simulated)
        rc = polish(m, best, err);
    return rc;
}

/* The searches at each of the points, then the choice. */
static int search_points(struct wp_plan_model *m, const struct wp_plan_point *points, int npoints,
                         struct wp_plan *best, struct wp_err *err)
{
    double t0 = wp_monotonic_s(), least_peak = INFINITY;
    struct candidate_list l = {NULL, 0, 0};
    struct point_stats *stats = calloc((size_t)npoints, sizeof *stats);
    long states = 0, evaluations = 0;
    int rc = stats ? 0 : wp_errorf(err, "out of memory"), searched = 0;
    struct wp_err why = {""};
    for (int i = 0; i < npoints && rc == 0; i++) {
        if (!same_point(&m->point, &points[i]) && wp_plan_model_set_point(m, &points[i], &why))
            continue; /* a group that cannot split these blocks */
        rc = search_point(m, &l, &stats[i], err);
        searched++;
        states += stats[i].states;
        evaluations += stats[i].evaluations;
        if (stats[i].least_peak < least_peak)
            least_peak = stats[i].least_peak;
    }
    if (rc == 0 && searched == 0)
        rc = wp_errorf(err, "no point of the hybrid space can be planned: %s", why.msg);
    if (rc == 0) {
        rc = choose(m, &l, best, err);
        if (rc == 1)
            rc = explain_no_fit(m, least_peak, err);
    }
    if (rc == 0) {
        for (int i = 0; i < npoints; i++)
            if (same_point(&points[i], &m->point))
                best->search = stats[i].how;
        best->points = searched;
        best->states = states;
        best->evaluations = evaluations;
        best->search_s = wp_monotonic_s() - t0;
    }
    candidate_list_destroy(&l);
    free(stats);
    return rc;
}

int wp_plan_dapple(struct wp_plan_model *m, struct wp_plan *best, struct wp_err *err)
{
    struct wp_plan_point here = m->point;
    return search_points(m, &here, 1, best, err);
}

/* 1 when some layer of the table is a transformer block. */
static int has_blocks(const struct wp_layer_table *t)
{
    for (int i = 0; i < t->nlayers; i++)
        if (t->layers[i].block.channels > 0)
            return 1;
    return 0;
}

int wp_plan_search(struct wp_plan_model *m, struct wp_plan *best, struct wp_err *err)
{
    int g = m->hw.gpus_per_node, max_t = g;
    int fixed_t = m->fixed_tensor.p1 > 0 ? wp_plan_tensor_size(m->fixed_tensor) : 0;
    if (!has_blocks(m->layers))
        max_t = 1;
    if (fixed_t > max_t || (fixed_t && g % fixed_t))
        return wp_errorf(err, max_t == 1 && fixed_t <= g && g % fixed_t == 0
                                  ? "a tensor group of %d x %d: the layer table '%s' marks no layer as a transformer "
                                    "block, so only 1x1 splits nothing"
                                  : "a tensor group of %d x %d GPUs for '%s' does not divide a node's GPUs",
                         m->fixed_tensor.p1, m->fixed_tensor.p2, m->layers->name);
    int nslices = 0, slices[8];
    if (wp_plan_model_times_scale(m))
        for (int b = 1; b <= WP_MAX_SLICE && b <= m->global_batch; b *= 2)
            slices[nslices++] = b;
    else
        slices[nslices++] = m->layers->profile_batch;
    struct wp_plan_point *points = calloc((size_t)(2 * nslices * g * g + 1), sizeof *points);
    if (!points)
        return wp_errorf(err, "out of memory");
    int n = 0;
    for (int t = 1; t <= max_t; t++) {
        if (g % t)
            continue;
        for (int p1 = t; p1 >= 1; p1--) { /* the 1D split (Megatron's) first */
            struct wp_plan_tensor shape = {p1, t / p1};
            if (t % p1 || (m->fixed_tensor.p1 > 0 && (shape.p1 != m->fixed_tensor.p1 ||
                                                      shape.p2 != m->fixed_tensor.p2)))
                continue;
            /* sequence parallelism on Megatron's groups of p1 x 1, as m->sequence_parallel asks */
            int sp_from = m->sequence_parallel == 1 && shape.p2 == 1 && shape.p1 > 1;
            int sp_to = m->sequence_parallel && shape.p2 == 1 && shape.p1 > 1;
            for (int i = 0; i < nslices; i++)
                for (int sp = sp_from; sp <= sp_to; sp++)
                    points[n++] = (struct wp_plan_point){shape, slices[i], sp};
        }
    }
    int rc = search_points(m, points, n, best, err);
    free(points);
    return rc;
}
