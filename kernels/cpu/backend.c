/* The CPU backend's memory operations (host memory: calloc, memcpy, memset)
 * and the table wp_kernels_cpu that points at every wp_cpu_<op>. */
#include "kernels/cpu/cpu_kernels.h"

#include <stdlib.h>
#include <string.h>

void *wp_cpu_alloc(size_t bytes)
{
    return calloc(1, bytes ? bytes : 1);
}

void wp_cpu_release(void *p)
{
    free(p);
}

void wp_cpu_to_device(void *dst, const void *host_src, size_t bytes)
{
    if (bytes)
        memcpy(dst, host_src, bytes);
}

void wp_cpu_to_host(void *host_dst, const void *src, size_t bytes)
{
    if (bytes)
        memcpy(host_dst, src, bytes);
}

void wp_cpu_zero(void *p, size_t bytes)
{
    if (bytes)
        memset(p, 0, bytes);
}

void wp_cpu_synchronize(void)
{
}

const struct wp_kernel_ops wp_kernels_cpu = {
    .name = "cpu",
    .alloc = wp_cpu_alloc,
    .release = wp_cpu_release,
    .to_device = wp_cpu_to_device,
    .to_host = wp_cpu_to_host,
    .zero = wp_cpu_zero,
    .synchronize = wp_cpu_synchronize,
    .set_precision = wp_cpu_set_precision,
    .get_precision = wp_cpu_precision,
    .round_copy = wp_cpu_round_copy,
    .to_bf16 = wp_cpu_to_bf16,
    .from_bf16 = wp_cpu_from_bf16,
    .encoder_forward = wp_cpu_encoder_forward,
    .encoder_backward = wp_cpu_encoder_backward,
    .layernorm_forward = wp_cpu_layernorm_forward,
    .layernorm_backward = wp_cpu_layernorm_backward,
    .matmul_forward = wp_cpu_matmul_forward,
    .matmul_backward = wp_cpu_matmul_backward,
    .attention_forward = wp_cpu_attention_forward,
    .attention_backward = wp_cpu_attention_backward,
    .gelu_forward = wp_cpu_gelu_forward,
    .gelu_backward = wp_cpu_gelu_backward,
    .residual_forward = wp_cpu_residual_forward,
    .residual_backward = wp_cpu_residual_backward,
    .crossentropy_forward = wp_cpu_crossentropy_forward,
    .crossentropy_backward = wp_cpu_crossentropy_backward,
    .adamw_update = wp_cpu_adamw_update,
    .accumulate = wp_cpu_accumulate,
    .scale = wp_cpu_scale,
    .sum_squares = wp_cpu_sum_squares,
    .copy_block = wp_cpu_copy_block,
};
