/* Network lanes booked as time intervals, two classes sharing each (lanes.h). */
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
    for (int i = 0; l->lanes && i < l->nnodes * WP_LANES_MAX; i++)
        for (int c = 0; c < WP_LANE_CLASSES; c++) {
            free(l->lanes[i].cls[c].start);
            free(l->lanes[i].cls[c].end);
        }
    free(l->lanes);
    free(l->count);
    memset(l, 0, sizeof *l);
}

/* The first interval that ends after t (ends are sorted as the starts are). */
static int first_ending_after(const struct wp_busy *a, double t)
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

/* When `work` seconds begun at start end on a lane: at its full rate
 * outside `other`'s intervals, at half of it inside them. */
static double finish(const struct wp_busy *other, double start, double work)
{
    double t = start, left = work;
    for (int i = first_ending_after(other, t); i < other->n; i++) {
        if (other->start[i] > t) { /* the lane to itself until interval i */
            if (other->start[i] - t >= left)
                return t + left;
            left -= other->start[i] - t;
            t = other->start[i];
        }
        if (other->end[i] - t >= 2 * left) /* shared: half the rate */
            return t + 2 * left;
        left -= (other->end[i] - t) / 2;
        t = other->end[i];
    }
    return t + left;
}

/* The earliest start >= t with no interval of its own class before its
 * end (*end). */
static double lane_earliest(const struct wp_lane *a, enum wp_lane_class cls, double t, double work, double *end)
{
    const struct wp_busy *own = &a->cls[cls], *other = &a->cls[!cls];
    double e = finish(other, t, work);
    for (int i = first_ending_after(own, t); i < own->n; i++) {
        if (own->start[i] >= e)
            break; /* the gap before interval i holds it */
        if (own->end[i] > t) {
            t = own->end[i];
            e = finish(other, t, work);
        }
    }
    *end = e;
    return t;
}

double wp_lanes_earliest(const struct wp_lanes *l, int node, enum wp_lane_class cls, double t, double work,
                         int *lane, double *end)
{
    const struct wp_lane *a = l->lanes + (size_t)node * WP_LANES_MAX;
    double best = 0, best_end = 0;
    for (int i = 0; i < l->count[node]; i++) {
        double e, s = lane_earliest(&a[i], cls, t, work, &e);
        if (i == 0 || e < best_end) {
            best = s;
            best_end = e;
            *lane = i;
        }
    }
    *end = best_end;
    return best;
}

double wp_lanes_clear(const struct wp_lanes *l, int node, enum wp_lane_class cls, double start, double end,
                      int *lane)
{
    const struct wp_lane *a = l->lanes + (size_t)node * WP_LANES_MAX;
    double next = 0;
    for (int i = 0; i < l->count[node]; i++) {
        const struct wp_busy *own = &a[i].cls[cls];
        int at = first_ending_after(own, start);
        if (at == own->n || own->start[at] >= end) {
            *lane = i;
            return start;
        }
        if (i == 0 || own->end[at] < next)
            next = own->end[at];
    }
    return next;
}

int wp_lanes_book(struct wp_lanes *l, int node, int lane, enum wp_lane_class cls, double start, double end)
{
    struct wp_busy *a = &l->lanes[(size_t)node * WP_LANES_MAX + lane].cls[cls];
    if (!(end > start))
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
    a->end[at] = end;
    a->n++;
    return 0;
}
