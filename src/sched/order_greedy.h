/* Orders by list scheduling in simulated time (order_greedy.c): chimera's
 * and hanayo's candidates, by priority under one of three memory rules (or
 * caps per stage copy), with messages costing tc while ordering; for
 * hanayo also by lap groups. */
#ifndef WP_SCHED_ORDER_GREEDY_H
#define WP_SCHED_ORDER_GREEDY_H

#include "sched/schedule.h"

enum wp_greedy_memory { WP_GREEDY_HOLD_WITH_HEADROOM, WP_GREEDY_RESERVE_AT_ADMISSION, WP_GREEDY_HOLD };
/* Under lap groups, where the micro-batches left over from M / lap_group go:
 * a short last group, a short first group, or a longer last group. */
enum wp_lap_remainder { WP_LAP_REMAINDER_LAST, WP_LAP_REMAINDER_FIRST, WP_LAP_REMAINDER_JOINS_LAST };
struct wp_greedy_opts {
    enum wp_greedy_memory rule;
    double tc;              /* seconds per message while ordering */
    int alternate;           /* a ready backward after a forward, a ready forward
                                after a backward, before the priorities */
    const int *cap;          /* per (stage, copy) as cap[2 * stage + copy], or NULL:
                                instead of the memory rule, at most this many
                                micro-batches between F and B (1F1B's warm-up,
                                per stage copy) */
    int lap_group;           /* > 0: Hanayo's waves as laps, priorities by groups of
                                this many micro-batches (order_greedy.c) */
    enum wp_lap_remainder lap_remainder; /* where a group short of lap_group goes */
    int lap_turn_first;      /* lap groups: the last group's forwards on the last
                                lap's way back run before backwards */
};
int wp_sched_order_greedy(struct wp_schedule *s, const struct wp_greedy_opts *o, struct wp_err *err);

#endif
