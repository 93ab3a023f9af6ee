/* test_report.c - the report writer (output/report.c) over a core fed synthetic events.
 *
 * Checks the path pattern (%p %r %h %%, .snapshot-/.oom- insertion), the atomic write (no
 * temporary file left, an unwritable path is an error, not a crash) and the content: totals,
 * leak groups sorted by bytes with their stacks, the address space apart from memory, v2
 * times, peak groups, errors, pools, config. The
 * report written here is also validated against docs/report.schema.json by the ctest
 * unit.report_schema, which runs after this one (argv[1] names the file to leave behind).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <cmocka.h>

#include "cli/cli.h"
#include "core/config.h"
#include "core/track.h"
#include "output/growth.h"
#include "output/report.h"

#define VISIBLE __attribute__((noinline, visibility("default")))
#define MIB     (1024ull * 1024ull)

static const char *report_path = "test_report.json";
static char output_pattern[512];

static const char *fake_getenv(const char *name)
{
    if (strcmp(name, "GPUMEMTRACE_OUTPUT") == 0) return output_pattern;
    if (strcmp(name, "GPUMEMTRACE_TOP") == 0) return "2";
    return NULL;
}

static gmt_event_t ev(uint64_t addr, uint64_t size, int32_t device, gmt_kind_t kind, gmt_api_t api)
{
    gmt_event_t e = {.addr = addr,
                     .size = size,
                     .device = device,
                     .kind = (uint8_t)kind,
                     .space = GMT_SPACE_VA,
                     .api = (uint8_t)api,
                     .layer = GMT_LAYER_DRIVER};
    return e;
}

VISIBLE void weights_site(uint64_t addr)
{
    gmt_event_t e = ev(addr, 8 * MIB, 0, GMT_KIND_DEVICE, GMT_API_cuMemAlloc_v2);
    gmt_track_alloc(&e);
}

VISIBLE void scratch_site(uint64_t addr, uint64_t size)
{
    gmt_event_t e = ev(addr, size, 0, GMT_KIND_DEVICE, GMT_API_cuMemAlloc_v2);
    gmt_track_alloc(&e);
}

VISIBLE void pool_site(uint64_t addr)
{
    gmt_event_t e = ev(addr, 2 * MIB, 0, GMT_KIND_POOL, GMT_API_cuMemAllocAsync);
    gmt_track_alloc(&e);
}

VISIBLE void pool_from_site(uint64_t addr, uint64_t size, int32_t device, uint64_t pool)
{
    gmt_event_t e = ev(addr, size, device, GMT_KIND_POOL, GMT_API_cuMemAllocFromPoolAsync);
    e.stream = pool;
    gmt_track_alloc(&e);
}

VISIBLE void reserve_site(uint64_t addr)
{
    gmt_event_t e = ev(addr, 64 * MIB, 0, GMT_KIND_VMM_RESERVE, GMT_API_cuMemAddressReserve);
    e.space = GMT_SPACE_RESERVE;
    gmt_track_alloc(&e);
}

VISIBLE void failing_site(void)
{
    gmt_event_t e = ev(0, 64ull << 40, 0, GMT_KIND_DEVICE, GMT_API_cuMemAlloc_v2);
    e.result = 2;
    e.flags = GMT_EVENT_OOM;
    gmt_track_failure(&e);
}

static void free_at(uint64_t addr)
{
    gmt_event_t e = ev(addr, 0, 0, GMT_KIND_DEVICE, GMT_API_cuMemFree_v2);
    gmt_track_free(&e);
}

static cJSON *load(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    return j;
}

static int64_t num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_non_null(v);
    assert_true(cJSON_IsNumber(v));
    return (int64_t)v->valuedouble;
}

static const cJSON *get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    assert_non_null(v);
    return v;
}

static int group_setup(void **state)
{
    (void)state;
    setenv("RANK", "3", 1);
    gmt_report_process_init();
    gmt_config_t cfg;
    gmt_config_load(&cfg, fake_getenv);
    return gmt_core_init(&cfg);
}

static void test_path_pattern(void **state)
{
    (void)state;
    char host[256], want[1024], got[1024];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    snprintf(output_pattern, sizeof output_pattern, "unused");
    assert_int_equal(gmt_report_path(GMT_REASON_EXIT, 0, got, sizeof got), 0);
    snprintf(want, sizeof want, "r-%d-3-%s-%%.json", (int)getpid(), host);
    assert_string_equal(got, want);
    assert_int_equal(gmt_report_path(GMT_REASON_SNAPSHOT, 2, got, sizeof got), 0);
    snprintf(want, sizeof want, "r-%d-3-%s-%%.snapshot-2.json", (int)getpid(), host);
    assert_string_equal(got, want);
    assert_int_equal(gmt_report_path(GMT_REASON_OOM, 1, got, sizeof got), 0);
    snprintf(want, sizeof want, "r-%d-3-%s-%%.oom-1.json", (int)getpid(), host);
    assert_string_equal(got, want);
    char tiny[8];
    assert_int_equal(gmt_report_path(GMT_REASON_EXIT, 0, tiny, sizeof tiny), -ENAMETOOLONG);
    /* A host name set by sethostname may hold '/' or be "..": %h stays one file name. */
    char *hn = gmt_track_proc()->hostname;
    char saved[sizeof gmt_track_proc()->hostname];
    memcpy(saved, hn, sizeof saved);
    static const char *const hosts[][2] = {{"../../etc/x", ".._.._etc_x"},
                                           {"..", "_.."},
                                           {".", "_."},
                                           {"", "unknown"},
                                           {"a.b", "a.b"}};
    for (size_t i = 0; i < sizeof hosts / sizeof hosts[0]; i++) {
        snprintf(hn, sizeof saved, "%s", hosts[i][0]);
        assert_int_equal(gmt_report_path(GMT_REASON_EXIT, 0, got, sizeof got), 0);
        snprintf(want, sizeof want, "r-%d-3-%s-%%.json", (int)getpid(), hosts[i][1]);
        assert_string_equal(got, want);
    }
    memcpy(hn, saved, sizeof saved);
}

static void test_unwritable_path_is_an_error(void **state)
{
    (void)state;
    int rc = gmt_report_write("/nonexistent-dir/for/sure/r.json", GMT_REASON_EXIT, NULL, 0);
    assert_int_equal(rc, -ENOENT);
}

static void test_content(void **state)
{
    (void)state;
    /* One call site for the three weights: a count the compiler cannot see keeps the loop from
     * being unrolled into three call sites (three stacks). */
    static volatile int nweights = 3;
    for (int i = 0; i < nweights; i++)
        weights_site(0x7000000000ull + (uint64_t)i * 16 * MIB);
    scratch_site(0x7100000000ull, 3 * MIB);
    scratch_site(0x7200000000ull, 1 * MIB); /* freed below: not a leak, but at the peak */
    pool_site(0x7300000000ull);
    reserve_site(0x7400000000ull); /* address space: not memory, not a leak */
    free_at(0x7200000000ull);
    free_at(0x7fff00000000ull); /* never allocated */
    failing_site();

    assert_int_equal(gmt_report_write(report_path, GMT_REASON_EXIT, NULL, 0), 0);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", report_path, (int)getpid());
    struct stat st;
    assert_int_not_equal(stat(tmp, &st), 0); /* renamed into place */

    cJSON *r = load(report_path);
    assert_string_equal(get(r, "schema")->valuestring, "gpumemtrace.report");
    assert_int_equal(num(r, "version"), 2);
    const cJSON *proc = get(r, "process");
    assert_string_equal(get(proc, "reason")->valuestring, "exit");
    assert_int_equal(num(proc, "pid"), getpid());
    assert_int_equal(num(proc, "rank"), 3);
    /* Integer ns times, and seconds with their digits (a short run: end > start). */
    int64_t t0 = num(proc, "start_time_ns"), t1 = num(proc, "end_time_ns");
    assert_true(t0 > 1600000000ll * 1000000000ll && t1 > t0);
    double s0 = get(proc, "start_time")->valuedouble;
    assert_true(s0 * 1e9 > (double)t0 - 1e3 && s0 * 1e9 < (double)t0 + 1e3);
    assert_true(get(proc, "end_time")->valuedouble > s0);
    assert_true(cJSON_IsFalse(get(proc, "recovered")));
    assert_string_equal(get(get(r, "config"), "GPUMEMTRACE_TOP")->valuestring, "2");

    const cJSON *sum = get(r, "summary");
    assert_int_equal(num(sum, "allocs"), 7); /* the reservation is an allocation event */
    assert_int_equal(num(sum, "frees"), 2);
    assert_int_equal(num(sum, "failures"), 1);
    assert_int_equal(num(sum, "leaked_bytes"), (int64_t)(24 * MIB + 3 * MIB + 2 * MIB));
    assert_int_equal(num(sum, "leaked_count"), 5);
    assert_int_equal(num(sum, "peak_bytes"), (int64_t)(24 * MIB + 3 * MIB + 1 * MIB + 2 * MIB));
    assert_int_equal(num(get(get(r, "capture"), "events"), "unknown_frees"), 1);

    /* Leaks: three groups, the top 2 listed (GPUMEMTRACE_TOP), largest first. */
    const cJSON *leaks = get(r, "leaks");
    assert_int_equal(num(leaks, "groups_total"), 3);
    const cJSON *groups = get(leaks, "groups");
    assert_int_equal(cJSON_GetArraySize(groups), 2);
    const cJSON *g0 = cJSON_GetArrayItem(groups, 0), *g1 = cJSON_GetArrayItem(groups, 1);
    assert_int_equal(num(leaks, "total_bytes"), (int64_t)(24 * MIB + 3 * MIB + 2 * MIB));
    assert_int_equal(num(leaks, "suppressed_bytes"), 0);
    /* The reservation is address space, in its own section with its own totals. */
    const cJSON *as = get(leaks, "address_space");
    assert_int_equal(num(as, "reserved_bytes"), (int64_t)(64 * MIB));
    assert_int_equal(num(as, "reserved_count"), 1);
    assert_int_equal(num(as, "mapped_bytes"), 0);
    assert_int_equal(num(as, "groups_total"), 1);
    const cJSON *ag = cJSON_GetArrayItem(get(as, "groups"), 0);
    assert_string_equal(get(ag, "kind")->valuestring, "vmm_reserve");
    assert_int_equal(num(ag, "bytes"), (int64_t)(64 * MIB));
    assert_true(cJSON_IsArray(get(leaks, "growth_suspects")));
    assert_int_equal(num(g0, "bytes"), (int64_t)(24 * MIB));
    assert_int_equal(num(g0, "count"), 3);
    assert_string_equal(get(g0, "kind")->valuestring, "device");
    assert_string_equal(get(g0, "api")->valuestring, "cuMemAlloc_v2");
    assert_int_equal(num(g1, "bytes"), (int64_t)(3 * MIB));

    /* Each listed group's stack is in "stacks" and starts at its call site. */
    char id[16];
    snprintf(id, sizeof id, "%lld", (long long)num(g0, "stack_id"));
    const cJSON *frames = get(get(get(r, "stacks"), id), "frames");
    assert_true(cJSON_GetArraySize(frames) > 0);
    const cJSON *sym = get(cJSON_GetArrayItem(frames, 0), "symbol");
    assert_true(cJSON_IsString(sym));
    assert_string_equal(sym->valuestring, "weights_site");
    assert_string_equal(get(cJSON_GetArrayItem(frames, 0), "type")->valuestring, "native");
    assert_true(cJSON_IsString(get(get(get(r, "stacks"), id), "python")));
    snprintf(id, sizeof id, "%lld", (long long)num(g1, "stack_id"));
    sym = get(cJSON_GetArrayItem(get(get(get(r, "stacks"), id), "frames"), 0), "symbol");
    assert_string_equal(sym->valuestring, "scratch_site");

    /* Peak on device 0 includes the freed 1 MiB. */
    const cJSON *peak = cJSON_GetArrayItem(get(r, "peak"), 0);
    assert_int_equal(num(peak, "device"), 0);
    assert_int_equal(num(peak, "bytes"), (int64_t)(30 * MIB));
    /* weights, the two scratch call sites, the pool allocation */
    assert_int_equal(num(peak, "groups_total"), 4);

    /* The failure, with its stack. */
    const cJSON *err = cJSON_GetArrayItem(get(r, "errors"), 0);
    assert_non_null(err);
    assert_true(cJSON_IsTrue(get(err, "oom")));
    assert_int_equal(num(err, "size"), (int64_t)(64ull << 40));
    assert_string_equal(get(err, "error_name")->valuestring, "CUDA_ERROR_OUT_OF_MEMORY");
    assert_string_equal(get(err, "layer")->valuestring, "driver"); /* cuMemAlloc_v2's names */
    assert_true(cJSON_IsFalse(get(err, "recovered"))); /* nothing was allocated after it */

    /* The device-0 pool seen, with our tracked bytes (no driver here: reserved is null). */
    const cJSON *frag = cJSON_GetArrayItem(get(r, "fragmentation"), 0);
    const cJSON *pool = cJSON_GetArrayItem(get(frag, "pools"), 0);
    assert_non_null(pool);
    assert_int_equal(num(pool, "tracked_used_bytes"), (int64_t)(2 * MIB));
    assert_true(cJSON_IsNull(get(pool, "reserved_bytes")));
    assert_int_equal(num(frag, "live_allocations"), 5);
    cJSON_Delete(r);
}

/* The fragmentation entry of device dev. */
static const cJSON *frag_of(const cJSON *r, int64_t dev)
{
    const cJSON *f;
    cJSON_ArrayForEach(f, get(r, "fragmentation")) if (num(f, "device") == dev) return f;
    fail_msg("no fragmentation entry for device %lld", (long long)dev);
    return NULL;
}

/* Device dev's entry of pool handle `pool` in "pools": its tracked bytes and live count. */
static void pool_sums(const cJSON *r, int64_t dev, uint64_t pool, int64_t *bytes, int64_t *live)
{
    char want[24];
    snprintf(want, sizeof want, "0x%llx", (unsigned long long)pool);
    const cJSON *p;
    cJSON_ArrayForEach(p, get(frag_of(r, dev), "pools"))
    {
        if (strcmp(get(p, "pool")->valuestring, want) != 0) continue;
        *bytes = num(p, "tracked_used_bytes");
        *live = num(p, "live_allocations");
        return;
    }
    fail_msg("device %lld lists no pool %s", (long long)dev, want);
}

/* Writes a report to path with stderr kept in `log` (the report's info lines). */
static void write_report_logged(const char *path, char *log, size_t len)
{
    char tmpl[] = "/tmp/gmt-report-log-XXXXXX";
    int fd = mkstemp(tmpl);
    assert_true(fd >= 0);
    unlink(tmpl);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fd, 2) == 2);
    int rc = gmt_report_write(path, GMT_REASON_EXIT, NULL, 0);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(rc, 0);
    ssize_t n = pread(fd, log, len - 1, 0);
    close(fd);
    log[n > 0 ? n : 0] = 0;
}

/* Live pool bytes land in their own pool's sums: two pools of one device, the same handle on
 * another device. Pools past the list of pools seen (GMT_MAX_POOLS) have no entry: their
 * allocations are counted and said, never given to another pool or dropped unseen. */
static void test_pools(void **state)
{
    (void)state;
    const char *path = "test_report_pools.json";
    pool_from_site(0x7500000000ull, 1 * MIB, 1, 0); /* device 1's current pool */
    pool_from_site(0x7501000000ull, 2 * MIB, 1, 0);
    pool_from_site(0x7502000000ull, 4 * MIB, 1, 0x9001);
    pool_from_site(0x7503000000ull, 8 * MIB, 2, 0x9001);
    char log[8192];
    write_report_logged(path, log, sizeof log);
    cJSON *r = load(path);
    int64_t bytes = 0, live = 0;
    pool_sums(r, 1, 0, &bytes, &live);
    assert_int_equal(bytes, (int64_t)(3 * MIB));
    assert_int_equal(live, 2);
    pool_sums(r, 1, 0x9001, &bytes, &live);
    assert_int_equal(bytes, (int64_t)(4 * MIB));
    assert_int_equal(live, 1);
    pool_sums(r, 2, 0x9001, &bytes, &live);
    assert_int_equal(bytes, (int64_t)(8 * MIB));
    assert_int_equal(live, 1);
    assert_int_equal(cJSON_GetArraySize(get(frag_of(r, 1), "pools")), 2);
    assert_null(strstr(log, "pools the report does not list"));
    assert_int_equal(num(get(get(r, "capture"), "pool_list"), "unlisted_allocations"), 0);
    cJSON_Delete(r);

    /* Fill the list with device 3's pools, one allocation each, then three allocations in two
     * pools it has no room for. */
    gmt_pool_seen_t seen[GMT_MAX_POOLS];
    uint64_t pool = 0xa000, addr = 0x7600000000ull;
    for (; gmt_track_pools(seen, GMT_MAX_POOLS) < GMT_MAX_POOLS; pool++, addr += MIB)
        pool_from_site(addr, 4096, 3, pool);
    uint64_t listed = pool - 0xa000;
    pool_from_site(addr, 1 * MIB, 3, 0xb000);
    pool_from_site(addr + 1 * MIB, 1 * MIB, 3, 0xb000);
    pool_from_site(addr + 2 * MIB, 1 * MIB, 3, 0xb001);
    write_report_logged(path, log, sizeof log);
    r = load(path);
    assert_non_null(strstr(log, "report: 3 live pool allocations in pools the report does not "
                                "list"));
    assert_int_equal(cJSON_GetArraySize(get(frag_of(r, 3), "pools")), (int)listed);
    /* Counted in the report itself, with one warning, not only in a log line. */
    const cJSON *cap = get(r, "capture");
    assert_int_equal(num(get(cap, "pool_list"), "unlisted_allocations"), 3);
    assert_int_equal(num(get(cap, "pool_list"), "listed"), GMT_MAX_POOLS);
    assert_int_equal(num(get(cap, "dropped"), "table_full"), 0);
    assert_null(cJSON_GetObjectItemCaseSensitive(get(cap, "dropped"), "pools")); /* not a drop */
    int said = 0;
    const cJSON *wn;
    cJSON_ArrayForEach(wn, get(cap, "warnings")) said +=
        strstr(wn->valuestring, "more than 64 "
                                "stream-ordered pools") != NULL;
    assert_int_equal(said, 1);
    for (uint64_t p = 0xa000; p < 0xa000 + listed; p++) {
        pool_sums(r, 3, p, &bytes, &live);
        assert_int_equal(bytes, 4096);
        assert_int_equal(live, 1);
    }
    pool_sums(r, 1, 0x9001, &bytes, &live); /* the listed ones keep their own */
    assert_int_equal(bytes, (int64_t)(4 * MIB));
    cJSON_Delete(r);
    unlink(path);
}

/* allocation_sites skips a stack whose tag names a kind or an API no event writes (a damaged
 * state file's, as a recovered report reads it): no site, not counted in the total; the
 * first value past each range is damaged already. */
static void test_sites_damaged_tag(void **state)
{
    (void)state;
    const char *path = "test_report_sites.json";
    assert_int_equal(gmt_report_write(path, GMT_REASON_EXIT, NULL, 0), 0);
    cJSON *r = load(path);
    int64_t total = num(r, "allocation_sites_total");
    const cJSON *sites = get(r, "allocation_sites");
    assert_true(cJSON_GetArraySize(sites) >= 2 && total >= 2);
    uint32_t id[2];
    for (int i = 0; i < 2; i++)
        id[i] = (uint32_t)num(cJSON_GetArrayItem(sites, i), "stack_id");
    cJSON_Delete(r);
    gmt_stack_entry_t *e[2] = {gmt_stacks_entry(gmt_track_stacks(), id[0]),
                               gmt_stacks_entry(gmt_track_stacks(), id[1])};
    assert_non_null(e[0]);
    assert_non_null(e[1]);
    uint32_t tag[2] = {e[0]->tag, e[1]->tag};
    e[0]->tag = (tag[0] & ~0xff00u) | ((uint32_t)GMT_KIND_COUNT << 8);
    e[1]->tag = (tag[1] & ~0xffu) | (uint32_t)GMT_API_COUNT;
    int rc = gmt_report_write(path, GMT_REASON_EXIT, NULL, 0);
    e[0]->tag = tag[0];
    e[1]->tag = tag[1];
    assert_int_equal(rc, 0);
    r = load(path);
    assert_int_equal(num(r, "allocation_sites_total"), total - 2);
    const cJSON *x;
    cJSON_ArrayForEach(x, get(r, "allocation_sites"))
    {
        assert_true(num(x, "stack_id") != (int64_t)id[0]);
        assert_true(num(x, "stack_id") != (int64_t)id[1]);
    }
    cJSON_Delete(r);
    unlink(path);
}

/* leaks.growth_status says what the growth verdict rests on: no sample yet, samples judged,
 * or samples there that the report could not judge because the sampler held its table past
 * the report's wait (its suspects then are none, said as not judged, never as "none found"). */
static const char *growth_status_of(const char *path, int64_t *total)
{
    static char status[32];
    assert_int_equal(gmt_report_write(path, GMT_REASON_EXIT, NULL, 0), 0);
    cJSON *r = load(path);
    const cJSON *leaks = get(r, "leaks");
    const cJSON *st = get(leaks, "growth_status");
    assert_true(cJSON_IsString(st));
    snprintf(status, sizeof status, "%s", st->valuestring);
    *total = num(leaks, "growth_suspects_total");
    assert_true(cJSON_IsArray(get(leaks, "growth_suspects")));
    if (strcmp(status, "judged") != 0)
        assert_int_equal(cJSON_GetArraySize(get(leaks, "growth_suspects")), 0);
    cJSON_Delete(r);
    unlink(path);
    return status;
}

static void test_growth_status(void **state)
{
    (void)state;
    const char *path = "test_report_growth.json";
    int64_t total;
    gmt_growth_status_t st;
    assert_null(gmt_growth_process(&st)); /* the sampler has not run in this program yet */
    assert_int_equal(st, GMT_GROWTH_NO_SAMPLES);
    assert_string_equal(growth_status_of(path, &total), "no_samples");
    assert_int_equal(total, 0);
    uint64_t t = gmt_track_now_ns();
    /* One sample: with the value now two points, too few to make any suspect (a short run),
     * said as such rather than as judged with none found. */
    gmt_growth_sample_process(t);
    t += GMT_GROWTH_INTERVAL_NS;
    assert_string_equal(growth_status_of(path, &total), "too_few_samples");
    assert_int_equal(total, 0);
    for (int i = 1; i < 4; i++) {
        gmt_growth_sample_process(t);
        t += GMT_GROWTH_INTERVAL_NS;
    }
    gmt_growth_t *g = gmt_growth_process(&st);
    assert_non_null(g);
    assert_int_equal(st, GMT_GROWTH_JUDGED);
    assert_int_equal(g->n, 4);
    assert_string_equal(growth_status_of(path, &total), "judged");
    /* The sampler's lock held (a sample in progress that outlasts the report's wait). */
    assert_int_equal(__atomic_exchange_n(&g->lock, 1, __ATOMIC_ACQUIRE), 0);
    const char *held = growth_status_of(path, &total);
    __atomic_store_n(&g->lock, 0, __ATOMIC_RELEASE);
    assert_string_equal(held, "not_judged");
    assert_int_equal(total, 0);
    assert_string_equal(growth_status_of(path, &total), "judged");
}

/* The line naming a report gives the report's own figures, its bytes as the command prints
 * them: a leak total of M MiB and 131072 bytes (M.125 MiB, a tie of the hundredths) reads
 * M.12, as report and check say it, not M.13. */
static void test_headline(void **state)
{
    (void)state;
    const char *path = "test_report_headline.json";
    assert_int_equal(gmt_report_write(path, GMT_REASON_EXIT, NULL, 0), 0);
    cJSON *r = load(path);
    uint64_t before = (uint64_t)num(get(r, "leaks"), "total_bytes");
    cJSON_Delete(r);
    uint64_t tie = (((before >> 20) + 2) << 20) + 131072, addr = 0x7600000000ull;
    scratch_site(addr, tie - before);
    assert_int_equal(gmt_report_write(path, GMT_REASON_EXIT, NULL, 0), 0);
    r = load(path);
    const cJSON *leaks = get(r, "leaks");
    uint64_t bytes = (uint64_t)num(leaks, "total_bytes");
    int64_t count = num(leaks, "count"), groups = num(leaks, "groups_total");
    uint64_t peak = (uint64_t)num(get(r, "summary"), "peak_bytes");
    cJSON_Delete(r);
    unlink(path);
    assert_int_equal(bytes, tie);
    char b[32], p[32], want[256], got[256];
    gmt_fmt_bytes(bytes, b, sizeof b); /* as `report` and `check` print them */
    gmt_fmt_bytes(peak, p, sizeof p);
    snprintf(want, sizeof want,
             ": %s live at exit in %lld allocation%s (%lld call stack%s), peak %s", b,
             (long long)count, count == 1 ? "" : "s", (long long)groups, groups == 1 ? "" : "s", p);
    gmt_report_headline(GMT_REASON_EXIT, got, sizeof got);
    assert_string_equal(got, want);
    assert_non_null(strstr(got, ".12 MiB live"));
    free_at(addr);
}

int main(int argc, char **argv)
{
    if (argc > 1) report_path = argv[1];
    snprintf(output_pattern, sizeof output_pattern, "r-%%p-%%r-%%h-%%%%.json");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_pattern),
        cmocka_unit_test(test_unwritable_path_is_an_error),
        cmocka_unit_test(test_content),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_sites_damaged_tag),
        cmocka_unit_test(test_growth_status),
        cmocka_unit_test(test_headline),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
