/* Network lanes booked as time intervals (lanes.h). */
#include <config.h>
#include <stdlib.h>
#include <string.h>

#include "sched/lanes.h"

int wp_lanes_init(struct wp_lanes *l, int nnodes, const int *count)
{
    memset(l, 0, sizeof *l);
    l->count = malloc((size_t)(nnodes > 0 ? nnodes : 1) * sizeof *l->count);
    l->lanes = calloc((size_t)(nnodes > 0 ? nnodes : 1) * WP_LANES_MAX, sizeof *l->lanes);
    if (!l->count || !l->lanes) {
        wp_lanes_destroy(l);
        return -1;
    }
    l->nnodes = nnodes;
    for (int i = 0; i < nnodes; i++)
        l->count[i] = count[i] < 1 ? 1 : count[i] > WP_LANES_MAX ? WP_LANES_MAX : count[i];
    return 0;
}

void wp_lanes_destroy(struct wp_lanes *l)
{
    for (int i = 0; l->lanes && i < l->nnodes * WP_LANES_MAX; i++) {
        free(l->lanes[i].start);
        free(l->lanes[i].end);
    }
    free(l->lanes);
    free(l->count);
    memset(l, 0, sizeof *l);
}

/* The first interval that ends after t (ends are sorted as the starts are). */
static int first_ending_after(const struct wp_lane *a, double t)
{
    int lo = 0, hi = a->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (a->end[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static double lane_earliest(const struct wp_lane *a, double t, double occupy)
{
    for (int i = first_ending_after(a, t); i < a->n; i++) {
        if (a->start[i] >= t + occupy)
            break; /* the gap before interval i holds it */
        if (a->end[i] > t)
            t = a->end[i];
    }
    return t;
}

double wp_lanes_earliest(const struct wp_lanes *l, int node, double t, double occupy, int *lane)
{
    const struct wp_lane *a = l->lanes + (size_t)node * WP_LANES_MAX;
    double best = 0;
    for (int i = 0; i < l->count[node]; i++) {
        double s = lane_earliest(&a[i], t, occupy);
        if (i == 0 || s < best) {
            best = s;
            *lane = i;
        }
    }
    return best;
}

int wp_lanes_book(struct wp_lanes *l, int node, int lane, double start, double occupy)
{
    struct wp_lane *a = l->lanes + (size_t)node * WP_LANES_MAX + lane;
    if (!(occupy > 0))
        return 0;
    if (a->n == a->cap) {
        int cap = a->cap ? 2 * a->cap : 16;
        double *s = realloc(a->start, (size_t)cap * sizeof *s);
        if (!s)
            return -1;
        a->start = s;
        double *e = realloc(a->end, (size_t)cap * sizeof *e);
        if (!e)
            return -1;
        a->end = e;
        a->cap = cap;
    }
    int at = first_ending_after(a, start);
    memmove(a->start + at + 1, a->start + at, (size_t)(a->n - at) * sizeof *a->start);
    memmove(a->end + at + 1, a->end + at, (size_t)(a->n - at) * sizeof *a->end);
    a->start[at] = start;
    a->end[at] = start + occupy;
    a->n++;
    return 0;
}
