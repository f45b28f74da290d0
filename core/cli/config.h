/*
 * core/cli/config.h - kope's JSON config file.
 *
 * One JSON object; sections are read by the modules that need them, through
 * dotted paths: "llm.base_url", "platform.k3.cc", "peers". Environment
 * variables override the file where a module says so (the module reads the
 * variable itself, after the config). Example:
 *
 *   { "llm": {"base_url": "http://127.0.0.1:8080/v1", "model": "qwen"},
 *     "platform": {"name": "k3", "k3": {"cc": "clang", "runner": ""}},
 *     "peers": ["board2.lan:7443"] }
 *
 * The file is capped at KOPE_CONFIG_MAX_BYTES and at JSON nesting depth 32.
 */
#ifndef KOPE_CONFIG_H
#define KOPE_CONFIG_H

#ifndef KOPE_CONFIG_MAX_BYTES
#define KOPE_CONFIG_MAX_BYTES (1024 * 1024)
#endif

struct kope_config;

/* Load PATH. If PATH is NULL, use ./kope.json when it exists, otherwise an
 * empty config. On failure returns a KOPE_ERR_* code and writes a message
 * naming the file (and line for JSON errors) into err. *out is owned by the
 * caller: free with kope_config_free. */
int kope_config_load(const char *path, struct kope_config **out, char *err, size_t err_len);
void kope_config_free(struct kope_config *cfg);

/* Values by dotted path; return the default when absent or of another type.
 * Returned strings belong to cfg. */
const char *kope_config_str(const struct kope_config *cfg, const char *path, const char *def);
double kope_config_num(const struct kope_config *cfg, const char *path, double def);
/* The cJSON node at path, or NULL (owned by cfg; cast to cJSON *). */
const void *kope_config_node(const struct kope_config *cfg, const char *path);
/* The file this config came from, or NULL for the empty default. */
const char *kope_config_path(const struct kope_config *cfg);

#endif /* KOPE_CONFIG_H */
