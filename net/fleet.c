/*
 * net/fleet.c - fleet CA, device certificates, and the record-trust check.
 * See fleet.h. ECDSA P-256 / SHA-256 throughout (the device keys' curve).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/oid.h>
#include <mbedtls/pem.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <psa/crypto.h>

#include "net/crypto.h"
#include "net/fleet.h"
#include "net/neterr.h"

#define PEM_MAX 8192

struct rng {
    mbedtls_entropy_context e;
    mbedtls_ctr_drbg_context d;
};

static int rng_open(struct rng *r)
{
    mbedtls_entropy_init(&r->e);
    mbedtls_ctr_drbg_init(&r->d);
    if (psa_crypto_init() != PSA_SUCCESS)
        return NET_ERR_CRYPTO;
    return mbedtls_ctr_drbg_seed(&r->d, mbedtls_entropy_func, &r->e, (const unsigned char *)"kope-fleet", 10)
               ? NET_ERR_CRYPTO : 0;
}

static void rng_close(struct rng *r)
{
    mbedtls_ctr_drbg_free(&r->d);
    mbedtls_entropy_free(&r->e);
}

static void stamp(time_t t, char out[16])
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 16, "%Y%m%d%H%M%S", &tm);
}

/* Sign a certificate for subj_key named subject by issuer. PEM to *pem. */
static int issue(mbedtls_pk_context *subj_key, const char *subject, mbedtls_pk_context *issuer_key,
                 const char *issuer, int is_ca, int days, const char *nb, const char *na,
                 struct rng *r, char **pem)
{
    mbedtls_x509write_cert w;
    unsigned char serial[16];
    char from[16], to[16];
    int rc = NET_ERR_CRYPTO;
    mbedtls_x509write_crt_init(&w);
    *pem = NULL;
    if (mbedtls_ctr_drbg_random(&r->d, serial, sizeof serial))
        goto out;
    serial[0] &= 0x7f; /* a positive INTEGER */
    serial[0] |= 0x01;
    time_t now = time(NULL);
    stamp(now - 3600, from); /* an hour of clock skew between boards */
    stamp(now + (time_t)days * 86400, to);
    mbedtls_x509write_crt_set_subject_key(&w, subj_key);
    mbedtls_x509write_crt_set_issuer_key(&w, issuer_key);
    mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
    mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
    if (mbedtls_x509write_crt_set_subject_name(&w, subject) || mbedtls_x509write_crt_set_issuer_name(&w, issuer) ||
        mbedtls_x509write_crt_set_serial_raw(&w, serial, sizeof serial) ||
        mbedtls_x509write_crt_set_validity(&w, nb ? nb : from, na ? na : to) ||
        mbedtls_x509write_crt_set_basic_constraints(&w, is_ca, is_ca ? 0 : -1) ||
        mbedtls_x509write_crt_set_subject_key_identifier(&w) ||
        mbedtls_x509write_crt_set_authority_key_identifier(&w) ||
        mbedtls_x509write_crt_set_key_usage(&w, is_ca ? (MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN)
                                                      : MBEDTLS_X509_KU_DIGITAL_SIGNATURE)) {
        rc = NET_ERR_ARG;
        goto out;
    }
    if (!(*pem = malloc(PEM_MAX))) {
        rc = NET_ERR_NOMEM;
        goto out;
    }
    if (mbedtls_x509write_crt_pem(&w, (unsigned char *)*pem, PEM_MAX, mbedtls_ctr_drbg_random, &r->d))
        goto out;
    rc = 0;
out:
    if (rc) {
        free(*pem);
        *pem = NULL;
    }
    mbedtls_x509write_crt_free(&w);
    return rc;
}

/* "CN=<cn>,O=kope fleet" with the characters the DN parser treats specially refused. */
static int dn_make(const char *cn, char *out, size_t cap)
{
    if (!cn || !*cn || strlen(cn) > 64 || strpbrk(cn, ",=+\"\\<>;#"))
        return NET_ERR_ARG;
    snprintf(out, cap, "CN=%s,O=kope fleet", cn);
    return 0;
}

int net_fleet_ca_make(const char *cn, int days, char **key_pem, char **cert_pem)
{
    struct rng r;
    mbedtls_pk_context k;
    char dn[128];
    int rc;
    *key_pem = *cert_pem = NULL;
    mbedtls_pk_init(&k);
    if ((rc = dn_make(cn, dn, sizeof dn)) || (rc = rng_open(&r)))
        goto out;
    rc = NET_ERR_CRYPTO;
    if (mbedtls_pk_setup(&k, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) ||
        mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(k), mbedtls_ctr_drbg_random, &r.d))
        goto out;
    if (!(*key_pem = calloc(1, PEM_MAX))) {
        rc = NET_ERR_NOMEM;
        goto out;
    }
    if (mbedtls_pk_write_key_pem(&k, (unsigned char *)*key_pem, PEM_MAX))
        goto out;
    rc = issue(&k, dn, &k, dn, 1, days, NULL, NULL, &r, cert_pem);
out:
    if (rc && *key_pem) {
        net_wipe(*key_pem, PEM_MAX);
        free(*key_pem);
        *key_pem = NULL;
    }
    mbedtls_pk_free(&k);
    rng_close(&r);
    return rc;
}

int net_fleet_cert_issue(const char *ca_key_pem, const char *ca_cert_pem, const uint8_t *pubkey_der,
                         size_t pubkey_len, const char *cn, int days, const char *not_before,
                         const char *not_after, char **cert_pem, char *err, size_t err_cap)
{
    struct rng r;
    mbedtls_pk_context cak, sub;
    mbedtls_x509_crt ca;
    char dn[128], issuer[256];
    int rc, m;
    *cert_pem = NULL;
    mbedtls_pk_init(&cak);
    mbedtls_pk_init(&sub);
    mbedtls_x509_crt_init(&ca);
    if ((rc = dn_make(cn, dn, sizeof dn))) {
        snprintf(err, err_cap, "device name must be 1-64 characters without , = + \" \\ < > ; #");
        goto out_norng;
    }
    if ((rc = rng_open(&r)))
        goto out;
    if ((m = mbedtls_x509_crt_parse(&ca, (const unsigned char *)ca_cert_pem, strlen(ca_cert_pem) + 1))) {
        snprintf(err, err_cap, "CA certificate does not parse (-0x%04x)", (unsigned)-m);
        rc = NET_ERR_CA_FILE;
        goto out;
    }
    if ((m = mbedtls_pk_parse_key(&cak, (const unsigned char *)ca_key_pem, strlen(ca_key_pem) + 1, NULL, 0,
                                  mbedtls_ctr_drbg_random, &r.d))) {
        snprintf(err, err_cap, "CA key does not parse (-0x%04x)", (unsigned)-m);
        rc = NET_ERR_CRYPTO_KEY;
        goto out;
    }
    if ((m = mbedtls_pk_parse_public_key(&sub, pubkey_der, pubkey_len))) {
        snprintf(err, err_cap, "device public key does not parse (-0x%04x)", (unsigned)-m);
        rc = NET_ERR_CRYPTO_KEY;
        goto out;
    }
    /* The issuer name is the CA certificate's subject, as text: ", " between
     * parts is what mbedtls_x509_dn_gets writes; the writer wants ",". */
    char raw[256];
    if (mbedtls_x509_dn_gets(raw, sizeof raw, &ca.subject) < 0) {
        rc = NET_ERR_CA_FILE;
        goto out;
    }
    size_t o = 0;
    for (const char *p = raw; *p && o + 1 < sizeof issuer; p++) {
        if (*p == ' ' && p > raw && p[-1] == ',')
            continue;
        issuer[o++] = *p;
    }
    issuer[o] = '\0';
    if ((rc = issue(&sub, dn, &cak, issuer, 0, days, not_before, not_after, &r, cert_pem)))
        snprintf(err, err_cap, "cannot issue the certificate (%s)", net_strerror(rc));
out:
    rng_close(&r);
out_norng:
    mbedtls_pk_free(&cak);
    mbedtls_pk_free(&sub);
    mbedtls_x509_crt_free(&ca);
    return rc;
}

int net_cert_pem_parse(const char *pem, uint8_t *der, size_t *der_len, uint8_t *pubkey_der,
                       size_t *pubkey_len, char *cn, size_t cn_cap)
{
    mbedtls_x509_crt c;
    int rc = NET_ERR_CERT;
    mbedtls_x509_crt_init(&c);
    if (mbedtls_x509_crt_parse(&c, (const unsigned char *)pem, strlen(pem) + 1) < 0 || !c.raw.len)
        goto out;
    if (der) {
        if (c.raw.len > NET_CERT_DER_MAX)
            goto out;
        memcpy(der, c.raw.p, c.raw.len);
        *der_len = c.raw.len;
    }
    if (pubkey_der) {
        unsigned char tmp[NET_PUBKEY_MAX];
        int n = mbedtls_pk_write_pubkey_der(&c.pk, tmp, sizeof tmp);
        if (n <= 0)
            goto out;
        memcpy(pubkey_der, tmp + sizeof tmp - n, (size_t)n);
        *pubkey_len = (size_t)n;
    }
    if (cn && cn_cap) {
        snprintf(cn, cn_cap, "?");
        for (const mbedtls_x509_name *n = &c.subject; n; n = n->next)
            if (MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &n->oid) == 0) {
                size_t k = n->val.len < cn_cap - 1 ? n->val.len : cn_cap - 1;
                memcpy(cn, n->val.p, k);
                cn[k] = '\0';
            }
    }
    rc = 0;
out:
    mbedtls_x509_crt_free(&c);
    return rc;
}

int net_cert_der_to_pem(const uint8_t *der, size_t len, char **pem)
{
    size_t olen = 0;
    *pem = malloc(PEM_MAX);
    if (!*pem)
        return NET_ERR_NOMEM;
    if (mbedtls_pem_write_buffer("-----BEGIN CERTIFICATE-----\n", "-----END CERTIFICATE-----\n", der, len,
                                 (unsigned char *)*pem, PEM_MAX, &olen)) {
        free(*pem);
        *pem = NULL;
        return NET_ERR_CERT;
    }
    return 0;
}

int net_cert_pem_count(const char *pem)
{
    mbedtls_x509_crt c;
    int n = 0;
    mbedtls_x509_crt_init(&c);
    if (mbedtls_x509_crt_parse(&c, (const unsigned char *)pem, strlen(pem) + 1) >= 0)
        for (const mbedtls_x509_crt *p = &c; p && p->raw.len; p = p->next)
            n++;
    mbedtls_x509_crt_free(&c);
    return n;
}

/* ------------------------------------------------------------------ trust */

struct net_trust {
    mbedtls_x509_crt ca;
};

int net_trust_new(const char *ca_pem, struct net_trust **out, char *err, size_t err_cap)
{
    struct net_trust *t = calloc(1, sizeof *t);
    *out = NULL;
    if (!t)
        return NET_ERR_NOMEM;
    mbedtls_x509_crt_init(&t->ca);
    int m = mbedtls_x509_crt_parse(&t->ca, (const unsigned char *)ca_pem, strlen(ca_pem) + 1);
    if (m != 0 || !t->ca.raw.len) {
        snprintf(err, err_cap, "trusted CA certificates do not parse (-0x%04x)", (unsigned)-m);
        net_trust_free(t);
        return NET_ERR_CA_FILE;
    }
    *out = t;
    return 0;
}

void net_trust_free(struct net_trust *t)
{
    if (!t)
        return;
    mbedtls_x509_crt_free(&t->ca);
    free(t);
}

int net_trust_check(struct net_trust *t, const uint8_t *cert, size_t cert_len, const uint8_t *pubkey,
                    size_t pubkey_len, char *why, size_t why_cap)
{
    mbedtls_x509_crt c;
    uint32_t flags = 0;
    unsigned char tmp[NET_PUBKEY_MAX];
    int rc = NET_ERR_PEER_CERT;
    mbedtls_x509_crt_init(&c);
    if (mbedtls_x509_crt_parse_der(&c, cert, cert_len)) {
        snprintf(why, why_cap, "the certificate does not parse");
        goto out;
    }
    mbedtls_x509_crt_verify(&c, &t->ca, NULL, NULL, &flags, NULL, NULL);
    flags &= ~(uint32_t)(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE);
    if (flags) {
        char v[200];
        mbedtls_x509_crt_verify_info(v, sizeof v, "", flags);
        v[strcspn(v, "\n")] = '\0';
        snprintf(why, why_cap, "certificate not issued by a trusted fleet CA (%s)", v);
        goto out;
    }
    int n = mbedtls_pk_write_pubkey_der(&c.pk, tmp, sizeof tmp);
    if (n <= 0 || (size_t)n != pubkey_len || memcmp(tmp + sizeof tmp - n, pubkey, pubkey_len) != 0) {
        snprintf(why, why_cap, "the certificate is for another key than the origin's");
        goto out;
    }
    rc = 0;
out:
    mbedtls_x509_crt_free(&c);
    return rc;
}

/* The verify callback sees the chain from the top: depth 1 is the CA that
 * signed the device certificate (x509 finds it by signature, not by name:
 * two fleets' CAs may share a name). */
static int issuer_cb(void *ctx, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
    (void)flags;
    if (depth == 1)
        *(mbedtls_x509_crt **)ctx = crt;
    return 0;
}

int net_trust_revoke_check(struct net_trust *t, const uint8_t *cert, size_t cert_len, const uint8_t origin[32],
                           const uint8_t digest[32], const uint8_t *sig, size_t sig_len, char *why, size_t why_cap)
{
    mbedtls_x509_crt c;
    mbedtls_x509_crt *issuer = NULL;
    uint32_t flags = 0;
    unsigned char tmp[NET_PUBKEY_MAX];
    uint8_t h[32];
    int rc = NET_ERR_PEER_CERT;
    mbedtls_x509_crt_init(&c);
    if (mbedtls_x509_crt_parse_der(&c, cert, cert_len)) {
        snprintf(why, why_cap, "the revoked device's certificate does not parse");
        goto out;
    }
    int n = mbedtls_pk_write_pubkey_der(&c.pk, tmp, sizeof tmp);
    if (n <= 0 || (net_sha256(tmp + sizeof tmp - n, (size_t)n, h), memcmp(h, origin, 32) != 0)) {
        snprintf(why, why_cap, "the certificate is for another key than the revoked origin's");
        goto out;
    }
    mbedtls_x509_crt_verify(&c, &t->ca, NULL, NULL, &flags, issuer_cb, &issuer);
    flags &= ~(uint32_t)(MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE);
    if (flags || !issuer) {
        snprintf(why, why_cap, "the revoked origin's certificate is not issued by a trusted fleet CA");
        goto out;
    }
    if (mbedtls_pk_verify(&issuer->pk, MBEDTLS_MD_SHA256, digest, 32, sig, sig_len) != 0) {
        snprintf(why, why_cap, "not signed by the CA that issued the origin's certificate (forged, or another fleet's CA)");
        rc = NET_ERR_CRYPTO_VERIFY;
        goto out;
    }
    rc = 0;
out:
    mbedtls_x509_crt_free(&c);
    return rc;
}
