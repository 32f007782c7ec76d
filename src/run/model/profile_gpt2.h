/* The planner's layer table of a GPT-2 model (plan/layers.h), one per
 * micro-batch size: from FLOP counts at a given FLOP/s, or measured with the
 * runtime's own kernels (embedding, one block and the head timed as the
 * stages `wavepipe run` executes: forward, B and W, medians). */
#ifndef WP_RUN_MODEL_PROFILE_GPT2_H
#define WP_RUN_MODEL_PROFILE_GPT2_H

#include <stdio.h>

#include "kernels/precision.h"
#include "util/error.h"

#define WP_PROFILE_MAX_SIZES 16 /* micro-batch sizes at most */

struct wp_profile_gpt2_options {
    const char *model_path; /* the model settings (as for `wavepipe run`) */
    const int *sizes;       /* micro-batch sizes (at most WP_PROFILE_MAX_SIZES); nsizes 0: the model
                             * file's global_batch / micro_batches */
    int nsizes;
    int analytic;           /* FLOP counts at flops_per_s, or modelled for gpu, instead of measuring */
    double flops_per_s;
    const char *gpu;        /* analytic: the GPU whose per-operation model times the layers (plan/gpu_model.h);
                             * NULL: flops_per_s */
    int flash;              /* with gpu: the attention core as one FlashAttention kernel */
    enum wp_precision precision; /* the elements' bytes; measured: the kernels' (kernels.h); with gpu: the
                                  * matmuls' rate */
    int repeat;             /* measured: timed repetitions per pass, after a warm-up */
    int cuda;               /* measured: the CUDA kernels (CUDA build with a GPU), else the CPU's */
    const char *output;     /* write each table (wavepipe-layers; OUT.bB.cfg per size with several); NULL: none */
};

/* Makes, prints on out (with the timings when measured) and writes the
 * table of each size; with several sizes, a last table of the block's
 * forward + backward per size and per sequence. 0, or -1 with err. */
int wp_profile_gpt2(const struct wp_profile_gpt2_options *o, FILE *out, struct wp_err *err);

#endif
