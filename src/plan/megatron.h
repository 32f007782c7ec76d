/* Megatron-LM's weak-scaling runs (Narayanan et al., "Efficient Large-Scale
 * Language Model Training on GPU Clusters Using Megatron-LM", SC21, table 1)
 * as wavepipe plans: their models as analytic layer tables, their
 * configurations (tensor and pipeline sizes, micro-batch, global batch,
 * interleaving, recomputation) as plans on DGX A100 nodes, and Megatron's
 * own FLOP count, so that the planner's predictions can be set against the
 * published throughput (bench/bench_megatron.c, tests/test_megatron.c).
 *
 * Where the numbers come from: the configurations from NVIDIA/Megatron-LM's
 * examples/sc21/run_table_1.sh (TP, PP, MBS, GBS, layers, hidden size, heads,
 * nodes, --recompute-method uniform on every row, and
 * --num-layers-per-virtual-pipeline-stage on four); the achieved teraFLOP/s
 * per GPU from the paper's table 1 (the paper is not in shared/papers; its
 * rows as reproduced alike in several public notes, the 1T row also in the
 * abstract: 502 petaFLOP/s on 3,072 GPUs, 52 % of peak). All runs: sequence
 * 2048, vocabulary 51,200, mixed precision. */
#ifndef WP_PLAN_MEGATRON_H
#define WP_PLAN_MEGATRON_H

#include "plan/plan.h"

/* The A100's sustained rate on the analytic table's FLOPs, the one constant
 * of the comparison not from a spec sheet or the runs' configurations:
 * 165e12 FLOP/s, 53 % of the A100's 312 TFLOP/s dense 16-bit peak. Chosen,
 * not measured: the rate the runs imply once their pipeline bubbles are
 * taken out lies between about 140 (1.7B: no pipeline, 137 TFLOP/s
 * achieved) and 190 TFLOP/s (1T: 163 at a (p - 1) / m = 12 % bubble), as
 * larger per-GPU matmuls run closer to peak and the memory-bound work of a
 * block shrinks next to them; one rate from the middle over-predicts the
 * smallest runs and under-predicts the largest, which bench_megatron shows.
 * It is set once for every run, never per row. */
#define WP_A100_SUSTAINED_FLOPS 165e12

#define WP_MEGATRON_SEQ_LEN 2048
#define WP_MEGATRON_VOCAB 51200

struct wp_megatron_run {
    const char *name;         /* "1.7B" ... "1T" */
    int layers, hidden, heads;
    int tp, pp;               /* tensor and pipeline parallel sizes */
    int micro_batch, global_batch, gpus;
    int layers_per_chunk;     /* interleaving: blocks per virtual stage (0: none) */
    /* --DDP-impl torch (1: PyTorch's DDP, summing gradients in buckets as
     * the backward makes them) or local (0: Megatron's own, one sum after
     * the backward) */
    int torch_ddp;
    int recompute;            /* --recompute-method uniform on every layer (SC21's --activations-checkpoint-method) */
    int flash;                /* the attention core as one FlashAttention kernel */
    double published_tflops;  /* achieved teraFLOP/s per GPU; 0: none published */
};

/* GPT-3 175B as Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
 * configures it (TP 8, PP 16, micro-batch 1, global batch 1536, --fp16,
 * no recomputation, the attention backend FlashAttention on H100s), on 512
 * DGX H100 nodes (topology/dgx-h100-x512-ib-ndr.cfg): no throughput is
 * published for it; make bench-plan sets the planner's choice against it. */
extern const struct wp_megatron_run wp_megatron_gpt3_h100;
#define WP_MEGATRON_GPT3_GPU "H100-SXM5-80GB"

/* The GPU of the runs: Selene's DGX A100 nodes (80 GB, gpu_model.h). */
#define WP_MEGATRON_GPU "A100-SXM4-80GB"

extern const struct wp_megatron_run wp_megatron_runs[];
extern const int wp_megatron_nruns;

/* The run by name, or NULL. */
const struct wp_megatron_run *wp_megatron_find(const char *name);

/* Megatron's FLOPs of one iteration (its equation 3, the recomputed forward
 * counted): 96 B s l h^2 (1 + s / (6 h) + V / (16 l h)); without
 * recomputation the blocks' part is three quarters of it. */
double wp_megatron_flops(const struct wp_megatron_run *r);

/* The run's model as a table (2-byte activations and parameters, its
 * micro-batch as the profile batch), its embedding and head
 * vocabulary-parallel as in Megatron-LM: timed by the per-operation model
 * of `gpu` (gpu_model.h; the attention as the run has it), or when gpu
 * is NULL at flops_per_s sustained. The state as the SC21 code kept it
 * (--fp16, local or torch DDP): float16 parameters and gradients (what the
 * data-parallel sum carries), float32 master weights, Adam's moments and
 * the gradients' float32 copy the optimizer makes, 20 bytes a parameter
 * (Megatron Core's "float16 param and grads"). */
int wp_megatron_table(struct wp_layer_table *t, const struct wp_megatron_run *r, const char *gpu, double flops_per_s,
                      struct wp_err *err);

/* The run's configuration as a plan on m (the run's table on its GPUs and
 * global batch): m is set to its point (a tensor group of TP x 1, slices of
 * its micro-batch), micro-batches that every replica splits evenly and
 * recomputation on every stage as the run has it; PP stages of layers / PP blocks each (the
 * embedding with the first, the head with the last), GPUs / (TP PP)
 * replicas, and its interleaving; gradients summed in buckets during the
 * backward with torch DDP, after it with Megatron's local DDP. */
int wp_megatron_plan(struct wp_plan_model *m, const struct wp_megatron_run *r, struct wp_plan *p, struct wp_err *err);

#endif
