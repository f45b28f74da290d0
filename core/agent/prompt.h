/*
 * core/agent/prompt.h - the one builder of the prompt an LLM trial sends: the LLM
 * proposer (core/agent/proposer.c) queues it and `kope context` prints it, so
 * what is shown is what is sent.
 *
 * Inputs: the task, its history (core/agent/trial.h: the task's best in the whole
 * graph, this run's latest PROMPT_FEEDBACK_MAX trials as feedback), the
 * run's target, context mode and budget, and the endpoint (for its token
 * calibration).
 */
#ifndef KOPE_PROMPT_H
#define KOPE_PROMPT_H

#include <stdint.h>

#include "core/agent/trial.h"

#ifndef PROMPT_FEEDBACK_MAX
#define PROMPT_FEEDBACK_MAX 4   /* earlier attempts shown to the LLM */
#endif

/* The prompt itself, with its tiers and items (for `kope context`): *out
 * is owned by the caller (ctx_prompt_free). task may be NULL (no record yet). */
struct ctx_prompt;
int prompt_make(struct run *r, const struct plat_task *t, const uint8_t *task, const struct history *h,
                struct ctx_prompt *out);
/* The request JSON {"system":..,"user":..,"est":N,"run":R} (the queue's
 * prompt blob; run = the asking run, absent outside one) into *json (heap, caller frees), N (the prompt's token estimate)
 * into *est. 0 or a code. */
int prompt_build(struct run *r, const struct plat_task *t, const uint8_t task[32], const struct history *h,
                 char **json, long *est);

#endif
