/*
 * platform/k3/screen.c - two gates a candidate passes before it ever runs.
 *
 * 1. The source screen reads the C text (comments and string literals
 *    skipped) and refuses: #include outside the allow-list; asm; constructor,
 *    destructor and other attribute tricks (section, alias, ifunc, weak, ...);
 *    thread-local storage; identifiers of system, process, file, network,
 *    allocation, timer and output functions. It is a tokenizer, not a
 *    compiler: it can be fooled by macro token pasting, which is why gate 2
 *    exists.
 * 2. The object check reads the compiled ELF64 relocatable and refuses:
 *    writable sections (.data/.bss/.sdata/.sbss/.tdata/.tbss: state that can
 *    cache across calls), init/fini sections (constructors), any undefined
 *    symbol outside a small allow-list (libm, memcpy/memset/memmove), and any
 *    global definition other than kope_kernel (so a candidate cannot replace
 *    clock_gettime, malloc wrappers or harness functions at link time).
 * Both gates name the rule and the token, so the agent learns why.
 */
#include <ctype.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/diag.h"
#include "platform/k3/k3.h"

/* ----------------------------------------------------------- the lists --- */

/* The one allow-list of headers, made from K3_ALLOWED_HEADERS (k3.h). */
const char *const k3_allowed_headers[] = {K3_ALLOWED_HEADERS(K3_HEADER_ELEM_, K3_HEADER_ELEM_)};
#define allowed_headers k3_allowed_headers

/* Identifiers refused anywhere in the source (as whole tokens). */
static const char *const forbidden_calls[] = {
    /* processes */
    "fork", "vfork", "clone", "clone3", "system", "popen", "execl", "execle", "execlp",
    "execv", "execve", "execvp", "execvpe", "fexecve", "posix_spawn", "posix_spawnp",
    "kill", "raise", "abort", "exit", "_exit", "_Exit", "atexit", "at_quick_exit",
    "signal", "sigaction", "ptrace", "syscall", "setjmp", "longjmp", "pthread_create",
    "dlopen", "dlsym", "getenv", "setenv", "prctl", "sleep", "usleep", "nanosleep",
    /* files */
    "open", "openat", "creat", "fopen", "freopen", "fdopen", "read", "write", "pread",
    "pwrite", "close", "unlink", "remove", "rename", "ioctl", "mknod", "chmod",
    /* network */
    "socket", "connect", "bind", "listen", "accept", "accept4", "send", "sendto",
    "sendmsg", "recv", "recvfrom", "recvmsg", "getaddrinfo", "gethostbyname",
    /* memory */
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    "memalign", "valloc", "pvalloc", "alloca", "__builtin_alloca",
    "__builtin_alloca_with_align", "mmap", "munmap", "mprotect", "brk", "sbrk",
    /* output */
    "printf", "fprintf", "dprintf", "sprintf", "snprintf", "vprintf", "puts", "fputs",
    "putchar", "fputc", "putc", "fwrite", "perror", "stdout", "stderr",
    /* timers (a candidate must not read or patch them) */
    "clock_gettime", "gettimeofday", "time", "clock", "rdtime", "rdcycle",
    "__builtin_readcyclecounter", "__builtin_frame_address",
    "__builtin_return_address", "__builtin_extract_return_addr",
    "__builtin___clear_cache", "__builtin_longjmp", "__builtin_setjmp",
    /* the harness's own symbols */
    "main", "kope_icount_begin", "kope_icount_end", "kope_base_scalar",
    "kope_base_autovec", "__wrap_malloc", "__real_malloc",
};

static const char *const asm_words[] = {"asm", "__asm", "__asm__"};
static const char *const state_words[] = {"_Thread_local", "thread_local", "__thread"};
static const char *const ctor_attrs[] = {"constructor", "destructor", "init_priority"};
static const char *const bad_attrs[] = {
    "section", "alias", "weakref", "weak", "ifunc", "naked", "cleanup",
    "visibility", "symver",
};

static int in_list(const char *w, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(w, list[i]) == 0)
            return 1;
    return 0;
}
#define IN(w, list) in_list((w), (list), sizeof(list) / sizeof((list)[0]))

/* "__constructor__" -> "constructor" */
static void attr_strip(const char *w, char *out, size_t out_len)
{
    size_t n = strlen(w);
    if (n > 4 && w[0] == '_' && w[1] == '_' && w[n - 1] == '_' && w[n - 2] == '_') {
        w += 2;
        n -= 4;
    }
    if (n >= out_len)
        n = out_len - 1;
    memcpy(out, w, n);
    out[n] = '\0';
}

/* ---------------------------------------------------------- the screen --- */

struct lexer {
    const char *s;
    size_t len, i;
    int line;
    int bol; /* at beginning of a line (only blanks so far) */
};

/* Length of a backslash-newline (line splice) at i, 0 if none. The compiler
 * joins spliced lines before it sees tokens, so the screen must too:
 * "fo\<newline>rk" is the identifier fork. */
static size_t lex_splice(const struct lexer *lx, size_t i)
{
    if (i + 1 < lx->len && lx->s[i] == '\\' && lx->s[i + 1] == '\n')
        return 2;
    if (i + 2 < lx->len && lx->s[i] == '\\' && lx->s[i + 1] == '\r' && lx->s[i + 2] == '\n')
        return 3;
    return 0;
}

/* Skip blanks, comments, string and char literals; stop at the next token
 * character. Returns 0 at end. */
static int lex_skip(struct lexer *lx)
{
    while (lx->i < lx->len) {
        char c = lx->s[lx->i];
        if (c == '\n') {
            lx->line++;
            lx->bol = 1;
            lx->i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->i++;
        } else if (lex_splice(lx, lx->i)) {
            lx->i += lex_splice(lx, lx->i);
            lx->line++;
        } else if (c == '/' && lx->i + 1 < lx->len && lx->s[lx->i + 1] == '/') {
            while (lx->i < lx->len && lx->s[lx->i] != '\n')
                lx->i++;
        } else if (c == '/' && lx->i + 1 < lx->len && lx->s[lx->i + 1] == '*') {
            lx->i += 2;
            while (lx->i + 1 < lx->len && !(lx->s[lx->i] == '*' && lx->s[lx->i + 1] == '/')) {
                if (lx->s[lx->i] == '\n')
                    lx->line++;
                lx->i++;
            }
            lx->i += 2;
        } else if (c == '"' || c == '\'') {
            lx->i++;
            while (lx->i < lx->len && lx->s[lx->i] != c && lx->s[lx->i] != '\n') {
                if (lx->s[lx->i] == '\\')
                    lx->i++;
                lx->i++;
            }
            lx->i++;
            lx->bol = 0;
        } else {
            return 1;
        }
    }
    return 0;
}

/* Read an identifier at lx->i into w (capped); returns its length or 0. */
static size_t lex_ident(struct lexer *lx, char *w, size_t w_len)
{
    size_t n = 0, sp;
    while (lx->i < lx->len) {
        if ((sp = lex_splice(lx, lx->i))) {
            lx->i += sp;
            lx->line++;
            continue;
        }
        if (!isalnum((unsigned char)lx->s[lx->i]) && lx->s[lx->i] != '_')
            break;
        if (n + 1 < w_len)
            w[n++] = lx->s[lx->i];
        lx->i++;
    }
    w[n] = '\0';
    return n;
}

static int reject(enum plat_screen_rule r, enum plat_screen_rule *rule, char *detail,
                  size_t dl, int line, const char *what, const char *tok)
{
    *rule = r;
    snprintf(detail, dl, "line %d: %s '%s'", line, what, tok);
    return 1;
}

/* The directive at the current '#': only #include matters (others pass). */
static int screen_directive(struct lexer *lx, enum plat_screen_rule *rule, char *detail, size_t dl)
{
    char w[64];
    lx->i += lx->s[lx->i] == '%' ? 2 : 1; /* '#' or the digraph '%:' */
    while (lx->i < lx->len && (lx->s[lx->i] == ' ' || lx->s[lx->i] == '\t' || lex_splice(lx, lx->i)))
        lx->i += lex_splice(lx, lx->i) ? lex_splice(lx, lx->i) : 1;
    lex_ident(lx, w, sizeof w);
    if (strcmp(w, "include_next") == 0 || strcmp(w, "import") == 0 || strcmp(w, "embed") == 0)
        return reject(PLAT_SCREEN_HEADER, rule, detail, dl, lx->line, "directive", w);
    if (strcmp(w, "include") != 0)
        return 0;
    while (lx->i < lx->len && (lx->s[lx->i] == ' ' || lx->s[lx->i] == '\t'))
        lx->i++;
    char close = 0;
    if (lx->i < lx->len && lx->s[lx->i] == '<')
        close = '>';
    else if (lx->i < lx->len && lx->s[lx->i] == '"')
        close = '"';
    if (!close)
        return reject(PLAT_SCREEN_HEADER, rule, detail, dl, lx->line,
                      "#include of a macro is not allowed", "#include");
    lx->i++;
    char h[128];
    size_t n = 0;
    while (lx->i < lx->len && lx->s[lx->i] != close && lx->s[lx->i] != '\n') {
        if (n + 1 < sizeof h)
            h[n++] = lx->s[lx->i];
        lx->i++;
    }
    h[n] = '\0';
    if (lx->i < lx->len && lx->s[lx->i] == close)
        lx->i++;
    if (!IN(h, allowed_headers))
        return reject(PLAT_SCREEN_HEADER, rule, detail, dl, lx->line,
                      "header outside the allow-list (" K3_ALLOWED_HEADERS_TEXT ")", h);
    return 0;
}

/* Inside __attribute__((...)) or [[...]]: check every identifier until the
 * brackets balance. */
static int screen_attribute(struct lexer *lx, char open, char close, enum plat_screen_rule *rule,
                            char *detail, size_t dl)
{
    int depth = 0;
    char w[64], a[64];
    while (lex_skip(lx)) {
        char c = lx->s[lx->i];
        if (c == open) {
            depth++;
            lx->i++;
        } else if (c == close) {
            lx->i++;
            if (--depth <= 0)
                return 0;
        } else if (isalpha((unsigned char)c) || c == '_') {
            lex_ident(lx, w, sizeof w);
            attr_strip(w, a, sizeof a);
            if (IN(a, ctor_attrs))
                return reject(PLAT_SCREEN_CTOR, rule, detail, dl, lx->line, "attribute", w);
            if (IN(a, bad_attrs))
                return reject(PLAT_SCREEN_ATTRIBUTE, rule, detail, dl, lx->line, "attribute", w);
        } else {
            lx->i++;
        }
        if (depth == 0 && open == '[')
            return 0;
    }
    return 0;
}

int k3_screen_source(const char *src, size_t len, enum plat_screen_rule *rule, char *detail,
                     size_t detail_len)
{
    struct lexer lx = {src, len, 0, 1, 1};
    char w[128];
    int has_kernel = 0;
    *rule = PLAT_SCREEN_NONE;
    if (detail_len)
        detail[0] = '\0';
    if (len > PLAT_SRC_MAX) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "source is %zu bytes, over the %d-byte cap", len, PLAT_SRC_MAX);
        return 1;
    }
    if (memchr(src, '\0', len)) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, detail_len, "source contains a NUL byte");
        return 1;
    }
    if (len >= 3 && (unsigned char)src[0] == 0xEF && (unsigned char)src[1] == 0xBB &&
        (unsigned char)src[2] == 0xBF)
        lx.i = 3; /* UTF-8 byte order mark: the compiler skips it too */
    while (lex_skip(&lx)) {
        char c = src[lx.i];
        if ((unsigned char)c >= 0x80) {
            /* outside comments and strings: nothing a kernel needs, and a way
             * to make the screen and the compiler disagree about tokens */
            *rule = PLAT_SCREEN_ATTRIBUTE;
            snprintf(detail, detail_len, "line %d: non-ASCII byte outside comments and strings",
                     lx.line);
            return 1;
        }
        if ((c == '#' || (c == '%' && lx.i + 1 < len && src[lx.i + 1] == ':')) && lx.bol) {
            if (screen_directive(&lx, rule, detail, detail_len))
                return 1;
            continue;
        }
        lx.bol = 0;
        if (isalpha((unsigned char)c) || c == '_') {
            lex_ident(&lx, w, sizeof w);
            if (strcmp(w, "kope_kernel") == 0 || strcmp(w, "KOPE_KERNEL") == 0)
                has_kernel = 1;
            if (IN(w, asm_words))
                return reject(PLAT_SCREEN_ASM, rule, detail, detail_len, lx.line, "inline assembly", w);
            if (IN(w, state_words))
                return reject(PLAT_SCREEN_STATE, rule, detail, detail_len, lx.line,
                              "thread-local storage", w);
            if (IN(w, forbidden_calls))
                return reject(PLAT_SCREEN_CALL, rule, detail, detail_len, lx.line,
                              "forbidden identifier", w);
            if (strcmp(w, "__attribute__") == 0 || strcmp(w, "__attribute") == 0 ||
                strcmp(w, "__declspec") == 0) {
                if (screen_attribute(&lx, '(', ')', rule, detail, detail_len))
                    return 1;
            }
            if (strcmp(w, "_Pragma") == 0)
                return reject(PLAT_SCREEN_ATTRIBUTE, rule, detail, detail_len, lx.line,
                              "operator", w);
        } else if (isdigit((unsigned char)c)) {
            while (lx.i < len && (isalnum((unsigned char)src[lx.i]) || src[lx.i] == '.' || src[lx.i] == '_'))
                lx.i++;
        } else if (c == '[' && lx.i + 1 < len && src[lx.i + 1] == '[') {
            lx.i++;
            if (screen_attribute(&lx, '[', ']', rule, detail, detail_len))
                return 1;
        } else {
            lx.i++;
        }
    }
    if (!has_kernel) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, detail_len, "no definition of kope_kernel (KOPE_KERNEL)");
        return 1;
    }
    return 0;
}

/* --------------------------------------------------- the object check --- */

/* Undefined symbols a candidate object may reference. */
static const char *const allowed_symbols[] = {
    /* clang lowers memcmp(...) == 0 to bcmp */
    "memcpy", "memset", "memmove", "memcmp", "bcmp",
    "expf", "exp", "exp2f", "expm1f", "logf", "log", "log2f", "log1pf", "powf", "pow",
    "sqrtf", "sqrt", "tanhf", "tanh", "erff", "erf", "erfcf", "fabsf", "fabs",
    "fminf", "fmaxf", "fmin", "fmax", "floorf", "ceilf", "roundf", "truncf", "rintf",
    "lrintf", "nearbyintf", "fmaf", "fma", "ldexpf", "frexpf", "sinf", "cosf",
    "coshf", "sinhf", "atanf", "copysignf", "scalbnf",
    "__stack_chk_fail", "__stack_chk_guard",
};

#define OBJ_MAX_BYTES (16u << 20)

/* Does [off, off+size) lie inside a file of len bytes (no overflow)? */
static int in_file(uint64_t off, uint64_t size, size_t len)
{
    return off <= len && size <= len - off;
}

/* CSRs compiled code may touch: the vector state (vstart 0x008, vxsat
 * 0x009, vxrm 0x00A, vcsr 0x00F, vl 0xC20, vtype 0xC21, vlenb 0xC22) and the
 * FP status/rounding registers (fflags 0x001, frm 0x002, fcsr 0x003). clang
 * emits `csrwi vxrm, N` for fixed-point intrinsics with an explicit rounding
 * mode, and reads vlenb for scalable stack frames. What a kernel leaves in
 * them is judged at run time (the harness checks frm after each call; every
 * call runs in a fresh process, so nothing it sets survives). Counters
 * (cycle, time, instret, hpm*) and everything else are refused. */
static int csr_allowed(uint32_t csr)
{
    return csr == 0x001 || csr == 0x002 || csr == 0x003 || csr == 0x008 || csr == 0x009 ||
           csr == 0x00A || csr == 0x00F || csr == 0xC20 || csr == 0xC21 || csr == 0xC22;
}

#define RV_ECALL 0x00000073u
#define RV_EBREAK 0x00100073u
#define RV_C_EBREAK 0x9002u

/* Refuse RISC-V SYSTEM instructions in machine code: ecall (a system call
 * without libc), ebreak, and CSR access outside the list above.
 *
 * Two passes. The linear decode (16-bit compressed and 32-bit instructions
 * from the section start) sees what the code executes when read in order:
 * any ecall, ebreak, c.ebreak or CSR instruction off the list is refused.
 * Then every 2-byte offset is read as a 32-bit word, because a computed jump
 * can land inside another instruction's bytes (a misaligned decode the
 * linear pass never sees): there, ecall and reads of the counters (cycle,
 * time, instret, hpm*: 0xC00-0xC1F) are refused too. Other CSR patterns and
 * ebreak/c.ebreak are only refused in the linear pass: their bit patterns
 * occur inside honest instructions (16 of the 316 template instances hold a
 * misaligned "CSR access" to some privileged CSR), and executed misaligned
 * they merely trap, which is a crash. */
static int text_check(const unsigned char *code, size_t n, const char *sec, char *detail, size_t dl)
{
    const char *what = NULL;
    uint32_t w = 0;
    size_t at = 0;
    for (size_t i = 0; i + 2 <= n && !what;) {
        uint16_t lo = (uint16_t)(code[i] | code[i + 1] << 8);
        if ((lo & 3) != 3) {
            if (lo == RV_C_EBREAK) {
                w = lo, at = i, what = "c.ebreak";
            }
            i += 2;
            continue;
        }
        if (i + 4 > n)
            break;
        w = lo | (uint32_t)(code[i + 2] | code[i + 3] << 8) << 16;
        if ((w & 0x7f) == 0x73) {
            uint32_t funct3 = (w >> 12) & 7;
            if (funct3 == 0 || funct3 == 4 || !csr_allowed(w >> 20))
                at = i, what = w == RV_ECALL ? "ecall" : w == RV_EBREAK ? "ebreak" : "a system instruction";
        }
        i += 4;
    }
    for (size_t i = 0; i + 4 <= n && !what; i += 2) {
        w = (uint32_t)(code[i] | code[i + 1] << 8 | code[i + 2] << 16 | (uint32_t)code[i + 3] << 24);
        if ((w & 0x7f) != 0x73)
            continue;
        uint32_t funct3 = (w >> 12) & 7;
        if (w == RV_ECALL)
            at = i, what = "ecall (inside other instructions' bytes)";
        else if (funct3 != 0 && funct3 != 4 && (w >> 20) >= 0xC00 && (w >> 20) <= 0xC1F)
            at = i, what = "a counter CSR read (inside other instructions' bytes)";
    }
    if (!what)
        return 0;
    snprintf(detail, dl, "machine code in %s holds %s (0x%08x at +%zu): ecall/ebreak/CSR access "
             "other than the FP and vector CSRs are not allowed in a kernel", sec, what, w, at);
    return 1;
}

int k3_screen_object(const char *path, enum plat_screen_rule *rule, char *detail, size_t dl)
{
    int rc = PLAT_ERR_IO;
    unsigned char *buf = NULL;
    size_t len = 0;
    FILE *f = fopen(path, "rb");
    *rule = PLAT_SCREEN_NONE;
    if (!f) {
        snprintf(detail, dl, "cannot open %s", path);
        goto out;
    }
    buf = malloc(OBJ_MAX_BYTES);
    if (!buf) {
        rc = PLAT_ERR_NOMEM;
        goto out;
    }
    len = fread(buf, 1, OBJ_MAX_BYTES, f);
    if (len < sizeof(Elf64_Ehdr) || memcmp(buf, ELFMAG, SELFMAG) != 0 ||
        buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB) {
        snprintf(detail, dl, "%s is not an ELF64 little-endian object", path);
        goto out;
    }
    if (len == OBJ_MAX_BYTES) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, dl, "object file over %u bytes", OBJ_MAX_BYTES);
        rc = 1;
        goto out;
    }
    Elf64_Ehdr eh;
    memcpy(&eh, buf, sizeof eh);
    if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), len) ||
        eh.e_shstrndx >= eh.e_shnum) {
        snprintf(detail, dl, "%s: bad section table", path);
        goto out;
    }
    Elf64_Shdr *sh = calloc(eh.e_shnum ? eh.e_shnum : 1, sizeof *sh);
    if (!sh) {
        rc = PLAT_ERR_NOMEM;
        goto out;
    }
    memcpy(sh, buf + eh.e_shoff, (size_t)eh.e_shnum * sizeof *sh);
    rc = 0;
    const Elf64_Shdr *strsh = &sh[eh.e_shstrndx];
    int has_kernel = 0;
    for (unsigned i = 0; i < eh.e_shnum && rc == 0; i++) {
        const char *name = "";
        if (in_file(strsh->sh_offset, sh[i].sh_name, len) && strsh->sh_offset + sh[i].sh_name < len) {
            size_t at = (size_t)(strsh->sh_offset + sh[i].sh_name);
            name = memchr(buf + at, '\0', len - at) ? (const char *)buf + at : "?";
        }
        if (eh.e_machine == EM_RISCV && sh[i].sh_type == SHT_PROGBITS &&
            (sh[i].sh_flags & SHF_EXECINSTR) && in_file(sh[i].sh_offset, sh[i].sh_size, len) &&
            text_check(buf + sh[i].sh_offset, (size_t)sh[i].sh_size, name, detail, dl)) {
            *rule = PLAT_SCREEN_SYSTEM_INSN;
            rc = 1;
        } else if (sh[i].sh_type == SHT_INIT_ARRAY || sh[i].sh_type == SHT_FINI_ARRAY ||
            sh[i].sh_type == SHT_PREINIT_ARRAY || strncmp(name, ".ctors", 6) == 0 ||
            strncmp(name, ".dtors", 6) == 0 || strncmp(name, ".init", 5) == 0 ||
            strncmp(name, ".fini", 5) == 0) {
            *rule = PLAT_SCREEN_CTOR;
            snprintf(detail, dl, "object has an init/fini section %s", name);
            rc = 1;
        } else if ((sh[i].sh_flags & SHF_ALLOC) && (sh[i].sh_flags & SHF_WRITE) &&
                   sh[i].sh_size > 0 && strncmp(name, ".data.rel.ro", 12) != 0) {
            *rule = PLAT_SCREEN_STATE;
            snprintf(detail, dl, "object has writable storage %s (%llu bytes): state can "
                     "survive across calls", name, (unsigned long long)sh[i].sh_size);
            rc = 1;
        } else if (sh[i].sh_type == SHT_SYMTAB) {
            if (sh[i].sh_link >= eh.e_shnum || !in_file(sh[i].sh_offset, sh[i].sh_size, len) ||
                sh[i].sh_entsize != sizeof(Elf64_Sym)) {
                snprintf(detail, dl, "%s: bad symbol table", path);
                rc = PLAT_ERR_IO;
                break;
            }
            const Elf64_Shdr *ss = &sh[sh[i].sh_link];
            if (!in_file(ss->sh_offset, ss->sh_size, len) || ss->sh_size == 0) {
                snprintf(detail, dl, "%s: bad string table", path);
                rc = PLAT_ERR_IO;
                break;
            }
            const char *strtab = (const char *)buf + ss->sh_offset;
            size_t nsym = sh[i].sh_size / sizeof(Elf64_Sym);
            for (size_t k = 1; k < nsym && rc == 0; k++) {
                Elf64_Sym sym;
                memcpy(&sym, buf + sh[i].sh_offset + k * sizeof sym, sizeof sym);
                if (sym.st_name >= ss->sh_size)
                    continue;
                const char *sn = strtab + sym.st_name;
                if (!memchr(sn, '\0', ss->sh_size - sym.st_name) || !*sn)
                    continue;
                int bind = ELF64_ST_BIND(sym.st_info), type = ELF64_ST_TYPE(sym.st_info);
                if (sym.st_shndx == SHN_UNDEF) {
                    if (!IN(sn, allowed_symbols)) {
                        *rule = PLAT_SCREEN_SYMBOL;
                        snprintf(detail, dl, "object calls '%s', outside the allow-list "
                                 "(libm, memcpy/memset/memmove/memcmp/bcmp)", sn);
                        rc = 1;
                    }
                } else if (bind != STB_LOCAL && type != STT_SECTION && type != STT_FILE) {
                    if (strcmp(sn, "kope_kernel") == 0) {
                        has_kernel = 1;
                    } else {
                        *rule = PLAT_SCREEN_SYMBOL;
                        snprintf(detail, dl, "object defines global symbol '%s': only "
                                 "kope_kernel may be global (make helpers static)", sn);
                        rc = 1;
                    }
                } else if (sym.st_shndx == SHN_COMMON) {
                    *rule = PLAT_SCREEN_STATE;
                    snprintf(detail, dl, "object has common storage '%s'", sn);
                    rc = 1;
                }
            }
        }
    }
    if (rc == 0 && !has_kernel) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, dl, "object does not define kope_kernel");
        rc = 1;
    }
    free(sh);
out:
    free(buf);
    if (f)
        fclose(f);
    return rc;
}

/* ------------------------------------------- includes, by the compiler --- */

/* The source screen's tokenizer reads directives by hand, and the compiler
 * accepts spellings it does not (a comment or a form feed between '#' and
 * "include"). So the compiler is asked: the candidate is compiled with -H
 * (every header opened, one line each, depth as leading dots) and -MD (every
 * file read, #embed included). A header the candidate itself includes (depth
 * 1) must be one the allow-list resolves to; any other file read must be the
 * candidate, the generated prototype header, or a file the allowed headers
 * themselves read (the closure, taken once from a probe compile). */

/* Is path one of the '\n'-separated entries of list? */
static int path_in(const char *list, const char *path, size_t plen)
{
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, '\n');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == plen && memcmp(p, path, plen) == 0)
            return 1;
        p = e ? e + 1 : p + l;
    }
    return 0;
}

/* The next header line of -H output from *pos ("... /path": depth as dots),
 * skipping every other line; 0 at the end of out. */
static int hline_next(const char **pos, size_t *depth, const char **path, size_t *plen)
{
    while (**pos) {
        const char *l = *pos, *e = strchr(l, '\n');
        size_t len = e ? (size_t)(e - l) : strlen(l);
        size_t dots = 0;
        while (dots < len && l[dots] == '.')
            dots++;
        *pos = e ? e + 1 : l + len;
        if (dots > 0 && dots < len && l[dots] == ' ') {
            *depth = dots;
            *path = l + dots + 1;
            *plen = len - dots - 1;
            return 1;
        }
    }
    return 0;
}

int k3_includes_collect(const char *out, char *direct, size_t direct_len, char *all, size_t all_len)
{
    size_t dn = 0, an = 0, dots, pl;
    const char *path;
    int rc = 0;
    if (direct_len)
        direct[0] = '\0';
    if (all_len)
        all[0] = '\0';
    for (const char *l = out; hline_next(&l, &dots, &path, &pl);) {
        {
            char *dst = dots == 1 ? direct : all;
            size_t *n = dots == 1 ? &dn : &an, cap = dots == 1 ? direct_len : all_len;
            if (*n + pl + 2 > cap)
                rc = -1;
            else {
                memcpy(dst + *n, path, pl);
                *n += pl;
                dst[(*n)++] = '\n';
                dst[*n] = '\0';
            }
        }
    }
    return rc;
}

int k3_screen_includes(const char *out, const char *deps, const char *allowed_direct,
                       const char *closure, const char *own, enum plat_screen_rule *rule,
                       char *detail, size_t dl)
{
    /* -H lines: depth 1 = what the candidate (or the -include'd prototype)
     * included itself */
    size_t dots, pl;
    const char *path;
    for (const char *l = out; hline_next(&l, &dots, &path, &pl);) {
        {
            int ok = dots == 1 ? path_in(allowed_direct, path, pl) || path_in(own, path, pl)
                               : path_in(closure, path, pl) || path_in(own, path, pl);
            if (!ok) {
                const char *base = path + pl;
                while (base > path && base[-1] != '/')
                    base--;
                *rule = PLAT_SCREEN_HEADER;
                snprintf(detail, dl, "the compiler opened '%.*s', outside the allow-list (%s)",
                         (int)(path + pl - base), base, K3_ALLOWED_HEADERS_TEXT);
                return 1;
            }
        }
    }
    /* -MD: "target: dep dep \\\n dep ..." - every file read, #embed too.
     * Fail closed: a list that is missing, unreadable (deps NULL), cut
     * short, unparsable or without the candidate's own file is no evidence
     * that nothing else was read (a compiler that deleted its list, or was
     * made to write none, must not pass as "read nothing"). */
    size_t dlen = deps ? strlen(deps) : 0;
    const char *p = deps ? strchr(deps, ':') : NULL;
    const char *why = !deps ? "missing or unreadable (a fatal error, such as an #include it "
                              "cannot open, stops clang before it writes one)"
                      : !p || p == deps ? "unparsable"
                      : dlen < 2 || deps[dlen - 1] != '\n' || deps[dlen - 2] == '\\' ? "cut short"
                                                                                  : NULL;
    if (!why) {
        /* own's first line is the candidate's file */
        char first[1024];
        size_t ol = own ? strcspn(own, "\n") : 0;
        int found = 0;
        if (ol && ol < sizeof first) {
            memcpy(first, own, ol);
            first[ol] = '\0';
            for (const char *q = p; (q = strstr(q, first)) && !found; q++)
                found = (q[-1] == ' ' || q[-1] == '\t') &&
                        (q[ol] == ' ' || q[ol] == '\n' || q[ol] == '\\' || q[ol] == '\r');
        }
        if (!found)
            why = "without the candidate's own file";
    }
    if (why) {
        *rule = PLAT_SCREEN_HEADER;
        snprintf(detail, dl, "the compiler's dependency list is %s: what it read cannot be "
                 "checked, so the candidate is refused", why);
        return 1;
    }
    while (p && *p) {
        p++;
        while (*p == ' ' || *p == '\\' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        const char *b = p;
        while (*p && *p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' &&
               !(*p == '\\' && (p[1] == '\n' || p[1] == '\r')))
            p++;
        pl = (size_t)(p - b);
        if (pl == 0)
            break;
        if (b[pl - 1] == ':') /* -MP phony targets, not produced here, but harmless */
            continue;
        if (!path_in(closure, b, pl) && !path_in(own, b, pl) && !path_in(allowed_direct, b, pl)) {
            const char *base = b + pl;
            while (base > b && base[-1] != '/')
                base--;
            *rule = PLAT_SCREEN_HEADER;
            snprintf(detail, dl, "the compiler read '%.*s' (an #include or #embed outside the "
                     "allow-list: %s)", (int)(b + pl - base), base, K3_ALLOWED_HEADERS_TEXT);
            return 1;
        }
        p--; /* the loop's p++ steps over the separator */
    }
    return 0;
}

/* ------------------------------------------------- diagnostics kept --- */

/* The one cleaner every target uses (platform/diag.c: an allow-list of
 * lines attributed to the candidate's own file); the K3 candidate's file is
 * cand.c, so its diagnostics read "cand.c:LINE:COL: ...". */
size_t k3_diag_clean(const char *in, const char *cand_path, char *out, size_t out_len)
{
    return plat_diag_clean(in, cand_path, out, out_len);
}
