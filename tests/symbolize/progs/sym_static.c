/* sym_static.c - built the ordinary way: -g, no -rdynamic, static functions. dladdr cannot
 * name them; libdw must (from .symtab), with file:line and the always-inlined helper as an
 * inlined frame. Markers "LINE:<name>" give check_sym.py the expected line numbers.
 * Run with GMT_STANDIN_MEM_BYTES=1073741824: the last allocation fails, so an oom report
 * (written without libdw) is there for offline symbolization too. With the argument "kill"
 * it ends by SIGKILL instead of returning: a state file left without its clean-exit mark.
 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[4];

static void check(cudaError_t e, int want_ok)
{
    if ((e == cudaSuccess) != want_ok) {
        fprintf(stderr, "unexpected cudaMalloc result %d\n", (int)e);
        exit(90);
    }
}

static inline __attribute__((always_inline)) void grab_inline(int i, size_t n)
{
    check(cudaMalloc(&keep[i], n), 1); /* LINE:inline_body */
}

static __attribute__((noinline)) void static_site(void)
{
    grab_inline(0, 2u << 20); /* LINE:inline_call */
}

static __attribute__((noinline)) void static_plain(void)
{
    check(cudaMalloc(&keep[1], 5000), 1); /* LINE:plain */
}

static __attribute__((noinline)) void static_too_big(void)
{
    void *p = NULL;
    check(cudaMalloc(&p, (size_t)4 << 30), 0); /* LINE:too_big */
}

int main(int argc, char **argv)
{
    static_site();
    static_plain();
    static_too_big();
    if (argc > 1 && strcmp(argv[1], "kill") == 0) raise(SIGKILL);
    return 0;
}
