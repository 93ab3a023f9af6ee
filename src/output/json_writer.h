/* json_writer.h - a streaming JSON writer into a file descriptor.
 *
 * Writes through a fixed buffer with write(2): no malloc, no stdio, so a report can be
 * produced from the tracer's writer thread while the process is in any state. Errors are
 * sticky: after a failed write every call is a no-op and jw_finish reports the errno.
 * Objects and arrays nest JW_MAX_DEPTH deep at most: opening one deeper is the error
 * EOVERFLOW.
 * Not thread-safe: one writer per report.
 */
#ifndef GMT_OUTPUT_JSON_WRITER_H
#define GMT_OUTPUT_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JW_MAX_DEPTH 32

typedef struct jw_s {
    int fd;
    int err; /* first errno, 0 while fine */
    int depth;
    bool first[JW_MAX_DEPTH];
    size_t len;
    char buf[1 << 16];
} jw_t;

void jw_init(jw_t *w, int fd);
/* key is NULL inside arrays, a member name inside objects. */
void jw_object_begin(jw_t *w, const char *key);
void jw_object_end(jw_t *w);
void jw_array_begin(jw_t *w, const char *key);
void jw_array_end(jw_t *w);
void jw_string(jw_t *w, const char *key, const char *s); /* s NULL writes null */
void jw_int(jw_t *w, const char *key, int64_t v);
void jw_uint(jw_t *w, const char *key, uint64_t v);
void jw_double(jw_t *w, const char *key, double v);
void jw_bool(jw_t *w, const char *key, bool v);
void jw_null(jw_t *w, const char *key);
void jw_hex(jw_t *w, const char *key, uint64_t v); /* "0x..." string */
/* Flushes; returns 0 or the first negative errno. */
int jw_finish(jw_t *w);

#endif
