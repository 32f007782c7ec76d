/* Schedule generators: one entry point that places stages on ranks, orders
 * each rank's compute (emitting the communication each compute implies
 * with it), ends the lists with ALLREDUCE and STEP, and gives each rank its
 * activation bound. */
#ifndef WP_SCHED_GENERATE_H
#define WP_SCHED_GENERATE_H

#include "sched/emit.h" /* struct wp_given_order */
#include "sched/schedule.h"

/* Generates the schedule p asks for. Errors explain what does not fit
 * (e.g. interleaved needs M to be a multiple of P). */
int wp_schedule_generate(const struct wp_sched_params *p, struct wp_schedule *s,
                         struct wp_err *err);

/* ---- the parts, one file each ---- */

/* place.c: stage count, stage -> rank placement, micro-batch -> copy. */
int wp_sched_place(struct wp_schedule *s, struct wp_err *err);
/* place.c: room for ncopies x nreplicas ranks of one stage (place[stage].ranks,
 * zeroed), and every stage's weight once all stages are placed. */
int wp_sched_set_place(struct wp_schedule *s, int stage, int ncopies, int nreplicas, struct wp_err *err);
void wp_sched_set_weights(struct wp_schedule *s);
/* order_direct.c: gpipe, 1f1b and kfkb (grouped early backward), and
 * Megatron's interleaved 1F1B. The orders emit through wp_sched_emit. */
int wp_sched_order_grouped(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_interleaved(struct wp_schedule *s, struct wp_err *err);
/* order_greedy.c: list scheduling by priority for chimera and hanayo,
 * under one of three memory rules (or caps per stage copy), with messages
 * costing tc while ordering; for hanayo also by lap groups. */
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
/* order_steady.c: a steady state of one period, compacted. Per rank the
 * cyclic order of its passes, order[r * stride + k] = 2c + (0 F, 1 B) for
 * its c-th stage (ascending), from phase_s[r]; one period for all ranks, at
 * least each rank's busy time in it. One copy of each stage, on one rank,
 * backward whole. */
struct wp_steady_cycle {
    const int *order;
    int stride;
    const double *phase_s;
    double period_s;
};
int wp_steady_check(const struct wp_schedule *s, struct wp_err *err);
/* Start of micro-batch 0's F and B of every stage in the steady state. */
int wp_steady_times(const struct wp_schedule *s, const struct wp_steady_cycle *cy, double *start_f,
                    double *start_b, struct wp_err *err);
int wp_sched_order_steady(struct wp_schedule *s, const struct wp_steady_cycle *cy, struct wp_err *err);
/* The uniform cycle: F and B of each stage in turn, rank r from phase
 * r * stagger periods, the period the busiest rank's work (free with
 * wp_steady_cycle_free). */
int wp_steady_uniform(const struct wp_schedule *s, double stagger, struct wp_steady_cycle *cy, struct wp_err *err);
void wp_steady_cycle_free(struct wp_steady_cycle *cy);
/* How generate.c makes one schedule of a searched kind: list scheduling
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
/* generate.c: one schedule of p's kind with the order `how` (placement,
 * compute order, communication, bounds). */
int wp_sched_generate_variant(const struct wp_sched_params *p, int nstages, const struct wp_order_variant *how,
                              struct wp_schedule *s, struct wp_err *err);
/* order_search.c: the candidate orders of chimera and hanayo, the fastest
 * within the memory bound on the simulator kept. */
int wp_sched_search_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best,
                          struct wp_err *err);
/* order_search.c: the makespan and peak of s on the simulator with the
 * costs it was made for, and whether every rank kept its bound. */
int wp_sched_simulate_own_costs(const struct wp_schedule *s, double *makespan, double *peak, int *within_bound,
                                struct wp_err *err);
/* order_improve.c: p->order_search steps of hill climbing over best's
 * compute order (one rank per stage, whole backwards); best is replaced
 * when the simulator times the result faster within the bound (makespan:
 * best's, updated). */
int wp_sched_improve_order(const struct wp_sched_params *p, int nstages, struct wp_schedule *best, double *makespan,
                           struct wp_err *err);
/* order_zero_bubble.c: zb-h1, zb-v and dualpipev in closed form. */
int wp_sched_order_zbh1(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_zbv(struct wp_schedule *s, struct wp_err *err);
int wp_sched_order_dualpipev(struct wp_schedule *s, struct wp_err *err);

#endif
