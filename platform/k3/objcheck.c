/*
 * platform/k3/objcheck.c - the ELF64 reader and the two checks of
 * objcheck.h: the candidate's object, and the kernel program linked from it.
 *
 * The object check decides by allow-lists, never by what is forbidden:
 *   sections  by type and flags, and where the linker gives a name meaning,
 *             by exact name too:
 *               code       PROGBITS, exactly ALLOC|EXECINSTR, .text or .text.*
 *               read-only  PROGBITS, ALLOC (+MERGE, +STRINGS), .rodata[.*] or
 *                          .srodata[.*]
 *               unwind     PROGBITS, ALLOC, .eh_frame
 *               kept aside non-ALLOC: SYMTAB (one), STRTAB, .comment,
 *                          .note.GNU-stack (no flags: not an executable
 *                          stack), .debug_*, .riscv.attributes
 *                          (RISCV_ATTRIBUTES), .llvm_addrsig (LLVM_ADDRSIG)
 *               empty      .data/.bss of size 0 (GNU as makes them always)
 *               RELA       for one of the above (not symtab/strtab/notes)
 *             Refused: the init/fini names (.init .fini .init_array*
 *             .fini_array* .preinit_array* .ctors* .dtors*) whatever their
 *             type, INIT/FINI/PREINIT_ARRAY, TLS, anything writable with
 *             bytes, GROUP, NOTE, REL, .deplibs (LLVM_DEPENDENT_LIBRARIES),
 *             linker options, unknown types and flags.
 *   symbols   types NOTYPE OBJECT FUNC SECTION FILE; bindings LOCAL GLOBAL
 *             (WEAK refused: a weak definition can stand in for a symbol the
 *             C library looks for at start-up); visibility default or hidden;
 *             no common symbols; exactly one global definition, kope_kernel,
 *             a FUNC in a code section; undefined: K3_ALLOWED_SYMBOLS.
 *   relocs    K3_ALLOWED_RELOCS, in RELA sections of allowed sections.
 *   code      no ecall/ebreak/c.ebreak and no CSR outside K3_ALLOWED_CSRS in
 *             the linear decode; no ecall and no counter read at any 2-byte
 *             offset.
 * The linked-program check compares what runs outside main with the same
 * stub linked with a null kernel (see objcheck.h).
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "platform/k3/objcheck.h"

#ifndef SHT_RISCV_ATTRIBUTES
#define SHT_RISCV_ATTRIBUTES 0x70000003
#endif
#define SHT_LLVM_LINKER_OPTIONS_ 0x6fff4c01u
#define SHT_LLVM_ADDRSIG_ 0x6fff4c03u
#define SHT_LLVM_DEPENDENT_LIBRARIES_ 0x6fff4c04u
#define R_RISCV_RELATIVE_ 3u
#define R_RISCV_IRELATIVE_ 58u

/* ----------------------------------------------------------- the lists --- */

#define ELEM_(s) s,
static const char *const allowed_symbols[] = {K3_ALLOWED_SYMBOLS(ELEM_)};
#define RELOC_ELEM_(n, s) {n, s},
static const struct {
    unsigned type;
    const char *name;
} allowed_relocs[] = {K3_ALLOWED_RELOCS(RELOC_ELEM_)};
static const unsigned allowed_csrs[] = {
#define CSR_ELEM_(n, s) n,
    K3_ALLOWED_CSRS(CSR_ELEM_)};

/* Names of the refused RISC-V types, so a refusal says what it was. */
static const char *reloc_refused_name(unsigned t)
{
    static const struct {
        unsigned type;
        const char *name;
    } names[] = {
        {0, "R_RISCV_NONE"}, {3, "R_RISCV_RELATIVE"}, {4, "R_RISCV_COPY"},
        {5, "R_RISCV_JUMP_SLOT"}, {6, "R_RISCV_TLS_DTPMOD32"}, {7, "R_RISCV_TLS_DTPMOD64"},
        {8, "R_RISCV_TLS_DTPREL32"}, {9, "R_RISCV_TLS_DTPREL64"}, {10, "R_RISCV_TLS_TPREL32"},
        {11, "R_RISCV_TLS_TPREL64"}, {12, "R_RISCV_TLSDESC"}, {20, "R_RISCV_GOT_HI20"},
        {21, "R_RISCV_TLS_GOT_HI20"}, {22, "R_RISCV_TLS_GD_HI20"}, {29, "R_RISCV_TPREL_HI20"},
        {30, "R_RISCV_TPREL_LO12_I"}, {31, "R_RISCV_TPREL_LO12_S"}, {32, "R_RISCV_TPREL_ADD"},
        {41, "R_RISCV_GOT32_PCREL"}, {58, "R_RISCV_IRELATIVE"}, {59, "R_RISCV_PLT32"},
        {62, "R_RISCV_TLSDESC_HI20"}, {63, "R_RISCV_TLSDESC_LOAD_LO12"},
        {64, "R_RISCV_TLSDESC_ADD_LO12"}, {65, "R_RISCV_TLSDESC_CALL"}, {191, "R_RISCV_VENDOR"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].type == t)
            return names[i].name;
    return NULL;
}

static int reloc_allowed(unsigned t)
{
    for (size_t i = 0; i < sizeof allowed_relocs / sizeof allowed_relocs[0]; i++)
        if (allowed_relocs[i].type == t)
            return 1;
    return 0;
}

static int symbol_allowed(const char *name)
{
    for (size_t i = 0; i < sizeof allowed_symbols / sizeof allowed_symbols[0]; i++)
        if (strcmp(name, allowed_symbols[i]) == 0)
            return 1;
    return 0;
}

static int csr_allowed(uint32_t csr)
{
    for (size_t i = 0; i < sizeof allowed_csrs / sizeof allowed_csrs[0]; i++)
        if (allowed_csrs[i] == csr)
            return 1;
    return 0;
}

/* A hostile name made printable and capped, for a message. */
static const char *pr(const char *s, char *buf, size_t cap)
{
    size_t k = 0;
    for (; s && *s && k + 4 < cap; s++)
        buf[k++] = isprint((unsigned char)*s) ? *s : '?';
    if (s && *s)
        buf[k++] = '.', buf[k++] = '.', buf[k++] = '.';
    buf[k] = '\0';
    return buf;
}

/* ------------------------------------------------------ the ELF reader --- */

struct elf {
    const unsigned char *b;
    size_t len;
    Elf64_Ehdr eh;
    Elf64_Shdr *sh; /* copied out: the file's table need not be aligned */
    unsigned n;
    unsigned symtab; /* index of the one SHT_SYMTAB, 0 if none */
    size_t nsym;
    const char *strtab;
    size_t strtab_len;
};

/* Does [off, off+size) lie inside len bytes (no overflow)? */
static int in_file(uint64_t off, uint64_t size, size_t len)
{
    return off <= len && size <= len - off;
}

/* A NUL-terminated string at off of a table of len bytes, or NULL. */
static const char *str_at(const char *tab, size_t len, uint64_t off)
{
    if (!tab || off >= len || !memchr(tab + off, '\0', len - off))
        return NULL;
    return tab + off;
}

static void elf_close(struct elf *e)
{
    free(e->sh);
    e->sh = NULL;
}

/* Parse the header and the section table; find the symbol table. 0, or 1
 * with why filled (malformed, or not the kind of ELF asked for). */
static int elf_open(struct elf *e, const unsigned char *b, size_t len, char *why, size_t wl)
{
    memset(e, 0, sizeof *e);
    e->b = b;
    e->len = len;
    if (len < sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0 || b[EI_CLASS] != ELFCLASS64 ||
        b[EI_DATA] != ELFDATA2LSB) {
        snprintf(why, wl, "not an ELF64 little-endian file");
        return 1;
    }
    memcpy(&e->eh, b, sizeof e->eh);
    if (e->eh.e_machine != EM_RISCV) {
        snprintf(why, wl, "not a RISC-V ELF file (machine %u)", (unsigned)e->eh.e_machine);
        return 1;
    }
    if (e->eh.e_shoff == 0 || e->eh.e_shnum == 0 || e->eh.e_shentsize != sizeof(Elf64_Shdr) ||
        e->eh.e_shstrndx >= e->eh.e_shnum ||
        !in_file(e->eh.e_shoff, (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr), len)) {
        snprintf(why, wl, "bad section table");
        return 1;
    }
    e->n = e->eh.e_shnum;
    e->sh = malloc((size_t)e->n * sizeof *e->sh);
    if (!e->sh) {
        snprintf(why, wl, "out of memory");
        return 1;
    }
    memcpy(e->sh, b + e->eh.e_shoff, (size_t)e->n * sizeof *e->sh);
    const Elf64_Shdr *ss = &e->sh[e->eh.e_shstrndx];
    if (ss->sh_type != SHT_STRTAB || !in_file(ss->sh_offset, ss->sh_size, len)) {
        snprintf(why, wl, "bad section name table");
        return 1;
    }
    for (unsigned i = 1; i < e->n; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_NOBITS && !in_file(s->sh_offset, s->sh_size, len)) {
            snprintf(why, wl, "section %u lies outside the file", i);
            return 1;
        }
        if (s->sh_type == SHT_SYMTAB) {
            if (e->symtab) {
                snprintf(why, wl, "more than one symbol table");
                return 1;
            }
            if (s->sh_entsize != sizeof(Elf64_Sym) || s->sh_link == 0 || s->sh_link >= e->n ||
                e->sh[s->sh_link].sh_type != SHT_STRTAB) {
                snprintf(why, wl, "bad symbol table");
                return 1;
            }
            e->symtab = i;
            e->nsym = s->sh_size / sizeof(Elf64_Sym);
            e->strtab = (const char *)b + e->sh[s->sh_link].sh_offset;
            e->strtab_len = e->sh[s->sh_link].sh_size;
        }
    }
    return 0;
}

/* Section i's name, or "?" when its name is not a string of the table. */
static const char *elf_secname(const struct elf *e, unsigned i)
{
    const Elf64_Shdr *ss = &e->sh[e->eh.e_shstrndx];
    const char *n = str_at((const char *)e->b + ss->sh_offset, ss->sh_size, e->sh[i].sh_name);
    return n ? n : "?";
}

/* Symbol k; its name ("" when none or not a string). */
static void elf_sym(const struct elf *e, size_t k, Elf64_Sym *sym, const char **name)
{
    memcpy(sym, e->b + e->sh[e->symtab].sh_offset + k * sizeof *sym, sizeof *sym);
    const char *n = str_at(e->strtab, e->strtab_len, sym->st_name);
    *name = n ? n : "";
}

/* Map a file read-only: 0, or PLAT_ERR_IO / 1 (over cap: rejected) with why. */
static int file_map(const char *path, size_t cap, const unsigned char **b, size_t *len, char *why,
                    size_t wl)
{
    *b = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, wl, "cannot open %s: %s", path, strerror(errno));
        return PLAT_ERR_IO;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, wl, "%s is not a regular file", path);
        rc = PLAT_ERR_IO;
    } else if ((uint64_t)st.st_size > cap) {
        snprintf(why, wl, "%s is over %zu bytes", path, cap);
        rc = 1;
    } else if (st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            snprintf(why, wl, "cannot map %s: %s", path, strerror(errno));
            rc = PLAT_ERR_IO;
        } else {
            *b = m;
            *len = (size_t)st.st_size;
        }
    }
    close(fd);
    return rc;
}

static void file_unmap(const unsigned char *b, size_t len)
{
    if (b && len)
        munmap((void *)(uintptr_t)b, len);
}

/* ------------------------------------------------- the machine code --- */

#define RV_ECALL 0x00000073u
#define RV_EBREAK 0x00100073u
#define RV_C_EBREAK 0x9002u

/* Refuse RISC-V SYSTEM instructions in machine code: ecall (a system call
 * without libc), ebreak, and CSR access outside K3_ALLOWED_CSRS.
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
/* Does a call relocation (R_RISCV_CALL, R_RISCV_CALL_PLT: an auipc + jalr
 * pair whose target the linker fills in) start at offset off of section
 * sec? */
static int call_reloc_at(const struct elf *e, unsigned sec, uint64_t off)
{
    for (unsigned i = 1; i < e->n; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_RELA || s->sh_info != sec || s->sh_entsize != sizeof(Elf64_Rela) ||
            !in_file(s->sh_offset, s->sh_size, e->len))
            continue;
        for (size_t k = 0; k < s->sh_size / sizeof(Elf64_Rela); k++) {
            Elf64_Rela r;
            memcpy(&r, e->b + s->sh_offset + k * sizeof r, sizeof r);
            unsigned t = (unsigned)ELF64_R_TYPE(r.r_info);
            if (r.r_offset == off && (t == R_RISCV_CALL || t == R_RISCV_CALL_PLT))
                return 1;
        }
    }
    return 0;
}

/* Also refused in the linear decode: control flow through a register other
 * than a return. A kernel has no business jumping to an address it computed:
 * that is how one reaches the C library's `ecall; ret` found by scanning its
 * own program's text (the session-7 red team: a gadget called with the
 * system call number as the eighth argument, a7), which no check of the
 * kernel's own bytes sees. Allowed: `ret` (jalr x0, 0(ra), c.jr ra) and the
 * auipc + jalr pairs of calls and tail calls, whose target a call relocation
 * names (so only an allowed symbol or the kernel's own function). Refused:
 * c.jalr, c.jr through another register, any other jalr (calls through a
 * function pointer, switch jump tables: build with -fno-jump-tables). */
static int text_check(const struct elf *e, unsigned sec_i, const unsigned char *code, size_t n,
                      const char *sec, char *detail, size_t dl)
{
    const char *what = NULL;
    uint32_t w = 0;
    size_t at = 0, prev = (size_t)-1;
    uint32_t prev_w = 0;
    for (size_t i = 0; i + 2 <= n && !what;) {
        uint16_t lo = (uint16_t)(code[i] | code[i + 1] << 8);
        if ((lo & 3) != 3) {
            unsigned r1 = (lo >> 7) & 31;
            if (lo == RV_C_EBREAK) {
                w = lo, at = i, what = "c.ebreak";
            } else if ((lo & 0xf07f) == 0x9002 && r1 != 0) {
                w = lo, at = i, what = "an indirect call (c.jalr through a register: a function pointer)";
            } else if ((lo & 0xf07f) == 0x8002 && r1 != 0 && r1 != 1) {
                w = lo, at = i, what = "an indirect jump (c.jr through a register other than ra: a switch's jump table?)";
            }
            prev = (size_t)-1;
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
        } else if ((w & 0x707f) == 0x67) { /* jalr */
            unsigned rd = (w >> 7) & 31, rs1 = (w >> 15) & 31;
            int ret = rd == 0 && rs1 == 1 && (w >> 20) == 0;
            int call = prev != (size_t)-1 && prev + 4 == i && (prev_w & 0x7f) == 0x17 &&
                       ((prev_w >> 7) & 31) == rs1 && call_reloc_at(e, sec_i, prev);
            if (!ret && !call)
                at = i, what = "an indirect jump or call (jalr through a register, no call relocation: a "
                               "function pointer or a switch's jump table)";
        }
        prev = i;
        prev_w = w;
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
    char nb[64];
    snprintf(detail, dl, "machine code in %s holds %s (0x%08x at +%zu): ecall/ebreak/CSR access "
             "other than the FP and vector CSRs, and jumps or calls through a register other than "
             "ret and relocated calls, are not allowed in a kernel", pr(sec, nb, sizeof nb),
             what, w, at);
    return 1;
}

/* ---------------------------------------------------- the object check --- */

enum sec_class { SC_NONE, SC_CODE, SC_RODATA, SC_EH, SC_DEBUG, SC_ASIDE, SC_EMPTY, SC_RELA };

static int name_is(const char *n, const char *exact)
{
    return strcmp(n, exact) == 0;
}

/* n is base, or base followed by '.' and more */
static int name_family(const char *n, const char *base)
{
    size_t l = strlen(base);
    return strncmp(n, base, l) == 0 && (n[l] == '\0' || n[l] == '.');
}

/* Classify section i, or refuse it (rule, detail). */
static int sec_classify(const struct elf *e, unsigned i, enum sec_class *cls,
                        enum plat_screen_rule *rule, char *detail, size_t dl)
{
    const Elf64_Shdr *s = &e->sh[i];
    const char *name = elf_secname(e, i);
    uint64_t fl = s->sh_flags;
    char nb[64];
    *cls = SC_NONE;
    if (name_is(name, ".init") || name_is(name, ".fini") || name_family(name, ".init_array") ||
        name_family(name, ".fini_array") || name_family(name, ".preinit_array") ||
        name_family(name, ".ctors") || name_family(name, ".dtors") || s->sh_type == SHT_INIT_ARRAY ||
        s->sh_type == SHT_FINI_ARRAY || s->sh_type == SHT_PREINIT_ARRAY) {
        *rule = PLAT_SCREEN_CTOR;
        snprintf(detail, dl, "object has an init/fini section %s: code the C library would run "
                 "outside the kernel call", pr(name, nb, sizeof nb));
        return 1;
    }
    if ((fl & SHF_TLS) || name_family(name, ".tdata") || name_family(name, ".tbss")) {
        *rule = PLAT_SCREEN_STATE;
        snprintf(detail, dl, "object has thread-local storage %s", pr(name, nb, sizeof nb));
        return 1;
    }
    if ((fl & SHF_WRITE) && s->sh_size > 0) {
        *rule = PLAT_SCREEN_STATE;
        snprintf(detail, dl, "object has writable storage %s (%llu bytes): state can survive "
                 "across calls", pr(name, nb, sizeof nb), (unsigned long long)s->sh_size);
        return 1;
    }
    const char *why = NULL;
    switch (s->sh_type) {
    case SHT_PROGBITS:
        if (fl == (SHF_ALLOC | SHF_EXECINSTR) && name_family(name, ".text"))
            *cls = SC_CODE;
        else if ((fl & SHF_ALLOC) && !(fl & ~(uint64_t)(SHF_ALLOC | SHF_MERGE | SHF_STRINGS)) &&
                 (name_family(name, ".rodata") || name_family(name, ".srodata")))
            *cls = SC_RODATA;
        else if (fl == SHF_ALLOC && name_is(name, ".eh_frame"))
            *cls = SC_EH;
        else if (!(fl & ~(uint64_t)(SHF_MERGE | SHF_STRINGS)) && strncmp(name, ".debug_", 7) == 0)
            *cls = SC_DEBUG;
        else if ((fl == 0 || fl == (SHF_MERGE | SHF_STRINGS)) && name_is(name, ".comment"))
            *cls = SC_ASIDE;
        else if (fl == 0 && name_is(name, ".note.GNU-stack"))
            *cls = SC_ASIDE;
        else if (fl == (SHF_ALLOC | SHF_WRITE) && s->sh_size == 0 && name_is(name, ".data"))
            *cls = SC_EMPTY;
        else if (name_is(name, ".note.GNU-stack"))
            why = "flags on .note.GNU-stack (an executable stack)";
        else if (fl & SHF_EXECINSTR)
            why = "code outside .text/.text.*, or with other flags";
        else
            why = "a section not on the allow-list";
        break;
    case SHT_NOBITS:
        if (fl == (SHF_ALLOC | SHF_WRITE) && s->sh_size == 0 && name_is(name, ".bss"))
            *cls = SC_EMPTY;
        else
            why = "a section not on the allow-list";
        break;
    case SHT_SYMTAB:
    case SHT_STRTAB:
        if (fl == 0 || (s->sh_type == SHT_STRTAB && fl == SHF_STRINGS))
            *cls = SC_ASIDE;
        else
            why = "symbol or string table with flags";
        break;
    case SHT_RELA:
        if (!(fl & ~(uint64_t)SHF_INFO_LINK))
            *cls = SC_RELA;
        else
            why = "relocations with flags";
        break;
    case SHT_RISCV_ATTRIBUTES:
        if (fl == 0 && name_is(name, ".riscv.attributes"))
            *cls = SC_ASIDE;
        else
            why = "attributes section not named .riscv.attributes";
        break;
    case SHT_LLVM_ADDRSIG_:
        if ((fl == 0 || fl == SHF_EXCLUDE) && name_is(name, ".llvm_addrsig"))
            *cls = SC_ASIDE;
        else
            why = "address-significance table not named .llvm_addrsig";
        break;
    case SHT_LLVM_DEPENDENT_LIBRARIES_:
        why = "dependent libraries (.deplibs: the linker would open them)";
        break;
    case SHT_LLVM_LINKER_OPTIONS_:
        why = "linker options";
        break;
    case SHT_GROUP:
        why = "a section group (COMDAT)";
        break;
    case SHT_NOTE:
        why = "a note section";
        break;
    case SHT_REL:
        why = "REL relocations (RISC-V uses RELA)";
        break;
    default:
        why = "a section type not on the allow-list";
        break;
    }
    if (why) {
        *rule = PLAT_SCREEN_SECTION;
        snprintf(detail, dl, "object has section %s (type 0x%x, flags 0x%llx): %s",
                 pr(name, nb, sizeof nb), (unsigned)s->sh_type, (unsigned long long)fl, why);
        return 1;
    }
    return 0;
}

/* The relocations of RELA section i (its target already classified). */
static int rela_check(const struct elf *e, unsigned i, const enum sec_class *cls,
                      enum plat_screen_rule *rule, char *detail, size_t dl)
{
    const Elf64_Shdr *s = &e->sh[i];
    char nb[64], tb[64];
    unsigned tgt = s->sh_info;
    if (tgt == 0 || tgt >= e->n || !(cls[tgt] == SC_CODE || cls[tgt] == SC_RODATA ||
                                     cls[tgt] == SC_EH || cls[tgt] == SC_DEBUG)) {
        *rule = PLAT_SCREEN_SECTION;
        snprintf(detail, dl, "object has relocations %s for section %u, which takes none",
                 pr(elf_secname(e, i), nb, sizeof nb), tgt);
        return 1;
    }
    if (s->sh_entsize != sizeof(Elf64_Rela) || s->sh_link != e->symtab || e->symtab == 0 ||
        s->sh_size % sizeof(Elf64_Rela)) {
        *rule = PLAT_SCREEN_SECTION;
        snprintf(detail, dl, "object has malformed relocations %s", pr(elf_secname(e, i), nb, sizeof nb));
        return 1;
    }
    size_t n = s->sh_size / sizeof(Elf64_Rela);
    for (size_t k = 0; k < n; k++) {
        Elf64_Rela r;
        memcpy(&r, e->b + s->sh_offset + k * sizeof r, sizeof r);
        unsigned type = (unsigned)ELF64_R_TYPE(r.r_info);
        size_t sym = (size_t)ELF64_R_SYM(r.r_info);
        if (sym >= e->nsym) {
            *rule = PLAT_SCREEN_RELOCATION;
            snprintf(detail, dl, "object has a relocation in %s to symbol %zu, past the symbol table",
                     pr(elf_secname(e, tgt), tb, sizeof tb), sym);
            return 1;
        }
        if (!reloc_allowed(type)) {
            const char *rn = reloc_refused_name(type);
            Elf64_Sym sy;
            const char *sn;
            elf_sym(e, sym, &sy, &sn);
            *rule = PLAT_SCREEN_RELOCATION;
            pr(elf_secname(e, tgt), tb, sizeof tb);
            pr(sn, nb, sizeof nb);
            if (rn)
                snprintf(detail, dl, "object has relocation %s in %s (symbol '%s'): not on the "
                         "allow-list (no GOT, TLS, IRELATIVE, COPY or dynamic relocations)", rn, tb, nb);
            else
                snprintf(detail, dl, "object has relocation type %u in %s (symbol '%s'): not on "
                         "the allow-list", type, tb, nb);
            return 1;
        }
    }
    return 0;
}

static int symbols_check(const struct elf *e, const enum sec_class *cls, enum plat_screen_rule *rule,
                         char *detail, size_t dl)
{
    char nb[64];
    int globals = 0;
    if (!e->symtab) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, dl, "object has no symbol table (so no kope_kernel)");
        return 1;
    }
    for (size_t k = 1; k < e->nsym; k++) {
        Elf64_Sym s;
        const char *name;
        elf_sym(e, k, &s, &name);
        int bind = ELF64_ST_BIND(s.st_info), type = ELF64_ST_TYPE(s.st_info);
        int vis = ELF64_ST_VISIBILITY(s.st_other);
        const char *n = pr(name, nb, sizeof nb);
        if (type == STT_GNU_IFUNC) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object has an indirect function (ifunc) '%s': its resolver would run "
                     "before main", n);
            return 1;
        }
        if (type == STT_TLS) {
            *rule = PLAT_SCREEN_STATE;
            snprintf(detail, dl, "object has a thread-local symbol '%s'", n);
            return 1;
        }
        if (type == STT_COMMON || s.st_shndx == SHN_COMMON) {
            *rule = PLAT_SCREEN_STATE;
            snprintf(detail, dl, "object has common storage '%s'", n);
            return 1;
        }
        if (type != STT_NOTYPE && type != STT_OBJECT && type != STT_FUNC && type != STT_SECTION &&
            type != STT_FILE) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object has symbol '%s' of type %d, not on the allow-list "
                     "(NOTYPE OBJECT FUNC SECTION FILE)", n, type);
            return 1;
        }
        if (bind != STB_LOCAL && bind != STB_GLOBAL) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object has %s symbol '%s': only local and global bindings are "
                     "allowed (a weak definition could stand in for a library symbol)",
                     bind == STB_WEAK ? "weak" : "a non-local, non-global", n);
            return 1;
        }
        if (vis != STV_DEFAULT && vis != STV_HIDDEN) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object has symbol '%s' with visibility %d (default or hidden only)",
                     n, vis);
            return 1;
        }
        if (s.st_shndx == SHN_UNDEF) {
            if (bind != STB_GLOBAL || !name[0] || !symbol_allowed(name) ||
                !(type == STT_NOTYPE || type == STT_FUNC || type == STT_OBJECT)) {
                *rule = PLAT_SCREEN_SYMBOL;
                snprintf(detail, dl, "object calls '%s', outside the allow-list "
                         "(libm, memcpy/memset/memmove/memcmp/bcmp)", n);
                return 1;
            }
            continue;
        }
        if (s.st_shndx >= SHN_LORESERVE && s.st_shndx != SHN_ABS) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object has symbol '%s' in special section 0x%x", n, (unsigned)s.st_shndx);
            return 1;
        }
        if (s.st_shndx != SHN_ABS && s.st_shndx >= e->n) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object has symbol '%s' in section %u, past the section table", n,
                     (unsigned)s.st_shndx);
            return 1;
        }
        if (bind == STB_LOCAL)
            continue;
        /* a global definition: only kope_kernel, a function in code */
        if (strcmp(name, "kope_kernel") != 0) {
            *rule = PLAT_SCREEN_SYMBOL;
            snprintf(detail, dl, "object defines global symbol '%s': only kope_kernel may be global "
                     "(make helpers static)", n);
            return 1;
        }
        if (type != STT_FUNC || s.st_shndx == SHN_ABS || cls[s.st_shndx] != SC_CODE) {
            *rule = PLAT_SCREEN_NO_KERNEL;
            snprintf(detail, dl, "kope_kernel must be a function in .text (type %d, section %u)", type,
                     (unsigned)s.st_shndx);
            return 1;
        }
        globals++;
    }
    if (globals != 1) {
        *rule = PLAT_SCREEN_NO_KERNEL;
        snprintf(detail, dl, globals ? "object defines kope_kernel %d times" :
                 "object does not define kope_kernel", globals);
        return 1;
    }
    return 0;
}

int k3_screen_object_mem(const unsigned char *buf, size_t len, enum plat_screen_rule *rule,
                         char *detail, size_t dl)
{
    struct elf e;
    enum sec_class *cls = NULL;
    int rc = 1;
    *rule = PLAT_SCREEN_NONE;
    if (dl)
        detail[0] = '\0';
    if (len > K3_OBJ_MAX_BYTES) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, dl, "object file over %u bytes", K3_OBJ_MAX_BYTES);
        return 1;
    }
    char why[128];
    if (elf_open(&e, buf, len, why, sizeof why)) {
        *rule = PLAT_SCREEN_SECTION;
        snprintf(detail, dl, "object is malformed: %s", why);
        goto out;
    }
    if (e.eh.e_type != ET_REL || e.eh.e_phnum != 0) {
        *rule = PLAT_SCREEN_SECTION;
        snprintf(detail, dl, "object is not a relocatable object file (type %u)", (unsigned)e.eh.e_type);
        goto out;
    }
    cls = calloc(e.n, sizeof *cls);
    if (!cls) {
        *rule = PLAT_SCREEN_TOO_BIG;
        snprintf(detail, dl, "out of memory");
        goto out;
    }
    for (unsigned i = 1; i < e.n; i++)
        if (sec_classify(&e, i, &cls[i], rule, detail, dl))
            goto out;
    if (symbols_check(&e, cls, rule, detail, dl))
        goto out;
    for (unsigned i = 1; i < e.n; i++)
        if (cls[i] == SC_RELA && rela_check(&e, i, cls, rule, detail, dl))
            goto out;
    for (unsigned i = 1; i < e.n; i++)
        if (cls[i] == SC_CODE &&
            text_check(&e, i, e.b + e.sh[i].sh_offset, (size_t)e.sh[i].sh_size, elf_secname(&e, i), detail,
                       dl)) {
            *rule = PLAT_SCREEN_SYSTEM_INSN;
            goto out;
        }
    rc = 0;
out:
    free(cls);
    elf_close(&e);
    return rc;
}

int k3_screen_object(const char *path, enum plat_screen_rule *rule, char *detail, size_t dl)
{
    const unsigned char *b;
    size_t len;
    *rule = PLAT_SCREEN_NONE;
    int rc = file_map(path, K3_OBJ_MAX_BYTES, &b, &len, detail, dl);
    if (rc == 1)
        *rule = PLAT_SCREEN_TOO_BIG;
    if (rc)
        return rc;
    rc = k3_screen_object_mem(b, len, rule, detail, dl);
    file_unmap(b, len);
    return rc;
}

/* ------------------------------------------------- the stack traffic --- */

#define RV_SP 2u

/* One instruction word's stack traffic (k3_object_spills). */
static void spill_count(uint32_t w, struct k3_spills *o)
{
    uint32_t op = w & 0x7f, f3 = (w >> 12) & 7, rs1 = (w >> 15) & 31;
    uint32_t mop = (w >> 26) & 3, umop = (w >> 20) & 31;
    int vwidth = f3 == 0 || f3 >= 5; /* vector EEW 8/16/32/64 */
    if ((op == 0x27 || op == 0x07) && vwidth) {
        if (mop == 0 && umop == 8) { /* whole-register vs<n>r / vl<n>re */
            if (op == 0x27)
                o->vreg_stores++;
            else
                o->vreg_loads++;
        }
        return;
    }
    if (rs1 != RV_SP)
        return;
    if (op == 0x23 || (op == 0x27 && (f3 == 2 || f3 == 3)))
        o->stack_stores++;
    else if (op == 0x03 || (op == 0x07 && (f3 == 2 || f3 == 3)))
        o->stack_loads++;
}

/* A compressed instruction's: quadrant 2's sp-relative forms. */
static void spill_count_c(uint16_t h, struct k3_spills *o)
{
    if ((h & 3) != 2)
        return;
    switch (h >> 13) {
    case 1: /* c.fldsp */
    case 2: /* c.lwsp */
    case 3: /* c.ldsp */
        o->stack_loads++;
        break;
    case 5: /* c.fsdsp */
    case 6: /* c.swsp */
    case 7: /* c.sdsp */
        o->stack_stores++;
        break;
    default:
        break;
    }
}

int k3_object_spills_mem(const unsigned char *buf, size_t len, struct k3_spills *out)
{
    struct elf e;
    char why[128];
    memset(out, 0, sizeof *out);
    if (elf_open(&e, buf, len, why, sizeof why)) {
        elf_close(&e);
        return -1;
    }
    for (unsigned i = 1; i < e.n; i++) {
        const Elf64_Shdr *sh = &e.sh[i];
        if (sh->sh_type != SHT_PROGBITS || !(sh->sh_flags & SHF_EXECINSTR))
            continue;
        const unsigned char *c = e.b + sh->sh_offset;
        size_t n = (size_t)sh->sh_size;
        for (size_t k = 0; k + 2 <= n;) {
            uint16_t lo = (uint16_t)(c[k] | c[k + 1] << 8);
            if ((lo & 3) != 3) {
                spill_count_c(lo, out);
                k += 2;
                continue;
            }
            if (k + 4 > n)
                break;
            spill_count(lo | (uint32_t)(c[k + 2] | c[k + 3] << 8) << 16, out);
            k += 4;
        }
    }
    elf_close(&e);
    return 0;
}

int k3_object_spills(const char *path, struct k3_spills *out)
{
    const unsigned char *b;
    size_t len;
    char why[128];
    memset(out, 0, sizeof *out);
    if (file_map(path, K3_OBJ_MAX_BYTES, &b, &len, why, sizeof why))
        return -1;
    int rc = k3_object_spills_mem(b, len, out);
    file_unmap(b, len);
    return rc;
}

/* ------------------------------------------- the linked kernel program --- */

/* A growing '\n'-ended list of names (capped: a program names a handful). */
#define NAMES_CAP (64u << 10)
static int list_add(char **list, const char *name)
{
    size_t have = *list ? strlen(*list) : 0, n = strlen(name);
    if (have + n + 2 > NAMES_CAP)
        return -1;
    char *l = realloc(*list, have + n + 2);
    if (!l)
        return -1;
    memcpy(l + have, name, n);
    l[have + n] = '\n';
    l[have + n + 1] = '\0';
    *list = l;
    return 0;
}

static int list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, '\n');
        if (!e)
            break;
        if ((size_t)(e - p) == n && memcmp(p, name, n) == 0)
            return 1;
        p = e + 1;
    }
    return 0;
}

/* The function symbol that starts at addr, or NULL. */
static const char *func_at(const struct elf *e, uint64_t addr)
{
    for (size_t k = 1; k < e->nsym; k++) {
        Elf64_Sym s;
        const char *name;
        elf_sym(e, k, &s, &name);
        if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && s.st_shndx != SHN_UNDEF && s.st_value == addr &&
            name[0])
            return name;
    }
    return NULL;
}

/* The RELATIVE relocation's addend for the word at addr (static PIE), or 0. */
static uint64_t relative_at(const struct elf *e, uint64_t addr)
{
    for (unsigned i = 1; i < e->n; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        if (s->sh_type != SHT_RELA || s->sh_entsize != sizeof(Elf64_Rela))
            continue;
        for (size_t k = 0; k < s->sh_size / sizeof(Elf64_Rela); k++) {
            Elf64_Rela r;
            memcpy(&r, e->b + s->sh_offset + k * sizeof r, sizeof r);
            if (r.r_offset == addr && ELF64_R_TYPE(r.r_info) == R_RISCV_RELATIVE_)
                return (uint64_t)r.r_addend;
        }
    }
    return 0;
}

/* The facts of a linked program, as struct k3_prog_ref holds them. */
static int prog_read(const struct elf *e, struct k3_prog_ref *r, int *n_kernel,
                     enum plat_screen_rule *rule, char *why, size_t wl)
{
    *rule = PLAT_SCREEN_SECTION;
    if (!e->symtab) {
        snprintf(why, wl, "the program has no symbol table (linked with -s?)");
        return 1;
    }
    *n_kernel = 0;
    for (size_t k = 1; k < e->nsym; k++) {
        Elf64_Sym s;
        const char *name;
        elf_sym(e, k, &s, &name);
        if (ELF64_ST_TYPE(s.st_info) == STT_FUNC && strcmp(name, "kope_kernel") == 0)
            ++*n_kernel;
    }
    for (unsigned i = 1; i < e->n; i++) {
        const Elf64_Shdr *s = &e->sh[i];
        const char *name = elf_secname(e, i);
        int a = s->sh_type == SHT_PREINIT_ARRAY || name_family(name, ".preinit_array") ? 0
                : s->sh_type == SHT_INIT_ARRAY || name_family(name, ".init_array")  ? 1
                : s->sh_type == SHT_FINI_ARRAY || name_family(name, ".fini_array")  ? 2
                : name_family(name, ".ctors")                                        ? 3
                : name_family(name, ".dtors")                                        ? 4
                                                                                     : -1;
        if (a >= 0 && s->sh_type != SHT_NOBITS) {
            for (uint64_t off = 0; off + 8 <= s->sh_size; off += 8) {
                uint64_t v;
                memcpy(&v, e->b + s->sh_offset + off, 8);
                if (v == 0)
                    v = relative_at(e, s->sh_addr + off);
                const char *fn = func_at(e, v);
                if (!fn) /* .ctors' -1/0 sentinels, or code with no symbol */
                    fn = v == 0 ? "#0" : v == UINT64_MAX ? "#-1" : "?";
                if (list_add(&r->arrays[a], fn)) {
                    *rule = PLAT_SCREEN_CTOR;
                    snprintf(why, wl, "too many init/fini entries");
                    return 1;
                }
            }
            if (!r->arrays[a] && !(r->arrays[a] = calloc(1, 1))) { /* present, empty */
                snprintf(why, wl, "out of memory");
                return 1;
            }
        }
        if ((name_is(name, ".init") || name_is(name, ".fini")) && s->sh_type == SHT_PROGBITS) {
            unsigned char **dst = name[1] == 'i' ? &r->init : &r->fini;
            size_t *dl = name[1] == 'i' ? &r->init_len : &r->fini_len;
            free(*dst);
            *dst = malloc(s->sh_size ? s->sh_size : 1);
            if (!*dst) {
                snprintf(why, wl, "out of memory");
                return 1;
            }
            memcpy(*dst, e->b + s->sh_offset, s->sh_size);
            *dl = s->sh_size;
            *(name[1] == 'i' ? &r->has_init : &r->has_fini) = 1;
        }
        if (s->sh_type == SHT_RELA && s->sh_entsize == sizeof(Elf64_Rela)) {
            for (size_t k = 0; k < s->sh_size / sizeof(Elf64_Rela); k++) {
                Elf64_Rela rl;
                memcpy(&rl, e->b + s->sh_offset + k * sizeof rl, sizeof rl);
                if (ELF64_R_TYPE(rl.r_info) != R_RISCV_IRELATIVE_)
                    continue;
                const char *fn = func_at(e, (uint64_t)rl.r_addend);
                if (list_add(&r->irelative, fn ? fn : "?")) {
                    *rule = PLAT_SCREEN_RELOCATION;
                    snprintf(why, wl, "too many IRELATIVE relocations");
                    return 1;
                }
            }
        }
    }
    if (e->eh.e_phoff && e->eh.e_phentsize == sizeof(Elf64_Phdr) &&
        in_file(e->eh.e_phoff, (uint64_t)e->eh.e_phnum * sizeof(Elf64_Phdr), e->len)) {
        for (unsigned i = 0; i < e->eh.e_phnum; i++) {
            Elf64_Phdr ph;
            memcpy(&ph, e->b + e->eh.e_phoff + i * sizeof ph, sizeof ph);
            if (ph.p_type == PT_TLS)
                r->tls_memsz = ph.p_memsz;
            else if (ph.p_type == PT_INTERP)
                r->has_interp = 1;
            else if (ph.p_type == PT_DYNAMIC)
                r->has_dynamic = 1;
            else if (ph.p_type == PT_GNU_STACK && (ph.p_flags & PF_X)) {
                snprintf(why, wl, "the program has an executable stack");
                return 1;
            }
        }
    }
    const char *en = func_at(e, e->eh.e_entry);
    snprintf(r->entry, sizeof r->entry, "%s", en ? en : "?");
    return 0;
}

void k3_prog_ref_init(struct k3_prog_ref *ref)
{
    memset(ref, 0, sizeof *ref);
}

void k3_prog_ref_free(struct k3_prog_ref *ref)
{
    if (!ref)
        return;
    for (int i = 0; i < 5; i++)
        free(ref->arrays[i]);
    free(ref->init);
    free(ref->fini);
    free(ref->irelative);
    k3_prog_ref_init(ref);
}

/* Map and open a linked program. */
static int prog_open(const char *path, const unsigned char **b, size_t *len, struct elf *e, char *why,
                     size_t wl)
{
    int rc = file_map(path, K3_PROG_MAX_BYTES, b, len, why, wl);
    if (rc)
        return rc < 0 ? rc : PLAT_ERR_IO;
    char w[128];
    if (elf_open(e, *b, *len, w, sizeof w))
        snprintf(why, wl, "%s: %s", path, w);
    else if (e->eh.e_type != ET_EXEC && e->eh.e_type != ET_DYN)
        snprintf(why, wl, "%s is not an executable (ELF type %u)", path, (unsigned)e->eh.e_type);
    else
        return 0;
    elf_close(e);
    file_unmap(*b, *len);
    *b = NULL;
    *len = 0;
    return PLAT_ERR_IO;
}

int k3_prog_ref_take(const char *path, struct k3_prog_ref *ref, char *err, size_t el)
{
    const unsigned char *b;
    size_t len;
    struct elf e;
    k3_prog_ref_free(ref);
    err[0] = '\0';
    int rc = prog_open(path, &b, &len, &e, err, el);
    if (rc)
        return rc;
    int nk = 0;
    enum plat_screen_rule rule;
    rc = prog_read(&e, ref, &nk, &rule, err, el) ? PLAT_ERR_HARNESS : 0;
    if (!rc && nk != 1) {
        snprintf(err, el, "the null kernel program holds %d functions named kope_kernel", nk);
        rc = PLAT_ERR_HARNESS;
    }
    elf_close(&e);
    file_unmap(b, len);
    if (rc)
        k3_prog_ref_free(ref);
    else
        ref->taken = 1;
    return rc;
}

/* The first entry where two '\n'-ended lists differ ("missing X" when the
 * first list ended), printable, for a message. */
static const char *first_diff(const char *a, const char *b, char *buf, size_t cap)
{
    a = a ? a : "";
    b = b ? b : "";
    while (*a && *b) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la) != 0)
            break;
        a += la + (a[la] == '\n');
        b += lb + (b[lb] == '\n');
    }
    const char *s = *a ? a : b;
    char tmp[96];
    if (!*s)
        snprintf(tmp, sizeof tmp, "(none)");
    else
        snprintf(tmp, sizeof tmp, "%s%.*s", *a ? "" : "missing ", (int)strcspn(s, "\n"), s);
    return pr(tmp, buf, cap);
}

int k3_screen_program(const char *path, const char *cand_obj, const struct k3_prog_ref *ref,
                      enum plat_screen_rule *rule, char *detail, size_t dl)
{
    static const char *const what[5] = {".preinit_array", ".init_array", ".fini_array", ".ctors",
                                        ".dtors"};
    const unsigned char *b = NULL, *cb = NULL;
    size_t len = 0, clen = 0;
    struct elf e, ce;
    struct k3_prog_ref got;
    char *cand_names = NULL, nb[96];
    int rc, nk = 0;
    *rule = PLAT_SCREEN_NONE;
    detail[0] = '\0';
    memset(&ce, 0, sizeof ce);
    k3_prog_ref_init(&got);
    if (!ref || !ref->taken) {
        snprintf(detail, dl, "no null kernel program to compare with (k3_prog_ref_take)");
        return PLAT_ERR_INTERNAL;
    }
    rc = prog_open(path, &b, &len, &e, detail, dl);
    if (rc)
        return rc;
    if (cand_obj) { /* every symbol the candidate's object defines */
        char why[128];
        rc = file_map(cand_obj, K3_OBJ_MAX_BYTES, &cb, &clen, detail, dl);
        if (rc) {
            rc = rc < 0 ? rc : PLAT_ERR_IO;
            goto out;
        }
        if (elf_open(&ce, cb, clen, why, sizeof why)) {
            snprintf(detail, dl, "%s: %s", cand_obj, why);
            rc = PLAT_ERR_IO;
            goto out;
        }
        for (size_t k = 1; ce.symtab && k < ce.nsym; k++) {
            Elf64_Sym s;
            const char *name;
            elf_sym(&ce, k, &s, &name);
            if (s.st_shndx != SHN_UNDEF && name[0] && list_add(&cand_names, name)) {
                snprintf(detail, dl, "%s: too many symbols", cand_obj);
                rc = PLAT_ERR_IO;
                goto out;
            }
        }
    }
    rc = 1;
    if (prog_read(&e, &got, &nk, rule, detail, dl))
        goto out;
    if (nk != 1) {
        *rule = PLAT_SCREEN_SYMBOL;
        snprintf(detail, dl, "the kernel program holds %d functions named kope_kernel (exactly one "
                 "allowed)", nk);
        goto out;
    }
    for (int a = 0; a < 5; a++) {
        const char *g = got.arrays[a], *w = ref->arrays[a];
        if ((g ? strcmp(g, w ? w : "") : (w != NULL)) != 0) {
            *rule = PLAT_SCREEN_CTOR;
            snprintf(detail, dl, "the kernel program's %s differs from the null kernel's (first "
                     "difference: '%s'): code would run outside the kernel call", what[a],
                     first_diff(g, w, nb, sizeof nb));
            goto out;
        }
        for (const char *p = g; cand_names && p && *p;) {
            const char *nl = strchr(p, '\n');
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(nl - p), p);
            if (list_has(cand_names, name)) {
                *rule = PLAT_SCREEN_CTOR;
                snprintf(detail, dl, "the kernel program's %s names '%s', a symbol of the candidate's "
                         "object", what[a], pr(name, nb, sizeof nb));
                goto out;
            }
            p = nl + 1;
        }
    }
    if (got.has_init != ref->has_init || got.init_len != ref->init_len ||
        (got.init_len && memcmp(got.init, ref->init, got.init_len)) || got.has_fini != ref->has_fini ||
        got.fini_len != ref->fini_len || (got.fini_len && memcmp(got.fini, ref->fini, got.fini_len))) {
        *rule = PLAT_SCREEN_CTOR;
        snprintf(detail, dl, "the kernel program's .init or .fini code differs from the null kernel's");
        goto out;
    }
    if (strcmp(got.irelative ? got.irelative : "", ref->irelative ? ref->irelative : "") != 0) {
        *rule = PLAT_SCREEN_RELOCATION;
        snprintf(detail, dl, "the kernel program's IRELATIVE relocations differ from the null kernel's "
                 "(first difference: '%s'): an ifunc resolver would run before main",
                 first_diff(got.irelative, ref->irelative, nb, sizeof nb));
        goto out;
    }
    if (strcmp(got.entry, ref->entry) != 0 || got.tls_memsz != ref->tls_memsz ||
        got.has_interp != ref->has_interp || got.has_dynamic != ref->has_dynamic) {
        *rule = PLAT_SCREEN_SECTION;
        snprintf(detail, dl, "the kernel program's entry (%s), TLS size (%llu), interpreter or dynamic "
                 "section differ from the null kernel's", pr(got.entry, nb, sizeof nb),
                 (unsigned long long)got.tls_memsz);
        goto out;
    }
    rc = 0;
out:
    k3_prog_ref_free(&got);
    free(cand_names);
    elf_close(&ce);
    file_unmap(cb, clen);
    elf_close(&e);
    file_unmap(b, len);
    return rc;
}

int k3_program_defines(const char *path, const char *name, char *err, size_t el)
{
    const unsigned char *b;
    size_t len;
    struct elf e;
    err[0] = '\0';
    int rc = prog_open(path, &b, &len, &e, err, el);
    if (rc)
        return rc;
    int found = 0;
    if (!e.symtab) {
        snprintf(err, el, "%s has no symbol table", path);
        found = PLAT_ERR_HARNESS;
    }
    for (size_t k = 1; found == 0 && k < e.nsym; k++) {
        Elf64_Sym s;
        const char *n;
        elf_sym(&e, k, &s, &n);
        /* a name at all, defined or not: the judge must not even ask for it */
        if (strcmp(n, name) == 0)
            found = 1;
    }
    elf_close(&e);
    file_unmap(b, len);
    return found;
}
