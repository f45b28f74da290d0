/*
 * core/cli/config.c - load the JSON config file and answer dotted-path lookups.
 * See config.h. The parsed tree is kept whole; lookups walk it.
 *
 * A config that kope would misread is refused before any work: bad JSON is
 * reported at its line and column, and so is every key kope does not read
 * (a typo such as "base_ulr" would otherwise be ignored and the run would go
 * on without the setting) or a value of the wrong JSON type (the walk:
 * core/jsonkeys.c, shared with task suites). The keys are the table
 * known_keys[] below: a module that reads a new key adds it there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "core/cli/config.h"
#include "core/err.h"
#include "core/jsonkeys.h"
#include "core/util.h"

struct kope_config {
    cJSON *root;
    char *path;
};

/* ---- the keys kope reads ------------------------------------------------
 * Dotted paths (core/jsonkeys.h); "*" stands for one path segment of any
 * name (a target's section: platform.k3, platform.ascend, ...). An exact
 * entry wins over a "*" one. JK_ANY: any value (llm.api_key is known only
 * so that core/cli/llm_conf.c can refuse it with its own reason). */
static const struct jk_key known_keys[] = {
    {"llm", JK_OBJ},
    {"llm.base_url", JK_STR},
    {"llm.model", JK_STR},
    {"llm.api_key", JK_ANY},
    {"llm.api_key_file", JK_STR},
    {"llm.ca_file", JK_STR},
    {"llm.pinned_key", JK_STR},
    {"llm.temperature", JK_NUM},
    {"llm.max_tokens", JK_NUM},
    {"llm.max_tokens_field", JK_STR},
    {"llm.timeout_ms", JK_NUM},
    {"llm.connect_timeout_ms", JK_NUM},
    {"llm.total_timeout_ms", JK_NUM},
    {"llm.backoff_ms", JK_NUM},
    {"llm.backoff_max_ms", JK_NUM},
    {"llm.link_backoff_ms", JK_NUM},
    {"llm.retries", JK_NUM},
    {"llm.max_reply_bytes", JK_NUM},
    {"platform", JK_OBJ},
    {"platform.name", JK_STR},
    {"platform.*", JK_OBJ},
    {"platform.*.cc", JK_STR},
    {"platform.*.cflags", JK_STR},
    {"platform.*.runner", JK_STR},
    {"platform.*.work_dir", JK_STR},
    {"platform.*.deps_sysroot", JK_STR},
    {"platform.*.icount_plugin", JK_STR},
    {"platform.*.timeout_ms", JK_NUM},
    {"platform.*.compile_timeout_ms", JK_NUM},
    {"platform.*.mem_limit_mb", JK_NUM},
    {"platform.*.output_cap_kb", JK_NUM},
    {"platform.*.min_repeat_ms", JK_NUM},
    {"platform.*.max_repeats", JK_NUM},
    {"platform.*.flush_cache", JK_NUM},
    {"platform.*.home", JK_STR},
    {"platform.*.soc", JK_STR},
    {"platform.*.npu_smi", JK_STR},
    {"platform.*.device", JK_NUM},
    {"platform.*.dlen", JK_NUM},
    {"platform.*.model", JK_STR},
    {"platform.*.mca_cache", JK_STR},
    {"platform.*.verify_seed", JK_STR}, /* k3: replay a verify's drawn sizes ("123", "0x...") */
    {"platform.*.verify_vlens", JK_STR}, /* k3: the VLENs verified under qemu ("128,256,512,1024") */
    {"fleet", JK_OBJ},
    {"fleet.cert", JK_STR},
    {"fleet.ca", JK_STR},
    {"sync", JK_OBJ},
    {"sync.listen", JK_STR},
    {"peers", JK_ARR},
};
#define N_KNOWN (sizeof known_keys / sizeof known_keys[0])

/* Text for a JSON syntax error at off: what is there. */
static void syntax_error(const char *path, const char *text, size_t len, size_t off, char *err,
                         size_t err_len)
{
    char at[512];
    /* cJSON stops at the close after a trailing comma, or later: find the
     * comma itself (outside strings) so the position names it */
    int in_str = 0;
    for (size_t i = 0; i < off && i < len; i++) {
        if (in_str) {
            if (text[i] == '\\')
                i++;
            else if (text[i] == '"')
                in_str = 0;
            continue;
        }
        if (text[i] == '"') {
            in_str = 1;
        } else if (text[i] == ',') {
            size_t j = i + 1;
            while (j < len && strchr(" \t\r\n", text[j]) && text[j])
                j++;
            if (j < len && (text[j] == '}' || text[j] == ']')) {
                jsonkeys_where(path, text, i, at, sizeof at);
                snprintf(err, err_len, "%s: invalid JSON: a comma before '%c' (JSON allows no "
                         "trailing comma)", at, text[j]);
                return;
            }
        }
    }
    jsonkeys_where(path, text, off, at, sizeof at);
    if (off >= len)
        snprintf(err, err_len, "%s: invalid JSON: the text ends too early (a missing } or ]?)", at);
    else if (text[off] == '\n' || text[off] == '\r')
        snprintf(err, err_len, "%s: invalid JSON at the end of the line", at);
    else
        snprintf(err, err_len, "%s: invalid JSON at '%c'", at, text[off]);
}

int kope_config_load(const char *path, struct kope_config **out, char *err, size_t err_len)
{
    int rc = KOPE_ERR_INTERNAL;
    char *text = NULL;
    size_t len = 0;
    struct kope_config *cfg = calloc(1, sizeof *cfg);
    *out = NULL;
    if (!cfg)
        return KOPE_ERR_NOMEM;
    if (!path) {
        struct stat sb;
        if (stat("kope.json", &sb) != 0) {
            cfg->root = cJSON_CreateObject();
            if (!cfg->root) {
                rc = KOPE_ERR_NOMEM;
                goto out;
            }
            *out = cfg;
            return 0;
        }
        path = "kope.json";
    }
    rc = util_read_file(path, KOPE_CONFIG_MAX_BYTES, &text, &len, err, err_len);
    if (rc)
        goto out;
    const char *end = NULL;
    cfg->root = cJSON_ParseWithLengthOpts(text, len + 1, &end, 1); /* the NUL too: nothing may follow the object */
    if (!cfg->root) {
        size_t off = end ? (size_t)(end - text) : 0;
        syntax_error(path, text, len, off < len ? off : len, err, err_len);
        rc = KOPE_ERR_CONFIG;
        goto out;
    }
    if (!cJSON_IsObject(cfg->root)) {
        snprintf(err, err_len, "%s: the config must be a JSON object ({ ... })", path);
        rc = KOPE_ERR_CONFIG;
        goto out;
    }
    if (jsonkeys_check(path, text, len, known_keys, N_KNOWN, err, err_len)) {
        rc = KOPE_ERR_CONFIG;
        goto out;
    }
    cfg->path = strdup(path);
    if (!cfg->path) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    *out = cfg;
    cfg = NULL;
    rc = 0;
out:
    free(text);
    kope_config_free(cfg);
    return rc;
}

void kope_config_free(struct kope_config *cfg)
{
    if (!cfg)
        return;
    cJSON_Delete(cfg->root);
    free(cfg->path);
    free(cfg);
}

const void *kope_config_node(const struct kope_config *cfg, const char *path)
{
    if (!cfg || !cfg->root || !path)
        return NULL;
    const cJSON *n = cfg->root;
    char key[128];
    while (*path && n) {
        size_t k = strcspn(path, ".");
        if (k >= sizeof key)
            return NULL;
        memcpy(key, path, k);
        key[k] = '\0';
        n = cJSON_GetObjectItemCaseSensitive(n, key);
        path += k + (path[k] == '.');
    }
    return n;
}

const char *kope_config_str(const struct kope_config *cfg, const char *path, const char *def)
{
    const cJSON *n = kope_config_node(cfg, path);
    return cJSON_IsString(n) ? n->valuestring : def;
}

double kope_config_num(const struct kope_config *cfg, const char *path, double def)
{
    const cJSON *n = kope_config_node(cfg, path);
    return cJSON_IsNumber(n) ? n->valuedouble : def;
}

const char *kope_config_path(const struct kope_config *cfg)
{
    return cfg ? cfg->path : NULL;
}
