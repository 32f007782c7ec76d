/* Orders in closed form by groups: gpipe, 1f1b and kfkb (grouped early
 * backward), and Megatron's interleaved 1F1B (order_direct.c). Each runs
 * on a placed schedule with reserved lists and emits through wp_sched_emit. */
#ifndef WP_SCHED_ORDER_DIRECT_H
#define WP_SCHED_ORDER_DIRECT_H

#include "sched/schedule.h"

int wp_sched_order_grouped(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_interleaved(struct wp_schedule *s, struct wp_err *err);

#endif
