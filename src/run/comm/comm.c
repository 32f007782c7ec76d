/* Waiting on the communication backends: a request, or any test, polled
 * with a sleep between polls that grows to WP_WAIT_MAX_NS (times a dilated
 * run's F), under the watchdog (run/fault/watchdog.h). */
#include "run/comm/comm.h"

#include <time.h>

#include "run/fault/watchdog.h"

#define WP_WAIT_MAX_NS 50000L

static double wait_dilation = 1; /* wp_comm_set_wait_dilation */

void wp_comm_set_wait_dilation(double dilation)
{
    wait_dilation = dilation >= 1 ? dilation : 1;
}

static void poll_until(int (*pending)(void *ctx), void *ctx)
{
    /* 20 us at first, doubling to WP_WAIT_MAX_NS: a short wait stays short,
     * and a rank that waits long (a bubble) leaves the cores to the ranks
     * that compute (6 ranks polling every 20 us on 2 cores cost a third of
     * them). The cap is short because a large message between local ranks
     * moves in pieces, one per poll of the receiver: a 4 MiB activation
     * took 3.8 ms to hand over with a 320 us cap. Emulated BERT-48, 1f1b on
     * 4 local ranks, measured / simulated: 1.07 (cap 320 us), 1.044 (160),
     * 1.032 (80), 1.028 (40), 1.024 (20); GPT-2 small, 32 ranks on 2 cores:
     * 1.056 (320), 1.050 (50), 1.081 (20: the polls take the cores).
     * Dilated F times, both F times longer: the same share of the
     * iteration, F times fewer polls on the host's cores. */
    long sleep_ns = (long)(20000 * wait_dilation), max_ns = (long)(WP_WAIT_MAX_NS * wait_dilation);
    if (max_ns > 999999999L)
        max_ns = 999999999L;
    while (pending(ctx)) {
        struct timespec ts = {0, sleep_ns < max_ns ? sleep_ns : max_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < max_ns)
            sleep_ns *= 2;
    }
}

struct one_request {
    const struct wp_comm_ops *ops;
    struct wp_comm *c;
    struct wp_comm_request *r;
};

static int one_pending(void *ctx)
{
    struct one_request *o = ctx;
    return !o->ops->test(o->c, o->r);
}

int wp_comm_wait(const struct wp_comm_ops *ops, struct wp_comm *c, struct wp_comm_request *r)
{
    if (!r->impl)
        return 0;
    struct one_request one = {ops, c, r};
    wp_watchdog_wait_begin(r->what ? r->what : "a sum over a group of ranks", r->what ? r->peer : -1);
    poll_until(one_pending, &one);
    wp_watchdog_wait_end();
    return 0;
}

int wp_comm_wait_until(int (*pending)(void *ctx), void *ctx)
{
    wp_watchdog_wait_begin("gradient sums over a group of ranks", -1);
    poll_until(pending, ctx);
    wp_watchdog_wait_end();
    return 0;
}
