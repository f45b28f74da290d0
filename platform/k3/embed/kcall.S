/*
 * kcall.S - the one way the K3 harness's kernel process calls a candidate
 * (embedded in kope; assembled for riscv64 beside harness.c, see kcall.h).
 *
 *   int kope_kcall(void (*fn)(void), const unsigned long args[7], long region);
 *
 * Every call starts clean: fcsr (frm = round-to-nearest-even, fflags) and
 * vxrm/vxsat are zeroed, v0-v31 are zeroed, and vtype is set to one fixed
 * value (e32, m1, ta, ma) with vl = 0, so nothing an earlier call (or the
 * harness) left in the vector or control state reaches this one. None of
 * that is preserved across calls by the psABI, so an honest kernel sets what
 * it uses and cannot tell.
 *
 * Every register the psABI says a callee preserves is checked: s0-s11 and
 * fs0-fs11 hold canaries when the kernel starts and must hold them when it
 * returns, and sp, gp and tp must be what they were. The return value is 0,
 * or which one changed first (KCALL_S0 + i, KCALL_FS0 + i, KCALL_SP, GP, TP
 * in kcall.h): the caller names it. The caller's own values of all of them
 * are kept in a static save area (not on the stack, which the kernel owns
 * below sp and may scribble over above it) and restored before returning,
 * so the harness goes on to report the change instead of crashing on it.
 *
 * This is a check of the calling convention, not a security boundary: the
 * kernel runs in the kernel process, which holds nothing of value (a kernel
 * that rewrites the save area only chooses how it fails).
 *
 * region >= 0: the counted call. The icount markers (kope_icount_begin and
 * _end, harness.c: one `ret` each, which preserve every callee-saved
 * register by the psABI) are called right around the kernel, after the
 * clean start and the canaries, so the plugin's region holds the kernel and
 * a fixed two dozen instructions of this file, not the state reset (which
 * would weigh on the candidate's count, and on no baseline's). The counted
 * call is otherwise the same as every other call.
 *
 * The arguments a0-a6 come from args[] (every family's arguments are
 * integers or pointers: platform/kernel_abi.h). Assembled with relaxation off
 * so that the save area is reached pc-relative, never through gp, which the
 * kernel may have changed.
 */
    .option norelax
    .text
    .balign 4
    .globl kope_kcall
    .type kope_kcall, @function
kope_kcall:
    lla     t0, kcall_save
    sd      ra, 0(t0)
    sd      sp, 8(t0)
    sd      gp, 16(t0)
    sd      tp, 24(t0)
    sd      s0, 32(t0)
    sd      s1, 40(t0)
    sd      s2, 48(t0)
    sd      s3, 56(t0)
    sd      s4, 64(t0)
    sd      s5, 72(t0)
    sd      s6, 80(t0)
    sd      s7, 88(t0)
    sd      s8, 96(t0)
    sd      s9, 104(t0)
    sd      s10, 112(t0)
    sd      s11, 120(t0)
    fsd     fs0, 128(t0)
    fsd     fs1, 136(t0)
    fsd     fs2, 144(t0)
    fsd     fs3, 152(t0)
    fsd     fs4, 160(t0)
    fsd     fs5, 168(t0)
    fsd     fs6, 176(t0)
    fsd     fs7, 184(t0)
    fsd     fs8, 192(t0)
    fsd     fs9, 200(t0)
    fsd     fs10, 208(t0)
    fsd     fs11, 216(t0)
    sd      a2, 224(t0)
    sd      a0, 232(t0)
    sd      a1, 240(t0)

    /* a clean start: FP and fixed-point control, vector registers, vtype */
    csrw    fcsr, zero
    csrwi   vxrm, 0
    csrwi   vxsat, 0
    vsetvli t3, zero, e8, m8, ta, ma
    vmv.v.i v0, 0
    vmv.v.i v8, 0
    vmv.v.i v16, 0
    vmv.v.i v24, 0
    vsetivli zero, 0, e32, m1, ta, ma

    /* canaries: s_i = C + i K, fs_i = ~(C + (12 + i) K) as bits */
    li      t3, 0x9e3779b97f4a7c15
    li      s0, 0x6b6f70652d6b6331
    add     s1, s0, t3
    add     s2, s1, t3
    add     s3, s2, t3
    add     s4, s3, t3
    add     s5, s4, t3
    add     s6, s5, t3
    add     s7, s6, t3
    add     s8, s7, t3
    add     s9, s8, t3
    add     s10, s9, t3
    add     s11, s10, t3
    add     t4, s11, t3
    .irp    r, fs0, fs1, fs2, fs3, fs4, fs5, fs6, fs7, fs8, fs9, fs10, fs11
    not     t5, t4
    fmv.d.x \r, t5
    add     t4, t4, t3
    .endr

    ld      a0, 224(t0)
    bltz    a0, 2f
    call    kope_icount_begin
2:
    lla     t0, kcall_save
    ld      t1, 232(t0)
    ld      t2, 240(t0)
    ld      a0, 0(t2)
    ld      a1, 8(t2)
    ld      a2, 16(t2)
    ld      a3, 24(t2)
    ld      a4, 32(t2)
    ld      a5, 40(t2)
    ld      a6, 48(t2)
    jalr    t1

    /* the kernel's sp, gp, tp kept aside, ours back before anything else */
    lla     t0, kcall_save
    sd      sp, 248(t0)
    sd      gp, 256(t0)
    sd      tp, 264(t0)
    ld      sp, 8(t0)
    ld      gp, 16(t0)
    ld      tp, 24(t0)
    ld      a0, 224(t0)
    bltz    a0, 3f
    call    kope_icount_end
3:
    /* what the kernel left: the first preserved register that changed */
    lla     t0, kcall_save
    li      t3, 0x9e3779b97f4a7c15
    li      t1, 0x6b6f70652d6b6331
    li      a0, 1
    .irp    r, s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11
    bne     \r, t1, 1f
    add     t1, t1, t3
    addi    a0, a0, 1
    .endr
    .irp    r, fs0, fs1, fs2, fs3, fs4, fs5, fs6, fs7, fs8, fs9, fs10, fs11
    fmv.x.d t2, \r
    not     t4, t1
    bne     t2, t4, 1f
    add     t1, t1, t3
    addi    a0, a0, 1
    .endr
    ld      t1, 248(t0)
    ld      t2, 8(t0)
    bne     t1, t2, 1f
    addi    a0, a0, 1
    ld      t1, 256(t0)
    ld      t2, 16(t0)
    bne     t1, t2, 1f
    addi    a0, a0, 1
    ld      t1, 264(t0)
    ld      t2, 24(t0)
    bne     t1, t2, 1f
    li      a0, 0
1:
    /* the caller's own values back, whatever the kernel did */
    ld      ra, 0(t0)
    ld      sp, 8(t0)
    ld      gp, 16(t0)
    ld      tp, 24(t0)
    ld      s0, 32(t0)
    ld      s1, 40(t0)
    ld      s2, 48(t0)
    ld      s3, 56(t0)
    ld      s4, 64(t0)
    ld      s5, 72(t0)
    ld      s6, 80(t0)
    ld      s7, 88(t0)
    ld      s8, 96(t0)
    ld      s9, 104(t0)
    ld      s10, 112(t0)
    ld      s11, 120(t0)
    fld     fs0, 128(t0)
    fld     fs1, 136(t0)
    fld     fs2, 144(t0)
    fld     fs3, 152(t0)
    fld     fs4, 160(t0)
    fld     fs5, 168(t0)
    fld     fs6, 176(t0)
    fld     fs7, 184(t0)
    fld     fs8, 192(t0)
    fld     fs9, 200(t0)
    fld     fs10, 208(t0)
    fld     fs11, 216(t0)
    ret
    .size kope_kcall, .-kope_kcall

    .bss
    .balign 16
kcall_save: /* ra sp gp tp s0-s11 fs0-fs11 | region fn args | the kernel's sp gp tp */
    .zero   272
    .section .note.GNU-stack, "", @progbits
