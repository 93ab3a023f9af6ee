/* unwind_fp.c - recursion with frame pointers (COMPILE_OPTIONS in CMakeLists.txt). */
#include "unwind_frames.h"

#include <stddef.h>
#include <stdint.h>

static volatile int sink_fp;

__attribute__((noinline)) int rec_fp(int depth, walk_fn fn, void **buf, int max)
{
    volatile char pad[24];
    pad[depth % 24] = (char)depth;
    int r = depth == 0 ? walk_at(fn, buf, max) : rec_fp(depth - 1, fn, buf, max);
    sink_fp += pad[depth % 24];
    return r;
}

/* rbp_moves's frames (below): each with a frame pointer, its CFA RBP-based. */
static volatile uintptr_t ra_of_e1; /* the return address into e1, as f_mid saw it */

/* Calls the walker itself: the walk's start is this function's call site. */
__attribute__((noinline, noipa)) static int g_leaf(walk_fn fn, void **buf, int max)
{
    int n = fn(buf, max);
    sink_fp += n;
    return n;
}

/* n bytes of alloca below its saved registers. fill: every word of them made the return
 * address into e1 that an earlier call from e1 left (as stale words on a stack would be). */
__attribute__((noinline, noipa)) static int f_mid(int n, int fill, walk_fn fn, void **buf, int max)
{
    volatile uintptr_t *area = __builtin_alloca((size_t)n);
    if (fill)
        for (int i = 0; i < n / 8; i++)
            area[i] = ra_of_e1;
    else
        ra_of_e1 = (uintptr_t)__builtin_return_address(0);
    int r = g_leaf(fn, buf, max);
    sink_fp += (int)area[0] & 1;
    return r;
}

__attribute__((noinline, noipa)) static int e1(int m, int fill, walk_fn fn, void **buf, int max)
{
    volatile char *area = __builtin_alloca((size_t)m);
    area[0] = 1;
    int r = f_mid(RBP_MOVES_SPAN - m, fill, fn, buf, max);
    sink_fp += area[0];
    return r;
}

__attribute__((noinline, noipa)) static int e2(int m, int fill, walk_fn fn, void **buf, int max)
{
    volatile char *area = __builtin_alloca((size_t)m);
    area[0] = 2;
    int r = f_mid(RBP_MOVES_SPAN - m, fill, fn, buf, max);
    sink_fp -= area[0];
    return r;
}

int rbp_moves(int which, walk_fn fn, void **buf, int max)
{
    /* One call site for both (the return address into this function is the same), and the
     * same stack pointer at it: e1's and e2's frames begin at one address. */
    static int (*const es[2])(int, int, walk_fn, void **, int) = {e1, e2};
    int (*volatile e)(int, int, walk_fn, void **, int) = es[which != 0];
    int m = which ? 16 : RBP_MOVES_SPAN - 16;
    int r = e(m, which, fn, buf, max);
    sink_fp += r;
    return r;
}
