/*
 * core/cli/llm_conf.c - struct llm_settings from kope.json and KOPE_LLM_*.
 * See llm_conf.h for the table of settings.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cli/config.h"
#include "core/err.h"
#include "core/cli/llm_conf.h"
#include "core/secret.h"

static int set_str(char **field, const char *v, char *origin, size_t olen, const char *from)
{
    if (llm_settings_set(field, v))
        return KOPE_ERR_NOMEM;
    if (origin)
        snprintf(origin, olen, "%s", from);
    return 0;
}

/* A string setting: config key, then environment variable. */
static int take_str(const struct kope_config *cfg, const char *key, const char *env, char **field,
                    char *origin, size_t olen, char *err, size_t err_len)
{
    int rc;
    const char *v;
    char from[64];
    if (origin)
        snprintf(origin, olen, "not set");
    if (cfg && kope_config_node(cfg, key)) {
        if (!(v = kope_config_str(cfg, key, NULL))) {
            snprintf(err, err_len, "config %s must be a string", key);
            return KOPE_ERR_CONFIG;
        }
        snprintf(from, sizeof from, "config %s", key);
        if ((rc = set_str(field, v, origin, olen, from)))
            return rc;
    }
    if ((v = getenv(env)) && *v)
        return set_str(field, v, origin, olen, env);
    return 0;
}

/* A number setting from the config, in [lo, hi]. */
static int take_num(const struct kope_config *cfg, const char *key, double lo, double hi, double *out,
                    char *err, size_t err_len)
{
    if (!cfg || !kope_config_node(cfg, key))
        return 0;
    double v = kope_config_num(cfg, key, NAN);
    if (!(v >= lo && v <= hi)) {
        snprintf(err, err_len, "config %s must be a number from %g to %g", key, lo, hi);
        return KOPE_ERR_CONFIG;
    }
    *out = v;
    return 0;
}

static int env_long(const char *env, long lo, long hi, long *out, char *err, size_t err_len)
{
    const char *v = getenv(env);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < lo || x > hi) {
        snprintf(err, err_len, "%s='%s' is not a number from %ld to %ld", env, v, lo, hi);
        return KOPE_ERR_CONFIG;
    }
    *out = x;
    return 0;
}

/* Read an API key file: a regular file of ours that no one else may read. */
static int read_key_file(const char *path, struct llm_settings *s, char *err, size_t err_len)
{
    int rc = KOPE_ERR_IO;
    char buf[LLM_CONF_KEY_MAX + 1];
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat sb;
    if (fd < 0) {
        snprintf(err, err_len, "API key file %s: %s", path, strerror(errno));
        return KOPE_ERR_IO;
    }
    if (fstat(fd, &sb) != 0) {
        snprintf(err, err_len, "API key file %s: %s", path, strerror(errno));
        goto out;
    }
    rc = KOPE_ERR_CONFIG;
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, err_len, "API key file %s is not a regular file", path);
        goto out;
    }
    if (sb.st_mode & 077) {
        snprintf(err, err_len, "API key file %s is mode %04o: others may read it; run `chmod 600 %s`", path,
                 (unsigned)(sb.st_mode & 07777), path);
        goto out;
    }
    if (sb.st_uid != geteuid()) {
        snprintf(err, err_len, "API key file %s belongs to uid %u, not to you (uid %u)", path,
                 (unsigned)sb.st_uid, (unsigned)geteuid());
        goto out;
    }
    for (;;) {
        ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(err, err_len, "API key file %s: %s", path, strerror(errno));
            rc = KOPE_ERR_IO;
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == sizeof buf - 1) {
            snprintf(err, err_len, "API key file %s is over %d bytes", path, LLM_CONF_KEY_MAX);
            rc = KOPE_ERR_TOOBIG;
            goto out;
        }
    }
    buf[len] = '\0';
    /* The key is the first line, trimmed (editors add a newline). */
    char *k = buf;
    while (*k == ' ' || *k == '\t' || *k == '\r' || *k == '\n')
        k++;
    k[strcspn(k, "\r\n")] = '\0';
    size_t kl = strlen(k);
    while (kl && (k[kl - 1] == ' ' || k[kl - 1] == '\t'))
        k[--kl] = '\0';
    if (!kl) {
        snprintf(err, err_len, "API key file %s is empty", path);
        goto out;
    }
    rc = llm_settings_set(&s->api_key, k) ? KOPE_ERR_NOMEM : 0;
out:
    explicit_bzero(buf, sizeof buf);
    close(fd);
    return rc;
}

int llm_conf_load(const struct kope_config *cfg, struct llm_settings *s, struct llm_conf_origin *o,
                  char *err, size_t err_len)
{
    int rc;
    struct llm_conf_origin dummy;
    if (!o)
        o = &dummy;
    memset(o, 0, sizeof *o);
    if (cfg && kope_config_node(cfg, "llm.api_key")) {
        snprintf(err, err_len, "config llm.api_key is refused: config files get copied and shared. Put the key "
                               "in a file only you can read (chmod 600) and set llm.api_key_file, or set "
                               "KOPE_LLM_API_KEY");
        return KOPE_ERR_CONFIG;
    }
    if ((rc = take_str(cfg, "llm.base_url", "KOPE_LLM_BASE_URL", &s->base_url, o->base_url, sizeof o->base_url,
                       err, err_len)) ||
        (rc = take_str(cfg, "llm.model", "KOPE_LLM_MODEL", &s->model, o->model, sizeof o->model, err, err_len)) ||
        (rc = take_str(cfg, "llm.ca_file", "KOPE_LLM_CA_FILE", &s->ca_file, o->ca_file, sizeof o->ca_file, err,
                       err_len)) ||
        (rc = take_str(cfg, "llm.pinned_key", "KOPE_LLM_PINNED_KEY", &s->pinned_key, o->pinned_key,
                       sizeof o->pinned_key, err, err_len)))
        return rc;

    /* The API key: environment, else a key file named by env or config;
     * registered as a secret (core/secret.h) the moment kope holds it. */
    const char *key = getenv("KOPE_LLM_API_KEY");
    snprintf(o->api_key, sizeof o->api_key, "not set");
    if (key && *key) {
        if (llm_settings_set(&s->api_key, key))
            return KOPE_ERR_NOMEM;
        snprintf(o->api_key, sizeof o->api_key, "KOPE_LLM_API_KEY");
    } else {
        const char *kf = getenv("KOPE_LLM_API_KEY_FILE"), *from = "KOPE_LLM_API_KEY_FILE";
        if (!kf || !*kf) {
            if (cfg && kope_config_node(cfg, "llm.api_key_file") &&
                !(kf = kope_config_str(cfg, "llm.api_key_file", NULL))) {
                snprintf(err, err_len, "config llm.api_key_file must be a string");
                return KOPE_ERR_CONFIG;
            }
            from = "config llm.api_key_file";
        }
        if (kf && *kf) {
            if ((rc = read_key_file(kf, s, err, err_len)))
                return rc;
            snprintf(o->api_key, sizeof o->api_key, "file %.500s (%s)", kf, from);
        }
    }
    if (s->api_key && (rc = secret_add(s->api_key, strlen(s->api_key), "the LLM API key"))) {
        snprintf(err, err_len, "cannot register the API key as a secret: %s", kope_strerror(rc));
        return rc;
    }

    if (cfg && kope_config_node(cfg, "llm.max_tokens_field")) {
        const char *f = kope_config_str(cfg, "llm.max_tokens_field", NULL);
        if (f && strcmp(f, "max_tokens") == 0)
            s->max_tokens_field = LLM_MAX_TOKENS;
        else if (f && strcmp(f, "max_completion_tokens") == 0)
            s->max_tokens_field = LLM_MAX_COMPLETION_TOKENS;
        else {
            snprintf(err, err_len, "config llm.max_tokens_field must be \"max_tokens\" or "
                                   "\"max_completion_tokens\" (endpoints of reasoning models that refuse "
                                   "max_tokens)");
            return KOPE_ERR_CONFIG;
        }
    }

    double v;
    v = s->temperature;
    if ((rc = take_num(cfg, "llm.temperature", -1, 2, &v, err, err_len)))
        return rc;
    s->temperature = v;
    struct { const char *key; double lo, hi; long *dst; } nums[] = {
        {"llm.max_tokens", 0, 1e7, &s->max_tokens},
        {"llm.timeout_ms", 1, 86400e3, &s->timeout_ms},
        {"llm.connect_timeout_ms", 1, 600e3, &s->connect_timeout_ms},
        {"llm.total_timeout_ms", 1, 7 * 86400e3, &s->total_timeout_ms},
        {"llm.backoff_ms", 0, 3600e3, &s->backoff_ms},
        {"llm.backoff_max_ms", 0, 3600e3, &s->backoff_max_ms},
    };
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        v = (double)*nums[i].dst;
        if ((rc = take_num(cfg, nums[i].key, nums[i].lo, nums[i].hi, &v, err, err_len)))
            return rc;
        *nums[i].dst = (long)v;
    }
    v = s->retries;
    if ((rc = take_num(cfg, "llm.retries", 0, 100, &v, err, err_len)))
        return rc;
    s->retries = (int)v;
    v = (double)s->max_reply_bytes;
    if ((rc = take_num(cfg, "llm.max_reply_bytes", 1024, 1024.0 * 1024 * 1024, &v, err, err_len)))
        return rc;
    s->max_reply_bytes = (size_t)v;

    long l = s->timeout_ms;
    if ((rc = env_long("KOPE_LLM_TIMEOUT_MS", 1, 86400000L, &l, err, err_len)))
        return rc;
    s->timeout_ms = l;
    l = s->retries;
    if ((rc = env_long("KOPE_LLM_RETRIES", 0, 100, &l, err, err_len)))
        return rc;
    s->retries = (int)l;
    return 0;
}

void llm_conf_secret_register(const struct kope_config *cfg)
{
    struct llm_settings s;
    char err[256];
    llm_settings_init(&s);
    (void)llm_conf_load(cfg, &s, NULL, err, sizeof err); /* registers the key, if one is set */
    llm_settings_free(&s);
}

int llm_conf_link_backoff(const struct kope_config *cfg, long *ms, char *err, size_t err_len)
{
    double v = (double)*ms;
    int rc = take_num(cfg, "llm.link_backoff_ms", 1, 86400e3, &v, err, err_len);
    if (rc)
        return rc;
    long l = (long)v;
    if ((rc = env_long("KOPE_LLM_LINK_BACKOFF_MS", 1, 86400000L, &l, err, err_len)))
        return rc;
    *ms = l;
    return 0;
}
