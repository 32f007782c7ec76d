/* The CPU's floating-point environment for training: denormal results
 * flushed to zero and denormal inputs read as zero (FTZ and DAZ in MXCSR),
 * so that tiny gradients and Adam moments do not fall into the slow
 * microcoded path of gradual underflow (issue 16: PyTorch's step 8x slower
 * with them). MXCSR is per thread: the calling thread, every OpenMP thread
 * (one parallel region; libgomp keeps its threads) and OpenBLAS's own
 * pthread pool, which it starts when the library loads, before main: that
 * pool is shut down here and OpenBLAS starts it again, from this thread and
 * with its MXCSR, at the next threaded call. An OpenMP build of the BLAS
 * (the default, configure.ac) computes on OpenMP's threads, set above. */
#include "kernels/cpu/cpu_kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FTZ_DAZ 0x8040u /* MXCSR bits 15 (flush to zero) and 6 (denormals are zero) */
static void set_this_thread(void)
{
    _mm_setcsr(_mm_getcsr() | FTZ_DAZ);
}
static int this_thread_flushes(void)
{
    return (_mm_getcsr() & FTZ_DAZ) == FTZ_DAZ;
}
#else
static void set_this_thread(void)
{
}
static int this_thread_flushes(void)
{
    return 0;
}
#endif

/* OpenBLAS's pthread build exports it (its fork handler); weak, so that
 * another CBLAS links too */
void blas_thread_shutdown_(void) __attribute__((weak));

int wp_cpu_flush_denormals(void)
{
    set_this_thread();
    int flushing = this_thread_flushes(), threads_flushing = 1;
#pragma omp parallel reduction(&& : threads_flushing)
    {
        set_this_thread();
        threads_flushing = this_thread_flushes();
    }
    if (blas_thread_shutdown_)
        blas_thread_shutdown_();
    return flushing && threads_flushing;
}
