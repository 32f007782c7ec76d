/* The GPU descriptions and the per-operation times (see gpu_model.h).
 *
 * Where each number comes from:
 *  - SMs, peaks, HBM bandwidth and capacity: NVIDIA's spec sheets and
 *    architecture whitepapers (V100: 80 SMs, 125 TFLOP/s FP16 tensor,
 *    15.7 FP32 (no TF32), 900 GB/s; A100 SXM4: 108 SMs, 312 FP16/BF16, 156
 *    TF32, 19.5 FP32, 1,555 GB/s at 40 GB and 2,039 GB/s at 80 GB; H100
 *    SXM5: 132 SMs, 989 dense BF16, 495 TF32, 67 FP32, 3.35 TB/s; H200 SXM:
 *    the H100's die, 4.8 TB/s, 141 GB).
 *  - MAMF, the measured matmul rate: S. Bekman, "Machine Learning
 *    Engineering", compute/accelerator, "Maximum Achievable Matmul FLOPS
 *    comparison table" (mamf-finder.py, BF16, the mean of 100 runs after
 *    50 warm-ups, caches reset): A100 SXM 271.2 TFLOP/s at 1024x10240x5120
 *    (PyTorch 2.6.0+cu126), H100 SXM 794.5 at 2048x2048x13312 (2.7.0+cu126).
 *    The H200 shares the H100's die and 700 W: the H100's measurement is
 *    taken (the table's GH200, a 900 W part, reaches 828.6). V100: Markidis
 *    et al., "NVIDIA Tensor Core Programmability, Performance & Precision"
 *    (IPDPSW 2018) measured cuBLAS at 83 TFLOP/s on a V100 PCIe (112 peak);
 *    its share, 74 %, is taken for the SXM2 at an 8192^3 shape.
 *  - Sustained share: MAMF is a burst at the boost clock; a training run
 *    computes for hours at the power limit. The same benchmark's
 *    "maximum sustainable matmul FLOPS" on eight H200s computing at once
 *    is 698.6 TFLOP/s against a MAMF of 823.9 (0.848), taken for the H100
 *    (same die, same 700 W). No such measurement of the A100 or V100 is
 *    published: they are taken at MAMF (1), which overstates a long run by
 *    as much as the clock falls at 400 W and 300 W; measured with 2025's
 *    cuBLAS (PyTorch 2.6), it also overstates older software.
 *  - HBM efficiency: V100 750 of 900 GB/s measured by Jia et al.,
 *    "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking"
 *    (2018); HBM2e and HBM3 parts 0.90, the share streaming copies reach
 *    (Calculon's A100 description, Isaev et al. SC23, uses 0.90 for
 *    transfers of 100 MB and more).
 *  - NVLink efficiency 0.80: NCCL's topology model rates an A100 NVLink at
 *    20 of its 25 GB/s, "the app-level bandwidth is 80 % of the peak
 *    bandwidth" (S. Jeaugey, NVIDIA/nccl issue 1054).
 *  - Flash attention: FlashAttention-2 (Dao, 2023) reaches up to 73 % of
 *    the A100's peak forward and 63 % backward; FlashAttention-3 (Shah et
 *    al., 2024) 740 TFLOP/s forward on H100 (75 %), its backward taken as
 *    half of peak (an assumption: slower than its forward, as in every
 *    FlashAttention). Volta has no FlashAttention-2 kernel. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/gpu_model.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
/* MSMF over MAMF on eight H200s all computing at once (mamf-finder-all-gpus,
 * BF16: 698.6 over 823.9 TFLOP/s) */
#define H200_SUSTAINED (698.6 / 823.9)

const struct wp_gpu_spec wp_gpu_specs[] = {
    {"V100-SXM2-32GB", {"V100 SXM2", NULL}, 80, 125e12, 15.7e12, 15.7e12, 900e9, 32 * GIB, 0.74 * 125e12, 8192,
     8192, 8192, 1, 750.0 / 900.0, 0.80, 0, 0,
     "V100 SXM2 spec sheet; cuBLAS share measured by Markidis et al. 2018 on a V100 PCIe"},
    {"A100-SXM4-40GB", {"A100 SXM4 40GB", "A100 SXM 40GB"}, 108, 312e12, 156e12, 19.5e12, 1555e9, 40 * GIB,
     271.2e12, 1024, 10240, 5120, 1, 0.90, 0.80, 0.73, 0.63, "A100 spec sheet; MAMF measured on A100 SXM (Bekman)"},
    {"A100-SXM4-80GB", {"A100 SXM4 80GB", "A100 SXM 80GB"}, 108, 312e12, 156e12, 19.5e12, 2039e9, 80 * GIB,
     271.2e12, 1024, 10240, 5120, 1, 0.90, 0.80, 0.73, 0.63,
     "A100 80GB spec sheet; MAMF measured on A100 SXM (Bekman)"},
    {"H100-SXM5-80GB", {"H100 HBM3", "H100 SXM"}, 132, 989e12, 494.5e12, 67e12, 3.35e12, 80 * GIB, 794.5e12, 2048,
     2048, 13312, H200_SUSTAINED, 0.90, 0.80, 0.75, 0.50, "H100 SXM5 spec sheet; MAMF measured on H100 SXM (Bekman)"},
    {"H200-SXM-141GB", {"H200", NULL}, 132, 989e12, 494.5e12, 67e12, 4.8e12, 141 * GIB, 794.5e12, 2048, 2048, 13312,
     H200_SUSTAINED, 0.90, 0.80, 0.75, 0.50, "H200 spec sheet; the H100 SXM's MAMF (same die and power)"},
};
const int wp_ngpu_specs = sizeof wp_gpu_specs / sizeof wp_gpu_specs[0];

/* 1 when every space-separated word of `words` is in text (both
 * case-folded, '-' and '_' in text read as spaces). */
static int holds_words(const char *text, const char *words)
{
    char hay[256], word[64];
    size_t n = 0;
    for (; text[n] && n + 1 < sizeof hay; n++)
        hay[n] = text[n] == '-' || text[n] == '_' ? ' ' : (char)toupper((unsigned char)text[n]);
    hay[n] = '\0';
    for (const char *w = words; *w;) {
        while (*w == ' ')
            w++;
        size_t len = 0;
        while (w[len] && w[len] != ' ' && len + 1 < sizeof word) {
            word[len] = (char)toupper((unsigned char)w[len]);
            len++;
        }
        word[len] = '\0';
        if (len && !strstr(hay, word))
            return 0;
        w += len;
    }
    return 1;
}

const struct wp_gpu_spec *wp_gpu_spec_find(const char *name)
{
    if (!name || !*name)
        return NULL;
    for (int i = 0; i < wp_ngpu_specs; i++)
        if (strcasecmp(wp_gpu_specs[i].name, name) == 0)
            return &wp_gpu_specs[i];
    for (int i = 0; i < wp_ngpu_specs; i++)
        for (int j = 0; j < 2; j++)
            if (wp_gpu_specs[i].match[j] && holds_words(name, wp_gpu_specs[i].match[j]))
                return &wp_gpu_specs[i];
    return NULL;
}

void wp_gpu_spec_names(char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < wp_ngpu_specs && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s", i ? ", " : "", wp_gpu_specs[i].name);
}

static const int tiles[][2] = {{256, 128}, {128, 256}, {128, 128}};

/* The tiled time of the products with the main loop at `inner` of the
 * SMs' peak (no launch, no HBM bound). */
double wp_gpu_matmul_peak(const struct wp_gpu_spec *g, enum wp_precision p)
{
    return p == WP_PRECISION_BF16 ? g->tensor16_flops : p == WP_PRECISION_TF32 ? g->tensor32_flops : g->fp32_flops;
}

static double tiled_s(const struct wp_gpu_spec *g, double batch, double m, double n, double k, enum wp_precision p,
                      double inner)
{
    double peak = wp_gpu_matmul_peak(g, p), element_bytes = wp_precision_bytes(p).activation;
    double sm_flops = peak / g->sms * inner, best = INFINITY;
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        double tm = tiles[i][0], tn = tiles[i][1];
        double count = batch * ceil(m / tm) * ceil(n / tn), waves = ceil(count / g->sms);
        /* a wave's stores overlap the next one's main loop: the last
         * wave's SMs store their tiles at the end, after the first loads */
        double busy = count - (waves - 1) * g->sms;
        double total_s = waves * 2.0 * tm * tn * k / sm_flops +
                         busy * tm * tn * element_bytes / (g->hbm_Bps * g->hbm_efficiency) + WP_GPU_MEMORY_LATENCY_S;
        if (total_s < best)
            best = total_s;
    }
    return best;
}

double wp_gpu_gemm_inner_efficiency(const struct wp_gpu_spec *g)
{
    double m = g->mamf_m, n = g->mamf_n, k = g->mamf_k;
    double measured_s = 2.0 * m * n * k / g->mamf_flops - WP_GPU_KERNEL_S;
    /* the tiled time falls as the main loop's share rises: bisect */
    double lo = 0.01, hi = 1.0;
    if (tiled_s(g, 1, m, n, k, WP_PRECISION_BF16, hi) >= measured_s)
        return hi;
    for (int i = 0; i < 40; i++) {
        double mid = 0.5 * (lo + hi);
        if (tiled_s(g, 1, m, n, k, WP_PRECISION_BF16, mid) > measured_s)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double wp_gpu_gemm_s(const struct wp_gpu_spec *g, double batch, double m, double n, double k, enum wp_precision p)
{
    if (batch <= 0 || m <= 0 || n <= 0 || k <= 0)
        return 0;
    double element_bytes = wp_precision_bytes(p).activation;
    double compute_s = tiled_s(g, batch, m, n, k, p, wp_gpu_gemm_inner_efficiency(g)) / g->sustained_share;
    double memory_s = batch * (m * k + k * n + m * n) * element_bytes / (g->hbm_Bps * g->hbm_efficiency);
    /* the measured maximum is the ceiling at shapes its search did not try */
    double mamf = g->mamf_flops * wp_gpu_matmul_peak(g, p) / g->tensor16_flops;
    double ceiling_s = 2.0 * batch * m * n * k / (mamf * g->sustained_share) - WP_GPU_KERNEL_S;
    double s = compute_s > memory_s ? compute_s : memory_s;
    return (s > ceiling_s ? s : ceiling_s) + WP_GPU_KERNEL_S;
}

double wp_gpu_memory_s(const struct wp_gpu_spec *g, double bytes)
{
    if (bytes <= 0)
        return 0;
    return bytes / (g->hbm_Bps * g->hbm_efficiency) + WP_GPU_KERNEL_S;
}

static double flash_flops(double batch, int seq_len, double head_dim)
{
    return 4.0 * batch * (double)seq_len * seq_len * head_dim / 2; /* causal: half the scores */
}

double wp_gpu_flash_forward_s(const struct wp_gpu_spec *g, double batch, int seq_len, double head_dim)
{
    if (g->flash_forward_efficiency <= 0)
        return -1;
    return flash_flops(batch, seq_len, head_dim) / (g->tensor16_flops * g->flash_forward_efficiency * g->sustained_share) +
           WP_GPU_KERNEL_S;
}

double wp_gpu_flash_backward_s(const struct wp_gpu_spec *g, double batch, int seq_len, double head_dim)
{
    if (g->flash_backward_efficiency <= 0)
        return -1;
    return 2.5 * flash_flops(batch, seq_len, head_dim) /
               (g->tensor16_flops * g->flash_backward_efficiency * g->sustained_share) +
           WP_GPU_KERNEL_S;
}
