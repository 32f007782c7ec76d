/* Device memory of the CUDA host emulation: cudaMalloc'd buffers are host
 * buffers recorded with their extents and fenced by guard bytes, and every
 * copy and memset checks its direction, pitches and ranges against them. */
#include "host_emulation.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace {

/* Guard bytes before and after each allocation, and their value. */
constexpr size_t GUARD_BYTES = 256;
constexpr unsigned char GUARD_VALUE = 0xA5;
/* New allocations hold this byte (0xFF..: a float and a double NaN): a
 * kernel that reads memory nobody wrote produces NaN, not plausible zeros. */
constexpr unsigned char FRESH_VALUE = 0xFF;

/* The live allocations by base address (test-process state, like the
 * device's own allocator). */
std::map<const char *, size_t> &allocations()
{
    static std::map<const char *, size_t> live;
    return live;
}

int guards_intact(const char *base, size_t bytes)
{
    const unsigned char *below = reinterpret_cast<const unsigned char *>(base) - GUARD_BYTES;
    const unsigned char *above = reinterpret_cast<const unsigned char *>(base) + bytes;
    for (size_t i = 0; i < GUARD_BYTES; i++)
        if (below[i] != GUARD_VALUE || above[i] != GUARD_VALUE)
            return 0;
    return 1;
}

const char *kind_name(cudaMemcpyKind kind)
{
    switch (kind) {
    case cudaMemcpyHostToHost:
        return "HostToHost";
    case cudaMemcpyHostToDevice:
        return "HostToDevice";
    case cudaMemcpyDeviceToHost:
        return "DeviceToHost";
    case cudaMemcpyDeviceToDevice:
        return "DeviceToDevice";
    case cudaMemcpyDefault:
        return "Default";
    }
    return "an invalid kind";
}

/* One side of a copy: device memory (the whole range in one allocation)
 * when on_device, else host memory (not a device address). */
cudaError_t check_side(const char *call, const char *side, const void *ptr, size_t bytes, int on_device,
                       cudaMemcpyKind kind)
{
    char why[160];
    if (on_device && !wp_host_device_range(ptr, bytes, why, sizeof why))
        wp_host_fail("%s %s: %s side %p (%zu bytes): %s", call, kind_name(kind), side, ptr, bytes, why);
    if (!on_device && wp_host_find_allocation(ptr))
        wp_host_fail("%s %s: %s side %p is device memory, the direction is wrong", call, kind_name(kind), side, ptr);
    return cudaSuccess;
}

/* A 2D copy's extent in bytes: rows - 1 pitches and one row. */
size_t span_2d(size_t pitch, size_t width, size_t height)
{
    return height == 0 ? 0 : pitch * (height - 1) + width;
}

cudaError_t copy_2d(const char *call, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                    size_t height, cudaMemcpyKind kind, cudaStream_t stream)
{
    if (kind > cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidPitchValue;
    if (width == 0 || height == 0)
        return cudaSuccess;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    /* the copy runs now, after the work queued before it on its stream */
    if (stream)
        cudaStreamSynchronize(stream);
    else
        wp_host_default_stream_drain();
    const size_t dst_span = span_2d(dpitch, width, height), src_span = span_2d(spitch, width, height);
    if (kind == cudaMemcpyDefault) { /* unified addressing: the pointers say where they are */
        if (wp_host_find_allocation(dst))
            check_side(call, "destination", dst, dst_span, 1, kind);
        if (wp_host_find_allocation(src))
            check_side(call, "source", src, src_span, 1, kind);
    } else {
        const int dst_on_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
        const int src_on_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
        check_side(call, "destination", dst, dst_span, dst_on_device, kind);
        check_side(call, "source", src, src_span, src_on_device, kind);
    }
    const char *from = static_cast<const char *>(src);
    char *to = static_cast<char *>(dst);
    if (to < from + src_span && from < to + dst_span)
        wp_host_fail("%s: source and destination overlap", call);
    for (size_t r = 0; r < height; r++)
        std::memcpy(to + r * dpitch, from + r * spitch, width);
    return cudaSuccess;
}

} // namespace

const wp_host_allocation *wp_host_find_allocation(const void *ptr)
{
    static thread_local wp_host_allocation found;
    const char *p = static_cast<const char *>(ptr);
    auto &live = allocations();
    auto it = live.upper_bound(p);
    if (it == live.begin())
        return nullptr;
    --it;
    if (p > it->first + it->second)
        return nullptr;
    found.base = it->first;
    found.bytes = it->second;
    return &found;
}

int wp_host_device_range(const void *ptr, size_t bytes, char *why, size_t len)
{
    const wp_host_allocation *a = wp_host_find_allocation(ptr);
    if (!a) {
        snprintf(why, len, "not in device memory");
        return 0;
    }
    const size_t offset = (size_t)(static_cast<const char *>(ptr) - a->base);
    if (bytes > a->bytes - offset) {
        snprintf(why, len, "ends %zu bytes past its allocation of %zu bytes (starts at byte %zu)",
                 offset + bytes - a->bytes, a->bytes, offset);
        return 0;
    }
    return 1;
}

void wp_host_check_guards(const char *after)
{
    for (const auto &a : allocations())
        if (!guards_intact(a.first, a.second))
            wp_host_fail("%s wrote outside the allocation %p of %zu bytes", after, (const void *)a.first, a.second);
}

cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
    if (!ptr)
        return cudaErrorInvalidValue;
    *ptr = nullptr;
    if (bytes == 0)
        return cudaSuccess;
    unsigned char *raw = static_cast<unsigned char *>(std::malloc(bytes + 2 * GUARD_BYTES));
    if (!raw) {
        wp_host_record_error(cudaErrorMemoryAllocation);
        return cudaErrorMemoryAllocation;
    }
    std::memset(raw, GUARD_VALUE, GUARD_BYTES);
    std::memset(raw + GUARD_BYTES, FRESH_VALUE, bytes);
    std::memset(raw + GUARD_BYTES + bytes, GUARD_VALUE, GUARD_BYTES);
    const char *base = reinterpret_cast<const char *>(raw + GUARD_BYTES);
    allocations()[base] = bytes;
    *ptr = raw + GUARD_BYTES;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    if (!ptr)
        return cudaSuccess;
    auto &live = allocations();
    auto it = live.find(static_cast<const char *>(ptr));
    if (it == live.end()) {
        wp_host_record_error(cudaErrorInvalidDevicePointer);
        return cudaErrorInvalidDevicePointer;
    }
    if (!guards_intact(it->first, it->second))
        wp_host_fail("cudaFree: something wrote outside the allocation %p of %zu bytes", ptr, it->second);
    live.erase(it);
    std::free(static_cast<char *>(ptr) - GUARD_BYTES);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    return copy_2d("cudaMemcpy", dst, bytes, src, bytes, bytes, 1, kind, 0);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream)
{
    return copy_2d("cudaMemcpyAsync", dst, bytes, src, bytes, bytes, 1, kind, stream);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                         cudaMemcpyKind kind)
{
    return copy_2d("cudaMemcpy2D", dst, dpitch, src, spitch, width, height, kind, 0);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream)
{
    return copy_2d("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, stream);
}

cudaError_t cudaMemset(void *ptr, int value, size_t bytes)
{
    if (bytes == 0)
        return cudaSuccess;
    char why[160];
    if (!wp_host_device_range(ptr, bytes, why, sizeof why))
        wp_host_fail("cudaMemset %p (%zu bytes): %s", ptr, bytes, why);
    wp_host_default_stream_drain();
    std::memset(ptr, value, bytes);
    return cudaSuccess;
}
