/* A per-operation cost model of one GPU: the time of a matrix product from
 * its shape (tile and wave quantization over the SMs, the tensor cores'
 * peak, an efficiency measured by a matmul microbenchmark), of memory-bound
 * work from its bytes over HBM, and of a fused (flash) attention kernel
 * from its FLOPs at the share of peak its authors measured. The GPUs are
 * described from spec sheets and published microbenchmarks (gpu_model.c
 * cites each number), never from end-to-end training times: the per-block
 * costs built on it (gpu_block.h) are judged against Megatron-LM's
 * published runs, not fitted to them. */
#ifndef WP_PLAN_GPU_MODEL_H
#define WP_PLAN_GPU_MODEL_H

#include <stddef.h>

#include "kernels/precision.h"

struct wp_gpu_spec {
    const char *name;          /* "A100-SXM4-80GB" */
    const char *match[2];      /* a GPU model string containing all the words of one (case-insensitive,
                                * words separated by spaces) is this GPU: nvidia-smi's names */
    int sms;                   /* streaming multiprocessors */
    double tensor16_flops;     /* dense FP16/BF16 tensor-core peak, FLOP/s (spec sheet) */
    double tensor32_flops;     /* dense peak for 4-byte operands (TF32 where there is one, else FP32) */
    double fp32_flops;         /* FP32 peak without tensor cores (cuBLAS's default math; spec sheet) */
    double hbm_Bps;            /* memory bandwidth (spec sheet) */
    double memory_bytes;       /* HBM capacity */
    /* measured: the best mean matmul rate a shape search found (bytes 2,
     * the "maximum achievable matmul FLOPS"), at m x n x k */
    double mamf_flops;
    int mamf_m, mamf_n, mamf_k;
    /* measured: the sustained (power-limited) rate over the burst one, the
     * "maximum sustainable matmul FLOPS" over MAMF; 1 where no such
     * measurement is published (then a long run is taken at MAMF) */
    double sustained_share;
    double hbm_efficiency;     /* share of hbm_Bps a streaming kernel reaches */
    double link_efficiency;    /* share of the NVLink bandwidth NCCL's collectives reach */
    double flash_forward_efficiency, flash_backward_efficiency; /* of tensor16_flops; 0: no such kernel */
    const char *source;        /* where the numbers come from, one line */
};

/* The described GPUs, and their count. */
extern const struct wp_gpu_spec wp_gpu_specs[];
extern const int wp_ngpu_specs;

/* The description named name (exactly, case-insensitive) or whose match
 * words a GPU model string holds ("NVIDIA A100-SXM4-80GB", "NVIDIA H100
 * 80GB HBM3"); NULL when none. */
const struct wp_gpu_spec *wp_gpu_spec_find(const char *name);
/* The names, comma-separated, for messages (into buf of size bytes). */
void wp_gpu_spec_names(char *buf, size_t size);

/* The matmul peak in precision p: the 16-bit tensor cores' for bf16, the
 * TF32 tensor cores' for tf32, the FP32 units' for fp32. */
double wp_gpu_matmul_peak(const struct wp_gpu_spec *g, enum wp_precision p);

/* Seconds of `batch` independent products C (m x n) = A (m x k) B (k x n)
 * in precision p (its operand bytes, at wp_gpu_matmul_peak): the fastest of cuBLAS's large tiles (256x128, 128x256,
 * 128x128; NVIDIA's "Matrix Multiplication Background User's Guide",
 * section 2.3), each wave of tiles over the SMs taking its main loop at the
 * SMs' peak times the inner efficiency (what makes the model give the
 * measured MAMF rate at its shape), the last wave's tiles then stored over
 * HBM (earlier waves store while the next computes), one memory latency
 * before the first loads; never faster than reading A and B and writing C
 * over HBM, nor than the measured rate; at the sustained share of all
 * that; plus one kernel launch. */
double wp_gpu_gemm_s(const struct wp_gpu_spec *g, double batch, double m, double n, double k, enum wp_precision p);
/* The main loop's share of peak at which the model above meets the
 * measured MAMF rate at the MAMF shape. */
double wp_gpu_gemm_inner_efficiency(const struct wp_gpu_spec *g);

/* Seconds of a memory-bound kernel that reads and writes `bytes` in all
 * (elementwise work, normalizations, reductions): over HBM at its
 * streaming efficiency, plus one launch. */
double wp_gpu_memory_s(const struct wp_gpu_spec *g, double bytes);

/* Seconds of a fused attention kernel (FlashAttention-2 or later) over
 * `batch` heads x sequences of seq_len tokens and head_dim channels,
 * causal (half the score matrix computed): forward 4 s^2 d FLOPs per head
 * and sequence (halved), backward 2.5 times that (the recomputed scores),
 * at the kernel's measured share of peak (and the sustained share). -1
 * when the GPU has no such
 * kernel (flash_*_efficiency 0). */
double wp_gpu_flash_forward_s(const struct wp_gpu_spec *g, double batch, int seq_len, double head_dim);
double wp_gpu_flash_backward_s(const struct wp_gpu_spec *g, double batch, int seq_len, double head_dim);

/* Seconds a kernel launch and drain add (CUDA's launch latency, an
 * assumption of a few microseconds). */
#define WP_GPU_KERNEL_S 4e-6
/* Latency of the first loads of a tile's main loop (HBM's load-to-use
 * latency, under a microsecond on A100 and H100: taken as 1 us). */
#define WP_GPU_MEMORY_LATENCY_S 1e-6

#endif
