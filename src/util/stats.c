/* Order statistics of measured samples (see stats.h). */
#include <stdlib.h>

#include "util/stats.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct wp_stat3 wp_stat3_sorted(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    struct wp_stat3 s = {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v[0], v[n - 1]};
    return s;
}
