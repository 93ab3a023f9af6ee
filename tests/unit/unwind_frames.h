/* unwind_frames.h - the recursive frames test_unwind.c walks through, compiled with and
 * without frame pointers (unwind_fp.c, unwind_nofp.c). */
#ifndef GMT_TEST_UNWIND_FRAMES_H
#define GMT_TEST_UNWIND_FRAMES_H

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

#endif
