/*
 * kope_ref.c - double-precision references kope_ref_<op> for the self-test
 * (kope_selftest.c): f32 inputs widened to double, double outputs (argmax:
 * int32_t), so the error measured is the exported kernel's own. Built
 * without vector flags.
 */
#define REAL double
#define PFX kope_ref_
#include "kope_ops.h"
#include "kope_ops.inc"
