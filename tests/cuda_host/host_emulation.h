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

/* ---- streams (streams.cc) ---------------------------------------------------- */
/* Work a stream queues (the emulated NCCL's operations): started when it
 * reaches the head of its stream, then polled until done. */
struct wp_host_async_work {
    virtual ~wp_host_async_work() = default;
    virtual void start() = 0;
    virtual int done() = 0; /* polls; 1 when complete */
};

/* Queues work on stream (0: the default stream) and starts it if the stream
 * is idle; the stream owns it from then on. */
void wp_host_stream_enqueue(cudaStream_t stream, wp_host_async_work *work);

/* Waits until the default stream (and the blocking streams it waits for)
 * has done its queued work: kernels, copies and cuBLAS, which run when
 * issued, call it first. */
void wp_host_default_stream_drain(void);

/* The error the next cudaGetLastError returns (the first since the last
 * such call, as in CUDA). */
void wp_host_record_error(cudaError_t error);

#endif
