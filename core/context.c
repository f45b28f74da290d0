/*
 * core/context.c - Active Context Management (see core/context.h).
 * (Being written: this first commit only fixes the interface.)
 */
#include "core/context.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"

int ctx_mode_parse(const char *s)
{
    if (s && strcmp(s, "active") == 0)
        return CTX_ACTIVE;
    if (s && strcmp(s, "passive") == 0)
        return CTX_PASSIVE;
    return -1;
}

const char *ctx_mode_name(enum ctx_mode m)
{
    return m == CTX_PASSIVE ? "passive" : "active";
}

const char *ctx_tier_name(enum ctx_tier t)
{
    static const char *const names[CTX_N_TIERS] = {"hot", "warm", "cold"};
    return (unsigned)t < CTX_N_TIERS ? names[t] : "?";
}

void ctx_request_init(struct ctx_request *rq)
{
    memset(rq, 0, sizeof *rq);
    rq->target = "k3";
    rq->dtype = "f32";
    rq->budget_tokens = CTX_BUDGET_DEFAULT;
    rq->mode = CTX_ACTIVE;
}

void ctx_prompt_init(struct ctx_prompt *p)
{
    memset(p, 0, sizeof *p);
}

void ctx_prompt_free(struct ctx_prompt *p)
{
    if (!p)
        return;
    free(p->system);
    free(p->user);
    free(p->items);
    ctx_prompt_init(p);
}

int context_build(struct graph *g, const struct ctx_request *rq, struct ctx_prompt *out)
{
    (void)g;
    (void)rq;
    snprintf(out->err, sizeof out->err, "context_build: not implemented yet");
    return KOPE_ERR_INTERNAL;
}

void ctx_prompt_print(const struct ctx_prompt *p, FILE *f)
{
    (void)p;
    (void)f;
}
