/* unwind.h - native stack walk for x86-64 Linux by DWARF CFI from .eh_frame, with a global
 * rule cache keyed by instruction address, and libunwind's unw_backtrace as the fallback for
 * every walk it cannot do exactly as libunwind would (docs/unwind.md).
 *
 * gmt_unwind(buf, max) has unw_backtrace's contract: buf[0] is the return address into the
 * function that called gmt_unwind (the address unw_backtrace's first entry has when called
 * from that same function), then the return addresses of the frames above, raw (not minus
 * one), at most max of them. A frame whose rule the cache does not hold is looked up through
 * dl_iterate_phdr and the module's .eh_frame_hdr (no malloc); a walk that meets a frame
 * outside the compact rule (CFA = RSP or RBP + offset, return address at CFA-8, RBP unchanged
 * or saved at CFA-8k), a signal frame, a frame without CFI, or a stack outside the bound is
 * redone by unw_backtrace as a whole. Hits take no lock and make no system call.
 */
#ifndef GMT_CORE_UNWIND_H
#define GMT_CORE_UNWIND_H

#include <stdint.h>

/* The most frames one walk returns (a larger max is clamped). */
#define GMT_UNWIND_MAX 256

/* Maps the rule cache; once per process, before the first walk that should be fast (a walk
 * before it, or after a failed mmap, is unw_backtrace's). force_libunwind: every walk is
 * unw_backtrace's (GPUMEMTRACE_UNWIND=libunwind). Idempotent. */
void gmt_unwind_init(int force_libunwind);

int gmt_unwind(void **buf, int max);
/* Words a caller keeps with one of the thread's remembered walks (the stack capture: what it
 * derived from the walk's frames, and the stack id they were given), so that each remembered
 * walk has its own and a replay finds them again. The unwinder numbers the walk (`walk`,
 * never reused by the thread) and zeroes the words whenever it writes a new walk there. */
typedef struct gmt_walk_note_s {
    uint64_t walk; /* the walk's number; the note is that walk's only while it is unchanged */
    uint64_t w[5]; /* the caller's */
} gmt_walk_note_t;
/* gmt_unwind, and *note is the note of the thread's remembered walk that gave the frames: a
 * walk number the calling thread was given before means the same frames again (a replay of
 * that walk, for the same max). NULL when the walk was not remembered (a fallback, a walk
 * nested in another, a thread without a replay slot). The note's memory stays the thread's
 * slot's; a later walk may give it to another walk (check note->walk against the number). */
int gmt_unwind_walk(void **buf, int max, gmt_walk_note_t **note);

/* A walk ends at the first frame whose return address lies in [lo, hi), that frame included
 * (the Python interpreter's evaluation function, once Python frames are captured: they
 * replace what lies beyond it, docs/unwind.md); lo == hi: none. Replaces the last range;
 * walks under way finish with the one they read. The libunwind fallback does not stop. */
void gmt_unwind_stop_at(uint64_t lo, uint64_t hi);

/* Empties the rule cache when the loader's unload counter moved since it was last looked at
 * (an object unloaded: its cached rules may name another object's code now). Called by the
 * writer thread periodically; each cache miss checks the same. Takes the loader's lock. */
void gmt_unwind_check_modules(void);
/* Empties the rule cache unconditionally. */
void gmt_unwind_flush(void);
/* The cached rule word for code address a (return address - 1), looked up as a walk does,
 * through the cache (a miss counts). For the tests of the cache itself. */
uint32_t gmt_unwind_rule_probe(uint64_t a);
/* The cache slot an address is looked up in first (its home; the other way is home ^ 1). */
uint32_t gmt_unwind_home_slot(uint64_t a);

typedef struct gmt_unwind_stats_s {
    uint64_t fallbacks; /* walks redone by unw_backtrace (the fast walk gave up) */
    uint64_t misses;    /* rules looked up in a module's CFI (cache misses) */
    uint64_t flushes;   /* times the cache was emptied */
    uint64_t replays;   /* walks answered by replaying one the thread remembers */
    /* The walks that were not: from a place the thread remembered no walk from (the first
     * from there, or given up for another place's), and from a place it remembered walks
     * from, all with other frames (or settings). */
    uint64_t missed_new, missed_other;
} gmt_unwind_stats_t;
void gmt_unwind_stats(gmt_unwind_stats_t *out);
/* Walks the calling thread remembers now (for the tests of the memo). */
uint32_t gmt_unwind_test_ways_held(void);
/* In a fork child: the remembered walks of the threads the child does not have are given up. */
void gmt_unwind_after_fork(void);

#endif
