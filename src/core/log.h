/* log.h - the tracer's one way to speak: a line on stderr prefixed "gpumemtrace:".
 *
 * Formats into a stack buffer and write(2)s it, so it allocates nothing and can be used from
 * hooks and from the report writer. Nothing is logged per allocation at the default level.
 * A message is always one line: control characters and bytes that are not UTF-8 in it (from a
 * path or a value of the environment) are shown escaped, by the rule of gmt_escape_append.
 */
#ifndef GMT_CORE_LOG_H
#define GMT_CORE_LOG_H

#include <stdbool.h>
#include <stddef.h>

typedef enum gmt_log_level_e {
    GMT_LOG_QUIET = 0,
    GMT_LOG_INFO = 1,
    GMT_LOG_DEBUG = 2,
} gmt_log_level_t;

/* Errors are printed even at "quiet": they are the "one clear line" the user must see. */
#define GMT_LOG_ERROR (-1)

void gmt_log_set_level(gmt_log_level_t level);
gmt_log_level_t gmt_log_get_level(void);
void gmt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes len bytes at p to stderr, as every line of the tracer's is written: a stderr whose
 * reader went away (`prog 2>&1 | head`) gets EPIPE and raises no SIGPIPE, which at its default
 * would end a program that untraced writes nothing more there (integration.stderr_closed).
 * Async-signal-safe; errno may change. */
void gmt_log_write(const char *p, size_t len);

/* The one rule for showing untrusted text (a path, a value, a report's strings) on one terminal
 * line, shared by the log and the gpumemtrace command: appends the n bytes at s to out (capacity
 * cap, *used bytes in it, kept NUL-terminated), with control characters (C0, DEL, and C1 written
 * as UTF-8) as C escapes (\n, \r, \t, else \xHH, and \u0080 to \u009f) and each byte that is
 * not part of well-formed UTF-8 as \xHH; everything else, backslashes included, is copied.
 * Nothing is cut inside a character or an escape: returns false, with what fitted, when the
 * whole did not fit in cap - 1 bytes. Allocates nothing and calls nothing but memcpy, so it may
 * run in a signal handler. */
bool gmt_escape_append(char *out, size_t cap, size_t *used, const char *s, size_t n);
/* Bytes of the well-formed UTF-8 sequence of two to four bytes at p (at most n bytes read):
 * no overlong form, no surrogate, nothing past U+10FFFF; 0 when p does not start one (ASCII
 * included). The rule of gmt_escape_append, and of the report reader's check (cli). */
size_t gmt_utf8_seq(const unsigned char *p, size_t n);
/* Whether gmt_escape_append would change the n bytes at s. */
bool gmt_escape_needed(const char *s, size_t n);

#define gmt_error(...) gmt_log(GMT_LOG_ERROR, __VA_ARGS__)
#define gmt_info(...)  gmt_log(GMT_LOG_INFO, __VA_ARGS__)
#define gmt_debug(...) gmt_log(GMT_LOG_DEBUG, __VA_ARGS__)

#endif
