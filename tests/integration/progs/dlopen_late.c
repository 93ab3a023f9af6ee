/* dlopen_late.c - the case follow_exec_late: the tracer loaded by dlopen (argv[1]) after the
 * program started argv[2] threads of its own, which wait until the load is over. With
 * GPUMEMTRACE_FOLLOW_EXEC=0 its start-up may rewrite LD_PRELOAD only while the process has one
 * thread (setenv moves the environment another thread may be reading). Prints LD_PRELOAD as the
 * load left it.
 */
#include "common.h"

#include <dlfcn.h>
#include <pthread.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int loaded;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!loaded)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) return 2;
    int n = atoi(argv[2]);
    pthread_t t[8];
    if (n < 0 || n > 8) return 2;
    for (int i = 0; i < n; i++)
        CK(pthread_create(&t[i], NULL, waiter, NULL));
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    EXPECT(h != NULL);
    const char *v = getenv("LD_PRELOAD");
    FACT("preload", "[%s]", v ? v : "(unset)");
    pthread_mutex_lock(&lock);
    loaded = 1;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        CK(pthread_join(t[i], NULL));
    return 0;
}
