/* What the interpreter needs of one pipeline stage held on a rank, behind
 * one table: the buffers its messages read and write (per slot, one slot per
 * micro-batch in flight), forward, backward (B, and W when split), the
 * gradients a replicated stage sums, and the optimizer step. Two kinds sit
 * behind it, beside the interpreter and never inside it:
 *  - stage_gpt2.c: GPT-2 computed by the kernels (the default);
 *  - stage_emulated.c: compute emulated from a layer table (each pass lasts
 *    what the table says, spent asleep, as a GPU rank's host waits on its
 *    device), with message and gradient buffers of the table's true sizes. */
#ifndef WP_RUN_STAGE_EXEC_H
#define WP_RUN_STAGE_EXEC_H

#include <stddef.h>
#include "util/error.h"

struct wp_stage_exec;

enum wp_stage_buffer {
    WP_STAGE_INPUT,   /* the stage's input (received) */
    WP_STAGE_OUTPUT,  /* its output (sent) */
    WP_STAGE_DINPUT,  /* the gradient of its input (sent back) */
    WP_STAGE_DOUT     /* the gradient of its output (received) */
};

/* The part of the global batch one slot runs: sequences [first_seq,
 * first_seq + nseq) of micro-batch mb of optimizer step `step`. */
struct wp_stage_slice {
    long step;
    int mb, first_seq, nseq;
};

/* Called while an emulated pass waits, so that messages in flight keep
 * moving (a GPU's copy engines do not wait for its kernels). */
struct wp_progress {
    int (*poll)(void *ctx); /* returns how many requests are still in flight */
    void *ctx;
};

/* Told by a stage, in every pass that adds to its weight gradients (W, or
 * B when the backward is not split), as it adds each layer's part: floats
 * [first, first + count) of exec.grads, in the order the layers finish.
 * armed: set by the runtime during the step's final such pass, when those
 * floats are final (run/core/grad_reduce.h starts their sum then); a kind that
 * must cut its pass into layers to tell (emulated) does so only then. */
struct wp_grad_hook {
    void (*added)(void *ctx, size_t first, size_t count);
    void *ctx;
    int armed;
};

struct wp_stage_exec_ops {
    const char *name;
    /* the slot's buffer, sequences of in_seq_floats (INPUT, DINPUT) or
     * out_seq_floats (OUTPUT, DOUT) floats each */
    float *(*buffer)(void *impl, int slot, enum wp_stage_buffer which);
    /* forward of a slot; returns the summed token losses (last stage) or 0 */
    double (*forward)(void *impl, int slot, const struct wp_stage_slice *sl);
    void (*backward)(void *impl, int slot, float dloss);
    void (*backward_weights)(void *impl, int slot);
    void (*zero_grads)(void *impl);
    void (*optimizer_step)(void *impl, int step);
    /* the tied embedding's two gradient halves (first and last stage of
     * GPT-2); NULL when the model has no tie */
    float *(*tied_grad)(void *impl, int last_stage_half);
    /* GPT-2's one-stage run: sum both halves locally */
    void (*tie_local)(void *impl);
    /* new slices of nseq sequences in nslots slots (another micro-batch
     * size or schedule): the activation buffers are made again, parameters,
     * gradients and optimizer state stay; fills e's sizes anew */
    int (*reshape)(void *impl, int nseq, int nslots, struct wp_stage_exec *e, struct wp_err *err);
    /* The training state of the kind's movable layers [lo, hi) (GPT-2:
     * blocks; emulated: the table's layers), for a re-partition: written
     * into out (NULL: the float count only); set from in. What moves is
     * parameters and optimizer state; gradients are zeroed every step. */
    size_t (*layers_state)(void *impl, int lo, int hi, float *out);
    void (*set_layers_state)(void *impl, int lo, int hi, const float *in);
    /* a stage made anew with other layers takes from the old one (same
     * kind) all the state both hold: the layers kept and what never moves
     * (GPT-2's embedding and head) */
    int (*adopt)(void *impl, const void *old_impl, struct wp_err *err);
    void (*destroy)(void *impl);
};

struct wp_stage_exec {
    const struct wp_stage_exec_ops *ops;
    void *impl;
    int nslots;
    size_t in_seq_floats, out_seq_floats; /* floats per sequence entering and leaving */
    float *grads;                         /* summed over the replicas at ALLREDUCE */
    size_t grad_floats;
    size_t tied_floats;                   /* floats of each tied gradient half (0: none) */
    double slot_bytes;                    /* activation memory one slot keeps */
    double work_bytes;                    /* activation memory the stage keeps once, whatever its slots
                                           * (a recomputing stage's activations of the pass it runs) */
};

/* What a kind needs to build a stage: which one, its slice and slots. */
struct wp_stage_request {
    int stage, nstages;
    int nseq;            /* sequences of a micro-batch slice on this rank */
    int nslots;
    int split_backward;
    int replicated;      /* 1 when the stage's gradients are summed over several ranks */
    const struct wp_progress *progress; /* the interpreter's, for kinds that wait */
    const struct wp_grad_hook *grad_hook; /* may be NULL: nobody asks */
};

/* Makes the stage's executor; ctx is the kind's (the model, or the table). */
typedef int (*wp_stage_make_fn)(void *ctx, const struct wp_stage_request *rq, struct wp_stage_exec *out,
                                struct wp_err *err);

#endif
