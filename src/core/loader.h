/* loader.h - the tracer's calls into the dynamic loader that a fork must not catch.
 *
 * dl_iterate_phdr holds the loader's dl_load_write_lock while it runs (so does a dlopen that
 * loads an object), and glibc's fork resets dl_load_lock but not that one: a child forked while
 * another thread was inside such a call waits for that thread, which it does not have, at its
 * own first one (its start-up's internal ranges, its unwinder's first rule miss, its writer
 * thread's module check). An application thread makes such calls inside the CUDA hooks (a
 * rule-cache miss of its first walks from a new call site, the libunwind fallback), so the
 * writer thread being idle at the fork is not enough (stress.fork_storm under ASan: a child
 * hung at its first CUDA call on the lock that an allocating thread of the parent held in its
 * first rule miss, docs/security.md "Fork").
 *
 * Every such call of the tracer's goes through this gate. fork() closes it, waits (bounded)
 * until no thread is inside, and keeps it closed until the fork is done; a thread that comes
 * to it meanwhile waits for it to open (at most 2 s, so that nothing the fork might wait for
 * can deadlock with it). The forking thread itself passes (an atfork handler of another
 * library may reach a CUDA hook), and so does a call made inside another. Entering costs two
 * atomic operations on a shared word: only the cold paths (a rule miss, a fallback walk,
 * start-up, the writer's checks) pay it.
 */
#ifndef GMT_CORE_LOADER_H
#define GMT_CORE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void gmt_loader_enter(void);
void gmt_loader_leave(void);

/* dl_iterate_phdr through the gate (<link.h>, with _GNU_SOURCE). */
struct dl_phdr_info;
int gmt_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg);

/* fork(): closes the gate and waits until no thread is inside or until deadline_ns
 * (gmt_now_ns); false when a thread was still inside. */
bool gmt_loader_fork_close(uint64_t deadline_ns);
/* The parent after the fork: opens the gate. */
void gmt_loader_fork_open(void);
/* The child: the gate open, nobody inside (the other threads are gone). */
void gmt_loader_after_fork_child(void);

#endif
