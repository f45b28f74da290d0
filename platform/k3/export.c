/*
 * platform/k3/export.c - the judged object as a library member: the check
 * that a candidate object renamed for `kope kernels export` (objcopy
 * --redefine-sym kope_kernel=SYMBOL, run by k3.c's object_export) is still,
 * byte for byte, the object kope judged.
 *
 * What may differ between the judged object and the shipped one: the names
 * in the symbol table, and only one of them (kope_kernel, now the export's
 * symbol), so the string tables' bytes and the file's layout (offsets).
 * Everything that reaches the linker as code or data does not: the ELF
 * header's type, machine and flags, every section's name, type, flags,
 * address, size, link, info, alignment and entry size, the bytes of every
 * section other than the symbol and string tables (code, read-only data,
 * relocations, attributes, unwind tables), and every symbol's value, size,
 * binding, type, visibility and section. The shipped object also has no
 * code that runs before or after main: no init, fini or preinit array and no
 * .init, .fini, .ctors or .dtors section (the object check refuses those in
 * the judged object as well; this holds the library to it on its own).
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/k3/k3.h"

#ifndef K3_EXPORT_OBJ_MAX
#define K3_EXPORT_OBJ_MAX (16u << 20) /* bytes of one object read for the comparison */
#endif

/* One object read whole, with its section table checked to lie inside it. */
struct eobj {
    unsigned char *buf;
    size_t len;
    Elf64_Ehdr eh;
    const Elf64_Shdr *sh; /* into buf, e_shnum entries (alignment checked) */
};

static int eobj_read(const char *path, struct eobj *o, char *why, size_t cap)
{
    memset(o, 0, sizeof *o);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, cap, "cannot open the object %s", path);
        return PLAT_ERR_IO;
    }
    o->buf = malloc(K3_EXPORT_OBJ_MAX);
    if (!o->buf) {
        fclose(f);
        return PLAT_ERR_NOMEM;
    }
    o->len = fread(o->buf, 1, K3_EXPORT_OBJ_MAX, f);
    fclose(f);
    if (o->len == K3_EXPORT_OBJ_MAX) {
        snprintf(why, cap, "object over %u bytes", K3_EXPORT_OBJ_MAX);
        return 1;
    }
    if (o->len < sizeof o->eh || memcmp(o->buf, ELFMAG, SELFMAG) != 0 || o->buf[EI_CLASS] != ELFCLASS64 ||
        o->buf[EI_DATA] != ELFDATA2LSB) {
        snprintf(why, cap, "not an ELF64 little-endian object");
        return 1;
    }
    memcpy(&o->eh, o->buf, sizeof o->eh);
    const Elf64_Ehdr *e = &o->eh;
    if (e->e_type != ET_REL || e->e_shentsize != sizeof(Elf64_Shdr) || e->e_shoff % 8 ||
        e->e_shoff > o->len || (uint64_t)e->e_shnum * sizeof(Elf64_Shdr) > o->len - e->e_shoff ||
        e->e_shstrndx >= e->e_shnum) {
        snprintf(why, cap, "not a relocatable object with a section table kope can read");
        return 1;
    }
    o->sh = (const Elf64_Shdr *)(const void *)(o->buf + e->e_shoff);
    for (unsigned i = 0; i < e->e_shnum; i++) {
        const Elf64_Shdr *s = &o->sh[i];
        if (s->sh_type != SHT_NOBITS && (s->sh_offset > o->len || s->sh_size > o->len - s->sh_offset)) {
            snprintf(why, cap, "section %u lies outside the file", i);
            return 1;
        }
    }
    return 0;
}

/* The NUL-terminated string at off of string-table section idx, or NULL. */
static const char *eobj_str(const struct eobj *o, unsigned idx, uint64_t off)
{
    if (idx == 0 || idx >= o->eh.e_shnum || o->sh[idx].sh_type != SHT_STRTAB)
        return NULL;
    const Elf64_Shdr *s = &o->sh[idx];
    if (off >= s->sh_size)
        return NULL;
    const char *p = (const char *)o->buf + s->sh_offset + off;
    return memchr(p, '\0', s->sh_size - off) ? p : NULL;
}

static const char *sec_name(const struct eobj *o, unsigned i)
{
    const char *n = eobj_str(o, o->eh.e_shstrndx, o->sh[i].sh_name);
    return n ? n : "?";
}

/* Code that a loader or the C library runs outside a call: refused by name
 * and by type, so neither spelling gets through. */
static int runs_outside_calls(const struct eobj *o, unsigned i)
{
    static const char *const pfx[] = {".init", ".fini", ".preinit", ".ctors", ".dtors"};
    uint32_t t = o->sh[i].sh_type;
    if (t == SHT_INIT_ARRAY || t == SHT_FINI_ARRAY || t == SHT_PREINIT_ARRAY)
        return 1;
    const char *n = sec_name(o, i);
    for (size_t j = 0; j < sizeof pfx / sizeof pfx[0]; j++)
        if (strncmp(n, pfx[j], strlen(pfx[j])) == 0)
            return 1;
    return 0;
}

int k3_object_compare(const char *judged, const char *shipped, const char *from, const char *to,
                      const char *copy_to, char *why, size_t cap)
{
    struct eobj a, b;
    int rc = eobj_read(judged, &a, why, cap);
    if (rc == 0)
        rc = eobj_read(shipped, &b, why, cap);
    else
        memset(&b, 0, sizeof b);
    if (rc)
        goto out;
    rc = 1;
    if (a.eh.e_machine != b.eh.e_machine || a.eh.e_flags != b.eh.e_flags || a.eh.e_shnum != b.eh.e_shnum ||
        a.eh.e_shstrndx != b.eh.e_shstrndx) {
        snprintf(why, cap, "the renamed object's header or section count differs from the judged one");
        goto out;
    }
    unsigned symtab = 0;
    for (unsigned i = 0; i < a.eh.e_shnum; i++) {
        const Elf64_Shdr *x = &a.sh[i], *y = &b.sh[i];
        if (runs_outside_calls(&b, i) || runs_outside_calls(&a, i)) {
            snprintf(why, cap, "section %s runs code outside a call (a constructor or destructor)",
                     sec_name(&b, i));
            goto out;
        }
        if (strcmp(sec_name(&a, i), sec_name(&b, i)) != 0 || x->sh_type != y->sh_type ||
            x->sh_flags != y->sh_flags || x->sh_addr != y->sh_addr || x->sh_link != y->sh_link ||
            x->sh_info != y->sh_info || x->sh_addralign != y->sh_addralign ||
            x->sh_entsize != y->sh_entsize) {
            snprintf(why, cap, "section %u (%s) differs in its header after the rename", i, sec_name(&a, i));
            goto out;
        }
        if (x->sh_type == SHT_STRTAB) /* names: checked through the symbols below */
            continue;
        if (x->sh_type == SHT_SYMTAB) {
            if (symtab) {
                snprintf(why, cap, "more than one symbol table");
                goto out;
            }
            symtab = i;
            continue;
        }
        if (x->sh_size != y->sh_size ||
            (x->sh_type != SHT_NOBITS && memcmp(a.buf + x->sh_offset, b.buf + y->sh_offset, x->sh_size) != 0)) {
            snprintf(why, cap, "section %s is not byte-identical to the judged object's", sec_name(&a, i));
            goto out;
        }
    }
    const Elf64_Shdr *sa = &a.sh[symtab], *sb = &b.sh[symtab];
    if (!symtab || sa->sh_size != sb->sh_size || sa->sh_size % sizeof(Elf64_Sym)) {
        snprintf(why, cap, "the symbol table differs in size after the rename");
        goto out;
    }
    size_t n = sa->sh_size / sizeof(Elf64_Sym), renamed = 0;
    for (size_t i = 0; i < n; i++) {
        Elf64_Sym p, q;
        memcpy(&p, a.buf + sa->sh_offset + i * sizeof p, sizeof p);
        memcpy(&q, b.buf + sb->sh_offset + i * sizeof q, sizeof q);
        const char *pn = eobj_str(&a, sa->sh_link, p.st_name), *qn = eobj_str(&b, sb->sh_link, q.st_name);
        if (p.st_info != q.st_info || p.st_other != q.st_other || p.st_shndx != q.st_shndx ||
            p.st_value != q.st_value || p.st_size != q.st_size || !pn || !qn) {
            snprintf(why, cap, "symbol %zu differs in more than its name after the rename", i);
            goto out;
        }
        if (strcmp(pn, to) == 0) {
            snprintf(why, cap, "the judged object already names %s", to);
            goto out;
        }
        if (strcmp(pn, qn) == 0)
            continue;
        if (strcmp(pn, from) != 0 || strcmp(qn, to) != 0 || ELF64_ST_BIND(p.st_info) != STB_GLOBAL ||
            p.st_shndx == SHN_UNDEF) {
            snprintf(why, cap, "symbol %zu was renamed from %.40s to %.40s, not %s to %s", i, pn, qn, from, to);
            goto out;
        }
        renamed++;
    }
    if (renamed != 1) {
        snprintf(why, cap, "%zu definitions of %s renamed, not one", renamed, from);
        goto out;
    }
    rc = 0;
    /* the bytes just compared, not the file again: nothing can change them between */
    if (copy_to && proc_file_write(copy_to, (const char *)b.buf, b.len)) {
        snprintf(why, cap, "cannot write %.300s", copy_to);
        rc = PLAT_ERR_IO;
    }
out:
    free(a.buf);
    free(b.buf);
    return rc;
}
