/* One pipeline stage of GPT-2 on one rank: blocks [first, end) plus the
 * embeddings on the first stage and ln_f, the tied LM head and the loss on
 * the last. Activations live in slots, one per micro-batch in flight; the
 * runtime picks the slot and moves data in and out of the slot's buffers.
 * The backward is either whole (B) or split into the input-gradient pass
 * (B) and the weight-gradient pass (W) of zero-bubble schedules; both give
 * the same weight gradients, bit for bit. A recomputing stage (Megatron-LM's
 * full recomputation) keeps thin slots, the stage's boundaries alone, and
 * one work slot of activations for all: the backward of a slot runs its
 * forward again there from the slot's input first (the same kernels on the
 * same inputs: the same bits), so memory per micro-batch in flight drops to
 * the boundaries for one more forward per backward. Its backward is whole.
 * The stage trains in its kernels' precision (kernels.h): float32 master
 * weights, gradients and AdamW moments always; in bf16 the kernels read a
 * bfloat16 copy of the weights and store activations as bfloat16. */
#ifndef WP_RUN_GPT2_STAGE_H
#define WP_RUN_GPT2_STAGE_H

#include "kernels/kernels.h"
#include "run/model/gpt2_params.h"
#include "run/core/stage_exec.h"

struct wp_block_acts;   /* per slot and block, in gpt2_stage.c */
struct wp_tensor_group; /* run/comm/tensor_group.h */

struct wp_stage_slot {
    void *memory;   /* the slot's one allocation, which the pointers below point into */
    float *input;   /* (B,T,C) stage input (received, or the embedding's output) */
    float *output;  /* (B,T,C) stage output (to send): the last block's residual3, or a thin slot's own */
    float *dout;    /* (B,T,C) gradient of the stage output (received; unused on the last stage) */
    float *dinput;  /* (B,T,C) gradient of the stage input (to send; unused on the first stage) */
    int *tokens;    /* (B,T) inputs, first stage */
    int *targets;   /* (B,T) next tokens, last stage */
    struct wp_block_acts *blocks; /* NULL in a thin slot */
    float *lnf, *lnf_mean, *lnf_rstd, *probs, *losses; /* last stage */
    float *dlogits; /* (B,T,V) kept for W when the backward is split */
};

struct wp_gpt2_stage {
    const struct wp_kernel_ops *k;
    struct wp_gpt2_config g;
    struct wp_stage_layout layout;
    int B;                 /* sequences per micro-batch slice on this rank */
    int split_backward;
    int recompute;         /* 1: slots are thin, activations in `work`, made again before each backward */
    float *params, *grads, *m, *v; /* backend memory, layout.total floats each (grads: grad_floats); params
                                    * are the master weights, float32 in every precision */
    float *weights;        /* what the kernels read: params itself, or in bf16 their bfloat16 rounding
                            * (Megatron-LM's 16-bit copy of the fp32 master weights) */
    size_t grad_floats;    /* layout.total, plus V*C when the stage has both ends of the tied wte */
    float *wte_grad_embedding; /* the encoder's part of wte's gradient (first stage) */
    float *wte_grad_head;      /* the LM head's part (last stage) */
    int nslots;
    struct wp_stage_slot *slots;
    struct wp_stage_slot work; /* recomputing: the activations of the slot a pass runs (its boundaries bound) */
    struct wp_tensor_group *tg; /* the blocks' tensor group, or NULL (whole tensors) */
    /* scratch shared by all slots (one pass runs at a time) */
    float *dres, *dscratch_c, *dscratch_4c, *dscratch_4c2, *logits;
    float *tp_wide, *tp_local, *tp_narrow; /* with a tensor group: (N,4C1) (N/p2,4C1) (N,C2) */
    /* told, when armed, of each block's, the head's and the embedding's
     * weight gradients as a pass finishes them (set after init; may be NULL) */
    const struct wp_grad_hook *grad_hook;
};

/* tg: the tensor group the blocks are split over (it must outlive the
 * stage; B a multiple of its p2), or NULL. recompute: thin slots and one
 * work slot (not with split_backward). */
int wp_gpt2_stage_init(struct wp_gpt2_stage *st, const struct wp_kernel_ops *k, const struct wp_gpt2_config *g,
                       int first_block, int end_block, int B, int nslots, int split_backward, int recompute,
                       unsigned long long seed, struct wp_tensor_group *tg, struct wp_err *err);
/* Whether a stage can run so: a recomputing stage keeps no activations
 * for a weight pass apart (W would need those B used). 0, or -1 and why. */
int wp_gpt2_stage_modes_check(int split_backward, int recompute, struct wp_err *err);
void wp_gpt2_stage_destroy(struct wp_gpt2_stage *st);
/* Slices of B sequences in nslots slots from now on: the activations and
 * scratch are made again; parameters, gradients and AdamW moments stay. */
int wp_gpt2_stage_reshape(struct wp_gpt2_stage *st, int B, int nslots, struct wp_err *err);

/* The training state of blocks [lo, hi) of this stage (parameters and
 * AdamW's m and v, 3 x *floats floats, in that order), to move them to
 * another stage: out NULL gives the count only. lo..hi must be held. */
size_t wp_gpt2_stage_blocks_state(const struct wp_gpt2_stage *st, int lo, int hi, float *out);
/* Sets blocks [lo, hi)'s parameters and moments from such a state. */
void wp_gpt2_stage_set_blocks_state(struct wp_gpt2_stage *st, int lo, int hi, const float *in);

/* Copies from old every tensor both stages hold (parameters and AdamW
 * moments): what a stage re-made with other blocks keeps. */
int wp_gpt2_stage_adopt(struct wp_gpt2_stage *st, const struct wp_gpt2_stage *old);

/* Bytes of everything one micro-batch in flight keeps on this stage (a
 * slot; a thin one when the stage recomputes). */
size_t wp_gpt2_stage_slot_bytes(const struct wp_gpt2_stage *st);
/* Bytes the stage keeps once, whatever its slots: a recomputing stage's
 * work slot (0 when it does not recompute). */
size_t wp_gpt2_stage_work_bytes(const struct wp_gpt2_stage *st);
/* Bytes of one (B,T,C) activation slice. */
size_t wp_gpt2_stage_act_bytes(const struct wp_gpt2_stage *st);

/* Copies the slot's tokens and targets from the host (first/last stage). */
void wp_gpt2_stage_set_tokens(struct wp_gpt2_stage *st, int slot, const int *inputs, const int *targets);
/* Forward of a slot; its output is wp_gpt2_stage_output(). */
void wp_gpt2_stage_forward(struct wp_gpt2_stage *st, int slot);
float *wp_gpt2_stage_output(const struct wp_gpt2_stage *st, int slot);
/* Backward from slot->dout (or the loss, scaled by dloss per token, on the
 * last stage) to slot->dinput; weight gradients too unless split. A
 * recomputing stage runs the slot's forward again first. */
void wp_gpt2_stage_backward(struct wp_gpt2_stage *st, int slot, float dloss);
/* The weight-gradient half, after wp_gpt2_stage_backward, when split. */
void wp_gpt2_stage_backward_weights(struct wp_gpt2_stage *st, int slot);
/* Sum of the slot's per-token losses (last stage), on the host. */
double wp_gpt2_stage_loss_sum(const struct wp_gpt2_stage *st, int slot);

void wp_gpt2_stage_zero_grads(struct wp_gpt2_stage *st);
/* The weights the kernels read made again from the master weights (after
 * anything writes params: the optimizer step, a checkpoint, moved blocks;
 * those of this file do it themselves). */
void wp_gpt2_stage_weights_refresh(struct wp_gpt2_stage *st);
/* The tied wte: its gradient is E + H, the embedding's part plus the head's,
 * summed in that order whatever the partition. For a stage that holds both
 * ends this forms the sum locally; across stages the runtime does it. */
void wp_gpt2_stage_tie_wte_local(struct wp_gpt2_stage *st);
void wp_gpt2_stage_adamw(struct wp_gpt2_stage *st, const struct wp_train_config *t, int step);

#endif
