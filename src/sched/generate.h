/* The generator driver (generate.c): checks what was asked and makes the
 * schedule, the closed-form kinds through the variant dispatcher (variant.h),
 * chimera and hanayo through the order search (order_search.h), any of them
 * in data-parallel copies (params.data_parallel, replicate.h); or reads it
 * from a schedule file instead (wp_schedule_make). */
#ifndef WP_SCHED_GENERATE_H
#define WP_SCHED_GENERATE_H

#include "sched/schedule.h"

/* Whether the generator makes what p asks for, and its stage count into
 * *nstages; errors explain what does not fit (the same as
 * wp_schedule_generate's, which checks first). */
int wp_sched_check(const struct wp_sched_params *p, int *nstages, struct wp_err *err);

/* Generates the schedule p asks for: with p->data_parallel = D > 1, the
 * kind on P / D ranks copied D times (wp_schedule_replicate; D must divide
 * P, and the kind's rules hold for P / D). Errors explain what does not fit
 * (e.g. interleaved needs M to be a multiple of P). */
int wp_schedule_generate(const struct wp_sched_params *p, struct wp_schedule *s,
                         struct wp_err *err);

/* The schedule p describes: read from schedule_file and validated when it
 * is not NULL (wp_schedule_load, keeping p's costs), else generated. */
int wp_schedule_make(const struct wp_sched_params *p, const char *schedule_file, struct wp_schedule *s,
                     struct wp_err *err);

#endif
