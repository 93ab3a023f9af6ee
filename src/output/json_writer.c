/* json_writer.c - see json_writer.h. */
#include "json_writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
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

static void put_escaped(jw_t *w, const char *s)
{
    put(w, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
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
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                puts_(w, esc);
            } else {
                put(w, (const char *)p, 1);
            }
        }
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
    member(w, key);
    put(w, &c, 1);
    if (w->depth < JW_MAX_DEPTH) w->first[w->depth] = true;
    w->depth++;
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
    snprintf(b, sizeof b, "%.9g", v);
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
