/* sym_small_stack.c - asks for a snapshot report (gmt_snapshot) from a thread with a 192 KiB
 * stack: too little for libdw's line-table reader, so the report must fall back to dladdr
 * names and say why, not overflow the stack. The exit report (main thread) gets libdw. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *keep;

static void *snap(void *arg)
{
    (void)arg;
    int (*fn)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "gmt_snapshot");
    if (!fn || fn("small-stack-snapshot.json") != 0) exit(92);
    return NULL;
}

int main(void)
{
    if (cudaMalloc(&keep, 1u << 20) != cudaSuccess) return 90;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 192 * 1024);
    pthread_t t;
    if (pthread_create(&t, &attr, snap, NULL) != 0) return 93;
    pthread_join(t, NULL);
    return 0;
}
