/*
 * net/crypto.c - SHA-256 and ECDSA P-256 on mbedTLS 3.6. See crypto.h.
 *
 * One process-wide DRBG seeded from the OS entropy source, created on first
 * use under a mutex (mbedTLS is built with MBEDTLS_THREADING_PTHREAD).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/sha256.h>
#include <mbedtls/version.h>
#include <psa/crypto.h>

#include "net/crypto.h"

_Static_assert(sizeof(mbedtls_sha256_context) <= sizeof(((struct net_sha256 *)0)->opaque),
               "struct net_sha256 too small for mbedtls_sha256_context");

struct net_key {
    mbedtls_pk_context pk;
};

/* mbedtls_version_get_string asks for a buffer of at least 9 bytes */
_Static_assert(NET_MBEDTLS_VERSION_MAX >= 9, "NET_MBEDTLS_VERSION_MAX below mbedTLS's 9 bytes");

const char *net_mbedtls_version(char *buf)
{
    mbedtls_version_get_string(buf);
    return buf;
}

static pthread_mutex_t rng_lock = PTHREAD_MUTEX_INITIALIZER;
static int rng_ready;
static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;

static int rng_init(void)
{
    int rc = 0;
    pthread_mutex_lock(&rng_lock);
    if (!rng_ready) {
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        static const char pers[] = "kope-device-key";
        if (mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
                                  (const unsigned char *)pers, sizeof pers - 1) != 0 ||
            psa_crypto_init() != PSA_SUCCESS)
            rc = NET_ERR_CRYPTO;
        else
            rng_ready = 1;
    }
    pthread_mutex_unlock(&rng_lock);
    return rc;
}

/* mbedTLS's f_rng callback, serialised: the DRBG is not reentrant. */
static int rng_fn(void *ctx, unsigned char *out, size_t len)
{
    (void)ctx;
    pthread_mutex_lock(&rng_lock);
    int r = mbedtls_ctr_drbg_random(&drbg, out, len);
    pthread_mutex_unlock(&rng_lock);
    return r;
}

int net_random(void *buf, size_t len)
{
    if (rng_init())
        return NET_ERR_CRYPTO;
    return rng_fn(NULL, buf, len) ? NET_ERR_CRYPTO : 0;
}

void net_wipe(void *p, size_t len)
{
    mbedtls_platform_zeroize(p, len);
}

void net_sha256(const void *data, size_t len, uint8_t out[32])
{
    mbedtls_sha256(data, len, out, 0);
}

void net_sha256_init(struct net_sha256 *h)
{
    mbedtls_sha256_context *c = (mbedtls_sha256_context *)h->opaque;
    mbedtls_sha256_init(c);
    mbedtls_sha256_starts(c, 0);
}

void net_sha256_update(struct net_sha256 *h, const void *data, size_t len)
{
    mbedtls_sha256_update((mbedtls_sha256_context *)h->opaque, data, len);
}

void net_sha256_final(struct net_sha256 *h, uint8_t out[32])
{
    mbedtls_sha256_context *c = (mbedtls_sha256_context *)h->opaque;
    mbedtls_sha256_finish(c, out);
    mbedtls_sha256_free(c);
}

int net_key_generate(struct net_key **out)
{
    int rc = NET_ERR_CRYPTO;
    struct net_key *k = calloc(1, sizeof *k);
    *out = NULL;
    if (!k)
        return NET_ERR_CRYPTO;
    mbedtls_pk_init(&k->pk);
    if (rng_init())
        goto out;
    if (mbedtls_pk_setup(&k->pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)) != 0)
        goto out;
    if (mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(k->pk), rng_fn, NULL) != 0)
        goto out;
    *out = k;
    k = NULL;
    rc = 0;
out:
    net_key_free(k);
    return rc;
}

int net_key_load(const uint8_t *buf, size_t len, struct net_key **out)
{
    int rc = NET_ERR_CRYPTO_KEY;
    struct net_key *k = calloc(1, sizeof *k);
    *out = NULL;
    if (!k)
        return NET_ERR_CRYPTO;
    mbedtls_pk_init(&k->pk);
    if (rng_init()) {
        rc = NET_ERR_CRYPTO;
        goto out;
    }
    /* mbedtls_pk_parse_key wants the PEM's terminating NUL counted in len. */
    if (mbedtls_pk_parse_key(&k->pk, buf, len, NULL, 0, rng_fn, NULL) != 0)
        goto out;
    if (mbedtls_pk_get_type(&k->pk) != MBEDTLS_PK_ECKEY ||
        mbedtls_pk_ec(k->pk)->MBEDTLS_PRIVATE(grp).id != MBEDTLS_ECP_DP_SECP256R1)
        goto out;
    *out = k;
    k = NULL;
    rc = 0;
out:
    net_key_free(k);
    return rc;
}

int net_key_write_pem(struct net_key *k, char *buf, size_t cap)
{
    return mbedtls_pk_write_key_pem(&k->pk, (unsigned char *)buf, cap) ? NET_ERR_CRYPTO_BUF : 0;
}

int net_key_private_raw(struct net_key *k, uint8_t *buf, size_t cap, size_t *len)
{
    if (mbedtls_ecp_write_key_ext(mbedtls_pk_ec(k->pk), len, buf, cap) != 0)
        return NET_ERR_CRYPTO_BUF;
    return 0;
}

int net_key_public_der(struct net_key *k, uint8_t *buf, size_t cap, size_t *len)
{
    /* mbedtls writes DER at the END of the buffer; move it to the front. */
    int n = mbedtls_pk_write_pubkey_der(&k->pk, buf, cap);
    if (n <= 0)
        return NET_ERR_CRYPTO_BUF;
    memmove(buf, buf + cap - (size_t)n, (size_t)n);
    *len = (size_t)n;
    return 0;
}

int net_key_sign(struct net_key *k, const uint8_t hash[32], uint8_t *sig, size_t cap, size_t *sig_len)
{
    if (mbedtls_pk_sign(&k->pk, MBEDTLS_MD_SHA256, hash, 32, sig, cap, sig_len, rng_fn, NULL) != 0)
        return NET_ERR_CRYPTO;
    return 0;
}

void net_key_free(struct net_key *k)
{
    if (!k)
        return;
    mbedtls_pk_free(&k->pk); /* zeroizes the private scalar */
    free(k);
}

int net_pubkey_verify(const uint8_t *der, size_t der_len, const uint8_t hash[32],
                      const uint8_t *sig, size_t sig_len)
{
    int rc = NET_ERR_CRYPTO_KEY;
    mbedtls_pk_context pk;
    mbedtls_pk_init(&pk);
    if (mbedtls_pk_parse_public_key(&pk, der, der_len) != 0)
        goto out;
    if (mbedtls_pk_get_type(&pk) != MBEDTLS_PK_ECKEY)
        goto out;
    rc = mbedtls_pk_verify(&pk, MBEDTLS_MD_SHA256, hash, 32, sig, sig_len) ? NET_ERR_CRYPTO_VERIFY : 0;
out:
    mbedtls_pk_free(&pk);
    return rc;
}
