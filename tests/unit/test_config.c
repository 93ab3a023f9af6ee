/* test_config.c - GPUMEMTRACE_* variables (core/config.h), read through a fake getenv. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/log.h"
#include "core/stacks.h"
#include "core/table.h"

#include <unistd.h>

/* ---- a fake environment -----------------------------------------------------------------------
 */

#define MAX_FAKE 32
static struct {
    const char *name;
    const char *value;
} fake[MAX_FAKE];
static int nfake;

static void env_clear(void)
{
    nfake = 0;
}

static void env_set(const char *name, const char *value)
{
    assert_true(nfake < MAX_FAKE);
    fake[nfake].name = name;
    fake[nfake].value = value;
    nfake++;
}

static const char *fake_getenv(const char *name)
{
    for (int i = nfake - 1; i >= 0; i--)
        if (strcmp(fake[i].name, name) == 0) return fake[i].value;
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    env_clear();
    gmt_config_set_host_memory((uint64_t)1 << 40); /* a big host: no bound by memory here */
    return 0;
}

/* The printable value of variable `name` in cfg (via gmt_config_item). */
static const char *item(const gmt_config_t *cfg, const char *name)
{
    static char value[GMT_PATH_MAX + 64];
    const char *n;
    for (size_t i = 0; gmt_config_item(cfg, i, &n, value, sizeof value); i++)
        if (strcmp(n, name) == 0) return value;
    fail_msg("%s is not a configuration item", name);
    return NULL;
}

/* Load with exactly one variable set; returns the bad count. */
static int load_one(gmt_config_t *cfg, const char *name, const char *value)
{
    env_clear();
    env_set(name, value);
    return gmt_config_load(cfg, fake_getenv);
}

/* ---- defaults
 * ------------------------------------------------------------------------------------ */

static const struct {
    const char *name, *value;
} defaults[] = {
    {"GPUMEMTRACE_OUTPUT", "gpumemtrace-%p.json"},
    {"GPUMEMTRACE_STACK_DEPTH", "32"},
    {"GPUMEMTRACE_PYTHON", "1"},
    {"GPUMEMTRACE_BACKEND", "auto"},
    {"GPUMEMTRACE_SNAPSHOT_SIGNAL", "SIGUSR1"},
    {"GPUMEMTRACE_OOM_REPORT", "1"},
    {"GPUMEMTRACE_MIN_BYTES", "0"},
    {"GPUMEMTRACE_TOP", "50"},
    {"GPUMEMTRACE_LOG", "info"},
    {"GPUMEMTRACE_STATE", ""},
    {"GPUMEMTRACE_SUPPRESSIONS", ""},
    {"GPUMEMTRACE_MAX_LIVE", "0"},
    {"GPUMEMTRACE_MAX_STACKS", "0"},
    {"GPUMEMTRACE_FOLLOW_FORK", "1"},
    {"GPUMEMTRACE_FOLLOW_EXEC", "1"},
    {"GPUMEMTRACE_TIMELINE_POINTS", "512"},
    {"GPUMEMTRACE_OOM_REPORTS", "8"},
    {"GPUMEMTRACE_FSYNC", "0"},
    {"GPUMEMTRACE_GROWTH_WARMUP", "0.2"},
    {"GPUMEMTRACE_UNWIND", "native"},
    {"GPUMEMTRACE_PY_CHECKED", "0"},
};
#define NDEFAULTS (sizeof defaults / sizeof defaults[0])

static void test_defaults(void **state)
{
    (void)state;
    gmt_config_t cfg;
    memset(&cfg, 0xa5, sizeof cfg);
    gmt_config_defaults(&cfg);
    for (size_t i = 0; i < NDEFAULTS; i++)
        assert_string_equal(item(&cfg, defaults[i].name), defaults[i].value);

    assert_string_equal(cfg.output, "gpumemtrace-%p.json");
    assert_int_equal(cfg.stack_depth, 32);
    assert_true(cfg.python);
    assert_int_equal(cfg.backend, GMT_BACKEND_AUTO);
    assert_int_equal(cfg.snapshot_signal, SIGUSR1);
    assert_true(cfg.oom_report);
    assert_int_equal(cfg.min_bytes, 0);
    assert_int_equal(cfg.top, 50);
    assert_int_equal(cfg.log_level, GMT_LOG_INFO);
    assert_string_equal(cfg.state, "");
    assert_string_equal(cfg.suppressions, "");
    assert_int_equal(cfg.max_live, 0);
    assert_int_equal(cfg.max_stacks, 0);
    assert_true(cfg.follow_fork);
    assert_true(cfg.follow_exec);
    assert_int_equal(cfg.timeline_points, 512);

    /* the items are exactly these variables, in a stable order, and nothing else */
    const char *n;
    char value[GMT_PATH_MAX];
    size_t count = 0;
    while (gmt_config_item(&cfg, count, &n, value, sizeof value)) {
        assert_true(count < NDEFAULTS);
        assert_string_equal(n, defaults[count].name);
        count++;
    }
    assert_int_equal(count, NDEFAULTS);

    /* an empty environment gives the defaults and no complaint */
    gmt_config_t loaded;
    env_clear();
    assert_int_equal(gmt_config_load(&loaded, fake_getenv), 0);
    assert_memory_equal(&loaded, &cfg, sizeof cfg);
}

/* ---- one good and one bad value for every variable
 * --------------------------------------------------- */

static char long_path[GMT_PATH_MAX + 16];

static void test_every_variable_good_and_bad(void **state)
{
    (void)state;
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = '\0';
    static const struct {
        const char *name, *good, *shown, *bad;
    } cases[] = {
        {"GPUMEMTRACE_OUTPUT", "/tmp/r-%p.json", "/tmp/r-%p.json", long_path},
        {"GPUMEMTRACE_STACK_DEPTH", "8", "8", "deep"},
        {"GPUMEMTRACE_PYTHON", "0", "0", "maybe"},
        {"GPUMEMTRACE_BACKEND", "cupti", "cupti", "magic"},
        {"GPUMEMTRACE_SNAPSHOT_SIGNAL", "SIGUSR2", "SIGUSR2", "SIGKILLME"},
        {"GPUMEMTRACE_OOM_REPORT", "off", "0", "2"},
        {"GPUMEMTRACE_MIN_BYTES", "1M", "1048576", "12Q"},
        {"GPUMEMTRACE_TOP", "7", "7", "0"},
        {"GPUMEMTRACE_LOG", "debug", "debug", "loud"},
        {"GPUMEMTRACE_STATE", "/dev/shm/gmt-state", "/dev/shm/gmt-state", long_path},
        {"GPUMEMTRACE_SUPPRESSIONS", "/etc/gmt.supp", "/etc/gmt.supp", long_path},
        {"GPUMEMTRACE_MAX_LIVE", "2M", "2097152", "1T"},
        {"GPUMEMTRACE_MAX_STACKS", "4096", "4096", "1G"},
        {"GPUMEMTRACE_FOLLOW_FORK", "no", "0", "nope"},
        {"GPUMEMTRACE_FOLLOW_EXEC", "FALSE", "0", ""},
        {"GPUMEMTRACE_TIMELINE_POINTS", "16", "16", "15"},
        {"GPUMEMTRACE_GROWTH_WARMUP", "30", "30s", "-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gmt_config_t def, cfg;
        gmt_config_defaults(&def);
        const char *good = cases[i].good, *shown = cases[i].shown;

        assert_int_equal(load_one(&cfg, cases[i].name, good), 0);
        if (strcmp(item(&cfg, cases[i].name), shown) != 0)
            fail_msg("%s=%s shows as '%s', expected '%s'", cases[i].name, good,
                     item(&cfg, cases[i].name), shown);
        /* nothing else moved */
        for (size_t d = 0; d < NDEFAULTS; d++)
            if (strcmp(defaults[d].name, cases[i].name) != 0)
                assert_string_equal(item(&cfg, defaults[d].name), defaults[d].value);

        assert_int_equal(load_one(&cfg, cases[i].name, cases[i].bad), 1);
        if (strcmp(item(&cfg, cases[i].name), item(&def, cases[i].name)) != 0)
            fail_msg("%s='%.20s' (bad) left '%s', expected the default", cases[i].name,
                     cases[i].bad, item(&cfg, cases[i].name));
        assert_memory_equal(&cfg, &def, sizeof cfg);
    }
}

static void test_bad_values_are_counted(void **state)
{
    (void)state;
    gmt_config_t cfg;
    env_clear();
    env_set("GPUMEMTRACE_STACK_DEPTH", "129");
    env_set("GPUMEMTRACE_TOP", "-3");
    env_set("GPUMEMTRACE_MIN_BYTES", "-1");
    env_set("GPUMEMTRACE_PYTHON", "0");      /* good */
    env_set("GPUMEMTRACE_BACKEND", "hooks"); /* good */
    assert_int_equal(gmt_config_load(&cfg, fake_getenv), 3);
    assert_int_equal(cfg.stack_depth, 32);
    assert_int_equal(cfg.top, 50);
    assert_int_equal(cfg.min_bytes, 0);
    assert_false(cfg.python);
    assert_int_equal(cfg.backend, GMT_BACKEND_HOOKS);
}

/* ---- value syntax
 * ----------------------------------------------------------------------------------------- */

static void test_booleans(void **state)
{
    (void)state;
    static const char *const yes[] = {"1", "true", "TRUE", "True", "yes", "YES", "on", "On"};
    static const char *const no[] = {"0", "false", "FALSE", "no", "No", "off", "OFF"};
    static const char *const bad[] = {"", "2", "y", "n", "tru", "onn", "enable", " 1"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        bool b = false;
        assert_int_equal(gmt_parse_bool(yes[i], &b), 0);
        assert_true(b);
        gmt_config_t cfg;
        assert_int_equal(load_one(&cfg, "GPUMEMTRACE_FOLLOW_FORK", yes[i]), 0);
        assert_true(cfg.follow_fork);
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        bool b = true;
        assert_int_equal(gmt_parse_bool(no[i], &b), 0);
        assert_false(b);
        gmt_config_t cfg;
        assert_int_equal(load_one(&cfg, "GPUMEMTRACE_PYTHON", no[i]), 0);
        assert_false(cfg.python);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bool b = true;
        assert_int_equal(gmt_parse_bool(bad[i], &b), -EINVAL);
        assert_true(b); /* untouched */
    }
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint64_t v;
    } good[] = {
        {"0", 0},
        {"4096", 4096},
        {"4K", 4096},
        {"4k", 4096},
        {"4KiB", 4096},
        {"4KB", 4096},
        {"2M", 2ull << 20},
        {"2MiB", 2ull << 20},
        {"1G", 1ull << 30},
        {"1GiB", 1ull << 30},
        {"1gib", 1ull << 30},
        {"3T", 3ull << 40},
        {"17B", 17},
        {"18446744073709551615", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 12345;
        if (gmt_parse_size(good[i].s, &v) != 0) fail_msg("'%s' rejected", good[i].s);
        assert_int_equal(v, good[i].v);
    }
    static const char *const bad[] = {
        "-1",
        "+1",
        "12Q",
        "",
        "K",
        "1.5G",
        "0x10",
        "4 K",
        "4KK",
        "4Ki",
        "18446744073709551616", /* one past UINT64_MAX */
        "17179869184G",         /* overflows after the multiply */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 12345;
        if (gmt_parse_size(bad[i], &v) != -EINVAL)
            fail_msg("'%s' accepted as %llu", bad[i], (unsigned long long)v);
        assert_int_equal(v, 12345);
    }
    uint64_t v = 12345;
    assert_int_equal(gmt_parse_size(NULL, &v), -EINVAL);

    gmt_config_t cfg;
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MIN_BYTES", "4KiB"), 0);
    assert_int_equal(cfg.min_bytes, 4096);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MIN_BYTES", "1GiB"), 0);
    assert_int_equal(cfg.min_bytes, 1ull << 30);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_STACKS", "64K"), 0);
    assert_int_equal(cfg.max_stacks, 65536);
    /* range: MAX_LIVE 0 (no bound) .. 2^36 */
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_LIVE", "1K"), 0);
    assert_int_equal(cfg.max_live, 1024);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_LIVE", "1023"), 0);
    assert_int_equal(cfg.max_live, 1023);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_LIVE", "64G"), 0);
    assert_int_equal(cfg.max_live, 1ull << 36);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_LIVE", "65G"), 1);
    assert_int_equal(cfg.max_live, 0);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MIN_BYTES", "-1"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MIN_BYTES", ""), 1);
}

/* strtoull skips leading white space and then accepts a sign, so a check on the first
 * character alone lets " -1" through as 2^64-1. */
static void test_size_rejects_signed_after_space(void **state)
{
    (void)state;
    uint64_t v = 12345;
    int rc = gmt_parse_size(" -1", &v);
    if (rc != -EINVAL) fail_msg("' -1' accepted as %llu", (unsigned long long)v);
    rc = gmt_parse_size(" +5", &v);
    if (rc != -EINVAL) fail_msg("' +5' accepted as %llu", (unsigned long long)v);
}

static void test_signals(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int sig;
    } good[] = {
        {"SIGUSR1", SIGUSR1},
        {"SIGUSR2", SIGUSR2},
        {"usr2", SIGUSR2},
        {"Usr1", SIGUSR1},
        {"sigusr2", SIGUSR2},
        {"SIGHUP", SIGHUP},
        {"none", 0},
        {"NONE", 0},
        {"off", 0},
        {"0", 0},
        {"SIGWINCH", SIGWINCH},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int sig = -1;
        if (gmt_parse_signal(good[i].s, &sig) != 0) fail_msg("'%s' rejected", good[i].s);
        assert_int_equal(sig, good[i].sig);
    }
    int rt = SIGRTMIN + 2;
    char buf[16];
    snprintf(buf, sizeof buf, "%d", rt);
    int sig = -1;
    assert_int_equal(gmt_parse_signal(buf, &sig), 0);
    assert_int_equal(sig, rt);
    /* kill -l's real-time names (SIGRTMIN+2 was refused: digits only) */
    static const struct {
        const char *s;
        int off; /* from SIGRTMIN, or (negative - 1) from SIGRTMAX */
    } rtn[] = {
        {"SIGRTMIN+2", 2}, {"rtmin+2", 2}, {"SIGRTMIN", 0}, {"RTMAX", -1}, {"SIGRTMAX-3", -4}};
    for (size_t i = 0; i < sizeof rtn / sizeof rtn[0]; i++) {
        sig = -1;
        if (gmt_parse_signal(rtn[i].s, &sig) != 0) fail_msg("'%s' rejected", rtn[i].s);
        assert_int_equal(sig, rtn[i].off >= 0 ? SIGRTMIN + rtn[i].off : SIGRTMAX + rtn[i].off + 1);
    }

    /* The real-time numbers as digits only, as every other number variable takes them (an
     * audit found " 34", "+34" and "034" accepted, "34 " not). */
    char pad[3][16];
    snprintf(pad[0], sizeof pad[0], " %d", rt);
    snprintf(pad[1], sizeof pad[1], "+%d", rt);
    snprintf(pad[2], sizeof pad[2], "0%d", rt);
    const char *const bad[] = {"",        "SIG",         "SIGKILL",    "KILL",       "9",
                               "15",      "usr3",        "-1",         "SIGUSR1x",   pad[0],
                               pad[1],    pad[2],        "SIGRTMIN-1", "SIGRTMAX+1", "RTMIN+",
                               "RTMIN+0", "SIGRTMIN+99", "RTMIN+02",   "RTMINX"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sig = -1;
        if (gmt_parse_signal(bad[i], &sig) != -EINVAL) fail_msg("'%s' accepted as %d", bad[i], sig);
        assert_int_equal(sig, -1);
    }

    assert_string_equal(gmt_signal_name(0), "none");
    assert_string_equal(gmt_signal_name(SIGUSR1), "SIGUSR1");
    assert_string_equal(gmt_signal_name(SIGUSR2), "SIGUSR2");

    gmt_config_t cfg;
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL", "usr2"), 0);
    assert_int_equal(cfg.snapshot_signal, SIGUSR2);
    assert_string_equal(item(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL"), "SIGUSR2");
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL", "none"), 0);
    assert_int_equal(cfg.snapshot_signal, 0);
    assert_string_equal(item(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL"), "none");
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL", buf), 0);
    assert_int_equal(cfg.snapshot_signal, rt);
    assert_string_equal(item(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL"), buf);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL", "SIGTERM"), 1);
    assert_int_equal(cfg.snapshot_signal, SIGUSR1);
}

static void test_int_ranges(void **state)
{
    (void)state;
    gmt_config_t cfg;
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "128"), 0);
    assert_int_equal(cfg.stack_depth, GMT_MAX_STACK_DEPTH);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "129"), 1);
    assert_int_equal(cfg.stack_depth, 32);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "0"), 0); /* stacks off */
    assert_int_equal(cfg.stack_depth, 0);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "-1"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "12abc"), 1);
    /* digits only, as sizes are: strtol would take a leading space or sign */
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", " 5"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "+5"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_TOP", "\t7"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_PY_CHECKED", "yes"), 0);
    assert_true(cfg.py_checked);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_PY_CHECKED", "banana"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", ""), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STACK_DEPTH", "99999999999999999999"), 1);
    assert_int_equal(cfg.stack_depth, 32);

    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_TOP", "1"), 0);
    assert_int_equal(cfg.top, 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_TOP", "100000"), 0);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_TOP", "100001"), 1);
    assert_int_equal(cfg.top, 50);

    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_TIMELINE_POINTS", "65536"), 0);
    assert_int_equal(cfg.timeline_points, 65536);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_TIMELINE_POINTS", "65537"), 1);
    assert_int_equal(cfg.timeline_points, 512);

    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_STACKS", "0"), 0);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_STACKS", "255"), 0);
    /* Up to 2^25: the live table keeps stack ids in 25 bits (core/table.h). */
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_STACKS", "32M"), 0);
    assert_int_equal(cfg.max_stacks, 1ull << 25);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_STACKS", "33554433"), 1);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MAX_STACKS", "256M"), 1);
}

static void test_enums_and_strings(void **state)
{
    (void)state;
    gmt_config_t cfg;
    static const struct {
        const char *s;
        int v;
    } backends[] = {{"auto", GMT_BACKEND_AUTO},
                    {"CUPTI", GMT_BACKEND_CUPTI},
                    {"hooks", GMT_BACKEND_HOOKS},
                    {"Hooks", GMT_BACKEND_HOOKS}};
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        assert_int_equal(load_one(&cfg, "GPUMEMTRACE_BACKEND", backends[i].s), 0);
        assert_int_equal(cfg.backend, backends[i].v);
    }
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_BACKEND", ""), 1);
    assert_int_equal(cfg.backend, GMT_BACKEND_AUTO);

    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_UNWIND", "libunwind"), 0);
    assert_int_equal(cfg.unwind, GMT_UNWIND_LIBUNWIND);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_UNWIND", "Native"), 0);
    assert_int_equal(cfg.unwind, GMT_UNWIND_NATIVE);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_UNWIND", "gdb"), 1);
    assert_int_equal(cfg.unwind, GMT_UNWIND_NATIVE);

    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_LOG", "quiet"), 0);
    assert_int_equal(cfg.log_level, GMT_LOG_QUIET);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_LOG", "DEBUG"), 0);
    assert_int_equal(cfg.log_level, GMT_LOG_DEBUG);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_LOG", "2"), 1);
    assert_int_equal(cfg.log_level, GMT_LOG_INFO);

    /* the longest path that fits, and one byte too long */
    char path[GMT_PATH_MAX + 1];
    memset(path, 'p', sizeof path);
    path[GMT_PATH_MAX - 1] = '\0';
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_OUTPUT", path), 0);
    assert_string_equal(cfg.output, path);
    path[GMT_PATH_MAX - 1] = 'p';
    path[GMT_PATH_MAX] = '\0';
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_OUTPUT", path), 1);
    assert_string_equal(cfg.output, "gpumemtrace-%p.json");
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_STATE", "/dev/shm/x"), 0);
    assert_string_equal(cfg.state, "/dev/shm/x");
}

/* ---- hostile values for every variable ---------------------------------------------------------
 * Each variable gets an empty, a huge, a negative, a garbage and an over-long value. Each value
 * is either accepted (and then shown as given) or refused with exactly one short stderr line and
 * the default kept. The resulting configuration is always inside its bounds. */

static char over_long[8192 + 1];

/* Runs gmt_config_load with stderr captured; returns the number of lines written there. */
static int load_counting_lines(gmt_config_t *cfg, int *bad, size_t *longest)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    *bad = gmt_config_load(cfg, fake_getenv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    char line[4096];
    int lines = 0;
    *longest = 0;
    while (fgets(line, sizeof line, cap)) {
        lines++;
        if (strlen(line) > *longest) *longest = strlen(line);
    }
    fclose(cap);
    return lines;
}

static void check_bounds(const gmt_config_t *c)
{
    assert_true(strlen(c->output) > 0 && strlen(c->output) < GMT_PATH_MAX);
    assert_in_range(c->stack_depth, 0, GMT_MAX_STACK_DEPTH);
    assert_in_range(c->backend, 0, 2);
    assert_true(c->snapshot_signal == 0 ||
                (c->snapshot_signal > 0 && c->snapshot_signal <= SIGRTMAX));
    assert_in_range(c->top, 1, 100000);
    assert_in_range(c->log_level, 0, 2);
    assert_in_range(c->max_live, 0, 1ull << 36);
    assert_in_range(c->max_stacks, 0, 1ull << 28);
    assert_in_range(c->timeline_points, 16, 65536);
    assert_in_range(c->oom_reports, 0, 100000);
}

static void test_hostile_values(void **state)
{
    (void)state;
    memset(over_long, '9', sizeof over_long - 1);
    over_long[sizeof over_long - 1] = 0;
    static const char garbage[] = "\x01\x7f\xff%n%s$(rm -rf /)\n\t'\"";
    /* Strings where the value is a path: garbage is a (strange) valid file name. Empty means
     * "off" for STATE and SUPPRESSIONS. 'a': accepted, 'r': refused. */
    static const struct {
        const char *name;
        const char *expect; /* for: empty, huge, negative, garbage, over-long */
    } vars[] = {
        {"GPUMEMTRACE_OUTPUT", "raaar"},
        {"GPUMEMTRACE_STACK_DEPTH", "rrrrr"},
        {"GPUMEMTRACE_PYTHON", "rrrrr"},
        {"GPUMEMTRACE_BACKEND", "rrrrr"},
        {"GPUMEMTRACE_SNAPSHOT_SIGNAL", "rrrrr"},
        {"GPUMEMTRACE_OOM_REPORT", "rrrrr"},
        {"GPUMEMTRACE_MIN_BYTES", "rrrrr"},
        {"GPUMEMTRACE_TOP", "rrrrr"},
        {"GPUMEMTRACE_LOG", "rrrrr"},
        {"GPUMEMTRACE_STATE", "aaaar"},
        {"GPUMEMTRACE_SUPPRESSIONS", "aaaar"},
        {"GPUMEMTRACE_MAX_LIVE", "rrrrr"},
        {"GPUMEMTRACE_MAX_STACKS", "rrrrr"},
        {"GPUMEMTRACE_FOLLOW_FORK", "rrrrr"},
        {"GPUMEMTRACE_FOLLOW_EXEC", "rrrrr"},
        {"GPUMEMTRACE_TIMELINE_POINTS", "rrrrr"},
        {"GPUMEMTRACE_OOM_REPORTS", "rrrrr"},
        {"GPUMEMTRACE_FSYNC", "rrrrr"},
        {"GPUMEMTRACE_GROWTH_WARMUP", "rrrrr"},
        {"GPUMEMTRACE_UNWIND", "rrrrr"},
        {"GPUMEMTRACE_PY_CHECKED", "rrrrr"},
    };
    const char *values[] = {"", "99999999999999999999999999", "-5", garbage, over_long};
    /* every variable of the table is covered here */
    const char *n;
    char value[GMT_PATH_MAX];
    gmt_config_t def;
    gmt_config_defaults(&def);
    size_t count = 0;
    while (gmt_config_item(&def, count, &n, value, sizeof value)) {
        bool found = false;
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
            found |= strcmp(vars[i].name, n) == 0;
        if (!found) fail_msg("%s has no hostile-value case", n);
        count++;
    }
    assert_int_equal(count, sizeof vars / sizeof vars[0]);

    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        for (size_t k = 0; k < 5; k++) {
            gmt_config_t cfg;
            env_clear();
            env_set(vars[i].name, values[k]);
            int bad;
            size_t longest;
            int lines = load_counting_lines(&cfg, &bad, &longest);
            bool refused = vars[i].expect[k] == 'r';
            if (bad != (refused ? 1 : 0) || lines != bad)
                fail_msg("%s value #%zu: %d bad, %d lines; expected %s", vars[i].name, k, bad,
                         lines, refused ? "one refusal" : "acceptance");
            assert_true(longest < 200); /* the value is shortened in the message */
            check_bounds(&cfg);
            if (refused) assert_memory_equal(&cfg, &def, sizeof cfg);
        }
    }
    /* all of them hostile at once: one line each, and still a sane configuration */
    env_clear();
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        env_set(vars[i].name, "-1");
    gmt_config_t cfg;
    int bad;
    size_t longest;
    int lines = load_counting_lines(&cfg, &bad, &longest);
    assert_int_equal(bad, (int)(sizeof vars / sizeof vars[0]) - 3); /* 3 paths take "-1" */
    assert_int_equal(lines, bad);
    check_bounds(&cfg);
}

/* MAX_LIVE and MAX_STACKS are upper bounds on stores that grow with use: they reserve
 * nothing, so even a small host takes a large bound as it is, silently. */
static void test_bounded_by_host(void **state)
{
    (void)state;
    gmt_config_set_host_memory(256ull << 20); /* a 256 MiB container */
    gmt_config_t cfg;
    int bad;
    size_t longest;
    env_clear();
    env_set("GPUMEMTRACE_MAX_LIVE", "1G");
    env_set("GPUMEMTRACE_MAX_STACKS", "16M");
    int lines = load_counting_lines(&cfg, &bad, &longest);
    assert_int_equal(bad, 0);
    assert_int_equal(lines, 0);
    assert_int_equal(cfg.max_live, 1ull << 30);
    assert_int_equal(cfg.max_stacks, 16ull << 20);
    env_clear();
    assert_int_equal(load_counting_lines(&cfg, &bad, &longest), 0);
    assert_int_equal(cfg.max_live, 0); /* no bound by default */
    gmt_config_set_host_memory(0);
    assert_true(gmt_host_memory() >= (64ull << 20));
    gmt_config_set_host_memory((uint64_t)1 << 40);
}

static void test_rank(void **state)
{
    (void)state;
    env_clear();
    assert_int_equal(gmt_env_rank(fake_getenv), 0);
    env_set("PMI_RANK", "7");
    assert_int_equal(gmt_env_rank(fake_getenv), 7);
    env_set("SLURM_PROCID", "x3"); /* garbage: the next variable decides */
    assert_int_equal(gmt_env_rank(fake_getenv), 7);
    env_set("RANK", "3");
    assert_int_equal(gmt_env_rank(fake_getenv), 3);
    env_clear();
    env_set("RANK", "-2");
    assert_int_equal(gmt_env_rank(fake_getenv), 0);
    env_set("OMPI_COMM_WORLD_RANK", "99999999999999999999");
    assert_int_equal(gmt_env_rank(fake_getenv), 0);
    env_set("SLURM_PROCID", " 4");
    assert_int_equal(gmt_env_rank(fake_getenv), 0);
}

/* config.h: the job's size comes from the variable beside the rank's own (torchrun's RANK and
 * WORLD_SIZE, Open MPI's, Slurm's, PMI's), never from another launcher's, and only above the
 * rank; 0 otherwise. */
static void test_world_size(void **state)
{
    (void)state;
    /* each step sets one variable (NULL: clears them all), then wants that size */
    static const struct {
        const char *name, *value;
        int want;
    } steps[] = {
        {NULL, NULL, 0},
        {"WORLD_SIZE", "8", 0}, /* no rank: not said */
        {"RANK", "3", 8},
        {"RANK", "8", 0}, /* outside its world */
        {"RANK", "7", 8},
        {"WORLD_SIZE", "8x", 0},
        {"WORLD_SIZE", "-8", 0},
        {"WORLD_SIZE", "1073741824", 0}, /* 2^30: past the bound */
        {NULL, NULL, 0},
        {"SLURM_PROCID", "2", 0}, /* Slurm's rank: Slurm's count, not PMI's */
        {"PMI_SIZE", "16", 0},
        {"SLURM_NTASKS", "4", 4},
        {"RANK", "x", 4}, /* garbage rank: the next launcher decides */
        {"WORLD_SIZE", "64", 4},
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (steps[i].name)
            env_set(steps[i].name, steps[i].value);
        else
            env_clear();
        if (gmt_env_world_size(fake_getenv) != steps[i].want)
            fail_msg("step %zu (%s=%s): world size %d, want %d", i, steps[i].name, steps[i].value,
                     gmt_env_world_size(fake_getenv), steps[i].want);
    }
}

/* GPUMEMTRACE_GROWTH_WARMUP: a fraction of the run below 1, seconds from 1 or with "s", or a
 * percentage; nothing strtod would take beyond plain digits. */
static void test_growth_warmup(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        double value;
        bool seconds;
    } good[] = {{"0", 0, false}, {"0.25", 0.25, false}, {"0.5s", 0.5, true}, {"2s", 2, true},
                {"1", 1, true},  {"30", 30, true},      {"20%", 0.2, false}, {"100%", 1, false}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        gmt_warmup_t w = {-1, false};
        assert_int_equal(gmt_parse_warmup(good[i].text, &w), 0);
        assert_true(w.value > good[i].value - 1e-12 && w.value < good[i].value + 1e-12);
        assert_int_equal(w.seconds, good[i].seconds);
    }
    static const char *const bad[] = {"",    "-1", " 1",   "1e3", "0x1", "1.2.3",       "inf",
                                      "nan", "5m", "101%", "1s ", ".5",  "99999999999s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gmt_warmup_t w = {7, true};
        if (gmt_parse_warmup(bad[i], &w) != -EINVAL) fail_msg("'%s' was accepted", bad[i]);
        assert_true(w.value == 7 && w.seconds); /* untouched */
    }
}

/* ---- what a mutation audit found unpinned ----------------------------------------------------
 * Each test below holds a line of docs/configuration.md (or config.h) that no test held: a
 * mutant of config.c changing it left the suite passing. */

/* Runs gmt_config_load with stderr captured into out (one line expected). */
static void load_message(gmt_config_t *cfg, int *bad, char *out, size_t len)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    *bad = gmt_config_load(cfg, fake_getenv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    size_t n = fread(out, 1, len - 1, cap);
    out[n] = '\0';
    fclose(cap);
}

/* GPUMEMTRACE_OOM_REPORTS: 0-100000, 0 writing none. */
static void test_oom_reports_range(void **state)
{
    (void)state;
    gmt_config_t cfg;
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_OOM_REPORTS", "0"), 0);
    assert_int_equal(cfg.oom_reports, 0);
    assert_string_equal(item(&cfg, "GPUMEMTRACE_OOM_REPORTS"), "0");
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_OOM_REPORTS", "100000"), 0);
    assert_int_equal(cfg.oom_reports, 100000);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_OOM_REPORTS", "100001"), 1);
    assert_int_equal(cfg.oom_reports, 8);
}

/* "all powers of 1024", for every suffix, not only the ones the size test names. */
static void test_size_suffixes_all_binary(void **state)
{
    (void)state;
    static const char *const unit[] = {"", "K", "M", "G", "T"};
    static const char *const tail[] = {"", "iB", "B", "ib", "b"};
    for (size_t u = 1; u < 5; u++)
        for (size_t t = 0; t < 5; t++) {
            char s[16];
            snprintf(s, sizeof s, "3%s%s", unit[u], tail[t]);
            uint64_t v = 0;
            if (gmt_parse_size(s, &v) != 0) fail_msg("'%s' rejected", s);
            if (v != 3ull << (10 * u)) fail_msg("'%s' read as %llu", s, (unsigned long long)v);
        }
    uint64_t v = 0;
    assert_int_equal(gmt_parse_size("3b", &v), 0);
    assert_int_equal(v, 3);
}

/* GPUMEMTRACE_MIN_BYTES takes what `gpumemtrace run --min-bytes` takes (cmd_run.c: a size up to
 * INT64_MAX), so the option never sets a value the library refuses, nor the other way. */
static void test_min_bytes_as_run_takes_it(void **state)
{
    (void)state;
    gmt_config_t cfg;
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MIN_BYTES", "9223372036854775807"), 0);
    assert_int_equal(cfg.min_bytes, (uint64_t)INT64_MAX);
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_MIN_BYTES", "9223372036854775808"), 1);
    assert_int_equal(cfg.min_bytes, 0);
}

/* Every name configuration.md lists, with and without SIG; the real-time range exactly; digits
 * only; and the report's config shows a real-time signal by its number at both ends. */
static void test_signal_names_and_realtime_range(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        int sig;
    } names[] = {{"USR1", SIGUSR1},   {"USR2", SIGUSR2}, {"HUP", SIGHUP},  {"QUIT", SIGQUIT},
                 {"WINCH", SIGWINCH}, {"PWR", SIGPWR},   {"TTIN", SIGTTIN}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char with[16];
        snprintf(with, sizeof with, "SIG%s", names[i].name);
        int sig = -1;
        if (gmt_parse_signal(names[i].name, &sig) != 0) fail_msg("'%s' rejected", names[i].name);
        assert_int_equal(sig, names[i].sig);
        sig = -1;
        if (gmt_parse_signal(with, &sig) != 0) fail_msg("'%s' rejected", with);
        assert_int_equal(sig, names[i].sig);
        gmt_config_t cfg;
        assert_int_equal(load_one(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL", with), 0);
        assert_string_equal(item(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL"), with);
    }

    const int ends[] = {SIGRTMIN, SIGRTMAX};
    for (size_t i = 0; i < 2; i++) {
        char buf[16];
        snprintf(buf, sizeof buf, "%d", ends[i]);
        gmt_config_t cfg;
        assert_int_equal(load_one(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL", buf), 0);
        assert_int_equal(cfg.snapshot_signal, ends[i]);
        assert_string_equal(item(&cfg, "GPUMEMTRACE_SNAPSHOT_SIGNAL"), buf);
    }
    /* just outside: the C library's own signals below SIGRTMIN, nothing past SIGRTMAX */
    char below[16], above[16], trail[16];
    snprintf(below, sizeof below, "%d", SIGRTMIN - 1);
    snprintf(above, sizeof above, "%d", SIGRTMAX + 1);
    snprintf(trail, sizeof trail, "%dx", SIGRTMIN + 1);
    const char *const bad[] = {below, above, trail};
    for (size_t i = 0; i < 3; i++) {
        int sig = -1;
        if (gmt_parse_signal(bad[i], &sig) != -EINVAL) fail_msg("'%s' accepted as %d", bad[i], sig);
        assert_int_equal(sig, -1);
    }
}

/* A real-time signal has a name to show in the report's process.signal, not an empty one. */
static void test_realtime_signal_name(void **state)
{
    (void)state;
    const char *name = gmt_signal_name(SIGRTMIN + 2);
    assert_non_null(name);
    assert_true(strlen(name) > 0);
    assert_string_not_equal(name, "none");
}

/* The one stderr line: the value cut at 48 characters (and said to be cut), unprintable bytes
 * as '?', printable ones (a space) as they are, and the value used instead, "none" where
 * the default is empty (a path over 1023 bytes said so). */
static void test_bad_value_line(void **state)
{
    (void)state;
    char v60[61], v48[49], want[256], got[4096];
    memset(v60, 'a', 60);
    v60[60] = '\0';
    memset(v48, 'b', 48);
    v48[48] = '\0';
    gmt_config_t cfg;
    int bad;

    env_clear();
    env_set("GPUMEMTRACE_STACK_DEPTH", v60);
    load_message(&cfg, &bad, got, sizeof got);
    assert_int_equal(bad, 1);
    snprintf(want, sizeof want,
             "gpumemtrace: GPUMEMTRACE_STACK_DEPTH='%.48s...' is not valid; using 32\n", v60);
    assert_string_equal(got, want);

    env_clear();
    env_set("GPUMEMTRACE_STACK_DEPTH", v48); /* exactly 48: shown whole */
    load_message(&cfg, &bad, got, sizeof got);
    snprintf(want, sizeof want,
             "gpumemtrace: GPUMEMTRACE_STACK_DEPTH='%s' is not valid; using 32\n", v48);
    assert_string_equal(got, want);

    env_clear();
    env_set("GPUMEMTRACE_TOP", "a b\x7f\x01\xff"
                               "c");
    load_message(&cfg, &bad, got, sizeof got);
    assert_int_equal(bad, 1);
    assert_string_equal(got, "gpumemtrace: GPUMEMTRACE_TOP='a b???c' is not valid; using 50\n");

    env_clear();
    env_set("GPUMEMTRACE_STATE", long_path);
    load_message(&cfg, &bad, got, sizeof got);
    assert_int_equal(bad, 1);
    /* why, and what is used: no state file ("(empty)" said neither) */
    snprintf(want, sizeof want,
             "gpumemtrace: GPUMEMTRACE_STATE='%.48s...' is longer than 1023 bytes; using none\n",
             long_path);
    assert_string_equal(got, want);
    /* kept for the report's capture.warnings, without the prefix */
    want[strlen(want) - 1] = 0;
    assert_string_equal(gmt_config_refused(0), want + strlen("gpumemtrace: "));
    assert_null(gmt_config_refused(1));
}

/* The report's config is the effective value: a fraction or seconds as given, not rounded. */
static void test_warmup_shown_as_given(void **state)
{
    (void)state;
    gmt_config_t cfg;
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_GROWTH_WARMUP", "0.123456789"), 0);
    assert_string_equal(item(&cfg, "GPUMEMTRACE_GROWTH_WARMUP"), "0.123456789");
    assert_int_equal(load_one(&cfg, "GPUMEMTRACE_GROWTH_WARMUP", "1234.5678901s"), 0);
    assert_string_equal(item(&cfg, "GPUMEMTRACE_GROWTH_WARMUP"), "1234.5678901s");
}

/* config.h: a rank variable names a rank when it holds a number in [0, 2^30); otherwise the
 * next variable decides. */
static void test_rank_bounds(void **state)
{
    (void)state;
    env_clear();
    env_set("PMI_RANK", "5");
    env_set("RANK", "1073741823");
    assert_int_equal(gmt_env_rank(fake_getenv), 1073741823);
    env_set("RANK", "1073741824");
    assert_int_equal(gmt_env_rank(fake_getenv), 5);
    env_set("RANK", "3x");
    assert_int_equal(gmt_env_rank(fake_getenv), 5);
}

/* The report's config names the warmup in the variable's own syntax: read back, it is the same
 * warmup. A fraction of the whole run was shown as "1", which reads as one second; and a number
 * written below 1 is a fraction even where a double rounds it to 1. */
static void test_warmup_shown_reads_back(void **state)
{
    (void)state;
    static const char *const given[] = {"0",    "0.2",   "0.85", "0.5s",
                                        "1",    "30",    "2.5s", "20%",
                                        "100%", "99.5%", "1%",   "0.99999999999999999999"};
    for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
        gmt_config_t cfg, again;
        assert_int_equal(load_one(&cfg, "GPUMEMTRACE_GROWTH_WARMUP", given[i]), 0);
        char shown[64];
        int w = snprintf(shown, sizeof shown, "%s", item(&cfg, "GPUMEMTRACE_GROWTH_WARMUP"));
        assert_true(w > 0 && (size_t)w < sizeof shown); /* the whole value */
        if (load_one(&again, "GPUMEMTRACE_GROWTH_WARMUP", shown) != 0)
            fail_msg("'%s' shows as '%s', which is refused", given[i], shown);
        if (again.growth_warmup.seconds != cfg.growth_warmup.seconds ||
            again.growth_warmup.value != cfg.growth_warmup.value)
            fail_msg("'%s' shows as '%s', which reads as %g%s", given[i], shown,
                     again.growth_warmup.value, again.growth_warmup.seconds ? " s" : "");
    }
    gmt_warmup_t w = {7, true};
    assert_int_equal(gmt_parse_warmup("0.99999999999999999999", &w), 0);
    assert_false(w.seconds);
    assert_true(w.value == 1);
}

/* A relative suppressions path is fixed against the working directory (read at exit, when the
 * program may have moved); an absolute or empty one, or one that would not fit, is kept. */
static void test_suppressions_made_absolute(void **state)
{
    (void)state;
    char here[GMT_PATH_MAX], want[GMT_PATH_MAX + 16];
    assert_non_null(getcwd(here, sizeof here));
    gmt_config_t cfg;
    static const char *const kept[] = {"", "/etc/gmt.supp"};
    for (size_t i = 0; i < 2; i++) {
        gmt_config_defaults(&cfg);
        snprintf(cfg.suppressions, sizeof cfg.suppressions, "%s", kept[i]);
        gmt_config_fix_suppressions(&cfg);
        assert_string_equal(cfg.suppressions, kept[i]);
    }
    gmt_config_defaults(&cfg);
    snprintf(cfg.suppressions, sizeof cfg.suppressions, "a%%p/s.supp");
    gmt_config_fix_suppressions(&cfg);
    snprintf(want, sizeof want, "%s/a%%p/s.supp", here); /* a plain path: no '%' doubled */
    assert_string_equal(cfg.suppressions, want);
    /* the root: no "//" */
    assert_int_equal(chdir("/"), 0);
    gmt_config_defaults(&cfg);
    snprintf(cfg.suppressions, sizeof cfg.suppressions, "s.supp");
    gmt_config_fix_suppressions(&cfg);
    assert_string_equal(cfg.suppressions, "/s.supp");
    /* 1023 bytes fit, 1024 do not: then kept relative (the library reads what it can) */
    for (size_t len = GMT_PATH_MAX - 2; len <= GMT_PATH_MAX - 1; len++) {
        gmt_config_defaults(&cfg);
        memset(cfg.suppressions, 'x', len);
        cfg.suppressions[len] = 0;
        gmt_config_fix_suppressions(&cfg);
        assert_int_equal(strlen(cfg.suppressions), GMT_PATH_MAX - 1);
        assert_int_equal(cfg.suppressions[0], len == GMT_PATH_MAX - 2 ? '/' : 'x');
    }
    assert_int_equal(chdir(here), 0);
}

int main(void)
{
    /* bad values print one line each; keep the test output readable */
    gmt_log_set_level(GMT_LOG_QUIET);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_growth_warmup),
        cmocka_unit_test_setup(test_defaults, setup),
        cmocka_unit_test_setup(test_every_variable_good_and_bad, setup),
        cmocka_unit_test_setup(test_bad_values_are_counted, setup),
        cmocka_unit_test_setup(test_booleans, setup),
        cmocka_unit_test_setup(test_sizes, setup),
        cmocka_unit_test_setup(test_size_rejects_signed_after_space, setup),
        cmocka_unit_test_setup(test_signals, setup),
        cmocka_unit_test_setup(test_int_ranges, setup),
        cmocka_unit_test_setup(test_enums_and_strings, setup),
        cmocka_unit_test_setup(test_hostile_values, setup),
        cmocka_unit_test_setup(test_bounded_by_host, setup),
        cmocka_unit_test_setup(test_rank, setup),
        cmocka_unit_test_setup(test_world_size, setup),
        cmocka_unit_test_setup(test_oom_reports_range, setup),
        cmocka_unit_test_setup(test_size_suffixes_all_binary, setup),
        cmocka_unit_test_setup(test_min_bytes_as_run_takes_it, setup),
        cmocka_unit_test_setup(test_signal_names_and_realtime_range, setup),
        cmocka_unit_test_setup(test_realtime_signal_name, setup),
        cmocka_unit_test_setup(test_bad_value_line, setup),
        cmocka_unit_test_setup(test_warmup_shown_as_given, setup),
        cmocka_unit_test_setup(test_rank_bounds, setup),
        cmocka_unit_test_setup(test_warmup_shown_reads_back, setup),
        cmocka_unit_test_setup(test_suppressions_made_absolute, setup),
    };
    return cmocka_run_group_tests_name("unit.config", tests, NULL, NULL);
}
