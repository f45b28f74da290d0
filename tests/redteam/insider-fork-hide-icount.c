/* class: forged/hidden instruction count (icount) via a forked helper.
 * defence targeted: icount plugin + kope's block check (k3.c): blocks with no
 *   region are skipped; only the named pid's region is counted.
 * why expected to pass: the kernel finds glibc's syscall() by its bytes (as in
 *   tests/test_k3_hostile.c), forks (clone SIGCHLD) inside the counted region;
 *   the CHILD does all the work into the MAP_SHARED output and exits; the
 *   parent only wait4()s. The child's plugin block closes no region (its end
 *   marker is never reached), so kope skips it; the parent's region counts only
 *   the scan + fork + wait. The work is made deliberately 20x redundant so an
 *   honest count would be large.
 * v2: fork only in the first call of the kernel process (a magic word 512 KiB
 *   below sp marks later calls), since a fork in a timed sample inherits the
 *   closed region 0 and kope refused that block (v1: 'icount refused: a block
 *   of 1 regions from pid 7').
 * result: see the RESULT line at the bottom (filled after the run). */
#include <stddef.h>
#include <stdint.h>
#include <riscv_vector.h>
#include "kernel_abi.h"
typedef long (*sc_fn)(long, long, long, long, long, long);
static const unsigned char pat[22] = {0x2a,0x83,0x2e,0x85,0xb2,0x85,0x36,0x86,0xba,0x86,
  0x3e,0x87,0xc2,0x87,0x46,0x88,0x9a,0x88,0x73,0,0,0};
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s);
static sc_fn find_sc(void) {
  /* v3: vector scan (e16m8) for the first halfword 0x832a, then the full
   * pattern: the scan costs a few thousand counted instructions */
  const uint16_t *p = (const uint16_t *)(uintptr_t)&kope_kernel;
  size_t lim = (16u << 20) / 2, i = 0;
  while (i < lim) {
    size_t vl = __riscv_vsetvl_e16m8(lim - i);
    vuint16m8_t v = __riscv_vle16_v_u16m8(p + i, vl);
    vbool2_t m = __riscv_vmseq_vx_u16m8_b2(v, 0x832a, vl);
    long f = __riscv_vfirst_m_b2(m, vl);
    if (f < 0) { i += vl; continue; }
    const unsigned char *q = (const unsigned char *)(p + i + f);
    size_t k = 0; while (k < 22 && q[k] == pat[k]) k++;
    if (k == 22) return (sc_fn)(uintptr_t)q;
    i += (size_t)f + 1;
  }
  return 0;
}
static void work(size_t n, const float *x, const float *y, float *out) {
  for (size_t i = 0; i < n; i++) { volatile float t = x[i] + y[i]; out[i] = t; }
}
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
  (void)s;
  /* first call of this process? (under qemu the stack below sp is not
   * zeroed between commands: a magic word there survives) */
  volatile unsigned long here = 0;
  volatile unsigned long *mark = (volatile unsigned long *)(((uintptr_t)&here - (512u << 10)) & ~(uintptr_t)7);
  if (*mark == 0x6b6f70656b6f7065ul) { work(n, x, y, out); return; }
  *mark = 0x6b6f70656b6f7065ul;
  sc_fn sc = find_sc();
  if (!sc) { work(n, x, y, out); return; }
  long pid = sc(220, 17, 0, 0, 0, 0);          /* clone(SIGCHLD) = fork */
  if (pid == 0) { work(n, x, y, out); sc(94, 0, 0, 0, 0, 0); } /* child: exit_group */
  if (pid < 0) { work(n, x, y, out); return; }
  sc(260, pid, 0, 0, 0, 0);                    /* wait4 */
}
/* RESULT (observed 04:40-04:41 UTC):
 *  v1 (fork in every call): measure FAIL harness "icount refused: a block of 1
 *    regions from pid 7, where the judge made 0" (fork in a timed sample).
 *  v2 (fork only in first call, scalar scan): PASSED, icount 646068 = the scan,
 *    the child's 20x work (901245 honest) not counted.
 *  v3 (vector scan): add-res-4096 PASSED icount 10356 (honest scalar ~45k):
 *    1.51x vs scalar-O2; add-res-prefill-1536x512 PASSED icount 10356 vs
 *    scalar-O2 7077902 -> "289.11x", "26.10x vs autovec-O3", for a scalar
 *    kernel. `kope run --seed ... --offline --budget 1`: "pass 26.10x vs
 *    autovec-O3 (vcost)", stored as the task's best path (graph log).
 *  GOT THROUGH. Export could not be tried here: llvm-objcopy-19 missing on
 *  this machine ("shipping its object: ... cannot run llvm-objcopy-19").
 *  Fix idea: refuse any block from a pid the judge did not name (even with 0
 *  regions), or count process creation (the plugin sees the guest's clone via
 *  a syscall callback: qemu_plugin_register_vcpu_syscall_cb) as an icount
 *  refusal; or fail if the kernel process's plugin sees any clone/fork. */
