/* The GPT-2 kind of stage executor (stage_exec.h): the stage computed by
 * the kernels, its first stage reading tokens from the corpus. */
#ifndef WP_RUN_STAGE_GPT2_H
#define WP_RUN_STAGE_GPT2_H

#include "run/model/data.h"
#include "run/model/gpt2_config.h"
#include "run/model/gpt2_stage.h"
#include "run/adapt/slowdown.h"
#include "run/core/stage_exec.h"

struct wp_stage_gpt2_ctx {
    const struct wp_kernel_ops *k;
    const struct wp_run_config *cfg;
    const struct wp_corpus *corpus;
    const int *first_block, *end_block; /* per stage */
    /* optional: a contended GPU (slowdown.h): a pass that took t seconds is
     * followed by (factor - 1) t asleep, messages moving meanwhile */
    struct wp_slowdown *slowdown;
    double progress_slice_s;
    /* optional: the tensor group every stage's blocks are split over
     * (tensor_group.h); only its lane 0 reports the losses */
    struct wp_tensor_group *tensor_group;
    /* optional, per stage: 1 where the stage recomputes its forward before
     * each backward (gpt2_stage.h; not with a split backward) */
    const int *recompute;
};

/* wp_stage_make_fn for GPT-2; ctx is a struct wp_stage_gpt2_ctx. */
int wp_stage_gpt2_make(void *ctx, const struct wp_stage_request *rq, struct wp_stage_exec *out, struct wp_err *err);

/* The model behind an executor made by wp_stage_gpt2_make, else NULL. */
struct wp_gpt2_stage *wp_stage_gpt2_model(const struct wp_stage_exec *e);

#endif
