/* AutoPipe's re-partitioning decisions (sections 4.2-4.3), beside the
 * interpreter: which boundary between two neighbouring stages to move, by
 * how many layers, and whether it pays.
 *  - The measurements: per stage, how much slower or faster its rank runs
 *    F, B and W than a reference layer table says for its layers (a speed
 *    factor, moving average: a contended GPU shows as a factor of 2); per
 *    boundary, the seconds a byte of the messages takes as measured now;
 *    per stage, the allreduce's seconds per byte of gradients.
 *  - The predictor (AutoPipe learns one; here the simulator): each move of
 *    one boundary by 1 .. max_shift layers either way (AutoPipe's moves
 *    between two workers), and when none of those pays, of the two
 *    boundaries of one stage at once (it gives layers to both neighbours or
 *    takes from both: a stage that gave to both sides takes them back in
 *    one move), its stages' F, B, W
 *    the table's for their new
 *    layers times the rank's factor, the messages across the moved
 *    boundary re-sized, run through the simulator with the running
 *    schedule.
 *  - The arbiter (AutoPipe's is learned; here a cost-benefit rule): the
 *    best move is made when the time it saves per iteration over the
 *    horizon beats what switching costs (the moved layers' parameters and
 *    AdamW moments over the measured link, plus the pause the last move
 *    took) and the gain per iteration is above min_gain.
 * Units: the kind's movable layers (GPT-2 blocks, or the table's layers);
 * unit u is the table's layer u + unit_offset, and the first stage also
 * holds the table's `lead` layers before unit 0, the last stage the `tail`
 * after the last unit (GPT-2: the embedding and the head). */
#ifndef WP_RUN_TUNE_PARTITION_H
#define WP_RUN_TUNE_PARTITION_H

#include "plan/layers.h"
#include "run/adapt/measure.h"
#include "sched/schedule.h"

struct wp_tune_partition {
    const struct wp_layer_table *table;
    int unit_offset, lead, tail;
    int nstages, nunits;
    int *count;                        /* units per stage, as running */
    double *speed_f, *speed_b, *speed_w; /* per stage (0: not measured) */
    double *link_s_per_byte;           /* per boundary (0: not timed yet) */
    double *allreduce_s_per_byte;      /* per stage */
    int max_shift;
    double horizon_iters;              /* a gain counts over this many iterations */
    double pause_s;                    /* the last move's pause (0 before any) */
    double min_gain;                   /* relative gain per iteration a move needs at least */
    double average_weight;
};

int wp_tune_partition_init(struct wp_tune_partition *t, const struct wp_layer_table *table, int unit_offset,
                           int lead, int tail, int nstages, const int *count, struct wp_err *err);
void wp_tune_partition_destroy(struct wp_tune_partition *t);

/* The agreed measurements of an iteration of schedule s (global_batch
 * sequences) on the running partition. */
void wp_tune_partition_observe(struct wp_tune_partition *t, const struct wp_measure *m, const struct wp_schedule *s,
                               int global_batch);

/* Predicts the running partition and every move; 1 and the new counts in
 * count_out when the arbiter moves, else 0; the reasons in why (one line);
 * *predicted_now_s and *predicted_new_s the iteration times. -1 on error. */
int wp_tune_partition_decide(struct wp_tune_partition *t, const struct wp_schedule *s, int global_batch,
                             int *count_out, double *predicted_now_s, double *predicted_new_s, char *why, size_t size,
                             struct wp_err *err);

/* How a move to count_new changes each stage's compute (the table's F + B
 * + W of its new layers over its old ones) and each boundary's message
 * (the bytes leaving its new last layer over its old one), for the k
 * tuner to predict its plans on the partition about to run. */
void wp_tune_partition_scales(const struct wp_tune_partition *t, const int *count_new, double *stage_scale,
                              double *link_scale);

/* Table layers [*first, *last] of stage st under counts. */
void wp_tune_partition_range(const struct wp_tune_partition *t, const int *count, int st, int *first, int *last);

#endif
