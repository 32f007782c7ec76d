/* Noting the signals that stop a run (stop_signal.h). */
#include "run/fault/stop_signal.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t received;

static void note(int sig)
{
    if (!received)
        received = sig;
}

void wp_stop_signals_install(void)
{
    received = 0; /* a run starts with none noted (a process may run several: tests/test_train.c) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = note;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

int wp_stop_signal(void)
{
    return received;
}
