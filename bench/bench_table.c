/* bench_table.c - the live table's insert and remove alone (src/core/table.c), for callgrind.
 *
 * usage: bench_table PAIRS [LIVE]
 *   Fills the table with LIVE entries (default 64), then makes PAIRS insert+remove pairs that
 *   recycle them: each pair frees the oldest key and inserts a new one in its place, the way a
 *   caching allocator's cudaMalloc/cudaFree churn reaches the tracer. Keys look like device
 *   pointers (512-byte aligned, one high base). Run it under callgrind with two PAIRS and
 *   divide the difference of the totals by the difference of PAIRS (docs/PERFORMANCE.md):
 *     valgrind --tool=callgrind bench/bench_table 20000 ; ... 60000
 *   It prints the live count, the capacity and the newest level's longest probe.
 */
#include "core/region.h"
#include "core/table.h"

#include <stdio.h>
#include <stdlib.h>

#define BASE 0x7f0000000000ull

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_table PAIRS [LIVE]\n");
        return 2;
    }
    unsigned long long pairs = strtoull(argv[1], NULL, 0);
    unsigned long long live = argc > 2 ? strtoull(argv[2], NULL, 0) : 64;
    if (live == 0) live = 1;
    if (gmt_region_create(NULL) != 0) return 1;
    uint64_t off;
    if (gmt_region_alloc(GMT_ARENA_CORE, sizeof(gmt_table_t), 64, &off) != 0) return 1;
    gmt_table_t *t = GMT_AT(gmt_table_t, off);
    if (gmt_table_init(t, 0) != 0) return 1;
    gmt_record_t r = {.size = 1 << 20, .stack_id = 1, .device = 0, .kind = 0, .api = 1};
    for (unsigned long long i = 0; i < live; i++) {
        r.key = BASE + i * 512;
        if (gmt_table_insert(t, &r) != 0) return 1;
    }
    /* Keys 0..live-1 are live; pair i frees key i and allocates key i + live. */
    gmt_record_t out;
    for (unsigned long long i = 0; i < pairs; i++) {
        if (gmt_table_remove(t, 0, BASE + (i % (2 * live)) * 512, &out) != 0) return 1;
        r.key = BASE + ((i + live) % (2 * live)) * 512;
        if (gmt_table_insert(t, &r) != 0) return 1;
    }
    gmt_record_t probe;
    printf("live %llu capacity %llu max_probe %llu lookup %d\n",
           (unsigned long long)gmt_table_live(t), (unsigned long long)gmt_table_capacity(t),
           (unsigned long long)gmt_table_max_probe(t),
           gmt_table_lookup(t, 0, BASE + ((pairs + live - 1) % (2 * live)) * 512, &probe));
    return 0;
}
