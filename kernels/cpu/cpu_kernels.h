/* The CPU backend of the kernel table: prototypes of the wp_cpu_<op> functions
 * behind wp_kernels_cpu (same signatures and semantics as kernels/kernels.h). */
#ifndef WP_KERNELS_CPU_CPU_KERNELS_H
#define WP_KERNELS_CPU_CPU_KERNELS_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "kernels/precision.h"

/* Reductions across rows (dbias, dweight, dwte, ...) run in parallel over
 * blocks of this many columns, every block summing the rows in order: the
 * result does not depend on the number of threads. */
#define WP_CPU_COL_BLOCK 64

/* Loops go parallel (OpenMP) only from this much work on (elements or
 * multiply-adds): a tiny kernel costs less than waking the threads. Results
 * are the same either way. */
#define WP_CPU_PAR_MIN 16384

/* fp_env.c: FTZ and DAZ on the calling thread, OpenMP's and OpenBLAS's
 * threads; 1 when every OpenMP thread flushes, 0 where the CPU cannot */
int wp_cpu_flush_denormals(void);

/* blas_library.c: the loaded CBLAS's thread count (OpenBLAS's or BLIS's
 * call, whichever is linked); whether a call made inside an OpenMP parallel
 * region computes on its calling thread alone (1: an OpenMP or a sequential
 * build, so calls can be spread over OpenMP's threads; 0: a pthreads build,
 * whose pool the calls of several threads would queue for, or a BLAS not
 * known); and a line naming it: implementation, threading, its file */
void wp_cpu_blas_set_threads(int threads);
int wp_cpu_blas_single_in_parallel(void);
void wp_cpu_blas_describe(char *buf, size_t len);

/* precision.c: the mode (set_precision), what every kernel calls on each
 * activation it writes (rounds it to bfloat16 in bf16, nothing otherwise),
 * the rounded copy (kernels.h round_copy), and every matrix product of the
 * backend (CBLAS sgemm, row-major; TF32 operands in tf32) */
void wp_cpu_set_precision(enum wp_precision p);
enum wp_precision wp_cpu_precision(void);
void wp_cpu_store(float *x, size_t n);
void wp_cpu_round_copy(float *dst, const float *src, size_t n);
void wp_cpu_to_bf16(uint16_t *dst, const float *src, size_t n);
void wp_cpu_from_bf16(float *dst, const uint16_t *src, size_t n);
void wp_cpu_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc);

/* backend.c: host memory */
void *wp_cpu_alloc(size_t bytes);
void wp_cpu_release(void *p);
void wp_cpu_to_device(void *dst, const void *host_src, size_t bytes);
void wp_cpu_to_host(void *host_dst, const void *src, size_t bytes);
void wp_cpu_zero(void *p, size_t bytes);
void wp_cpu_synchronize(void);

/* encoder.c */
void wp_cpu_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C);
void wp_cpu_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C);

/* layernorm.c */
void wp_cpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *weight,
                              const float *bias, int N, int C);
void wp_cpu_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                               const float *weight, const float *mean, const float *rstd, int N, int C);

/* matmul.c */
void wp_cpu_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int N, int C,
                           int OC, enum wp_weight_layout layout);
void wp_cpu_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
                            const float *weight, int N, int C, int OC, enum wp_weight_layout layout);

/* attention.c */
void wp_cpu_attention_forward(float *out, float *lse, const float *inp, int B, int T, int C, int NH);
void wp_cpu_attention_backward(float *dinp, const float *dout, const float *inp, const float *lse, int B, int T,
                               int C, int NH);

/* gelu.c */
void wp_cpu_gelu_forward(float *out, const float *inp, size_t n);
void wp_cpu_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);

/* residual.c */
void wp_cpu_residual_forward(float *out, const float *a, const float *b, size_t n);
void wp_cpu_residual_backward(float *da, float *db, const float *dout, size_t n);

/* crossentropy.c */
void wp_cpu_crossentropy_forward(float *losses, float *probs, const float *logits, const int *targets, int N,
                                 int V);
void wp_cpu_crossentropy_backward(float *dlogits, const float *probs, const int *targets, float dloss, int N,
                                  int V);

/* adamw.c */
void wp_cpu_adamw_update(float *params, const float *grads, float *m, float *v, size_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, int t);

/* vector.c */
void wp_cpu_accumulate(float *dst, const float *src, size_t n);
void wp_cpu_scale(float *x, float s, size_t n);
void wp_cpu_sum_squares(double *host_out, const float *x, size_t n);
void wp_cpu_copy_block(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols);

#endif
