/*
 * platform/toolview.h - the read-only view of a toolchain that a sandboxed
 * compile or link sees (platform/proc.h PROC_VIEW): the paths a compiler
 * needs, found once per platform open by asking the compiler itself, and
 * nothing else of the host.
 *
 * What goes in (each as its canonical path, plus every symlink met on the
 * way to it, so a path the compiler names still resolves inside the view):
 *   - the compiler command's executable, and for a script its interpreter;
 *   - for every executable: its ELF interpreter and the directories of the
 *     shared libraries it loads (the interpreter's --list, run once);
 *   - the compiler's program and library search directories
 *     (-print-search-dirs), its resource dir (clang -print-resource-dir),
 *     its sysroot (gcc -print-sysroot), the programs it runs (cc1, as, ld,
 *     ld.lld, collect2, lto-wrapper: -print-prog-name, else the sandbox's
 *     PATH /usr/bin:/bin), and the include search list of a preprocessor
 *     run with the candidate's flags (-E -v);
 *   - /etc/ld.so.cache (where the dynamic loader finds those libraries).
 * A path under a directory already in the view is not added again.
 *
 * The probes run kope's own fixed inputs through the configured compiler
 * (no candidate is involved), outside the sandbox: they decide what the
 * sandbox holds. Nothing here knows a target.
 */
#ifndef KOPE_PLATFORM_TOOLVIEW_H
#define KOPE_PLATFORM_TOOLVIEW_H

#include <stddef.h>

#include "platform/proc.h"

#define TOOLVIEW_PATH_MAX 512
#define TOOLVIEW_MAX (PROC_VIEW_MAX - 8) /* room for a caller's own entries */

struct toolview {
    char path[TOOLVIEW_MAX][TOOLVIEW_PATH_MAX];
    unsigned char is_link[TOOLVIEW_MAX]; /* 1: a symlink, recreated as itself */
    int n;
    int overflow;                        /* a path did not fit: the view is incomplete */
};

void toolview_init(struct toolview *v);

/* Add path (absolute): every symlink on the way and the canonical target.
 * 0, or -1 when it does not exist (nothing added) or the view is full. */
int toolview_add(struct toolview *v, const char *path);

/* Add an executable (a path, or a bare name looked up in the sandbox's
 * PATH, /usr/bin:/bin), its interpreter (ELF or #!) and the directories of
 * its shared libraries. 0, or -1 when it is not found. */
int toolview_add_exe(struct toolview *v, const char *exe);

/* Everything a compiler command needs (cc: the command with its words,
 * cflags: the candidate's flags, both split on blanks). Runs the probes
 * above; err says which one failed. 0, or PLAT_ERR_NO_TOOLCHAIN. */
int toolview_add_cc(struct toolview *v, const char *cc, const char *cflags, char *err, size_t err_len);

/* Fill list (cap entries including the NULL) with the view's paths and
 * then the extra ones (NULL-ended, may be NULL); returns the count, or -1
 * when they do not fit. The strings stay owned by v and extra. */
int toolview_list(const struct toolview *v, const char *const *extra, const char **list, int cap);

/* The view as one line for messages ("/usr/lib /usr/include ..."), capped. */
void toolview_print(const struct toolview *v, char *out, size_t out_len);

#endif
