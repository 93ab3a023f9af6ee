/* test_loader.c - the loader gate (core/loader.h): fork() waits for the threads inside the
 * tracer's loader calls, holds the others out until it is done, lets the forking thread and a
 * call nested in another pass, and a real fork leaves the child's gate open. */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/clock.h"
#include "core/loader.h"

#define MS 1000000ull

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

typedef struct arm_s {
    int entered; /* the thread is inside */
    int release; /* the thread may leave */
    int left;    /* it left */
} arm_t;

static void *inside_until_released(void *arg)
{
    arm_t *a = arg;
    gmt_loader_enter();
    __atomic_store_n(&a->entered, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&a->release, __ATOMIC_ACQUIRE))
        sleep_ms(1);
    gmt_loader_leave();
    __atomic_store_n(&a->left, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A thread inside: the close waits for it, to the deadline; once it left, the close is
 * immediate. */
static void test_close_waits_for_inside(void **state)
{
    (void)state;
    arm_t a = {0, 0, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, inside_until_released, &a), 0);
    while (!__atomic_load_n(&a.entered, __ATOMIC_ACQUIRE))
        sleep_ms(1);
    uint64_t t0 = gmt_now_ns();
    assert_false(gmt_loader_fork_close(t0 + 30 * MS));
    assert_true(gmt_now_ns() - t0 >= 30 * MS);
    gmt_loader_fork_open();
    __atomic_store_n(&a.release, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(gmt_loader_fork_close(gmt_now_ns() + 1000 * MS));
    gmt_loader_fork_open();
}

/* The gate closed: another thread waits at it until it opens; the closing thread itself, and
 * a call nested in another, pass. */
static void test_closed_holds_others_out(void **state)
{
    (void)state;
    assert_true(gmt_loader_fork_close(gmt_now_ns() + 1000 * MS));
    gmt_loader_enter(); /* the forking thread */
    gmt_loader_enter(); /* nested */
    gmt_loader_leave();
    gmt_loader_leave();
    arm_t a = {0, 1, 0};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, inside_until_released, &a), 0);
    sleep_ms(50);
    assert_int_equal(__atomic_load_n(&a.entered, __ATOMIC_ACQUIRE), 0);
    gmt_loader_fork_open();
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(a.entered, 1);
    assert_int_equal(a.left, 1);
}

static int count_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)info, (void)size;
    ++*(int *)arg;
    return 0;
}

static void *iterate(void *arg)
{
    gmt_dl_iterate_phdr(count_cb, arg);
    return NULL;
}

/* A real fork with the gate closed by the prepare handler, as the tracer does, while the
 * forking thread is inside a call itself (a fork from a signal handler that interrupted one):
 * the fork does not wait for its own call; the child's gate is open (another thread passes at
 * once) and holds only that call, which ends as usual; the parent's gate opens again. (No
 * other thread runs at the fork: the sanitizers' runtimes count them in the child.) */
static void prepare(void)
{
    gmt_loader_fork_close(gmt_now_ns() + 1000 * MS);
}

static int open_and_empty(void)
{
    int n = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, iterate, &n) != 0 || pthread_join(t, NULL) != 0) return 0;
    bool empty = gmt_loader_fork_close(gmt_now_ns());
    gmt_loader_fork_open();
    return n > 0 && empty;
}

static void test_fork_child_open(void **state)
{
    (void)state;
    static int registered;
    if (!registered++) pthread_atfork(prepare, gmt_loader_fork_open, gmt_loader_after_fork_child);
    gmt_loader_enter();
    uint64_t t0 = gmt_now_ns();
    pid_t pid = fork();
    if (pid == 0) {
        gmt_loader_leave();
        _exit(open_and_empty() ? 0 : 1);
    }
    assert_true(pid > 0);
    assert_true(gmt_now_ns() - t0 < 500 * MS); /* it did not wait for its own call */
    gmt_loader_leave();
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(open_and_empty());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_close_waits_for_inside),
        cmocka_unit_test(test_closed_holds_others_out),
        cmocka_unit_test(test_fork_child_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
