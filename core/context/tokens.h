/*
 * core/context/tokens.h - the project's token estimator, and its per-endpoint
 * calibration.
 *
 * tokens_estimate() approximates what a GPT-style byte-pair tokenizer
 * (cl100k/o200k) makes of a text, by walking it in the same pieces that
 * tokenizer's pre-split uses (words with their leading space, digit runs of
 * up to 3, punctuation runs, whitespace runs) and charging each piece by its
 * class and length. It is checked against the real tokenizer (the npm
 * package gpt-tokenizer) on kope's own prompts in tests/test_context_tokens.c:
 * mean absolute error within 10%.
 *
 * An endpoint's own tokenizer differs (Qwen, DeepSeek, ...), so when a reply
 * reports usage.prompt_tokens the agent calls tokens_calibrate(): the factor
 * reported/estimated, smoothed over calls, is kept in the store's meta table
 * under "tokens.calib.<endpoint>" and applied by tokens_calibrated().
 *
 * Pure functions except the two that take a store.
 */
#ifndef KOPE_TOKENS_H
#define KOPE_TOKENS_H

#include <stddef.h>

struct store;

/* Estimated tokens of len bytes of text (deterministic, no allocation). */
size_t tokens_estimate(const char *text, size_t len);
/* Same, for a NUL-terminated string (NULL = 0). */
size_t tokens_estimate_str(const char *s);

/* Calibration factor of endpoint (reported / estimated), 1.0 when none is
 * stored or endpoint is NULL/empty. Never fails: a store error reads as 1.0. */
double tokens_factor(struct store *st, const char *endpoint);
/* n_raw scaled by the endpoint's factor (rounded up). */
size_t tokens_calibrated(struct store *st, const char *endpoint, size_t n_raw);
/* Fold one observation (our raw estimate of a prompt, the endpoint's
 * usage.prompt_tokens) into the stored factor: an exponential moving
 * average (weight 1/4 for the new sample, the first sample taken as is),
 * clamped to [0.5, 2] (a server reporting nonsense cannot skew it
 * further). reported <= 0 or n_raw == 0 is ignored (returns 0). The agent
 * calls it after every answered call (core/agent/pump.c). Returns 0 or a
 * STORE_ERR_* code. */
int tokens_calibrate(struct store *st, const char *endpoint, size_t n_raw, long reported);

#endif /* KOPE_TOKENS_H */
