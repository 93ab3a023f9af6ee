/* log.c - see log.h. */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

void gmt_log(int level, const char *fmt, ...)
{
    if (level > __atomic_load_n(&log_level, __ATOMIC_RELAXED)) return;
    int saved_errno = errno;
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "gpumemtrace: ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) m = 0;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof buf - 2) len = sizeof buf - 2;
    /* One message, one line: a control character from a hostile value or path (a newline,
     * an escape sequence) is shown as '?'. */
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f) buf[i] = '?';
    buf[len++] = '\n';
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        p += w;
        len -= (size_t)w;
    }
    errno = saved_errno;
}
