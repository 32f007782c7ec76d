/* The emulated kind of stage executor (stage_exec.h): every F, B and W of
 * a stage lasts what a layer table says for the stage's layers at the
 * slice's size (plan/layer_stages.h, the very numbers the simulator
 * predicts with), times a slowdown factor; the optimizer step the table's
 * optimizer_s. The time is spent asleep to an absolute deadline, waking
 * every progress slice while messages are in flight to move them along (a
 * GPU rank's host waits on its device while NCCL's copy engines work).
 * Activations, gradients and allreduces stay real buffers of the table's
 * sizes, sent over the real backend; their contents are not computed.
 *
 * Time dilation (wavepipe run --dilate F): every pass, optimizer step and
 * progress slice lasts F times as long, so that the host's fixed costs
 * (polls, copies, MPI's software latency) shrink F-fold beside what is
 * measured; the caller divides what it measures by F. Byte scaling
 * (--scale-bytes S): the buffers hold 1/S of the table's bytes (at least
 * one float), for links S times slower; the caller counts S times the
 * bytes. */
#ifndef WP_RUN_STAGE_EMULATED_H
#define WP_RUN_STAGE_EMULATED_H

#include "plan/layers.h"
#include "run/adapt/slowdown.h"
#include "run/core/stage_exec.h"

struct wp_stage_emulated_ctx {
    const struct wp_layer_table *table;
    const int *first_layer, *last_layer; /* per stage, inclusive */
    struct wp_slowdown *slowdown;        /* may be NULL: factor 1 */
    double progress_slice_s;             /* wake-up period while messages are in flight (undilated) */
    double dilation;                     /* F >= 1: passes last F times the table's time (0: 1) */
    double byte_scale;                   /* S >= 1: buffers of 1/S of the table's bytes (0: 1) */
};

/* wp_stage_make_fn for emulated compute; ctx is a struct wp_stage_emulated_ctx. */
int wp_stage_emulated_make(void *ctx, const struct wp_stage_request *rq, struct wp_stage_exec *out,
                           struct wp_err *err);

/* Sleeps until deadline (CLOCK_MONOTONIC seconds), calling progress->poll
 * every slice_s while it reports messages in flight. */
void wp_emulated_wait_until(double deadline_s, const struct wp_progress *progress, double slice_s);
double wp_monotonic_s(void);

#endif
