/* unwind_fp.c - recursion with frame pointers (COMPILE_OPTIONS in CMakeLists.txt). */
#include "unwind_frames.h"

static volatile int sink_fp;

__attribute__((noinline)) int rec_fp(int depth, walk_fn fn, void **buf, int max)
{
    volatile char pad[24];
    pad[depth % 24] = (char)depth;
    int r = depth == 0 ? walk_at(fn, buf, max) : rec_fp(depth - 1, fn, buf, max);
    sink_fp += pad[depth % 24];
    return r;
}
