/* The CBLAS this process loaded: its thread count (the runtime gives it
 * OpenMP's), whether its calls may run on several OpenMP threads at once,
 * and what it is (implementation, threading, the file the loader took it
 * from, which rpath or the system alternatives decide). Any CBLAS
 * links: each library's own calls are weak references, used where present
 * (OpenBLAS, or FlexiBLAS's OpenBLAS-compatible call; BLIS). */
#define _GNU_SOURCE
#include "kernels/cpu/cpu_kernels.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

void openblas_set_num_threads(int threads) __attribute__((weak));
int openblas_get_parallel(void) __attribute__((weak)); /* 0 sequential, 1 pthreads, 2 OpenMP */
char *openblas_get_config(void) __attribute__((weak));
/* BLIS's dim_t and gint_t are 64-bit on x86_64 (Debian's build sizes them by the pointer) */
void bli_thread_set_num_threads(int64_t threads) __attribute__((weak));
int64_t bli_info_get_enable_openmp(void) __attribute__((weak));
int64_t bli_info_get_enable_pthreads(void) __attribute__((weak));
char *bli_info_get_version_str(void) __attribute__((weak));
int bli_arch_query_id(void) __attribute__((weak));
char *bli_arch_string(int arch) __attribute__((weak));

void wp_cpu_blas_set_threads(int threads)
{
    if (openblas_set_num_threads)
        openblas_set_num_threads(threads);
    if (bli_thread_set_num_threads)
        bli_thread_set_num_threads(threads);
}

int wp_cpu_blas_single_in_parallel(void)
{
    if (openblas_get_parallel)
        return openblas_get_parallel() != 1;
    if (bli_info_get_enable_pthreads)
        return !bli_info_get_enable_pthreads();
    return 0;
}

void wp_cpu_blas_describe(char *buf, size_t len)
{
    const char *what = "a CBLAS (neither OpenBLAS nor BLIS)", *threading = "threading unknown";
    char name[160] = "";
    if (bli_info_get_version_str) {
        snprintf(name, sizeof name, "BLIS %s, kernels %s", bli_info_get_version_str(),
                 bli_arch_query_id && bli_arch_string ? bli_arch_string(bli_arch_query_id()) : "?");
        what = name;
        threading = bli_info_get_enable_openmp && bli_info_get_enable_openmp()       ? "OpenMP threads"
                    : bli_info_get_enable_pthreads && bli_info_get_enable_pthreads() ? "pthreads"
                                                                                     : "no threads";
    } else if (openblas_get_config) {
        snprintf(name, sizeof name, "%s", openblas_get_config()); /* version, options, kernels */
        what = name;
        if (openblas_get_parallel)
            threading = openblas_get_parallel() == 2   ? "OpenMP threads"
                        : openblas_get_parallel() == 1 ? "pthreads (a pool of its own)"
                                                       : "no threads";
    }
    Dl_info where = {0};
    void *sgemm = dlsym(RTLD_DEFAULT, "cblas_sgemm");
    snprintf(buf, len, "%s; %s; loaded from %s", what, threading,
             sgemm && dladdr(sgemm, &where) && where.dli_fname ? where.dli_fname : "?");
}
