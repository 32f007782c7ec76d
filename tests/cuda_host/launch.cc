/* Kernel launches of the CUDA host emulation, and its error state: the
 * launch geometry checked as CUDA checks it (a refusal is what the next
 * cudaGetLastError returns), then the blocks one at a time, each block's
 * threads as cooperative fibers (ucontext) in a random order per round, so
 * that __syncthreads and the warp shuffles meet as on a GPU and a missing
 * barrier shows; a fault for what a GPU leaves undefined (a shuffle naming
 * an exited or absent lane, a barrier only part of the block reaches) and,
 * after the grid, for any write past an allocation. */
#include "host_emulation.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ucontext.h>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define WP_HOST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WP_HOST_ASAN 1
#endif
#endif
#ifdef WP_HOST_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

wp_host_thread_builtins wp_host_builtins;

namespace {

constexpr unsigned int WARP = 32;
constexpr unsigned int MAX_THREADS_PER_BLOCK = 1024;
/* Stack of one fiber: the kernels' frames are small; the margin is for the
 * libm calls and the sanitizer builds. */
constexpr size_t FIBER_STACK_BYTES = 256 * 1024;

enum fiber_state { RUNNABLE, AT_BARRIER, AT_SHUFFLE, EXITED };

struct fiber {
    ucontext_t context;
    uint3 thread_idx;
    fiber_state state;
    /* the pending shuffle */
    wp_host_shuffle_kind kind;
    unsigned int mask;
    int arg, width;
    unsigned long long bits;
};

/* The block being run (one at a time; test-process state). */
struct block_run {
    const char *kernel_name;
    void (*body)(void *);
    void *closure;
    ucontext_t scheduler;
    const void *scheduler_stack; /* its bottom and size, for AddressSanitizer */
    size_t scheduler_stack_bytes;
    std::vector<fiber> fibers;
    unsigned int current;
};
block_run *running;

cudaError_t last_error = cudaSuccess;
unsigned long long launches;

/* The fibers' stacks, allocated once for the largest block seen and freed
 * at exit. */
struct stack_pool {
    std::vector<char *> stacks;
    ~stack_pool()
    {
        for (char *s : stacks)
            std::free(s);
    }
};

std::vector<char *> &fiber_stacks()
{
    static stack_pool pool;
    return pool.stacks;
}

/* AddressSanitizer must be told of every switch between the scheduler's
 * stack and a fiber's: before it (fake_stack NULL when the fiber switching
 * away ends) and after it (where the switch came from). */
void switching_to(void **fake_stack, const void *bottom, size_t bytes)
{
#ifdef WP_HOST_ASAN
    __sanitizer_start_switch_fiber(fake_stack, bottom, bytes);
#else
    (void)fake_stack, (void)bottom, (void)bytes;
#endif
}

void switched(void *fake_stack, const void **from_bottom, size_t *from_bytes)
{
#ifdef WP_HOST_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, from_bottom, from_bytes);
#else
    (void)fake_stack, (void)from_bottom, (void)from_bytes;
#endif
}

void fiber_entry()
{
    switched(nullptr, &running->scheduler_stack, &running->scheduler_stack_bytes);
    running->body(running->closure);
    running->fibers[running->current].state = EXITED;
    switching_to(nullptr, running->scheduler_stack, running->scheduler_stack_bytes);
    /* returning resumes uc_link: the scheduler */
}

fiber &current_fiber(const char *what)
{
    if (!running)
        wp_host_fail("%s called outside a kernel", what);
    return running->fibers[running->current];
}

/* Back to the scheduler until the block releases this fiber. */
void wait_in(fiber &f, fiber_state state)
{
    f.state = state;
    void *fake_stack = nullptr;
    switching_to(&fake_stack, running->scheduler_stack, running->scheduler_stack_bytes);
    swapcontext(&f.context, &running->scheduler);
    switched(fake_stack, &running->scheduler_stack, &running->scheduler_stack_bytes);
}

const char *kind_name(wp_host_shuffle_kind kind)
{
    static const char *const names[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"};
    return names[kind];
}

/* The lane whose value lane receives, or lane itself where CUDA returns the
 * caller's own value (a source outside the caller's width-segment). */
unsigned int shuffle_source(const fiber &f, unsigned int lane)
{
    const int w = f.width, base = (int)lane / w * w, local = (int)lane % w;
    switch (f.kind) {
    case WP_HOST_SHFL_IDX:
        return (unsigned int)(base + ((f.arg % w) + w) % w);
    case WP_HOST_SHFL_UP:
        return local - f.arg >= 0 ? lane - (unsigned int)f.arg : lane;
    case WP_HOST_SHFL_DOWN:
        return local + f.arg < w ? lane + (unsigned int)f.arg : lane;
    case WP_HOST_SHFL_XOR: {
        const int src = (int)lane ^ f.arg;
        return src / w == (int)lane / w ? (unsigned int)src : lane;
    }
    }
    return lane;
}

/* Completes the shuffle of warp w if every lane its mask names is waiting in
 * it; returns 1 when it did. */
int try_shuffle(block_run &run, unsigned int w)
{
    const unsigned int first = w * WARP, nthreads = (unsigned int)run.fibers.size();
    const unsigned int lanes = nthreads - first < WARP ? nthreads - first : WARP;
    int waiting = -1;
    for (unsigned int l = 0; l < lanes && waiting < 0; l++)
        if (run.fibers[first + l].state == AT_SHUFFLE)
            waiting = (int)l;
    if (waiting < 0)
        return 0;
    const fiber &lead = run.fibers[first + (unsigned int)waiting];
    const unsigned int mask = lead.mask;
    if (lanes < WARP && (mask >> lanes) != 0)
        wp_host_fail("%s: %s in warp %u names lanes past the block's last thread (mask 0x%08x, %u lanes)",
                     run.kernel_name, kind_name(lead.kind), w, mask, lanes);
    for (unsigned int l = 0; l < lanes; l++) {
        const fiber &f = run.fibers[first + l];
        if (!((mask >> l) & 1u))
            continue;
        if (f.state == EXITED)
            wp_host_fail("%s: warp %u: %s with mask 0x%08x names lane %u, which has exited", run.kernel_name, w,
                         kind_name(lead.kind), mask, l);
        if (f.state != AT_SHUFFLE)
            return 0; /* still on its way (or at a barrier: a deadlock the caller reports) */
        if (f.mask != mask || f.kind != lead.kind || f.width != lead.width)
            wp_host_fail("%s: warp %u: lanes %d and %u meet in different shuffles (%s mask 0x%08x, %s mask 0x%08x)",
                         run.kernel_name, w, waiting, l, kind_name(lead.kind), mask, kind_name(f.kind), f.mask);
    }
    unsigned long long result[WARP];
    for (unsigned int l = 0; l < lanes; l++) {
        if (!((mask >> l) & 1u))
            continue;
        const unsigned int src = shuffle_source(run.fibers[first + l], l);
        if (!((mask >> src) & 1u))
            wp_host_fail("%s: warp %u: lane %u reads lane %u, which the mask 0x%08x leaves out", run.kernel_name, w,
                         l, src, mask);
        result[l] = run.fibers[first + src].bits;
    }
    for (unsigned int l = 0; l < lanes; l++)
        if ((mask >> l) & 1u) {
            run.fibers[first + l].bits = result[l];
            run.fibers[first + l].state = RUNNABLE;
        }
    return 1;
}

/* xorshift64*: the turn orders' random numbers */
unsigned long long next_random(unsigned long long *state)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ULL;
}

/* Runs one block to its end. The fibers run in turn until each waits or
 * exits; then the shuffles whose lanes have all arrived complete, and once
 * none is left the barrier opens when every live thread waits in it. Each
 * round's turn order is a fresh random permutation (seeded by the launch,
 * the block and the round: the same on every run), so that a thread reading
 * another's write with no barrier between them runs before that write in
 * about half the rounds and blocks, and gets a stale value. */
void run_block(block_run &run, dim3 block, unsigned long long seed)
{
    const unsigned int nthreads = (unsigned int)run.fibers.size();
    std::vector<char *> &stacks = fiber_stacks();
    while (stacks.size() < nthreads) {
        char *stack = static_cast<char *>(std::malloc(FIBER_STACK_BYTES));
        if (!stack)
            wp_host_fail("out of memory for fiber stacks");
        stacks.push_back(stack);
    }
    for (unsigned int t = 0; t < nthreads; t++) {
        fiber &f = run.fibers[t];
        f.thread_idx = uint3{t % block.x, t / block.x % block.y, t / (block.x * block.y)};
        f.state = RUNNABLE;
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = stacks[t];
        f.context.uc_stack.ss_size = FIBER_STACK_BYTES;
        f.context.uc_link = &run.scheduler;
        makecontext(&f.context, fiber_entry, 0);
    }
    std::vector<unsigned int> order(nthreads);
    for (unsigned int t = 0; t < nthreads; t++)
        order[t] = t;
    unsigned long long random_state = seed | 1u;
    for (;;) {
        for (unsigned int k = nthreads; k > 1; k--) /* Fisher-Yates */
            std::swap(order[k - 1], order[next_random(&random_state) % k]);
        for (unsigned int k = 0; k < nthreads; k++) {
            const unsigned int t = order[k];
            if (run.fibers[t].state != RUNNABLE)
                continue;
            run.current = t;
            wp_host_builtins.thread_idx = run.fibers[t].thread_idx;
            void *fake_stack = nullptr;
            switching_to(&fake_stack, stacks[t], FIBER_STACK_BYTES);
            swapcontext(&run.scheduler, &run.fibers[t].context);
            switched(fake_stack, nullptr, nullptr);
        }
        unsigned int exited = 0, at_barrier = 0, at_shuffle = 0;
        for (const fiber &f : run.fibers) {
            exited += f.state == EXITED;
            at_barrier += f.state == AT_BARRIER;
            at_shuffle += f.state == AT_SHUFFLE;
        }
        if (exited == nthreads)
            return;
        int progressed = 0;
        for (unsigned int w = 0; w * WARP < nthreads; w++)
            while (try_shuffle(run, w))
                progressed = 1;
        if (progressed)
            continue;
        if (at_shuffle == 0 && at_barrier > 0) { /* everyone alive is at the barrier */
            for (fiber &f : run.fibers)
                if (f.state == AT_BARRIER)
                    f.state = RUNNABLE;
            continue;
        }
        wp_host_fail("%s: block (%u,%u,%u) deadlocks: %u threads at __syncthreads, %u in a shuffle whose lanes "
                     "never all arrive, %u exited",
                     run.kernel_name, wp_host_builtins.block_idx.x, wp_host_builtins.block_idx.y,
                     wp_host_builtins.block_idx.z, at_barrier, at_shuffle, exited);
    }
}

int valid_geometry(dim3 grid, dim3 block)
{
    const unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    return grid.x >= 1 && grid.x <= 0x7fffffffu && grid.y >= 1 && grid.y <= 65535 && grid.z >= 1 &&
           grid.z <= 65535 && block.x >= 1 && block.x <= 1024 && block.y >= 1 && block.y <= 1024 && block.z >= 1 &&
           block.z <= 64 && threads <= MAX_THREADS_PER_BLOCK;
}

} // namespace

void wp_host_fail(const char *format, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, format);
    vsnprintf(message, sizeof message, format, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "CUDA host emulation: %s\n", message);
    printf("Bail out! CUDA host emulation: %s\n", message);
    fflush(stdout);
    abort();
}

void wp_host_record_error(cudaError_t error)
{
    if (last_error == cudaSuccess)
        last_error = error;
}

void wp_host_check_kernel_pointer(const char *kernel_name, int argument, const void *ptr)
{
    if (ptr && !wp_host_find_allocation(ptr))
        wp_host_fail("%s: argument %d (%p) is not device memory", kernel_name, argument, ptr);
}

void wp_host_run_grid(const char *kernel_name, dim3 grid, dim3 block, void (*body)(void *), void *closure)
{
    if (running)
        wp_host_fail("%s launched from inside the kernel %s", kernel_name, running->kernel_name);
    if (!valid_geometry(grid, block)) {
        wp_host_record_error(cudaErrorInvalidConfiguration);
        return;
    }
    wp_host_default_stream_drain(); /* a kernel on the default stream runs after its queued work */
    block_run run;
    run.kernel_name = kernel_name;
    run.body = body;
    run.closure = closure;
    run.fibers.resize((size_t)block.x * block.y * block.z);
    running = &run;
    wp_host_builtins.block_dim = block;
    wp_host_builtins.grid_dim = grid;
    /* Blocks run one at a time, in reverse order on every other launch: a
     * result that depends on the order of blocks differs between launches. */
    const unsigned long long nblocks = (unsigned long long)grid.x * grid.y * grid.z;
    const unsigned long long launch = launches++;
    const int reverse = launch % 2;
    for (unsigned long long k = 0; k < nblocks; k++) {
        const unsigned long long b = reverse ? nblocks - 1 - k : k;
        wp_host_builtins.block_idx =
            uint3{(unsigned int)(b % grid.x), (unsigned int)(b / grid.x % grid.y), (unsigned int)(b / grid.x / grid.y)};
        run_block(run, block, (launch << 32) ^ (b * 0x9E3779B97F4A7C15ULL));
    }
    running = nullptr;
    wp_host_check_guards(kernel_name);
}

void __syncthreads(void)
{
    wait_in(current_fiber("__syncthreads"), AT_BARRIER);
}

unsigned long long wp_host_shuffle(wp_host_shuffle_kind kind, unsigned int mask, unsigned long long bits, int arg,
                                   int width)
{
    fiber &f = current_fiber(kind_name(kind));
    if (width < 1 || width > (int)WARP || (width & (width - 1)) != 0)
        wp_host_fail("%s: %s with width %d (a power of 2 up to 32)", running->kernel_name, kind_name(kind), width);
    const unsigned int lane = running->current % WARP;
    if (!((mask >> lane) & 1u))
        wp_host_fail("%s: lane %u of warp %u calls %s with a mask that leaves it out (0x%08x)", running->kernel_name,
                     lane, running->current / WARP, kind_name(kind), mask);
    f.kind = kind;
    f.mask = mask;
    f.arg = arg;
    f.width = width;
    f.bits = bits;
    wait_in(f, AT_SHUFFLE);
    return current_fiber(kind_name(kind)).bits;
}

cudaError_t cudaGetLastError(void)
{
    const cudaError_t error = last_error;
    last_error = cudaSuccess;
    return error;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidPitchValue:
        return "invalid pitch argument";
    case cudaErrorInvalidDevicePointer:
        return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection:
        return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorNotReady:
        return "device not ready";
    case cudaErrorLaunchFailure:
        return "unspecified launch failure";
    }
    return "unknown error";
}

/* one emulated device */
cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count)
        return cudaErrorInvalidValue;
    *count = 1;
    return cudaSuccess;
}

/* device 0, the one there is */
cudaError_t cudaSetDevice(int device)
{
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}
