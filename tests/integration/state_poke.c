/* state_poke.c - reads or damages the growth sampler's part of a state file (docs/state.md),
 * for integration.state_growth_damaged. Built with the tracer's own headers, so the offsets it
 * patches are this build's layout: the header's chunk table maps an offset in the region to
 * one in the file; the core block (gmt_core_state_t, at the header's core_off) holds the
 * sampler block's offset and size (growth_off, growth_bytes); the block is a gmt_growth_t.
 *
 *   state_poke FILE show           prints growth_off=, growth_bytes=, n=, ids_seen=, row_ids=
 *                                  (row_ids: the stack ids the committed rows hold)
 *   state_poke FILE FIELD VALUE    writes VALUE into FIELD: growth_off, growth_bytes (the core
 *                                  block's), n, ids_seen (the sampler block's)
 *
 * Exit 0, or 1 with one line on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/region.h"
#include "core/track_internal.h"
#include "output/growth.h"

static gmt_region_header_t h;
static int fd = -1;

static void die(const char *what)
{
    fprintf(stderr, "state_poke: %s\n", what);
    exit(1);
}

/* The file offset of n bytes at region offset va (inside one chunk). */
static off_t file_at(uint64_t va, size_t n)
{
    for (uint32_t i = 0; i < h.nchunks && i < GMT_REGION_MAX_CHUNKS; i++) {
        uint64_t lo = h.chunks[i].va_off, len = h.chunks[i].len;
        if (va >= lo && n <= len && va - lo <= len - n)
            return (off_t)(h.chunks[i].file_off + (va - lo));
    }
    die("offset not in the file's chunks");
    return 0;
}

static void get(uint64_t va, void *p, size_t n)
{
    if (pread(fd, p, n, file_at(va, n)) != (ssize_t)n) die("short read");
}

static void put(uint64_t va, const void *p, size_t n)
{
    if (pwrite(fd, p, n, file_at(va, n)) != (ssize_t)n) die("short write");
}

int main(int argc, char **argv)
{
    bool show = argc == 3 && strcmp(argv[2], "show") == 0;
    if (!show && argc != 4) die("usage: state_poke FILE show | state_poke FILE FIELD VALUE");
    fd = open(argv[1], show ? O_RDONLY : O_RDWR);
    if (fd < 0) die(strerror(errno));
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, GMT_REGION_MAGIC, 8) != 0 || h.header_bytes != sizeof h)
        die("not a state file of this build");
    const uint64_t off_at = h.core_off + offsetof(gmt_core_state_t, growth_off);
    const uint64_t bytes_at = h.core_off + offsetof(gmt_core_state_t, growth_bytes);
    uint64_t goff;
    uint32_t gbytes;
    get(off_at, &goff, sizeof goff);
    get(bytes_at, &gbytes, sizeof gbytes);
    if (show) {
        if (!goff) die("the file has no growth sampler block");
        int n;
        uint32_t seen;
        get(goff + offsetof(gmt_growth_t, n), &n, sizeof n);
        get(goff + offsetof(gmt_growth_t, ids_seen), &seen, sizeof seen);
        uint64_t rows =
            h.arenas[GMT_ARENA_GROWTH].committed / ((uint64_t)GMT_GROWTH_POINTS * sizeof(int64_t));
        printf("growth_off=%" PRIu64 " growth_bytes=%" PRIu32 " n=%d ids_seen=%" PRIu32
               " row_ids=%" PRIu64 " sizeof=%zu\n",
               goff, gbytes, n, seen, rows, sizeof(gmt_growth_t));
        return 0;
    }
    const char *field = argv[2];
    long long v = strtoll(argv[3], NULL, 0);
    if (strcmp(field, "growth_off") == 0) {
        uint64_t x = (uint64_t)v;
        put(off_at, &x, sizeof x);
    } else if (strcmp(field, "growth_bytes") == 0) {
        uint32_t x = (uint32_t)v;
        put(bytes_at, &x, sizeof x);
    } else if (!goff) {
        die("the file has no growth sampler block");
    } else if (strcmp(field, "n") == 0) {
        int x = (int)v;
        put(goff + offsetof(gmt_growth_t, n), &x, sizeof x);
    } else if (strcmp(field, "ids_seen") == 0) {
        uint32_t x = (uint32_t)v;
        put(goff + offsetof(gmt_growth_t, ids_seen), &x, sizeof x);
    } else {
        die("unknown field");
    }
    return 0;
}
