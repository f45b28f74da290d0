/*
 * platform/k3/peers.h - where the K3 target's peers come from: the riscv64
 * sysroot holding the static OpenBLAS and SLEEF the baselines link, and the
 * qemu icount plugin that measures under emulation.
 *
 * One lookup order for every piece, so a copied or moved install keeps its
 * peers and says where it found them:
 *   1. the setting (platform.k3.deps_sysroot / platform.k3.icount_plugin):
 *      when set, only it is tried, and a setting that holds nothing usable
 *      is reported as such (never silently replaced by another copy);
 *   2. the compiled-in prefix, KOPE_PREFIX/lib/kope (`make install PREFIX=`);
 *   3. beside the binary, EXE_DIR/../lib/kope (an install that was moved,
 *      or copied to a board with its lib/kope);
 *   4. the build tree (build/deps/sysroot-riscv64, build/ARCH/libkope-icount.so).
 * `kope version` and `kope probe` print what k3_peers_find() found.
 */
#ifndef KOPE_PLATFORM_K3_PEERS_H
#define KOPE_PLATFORM_K3_PEERS_H

#include <stddef.h>

#define K3_PEER_PATH_MAX 256
#define K3_PEERS_SYSROOT "sysroot-riscv64"
#define K3_PEERS_PLUGIN "libkope-icount.so"

enum k3_peer_from {
    K3_PEER_NONE = 0,   /* not found anywhere */
    K3_PEER_SETTING,    /* the config setting */
    K3_PEER_PREFIX,     /* the compiled-in prefix */
    K3_PEER_EXE,        /* beside the binary (EXE_DIR/../lib/kope) */
    K3_PEER_BUILD,      /* the build tree */
    K3_PEER_BAD_SETTING /* the setting names a place without the piece */
};

struct k3_peers {
    char sysroot[K3_PEER_PATH_MAX]; /* absolute; "" = none */
    enum k3_peer_from sysroot_from;
    int zvl256b;                    /* the OpenBLAS archive is the RISCV64_ZVL256B build */
    int sleef;                      /* the sysroot also holds libsleef.a */
    char plugin[K3_PEER_PATH_MAX];  /* absolute; "" = none */
    enum k3_peer_from plugin_from;
};

/* Fill *out. sysroot_setting / plugin_setting: NULL = not set; a plugin
 * setting of "" turns the plugin off (K3_PEER_SETTING with no path). With
 * want_plugin 0 the plugin is not looked for (natively there is no qemu).
 * Cannot fail: what is missing is K3_PEER_NONE. */
void k3_peers_find(const char *sysroot_setting, const char *plugin_setting, int want_plugin,
                   struct k3_peers *out);

/* "the setting", "the compiled-in prefix", "beside the binary", "the build
 * tree", "not found" (static strings). */
const char *k3_peer_from_name(enum k3_peer_from from);

/* The compiled-in prefix (KOPE_PREFIX: PREFIX at build time). */
const char *k3_peers_prefix(void);

/* One line per peer into buf, as `kope version` prints them:
 *   peer openblas PATH (FROM)       or  peer openblas none (looked in: ...)
 *   peer sleef PATH/lib/libsleef.a (FROM)
 *   peer icount-plugin PATH (FROM)  (only when want_plugin)
 * Returns the length written (cut at cap, which is ample at 2 KB). */
size_t k3_peers_print(const struct k3_peers *pe, int want_plugin, char *buf, size_t cap);

/* platform_ops.peers of the K3 target: finds the peers with s's settings
 * (the plugin only off a real RISC-V machine) and prints, as
 * k3_peers_print, after a "prefix PREFIX (compiled in)" line. */
struct plat_settings;
size_t k3_peers_lines(const struct plat_settings *s, char *buf, size_t cap);

/* Is this a real RISC-V machine (candidates run directly, no qemu and so
 * no icount plugin)? uname says riscv64 under qemu-user too: only a real
 * RISC-V kernel lists the harts' ISA in /proc/cpuinfo. */
int k3_host_native(void);

#endif
