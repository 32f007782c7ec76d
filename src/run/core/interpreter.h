/* The training runtime's one interpreter: it walks this rank's action list
 * and executes every schedule the same way (no schedule-specific path).
 * Receives are posted ahead of the compute that needs them (Hanayo 4.2);
 * sends never block compute; activations live in slots assigned once per
 * schedule; split and concat between stages of different replication are
 * byte ranges of the slices (DAPPLE figure 9). */
#ifndef WP_RUN_INTERPRETER_H
#define WP_RUN_INTERPRETER_H

#include "kernels/kernels.h"
#include "run/adapt/clock_offset.h"
#include "run/comm/comm.h"
#include "run/adapt/measure.h"
#include "run/model/gpt2_config.h"
#include "run/core/grad_reduce.h"
#include "run/core/stage_exec.h"
#include "sched/schedule.h"

struct wp_held_stage {
    int stage;           /* global stage index */
    struct wp_stage_exec exec; /* GPT-2 computed, or emulated (stage_exec.h) */
    int *slot_of_mb;     /* per micro-batch: its activation slot, -1 when not here */
    struct wp_comm_request *slot_sends; /* per slot, pending sends from its buffers (2 each) */
    int final_grad_action; /* the step's last pass adding to its weight gradients (W, or B), or -1 */
    struct wp_grad_reducer reducer; /* its gradients' sum over the holders (grad_reduce.h) */
};

struct wp_interp_timing {
    double busy_s;       /* compute and allreduce time of this rank in the step */
    double iter_s;
    double start_s;      /* the step's start on the common timeline (with a clock; events count from it) */
    long nevents;
    /* when recording: wall-clock start and end, and the CPU time the rank's
     * thread spent (the work alone, whatever else shared the core) */
    struct { int op, stage, mb; double start, end, cpu; } *events;
    long cap;
};

struct wp_interp {
    const struct wp_schedule *s;
    int rank;
    const struct wp_kernel_ops *k;
    const struct wp_comm_ops *cops;
    struct wp_comm *comm;
    const struct wp_run_config *cfg; /* GPT-2 runs (checkpoints); NULL when emulated */
    int global_batch;
    float dloss;         /* gradient of the mean loss per token */
    int mb_sequences;    /* sequences per micro-batch (before replica slicing) */
    int tied;            /* the stages have a tied embedding to sum (GPT-2) */
    struct wp_progress progress; /* polls this rank's requests (emulated waits) */
    int nheld;
    struct wp_held_stage *held;
    int *local_of_stage; /* per global stage: index in held, or -1 */
    struct wp_comm_request *reqs; /* per action */
    int record_events;
    struct wp_interp_timing timing;
    double last_loss;    /* mean loss of the last step (set by the caller) */
    /* what this rank handed the comm table in the step, by kind: messages
     * sent, replicated stages' gradient sums, the tied embedding's sums
     * (bytes of each call's whole vector) */
    struct { long sends, grad_sums, tied_sums; double send_bytes, grad_sum_bytes, tied_sum_bytes; } bytes;
    /* optional: passes' seconds are added to measure (the caller resets
     * and agrees it); per action of this rank's list, on clock's timeline,
     * when a send or receive was posted and when a receive was seen
     * complete, and its bytes (measure.h pairs them up) */
    struct wp_measure *measure;
    const struct wp_clock *clock;
    double *msg_posted_s, *msg_done_s, *msg_bytes;
    /* time dilation and byte scaling of an emulated run (wp_interp_set_scaling) */
    double dilation, byte_scale;
    double message_scale; /* bytes on the wire per byte of a message's buffer (wp_interp_set_message_scale) */
};

/* make builds each held stage's executor (stage_gpt2.h, stage_emulated.h);
 * k moves data between stages held on this rank; dloss scales the loss's
 * gradient (GPT-2: 1 / (global batch x sequence length)). */
int wp_interp_init(struct wp_interp *in, const struct wp_schedule *s, int rank, const struct wp_kernel_ops *k,
                   const struct wp_comm_ops *cops, struct wp_comm *comm, int global_batch, float dloss,
                   wp_stage_make_fn make, void *make_ctx, struct wp_err *err);
void wp_interp_destroy(struct wp_interp *in);

/* Between two steps: run schedule s from now on (another k, micro-batch
 * count or order over the same placement of stages: Ada-Grouper's plan
 * switch). The held stages keep their parameters, gradients' buffers and
 * optimizer state; slots and message buffers are made again for the new
 * micro-batch size. s must outlive its use, as the first one. */
int wp_interp_reschedule(struct wp_interp *in, const struct wp_schedule *s, struct wp_err *err);

/* --grad-overlap and --grad-bucket-mb for every held stage (grad_reduce.h;
 * default on, 25 MiB), from the next step on; the same on every rank. */
void wp_interp_set_grad_overlap(struct wp_interp *in, int overlap, double bucket_bytes);

/* An emulated run dilated F times with messages of 1/S of the model's
 * bytes (stage_emulated.h): from now on every time the interpreter takes
 * (passes, their CPU time, the iteration) is divided by F, and every byte
 * count it keeps (messages, sums) multiplied by S, so that what it
 * reports is the undilated run's with the model's bytes. Default 1, 1. */
void wp_interp_set_scaling(struct wp_interp *in, double dilation, double byte_scale);

/* Messages cross the wire in `scale` bytes per byte of their buffers from
 * now on (0.5: a bf16 run's floats sent as bfloat16, comm_bf16.h): the
 * interpreter counts and times them at that size. Default 1. */
void wp_interp_set_message_scale(struct wp_interp *in, double scale);

/* One training step; *loss_sum gets this rank's summed token losses. */
int wp_interp_step(struct wp_interp *in, long step, double *loss_sum, struct wp_err *err);

#endif
