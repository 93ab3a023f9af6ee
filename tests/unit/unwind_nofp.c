/* unwind_nofp.c - recursion without frame pointers, -O2 (COMPILE_OPTIONS in CMakeLists.txt):
 * the CFA is RSP-based and moves with each push. */
#include "unwind_frames.h"

static volatile int sink_nofp;

__attribute__((noinline)) int rec_nofp(int depth, walk_fn fn, void **buf, int max)
{
    volatile long pad[5];
    pad[depth % 5] = depth;
    int r = depth == 0 ? walk_at(fn, buf, max) : rec_nofp(depth - 1, fn, buf, max);
    sink_nofp += (int)pad[depth % 5];
    return r;
}

__attribute__((noinline)) int vla_nofp(int n, walk_fn fn, void **buf, int max)
{
    volatile char v[n];
    v[0] = 1;
    v[n - 1] = 2;
    int r = walk_at(fn, buf, max);
    sink_nofp += v[0] + v[n - 1];
    return r;
}
