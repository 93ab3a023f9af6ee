/* suppress.c - see suppress.h. */
#define _GNU_SOURCE
#include "suppress.h"

#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <fnmatch.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

size_t gmt_supp_split(char *text, size_t len, const char **pat, size_t max)
{
    size_t n = 0, i = 0;
    /* a UTF-8 byte order mark (Windows editors, PowerShell) is no part of the first pattern,
     * which it made match nothing, silently */
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) i = 3;
    while (i < len) {
        size_t start = i;
        while (i < len && text[i] != '\n' && text[i] != 0)
            i++;
        size_t end = i; /* text[end] is '\n', NUL or one past the end */
        if (i < len) i++;
        while (start < end && (text[start] == ' ' || text[start] == '\t'))
            start++;
        while (end > start &&
               (text[end - 1] == ' ' || text[end - 1] == '\t' || text[end - 1] == '\r'))
            end--;
        if (end == start || text[start] == '#') continue;
        /* end < len, or end == len and the caller left room for the terminator. */
        text[end] = 0;
        if (n < max) pat[n] = text + start;
        n++;
    }
    return n;
}

void gmt_supp_parse(gmt_supp_t *s, char *text, size_t len)
{
    size_t all = gmt_supp_split(text, len, s->pat, GMT_SUPP_MAX_PATTERNS);
    s->n = all < GMT_SUPP_MAX_PATTERNS ? (int)all : GMT_SUPP_MAX_PATTERNS;
    s->ignored = (int)(all - (size_t)s->n);
}

bool gmt_supp_match_names(const char *const *pat, size_t n, const char *symbol, const char *module,
                          const char *file)
{
    const char *base = NULL;
    if (module) {
        base = strrchr(module, '/');
        base = base ? base + 1 : module;
    }
    for (size_t k = 0; k < n; k++) {
        if (symbol && fnmatch(pat[k], symbol, 0) == 0) return true;
        if (module && fnmatch(pat[k], module, 0) == 0) return true;
        if (base && base != module && fnmatch(pat[k], base, 0) == 0) return true;
        if (file && fnmatch(pat[k], file, 0) == 0) return true;
    }
    return false;
}

bool gmt_supp_match_frame(const gmt_supp_t *s, const char *symbol, const char *module,
                          const char *file)
{
    return gmt_supp_match_names(s->pat, (size_t)s->n, symbol, module, file);
}

void gmt_supp_free(gmt_supp_t *s)
{
    if (s->text) munmap(s->text, s->text_bytes);
    s->text = NULL;
    s->text_bytes = 0;
    s->n = 0;
}

static int warned;

/* s->problem, set by the caller, said on standard error (once when quiet_repeat). */
static void say_problem(const gmt_supp_t *s, bool quiet_repeat, const char *path)
{
    if (!quiet_repeat || !__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        gmt_error("GPUMEMTRACE_SUPPRESSIONS='%s' %s", path, s->problem);
}

int gmt_supp_read_file(const char *path, char **text, size_t *mapped, size_t *len, char *why,
                       size_t why_len)
{
    *text = NULL;
    *mapped = *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(why, why_len, "cannot be opened (%s)", strerror(e));
        return -e;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        snprintf(why, why_len, "%s", strerror(-rc));
    } else if (!S_ISREG(st.st_mode)) {
        rc = -EINVAL;
        snprintf(why, why_len, "is not a regular file");
    } else if (st.st_size > (off_t)GMT_SUPP_MAX_FILE) {
        rc = -EFBIG;
        snprintf(why, why_len, "is larger than 1 MiB");
    }
    if (rc) {
        close(fd);
        return rc;
    }
    size_t want = (size_t)st.st_size, bytes = want + 1;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        close(fd);
        snprintf(why, why_len, "cannot be held in memory");
        return -ENOMEM;
    }
    char *t = m;
    size_t got = 0;
    while (got < want) {
        ssize_t k = read(fd, t + got, want - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            munmap(m, bytes);
            snprintf(why, why_len, "%s", strerror(e));
            return -e;
        }
        if (k == 0) break; /* shrank since fstat: use what is there */
        got += (size_t)k;
    }
    close(fd);
    /* A NUL byte is no part of a text file. A UTF-16 file (PowerShell's `>` and Out-File write
     * it) has one after every ASCII character, and split at them its "*foo*" left a pattern of
     * "*" alone, which suppressed every leak group: `check --suppressions` passed any leak. */
    if (memchr(t, 0, got)) {
        munmap(m, bytes);
        snprintf(why, why_len, "holds NUL bytes (UTF-16, or not text): save it as UTF-8 text");
        return -EINVAL;
    }
    t[got] = 0;
    *text = t;
    *mapped = bytes;
    *len = got;
    return 0;
}

int gmt_supp_load(gmt_supp_t *s, const char *path, bool quiet_repeat)
{
    memset(s, 0, sizeof *s);
    if (!path || !*path) return 0;
    char why[160];
    size_t got;
    int rc = gmt_supp_read_file(path, &s->text, &s->text_bytes, &got, why, sizeof why);
    if (rc) {
        snprintf(s->problem, sizeof s->problem, "%s; no suppressions used", why);
        say_problem(s, quiet_repeat, path);
        return rc;
    }
    gmt_supp_parse(s, s->text, got);
    if (s->ignored) {
        snprintf(s->problem, sizeof s->problem,
                 "has %d patterns past the first %d; those are not used", s->ignored,
                 GMT_SUPP_MAX_PATTERNS);
        say_problem(s, quiet_repeat, path);
    }
    return 0;
}
