/* bench_symbolize.c - time to name the frames of many distinct stacks through a few large
 * libraries with the libdw symbolizer (src/symbolize/dwsym.h), as the report writer and the
 * CLI do: one session, every module opened once.
 *
 * usage: bench_symbolize [STACKS [DEPTH [SHARED]]]  (default 10000 24 16)
 * Each stack has DEPTH frames; its innermost DEPTH-SHARED frames are random code addresses of
 * the libraries (distinct per stack), the outer SHARED frames come from a pool of 256 (real
 * stacks share their outer frames). SHARED=0 makes every frame random: the worst case.
 * Prints the time to open the session, resolve every frame, and close it.
 */
#define _GNU_SOURCE
#include "symbolize/dwsym.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct lib_s {
    const char *want;
    char path[4096];
    uint64_t text_lo, text_hi; /* executable segment, as offsets from the first segment */
} lib_t;

static lib_t libs[] = {{.want = "libc.so.6"},   {.want = "libstdc++.so.6"}, {.want = "libdw.so.1"},
                       {.want = "libelf.so.1"}, {.want = "libcrypto.so.3"}, {.want = "libpython3"}};
#define NLIBS (sizeof libs / sizeof libs[0])

static int visit(struct dl_phdr_info *info, size_t size, void *ctx)
{
    (void)size, (void)ctx;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    for (size_t i = 0; i < NLIBS; i++) {
        if (strncmp(base, libs[i].want, strlen(libs[i].want)) != 0 || libs[i].path[0]) continue;
        uint64_t first = UINT64_MAX;
        for (int k = 0; k < info->dlpi_phnum; k++)
            if (info->dlpi_phdr[k].p_type == PT_LOAD && info->dlpi_phdr[k].p_vaddr < first)
                first = info->dlpi_phdr[k].p_vaddr & ~4095ull;
        for (int k = 0; k < info->dlpi_phnum; k++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
            if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
                libs[i].text_lo = ph->p_vaddr - first;
                libs[i].text_hi = ph->p_vaddr - first + ph->p_memsz;
            }
        }
        snprintf(libs[i].path, sizeof libs[i].path, "%s", info->dlpi_name);
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv)
{
    int stacks = argc > 1 ? atoi(argv[1]) : 10000;
    int depth = argc > 2 ? atoi(argv[2]) : 24;
    int shared = argc > 3 ? atoi(argv[3]) : 16;
    if (stacks <= 0 || depth <= 0 || shared < 0 || shared > depth) {
        fprintf(stderr, "usage: bench_symbolize [STACKS [DEPTH [SHARED]]]\n");
        return 2;
    }
    dlopen("libstdc++.so.6", RTLD_NOW);
    dlopen("libdw.so.1", RTLD_NOW);
    dlopen("libelf.so.1", RTLD_NOW);
    dlopen("libcrypto.so.3", RTLD_NOW);
    dlopen("libpython3.11.so.1.0", RTLD_NOW);
    dl_iterate_phdr(visit, NULL);
    lib_t *use[NLIBS];
    int n = 0;
    for (size_t i = 0; i < NLIBS; i++)
        if (libs[i].path[0] && libs[i].text_hi > libs[i].text_lo) use[n++] = &libs[i];
    if (n == 0) {
        fprintf(stderr, "bench_symbolize: none of the libraries is loaded\n");
        return 1;
    }
    typedef struct {
        lib_t *l;
        uint64_t off;
    } fr_t;
    fr_t pool[256];
    for (int i = 0; i < 256; i++) {
        lib_t *l = use[next_rand() % (uint64_t)n];
        pool[i] = (fr_t){l, l->text_lo + 1 + next_rand() % (l->text_hi - l->text_lo - 1)};
    }
    size_t total = (size_t)stacks * (size_t)depth;
    fr_t *frames = malloc(total * sizeof *frames);
    if (!frames) return 1;
    for (int s = 0; s < stacks; s++)
        for (int d = 0; d < depth; d++) {
            fr_t *f = &frames[(size_t)s * (size_t)depth + (size_t)d];
            if (d >= depth - shared) {
                *f = pool[next_rand() % 256];
            } else {
                lib_t *l = use[next_rand() % (uint64_t)n];
                *f = (fr_t){l, l->text_lo + 1 + next_rand() % (l->text_hi - l->text_lo - 1)};
            }
        }
    double t0 = now_s();
    gmt_dwsym_t *sym = NULL;
    char why[256];
    if (gmt_dwsym_open(&sym, why, sizeof why) != 0) {
        fprintf(stderr, "bench_symbolize: %s\n", why);
        return 1;
    }
    size_t named = 0, lines = 0;
    for (size_t i = 0; i < total; i++) {
        const gmt_symres_t *r = NULL;
        if (gmt_dwsym_resolve(sym, frames[i].l->path, NULL, frames[i].off, &r) == 0) {
            named += r->fn.symbol != NULL;
            lines += r->fn.file != NULL;
        }
    }
    double t1 = now_s();
    gmt_dwsym_close(sym);
    double t2 = now_s();
    printf("bench_symbolize: %d stacks x %d frames (%d shared) through %d libraries:", stacks,
           depth, shared, n);
    for (int i = 0; i < n; i++)
        printf(" %s", strrchr(use[i]->path, '/') ? strrchr(use[i]->path, '/') + 1 : use[i]->path);
    printf("\n  resolve %.3f s, close %.3f s, total %.3f s; %zu of %zu frames named, %zu with "
           "file:line\n",
           t1 - t0, t2 - t1, t2 - t0, named, total, lines);
    free(frames);
    return 0;
}
