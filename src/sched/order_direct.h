/* Orders in closed form by groups: gpipe, 1f1b and kfkb (grouped early
 * backward), and Megatron's interleaved 1F1B (order_direct.c). Each runs
 * on a placed schedule with reserved lists and emits through wp_sched_emit. */
#ifndef WP_SCHED_ORDER_DIRECT_H
#define WP_SCHED_ORDER_DIRECT_H

#include "sched/schedule.h"

int wp_sched_order_grouped(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_interleaved(struct wp_schedule *s, struct wp_err *err);

/* Breadth-first over looped chunks (Lamy-Poirier, "Breadth-First Pipeline
 * Parallelism", 2023; PyTorch's ScheduleLoopedBFS): a rank runs the forward
 * of every micro-batch through its first chunk, then its second, ...; then
 * the backwards, last chunk first, each chunk's micro-batches in the order
 * of their forwards. It holds every micro-batch of every chunk, as GPipe
 * does. PyTorch runs a chunk's backwards latest first; the makespan is the
 * same (test_schedule.c checks its closed form), and this order sums a
 * stage's gradients in the micro-batches' order, as one rank does, so bfs
 * trains bit for bit as one rank (tests/run_equivalence.sh). */
int wp_sched_order_bfs(struct wp_schedule *s, struct wp_err *err);

#endif
