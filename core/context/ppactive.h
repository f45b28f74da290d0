/*
 * core/context/ppactive.h - a kernel source as the prompt shows it: its
 * active configuration, with the branches of its own #if / #elif / #else
 * that its own #define lines switch off removed.
 *
 * A built-in template instance (platform/k3/k3_templates.h) is "#define
 * LMUL 4 ..." lines before a template that holds every op and method of its
 * family (the activation template: exp, tanh, erf and the rest for a relu
 * task, ~9k characters). The prompt has room for the code that runs, not for
 * the code the macros exclude.
 *
 * A small evaluator of the conditions over the source's own object-like
 * macros, not a preprocessor: no host compiler runs and none of its output
 * enters a prompt. Nothing is expanded outside conditions: comments, macros
 * and every active line stay as written. A condition it cannot decide (a
 * name the source does not define, which the compiler may predefine; a
 * function-like macro; a construct it does not know) keeps that whole group
 * as written, directives included, and a macro defined inside such a group
 * is from then on undecidable too. Unbalanced conditionals give the source
 * back unchanged. So the result compiles to the same kernel as the input.
 */
#ifndef KOPE_PPACTIVE_H
#define KOPE_PPACTIVE_H

#include <stddef.h>

/* The active configuration of src (len bytes) as a new NUL-terminated
 * string (the caller frees it), *removed = source lines dropped (0: the
 * text is src unchanged). NULL only when out of memory. */
char *pp_active(const char *src, size_t len, size_t *removed);

#endif /* KOPE_PPACTIVE_H */
