/* offline.c - see offline.h. */
#define _GNU_SOURCE
#include "offline.h"

#include "dwsym.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static void set_str(cJSON *obj, const char *key, const char *v)
{
    cJSON *n = v ? cJSON_CreateString(v) : cJSON_CreateNull();
    if (!n) return;
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, n);
    else
        cJSON_AddItemToObject(obj, key, n);
}

static void set_line(cJSON *obj, const char *file, int line)
{
    cJSON *n = file && line > 0 ? cJSON_CreateNumber(line) : cJSON_CreateNull();
    if (!n) return;
    if (cJSON_GetObjectItemCaseSensitive(obj, "line"))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, "line", n);
    else
        cJSON_AddItemToObject(obj, "line", n);
}

static void name_frame(gmt_dwsym_t *s, cJSON *f, gmt_offline_stats_t *st)
{
    if (!cJSON_IsObject(f)) return;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(f, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "native") != 0) return;
    st->frames++;
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(f, "file");
    if (cJSON_IsString(file)) { /* named already (by an earlier symbolize): kept as it is */
        st->already++;
        return;
    }
    const cJSON *mod = cJSON_GetObjectItemCaseSensitive(f, "module");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(f, "offset");
    const cJSON *bid = cJSON_GetObjectItemCaseSensitive(f, "build_id");
    const cJSON *sym = cJSON_GetObjectItemCaseSensitive(f, "symbol");
    const char *old = cJSON_IsString(sym) ? sym->valuestring : NULL;
    const gmt_symres_t *r = NULL;
    int rc = -EINVAL;
    /* Only a build id proves that the file here is the one that ran: no id, no lookup. */
    if (!cJSON_IsString(bid) || !bid->valuestring[0])
        st->unverified++;
    else if (cJSON_IsString(mod) && mod->valuestring[0] == '/' && cJSON_IsNumber(off) &&
             off->valuedouble >= 1 && off->valuedouble < 18446744073709551616.0)
        rc = gmt_dwsym_resolve(s, mod->valuestring, bid->valuestring,
                               (uint64_t)off->valuedouble - 1, &r);
    if (rc == -ESTALE) st->stale++;
    if (rc == -ENOENT) st->missing++;
    if (rc != 0) {
        /* At least demangle what dladdr gave. */
        char buf[2048];
        const char *d = gmt_demangle(old, buf, sizeof buf);
        if (d && d != old) {
            set_str(f, "symbol", d);
            st->named++;
        }
        return;
    }
    /* A module without symbols or DWARF (stripped) is read but names nothing. */
    if (r->fn.symbol || r->fn.file)
        st->named++;
    else
        st->bare++;
    if (r->fn.symbol) set_str(f, "symbol", r->fn.symbol);
    set_str(f, "file", r->fn.file);
    set_line(f, r->fn.file, r->fn.line);
    cJSON *inl = cJSON_CreateArray();
    for (int i = 0; inl && i < r->ninlined; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        set_str(o, "symbol", r->inlined[i].symbol);
        set_str(o, "file", r->inlined[i].file);
        set_line(o, r->inlined[i].file, r->inlined[i].line);
        cJSON_AddItemToArray(inl, o);
    }
    if (!inl) return;
    if (cJSON_GetObjectItemCaseSensitive(f, "inlined"))
        cJSON_ReplaceItemInObjectCaseSensitive(f, "inlined", inl);
    else
        cJSON_AddItemToObject(f, "inlined", inl);
}

char *gmt_symbolize_report_text(const char *text, size_t len, size_t *out_len)
{
    /* A report the library named without libdw says "resolver": "dladdr": without that word
     * anywhere it was named already (or is not ours), and is not parsed twice. The word, not
     * the member as the writer spells it: a report pretty-printed (jq ., json.tool) has a
     * space after the colon, and was shown unnamed. gmt_symbolize_report_json reads the
     * member itself. */
    static const char marker[] = "\"dladdr\"";
    if (!memmem(text, len, marker, sizeof marker - 1)) return NULL;
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) return NULL;
    gmt_offline_stats_t st;
    char *out = NULL;
    if (gmt_symbolize_report_json(root, &st, NULL, 0) == 0 && st.named > 0)
        out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (out) *out_len = strlen(out);
    return out;
}

int gmt_symbolize_report_json(cJSON *root, gmt_offline_stats_t *st, char *why, size_t why_len)
{
    gmt_offline_stats_t local;
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    if (why && why_len) why[0] = 0;
    cJSON *capture = cJSON_GetObjectItemCaseSensitive(root, "capture");
    cJSON *symbols = cJSON_GetObjectItemCaseSensitive(capture, "symbols");
    const cJSON *resolver = cJSON_GetObjectItemCaseSensitive(symbols, "resolver");
    if (cJSON_IsString(resolver) && strcmp(resolver->valuestring, "libdw") == 0) {
        st->named_when_written = true;
        return 0;
    }
    /* Symbolized before, maybe where some modules were not found or had another build id: the
     * frames still without a file are looked up again, so a report symbolized on the wrong
     * machine can be completed where the modules are (without libdw it stays as it is). */
    bool again = cJSON_IsString(resolver) && strcmp(resolver->valuestring, "offline") == 0;
    cJSON *stacks = cJSON_GetObjectItemCaseSensitive(root, "stacks");
    if (!cJSON_IsObject(stacks)) return 0;
    gmt_dwsym_t *s = NULL;
    int rc = gmt_dwsym_open(&s, why, why_len);
    if (rc) {
        if (again && why && why_len) why[0] = 0;
        st->no_libdw = again;
        return again ? 0 : rc;
    }
    cJSON *stack;
    cJSON_ArrayForEach(stack, stacks)
    {
        cJSON *frames =
            cJSON_IsObject(stack) ? cJSON_GetObjectItemCaseSensitive(stack, "frames") : stack;
        if (!cJSON_IsArray(frames)) continue;
        cJSON *f;
        cJSON_ArrayForEach(f, frames) name_frame(s, f, st);
    }
    gmt_dwsym_close(s);
    if (cJSON_IsObject(capture)) {
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddStringToObject(o, "resolver", "offline");
            cJSON_AddNullToObject(o, "reason");
            if (symbols)
                cJSON_ReplaceItemInObjectCaseSensitive(capture, "symbols", o);
            else
                cJSON_AddItemToObject(capture, "symbols", o);
        }
    }
    return 0;
}
