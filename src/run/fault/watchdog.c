/* The watchdog on a run's waits (watchdog.h): one thread that looks every
 * tenth of a second (or a tenth of the limit, when that is shorter) at how
 * long the wait in progress has gone without progress. */
#include "run/fault/watchdog.h"
#include "run/fault/stop_signal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static struct {
    atomic_llong wait_since_ns; /* 0: not waiting; else the later of the wait's start and the last progress */
    atomic_uintptr_t what;      /* const char * of the wait in progress */
    atomic_int peer;
    atomic_llong limit_ns;      /* in force now; 0 while not watching */
    atomic_llong pause_limit_ns; /* a pause's own (watchdog.h), else 0 */
    atomic_uintptr_t pause_what; /* the pause in progress, or 0 */
    long long pause_since_ns, longest_pause_ns; /* the training thread's only */
    long long base_limit_ns;    /* --watchdog-s */
    atomic_llong longest_iter_ns; /* written by the training thread, read by the watchdog's */
    wp_watchdog_expiry expire;
    void *ctx;
    pthread_t thread;
    atomic_int running;
} dog;

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* After a stop signal the ranks only finish the iteration in flight: a wait
 * that outlasts 2 iterations (at least WP_WATCHDOG_STOPPING_S) will not end.
 * srun --kill-on-bad-exit stops a step whose task died with SIGTERM, and
 * the others would wait for the dead rank until the full limit or SIGKILL. */
#define WP_WATCHDOG_STOPPING_S 1.0
static void hurry_when_stopping(void)
{
    long long longest = atomic_load(&dog.longest_iter_ns), floor = (long long)(WP_WATCHDOG_STOPPING_S * 1e9);
    if (!wp_stop_signal() || longest <= 0)
        return;
    long long hurried = 2 * longest > floor ? 2 * longest : floor;
    if (hurried < atomic_load(&dog.limit_ns))
        atomic_store(&dog.limit_ns, hurried);
}

static void *watch(void *unused)
{
    (void)unused;
    while (atomic_load(&dog.running)) {
        hurry_when_stopping();
        long long limit = atomic_load(&dog.limit_ns), look_ns = limit / 10 < 100000000LL ? limit / 10 : 100000000LL;
        struct timespec ts = {0, look_ns > 1000000 ? look_ns : 1000000};
        nanosleep(&ts, NULL);
        long long since = atomic_load(&dog.wait_since_ns), own = atomic_load(&dog.pause_limit_ns);
        if (since == 0 || now_ns() - since <= (own ? own : atomic_load(&dog.limit_ns)))
            continue;
        const char *what = (const char *)atomic_load(&dog.what);
        dog.expire(dog.ctx, what ? what : "a message or sum", atomic_load(&dog.peer), 1e-9 * (double)(now_ns() - since));
        break; /* the expiry ends the process; never twice */
    }
    return NULL;
}

int wp_watchdog_start(double limit_s, wp_watchdog_expiry expire, void *ctx)
{
    if (limit_s <= 0 || atomic_load(&dog.running))
        return 0;
    dog.base_limit_ns = (long long)(limit_s * 1e9);
    atomic_store(&dog.limit_ns, WP_WATCHDOG_FIRST_FACTOR * dog.base_limit_ns);
    atomic_store(&dog.longest_iter_ns, 0);
    dog.longest_pause_ns = 0;
    dog.expire = expire;
    dog.ctx = ctx;
    atomic_store(&dog.running, 1);
    if (pthread_create(&dog.thread, NULL, watch, NULL)) {
        atomic_store(&dog.running, 0);
        atomic_store(&dog.limit_ns, 0);
        return -1;
    }
    return 0;
}

void wp_watchdog_stop(void)
{
    if (!atomic_load(&dog.running))
        return;
    atomic_store(&dog.running, 0);
    atomic_store(&dog.limit_ns, 0);
    pthread_join(dog.thread, NULL);
}

void wp_watchdog_wait_begin(const char *what, int peer)
{
    atomic_store(&dog.what, (uintptr_t)what);
    atomic_store(&dog.peer, peer);
    atomic_store(&dog.wait_since_ns, now_ns());
}

void wp_watchdog_wait_end(void)
{
    uintptr_t pause = atomic_load(&dog.pause_what);
    atomic_store(&dog.what, pause); /* inside a pause: its progress, and the pause watched on */
    atomic_store(&dog.peer, -1);
    atomic_store(&dog.wait_since_ns, pause ? now_ns() : 0);
}

void wp_watchdog_iteration_end(double iter_s)
{
    if (!atomic_load(&dog.running))
        return;
    long long iter_ns = (long long)(iter_s * 1e9);
    if (iter_ns > atomic_load(&dog.longest_iter_ns))
        atomic_store(&dog.longest_iter_ns, iter_ns);
    long long scaled = 2 * atomic_load(&dog.longest_iter_ns);
    atomic_store(&dog.limit_ns, scaled > dog.base_limit_ns ? scaled : dog.base_limit_ns);
    hurry_when_stopping();
}

void wp_watchdog_pause_begin(const char *what)
{
    if (!atomic_load(&dog.running))
        return;
    long long limit = atomic_load(&dog.limit_ns), floor = WP_WATCHDOG_PAUSE_FLOOR_S * 1000000000LL;
    if (limit < floor)
        limit = floor;
    if (limit < 4 * dog.longest_pause_ns)
        limit = 4 * dog.longest_pause_ns;
    dog.pause_since_ns = now_ns();
    atomic_store(&dog.pause_limit_ns, limit);
    atomic_store(&dog.pause_what, (uintptr_t)what);
    wp_watchdog_wait_begin(what, -1);
}

void wp_watchdog_pause_end(void)
{
    if (!atomic_load(&dog.running))
        return;
    if (now_ns() - dog.pause_since_ns > dog.longest_pause_ns)
        dog.longest_pause_ns = now_ns() - dog.pause_since_ns;
    atomic_store(&dog.pause_what, (uintptr_t)0);
    atomic_store(&dog.wait_since_ns, 0);
    atomic_store(&dog.what, (uintptr_t)0);
    atomic_store(&dog.pause_limit_ns, 0);
}

double wp_watchdog_limit_s(void)
{
    long long own = atomic_load(&dog.pause_limit_ns);
    return 1e-9 * (double)(own ? own : atomic_load(&dog.limit_ns));
}

const char *wp_watchdog_waiting_on(int *peer)
{
    const char *what = (const char *)atomic_load(&dog.what);
    if (peer)
        *peer = what ? atomic_load(&dog.peer) : -1;
    return what;
}
