/* json_writer.c - see json_writer.h. */
#include "json_writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void flush(jw_t *w)
{
    const char *p = w->buf;
    size_t n = w->len;
    while (n > 0 && !w->err) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            w->err = k < 0 ? errno : EIO;
            break;
        }
        p += k;
        n -= (size_t)k;
    }
    w->len = 0;
}

static void put(jw_t *w, const char *s, size_t n)
{
    if (w->err) return;
    while (n > 0) {
        size_t room = sizeof w->buf - w->len;
        if (room == 0) {
            flush(w);
            if (w->err) return;
            room = sizeof w->buf;
        }
        size_t k = n < room ? n : room;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
        s += k;
        n -= k;
    }
}

static void puts_(jw_t *w, const char *s)
{
    put(w, s, strlen(s));
}

/* Length of the well-formed UTF-8 sequence at p (1-4), or minus the length of the ill-formed
 * one: its "maximal subpart" (the lead byte and the continuation bytes that were still
 * acceptable), which is replaced by one U+FFFD, as Unicode recommends and as Python's
 * decode(errors="replace") does. Follows the Unicode table of well-formed byte sequences: no
 * overlong forms, no surrogates (U+D800..DFFF), nothing past U+10FFFF. The NUL terminator
 * stops every sequence. */
static int utf8_len(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    if (c < 0xc2 || c > 0xf4) return -1;
    unsigned char lo = 0x80, hi = 0xbf;
    int n;
    if (c < 0xe0) {
        n = 2;
    } else if (c < 0xf0) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    }
    if (p[1] < lo || p[1] > hi) return -1;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf) return -i;
    return n;
}

/* Whether the character at p (well-formed, not NUL) is written as itself: not a quote, a
 * backslash or a control character. DEL and the C1 controls (U+0080-U+009F, c2 80-c2 9f) are
 * valid raw in JSON but are escaped like C0, so that a report shown with cat cannot drive a
 * terminal (a frame's name holding a CSI, U+009B). */
static inline bool plain_char(const unsigned char *p)
{
    return *p >= 0x20 && *p != '"' && *p != '\\' && *p != 0x7f && (*p != 0xc2 || p[1] >= 0xa0);
}

/* Writes s as a JSON string: quotes, backslashes and control characters (C0, DEL, C1)
 * escaped, each ill-formed UTF-8 subpart replaced with U+FFFD, so the output is valid JSON
 * whatever s holds. */
static void put_escaped(jw_t *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    put(w, "\"", 1);
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const unsigned char *run = p;
        int n;
        /* Copy the longest run that needs no escape in one put. */
        while (plain_char(p) && (n = utf8_len(p)) > 0)
            p += n;
        if (p > run) put(w, (const char *)run, (size_t)(p - run));
        if (!*p) break;
        switch (*p) {
        case '"':
            puts_(w, "\\\"");
            break;
        case '\\':
            puts_(w, "\\\\");
            break;
        case '\n':
            puts_(w, "\\n");
            break;
        case '\r':
            puts_(w, "\\r");
            break;
        case '\t':
            puts_(w, "\\t");
            break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                char esc[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
                put(w, esc, sizeof esc);
            } else if (*p == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0) { /* C1: U+0080-U+009F */
                char esc[6] = {'\\', 'u', '0', '0', hex[p[1] >> 4], hex[p[1] & 15]};
                put(w, esc, sizeof esc);
                p++;
            } else {
                puts_(w, "\xef\xbf\xbd"); /* U+FFFD for one ill-formed subpart */
                p += -utf8_len(p);
                continue;
            }
        }
        p++;
    }
    put(w, "\"", 1);
}

/* Comma and key before a value. */
static void member(jw_t *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first[w->depth - 1]) put(w, ",", 1);
        w->first[w->depth - 1] = false;
    }
    if (key) {
        put_escaped(w, key);
        put(w, ":", 1);
    }
}

void jw_init(jw_t *w, int fd)
{
    w->fd = fd;
    w->err = 0;
    w->depth = 0;
    w->len = 0;
}

static void open_(jw_t *w, const char *key, char c)
{
    if (w->depth >= JW_MAX_DEPTH) {
        /* Deeper than first[] can track: stop with an error rather than guess the commas
         * (or write past first[]). */
        if (!w->err) w->err = EOVERFLOW;
        return;
    }
    member(w, key);
    put(w, &c, 1);
    w->first[w->depth++] = true;
}

static void close_(jw_t *w, char c)
{
    if (w->depth > 0) w->depth--;
    put(w, &c, 1);
}

void jw_object_begin(jw_t *w, const char *key)
{
    open_(w, key, '{');
}

void jw_object_end(jw_t *w)
{
    close_(w, '}');
}

void jw_array_begin(jw_t *w, const char *key)
{
    open_(w, key, '[');
}

void jw_array_end(jw_t *w)
{
    close_(w, ']');
}

void jw_string(jw_t *w, const char *key, const char *s)
{
    member(w, key);
    if (s)
        put_escaped(w, s);
    else
        puts_(w, "null");
}

void jw_int(jw_t *w, const char *key, int64_t v)
{
    char b[32];
    member(w, key);
    snprintf(b, sizeof b, "%lld", (long long)v);
    puts_(w, b);
}

void jw_uint(jw_t *w, const char *key, uint64_t v)
{
    char b[32];
    member(w, key);
    snprintf(b, sizeof b, "%llu", (unsigned long long)v);
    puts_(w, b);
}

void jw_double(jw_t *w, const char *key, double v)
{
    char b[40];
    member(w, key);
    if (!isfinite(v)) {
        puts_(w, "null");
        return;
    }
    /* The shortest of 15, 16 or 17 significant digits that reads back as the same double:
     * full precision (a Unix time in seconds keeps its sub-microsecond digits) without
     * printing 0.1 as 0.10000000000000001. */
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(b, sizeof b, "%.*g", prec, v);
        if (prec == 17 || strtod(b, NULL) == v) break;
    }
    puts_(w, b);
}

void jw_bool(jw_t *w, const char *key, bool v)
{
    member(w, key);
    puts_(w, v ? "true" : "false");
}

void jw_null(jw_t *w, const char *key)
{
    member(w, key);
    puts_(w, "null");
}

void jw_hex(jw_t *w, const char *key, uint64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    jw_string(w, key, b);
}

int jw_finish(jw_t *w)
{
    put(w, "\n", 1);
    flush(w);
    return w->err ? -w->err : 0;
}
