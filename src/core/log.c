/* log.c - see log.h. */
#define _GNU_SOURCE
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_level = GMT_LOG_INFO;

void gmt_log_set_level(gmt_log_level_t level)
{
    __atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

gmt_log_level_t gmt_log_get_level(void)
{
    return (gmt_log_level_t)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

/* ---- one line of untrusted text ---- */

size_t gmt_utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char lo = 0x80, hi = 0xBF;
    size_t len;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        len = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
        len = 3;
        if (p[0] == 0xE0) lo = 0xA0;
        if (p[0] == 0xED) hi = 0x9F; /* no surrogates */
    } else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
        len = 4;
        if (p[0] == 0xF0) lo = 0x90;
        if (p[0] == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

/* The piece shown for the character at p (n bytes left): its bytes, or an escape written to
 * esc. *adv gets the bytes of p it stands for; returns the piece's length. */
static size_t escape_piece(const unsigned char *p, size_t n, char esc[8], const char **piece,
                           size_t *adv)
{
    static const char hex[] = "0123456789abcdef";
    *piece = (const char *)p;
    *adv = 1;
    if (p[0] == '\n' || p[0] == '\r' || p[0] == '\t') {
        esc[0] = '\\';
        esc[1] = p[0] == '\n' ? 'n' : p[0] == '\r' ? 'r' : 't';
        *piece = esc;
        return 2;
    }
    if (p[0] < 0x20 || p[0] == 0x7F) {
        memcpy(esc, "\\x", 2);
        esc[2] = hex[p[0] >> 4];
        esc[3] = hex[p[0] & 15];
        *piece = esc;
        return 4;
    }
    if (p[0] < 0x80) return 1;
    size_t len = gmt_utf8_seq(p, n);
    if (len == 2 && p[0] == 0xC2 && p[1] < 0xA0) { /* C1: U+0080 to U+009F */
        memcpy(esc, "\\u00", 4);
        esc[4] = hex[p[1] >> 4];
        esc[5] = hex[p[1] & 15];
        *piece = esc;
        *adv = 2;
        return 6;
    }
    if (len == 0) { /* not part of well-formed UTF-8 */
        memcpy(esc, "\\x", 2);
        esc[2] = hex[p[0] >> 4];
        esc[3] = hex[p[0] & 15];
        *piece = esc;
        return 4;
    }
    *adv = len;
    return len;
}

bool gmt_escape_append(char *out, size_t cap, size_t *used, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        char esc[8];
        const char *piece;
        size_t adv, len = escape_piece(p + i, n - i, esc, &piece, &adv);
        if (*used + len >= cap) return false;
        memcpy(out + *used, piece, len);
        *used += len;
        out[*used] = '\0';
        i += adv;
    }
    return true;
}

bool gmt_escape_needed(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        char esc[8];
        const char *piece;
        size_t adv;
        escape_piece(p + i, n - i, esc, &piece, &adv);
        if (piece == esc) return true;
        i += adv;
    }
    return false;
}

void gmt_log(int level, const char *fmt, ...)
{
    if (level > __atomic_load_n(&log_level, __ATOMIC_RELAXED)) return;
    int saved_errno = errno;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t mlen = m < 0 ? 0 : (size_t)m;
    bool cut = mlen >= sizeof msg;
    if (cut) {
        /* vsnprintf cut the message: not inside a UTF-8 character (it would show as \xHH) */
        mlen = sizeof msg - 1;
        size_t k = mlen;
        while (k > 0 && mlen - k < 3 && ((unsigned char)msg[k - 1] & 0xC0) == 0x80)
            k--;
        if (k > 0 && (unsigned char)msg[k - 1] >= 0xC2 &&
            gmt_utf8_seq((const unsigned char *)msg + k - 1, mlen - k + 1) == 0)
            mlen = k - 1;
    }
    /* One message, one line that cannot drive the terminal: a newline, an escape sequence or a
     * byte that is not UTF-8 in a value or a path (GPUMEMTRACE_OUTPUT, say) is shown escaped,
     * as the gpumemtrace command shows report text (\n, \x1b, \u009b, \xff). */
    static const char prefix[] = "gpumemtrace: ";
    char buf[1024];
    size_t used = sizeof prefix - 1;
    memcpy(buf, prefix, sizeof prefix);
    if (!gmt_escape_append(buf, sizeof buf - 4, &used, msg, mlen)) cut = true;
    if (cut) {
        memcpy(buf + used, "...", 3);
        used += 3;
    }
    buf[used++] = '\n';
    gmt_log_write(buf, used);
    errno = saved_errno;
}

void gmt_log_write(const char *p, size_t len)
{
    /* SIGPIPE blocked on this thread around the write, and the one it raised taken back,
     * unless one was pending already (standard signals coalesce: that one is the program's). */
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    bool blocked = pthread_sigmask(SIG_BLOCK, &pipe_set, &old) == 0;
    bool broken = false;
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EPIPE) broken = true;
        if (w <= 0) break;
        p += w;
        len -= (size_t)w;
    }
    if (!blocked) return;
    if (broken && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
