/*
 * platform/judge/siphash.h - SipHash-2-4, the keyed MAC that authenticates
 * instruction counts between the qemu icount plugin and kope's judge.
 *
 * Written from the paper (Jean-Philippe Aumasson, Daniel J. Bernstein,
 * "SipHash: a fast short-input PRF", 2012): 128-bit key, 64-bit tag, two
 * compression rounds per 8-byte word, four finalization rounds. The test
 * vector of the paper's appendix A (key 00..0f, message 00..0e, tag
 * a129ca6149be45e5) is checked in tests/test_k3_icount.c.
 *
 * Why a MAC: under qemu-user a guest's system calls are the emulator's, so a
 * guest can write to any descriptor or file the plugin writes to. What
 * separates the plugin's counts from a forgery is a key the plugin reads from
 * a descriptor it closes before the guest's first instruction
 * (docs/K3-HARNESS.md, "Icount"). Static inline and free of kope headers:
 * the plugin (built by cross/qemu-plugin.sh) includes it by relative path.
 */
#ifndef KOPE_JUDGE_SIPHASH_H
#define KOPE_JUDGE_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define KOPE_SIPHASH_KEY_LEN 16

static inline uint64_t kope_sip_rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static inline uint64_t kope_sip_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define KOPE_SIP_ROUND(v0, v1, v2, v3)                                                         \
    do {                                                                                       \
        v0 += v1; v1 = kope_sip_rotl(v1, 13); v1 ^= v0; v0 = kope_sip_rotl(v0, 32);           \
        v2 += v3; v3 = kope_sip_rotl(v3, 16); v3 ^= v2;                                        \
        v0 += v3; v3 = kope_sip_rotl(v3, 21); v3 ^= v0;                                        \
        v2 += v1; v1 = kope_sip_rotl(v1, 17); v1 ^= v2; v2 = kope_sip_rotl(v2, 32);           \
    } while (0)

/* SipHash-2-4 of msg[len] under key[16]. */
static inline uint64_t kope_siphash24(const unsigned char key[KOPE_SIPHASH_KEY_LEN], const void *msg,
                                      size_t len)
{
    const unsigned char *m = (const unsigned char *)msg;
    uint64_t k0 = kope_sip_le64(key), k1 = kope_sip_le64(key + 8);
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = kope_sip_le64(m + i);
        v3 ^= w;
        KOPE_SIP_ROUND(v0, v1, v2, v3);
        KOPE_SIP_ROUND(v0, v1, v2, v3);
        v0 ^= w;
    }
    /* the last 0-7 bytes, and the length's low byte in the top byte */
    uint64_t w = (uint64_t)(len & 0xff) << 56;
    for (size_t j = 0; i + j < len; j++)
        w |= (uint64_t)m[i + j] << (8 * j);
    v3 ^= w;
    KOPE_SIP_ROUND(v0, v1, v2, v3);
    KOPE_SIP_ROUND(v0, v1, v2, v3);
    v0 ^= w;
    v2 ^= 0xff;
    for (int r = 0; r < 4; r++)
        KOPE_SIP_ROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

#endif
