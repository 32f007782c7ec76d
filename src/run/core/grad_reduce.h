/* A replicated stage's gradient sum in buckets overlapped with its backward
 * (PyTorch DDP's buckets, Megatron's overlapped grad reduce), beside the
 * interpreter: during the step's final backward-weights pass of the stage
 * on this rank (W when the backward is split, else B) the stage tells, layer
 * by layer, which floats of its gradients are final (stage_exec.h:
 * wp_grad_hook); adjacent ones gather into a bucket, and a full bucket
 * (sched/grad_overlap.h: the rule the simulator and planner cost) starts a
 * non-blocking group sum on the stage's own channel (comm.h). The ALLREDUCE
 * action then starts what was not told and waits for every bucket. Off
 * (--grad-overlap off), nothing is told and the ALLREDUCE sums the whole
 * gradient as one bucket: the same path, the sum of today.
 *
 * Every holder of the stage starts the same buckets in the same order (the
 * same layers told in the same order), as a channel's sums must. Progress:
 * MPI moves a non-blocking sum only inside MPI calls, so the reducer polls
 * the interpreter's progress after each layer told, the emulated passes
 * poll while they sleep, and the ALLREDUCE's wait polls; during one long
 * computed kernel (a GPT-2 block on the CPU) a bucket waits for the next
 * poll. NCCL's sums move on their own stream. */
#ifndef WP_RUN_GRAD_REDUCE_H
#define WP_RUN_GRAD_REDUCE_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "run/comm/comm.h"
#include "run/core/stage_exec.h"
#include "util/error.h"

struct wp_grad_bucket {
    size_t first, count; /* floats of the stage's gradients */
    struct wp_comm_request req;
};

struct wp_grad_reducer {
    struct wp_grad_hook hook;           /* the stage's (make it with &hook) */
    int active;                         /* a gradient summed over 2 or more ranks */
    int overlap;                        /* 1: buckets during the final pass (default) */
    double bucket_bytes;                /* the cap (default WP_GRAD_BUCKET_BYTES_DEFAULT) */
    const struct wp_comm_ops *cops;
    struct wp_comm *comm;
    const struct wp_kernel_ops *k;      /* synchronized before a bucket starts; may be NULL */
    const struct wp_progress *progress; /* polled after each layer told; may be NULL */
    const struct wp_stage_exec *exec;   /* grads and grad_floats read at each use (a re-partition re-makes them) */
    int *ranks, nranks, channel;
    size_t open_first, open_count;      /* told, not yet started */
    struct wp_grad_bucket *buckets;     /* started this step */
    int nbuckets, cap;
    int failed;                         /* a bucket could not start */
};

/* The stage exec (made with &r->hook as its grad_hook) summed over ranks
 * (sorted; this rank among them) on channel (the stage: one channel per
 * stage, so that holders may start different stages' buckets in any
 * order). With 2 or more ranks and gradients this opens the channel:
 * collective over ranks, so a rank sets up its stages in ascending order. */
int wp_grad_reducer_init(struct wp_grad_reducer *r, const struct wp_comm_ops *cops, struct wp_comm *comm,
                         const struct wp_kernel_ops *k, const struct wp_progress *progress,
                         const struct wp_stage_exec *exec, const int *ranks, int nranks, int channel,
                         struct wp_err *err);
void wp_grad_reducer_destroy(struct wp_grad_reducer *r);

/* --grad-overlap on|off and --grad-bucket-mb (between steps). */
void wp_grad_reducer_set(struct wp_grad_reducer *r, int overlap, double bucket_bytes);

/* The step's final backward-weights pass of the stage begins and ends:
 * the floats told in between are final; at the end the open bucket starts. */
void wp_grad_reducer_pass_begin(struct wp_grad_reducer *r);
void wp_grad_reducer_pass_end(struct wp_grad_reducer *r);

/* Tests the buckets in flight; returns how many are still. */
int wp_grad_reducer_poll(struct wp_grad_reducer *r);

/* ALLREDUCE: starts the sums of what was not told (in ascending order),
 * waits for every bucket and forgets them; 0, or -1 with err. */
int wp_grad_reducer_finish(struct wp_grad_reducer *r, struct wp_err *err);

#endif
