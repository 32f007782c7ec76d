/* Test helper: a schedule's parameters with the generator's defaults and
 * the given kind, ranks and micro-batches. */
#ifndef WP_TESTS_SCHED_PARAMS_H
#define WP_TESTS_SCHED_PARAMS_H

#include "sched/generate.h"

static inline struct wp_sched_params params(enum wp_sched_kind kind, int P, int M)
{
    struct wp_sched_params p;
    wp_sched_params_default(&p);
    p.kind = kind;
    p.ranks = P;
    p.microbatches = M;
    return p;
}

#endif
