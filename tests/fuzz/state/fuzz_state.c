/* fuzz_state.c - libFuzzer target for state-file recovery (docs/state.md, docs/security.md).
 *
 * A state file is written by the traced process, which may be hostile, and read back by
 * `gpumemtrace report --recover` and `gpumemtrace top`, which may run as root: every field is
 * checked before use, and a file that fails a check is one line and exit 2, never a crash, a
 * hang or a report that is not JSON. This target holds that to real state files: the seeds
 * (GMT_FUZZ_STATE_SEEDS, a colon-separated list of state files written by traced programs
 * under the stand-in driver; run_fuzz.py makes them) are damaged by the patches an input
 * lists, the damaged file is written to GMT_FUZZ_STATE_DIR and recovered in this process,
 * the report written to a memfd that must then parse as a JSON object (else the error must
 * be one non-empty line), and `top --once` views the same file. The recovery code is compiled
 * from the library's sources by clang with ASan and UBSan (CMakeLists.txt).
 *
 * An input: byte 0 picks the seed; then patches, each an op byte and its operands:
 *   op & 7  0 write 1-8 literal bytes          4 set a u32 to an interesting value
 *           1 add a signed byte to a u32       5 copy 8-56 bytes from another place, or 64
 *                                                (length 7) repeated 2-128 times
 *           2 add a signed word to a u64       6 truncate the file (the shortest one counts)
 *           3 set a u64 to an interesting value 7 write 1-8 literal bytes anywhere in the file
 *   (op >> 3) & 7: the length (0, 5, 7) or the value's index (3, 4)
 *   op & 0x80: where op 0-5 aim: clear, a non-zero 64-byte line of the seed (the parts in use:
 *   header, slots, entries, frames, counters, failures, growth rows, code cache); set, one of
 *   the stores' blocks as the header places them (core block, stats block, table and stack
 *   store headers, the table's levels, the stack index, entries, frames, growth rows, the code
 *   cache), which holds fields the seed left zero. Then a 4-byte place.
 * Offsets are file offsets; the stores' blocks are found through the header's chunk table.
 */
#define _GNU_SOURCE
#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/log.h"
#include "core/region.h"
#include "core/stacks.h"
#include "core/table.h"
#include "core/track_internal.h"
#include "output/report.h"

void __sanitizer_report_error_summary(const char *summary);

#define LINE       64
#define MAX_SEEDS  8
#define MAX_RANGES 64

typedef struct range_s {
    uint64_t off, len; /* in the file */
} range_t;

typedef struct seed_s {
    uint8_t *pristine; /* the seed as read */
    uint8_t *work;     /* the file's bytes now (pristine plus this input's patches) */
    size_t size;
    uint32_t *lines; /* indexes of the non-zero 64-byte lines */
    size_t nlines;
    range_t ranges[MAX_RANGES]; /* the stores' blocks, in file offsets */
    int nranges;
    uint64_t values[48]; /* interesting u64 values: edges, and this seed's offsets and sizes */
    int nvalues;
    char path[4096]; /* the damaged copy recovered */
    int fd;
    /* what the last input changed, to put back before the next */
    range_t dirty[256];
    int ndirty;
    bool dirty_all;
    size_t truncated; /* the file's length now (size when whole) */
} seed_t;

static seed_t seeds[MAX_SEEDS];
static int nseeds;
static int report_fd = -1;

static void fail(const char *what)
{
    /* stderr is closed by -close_fd_mask; the sanitizer's report descriptor is libFuzzer's. */
    __sanitizer_report_error_summary(what);
    abort();
}

static void die_init(const char *what, const char *arg)
{
    fprintf(stderr, "fuzz_state: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    exit(1);
}

/* The file offset of region offset va (through the header's chunk table), or -1. */
static int64_t file_off(const gmt_region_header_t *h, uint64_t va)
{
    for (uint32_t i = 0; i < h->nchunks && i < GMT_REGION_MAX_CHUNKS; i++)
        if (va >= h->chunks[i].va_off && va - h->chunks[i].va_off < h->chunks[i].len)
            return (int64_t)(h->chunks[i].file_off + (va - h->chunks[i].va_off));
    return -1;
}

static void add_range(seed_t *s, const gmt_region_header_t *h, uint64_t va, uint64_t len)
{
    if (s->nranges >= MAX_RANGES || len == 0) return;
    int64_t fo = file_off(h, va);
    if (fo < 0 || (uint64_t)fo >= s->size) return;
    /* within one chunk: the rest of it may be elsewhere in the file */
    if (len > s->size - (uint64_t)fo) len = s->size - (uint64_t)fo;
    if (len > (1u << 20)) len = 1u << 20;
    s->ranges[s->nranges++] = (range_t){(uint64_t)fo, len};
}

static void add_value(seed_t *s, uint64_t v)
{
    if (s->nvalues < (int)(sizeof s->values / sizeof s->values[0])) s->values[s->nvalues++] = v;
}

static void load_seed(const char *path, const char *dir)
{
    if (nseeds >= MAX_SEEDS) die_init("too many seeds", path);
    seed_t *s = &seeds[nseeds];
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(gmt_region_header_t))
        die_init("cannot read the seed", path);
    s->size = (size_t)st.st_size;
    s->pristine = malloc(s->size);
    s->work = malloc(s->size);
    if (!s->pristine || !s->work || pread(fd, s->pristine, s->size, 0) != (ssize_t)s->size)
        die_init("cannot read the seed", path);
    close(fd);
    memcpy(s->work, s->pristine, s->size);
    s->lines = malloc((s->size / LINE + 1) * sizeof *s->lines);
    for (size_t i = 0; i + LINE <= s->size; i += LINE) {
        static const uint8_t zero[LINE];
        if (memcmp(s->pristine + i, zero, LINE) != 0) s->lines[s->nlines++] = (uint32_t)(i / LINE);
    }
    const gmt_region_header_t *h = (const void *)s->pristine;
    if (memcmp(h->magic, GMT_REGION_MAGIC, 8) != 0) die_init("not a state file", path);
    add_range(s, h, 0, sizeof *h);
    add_range(s, h, h->core_off, sizeof(gmt_core_state_t));
    add_range(s, h, h->stats_off, 64 << 10);
    add_range(s, h, h->table_off, sizeof(gmt_table_t));
    add_range(s, h, h->stacks_off, sizeof(gmt_stacks_t));
    for (int a = 1; a < GMT_ARENA_COUNT; a++) {
        add_range(s, h, h->arenas[a].offset, h->arenas[a].used ? h->arenas[a].used : 4096);
        add_value(s, h->arenas[a].offset);
        add_value(s, h->arenas[a].committed);
        add_value(s, h->arenas[a].offset + h->arenas[a].committed);
    }
    int64_t fo = file_off(h, h->core_off);
    if (fo >= 0 && (uint64_t)fo + sizeof(gmt_core_state_t) <= s->size) {
        const gmt_core_state_t *cs = (const void *)(s->pristine + fo);
        if (cs->pycode_off) add_range(s, h, cs->pycode_off, cs->pycode_bytes);
        if (cs->growth_off) add_range(s, h, cs->growth_off, cs->growth_bytes);
        add_value(s, cs->pycode_off);
        add_value(s, cs->growth_off);
    }
    fo = file_off(h, h->table_off);
    if (fo >= 0 && (uint64_t)fo + sizeof(gmt_table_t) <= s->size) {
        const gmt_table_t *t = (const void *)(s->pristine + fo);
        for (uint32_t n = t->first; n < t->next && n - t->first < GMT_TABLE_LEVELS; n++) {
            const gmt_level_t *l = &t->levels[n % GMT_TABLE_LEVELS];
            add_range(s, h, l->off, l->cap * sizeof(gmt_slot_t));
            add_value(s, l->off);
        }
    }
    static const uint64_t edges[] = {0,          1,
                                     2,          7,
                                     8,          64,
                                     4095,       4096,
                                     0x7fffffff, 0x80000000,
                                     0xffffffff, 1ull << 32,
                                     1ull << 40, (1ull << 40) + 4096,
                                     INT64_MAX,  (uint64_t)INT64_MIN,
                                     UINT64_MAX, UINT64_MAX - 4095};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        add_value(s, edges[i]);
    add_value(s, s->size);
    add_value(s, h->total_reserved);
    snprintf(s->path, sizeof s->path, "%s/fuzz-state-%d-%d.gmt", dir, (int)getpid(), nseeds);
    s->fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (s->fd < 0 || pwrite(s->fd, s->pristine, s->size, 0) != (ssize_t)s->size)
        die_init("cannot write", s->path);
    s->truncated = s->size;
    nseeds++;
}

static void cleanup(void)
{
    for (int i = 0; i < nseeds; i++)
        unlink(seeds[i].path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *list = getenv("GMT_FUZZ_STATE_SEEDS");
    const char *dir = getenv("GMT_FUZZ_STATE_DIR");
    if (!list || !*list || !dir || !*dir)
        die_init("set GMT_FUZZ_STATE_SEEDS (state files, colon-separated) and "
                 "GMT_FUZZ_STATE_DIR (a folder for the damaged copies)",
                 NULL);
    char *copy = strdup(list), *save = NULL;
    for (char *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
        load_seed(p, dir);
    free(copy);
    atexit(cleanup);
    report_fd = memfd_create("fuzz-state-report", MFD_CLOEXEC);
    if (report_fd < 0) die_init("memfd_create", strerror(errno));
    /* top's view goes nowhere; the library's info lines are off (its errors still print) */
    if (!freopen("/dev/null", "w", stdout)) die_init("/dev/null", strerror(errno));
    gmt_log_set_level(GMT_LOG_QUIET);
    return 0;
}

typedef struct reader_s {
    const uint8_t *p;
    size_t n;
} reader_t;

static bool take(reader_t *r, void *out, size_t n)
{
    if (r->n < n) return false;
    memcpy(out, r->p, n);
    r->p += n;
    r->n -= n;
    return true;
}

static void mark(seed_t *s, uint64_t off, uint64_t len)
{
    if (s->ndirty < (int)(sizeof s->dirty / sizeof s->dirty[0]))
        s->dirty[s->ndirty++] = (range_t){off, len};
    else
        s->dirty_all = true;
}

/* A place in the file for n bytes: a non-zero line of the seed or a store's block. */
static bool place(seed_t *s, reader_t *r, bool block, size_t n, uint64_t *off)
{
    uint32_t sel;
    if (!take(r, &sel, sizeof sel) || n > s->size) return false;
    uint64_t o;
    if (block && s->nranges) {
        const range_t *g = &s->ranges[(sel >> 24) % (uint32_t)s->nranges];
        o = g->off + (sel & 0xffffff) % g->len;
    } else if (s->nlines) {
        o = (uint64_t)s->lines[(sel >> 6) % s->nlines] * LINE + (sel & (LINE - 1));
    } else {
        o = sel % s->size;
    }
    if (o > s->size - n) o = s->size - n;
    *off = o;
    return true;
}

static void patch(seed_t *s, uint64_t off, const void *b, size_t n)
{
    memcpy(s->work + off, b, n);
    mark(s, off, n);
}

/* Applies the input's patches to s->work; returns the length the file is to have. */
static size_t apply(seed_t *s, reader_t *r)
{
    size_t len = s->size;
    uint8_t op;
    while (take(r, &op, 1)) {
        unsigned kind = op & 7, arg = (op >> 3) & 7;
        bool block = op & 0x80;
        uint64_t off, v64;
        uint32_t v32;
        uint8_t buf[64];
        switch (kind) {
        case 0:
        case 7: {
            size_t n = arg + 1;
            if (kind == 0) {
                if (!place(s, r, block, n, &off)) return len;
            } else {
                uint32_t at;
                if (!take(r, &at, sizeof at)) return len;
                off = at % (s->size - n + 1);
            }
            if (!take(r, buf, n)) return len;
            patch(s, off, buf, n);
            break;
        }
        case 1: {
            int8_t d;
            if (!place(s, r, block, 4, &off) || !take(r, &d, 1)) return len;
            memcpy(&v32, s->work + off, 4);
            v32 += (uint32_t)(int32_t)d;
            patch(s, off, &v32, 4);
            break;
        }
        case 2: {
            int16_t d;
            if (!place(s, r, block, 8, &off) || !take(r, &d, 2)) return len;
            memcpy(&v64, s->work + off, 8);
            v64 += (uint64_t)(int64_t)d;
            patch(s, off, &v64, 8);
            break;
        }
        case 3:
        case 4: {
            uint8_t i;
            size_t n = kind == 3 ? 8 : 4;
            if (!place(s, r, block, n, &off) || !take(r, &i, 1)) return len;
            v64 = s->values[(arg * 256u + i) % (unsigned)s->nvalues];
            v32 = (uint32_t)v64;
            patch(s, off, kind == 3 ? (void *)&v64 : (void *)&v32, n);
            break;
        }
        case 5: {
            /* arg 7: the 64 bytes at `from` repeated 2-128 times from off (a slot or an
             * entry made many: sums and counts past what a real process reaches) */
            size_t n = arg == 7 ? LINE : (arg + 1) * 8;
            uint64_t from;
            uint8_t times = 1;
            if (!place(s, r, block, n, &off) || !place(s, r, !block, n, &from)) return len;
            if (arg == 7 && !take(r, &times, 1)) return len;
            memcpy(buf, s->work + from, n);
            for (unsigned k = 0; k < (arg == 7 ? 2u + times % 127u : 1u); k++) {
                if (off > s->size - n) break;
                patch(s, off, buf, n);
                off += n;
            }
            break;
        }
        case 6: {
            uint32_t at;
            if (!take(r, &at, sizeof at)) return len;
            /* page multiples and odd lengths alike */
            size_t cut = arg & 1 ? (size_t)at % s->size : ((size_t)at * 4096) % s->size;
            if (cut < len) len = cut;
            break;
        }
        }
    }
    return len;
}

static void write_all(int fd, const void *p, size_t n, uint64_t off)
{
    if (n && pwrite(fd, p, n, (off_t)off) != (ssize_t)n) fail("fuzz_state: cannot write the file");
}

/* Puts the last input's changes back (in memory and in the file). */
static void restore(seed_t *s)
{
    if (s->truncated != s->size) {
        if (ftruncate(s->fd, (off_t)s->size) != 0) fail("fuzz_state: ftruncate");
        /* the tail came back as zeros: only its non-zero lines need writing */
        for (size_t i = 0; i < s->nlines; i++) {
            uint64_t o = (uint64_t)s->lines[i] * LINE;
            if (o + LINE > s->truncated) write_all(s->fd, s->pristine + o, LINE, o);
        }
        if (s->size % LINE && s->size - s->size % LINE >= s->truncated) {
            uint64_t o = s->size - s->size % LINE;
            write_all(s->fd, s->pristine + o, s->size - o, o);
        }
        s->truncated = s->size;
    }
    if (s->dirty_all) {
        memcpy(s->work, s->pristine, s->size);
        write_all(s->fd, s->pristine, s->size, 0);
    } else {
        for (int i = 0; i < s->ndirty; i++) {
            const range_t *d = &s->dirty[i];
            memcpy(s->work + d->off, s->pristine + d->off, d->len);
            write_all(s->fd, s->pristine + d->off, d->len, d->off);
        }
    }
    s->ndirty = 0;
    s->dirty_all = false;
}

static void check_report(void)
{
    struct stat st;
    if (fstat(report_fd, &st) != 0) fail("fuzz_state: fstat of the report");
    if (st.st_size == 0) fail("fuzz_state: recovery returned 0 and wrote no report");
    char *text = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, report_fd, 0);
    if (text == MAP_FAILED) fail("fuzz_state: cannot map the report");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, (size_t)st.st_size, &end, 0);
    bool ok = root && cJSON_IsObject(root) &&
              cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "schema"));
    cJSON_Delete(root);
    munmap(text, (size_t)st.st_size);
    if (!ok) fail("fuzz_state: the recovered report is not a JSON object with a schema");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || !nseeds) return 0;
    seed_t *s = &seeds[data[0] % nseeds];
    reader_t r = {data + 1, size - 1};
    size_t len = apply(s, &r);
    for (int i = 0; i < s->ndirty && !s->dirty_all; i++)
        write_all(s->fd, s->work + s->dirty[i].off, s->dirty[i].len, s->dirty[i].off);
    if (s->dirty_all) write_all(s->fd, s->work, s->size, 0);
    if (len != s->size) {
        if (ftruncate(s->fd, (off_t)len) != 0) fail("fuzz_state: ftruncate");
        s->truncated = len;
    }

    if (ftruncate(report_fd, 0) != 0 || lseek(report_fd, 0, SEEK_SET) != 0)
        fail("fuzz_state: cannot reset the report's memfd");
    char err[512] = "";
    int rc = gmt_report_recover(s->path, report_fd, err, sizeof err);
    if (rc == 0) {
        check_report();
    } else {
        /* refused: one line saying why, as `report --recover` prints it (exit 2) */
        if (rc > 0) fail("fuzz_state: recovery failed with a positive status");
        if (!err[0]) fail("fuzz_state: recovery failed without saying why");
        if (strchr(err, '\n')) fail("fuzz_state: recovery's error is more than one line");
    }
    /* `top --once STATE`: its own recovery (gmt_track_recover_view: the table's levels checked,
     * its slots and the growth samples left unread) and its walk of the stacks */
    char *argv[] = {"top", "--once", "--top", "20", s->path, NULL};
    int trc = gmt_cli_top(5, argv);
    if (trc != GMT_EXIT_OK && trc != GMT_EXIT_USAGE) fail("fuzz_state: top --once's status");
    fflush(stdout);
    restore(s);
    return 0;
}
