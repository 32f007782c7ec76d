/* The order of chimera and hanayo, searched (order_search.c): candidate
 * orders made in full and timed on the simulator, the fastest within the
 * memory bound kept, then improved by hill climbing when asked. */
#ifndef WP_SCHED_ORDER_SEARCH_H
#define WP_SCHED_ORDER_SEARCH_H

#include "sched/schedule.h"

/* The best candidate order of p's kind (nstages stages) into *best. */
int wp_sched_search_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best,
                          struct wp_err *err);

#endif
