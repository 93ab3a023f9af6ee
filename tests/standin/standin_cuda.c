/* standin_cuda.c - a stand-in CUDA driver (libcuda.so.1) for tests on machines without a GPU.
 *
 * It implements the memory-management subset of the driver API that gpumemtrace intercepts,
 * with the real toolkit's prototypes (cuda.h), so the whole LD_PRELOAD path (symbol
 * interposition, cuGetProcAddress, dlsym, exit, signals, fork, threads) runs in CI.
 *
 * Model:
 *  - GMT_STANDIN_DEVICES devices (default 2), each with GMT_STANDIN_MEM_BYTES of memory
 *    (plain bytes, default 16 GiB).
 *  - Device memory is an address range reserved with PROT_NONE (never backed, never
 *    dereferenced) handed out first-fit with 512-byte granularity, so addresses are reused
 *    after free just as on a real device. Alloc, free and lookup are O(log n) in the live
 *    blocks (a treap with the free gap below each block), so a million live allocations cost
 *    the stand-in little. A request that does not fit the device's free memory
 *    fails with CUDA_ERROR_OUT_OF_MEMORY. Stream-ordered pool allocations share it.
 *  - Managed and pinned host memory are real, touchable host memory (mmap); managed memory is
 *    charged to the current device as well.
 *  - Virtual memory management: reservations come from a separate PROT_NONE region; physical
 *    handles are small integers charged to their device until released and unmapped.
 *  - The current device is thread-local, set through fake contexts (CUcontext)(dev + 1).
 *    GMT_STANDIN_COUNT_QUERIES=1 prints how often cuCtxGetDevice was called at exit
 *    ("standin: cuCtxGetDevice calls N" on stderr), so tests see how often a tracer asks.
 *  - Graph memory (cuDeviceGetGraphMemAttribute): no graphs run here, so every device's four
 *    figures are 0, or those of GMT_STANDIN_GRAPH_MEM="reserved,reserved_high,used,used_high"
 *    (bytes), so tests see a report carry them. "fail" makes the call fail.
 *  - cuGetProcAddress maps base names + version + flags to the exported functions through one
 *    static table, like the real driver.
 * All state is behind one mutex; exact first, fast only where a benchmark needs it.
 */
#include <cuda.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* Entry points cuda.h does not declare without CUDA_API_PER_THREAD_DEFAULT_STREAM, and the
 * unversioned names hidden behind cuda.h's #defines. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult standin_gpa_v1(const char *symbol, void **pfn, int cudaVersion,
                        cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult standin_get_uuid_v1(CUuuid *uuid, CUdevice dev) __asm__("cuDeviceGetUuid");

#define SI_MAX_DEVICES    16
#define SI_DEVICE_GRAIN   512ull
#define SI_VMM_GRAIN      (2ull << 20)
#define SI_RESERVE_REGION (256ull << 30)
#define SI_HANDLE_BASE    0x1000ull
#define SI_POOL_BASE      0x9000ull

/* The live blocks [addr, addr + span) of [base, limit), handed out first fit: a treap keyed by
 * address. Each node also holds the free gap before its block (from the end of the block
 * before it, or from base) and the largest gap in its subtree, so the first fit, a lookup and a
 * free are each one descent, O(log n) expected, however many blocks are live (a sorted array
 * searched from the start made a run with a million live allocations quadratic). Nodes live in
 * one array, named by index (0 = none), and freed ones are reused. */
typedef struct si_node_s {
    uint64_t addr;
    uint64_t span;   /* rounded size actually taken from the range */
    uint64_t size;   /* size the caller asked for */
    uint64_t gap;    /* free bytes just below addr */
    uint64_t maxgap; /* largest gap in this subtree */
    uint32_t left, right, prio;
} si_node_t;

typedef struct si_arena_s {
    uint64_t base, limit, grain;
    si_node_t *v;      /* v[0] unused: index 0 is "none" */
    size_t cap, top;   /* nodes allocated, nodes ever used (v[1 .. top)) */
    uint32_t root;     /* 0: no block live */
    uint32_t free_idx; /* freed nodes, chained through .left */
    uint32_t seed;     /* xorshift state for the priorities */
    uint64_t hi_end;   /* end of the highest block, while one is live */
    size_t n;          /* live blocks */
} si_arena_t;

typedef struct si_device_s {
    si_arena_t mem;
    uint64_t used; /* bytes charged: device, pool, managed, VMM physical */
} si_device_t;

typedef struct si_host_s { /* pinned host and managed memory: real mappings */
    uint64_t addr, size, maplen;
    int device; /* managed: charged device; pinned: -1 */
} si_host_t;

typedef struct si_handle_s {
    uint64_t handle, size, span;
    int device;
    int released;
    int maps;
} si_handle_t;

typedef struct si_map_s {
    uint64_t addr, size, handle;
} si_map_t;

typedef struct si_pool_s {
    int device;
    int live;
} si_pool_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Fork while another thread allocates (tests/stress fork_storm): the child must not inherit
 * the stand-in's lock held, or its own first allocation would wait forever. */
static void si_after_fork_child(void)
{
    pthread_mutex_init(&g_lock, NULL);
}

__attribute__((constructor)) static void si_register_fork(void)
{
    pthread_atfork(NULL, NULL, si_after_fork_child);
}
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ndev = 2;
static uint64_t g_mem_bytes = 16ull << 30;
static si_device_t g_dev[SI_MAX_DEVICES];
static si_arena_t g_reserve;
static si_host_t *g_host;
static size_t g_nhost, g_caphost;
static si_handle_t *g_handles;
static size_t g_nhandles, g_caphandles;
static uint64_t g_next_handle = SI_HANDLE_BASE;
static si_map_t *g_maps;
static size_t g_nmaps, g_capmaps;
static si_pool_t g_pools[256];
static size_t g_npools;
/* GMT_STANDIN_HOLD_BYTES / GMT_STANDIN_HOLD_MS: an allocation of exactly that many bytes keeps
 * the stand-in's lock for that long, as a driver stopped inside a call holds its own (the
 * tracer's reports for a signal must not wait for it: integration.signal_in_driver). */
static uint64_t g_hold_bytes, g_hold_ms;
static int g_holding; /* atomic: such an allocation has the lock now */

/* Not a CUDA function: whether an allocation of GMT_STANDIN_HOLD_BYTES holds the stand-in's
 * lock at this moment. A test program that needs the lock held before it goes on waits for
 * this (integration.exit_stuck and the close_fds cases), where a sleep was only likely to be
 * long enough on a loaded machine. */
int gmt_standin_holding(void)
{
    return __atomic_load_n(&g_holding, __ATOMIC_ACQUIRE);
}

static __thread int t_cur_dev; /* current device of this thread */

static void *si_grow(void *v, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return v;
    size_t ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void *nv = realloc(v, ncap * elem);
    if (!nv) {
        fprintf(stderr, "standin libcuda: out of host memory\n");
        abort();
    }
    *cap = ncap;
    return nv;
}

static uint64_t si_round(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static uint64_t si_env_u64(const char *name, uint64_t def)
{
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v == 0) {
        fprintf(stderr, "standin libcuda: bad %s='%s', using %llu\n", name, s,
                (unsigned long long)def);
        return def;
    }
    return v;
}

static uint64_t si_reserve_va(uint64_t len)
{
    void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "standin libcuda: cannot reserve %llu bytes of address space\n",
                (unsigned long long)len);
        abort();
    }
    return (uint64_t)(uintptr_t)p;
}

static void si_init(void)
{
    g_ndev = (int)si_env_u64("GMT_STANDIN_DEVICES", 2);
    if (g_ndev > SI_MAX_DEVICES) g_ndev = SI_MAX_DEVICES;
    g_mem_bytes = si_env_u64("GMT_STANDIN_MEM_BYTES", 16ull << 30);
    g_hold_bytes = si_env_u64("GMT_STANDIN_HOLD_BYTES", 0);
    g_hold_ms = si_env_u64("GMT_STANDIN_HOLD_MS", 0);
    /* Twice the memory in address space, so fragmentation alone rarely fails a request that
     * fits the free bytes. PROT_NONE + MAP_NORESERVE costs nothing and keeps real mappings
     * (pinned and managed memory) from ever landing on a fake device address. */
    uint64_t span = si_round(g_mem_bytes * 2, SI_VMM_GRAIN);
    for (int d = 0; d < g_ndev; d++) {
        uint64_t base = si_reserve_va(span + SI_VMM_GRAIN);
        g_dev[d].mem.base = si_round(base, SI_VMM_GRAIN);
        g_dev[d].mem.limit = g_dev[d].mem.base + span;
        g_dev[d].mem.grain = SI_DEVICE_GRAIN;
    }
    /* GMT_STANDIN_RESERVE_BYTES: smaller for tools with a small address space (valgrind). */
    uint64_t region =
        si_round(si_env_u64("GMT_STANDIN_RESERVE_BYTES", SI_RESERVE_REGION), SI_VMM_GRAIN);
    uint64_t rbase = si_reserve_va(region + SI_VMM_GRAIN);
    g_reserve.base = si_round(rbase, SI_VMM_GRAIN);
    g_reserve.limit = g_reserve.base + region;
    g_reserve.grain = SI_VMM_GRAIN;
}

static void si_lock(void)
{
    pthread_once(&g_once, si_init);
    pthread_mutex_lock(&g_lock);
}

static void si_unlock(void)
{
    pthread_mutex_unlock(&g_lock);
}

/* ---- the arena: a treap of live blocks with the gap below each ---- */

#define SI_NODE(a, i) (&(a)->v[(i)])

static uint64_t si_max3(uint64_t x, uint64_t y, uint64_t z)
{
    uint64_t m = x > y ? x : y;
    return m > z ? m : z;
}

static void si_update(si_arena_t *a, uint32_t t)
{
    si_node_t *n = SI_NODE(a, t);
    n->maxgap = si_max3(n->gap, n->left ? SI_NODE(a, n->left)->maxgap : 0,
                        n->right ? SI_NODE(a, n->right)->maxgap : 0);
}

/* Splits t into the blocks below key (*l) and the rest (*r). */
static void si_split(si_arena_t *a, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
    if (!t) {
        *l = *r = 0;
        return;
    }
    si_node_t *n = SI_NODE(a, t);
    if (n->addr < key) {
        si_split(a, n->right, key, &n->right, r);
        *l = t;
    } else {
        si_split(a, n->left, key, l, &n->left);
        *r = t;
    }
    si_update(a, t);
}

/* Joins l and r, every block of l below every block of r. */
static uint32_t si_merge(si_arena_t *a, uint32_t l, uint32_t r)
{
    if (!l || !r) return l ? l : r;
    if (SI_NODE(a, l)->prio > SI_NODE(a, r)->prio) {
        SI_NODE(a, l)->right = si_merge(a, SI_NODE(a, l)->right, r);
        si_update(a, l);
        return l;
    }
    SI_NODE(a, r)->left = si_merge(a, l, SI_NODE(a, r)->left);
    si_update(a, r);
    return r;
}

/* Sets the gap of t's lowest block to the distance from below_end, updating the path to it. */
static void si_set_lowest_gap(si_arena_t *a, uint32_t t, uint64_t below_end)
{
    si_node_t *n = SI_NODE(a, t);
    if (n->left)
        si_set_lowest_gap(a, n->left, below_end);
    else
        n->gap = n->addr - below_end;
    si_update(a, t);
}

/* Puts x (a node with its addr, gap and priority set, no children) into t: down the search path
 * to where x's priority belongs, the subtree there split below it. Every node on x's search
 * path is updated, so a gap changed there beforehand (the block just above x) is counted. */
static uint32_t si_insert(si_arena_t *a, uint32_t t, uint32_t x)
{
    if (!t || a->v[x].prio > a->v[t].prio) {
        si_split(a, t, a->v[x].addr, &a->v[x].left, &a->v[x].right);
        si_update(a, x);
        return x;
    }
    if (a->v[x].addr < a->v[t].addr)
        a->v[t].left = si_insert(a, a->v[t].left, x);
    else
        a->v[t].right = si_insert(a, a->v[t].right, x);
    si_update(a, t);
    return t;
}

/* Takes the block at addr (live in t) out, its two subtrees merged in its place; every node on
 * the way is updated. */
static uint32_t si_erase(si_arena_t *a, uint32_t t, uint64_t addr)
{
    si_node_t *n = &a->v[t];
    if (n->addr == addr) return si_merge(a, n->left, n->right);
    if (addr < n->addr)
        n->left = si_erase(a, n->left, addr);
    else
        n->right = si_erase(a, n->right, addr);
    si_update(a, t);
    return t;
}

/* The lowest block whose gap holds span bytes at the alignment, or 0. Subtrees whose largest
 * gap is too small are skipped; with the arena's own grain as the alignment every gap that is
 * large enough fits, so this is one descent. */
static uint32_t si_first_fit(const si_arena_t *a, uint32_t t, uint64_t span, uint64_t align)
{
    if (!t || a->v[t].maxgap < span) return 0;
    uint32_t r = si_first_fit(a, a->v[t].left, span, align);
    if (r) return r;
    const si_node_t *n = &a->v[t];
    if (n->gap >= span && si_round(n->addr - n->gap, align) + span <= n->addr) return t;
    return si_first_fit(a, n->right, span, align);
}

static uint32_t si_node_new(si_arena_t *a)
{
    uint32_t i = a->free_idx;
    if (i) {
        a->free_idx = a->v[i].left;
        return i;
    }
    if (a->top == 0) a->top = 1;
    if (a->top >= UINT32_MAX) {
        fprintf(stderr, "standin libcuda: too many live blocks\n");
        abort();
    }
    a->v = si_grow(a->v, &a->cap, a->top + 1, sizeof(*a->v));
    return (uint32_t)a->top++;
}

/* First fit; returns 0 and the address, or -1 when no gap is large enough. One descent finds
 * the gap, one puts the block in. */
static int si_arena_alloc_locked(si_arena_t *a, uint64_t size, uint64_t align, uint64_t *out)
{
    uint64_t span = si_round(size ? size : 1, a->grain);
    if (align < a->grain) align = a->grain;
    if (!a->seed) a->seed = 0x9e3779b9u;
    uint32_t fit = si_first_fit(a, a->root, span, align); /* the block just above the gap */
    uint64_t below = fit ? a->v[fit].addr - a->v[fit].gap : a->root ? a->hi_end : a->base;
    uint64_t cand = si_round(below, align);
    if (!fit && (cand > a->limit || a->limit - cand < span)) return -1;
    uint32_t x = si_node_new(a); /* may move a->v: no node pointers are held across it */
    a->seed ^= a->seed << 13;
    a->seed ^= a->seed >> 17;
    a->seed ^= a->seed << 5;
    a->v[x] =
        (si_node_t){.addr = cand, .span = span, .size = size, .gap = cand - below, .prio = a->seed};
    if (fit)
        a->v[fit].gap = a->v[fit].addr - (cand + span); /* on x's search path */
    else
        a->hi_end = cand + span;
    a->root = si_insert(a, a->root, x);
    a->n++;
    *out = cand;
    return 0;
}

/* The node of the block starting at addr, or 0. */
static uint32_t si_arena_find_locked(const si_arena_t *a, uint64_t addr)
{
    uint32_t t = a->root;
    while (t && a->v[t].addr != addr)
        t = addr < a->v[t].addr ? a->v[t].left : a->v[t].right;
    return t;
}

/* The node of the highest block starting at or below addr, or 0. */
static uint32_t si_arena_floor_locked(const si_arena_t *a, uint64_t addr)
{
    uint32_t t = a->root, best = 0;
    while (t) {
        if (a->v[t].addr <= addr) {
            best = t;
            t = a->v[t].right;
        } else {
            t = a->v[t].left;
        }
    }
    return best;
}

/* Removes the block starting at addr: its span and the gap below it become the gap below the
 * next block. Returns the block's span, or 0 when no block starts at addr. */
static uint64_t si_arena_remove_locked(si_arena_t *a, uint64_t addr)
{
    uint32_t t = a->root, next = 0; /* next: the lowest block above t's path, so far */
    while (t && a->v[t].addr != addr) {
        if (addr < a->v[t].addr) {
            next = t;
            t = a->v[t].left;
        } else {
            t = a->v[t].right;
        }
    }
    if (!t) return 0;
    uint64_t span = a->v[t].span, below = a->v[t].addr - a->v[t].gap;
    if (a->v[t].right)
        si_set_lowest_gap(a, a->v[t].right, below); /* the next block is the lowest there */
    else if (next)
        a->v[next].gap = a->v[next].addr - below; /* an ancestor: updated by the erase */
    else
        a->hi_end = below; /* t was the highest block */
    a->root = si_erase(a, a->root, addr);
    a->v[t].left = a->free_idx;
    a->free_idx = t;
    a->n--;
    return span;
}

static int si_valid_dev(int dev)
{
    return dev >= 0 && dev < g_ndev;
}

static CUresult si_device_alloc(int dev, CUdeviceptr *dptr, size_t size)
{
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    si_lock();
    if (g_hold_bytes && size == g_hold_bytes) {
        /* The whole time, even across a signal handler's interruption. */
        struct timespec end;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += (time_t)(g_hold_ms / 1000);
        end.tv_nsec += (long)(g_hold_ms % 1000) * 1000000L;
        if (end.tv_nsec >= 1000000000L) end.tv_sec++, end.tv_nsec -= 1000000000L;
        __atomic_store_n(&g_holding, 1, __ATOMIC_RELEASE);
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {
        }
        __atomic_store_n(&g_holding, 0, __ATOMIC_RELEASE);
    }
    CUresult rc = CUDA_SUCCESS;
    uint64_t addr = 0;
    if (!si_valid_dev(dev)) {
        rc = CUDA_ERROR_INVALID_DEVICE;
    } else {
        si_device_t *d = &g_dev[dev];
        uint64_t span = si_round(size, SI_DEVICE_GRAIN);
        if (span > g_mem_bytes - d->used || si_arena_alloc_locked(&d->mem, size, 0, &addr) != 0)
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else
            d->used += span;
    }
    si_unlock();
    if (rc == CUDA_SUCCESS) *dptr = (CUdeviceptr)addr;
    return rc;
}

static ssize_t si_host_find_locked(uint64_t addr, int managed)
{
    for (size_t i = 0; i < g_nhost; i++)
        if (g_host[i].addr == addr && (g_host[i].device >= 0) == managed) return (ssize_t)i;
    return -1;
}

static void si_host_remove_locked(size_t i)
{
    g_host[i] = g_host[--g_nhost];
}

/* Frees device, pool or managed memory. */
static CUresult si_free(CUdeviceptr dptr)
{
    if (dptr == 0) return CUDA_SUCCESS; /* like the real driver, freeing NULL is allowed */
    si_lock();
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    void *unmap_addr = NULL;
    size_t unmap_len = 0;
    for (int dev = 0; dev < g_ndev; dev++) {
        si_device_t *d = &g_dev[dev];
        if (dptr < d->mem.base || dptr >= d->mem.limit) continue;
        uint64_t span = si_arena_remove_locked(&d->mem, dptr);
        if (span) {
            d->used -= span;
            rc = CUDA_SUCCESS;
        }
        break;
    }
    if (rc != CUDA_SUCCESS) {
        ssize_t i = si_host_find_locked(dptr, 1);
        if (i >= 0) {
            g_dev[g_host[i].device].used -= g_host[i].maplen;
            unmap_addr = (void *)(uintptr_t)g_host[i].addr;
            unmap_len = g_host[i].maplen;
            si_host_remove_locked((size_t)i);
            rc = CUDA_SUCCESS;
        }
    }
    si_unlock();
    if (unmap_addr) munmap(unmap_addr, unmap_len);
    return rc;
}

/* Pinned (device < 0) or managed (device >= 0, charged to it) host memory. */
static CUresult si_host_alloc(void **pp, size_t size, int device)
{
    if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t maplen = si_round(size, 4096);
    si_lock();
    CUresult rc = CUDA_SUCCESS;
    if (device >= 0 && (!si_valid_dev(device) || maplen > g_mem_bytes - g_dev[device].used))
        rc = si_valid_dev(device) ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_DEVICE;
    void *p = MAP_FAILED;
    if (rc == CUDA_SUCCESS) {
        p = mmap(NULL, maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            g_host = si_grow(g_host, &g_caphost, g_nhost + 1, sizeof(*g_host));
            g_host[g_nhost++] = (si_host_t){(uint64_t)(uintptr_t)p, size, maplen, device};
            if (device >= 0) g_dev[device].used += maplen;
        }
    }
    si_unlock();
    if (rc == CUDA_SUCCESS) *pp = p;
    return rc;
}

/* ---- initialisation, devices, contexts, errors ---- */

CUresult cuInit(unsigned int Flags)
{
    (void)Flags;
    pthread_once(&g_once, si_init);
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = 13000;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&g_once, si_init);
    *count = g_ndev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    pthread_once(&g_once, si_init);
    if (!si_valid_dev(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    pthread_once(&g_once, si_init);
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!si_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", "gpumemtrace stand-in GPU");
    return CUDA_SUCCESS;
}

static CUresult si_get_uuid(CUuuid *uuid, CUdevice dev)
{
    pthread_once(&g_once, si_init);
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    if (!si_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    static const unsigned char stem[16] = {0x6a, 0x6d, 0x74, 0x00, 0x5e, 0x51, 0x4a, 0x4d,
                                           0x8a, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    memcpy(uuid->bytes, stem, sizeof(stem));
    uuid->bytes[15] = (char)dev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return si_get_uuid(uuid, dev);
}

CUresult standin_get_uuid_v1(CUuuid *uuid, CUdevice dev)
{
    return si_get_uuid(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    pthread_once(&g_once, si_init);
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (!si_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = g_mem_bytes;
    return CUDA_SUCCESS;
}

static unsigned long g_ctx_get_device_calls;

__attribute__((destructor)) static void si_print_queries(void)
{
    const char *s = getenv("GMT_STANDIN_COUNT_QUERIES");
    if (s && s[0] == '1')
        fprintf(stderr, "standin: cuCtxGetDevice calls %lu\n",
                __atomic_load_n(&g_ctx_get_device_calls, __ATOMIC_RELAXED));
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    __atomic_fetch_add(&g_ctx_get_device_calls, 1, __ATOMIC_RELAXED);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = t_cur_dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    pthread_once(&g_once, si_init);
    int dev = ctx ? (int)((uintptr_t)ctx - 1) : 0;
    if (!si_valid_dev(dev)) return CUDA_ERROR_INVALID_CONTEXT;
    t_cur_dev = dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)(uintptr_t)(t_cur_dev + 1);
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
    si_lock();
    int dev = si_valid_dev(t_cur_dev) ? t_cur_dev : 0;
    *total = g_mem_bytes;
    *free = g_mem_bytes - g_dev[dev].used;
    si_unlock();
    return CUDA_SUCCESS;
}

static const struct {
    CUresult code;
    const char *name, *text;
} si_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int si_error_index(CUresult error)
{
    for (size_t i = 0; i < sizeof(si_errors) / sizeof(si_errors[0]); i++)
        if (si_errors[i].code == error) return (int)i;
    return -1;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    int i = si_error_index(error);
    *pStr = i >= 0 ? si_errors[i].name : NULL;
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    if (!pStr) return CUDA_ERROR_INVALID_VALUE;
    int i = si_error_index(error);
    *pStr = i >= 0 ? si_errors[i].text : NULL;
    return i >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- device memory ---- */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return si_device_alloc(t_cur_dev, dptr, bytesize);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    if (!pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = si_round(WidthInBytes, SI_DEVICE_GRAIN);
    CUresult rc = si_device_alloc(t_cur_dev, dptr, pitch * Height);
    if (rc == CUDA_SUCCESS) *pPitch = pitch;
    return rc;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return si_free(dptr);
}

/* ---- stream-ordered pools ---- */

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    if (!pool || !poolProps || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    si_lock();
    CUresult rc = CUDA_SUCCESS;
    if (!si_valid_dev(poolProps->location.id))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (g_npools >= sizeof(g_pools) / sizeof(g_pools[0]))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        g_pools[g_npools] = (si_pool_t){poolProps->location.id, 1};
        *pool = (CUmemoryPool)(uintptr_t)(SI_POOL_BASE + g_npools);
        g_npools++;
    }
    si_unlock();
    return rc;
}

/* Device of a live pool, or -1. Caller holds the lock. */
static int si_pool_device_locked(CUmemoryPool pool)
{
    uint64_t i = (uint64_t)(uintptr_t)pool - SI_POOL_BASE;
    if ((uint64_t)(uintptr_t)pool < SI_POOL_BASE || i >= g_npools || !g_pools[i].live) return -1;
    return g_pools[i].device;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    si_lock();
    int dev = si_pool_device_locked(pool);
    if (dev >= 0) g_pools[(uintptr_t)pool - SI_POOL_BASE].live = 0;
    si_unlock();
    return dev >= 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* The plain and _ptsz entry points share these bodies: an exported function never calls
 * another exported one, which a preloaded tracer would see as a second call. */
static CUresult si_alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool)
{
    si_lock();
    int dev = si_pool_device_locked(pool);
    si_unlock();
    if (dev < 0) return CUDA_ERROR_INVALID_VALUE;
    return si_device_alloc(dev, dptr, bytesize);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    (void)hStream;
    return si_device_alloc(t_cur_dev, dptr, bytesize);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    (void)hStream;
    return si_device_alloc(t_cur_dev, dptr, bytesize);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    (void)hStream;
    return si_alloc_from_pool(dptr, bytesize, pool);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    (void)hStream;
    return si_alloc_from_pool(dptr, bytesize, pool);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    (void)hStream;
    return si_free(dptr);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    (void)hStream;
    return si_free(dptr);
}

/* ---- managed and pinned host memory ---- */

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)flags;
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    CUresult rc = si_host_alloc(&p, bytesize, t_cur_dev);
    if (rc == CUDA_SUCCESS) *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    (void)Flags;
    return si_host_alloc(pp, bytesize, -1);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return si_host_alloc(pp, bytesize, -1);
}

CUresult cuMemFreeHost(void *p)
{
    si_lock();
    ssize_t i = si_host_find_locked((uint64_t)(uintptr_t)p, 0);
    size_t len = 0;
    if (i >= 0) {
        len = g_host[i].maplen;
        si_host_remove_locked((size_t)i);
    }
    si_unlock();
    if (i < 0) return CUDA_ERROR_INVALID_VALUE;
    munmap(p, len);
    return CUDA_SUCCESS;
}

/* ---- virtual memory management ---- */

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    (void)addr; /* the hint is only a hint */
    (void)flags;
    if (!ptr || size == 0 || size % SI_VMM_GRAIN != 0 || (alignment & (alignment - 1)) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    si_lock();
    uint64_t base = 0;
    int rc = si_arena_alloc_locked(&g_reserve, size, alignment, &base);
    si_unlock();
    if (rc != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    si_lock();
    uint32_t i = si_arena_find_locked(&g_reserve, ptr);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (i && g_reserve.v[i].size == size) {
        si_arena_remove_locked(&g_reserve, ptr);
        rc = CUDA_SUCCESS;
    }
    si_unlock();
    return rc;
}

static ssize_t si_handle_find_locked(uint64_t handle)
{
    for (size_t i = 0; i < g_nhandles; i++)
        if (g_handles[i].handle == handle) return (ssize_t)i;
    return -1;
}

/* Physical memory goes back to its device once the handle is released and no longer mapped. */
static void si_handle_maybe_drop_locked(size_t i)
{
    if (g_handles[i].released && g_handles[i].maps == 0) {
        g_dev[g_handles[i].device].used -= g_handles[i].span;
        g_handles[i] = g_handles[--g_nhandles];
    }
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)flags;
    if (!handle || !prop || size == 0 || size % SI_VMM_GRAIN != 0 ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    /* A machine without a fabric (no IMEX daemon, no NVSwitch domain), as most are: a fabric
     * handle is refused, as the H100 machines refused PyTorch's (docs/VALIDATION.md, session
     * 47). */
    if (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_FABRIC) return CUDA_ERROR_NOT_PERMITTED;
    si_lock();
    int dev = prop->location.id;
    CUresult rc = CUDA_SUCCESS;
    if (!si_valid_dev(dev))
        rc = CUDA_ERROR_INVALID_DEVICE;
    else if (size > g_mem_bytes - g_dev[dev].used)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        g_handles = si_grow(g_handles, &g_caphandles, g_nhandles + 1, sizeof(*g_handles));
        g_handles[g_nhandles++] = (si_handle_t){g_next_handle, size, size, dev, 0, 0};
        g_dev[dev].used += size;
        *handle = g_next_handle++;
    }
    si_unlock();
    return rc;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    si_lock();
    ssize_t i = si_handle_find_locked(handle);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (i >= 0 && !g_handles[i].released) {
        g_handles[i].released = 1;
        si_handle_maybe_drop_locked((size_t)i);
        rc = CUDA_SUCCESS;
    }
    si_unlock();
    return rc;
}

/* Whether [ptr, ptr + size) lies inside one reservation. Caller holds the lock. */
static int si_reserved_locked(uint64_t ptr, uint64_t size)
{
    uint32_t i = si_arena_floor_locked(&g_reserve, ptr);
    if (!i) return 0;
    const si_node_t *b = &g_reserve.v[i];
    return ptr + size <= b->addr + b->span;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    if (flags != 0 || size == 0 || size % SI_VMM_GRAIN != 0 || ptr % SI_VMM_GRAIN != 0)
        return CUDA_ERROR_INVALID_VALUE;
    si_lock();
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    ssize_t h = si_handle_find_locked(handle);
    if (h >= 0 && !g_handles[h].released && offset + size <= g_handles[h].size &&
        si_reserved_locked(ptr, size)) {
        int overlap = 0;
        for (size_t i = 0; i < g_nmaps; i++)
            if (ptr < g_maps[i].addr + g_maps[i].size && g_maps[i].addr < ptr + size) overlap = 1;
        if (!overlap) {
            g_maps = si_grow(g_maps, &g_capmaps, g_nmaps + 1, sizeof(*g_maps));
            g_maps[g_nmaps++] = (si_map_t){ptr, size, handle};
            g_handles[h].maps++;
            rc = CUDA_SUCCESS;
        }
    }
    si_unlock();
    return rc;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    si_lock();
    size_t removed = 0;
    for (size_t i = 0; i < g_nmaps;) {
        si_map_t m = g_maps[i];
        if (m.addr >= ptr && m.addr + m.size <= ptr + size) {
            g_maps[i] = g_maps[--g_nmaps];
            ssize_t h = si_handle_find_locked(m.handle);
            if (h >= 0) {
                g_handles[h].maps--;
                si_handle_maybe_drop_locked((size_t)h);
            }
            removed++;
        } else {
            i++;
        }
    }
    si_unlock();
    return removed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (!desc || count == 0) return CUDA_ERROR_INVALID_VALUE;
    si_lock();
    int ok = si_reserved_locked(ptr, size);
    si_unlock();
    return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!granularity || !prop) return CUDA_ERROR_INVALID_VALUE;
    *granularity = SI_VMM_GRAIN;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    pthread_once(&g_once, si_init);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    if (!si_valid_dev(device)) return CUDA_ERROR_INVALID_DEVICE;
    unsigned long long v[4] = {0, 0, 0, 0};
    const char *s = getenv("GMT_STANDIN_GRAPH_MEM");
    if (s && strcmp(s, "fail") == 0) return CUDA_ERROR_NOT_SUPPORTED;
    if (s && *s && sscanf(s, "%llu,%llu,%llu,%llu", &v[0], &v[1], &v[2], &v[3]) != 4) {
        fprintf(stderr, "standin libcuda: bad GMT_STANDIN_GRAPH_MEM='%s', using 0\n", s);
        v[0] = v[1] = v[2] = v[3] = 0;
    }
    int i;
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
        i = 0;
        break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
        i = 1;
        break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
        i = 2;
        break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
        i = 3;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    *(cuuint64_t *)value = v[i];
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress ---- */

/* One row per (base name, first version): the newest row whose version <= the caller's wins,
 * like the real driver. ptsz is the per-thread-default-stream variant, where one exists. */
#define SI_FN(f) ((void *)(uintptr_t)(f))
static const struct {
    const char *name;
    int version;
    void *fn;
    void *ptsz;
} si_procs[] = {
    {"cuInit", 2000, SI_FN(cuInit), NULL},
    {"cuDriverGetVersion", 2020, SI_FN(cuDriverGetVersion), NULL},
    {"cuDeviceGetCount", 2000, SI_FN(cuDeviceGetCount), NULL},
    {"cuDeviceGet", 2000, SI_FN(cuDeviceGet), NULL},
    {"cuDeviceGetName", 2000, SI_FN(cuDeviceGetName), NULL},
    {"cuDeviceGetUuid", 11040, SI_FN(cuDeviceGetUuid_v2), NULL},
    {"cuDeviceGetUuid", 9020, SI_FN(standin_get_uuid_v1), NULL},
    {"cuDeviceTotalMem", 3020, SI_FN(cuDeviceTotalMem_v2), NULL},
    {"cuCtxGetDevice", 2000, SI_FN(cuCtxGetDevice), NULL},
    {"cuCtxSetCurrent", 4000, SI_FN(cuCtxSetCurrent), NULL},
    {"cuCtxGetCurrent", 4000, SI_FN(cuCtxGetCurrent), NULL},
    {"cuMemGetInfo", 3020, SI_FN(cuMemGetInfo_v2), NULL},
    {"cuGetErrorName", 6000, SI_FN(cuGetErrorName), NULL},
    {"cuGetErrorString", 6000, SI_FN(cuGetErrorString), NULL},
    {"cuMemAlloc", 3020, SI_FN(cuMemAlloc_v2), NULL},
    {"cuMemAllocPitch", 3020, SI_FN(cuMemAllocPitch_v2), NULL},
    {"cuMemFree", 3020, SI_FN(cuMemFree_v2), NULL},
    {"cuMemAllocAsync", 11020, SI_FN(cuMemAllocAsync), SI_FN(cuMemAllocAsync_ptsz)},
    {"cuMemAllocFromPoolAsync", 11020, SI_FN(cuMemAllocFromPoolAsync),
     SI_FN(cuMemAllocFromPoolAsync_ptsz)},
    {"cuMemFreeAsync", 11020, SI_FN(cuMemFreeAsync), SI_FN(cuMemFreeAsync_ptsz)},
    {"cuMemPoolCreate", 11020, SI_FN(cuMemPoolCreate), NULL},
    {"cuMemPoolDestroy", 11020, SI_FN(cuMemPoolDestroy), NULL},
    {"cuMemAllocManaged", 6000, SI_FN(cuMemAllocManaged), NULL},
    {"cuMemHostAlloc", 2020, SI_FN(cuMemHostAlloc), NULL},
    {"cuMemAllocHost", 3020, SI_FN(cuMemAllocHost_v2), NULL},
    {"cuMemFreeHost", 2000, SI_FN(cuMemFreeHost), NULL},
    {"cuMemAddressReserve", 10020, SI_FN(cuMemAddressReserve), NULL},
    {"cuMemAddressFree", 10020, SI_FN(cuMemAddressFree), NULL},
    {"cuMemCreate", 10020, SI_FN(cuMemCreate), NULL},
    {"cuMemRelease", 10020, SI_FN(cuMemRelease), NULL},
    {"cuMemMap", 10020, SI_FN(cuMemMap), NULL},
    {"cuMemUnmap", 10020, SI_FN(cuMemUnmap), NULL},
    {"cuMemSetAccess", 10020, SI_FN(cuMemSetAccess), NULL},
    {"cuMemGetAllocationGranularity", 10020, SI_FN(cuMemGetAllocationGranularity), NULL},
    {"cuDeviceGetGraphMemAttribute", 11040, SI_FN(cuDeviceGetGraphMemAttribute), NULL},
    {"cuGetProcAddress", 12000, SI_FN(cuGetProcAddress_v2), NULL},
    {"cuGetProcAddress", 11030, SI_FN(standin_gpa_v1), NULL},
};

static CUresult si_lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    int found_name = 0;
    for (size_t i = 0; i < sizeof(si_procs) / sizeof(si_procs[0]); i++) {
        if (strcmp(si_procs[i].name, symbol) != 0) continue;
        found_name = 1;
        if (cudaVersion < si_procs[i].version) continue;
        void *fn = si_procs[i].fn;
        if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && si_procs[i].ptsz)
            fn = si_procs[i].ptsz;
        *pfn = fn;
        if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    *pfn = NULL;
    if (status)
        *status = found_name ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                             : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    return si_lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

CUresult standin_gpa_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return si_lookup(symbol, pfn, cudaVersion, flags, NULL);
}
