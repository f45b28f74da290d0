/*
 * core/secret.c - the registry of secrets kope holds and the one scan (see
 * secret.h for who registers what and where the scan runs). A handful of
 * strings, each looked for with memmem: texts are at most a few hundred
 * KiB (blobs, prompts, sync lines), so a scan is microseconds.
 */
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/secret.h"
#include "net/crypto.h"

struct secret {
    unsigned char *bytes;
    size_t len;
    const char *what; /* a static label */
};

static struct secret *reg;
static int n_reg, cap_reg;
static int at_exit_set;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;

void secret_forget_all(void)
{
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < n_reg; i++) {
        net_wipe(reg[i].bytes, reg[i].len);
        free(reg[i].bytes);
        reg[i].bytes = NULL;
        reg[i].len = 0;
    }
    n_reg = 0;
    free(reg);
    reg = NULL;
    cap_reg = 0;
    pthread_mutex_unlock(&reg_mu);
}

static void forget_at_exit(void)
{
    secret_forget_all();
}

int secret_add(const void *bytes, size_t len, const char *what)
{
    if (!bytes || len < SECRET_MIN_LEN)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < n_reg; i++)
        if (reg[i].len == len && memcmp(reg[i].bytes, bytes, len) == 0)
            goto out;
    if (n_reg >= SECRET_MAX) {
        rc = KOPE_ERR_TOOBIG;
        goto out;
    }
    if (n_reg == cap_reg) {
        int nc = cap_reg ? 2 * cap_reg : 16;
        struct secret *nr = realloc(reg, (size_t)nc * sizeof *nr);
        if (!nr) {
            rc = KOPE_ERR_NOMEM;
            goto out;
        }
        reg = nr;
        cap_reg = nc;
    }
    unsigned char *copy = malloc(len);
    if (!copy) {
        rc = KOPE_ERR_NOMEM;
        goto out;
    }
    memcpy(copy, bytes, len);
    reg[n_reg++] = (struct secret){copy, len, what ? what : "a secret"};
    if (!at_exit_set) {
        at_exit_set = 1;
        atexit(forget_at_exit);
    }
out:
    pthread_mutex_unlock(&reg_mu);
    return rc;
}

int secret_add_key_pem(const char *pem, size_t len, const char *what)
{
    int rc = secret_add(pem, len, what);
    /* the base64 lines of the body, each a copy an excerpt could quote */
    for (size_t i = 0; !rc && i < len;) {
        const char *l = pem + i, *e = memchr(l, '\n', len - i);
        size_t ll = e ? (size_t)(e - l) : len - i;
        i += ll + 1;
        while (ll && l[ll - 1] == '\r')
            ll--;
        if (ll >= 16 && l[0] != '-')
            rc = secret_add(l, ll, what);
    }
    /* the private scalar itself, raw and in hex */
    struct net_key *k = NULL;
    char *z = malloc(len + 1);
    if (!rc && z) {
        memcpy(z, pem, len);
        z[len] = '\0';
        if (net_key_load((const uint8_t *)z, len + 1, &k) == 0) {
            uint8_t raw[80];
            size_t rl = 0;
            if (net_key_private_raw(k, raw, sizeof raw, &rl) == 0) {
                static const char *const digits[2] = {"0123456789abcdef", "0123456789ABCDEF"};
                char hex[2 * sizeof raw];
                rc = secret_add(raw, rl, what);
                for (int c = 0; c < 2 && !rc; c++) {
                    for (size_t j = 0; j < rl; j++) {
                        hex[2 * j] = digits[c][raw[j] >> 4];
                        hex[2 * j + 1] = digits[c][raw[j] & 15];
                    }
                    rc = secret_add(hex, 2 * rl, what);
                }
                net_wipe(hex, sizeof hex);
            }
            net_wipe(raw, sizeof raw);
            net_key_free(k);
        }
    }
    if (z) {
        net_wipe(z, len + 1);
        free(z);
    }
    return rc;
}

const char *secret_find(const void *text, size_t len)
{
    const char *hit = NULL;
    if (!text)
        return NULL;
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < n_reg && !hit; i++)
        if (reg[i].len <= len && memmem(text, len, reg[i].bytes, reg[i].len))
            hit = reg[i].what;
    pthread_mutex_unlock(&reg_mu);
    return hit;
}

/* Append n bytes of src to out at *o, never past cap-1. */
static void put(char *out, size_t cap, size_t *o, const void *src, size_t n)
{
    size_t room = cap - 1 - *o;
    size_t k = n < room ? n : room;
    memcpy(out + *o, src, k);
    *o += k;
}

int secret_redact(char *s, size_t cap)
{
    int n = 0;
    if (!s || !cap)
        return 0;
    char *tmp = malloc(cap);
    pthread_mutex_lock(&reg_mu);
    for (int i = 0; i < n_reg; i++) {
        size_t sl = strlen(s), o = 0;
        const char *p = s, *end = s + sl, *q;
        int any = 0;
        while ((q = memmem(p, (size_t)(end - p), reg[i].bytes, reg[i].len))) {
            if (!tmp) { /* no room to rewrite: nothing of the text is kept */
                snprintf(s, cap, "%s", SECRET_REDACTED);
                n++;
                goto out;
            }
            put(tmp, cap, &o, p, (size_t)(q - p));
            put(tmp, cap, &o, SECRET_REDACTED, sizeof SECRET_REDACTED - 1);
            p = q + reg[i].len;
            any = 1;
            n++;
        }
        if (any) {
            put(tmp, cap, &o, p, (size_t)(end - p));
            tmp[o] = '\0';
            memcpy(s, tmp, o + 1);
        }
    }
out:
    pthread_mutex_unlock(&reg_mu);
    if (tmp) {
        net_wipe(tmp, cap);
        free(tmp);
    }
    return n;
}
