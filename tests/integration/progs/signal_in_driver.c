/* signal_in_driver.c - a terminating signal that stops the main thread inside the driver while the
 * driver holds its lock: the stand-in keeps its lock for GMT_STANDIN_HOLD_MS during the allocation
 * of GMT_STANDIN_HOLD_BYTES (the case sets both), and a helper thread sends SIGTERM to the main
 * thread once the stand-in says that allocation holds the lock (before, 300 ms after the thread
 * started: a main thread not yet there on a loaded machine took the signal outside the driver, and
 * the case passed without testing what it names). The tracer's report for the signal must be
 * written without asking the driver anything (it would wait for that lock, held by the thread that
 * waits for the report), and the program then dies by SIGTERM.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <signal.h>

#define KEPT_BYTES (3 * MIB)

static pthread_t g_main;

static void *send_term(void *arg)
{
    (void)arg;
    gmt_wait_for_standin_hold(); /* the main thread inside the held allocation */
    pthread_kill(g_main, SIGTERM);
    return NULL;
}

SITE void kept_buffer(void **p)
{
    CK(cudaMalloc(p, KEPT_BYTES));
}

SITE void held_in_driver(void **p, size_t bytes)
{
    (void)cudaMalloc(p, bytes); /* SIGTERM arrives inside */
}

int main(int argc, char **argv)
{
    size_t hold = argc > 1 ? (size_t)atol(argv[1]) : 0;
    EXPECT(hold > 0);
    void *a = NULL, *b = NULL;
    kept_buffer(&a);
    g_main = pthread_self();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, send_term, NULL) == 0);
    held_in_driver(&b, hold);
    fprintf(stderr, "signal_in_driver: the allocation returned: the signal was not taken\n");
    return 3;
}
