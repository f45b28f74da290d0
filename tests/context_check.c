/*
 * tests/context_check.c - `kope context` against what a loopback server
 * (tests/tls_server.c, included first) received: the check that what is
 * shown is what is sent, shared by the k3 (test_agent_llm.c) and ascend
 * (test_ascend_run.c) tests. Included, like tls_server.c.
 */
#include <cJSON.h>

/* The system and user messages of a chat request the server received. */
static void sent_messages(const struct ts_request *rq, char **sys, char **usr)
{
    cJSON *j = cJSON_ParseWithLength(rq->body, rq->body_len);
    assert_non_null(j);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "messages");
    assert_int_equal(cJSON_GetArraySize(m), 2);
    *sys = strdup(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m, 0), "content")->valuestring);
    *usr = strdup(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m, 1), "content")->valuestring);
    cJSON_Delete(j);
}

/* `kope context` printed exactly these two messages. */
static void assert_context_is(const char *ctx_out, const struct ts_request *rq)
{
    char *sys, *usr;
    sent_messages(rq, &sys, &usr);
    const char *a = strstr(ctx_out, "\n===== system =====\n");
    assert_non_null(a);
    a += strlen("\n===== system =====\n");
    const char *b = strstr(a, "\n===== user =====\n");
    assert_non_null(b);
    size_t ns = (size_t)(b - a);
    if (ns != strlen(sys) || memcmp(a, sys, ns) != 0)
        fail_msg("system message differs: context %zu bytes, sent %zu", ns, strlen(sys));
    b += strlen("\n===== user =====\n");
    size_t nu = strlen(b);
    if (nu && b[nu - 1] == '\n' && (!usr[0] || usr[strlen(usr) - 1] != '\n'))
        nu--; /* the printout ends its last line */
    if (nu != strlen(usr) || memcmp(b, usr, nu) != 0)
        fail_msg("user message differs: context %zu bytes, sent %zu", nu, strlen(usr));
    free(sys);
    free(usr);
}
