/* The variant dispatcher: one schedule of p's kind made with a chosen
 * compute order (variant.c), the candidates the order search and the
 * climber make, and the closed-form kinds' one schedule. */
#ifndef WP_SCHED_VARIANT_H
#define WP_SCHED_VARIANT_H

#include "sched/emit.h"         /* struct wp_given_order */
#include "sched/order_greedy.h" /* struct wp_greedy_opts */
#include "sched/order_steady.h" /* struct wp_steady_cycle */
#include "sched/schedule.h"

/* How one schedule of a searched kind is made: list scheduling
 * with the given options, (one Hanayo wave, a V) the zero-bubble paper's
 * ZB-V order with whole backwards, or a steady state compacted. */
struct wp_order_variant {
    int v_order;
    const struct wp_given_order *given; /* this compute order, as it is */
    struct wp_greedy_opts greedy;
    int steady;      /* a steady state compacted: */
    const struct wp_steady_cycle *cycle; /* this cycle, or when NULL */
    double stagger;  /* the uniform cycle with this stagger per rank, in periods */
};
/* One schedule of p's kind with the order `how` (placement, compute order,
 * communication, bounds); the closed-form kinds ignore `how`. */
int wp_sched_generate_variant(const struct wp_sched_params *p, int nstages, const struct wp_order_variant *how,
                              struct wp_schedule *s, struct wp_err *err);

#endif
