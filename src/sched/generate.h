/* The generator driver (generate.c): one entry point that checks what was
 * asked and makes the schedule, the closed-form kinds through the variant
 * dispatcher (variant.h), chimera and hanayo through the order search
 * (order_search.h). */
#ifndef WP_SCHED_GENERATE_H
#define WP_SCHED_GENERATE_H

#include "sched/schedule.h"

/* Generates the schedule p asks for. Errors explain what does not fit
 * (e.g. interleaved needs M to be a multiple of P). */
int wp_schedule_generate(const struct wp_sched_params *p, struct wp_schedule *s,
                         struct wp_err *err);

#endif
