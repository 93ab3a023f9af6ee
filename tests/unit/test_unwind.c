/* test_unwind.c - gmt_unwind (core/unwind.h) against libunwind's unw_backtrace called from the
 * same place: the same frames, and the fast walk taken wherever it can be (the fallback
 * counter does not move), the fallback wherever it cannot. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "core/unwind.h"
#include "unwind_frames.h"

#define NMAX GMT_UNWIND_MAX

static volatile int sink;

__attribute__((noinline, visibility("default"))) int walk_at(walk_fn fn, void **buf, int max)
{
    int n = fn(buf, max);
    sink += n; /* not a tail call: the call site is this function's */
    return n;
}

static uint64_t fallbacks(void)
{
    gmt_unwind_stats_t s;
    gmt_unwind_stats(&s);
    return s.fallbacks;
}

typedef int (*shape_fn)(int arg, walk_fn fn, void **buf, int max);

/* Both walkers, called from one call site (a loop the compiler cannot unroll: its counter is
 * volatile), so that every frame above them is the same. */
static walk_fn const walkers[2] = {gmt_unwind, unw_backtrace};

/* Walks by both from the same frames; the entry counts and entries must be equal. */
static void same_walk(shape_fn shape, int arg, int max)
{
    void *buf[2][NMAX];
    int nr[2];
    memset(buf, 0, sizeof buf);
    for (volatile int k = 0; k < 2; k++)
        nr[k] = shape(arg, walkers[k], buf[k], max);
    void **a = buf[0], **b = buf[1];
    int na = nr[0], nb = nr[1];
    if (na != nb)
        print_message("shape arg %d max %d: gmt %d frames, libunwind %d\n", arg, max, na, nb);
    for (int i = 0; i < na && i < nb; i++)
        if (a[i] != b[i]) print_message("frame %d: gmt %p, libunwind %p\n", i, a[i], b[i]);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, (size_t)na * sizeof a[0]);
    assert_true(na > 0);
}

static int setup(void **state)
{
    (void)state;
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    gmt_unwind_init(0);
    return 0;
}

static void test_recursion_fp(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    const int depths[] = {0, 5, 40, 200};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++)
        for (int round = 0; round < 2; round++) /* the second walk hits the cache */
            same_walk(rec_fp, depths[i], NMAX);
    assert_int_equal(fallbacks(), f0);
}

static void test_recursion_nofp(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    const int depths[] = {0, 5, 40, 200};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++)
        for (int round = 0; round < 2; round++)
            same_walk(rec_nofp, depths[i], NMAX);
    assert_int_equal(fallbacks(), f0);
}

static void test_vla(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    same_walk(vla_nofp, 40, NMAX);
    same_walk(vla_nofp, 3000, NMAX);
    assert_int_equal(fallbacks(), f0);
}

static int mixed(int depth, walk_fn fn, void **buf, int max)
{
    /* nofp -> fp -> nofp: frames of both kinds in one walk */
    (void)depth;
    return rec_nofp(3, fn, buf, max) + 0 * rec_fp(0, fn, buf, max);
}

/* A walk truncated by max returns the first max frames, as unw_backtrace does. */
static void test_truncated(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    const int maxes[] = {1, 2, 5, 10, 41};
    for (size_t i = 0; i < sizeof maxes / sizeof maxes[0]; i++) {
        same_walk(rec_fp, 40, maxes[i]);
        same_walk(rec_nofp, 40, maxes[i]);
    }
    same_walk(mixed, 0, NMAX);
    assert_int_equal(fallbacks(), f0);
    void *a[4];
    assert_int_equal(gmt_unwind(a, 0), 0);
    assert_int_equal(gmt_unwind(a, -1), 0);
}

/* Frames inside libc: the walk starts in a qsort comparator. */
static void *cmp_buf[2][NMAX];
static int cmp_n[2] = {-1, -1};
#define cmp_a  cmp_buf[0]
#define cmp_b  cmp_buf[1]
#define cmp_na cmp_n[0]
#define cmp_nb cmp_n[1]

static int comparator(const void *x, const void *y)
{
    if (cmp_na < 0)
        for (volatile int k = 0; k < 2; k++)
            cmp_n[k] = rec_nofp(2, walkers[k], cmp_buf[k], NMAX);
    return *(const int *)x - *(const int *)y;
}

static void test_libc_frames(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    for (int round = 0; round < 2; round++) {
        int v[64];
        for (int i = 0; i < 64; i++)
            v[i] = (i * 37) % 64;
        cmp_na = cmp_nb = -1;
        qsort(v, 64, sizeof v[0], comparator);
        assert_int_equal(cmp_na, cmp_nb);
        assert_memory_equal(cmp_a, cmp_b, (size_t)cmp_na * sizeof cmp_a[0]);
        assert_true(cmp_na > 6);
    }
    assert_int_equal(fallbacks(), f0);
}

/* From a signal handler: libunwind steps through the kernel's signal frame (__restore_rt,
 * an 'S' CIE), the fast walk gives up there and returns libunwind's answer. */
static void *sig_buf[2][NMAX];
static volatile int sig_n[2];
#define sig_a  sig_buf[0]
#define sig_b  sig_buf[1]
#define sig_na sig_n[0]
#define sig_nb sig_n[1]

static void handler(int sig)
{
    (void)sig;
    for (volatile int k = 0; k < 2; k++)
        sig_n[k] = rec_fp(3, walkers[k], sig_buf[k], NMAX);
}

static void test_signal_handler(void **state)
{
    (void)state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    uint64_t f0 = fallbacks();
    for (int round = 0; round < 2; round++) {
        sig_na = sig_nb = -1;
        raise(SIGUSR1);
        assert_int_equal(sig_na, sig_nb);
        assert_memory_equal(sig_a, sig_b, (size_t)sig_na * sizeof sig_a[0]);
        assert_true(sig_na > 6); /* through the signal frame into this test */
    }
    assert_true(fallbacks() >= f0 + 2);
    sigaction(SIGUSR1, &old, NULL);
}

/* A frame whose CFA is a DWARF expression (hand-written CFI): not the compact rule. */
int expr_frame(walk_fn fn, void **buf, int max);
__asm__(".text\n"
        ".globl expr_frame\n"
        ".type expr_frame,@function\n"
        "expr_frame:\n"
        ".cfi_startproc\n"
        "push %rbp\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -16\n"
        "mov %rsp, %rbp\n"
        ".cfi_escape 0x0f, 0x02, 0x76, 0x10\n" /* DW_CFA_def_cfa_expression: DW_OP_breg6 16 */
        "call walk_at@PLT\n"
        "pop %rbp\n"
        ".cfi_def_cfa %rsp, 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size expr_frame, .-expr_frame\n");

/* same_walk's caller for a hand-written frame: call is that frame's function, given the walk;
 * its result kept (sink) so that the call is not a tail call and the caller's frame stays. */
#define VIA_FRAME(name, call)                                                                      \
    static int name(int arg, walk_fn fn, void **buf, int max)                                      \
    {                                                                                              \
        (void)arg;                                                                                 \
        int n = call;                                                                              \
        sink += n;                                                                                 \
        return n;                                                                                  \
    }

VIA_FRAME(via_expr, expr_frame(fn, buf, max))

static void test_unsupported_frame_falls_back(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    same_walk(via_expr, 0, NMAX);
    uint64_t f1 = fallbacks();
    assert_int_equal(f1, f0 + 1);
    same_walk(via_expr, 0, NMAX); /* cached as unsupported: straight to the fallback */
    assert_int_equal(fallbacks(), f1 + 1);
    /* Truncated before the unsupported frame: nothing to fall back for. */
    same_walk(via_expr, 0, 2);
    assert_int_equal(fallbacks(), f1 + 1);
}

/* Frames whose CFI is wrong (hand-written, and lying): a rule the fast walk could follow but
 * must not, since the frame it gives is not one. Each walk is handed to libunwind, whose
 * answer is returned (the fallback counter moves), where following the rule would give a
 * wrong stack or read memory that is not the stack. */

/* Its CFA is RBP + 16 with RBP set to 16 below the stack pointer at the call: the CFA is the
 * callee's own, the frame its own caller. Followed, the walk would repeat this frame up to
 * max. */
int flat_cfa_frame(walk_fn fn, void **buf, int max);
__asm__(".text\n"
        ".globl flat_cfa_frame\n"
        ".type flat_cfa_frame,@function\n"
        "flat_cfa_frame:\n"
        ".cfi_startproc\n"
        "push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbx, -16\n"
        "mov %rbp, %rbx\n"
        "lea -16(%rsp), %rbp\n"
        ".cfi_def_cfa %rbp, 16\n"
        "call walk_at@PLT\n"
        "mov %rbx, %rbp\n"
        ".cfi_def_cfa %rsp, 16\n"
        "pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size flat_cfa_frame, .-flat_cfa_frame\n");

/* Its CFA is RBP + 16 with RBP set to far (the fourth argument). */
int far_cfa_frame(walk_fn fn, void **buf, int max, uintptr_t far);
__asm__(".text\n"
        ".globl far_cfa_frame\n"
        ".type far_cfa_frame,@function\n"
        "far_cfa_frame:\n"
        ".cfi_startproc\n"
        "push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbx, -16\n"
        "mov %rbp, %rbx\n"
        "mov %rcx, %rbp\n"
        ".cfi_def_cfa %rbp, 16\n"
        "call walk_at@PLT\n"
        "mov %rbx, %rbp\n"
        ".cfi_def_cfa %rsp, 16\n"
        "pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size far_cfa_frame, .-far_cfa_frame\n");

/* Its CFA is right, but RBP is said to be saved at CFA - 40: 24 bytes below the stack pointer
 * at the call, in the callee's frames (a word the callee wrote, not this frame's RBP). */
int low_rbp_frame(walk_fn fn, void **buf, int max);
__asm__(".text\n"
        ".globl low_rbp_frame\n"
        ".type low_rbp_frame,@function\n"
        "low_rbp_frame:\n"
        ".cfi_startproc\n"
        "push %rbx\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset %rbp, -40\n"
        "call walk_at@PLT\n"
        "pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size low_rbp_frame, .-low_rbp_frame\n");

/* Its return address is said to be ra (the fourth argument, pushed): CFA = RSP + 8 after the
 * push. */
int fake_ra_frame(walk_fn fn, void **buf, int max, uintptr_t ra);
__asm__(".text\n"
        ".globl fake_ra_frame\n"
        ".type fake_ra_frame,@function\n"
        "fake_ra_frame:\n"
        ".cfi_startproc\n"
        "push %rcx\n"
        ".cfi_def_cfa_offset 8\n"
        "call walk_at@PLT\n"
        "pop %rcx\n"
        "ret\n"
        ".cfi_endproc\n"
        ".size fake_ra_frame, .-fake_ra_frame\n");

VIA_FRAME(via_flat_cfa, flat_cfa_frame(fn, buf, max))

static uintptr_t far_rbp;

VIA_FRAME(via_far_cfa, far_cfa_frame(fn, buf, max, far_rbp))

VIA_FRAME(via_low_rbp, low_rbp_frame(fn, buf, max))

VIA_FRAME(via_fake_ra, fake_ra_frame(fn, buf, max, (uintptr_t)arg)) /* arg: the return address */

/* A CFA no higher than the stack pointer it was computed from: no frame, and a walk that
 * followed it would not climb (here it would repeat one frame to the end of buf). libunwind
 * stops there. */
static void test_cfa_that_does_not_climb_falls_back(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    same_walk(via_flat_cfa, 0, 8);
    same_walk(via_flat_cfa, 0, NMAX);
    assert_int_equal(fallbacks(), f0 + 2);
}

/* The walks of both from one call site (as same_walk's) on far_cfa_thread, for the main
 * thread to check. */
typedef struct far_walks_s {
    void *buf[2][2][NMAX]; /* by max (NMAX, 3), then walker */
    int n[2][2];
    uint64_t fallbacks;
    int errno_after;
} far_walks_t;

static void *far_cfa_thread(void *arg)
{
    far_walks_t *r = arg;
    uint64_t f0 = fallbacks();
    for (volatile int m = 0; m < 2; m++)
        for (volatile int k = 0; k < 2; k++) {
            errno = EDOM;
            r->n[m][k] = via_far_cfa(0, walkers[k], r->buf[m][k], m ? 3 : NMAX);
            if (m == 1 && k == 0) r->errno_after = errno;
        }
    r->fallbacks = fallbacks() - f0;
    return NULL;
}

/* A CFA more than the stack's span above where the walk started: RBP holds no frame address
 * (here it points into a page that cannot be read, 48 MiB above the thread's stack). The
 * walk does not read there; libunwind checks the address and stops. On a thread whose stack
 * lies at the bottom of a mapping of ours, so that the page is known to lie above it. */
static void test_cfa_far_above_the_stack_falls_back(void **state)
{
    (void)state;
    const size_t size = 64u << 20, stack = 1u << 20;
    char *map = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    assert_true(map != MAP_FAILED);
    assert_int_equal(mprotect(map, stack, PROT_READ | PROT_WRITE), 0);
    far_rbp = (uintptr_t)(map + (48u << 20));
    pthread_attr_t attr;
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstack(&attr, map, stack), 0);
    static far_walks_t r;
    memset(&r, 0, sizeof r);
    pthread_t t;
    assert_int_equal(pthread_create(&t, &attr, far_cfa_thread, &r), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    munmap(map, size);
    for (int m = 0; m < 2; m++) {
        assert_int_equal(r.n[m][0], r.n[m][1]);
        assert_true(r.n[m][0] >= 2); /* this frame's callee's and this frame's */
        assert_memory_equal(r.buf[m][0], r.buf[m][1], (size_t)r.n[m][0] * sizeof(void *));
    }
    assert_int_equal(r.fallbacks, 2);
    assert_int_equal(r.errno_after, EDOM); /* the fallback leaves the program's errno */
}

/* RBP saved below the stack pointer the frame's walk step starts from: that word is the
 * callee's (and may have been written over since), not the frame's. Walked up to the next
 * frame only (before any rule uses the RBP read): the same frames either way, and the walk is
 * libunwind's. */
static void test_saved_rbp_below_the_stack_falls_back(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    same_walk(via_low_rbp, 0, 3);
    assert_int_equal(fallbacks(), f0 + 1);
}

/* A return address that cannot be code (below 0x4000: 0, the end of a stack that no CFI
 * marks; a small integer in a wrong slot): not a frame. With max ending the walk at it, the
 * walk gives up there, and libunwind leaves it out. One in 0x4000..0x7fff (a rule cache word
 * that is empty reads as a rule there, R_EMPTY): not the end of the stack; libunwind goes on
 * from it by the frame pointer. */
static void test_return_address_not_code_falls_back(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    same_walk(via_fake_ra, 0, 3);
    same_walk(via_fake_ra, 0x1000, 3);
    assert_int_equal(fallbacks(), f0 + 2);
    gmt_unwind_flush(); /* 0x4fff's cache word empty */
    same_walk(via_fake_ra, 0x5000, NMAX);
    assert_int_equal(fallbacks(), f0 + 3);
}

/* Hits look nothing up; a flush makes the next walk look its frames up again. */
static void test_cache_and_flush(void **state)
{
    (void)state;
    gmt_unwind_stats_t st[3];
    for (volatile int k = 0; k < 3; k++) { /* one call site: the same frames each time */
        if (k == 2) gmt_unwind_flush();
        same_walk(rec_nofp, 10, NMAX);
        gmt_unwind_stats(&st[k]);
    }
    assert_int_equal(st[1].misses, st[0].misses); /* all hits */
    assert_true(st[2].misses >= st[1].misses + 10);
    assert_int_equal(st[2].flushes, st[1].flushes + 1);
    gmt_unwind_check_modules(); /* nothing unloaded: no flush */
    gmt_unwind_stats(&st[0]);
    assert_int_equal(st[0].flushes, st[2].flushes);
}

/* An object unloaded: the next check empties the cache (its rules could name new code). */
static void test_unload_flushes(void **state)
{
    (void)state;
    gmt_unwind_check_modules(); /* the current unload count is the one seen */
    gmt_unwind_stats_t s0, s1;
    gmt_unwind_stats(&s0);
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h) { /* already loaded: closing it would not unload it */
        dlclose(h);
        skip();
    }
    h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) skip();
    same_walk(rec_fp, 3, NMAX);
    assert_int_equal(dlclose(h), 0);
    gmt_unwind_check_modules();
    gmt_unwind_stats(&s1);
    assert_int_equal(s1.flushes, s0.flushes + 1);
    same_walk(rec_fp, 3, NMAX); /* looked up again, same frames */
}

/* force_libunwind: every walk is unw_backtrace's. */
static void test_forced_libunwind(void **state)
{
    (void)state;
    gmt_unwind_init(1);
    uint64_t f0 = fallbacks();
    same_walk(rec_fp, 5, NMAX);
    assert_int_equal(fallbacks(), f0 + 1);
    gmt_unwind_init(0);
    same_walk(rec_fp, 5, NMAX);
    assert_int_equal(fallbacks(), f0 + 1);
}

#define NTHREADS 4
static void *thread_main(void *arg)
{
    intptr_t id = (intptr_t)arg;
    void *buf[2][NMAX], **a = buf[0], **b = buf[1];
    for (int i = 0; i < 300; i++) {
        int depth = (int)((i * 7 + id * 13) % 60);
        int max = i % 5 == 0 ? 3 + i % 17 : NMAX;
        int nr[2];
        for (volatile int k = 0; k < 2; k++)
            nr[k] = i % 2 ? rec_fp(depth, walkers[k], buf[k], max)
                          : rec_nofp(depth, walkers[k], buf[k], max);
        int na = nr[0], nb = nr[1];
        if (na != nb || memcmp(a, b, (size_t)na * sizeof a[0]) != 0) return (void *)1;
        if (i == 150 && id == 0) gmt_unwind_flush(); /* while the others walk */
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    uint64_t f0 = fallbacks();
    pthread_t t[NTHREADS];
    for (intptr_t i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_main, (void *)i), 0);
    for (int i = 0; i < NTHREADS; i++) {
        void *r;
        assert_int_equal(pthread_join(t[i], &r), 0);
        assert_null(r);
    }
    assert_int_equal(fallbacks(), f0);
}

static uint64_t misses(void)
{
    gmt_unwind_stats_t s;
    gmt_unwind_stats(&s);
    return s.misses;
}

/* Two code addresses of one stack that share a home slot both stay cached (two ways): a walk
 * through both misses once each, not at every walk. A third address on the same pair of slots
 * evicts one of them, and both of the others are still found or looked up again correctly. */
static void test_colliding_addresses_both_cached(void **state)
{
    (void)state;
    gmt_unwind_flush();
    uint64_t a1 = (uint64_t)(uintptr_t)&qsort + 16, a2 = 0, a3 = 0;
    uint32_t home = gmt_unwind_home_slot(a1);
    for (uint64_t d = 1; d < (1u << 24) && !(a2 && a3); d++) {
        uint64_t c = a1 + d;
        Dl_info di;
        if (gmt_unwind_home_slot(c) != home) continue;
        if (!dladdr((void *)(uintptr_t)c, &di) || !di.dli_fname) continue;
        if (!a2)
            a2 = c;
        else
            a3 = c;
    }
    assert_true(a2 && a3);
    uint32_t r1 = gmt_unwind_rule_probe(a1), r2 = gmt_unwind_rule_probe(a2);
    uint64_t m = misses();
    for (int i = 0; i < 10; i++) {
        assert_int_equal(gmt_unwind_rule_probe(a1), r1);
        assert_int_equal(gmt_unwind_rule_probe(a2), r2);
    }
    assert_int_equal(misses(), m); /* both cached */
    uint32_t r3 = gmt_unwind_rule_probe(a3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(gmt_unwind_rule_probe(a1), r1);
        assert_int_equal(gmt_unwind_rule_probe(a2), r2);
        assert_int_equal(gmt_unwind_rule_probe(a3), r3);
    }
}

/* ---- the replay of a thread's last walk (unwind.c) ---------------------------------------- */

static uint64_t replays(void)
{
    gmt_unwind_stats_t s;
    gmt_unwind_stats(&s);
    return s.replays;
}

/* Walks from one call site again and again are replayed, and equal libunwind's each time, with
 * and without frame pointers (RBP-based rules read saved RBPs), up to the remembered depth. */
static void test_replay_same_frames(void **state)
{
    (void)state;
    const int maxes[] = {8, 48, 64};
    for (size_t m = 0; m < sizeof maxes / sizeof maxes[0]; m++) {
        uint64_t r0 = replays();
        for (volatile int k = 0; k < 4; k++)
            same_walk(rec_nofp, 10, maxes[m]);
        uint64_t r1 = replays();
        for (volatile int k = 0; k < 4; k++)
            same_walk(rec_fp, 10, maxes[m]);
        uint64_t r2 = replays();
        assert_true(r1 - r0 >= 3);
        assert_true(r2 - r1 >= 3);
    }
    /* VLAs of different sizes move every frame below: a different start, walked afresh. */
    for (volatile int k = 0; k < 6; k++)
        same_walk(vla_nofp, 40 + k % 2, 48);
}

/* A frame above the start that moved while the start stayed (its caller's and its own alloca
 * sizes traded): the saved RBP that locates its return address differs, and the word where
 * that address lay before holds the old caller's address again (a stale stack word). A replay
 * checks the saved RBPs the walk used, so it does not hand out the old caller (e1) for the new
 * one (e2). */
static void test_replay_checks_saved_rbps(void **state)
{
    (void)state;
    /* One call site of same_walk throughout (the frames above it are the same). */
    uint64_t r0 = replays();
    for (volatile int k = 0; k < 10; k++)
        same_walk(rbp_moves, k >= 3 && (k & 1), 48); /* e1 three times, then e2 and e1 in turn */
    /* e1's second and third walks were replays (so is each later walk of a way kept for it). */
    assert_true(replays() - r0 >= 2);
}

/* Two callers with the same frame layout reach one function from one call site: the walks
 * start at the same return address and stack pointer and differ one frame up. A replay must
 * not hand one caller the other's frames. */
#if defined(__clang__)
#define SHAPE_ATTR __attribute__((noinline))
#else
#define SHAPE_ATTR __attribute__((noinline, noipa))
#endif
SHAPE_ATTR static int common_leaf(void **buf, int max)
{
    int n = gmt_unwind(buf, max);
    sink += n;
    return n;
}

SHAPE_ATTR static int caller_a(void **buf, int max)
{
    int n = common_leaf(buf, max);
    sink += n;
    return n;
}

SHAPE_ATTR static int caller_b(void **buf, int max)
{
    int n = common_leaf(buf, max);
    sink -= n;
    return n;
}

/* Four more callers of the same shape: six call paths through one start. */
SHAPE_ATTR static int caller_c(void **buf, int max)
{
    int n = common_leaf(buf, max);
    sink ^= n;
    return n;
}

SHAPE_ATTR static int caller_d(void **buf, int max)
{
    int n = common_leaf(buf, max);
    sink += 3 * n;
    return n;
}

SHAPE_ATTR static int caller_e(void **buf, int max)
{
    int n = common_leaf(buf, max);
    sink -= 5 * n;
    return n;
}

SHAPE_ATTR static int caller_f(void **buf, int max)
{
    int n = common_leaf(buf, max);
    sink |= n;
    return n;
}

static void test_replay_tells_callers_apart(void **state)
{
    (void)state;
    int (*const callers[2])(void **, int) = {caller_a, caller_b};
    void *buf[6][48];
    int n[6];
    memset(buf, 0, sizeof buf);
    gmt_unwind_stats_t s0, s1;
    gmt_unwind_stats(&s0);
    /* a b a b: each starts where the last did. The place's set keeps a walk for each caller:
     * the first a and b are walked (the second's start is held, with other frames), the
     * second a and b replayed, each checked against its own caller's words. */
    for (volatile int k = 0; k < 4; k++)
        n[k] = callers[k % 2](buf[k], 48);
    gmt_unwind_stats(&s1);
    assert_int_equal(s1.replays, s0.replays + 2);
    assert_true(s1.missed_other >= s0.missed_other + 1);
    assert_int_equal(s1.missed_new + s1.missed_other, s0.missed_new + s0.missed_other + 2);
    uint64_t r0 = replays();
    for (volatile int k = 4; k < 6; k++) /* b b from another call site: the second replays */
        n[k] = callers[1](buf[k], 48);
    assert_int_equal(replays(), r0 + 1);
    assert_true(n[0] > 2 && n[0] == n[1] && n[0] == n[2] && n[1] == n[3]);
    assert_ptr_equal(buf[0][0], buf[1][0]);     /* the same return address into common_leaf */
    assert_ptr_not_equal(buf[0][1], buf[1][1]); /* into caller_a, into caller_b */
    assert_memory_equal(buf[0], buf[2], (size_t)n[0] * sizeof(void *));
    assert_memory_equal(buf[1], buf[3], (size_t)n[1] * sizeof(void *));
    assert_memory_equal(buf[1], buf[4], 2 * sizeof(void *)); /* another call site above */
    assert_memory_equal(buf[4], buf[5], (size_t)n[4] * sizeof(void *));
    /* Each return address lies in its own caller: the nearer of the two function starts
     * below it is that caller's (unsigned differences: a start above it is far). */
    uintptr_t ra = (uintptr_t)buf[0][1], rb = (uintptr_t)buf[1][1];
    uintptr_t fa = (uintptr_t)caller_a, fb = (uintptr_t)caller_b;
    assert_true(ra - fa < ra - fb);
    assert_true(rb - fb < rb - fa);
}

/* A start walked under new settings (a capture's depth learnt after its first walk, the rule
 * cache flushed): its walk takes the way of the start's walk under the old settings, which no
 * later capture asks for, instead of another of the set's ways (they tell the start's callers
 * apart), and a replay no longer checks the stale way first. On a thread of its own, so that
 * its walks begin from an empty memo; every walk from one call site below. */
static void *stale_way_thread(void *arg)
{
    int (*const callers[2])(void **, int) = {caller_a, caller_b};
    /* (caller, depth) in turn */
    static const int seq[6][2] = {{0, 40}, {0, 48}, {0, 48}, {1, 48}, {0, 48}, {1, 48}};
    void *buf[48];
    uint64_t *out = arg;
    gmt_unwind_stats_t s0, s1;
    gmt_unwind_stats(&s0);
    for (volatile int k = 0; k < 6; k++) {
        callers[seq[k][0]](buf, seq[k][1]);
        out[k] = gmt_unwind_test_ways_held();
    }
    gmt_unwind_stats(&s1);
    out[6] = s1.replays - s0.replays;
    return NULL;
}

/* fn(arg) on a thread of its own, to its end: a thread whose remembered walks are only the
 * test's. */
static void on_a_thread(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, fn, arg), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
}

static void test_replay_stale_way_reused(void **state)
{
    (void)state;
    uint64_t out[7];
    on_a_thread(stale_way_thread, out);
    /* the walks of the thread's own start-up (its entry point's) hold none: it walks nothing
     * but these */
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 1); /* a at 48 over a at 40 */
    assert_int_equal(out[2], 1); /* a at 48 replayed */
    assert_int_equal(out[3], 2); /* b beside a */
    assert_int_equal(out[5], 2);
    assert_int_equal(out[6], 3); /* a, a, b */
}

/* Six call paths through one start in turn (an allocator's frame under each of a model's
 * operators): more than one set's four ways hold. The start's walks spill into its second set,
 * so from the second round on every walk replays; with one set of four ways written in turn
 * (sessions 10-13) each new walk gave up the one needed next and none replayed. On a thread of
 * its own: its memo starts empty. */
static void *six_callers_thread(void *arg)
{
    int (*const callers[6])(void **, int) = {caller_a, caller_b, caller_c,
                                             caller_d, caller_e, caller_f};
    void *buf[3][6][48];
    int n[3][6];
    uint64_t *out = arg;
    gmt_unwind_stats_t s0, s1;
    gmt_unwind_stats(&s0);
    for (volatile int r = 0; r < 3; r++)
        for (volatile int k = 0; k < 6; k++)
            n[r][k] = callers[k](buf[r][k], 48);
    gmt_unwind_stats(&s1);
    out[0] = s1.replays - s0.replays;
    out[1] = 1; /* every round's walks equal the first's, each its own caller's */
    for (int r = 1; r < 3; r++)
        for (int k = 0; k < 6; k++)
            if (n[r][k] != n[0][k] || n[0][k] < 3 ||
                memcmp(buf[r][k], buf[0][k], (size_t)n[0][k] * sizeof(void *)) != 0)
                out[1] = 0;
    for (int k = 1; k < 6; k++)
        if (buf[0][k][1] == buf[0][0][1]) out[1] = 0; /* the callers' return addresses differ */
    return NULL;
}

static void test_replay_six_callers_of_one_start(void **state)
{
    (void)state;
    uint64_t out[2];
    on_a_thread(six_callers_thread, out);
    assert_int_equal(out[0], 12);
    assert_int_equal(out[1], 1);
}

/* Walks from places at other depths in turn (a model's call sites, each allocating in turn):
 * each is remembered in its own way and replayed, equal to libunwind's, where one remembered
 * walk would be written over every time. Two places share a way by their hash rarely (1 in
 * 64): of four pairs, three must replay. */
static void test_replay_places_in_turn(void **state)
{
    (void)state;
    int pairs_replayed = 0;
    for (int d = 2; d < 6; d++) {
        uint64_t r0 = replays();
        for (volatile int k = 0; k < 10; k++)
            same_walk(rec_nofp, 3 * d + (k & 1), 48);
        if (replays() - r0 >= 8) pairs_replayed++;
    }
    assert_true(pairs_replayed >= 3);
}

/* gmt_unwind_stop_at: a walk ends at the first frame in the range, that frame included; other
 * walks go on; a walk remembered with one range is not replayed under another. */
static void test_stop_at(void **state)
{
    (void)state;
    void *full[48], *b[48], *s1[48], *s2[48], *after[48];
    int n_full = caller_a(full, 48);
    assert_true(n_full > 3);
    uintptr_t ra_a = (uintptr_t)full[1]; /* the return address into caller_a */
    gmt_unwind_stop_at(ra_a - 1, ra_a);
    int nb = caller_b(b, 48);
    int n1 = caller_a(s1, 48);
    uint64_t r0 = replays();
    int n2 = caller_a(s2, 48);
    assert_int_equal(replays(), r0 + 1); /* the stopped walk is replayed as it is */
    gmt_unwind_stop_at(0, 0);            /* the next walk starts where the last did */
    int n_after = caller_a(after, 48);
    assert_int_equal(n1, 2);
    assert_int_equal(n2, 2);
    assert_memory_equal(s1, full, 2 * sizeof(void *));
    assert_memory_equal(s2, full, 2 * sizeof(void *));
    assert_int_equal(nb, n_full);      /* caller_b's frame is not in the range */
    assert_int_equal(n_after, n_full); /* the range gone: not the short walk replayed */
    /* The same frames but the call site in this test (frame 2). */
    assert_memory_equal(after, full, 2 * sizeof(void *));
    assert_memory_equal(after + 3, full + 3, (size_t)(n_full - 3) * sizeof(void *));
}

/* A flush of the rule cache (an object unloaded) also ends the replay: the next walk is done
 * afresh. */
static void test_replay_after_flush(void **state)
{
    (void)state;
    uint64_t r[3];
    for (volatile int k = 0; k < 3; k++) {
        if (k == 2) gmt_unwind_flush();
        same_walk(rec_nofp, 5, 32);
        r[k] = replays();
    }
    assert_int_equal(r[1], r[0] + 1);
    assert_int_equal(r[2], r[1]);
}

/* A thread's slot is given back at its exit (a key destructor); a walk the thread makes after
 * that (another key's destructor, run later) must not use the slot, which another thread may
 * have claimed meanwhile: it walks afresh, not a replay. */
static pthread_key_t late_key;
static uint64_t late_replays_before, late_replays_after;
static int late_frames;

static void late_destructor(void *v)
{
    (void)v;
    void *buf[2][32];
    late_replays_before = replays();
    for (volatile int k = 0; k < 2; k++)
        late_frames += walk_at(gmt_unwind, buf[k], 32);
    late_replays_after = replays();
}

static void *late_thread(void *arg)
{
    (void)arg;
    void *buf[2][32];
    for (volatile int k = 0; k < 2; k++) /* claims a slot; the second walk replays */
        (void)walk_at(gmt_unwind, buf[k], 32);
    pthread_setspecific(late_key, (void *)1);
    return NULL;
}

static void test_replay_not_after_thread_exit(void **state)
{
    (void)state;
    /* Created after the unwinder's key (setup), so its destructor runs after the give-back. */
    assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
    uint64_t r0 = replays();
    on_a_thread(late_thread, NULL);
    assert_true(late_replays_before >= r0 + 1); /* the thread did replay while it lived */
    assert_true(late_frames > 2);
    assert_int_equal(late_replays_after, late_replays_before);
    pthread_key_delete(late_key);
}

/* As test_replay_checks_saved_rbps, with the frame that moves the one the walk starts in: its
 * RBP, which its rule's CFA is computed from, differs while the start (return address, stack
 * pointer) is the same, and the words where its RBP and return address lay before hold them
 * again. A replay checks the starting RBP when the walk used it, so it does not hand out the
 * old caller (h1) for the new one (h2). */
static void test_replay_checks_start_rbp(void **state)
{
    (void)state;
    uint64_t r0 = replays();
    for (volatile int k = 0; k < 10; k++)
        same_walk(rbp0_moves, k >= 3 && (k & 1), 48); /* h1 three times, then h2 and h1 */
    assert_true(replays() - r0 >= 2);
}

/* Two starts whose hashes are equal: twin_leaf's two call sites, their return addresses r0
 * and r1 differing in the bits d, at stack pointers differing (by XOR) in d shifted up by 11
 * (the hash mixes the stack pointer shifted down by 4 with the address shifted up by 7). The
 * second walk finds the first's way under its key, and every word that walk read lies, at
 * the second walk's stack pointer, where the first's lay (twin_leaf copies them there): a
 * replay that checked only the words would hand out the first call site for the second. The
 * way is not the second start's (missed_other counts it), and its walk is done afresh. On a
 * thread of its own: its memo starts empty. */
static void *twin_thread(void *arg)
{
    uintptr_t *out = arg; /* 0: r0, 1: r1, 2: the second walk's first frame, 3..: below */
    static void *buf[5][8];
    int n[5], pad[5] = {64, 64, 0, 0, 0}, shift[5] = {0};
    uintptr_t sp = 0;
    gmt_unwind_stats_t s0, s1;
    /* Every call from one call site (so that twin_leaf's frame is where it was): the call
     * sites' return addresses and the stack pointer at pad 64 (libunwind's walks), the first
     * call site's walk, the second's, and libunwind's from there. */
    for (volatile int k = 0; k < 5; k++) {
        if (k == 2) {
            uintptr_t d = (uintptr_t)buf[0][0] ^ (uintptr_t)buf[1][0], m = d << 11;
            out[0] = (uintptr_t)buf[0][0], out[1] = (uintptr_t)buf[1][0];
            if (d == 0 || d >= 256) return NULL; /* not twin_leaf's two call sites */
            /* The first walk's stack pointer: below the one at pad 64, with the bits of m set
             * (so that the second's is m lower); twin_leaf's alloca moves it by the pad. */
            uintptr_t sp0 = (sp - 256) & ~(uintptr_t)15;
            while ((sp0 & m) != m)
                sp0 -= 16;
            pad[2] = (int)(64 + sp - sp0);
            pad[3] = pad[4] = pad[2] + (int)m;
            shift[3] = shift[4] = (int)m;
        }
        if (k == 3) gmt_unwind_stats(&s0);
        n[k] = twin_starts(k == 1 || k > 2, pad[k], shift[k],
                           k == 2 || k == 3 ? gmt_unwind : unw_backtrace, buf[k], k < 2 ? 1 : 8);
        if (k == 0) sp = twin_sp();
        if (k == 3) gmt_unwind_stats(&s1);
    }
    out[2] = (uintptr_t)buf[3][0];
    out[3] = n[3] > 3 && n[3] == n[4] && memcmp(buf[3], buf[4], (size_t)n[3] * sizeof(void *)) == 0;
    out[4] = s1.missed_other - s0.missed_other;
    out[5] = s1.replays - s0.replays;
    return NULL;
}

static void test_replay_checks_start(void **state)
{
    (void)state;
    uintptr_t out[6] = {0};
    on_a_thread(twin_thread, out);
    assert_int_not_equal(out[0], out[1]);
    assert_int_equal(out[2], out[1]); /* the second call site's */
    assert_int_equal(out[3], 1);      /* libunwind's frames */
    assert_int_equal(out[4], 1);      /* the start's key was held: the hashes were equal */
    assert_int_equal(out[5], 0);
}

/* gmt_unwind_walk with the note of the walk kept (walk_fn's shape, for walk_at). */
static gmt_walk_note_t *last_note;

__attribute__((noinline)) static int walk_noted(void **buf, int max)
{
    int n = gmt_unwind_walk(buf, max, &last_note);
    sink += n;
    return n;
}

/* A walk asked for more frames than a remembered walk holds (64) is not remembered: written
 * into a way, its frames would run past the way into the next one. It has no note,
 * takes no way, and each walk is done afresh, equal to libunwind's. The same place walked at
 * a depth a way holds is remembered. On a thread of its own: its memo starts empty. */
static void *deep_walk_thread(void *arg)
{
    uint64_t *out = arg;
    void *buf[2][NMAX];
    int nr[2];
    uint64_t r0 = replays();
    out[0] = 0;
    for (volatile int round = 0; round < 2; round++) {
        for (volatile int k = 0; k < 2; k++)
            nr[k] = rec_nofp(80, k ? unw_backtrace : walk_noted, buf[k], NMAX);
        /* (walk_noted's frame first, then libunwind's) */
        if (last_note || nr[0] != nr[1] + 1 || nr[1] < 80 ||
            memcmp(buf[0] + 1, buf[1], (size_t)nr[1] * sizeof(void *)) != 0)
            out[0] = 1;
    }
    out[1] = gmt_unwind_test_ways_held();
    out[2] = replays() - r0;
    (void)rec_nofp(80, walk_noted, buf[0], 48);
    out[3] = last_note != NULL;
    out[4] = gmt_unwind_test_ways_held();
    return NULL;
}

static void test_deep_walk_not_remembered(void **state)
{
    (void)state;
    uint64_t out[5];
    on_a_thread(deep_walk_thread, out);
    assert_int_equal(out[0], 0); /* no note, and libunwind's frames */
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 0);
    assert_int_equal(out[3], 1); /* 48 deep: remembered */
    assert_int_equal(out[4], 1);
}

/* A larger max than GMT_UNWIND_MAX is taken as GMT_UNWIND_MAX, by the fast walk and by the
 * fallback (whose own buffer holds GMT_UNWIND_MAX frames and a few more): a stack deeper
 * than that gives GMT_UNWIND_MAX frames, libunwind's first ones. */
static void test_max_clamped(void **state)
{
    (void)state;
    static void *buf[2][GMT_UNWIND_MAX + 64];
    for (volatile int forced = 0; forced < 2; forced++) {
        gmt_unwind_init(forced);
        int nr[2];
        for (volatile int k = 0; k < 2; k++)
            nr[k] = rec_nofp(300, walkers[k], buf[k], k ? GMT_UNWIND_MAX : GMT_UNWIND_MAX + 64);
        assert_int_equal(nr[0], GMT_UNWIND_MAX);
        assert_int_equal(nr[1], GMT_UNWIND_MAX);
        assert_memory_equal(buf[0], buf[1], GMT_UNWIND_MAX * sizeof(void *));
    }
    gmt_unwind_init(0);
}

#if !defined(__SANITIZE_THREAD__) /* (the sanitizer's start-up calls dl_iterate_phdr) */
/* dl_iterate_phdr as this program's callers find it (the rule cache's look-ups, libunwind's):
 * the C library's, after the calling thread's hook, if one is set, has run (once). The hook
 * runs walks nested in the walk that looks a rule up, as a signal handler's walks would be
 * when the signal came then. */
static __thread void (*phdr_hook)(void);

int dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
    typedef int (*iterate_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
    static iterate_fn real;
    iterate_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (iterate_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
        __atomic_store_n(&real, f, __ATOMIC_RELEASE);
    }
    void (*hook)(void) = phdr_hook;
    if (hook) {
        phdr_hook = NULL;
        hook();
    }
    return f(cb, data);
}

VIA_FRAME(via_expr_noted, expr_frame(fn, buf, max))

static void *nested_buf[2][NMAX];
static int nested_n[2];
static gmt_walk_note_t *nested_note[2];
static uint64_t nested_fallbacks;

/* Two walks inside another: the first gives up (an unsupported frame), the second does not. */
static void nested_walks(void)
{
    uint64_t f0 = fallbacks();
    nested_n[0] = via_expr_noted(0, walk_noted, nested_buf[0], NMAX);
    nested_note[0] = last_note;
    nested_fallbacks = fallbacks() - f0;
    nested_n[1] = rec_nofp(3, walk_noted, nested_buf[1], 32);
    nested_note[1] = last_note;
}

/* A walk nested in another (a signal handler's) leaves the thread's remembered walks alone:
 * the outer walk may be writing one. It is not remembered (no note), nor is one nested in it
 * after another nested one gave up; the outer walk is, and replays. On a thread of its own,
 * with the rule cache emptied so that the outer walk looks its first rule up. */
static void *nested_walk_thread(void *arg)
{
    uint64_t *out = arg;
    void *buf[2][32];
    int n[2];
    gmt_walk_note_t *note[2];
    gmt_unwind_flush();
    uint64_t r0 = replays();
    for (volatile int k = 0; k < 2; k++) {
        if (k == 0) phdr_hook = nested_walks;
        n[k] = rec_nofp(2, walk_noted, buf[k], 32);
        note[k] = last_note;
    }
    phdr_hook = NULL;
    out[0] = nested_n[0] > 2 && nested_fallbacks == 1 && nested_n[1] > 5;
    out[1] = nested_note[0] == NULL;
    out[2] = nested_note[1] == NULL;
    out[3] = note[0] != NULL && note[1] == note[0];
    out[4] = replays() - r0;
    out[5] = n[0] > 5 && n[0] == n[1] && memcmp(buf[0], buf[1], (size_t)n[0] * sizeof(void *)) == 0;
    return NULL;
}

static void test_walk_nested_in_a_walk_not_remembered(void **state)
{
    (void)state;
    uint64_t out[6];
    on_a_thread(nested_walk_thread, out);
    assert_int_equal(out[0], 1); /* the nested walks were made */
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 1);
    assert_int_equal(out[3], 1);
    assert_int_equal(out[4], 1);
    assert_int_equal(out[5], 1);
}
#endif

int main(void)
{
#if defined(__SANITIZE_THREAD__)
    /* unw_backtrace's per-thread cache crashes at thread exit under TSan (stacks.c), and the
     * tracer walks with unw_step there, never with gmt_unwind. */
    return 0;
#endif
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_recursion_fp),
        cmocka_unit_test(test_recursion_nofp),
        cmocka_unit_test(test_vla),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_libc_frames),
        cmocka_unit_test(test_signal_handler),
        cmocka_unit_test(test_unsupported_frame_falls_back),
        cmocka_unit_test(test_cfa_that_does_not_climb_falls_back),
        cmocka_unit_test(test_cfa_far_above_the_stack_falls_back),
        cmocka_unit_test(test_saved_rbp_below_the_stack_falls_back),
        cmocka_unit_test(test_return_address_not_code_falls_back),
        cmocka_unit_test(test_max_clamped),
        cmocka_unit_test(test_cache_and_flush),
        cmocka_unit_test(test_unload_flushes),
        cmocka_unit_test(test_forced_libunwind),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_colliding_addresses_both_cached),
        cmocka_unit_test(test_replay_same_frames),
        cmocka_unit_test(test_replay_tells_callers_apart),
        cmocka_unit_test(test_replay_checks_saved_rbps),
        cmocka_unit_test(test_replay_checks_start_rbp),
        cmocka_unit_test(test_replay_checks_start),
        cmocka_unit_test(test_replay_six_callers_of_one_start),
        cmocka_unit_test(test_replay_stale_way_reused),
        cmocka_unit_test(test_stop_at),
        cmocka_unit_test(test_replay_places_in_turn),
        cmocka_unit_test(test_replay_after_flush),
        cmocka_unit_test(test_replay_not_after_thread_exit),
        cmocka_unit_test(test_deep_walk_not_remembered),
#if !defined(__SANITIZE_THREAD__)
        cmocka_unit_test(test_walk_nested_in_a_walk_not_remembered),
#endif
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
