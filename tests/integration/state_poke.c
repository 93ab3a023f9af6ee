/* state_poke.c - reads or damages the growth sampler's part of a state file (docs/state.md),
 * for integration.state_growth_damaged, and its Python code cache, for python.recover.3.X.
 * Built with the tracer's own headers, so the offsets it patches are this build's layout: the
 * header's chunk table maps an offset in the region to one in the file; the core block
 * (gmt_core_state_t, at the header's core_off) holds the sampler block's offset and size
 * (growth_off, growth_bytes) and the code cache's (pycode_off, pycode_bytes); the block is a
 * gmt_growth_t; the code cache's layout is pyframes.c's, which damages it
 * (gmt_py_test_damage_cache, gmt_py_test_break_cache_header).
 *
 *   state_poke FILE show           prints growth_off=, growth_bytes=, n=, ids_seen=, row_ids=
 *                                  (row_ids: the stack ids the committed rows hold)
 *   state_poke FILE FIELD VALUE    writes VALUE into FIELD: growth_off, growth_bytes (the core
 *                                  block's), n, ids_seen (the sampler block's)
 *   state_poke FILE pycode_damage NAME...
 *                                  puts past the code cache's text arena the text offset of
 *                                  every filled-in entry whose function (qualified name) is one
 *                                  of the NAMEs; prints damaged=N, how many
 *   state_poke FILE pycode_header  damages the code cache's header (one bit of its magic), so
 *                                  that recovery refuses the whole cache; prints header=damaged
 *   state_poke FILE table_busy SLOTS [SIZE]
 *                                  appends SLOTS slots (a multiple of 512) to the file, all
 *                                  BUSY with an odd generation (LIVE ones being moved, as a
 *                                  killed owner leaves a few) and of SIZE bytes (default 0; at
 *                                  most 2^48 - 1) on GPU 0, as a chunk of the table's arena,
 *                                  and makes them the table's two active levels at once, the
 *                                  newer one's max_probe its whole capacity: the shape whose
 *                                  checks cost SLOTS x SLOTS probes; prints slots=SLOTS
 *   state_poke FILE BLOCK.FIELD VALUE
 *                                  writes VALUE (its low bytes, as many as the field has; +N:
 *                                  N added to what is there; @table: where the live table's
 *                                  arena starts) into a field of a store's block,
 *                                  one of `fields` below: the damage
 *                                  fuzz.state found, for integration.state_fields_damaged; prints
 *                                  the value that was there (was=N). A field of bytes (the
 *                                  header's whose.hostname, whose.boot_id) takes VALUE's text,
 *                                  zero-filled, and prints the bytes that were there in hex
 *   state_poke FILE whose          prints the header's record of the owner's host and pid
 *                                  namespace: pidns_dev=, pidns_ino=, boot_id= (32 hex digits)
 *                                  and hostname=, for cli.top_verb.owner_elsewhere
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
#include <sys/stat.h>
#include <unistd.h>

#include "core/pyframes.h"
#include "core/region.h"
#include "core/stats.h"
#include "core/table.h"
#include "core/track_internal.h"
#include "output/growth.h"

static gmt_region_header_t h;
static int fd = -1;

static void die(const char *what)
{
    fprintf(stderr, "state_poke: %s\n", what);
    exit(1);
}

/* Reads (write false) or writes n bytes at region offset va, which may span chunks. */
static void io(uint64_t va, void *p, size_t n, bool write)
{
    while (n) {
        uint32_t i = 0;
        while (i < h.nchunks && i < GMT_REGION_MAX_CHUNKS &&
               !(va >= h.chunks[i].va_off && va - h.chunks[i].va_off < h.chunks[i].len))
            i++;
        if (i >= h.nchunks || i >= GMT_REGION_MAX_CHUNKS) die("offset not in the file's chunks");
        uint64_t in = h.chunks[i].len - (va - h.chunks[i].va_off);
        size_t k = n < in ? n : (size_t)in;
        off_t at = (off_t)(h.chunks[i].file_off + (va - h.chunks[i].va_off));
        ssize_t got = write ? pwrite(fd, p, k, at) : pread(fd, p, k, at);
        if (got != (ssize_t)k) die(write ? "short write" : "short read");
        va += k;
        p = (char *)p + k;
        n -= k;
    }
}

static void get(uint64_t va, void *p, size_t n)
{
    io(va, p, n, false);
}

static void put(uint64_t va, const void *p, size_t n)
{
    io(va, (void *)p, n, true);
}

/* The fields state_poke FILE BLOCK.FIELD VALUE writes: the block's place is the header's
 * (header: offset 0, core: core_off, table: table_off, stacks: stacks_off). */
enum { AT_HEADER, AT_CORE, AT_TABLE, AT_STACKS };
#define FIELD(name, at, type, member)                                                              \
    {                                                                                              \
        name, at, offsetof(type, member), sizeof(((type *)0)->member), false                       \
    }
/* a field of bytes, written from VALUE's text */
#define BYTES(name, at, type, member)                                                              \
    {                                                                                              \
        name, at, offsetof(type, member), sizeof(((type *)0)->member), true                        \
    }
static const struct {
    const char *name;
    int at;
    size_t off, size;
    bool bytes;
} fields[] = {
    FIELD("header.pid", AT_HEADER, gmt_region_header_t, pid),
    FIELD("header.start_ticks", AT_HEADER, gmt_region_header_t, start_ticks),
    FIELD("header.core_off", AT_HEADER, gmt_region_header_t, core_off),
    FIELD("header.stats_off", AT_HEADER, gmt_region_header_t, stats_off),
    FIELD("header.whose.pidns_dev", AT_HEADER, gmt_region_header_t, whose.pidns_dev),
    FIELD("header.whose.pidns_ino", AT_HEADER, gmt_region_header_t, whose.pidns_ino),
    BYTES("header.whose.boot_id", AT_HEADER, gmt_region_header_t, whose.boot_id),
    BYTES("header.whose.hostname", AT_HEADER, gmt_region_header_t, whose.hostname),
    FIELD("core.cfg.unwind", AT_CORE, gmt_core_state_t, cfg.unwind),
    FIELD("core.cfg.backend", AT_CORE, gmt_core_state_t, cfg.backend),
    FIELD("core.cfg.python", AT_CORE, gmt_core_state_t, cfg.python),
    FIELD("core.growth_off", AT_CORE, gmt_core_state_t, growth_off),
    FIELD("core.pycode_off", AT_CORE, gmt_core_state_t, pycode_off),
    FIELD("core.proc.pid", AT_CORE, gmt_core_state_t, proc.pid),
    BYTES("core.proc.argv", AT_CORE, gmt_core_state_t, proc.argv),
    FIELD("core.proc.argv_len", AT_CORE, gmt_core_state_t, proc.argv_len),
    FIELD("core.proc.start_wall_ns", AT_CORE, gmt_core_state_t, proc.start_wall_ns),
    FIELD("core.proc.start_mono_ns", AT_CORE, gmt_core_state_t, proc.start_mono_ns),
    FIELD("core.alive_ns", AT_CORE, gmt_core_state_t, alive_ns),
    FIELD("stacks.index0.off", AT_STACKS, gmt_stacks_t, index[0].off),
};

/* The stats block's fields (stats.c's layout, private there): GPU 0's current bytes of a kind. */
static const struct {
    const char *name;
    int slot, kind;
} stats_fields[] = {
    {"stats.gpu0.managed_current", 1, GMT_KIND_MANAGED},
    {"stats.gpu0.pinned_current", 1, GMT_KIND_HOST_PINNED},
};

static int poke_field(const char *name, const char *value)
{
    for (size_t i = 0; i < sizeof stats_fields / sizeof stats_fields[0]; i++) {
        if (strcmp(stats_fields[i].name, name) != 0) continue;
        uint64_t at =
            h.stats_off + gmt_stats_current_offset(stats_fields[i].slot, stats_fields[i].kind);
        int64_t was, v = (int64_t)strtoull(value, NULL, 0);
        get(at, &was, sizeof was);
        put(at, &v, sizeof v);
        printf("was=%" PRId64 "\n", was);
        return 0;
    }
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (strcmp(fields[i].name, name) != 0) continue;
        const uint64_t base[] = {0, h.core_off, h.table_off, h.stacks_off};
        if (fields[i].bytes) {
            static char was[8192], now[8192]; /* the largest field: core.proc.argv */
            if (fields[i].size > sizeof was) die("a field of bytes larger than state_poke's");
            memset(now, 0, sizeof now);
            get(base[fields[i].at] + fields[i].off, was, fields[i].size);
            strncpy(now, value, fields[i].size);
            put(base[fields[i].at] + fields[i].off, now, fields[i].size);
            printf("was=");
            for (size_t k = 0; k < fields[i].size; k++)
                printf("%02x", (unsigned char)was[k]);
            putchar('\n');
            return 0;
        }
        uint64_t at = base[fields[i].at] + fields[i].off, was = 0;
        uint64_t v = strcmp(value, "@table") == 0 ? h.arenas[GMT_ARENA_TABLE].offset
                                                  : (uint64_t)strtoull(value, NULL, 0);
        get(at, &was, fields[i].size); /* little-endian: the low bytes */
        if (value[0] == '+') v += was;
        if (value[0] == '-') v = was + v; /* strtoull negates: was less the number */
        put(at, &v, fields[i].size);
        printf("was=%" PRIu64 "\n", was);
        return 0;
    }
    die("unknown field");
    return 1;
}

/* table_busy: table.c's slot states and generation shift (private there). */
#define SLOT_BUSY 3u
#define GEN_SHIFT 11
static int table_busy(uint64_t nslots, uint64_t size)
{
    if (nslots == 0 || nslots % GMT_TABLE_UNIT_SLOTS != 0 || nslots > (1u << 24))
        die("table_busy: SLOTS must be a multiple of 512, up to 2^24");
    gmt_arena_t *ar = &h.arenas[GMT_ARENA_TABLE];
    uint64_t len = nslots * sizeof(gmt_slot_t), va = ar->offset + ar->committed;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size % 4096 != 0 || h.nchunks >= GMT_REGION_MAX_CHUNKS ||
        ar->committed + len > ar->reserved)
        die("table_busy: no room for another chunk");
    uint64_t at = (uint64_t)sb.st_size;
    gmt_slot_t *s = calloc(nslots, sizeof *s);
    if (!s) die("out of memory");
    for (uint64_t i = 0; i < nslots; i++) {
        s[i].sg = SLOT_BUSY | 1u << GEN_SHIFT;
        s[i].key = 0x700000000000ull + i * 4096;
        s[i].meta = (size & ((1ull << 48) - 1)) | 2ull << 48; /* device + 2: GPU 0 */
    }
    if (pwrite(fd, s, len, (off_t)at) != (ssize_t)len) die("short write");
    free(s);
    h.chunks[h.nchunks].va_off = va;
    h.chunks[h.nchunks].file_off = at;
    h.chunks[h.nchunks].len = len;
    h.nchunks++;
    ar->committed += len;
    ar->used += len;
    h.file_bytes = at + len;
    if (pwrite(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) die("short write");
    gmt_table_t t;
    get(h.table_off, &t, sizeof t);
    gmt_level_t l = {.off = va, .cap = nslots, .used = nslots, .max_probe = nslots - 1};
    t.levels[t.first % GMT_TABLE_LEVELS] = l;
    t.levels[(t.first + 1) % GMT_TABLE_LEVELS] = l;
    t.next = t.first + 2;
    put(h.table_off, &t, sizeof t);
    printf("slots=%" PRIu64 "\n", nslots);
    return 0;
}

/* pycode_damage and pycode_header (names NULL): the cache block read, damaged in memory by
 * pyframes.c, written back. */
static int pycode_damage(const char *const *names, int n)
{
    uint64_t off, bytes;
    get(h.core_off + offsetof(gmt_core_state_t, pycode_off), &off, sizeof off);
    get(h.core_off + offsetof(gmt_core_state_t, pycode_bytes), &bytes, sizeof bytes);
    if (!off || !bytes || bytes > (1ull << 32)) die("the file has no Python code cache");
    void *mem = malloc(bytes);
    if (!mem) die("out of memory");
    get(off, mem, bytes);
    int damaged = names ? gmt_py_test_damage_cache(mem, bytes, names, n)
                        : gmt_py_test_break_cache_header(mem, bytes);
    if (damaged < 0) die("the file's Python code cache is not usable");
    put(off, mem, bytes);
    free(mem);
    if (names)
        printf("damaged=%d\n", damaged);
    else
        printf("header=damaged\n");
    return 0;
}

int main(int argc, char **argv)
{
    bool show = argc == 3 && strcmp(argv[2], "show") == 0;
    bool pycode = argc >= 4 && strcmp(argv[2], "pycode_damage") == 0;
    bool header = argc == 3 && strcmp(argv[2], "pycode_header") == 0;
    bool busy = (argc == 4 || argc == 5) && strcmp(argv[2], "table_busy") == 0;
    bool whose = argc == 3 && strcmp(argv[2], "whose") == 0;
    if (!show && !pycode && !header && !busy && !whose && argc != 4)
        die("usage: state_poke FILE show | state_poke FILE whose | state_poke FILE FIELD VALUE | "
            "state_poke FILE pycode_damage NAME... | state_poke FILE pycode_header | "
            "state_poke FILE table_busy SLOTS [SIZE]");
    fd = open(argv[1], show || whose ? O_RDONLY : O_RDWR);
    if (fd < 0) die(strerror(errno));
    if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        memcmp(h.magic, GMT_REGION_MAGIC, 8) != 0 || h.header_bytes != sizeof h)
        die("not a state file of this build");
    if (whose) {
        printf("pidns_dev=%" PRIu64 " pidns_ino=%" PRIu64 " boot_id=", h.whose.pidns_dev,
               h.whose.pidns_ino);
        for (int i = 0; i < 16; i++)
            printf("%02x", h.whose.boot_id[i]);
        printf(" hostname=%.*s\n", (int)sizeof h.whose.hostname, h.whose.hostname);
        return 0;
    }
    if (pycode) return pycode_damage((const char *const *)argv + 3, argc - 3);
    if (header) return pycode_damage(NULL, 0);
    if (strchr(argv[2], '.')) return poke_field(argv[2], argv[3]);
    if (busy)
        return table_busy(strtoull(argv[3], NULL, 0), argc > 4 ? strtoull(argv[4], NULL, 0) : 0);
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
