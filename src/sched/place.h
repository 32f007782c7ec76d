/* Placement: which ranks hold each stage (and its copies and replicas),
 * which copy runs each micro-batch, and the stage weights that follow
 * (place.c). Generators place first; schedule files use the two helpers. */
#ifndef WP_SCHED_PLACE_H
#define WP_SCHED_PLACE_H

#include "sched/schedule.h"

/* Stage -> rank placement of s's kind, micro-batch -> copy, and the
 * stage weights. */
int wp_sched_place(struct wp_schedule *s, struct wp_err *err);
/* Room for ncopies x nreplicas ranks of one stage (place[stage].ranks,
 * zeroed), and every stage's weight once all stages are placed. */
int wp_sched_set_place(struct wp_schedule *s, int stage, int ncopies, int nreplicas, struct wp_err *err);
void wp_sched_set_weights(struct wp_schedule *s);

#endif
