/*
 * platform/ascend/screen.c - what an Ascend C candidate may say.
 *
 * The candidate is one C++ file compiled by the toolkit (bisheng) for the AI
 * cores *and* for the host side of the kernel-launch library, which is linked
 * into kope's host program. Device code cannot reach the host OS, but host
 * code in the same file could (a static constructor calling system(), say).
 * So before anything is built the source must:
 *   - include only "kernel_operator.h", "kope_ascend.h" and the Ascend C
 *     library headers under "lib/" (matmul, ...), nothing else;
 *   - name no process, file, network or allocation call, no asm, no
 *     constructor/destructor or section attribute;
 *   - define kope_kernel as a `__global__ __aicore__` function.
 * A token scan, not a parser: comments and string literals are skipped, so a
 * forbidden word inside a comment is harmless and one in code is caught.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "platform/ascend/ascend.h"

static const char *const forbidden_calls[] = {
    "system", "popen", "fork", "vfork", "execv", "execve", "execvp", "execl", "execlp", "exec",
    "open", "openat", "fopen", "freopen", "creat", "unlink", "remove", "rename", "socket",
    "connect", "bind", "listen", "accept", "send", "recv", "mmap", "mprotect", "dlopen",
    "dlsym", "syscall", "kill", "ptrace", "getenv", "setenv", "putenv", "malloc", "calloc",
    "realloc", "free", "printf", "fprintf", "puts", "write", "read", "exit", "_exit", "abort",
    "signal", "sigaction", "longjmp", "setjmp", "pthread_create", "thread", "aclrtMalloc",
    "aclrtMemcpy", "aclInit", NULL};

static int word_eq(const char *w, size_t wl, const char *s)
{
    return strlen(s) == wl && memcmp(w, s, wl) == 0;
}

static int reject(enum plat_screen_rule *rule, enum plat_screen_rule r, char *detail, size_t dl,
                  int line, const char *what, size_t wl)
{
    *rule = r;
    snprintf(detail, dl, "line %d: %s '%.*s'", line,
             r == PLAT_SCREEN_HEADER ? "header not allowed" :
             r == PLAT_SCREEN_CALL ? "forbidden call" :
             r == PLAT_SCREEN_ASM ? "inline assembly" :
             r == PLAT_SCREEN_CTOR ? "constructor/destructor attribute" : "attribute not allowed",
             (int)(wl > 80 ? 80 : wl), what);
    return 1;
}

int asc_screen_source(const char *src, size_t len, enum plat_screen_rule *rule, char *detail,
                      size_t detail_len)
{
    *rule = PLAT_SCREEN_NONE;
    detail[0] = '\0';
    if (len > PLAT_SRC_MAX) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "source over %d bytes", PLAT_SRC_MAX);
        return 1;
    }
    int line = 1, bol = 1, saw_kernel = 0, saw_global = 0, saw_aicore = 0;
    size_t i = 0;
    while (i < len) {
        char c = src[i];
        if (c == '\n') { line++; bol = 1; i++; continue; }
        if (c == '/' && i + 1 < len && src[i + 1] == '/') {
            while (i < len && src[i] != '\n') i++;
            continue;
        }
        if (c == '/' && i + 1 < len && src[i + 1] == '*') {
            i += 2;
            while (i + 1 < len && !(src[i] == '*' && src[i + 1] == '/')) {
                if (src[i] == '\n') line++;
                i++;
            }
            i += 2;
            continue;
        }
        if (c == '"' || c == '\'') {
            char q = c;
            i++;
            while (i < len && src[i] != q && src[i] != '\n') {
                if (src[i] == '\\') i++;
                i++;
            }
            i++;
            bol = 0;
            continue;
        }
        if (bol && c == '#') {
            size_t j = i + 1;
            while (j < len && (src[j] == ' ' || src[j] == '\t')) j++;
            if (len - j >= 7 && memcmp(src + j, "include", 7) == 0) {
                j += 7;
                while (j < len && (src[j] == ' ' || src[j] == '\t')) j++;
                size_t k = j + 1;
                while (k < len && src[k] != '"' && src[k] != '>' && src[k] != '\n') k++;
                size_t hl = k > j + 1 ? k - j - 1 : 0;
                const char *h = src + j + 1;
                int ok = (hl == 17 && memcmp(h, "kernel_operator.h", 17) == 0) ||
                         (hl == 13 && memcmp(h, "kope_ascend.h", 13) == 0) ||
                         (hl > 4 && memcmp(h, "lib/", 4) == 0 && memmem(h, hl, "..", 2) == NULL);
                if (!ok)
                    return reject(rule, PLAT_SCREEN_HEADER, detail, detail_len, line, h, hl);
            }
            while (i < len && src[i] != '\n') i++; /* the rest of the directive */
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            size_t j = i;
            while (j < len && (isalnum((unsigned char)src[j]) || src[j] == '_')) j++;
            const char *w = src + i;
            size_t wl = j - i;
            if (word_eq(w, wl, "asm") || word_eq(w, wl, "__asm__") || word_eq(w, wl, "__asm"))
                return reject(rule, PLAT_SCREEN_ASM, detail, detail_len, line, w, wl);
            if (word_eq(w, wl, "constructor") || word_eq(w, wl, "destructor") ||
                word_eq(w, wl, "init_priority"))
                return reject(rule, PLAT_SCREEN_CTOR, detail, detail_len, line, w, wl);
            if (word_eq(w, wl, "section") || word_eq(w, wl, "alias") || word_eq(w, wl, "ifunc") ||
                word_eq(w, wl, "weakref") || word_eq(w, wl, "visibility"))
                return reject(rule, PLAT_SCREEN_ATTRIBUTE, detail, detail_len, line, w, wl);
            for (const char *const *f = forbidden_calls; *f; f++) {
                if (word_eq(w, wl, *f)) {
                    size_t k = j;
                    while (k < len && isspace((unsigned char)src[k])) k++;
                    if (k < len && src[k] == '(')
                        return reject(rule, PLAT_SCREEN_CALL, detail, detail_len, line, w, wl);
                }
            }
            if (word_eq(w, wl, "kope_kernel")) saw_kernel = 1;
            if (word_eq(w, wl, "__global__")) saw_global = 1;
            if (word_eq(w, wl, "__aicore__")) saw_aicore = 1;
            i = j;
            bol = 0;
            continue;
        }
        if (!isspace((unsigned char)c))
            bol = 0;
        i++;
    }
    if (!saw_kernel || !saw_global || !saw_aicore) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, detail_len, "no `extern \"C\" __global__ __aicore__ void kope_kernel(...)`%s",
                 saw_kernel ? " (kope_kernel is not marked __global__ __aicore__)" : "");
        return 1;
    }
    return 0;
}
