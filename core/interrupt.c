/*
 * core/interrupt.c - the interrupt flag (core/interrupt.h). The handler
 * does three async-signal-safe things: store the signal, write a fixed
 * line, or, for a second signal, restore the default action and re-raise.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "core/interrupt.h"

static volatile sig_atomic_t caught;

static void on_signal(int sig)
{
    static const char msg[] = "\nkope: interrupted: finishing the current step and cleaning up "
                              "(once more to stop at once)\n";
    if (caught) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    caught = sig;
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
}

void interrupt_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* SA_RESTART: a read or a wait in progress carries on; the loop looks
     * at the flag when the step ends */
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int interrupt_pending(void)
{
    return caught;
}

const char *interrupt_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig ? "a signal" : "";
}
