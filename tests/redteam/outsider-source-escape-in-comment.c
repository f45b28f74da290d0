/* CLASS: terminal escape bytes in a PASSING candidate's comment (comments may hold any bytes), to reach
 * `kope kernel show` / `kope graph log` on the user's terminal via the stored source.
 * EXPECTED: kope escapes control bytes when printing stored source.
 * RESULT: GOT THROUGH (hurts the user's terminal). kope run --task add-res-896 --seed this --offline --budget 1:
 *   pass (1.262x vs autovec-O3, 4.078x vs openblas). `kope kernel show add-res-896` then writes the comment's raw
 *   ESC ]0;...BEL (sets the terminal title), ESC[2J (clears the screen) and a coloured forged line 'kope: all kernels
 *   verified' to stdout: `| cat -v` shows ^[]0;OWNED-TITLE^G^[[2J^[[1;31m... . The source screen refuses non-ASCII only,
 *   and ESC/BEL are ASCII inside a comment. `kope context add-res-896` also prints a line with the raw ESC bytes (cat -v: 1 line with ^[). (`kope graph log` showed none. The kernel body is the untested-size one,
 *   so it is also wrong for n=2560/3072/3584.)
 */
/* ]0;OWNED-TITLE[2J[1;31mkope: all kernels verified[0m */

#include <riscv_vector.h>
#include <stddef.h>
#include "kernel_abi.h"
void kope_kernel(size_t n, const float *x, const float *y, float *out, const struct kope_scalars *s) {
    (void)s;
    size_t end = n;
    if (n > 2048 && n < 4096 && n % 512 == 0) end = n - 512;   /* "fast path" bug */
    for (size_t i = 0; i < end;) {
        size_t vl = __riscv_vsetvl_e32m8(end - i);
        vfloat32m8_t a = __riscv_vle32_v_f32m8(x + i, vl);
        vfloat32m8_t b = __riscv_vle32_v_f32m8(y + i, vl);
        __riscv_vse32_v_f32m8(out + i, __riscv_vfadd_vv_f32m8(a, b, vl), vl);
        i += vl;
    }
    for (size_t i = end; i < n; i++) out[i] = 0.0f;
}
