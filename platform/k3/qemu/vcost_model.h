/*
 * platform/k3/qemu/vcost_model.h - the one weight table of the vector-cost
 * model (vcost), shared by what computes it and what describes it:
 *
 *   platform/k3/qemu/icount_plugin.c  charges every executed vector
 *                                     instruction by it (built by
 *                                     cross/qemu-plugin.sh with the host cc)
 *   platform/k3/prompt.c              writes the prompt's "how candidates are
 *                                     ranked" text from it, so what the model
 *                                     is told is what kope charges
 *
 * The model (docs/K3-KERNELS.md, "The vector-cost model"): a scalar
 * instruction (vsetvl included) costs 1; a vector instruction costs
 *     groups(EMUL) x factor         groups(e) = max(1, e x VLEN/DLEN)
 * where EMUL is LMUL from the current vtype (EEW/SEW x LMUL for loads and
 * stores) and the factor is its class's below. FIXED classes occupy a fixed
 * number of registers whatever the vtype (cost = registers x VLEN/DLEN).
 * The factors are a model of an in-order vector unit that streams one
 * register group per DLEN-wide pass, not a measurement of the X100.
 *
 * Plain C with no includes and nothing but static tables and a static
 * inline accessor: the plugin is compiled outside kope's build.
 */
#ifndef KOPE_VCOST_MODEL_H
#define KOPE_VCOST_MODEL_H

enum vclass {
    VC_NONE, VC_BASE, VC_WIDEN, VC_REDUCE, VC_ORDERED, VC_DIVIDE, VC_GATHER,
    VC_MEM, VC_MEM_STRIDED, VC_MEM_INDEXED, VC_FIXED, VC_CFG_IMM, VC_CFG_REG,
    VC_N_CLASSES
};

/* The factors. 0 for GATHER: its factor is the group's registers,
 * max(1, EMUL) (any destination register may read any source register, so
 * LMUL^2 register passes); FIXED is costed by its registers, not a factor. */
static const unsigned vc_factor[VC_N_CLASSES] = {
    [VC_BASE] = 1, [VC_WIDEN] = 2, [VC_REDUCE] = 2, [VC_ORDERED] = 8, [VC_DIVIDE] = 4,
    [VC_GATHER] = 0 /* registers in the group */, [VC_MEM] = 1, [VC_MEM_STRIDED] = 2, [VC_MEM_INDEXED] = 4,
};

/* What each charged class holds, in the words a kernel writer reads: the
 * prompt's text and docs/K3-KERNELS.md's table say the same. NULL name:
 * a class that is not charged as a vector instruction (none, vsetvl*). */
struct vc_class_doc {
    const char *name;
    const char *what;   /* short: the prompt's */
    const char *doc;    /* the instructions column of docs/K3-KERNELS.md's table
                           (k3_vcost_table_md writes it; tests/test_docs.c checks) */
};

static inline const struct vc_class_doc *vc_class_doc(enum vclass c)
{
    static const struct vc_class_doc doc[VC_N_CLASSES] = {
        [VC_BASE] = {"base", "arith, FMA, compare, merge, move, slide, convert, vfrec7/vfrsqrt7",
                     "arithmetic, FMA, compares, merges, moves, slides, single-width conversions, "
                     "`vfrec7`/`vfrsqrt7`, `vid`/`viota`"},
        [VC_MEM] = {"unit-stride load/store", "EMUL = EEW/SEW x LMUL, segments x fields",
                    "`vle*`/`vse*`, fault-only-first, segment loads/stores (x fields); groups of "
                    "EMUL = EEW/SEW x LMUL"},
        [VC_WIDEN] = {"widen/narrow", "vfw*, vw*, vn*",
                      "widening and narrowing ops (`vfw*`, `vw*`, `vn*`, `vfwcvt`, `vfncvt`): one operand "
                      "group is 2 x LMUL"},
        [VC_REDUCE] = {"reduce", "vfredusum/max/min, vredsum",
                       "unordered reductions (`vredsum`..., `vfredusum`, `vfredmin/max`, `vwredsum`, "
                       "`vfwredusum`): a pass plus the cross-lane tree"},
        [VC_ORDERED] = {"ordered reduce", "vfredosum",
                        "ordered reductions (`vfredosum`, `vfwredosum`): serial by definition"},
        [VC_DIVIDE] = {"divide", "vfdiv, vfrdiv, vfsqrt, vdiv, vrem",
                       "`vdiv[u]`, `vrem[u]`, `vfdiv`, `vfrdiv`, `vfsqrt`: iterative units"},
        [VC_MEM_STRIDED] = {"strided load/store", "", "strided loads/stores: one element per access"},
        [VC_MEM_INDEXED] = {"indexed load/store", "",
                            "indexed loads/stores (data EMUL = LMUL): an address per element"},
        [VC_GATHER] = {"gather", "vrgather.vv, vcompress",
                       "`vrgather.vv`, `vrgatherei16`, `vcompress`: any destination register may read any "
                       "source register, so LMUL^2 register passes"},
        [VC_FIXED] = {"fixed", "vmv.x.s, vfmv.f.s, vcpop, vfirst, mask ops cost 1 register; "
                               "vmv<n>r, vl<n>r, vs<n>r n",
                      "one register: `vmv.x.s`, `vfmv.f.s`, `vmv.s.x`, `vfmv.s.f`, `vcpop`, `vfirst`, mask "
                      "logicals, `vmsbf/vmsif/vmsof`, `vlm`/`vsm`; n registers: `vmv<n>r.v`, `vl<n>re*.v`, "
                      "`vs<n>r.v`"},
    };
    return c < VC_N_CLASSES ? &doc[c] : &doc[VC_NONE];
}

#endif /* KOPE_VCOST_MODEL_H */
