/* Order statistics of measured samples: median, min and max, shared by the
 * harvester (per-iteration figures) and the profiler (per-repeat times). */
#ifndef WP_UTIL_STATS_H
#define WP_UTIL_STATS_H

#include <stddef.h>

struct wp_stat3 {
    double median, min, max;
};

/* Sorts v (n >= 1) in place and returns its median (the mean of the two
 * middle values when n is even), min and max. */
struct wp_stat3 wp_stat3_sorted(double *v, size_t n);

#endif
