/*
 * kope_scalar.c - portable scalar fallbacks kope_scalar_<op> for every op of
 * the catalogue (f32, the family signatures of kernel_abi.h). The dispatcher
 * kope_<op> calls them for ops with no exported kernel. No vector code.
 */
#define REAL float
#define PFX kope_scalar_
#include "kope_ops.h"
#include "kope_ops.inc"
