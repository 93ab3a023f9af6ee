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
#include "symbolize/offline.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Reports are text of a few MiB at most; this bound only stops a wrong path (a disk image,
 * /dev/zero) from eating memory. */
#define REPORT_MAX_BYTES ((size_t)1 << 30)

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
    for (size_t i = 0; i < off && text[i]; i++) {
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
#define SECTION(name, type)                                                                        \
    {                                                                                              \
#name, type, offsetof(gmt_report_t, name)                                                  \
    }
    SECTION(tool, cJSON_Object),         SECTION(process, cJSON_Object),
    SECTION(config, cJSON_Object),       SECTION(capture, cJSON_Object),
    SECTION(devices, cJSON_Array),       SECTION(summary, cJSON_Object),
    SECTION(leaks, cJSON_Object),        SECTION(peak, cJSON_Array),
    SECTION(fragmentation, cJSON_Array), SECTION(timeline, cJSON_Array),
    SECTION(errors, cJSON_Array),        SECTION(stacks, cJSON_Object),
#undef SECTION
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
        version->valuedouble < 0 || version->valuedouble > INT_MAX)
        return set_why(why, why_len, -EINVAL, "report has no integer \"version\"");
    rep->version = (int)version->valuedouble;
    if (rep->version < 1 || rep->version > GMT_REPORT_VERSION)
        return set_why(why, why_len, -ENOTSUP,
                       "report version %d is not supported (this gpumemtrace reads versions 1 "
                       "to %d)",
                       rep->version, GMT_REPORT_VERSION);

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

    rep->leak_groups = cJSON_GetObjectItemCaseSensitive(rep->leaks, "groups");
    if (!cJSON_IsArray(rep->leak_groups) || !all_objects(rep->leak_groups))
        return set_why(why, why_len, -EINVAL,
                       "malformed report: \"leaks.groups\" is not an array of objects");
    const cJSON *peak;
    cJSON_ArrayForEach(peak, rep->peak)
    {
        const cJSON *groups = cJSON_GetObjectItemCaseSensitive(peak, "groups");
        if (!cJSON_IsArray(groups) || !all_objects(groups))
            return set_why(why, why_len, -EINVAL,
                           "malformed report: a \"peak\" entry has no array of groups");
    }
    static const char *const summary_keys[] = {"allocs", "frees", "failures", "peak_bytes"};
    for (size_t i = 0; i < sizeof summary_keys / sizeof summary_keys[0]; i++)
        if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(rep->summary, summary_keys[i])))
            return set_why(why, why_len, -EINVAL, "malformed report: \"summary.%s\" is missing",
                           summary_keys[i]);
    return 0;
}

int gmt_report_load(const char *path, gmt_report_t *rep, char *why, size_t why_len)
{
    memset(rep, 0, sizeof *rep);
    rep->path = path;
    if (why && why_len) why[0] = '\0';

    bool use_stdin = strcmp(path, "-") == 0;
    FILE *f = use_stdin ? stdin : fopen(path, "rb");
    if (!f) return set_why(why, why_len, -errno, "%s", strerror(errno));
    char *text = NULL;
    size_t len = 0;
    int rc = slurp(f, &text, &len);
    if (!use_stdin) fclose(f);
    if (rc == -EFBIG)
        return set_why(why, why_len, rc, "too large for a report (over %zu MiB)",
                       REPORT_MAX_BYTES >> 20);
    if (rc) return set_why(why, why_len, rc, "%s", strerror(-rc));

    size_t start = 0;
    while (start < len && strchr(" \t\r\n", text[start]))
        start++;
    if (start == len) {
        free(text);
        return set_why(why, why_len, -EINVAL, "empty file, not a gpumemtrace report");
    }
    if (strlen(text) != len) {
        free(text);
        return set_why(why, why_len, -EINVAL, "binary file (contains NUL bytes), not JSON");
    }

    const char *end = NULL;
    rep->root = cJSON_ParseWithLengthOpts(text, len + 1, &end, true);
    if (!rep->root) {
        size_t off = end && end >= text ? (size_t)(end - text) : 0;
        unsigned line, col;
        position_of(text, off, &line, &col);
        rc = off >= len ? set_why(why, why_len, -EINVAL,
                                  "not valid JSON: ends early (truncated?) at line %u", line)
                        : set_why(why, why_len, -EINVAL,
                                  "not valid JSON: syntax error at line %u, column %u", line, col);
        free(text);
        return rc;
    }
    free(text);

    rc = check_shape(rep, why, why_len);
    if (rc) {
        cJSON_Delete(rep->root);
        memset(rep, 0, sizeof *rep);
        return rc;
    }
    /* A report written without libdw gets its names here (symbolize/offline.h); best effort. */
    gmt_symbolize_report_json(rep->root, NULL, NULL, 0);
    return 0;
}

int gmt_report_open(const char *path, gmt_report_t *rep)
{
    char why[256];
    int rc = gmt_report_load(path, rep, why, sizeof why);
    if (rc) gmt_cli_error("%s: %s", strcmp(path, "-") == 0 ? "<stdin>" : path, why);
    return rc;
}

void gmt_report_free(gmt_report_t *rep)
{
    if (!rep) return;
    cJSON_Delete(rep->root);
    memset(rep, 0, sizeof *rep);
}

const cJSON *gmt_report_stack(const gmt_report_t *rep, int64_t stack_id)
{
    char key[24];
    snprintf(key, sizeof key, "%" PRId64, stack_id);
    const cJSON *frames = cJSON_GetObjectItemCaseSensitive(rep->stacks, key);
    if (cJSON_IsObject(frames)) /* version 2: {"frames": [...], "python": ...} */
        frames = cJSON_GetObjectItemCaseSensitive(frames, "frames");
    return cJSON_IsArray(frames) ? frames : NULL;
}

const cJSON *gmt_report_device(const gmt_report_t *rep, int64_t device)
{
    const cJSON *dev;
    cJSON_ArrayForEach(dev, rep->devices)
    {
        if (gmt_json_has_num(dev, "device") && gmt_json_int(dev, "device", -1) == device)
            return dev;
    }
    return NULL;
}

int64_t gmt_json_int(const cJSON *obj, const char *key, int64_t dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(v)) return dflt;
    /* cJSON keeps numbers as doubles: exact up to 2^53, far beyond any byte count seen. */
    if (v->valuedouble >= 9.2e18 || v->valuedouble <= -9.2e18) return dflt;
    return (int64_t)v->valuedouble;
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
