/*
 * core/interrupt.h - SIGINT and SIGTERM as a request to stop at the next
 * step boundary, never as work done inside a signal handler.
 *
 * interrupt_install() sets handlers that only record the first signal (and
 * write one line to stderr, with write(2): async-signal-safe). The code that
 * owns a long loop (the agent's trials, core/agent/agent.c) asks
 * interrupt_pending() between steps and returns through its normal cleanup:
 * the step in progress is finished or rolled back, the platform is closed
 * (which removes its work folders), the store is closed. A second signal
 * while that happens ends the process at once (the signal's default action):
 * the store is consistent anyway (SQLite's atomic commit) and the work
 * folders left behind are removed by the next kope (platform/workdir.h).
 *
 * The flag is process-wide because a signal is.
 */
#ifndef KOPE_INTERRUPT_H
#define KOPE_INTERRUPT_H

/* Catch SIGINT and SIGTERM from now on. */
void interrupt_install(void);
/* 0, or the number of the first signal caught. */
int interrupt_pending(void);
/* The signal's name ("SIGINT"), "" for 0. */
const char *interrupt_name(int sig);

#endif
