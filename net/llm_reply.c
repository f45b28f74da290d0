/*
 * net/llm_reply.c - chat completion reply parsing and kernel / decision
 * extraction. See llm_reply.h for the rules; this file is fuzzed.
 *
 * Everything here works on (pointer, length) line views of the content and
 * copies out only what it keeps, so a hostile reply can cost at most a few
 * passes over a body that http.c already capped.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "net/llm_reply.h"

const char LLM_REPLY_FORMAT[] =
    "Answer in exactly this form:\n"
    "TAGS: <comma-separated transformation tags, e.g. vectorize-lmul4, unroll-2, tail-mask>\n"
    "RATIONALE: <one short paragraph: why this should be faster and still correct>\n"
    "```c\n"
    "<the complete kernel source, one file>\n"
    "```\n";

void llm_reply_init(struct llm_reply *r)
{
    memset(r, 0, sizeof *r);
    r->n_tokens_in = r->n_tokens_out = -1;
}

static void clear_extraction(struct llm_reply *r)
{
    free(r->kernel);
    r->kernel = NULL;
    r->code = LLM_CODE_NONE;
    r->kernel_lang[0] = '\0';
    r->no_code[0] = '\0';
    for (size_t i = 0; i < r->n_tags; i++)
        free(r->tags[i]);
    r->n_tags = 0;
    free(r->rationale);
    r->rationale = NULL;
}

void llm_reply_free(struct llm_reply *r)
{
    if (!r)
        return;
    clear_extraction(r);
    free(r->content);
    free(r->reasoning);
    free(r->model);
    free(r->finish_reason);
    llm_reply_init(r);
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* ------------------------------------------------------------ lines */

struct line {
    const char *p;
    size_t n;       /* without the newline */
};

/* Next line of text[*off..len); 0 at the end. */
static int next_line(const char *text, size_t len, size_t *off, struct line *l)
{
    if (*off >= len)
        return 0;
    const char *s = text + *off;
    const char *nl = memchr(s, '\n', len - *off);
    size_t n = nl ? (size_t)(nl - s) : len - *off;
    *off += n + (nl ? 1 : 0);
    if (n && s[n - 1] == '\r')
        n--;
    l->p = s;
    l->n = n;
    return 1;
}

static int line_blank(struct line l)
{
    for (size_t i = 0; i < l.n; i++)
        if (!isspace((unsigned char)l.p[i]))
            return 0;
    return 1;
}

/* A fence line: up to 3 spaces, then 3+ of ` or ~. Returns its length and
 * char, and the info word (lower case) when info != NULL. */
static size_t fence_of(struct line l, char *ch, char *info, size_t info_len)
{
    size_t i = 0;
    while (i < l.n && i < 3 && l.p[i] == ' ')
        i++;
    if (i >= l.n || (l.p[i] != '`' && l.p[i] != '~'))
        return 0;
    char c = l.p[i];
    size_t k = i;
    while (k < l.n && l.p[k] == c)
        k++;
    if (k - i < 3)
        return 0;
    if (info) {
        size_t j = k, o = 0;
        while (j < l.n && isspace((unsigned char)l.p[j]))
            j++;
        if (j < l.n && l.p[j] == '{') /* ```{.c} style */
            j++;
        if (j < l.n && l.p[j] == '.')
            j++;
        while (j < l.n && o + 1 < info_len && !isspace((unsigned char)l.p[j]) && l.p[j] != '}' &&
               l.p[j] != '`')
            info[o++] = (char)tolower((unsigned char)l.p[j++]);
        info[o] = '\0';
    }
    *ch = c;
    return k - i;
}

/* Is the fence's rest only whitespace (a valid closing fence)? */
static int fence_closes(struct line l, char ch, size_t open_len)
{
    char c;
    size_t n = fence_of(l, &c, NULL, 0);
    if (!n || c != ch || n < open_len)
        return 0;
    size_t i = 0;
    while (i < l.n && l.p[i] == ' ')
        i++;
    for (i += n; i < l.n; i++)
        if (!isspace((unsigned char)l.p[i]))
            return 0;
    return 1;
}

static int lang_is_code(const char *lang)
{
    static const char *const ok[] = {"", "c", "cpp", "c++", "cc", "cxx", "h", "hpp",
                                     "ascendc", "ascend-c", "ascend_c", "cce", NULL};
    for (const char *const *p = ok; *p; p++)
        if (strcmp(lang, *p) == 0)
            return 1;
    return 0;
}

/* Brace balance of C text, skipping comments, strings and char literals.
 * Returns 1 when balanced with at least one pair and never negative. */
static int braces_balanced(const char *s, size_t n)
{
    long depth = 0, pairs = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            i++;
        } else if (c == '"' || c == '\'') {
            for (i++; i < n && s[i] != c && s[i] != '\n'; i++)
                if (s[i] == '\\')
                    i++;
        } else if (c == '{') {
            depth++, pairs++;
        } else if (c == '}') {
            if (--depth < 0)
                return 0;
        }
    }
    return depth == 0 && pairs > 0;
}

/* ------------------------------------------------------------ kernel */

static int set_kernel(struct llm_reply *r, const char *p, size_t n, enum llm_code how, const char *lang)
{
    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
        n--;
    r->kernel = malloc(n + 2);
    if (!r->kernel)
        return NET_ERR_NOMEM;
    memcpy(r->kernel, p, n);
    r->kernel[n] = '\n';
    r->kernel[n + 1] = '\0';
    r->code = how;
    snprintf(r->kernel_lang, sizeof r->kernel_lang, "%s", lang);
    return 0;
}

/* Does a line start C code at top level? */
static int starts_c(struct line l)
{
    static const char *const pp[] = {"#include", "#define", "#pragma", "#if", "typedef ", NULL};
    for (const char *const *p = pp; *p; p++)
        if (l.n >= strlen(*p) && memcmp(l.p, *p, strlen(*p)) == 0)
            return 1;
    /* a function head at column 0: identifier ... '(' and not prose (no ". ") */
    if (l.n == 0 || !(isalpha((unsigned char)l.p[0]) || l.p[0] == '_'))
        return 0;
    const char *par = memchr(l.p, '(', l.n);
    if (!par || par == l.p)
        return 0;
    for (const char *q = l.p; q < par; q++)
        if (!(isalnum((unsigned char)*q) || *q == '_' || *q == ' ' || *q == '*'))
            return 0;
    return memchr(l.p, ' ', (size_t)(par - l.p)) != NULL && l.p[l.n - 1] != '.' && l.p[l.n - 1] != ':';
}

static int extract_unfenced(const char *text, size_t len, struct llm_reply *r)
{
    size_t off = 0, start = (size_t)-1, end = 0;
    struct line l;
    while (next_line(text, len, &off, &l)) {
        if (start == (size_t)-1 && starts_c(l))
            start = (size_t)(l.p - text);
        if (start != (size_t)-1 && l.n && l.p[0] == '}')
            end = (size_t)(l.p - text) + l.n;
    }
    if (start == (size_t)-1 || end <= start) {
        snprintf(r->no_code, sizeof r->no_code, "no code: the reply has no code block and no C code");
        return 0;
    }
    if (!braces_balanced(text + start, end - start) || !memchr(text + start, ';', end - start)) {
        snprintf(r->no_code, sizeof r->no_code,
                 "no code: unfenced text looks like code but its braces do not balance");
        return 0;
    }
    return set_kernel(r, text + start, end - start, LLM_CODE_UNFENCED, "");
}

static int extract_kernel(const char *text, size_t len, struct llm_reply *r)
{
    size_t off = 0, best_start = 0, best_len = 0;
    int n_blocks = 0, have_best = 0, open = 0, unclosed = 0;
    char ch = 0, lang[16] = "", best_lang[16] = "", other[16] = "";
    size_t open_len = 0, body_start = 0;
    struct line l;
    while (next_line(text, len, &off, &l)) {
        if (!open) {
            char info[16];
            size_t n = fence_of(l, &ch, info, sizeof info);
            if (n) {
                open = 1, open_len = n, body_start = off;
                snprintf(lang, sizeof lang, "%s", info);
            }
        } else if (fence_closes(l, ch, open_len)) {
            open = 0, n_blocks++;
            size_t blen = (size_t)(l.p - text) - body_start;
            if (lang_is_code(lang)) {
                if (!have_best || blen >= best_len) {
                    have_best = 1, best_start = body_start, best_len = blen;
                    snprintf(best_lang, sizeof best_lang, "%s", lang);
                }
            } else if (!other[0]) {
                snprintf(other, sizeof other, "%s", lang);
            }
        }
    }
    if (open) { /* an unclosed fence runs to the end: take it only if it is whole C */
        n_blocks++;
        size_t blen = len > body_start ? len - body_start : 0;
        if (lang_is_code(lang) && braces_balanced(text + body_start, blen)) {
            if (!have_best || blen >= best_len) {
                have_best = 1, best_start = body_start, best_len = blen;
                snprintf(best_lang, sizeof best_lang, "%s", lang);
            }
        } else {
            unclosed = 1;
        }
    }
    if (have_best) {
        if (best_len == 0 || line_blank((struct line){text + best_start, best_len})) {
            snprintf(r->no_code, sizeof r->no_code, "no code: the code block is empty");
            return 0;
        }
        return set_kernel(r, text + best_start, best_len, LLM_CODE_FENCED, best_lang);
    }
    if (unclosed) {
        snprintf(r->no_code, sizeof r->no_code,
                 "no code: the code block is not closed and incomplete (reply cut off?)");
        return 0;
    }
    if (n_blocks) {
        snprintf(r->no_code, sizeof r->no_code, "no code: only code blocks in other languages (%s)",
                 other[0] ? other : "?");
        return 0;
    }
    return extract_unfenced(text, len, r);
}

/* ------------------------------------------------------------ decision */

/* Strip markdown decoration: spaces, '*', '_', '#', '-', '>' at the start. */
static struct line undecorate(struct line l)
{
    while (l.n && strchr(" \t*_#->", l.p[0]))
        l.p++, l.n--;
    return l;
}

/* If l starts with key (case-insensitive) followed by optional decoration and
 * ':', return the rest after it in *rest. */
static int keyed(struct line l, const char *key, struct line *rest)
{
    l = undecorate(l);
    size_t k = strlen(key);
    if (l.n < k || strncasecmp(l.p, key, k) != 0)
        return 0;
    size_t i = k;
    while (i < l.n && (l.p[i] == '*' || l.p[i] == '_' || l.p[i] == ' '))
        i++;
    if (i >= l.n || l.p[i] != ':')
        return 0;
    i++;
    while (i < l.n && (l.p[i] == '*' || l.p[i] == '_' || l.p[i] == ' ' || l.p[i] == '\t'))
        i++;
    rest->p = l.p + i;
    rest->n = l.n - i;
    return 1;
}

static int add_tags(struct llm_reply *r, struct line v)
{
    size_t i = 0;
    while (i < v.n && r->n_tags < LLM_MAX_TAGS) {
        char tag[LLM_MAX_TAG_LEN + 1];
        size_t o = 0;
        while (i < v.n && (v.p[i] == ',' || v.p[i] == ';' || isspace((unsigned char)v.p[i]) ||
                           v.p[i] == '`' || v.p[i] == '*'))
            i++;
        size_t s = i;
        while (i < v.n && v.p[i] != ',' && v.p[i] != ';')
            i++;
        size_t e = i;
        while (e > s && (isspace((unsigned char)v.p[e - 1]) || v.p[e - 1] == '`' || v.p[e - 1] == '*' ||
                         v.p[e - 1] == '.'))
            e--;
        for (size_t j = s; j < e && o < LLM_MAX_TAG_LEN; j++) {
            unsigned char c = (unsigned char)v.p[j];
            if (isalnum(c) || c == '.' || c == '_' || c == '+' || c == '-')
                tag[o++] = (char)tolower(c);
            else if ((c == ' ' || c == '\t' || c == '/') && o && tag[o - 1] != '-')
                tag[o++] = '-';
        }
        while (o && tag[o - 1] == '-')
            o--;
        if (!o)
            continue;
        tag[o] = '\0';
        int dup = 0;
        for (size_t k = 0; k < r->n_tags; k++)
            dup |= strcmp(r->tags[k], tag) == 0;
        if (dup)
            continue;
        if (!(r->tags[r->n_tags] = dup_n(tag, o)))
            return NET_ERR_NOMEM;
        r->n_tags++;
    }
    return 0;
}

static int extract_decision(const char *text, size_t len, struct llm_reply *r)
{
    size_t off = 0, open_len = 0;
    int in_fence = 0, have_tags = 0, in_rat = 0;
    char ch = 0;
    char *rat = NULL;
    size_t rat_len = 0;
    struct line l, v;
    while (next_line(text, len, &off, &l)) {
        char c;
        if (in_fence) {
            if (fence_closes(l, ch, open_len))
                in_fence = 0;
            continue;
        }
        size_t fl = fence_of(l, &c, NULL, 0);
        if (fl) {
            in_fence = 1, ch = c, open_len = fl, in_rat = 0;
            continue;
        }
        if (keyed(l, "tags", &v)) {
            in_rat = 0;
            if (!have_tags) {
                have_tags = 1;
                if (add_tags(r, v))
                    goto nomem;
            }
            continue;
        }
        if (!rat && keyed(l, "rationale", &v)) {
            if (!(rat = malloc(LLM_MAX_RATIONALE + 1)))
                goto nomem;
            in_rat = 1;
            l = v;
        } else if (in_rat && (line_blank(l) || keyed(l, "code", &v) || keyed(l, "kernel", &v))) {
            in_rat = 0;
            continue;
        }
        if (in_rat && rat_len < LLM_MAX_RATIONALE) {
            if (rat_len && rat_len < LLM_MAX_RATIONALE)
                rat[rat_len++] = ' ';
            size_t n = l.n;
            while (n && isspace((unsigned char)l.p[0]))
                l.p++, n--;
            while (n && isspace((unsigned char)l.p[n - 1]))
                n--;
            if (n > LLM_MAX_RATIONALE - rat_len)
                n = LLM_MAX_RATIONALE - rat_len;
            memcpy(rat + rat_len, l.p, n);
            rat_len += n;
        }
    }
    if (rat) {
        while (rat_len && isspace((unsigned char)rat[rat_len - 1]))
            rat_len--;
        rat[rat_len] = '\0';
        if (rat_len)
            r->rationale = rat;
        else
            free(rat);
    }
    return 0;
nomem:
    free(rat);
    return NET_ERR_NOMEM;
}

int llm_reply_extract(const char *text, struct llm_reply *r)
{
    clear_extraction(r);
    if (!text || !*text) {
        snprintf(r->no_code, sizeof r->no_code, "%s",
                 r->reasoning && *r->reasoning
                     ? "no code: content is empty (only reasoning_content; out of tokens?)"
                     : "no code: the reply is empty");
        return 0;
    }
    size_t len = strlen(text);
    int rc = extract_kernel(text, len, r);
    if (!rc)
        rc = extract_decision(text, len, r);
    return rc;
}

/* ------------------------------------------------------------ JSON */

static int take_str(const cJSON *obj, const char *key, char **dst)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return 0;
    *dst = strdup(v->valuestring);
    return *dst ? 0 : NET_ERR_NOMEM;
}

static long take_count(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 1e12)
        return -1;
    return (long)v->valuedouble;
}

int llm_reply_parse(const char *body, size_t len, struct llm_reply *r)
{
    int rc = NET_ERR_REPLY;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!root) {
        snprintf(r->error, sizeof r->error, "reply is not valid JSON (%zu bytes)", len);
        return NET_ERR_REPLY;
    }
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    const cJSON *msg = cJSON_IsObject(c0) ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
    if (!cJSON_IsObject(msg)) {
        char e[200];
        llm_error_text(body, len, e, sizeof e);
        snprintf(r->error, sizeof r->error, "reply has no choices[0].message%s%s",
                 e[0] ? "; server says: " : "", e);
        goto out;
    }
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (!cJSON_IsString(content) && !cJSON_IsNull(content) && content) {
        snprintf(r->error, sizeof r->error, "reply's message.content is not a string");
        goto out;
    }
    rc = NET_ERR_NOMEM;
    if (take_str(msg, "content", &r->content))
        goto out;
    if (take_str(msg, "reasoning_content", &r->reasoning))
        goto out;
    if (!r->reasoning && take_str(msg, "reasoning", &r->reasoning))
        goto out;
    if (take_str(c0, "finish_reason", &r->finish_reason))
        goto out;
    if (take_str(root, "model", &r->model))
        goto out;
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
    if (cJSON_IsObject(usage)) {
        r->n_tokens_in = take_count(usage, "prompt_tokens");
        r->n_tokens_out = take_count(usage, "completion_tokens");
    }
    rc = llm_reply_extract(r->content, r);
    if (!rc && r->code == LLM_CODE_NONE && r->finish_reason && strcmp(r->finish_reason, "length") == 0) {
        size_t n = strlen(r->no_code);
        snprintf(r->no_code + n, sizeof r->no_code - n, " [finish_reason=length: max_tokens reached]");
    }
out:
    cJSON_Delete(root);
    return rc;
}

static void printable(const char *s, char *msg, size_t msg_len)
{
    size_t o = 0;
    for (; s && *s && o + 1 < msg_len; s++)
        msg[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : ' ';
    msg[o] = '\0';
}

void llm_error_text(const char *body, size_t len, char *msg, size_t msg_len)
{
    if (!msg_len)
        return;
    msg[0] = '\0';
    cJSON *root = body && len ? cJSON_ParseWithLength(body, len) : NULL;
    if (!root) {
        /* Not JSON (a proxy's HTML page?): show its start, printable only. */
        char head[121];
        size_t n = len < sizeof head - 1 ? len : sizeof head - 1;
        if (body && n) {
            memcpy(head, body, n);
            head[n] = '\0';
            printable(head, msg, msg_len);
        }
        return;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(root, "error");
    const cJSON *m = NULL;
    if (cJSON_IsObject(e))
        m = cJSON_GetObjectItemCaseSensitive(e, "message");
    else if (cJSON_IsString(e))
        m = e;
    if (!cJSON_IsString(m))
        m = cJSON_GetObjectItemCaseSensitive(root, "message");
    if (!cJSON_IsString(m))
        m = cJSON_GetObjectItemCaseSensitive(root, "detail");
    if (cJSON_IsString(m))
        printable(m->valuestring, msg, msg_len);
    cJSON_Delete(root);
}
