/* native_thread.c - a library alloc_leaks.py and alloc_more.py call through ctypes: one
 * allocation from a pthread that never runs Python, so its stack must say "no-python-frames";
 * and many from a pthread that holds a Python thread state but runs no Python code (PyTorch's
 * autograd engine threads do: PyGILState_Ensure, then PyEval_SaveThread); and a call of the
 * allocating function through one more frame of its own. The allocating
 * function is handed in (the stand-in's cudaMalloc as ctypes found it), so this library
 * allocates exactly the way the Python code beside it does. */
#include <dlfcn.h>
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

typedef int (*free_fn)(void *devPtr);

struct idle_job {
    alloc_fn alloc;
    free_fn free;
    int n;
    size_t leak;
    int rc;
};

/* The interpreter's functions from the process itself (python links libpython in, or loads
 * it): this library is not linked against any one CPython. */
static void *idle_tstate_alloc(void *arg)
{
    struct idle_job *j = arg;
    int (*ensure)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    void (*release)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "PyGILState_Release");
    void *(*save)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
    void (*restore)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
    if (!ensure || !release || !save || !restore) return NULL;
    int g = ensure();
    void *ts = save(); /* a thread state, no frames, the GIL released */
    j->rc = 0;
    for (int i = 0; i < j->n && j->rc == 0; i++) {
        void *p = NULL;
        int last = i == j->n - 1;
        j->rc = j->alloc(&p, last ? j->leak : 4096);
        if (j->rc == 0 && !last) j->rc = j->free(p);
    }
    restore(ts);
    release(g);
    return NULL;
}

__attribute__((visibility("default"))) int
gmt_test_alloc_in_idle_tstate(alloc_fn alloc, free_fn free, int n, size_t leak)
{
    pthread_t t;
    struct idle_job j = {alloc, free, n, leak, -1};
    if (pthread_create(&t, NULL, idle_tstate_alloc, &j) != 0) return -1;
    pthread_join(t, NULL);
    return j.rc;
}

/* Calls alloc through one more native frame: alloc_more.py's "paths" reaches cudaMalloc from
 * one Python line both directly and through this function. */
__attribute__((visibility("default"), noinline)) int gmt_test_call_alloc(alloc_fn alloc, void **p,
                                                                         size_t size)
{
    int rc = alloc(p, size);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays on the stack */
    return rc;
}
