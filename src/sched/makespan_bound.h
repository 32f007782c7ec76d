/* A lower bound of the simulator's iteration time (wp_simulate's makespan)
 * from per-stage costs alone, in O(ranks) once a schedule is prepared: for
 * schedules whose ranks hold one stage each and whose stages form one chain
 * (a forward of stage s needs stage s - 1's forward of the micro-batch, a
 * backward needs stage s + 1's backward): 1F1B, kFkB, GPipe, ZB-H1. For
 * each rank r of stage s,
 *   before = sum over stages q < s of (F_q + link_q): the first forward
 *            cannot start earlier;
 *   busy   = every pass and allreduce of the rank, one after the other;
 *   after  = sum over q < s of (B_q + link_q): once the rank's last B is
 *            done, that micro-batch's backward still runs down the chain,
 * and the iteration lasts at least before + busy, and before + (the
 * rank's work up to its last B) + after. The simulator can only add
 * waits (a busy link, shared cores), so its makespan is never below the
 * bound; the tuner of --adapt partition predicts only the moves whose
 * bound leaves room to pay (tune_partition.c). */
#ifndef WP_SCHED_MAKESPAN_BOUND_H
#define WP_SCHED_MAKESPAN_BOUND_H

#include "sched/schedule.h"
#include "util/error.h"

/* One rank's work: its stage, and its passes and allreduces up to and
 * including its last B (upto) and after it (after), per op F, B, W,
 * ALLREDUCE. */
struct wp_rank_work {
    int stage;
    int upto[4], after[4];
};

/* Counts every rank's work of schedule s into work[s->nranks]; 1 when the
 * bound applies (one stage a rank, the stages one chain), 0 when it does
 * not (the bound is then 0). */
int wp_makespan_bound_prepare(const struct wp_schedule *s, struct wp_rank_work *work);

/* The bound for per-stage seconds f, b, w (a pass of one micro-batch), link
 * (a message across boundary q, q < S - 1) and allreduce (may be NULL: no
 * allreduce costs); 0 when prepared said it does not apply. */
double wp_makespan_bound(const struct wp_schedule *s, const struct wp_rank_work *work, int applies, const double *f,
                         const double *b, const double *w, const double *link, const double *allreduce);

/* A lower bound with a message time per hop, for any placement of stages
 * whose costs are the constant model's (tf, tb, tw through 1/P of the
 * model, times the stage's weight; tc per message between two ranks; no
 * cluster, no measured times, no replicated stages): for each rank r,
 *   head = the earliest its first pass can start: over its forwards, the
 *          least forward chain below the stage (the micro-batch's copy of
 *          each stage below it, a hop where two stages' ranks differ);
 *   busy = every pass of the rank, one after the other;
 *   tail = when the backward is whole, the least backward chain below a
 *          stage of the rank (its last pass is a B, and that micro-batch's
 *          backward still runs down to stage 0); 0 where it is split (a W
 *          may come last);
 * and the makespan is at least head + busy + tail for every rank. At tc =
 * 0 on equal stages it is the bound every 1F1B-like order meets: (M + P -
 * 1)(tf + tb) for gpipe and 1f1b, M (tf+tb+tw) + (P-1) tf / V for zb-h1
 * with V chunks at tf = tb = tw. Sent messages that a rank waits for are
 * all it adds with tc; the simulator never finishes sooner. */
struct wp_hop_bound {
    double makespan_s;                  /* 0: does not apply */
    int rank;                           /* the rank that sets it */
    double head_s, busy_s, tail_s;      /* that rank's */
};
struct wp_cost_model;
void wp_makespan_bound_hops(const struct wp_schedule *s, const struct wp_cost_model *c, struct wp_hop_bound *out);

#endif
