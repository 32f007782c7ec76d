/* Internal interface of the CUDA host emulation (tests/cuda_host): how its
 * runtime, launch and cuBLAS parts report a fault and look up device memory. */
#ifndef WP_CUDA_HOST_HOST_EMULATION_H
#define WP_CUDA_HOST_HOST_EMULATION_H

#include "cuda_runtime.h"

/* Ends the test run: the message on stderr and as a TAP comment, then abort.
 * For faults a real GPU would not report reliably (an out-of-bounds write, a
 * shuffle with an exited lane, a deadlocked barrier): silent there, fatal here. */
[[noreturn]] void wp_host_fail(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* One cudaMalloc'd buffer. */
struct wp_host_allocation {
    const char *base;
    size_t bytes;
};

/* The allocation holding ptr (ptr may be its end), or NULL when ptr is not
 * in device memory. */
const wp_host_allocation *wp_host_find_allocation(const void *ptr);

/* 1 when [ptr, ptr + bytes) lies within one allocation; 0 otherwise, with
 * the reason in why[len]. */
int wp_host_device_range(const void *ptr, size_t bytes, char *why, size_t len);

/* Fails the run when a kernel has written past the end or before the start
 * of any live allocation (the guard bytes around each have changed). */
void wp_host_check_guards(const char *after);

/* The error the next cudaGetLastError returns (the first since the last
 * such call, as in CUDA). */
void wp_host_record_error(cudaError_t error);

#endif
