/* preload_list.h - LD_PRELOAD without the tracer, for GPUMEMTRACE_FOLLOW_EXEC=0
 * (capture/fork_exec.c), and the rule that names the tracer, shared with `gpumemtrace run`
 * (cli/cmd_run.c).
 *
 * Pure string work on caller-given memory: no allocation, no system call, so it can be tested
 * on its own (tests/capture/test_preload.c) and run wherever the caller runs.
 */
#ifndef GMT_CORE_PRELOAD_LIST_H
#define GMT_CORE_PRELOAD_LIST_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the entry p[0..n) of LD_PRELOAD names the tracer by its file name: libgpumemtrace.so
 * or libgpumemtrace.so<anything> (libgpumemtrace.so.1, another build's copy), in any directory.
 * The same rule as `gpumemtrace run` (docs/cli.md). A directory's name does not count:
 * /opt/libgpumemtrace-tools/libfoo.so is not the tracer. */
bool gmt_preload_names_tracer(const char *p, size_t n);

/* Claims an entry as the tracer (arg: the caller's). */
typedef bool (*gmt_preload_is_self_fn)(const char *p, size_t n, void *arg);

/* Writes to out (cap bytes, NUL-terminated) the entries of list, which ld.so separates by ':'
 * or ' ', that is_self does not claim, in their order, joined by ':', empty entries left out.
 * Returns the number of entries dropped (0: the caller need not touch LD_PRELOAD), or -1 when
 * the result does not fit in cap, with out left empty: never a list cut short. The result is
 * never longer than list, so cap = strlen(list) + 1 always fits. */
int gmt_preload_without(const char *list, char *out, size_t cap, gmt_preload_is_self_fn is_self,
                        void *arg);

/* The value of the last LD_PRELOAD in env (an environment block: "NAME=value" strings up to a
 * NULL; NULL for none), the one ld.so reads when a block gives it more than once, while getenv
 * and setenv take the first; NULL when there is none. *count gets how many there are. */
const char *gmt_preload_last(char *const *env, size_t *count);

#endif
