/* pools.c - the stream-ordered pools seen so far (pool handle 0: the device's current pool),
 * for the report's reserved-versus-used view. A fixed array claimed slot by slot with a CAS,
 * never removed, so a pool's index in it names the pool in the live table's records (track.h);
 * pools past GMT_MAX_POOLS are counted, not kept, and their records say GMT_POOL_UNLISTED.
 * The providers that ask the driver for a pool's figures and for a device's graph memory (the
 * pool CUDA graphs' memory nodes draw from) are kept here too.
 */
#include "track_internal.h"

#include <string.h>

enum { SLOT_FREE = 0, SLOT_WRITING = 1, SLOT_PUBLISHED = 2 };

#define pools          (gmt_cs->pools)
#define pools_unlisted (gmt_cs->pools_unlisted)
static gmt_poolinfo_fn poolinfo_fn;
static gmt_graphmeminfo_fn graphmeminfo_fn; /* the device's graph memory: CUDA graphs' pool */

_Static_assert(GMT_MAX_POOLS <= GMT_POOL_NONE && GMT_MAX_POOLS <= GMT_POOL_UNLISTED &&
                   GMT_POOL_NONE != GMT_POOL_UNLISTED,
               "the reserved indices are no list index");
_Static_assert(GMT_POOL_NONE <= GMT_TABLE_POOL_MASK && GMT_POOL_UNLISTED <= GMT_TABLE_POOL_MASK,
               "every pool index fits the table's slot");

uint8_t gmt_pools_note(int32_t device, uint64_t pool)
{
    for (int i = 0; i < GMT_MAX_POOLS; i++) {
        int u = __atomic_load_n(&pools[i].used, __ATOMIC_ACQUIRE);
        if (u == SLOT_PUBLISHED && pools[i].device == device && pools[i].pool == pool)
            return (uint8_t)i;
        if (u == SLOT_FREE) {
            if (!__atomic_compare_exchange_n(&pools[i].used, &u, SLOT_WRITING, 0, __ATOMIC_ACQUIRE,
                                             __ATOMIC_ACQUIRE)) {
                i--; /* look at this slot again */
                continue;
            }
            pools[i].device = device;
            pools[i].pool = pool;
            __atomic_store_n(&pools[i].used, SLOT_PUBLISHED, __ATOMIC_RELEASE);
            return (uint8_t)i;
        }
        while (u == SLOT_WRITING)
            u = __atomic_load_n(&pools[i].used, __ATOMIC_ACQUIRE);
        if (pools[i].device == device && pools[i].pool == pool) return (uint8_t)i;
    }
    /* Said once (the report counts them all: capture.pool_list.unlisted_allocations). */
    if (__atomic_fetch_add(&pools_unlisted, 1, __ATOMIC_RELAXED) == 0)
        gmt_track_warn("more than %d stream-ordered pools: allocations in the others are in the "
                       "totals and the leaks but in no pool's figures (capture.pool_list)",
                       GMT_MAX_POOLS);
    return GMT_POOL_UNLISTED;
}

int gmt_track_pools(gmt_pool_seen_t *out, int max)
{
    int n = 0;
    for (int i = 0; i < GMT_MAX_POOLS && n < max; i++)
        if (__atomic_load_n(&pools[i].used, __ATOMIC_ACQUIRE) == SLOT_PUBLISHED)
            out[n++] = (gmt_pool_seen_t){pools[i].device, (uint8_t)i, pools[i].pool};
    return n;
}

void gmt_track_set_poolinfo(gmt_poolinfo_fn fn)
{
    __atomic_store_n(&poolinfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_poolinfo_fn gmt_track_poolinfo(void)
{
    if (gmt_track_driver_is_off()) return NULL;
    return __atomic_load_n(&poolinfo_fn, __ATOMIC_ACQUIRE);
}

void gmt_track_set_graphmeminfo(gmt_graphmeminfo_fn fn)
{
    __atomic_store_n(&graphmeminfo_fn, fn, __ATOMIC_RELEASE);
}

gmt_graphmeminfo_fn gmt_track_graphmeminfo(void)
{
    if (gmt_track_driver_is_off()) return NULL;
    return __atomic_load_n(&graphmeminfo_fn, __ATOMIC_ACQUIRE);
}
