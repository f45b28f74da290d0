/*
 * core/cli/config.c - load the JSON config file and answer dotted-path lookups.
 * See config.h. The parsed tree is kept whole; lookups walk it.
 *
 * A config that kope would misread is refused before any work: bad JSON is
 * reported at its line and column, and so is every key kope does not read
 * (a typo such as "base_ulr" would otherwise be ignored and the run would go
 * on without the setting) or a value of the wrong JSON type. The keys are
 * the table known_keys[] below: a module that reads a new key adds it there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "core/cli/config.h"
#include "core/err.h"
#include "core/util.h"

struct kope_config {
    cJSON *root;
    char *path;
};

/* ---- the keys kope reads ------------------------------------------------
 * Dotted paths; "*" stands for one path segment of any name (a target's
 * section: platform.k3, platform.ascend, ...). An exact entry wins over a
 * "*" one. CT_ANY: any value (llm.api_key is known only so that
 * core/cli/llm_conf.c can refuse it with its own reason). */
enum cfg_type { CT_STR, CT_NUM, CT_OBJ, CT_ARR, CT_ANY };

static const struct {
    const char *key;
    enum cfg_type type;
} known_keys[] = {
    {"llm", CT_OBJ},
    {"llm.base_url", CT_STR},
    {"llm.model", CT_STR},
    {"llm.api_key", CT_ANY},
    {"llm.api_key_file", CT_STR},
    {"llm.ca_file", CT_STR},
    {"llm.pinned_key", CT_STR},
    {"llm.temperature", CT_NUM},
    {"llm.max_tokens", CT_NUM},
    {"llm.max_tokens_field", CT_STR},
    {"llm.timeout_ms", CT_NUM},
    {"llm.connect_timeout_ms", CT_NUM},
    {"llm.total_timeout_ms", CT_NUM},
    {"llm.backoff_ms", CT_NUM},
    {"llm.backoff_max_ms", CT_NUM},
    {"llm.retries", CT_NUM},
    {"llm.max_reply_bytes", CT_NUM},
    {"platform", CT_OBJ},
    {"platform.name", CT_STR},
    {"platform.*", CT_OBJ},
    {"platform.*.cc", CT_STR},
    {"platform.*.cflags", CT_STR},
    {"platform.*.runner", CT_STR},
    {"platform.*.work_dir", CT_STR},
    {"platform.*.deps_sysroot", CT_STR},
    {"platform.*.icount_plugin", CT_STR},
    {"platform.*.timeout_ms", CT_NUM},
    {"platform.*.compile_timeout_ms", CT_NUM},
    {"platform.*.mem_limit_mb", CT_NUM},
    {"platform.*.output_cap_kb", CT_NUM},
    {"platform.*.min_repeat_ms", CT_NUM},
    {"platform.*.max_repeats", CT_NUM},
    {"platform.*.flush_cache", CT_NUM},
    {"platform.*.home", CT_STR},
    {"platform.*.soc", CT_STR},
    {"platform.*.npu_smi", CT_STR},
    {"platform.*.device", CT_NUM},
    {"platform.*.dlen", CT_NUM},
    {"fleet", CT_OBJ},
    {"fleet.cert", CT_STR},
    {"fleet.ca", CT_STR},
    {"sync", CT_OBJ},
    {"sync.listen", CT_STR},
    {"peers", CT_ARR},
};
#define N_KNOWN (sizeof known_keys / sizeof known_keys[0])
#define CFG_MAX_DEPTH 32
#define CFG_PATH_MAX 256

static const char *type_name(enum cfg_type t)
{
    switch (t) {
    case CT_STR: return "a string";
    case CT_NUM: return "a number";
    case CT_OBJ: return "an object";
    case CT_ARR: return "an array";
    default: return "any value";
    }
}

/* Does pattern (with "*" segments) match path? */
static int key_match(const char *pat, const char *path)
{
    while (*pat && *path) {
        size_t pl = strcspn(pat, "."), xl = strcspn(path, ".");
        if (!(pl == 1 && pat[0] == '*') && (pl != xl || memcmp(pat, path, pl) != 0))
            return 0;
        pat += pl;
        path += xl;
        if ((*pat == '.') != (*path == '.'))
            return 0;
        pat += *pat == '.';
        path += *path == '.';
    }
    return !*pat && !*path;
}

static int key_find(const char *path)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (!strchr(known_keys[i].key, '*') && strcmp(known_keys[i].key, path) == 0)
            return (int)i;
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strchr(known_keys[i].key, '*') && key_match(known_keys[i].key, path))
            return (int)i;
    return -1;
}

/* The known keys next to an unknown one (same parent), for the hint:
 * "base_url, model, ..." */
static void sibling_keys(const char *path, char *out, size_t cap)
{
    const char *dot = strrchr(path, '.');
    size_t plen = dot ? (size_t)(dot - path) : 0;
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < N_KNOWN; i++) {
        const char *k = known_keys[i].key, *kd = strrchr(k, '.');
        size_t kplen = kd ? (size_t)(kd - k) : 0;
        if (!plen != !kplen)
            continue;
        if (plen) {
            char parent[CFG_PATH_MAX];
            snprintf(parent, sizeof parent, "%.*s", (int)plen, path);
            char kparent[CFG_PATH_MAX];
            snprintf(kparent, sizeof kparent, "%.*s", (int)kplen, k);
            if (!key_match(kparent, parent))
                continue;
        }
        const char *leaf = kd ? kd + 1 : k;
        if (strcmp(leaf, "*") == 0)
            continue;
        int w = snprintf(out + n, cap - n, "%s%s", n ? ", " : "", leaf);
        if (w < 0 || (size_t)w >= cap - n)
            break;
        n += (size_t)w;
    }
}

/* A position in the text as FILE:LINE:COLUMN (1-based; columns in bytes). */
static void where(const char *path, const char *text, size_t off, char *out, size_t cap)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(out, cap, "%s:%zu:%zu", path, line, col);
}

/* The key check walks the text (cJSON keeps no positions). The text has
 * already parsed as JSON, so the walk only tracks structure. */
struct scan {
    const char *file, *text;
    size_t len, pos;
    char *err;
    size_t err_len;
};

static void skip_ws(struct scan *s)
{
    while (s->pos < s->len && strchr(" \t\r\n", s->text[s->pos]) && s->text[s->pos])
        s->pos++;
}

/* At a '"': past the closing quote. Returns the raw contents' span. */
static void skip_string(struct scan *s, size_t *start, size_t *n)
{
    size_t b = ++s->pos;
    while (s->pos < s->len && s->text[s->pos] != '"')
        s->pos += s->text[s->pos] == '\\' ? 2 : 1;
    *start = b;
    *n = s->pos - b;
    s->pos++;
}

static void skip_value(struct scan *s)
{
    size_t a, b;
    int depth = 0;
    skip_ws(s);
    do {
        char ch = s->text[s->pos];
        if (ch == '"') {
            skip_string(s, &a, &b);
            continue;
        }
        if (ch == '{' || ch == '[')
            depth++;
        else if (ch == '}' || ch == ']')
            depth--;
        else if (depth == 0 && (ch == ',' || ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'))
            return;
        s->pos++;
    } while (s->pos < s->len && depth > 0);
    /* a scalar: run to its end */
    while (depth == 0 && s->pos < s->len && !strchr(",}] \t\r\n", s->text[s->pos]))
        s->pos++;
}

static enum cfg_type value_type(char ch)
{
    if (ch == '"')
        return CT_STR;
    if (ch == '{')
        return CT_OBJ;
    if (ch == '[')
        return CT_ARR;
    if (ch == '-' || (ch >= '0' && ch <= '9'))
        return CT_NUM;
    return CT_ANY; /* true, false, null */
}

/* At a '{' of the object at path (NULL: the root): check its keys. */
static int check_object(struct scan *s, const char *path, int depth)
{
    if (depth > CFG_MAX_DEPTH) {
        char at[512];
        where(s->file, s->text, s->pos, at, sizeof at);
        snprintf(s->err, s->err_len, "%s: nested deeper than %d levels", at, CFG_MAX_DEPTH);
        return KOPE_ERR_CONFIG;
    }
    s->pos++;
    for (;;) {
        skip_ws(s);
        if (s->pos >= s->len || s->text[s->pos] == '}') {
            s->pos++;
            return 0;
        }
        if (s->text[s->pos] == ',') {
            s->pos++;
            continue;
        }
        size_t key_off = s->pos, ks, kn;
        skip_string(s, &ks, &kn);
        skip_ws(s);
        s->pos++; /* ':' */
        skip_ws(s);
        char full[CFG_PATH_MAX], at[512];
        int w = snprintf(full, sizeof full, "%s%s%.*s", path ? path : "", path ? "." : "", (int)kn,
                         s->text + ks);
        int k = w > 0 && (size_t)w < sizeof full ? key_find(full) : -1;
        if (k < 0) {
            char sib[512];
            where(s->file, s->text, key_off, at, sizeof at);
            sibling_keys(full, sib, sizeof sib);
            snprintf(s->err, s->err_len, "%s: unknown key \"%.200s\"\nhint: kope reads %s%s%s%s",
                     at, full, sib[0] ? "these keys" : "no keys", path ? " under " : " at the top",
                     path ? path : "", sib[0] ? ": " : "");
            size_t used = strlen(s->err);
            if (sib[0])
                snprintf(s->err + used, s->err_len - used, "%s", sib);
            return KOPE_ERR_CONFIG;
        }
        enum cfg_type want = known_keys[k].type, got = value_type(s->text[s->pos]);
        if (want != CT_ANY && got != want) {
            where(s->file, s->text, s->pos, at, sizeof at);
            snprintf(s->err, s->err_len, "%s: \"%.200s\" must be %s", at, full, type_name(want));
            return KOPE_ERR_CONFIG;
        }
        if (want == CT_OBJ) {
            int rc = check_object(s, full, depth + 1);
            if (rc)
                return rc;
        } else {
            skip_value(s);
        }
    }
}

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
                where(path, text, i, at, sizeof at);
                snprintf(err, err_len, "%s: invalid JSON: a comma before '%c' (JSON allows no "
                         "trailing comma)", at, text[j]);
                return;
            }
        }
    }
    where(path, text, off, at, sizeof at);
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
    struct scan sc = {path, text, len, 0, err, err_len};
    skip_ws(&sc);
    if ((rc = check_object(&sc, NULL, 1)))
        goto out;
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
