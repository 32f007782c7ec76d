/* Streams and events of the CUDA host emulation: a stream is a queue of
 * asynchronous work (the emulated NCCL's messages and collectives), run in
 * order, each item started when it reaches the head; events mark a point of
 * a stream. The legacy default stream and the blocking streams wait for
 * each other as in CUDA. Every wait and query polls all streams, and when
 * queued work has not moved for 120 s (WP_CUDA_HOST_STALL_S) the run fails: a deadlock
 * between ranks (or a program polling for it forever) ends the test
 * instead of hanging it. */
#include "host_emulation.h"

#include <cstdlib>
#include <ctime>
#include <deque>
#include <map>
#include <memory>
#include <sched.h>

struct wp_host_stream {
    unsigned long long id;
    unsigned int flags;
    std::deque<std::unique_ptr<wp_host_async_work>> queue;
    int head_started;
    unsigned long long enqueued, completed;
};

/* a point of a stream: done when that stream has completed seq items (or is gone) */
struct wp_host_event {
    unsigned long long stream_id, seq;
};

namespace {

/* 120 s, or WP_CUDA_HOST_STALL_S seconds from the environment (read at each
 * poll that finds work stalled, so a test may change it) */
double stall_limit_s(void)
{
    const char *e = getenv("WP_CUDA_HOST_STALL_S");
    return e && atof(e) > 0 ? atof(e) : 120.0;
}

/* the live streams by id; the default stream is id 0 (test-process state) */
std::map<unsigned long long, wp_host_stream *> &streams()
{
    static std::map<unsigned long long, wp_host_stream *> live;
    static wp_host_stream default_stream{0, 0, {}, 0, 0, 0};
    if (live.empty())
        live[0] = &default_stream;
    return live;
}

wp_host_stream *stream_of(cudaStream_t s)
{
    return s ? s : streams()[0];
}

int event_done(const wp_host_event *e)
{
    auto it = streams().find(e->stream_id);
    return it == streams().end() || it->second->completed >= e->seq;
}

double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Starts and completes what it can on every stream, until nothing moves;
 * fails the run when queued work has not moved for stall_limit_s(). */
void progress(void)
{
    static double last_move = seconds_now();
    int pending = 0, moved_at_all = 0;
    for (int moved = 1; moved;) {
        moved = 0;
        pending = 0;
        for (auto &entry : streams()) {
            wp_host_stream *s = entry.second;
            while (!s->queue.empty()) {
                if (!s->head_started) {
                    s->head_started = 1;
                    s->queue.front()->start();
                    moved = 1;
                }
                if (!s->queue.front()->done())
                    break;
                s->queue.pop_front();
                s->head_started = 0;
                s->completed++;
                moved = 1;
            }
            pending += !s->queue.empty();
        }
        moved_at_all |= moved;
    }
    const double now = seconds_now();
    if (moved_at_all || !pending)
        last_move = now;
    else if (now - last_move > stall_limit_s())
        wp_host_fail("queued stream work has not moved for %.0f s: a send without its receive (NCCL's are not "
                     "buffered), or collectives in different orders on the ranks",
                     stall_limit_s());
}

template <typename Done> void wait_until(Done done)
{
    for (progress(); !done(); progress())
        sched_yield();
}

/* waits for an event, as queued work */
struct event_wait : wp_host_async_work {
    wp_host_event point;
    explicit event_wait(wp_host_event e) : point(e) {}
    void start() override {}
    int done() override { return event_done(&point); }
};

void push(wp_host_stream *s, wp_host_async_work *work)
{
    s->queue.emplace_back(work);
    s->enqueued++;
}

/* The legacy default stream waits for the blocking streams' work so far and
 * they for its: before work queued on one, a wait for the other(s). */
void join_blocking_streams(wp_host_stream *target)
{
    for (auto &entry : streams()) {
        wp_host_stream *s = entry.second;
        const int other_side = target->id == 0 ? s->id != 0 && !(s->flags & cudaStreamNonBlocking) : s->id == 0;
        if (other_side && s->completed < s->enqueued)
            push(target, new event_wait(wp_host_event{s->id, s->enqueued}));
    }
}

int stream_idle(const wp_host_stream *s)
{
    return s->completed == s->enqueued;
}

} // namespace

void wp_host_stream_enqueue(cudaStream_t stream, wp_host_async_work *work)
{
    wp_host_stream *s = stream_of(stream);
    if (!(s->flags & cudaStreamNonBlocking))
        join_blocking_streams(s);
    push(s, work);
    progress();
}

void wp_host_default_stream_drain(void)
{
    wait_until([] {
        for (auto &entry : streams())
            if ((entry.first == 0 || !(entry.second->flags & cudaStreamNonBlocking)) && !stream_idle(entry.second))
                return false;
        return true;
    });
}

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned int flags)
{
    static unsigned long long next_id = 1;
    if (!stream || (flags & ~cudaStreamNonBlocking))
        return cudaErrorInvalidValue;
    wp_host_stream *s = new wp_host_stream{next_id++, flags, {}, 0, 0, 0};
    streams()[s->id] = s;
    *stream = s;
    return cudaSuccess;
}

/* CUDA returns at once and frees the stream when its work is done; here the
 * work is waited for first (comm_nccl.c destroys idle streams only). */
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (!stream || !streams().count(stream->id))
        return cudaErrorInvalidResourceHandle;
    wait_until([stream] { return stream_idle(stream); });
    streams().erase(stream->id);
    delete stream;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (!stream) {
        wp_host_default_stream_drain();
        return cudaSuccess;
    }
    if (!streams().count(stream->id))
        return cudaErrorInvalidResourceHandle;
    wait_until([stream] { return stream_idle(stream); });
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    wait_until([] {
        for (auto &entry : streams())
            if (!stream_idle(entry.second))
                return false;
        return true;
    });
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    if (!event || flags != 0)
        return cudaErrorInvalidValue;
    if (!event_done(event))
        wp_host_stream_enqueue(stream, new event_wait(*event));
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

/* a new event is complete (CUDA: an event never recorded queries as done) */
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event || (flags & ~cudaEventDisableTiming))
        return cudaErrorInvalidValue;
    *event = new wp_host_event{0, 0};
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (!event)
        return cudaErrorInvalidResourceHandle;
    delete event;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    if (!event)
        return cudaErrorInvalidResourceHandle;
    wp_host_stream *s = stream_of(stream);
    if (!(s->flags & cudaStreamNonBlocking))
        join_blocking_streams(s);
    event->stream_id = s->id;
    event->seq = s->enqueued;
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (!event)
        return cudaErrorInvalidResourceHandle;
    progress();
    return event_done(event) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (!event)
        return cudaErrorInvalidResourceHandle;
    wait_until([event] { return event_done(event); });
    return cudaSuccess;
}
