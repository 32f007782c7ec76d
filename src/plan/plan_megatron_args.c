/* A plan as Megatron-LM's command-line arguments (plan_megatron_args.h). */
#include "plan/plan_megatron_args.h"

#include <stdlib.h>
#include <string.h>

/* Transformer blocks among layers first..last. */
static int blocks_in(const struct wp_layer_table *t, int first, int last)
{
    int n = 0;
    for (int i = first; i <= last; i++)
        n += t->layers[i].block.channels > 0;
    return n;
}

/* The split of blocks over the (virtual) stages into args: nothing when
 * they are even, --num-layers-per-virtual-pipeline-stage for even chunks of
 * an interleaved plan, else Megatron-LM's layout string, stage by stage
 * (virtual stage j = chunk x PP + rank, as Megatron-LM orders them):
 * 'Et*7|t*6|...|t*5L' (E the embedding, t a block, L the loss). */
static int pipeline_split(const struct wp_plan *p, const struct wp_layer_table *t, char *args, size_t size,
                          struct wp_err *err)
{
    int v = p->chunks > 1 ? p->chunks : 1, S = p->nstages, even = 1, n0 = 0;
    for (int s = 0; s < S; s++) {
        int n = blocks_in(t, p->stages[s].first_layer, p->stages[s].last_layer);
        if (s == 0)
            n0 = n;
        even &= n == n0;
    }
    size_t len = strlen(args);
    if (even && v > 1)
        snprintf(args + len, size - len, " --num-layers-per-virtual-pipeline-stage %d", n0);
    if (even)
        return 0;
    len += (size_t)snprintf(args + len, size - len, " --pipeline-model-parallel-layout '");
    for (int s = 0; s < S && len < size; s++) {
        int n = blocks_in(t, p->stages[s].first_layer, p->stages[s].last_layer);
        char blocks[32] = "";
        if (n > 0)
            snprintf(blocks, sizeof blocks, n > 1 ? "t*%d" : "t", n);
        len += (size_t)snprintf(args + len, size - len, "%s%s%s%s", s ? "|" : "", s == 0 ? "E" : "", blocks,
                                s == S - 1 ? "L" : "");
    }
    if (len + 2 >= size)
        return wp_errorf(err, "the plan's %d stages make too long a layout for Megatron-LM's arguments", S);
    snprintf(args + len, size - len, "'");
    return 0;
}

/* The first transformer block of t, or NULL. */
static const struct wp_layer *first_block(const struct wp_layer_table *t)
{
    for (int i = 0; i < t->nlayers; i++)
        if (t->layers[i].block.channels > 0)
            return &t->layers[i];
    return NULL;
}

int wp_plan_write_megatron_args(FILE *out, const struct wp_plan *p, const struct wp_layer_table *t,
                                struct wp_err *err)
{
    int v = p->chunks > 1 ? p->chunks : 1, P = p->nstages / v, tp = wp_plan_tensor_size(p->tensor);
    if (p->tensor.p2 > 1)
        return wp_errorf(err, "the plan's tensor group %d x %d splits channels on a second axis (AutoDDL's mesh); "
                              "Megatron-LM's splits on one: plan with --tensor %dx1 or auto over P x 1", p->tensor.p1,
                         p->tensor.p2, tp);
    int full = 0, selective = 0;
    for (int s = 0; s < p->nstages; s++) {
        if (p->stages[s].replicas != p->stages[0].replicas)
            return wp_errorf(err, "Megatron-LM runs one data-parallel size for every stage; this plan's stage %d has "
                                  "%d replicas, stage 0 %d", s, p->stages[s].replicas, p->stages[0].replicas);
        full += p->stages[s].recompute;
        selective += p->stages[s].selective;
    }
    const struct wp_layer *b = first_block(t);
    char args[16384] = "";
    if (b)
        snprintf(args, sizeof args, " --num-layers %d --hidden-size %d --num-attention-heads %d --seq-length %d "
                                    "--max-position-embeddings %d",
                 blocks_in(t, 0, t->nlayers - 1), b->block.channels, b->block.heads, b->block.seq_len,
                 b->block.seq_len);
    size_t len = strlen(args);
    snprintf(args + len, sizeof args - len, " --tensor-model-parallel-size %d --pipeline-model-parallel-size %d", tp, P);
    if (pipeline_split(p, t, args, sizeof args, err))
        return -1;
    len = strlen(args);
    snprintf(args + len, sizeof args - len, " --micro-batch-size %d --global-batch-size %d", p->stages[0].slice,
             p->global_batch);
    len = strlen(args);
    if (full)
        snprintf(args + len, sizeof args - len,
                 " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1");
    else if (selective)
        snprintf(args + len, sizeof args - len, " --recompute-granularity selective");
    len = strlen(args);
    /* 16-bit parameters with float32 gradients and master weights: bf16 */
    int half = b ? b->block.element_bytes < 4 : 0;
    snprintf(args + len, sizeof args - len, "%s%s%s", p->sequence_parallel ? " --sequence-parallel" : "",
             p->distributed_optimizer ? " --use-distributed-optimizer" : "", half ? " --bf16" : "");
    fprintf(out, "# %s as Megatron-LM's arguments (megatron/training/arguments.py, core_v0.15.0): on %d GPUs, "
                 "TP %d x PP %d gives DP %d from the world size\n",
            p->model, p->devices_used, tp, P, p->stages[0].replicas);
    if ((full && full < p->nstages) || (selective && selective < p->nstages) || (full && selective))
        fprintf(out, "# the plan recomputes on some stages only (%d whole, %d the attention core); Megatron-LM takes "
                     "one setting for every stage: the %s one\n",
                full, selective, full ? "whole" : "selective");
    if (!b)
        fprintf(out, "# the layer table marks no transformer block: give the model's shape (--num-layers, "
                     "--hidden-size, ...) yourself\n");
    fprintf(out, "%s\n", args + 1);
    return 0;
}
