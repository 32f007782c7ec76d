/* Zero-bubble orders in closed form, the backward split into B and W
 * (order_zero_bubble.c): zb-h1, zb-v and dualpipev. The zb-v order on a
 * schedule whose backward is whole is the V-shaped 1F1B (a hanayo candidate). */
#ifndef WP_SCHED_ORDER_ZERO_BUBBLE_H
#define WP_SCHED_ORDER_ZERO_BUBBLE_H

#include "sched/schedule.h"

int wp_sched_order_zbh1(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_zbv(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_dualpipev(struct wp_schedule *s, struct wp_err *err);

#endif
