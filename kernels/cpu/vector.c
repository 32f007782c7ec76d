/* Vector helpers (CPU) for gradient handling: dst += src, x *= s, and the
 * sum of squares (double, thread-count independent) for gradient norms;
 * and the block copy between row-major matrices of tensor parallelism. */
#include "kernels/cpu/cpu_kernels.h"

#include <string.h>

void wp_cpu_accumulate(float *dst, const float *src, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        dst[i] += src[i];
}

void wp_cpu_scale(float *x, float s, size_t n)
{
#pragma omp parallel for schedule(static) if (n >= WP_CPU_PAR_MIN)
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

/* The vector is cut into SS_CHUNKS pieces whose bounds depend on n only;
 * every piece is summed in order, then the pieces in order: the same bits
 * for any number of threads. */
#define SS_CHUNKS 64
#define SS_SERIAL_BELOW 65536

void wp_cpu_sum_squares(double *host_out, const float *x, size_t n)
{
    if (n < SS_SERIAL_BELOW) {
        double acc = 0.0;
        for (size_t i = 0; i < n; i++)
            acc += (double)x[i] * x[i];
        *host_out = acc;
        return;
    }
    double part[SS_CHUNKS];
    const size_t chunk = (n + SS_CHUNKS - 1) / SS_CHUNKS;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < SS_CHUNKS; k++) {
        const size_t i0 = (size_t)k * chunk;
        const size_t i1 = i0 + chunk < n ? i0 + chunk : n;
        double acc = 0.0;
        for (size_t i = i0; i < i1; i++)
            acc += (double)x[i] * x[i];
        part[k] = acc;
    }
    double sum = 0.0;
    for (int k = 0; k < SS_CHUNKS; k++)
        sum += part[k];
    *host_out = sum;
}

void wp_cpu_copy_block(float *dst, size_t dst_ld, const float *src, size_t src_ld, size_t rows, size_t cols)
{
#pragma omp parallel for schedule(static) if (rows * cols >= WP_CPU_PAR_MIN)
    for (size_t r = 0; r < rows; r++)
        memcpy(dst + r * dst_ld, src + r * src_ld, cols * sizeof *dst);
}
