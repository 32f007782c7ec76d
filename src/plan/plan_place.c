/* DAPPLE's device-assignment policies (section IV-B, figure 5) over the
 * per-node counts of GPUs already taken:
 *  - fresh first: whole unused nodes first (a stage keeps to as few nodes
 *    as it can and has NVLink inside), then, when none is left, as append;
 *  - append first: nodes already partly used first (the fullest first: less
 *    fragmentation), then unused ones;
 *  - scatter first: one GPU at a time round the nodes already used (all
 *    nodes when none is), so the stage spreads equally over machines;
 *  - rest: every GPU still free (the last stage of a search state).
 * Within a node GPUs are taken in index order. Ties go to the lower node.
 * With tensor parallelism the same policies place groups of t GPUs (the
 * consecutive GPUs of a node, one NVLink domain). */
#include <stdlib.h>

#include "plan/plan.h"

static int take_one(int *used, int node, struct wp_plan_device *out, int *k)
{
    out[*k] = (struct wp_plan_device){node, used[node]};
    used[node]++;
    (*k)++;
    return 1;
}

/* Fills nodes with 0 < used < capacity, fullest first, then empty nodes. */
static void take_append(int *used, int nodes, int capacity, int n, struct wp_plan_device *out, int *k)
{
    while (*k < n) {
        int best = -1;
        for (int i = 0; i < nodes; i++)
            if (used[i] > 0 && used[i] < capacity && (best < 0 || used[i] > used[best]))
                best = i;
        if (best < 0)
            for (int i = 0; i < nodes && best < 0; i++)
                if (used[i] == 0)
                    best = i;
        if (best < 0)
            return;
        while (*k < n && used[best] < capacity)
            take_one(used, best, out, k);
    }
}

int wp_place_take(enum wp_place_policy policy, int *used, int nodes, int capacity, int n,
                  struct wp_plan_device *out)
{
    int free_gpus = 0;
    for (int i = 0; i < nodes; i++)
        free_gpus += capacity - used[i];
    if (policy == WP_PLACE_REST)
        n = free_gpus;
    if (n > free_gpus || n < 0)
        return -1;
    int k = 0;
    switch (policy) {
    case WP_PLACE_FRESH:
        for (int i = 0; i < nodes && k < n; i++)
            if (used[i] == 0)
                while (k < n && used[i] < capacity)
                    take_one(used, i, out, &k);
        take_append(used, nodes, capacity, n, out, &k);
        break;
    case WP_PLACE_APPEND:
        take_append(used, nodes, capacity, n, out, &k);
        break;
    case WP_PLACE_SCATTER: {
        int any_used = 0;
        for (int i = 0; i < nodes; i++)
            any_used |= used[i] > 0 && used[i] < capacity;
        /* round the used nodes with room; when they are full, round all */
        for (int pass = any_used ? 0 : 1; pass < 2 && k < n; pass++) {
            int progress = 1;
            while (k < n && progress) {
                progress = 0;
                for (int i = 0; i < nodes && k < n; i++)
                    if (used[i] < capacity && (pass == 1 || used[i] > 0))
                        progress |= take_one(used, i, out, &k);
            }
        }
        break;
    }
    case WP_PLACE_REST:
        for (int i = 0; i < nodes; i++)
            while (used[i] < capacity)
                take_one(used, i, out, &k);
        break;
    }
    return k == n ? 0 : -1;
}

void wp_stage_shape_of(const struct wp_plan_device *d, int n, struct wp_stage_shape *shape)
{
    shape->replicas = n;
    shape->nodes_spanned = 0;
    shape->max_per_node = 0;
    shape->only_node = n > 0 ? d[0].node : -1;
    int top = 0;
    for (int i = 0; i < n; i++)
        top = d[i].node > top ? d[i].node : top;
    int *count = calloc((size_t)top + 1, sizeof *count);
    for (int i = 0; i < n; i++) {
        if (d[i].node != shape->only_node)
            shape->only_node = -1;
        if (!count)
            continue;
        if (count[d[i].node]++ == 0)
            shape->nodes_spanned++;
        if (count[d[i].node] > shape->max_per_node)
            shape->max_per_node = count[d[i].node];
    }
    if (!count) { /* no memory for the counts: a safe over-estimate */
        shape->nodes_spanned = n;
        shape->max_per_node = 1;
    }
    free(count);
}

int wp_place_take_groups(enum wp_place_policy policy, int *used, int nodes, int capacity, int n, int t,
                         struct wp_plan_device *out)
{
    if (policy == WP_PLACE_REST) {
        n = 0;
        for (int i = 0; i < nodes; i++)
            n += capacity - used[i];
    }
    if (wp_place_take(policy, used, nodes, capacity, n, out))
        return -1;
    for (int i = n - 1; i >= 0; i--) /* from the back: entry i moves to i t and beyond */
        for (int l = t - 1; l >= 0; l--)
            out[i * t + l] = (struct wp_plan_device){out[i].node, out[i].gpu * t + l};
    return 0;
}

void wp_stage_shape_of_groups(const struct wp_plan_device *d, int replicas, int t, struct wp_stage_shape *shape)
{
    wp_stage_shape_of(d, replicas * t, shape);
    shape->replicas = replicas;
    shape->max_per_node /= t;
}
