/* frames.c - what the verbs share about frames and stacks: how a frame is shown, which frame
 * is the user's code, the identity of a stack across runs, suppressions, and output helpers
 * (a growable buffer, atomic file writing).
 */
#include "cli/cli.h"
#include "core/event.h" /* GMT_DEVICE_HOST, GMT_DEVICE_UNKNOWN */
#include "core/fdutil.h"
#include "output/suppress.h"
#include "output/module_class.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void gmt_cli_verror(const char *prefix, const char *suffix, const char *fmt, va_list ap)
{
    /* The message is formatted whole, then escaped whole: an argument the user typed or a
     * path read from a report shows its control characters as escapes (gmt_tty_copy),
     * never as a second line or a terminal sequence. Text already escaped (gmt_tty) stays as
     * it is: an escape holds no control character. */
    char msg[2048], out[4 * sizeof msg];
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    if (n < 0) msg[0] = '\0';
    gmt_tty_copy(out, sizeof out, msg);
    fprintf(stderr, "gpumemtrace: %s%s%s%s\n", prefix ? prefix : "", out,
            n >= 0 && (size_t)n >= sizeof msg ? "..." : "", suffix ? suffix : "");
}

void gmt_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gmt_cli_verror(NULL, NULL, fmt, ap);
    va_end(ap);
}

const char *gmt_cli_flag_given_value(const struct option *opts, int val, const char *arg)
{
    if (!val || !arg || strncmp(arg, "--", 2) != 0 || !strchr(arg, '=')) return NULL;
    size_t n = strcspn(arg + 2, "=");
    for (const struct option *o = opts; o->name; o++)
        if (o->val == val && o->has_arg == no_argument && strncmp(o->name, arg + 2, n) == 0)
            return o->name;
    return NULL;
}

bool gmt_cli_flag_value_error(const char *verb, const struct option *opts, int val, const char *arg)
{
    const char *flag = gmt_cli_flag_given_value(opts, val, arg);
    if (flag) gmt_cli_error("%s: option '--%s' takes no value", verb, flag);
    return flag != NULL;
}

void gmt_cli_option_error(const char *verb, const struct option *opts, int val, const char *arg)
{
    if (!gmt_cli_flag_value_error(verb, opts, val, arg))
        gmt_cli_error("%s: unknown option '%s' (see 'gpumemtrace help %s')", verb, arg, verb);
}

const char *gmt_basename(const char *path)
{
    if (!path) return "?";
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

/* ---- report text on a terminal ---- */

#define TTY_SLOTS 16
static struct {
    char *p;
    size_t cap;
} tty_ring[TTY_SLOTS];
static unsigned tty_next;

/* A buffer of at least need bytes from the ring, or NULL. */
static char *tty_slot(size_t need)
{
    unsigned i = tty_next++ % TTY_SLOTS;
    if (tty_ring[i].cap < need) {
        char *p = realloc(tty_ring[i].p, need);
        if (!p) return NULL;
        tty_ring[i].p = p;
        tty_ring[i].cap = need;
    }
    return tty_ring[i].p;
}

const char *gmt_tty(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s);
    if (!gmt_escape_needed(s, n)) return s;
    /* an escape is at most 4 bytes a byte (\xHH; \u0080 is 6 for 2) */
    char *out = n < (SIZE_MAX - 1) / 4 ? tty_slot(4 * n + 1) : NULL;
    if (!out) return "?";
    size_t used = 0;
    out[0] = '\0';
    gmt_escape_append(out, 4 * n + 1, &used, s, n);
    return out;
}

/* Bytes of the well-formed UTF-8 character at s[i] (of n), 0 for a byte of none. */
static size_t utf8_at(const char *s, size_t i, size_t n)
{
    return (unsigned char)s[i] < 0x80 ? 1 : gmt_utf8_seq((const unsigned char *)s + i, n - i);
}

const char *gmt_json_text(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s), i = 0, k;
    while (i < n && (k = utf8_at(s, i, n)) != 0)
        i += k;
    if (i == n) return s; /* well-formed throughout */
    char *out = n < (SIZE_MAX - 1) / 4 ? tty_slot(4 * n + 1) : NULL;
    if (!out) return "?";
    memcpy(out, s, i); /* the well-formed start, then byte by byte */
    size_t o = i;
    while (i < n) {
        k = utf8_at(s, i, n);
        if (k) {
            memcpy(out + o, s + i, k);
            o += k;
            i += k;
        } else {
            o += (size_t)snprintf(out + o, 5, "\\x%02x", (unsigned char)s[i]);
            i++;
        }
    }
    out[o] = '\0';
    return out;
}

size_t gmt_char_len(const char *s)
{
    size_t n = 1;
    while (n < 4 && ((unsigned char)s[n] & 0xc0) == 0x80)
        n++;
    return n;
}

/* The columns a terminal gives a code point: 0 for a combining mark or a zero-width one, 2 for
 * the East Asian wide and fullwidth ranges (Unicode's East_Asian_Width W and F: CJK, kana,
 * Hangul, fullwidth forms, emoji), 1 for the rest. A table of its own rather than wcwidth(),
 * which answers by the locale (-1 for every non-ASCII character under "C", the verbs' usual
 * one), so that every machine cuts a line alike. */
static unsigned code_point_cols(uint32_t c)
{
    static const struct {
        uint32_t lo, hi;
        unsigned char cols;
    } ranges[] = {
        {0x0300, 0x036F, 0},   {0x0483, 0x0489, 0},   {0x0591, 0x05BD, 0},   {0x0610, 0x061A, 0},
        {0x064B, 0x065F, 0},   {0x0E31, 0x0E31, 0},   {0x0E34, 0x0E3A, 0},   {0x0E47, 0x0E4E, 0},
        {0x1100, 0x115F, 2},   {0x1AB0, 0x1AFF, 0},   {0x1DC0, 0x1DFF, 0},   {0x200B, 0x200F, 0},
        {0x202A, 0x202E, 0},   {0x2060, 0x2064, 0},   {0x20D0, 0x20FF, 0},   {0x231A, 0x231B, 2},
        {0x2329, 0x232A, 2},   {0x23E9, 0x23EC, 2},   {0x23F0, 0x23F0, 2},   {0x23F3, 0x23F3, 2},
        {0x25FD, 0x25FE, 2},   {0x2614, 0x2615, 2},   {0x2648, 0x2653, 2},   {0x267F, 0x267F, 2},
        {0x2693, 0x2693, 2},   {0x26A1, 0x26A1, 2},   {0x26AA, 0x26AB, 2},   {0x26BD, 0x26BE, 2},
        {0x26C4, 0x26C5, 2},   {0x26CE, 0x26CE, 2},   {0x26D4, 0x26D4, 2},   {0x26EA, 0x26EA, 2},
        {0x26F2, 0x26F3, 2},   {0x26F5, 0x26F5, 2},   {0x26FA, 0x26FA, 2},   {0x26FD, 0x26FD, 2},
        {0x2705, 0x2705, 2},   {0x270A, 0x270B, 2},   {0x2728, 0x2728, 2},   {0x274C, 0x274C, 2},
        {0x274E, 0x274E, 2},   {0x2753, 0x2755, 2},   {0x2757, 0x2757, 2},   {0x2795, 0x2797, 2},
        {0x27B0, 0x27B0, 2},   {0x27BF, 0x27BF, 2},   {0x2B1B, 0x2B1C, 2},   {0x2B50, 0x2B50, 2},
        {0x2B55, 0x2B55, 2},   {0x2E80, 0x303E, 2},   {0x3041, 0x3096, 2},   {0x3099, 0x309A, 0},
        {0x309B, 0x33FF, 2},   {0x3400, 0x4DBF, 2},   {0x4E00, 0x9FFF, 2},   {0xA000, 0xA4CF, 2},
        {0xA960, 0xA97F, 2},   {0xAC00, 0xD7A3, 2},   {0xF900, 0xFAFF, 2},   {0xFE00, 0xFE0F, 0},
        {0xFE10, 0xFE19, 2},   {0xFE20, 0xFE2F, 0},   {0xFE30, 0xFE6F, 2},   {0xFEFF, 0xFEFF, 0},
        {0xFF01, 0xFF60, 2},   {0xFFE0, 0xFFE6, 2},   {0x16FE0, 0x16FE4, 2}, {0x16FF0, 0x16FF1, 2},
        {0x17000, 0x18D08, 2}, {0x1AFF0, 0x1AFFE, 2}, {0x1B000, 0x1B2FF, 2}, {0x1F004, 0x1F004, 2},
        {0x1F0CF, 0x1F0CF, 2}, {0x1F18E, 0x1F18E, 2}, {0x1F191, 0x1F19A, 2}, {0x1F200, 0x1F251, 2},
        {0x1F260, 0x1F265, 2}, {0x1F300, 0x1F64F, 2}, {0x1F680, 0x1F6FF, 2}, {0x1F7E0, 0x1F7EB, 2},
        {0x1F7F0, 0x1F7F0, 2}, {0x1F90C, 0x1F9FF, 2}, {0x1FA70, 0x1FAFF, 2}, {0x20000, 0x2FFFD, 2},
        {0x30000, 0x3FFFD, 2}, {0xE0000, 0xE0FFF, 0},
    };
    size_t lo = 0, hi = sizeof ranges / sizeof ranges[0];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c < ranges[mid].lo)
            hi = mid;
        else if (c > ranges[mid].hi)
            lo = mid + 1;
        else
            return ranges[mid].cols;
    }
    return 1;
}

unsigned gmt_char_cols(const char *s, size_t *bytes)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t n = gmt_char_len(s);
    *bytes = n;
    if (u[0] < 0x80) return 1;
    /* the lead byte's length must be the sequence's (gmt_char_len counts what follows) */
    size_t want = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (want != n) return 1;
    uint32_t c = u[0] & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++)
        c = (c << 6) | (u[i] & 0x3Fu);
    return code_point_cols(c);
}

/* Bytes of s that fill at most cols columns (gmt_char_cols; a character never split, a
 * zero-width one kept with the character before it); *used gets how many columns that is. */
static size_t first_cols(const char *s, size_t cols, size_t *used)
{
    size_t i = 0, c = 0;
    while (s[i]) {
        size_t n;
        unsigned w = gmt_char_cols(s + i, &n);
        if (c + w > cols) break;
        c += w;
        i += n;
    }
    *used = c;
    return i;
}

const char *gmt_tty_cols(const char *s, size_t cols, bool cut)
{
    const char *e = gmt_tty(s ? s : "");
    size_t used, keep = first_cols(e, cut ? cols : SIZE_MAX, &used);
    if (used >= cols && e[keep] == '\0') return e; /* nothing to cut, nothing to pad */
    size_t pad = used < cols ? cols - used : 0;
    char *out = keep < SIZE_MAX - pad - 1 ? tty_slot(keep + pad + 1) : NULL;
    if (!out) return "?";
    memcpy(out, e, keep); /* e is s or another slot of the ring */
    memset(out + keep, ' ', pad);
    out[keep + pad] = '\0';
    return out;
}

/* A Python file of an installed package (site-packages, Debian's dist-packages) or of the
 * standard library: PREFIX/lib/python3.X, or PREFIX/lib64/python3.X where Python's platlibdir
 * is lib64 (Fedora, RHEL, openSUSE), and code with no source file ("<frozen runpy>"). The
 * version's dot is part of the match: /home/u/lib/python3-tools is the user's own folder. */
static bool python_file_is_library(const char *file)
{
    return strstr(file, "/site-packages/") || strstr(file, "/dist-packages/") ||
           strstr(file, "/lib/python3.") || strstr(file, "/lib64/python3.") || file[0] == '<';
}

const gmt_frame_t *gmt_user_frame(const gmt_stack_t *stack)
{
    if (!stack || stack->n == 0) return NULL;
    /* A Python frame that could not be read (no file) shows nothing to look at: it is the
     * user frame only when no other Python frame is there. */
    const gmt_frame_t *any_python = NULL, *unread = NULL;
    for (size_t i = 0; i < stack->n; i++) {
        const gmt_frame_t *f = &stack->frames[i];
        if (!f->python) continue;
        if (!f->file) {
            if (!unread) unread = f;
        } else if (!python_file_is_library(f->file)) {
            return f;
        } else if (!any_python) {
            any_python = f;
        }
    }
    if (any_python) return any_python;
    if (unread) return unread;
    for (size_t i = 0; i < stack->n; i++) {
        const gmt_frame_t *f = &stack->frames[i];
        /* A static runtime's frames are the program module's: not the user's code (nor what
         * was inlined into them). */
        if (gmt_module_is_user_code(f->module) &&
            !gmt_symbol_is_cuda_runtime(gmt_frame_physical(stack, i)->symbol))
            return f;
    }
    return &stack->frames[0];
}

const gmt_frame_t *gmt_frame_physical(const gmt_stack_t *stack, size_t i)
{
    while (i + 1 < stack->n && stack->frames[i].inlined)
        i++;
    return &stack->frames[i];
}

/* snprintf for a frame's text: where it does not fit, the character the cut fell inside is
 * left out too, as gmt_utf8_cut_end does, so the text stays UTF-8 (half a character would
 * show as \xHH on a terminal and make report --json and the HTML page invalid UTF-8). */
static void __attribute__((format(printf, 3, 4)))
frame_printf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= len && len > 0) gmt_utf8_cut_end(buf);
}

static void module_offset(const gmt_frame_t *f, char *buf, size_t len)
{
    if (f->module && f->offset >= 0)
        frame_printf(buf, len, "%s+0x%" PRIx64, gmt_basename(f->module), (uint64_t)f->offset);
    else if (f->module)
        frame_printf(buf, len, "%s 0x%" PRIx64, gmt_basename(f->module), f->address);
    else
        snprintf(buf, len, "0x%" PRIx64, f->address);
}

void gmt_frame_format(const gmt_frame_t *f, char *buf, size_t len)
{
    char where[300];
    module_offset(f, where, sizeof where);
    const char *name = f->symbol;
    if (f->python) {
        frame_printf(buf, len, "%s %s:%" PRId64, name ? name : "?", f->file ? f->file : "?",
                     f->line < 0 ? (int64_t)0 : f->line);
        return;
    }
    if (!name && !f->file) {
        frame_printf(buf, len, "%s%s", where, f->inlined ? " [inlined]" : "");
        return;
    }
    /* as long as the verbs' longest line (1024): a deep source path keeps its ":line" */
    char fl[1024] = "";
    if (f->file && f->line >= 0)
        frame_printf(fl, sizeof fl, " %s:%" PRId64, f->file, f->line);
    else if (f->file)
        frame_printf(fl, sizeof fl, " %s", f->file);
    const char *inl = f->inlined ? ", inlined" : "";
    if (f->module)
        frame_printf(buf, len, "%s%s [%s%s]", name ? name : "?", fl, where, inl);
    else
        frame_printf(buf, len, "%s%s%s", name ? name : "?", fl, f->inlined ? " [inlined]" : "");
}

void gmt_stack_where(const gmt_stack_t *st, char *buf, size_t len)
{
    const gmt_frame_t *f = gmt_user_frame(st);
    if (f)
        gmt_frame_format(f, buf, len);
    else
        snprintf(buf, len, "(no stack)");
}

/* The callers gmt_stacks_where_apart may name for one stack: the frames outside its user
 * frame of the user frame's kind, as their texts (gmt_frame_format), innermost first. */
typedef struct {
    char *user; /* the user frame's text, or NULL for an empty stack */
    char *caller[GMT_WHERE_CALLERS];
    const gmt_frame_t *caller_frame[GMT_WHERE_CALLERS];
    size_t ncallers;
} where_t;

static bool caller_kind(const gmt_frame_t *user, const gmt_frame_t *f)
{
    if (user->python) return f->python;
    return !f->python && !f->inlined && gmt_module_is_user_code(f->module);
}

static int where_fill(where_t *w, const gmt_stack_t *st)
{
    char text[1024];
    const gmt_frame_t *user = gmt_user_frame(st);
    if (!user) return 0;
    gmt_frame_format(user, text, sizeof text);
    if (!(w->user = strdup(text))) return -1;
    for (size_t i = (size_t)(user - st->frames) + 1; i < st->n && w->ncallers < GMT_WHERE_CALLERS;
         i++) {
        const gmt_frame_t *f = &st->frames[i];
        if (!caller_kind(user, f)) continue;
        gmt_frame_format(f, text, sizeof text);
        if (!(w->caller[w->ncallers] = strdup(text))) return -1;
        w->caller_frame[w->ncallers++] = f;
    }
    return 0;
}

/* Listed stacks in the order of their user frame's text, then their callers' texts: a
 * stack's closest relatives (the longest run of equal callers) are its neighbours. */
static const where_t *sort_base;

static size_t common_callers(const where_t *a, const where_t *b)
{
    size_t k = 0;
    while (k < a->ncallers && k < b->ncallers && strcmp(a->caller[k], b->caller[k]) == 0)
        k++;
    return k;
}

static int where_cmp(const void *pa, const void *pb)
{
    const where_t *a = &sort_base[*(const size_t *)pa], *b = &sort_base[*(const size_t *)pb];
    if (!a->user || !b->user) return (a->user != NULL) - (b->user != NULL);
    int c = strcmp(a->user, b->user);
    if (c) return c;
    size_t k = common_callers(a, b);
    if (k < a->ncallers && k < b->ncallers) return strcmp(a->caller[k], b->caller[k]);
    return (a->ncallers > k) - (b->ncallers > k);
}

/* How many of w[i]'s callers tell it apart from neighbour w[j]: 1 + their common callers, or
 * SIZE_MAX when i's callers are all j's (nothing tells them apart); 0 when j's user frame
 * differs (no need). */
static size_t callers_needed(const where_t *w, size_t i, size_t j)
{
    if (!w[j].user || strcmp(w[i].user, w[j].user) != 0) return 0;
    size_t k = common_callers(&w[i], &w[j]);
    return k >= w[i].ncallers ? SIZE_MAX : k + 1;
}

int gmt_stacks_where_apart(const gmt_stack_t *const *stacks, size_t n, char *where, size_t len)
{
    if (len == 0) return 0;
    for (size_t i = 0; i < n; i++)
        gmt_stack_where(stacks[i], where + i * len, len);
    if (n < 2) return 0;
    where_t *w = calloc(n, sizeof *w);
    int rc = w ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = where_fill(&w[i], stacks[i]);
    size_t *order = rc == 0 ? malloc(n * sizeof *order) : NULL;
    if (!order) rc = -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        order[i] = i;
    if (rc == 0) {
        sort_base = w; /* the CLI is one thread */
        qsort(order, n, sizeof *order, where_cmp);
    }
    for (size_t o = 0; rc == 0 && o < n; o++) {
        size_t i = order[o], d = 0;
        if (!w[i].user) continue;
        size_t before = o > 0 ? callers_needed(w, i, order[o - 1]) : 0;
        size_t after = o + 1 < n ? callers_needed(w, i, order[o + 1]) : 0;
        d = before > after ? before : after;
        if (d == 0 || d == SIZE_MAX) continue;
        const gmt_frame_t *f = w[i].caller_frame[d - 1];
        char name[600], *out = where + i * len;
        if (f->python) {
            frame_printf(name, sizeof name, "%s %s:%" PRId64, f->symbol ? f->symbol : "?",
                         gmt_basename(f->file), f->line < 0 ? (int64_t)0 : f->line);
        } else {
            /* with its line where it has one: one function calling the same helper from two
             * lines is told apart only by them ("(from main)" twice said nothing) */
            gmt_frame_name(f, name, sizeof name);
            size_t nl = strlen(name);
            if (f->file && f->line >= 0)
                frame_printf(name + nl, sizeof name - nl, " %s:%" PRId64, gmt_basename(f->file),
                             f->line);
        }
        size_t used = strlen(out);
        frame_printf(out + used, len - used, " (from %s%s)", d > 1 ? "... " : "", name);
    }
    free(order);
    for (size_t i = 0; w && i < n; i++) {
        free(w[i].user);
        for (size_t k = 0; k < w[i].ncallers; k++)
            free(w[i].caller[k]);
    }
    free(w);
    return rc;
}

char *gmt_stacks_where_new(const gmt_stack_t *const *stacks, size_t n)
{
    char *where = n ? calloc(n, GMT_WHERE_LEN) : NULL;
    if (where && gmt_stacks_where_apart(stacks, n, where, GMT_WHERE_LEN) != 0) {
        free(where);
        where = NULL;
    }
    return where;
}

char *gmt_list_wheres(const void *list, size_t n, size_t max, gmt_stack_at_fn stack_at,
                      gmt_keep_fn keep, const void *ctx)
{
    const gmt_stack_t **st = calloc(n + 1, sizeof *st);
    if (!st) return NULL;
    size_t ns = 0;
    for (size_t i = 0; i < n && ns < max; i++)
        if (!keep || keep(ctx, list, i)) st[ns++] = stack_at(list, i);
    char *w = gmt_stacks_where_new(st, ns);
    free(st);
    return w;
}

void gmt_where_at(const char *wheres, size_t i, const gmt_stack_t *st, char *buf, size_t len)
{
    if (wheres)
        snprintf(buf, len, "%s", wheres + i * GMT_WHERE_LEN);
    else
        gmt_stack_where(st, buf, len);
}

void gmt_where_at_tty(const char *wheres, size_t i, const gmt_stack_t *st, char *buf, size_t len)
{
    char raw[GMT_WHERE_LEN];
    gmt_where_at(wheres, i, st, raw, sizeof raw);
    gmt_tty_copy(buf, len, raw);
}

const gmt_stack_t *gmt_group_stack_at(const void *list, size_t i)
{
    return ((const gmt_group_t *)list)[i].stack;
}

const gmt_stack_t *gmt_suspect_stack_at(const void *list, size_t i)
{
    return ((const gmt_suspect_t *)list)[i].stack;
}

const gmt_stack_t *gmt_site_stack_at(const void *list, size_t i)
{
    return ((const gmt_site_t *)list)[i].stack;
}

const gmt_stack_t *gmt_error_stack_at(const void *list, size_t i)
{
    return ((const gmt_error_t *)list)[i].stack;
}

void gmt_tty_copy(char *buf, size_t len, const char *raw)
{
    size_t used = 0;
    if (len == 0) return;
    buf[0] = '\0';
    gmt_escape_append(buf, len, &used, raw, strlen(raw));
}

bool gmt_argv_shown_append(char *cmd, size_t *used, const char *arg, size_t n)
{
    if ((*used && !gmt_escape_append(cmd, GMT_ARGV_SHOWN_LEN + 1, used, " ", 1)) ||
        !gmt_escape_append(cmd, GMT_ARGV_SHOWN_LEN + 1, used, arg, n)) {
        memcpy(cmd + *used, "...", 4);
        return false;
    }
    return true;
}

void gmt_frame_format_tty(const gmt_frame_t *f, char *buf, size_t len)
{
    char raw[1024];
    gmt_frame_format(f, raw, sizeof raw);
    gmt_tty_copy(buf, len, raw);
}

void gmt_stack_where_tty(const gmt_stack_t *st, char *buf, size_t len)
{
    char raw[1024];
    gmt_stack_where(st, raw, sizeof raw);
    gmt_tty_copy(buf, len, raw);
}

void gmt_frame_name(const gmt_frame_t *f, char *buf, size_t len)
{
    if (f->python) {
        frame_printf(buf, len, "%s (%s:%" PRId64 ")", f->symbol ? f->symbol : "?",
                     gmt_basename(f->file), f->line < 0 ? (int64_t)0 : f->line);
    } else if (f->symbol) {
        frame_printf(buf, len, "%s%s", f->symbol, f->inlined ? " [inlined]" : "");
    } else {
        char where[300];
        module_offset(f, where, sizeof where);
        frame_printf(buf, len, "%s%s", where, f->inlined ? " [inlined]" : "");
    }
}

void gmt_frame_key_put(gmt_buf_t *b, const gmt_frame_t *f)
{
    if (f->python) {
        gmt_buf_puts(b, "py`");
        gmt_buf_puts(b, gmt_basename(f->file));
        gmt_buf_put(b, "`", 1);
        gmt_buf_puts(b, f->symbol ? f->symbol : "?");
        return;
    }
    gmt_buf_puts(b, f->module ? gmt_basename(f->module) : "?");
    if (f->symbol) {
        gmt_buf_put(b, "`", 1);
        gmt_buf_puts(b, f->symbol);
    } else if (f->offset >= 0) {
        gmt_buf_printf(b, "`+0x%" PRIx64, (uint64_t)f->offset);
    } else {
        gmt_buf_puts(b, "`?");
    }
    /* not the same frame as a call of that function that was not inlined */
    if (f->inlined) gmt_buf_puts(b, " [inlined]");
}

char *gmt_stack_key(const gmt_stack_t *stack)
{
    if (!stack || stack->n == 0) return strdup("(no stack)");
    gmt_buf_t b = {0};
    for (size_t i = 0; i < stack->n; i++) {
        if (i) gmt_buf_put(&b, ";", 1);
        gmt_frame_key_put(&b, &stack->frames[i]);
    }
    gmt_buf_put(&b, "", 1);
    if (b.failed) {
        gmt_buf_free(&b);
        return NULL;
    }
    return b.data;
}

const char *gmt_device_name(int64_t device)
{
    return device == GMT_DEVICE_HOST ? "host" : device == GMT_DEVICE_UNKNOWN ? "unknown" : NULL;
}

const char *gmt_error_label(const gmt_error_t *e, char *buf, size_t len)
{
    if (e->error_name) return e->error_name;
    snprintf(buf, len, "error %" PRId64, e->error);
    return buf;
}

void gmt_utf8_cut_end(char *s)
{
    size_t n = strlen(s), i = n;
    while (i > 0 && n - i < 4 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
        i--;
    if (i > 0 && gmt_utf8_cut_at_end((const unsigned char *)s + i - 1, n - i + 1)) s[i - 1] = '\0';
}

bool gmt_utf8_cut_at_end(const unsigned char *s, size_t len)
{
    size_t need = s[0] >= 0xc2 && s[0] <= 0xdf   ? 2
                  : s[0] >= 0xe0 && s[0] <= 0xef ? 3
                  : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4
                                                 : 0;
    if (len >= need) return false;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xc0) != 0x80) return false;
    return true;
}

const char *gmt_device_label(int64_t device, int64_t rank, char *buf, size_t len)
{
    char r[32] = "";
    if (rank >= 0) snprintf(r, sizeof r, "rank %" PRId64 " ", rank);
    if (device == GMT_CLI_NO_DEVICE) {
        snprintf(buf, len, "%.*s", r[0] ? (int)strlen(r) - 1 : 0, r); /* no trailing space */
        return buf;
    }
    const char *name = gmt_device_name(device);
    if (name)
        snprintf(buf, len, "%s%s", r, name);
    else
        snprintf(buf, len, "%s%s %" PRId64, r, device < 0 ? "device" : "GPU", device);
    return buf;
}

/* ---- suppressions ---- */

int gmt_cli_supp_load(const char *path, gmt_cli_supp_t *s, char *why, size_t why_len)
{
    memset(s, 0, sizeof *s);
    size_t n;
    int rc = gmt_supp_read_file(path, &s->text, &s->text_bytes, &n, why, why_len);
    if (rc) return rc;
    /* As the library reads GPUMEMTRACE_SUPPRESSIONS (gmt_supp_split), without its cap. */
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += s->text[i] == '\n' || s->text[i] == 0;
    s->pat = calloc(lines, sizeof *s->pat);
    if (!s->pat) {
        gmt_cli_supp_free(s);
        snprintf(why, why_len, "out of memory");
        return -ENOMEM;
    }
    s->n = gmt_supp_split(s->text, n, s->pat, lines);
    return 0;
}

bool gmt_supp_match(const gmt_cli_supp_t *s, const gmt_stack_t *stack)
{
    if (!s || s->n == 0 || !stack) return false;
    for (size_t i = 0; i < stack->n; i++) {
        const gmt_frame_t *f = &stack->frames[i];
        /* As the tracer matches (docs/configuration.md): not an inlined function. */
        if (f->inlined) continue;
        /* A Python frame's function is its symbol (report_load.c). */
        if (gmt_supp_match_names(s->pat, s->n, f->symbol, f->module, f->file)) return true;
    }
    return false;
}

void gmt_cli_supp_free(gmt_cli_supp_t *s)
{
    if (s->text) munmap(s->text, s->text_bytes);
    free(s->pat);
    memset(s, 0, sizeof *s);
}

/* ---- buffer ---- */

void gmt_buf_put(gmt_buf_t *b, const void *p, size_t n)
{
    if (b->failed) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1) {
            if (cap > SIZE_MAX / 2) {
                b->failed = true;
                return;
            }
            cap *= 2;
        }
        char *d = realloc(b->data, cap);
        if (!d) {
            b->failed = true;
            return;
        }
        b->data = d;
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void gmt_buf_puts(gmt_buf_t *b, const char *s)
{
    gmt_buf_put(b, s, strlen(s));
}

void gmt_buf_printf(gmt_buf_t *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if ((size_t)n < sizeof small) {
        gmt_buf_put(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    gmt_buf_put(b, big, (size_t)n);
    free(big);
}

/* A C1 control written as UTF-8 (U+0080-U+009F: c2 80 to c2 9f) at p. */
static bool c1_at(const unsigned char *p)
{
    return p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0;
}

char *gmt_json_controls_escaped(const char *text)
{
    size_t n = strlen(text), extra = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        extra += *p == 0x7f ? 5 : c1_at(p) ? 4 : 0;
    char *out = malloc(n + extra + 2), *o = out;
    if (!out) return NULL;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == 0x7f || c1_at(p)) {
            unsigned c = *p == 0x7f ? 0x7f : p[1];
            o += sprintf(o, "\\u%04x", c);
            p += *p != 0x7f;
        } else {
            *o++ = (char)*p;
        }
    }
    *o++ = '\n'; /* a text file's last line, as the library ends its reports */
    *o = '\0';
    return out;
}

void gmt_buf_json_str(gmt_buf_t *b, const char *s)
{
    gmt_buf_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = {'\\', (char)*p};
            gmt_buf_put(b, e, 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            gmt_buf_printf(b, "\\u%04x", *p);
        } else if (c1_at(p)) { /* valid raw, but a terminal may take it for a control */
            gmt_buf_printf(b, "\\u%04x", p[1]);
            p++;
        } else if (*p >= 0x80) {
            /* a character whole; a byte of no well-formed UTF-8 (a file name's: the reader
             * refuses a report that has one) as the terminal shows it, \xHH, so the JSON
             * stays UTF-8, which JSON must be (gmt_utf8_seq stops at the first byte that
             * does not fit, so it never reads past the NUL) */
            size_t k = gmt_utf8_seq(p, 4);
            if (k) {
                gmt_buf_put(b, p, k);
                p += k - 1;
            } else {
                gmt_buf_printf(b, "\\\\x%02x", *p);
            }
        } else if (*p == '<') {
            /* so a string never closes a <script> element of the HTML page */
            gmt_buf_puts(b, "\\u003c");
        } else {
            gmt_buf_put(b, p, 1);
        }
    }
    gmt_buf_put(b, "\"", 1);
}

void gmt_buf_free(gmt_buf_t *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ---- string map ---- */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

size_t gmt_strmap_get(const gmt_strmap_t *m, const char *key)
{
    if (!m->cap) return SIZE_MAX;
    for (size_t i = str_hash(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        if (!m->keys[i]) return SIZE_MAX;
        if (strcmp(m->keys[i], key) == 0) return m->vals[i];
    }
}

static int strmap_grow(gmt_strmap_t *m)
{
    size_t cap = m->cap ? m->cap * 2 : 256;
    char **keys = calloc(cap, sizeof *keys);
    size_t *vals = calloc(cap, sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return -ENOMEM;
    }
    for (size_t k = 0; k < m->cap; k++) {
        if (!m->keys[k]) continue;
        size_t i = str_hash(m->keys[k]) & (cap - 1);
        while (keys[i])
            i = (i + 1) & (cap - 1);
        keys[i] = m->keys[k];
        vals[i] = m->vals[k];
    }
    free(m->keys);
    free(m->vals);
    m->keys = keys;
    m->vals = vals;
    m->cap = cap;
    return 0;
}

int gmt_strmap_put(gmt_strmap_t *m, const char *key, size_t val)
{
    if ((m->n + 1) * 2 > m->cap && strmap_grow(m)) return -ENOMEM;
    char *copy = strdup(key);
    if (!copy) return -ENOMEM;
    size_t i = str_hash(key) & (m->cap - 1);
    while (m->keys[i])
        i = (i + 1) & (m->cap - 1);
    m->keys[i] = copy;
    m->vals[i] = val;
    m->n++;
    return 0;
}

void gmt_strmap_free(gmt_strmap_t *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* ---- output ---- */

const char *gmt_file_kind(unsigned mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISLNK(mode)  ? "a symbolic link"
                            : "a device";
}

bool gmt_same_file(const char *path, const struct stat *st)
{
    struct stat o;
    return path && strcmp(path, "-") != 0 && stat(path, &o) == 0 && o.st_dev == st->st_dev &&
           o.st_ino == st->st_ino;
}

bool gmt_stdout_ok(const char *verb, const char *what)
{
    /* A write that failed earlier (a printf into a full disk or a closed pipe: SIGPIPE is
     * ignored, gpumemtrace.c) leaves the stream's error flag and its errno; the flush catches
     * what is still buffered. */
    int e = errno;
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) {
        errno = e;
        return true;
    }
    e = errno ? errno : e ? e : EIO;
    gmt_cli_error("%s%swriting %s: %s", verb ? verb : "", verb ? ": " : "", what, strerror(e));
    return false;
}

/* The target's owner, group and permission bits on the new file (fd) that replaces it, as far
 * as this user may set them: a group that cannot be kept takes the group's bits with it, so
 * a rewrite never opens a file to more people than could read it before. */
static int keep_mode(int fd, const struct stat *target)
{
    mode_t mode = target->st_mode & 0777;
    struct stat now;
    if (fstat(fd, &now) != 0) return -errno;
    if (now.st_gid != target->st_gid && fchown(fd, (uid_t)-1, target->st_gid) != 0)
        mode &= ~(mode_t)070;
    if (now.st_uid != target->st_uid && fchown(fd, target->st_uid, (gid_t)-1) != 0) {
        /* only root may give a file away: it stays this user's */
    }
    return fchmod(fd, mode) == 0 ? 0 : -errno;
}

int gmt_out_open(gmt_out_t *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    struct stat st;
    bool exists = false;
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) return -EEXIST;
        exists = true;
    } else if (errno != ENOENT) {
        return -errno;
    }
    size_t plen = strlen(path);
    o->tmp = malloc(plen + 48);
    if (!o->tmp) return -ENOMEM;
    int err = EEXIST;
    for (int tries = 0; tries < 100 && err == EEXIST; tries++) {
        unsigned r = (unsigned)gmt_temp_random();
        char suffix[48];
        snprintf(suffix, sizeof suffix, ".tmp.%ld.%08x", (long)getpid(), r);
        (void)gmt_temp_beside(o->tmp, plen + 48, path, suffix); /* fits: plen + 48 bytes */
        /* a new file only (never an existing one, never through a symlink); private until
         * it has the target's mode, else 0666 less the umask, as any new file */
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                     exists ? 0600 : 0666);
        err = o->fd < 0 ? errno : 0;
    }
    if (!err && exists) err = -keep_mode(o->fd, &st);
    if (err) {
        if (o->fd >= 0) {
            close(o->fd);
            unlink(o->tmp);
        }
        free(o->tmp);
        memset(o, 0, sizeof *o);
        o->fd = -1;
        return -err;
    }
    o->path = path;
    return 0;
}

void gmt_out_abort(gmt_out_t *o)
{
    if (o->fd >= 0) close(o->fd);
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

int gmt_out_commit(gmt_out_t *o)
{
    int rc = close(o->fd) == 0 ? 0 : -errno;
    o->fd = -1;
    if (!rc && rename(o->tmp, o->path) != 0) rc = -errno;
    if (rc) {
        gmt_out_abort(o);
        return rc;
    }
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->fd = -1;
    return 0;
}

int gmt_out_write(gmt_out_t *o, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t w = write(o->fd, p, len);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int gmt_write_output(const char *path, const void *data, size_t len)
{
    if (!path || strcmp(path, "-") == 0) {
        errno = 0;
        if ((len && fwrite(data, 1, len, stdout) != len) || fflush(stdout) != 0 || ferror(stdout))
            return errno ? -errno : -EIO; /* ENOSPC, EPIPE, ... as the write saw it */
        return 0;
    }
    gmt_out_t o;
    int rc = gmt_out_open(&o, path);
    if (rc) return rc;
    rc = gmt_out_write(&o, data, len);
    if (rc) {
        gmt_out_abort(&o);
        return rc;
    }
    return gmt_out_commit(&o);
}
