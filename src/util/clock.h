/* Monotonic wall-clock seconds, for timing code on this machine. */
#ifndef WP_UTIL_CLOCK_H
#define WP_UTIL_CLOCK_H

#include <time.h>

static inline double wp_monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
