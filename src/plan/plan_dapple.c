/* The planner's search (DAPPLE formulas 4-5, see plan.h) and its final
 * choice among the DP's plans and the uniform ones (plan_uniform.c).
 *
 * Dynamic programming: a state is (j, occupancy): the first j layers are
 * planned as stages on GPUs taken from the nodes (occupancy = GPUs taken
 * per node, nodes being identical compared as a sorted multiset). Its value
 * is L of the whole plan in which layers j..N-1 form one more stage on every
 * free GPU, the memoised T_PL(j, m, g). A step from a state cuts that last
 * stage after layer j' - 1 and gives the first part m' GPUs by fresh, append
 * or scatter first; each state keeps the best way to reach it (a plan that
 * fits in memory before one that does not, then the smaller L). The root
 * (no cut) is data parallelism; cutting everywhere with m' = 1 gives
 * straight pipelines.
 *
 * The state space grows with the layers, the GPUs and the occupancies of
 * the nodes (C(nodes + g, nodes) sorted vectors for g GPUs per node). When
 * the DP would cost more than WP_DP_BUDGET plan evaluations it gives a new
 * stage only a divisor of a node's GPUs or whole nodes; when even that is
 * too much, or beyond WP_DP_MAX_DEVICES, the search is over uniform plans
 * only (plan_uniform.c), which always runs too.
 *
 * The final choice: L leaves out bubbles inside the pivot stage and how
 * transfers overlap compute, so the best candidates by L (half from each
 * search) are simulated on the same costs and the fastest wins; its
 * boundaries are then moved a layer at a time while the simulator says it
 * gets faster (polish). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "plan/plan_search.h"
#include "util/clock.h"

#define WP_DP_MAX_DEVICES 64
#define WP_DP_BUDGET 3e7
/* How many of the best plans by L the simulator checks, and up to how many
 * GPUs (the simulator keeps a ranks x ranks link table). */
#define WP_SIMULATE_CANDIDATES 48
#define WP_SIMULATE_MAX_DEVICES 512

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
    char *take;                /* take[m]: a new stage may get m GPUs (G + 1 entries) */
};

static int better(int fits_a, double a, int fits_b, double b)
{
    if (fits_a != fits_b)
        return fits_a > fits_b;
    return a < b;
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
        if (better(cand->fits, cand->value, S->st[k].fits, S->st[k].value)) {
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
        ps->devices = calloc((size_t)ps->replicas, sizeof *ps->devices);
        if (!ps->devices || wp_place_take(ps->policy, used, S->nodes, S->cap, ps->replicas, ps->devices)) {
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
        *how = "uniform plans only (more GPUs than the DP takes)";
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

/* No plan fits: say what would. */
static int explain_no_fit(const struct search *S, struct wp_err *err)
{
    const struct wp_plan_model *m = S->m;
    double gib = 1024.0 * 1024 * 1024, mem = m->hw.memory_bytes;
    double weights = m->cum_w[S->N];
    int need = (int)ceil(weights / mem);
    if (need > S->G)
        return wp_errorf(err, "the model does not fit on %d devices of %.1f GiB: its weights, gradients and optimizer "
                              "state alone take %.1f GiB, so it needs at least %d such devices",
                         S->G, mem / gib, weights / gib, need);
    return wp_errorf(err, "no plan fits in %.1f GiB per device on %d devices: the least any plan needs is %.2f GiB "
                          "per device (give --memory, more devices or a smaller --global-batch)",
                     mem / gib, S->G, S->tally.least_peak / gib);
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

/* A candidate for the final choice: a DP state or a uniform plan. */
struct candidate {
    int state;                   /* >= 0: DP state */
    const struct wp_uniform_plan *u; /* else this */
    int fits;
    double value;
};

static int cmp_candidate(const void *a, const void *b)
{
    const struct candidate *x = a, *y = b;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    return x->value < y->value ? -1 : x->value > y->value;
}

static int candidate_plan(const struct search *S, const struct candidate *c, struct wp_plan *p,
                          struct wp_err *err)
{
    wp_plan_init(p);
    return c->state >= 0 ? plan_of_state(S, c->state, p, err) : wp_plan_of_uniform(S->m, c->u, p, err);
}

int wp_plan_dapple(const struct wp_plan_model *m, struct wp_plan *best, struct wp_err *err)
{
    double t0 = wp_monotonic_s();
    struct search S;
    memset(&S, 0, sizeof S);
    S.m = m;
    S.nodes = m->hw.nodes;
    S.cap = m->hw.gpus_per_node;
    S.N = m->layers->nlayers;
    S.G = wp_plan_hw_devices(&m->hw);
    S.tally.least_peak = INFINITY;
    S.canon_tmp = calloc((size_t)S.nodes, sizeof *S.canon_tmp);
    S.used_tmp = calloc((size_t)S.nodes, sizeof *S.used_tmp);
    int rc = S.canon_tmp && S.used_tmp ? 0 : wp_errorf(err, "out of memory"), best_k = -1;
    struct wp_uniform_list ul = {NULL, 0, 0};
    struct candidate *cand = NULL;
    const char *how = "";
    if (rc == 0 && dp_scope(&S, &how))
        rc = search_dp(&S, &best_k, err);
    if (rc == 0 && wp_plan_search_uniform(m, &S.tally, &ul))
        rc = wp_errorf(err, "out of memory");
    int nc = 0;
    if (rc == 0) {
        cand = calloc((size_t)(S.nst + ul.n + 1), sizeof *cand);
        if (!cand)
            rc = wp_errorf(err, "out of memory");
    }
    if (rc == 0) {
        /* the best DP states and the best uniform plans, half of the
         * simulator's checks each, so that neither crowds out the other */
        for (int k = 0; k < S.nst; k++)
            cand[nc++] = (struct candidate){k, NULL, S.st[k].fits, S.st[k].value};
        qsort(cand, (size_t)nc, sizeof *cand, cmp_candidate);
        int ndp = nc < WP_SIMULATE_CANDIDATES / 2 ? nc : WP_SIMULATE_CANDIDATES / 2;
        nc = ndp;
        for (int i = 0; i < ul.n; i++)
            cand[nc++] = (struct candidate){-1, &ul.v[i], ul.v[i].fits, ul.v[i].value};
        qsort(cand + ndp, (size_t)(nc - ndp), sizeof *cand, cmp_candidate);
        if (nc > WP_SIMULATE_CANDIDATES)
            nc = WP_SIMULATE_CANDIDATES;
        qsort(cand, (size_t)nc, sizeof *cand, cmp_candidate);
        if (nc == 0 || !cand[0].fits)
            rc = explain_no_fit(&S, err);
    }
    if (rc == 0) {
        /* L leaves out the bubbles inside the pivot stage and how transfers
         * overlap: the best candidates by L are simulated and the fastest by
         * the simulator wins (with many ranks L alone decides) */
        int check = S.G <= WP_SIMULATE_MAX_DEVICES ? WP_SIMULATE_CANDIDATES : 1;
        double best_sim = INFINITY;
        for (int i = 0; i < nc && i < check && cand[i].fits && rc == 0; i++) {
            struct wp_plan p;
            double sim = cand[i].value;
            rc = candidate_plan(&S, &cand[i], &p, err);
            if (rc == 0 && check > 1)
                rc = wp_plan_simulate(m, &p, 1, 0, &sim, NULL, err);
            if (rc == 0 && sim < best_sim * (1 - 1e-9)) {
                best_sim = sim;
                wp_plan_destroy(best);
                *best = p;
                best->simulated_iter_s = check > 1 ? sim : -1;
                if (check > 1)
                    best->predicted_iter_s = sim;
            } else {
                wp_plan_destroy(&p);
            }
        }
        if (rc == 0 && check > 1)
            rc = polish(m, best, err);
    }
    best->search = how;
    best->states = S.nst + ul.n;
    best->evaluations = S.tally.evaluations;
    best->search_s = wp_monotonic_s() - t0;
    wp_uniform_list_destroy(&ul);
    free(cand);
    search_destroy(&S);
    return rc;
}

