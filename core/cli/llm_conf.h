/*
 * core/cli/llm_conf.h - the LLM client's settings from the config file, then
 * the environment (which wins).
 *
 *   config (kope.json)          environment               meaning
 *   llm.base_url                KOPE_LLM_BASE_URL         https://host/v1 (no /chat/completions)
 *   llm.model                   KOPE_LLM_MODEL
 *   -- (refused in the file)    KOPE_LLM_API_KEY          the key itself
 *   llm.api_key_file            KOPE_LLM_API_KEY_FILE     file holding the key; mode 0600, yours
 *   llm.ca_file                 KOPE_LLM_CA_FILE          PEM bundle replacing the system CAs
 *   llm.pinned_key              KOPE_LLM_PINNED_KEY       sha256//<base64>
 *   llm.timeout_ms              KOPE_LLM_TIMEOUT_MS       one attempt
 *   llm.retries                 KOPE_LLM_RETRIES          extra attempts
 *   llm.link_backoff_ms         KOPE_LLM_LINK_BACKOFF_MS  a run's first wait before it retries a
 *                                                         dead link (default AGENT_BACKOFF_MS,
 *                                                         30 s; doubles; llm_conf_link_backoff)
 *   llm.temperature, llm.max_tokens, llm.connect_timeout_ms, llm.total_timeout_ms,
 *   llm.backoff_ms, llm.backoff_max_ms, llm.max_reply_bytes   (config only)
 *
 * The API key never comes from the config file: config files get copied,
 * pasted and shared. KOPE_LLM_API_KEY beats KOPE_LLM_API_KEY_FILE beats
 * llm.api_key_file. Proxies come from the usual environment (https_proxy,
 * no_proxy, ...) through libcurl. See docs/LLM.md.
 */
#ifndef KOPE_LLM_CONF_H
#define KOPE_LLM_CONF_H

#include <stddef.h>

#include "net/llm.h"

struct kope_config;

#ifndef LLM_CONF_KEY_MAX
#define LLM_CONF_KEY_MAX 4096 /* bytes of an API key file */
#endif

/* Where each string setting came from, for `kope llm check`: e.g.
 * "KOPE_LLM_MODEL", "config llm.model", "file /x/key (KOPE_LLM_API_KEY_FILE)"
 * or "not set". Never holds a secret. */
struct llm_conf_origin {
    char base_url[64], model[64], api_key[600], ca_file[64], pinned_key[64];
};

/* Fill s (llm_settings_init'ed by the caller, freed by it with
 * llm_settings_free in every case) from cfg (may be NULL) and the
 * environment; origin may be NULL. Missing base URL or model is not an
 * error here (llm_client_new says so). Returns 0, or KOPE_ERR_CONFIG (a
 * value of the wrong type, an API key in the config file, a key file that
 * others can read), KOPE_ERR_IO, KOPE_ERR_NOMEM, with a message in err. */
int llm_conf_load(const struct kope_config *cfg, struct llm_settings *s, struct llm_conf_origin *origin,
                  char *err, size_t err_len);

/* Register the API key, if one is set, as a secret (core/secret.h) for a
 * command that does not talk to the LLM itself but stores or sends text
 * (sync, graph import): best effort, silent; a broken setting is the LLM
 * commands' to report. */
void llm_conf_secret_register(const struct kope_config *cfg);

/* llm.link_backoff_ms, then KOPE_LLM_LINK_BACKOFF_MS (1 ms .. 1 day) into
 * *ms; left alone when neither is set. 0, or KOPE_ERR_CONFIG with err set
 * for a value out of range. Not a field of struct llm_settings: the net
 * client never waits on it, the agent's queue does (core/agent/queue.c). */
int llm_conf_link_backoff(const struct kope_config *cfg, long *ms, char *err, size_t err_len);

#endif /* KOPE_LLM_CONF_H */
