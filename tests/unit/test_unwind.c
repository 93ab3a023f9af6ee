/* test_unwind.c - gmt_unwind (core/unwind.h) against libunwind's unw_backtrace called from the
 * same place: the same frames, and the fast walk taken wherever it can be (the fallback
 * counter does not move), the fallback wherever it cannot. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static int via_expr(int arg, walk_fn fn, void **buf, int max)
{
    (void)arg;
    int n = expr_frame(fn, buf, max);
    sink += n;
    return n;
}

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

static void test_replay_stale_way_reused(void **state)
{
    (void)state;
    uint64_t out[7];
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stale_way_thread, out), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
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
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, six_callers_thread, out), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
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
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, late_thread, NULL), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(late_replays_before >= r0 + 1); /* the thread did replay while it lived */
    assert_true(late_frames > 2);
    assert_int_equal(late_replays_after, late_replays_before);
    pthread_key_delete(late_key);
}

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
        cmocka_unit_test(test_cache_and_flush),
        cmocka_unit_test(test_unload_flushes),
        cmocka_unit_test(test_forced_libunwind),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_colliding_addresses_both_cached),
        cmocka_unit_test(test_replay_same_frames),
        cmocka_unit_test(test_replay_tells_callers_apart),
        cmocka_unit_test(test_replay_checks_saved_rbps),
        cmocka_unit_test(test_replay_six_callers_of_one_start),
        cmocka_unit_test(test_replay_stale_way_reused),
        cmocka_unit_test(test_stop_at),
        cmocka_unit_test(test_replay_places_in_turn),
        cmocka_unit_test(test_replay_after_flush),
        cmocka_unit_test(test_replay_not_after_thread_exit),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
