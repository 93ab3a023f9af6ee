/* unwind_frames.h - the recursive frames test_unwind.c walks through, compiled with and
 * without frame pointers (unwind_fp.c, unwind_nofp.c). */
#ifndef GMT_TEST_UNWIND_FRAMES_H
#define GMT_TEST_UNWIND_FRAMES_H

#include <stdint.h>

typedef int (*walk_fn)(void **buf, int max);

/* Calls fn(buf, max) from one call site, so that gmt_unwind and unw_backtrace see the same
 * first frame. */
int walk_at(walk_fn fn, void **buf, int max);

/* depth frames of recursion, then walk_at. */
int rec_fp(int depth, walk_fn fn, void **buf, int max);
int rec_nofp(int depth, walk_fn fn, void **buf, int max);
/* A frame whose CFA is RBP-based because of a variable-length array (omit-frame-pointer). */
int vla_nofp(int n, walk_fn fn, void **buf, int max);
/* rbp_moves -> e1 or e2 (which) -> f_mid -> g_leaf -> fn, every frame with a frame pointer:
 * e1 and e2, reached from one call site, allocate m and f_mid RBP_MOVES_SPAN - m bytes, so
 * that g_leaf and the walk start at the same return address and stack pointer either way
 * while f_mid's frame (its saved RBP, where its return address lies) moves: with e2, the
 * words where its return address into e1 lay hold that address again. */
#define RBP_MOVES_SPAN 512
int rbp_moves(int which, walk_fn fn, void **buf, int max);
/* rbp0_moves -> h1 or h2 (which) -> h_leaf -> fn, every frame with a frame pointer, as
 * rbp_moves's but with the alloca that moves the frames in the frame the walk starts in:
 * h_leaf's RBP (the walk's first rule reads it) and return address move with m while the
 * walk's start stays; with h2, the words where they lay hold h1's RBP and address again. */
int rbp0_moves(int which, walk_fn fn, void **buf, int max);
/* twin_starts -> twin_leaf -> fn, from one of twin_leaf's two call sites (site), with pad bytes
 * of alloca in twin_leaf: its frame stays where it is, the stack pointer at the call moves
 * with pad. shift (0: none; more than TWIN_COPY + 64, less than pad): the TWIN_COPY bytes from
 * twin_leaf's frame pointer up (its frame and its callers') are copied shift bytes lower first,
 * into the alloca. twin_sp: the stack pointer at the last call. */
#define TWIN_COPY 512
int twin_starts(int site, int pad, int shift, walk_fn fn, void **buf, int max);
uintptr_t twin_sp(void);

#endif
