/* native_thread.c - a library alloc_leaks.py calls through ctypes: one allocation from a
 * pthread that never runs Python, so its stack must say "no-python-frames". The allocating
 * function is handed in (the stand-in's cudaMalloc as ctypes found it), so this library
 * allocates exactly the way the Python code beside it does. */
#include <pthread.h>
#include <stddef.h>

typedef int (*alloc_fn)(void **devPtr, size_t size);

struct job {
    alloc_fn alloc;
    size_t size;
    void *ptr;
    int rc;
};

static void *native_alloc(void *arg)
{
    struct job *j = arg;
    j->rc = j->alloc(&j->ptr, j->size);
    return NULL;
}

__attribute__((visibility("default"))) int gmt_test_alloc_in_native_thread(alloc_fn alloc,
                                                                           size_t size)
{
    pthread_t t;
    struct job j = {alloc, size, NULL, -1};
    if (pthread_create(&t, NULL, native_alloc, &j) != 0) return -1;
    pthread_join(t, NULL);
    return j.rc;
}
