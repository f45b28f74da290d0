/*
 * platform/k3/objcheck.h - the ELF checks of what a candidate hands to the
 * linker and the loader: its compiled object (cand.o) and the kernel program
 * linked from it. The authority behind the source screens: whatever the
 * source said, what the object may hold is decided here, by allow-lists.
 *
 * Callers: k3.c on every candidate; the library export on every object it
 * ships; the judge on every kernel program it links (k3_screen_program,
 * against the same stub linked with a null kernel once per session).
 * Everything refused names what it refused (a section, a symbol, a
 * relocation type, an instruction). Names in messages are the candidate's
 * bytes made printable and capped.
 */
#ifndef KOPE_K3_OBJCHECK_H
#define KOPE_K3_OBJCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "platform/platform.h"

/* Undefined symbols a candidate object may reference: libm and the memory
 * functions (clang lowers memcmp(...) == 0 to bcmp), and the stack
 * protector's two symbols (a compiler built with it on by default emits
 * them). The one list: docs/K3-HARNESS.md names every entry (checked). */
#define K3_ALLOWED_SYMBOLS(X) \
    X("memcpy") X("memset") X("memmove") X("memcmp") X("bcmp") \
    X("expf") X("exp") X("exp2f") X("expm1f") X("logf") X("log") X("log2f") X("log1pf") \
    X("powf") X("pow") X("sqrtf") X("sqrt") X("tanhf") X("tanh") X("erff") X("erf") \
    X("erfcf") X("fabsf") X("fabs") X("fminf") X("fmaxf") X("fmin") X("fmax") X("floorf") \
    X("ceilf") X("roundf") X("truncf") X("rintf") X("lrintf") X("nearbyintf") X("fmaf") \
    X("fma") X("ldexpf") X("frexpf") X("sinf") X("cosf") X("coshf") X("sinhf") X("atanf") \
    X("copysignf") X("scalbnf") X("__stack_chk_fail") X("__stack_chk_guard")

/* RISC-V relocation types a candidate object may carry (number, name): what
 * clang-19 and gcc-14 emit for C kernels at -O3 (code: calls, branches,
 * jumps, PC-relative and absolute addressing, linker relaxation; data and
 * .eh_frame/debug: absolute words, PC-relative words, the ADD/SUB/SET
 * families and ULEB128 label differences). Refused, by name: every GOT and
 * TLS type, IRELATIVE, COPY, JUMP_SLOT, RELATIVE, PLT32, the TLS
 * descriptors, and any number not listed. */
#define K3_ALLOWED_RELOCS(X) \
    X(1, "R_RISCV_32") X(2, "R_RISCV_64") X(16, "R_RISCV_BRANCH") X(17, "R_RISCV_JAL") \
    X(18, "R_RISCV_CALL") X(19, "R_RISCV_CALL_PLT") X(23, "R_RISCV_PCREL_HI20") \
    X(24, "R_RISCV_PCREL_LO12_I") X(25, "R_RISCV_PCREL_LO12_S") X(26, "R_RISCV_HI20") \
    X(27, "R_RISCV_LO12_I") X(28, "R_RISCV_LO12_S") X(33, "R_RISCV_ADD8") \
    X(34, "R_RISCV_ADD16") X(35, "R_RISCV_ADD32") X(36, "R_RISCV_ADD64") \
    X(37, "R_RISCV_SUB8") X(38, "R_RISCV_SUB16") X(39, "R_RISCV_SUB32") \
    X(40, "R_RISCV_SUB64") X(43, "R_RISCV_ALIGN") X(44, "R_RISCV_RVC_BRANCH") \
    X(45, "R_RISCV_RVC_JUMP") X(51, "R_RISCV_RELAX") X(52, "R_RISCV_SUB6") \
    X(53, "R_RISCV_SET6") X(54, "R_RISCV_SET8") X(55, "R_RISCV_SET16") \
    X(56, "R_RISCV_SET32") X(57, "R_RISCV_32_PCREL") X(60, "R_RISCV_SET_ULEB128") \
    X(61, "R_RISCV_SUB_ULEB128")

/* CSRs machine code may touch (number, name): the FP status and rounding
 * registers and the vector state. clang emits `csrwi vxrm` for fixed-point
 * intrinsics with an explicit rounding mode and reads vlenb for scalable
 * stack frames; what a kernel leaves in them is judged at run time. */
#define K3_ALLOWED_CSRS(X) \
    X(0x001, "fflags") X(0x002, "frm") X(0x003, "fcsr") X(0x008, "vstart") X(0x009, "vxsat") \
    X(0x00A, "vxrm") X(0x00F, "vcsr") X(0xC20, "vl") X(0xC21, "vtype") X(0xC22, "vlenb")

#ifndef K3_OBJ_MAX_BYTES
#define K3_OBJ_MAX_BYTES (16u << 20)  /* a candidate object */
#endif
#ifndef K3_PROG_MAX_BYTES
#define K3_PROG_MAX_BYTES (512u << 20) /* a linked kernel program */
#endif

/* Check a compiled candidate object (ELF64 little-endian RISC-V
 * relocatable) against the allow-lists: sections by type, flags and name;
 * symbol types, bindings and visibility; exactly one global definition,
 * kope_kernel, a function in a code section; undefined symbols of
 * K3_ALLOWED_SYMBOLS only; relocation types of K3_ALLOWED_RELOCS only; no
 * ecall, ebreak or CSR access outside K3_ALLOWED_CSRS in the machine code
 * (docs/K3-HARNESS.md, step 3). 0 clean, 1 rejected (rule, detail), a
 * negative PLAT_ERR_* when the file cannot be read (PLAT_ERR_IO, detail says
 * why). A malformed object is rejected (1), never read past its end. */
int k3_screen_object(const char *path, enum plat_screen_rule *rule, char *detail, size_t dl);
/* The same over len bytes in memory (borrowed). */
int k3_screen_object_mem(const unsigned char *buf, size_t len, enum plat_screen_rule *rule,
                         char *detail, size_t dl);

/* The stack traffic of an object's machine code, counted in a linear
 * decode of its code sections (static: a spill inside the hot loop counts
 * once, like one in the prologue). vreg_*: whole-register vector stores and
 * loads, which is how clang and gcc spill vector registers (the RVV
 * intrinsics have no whole-register store; every vector register is
 * caller-saved, so the prologue never needs one); stack_*: scalar and FP
 * stores and loads with sp as their base, prologue saves included. 0, or
 * -1 when buf is not an ELF64 RISC-V object (counts left 0). */
struct k3_spills {
    unsigned vreg_stores, vreg_loads, stack_stores, stack_loads;
};
int k3_object_spills_mem(const unsigned char *buf, size_t len, struct k3_spills *out);
int k3_object_spills(const char *path, struct k3_spills *out);

/* What a kernel program runs besides main and the kernel call, taken from
 * the judge's stub linked with a null kernel (K3_NULL_KERNEL_SRC): the
 * functions its preinit/init/fini arrays (and .ctors/.dtors) name, the bytes
 * of .init and .fini, the resolvers of its IRELATIVE relocations, the entry
 * symbol, its TLS segment size, whether it has an interpreter or a dynamic
 * section. Owned by the caller; init cannot fail, free accepts an
 * initialised or taken one. */
struct k3_prog_ref {
    char *arrays[5];         /* '\n'-ended names: preinit, init, fini, ctors, dtors */
    unsigned char *init, *fini;
    size_t init_len, fini_len;
    int has_init, has_fini;
    char *irelative;         /* '\n'-ended resolver names */
    char entry[128];         /* the symbol at e_entry */
    uint64_t tls_memsz;
    int has_interp, has_dynamic;
    int taken;               /* 1 after a successful k3_prog_ref_take */
};

/* A null kernel: links with any stub (C does not check the signature at
 * link time), does nothing. */
#define K3_NULL_KERNEL_SRC "void kope_kernel(void);\nvoid kope_kernel(void) {}\n"

void k3_prog_ref_init(struct k3_prog_ref *ref);
void k3_prog_ref_free(struct k3_prog_ref *ref);
/* Read the null kernel program at path into ref. 0, or a negative PLAT_ERR_*
 * with err saying why (unreadable, not an ELF64 executable, no symbol
 * table, more than one kope_kernel). */
int k3_prog_ref_take(const char *path, struct k3_prog_ref *ref, char *err, size_t el);

/* Check the kernel program at path (the stub linked with the candidate's
 * object) against ref: the same functions in its preinit/init/fini arrays
 * and .ctors/.dtors (by symbol, since addresses move with the candidate's
 * size), none of them a symbol cand_obj defines (cand_obj: the candidate's
 * object, NULL to skip that), the same .init and .fini bytes, the same
 * IRELATIVE resolvers, the same entry symbol and TLS size, no interpreter
 * or dynamic section the null link lacks, no executable stack, and exactly
 * one kope_kernel. 0 clean, 1 rejected (rule, detail), negative PLAT_ERR_*
 * when a file cannot be read or ref was not taken. */
int k3_screen_program(const char *path, const char *cand_obj, const struct k3_prog_ref *ref,
                      enum plat_screen_rule *rule, char *detail, size_t dl);

/* Does the linked program at path have a symbol named name (defined or
 * not)? 1 yes, 0 no, negative PLAT_ERR_* (err says why) when it cannot be
 * read or has no symbol table. k3.c asks it of every judge program it links
 * with "kope_kernel": the candidate is never linked into the judge. */
int k3_program_defines(const char *path, const char *name, char *err, size_t el);

#endif
