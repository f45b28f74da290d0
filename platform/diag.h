/*
 * platform/diag.h - the one cleaner of what a compiler or linker says about
 * a candidate, before any of it is kept (stored as an outcome's diag, quoted
 * in the next prompt, synced to peers). Shared by every target (the K3
 * compile and link, the Ascend kernel build).
 *
 * The rule is an allow-list of lines, so no host text survives by being
 * unexpected:
 *   - a diagnostic located in the candidate's own file ("PATH:LINE:COL:
 *     error: ...", "PATH:LINE: ..."), its path shown as the candidate's
 *     base name, and the source excerpt under it ("  7 | code", "    | ^");
 *   - gcc's context lines about that file ("PATH: In function 'f':");
 *   - the summary lines "N errors generated." and "compilation terminated.".
 * Everything else is dropped: diagnostics located in another file (a
 * header, any file a candidate managed to include) with their excerpts,
 * "In file included from", the driver's own lines ("clang: error: ..."),
 * crash reports and stack dumps, make and cmake chatter. Inside a kept
 * line, the candidate's directory and its parent are cut from any path.
 * Attribution holds because the source screen refuses #line.
 *
 * Linker output is never kept: plat_diag_link turns it into kope's own
 * words ("link failed: undefined symbol NAME"), the name limited to the
 * characters of a C identifier.
 */
#ifndef KOPE_PLATFORM_DIAG_H
#define KOPE_PLATFORM_DIAG_H

#include <stddef.h>

/* Copy into out (capped, NUL-terminated) the lines of in that the rule
 * above keeps; cand_path is the candidate's file as the compiler was given
 * it. Returns the bytes kept. */
size_t plat_diag_clean(const char *in, const char *cand_path, char *out, size_t out_len);

/* kope's words for a failed link, from the linker's output in: "link
 * failed: undefined symbol X", "duplicate symbol X", "relocation out of
 * range", "a dependent library", or just "link failed". */
void plat_diag_link(const char *in, char *out, size_t out_len);

#endif
