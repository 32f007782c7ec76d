/* A kernel table that times every compute call of another (wall and
 * process CPU seconds, calls, per kernel; the matmuls of the tied LM head,
 * weight layout out-in, apart from the blocks'): where a step's time goes
 * (`wavepipe run --kernel-times`, bench/bench_vs_pytorch.sh). One set of
 * counters per process. */
#ifndef WP_KERNELS_KERNEL_TIMES_H
#define WP_KERNELS_KERNEL_TIMES_H

#include <stdio.h>

#include "kernels/kernels.h"

/* The timing table around inner (kept by pointer; the counters zeroed). */
const struct wp_kernel_ops *wp_kernels_timed(const struct wp_kernel_ops *inner);
/* Zero the counters (after a warm-up step). */
void wp_kernel_times_reset(void);
/* CSV rows `rank,kernel,calls,wall_s,cpu_s` per kernel called, after a
 * header line when header is nonzero; divided by steps (>= 1). */
void wp_kernel_times_write(FILE *f, int rank, long steps, int header);

#endif
