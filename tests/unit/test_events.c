/* test_events.c - the per-thread event rings (core/events.h): one order across the rings, the
 * drain's clock, a full ring, threads without a ring, a signal handler's event, and a state
 * file whose rings still hold events when its process is killed. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/events.h"
#include "core/hot.h"
#include "core/stats.h"
#include "core/tls.h"
#include "core/track.h"

static char state_pattern[256];

static int group_setup(void **state)
{
    (void)state;
    gmt_config_t cfg;
    gmt_config_defaults(&cfg);
    cfg.stack_depth = 0;
    cfg.timeline_points = 16;
    snprintf(state_pattern, sizeof state_pattern, "/tmp/gmt-unit-events-%d-%%p.state",
             (int)getpid());
    snprintf(cfg.state, sizeof cfg.state, "%s", state_pattern);
    if (gmt_core_init(&cfg) != 0) return -1;
    return gmt_core_ready() ? 0 : -1;
}

static void state_path_of(int pid, char *out, size_t len)
{
    snprintf(out, len, "/tmp/gmt-unit-events-%d-%d.state", (int)getpid(), pid);
}

static int group_teardown(void **state)
{
    (void)state;
    char p[300];
    state_path_of((int)getpid(), p, sizeof p);
    unlink(p);
    return 0;
}

static gmt_ev_t mk(gmt_ev_op_t op, int32_t device, uint64_t size, uint64_t ns)
{
    gmt_ev_t e = {
        .ns = ns,
        .size = size,
        .device = device,
        .op = (uint8_t)op,
        .flags = GMT_EVF_CHARGED | (op == GMT_EV_FREE ? GMT_EVF_COUNTED : 0),
        .kind = GMT_KIND_DEVICE,
        .api = op == GMT_EV_FREE ? GMT_API_cudaFree : GMT_API_cudaMalloc,
        .layer = GMT_LAYER_RUNTIME,
    };
    return e;
}

static void push(gmt_ev_op_t op, int32_t device, uint64_t size, uint64_t ns)
{
    gmt_ev_t e = mk(op, device, size, ns);
    gmt_events_push(&e, __atomic_load_n(&gmt_hot.core_generation, __ATOMIC_RELAXED));
}

static gmt_dev_totals_t dev(int32_t device)
{
    gmt_dev_totals_t t;
    gmt_track_drain();
    gmt_stats_device(gmt_stats_slot(device), &t);
    return t;
}

/* ---- one order ---------------------------------------------------------------------------- */

static uint64_t t0;

static void *second_thread(void *arg)
{
    (void)arg;
    push(GMT_EV_ALLOC, 5, 50, t0 + 20);
    push(GMT_EV_FREE, 5, 50, t0 + 40);
    assert_non_null(gmt_tls.ring); /* a ring of its own, not the main thread's */
    return NULL;
}

/* Two threads' events interleave in time: 100 (main) at 10, 50 (other) at 20, the 100 freed at
 * 30, the 50 at 40. In that order the peak is 150; ring after ring it would be 100. */
static void test_drain_merges_rings_in_time_order(void **state)
{
    (void)state;
    t0 = gmt_event_ns();
    push(GMT_EV_ALLOC, 5, 100, t0 + 10);
    push(GMT_EV_FREE, 5, 100, t0 + 30);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, second_thread, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_non_null(gmt_tls.ring);
    gmt_dev_totals_t d = dev(5);
    assert_int_equal(d.in_use_peak, 150);
    assert_int_equal(d.in_use, 0);
    assert_int_equal(d.allocs[GMT_KIND_DEVICE], 2);
    assert_int_equal(d.frees[GMT_KIND_DEVICE], 2);
    assert_int_equal(gmt_events_unapplied(), 0);
}

/* ---- the drain's clock -------------------------------------------------------------------- */

/* An event stamped after the drain read its clock waits for a later drain. */
static void test_event_after_the_drains_clock_waits(void **state)
{
    (void)state;
    uint64_t later = gmt_event_ns() + 200000000ull; /* 200 ms ahead */
    push(GMT_EV_ALLOC, 6, 700, later);
    assert_int_equal(dev(6).in_use, 0);
    assert_int_equal(gmt_events_unapplied(), 1);
    while (gmt_event_ns() <= later) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(dev(6).in_use, 700);
    assert_int_equal(gmt_events_unapplied(), 0);
    push(GMT_EV_FREE, 6, 700, gmt_event_ns());
    assert_int_equal(dev(6).in_use, 0);
}

/* ---- a full ring -------------------------------------------------------------------------- */

/* No drainer: the thread whose ring is full applies what every ring holds, then goes on. */
static void test_full_ring_drains_itself(void **state)
{
    (void)state;
    const int n = 5 * (int)GMT_RING_EVENTS + 7;
    uint64_t applied0 = gmt_events_applied();
    for (int i = 0; i < n; i++) {
        push(i % 2 ? GMT_EV_FREE : GMT_EV_ALLOC, 7, 64, gmt_event_ns());
        assert_true(gmt_events_unapplied() <= GMT_RING_EVENTS);
    }
    /* applied on the way: all but what the last ring holds */
    assert_true(gmt_events_applied() - applied0 >= (uint64_t)n - GMT_RING_EVENTS);
    gmt_dev_totals_t d = dev(7);
    assert_int_equal(d.allocs[GMT_KIND_DEVICE], (n + 1) / 2);
    assert_int_equal(d.frees[GMT_KIND_DEVICE], n / 2);
    assert_int_equal(d.in_use, 64);
    assert_int_equal(d.in_use_peak, 64);
    assert_int_equal(gmt_events_applied() - applied0, n);
}

/* ---- threads without a ring --------------------------------------------------------------- */

#define MANY_THREADS 40 /* more than there are rings (owned shards) */
#define THREAD_PAIRS 2000

static pthread_barrier_t all_alive;
static int ringless;

static void *pairs_worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    pthread_barrier_wait(&all_alive); /* every thread holds its shard until all have one */
    for (int i = 0; i < THREAD_PAIRS; i++) {
        gmt_event_t a = {
            .addr = 0x7000000000ull + ((uint64_t)id << 24) + (uint64_t)i * 256,
            .size = 100,
            .device = 8,
            .kind = GMT_KIND_DEVICE,
            .space = GMT_SPACE_VA,
            .api = GMT_API_cudaMalloc,
            .layer = GMT_LAYER_RUNTIME,
        };
        gmt_track_alloc(&a);
        gmt_track_free(&a);
    }
    if (!gmt_tls.ring) __atomic_fetch_add(&ringless, 1, __ATOMIC_RELAXED);
    pthread_barrier_wait(&all_alive);
    return NULL;
}

static void test_threads_without_a_ring(void **state)
{
    (void)state;
    gmt_counts_t c0, c1;
    gmt_track_drain();
    gmt_track_counts(&c0);
    pthread_t th[MANY_THREADS];
    assert_int_equal(pthread_barrier_init(&all_alive, NULL, MANY_THREADS), 0);
    for (int i = 0; i < MANY_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, pairs_worker, (void *)(intptr_t)i), 0);
    for (int i = 0; i < MANY_THREADS; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
    pthread_barrier_destroy(&all_alive);
    assert_true(ringless >= MANY_THREADS - 24); /* some applied their own events */
    gmt_dev_totals_t d = dev(8);
    gmt_track_counts(&c1);
    assert_int_equal(c1.allocs - c0.allocs, MANY_THREADS * THREAD_PAIRS);
    assert_int_equal(c1.frees - c0.frees, MANY_THREADS * THREAD_PAIRS);
    assert_int_equal(d.allocs[GMT_KIND_DEVICE], MANY_THREADS * THREAD_PAIRS);
    assert_int_equal(d.in_use, 0);
    assert_true(d.in_use_peak >= 100 && d.in_use_peak <= MANY_THREADS * 100);
    assert_int_equal(c1.dropped_events, 0);
}

/* ---- a signal handler's event ------------------------------------------------------------- */

/* Inside the thread's own ring write (ring_busy) an event is applied at once when the lock is
 * free; inside the thread's own drain (in_drain) it cannot wait for the lock its thread holds:
 * dropped, and counted. */
static void test_signal_handler_event(void **state)
{
    (void)state;
    gmt_tls.ring_busy = 1;
    push(GMT_EV_ALLOC, 9, 300, gmt_event_ns());
    gmt_tls.ring_busy = 0;
    gmt_dev_totals_t d;
    gmt_stats_device(gmt_stats_slot(9), &d); /* no drain: applied already */
    assert_int_equal(d.in_use, 300);

    uint64_t un0 = gmt_events_unapplied();
    int *lock = gmt_stats_events_lock();
    __atomic_store_n(lock, 1, __ATOMIC_RELAXED); /* as the interrupted drain holds it */
    gmt_tls.in_drain = 1;
    gmt_tls.ring_busy = 1;
    push(GMT_EV_FREE, 9, 300, gmt_event_ns());
    gmt_tls.ring_busy = 0;
    gmt_tls.in_drain = 0;
    __atomic_store_n(lock, 0, __ATOMIC_RELEASE);
    assert_int_equal(gmt_events_unapplied(), un0 + 1);
    assert_int_equal(dev(9).in_use, 300);
    gmt_counts_t c;
    gmt_track_counts(&c);
    assert_true(c.dropped_events >= 1); /* in the report: capture.dropped.events */
}

/* ---- a killed process's rings ------------------------------------------------------------- */

/* The child's events are still in its ring when it is killed (nothing drains in this program):
 * the state file's report has them all. Last: the recovery replaces this process's core. */
static void test_killed_process_rings_recovered(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (gmt_core_reset_after_fork() != 0) _exit(3);
        for (int i = 0; i < 10; i++) {
            gmt_event_t a = {
                .addr = 0x5000000000ull + (uint64_t)i * 4096,
                .size = 1000 + (uint64_t)i,
                .device = 10,
                .kind = GMT_KIND_DEVICE,
                .space = GMT_SPACE_VA,
                .api = GMT_API_cudaMalloc,
                .layer = GMT_LAYER_RUNTIME,
            };
            gmt_track_alloc(&a);
            if (i % 3 == 0) gmt_track_free(&a);
        }
        if (gmt_events_unapplied() != 14) _exit(4);
        kill(getpid(), SIGKILL);
        _exit(5);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    char path[300], err[256] = "";
    state_path_of(pid, path, sizeof path);
    int rc = gmt_track_recover(path, err, sizeof err);
    unlink(path);
    if (rc) fail_msg("recover: %s", err);
    gmt_counts_t c;
    gmt_track_counts(&c);
    assert_int_equal(c.allocs, 10);
    assert_int_equal(c.frees, 4);
    assert_int_equal(c.dropped_events, 0);
    gmt_dev_totals_t d;
    gmt_stats_device(gmt_stats_slot(10), &d);
    /* 1001 + 1002 + 1004 + 1005 + 1007 + 1008 live: 0, 3, 6 and 9 were freed */
    assert_int_equal(d.in_use, 6027);
    assert_int_equal(d.in_use_peak, 1001 + 1002 + 1004 + 1005 + 1007 + 1008 + 1009);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drain_merges_rings_in_time_order),
        cmocka_unit_test(test_event_after_the_drains_clock_waits),
        cmocka_unit_test(test_full_ring_drains_itself),
        cmocka_unit_test(test_threads_without_a_ring),
        cmocka_unit_test(test_signal_handler_event),
        cmocka_unit_test(test_killed_process_rings_recovered),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
