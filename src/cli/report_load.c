/* report_load.c - reading a gpumemtrace report back into memory, for every verb that reads one.
 *
 * A report is parsed whole with cJSON and then checked for the shape the verbs rely on: the
 * schema name, the version this tool understands, every required top-level section with its
 * type, and object elements in the arrays that are walked. That is deliberately less than
 * full JSON Schema validation (the tests do that with docs/report.schema.json): it is what
 * lets the verbs read fields with the typed accessors here without crashing on a foreign or
 * truncated file, and give one clear line when the file is not usable.
 */
#include "cli/cli.h"
#include "core/event.h"
#include "symbolize/offline.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reports are text of a few MiB at most; this bound only stops a wrong path (a disk image,
 * /dev/zero) from eating memory. */
#define REPORT_MAX_BYTES ((size_t)512 << 20)

static int set_why(char *why, size_t why_len, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int set_why(char *why, size_t why_len, int err, const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* Read all of f into a NUL-terminated heap buffer. */
static int slurp(FILE *f, char **out, size_t *out_len)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    if (!buf) return -ENOMEM;
    for (;;) {
        if (len + 1 >= cap) {
            if (cap >= REPORT_MAX_BYTES) {
                free(buf);
                return -EFBIG;
            }
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                return -ENOMEM;
            }
            buf = bigger;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - 1 - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                int err = errno ? errno : EIO;
                free(buf);
                return -err;
            }
            break;
        }
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

/* Line and column of a byte offset, for a parse error a person can find. */
static void position_of(const char *text, size_t off, unsigned *line, unsigned *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static const struct section_s {
    const char *name;
    int type; /* cJSON_Object or cJSON_Array */
    size_t offset;
} sections[] = {
    {"tool", cJSON_Object, offsetof(gmt_report_t, tool)},
    {"process", cJSON_Object, offsetof(gmt_report_t, process)},
    {"config", cJSON_Object, offsetof(gmt_report_t, config)},
    {"capture", cJSON_Object, offsetof(gmt_report_t, capture)},
    {"devices", cJSON_Array, offsetof(gmt_report_t, devices_json)},
    {"summary", cJSON_Object, offsetof(gmt_report_t, summary)},
    {"leaks", cJSON_Object, offsetof(gmt_report_t, leaks)},
    {"peak", cJSON_Array, offsetof(gmt_report_t, peak_json)},
    {"fragmentation", cJSON_Array, offsetof(gmt_report_t, fragmentation_json)},
    {"timeline", cJSON_Array, offsetof(gmt_report_t, timeline_json)},
    {"errors", cJSON_Array, offsetof(gmt_report_t, errors_json)},
    {"stacks", cJSON_Object, offsetof(gmt_report_t, stacks_json)},
};

static const char *type_name(int type)
{
    return type == cJSON_Object ? "an object" : "an array";
}

static bool all_objects(const cJSON *array)
{
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        if (!cJSON_IsObject(item)) return false;
    }
    return true;
}

/* ---- an arena: every array of the model comes from here and goes in one free ---- */

typedef struct gmt_arena_s {
    struct gmt_arena_s *next;
    max_align_t data[];
} arena_t;

static void *arena_alloc(gmt_report_t *rep, size_t n, size_t size)
{
    if (n == 0) return NULL;
    if (size && n > (SIZE_MAX - sizeof(arena_t)) / size) return NULL;
    arena_t *a = calloc(1, sizeof(arena_t) + n * size);
    if (!a) return NULL;
    a->next = rep->arena;
    rep->arena = a;
    return a->data;
}

static size_t array_len(const cJSON *a)
{
    return cJSON_IsArray(a) ? (size_t)cJSON_GetArraySize(a) : 0;
}

/* The elements of a, when it is an array (none otherwise): with array_len, the only way the
 * loops below walk what they were sized for. cJSON_ArrayForEach alone walks an object's
 * members too, where array_len says 0 (a report with "points": {...} wrote past the end of a
 * zero-length allocation; found by fuzz.report_reader). */
#define EACH_ELEMENT(el, a) cJSON_ArrayForEach(el, (cJSON_IsArray(a) ? (a) : NULL))

/* The model's integers (ids, devices, ranks, counts, byte counts, codes) are integers in the
 * schema. One given as a fraction (a stack id of 1.5 was read as stack 1, a device of 0.5 as
 * GPU 0) refuses the report, naming the first such member: at is the place being read
 * ("leaks.groups[]"), set by the caller before it reads there. */
typedef struct num_check_s {
    const char *at;
    char bad_at[48]; /* the first member that is not an integer: its place, key and value */
    const char *bad_key;
    double bad_value;
} num_check_t;

static void note_not_whole(num_check_t *nc, const char *key, double value)
{
    if (nc->bad_key) return;
    snprintf(nc->bad_at, sizeof nc->bad_at, "%s", nc->at ? nc->at : "?");
    nc->bad_key = key;
    nc->bad_value = value;
}

/* An id, device, rank or code: a whole number, dflt when absent or past what an int64 holds
 * (as gmt_json_int: merge refuses stack ids past 2^53 with its own line). */
static int64_t json_i64(num_check_t *nc, const cJSON *obj, const char *key, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v)) return dflt;
    double d = v->valuedouble; /* cJSON reads no NaN; 1e999 is inf */
    if (isfinite(d) && d != floor(d)) {
        note_not_whole(nc, key, d);
        return dflt;
    }
    return gmt_json_int(obj, key, dflt);
}

/* A byte count or count: a whole number, 0 when negative (docs/cli.md, "Reading reports"),
 * UINT64_MAX from 2^64 up (1e999 included); 0 when absent. */
static uint64_t json_u64(num_check_t *nc, const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (isfinite(d) && d != floor(d)) {
        note_not_whole(nc, key, d);
        return 0;
    }
    if (!(d > 0)) return 0;
    return d >= 0x1p64 ? UINT64_MAX : (uint64_t)d;
}

/* Whether obj's key is a number of at least 0: json_u64 read it as what it is, not as 0. */
static bool json_nonnegative(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0;
}

/* A count the model keeps signed: json_u64 within int64. */
static int64_t json_count(num_check_t *nc, const cJSON *obj, const char *key)
{
    uint64_t n = json_u64(nc, obj, key);
    return n > INT64_MAX ? INT64_MAX : (int64_t)n;
}

/* json_count of a member a report may leave out: -1 when it is not a number (not known). */
static int64_t json_count_known(num_check_t *nc, const cJSON *obj, const char *key)
{
    return gmt_json_has_num(obj, key) ? json_count(nc, obj, key) : -1;
}

/* A flag a report may leave out: 1 true, 0 false, -1 when it is not a boolean (not known). */
static int json_flag(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

/* A merged rank's dropped_by_kind when it is an object whose every member is a number (a count,
 * read as gmt_json_count reads it); NULL otherwise: a member check cannot read ("7", null) is a
 * count not known, which read as none passed the rank's GPU limits that the job's summed
 * capture.dropped leaves unknown (check then judges the rank's figures by that sum). */
static const cJSON *drops_object(const cJSON *o)
{
    const cJSON *m;
    if (!cJSON_IsObject(o)) return NULL;
    cJSON_ArrayForEach(m, o)
    {
        if (!cJSON_IsNumber(m)) return NULL;
    }
    return o;
}

/* The refusal of a report whose nc noted a member that is not an integer; 0 when none. The
 * value is printed with the fewest digits that read back as it. */
static int not_whole_why(const num_check_t *nc, char *why, size_t why_len)
{
    if (!nc->bad_key) return 0;
    char num[32];
    return set_why(why, why_len, -EINVAL, "malformed report: \"%s%s%s\" is %s, not an integer",
                   nc->bad_at, nc->bad_at[0] ? "." : "", nc->bad_key,
                   gmt_fmt_double(nc->bad_value, num, sizeof num));
}

static double json_time(const cJSON *obj, const char *key)
{
    double t = gmt_json_num(obj, key, 0);
    return isfinite(t) ? t : 0;
}

/* json_time of a field a merge may not have written: -1 when it is not there. */
static double json_time_known(const cJSON *obj, const char *key)
{
    return gmt_json_has_num(obj, key) ? json_time(obj, key) : -1;
}

/* A frame's address as the report writes it: "0x" and 1-16 hex digits (the schema's pattern,
 * upper case taken too). strtoull alone read "-1" as 2^64-1 and "junk" as 0. */
static int parse_address(const char *s, uint64_t *out)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return -EINVAL;
    size_t n = strlen(s + 2);
    if (n == 0 || n > 16 || strspn(s + 2, "0123456789abcdefABCDEF") != n) return -EINVAL;
    *out = strtoull(s + 2, NULL, 16);
    return 0;
}

static int frame_from_json(num_check_t *nc, const cJSON *j, gmt_frame_t *f, int version)
{
    memset(f, 0, sizeof *f);
    f->line = -1;
    f->offset = -1;
    if (!cJSON_IsObject(j)) return -EINVAL;
    const char *type = gmt_json_str(j, "type", NULL);
    f->module = gmt_json_str(j, "module", NULL);
    f->file = gmt_json_str(j, "file", NULL);
    f->build_id = gmt_json_str(j, "build_id", NULL);
    f->line = json_i64(nc, j, "line", -1);
    f->offset = json_i64(nc, j, "offset", -1);
    const char *addr = gmt_json_str(j, "address", NULL);
    if (addr && parse_address(addr, &f->address)) return -EDOM;
    if (type && strcmp(type, "python") == 0) {
        f->python = true;
        f->symbol = gmt_json_str(j, "function", NULL);
    } else {
        f->symbol = gmt_json_str(j, "symbol", NULL);
        /* v1 wrote Python frames as frames without a module, the function as the symbol */
        if (version < 2 && !type && !f->module && f->file) {
            size_t n = strlen(f->file);
            f->python = n > 3 && strcmp(f->file + n - 3, ".py") == 0;
        }
    }
    return 0;
}

/* The functions inlined at native frame f (its `inlined` list, innermost first) into out[0..]:
 * their symbol, file and line; where they are, f's. */
static int inlined_frames(num_check_t *nc, const cJSON *inl, const gmt_frame_t *f, gmt_frame_t *out)
{
    const char *at = nc->at;
    nc->at = "stacks[].frames[].inlined[]";
    const cJSON *ij;
    size_t k = 0;
    int bad = 0;
    EACH_ELEMENT(ij, inl)
    {
        gmt_frame_t *x = &out[k++];
        *x = *f;
        x->inlined = true;
        x->symbol = x->file = NULL;
        x->line = -1;
        if (!cJSON_IsObject(ij)) {
            bad = -EINVAL;
            continue;
        }
        x->symbol = gmt_json_str(ij, "symbol", NULL);
        x->file = gmt_json_str(ij, "file", NULL);
        x->line = json_i64(nc, ij, "line", -1);
    }
    nc->at = at;
    return bad;
}

/* A native frame's `inlined` list as the report has it (absent: NULL); a Python frame's is
 * not read. */
static const cJSON *frame_inlined(const cJSON *fj)
{
    const char *type = gmt_json_str(fj, "type", NULL);
    if (type && strcmp(type, "python") == 0) return NULL;
    return cJSON_GetObjectItemCaseSensitive(fj, "inlined");
}

bool gmt_growth_unjudged(const char *status)
{
    return status && strcmp(status, "judged") != 0;
}

const char *gmt_report_when(const gmt_report_t *rep)
{
    const char *m = gmt_json_str(rep->leaks, "meaning", NULL);
    if (m && strcmp(m, "live at exit") == 0) return "at exit";
    if (m && strcmp(m, "live at exec") == 0) return "at exec";
    if (m && strcmp(m, "live when written") == 0) return "when written";
    return "at the end";
}

void gmt_growth_status_text(const char *status, char *buf, size_t len)
{
    if (!gmt_growth_unjudged(status))
        snprintf(buf, len, "judged");
    else if (strcmp(status, "damaged") == 0)
        snprintf(buf, len,
                 "not judged: the state file's growth samples are damaged (the rest of the "
                 "report is not)");
    else if (strcmp(status, "not_judged") == 0)
        snprintf(buf, len,
                 "not judged (the sampler held its samples past the report's wait, or there was "
                 "no memory to judge them)");
    else if (strcmp(status, "no_samples") == 0)
        snprintf(buf, len, "none (no growth sample was taken: the run ended before the first)");
    else if (strcmp(status, "too_few_samples") == 0)
        snprintf(buf, len,
                 "none (too few growth samples to judge: a verdict needs three points after the "
                 "warm-up, the run was shorter)");
    else /* a later tracer's: check calls its growth unknown, so it is not judged here */
        snprintf(buf, len, "not judged (growth_status %s)", gmt_tty(status));
}

size_t gmt_ranks_not_judged(const gmt_report_t *rep, char *buf, size_t len)
{
    size_t n = 0, used = 0;
    bool full = false; /* the names past the first that does not fit: counted, not named */
    buf[0] = '\0';
    for (size_t i = 0; i < rep->nranks; i++) {
        const char *st = rep->ranks[i].growth_status;
        if (!gmt_growth_unjudged(st)) continue;
        n++;
        if (full) continue;
        int k = snprintf(buf + used, len - used, "%srank %" PRId64 " (%s)", n > 1 ? ", " : "",
                         rep->ranks[i].rank, gmt_tty(st));
        if (k < 0 || (size_t)k >= len - used) {
            buf[used] = '\0';
            snprintf(buf + used, len - used, "%s...", n > 1 ? ", " : "");
            full = true;
        } else {
            used += (size_t)k;
        }
    }
    return n;
}

gmt_group_t gmt_site_group(const gmt_site_t *s)
{
    return (gmt_group_t){.stack_id = s->stack_id,
                         .bytes = s->allocs,
                         .count = s->live_count,
                         .device = s->device,
                         .rank = s->rank,
                         .kind = s->kind,
                         .api = s->api,
                         .library = s->library,
                         .stack = s->stack};
}

int gmt_library_cmp(const void *a, const void *b)
{
    const gmt_library_t *x = a, *y = b;
    if (x->peak_bytes != y->peak_bytes) return x->peak_bytes < y->peak_bytes ? 1 : -1;
    if (x->exit_bytes != y->exit_bytes) return x->exit_bytes < y->exit_bytes ? 1 : -1;
    return strcmp(x->library, y->library);
}

gmt_library_t *gmt_library_row(gmt_library_t *rows, size_t *n, const char *library)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp(rows[i].library, library) == 0) return &rows[i];
    rows[*n] = (gmt_library_t){.library = library};
    return &rows[(*n)++];
}

void gmt_libraries_json(cJSON *arr, const gmt_library_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "library", rows[i].library);
        cJSON_AddNumberToObject(x, "peak_bytes", (double)rows[i].peak_bytes);
        cJSON_AddNumberToObject(x, "exit_bytes", (double)rows[i].exit_bytes);
        cJSON_AddItemToArray(arr, x);
    }
}

static int cmp_stack(const void *a, const void *b)
{
    int64_t x = ((const gmt_stack_t *)a)->id, y = ((const gmt_stack_t *)b)->id;
    return x < y ? -1 : x > y;
}

static int build_stacks(gmt_report_t *rep, num_check_t *nc, char *why, size_t why_len)
{
    size_t n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, rep->stacks_json) n++;
    rep->stacks = arena_alloc(rep, n, sizeof *rep->stacks);
    if (n && !rep->stacks) return set_why(why, why_len, -ENOMEM, "out of memory");
    size_t k = 0;
    nc->at = "stacks[].frames[]";
    cJSON_ArrayForEach(item, rep->stacks_json)
    {
        char *end = NULL;
        errno = 0;
        /* digits only, as the schema's pattern: strtoll alone takes " 9", "+9" and "-0" */
        bool digits = item->string && *item->string >= '0' && *item->string <= '9';
        long long id = digits ? strtoll(item->string, &end, 10) : 0;
        if (!digits || *end || errno)
            return set_why(why, why_len, -EINVAL,
                           "malformed report: stack id '%.40s' is not a number",
                           item->string ? item->string : "");
        const cJSON *frames = item;
        gmt_stack_t *st = &rep->stacks[k++];
        st->id = id;
        if (cJSON_IsObject(item)) {
            frames = cJSON_GetObjectItemCaseSensitive(item, "frames");
            st->python = gmt_json_str(item, "python", NULL);
        }
        if (!cJSON_IsArray(frames))
            return set_why(why, why_len, -EINVAL,
                           "malformed report: stack %lld has no array of frames", id);
        /* Each native frame's inlined functions are frames of their own, before it. */
        size_t total = 0;
        const cJSON *fj;
        EACH_ELEMENT(fj, frames)
        {
            const cJSON *inl = frame_inlined(fj);
            if (inl && !cJSON_IsArray(inl) && !cJSON_IsNull(inl))
                return set_why(why, why_len, -EINVAL,
                               "malformed report: a frame of stack %lld has \"inlined\" that is "
                               "not an array",
                               id);
            total += 1 + array_len(inl);
        }
        st->n = total;
        st->frames = arena_alloc(rep, st->n, sizeof *st->frames);
        if (st->n && !st->frames) return set_why(why, why_len, -ENOMEM, "out of memory");
        size_t i = 0;
        EACH_ELEMENT(fj, frames)
        {
            const cJSON *inl = frame_inlined(fj);
            size_t first = i;
            i += array_len(inl);
            gmt_frame_t *f = &st->frames[i++];
            int bad = frame_from_json(nc, fj, f, rep->version);
            if (bad == -EDOM)
                return set_why(why, why_len, -EINVAL,
                               "malformed report: a frame of stack %lld has address \"%.40s\", "
                               "not 0x and hex digits",
                               id, gmt_json_str(fj, "address", ""));
            if (bad)
                return set_why(why, why_len, -EINVAL,
                               "malformed report: a frame of stack %lld is not an object", id);
            if (inlined_frames(nc, inl, f, &st->frames[first]))
                return set_why(why, why_len, -EINVAL,
                               "malformed report: an inlined function of a frame of stack %lld "
                               "is not an object",
                               id);
        }
    }
    rep->nstacks = k;
    if (k > 1) qsort(rep->stacks, k, sizeof *rep->stacks, cmp_stack); /* none: NULL */
    for (size_t i = 1; i < k; i++)
        if (rep->stacks[i].id == rep->stacks[i - 1].id)
            return set_why(why, why_len, -EINVAL, "malformed report: stack %" PRId64 " twice",
                           rep->stacks[i].id);
    return 0;
}

/* The order of a merged report's groups and growth suspects: bytes (a suspect's growth),
 * largest first, then rank, stack id, device. */
typedef struct merged_key_s {
    uint64_t bytes;
    int64_t rank, stack_id, device;
} merged_key_t;

static int merged_key_cmp(merged_key_t x, merged_key_t y)
{
    if (x.bytes != y.bytes) return x.bytes > y.bytes ? -1 : 1;
    if (x.rank != y.rank) return x.rank < y.rank ? -1 : 1;
    if (x.stack_id != y.stack_id) return x.stack_id < y.stack_id ? -1 : 1;
    return (x.device > y.device) - (x.device < y.device);
}

static int merged_group_cmp(const void *a, const void *b)
{
    const gmt_group_t *x = a, *y = b;
    return merged_key_cmp((merged_key_t){x->bytes, x->rank, x->stack_id, x->device},
                          (merged_key_t){y->bytes, y->rank, y->stack_id, y->device});
}

static int merged_suspect_cmp(const void *a, const void *b)
{
    const gmt_suspect_t *x = a, *y = b;
    return merged_key_cmp((merged_key_t){x->growth_bytes, x->rank, x->stack_id, x->device},
                          (merged_key_t){y->growth_bytes, y->rank, y->stack_id, y->device});
}

static int merged_site_cmp(const void *a, const void *b)
{
    const gmt_site_t *x = a, *y = b;
    return merged_key_cmp((merged_key_t){x->allocs, x->rank, x->stack_id, x->device},
                          (merged_key_t){y->allocs, y->rank, y->stack_id, y->device});
}

static int64_t json_rank(num_check_t *nc, const cJSON *obj)
{
    return json_i64(nc, obj, "rank", -1);
}

static void group_from_json(const gmt_report_t *rep, num_check_t *nc, const cJSON *j,
                            gmt_group_t *g)
{
    g->stack_id = json_i64(nc, j, "stack_id", -1);
    g->bytes = json_u64(nc, j, "bytes");
    g->count = json_u64(nc, j, "count");
    g->device = json_i64(nc, j, "device", 0);
    g->rank = json_rank(nc, j);
    g->kind = gmt_json_str(j, "kind", "?");
    g->api = gmt_json_str(j, "api", "?");
    g->library = gmt_json_str(j, "library", NULL);
    g->suppressed = gmt_json_bool(j, "suppressed", false);
    g->stack = g->stack_id >= 0 ? gmt_report_stack(rep, g->stack_id) : NULL;
}

static int build_groups(gmt_report_t *rep, num_check_t *nc, const cJSON *arr, const char *what,
                        gmt_group_t **out, size_t *nout, char *why, size_t why_len)
{
    *out = NULL;
    *nout = 0;
    if (!arr) return 0;
    if (!cJSON_IsArray(arr) || !all_objects(arr))
        return set_why(why, why_len, -EINVAL, "malformed report: \"%s\" is not an array of objects",
                       what);
    size_t n = array_len(arr);
    *out = arena_alloc(rep, n, sizeof **out);
    if (n && !*out) return set_why(why, why_len, -ENOMEM, "out of memory");
    size_t i = 0;
    const cJSON *j;
    char at[40];
    snprintf(at, sizeof at, "%s[]", what);
    const char *was_at = nc->at;
    nc->at = at;
    EACH_ELEMENT(j, arr) group_from_json(rep, nc, j, &(*out)[i++]);
    nc->at = was_at;
    *nout = n;
    return 0;
}

#define ALLOC_ARRAY(field, count)                                                                  \
    do {                                                                                           \
        rep->field = arena_alloc(rep, (count), sizeof *rep->field);                                \
        if ((count) && !rep->field) return set_why(why, why_len, -ENOMEM, "out of memory");        \
    } while (0)

/* The name shown for a failure's error code: the one it has in the layer of the API the
 * program called (the report's "layer", else the API's name: cuda* runtime, cu* driver), which
 * reports written before "layer" existed may have named in the driver's terms
 * (CUDA_ERROR_OUT_OF_MEMORY for a cudaMalloc). A code the list does not hold keeps the report's
 * name when it is of that layer's form, else none (shown as "error N"). */
static const char *error_name(const cJSON *j, const char *api, int64_t code)
{
    const char *layer = gmt_json_str(j, "layer", NULL);
    const char *name = gmt_json_str(j, "error_name", NULL);
    int lay = -1;
    if (layer && strcmp(layer, "runtime") == 0)
        lay = GMT_LAYER_RUNTIME;
    else if (layer && (strcmp(layer, "driver") == 0 || strcmp(layer, "cupti") == 0))
        lay = GMT_LAYER_DRIVER;
    else if (strncmp(api, "cuda", 4) == 0)
        lay = GMT_LAYER_RUNTIME;
    else if (strncmp(api, "cu", 2) == 0)
        lay = GMT_LAYER_DRIVER;
    if (lay < 0) return name;
    const char *known = gmt_cuda_error_name(code, (gmt_layer_t)lay);
    if (known) return known;
    if (!name || strcmp(name, "CUDA_ERROR_OTHER") == 0) return NULL; /* a stand-in, not a name */
    bool drv_form = strncmp(name, "CUDA_ERROR_", 11) == 0;
    bool rt_form = strncmp(name, "cudaError", 9) == 0;
    return (lay == GMT_LAYER_RUNTIME ? rt_form : drv_form) ? name : NULL;
}

static int build_model(gmt_report_t *rep, num_check_t *nc, char *why, size_t why_len)
{
    int rc = build_stacks(rep, nc, why, why_len);
    if (rc) return rc;
    const cJSON *p = rep->process;
    nc->at = "process";
    rep->pid = json_i64(nc, p, "pid", 0);
    rep->rank = json_i64(nc, p, "rank", 0);
    rep->world_size = json_i64(nc, p, "world_size", 0);
    if (rep->world_size <= rep->rank) rep->world_size = 0; /* no job holds that rank */
    rep->hostname = gmt_json_str(p, "hostname", "?");
    rep->reason = gmt_json_str(p, "reason", "?");
    rep->signal = gmt_json_str(p, "signal", NULL);
    rep->tool_version = gmt_json_str(rep->tool, "version", "?");
    rep->start_time = json_time(p, "start_time");
    rep->end_time = json_time(p, "end_time");
    rep->duration_s = gmt_json_has_num(p, "duration_s") ? json_time(p, "duration_s")
                                                        : rep->end_time - rep->start_time;
    if (!(rep->duration_s >= 0) || !isfinite(rep->duration_s)) rep->duration_s = 0;
    rep->recovered = gmt_json_bool(p, "recovered", false);

    const cJSON *s = rep->summary;
    nc->at = "summary";
    rep->allocs = json_count(nc, s, "allocs");
    rep->frees = json_count(nc, s, "frees");
    rep->failures = json_count(nc, s, "failures");
    rep->peak_bytes = json_u64(nc, s, "peak_bytes");
    rep->has_peak = json_nonnegative(s, "peak_bytes");
    rep->live_bytes = json_u64(nc, s, "live_bytes");

    const cJSON *l = rep->leaks;
    rc = build_groups(rep, nc, cJSON_GetObjectItemCaseSensitive(l, "groups"), "leaks.groups",
                      &rep->leak_groups, &rep->nleaks, why, why_len);
    if (rc) return rc;
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(l, "groups")))
        return set_why(why, why_len, -EINVAL, "malformed report: \"leaks.groups\" is missing");
    nc->at = "leaks";
    rep->leak_bytes = json_u64(nc, l, "total_bytes");
    rep->has_leak_bytes = json_nonnegative(l, "total_bytes");
    rep->leak_suppressed_bytes = json_u64(nc, l, "suppressed_bytes");
    rep->leak_count = json_u64(nc, l, "count");
    rep->groups_total =
        gmt_json_has_num(l, "groups_total") ? json_u64(nc, l, "groups_total") : rep->nleaks;
    if (gmt_json_has_num(l, "suppressed_groups")) {
        rep->suppressed_groups = json_u64(nc, l, "suppressed_groups");
    } else { /* written before the field: the listed ones are what is known */
        rep->suppressed_groups = 0;
        for (size_t i = 0; i < rep->nleaks; i++)
            rep->suppressed_groups += rep->leak_groups[i].suppressed;
    }
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(l, "address_space");
    if (cJSON_IsObject(as)) {
        nc->at = "leaks.address_space";
        rep->as_reserved_bytes = json_u64(nc, as, "reserved_bytes");
        rep->as_mapped_bytes = json_u64(nc, as, "mapped_bytes");
        rep->as_reserved_count = json_u64(nc, as, "reserved_count");
        rep->as_mapped_count = json_u64(nc, as, "mapped_count");
        rc = build_groups(rep, nc, cJSON_GetObjectItemCaseSensitive(as, "groups"),
                          "leaks.address_space.groups", &rep->as_groups, &rep->nas, why, why_len);
        if (rc) return rc;
    }

    rep->growth_status = gmt_json_str(l, "growth_status", NULL);
    const cJSON *sus = cJSON_GetObjectItemCaseSensitive(l, "growth_suspects");
    if (cJSON_IsArray(sus)) {
        rep->has_suspects = true;
        nc->at = "leaks.growth_suspects[]";
        ALLOC_ARRAY(suspects, array_len(sus));
        const cJSON *j;
        EACH_ELEMENT(j, sus)
        {
            if (!cJSON_IsObject(j)) continue;
            gmt_suspect_t *g = &rep->suspects[rep->nsuspects++];
            g->stack_id = json_i64(nc, j, "stack_id", -1);
            /* v1 gives no device; -1 is the host's */
            g->device =
                gmt_json_has_num(j, "device") ? json_i64(nc, j, "device", -1) : GMT_CLI_NO_DEVICE;
            g->rank = json_rank(nc, j);
            g->growth_bytes = json_u64(nc, j, "growth_bytes");
            /* v1 called the live bytes "bytes" */
            g->live_bytes = gmt_json_has_num(j, "live_bytes") ? json_u64(nc, j, "live_bytes")
                                                              : json_u64(nc, j, "bytes");
            g->kind = gmt_json_str(j, "kind", NULL);
            g->api = gmt_json_str(j, "api", NULL);
            g->library = gmt_json_str(j, "library", NULL);
            g->stack = g->stack_id >= 0 ? gmt_report_stack(rep, g->stack_id) : NULL;
        }
    }

    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(rep->root, "allocation_sites");
    if (sites && !cJSON_IsArray(sites))
        return set_why(why, why_len, -EINVAL,
                       "malformed report: \"allocation_sites\" is not an array");
    if (sites) {
        rep->has_sites = true;
        nc->at = "allocation_sites[]";
        ALLOC_ARRAY(sites, array_len(sites));
        const cJSON *j;
        EACH_ELEMENT(j, sites)
        {
            /* a section new enough to hold every element to the schema: what cannot be read
             * is refused, not skipped */
            if (!cJSON_IsObject(j))
                return set_why(why, why_len, -EINVAL,
                               "malformed report: an element of \"allocation_sites\" is not an "
                               "object");
            gmt_site_t *g = &rep->sites[rep->nsites++];
            g->stack_id = json_i64(nc, j, "stack_id", -1);
            g->device = json_i64(nc, j, "device", 0);
            g->rank = json_rank(nc, j);
            g->allocs = json_u64(nc, j, "allocs");
            /* at least 1, as the schema says: the tracer lists only a stack that allocated, so
             * a site of none (0, negative, left out) is an edited report's, and was shown and
             * summed as a stack that allocated 0 times. A fraction is refused as one (nc). */
            if (!g->allocs && !nc->bad_key) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "allocs");
                char num[32];
                return set_why(why, why_len, -EINVAL,
                               "malformed report: \"allocation_sites[].allocs\" is %s%s",
                               !v ? "missing"
                               : !cJSON_IsNumber(v)
                                   ? "not a number"
                                   : gmt_fmt_double(v->valuedouble, num, sizeof num),
                               cJSON_IsNumber(v) ? ", not at least 1" : "");
            }
            g->live_count = json_u64(nc, j, "live_count");
            g->kind = gmt_json_str(j, "kind", "?");
            g->api = gmt_json_str(j, "api", "?");
            g->library = gmt_json_str(j, "library", NULL);
            g->stack = g->stack_id >= 0 ? gmt_report_stack(rep, g->stack_id) : NULL;
        }
        nc->at = ""; /* a member of the report itself */
        rep->sites_total = gmt_json_has_num(rep->root, "allocation_sites_total")
                               ? json_u64(nc, rep->root, "allocation_sites_total")
                               : rep->nsites;
        /* the stacks listed allocated, whatever a smaller total says */
        if (rep->sites_total < rep->nsites) rep->sites_total = rep->nsites;
    }

    nc->at = "leaks";
    rep->suspects_total = gmt_json_has_num(l, "growth_suspects_total")
                              ? json_u64(nc, l, "growth_suspects_total")
                              : rep->nsuspects;
    /* a total below the list's own length (a hand-edited report): the list is the floor, as
     * the sites' total above */
    if (rep->suspects_total < rep->nsuspects) rep->suspects_total = rep->nsuspects;
    const cJSON *libs = cJSON_GetObjectItemCaseSensitive(s, "libraries");
    if (cJSON_IsArray(libs)) {
        rep->has_libraries = true;
        nc->at = "summary.libraries[]";
        ALLOC_ARRAY(libraries, array_len(libs));
        const cJSON *j;
        EACH_ELEMENT(j, libs)
        {
            if (!cJSON_IsObject(j)) continue;
            gmt_library_t *g = &rep->libraries[rep->nlibraries++];
            g->library = gmt_json_str(j, "library", NULL);
            if (!g->library) g->library = "(unattributed)";
            g->peak_bytes = json_u64(nc, j, "peak_bytes");
            g->exit_bytes = json_u64(nc, j, "exit_bytes");
        }
    }

    const cJSON *j;
    ALLOC_ARRAY(devices, array_len(rep->devices_json));
    EACH_ELEMENT(j, rep->devices_json)
    {
        nc->at = "devices[]";
        gmt_device_t *d = &rep->devices[rep->ndevices++];
        d->device = json_i64(nc, j, "device", 0);
        d->rank = json_rank(nc, j);
        d->name = gmt_json_str(j, "name", NULL);
        d->has_total = gmt_json_has_num(j, "total_bytes");
        d->total_bytes = json_u64(nc, j, "total_bytes");
        d->current_bytes = json_u64(nc, j, "current_bytes");
        d->peak_bytes = json_u64(nc, j, "peak_bytes");
        const cJSON *pk = cJSON_GetObjectItemCaseSensitive(j, "peak_bytes");
        d->has_peak = cJSON_IsNumber(pk) && pk->valuedouble >= 0;
        d->has_peak_time =
            gmt_json_has_num(j, "peak_time") && isfinite(gmt_json_num(j, "peak_time", 0));
        d->peak_time = json_time(j, "peak_time");
        d->allocs = json_count(nc, j, "allocs");
        d->frees = json_count(nc, j, "frees");
        d->failures = json_count(nc, j, "failures");
        const cJSON *audit = cJSON_GetObjectItemCaseSensitive(j, "audit");
        nc->at = "devices[].audit";
        if ((d->has_untracked = gmt_json_has_num(audit, "untracked_bytes")))
            d->untracked_bytes = json_i64(nc, audit, "untracked_bytes", 0);
        if ((d->has_process = gmt_json_has_num(audit, "process_used_bytes"))) {
            d->process_used_bytes = json_u64(nc, audit, "process_used_bytes");
            d->process_untracked_bytes = json_i64(nc, audit, "process_untracked_bytes", 0);
        }
        const cJSON *gm = cJSON_GetObjectItemCaseSensitive(audit, "graph_memory");
        nc->at = "devices[].audit.graph_memory";
        if ((d->has_graph = cJSON_IsObject(gm))) {
            d->graph_reserved = json_u64(nc, gm, "reserved_bytes");
            d->graph_reserved_high = json_u64(nc, gm, "reserved_high_bytes");
            d->graph_used = json_u64(nc, gm, "used_bytes");
            d->graph_used_high = json_u64(nc, gm, "used_high_bytes");
        }
        const cJSON *kinds = cJSON_GetObjectItemCaseSensitive(j, "kinds");
        const cJSON *pinned = cJSON_GetObjectItemCaseSensitive(kinds, "host_pinned");
        const cJSON *managed = cJSON_GetObjectItemCaseSensitive(kinds, "managed");
        nc->at = "devices[].kinds";
        if ((d->has_pinned = cJSON_IsObject(pinned))) {
            d->pinned_current = json_u64(nc, pinned, "current_bytes");
            d->pinned_peak = json_u64(nc, pinned, "peak_bytes");
        }
        if ((d->has_managed = cJSON_IsObject(managed))) {
            d->managed_current = json_u64(nc, managed, "current_bytes");
            d->managed_peak = json_u64(nc, managed, "peak_bytes");
        }
    }

    ALLOC_ARRAY(peaks, array_len(rep->peak_json));
    EACH_ELEMENT(j, rep->peak_json)
    {
        nc->at = "peak[]";
        gmt_peak_t *pk = &rep->peaks[rep->npeaks++];
        pk->device = json_i64(nc, j, "device", 0);
        pk->rank = json_rank(nc, j);
        pk->bytes = json_u64(nc, j, "bytes");
        pk->time = json_time(j, "time");
        pk->share = gmt_json_has_num(j, "share") ? gmt_json_num(j, "share", -1) : -1;
        if (!(pk->share >= 0) || !isfinite(pk->share)) pk->share = -1; /* unknown: not shown */
        const cJSON *groups = cJSON_GetObjectItemCaseSensitive(j, "groups");
        if (!cJSON_IsArray(groups))
            return set_why(why, why_len, -EINVAL,
                           "malformed report: a \"peak\" entry has no array of groups");
        rc =
            build_groups(rep, nc, groups, "peak[].groups", &pk->groups, &pk->ngroups, why, why_len);
        if (rc) return rc;
        nc->at = "peak[]";
        pk->groups_total =
            gmt_json_has_num(j, "groups_total") ? json_u64(nc, j, "groups_total") : pk->ngroups;
    }

    ALLOC_ARRAY(frag, array_len(rep->fragmentation_json));
    EACH_ELEMENT(j, rep->fragmentation_json)
    {
        nc->at = "fragmentation[]";
        gmt_frag_t *f = &rep->frag[rep->nfrag++];
        f->device = json_i64(nc, j, "device", 0);
        f->rank = json_rank(nc, j);
        f->span_bytes = json_u64(nc, j, "span_bytes");
        f->free_in_gaps = json_u64(nc, j, "free_in_gaps");
        f->largest_gap = json_u64(nc, j, "largest_gap");
        f->granularity_loss_bytes = json_u64(nc, j, "granularity_loss_bytes");
        f->live_allocations = json_count(nc, j, "live_allocations");
        f->fragmentation =
            gmt_json_has_num(j, "fragmentation") ? gmt_json_num(j, "fragmentation", -1) : -1;
        if (!isfinite(f->fragmentation)) f->fragmentation = -1;
    }

    ALLOC_ARRAY(series, array_len(rep->timeline_json));
    EACH_ELEMENT(j, rep->timeline_json)
    {
        nc->at = "timeline[]";
        gmt_series_t *t = &rep->series[rep->nseries++];
        t->device = json_i64(nc, j, "device", 0);
        t->rank = json_rank(nc, j);
        const cJSON *pts = cJSON_GetObjectItemCaseSensitive(j, "points");
        if (pts && !cJSON_IsArray(pts))
            return set_why(why, why_len, -EINVAL,
                           "malformed report: a timeline's \"points\" is not an array");
        size_t n = array_len(pts);
        t->t = arena_alloc(rep, n, sizeof *t->t);
        t->bytes = arena_alloc(rep, n, sizeof *t->bytes);
        if (n && (!t->t || !t->bytes)) return set_why(why, why_len, -ENOMEM, "out of memory");
        const cJSON *pt;
        EACH_ELEMENT(pt, pts)
        {
            const cJSON *a = cJSON_GetArrayItem(pt, 0), *b = cJSON_GetArrayItem(pt, 1);
            if (!cJSON_IsArray(pt) || !cJSON_IsNumber(a) || !cJSON_IsNumber(b) ||
                !isfinite(a->valuedouble) || !(b->valuedouble >= 0) ||
                b->valuedouble != floor(b->valuedouble))
                return set_why(why, why_len, -EINVAL,
                               "malformed report: a timeline point is not [seconds, bytes, ...]");
            t->t[t->n] = a->valuedouble;
            t->bytes[t->n] = b->valuedouble >= 0x1p64 ? UINT64_MAX : (uint64_t)b->valuedouble;
            t->n++;
        }
    }

    ALLOC_ARRAY(errors, array_len(rep->errors_json));
    EACH_ELEMENT(j, rep->errors_json)
    {
        nc->at = "errors[]";
        gmt_error_t *e = &rep->errors[rep->nerrors++];
        e->time = json_time(j, "time");
        e->api = gmt_json_str(j, "api", "?");
        e->kind = gmt_json_str(j, "kind", "?");
        e->device = json_i64(nc, j, "device", 0);
        e->rank = json_rank(nc, j);
        e->error = json_i64(nc, j, "error", 0);
        e->error_name = error_name(j, e->api, e->error);
        e->size = json_u64(nc, j, "size");
        /* -1 unknown; a count past int64 is INT64_MAX, never negative (1e19 hid the line) */
        e->free_bytes = json_count_known(nc, j, "free_bytes");
        e->total_bytes = json_count_known(nc, j, "total_bytes");
        const cJSON *rec = cJSON_GetObjectItemCaseSensitive(j, "recovered");
        e->recovered = cJSON_IsBool(rec) ? cJSON_IsTrue(rec) : -1;
        e->oom = gmt_json_bool(j, "oom", false);
        e->probe = gmt_json_str(j, "probe", NULL);
        e->stack_id = json_i64(nc, j, "stack_id", -1);
        e->stack = e->stack_id > 0 ? gmt_report_stack(rep, e->stack_id) : NULL;
    }

    const cJSON *merged = cJSON_GetObjectItemCaseSensitive(rep->root, "merged");
    if (cJSON_IsObject(merged)) {
        const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(merged, "ranks");
        if (ranks && !cJSON_IsArray(ranks))
            return set_why(why, why_len, -EINVAL,
                           "malformed report: \"merged.ranks\" is not an array");
        ALLOC_ARRAY(ranks, array_len(ranks));
        nc->at = "merged.ranks[]";
        EACH_ELEMENT(j, ranks)
        {
            if (!cJSON_IsObject(j)) continue;
            gmt_rank_t *r = &rep->ranks[rep->nranks++];
            r->rank = json_i64(nc, j, "rank", 0);
            r->pid = json_i64(nc, j, "pid", 0);
            r->file = gmt_json_str(j, "file", "?");
            r->hostname = gmt_json_str(j, "hostname", "?");
            r->peak_bytes = json_u64(nc, j, "peak_bytes");
            r->leaked_bytes = json_u64(nc, j, "leaked_bytes");
            r->has_peak = json_nonnegative(j, "peak_bytes");
            r->has_leaked = json_nonnegative(j, "leaked_bytes");
            r->reason = gmt_json_str(j, "reason", NULL);
            r->start_time = json_time_known(j, "start_time");
            r->end_time = json_time_known(j, "end_time");
            r->duration_s = json_time_known(j, "duration_s");
            r->dropped = json_count_known(nc, j, "dropped");
            r->sites_total = json_count_known(nc, j, "allocation_sites_total");
            r->growth_status = gmt_json_str(j, "growth_status", NULL);
            r->suspects_total = json_count_known(nc, j, "growth_suspects_total");
            r->peak_short = json_flag(j, "peak_short");
            r->leaks_cut = json_flag(j, "leaks_cut");
            r->dropped_by_kind =
                drops_object(cJSON_GetObjectItemCaseSensitive(j, "dropped_by_kind"));
        }
        /* merge writes an entry per rank, at least one: a merged report without one (edited
         * to "ranks": [], or left out) was read as one process's report, whose every verb
         * then showed its ranks' devices and groups as one process's */
        if (!rep->nranks)
            return set_why(why, why_len, -EINVAL,
                           "malformed report: \"merged.ranks\" lists no rank");
        const cJSON *miss = cJSON_GetObjectItemCaseSensitive(merged, "missing_ranks");
        ALLOC_ARRAY(missing_ranks, array_len(miss));
        nc->at = "merged";
        EACH_ELEMENT(j, miss)
        {
            /* a rank, as merge writes it: a whole number from 0 (what an edited file holds
             * besides is left out, never shown as a rank) */
            if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0) || j->valuedouble >= 0x1p53) continue;
            if (j->valuedouble != floor(j->valuedouble)) {
                note_not_whole(nc, "missing_ranks[]", j->valuedouble);
                continue;
            }
            rep->missing_ranks[rep->nmissing++] = (int64_t)j->valuedouble;
        }
        rep->missing_total = json_u64(nc, merged, "missing_ranks_total");
        if (rep->missing_total < rep->nmissing) rep->missing_total = rep->nmissing;
        rep->job_world_size = json_i64(nc, merged, "world_size", 0);
        if (rep->job_world_size < 0) rep->job_world_size = 0;
        rep->imbalance = gmt_json_num(merged, "imbalance", 0);
        if (!(rep->imbalance >= 0) || !isfinite(rep->imbalance)) rep->imbalance = 0;
        /* Unknown where the merge says so, or says what this CLI does not know; a merge older
         * than the status wrote the imbalance over short peaks too: its summed drops say
         * whether some rank's peak is short. */
        const cJSON *ist = cJSON_GetObjectItemCaseSensitive(merged, "imbalance_status");
        if (ist) {
            rep->imbalance_known = cJSON_IsString(ist) && strcmp(ist->valuestring, "judged") == 0;
        } else {
            rep->imbalance_known = gmt_peak_drops(rep, NULL, 0) == 0;
        }
        for (size_t i = 0; i < rep->nranks; i++)
            if (rep->ranks[i].peak_short == 1) rep->imbalance_known = false;
        if (rep->missing_total) rep->imbalance_known = false; /* a missing rank's peak */
        /* Largest first, as one process's report lists them, whatever wrote the file (merge
         * once appended each rank's groups after the other's, and report showed rank 0's
         * small groups above rank 39's large ones). */
        if (rep->nleaks > 1)
            qsort(rep->leak_groups, rep->nleaks, sizeof *rep->leak_groups, merged_group_cmp);
        if (rep->nas > 1) qsort(rep->as_groups, rep->nas, sizeof *rep->as_groups, merged_group_cmp);
        if (rep->nsuspects > 1)
            qsort(rep->suspects, rep->nsuspects, sizeof *rep->suspects, merged_suspect_cmp);
        if (rep->nsites > 1) qsort(rep->sites, rep->nsites, sizeof *rep->sites, merged_site_cmp);
    }
    return 0;
}

static int check_shape(gmt_report_t *rep, char *why, size_t why_len)
{
    const cJSON *root = rep->root;
    if (!cJSON_IsObject(root))
        return set_why(why, why_len, -EINVAL, "not a gpumemtrace report (not a JSON object)");
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, GMT_REPORT_SCHEMA) != 0)
        return set_why(why, why_len, -EINVAL, "not a gpumemtrace report (no \"schema\": \"%s\")",
                       GMT_REPORT_SCHEMA);
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!cJSON_IsNumber(version) || version->valuedouble != floor(version->valuedouble) ||
        version->valuedouble < INT_MIN || version->valuedouble > INT_MAX)
        return set_why(why, why_len, -EINVAL, "report has no integer \"version\"");
    rep->version = (int)version->valuedouble;
    if (rep->version > GMT_REPORT_VERSION)
        return set_why(why, why_len, -ENOTSUP,
                       "report version %d is newer than this gpumemtrace reads (versions %d to "
                       "%d): use a newer gpumemtrace",
                       rep->version, GMT_REPORT_VERSION_MIN, GMT_REPORT_VERSION);
    if (rep->version < GMT_REPORT_VERSION_MIN)
        return set_why(why, why_len, -ENOTSUP,
                       "report version %d is not supported (this gpumemtrace reads versions %d "
                       "to %d)",
                       rep->version, GMT_REPORT_VERSION_MIN, GMT_REPORT_VERSION);

    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        const struct section_s *s = &sections[i];
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(root, s->name);
        if (!item)
            return set_why(why, why_len, -EINVAL, "not a complete report: no \"%s\" section",
                           s->name);
        if ((item->type & 0xff) != s->type)
            return set_why(why, why_len, -EINVAL, "malformed report: \"%s\" is not %s", s->name,
                           type_name(s->type));
        if (s->type == cJSON_Array && !all_objects(item))
            return set_why(why, why_len, -EINVAL,
                           "malformed report: \"%s\" holds something other than objects", s->name);
        *(const cJSON **)((char *)rep + s->offset) = item;
    }
    static const char *const summary_keys[] = {"allocs", "frees", "failures", "peak_bytes"};
    for (size_t i = 0; i < sizeof summary_keys / sizeof summary_keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(rep->summary, summary_keys[i]);
        /* a peak null is not known (a merge with a rank whose report gives none): read as
         * has_peak false, as a negative one, never refused nor taken for 0 bytes */
        if (cJSON_IsNull(v) && strcmp(summary_keys[i], "peak_bytes") == 0) continue;
        if (!cJSON_IsNumber(v))
            return set_why(why, why_len, -EINVAL, "malformed report: \"summary.%s\" is missing",
                           summary_keys[i]);
    }
    num_check_t nc = {0};
    int rc = build_model(rep, &nc, why, why_len);
    return rc ? rc : not_whole_why(&nc, why, why_len);
}

/* Byte offset of the first invalid UTF-8 sequence, or len when all is valid (gmt_utf8_seq's
 * rule, the one the terminal's escaping applies). */
static size_t utf8_invalid_at(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t n = s[i] < 0x80 ? 1 : gmt_utf8_seq(s + i, len - i);
        if (!n) return i;
        i += n;
    }
    return len;
}

/* One character of a scan of JSON text that skips strings: false for a string's characters
 * (its quotes included), true for one outside any, where brackets count. */
static bool json_outside_string(char c, bool *in_string, bool *escaped)
{
    if (*in_string) {
        if (*escaped)
            *escaped = false;
        else if (c == '\\')
            *escaped = true;
        else if (c == '"')
            *in_string = false;
        return false;
    }
    if (c == '"') *in_string = true;
    return !*in_string;
}

/* Whether the brackets open before off (outside strings) are more than cJSON takes: its error
 * there is the depth, not a syntax error. */
static bool json_too_deep(const char *text, size_t off)
{
    size_t depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i <= off && text[i]; i++) {
        char c = text[i];
        if (!json_outside_string(c, &in_string, &escaped)) continue;
        if (c == '{' || c == '[') {
            if (++depth > CJSON_NESTING_LIMIT) return true;
        } else if ((c == '}' || c == ']') && depth) {
            depth--;
        }
    }
    return false;
}

/* Whether a text cJSON refused is a report cut short (a writer killed mid-write, a partial
 * copy) rather than one with a syntax error. cJSON cannot say: when the input runs out it
 * reports the last byte (len - 1) as the error's place, inside an unterminated string it
 * reports the string's start, and in a cut literal ("tru") the literal's start. So the text is
 * scanned for what a cut leaves: brackets still open, none closed by the wrong kind, or a
 * string still open; and cJSON's error must lie at the cut, not before it. off is cJSON's
 * error offset. Deeper nesting than cJSON takes is its own error, never a cut. */
static bool json_ends_early(const char *text, size_t len, size_t off)
{
    enum { MAX_DEPTH = CJSON_NESTING_LIMIT + 1 };
    unsigned char open_kind[MAX_DEPTH]; /* '{' or '[' per level */
    size_t depth = 0, string_start = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        bool was_in = in_string;
        if (!json_outside_string(c, &in_string, &escaped)) {
            if (in_string && !was_in) string_start = i;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH) return false;
            open_kind[depth++] = (unsigned char)c;
        } else if (c == '}' || c == ']') {
            if (depth == 0 || open_kind[depth - 1] != (c == '}' ? '{' : '[')) return false;
            depth--;
        }
    }
    if (in_string) return off >= string_start;
    if (depth == 0) return false;
    size_t end = len;
    while (end > 0 && strchr(" \t\r\n", text[end - 1]))
        end--;
    if (off < end) {
        /* a cut literal: cJSON points at its start */
        static const char *const literals[] = {"true", "false", "null"};
        for (size_t k = 0; k < 3; k++)
            if (end - off < strlen(literals[k]) && strncmp(text + off, literals[k], end - off) == 0)
                return true;
        /* a number cut in its exponent ("8.34e-"): strtod took the digits before it */
        if (off > 0 && text[off - 1] >= '0' && text[off - 1] <= '9' &&
            (text[off] == 'e' || text[off] == 'E') &&
            (end - off == 1 || (end - off == 2 && (text[off + 1] == '-' || text[off + 1] == '+'))))
            return true;
    }
    /* Input ran out after a complete token, or inside a number; a stray byte at the very end
     * is a syntax error even there. */
    return off + 1 >= len && end > 0 && strchr("0123456789.+-eE\"{}[],:l", text[end - 1]);
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The next number literal of JSON text t[*at .. len) (cJSON accepted the text: outside
 * strings, a number is the only token that starts with '-' or a digit); its length in *n.
 * NULL when there is none. */
static const char *next_number(const char *t, size_t len, size_t *at, size_t *n)
{
    size_t i = *at;
    while (i < len) {
        char c = t[i];
        if (c == '"') {
            for (i++; i < len && t[i] != '"'; i++)
                if (t[i] == '\\') i++;
            i++;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t s = i;
            while (i < len && strchr("+-0123456789.eE", t[i]) && t[i])
                i++;
            *at = i;
            *n = i - s;
            return t + s;
        } else {
            i++;
        }
    }
    *at = len;
    return NULL;
}

/* Integers past a double's 53 bits (the nanosecond wall times, process.start_time_ns and
 * end_time_ns, about 2^60) lose their last digits in cJSON, which holds every number as a
 * double, so a verb that writes the tree again (merge, symbolize) would print them as
 * 1.7966474271106511e+18. A fraction can change too: cJSON prints a double to 15 digits when
 * that reads back within a rounding of it, not as the same double, so an end_time of
 * 1796657638.3538098 came out as 1796657638.35381, 0.2 us off. Each such number keeps its
 * literal in the item's valuestring, which cJSON leaves unused for numbers, frees with the
 * item and copies with cJSON_Duplicate; gmt_json_exact_ints prints them from there. Numbers
 * are visited in the order the text holds them (cJSON keeps members in document order).
 * -ENOMEM, or 0. */
static int keep_wide_ints(cJSON *v, const char *t, size_t len, size_t *at)
{
    for (cJSON *m = v->child; m; m = m->next) {
        if (cJSON_IsObject(m) || cJSON_IsArray(m)) {
            if (keep_wide_ints(m, t, len, at)) return -ENOMEM;
            continue;
        }
        if (!cJSON_IsNumber(m)) continue;
        size_t n = 0;
        const char *lit = next_number(t, len, at, &n);
        if (!lit) return 0;
        size_t digits = n - (lit[0] == '-');
        if (strspn(lit + (lit[0] == '-'), "0123456789") != digits) {
            /* a fraction or an exponent: kept where cJSON's 15 digits are another double */
            char short15[32];
            snprintf(short15, sizeof short15, "%1.15g", m->valuedouble);
            if (n > 40 || strtod(short15, NULL) == m->valuedouble) continue;
        } else if (digits < 16 || digits > 40) {
            continue; /* a double holds it */
        }
        if (!(m->valuestring = strndup(lit, n))) return -ENOMEM;
    }
    return 0;
}

void gmt_json_exact_ints(cJSON *v)
{
    for (cJSON *m = v ? v->child : NULL; m; m = m->next) {
        if (cJSON_IsObject(m) || cJSON_IsArray(m)) gmt_json_exact_ints(m);
        /* only while the number is still the one read: a verb that changed it (merge's sums
         * of copies) prints the new value */
        else if (cJSON_IsNumber(m) && m->valuestring &&
                 strtod(m->valuestring, NULL) == m->valuedouble)
            m->type = cJSON_Raw; /* printed as its literal; valuestring stays owned */
    }
}

/* The first member name that an object of v (at any depth) holds twice, NULL when none; *err
 * is set when memory ran out. cJSON keeps both members and answers a lookup with the first,
 * where Python's json, jq and the schema's validator take the last: a report edited by hand
 * with a second "summary" would show other numbers here than there. Recursion is bounded by
 * cJSON's nesting limit. */
static const char *duplicate_key(const cJSON *v, bool *err)
{
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return NULL;
    size_t n = 0;
    const cJSON *m;
    for (m = v->child; m; m = m->next) {
        const char *dup = duplicate_key(m, err);
        if (dup || *err) return dup;
        n++;
    }
    if (!cJSON_IsObject(v) || n < 2) return NULL;
    const char **names = malloc(n * sizeof *names);
    if (!names) {
        *err = true;
        return NULL;
    }
    size_t k = 0;
    for (m = v->child; m; m = m->next)
        names[k++] = m->string ? m->string : "";
    qsort(names, n, sizeof *names, cmp_key);
    const char *dup = NULL;
    for (k = 1; k < n && !dup; k++)
        if (strcmp(names[k], names[k - 1]) == 0) dup = names[k];
    free(names);
    return dup;
}

/* Where a string of the JSON text holds the escape \u0000 (a NUL character), len where none
 * does (text parsed already: its strings are whole). The parser's strings end at a NUL, so
 * "cudaMalloc\u0000 hidden" read as "cudaMalloc"; no report the library writes holds one (its
 * strings are C strings), so such a file is refused. */
static size_t escaped_nul_at(const char *text, size_t len)
{
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '"') {
            in_string = !in_string;
        } else if (in_string && text[i] == '\\' && i + 1 < len) {
            if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0) return i;
            i++; /* the escaped character: a quote or backslash is no string's end */
        }
    }
    return len;
}

/* A state file's first bytes (GMT_REGION_MAGIC, core/region.h, whose arena type this file's
 * own name would clash with). */
#define STATE_MAGIC "GMTSTATE"

/* exact: keep the digits of integers a double cannot hold (keep_wide_ints), for a verb that
 * writes the tree again; a pass over the whole text (as long as cJSON's parse on a report of
 * 100,000 groups), so only where asked. */
static int parse(const char *text, size_t len, gmt_report_t *rep, char *why, size_t why_len,
                 bool exact)
{
    const char *path = rep->path;
    memset(rep, 0, sizeof *rep);
    rep->path = path;
    if (why && why_len) why[0] = '\0';
    size_t start = 0;
    while (start < len && strchr(" \t\r\n", text[start]) && text[start])
        start++;
    if (start == len) return set_why(why, why_len, -EINVAL, "empty file, not a gpumemtrace report");
    /* The file a job traced with GPUMEMTRACE_STATE leaves (what a SIGKILL leaves): said so,
     * with the verbs that read it. */
    if (len >= sizeof STATE_MAGIC - 1 && memcmp(text, STATE_MAGIC, sizeof STATE_MAGIC - 1) == 0)
        return set_why(why, why_len, -EINVAL,
                       "a gpumemtrace state file, not a report: 'gpumemtrace report --recover "
                       "FILE' writes its report, 'gpumemtrace top FILE' shows it live");
    if (memchr(text, '\0', len))
        return set_why(why, why_len, -EINVAL, "binary file (contains NUL bytes), not JSON");
    size_t bad = utf8_invalid_at((const unsigned char *)text, len);
    /* A sequence cut by the end of the file is what a truncated report ends with as often as
     * a cut string: the JSON before it decides whether the file ends early. */
    bool cut = bad < len && gmt_utf8_cut_at_end((const unsigned char *)text + bad, len - bad);
    unsigned line, col;
    if (bad < len && !cut) {
        position_of(text, bad, &line, &col);
        return set_why(why, why_len, -EINVAL, "not valid UTF-8 at line %u, column %u", line, col);
    }
    size_t text_len = cut ? bad : len;
    const char *end = NULL;
    /* cJSON refuses nesting deeper than CJSON_NESTING_LIMIT (1000), so a hostile file cannot
     * exhaust the stack in the parser or in cJSON_Delete. */
    rep->root = cJSON_ParseWithLengthOpts(text, text_len, &end, false);
    if (rep->root && end) {
        size_t off = (size_t)(end - text);
        while (off < text_len && strchr(" \t\r\n", text[off]))
            off++;
        if (off < len) {
            gmt_report_free(rep);
            rep->path = path;
            if (off == bad) { /* a whole document, then the start of a character */
                position_of(text, bad, &line, &col);
                return set_why(why, why_len, -EINVAL, "not valid UTF-8 at line %u, column %u", line,
                               col);
            }
            position_of(text, off, &line, &col);
            return set_why(why, why_len, -EINVAL,
                           "not valid JSON: text after the end at line %u, column %u", line, col);
        }
    }
    if (!rep->root) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        if (json_ends_early(text, text_len, off)) {
            position_of(text, len, &line, &col);
            return set_why(why, why_len, -EINVAL,
                           "not valid JSON: ends early (truncated?) at line %u", line);
        }
        position_of(text, off < text_len ? off : text_len, &line, &col);
        if (json_too_deep(text, off < text_len ? off : text_len))
            return set_why(why, why_len, -EINVAL,
                           "not valid JSON: nested more than %d levels deep at line %u, column %u",
                           CJSON_NESTING_LIMIT, line, col);
        return set_why(why, why_len, -EINVAL, "not valid JSON: syntax error at line %u, column %u",
                       line, col);
    }
    size_t nul = escaped_nul_at(text, text_len);
    if (nul < text_len) {
        gmt_report_free(rep);
        rep->path = path;
        position_of(text, nul, &line, &col);
        return set_why(why, why_len, -EINVAL,
                       "malformed report: a string holds \\u0000 (a NUL character) at line %u, "
                       "column %u",
                       line, col);
    }
    bool nomem = false;
    const char *dup = duplicate_key(rep->root, &nomem);
    size_t at = 0;
    if (exact && !dup && !nomem && (cJSON_IsObject(rep->root) || cJSON_IsArray(rep->root)))
        nomem = keep_wide_ints(rep->root, text, text_len, &at) != 0;
    int rc = nomem ? set_why(why, why_len, -ENOMEM, "out of memory")
             : dup ? set_why(why, why_len, -EINVAL,
                             "malformed report: key \"%.40s\" twice in one object", dup)
                   : check_shape(rep, why, why_len);
    if (rc) gmt_report_free(rep);
    rep->path = path;
    return rc;
}

/* A pipe the shell passes by name: process substitution, <(cat r.json), gives /dev/fd/N (or
 * /proc/self/fd/N); /dev/stdin is standard input. A FIFO made with mkfifo anywhere else is
 * refused, since opening it waits for a writer that may never come. */
static bool passed_pipe(const char *path)
{
    return strncmp(path, "/dev/fd/", 8) == 0 || strncmp(path, "/proc/self/fd/", 14) == 0 ||
           strcmp(path, "/dev/stdin") == 0;
}

int gmt_report_parse(const char *text, size_t len, gmt_report_t *rep, char *why, size_t why_len)
{
    return parse(text, len, rep, why, why_len, true); /* the fuzz target's: every path */
}

static int load(const char *path, gmt_report_t *rep, char *why, size_t why_len, bool name_frames,
                bool exact)
{
    memset(rep, 0, sizeof *rep);
    rep->path = path;
    if (why && why_len) why[0] = '\0';

    bool use_stdin = strcmp(path, "-") == 0;
    FILE *f = stdin;
    if (!use_stdin) {
        /* O_NONBLOCK: opening a FIFO for reading would wait for a writer, and reading a
         * device (a terminal, /dev/zero) would wait or run on; only a regular file is a
         * report file. A pipe passed by the shell (<(...): /dev/fd/63) is read, blocking. */
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return set_why(why, why_len, -errno, "%s", strerror(errno));
        struct stat st;
        int rc = fstat(fd, &st) == 0 ? 0 : -errno;
        if (!rc && S_ISDIR(st.st_mode)) {
            rc = set_why(why, why_len, -EISDIR, "is a directory, not a report");
        } else if (!rc && !S_ISREG(st.st_mode) &&
                   !((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) && passed_pipe(path))) {
            bool pipe = S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
            rc = set_why(why, why_len, -EINVAL, "is %s, not a report file%s",
                         gmt_file_kind(st.st_mode),
                         pipe ? " (a pipe is read as '-' or as <(...))" : "");
        } else if (!rc && S_ISREG(st.st_mode) && (uint64_t)st.st_size > REPORT_MAX_BYTES) {
            rc = set_why(why, why_len, -EFBIG, "too large for a report (over %zu MiB)",
                         REPORT_MAX_BYTES >> 20);
        } else if (!rc) {
            int fl = fcntl(fd, F_GETFL);
            if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) rc = -errno;
        }
        if (!rc && !(f = fdopen(fd, "rb"))) rc = -errno;
        if (rc) {
            close(fd);
            if (why && why_len && !why[0]) set_why(why, why_len, rc, "%s", strerror(-rc));
            return rc;
        }
    } else {
        struct stat st;
        if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) &&
            (uint64_t)st.st_size > REPORT_MAX_BYTES)
            return set_why(why, why_len, -EFBIG, "too large for a report (over %zu MiB)",
                           REPORT_MAX_BYTES >> 20);
    }
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(f, &text, &len);
    if (!use_stdin) fclose(f);
    if (rc == -EFBIG)
        return set_why(why, why_len, rc, "too large for a report (over %zu MiB)",
                       REPORT_MAX_BYTES >> 20);
    if (rc) return set_why(why, why_len, rc, "%s", strerror(-rc));
    /* A report written without libdw gets its frames named first (symbolize/offline.h).
     * Weak: the CLI links it; the reader's fuzz target does not, and opens no module files. */
    size_t named_len = 0;
    char *named = name_frames && gmt_symbolize_report_text
                      ? gmt_symbolize_report_text(text, len, &named_len)
                      : NULL;
    rc = named ? parse(named, named_len, rep, why, why_len, exact)
               : parse(text, len, rep, why, why_len, exact);
    free(named);
    free(text);
    return rc;
}

int gmt_report_load(const char *path, gmt_report_t *rep, char *why, size_t why_len)
{
    return load(path, rep, why, why_len, true, false);
}

int gmt_report_load_as_written(const char *path, gmt_report_t *rep, char *why, size_t why_len)
{
    return load(path, rep, why, why_len, false, true); /* symbolize writes it back */
}

int gmt_report_stdin_once(const char *verb, char *const *files, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(files[i], "-") == 0;
    if (k < 2) return 0;
    gmt_cli_error("%s: standard input (-) given %zu times: it holds one report", verb, k);
    return -1;
}

static int open_report(const char *path, gmt_report_t *rep, bool exact)
{
    char why[256];
    int rc = load(path, rep, why, sizeof why, true, exact);
    if (rc) gmt_cli_error("%s: %s", strcmp(path, "-") == 0 ? "<stdin>" : gmt_tty(path), why);
    return rc;
}

int gmt_report_open(const char *path, gmt_report_t *rep)
{
    return open_report(path, rep, false);
}

int gmt_report_open_exact(const char *path, gmt_report_t *rep)
{
    return open_report(path, rep, true);
}

void gmt_report_free(gmt_report_t *rep)
{
    if (!rep) return;
    cJSON_Delete(rep->root);
    for (arena_t *a = rep->arena, *next; a; a = next) {
        next = a->next;
        free(a);
    }
    memset(rep, 0, sizeof *rep);
}

const gmt_stack_t *gmt_report_stack(const gmt_report_t *rep, int64_t stack_id)
{
    size_t lo = 0, hi = rep->nstacks;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (rep->stacks[mid].id == stack_id) return &rep->stacks[mid];
        if (rep->stacks[mid].id < stack_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static const gmt_device_t *find_device(const gmt_report_t *rep, int64_t device, int64_t rank,
                                       bool any_rank)
{
    for (size_t i = 0; i < rep->ndevices; i++)
        if (rep->devices[i].device == device && (any_rank || rep->devices[i].rank == rank))
            return &rep->devices[i];
    return NULL;
}

const gmt_device_t *gmt_report_device(const gmt_report_t *rep, int64_t device, int64_t rank)
{
    return find_device(rep, device, rank, rank < 0);
}

const gmt_device_t *gmt_report_device_exact(const gmt_report_t *rep, int64_t device, int64_t rank)
{
    return find_device(rep, device, rank, false);
}

bool gmt_device_held_pinned(const gmt_device_t *d)
{
    return d->has_pinned && d->pinned_peak;
}

bool gmt_device_held_managed(const gmt_device_t *d)
{
    return d->has_managed && d->managed_peak;
}

bool gmt_device_shows_in_use(const gmt_device_t *d)
{
    return d->peak_bytes || d->current_bytes ||
           !(gmt_device_held_pinned(d) || gmt_device_held_managed(d));
}

int64_t gmt_report_failures(const gmt_report_t *rep)
{
    return rep->failures > (int64_t)rep->nerrors ? rep->failures : (int64_t)rep->nerrors;
}

int64_t gmt_report_failures_counted(const gmt_report_t *rep, size_t *probes)
{
    size_t n = 0;
    for (size_t i = 0; i < rep->nerrors; i++)
        n += rep->errors[i].probe != NULL;
    if (probes) *probes = n;
    int64_t all = gmt_report_failures(rep);
    return all > (int64_t)n ? all - (int64_t)n : 0;
}

const char *gmt_report_missing_text(const gmt_report_t *rep, size_t max, char *out, size_t len)
{
    size_t used = 0, shown = rep->nmissing < max ? rep->nmissing : max;
    if (len) out[0] = 0;
    for (size_t i = 0; i < shown && used < len; i++) {
        int w =
            snprintf(out + used, len - used, "%s%" PRId64, i ? ", " : "", rep->missing_ranks[i]);
        if (w < 0) return out;
        used += (size_t)w;
    }
    if (shown < rep->missing_total && used < len)
        snprintf(out + used, len - used, "%s...", shown ? ", " : "");
    return out;
}

bool gmt_report_job_span(const gmt_report_t *rep, double *start, double *end)
{
    double first = INFINITY, last = -INFINITY;
    for (size_t i = 0; i < rep->nranks; i++) {
        const gmt_rank_t *r = &rep->ranks[i];
        double e = r->start_time + r->duration_s;
        if (!(r->start_time > 0) || !(r->duration_s >= 0) || !isfinite(e)) return false;
        if (r->start_time < first) first = r->start_time;
        if (e > last) last = e;
    }
    if (!rep->nranks) return false;
    if (start) *start = first;
    if (end) *end = last;
    return true;
}

double gmt_report_rank_offset(const gmt_report_t *rep, int64_t rank)
{
    double first;
    if (!gmt_report_job_span(rep, &first, NULL)) return 0;
    for (size_t i = 0; i < rep->nranks; i++)
        if (rep->ranks[i].rank == rank) return rep->ranks[i].start_time - first;
    return 0;
}

const char *gmt_report_job_reason(const gmt_report_t *rep, bool *known)
{
    const char *reason = NULL;
    bool all = true, same = true;
    for (size_t i = 0; i < rep->nranks; i++) {
        const char *r = rep->ranks[i].reason;
        if (!r)
            all = false;
        else if (reason && strcmp(r, reason) != 0)
            same = false;
        else
            reason = r;
    }
    if (known) *known = all;
    return all && same ? reason : NULL;
}

int64_t gmt_json_int(const cJSON *obj, const char *key, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v)) return dflt;
    /* cJSON keeps numbers as doubles: exact up to 2^53, far beyond any byte count seen. */
    if (v->valuedouble >= 9.2e18 || v->valuedouble <= -9.2e18) return dflt;
    return (int64_t)v->valuedouble;
}

int64_t gmt_json_count(const cJSON *obj, const char *key)
{
    double d = gmt_json_num(obj, key, 0);
    if (!(d > 0)) return 0;
    return d >= 0x1p63 ? INT64_MAX : (int64_t)d;
}

int64_t gmt_capture_dropped(const cJSON *capture)
{
    const cJSON *dropped = cJSON_GetObjectItemCaseSensitive(capture, "dropped"), *m;
    if (!cJSON_IsObject(dropped)) return 0;
    int64_t sum = 0;
    cJSON_ArrayForEach(m, dropped)
    {
        int64_t d = gmt_json_count(dropped, m->string);
        if (d > 0) sum = d > INT64_MAX - sum ? INT64_MAX : sum + d;
    }
    return sum;
}

static void drops_add(gmt_drops_t *d, int k, const char *reason, int64_t n)
{
    d->n[k] = n > INT64_MAX - d->n[k] ? INT64_MAX : d->n[k] + n;
    size_t used = strlen(d->said[k]);
    if (used + 1 < sizeof d->said[k])
        snprintf(d->said[k] + used, sizeof d->said[k] - used, "%s%s %" PRId64, used ? ", " : "",
                 gmt_tty(reason), n);
}

void gmt_report_drops(const gmt_report_t *rep, gmt_drops_t *d)
{
    gmt_drops_from(cJSON_GetObjectItemCaseSensitive(rep->capture, "dropped"), d);
}

void gmt_drops_from(const cJSON *dropped, gmt_drops_t *d)
{
    memset(d, 0, sizeof *d);
    const cJSON *m;
    if (!cJSON_IsObject(dropped)) return;
    cJSON_ArrayForEach(m, dropped)
    {
        int64_t n = gmt_json_count(dropped, m->string);
        if (n <= 0 || strcmp(m->string, "failure_records") == 0) continue;
        drops_add(d,
                  strcmp(m->string, "table_full") == 0 ? 0
                  : strcmp(m->string, "stacks") == 0   ? 1
                                                       : 2,
                  m->string, n);
    }
}

int64_t gmt_peak_drops(const gmt_report_t *rep, char *said, size_t len)
{
    gmt_drops_t d;
    gmt_report_drops(rep, &d);
    return gmt_drops_of(&d, GMT_DROP_UNTRACKED | GMT_DROP_LOST, said, len);
}

int64_t gmt_drops_of(const gmt_drops_t *d, int kinds, char *said, size_t len)
{
    int64_t n = 0;
    size_t used = 0;
    if (said && len) said[0] = '\0';
    for (int k = 0; k < 3; k++) {
        if (!(kinds & (1 << k)) || d->n[k] <= 0) continue;
        n = d->n[k] > INT64_MAX - n ? INT64_MAX : n + d->n[k];
        if (said && used + 1 < len) {
            snprintf(said + used, len - used, "%s%s", used ? ", " : "", d->said[k]);
            used = strlen(said);
        }
    }
    return n;
}

double gmt_json_num(const cJSON *obj, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

const char *gmt_json_str(const cJSON *obj, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) && v->valuestring ? v->valuestring : dflt;
}

bool gmt_json_bool(const cJSON *obj, const char *key, bool dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}

bool gmt_json_has_num(const cJSON *obj, const char *key)
{
    return cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(obj, key));
}

char *gmt_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

char *gmt_fmt_double(double v, char *buf, size_t len)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

int gmt_parse_int_range(const char *s, long min, long max, long *out)
{
    if (!s || *s < '0' || *s > '9') return -EINVAL;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max) return -EINVAL;
    *out = v;
    return 0;
}

bool gmt_plain_decimal(const char *s, size_t n)
{
    bool digit = false, dot = false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digit = true;
        else if (s[i] == '.' && !dot)
            dot = true;
        else
            return false;
    }
    return digit;
}
