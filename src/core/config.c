/* config.c - every GPUMEMTRACE_* variable, in one table.
 *
 * Read once, at init, before any hook records anything. Each entry names the variable, its
 * type, its default (as the user would write it) and its limits; docs/configuration.md lists
 * the same variables and must be kept in step with this table.
 */
#define _GNU_SOURCE
#include "config.h"
#include "fdutil.h"

#include "log.h"
#include "stacks.h"
#include "table.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

typedef enum opt_type_e {
    OPT_STRING,
    OPT_INT,
    OPT_BOOL,
    OPT_SIZE,
    OPT_ENUM, /* an int field: the index of its value in names (any case) */
    OPT_SIGNAL,
    OPT_WARMUP,
} opt_type_t;

typedef struct opt_s {
    const char *name;
    opt_type_t type;
    size_t offset;
    const char *def;
    int64_t min, max;         /* OPT_INT and OPT_SIZE */
    const char *const *names; /* OPT_ENUM: the values, NULL-terminated */
} opt_t;

#define OFF(field) offsetof(gmt_config_t, field)

/* In the order of gmt_backend_t, gmt_log_level_t and gmt_unwind_mode_t. */
static const char *const backend_names[] = {"auto", "cupti", "hooks", NULL};
static const char *const level_names[] = {"quiet", "info", "debug", NULL};
static const char *const unwind_names[] = {"native", "libunwind", NULL};

static const opt_t opts[] = {
    {"GPUMEMTRACE_OUTPUT", OPT_STRING, OFF(output), "gpumemtrace-%p.json", 0, 0, NULL},
    {"GPUMEMTRACE_STACK_DEPTH", OPT_INT, OFF(stack_depth), "32", 0, GMT_MAX_STACK_DEPTH, NULL},
    {"GPUMEMTRACE_PYTHON", OPT_BOOL, OFF(python), "1", 0, 0, NULL},
    {"GPUMEMTRACE_BACKEND", OPT_ENUM, OFF(backend), "auto", 0, 0, backend_names},
    {"GPUMEMTRACE_SNAPSHOT_SIGNAL", OPT_SIGNAL, OFF(snapshot_signal), "SIGUSR1", 0, 0, NULL},
    {"GPUMEMTRACE_OOM_REPORT", OPT_BOOL, OFF(oom_report), "1", 0, 0, NULL},
    {"GPUMEMTRACE_MIN_BYTES", OPT_SIZE, OFF(min_bytes), "0", 0, INT64_MAX, NULL},
    {"GPUMEMTRACE_TOP", OPT_INT, OFF(top), "50", 1, 100000, NULL},
    {"GPUMEMTRACE_LOG", OPT_ENUM, OFF(log_level), "info", 0, 0, level_names},
    {"GPUMEMTRACE_STATE", OPT_STRING, OFF(state), "", 0, 0, NULL},
    {"GPUMEMTRACE_SUPPRESSIONS", OPT_STRING, OFF(suppressions), "", 0, 0, NULL},
    {"GPUMEMTRACE_MAX_LIVE", OPT_SIZE, OFF(max_live), "0", 0, (int64_t)1 << 36, NULL},
    /* Stack ids are kept in GMT_TABLE_STACK_BITS of the live table's slot (ids below the bound). */
    {"GPUMEMTRACE_MAX_STACKS", OPT_SIZE, OFF(max_stacks), "0", 0,
     (int64_t)1 << GMT_TABLE_STACK_BITS, NULL},
    {"GPUMEMTRACE_FOLLOW_FORK", OPT_BOOL, OFF(follow_fork), "1", 0, 0, NULL},
    {"GPUMEMTRACE_FOLLOW_EXEC", OPT_BOOL, OFF(follow_exec), "1", 0, 0, NULL},
    {"GPUMEMTRACE_TIMELINE_POINTS", OPT_INT, OFF(timeline_points), "512", 16, 65536, NULL},
    {"GPUMEMTRACE_OOM_REPORTS", OPT_INT, OFF(oom_reports), "8", 0, 100000, NULL},
    {"GPUMEMTRACE_FSYNC", OPT_BOOL, OFF(fsync), "0", 0, 0, NULL},
    {"GPUMEMTRACE_GROWTH_WARMUP", OPT_WARMUP, OFF(growth_warmup), "0.2", 0, 0, NULL},
    {"GPUMEMTRACE_UNWIND", OPT_ENUM, OFF(unwind), "native", 0, 0, unwind_names},
    {"GPUMEMTRACE_PY_CHECKED", OPT_BOOL, OFF(py_checked), "0", 0, 0, NULL},
};

#define NOPTS (sizeof opts / sizeof opts[0])

int gmt_parse_bool(const char *s, bool *out)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = true, 0;
        if (strcasecmp(s, no[i]) == 0) return *out = false, 0;
    }
    return -EINVAL;
}

int gmt_parse_size(const char *s, uint64_t *out)
{
    /* strtoull would skip spaces and accept a sign: " -1" must not become 2^64-1. */
    if (!s || !isdigit((unsigned char)*s)) return -EINVAL;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return -EINVAL;
    uint64_t mult = 1;
    if (*end) {
        static const struct {
            const char *suffix;
            uint64_t mult;
        } units[] = {{"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1ull << 10},
                     {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1ull << 20},
                     {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1ull << 30},
                     {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1ull << 40},
                     {"B", 1}};
        size_t i;
        for (i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strcasecmp(end, units[i].suffix) == 0) break;
        if (i == sizeof units / sizeof units[0]) return -EINVAL;
        mult = units[i].mult;
    }
    if (v > UINT64_MAX / mult) return -EINVAL;
    *out = (uint64_t)v * mult;
    return 0;
}

/* Every signal the tracer names; `snapshot` marks those that may be the snapshot signal (ones
 * whose default action a program rarely relies on). */
static const struct {
    const char *name;
    int sig;
    bool snapshot;
} signals[] = {
    {"SIGUSR1", SIGUSR1, true},  {"SIGUSR2", SIGUSR2, true},   {"SIGHUP", SIGHUP, true},
    {"SIGQUIT", SIGQUIT, true},  {"SIGWINCH", SIGWINCH, true}, {"SIGPWR", SIGPWR, true},
    {"SIGTTIN", SIGTTIN, true},  {"SIGTERM", SIGTERM, false},  {"SIGINT", SIGINT, false},
    {"SIGSEGV", SIGSEGV, false}, {"SIGBUS", SIGBUS, false},    {"SIGABRT", SIGABRT, false},
    {"SIGFPE", SIGFPE, false},   {"SIGILL", SIGILL, false},    {"SIGPIPE", SIGPIPE, false},
    {"SIGALRM", SIGALRM, false}, {"SIGXCPU", SIGXCPU, false},  {"SIGVTALRM", SIGVTALRM, false},
};

int gmt_parse_signal(const char *s, int *out)
{
    if (strcasecmp(s, "none") == 0 || strcmp(s, "0") == 0 || strcasecmp(s, "off") == 0) {
        *out = 0;
        return 0;
    }
    const char *bare = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (signals[i].snapshot && strcasecmp(bare, signals[i].name + 3) == 0)
            return *out = signals[i].sig, 0;
    /* kill -l's names of the real-time signals: RTMIN, RTMIN+N, RTMAX-N, RTMAX ("SIG"
     * optional, any case; N digits only, no leading zero). */
    if (strncasecmp(bare, "RTMIN", 5) == 0 || strncasecmp(bare, "RTMAX", 5) == 0) {
        bool min = toupper((unsigned char)bare[4]) == 'N';
        const char *n = bare + 5;
        long off = 0;
        if (*n) {
            if (*n != (min ? '+' : '-') || n[1] < '1' || n[1] > '9' || strlen(n + 1) > 2)
                return -EINVAL;
            char *end;
            off = strtol(n + 1, &end, 10);
            if (*end) return -EINVAL;
        }
        long v = min ? SIGRTMIN + off : SIGRTMAX - off;
        if (v < SIGRTMIN || v > SIGRTMAX) return -EINVAL;
        return *out = (int)v, 0;
    }
    /* Digits only, no leading zero: strtol would take spaces and a sign. */
    if (*s < '1' || *s > '9' || strlen(s) > 4) return -EINVAL;
    char *end;
    long v = strtol(s, &end, 10);
    if (!*end && v >= SIGRTMIN && v <= SIGRTMAX) return *out = (int)v, 0;
    return -EINVAL;
}

int gmt_parse_warmup(const char *s, gmt_warmup_t *out)
{
    /* strtod would skip spaces and take signs, hex, "inf" and "nan": digits and one point only. */
    if (!s || !isdigit((unsigned char)*s)) return -EINVAL;
    size_t i = 0, points = 0;
    bool below_one = true; /* as written: a double rounds 0.99999999999999999 up to 1 */
    for (; s[i] && (isdigit((unsigned char)s[i]) || s[i] == '.'); i++) {
        points += s[i] == '.';
        if (!points && s[i] != '0') below_one = false;
    }
    if (points > 1 || i > 24) return -EINVAL;
    char num[32];
    memcpy(num, s, i);
    num[i] = 0;
    char *end;
    double v = strtod(num, &end);
    if (*end) return -EINVAL;
    const char *unit = s + i;
    gmt_warmup_t w;
    memset(&w, 0, sizeof w); /* the padding too: configurations are compared and stored whole */
    w.value = v;
    if (strcmp(unit, "s") == 0) {
        w.seconds = true;
    } else if (strcmp(unit, "%") == 0) {
        if (v > 100) return -EINVAL;
        w.value = v / 100;
        if (w.value >= 1) w.value = 1;
    } else if (*unit) {
        return -EINVAL;
    } else if (!below_one) {
        w.seconds = true;
    }
    if (w.seconds && v > 1e7) return -EINVAL; /* about 4 months */
    *out = w;
    return 0;
}

const char *gmt_signal_name(int sig)
{
    if (sig == 0) return "none";
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++)
        if (signals[i].sig == sig) return signals[i].name;
    return "realtime";
}

static int parse_enum(const char *s, const char *const *names, int *out)
{
    for (int i = 0; names[i]; i++)
        if (strcasecmp(s, names[i]) == 0) return *out = i, 0;
    return -EINVAL;
}

/* Parse s into the field of opt; returns 0 or -EINVAL without touching the field on error. */
static int apply(gmt_config_t *cfg, const opt_t *o, const char *s)
{
    char *field = (char *)cfg + o->offset;
    switch (o->type) {
    case OPT_STRING:
        if (strlen(s) >= GMT_PATH_MAX) return -ENAMETOOLONG;
        if (!*s && *o->def) return -EINVAL; /* empty where a default exists: say so */
        memcpy(field, s, strlen(s) + 1);
        return 0;
    case OPT_INT: {
        /* Digits only, as sizes (gmt_parse_size): no sign, no leading space (strtol takes
         * both), so that ' 5' is said to be bad rather than read as 5 here and refused there. */
        if (!isdigit((unsigned char)*s)) return -EINVAL;
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < o->min || v > o->max) return -EINVAL;
        *(int *)field = (int)v;
        return 0;
    }
    case OPT_BOOL:
        return gmt_parse_bool(s, (bool *)field);
    case OPT_SIZE: {
        uint64_t v;
        if (gmt_parse_size(s, &v) || v < (uint64_t)o->min || v > (uint64_t)o->max) return -EINVAL;
        *(uint64_t *)field = v;
        return 0;
    }
    case OPT_ENUM:
        return parse_enum(s, o->names, (int *)field);
    case OPT_SIGNAL:
        return gmt_parse_signal(s, (int *)field);
    case OPT_WARMUP:
        return gmt_parse_warmup(s, (gmt_warmup_t *)(void *)field);
    }
    return -EINVAL;
}

void gmt_config_defaults(gmt_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NOPTS; i++) {
        int rc = apply(cfg, &opts[i], opts[i].def);
        (void)rc; /* defaults are valid by construction; test_config checks it */
    }
}

/* A bool's byte read as a byte (a bool holding 2 is undefined to read as a bool), made 0 or 1. */
static void settle_bool(void *field)
{
    unsigned char b;
    memcpy(&b, field, 1);
    b = b != 0;
    memcpy(field, &b, 1);
}

void gmt_config_sanitize(gmt_config_t *cfg)
{
    gmt_config_t def;
    gmt_config_defaults(&def);
    for (size_t i = 0; i < NOPTS; i++) {
        const opt_t *o = &opts[i];
        char *field = (char *)cfg + o->offset;
        switch (o->type) {
        case OPT_STRING:
            field[GMT_PATH_MAX - 1] = 0;
            break;
        case OPT_BOOL:
            settle_bool(field);
            break;
        case OPT_ENUM: {
            int v, n = 0;
            memcpy(&v, field, sizeof v);
            while (o->names[n])
                n++;
            if (v < 0 || v >= n) memcpy(field, (const char *)&def + o->offset, sizeof v);
            break;
        }
        case OPT_WARMUP:
            settle_bool(field + offsetof(gmt_warmup_t, seconds));
            break;
        case OPT_INT:
        case OPT_SIZE:
        case OPT_SIGNAL:
            break;
        }
    }
}

const char *gmt_env(const char *name)
{
    /* Under a set-user-ID or set-group-ID program (AT_SECURE), the environment belongs to the
     * unprivileged caller: nothing from it is used. */
    return secure_getenv(name);
}

/* Each launcher's rank variable and, at the same index, its count of ranks. */
static const char *const rank_vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"};
static const char *const world_vars[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS",
                                         "PMI_SIZE"};

/* A decimal number in [0, 2^30) that name's value holds, or -1. */
static int small_number(gmt_getenv_fn getenv_fn, const char *name)
{
    const char *v = getenv_fn(name);
    if (!v || !isdigit((unsigned char)*v)) return -1;
    char *end;
    errno = 0;
    long r = strtol(v, &end, 10);
    return !errno && !*end && r >= 0 && r < 1 << 30 ? (int)r : -1;
}

/* The rank of rank_vars[i]'s value, or -1 when it names none. */
static int rank_of(gmt_getenv_fn getenv_fn, size_t i)
{
    return small_number(getenv_fn, rank_vars[i]);
}

int gmt_env_rank(gmt_getenv_fn getenv_fn)
{
    if (!getenv_fn) getenv_fn = gmt_env;
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        int r = rank_of(getenv_fn, i);
        if (r >= 0) return r;
    }
    return 0;
}

int gmt_env_world_size(gmt_getenv_fn getenv_fn)
{
    if (!getenv_fn) getenv_fn = gmt_env;
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        int r = rank_of(getenv_fn, i);
        if (r < 0) continue;
        int w = small_number(getenv_fn, world_vars[i]);
        return w > r ? w : 0; /* a rank outside its world: the count is not this job's */
    }
    return 0;
}

bool gmt_env_has_rank(void)
{
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++)
        if (rank_of(gmt_env, i) >= 0) return true;
    return false;
}

static uint64_t host_memory_override;

void gmt_config_set_host_memory(uint64_t bytes)
{
    host_memory_override = bytes;
}

/* A cgroup's memory limit (v2, then v1), or 0 when there is none or it cannot be read. */
static uint64_t cgroup_limit(void)
{
    static const char *const files[] = {"/sys/fs/cgroup/memory.max",
                                        "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "re");
        if (!f) continue;
        char buf[64] = "";
        char *ok = fgets(buf, sizeof buf, f);
        fclose(f);
        unsigned long long v;
        if (ok && isdigit((unsigned char)buf[0]) && sscanf(buf, "%llu", &v) == 1 && v > 0) return v;
    }
    return 0;
}

uint64_t gmt_host_memory(void)
{
    if (host_memory_override) return host_memory_override;
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    uint64_t cg = cgroup_limit();
    if (cg && (!phys || cg < phys)) phys = cg;
    return phys ? phys : (uint64_t)1 << 32;
}

/* Writes at most 48 bytes of a hostile value, unprintable bytes as '?', for one log line. */
static const char *shown_value(const char *v, char *buf, size_t len)
{
    size_t n = 0, i = 0;
    for (; v[i] && n + 4 < len && i < 48; i++)
        buf[n++] = (v[i] >= 0x20 && v[i] < 0x7f) ? v[i] : '?';
    if (v[i]) buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
    buf[n] = 0;
    return buf;
}

#define REFUSED_KEPT 8
static char refused[REFUSED_KEPT][192];
static int nrefused;

const char *gmt_config_refused(int i)
{
    return i >= 0 && i < nrefused ? refused[i] : NULL;
}

/* A value not used: said now, and kept (the first REFUSED_KEPT) for the report's warnings. */
static void say_refused(const char *line)
{
    gmt_error("%s", line);
    if (nrefused < REFUSED_KEPT) snprintf(refused[nrefused++], sizeof refused[0], "%s", line);
}

int gmt_config_load(gmt_config_t *cfg, gmt_getenv_fn getenv_fn)
{
    if (!getenv_fn) getenv_fn = gmt_env;
    gmt_config_defaults(cfg);
    nrefused = 0;
    /* Errors about bad values are printed whatever GPUMEMTRACE_LOG says (GMT_LOG_ERROR). */
    int bad = 0;
    for (size_t i = 0; i < NOPTS; i++) {
        const char *v = getenv_fn(opts[i].name);
        if (!v) continue;
        int rc = apply(cfg, &opts[i], v);
        if (rc != 0) {
            /* An empty default is "none": no state file, no suppressions ("(empty)" said
             * nothing of what was lost). */
            char buf[64], why[48], line[sizeof refused[0]];
            if (rc == -ENAMETOOLONG)
                snprintf(why, sizeof why, "is longer than %d bytes", GMT_PATH_MAX - 1);
            else
                snprintf(why, sizeof why, "is not valid");
            snprintf(line, sizeof line, "%s='%s' %s; using %s", opts[i].name,
                     shown_value(v, buf, sizeof buf), why, *opts[i].def ? opts[i].def : "none");
            say_refused(line);
            bad++;
        }
    }
    /* A launcher's rank variable that holds no rank is passed over (gmt_env_rank): said, since
     * with %r and no %p in GPUMEMTRACE_OUTPUT the ranks that took 0 write one file. Not counted
     * in bad: the variable is the launcher's, not ours. */
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
        const char *v = getenv_fn(rank_vars[i]);
        if (!v || !*v || rank_of(getenv_fn, i) >= 0) continue;
        char buf[64], line[sizeof refused[0]];
        snprintf(line, sizeof line,
                 "%s='%s' is not a rank (a whole number from 0 to %d): passed over, the rank is "
                 "the next launcher variable's, else 0",
                 rank_vars[i], shown_value(v, buf, sizeof buf), (1 << 30) - 1);
        say_refused(line);
    }
    /* MAX_LIVE / MAX_STACKS are upper bounds on stores that grow with use (docs/state.md):
     * nothing is reserved for them, so no bound needs checking against the host. */
    return bad;
}

void gmt_config_fix_suppressions(gmt_config_t *cfg)
{
    char *p = cfg->suppressions;
    if (!p[0] || gmt_path_make_absolute(p, sizeof cfg->suppressions)) return;
    /* kept relative: read from the working directory each report is written in */
    char shown[256];
    gmt_error("GPUMEMTRACE_SUPPRESSIONS='%s' is relative and, with the working directory, over "
              "%d bytes: read from the working directory at each report, not the one at start",
              shown_value(p, shown, sizeof shown), GMT_PATH_MAX - 1);
}

bool gmt_config_item(const gmt_config_t *cfg, size_t idx, const char **name, char *value,
                     size_t value_len)
{
    if (idx >= NOPTS) return false;
    const opt_t *o = &opts[idx];
    const char *field = (const char *)cfg + o->offset;
    *name = o->name;
    switch (o->type) {
    case OPT_STRING:
        snprintf(value, value_len, "%s", field);
        break;
    case OPT_INT:
        snprintf(value, value_len, "%d", *(const int *)field);
        break;
    case OPT_BOOL:
        snprintf(value, value_len, "%s", *(const bool *)field ? "1" : "0");
        break;
    case OPT_SIZE:
        snprintf(value, value_len, "%llu", (unsigned long long)*(const uint64_t *)field);
        break;
    case OPT_ENUM:
        snprintf(value, value_len, "%s", o->names[*(const int *)field]);
        break;
    case OPT_SIGNAL: {
        int sig = *(const int *)field;
        if (sig >= SIGRTMIN && sig <= SIGRTMAX)
            snprintf(value, value_len, "%d", sig);
        else
            snprintf(value, value_len, "%s", gmt_signal_name(sig));
        break;
    }
    case OPT_WARMUP: {
        const gmt_warmup_t *w = (const gmt_warmup_t *)(const void *)field;
        /* As the variable is written: the whole run as "1" would read back as one second. */
        if (!w->seconds && w->value >= 1)
            snprintf(value, value_len, "100%%");
        else
            snprintf(value, value_len, w->seconds ? "%.15gs" : "%.15g", w->value);
        break;
    }
    }
    return true;
}
