/*
 * platform/hostcheck.c - refuse to run on a CPU this build cannot serve.
 * See hostcheck.h. This file is compiled WITHOUT the V extension on riscv64
 * (Makefile: HOSTCHECK_CFLAGS) so that it can run, and say why it stops, on
 * a core that has no vector unit. Feature macros decide what is checked:
 * __riscv_vector is defined by the compiler for a build that uses RVV.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#if defined(KOPE_BUILT_WITH_RVV)
#include <sys/auxv.h>
#endif

#include "platform/hostcheck.h"

#ifndef KOPE_MIN_VLEN
#define KOPE_MIN_VLEN 256
#endif

int plat_host_check(char *msg, size_t cap, unsigned *vlen_bits)
{
    *vlen_bits = 0;
    msg[0] = '\0';
#if defined(KOPE_BUILT_WITH_RVV)
    unsigned long hwcap = getauxval(AT_HWCAP);
    if (!(hwcap & (1ul << ('V' - 'A')))) {
        snprintf(msg, cap,
                 "this kope is built for RISC-V with the vector extension (RVV 1.0, rv64gcv), "
                 "but this CPU reports no V extension (AT_HWCAP). Use a build for plain rv64gc, "
                 "or run on a core with RVV 1.0 (SpacemiT K3 X100, K1 X60)");
        return -1;
    }
    unsigned long vlenb;
    __asm__ volatile("csrr %0, vlenb" : "=r"(vlenb)); /* readable from user mode once V is on */
    *vlen_bits = (unsigned)(vlenb * 8);
    if (*vlen_bits < KOPE_MIN_VLEN) {
        snprintf(msg, cap,
                 "this CPU's vector length is VLEN=%u bits, but this kope is built for VLEN >= %d: "
                 "its OpenBLAS (TARGET=RISCV64_ZVL%dB) computes wrong results on shorter vectors, "
                 "without any error. Rebuild the riscv64 sysroot with OB_TARGET=RISCV64_ZVL128B "
                 "(cross/deps.sh) for this core, or run on a VLEN-%d core (SpacemiT K3 X100)",
                 *vlen_bits, KOPE_MIN_VLEN, KOPE_MIN_VLEN, KOPE_MIN_VLEN);
        return -1;
    }
#endif
    return 0;
}

/* ---------------------------------------------------- virtual machine --- */

/* Read at most cap-1 bytes of root+path; NULs (device-tree string lists)
 * become '\n'. Returns the length, -1 when absent. */
static long vm_read(const char *root, const char *path, char *buf, size_t cap)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    FILE *f = fopen(full, "rb");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = '\n';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    return (long)n;
}

/* strcasestr without _GNU_SOURCE's blessing in every libc */
static int has_word(const char *hay, const char *needle)
{
    size_t nl = strlen(needle);
    for (; *hay; hay++)
        if (strncasecmp(hay, needle, nl) == 0)
            return 1;
    return 0;
}

/* The value of the first "key : value" line of /proc/cpuinfo, or "". */
static void cpuinfo_field(const char *text, const char *key, char *out, size_t cap)
{
    size_t kl = strlen(key);
    out[0] = '\0';
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, kl) != 0 || (l[kl] != ' ' && l[kl] != '\t' && l[kl] != ':'))
            continue;
        const char *c = strchr(l, ':');
        const char *e = strchr(l, '\n');
        if (!c || (e && c > e))
            continue;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        size_t n = e ? (size_t)(e - c) : strlen(c);
        snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), c);
        return;
    }
}

int plat_vm_detect(const char *root, char *why, size_t cap)
{
    static const char *const dt_vm[] = {"riscv-virtio", "qemu", "linux,dummy-virt"};
    static const char *const dmi_vm[] = {"qemu", "kvm", "vmware", "virtualbox", "innotek", "xen",
                                         "bochs", "microsoft corporation"};
    static const char *const dt_files[] = {"/proc/device-tree/compatible", "/proc/device-tree/model",
                                           "/sys/firmware/devicetree/base/compatible"};
    static const char *const dmi_files[] = {"/sys/class/dmi/id/sys_vendor", "/sys/class/dmi/id/product_name"};
    char buf[4096], val[128], compat[128] = "";
    if (!root)
        root = "";
    for (size_t i = 0; i < sizeof dt_files / sizeof dt_files[0]; i++) {
        if (vm_read(root, dt_files[i], buf, sizeof buf) <= 0)
            continue;
        if (!compat[0])
            snprintf(compat, sizeof compat, "%.*s", (int)strcspn(buf, "\n"), buf);
        for (size_t j = 0; j < sizeof dt_vm / sizeof dt_vm[0]; j++)
            if (has_word(buf, dt_vm[j])) {
                snprintf(why, cap, "device tree %s names \"%.*s\" (qemu's virt machine)",
                         strrchr(dt_files[i], '/') + 1, (int)strcspn(buf, "\n"), buf);
                return 1;
            }
    }
    char vendor[64] = "";
    if (vm_read(root, "/proc/cpuinfo", buf, sizeof buf) > 0) {
        cpuinfo_field(buf, "mvendorid", vendor, sizeof vendor);
        if (vendor[0] && strtoull(vendor, NULL, 0) == 0) {
            snprintf(why, cap, "/proc/cpuinfo mvendorid %s: a hart with no vendor id (qemu, a simulator)", vendor);
            return 1;
        }
        if (strstr(buf, " hypervisor")) {
            snprintf(why, cap, "/proc/cpuinfo flags name \"hypervisor\"");
            return 1;
        }
    }
    if (vm_read(root, "/sys/hypervisor/type", val, sizeof val) > 0) {
        snprintf(why, cap, "/sys/hypervisor/type is \"%s\"", val);
        return 1;
    }
    for (size_t i = 0; i < sizeof dmi_files / sizeof dmi_files[0]; i++) {
        if (vm_read(root, dmi_files[i], val, sizeof val) <= 0)
            continue;
        for (size_t j = 0; j < sizeof dmi_vm / sizeof dmi_vm[0]; j++)
            if (has_word(val, dmi_vm[j])) {
                snprintf(why, cap, "DMI %s is \"%s\"", strrchr(dmi_files[i], '/') + 1, val);
                return 1;
            }
    }
    snprintf(why, cap, "no virtual-machine sign (device tree \"%s\", mvendorid %s)",
             compat[0] ? compat : "none", vendor[0] ? vendor : "none");
    return 0;
}

/* glibc passes (argc, argv, envp) to constructors. */
__attribute__((constructor(101))) static void host_check_at_start(int argc, char **argv, char **envp)
{
    char msg[512];
    unsigned vlen;
    (void)envp;
    int rc = plat_host_check(msg, sizeof msg, &vlen);
    /* `kope [global options] --version|version` and --help compute nothing:
     * look past the global options (--db PATH, --config FILE) for them */
    for (int i = 1; i < argc && argv; i++) {
        if (!strcmp(argv[i], "--db") || !strcmp(argv[i], "--config")) {
            i++;
            continue;
        }
        int version = !strcmp(argv[i], "--version") || !strcmp(argv[i], "-V");
        int command = argv[i][0] != '-';
        if (command && strcmp(argv[i], "version") != 0)
            break;
        if (!version && !command && strcmp(argv[i], "--help") != 0 && strcmp(argv[i], "-h") != 0)
            continue;
        if (rc == 0 || vlen > 0)
            return; /* a short vector unit still runs main's plain code */
        /* No V at all: main is built for rv64gcv and the compiler may have
         * vectorised any loop of it (the board VM's v=false boot died of
         * SIGILL in `kope --version`), so answer here, from code built
         * without V, and stop: `kope version`'s first lines (the library
         * versions need main's code) and exit 1, as main's does on a CPU
         * this build cannot serve; --version its one line and exit 0. */
#ifdef KOPE_HOSTCHECK_VERSION
        if (version || command) {
            printf("kope %s (%s)\n", KOPE_HOSTCHECK_VERSION, KOPE_ARCH);
            if (!version) {
                printf("target %s\n", KOPE_ARCH);
                printf("isa %s\n", KOPE_ISA);
                printf("vector length none: this CPU reports no V extension (AT_HWCAP)\n");
                printf("library versions: not shown on a CPU this build cannot run\n");
            }
            fprintf(stderr, "kope: note: %s\n", msg);
            fflush(stdout);
            fflush(stderr);
            _exit(version ? 0 : 1);
        }
#endif
        break;
    }
    /* A vector unit shorter than the build's VLEN still runs kope's own
     * code (RVV code compiled for rv64gcv is VLEN-agnostic from 128 bits):
     * only what runs K3 kernels (measure, run, probe, queue flush) needs
     * VLEN >= KOPE_MIN_VLEN, and main checks that for those commands
     * (cli_kernel_host_check). No V at all: any of main's code may be
     * vectorised, so nothing but the answers above is safe. */
    if (rc != 0 && vlen == 0) {
        fprintf(stderr, "kope: refusing to run: %s\n", msg);
        fflush(stderr);
        _exit(1);
    }
}
