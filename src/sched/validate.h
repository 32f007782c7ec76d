/* The one validator of schedules: every (stage, micro-batch) slice has its
 * F, B (and W) exactly once on the rank that holds it, in dependency order;
 * every send has exactly one matching receive in channel order; a lock-step
 * run terminates; and each rank's peak of held activations is reported and
 * within the schedule's documented bound. */
#ifndef WP_SCHED_VALIDATE_H
#define WP_SCHED_VALIDATE_H

#include "sched/schedule.h"

struct wp_validation {
    int nranks;
    double *peak_activations;  /* per rank, weighted (see wp_stage_weight) */
    double peak_max;
    long actions;
    long messages;
};

/* 0 when valid; otherwise -1 and a message naming the rank, step, action. */
int wp_schedule_validate(const struct wp_schedule *s, struct wp_validation *v, struct wp_err *err);
void wp_validation_destroy(struct wp_validation *v);

/* wp_schedule_validate, whose lock-step walk (the one that pairs messages
 * and finds deadlocks, walk.h) also plays visitor also when every list
 * passed its own checks: a caller that validates and then walks again (the
 * simulator) walks once. *also_walked says whether also was played to the
 * end of the walk; 0 on a faulty schedule (walked with checks instead),
 * where also may have been played in part, on lists not yet checked (also
 * must then refuse what it cannot play: walk.h's walk refuses ALLREDUCE of
 * a stage out of range) and its state is to be thrown away. An error of
 * also ends the walk and is returned as err. */
struct wp_walk_visitor;
int wp_schedule_validate_walking(const struct wp_schedule *s, const struct wp_walk_visitor *also, int *also_walked,
                                 struct wp_validation *v, struct wp_err *err);

#endif
