/* Layer tables, the planner's input: per layer of a model (a chain), the
 * forward and backward time of one micro-batch of the profile batch size,
 * the bytes of the activation at the layer's output boundary and the bytes
 * of its parameters.
 *
 * Sources:
 *  - the profile text format of DAPPLE and PipeDream (see
 *    shared/layer-profiles/README.md): node lines then edge lines; graphs
 *    that are not chains are contracted into one (wp_layer_contract below);
 *  - wavepipe's own libconfig format ("wavepipe-layers", version 1);
 *  - analytic tables for GPT-2/GPT-3-style models (layers_analytic.c). */
#ifndef WP_PLAN_LAYERS_H
#define WP_PLAN_LAYERS_H

#include "kernels/precision.h"
#include "util/error.h"

#define WP_LAYER_NAME_MAX 64

/* A layer that is one GPT transformer block (plan/tp_block.h), which a
 * tensor-parallel group may split; channels 0 for every other layer (the
 * planner gives those tensor groups of one). */
struct wp_layer_block {
    int channels;            /* C */
    int heads;               /* attention heads */
    int seq_len;             /* tokens per sample (T) */
    double element_bytes;    /* bytes per activation element */
};

struct wp_layer {
    char name[WP_LAYER_NAME_MAX];
    double forward_s;        /* seconds, one micro-batch of profile_batch */
    double backward_s;       /* seconds */
    double activation_bytes; /* output of the layer (what a stage boundary after it sends) */
    double parameter_bytes;
    double gradient_bytes;   /* the gradient buffer, what the data-parallel sum carries; 0: as the
                              * parameters (16-bit mixed precision keeps it in float32: Megatron-LM) */
    double optimizer_bytes;  /* optimizer state: AdamW's m and v in float32 (8 bytes per parameter), and
                              * float32 master weights where the parameters are 16-bit */
    double weights_s;        /* the weight-gradient part (W) of backward_s, when the table has it */
    double optimizer_s;      /* seconds of the optimizer step over the layer's parameters (0: not known) */
    struct wp_layer_block block; /* a transformer block's shape, or channels 0 */
    /* 1: an embedding or LM head that a tensor group splits over the
     * vocabulary (Megatron-LM's vocabulary-parallel layers; for predicting
     * Megatron's runs: wavepipe's runtime keeps them whole on every GPU of
     * the group, tp_block.h) */
    int vocab_parallel;
    double forward_flops;    /* FLOPs of forward_s (backward: twice); 0: not known */
};

struct wp_layer_table {
    char name[128];          /* model name (file base name for profiles) */
    int profile_batch;       /* micro-batch size the times are for */
    int profile_batch_assumed; /* 1 when not given by the source (default or caller's) */
    int nlayers;
    struct wp_layer *layers;
    int nnodes;              /* profile graphs: nodes before contraction (else nlayers) */
    int weights_known;       /* 1 when every layer's weights_s was given (measured B/W split) */
    char source[512];        /* where it came from, and any assumptions made */
    /* Modelled times: the GPU (gpu_model.h) whose per-operation model timed
     * the table, "" for times measured or made from one FLOP rate; the
     * planner times its transformer blocks again at each tensor group,
     * micro-batch slice and sequence parallelism (gpu_block.h) */
    char gpu[48];
    int flash_attention;     /* the blocks' attention core as one FlashAttention kernel */
    enum wp_precision precision; /* with gpu: the precision the blocks were timed in */
};

/* How a profile graph that is not a chain becomes one. */
enum wp_layer_contract {
    /* Default. Nodes are put in a topological order (Kahn's algorithm,
     * ready nodes taken in the order of their node lines). A node v is a
     * *cut* when no edge (a, b) has pos(a) < pos(v) < pos(b): the boundary
     * right after v is crossed by v's outputs only. For a graph with one
     * input and one output that is exactly "every path from input to
     * output passes through v" (v dominates the output and post-dominates
     * the input), and then the cut set does not depend on the order
     * chosen. Extra inputs (GNMT's target tokens) and dead-end outputs
     * (unused LSTM states) are not required to pass through v: they are
     * placed by the order, so with several of them the cuts can depend on
     * the line order (a virtual input/output joined to all of them would
     * leave GNMT and Inception with 1 and 27 layers instead).
     * Each maximal run of nodes after one cut up to and including the next
     * cut becomes one layer (the nodes before the first cut form the first
     * layer together with it; the last node in the order is always a cut):
     * forward time, backward time and parameter bytes are the sums
     * over the run; the activation is the output of the run's last node
     * (the cut). On a
     * chain every node is a cut, so a chain is unchanged. A file without
     * edge lines is taken as the chain of its node lines. */
    WP_CONTRACT_CUTS,
    /* Every node stays a layer, in the topological order above; a layer's
     * activation is the sum of the outputs of all nodes at or before it
     * with an edge to a node after it (the bytes a stage boundary there
     * must send, PipeDream's antichain cost). Useful where side inputs
     * (an attention mask feeding every block) leave no cuts; note that it
     * counts a tensor again when the profile already folds a skip input
     * into a node's output (AmoebaNet's [a; b]). */
    WP_CONTRACT_FRONTIER,
    /* The node lines, in file order, are the chain: every node a layer, its
     * activation its own output, edges only checked to point forward. DAPPLE's
     * profiles are meant this way: their skip inputs (BERT's mask feeding
     * every block, AmoebaNet's and XLNet's previous-but-one outputs, already
     * folded into [a; b] activations) leave almost no cuts, and contracting at
     * cuts turns their 24 to 53 nodes into 2 to 4 layers. */
    WP_CONTRACT_LINES,
    /* LINES when every edge points forward in line order (DAPPLE's BERT,
     * XLNet, AmoebaNet, VGG-19), else CUTS (files whose node lines are not
     * in order: PipeDream's, DAPPLE's GNMT and VGG-16). */
    WP_CONTRACT_AUTO
};

/* "auto", "lines", "cuts" or "frontier"; 0, or -1 for another name. */
int wp_layer_contract_from_name(const char *name, enum wp_layer_contract *contract);

void wp_layer_table_init(struct wp_layer_table *t);
void wp_layer_table_destroy(struct wp_layer_table *t);
/* Appends a layer (copying it); 0 or -1 with err on allocation failure. */
int wp_layer_table_append(struct wp_layer_table *t, const struct wp_layer *layer,
                          struct wp_err *err);
/* Sums over all layers. */
double wp_layer_table_forward_s(const struct wp_layer_table *t);
double wp_layer_table_backward_s(const struct wp_layer_table *t);
double wp_layer_table_parameter_bytes(const struct wp_layer_table *t);
double wp_layer_table_optimizer_bytes(const struct wp_layer_table *t);
/* AdamW's state for parameters stored as float32 (m and v, the same size
 * as the parameters twice): what profiles, which give parameter bytes
 * only, are taken to need. */
double wp_adam_state_bytes_fp32(double parameter_bytes);
/* A layer's gradient bytes (its gradient_bytes, or its parameter bytes). */
double wp_layer_gradient_bytes(const struct wp_layer *l);
/* Everything a layer's weights keep on a device: parameters, gradients
 * and optimizer state. */
double wp_layer_state_bytes(const struct wp_layer *l);

/* Profile text format. The profile batch is read from "pbs-N" in the file
 * name; when absent it is default_batch (> 0) or else 1, and
 * profile_batch_assumed is set and the source says so. Errors read
 * "path:line: message" (malformed line, negative number, duplicate node,
 * edge naming an unknown node, cycle). */
int wp_layer_table_read_profile(struct wp_layer_table *t, const char *path, int default_batch,
                                enum wp_layer_contract contract, struct wp_err *err);
/* The same for text in memory; name stands for the file name. */
int wp_layer_table_parse_profile(struct wp_layer_table *t, const char *text, const char *name,
                                 int default_batch, enum wp_layer_contract contract,
                                 struct wp_err *err);

/* wavepipe's own format (libconfig, schema-checked):
 *   format = "wavepipe-layers"; version = 1; name = "..."; profile_batch = N;
 *   source = "...";  (optional)
 *   layers = ( { name = "..."; forward_s = ...; backward_s = ...;
 *                activation_bytes = ...; parameter_bytes = ...;
 *                optimizer_bytes = ...; (optional: AdamW float32 by default)
 *                weights_s = ...;       (optional: W's part of backward_s)
 *                optimizer_s = ...;     (optional: seconds of the optimizer step)
 *                forward_flops = ...;   (optional: FLOPs of forward_s)
 *                block_channels = C; block_heads = NH; block_seq_len = T;
 *                block_element_bytes = ...;  (optional, all four: the layer is
 *                                             a transformer block, tp_block.h)
 *                vocab_parallel = true; },    (optional: split over the vocabulary)
 *              ... );
 *   gpu = "A100-SXM4-80GB";  (optional: times modelled for this GPU, gpu_model.h)
 *   attention = "unfused";   (optional, with gpu: "unfused" or "flash")
 *   precision = "bf16";      (optional, with gpu: "fp32", "tf32" or "bf16";
 *                             by default bf16 where the blocks' elements
 *                             are 2 bytes, else tf32)
 * Written atomically (temporary file and rename). */
int wp_layer_table_write(const char *path, const struct wp_layer_table *t, struct wp_err *err);
int wp_layer_table_read_config(struct wp_layer_table *t, const char *path, struct wp_err *err);

/* Either format, told apart by content: a file whose first setting is
 * `format = "wavepipe-layers"` (after comments) is libconfig, anything
 * else is read as a profile contracted by contract. */
int wp_layer_table_read(struct wp_layer_table *t, const char *path, int default_batch,
                        enum wp_layer_contract contract, struct wp_err *err);

/* Analytic tables for GPT-2/GPT-3-style decoder-only transformers
 * (layers_analytic.c). */
struct wp_gpt_shape {
    int layers;            /* L transformer blocks */
    int channels;          /* C */
    int heads;             /* must divide C */
    int seq_len;           /* T */
    int vocab;             /* V */
    int micro_batch;       /* b */
    enum wp_precision precision; /* the training's: its bytes per element (precision.h), and on a GPU
                                  * its matmul rate (fp32 by default: 4-byte activations and parameters) */
};

/* Forward FLOPs of one transformer block for b sequences of T tokens:
 * 2*b*T*12*C^2 (QKV, attention projection, two MLP matmuls) plus
 * 2*2*b*T^2*C (attention scores and weighted values). Backward is twice. */
double wp_gpt_block_forward_flops(const struct wp_gpt_shape *m);
/* Parameters of one block: 12*C^2 + 13*C (weights and biases of the four
 * matmuls, two LayerNorms). */
double wp_gpt_block_params(const struct wp_gpt_shape *m);
/* All parameters, the LM head tied to the token embedding (counted once):
 * V*C + T*C + L*(12*C^2 + 13*C) + 2*C (final LayerNorm). */
double wp_gpt_total_params(const struct wp_gpt_shape *m);

/* Layers "embedding" (wte + wpe; lookups taken as zero FLOPs), "block0" ..
 * "block{L-1}", "head" (final LayerNorm and the tied LM head: forward
 * 2*b*T*C*V FLOPs, backward twice; its parameters are the LayerNorm's
 * only). Times are FLOPs / flops_per_s (forward_flops given); activations
 * b*T*C times the precision's activation bytes, the head's 0 (the loss
 * ends the chain); parameters, gradients and optimizer state in the
 * precision's bytes (bf16: 2-byte weights, float32 gradients, master
 * weights and AdamW moments, as Megatron-LM keeps them). The blocks carry
 * their shape (struct wp_layer_block). */
int wp_layer_table_gpt(struct wp_layer_table *t, const struct wp_gpt_shape *m,
                       double flops_per_s, struct wp_err *err);
/* The same layers timed by the per-operation model of GPU `gpu` (a name
 * of gpu_model.h, or a GPU model string it recognises) as Megatron-LM
 * runs them on one GPU (gpu_block.h), the attention core unfused or one
 * FlashAttention kernel (flash), the matmuls at the shape's precision's
 * rate; each layer's optimizer_s its Adam step. The table records the GPU
 * and the precision so that the planner times the blocks again at each
 * tensor group and slice. */
int wp_layer_table_gpt_gpu(struct wp_layer_table *t, const struct wp_gpt_shape *m, const char *gpu, int flash,
                           struct wp_err *err);

#endif
