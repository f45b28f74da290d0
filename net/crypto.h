/*
 * net/crypto.h - the only door to mbedTLS's hashing and signing for the rest
 * of kope: SHA-256 and ECDSA P-256 device keys.
 *
 * Keys are opaque. Public keys travel as DER SubjectPublicKeyInfo bytes (the
 * form an identity record carries, hashed to make the origin id). Signatures
 * are DER ECDSA signatures over a 32-byte SHA-256 value (a record id).
 * Errors: NET_ERR_CRYPTO_* in the net band (-200..-299).
 */
#ifndef KOPE_NET_CRYPTO_H
#define KOPE_NET_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define NET_ERR_CRYPTO -250       /* an mbedTLS call failed */
#define NET_ERR_CRYPTO_KEY -251   /* key bytes do not parse */
#define NET_ERR_CRYPTO_VERIFY -252 /* signature does not verify */
#define NET_ERR_CRYPTO_BUF -253   /* output buffer too small */

#define NET_SIG_MAX 80    /* DER ECDSA P-256 signature, worst case 72 */
#define NET_PUBKEY_MAX 128 /* DER SubjectPublicKeyInfo for P-256 is 91 */

/* The linked mbedTLS's own version ("3.6.6", mbedtls_version_get_string),
 * written into buf (at least NET_MBEDTLS_VERSION_MAX bytes); returns buf. */
#define NET_MBEDTLS_VERSION_MAX 16
const char *net_mbedtls_version(char *buf);

/* SHA-256 in one call. */
void net_sha256(const void *data, size_t len, uint8_t out[32]);

/* Incremental SHA-256 (for hashing a record assembled in pieces). */
struct net_sha256 {
    unsigned char opaque[256] __attribute__((aligned(16)));
};
void net_sha256_init(struct net_sha256 *h);
void net_sha256_update(struct net_sha256 *h, const void *data, size_t len);
void net_sha256_final(struct net_sha256 *h, uint8_t out[32]);

struct net_key;

/* A fresh P-256 key pair. *out is owned by the caller: net_key_free. */
int net_key_generate(struct net_key **out);
/* Parse a PEM (or DER) private key. */
int net_key_load(const uint8_t *buf, size_t len, struct net_key **out);
/* PEM of the private key into buf (NUL-terminated). Secret: wipe buf after use. */
int net_key_write_pem(struct net_key *k, char *buf, size_t cap);
/* The raw private scalar (32 bytes for P-256) into buf. Secret: wipe buf
 * after use (core/secret.c registers it, so that no copy is stored). */
int net_key_private_raw(struct net_key *k, uint8_t *buf, size_t cap, size_t *len);
/* DER SubjectPublicKeyInfo of the public half. */
int net_key_public_der(struct net_key *k, uint8_t *buf, size_t cap, size_t *len);
/* Sign a 32-byte hash. */
int net_key_sign(struct net_key *k, const uint8_t hash[32], uint8_t *sig, size_t cap, size_t *sig_len);
/* Free a key, wiping its secret. Accepts NULL. */
void net_key_free(struct net_key *k);

/* Verify sig over hash with a DER public key: 0, NET_ERR_CRYPTO_KEY or NET_ERR_CRYPTO_VERIFY. */
int net_pubkey_verify(const uint8_t *der, size_t der_len, const uint8_t hash[32],
                      const uint8_t *sig, size_t sig_len);

/* Cryptographically random bytes. */
int net_random(void *buf, size_t len);

/* Wipe memory in a way the compiler cannot remove. */
void net_wipe(void *p, size_t len);

#endif
