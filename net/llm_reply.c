/*
 * net/llm_reply.c - chat completion reply parsing (llm_reply.h); this file
 * is fuzzed. What a kernel is, and its extraction from the content, belong
 * to the agent (core/context/reply.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "net/llm_reply.h"

void llm_reply_init(struct llm_reply *r)
{
    memset(r, 0, sizeof *r);
    r->n_tokens_in = r->n_tokens_out = -1;
}

void llm_reply_free(struct llm_reply *r)
{
    if (!r)
        return;
    free(r->content);
    free(r->reasoning);
    free(r->model);
    free(r->finish_reason);
    llm_reply_init(r);
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
    rc = 0;
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
