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

/* rbp0_moves's frames (below): each with a frame pointer, its CFA RBP-based. */
static volatile uintptr_t h_fp, h_saved_rbp, h_ra; /* h_leaf's frame as called from h1 */

/* Calls the walker itself, n bytes of alloca below its frame pointer: the walk's start is
 * this function's call site, and its first rule reads the RBP the walk starts with. fill: the
 * words where its frame was when called from h1 (its saved RBP, its return address into h1)
 * made what they were then (as stale words on a stack would be). */
__attribute__((noinline, noipa)) static int h_leaf(int n, int fill, walk_fn fn, void **buf, int max)
{
    volatile uintptr_t *area = __builtin_alloca((size_t)n);
    const uintptr_t *fp = __builtin_frame_address(0);
    area[0] = 0;
    if (!fill) {
        h_fp = (uintptr_t)fp;
        h_saved_rbp = fp[0];
        h_ra = fp[1];
    } else if (h_fp >= (uintptr_t)area && h_fp + 16 <= (uintptr_t)area + (uintptr_t)n) {
        area[(h_fp - (uintptr_t)area) / 8] = h_saved_rbp;
        area[(h_fp - (uintptr_t)area) / 8 + 1] = h_ra;
    }
    int r = fn(buf, max);
    sink_fp += r + (int)(area[0] & 1);
    return r;
}

__attribute__((noinline, noipa)) static int h1(int m, int fill, walk_fn fn, void **buf, int max)
{
    volatile char *area = __builtin_alloca((size_t)m);
    area[0] = 1;
    int r = h_leaf(RBP_MOVES_SPAN - m, fill, fn, buf, max);
    sink_fp += area[0];
    return r;
}

__attribute__((noinline, noipa)) static int h2(int m, int fill, walk_fn fn, void **buf, int max)
{
    volatile char *area = __builtin_alloca((size_t)m);
    area[0] = 2;
    int r = h_leaf(RBP_MOVES_SPAN - m, fill, fn, buf, max);
    sink_fp -= area[0];
    return r;
}

int rbp0_moves(int which, walk_fn fn, void **buf, int max)
{
    /* One call site for both, and the same stack pointer at it: h1's and h2's frames begin
     * at one address, and so have the same RBP. */
    static int (*const hs[2])(int, int, walk_fn, void **, int) = {h1, h2};
    int (*volatile h)(int, int, walk_fn, void **, int) = hs[which != 0];
    int m = which ? 16 : RBP_MOVES_SPAN - 16;
    int r = h(m, which, fn, buf, max);
    sink_fp += r;
    return r;
}

/* twin_starts's frames (below). */
__attribute__((used)) static volatile uintptr_t twin_sp_seen;

/* twin_leaf(site, pad, shift, fn, buf, max): calls fn(buf, max) from one of two call sites
 * (site), pad bytes (rounded up to 16) of alloca below its frame (RBP-based CFA). shift: the
 * TWIN_COPY bytes from its frame pointer up (its frame, its callers') copied shift bytes lower
 * first, into the alloca. In assembly so that the call sites' return addresses are known:
 * 3 and 8 bytes into a 16-byte aligned block (they differ in the bits 0xb). */
int twin_leaf(int site, int pad, int shift, walk_fn fn, void **buf, int max);
_Static_assert(TWIN_COPY == 64 * 8, "twin_leaf copies 64 words");
__asm__(".text\n"
        ".globl twin_leaf\n"
        ".type twin_leaf,@function\n"
        "twin_leaf:\n"
        ".cfi_startproc\n"
        "push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "mov %rsp, %rbp\n"
        ".cfi_def_cfa_register %rbp\n"
        "push %rbx\n"
        ".cfi_offset %rbx, -24\n"
        "push %r12\n"
        ".cfi_offset %r12, -32\n"
        "mov %edi, %ebx\n"
        "mov %rcx, %r12\n"
        "movslq %esi, %rsi\n"
        "add $15, %rsi\n"
        "and $-16, %rsi\n"
        "sub %rsi, %rsp\n"
        "test %edx, %edx\n"
        "jz 2f\n"
        "movslq %edx, %rdx\n"
        "mov %rbp, %rax\n"
        "mov %rbp, %rcx\n"
        "sub %rdx, %rcx\n"
        "mov $64, %r10d\n" /* TWIN_COPY / 8 */
        "1:\n"
        "mov (%rax), %r11\n"
        "mov %r11, (%rcx)\n"
        "add $8, %rax\n"
        "add $8, %rcx\n"
        "dec %r10d\n"
        "jnz 1b\n"
        "2:\n"
        "mov %rsp, twin_sp_seen(%rip)\n"
        "mov %r8, %rdi\n"
        "mov %r9d, %esi\n"
        "test %ebx, %ebx\n"
        "jnz 3f\n"
        ".p2align 4\n"
        "call *%r12\n" /* 3 bytes: returns to 3 */
        "jmp 4f\n"     /* 2 bytes */
        "3:\n"
        "call *%r12\n" /* at 5: returns to 8 */
        "4:\n"
        "lea -16(%rbp), %rsp\n"
        "pop %r12\n"
        "pop %rbx\n"
        "pop %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size twin_leaf, .-twin_leaf\n");

int twin_starts(int site, int pad, int shift, walk_fn fn, void **buf, int max)
{
    int r = twin_leaf(site, pad, shift, fn, buf, max);
    sink_fp += r;
    return r;
}

uintptr_t twin_sp(void)
{
    return twin_sp_seen;
}
