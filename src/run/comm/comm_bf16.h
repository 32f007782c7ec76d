/* Messages on the wire in bfloat16: a comm table over another (MPI, NCCL or
 * lanes) that sends each point-to-point message of floats as their
 * bfloat16 bits, half the bytes, and turns a received one back into floats
 * when it completes. A bf16 run's activations and their gradients are
 * bfloat16 values held in floats (kernels/kernels.h), so nothing is lost
 * (Megatron-LM's bf16 pipeline sends bf16 tensors). Sums and gathers
 * (gradients, the tied embedding, tensor groups) pass through in float32,
 * as Megatron accumulates and reduces bf16 runs' gradients in fp32. The
 * interpreter knows nothing of it: train setup puts it in front of the
 * interpreter's table in bf16 and tells the interpreter the messages'
 * bytes are halved (wp_interp_set_message_scale). */
#ifndef WP_RUN_COMM_BF16_H
#define WP_RUN_COMM_BF16_H

#include "kernels/kernels.h"
#include "run/comm/comm.h"

extern const struct wp_comm_ops wp_comm_bf16;

/* A wrapper over (inner_ops, inner), packing and unpacking with k's
 * to_bf16 and from_bf16 in k's memory; freed by wp_comm_bf16.destroy (the
 * inner comm stays the caller's). */
int wp_comm_bf16_make(const struct wp_comm_ops *inner_ops, struct wp_comm *inner, const struct wp_kernel_ops *k,
                      struct wp_comm **out, struct wp_err *err);

#endif
