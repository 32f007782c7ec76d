/* The per-operation GPU model (plan/gpu_model.h, plan/gpu_block.h) against
 * what it is built from and what it must keep: each description meets its
 * measured matmul rate at the measured shape and never beats it; wave
 * quantization as NVIDIA's "Matrix Multiplication Background User's Guide"
 * describes it (one more tile than the SMs take costs a second wave); a
 * product too thin to reuse its operands runs at HBM speed; a block's
 * matrix products no faster than their FLOPs at the sustained rate and
 * split by the tensor group; sequence parallelism splitting the
 * memory-bound work; FlashAttention faster than the unfused core and absent
 * on Volta; GPU names as nvidia-smi writes them; and the planner timing a
 * modelled table's blocks again at its point, the GPU carried by layer
 * files (an unknown one an error at its line). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/gpu_block.h"
#include "plan/plan.h"
#include "tap.h"

static void names(void)
{
    const char *cases[][2] = {{"NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"}, {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
                              {"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"},   {"Tesla V100-SXM2-16GB", "V100-SXM2-32GB"},
                              {"NVIDIA H200", "H200-SXM-141GB"},           {"h100-sxm5-80gb", "H100-SXM5-80GB"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct wp_gpu_spec *g = wp_gpu_spec_find(cases[i][0]);
        ok(g && strcmp(g->name, cases[i][1]) == 0, "'%s' is the %s", cases[i][0], cases[i][1]);
    }
    ok(wp_gpu_spec_find("NVIDIA A100-PCIE-40GB") == NULL && wp_gpu_spec_find("") == NULL,
       "a PCIe A100 and an empty name are no described GPU");
}

static double rate(const struct wp_gpu_spec *g, double batch, double m, double n, double k)
{
    return 2 * batch * m * n * k / wp_gpu_gemm_s(g, batch, m, n, k, WP_PRECISION_BF16);
}

static void matmuls(const struct wp_gpu_spec *g)
{
    double sustained = g->mamf_flops * g->sustained_share;
    is_near(rate(g, 1, g->mamf_m, g->mamf_n, g->mamf_k), sustained, 1e-6, "%s: %.1f TFLOP/s at the measured shape %dx%dx%d",
            g->name, sustained / 1e12, g->mamf_m, g->mamf_n, g->mamf_k);
    double shapes[][3] = {{8192, 8192, 8192}, {2048, 76800, 25600}, {16384, 16384, 65536}, {32768, 6912, 2304}};
    int never_faster = 1;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        never_faster &= rate(g, 1, shapes[i][0], shapes[i][1], shapes[i][2]) <= sustained * (1 + 1e-9);
    ok(never_faster, "%s: no shape beats the measured rate", g->name);
    /* wave quantization: 2304 x 1536 is 108 tiles of 256 x 128 (or 128 x
     * 256), one wave on 108 SMs; a column more needs 117 or 126 of them
     * (two waves) or 234 of 128 x 128 (three waves of half the work) */
    if (g->sms == 108) {
        double one = wp_gpu_gemm_s(g, 1, 2304, 1536, 16384, WP_PRECISION_BF16),
               two = wp_gpu_gemm_s(g, 1, 2304, 1537, 16384, WP_PRECISION_BF16);
        ok(two / one > 1.45 && two / one < 1.55,
           "%s: 2304 x 1537 takes %.2f x the time of 2304 x 1536 (three waves of 128 x 128 tiles for one of 256 x 128)",
           g->name, two / one);
    }
    /* K = 16: 2 m n k FLOPs over 2 (m k + k n + m n) bytes, far below the
     * ridge: HBM-bound */
    double bytes = 2.0 * (8192.0 * 16 * 2 + 8192.0 * 8192);
    is_near(wp_gpu_gemm_s(g, 1, 8192, 8192, 16, WP_PRECISION_BF16),
            bytes / (g->hbm_Bps * g->hbm_efficiency) + WP_GPU_KERNEL_S, 1e-9,
            "%s: a product of depth 16 moves its bytes at HBM speed", g->name);
    is_near(wp_gpu_memory_s(g, 1e9), 1e9 / (g->hbm_Bps * g->hbm_efficiency) + WP_GPU_KERNEL_S, 1e-12,
            "%s: a memory-bound kernel's gigabyte", g->name);
}

static void block(const struct wp_gpu_spec *g)
{
    /* GPT-3 175B's block, micro-batch 1 */
    double N = 2048, h = 12288;
    struct wp_gpu_block b = {N, 2048, 12288, 96, 1, 0, 0, WP_PRECISION_BF16};
    struct wp_gpu_layer_times one, eight, sp;
    wp_gpu_block_times(g, &b, &one);
    double floor_s = 2 * N * 12 * h * h / (g->mamf_flops * g->sustained_share);
    ok(one.forward.matmul_s >= floor_s && one.forward.matmul_s < 1.3 * floor_s,
       "%s: the forward's products take %.2f ms, at least their FLOPs at the measured rate (%.2f ms)", g->name,
       one.forward.matmul_s * 1e3, floor_s * 1e3);
    ok(one.backward.matmul_s > 1.9 * one.forward.matmul_s && one.backward.matmul_s < 2.2 * one.forward.matmul_s,
       "%s: the backward's products about twice the forward's (%.2f)", g->name,
       one.backward.matmul_s / one.forward.matmul_s);
    b.tensor = 8;
    wp_gpu_block_times(g, &b, &eight);
    double ratio = (eight.forward.matmul_s + eight.backward.matmul_s) / (one.forward.matmul_s + one.backward.matmul_s);
    ok(ratio > 1.0 / 8 && ratio < 1.25 / 8, "%s: a tensor group of 8 takes %.3f of the products' time", g->name, ratio);
    b.sequence_parallel = 1;
    wp_gpu_block_times(g, &b, &sp);
    ok(sp.forward.memory_s < eight.forward.memory_s && sp.forward.matmul_s == eight.forward.matmul_s,
       "%s: sequence parallelism splits the LayerNorms and dropouts (%.2f of %.2f ms), not the products", g->name,
       sp.forward.memory_s * 1e3, eight.forward.memory_s * 1e3);
    b.sequence_parallel = 0;
    b.flash = 1;
    struct wp_gpu_layer_times flash;
    int rc = wp_gpu_block_times(g, &b, &flash);
    if (g->flash_forward_efficiency > 0)
        ok(rc == 0 && flash.core_forward_s < eight.core_forward_s,
           "%s: FlashAttention's core %.2f ms, unfused %.2f ms", g->name, flash.core_forward_s * 1e3,
           eight.core_forward_s * 1e3);
    else
        ok(rc == -1, "%s: no FlashAttention kernel", g->name);
}

/* A modelled table in the planner: a block's forward at a point is the
 * model's at that group and slice, scaled to the profile batch. */
static void planner(void)
{
    struct wp_gpt_shape shape = {4, 4096, 32, 2048, 51200, 1, WP_PRECISION_BF16};
    struct wp_layer_table t;
    struct wp_err err = {""};
    if (!ok(wp_layer_table_gpt_gpu(&t, &shape, "NVIDIA A100-SXM4-80GB", 0, &err) == 0, "a modelled table (%s)", err.msg))
        return;
    ok(strcmp(t.gpu, "A100-SXM4-80GB") == 0 && strstr(t.source, "not measured") != NULL,
       "the table names its GPU and says its times are modelled");
    struct wp_plan_hw hw = {"test", "NVIDIA A100-SXM4-80GB", 1, 8, {1e-6, 1 / 300e9}, {0, 0}, 80.0 * (1 << 30), 0};
    struct wp_plan_model m;
    if (ok(wp_plan_model_init(&m, &t, &hw, 64, &err) == 0, "a plan model (%s)", err.msg)) {
        struct wp_plan_point pt = {{4, 1}, 4, 1};
        ok(wp_plan_model_set_point(&m, &pt, &err) == 0 && wp_plan_model_times_scale(&m), "a point at TP 4, slice 4, SP");
        struct wp_gpu_block b = {4.0 * 2048, 2048, 4096, 32, 4, 1, 0, WP_PRECISION_BF16};
        struct wp_gpu_layer_times x;
        wp_gpu_block_times(wp_gpu_spec_find("A100-SXM4-80GB"), &b, &x);
        is_near(m.cum_f[2] - m.cum_f[1], (x.forward.matmul_s + x.forward.memory_s) / 4, 1e-12,
                "the block's forward is the model's at TP 4 and 4 sequences, per sequence");
        is_near(m.cum_sel_s[2] - m.cum_sel_s[1], x.core_forward_s / 4, 1e-12,
                "selective recomputation repeats the model's attention core");
        ok(m.cum_opt[m.layers->nlayers] > 0, "the optimizer step is timed");
        wp_plan_model_destroy(&m);
    }
    char path[] = "/tmp/wp-gpu-table-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    struct wp_layer_table back;
    if (ok(fd >= 0 && wp_layer_table_write(path, &t, &err) == 0 && wp_layer_table_read_config(&back, path, &err) == 0,
           "written and read back (%s)", err.msg)) {
        ok(strcmp(back.gpu, t.gpu) == 0 && back.flash_attention == 0, "the GPU and the attention kind kept");
        wp_layer_table_destroy(&back);
    }
    /* an unknown GPU: the error names the file and the line */
    FILE *f = fopen(path, "a");
    if (f) {
        fclose(f);
        char cmd[256];
        snprintf(cmd, sizeof cmd, "sed -i 's/^gpu = .*/gpu = \"B9000\";/' %s", path);
        if (system(cmd) == 0) {
            int rc = wp_layer_table_read_config(&back, path, &err);
            ok(rc == -1 && strstr(err.msg, path) && strstr(err.msg, "B9000"), "an unknown GPU: %s", err.msg);
            if (rc == 0)
                wp_layer_table_destroy(&back);
        }
    }
    unlink(path);
    wp_layer_table_destroy(&t);
    ok(wp_layer_table_gpt_gpu(&t, &shape, "V100-SXM2-32GB", 1, &err) == -1 && strstr(err.msg, "FlashAttention"),
       "flash attention asked of a V100: %s", err.msg);
}

/* The precisions: a large product at each matmul peak, a table timed in
 * fp32 against bf16, and the table's precision kept through its file. */
static void precisions(void)
{
    for (int i = 0; i < wp_ngpu_specs; i++) {
        const struct wp_gpu_spec *g = &wp_gpu_specs[i];
        double b = wp_gpu_gemm_s(g, 1, 8192, 8192, 8192, WP_PRECISION_BF16),
               t = wp_gpu_gemm_s(g, 1, 8192, 8192, 8192, WP_PRECISION_TF32),
               f = wp_gpu_gemm_s(g, 1, 8192, 8192, 8192, WP_PRECISION_FP32);
        is_near(f / b, g->tensor16_flops / g->fp32_flops, 0.05,
                "%s: an 8192^3 product in fp32 takes %.1f x its bf16 time (the peaks' ratio %.1f)", g->name, f / b,
                g->tensor16_flops / g->fp32_flops);
        is_near(t / b, g->tensor16_flops / g->tensor32_flops, 0.05, "%s: in tf32 %.2f x (the peaks' ratio %.2f)",
                g->name, t / b, g->tensor16_flops / g->tensor32_flops);
    }
    struct wp_gpt_shape half = {4, 2048, 16, 2048, 51200, 1, WP_PRECISION_BF16}, full = half;
    full.precision = WP_PRECISION_FP32;
    struct wp_layer_table tb, tf, back;
    struct wp_err err = {""};
    if (!ok(wp_layer_table_gpt_gpu(&tb, &half, "A100-SXM4-80GB", 0, &err) == 0 &&
                wp_layer_table_gpt_gpu(&tf, &full, "A100-SXM4-80GB", 0, &err) == 0,
            "tables timed in bf16 and fp32 (%s)", err.msg))
        return;
    const struct wp_layer *lb = &tb.layers[1], *lf = &tf.layers[1];
    ok(lf->forward_s > 8 * lb->forward_s, "an fp32 block's forward %.1f ms, bf16's %.1f ms (FP32 units: 16x slower)",
       lf->forward_s * 1e3, lb->forward_s * 1e3);
    ok(lf->activation_bytes == 2 * lb->activation_bytes && lf->parameter_bytes == 2 * lb->parameter_bytes &&
           lb->block.element_bytes == 2 && lf->block.element_bytes == 4,
       "fp32 keeps twice bf16's activation and weight bytes");
    ok(tb.precision == WP_PRECISION_BF16 && tf.precision == WP_PRECISION_FP32 && strstr(tf.source, "fp32") != NULL,
       "the tables name their precision: %s", tf.source);
    char path[] = "/tmp/wp-precision-table-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
    if (ok(fd >= 0 && wp_layer_table_write(path, &tf, &err) == 0 && wp_layer_table_read_config(&back, path, &err) == 0,
           "an fp32 table written and read back (%s)", err.msg)) {
        ok(back.precision == WP_PRECISION_FP32, "its precision kept");
        wp_layer_table_destroy(&back);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sed -i 's/^precision = .*/precision = \"bf16\";/' %s", path);
    if (fd >= 0 && system(cmd) == 0) {
        int rc = wp_layer_table_read_config(&back, path, &err);
        ok(rc == -1 && strstr(err.msg, path) && strstr(err.msg, "block_element_bytes is 4"),
           "bf16 named over 4-byte blocks: %s", err.msg);
        if (rc == 0)
            wp_layer_table_destroy(&back);
    }
    snprintf(cmd, sizeof cmd, "sed -i -e '/^gpu = /d' -e '/^attention = /d' %s", path);
    if (fd >= 0 && system(cmd) == 0) {
        int rc = wp_layer_table_read_config(&back, path, &err);
        ok(rc == -1 && strstr(err.msg, "give gpu too"), "a precision without a GPU: %s", err.msg);
        if (rc == 0)
            wp_layer_table_destroy(&back);
    }
    unlink(path);
    ok(wp_layer_table_gpt_gpu(&back, &full, "A100-SXM4-80GB", 1, &err) == -1 && strstr(err.msg, "16-bit"),
       "FlashAttention in fp32: %s", err.msg);
    wp_layer_table_destroy(&tb);
    wp_layer_table_destroy(&tf);
}

int main(void)
{
    names();
    for (int i = 0; i < wp_ngpu_specs; i++) {
        matmuls(&wp_gpu_specs[i]);
        block(&wp_gpu_specs[i]);
    }
    planner();
    precisions();
    return tap_done();
}
