/* loader.c - see loader.h. */
#define _GNU_SOURCE
#include "loader.h"

#include "clock.h"

#include <link.h>
#include <time.h>

/* Threads inside one of the tracer's loader calls, and whether a fork has closed the gate.
 * Both seq_cst: a thread counts itself in, then reads the gate; fork() closes the gate, then
 * reads the count (Dekker), so the fork never goes ahead with a thread that passed unseen. */
static int inside;
static int closed;
/* This thread is the one forking: it passes a closed gate (its own atfork handlers, or
 * another library's that run after the tracer's prepare handler, may reach a CUDA hook). */
static __thread int forking __attribute__((tls_model("initial-exec")));
/* This thread's calls under way: a call made inside another (a library that dlopen loads
 * calling CUDA from its constructor) passes, or it would wait for a fork that waits for it. */
static __thread int depth __attribute__((tls_model("initial-exec")));

static void pause_briefly(void)
{
    struct timespec ts = {0, 50000};
    nanosleep(&ts, NULL); /* async-signal-safe: a hook may run in a signal handler */
}

/* A thread waits at a closed gate at most this long, then goes in: should the forking thread
 * wait for something this one holds (a lock of the loader's, taken by fork() itself in some
 * C library), the fork goes on, at worst with the call under way, as without the gate. */
#define GATE_WAIT_NS (2000ull * 1000 * 1000)

void gmt_loader_enter(void)
{
    uint64_t since = 0;
    for (;;) {
        __atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&closed, __ATOMIC_SEQ_CST) || forking || depth) break;
        uint64_t now = gmt_now_ns();
        if (!since) since = now;
        if (now - since >= GATE_WAIT_NS) break;
        __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&closed, __ATOMIC_SEQ_CST) && gmt_now_ns() - since < GATE_WAIT_NS)
            pause_briefly();
    }
    depth++;
}

void gmt_loader_leave(void)
{
    depth--;
    __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
}

int gmt_dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
    gmt_loader_enter();
    int rc = dl_iterate_phdr(cb, arg);
    gmt_loader_leave();
    return rc;
}

bool gmt_loader_fork_close(uint64_t deadline_ns)
{
    forking = 1;
    __atomic_store_n(&closed, 1, __ATOMIC_SEQ_CST);
    /* Not counting this thread's own calls (a fork from a signal handler that interrupted one:
     * waiting for them would only run out the deadline). */
    while (__atomic_load_n(&inside, __ATOMIC_SEQ_CST) > depth) {
        if (gmt_now_ns() >= deadline_ns) return false;
        pause_briefly();
    }
    return true;
}

void gmt_loader_fork_open(void)
{
    __atomic_store_n(&closed, 0, __ATOMIC_SEQ_CST);
    forking = 0;
}

void gmt_loader_after_fork_child(void)
{
    /* The only thread left is this one: inside are its own calls, if any (a fork from a
     * signal handler that interrupted one), which it leaves as usual. */
    __atomic_store_n(&inside, depth, __ATOMIC_RELAXED);
    __atomic_store_n(&closed, 0, __ATOMIC_RELAXED);
    forking = 0;
}
