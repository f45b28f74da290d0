/*
 * platform/k3/peers.c - finds the K3 target's peers (the riscv64 sysroot
 * with OpenBLAS and SLEEF, the qemu icount plugin) in the order peers.h
 * gives, and says where each came from. Only file tests: nothing is run.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "platform/k3/peers.h"
#include "platform/platform.h"

/* PREFIX at build time (the Makefile's install prefix); a build that was
 * never told one looks in the usual place */
#ifndef KOPE_PREFIX
#define KOPE_PREFIX "/usr/local"
#endif

#define CAND_MAX 6
#define CAND_LEN 512

const char *k3_peers_prefix(void)
{
    return KOPE_PREFIX;
}

const char *k3_peer_from_name(enum k3_peer_from from)
{
    switch (from) {
    case K3_PEER_SETTING: return "the setting";
    case K3_PEER_PREFIX: return "the compiled-in prefix";
    case K3_PEER_EXE: return "beside the binary";
    case K3_PEER_BUILD: return "the build tree";
    case K3_PEER_BAD_SETTING: return "the setting, which holds none";
    case K3_PEER_NONE: break;
    }
    return "not found";
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The running executable's directory into out: 0, or -1. */
static int exe_dir(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0)
        return -1;
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

struct cands {
    int n;
    char path[CAND_MAX][CAND_LEN];
    enum k3_peer_from from[CAND_MAX];
};

/* dir + mid + leaf */
static void cand_add(struct cands *c, enum k3_peer_from from, const char *dir, const char *mid,
                     const char *leaf)
{
    if (c->n >= CAND_MAX)
        return;
    int w = snprintf(c->path[c->n], CAND_LEN, "%s%s%s", dir, mid, leaf);
    if (w > 0 && w < CAND_LEN) /* a path that does not fit is no candidate */
        c->from[c->n++] = from;
}

/* The places after the setting: prefix, beside the binary, build tree.
 * leaf is K3_PEERS_SYSROOT or K3_PEERS_PLUGIN; the build tree keeps the
 * sysroot in build/deps and the plugin next to kope (build/ARCH). */
static void cands_default(struct cands *c, const char *leaf, int is_plugin)
{
    char exe[CAND_LEN - 64];
    int have_exe = exe_dir(exe, sizeof exe) == 0;
    cand_add(c, K3_PEER_PREFIX, KOPE_PREFIX, "/lib/kope/", leaf);
    if (have_exe)
        cand_add(c, K3_PEER_EXE, exe, "/../lib/kope/", leaf);
    if (have_exe && is_plugin) {
        cand_add(c, K3_PEER_BUILD, exe, "/", leaf);    /* build/ARCH/kope */
        cand_add(c, K3_PEER_BUILD, exe, "/../", leaf); /* build/ARCH/tests/test_x */
    } else if (have_exe) {
        cand_add(c, K3_PEER_BUILD, exe, "/../deps/", leaf);
        cand_add(c, K3_PEER_BUILD, exe, "/../../deps/", leaf);
    }
    if (!is_plugin)
        cand_add(c, K3_PEER_BUILD, "build/deps/", "", leaf);
}

/* path made absolute into dst: 0, or -1 when it does not fit (a cut path
 * would name another place: such a candidate is skipped, not shortened) */
static int set_abs(char *dst, const char *path)
{
    char *abs = realpath(path, NULL);
    int w = snprintf(dst, K3_PEER_PATH_MAX, "%s", abs ? abs : path);
    free(abs);
    if (w < 0 || w >= K3_PEER_PATH_MAX) {
        dst[0] = '\0';
        return -1;
    }
    return 0;
}

static int sysroot_usable(const char *dir)
{
    char lib[CAND_LEN + 32];
    snprintf(lib, sizeof lib, "%s/lib/libopenblas.a", dir);
    return is_file(lib);
}

static int sysroot_take(struct k3_peers *out, const char *dir, enum k3_peer_from from)
{
    if (set_abs(out->sysroot, dir))
        return -1;
    out->sysroot_from = from;
    /* the deps recipe builds OpenBLAS for RISCV64_ZVL256B and keeps the
     * target-named archive next to libopenblas.a */
    char p[K3_PEER_PATH_MAX + 32];
    snprintf(p, sizeof p, "%s/lib", out->sysroot);
    DIR *d = opendir(p);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, "zvl256b"))
            out->zvl256b = 1;
    if (d)
        closedir(d);
    /* cross/deps.sh builds SLEEF into the same riscv64 sysroot */
    snprintf(p, sizeof p, "%s/lib/libsleef.a", out->sysroot);
    out->sleef = is_file(p);
    return 0;
}

void k3_peers_find(const char *sysroot_setting, const char *plugin_setting, int want_plugin,
                   struct k3_peers *out)
{
    memset(out, 0, sizeof *out);
    struct cands c = {0};
    if (sysroot_setting && *sysroot_setting) {
        if (!sysroot_usable(sysroot_setting) || sysroot_take(out, sysroot_setting, K3_PEER_SETTING)) {
            snprintf(out->sysroot, sizeof out->sysroot, "%s", sysroot_setting);
            out->sysroot_from = K3_PEER_BAD_SETTING;
        }
    } else {
        cands_default(&c, K3_PEERS_SYSROOT, 0);
        for (int i = 0; i < c.n && !out->sysroot_from; i++)
            if (sysroot_usable(c.path[i]))
                (void)sysroot_take(out, c.path[i], c.from[i]); /* -1: too long, try the next */
    }
    if (!want_plugin)
        return;
    if (plugin_setting) { /* "" turns it off */
        if (!*plugin_setting) {
            out->plugin_from = K3_PEER_SETTING;
        } else if (is_file(plugin_setting) && access(plugin_setting, R_OK) == 0 &&
                   set_abs(out->plugin, plugin_setting) == 0) {
            out->plugin_from = K3_PEER_SETTING;
        } else {
            out->plugin_from = K3_PEER_BAD_SETTING;
        }
        return;
    }
    memset(&c, 0, sizeof c);
    cands_default(&c, K3_PEERS_PLUGIN, 1);
    for (int i = 0; i < c.n; i++)
        if (is_file(c.path[i]) && access(c.path[i], R_OK) == 0 && set_abs(out->plugin, c.path[i]) == 0) {
            out->plugin_from = c.from[i];
            return;
        }
}

size_t k3_peers_print(const struct k3_peers *pe, int want_plugin, char *buf, size_t cap)
{
    size_t n = 0;
#define PUT(...)                                                         \
    do {                                                                 \
        if (n < cap) {                                                   \
            int w_ = snprintf(buf + n, cap - n, __VA_ARGS__);            \
            n = w_ < 0 ? n : (size_t)w_ >= cap - n ? cap - 1 : n + (size_t)w_; \
        }                                                                \
    } while (0)
    if (cap)
        buf[0] = '\0';
    char where[CAND_LEN + 64];
    snprintf(where, sizeof where, "%s/lib/kope, ../lib/kope beside the binary, or the build tree", KOPE_PREFIX);
    if (pe->sysroot[0] && pe->sysroot_from != K3_PEER_BAD_SETTING) {
        PUT("peer openblas %s/lib/libopenblas.a%s (%s)\n", pe->sysroot, pe->zvl256b ? " RISCV64_ZVL256B" : "",
            k3_peer_from_name(pe->sysroot_from));
        if (pe->sleef)
            PUT("peer sleef %s/lib/libsleef.a (%s)\n", pe->sysroot, k3_peer_from_name(pe->sysroot_from));
        else
            PUT("peer sleef none (the sysroot %s has no lib/libsleef.a)\n", pe->sysroot);
    } else if (pe->sysroot_from == K3_PEER_BAD_SETTING) {
        PUT("peer openblas none (platform.k3.deps_sysroot %s has no lib/libopenblas.a)\n", pe->sysroot);
        PUT("peer sleef none (no sysroot)\n");
    } else {
        PUT("peer openblas none (no %s in %s)\n", K3_PEERS_SYSROOT, where);
        PUT("peer sleef none (no sysroot)\n");
    }
    if (want_plugin) {
        if (pe->plugin[0])
            PUT("peer icount-plugin %s (%s)\n", pe->plugin, k3_peer_from_name(pe->plugin_from));
        else if (pe->plugin_from == K3_PEER_SETTING)
            PUT("peer icount-plugin off (platform.k3.icount_plugin is \"\")\n");
        else if (pe->plugin_from == K3_PEER_BAD_SETTING)
            PUT("peer icount-plugin none (platform.k3.icount_plugin is not a readable file)\n");
        else
            PUT("peer icount-plugin none (no %s in %s)\n", K3_PEERS_PLUGIN, where);
    }
#undef PUT
    return n;
}

/* Does /proc/cpuinfo describe RISC-V harts ("isa : rv64...")? */
static int cpuinfo_is_riscv(void)
{
    char line[256];
    int yes = 0;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return 0;
    while (!yes && fgets(line, sizeof line, f))
        yes = strncmp(line, "isa", 3) == 0 && strstr(line, ": rv") != NULL;
    fclose(f);
    return yes;
}

int k3_host_native(void)
{
    struct utsname u;
    return uname(&u) == 0 && strcmp(u.machine, "riscv64") == 0 && cpuinfo_is_riscv();
}

size_t k3_peers_lines(const struct plat_settings *s, char *buf, size_t cap)
{
    struct k3_peers pe;
    int want_plugin = !k3_host_native();
    k3_peers_find(s ? s->deps_sysroot : NULL, s ? s->icount_plugin : NULL, want_plugin, &pe);
    int n = snprintf(buf, cap, "prefix %s (compiled in)\n", KOPE_PREFIX);
    if (n < 0 || (size_t)n >= cap)
        return cap ? strlen(buf) : 0;
    return (size_t)n + k3_peers_print(&pe, want_plugin, buf + n, cap - (size_t)n);
}
