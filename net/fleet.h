/*
 * net/fleet.h - the fleet's certificates: a CA, device certificates it
 * issues for device keys, and the check that a certificate carried by a
 * record was issued by a trusted CA for the key that signed it.
 *
 * Certificates are X.509 v3, ECDSA P-256 with SHA-256. A device certificate
 * binds a name (CN) to the device's key, the same key whose hash is its
 * origin id (core/graph/graph.h). PEM in, PEM (or DER) out; heap strings are
 * owned by the caller (free; key PEM: wipe first with net_wipe).
 */
#ifndef KOPE_NET_FLEET_H
#define KOPE_NET_FLEET_H

#include <stddef.h>
#include <stdint.h>

#define NET_CERT_DER_MAX 4096

/* A new CA key and self-signed CA certificate named cn, valid for days. */
int net_fleet_ca_make(const char *cn, int days, char **key_pem, char **cert_pem);
/* Issue a device certificate for a public key (DER SubjectPublicKeyInfo)
 * named cn, signed by the CA. Validity: "YYYYMMDDhhmmss" strings, or NULL
 * for now .. now + days. */
int net_fleet_cert_issue(const char *ca_key_pem, const char *ca_cert_pem, const uint8_t *pubkey_der,
                         size_t pubkey_len, const char *cn, int days, const char *not_before,
                         const char *not_after, char **cert_pem, char *err, size_t err_cap);
/* First certificate of a PEM text as DER bytes (into der, cap
 * NET_CERT_DER_MAX), its public key as DER, and its CN. Any out may be NULL. */
int net_cert_pem_parse(const char *pem, uint8_t *der, size_t *der_len, uint8_t *pubkey_der,
                       size_t *pubkey_len, char *cn, size_t cn_cap);
/* Certificate DER -> PEM text (heap). */
int net_cert_der_to_pem(const uint8_t *der, size_t len, char **pem);
/* Number of certificates in a PEM text that parse (0 if none). */
int net_cert_pem_count(const char *pem);

/* A set of trusted CA certificates (PEM). */
struct net_trust;
int net_trust_new(const char *ca_pem, struct net_trust **out, char *err, size_t err_cap);
void net_trust_free(struct net_trust *t);
/* 0 when cert (DER) was issued by a trusted CA and carries exactly the
 * public key pubkey (DER); else NET_ERR_PEER_CERT with the reason in why.
 * Validity dates are not checked here: a checkpoint signed while its
 * certificate was valid stays valid (see docs/SYNC.md). */
int net_trust_check(struct net_trust *t, const uint8_t *cert, size_t cert_len, const uint8_t *pubkey,
                    size_t pubkey_len, char *why, size_t why_cap);

/* A revocation (docs/SYNC.md "Revocation"): 0 when cert (DER) chains to a
 * trusted CA and holds the key whose SHA-256 is origin, and sig is a
 * signature over digest by the very CA that issued cert. Else
 * NET_ERR_PEER_CERT or NET_ERR_CRYPTO_VERIFY with the reason in why. A CA
 * revokes only the devices it certified. Dates are not checked. */
int net_trust_revoke_check(struct net_trust *t, const uint8_t *cert, size_t cert_len, const uint8_t origin[32],
                           const uint8_t digest[32], const uint8_t *sig, size_t sig_len, char *why, size_t why_cap);

#endif /* KOPE_NET_FLEET_H */
