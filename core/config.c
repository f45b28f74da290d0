/*
 * core/config.c - load the JSON config file and answer dotted-path lookups.
 * See config.h. The parsed tree is kept whole; lookups walk it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "core/config.h"
#include "core/err.h"
#include "core/util.h"

struct kope_config {
    cJSON *root;
    char *path;
};

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
    cfg->root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!cfg->root) {
        size_t off = end ? (size_t)(end - text) : 0, line = 1;
        for (size_t i = 0; i < off && i < len; i++)
            line += text[i] == '\n';
        snprintf(err, err_len, "%s: invalid JSON near line %zu", path, line);
        rc = KOPE_ERR_CONFIG;
        goto out;
    }
    if (!cJSON_IsObject(cfg->root)) {
        snprintf(err, err_len, "%s: the config must be a JSON object", path);
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
