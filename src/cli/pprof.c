/* pprof.c - a report as a pprof profile: profile.proto (github.com/google/pprof, proto/
 * profile.proto) encoded here by hand, gzip-compressed with zlib.
 *
 * Sample types: leaked_space/bytes and leaked_objects/count (one sample per leak group not
 * suppressed) and peak_space/bytes (one sample per peak-owner group). leaked_space is the
 * default. Each distinct frame (by its cross-run key) is one location with one line and one
 * function; a native frame's module is its mapping. Samples carry device, kind and api labels.
 */
#include "cli/cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- protobuf wire format ---- */

static void pb_varint(gmt_buf_t *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    gmt_buf_put(b, tmp, n);
}

static void pb_key(gmt_buf_t *b, unsigned field, unsigned wire)
{
    pb_varint(b, ((uint64_t)field << 3) | wire);
}

static void pb_uint(gmt_buf_t *b, unsigned field, uint64_t v)
{
    if (!v) return; /* proto3 default */
    pb_key(b, field, 0);
    pb_varint(b, v);
}

static void pb_bytes(gmt_buf_t *b, unsigned field, const void *p, size_t n)
{
    pb_key(b, field, 2);
    pb_varint(b, n);
    gmt_buf_put(b, p, n);
}

static void pb_msg(gmt_buf_t *b, unsigned field, gmt_buf_t *m)
{
    pb_bytes(b, field, m->data ? m->data : "", m->len);
    if (m->failed) b->failed = true;
    m->len = 0;
}

/* ---- tables ---- */

typedef struct strtab_s {
    char **v;
    size_t n, cap;
    gmt_strmap_t map;
    bool oom; /* a string could not be added: its id 0 ("") stands in, so no output */
} strtab_t;

static uint64_t str_id(strtab_t *t, const char *s)
{
    if (!s) s = "";
    size_t have = gmt_strmap_get(&t->map, s);
    if (have != SIZE_MAX) return have;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 256;
        char **v = realloc(t->v, cap * sizeof *v);
        if (!v) {
            t->oom = true;
            return 0;
        }
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n] = strdup(s);
    if (!t->v[t->n] || gmt_strmap_put(&t->map, s, t->n)) {
        free(t->v[t->n]);
        t->oom = true;
        return 0;
    }
    return t->n++;
}

typedef struct loc_s {
    uint64_t function_id, mapping_id, address;
    int64_t line;
} loc_t;

typedef struct ctx_s {
    strtab_t s;
    loc_t *locs;
    size_t nlocs, caplocs;
    gmt_strmap_t locmap, mapmap;
    gmt_buf_t key;     /* a frame's key, whole (gmt_frame_key_put) */
    const char **maps; /* module paths; mapping id = index + 1 */
    size_t nmaps, capmaps;
    gmt_buf_t functions; /* encoded Function messages, ids = location ids */
    gmt_buf_t samples;
    bool oom;
} ctx_t;

static uint64_t mapping_id(ctx_t *c, const char *module)
{
    if (!module) return 0;
    size_t have = gmt_strmap_get(&c->mapmap, module);
    if (have != SIZE_MAX) return have + 1;
    if (c->nmaps == c->capmaps) {
        size_t cap = c->capmaps ? c->capmaps * 2 : 32;
        const char **v = realloc(c->maps, cap * sizeof *v);
        if (!v) {
            c->oom = true;
            return 0;
        }
        c->maps = v;
        c->capmaps = cap;
    }
    if (gmt_strmap_put(&c->mapmap, module, c->nmaps)) {
        c->oom = true;
        return 0;
    }
    c->maps[c->nmaps++] = module;
    return c->nmaps;
}

static uint64_t location_id(ctx_t *c, const gmt_frame_t *f)
{
    c->key.len = 0;
    gmt_frame_key_put(&c->key, f);
    /* A location is one place in the code, its line and address its own: the frame key names
     * a function (a Python one by file name and function), so two lines of one function, or
     * two files of one name, would share the first one's line (pprof -lines, its source
     * view), as speedscope's frames did (c400e9f). */
    if (f->python)
        gmt_buf_printf(&c->key, "`%s`%" PRId64, f->file ? f->file : "", f->line);
    else
        gmt_buf_printf(&c->key, "`%" PRIx64 "`%" PRId64 "`%s", f->address, f->line,
                       f->file ? f->file : "");
    if (c->key.failed) {
        c->oom = true;
        return 0;
    }
    const char *key = c->key.data;
    size_t have = gmt_strmap_get(&c->locmap, key);
    if (have != SIZE_MAX) return have + 1;
    if (c->nlocs == c->caplocs) {
        size_t cap = c->caplocs ? c->caplocs * 2 : 256;
        loc_t *v = realloc(c->locs, cap * sizeof *v);
        if (!v) {
            c->oom = true;
            return 0;
        }
        c->locs = v;
        c->caplocs = cap;
    }
    loc_t *l = &c->locs[c->nlocs];
    if (gmt_strmap_put(&c->locmap, key, c->nlocs)) {
        c->oom = true;
        return 0;
    }
    l->function_id = c->nlocs + 1;
    l->mapping_id = f->python ? 0 : mapping_id(c, f->module);
    l->address = f->python ? 0 : f->address;
    l->line = f->line;
    c->nlocs++;
    /* the function of this location */
    char name[600];
    gmt_frame_name(f, name, sizeof name);
    if (f->python && f->symbol) snprintf(name, sizeof name, "%s", f->symbol);
    gmt_buf_t m = {0};
    pb_uint(&m, 1, l->function_id);
    pb_uint(&m, 2, str_id(&c->s, name));
    /* system_name: a native symbol's only. pprof "simplifies" a name equal to its system_name
     * that looks like demangled C++ (any '<', '>', '[', ']' or "::"), cutting out "<...>" and
     * "(...)": a Python `<module>` or `<lambda>` came out empty (`<unknown>`, every such frame
     * one node), `[call stacks not listed (GPUMEMTRACE_TOP): N]` as `[... listed : N]`. A
     * name with another system_name is taken as demangled already, as it is. */
    if (!f->python && f->module) pb_uint(&m, 3, str_id(&c->s, name));
    pb_uint(&m, 4, str_id(&c->s, f->file ? f->file : f->module));
    pb_msg(&c->functions, 5, &m);
    gmt_buf_free(&m);
    return c->nlocs;
}

static void label_str(ctx_t *c, gmt_buf_t *sample, const char *key, const char *value)
{
    gmt_buf_t m = {0};
    pb_uint(&m, 1, str_id(&c->s, key));
    pb_uint(&m, 2, str_id(&c->s, value));
    pb_msg(sample, 3, &m);
    gmt_buf_free(&m);
}

enum { SAMPLE_LEAK, SAMPLE_PEAK, SAMPLE_SITE };

/* One sample per group: its values are the sample types' (leaked_space, leaked_objects,
 * peak_space, allocations), the group's in the one its kind fills, 0 in the others. */
static void add_sample(ctx_t *c, const gmt_group_t *g, int what)
{
    bool leak = what == SAMPLE_LEAK;
    gmt_buf_t smp = {0}, packed = {0};
    if (g->stack && g->stack->n) {
        for (size_t i = 0; i < g->stack->n; i++)
            pb_varint(&packed, location_id(c, &g->stack->frames[i]));
    } else {
        gmt_frame_t none = {.symbol = "[no stack]", .line = -1, .offset = -1};
        pb_varint(&packed, location_id(c, &none));
    }
    pb_msg(&smp, 1, &packed);
    pb_varint(&packed, leak ? g->bytes : 0);
    pb_varint(&packed, leak ? g->count : 0);
    pb_varint(&packed, what == SAMPLE_PEAK ? g->bytes : 0);
    pb_varint(&packed, what == SAMPLE_SITE ? g->bytes : 0);
    pb_msg(&smp, 2, &packed);
    /* GPUs by number, -1 and -2 by name: the Prometheus export's values (-tagfocus 'device=^0$') */
    char dev[32];
    snprintf(dev, sizeof dev, "%" PRId64, g->device);
    /* what a cut leak list leaves out has no one device, kind or api: no such label */
    if (g->device != GMT_CLI_NO_DEVICE)
        label_str(c, &smp, "device", gmt_device_name(g->device) ? gmt_device_name(g->device) : dev);
    if (g->kind) label_str(c, &smp, "kind", g->kind);
    if (g->api) label_str(c, &smp, "api", g->api);
    if (g->rank >= 0) {
        snprintf(dev, sizeof dev, "%" PRId64, g->rank);
        label_str(c, &smp, "rank", dev);
    }
    pb_msg(&c->samples, 2, &smp);
    gmt_buf_free(&smp);
    gmt_buf_free(&packed);
}

static void value_type(ctx_t *c, gmt_buf_t *out, unsigned field, const char *type, const char *unit)
{
    gmt_buf_t m = {0};
    pb_uint(&m, 1, str_id(&c->s, type));
    pb_uint(&m, 2, str_id(&c->s, unit));
    pb_msg(out, field, &m);
    gmt_buf_free(&m);
}

static int gzip_into(const gmt_buf_t *in, gmt_buf_t *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -ENOMEM;
    uLong bound = deflateBound(&z, (uLong)in->len);
    unsigned char *buf = malloc(bound);
    if (!buf) {
        deflateEnd(&z);
        return -ENOMEM;
    }
    z.next_in = (Bytef *)(in->data ? in->data : "");
    z.avail_in = (uInt)in->len;
    z.next_out = buf;
    z.avail_out = (uInt)bound;
    int zr = deflate(&z, Z_FINISH);
    size_t n = bound - z.avail_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(buf);
        return -EIO;
    }
    gmt_buf_put(out, buf, n);
    free(buf);
    return 0;
}

/* A report's seconds as pprof's int64 nanoseconds: a hostile report's value (negative, NaN,
 * or beyond 2^63 ns) is clamped instead of converted out of range (undefined behaviour). */
static uint64_t seconds_to_ns(double s)
{
    if (!(s > 0)) return 0;
    if (s >= (double)INT64_MAX / 1e9) return (uint64_t)INT64_MAX;
    return (uint64_t)(s * 1e9);
}

int gmt_export_pprof(const gmt_report_t *rep, gmt_buf_t *out)
{
    ctx_t c;
    memset(&c, 0, sizeof c);
    str_id(&c.s, ""); /* string_table[0] must be "" */
    gmt_buf_t prof = {0};
    value_type(&c, &prof, 1, "leaked_space", "bytes");
    value_type(&c, &prof, 1, "leaked_objects", "count");
    value_type(&c, &prof, 1, "peak_space", "bytes");
    value_type(&c, &prof, 1, "allocations", "count");
    for (size_t i = 0; i < rep->nleaks; i++)
        if (!rep->leak_groups[i].suppressed) add_sample(&c, &rep->leak_groups[i], SAMPLE_LEAK);
    /* A list cut at GPUMEMTRACE_TOP: what it leaves out as samples of one frame of their own
     * (docs/cli.md, "Lists cut at GPUMEMTRACE_TOP"); of a merged report one per rank, as its
     * groups carry their rank, and the rest (the allocations) in one without a rank. */
    char unlisted[GMT_UNLISTED_NAME_LEN];
    gmt_frame_t uf;
    gmt_stack_t ust;
    gmt_group_t ug;
    gmt_unlisted_t *u = calloc(rep->nranks + 1, sizeof *u);
    size_t nu = u ? gmt_leaks_unlisted(rep, true, u, rep->nranks + 1) : 0;
    if (!u) c.oom = true;
    for (size_t i = 0; i < nu; i++) {
        gmt_unlisted_group(&u[i], unlisted, sizeof unlisted, &uf, &ust, &ug);
        add_sample(&c, &ug, SAMPLE_LEAK);
    }
    free(u);
    for (size_t i = 0; i < rep->npeaks; i++) {
        const gmt_peak_t *p = &rep->peaks[i];
        for (size_t k = 0; k < p->ngroups; k++)
            add_sample(&c, &p->groups[k], SAMPLE_PEAK);
        gmt_unlisted_t pu;
        if (!gmt_peak_unlisted(p, &pu)) continue;
        gmt_unlisted_group(&pu, unlisted, sizeof unlisted, &uf, &ust, &ug);
        ug.device = p->device; /* a device's peak: its label, as its owners' */
        add_sample(&c, &ug, SAMPLE_PEAK);
    }
    for (size_t i = 0; i < rep->nsites; i++) { /* an allocation site: its count as the value */
        gmt_group_t g = gmt_site_group(&rep->sites[i]);
        add_sample(&c, &g, SAMPLE_SITE);
    }
    gmt_buf_put(&prof, c.samples.data ? c.samples.data : "", c.samples.len);
    gmt_buf_t m = {0}, ln = {0};
    for (size_t i = 0; i < c.nmaps; i++) {
        pb_uint(&m, 1, i + 1);
        pb_uint(&m, 2, 0);
        pb_uint(&m, 3, UINT64_MAX >> 1);
        pb_uint(&m, 5, str_id(&c.s, c.maps[i]));
        pb_key(&m, 7, 0);
        pb_varint(&m, 1); /* has_functions */
        pb_msg(&prof, 3, &m);
    }
    for (size_t i = 0; i < c.nlocs; i++) {
        loc_t *l = &c.locs[i];
        pb_uint(&m, 1, i + 1);
        pb_uint(&m, 2, l->mapping_id);
        pb_uint(&m, 3, l->address);
        pb_uint(&ln, 1, l->function_id);
        if (l->line > 0) pb_uint(&ln, 2, (uint64_t)l->line);
        pb_msg(&m, 4, &ln);
        pb_msg(&prof, 4, &m);
    }
    gmt_buf_put(&prof, c.functions.data ? c.functions.data : "", c.functions.len);
    uint64_t dflt = str_id(&c.s, "leaked_space");
    uint64_t comment = str_id(&c.s, rep->path);
    /* the allocation sites left out made at most as many as the least listed: no sample is
     * invented, a comment (go tool pprof -comments) says the list is cut */
    char note[128];
    snprintf(note, sizeof note,
             "allocations: the %zu allocation sites of %" PRIu64 " with the most (GPUMEMTRACE_TOP)",
             rep->nsites, rep->sites_total);
    uint64_t site_note = rep->sites_total > rep->nsites ? str_id(&c.s, note) : 0;
    for (size_t i = 0; i < c.s.n; i++)
        pb_bytes(&prof, 6, c.s.v[i], strlen(c.s.v[i]));
    /* when it ran: the process, or a merged report's job from its first rank's start to its
     * last rank's end (its process section is the lowest rank's; without the ranks' times,
     * left out) */
    double start = rep->start_time, span = rep->duration_s, last;
    if (rep->nranks) {
        if (gmt_report_job_span(rep, &start, &last))
            span = last - start;
        else
            start = span = 0;
    }
    if (start > 0) pb_uint(&prof, 9, seconds_to_ns(start));
    if (span > 0 || !rep->nranks) pb_uint(&prof, 10, seconds_to_ns(span));
    pb_key(&prof, 13, 0); /* comment: repeated int64, the report's name */
    pb_varint(&prof, comment);
    if (site_note) {
        pb_key(&prof, 13, 0);
        pb_varint(&prof, site_note);
    }
    pb_uint(&prof, 14, dflt);
    int rc =
        c.oom || c.s.oom || prof.failed || c.functions.failed || c.samples.failed ? -ENOMEM : 0;
    if (!rc) rc = gzip_into(&prof, out);
    gmt_buf_free(&m);
    gmt_buf_free(&ln);
    gmt_buf_free(&prof);
    gmt_buf_free(&c.functions);
    gmt_buf_free(&c.samples);
    gmt_strmap_free(&c.locmap);
    gmt_buf_free(&c.key);
    gmt_strmap_free(&c.mapmap);
    gmt_strmap_free(&c.s.map);
    free(c.locs);
    free(c.maps);
    for (size_t i = 0; i < c.s.n; i++)
        free(c.s.v[i]);
    free(c.s.v);
    return rc;
}
