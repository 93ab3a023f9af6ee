/* suppress.h - the suppressions file (GPUMEMTRACE_SUPPRESSIONS, and `gpumemtrace check
 * --suppressions`): fnmatch(3) patterns, one per line, '#' comments, matched against the names
 * of each frame the report shows (gmt_supp_match_names: the one matcher of the library's
 * report writer and of the CLI, so a pattern means the same in both).
 *
 * The file is read only when it is a regular file of at most GMT_SUPP_MAX_FILE bytes. It is
 * opened with O_NONBLOCK (so a FIFO or a device cannot hang the report) and checked with
 * fstat on the open descriptor (so a path that changes between a check and the open cannot
 * smuggle in something else); anything else is refused with one log line saying why and the
 * report is written without suppressions. Its text lives in memory mapped for the report and
 * unmapped by gmt_supp_free: no malloc. Functions return 0 or a negative errno.
 */
#ifndef GMT_OUTPUT_SUPPRESS_H
#define GMT_OUTPUT_SUPPRESS_H

#include <stdbool.h>
#include <stddef.h>

#define GMT_SUPP_MAX_FILE     (1u << 20)
#define GMT_SUPP_MAX_PATTERNS 256

typedef struct gmt_supp_s {
    char *text; /* mapped copy of the file, patterns NUL-separated */
    size_t text_bytes;
    const char *pat[GMT_SUPP_MAX_PATTERNS];
    int n;
    int ignored; /* patterns past GMT_SUPP_MAX_PATTERNS */
    /* What gmt_supp_load said on standard error (the file refused, or patterns past the
     * limit), whether or not it said it this time; "" when nothing went wrong. */
    char problem[200];
} gmt_supp_t;

/* Loads path (NULL or "": no suppressions, returns 0). On failure *s holds no patterns, one
 * line was logged (the first time only, when quiet_repeat is true) and a negative errno is
 * returned: -EINVAL not a regular file, -EFBIG too large, or open/read's errno. */
int gmt_supp_load(gmt_supp_t *s, const char *path, bool quiet_repeat);

/* The one safe way to read a suppressions file (the library's and the CLI's): opened
 * non-blocking (a FIFO never hangs), only a regular file of at most GMT_SUPP_MAX_FILE bytes,
 * copied into a fresh private mapping of *mapped bytes, NUL-terminated after its *len bytes;
 * the caller munmaps *text. 0, or a negative errno with a phrase in why ("is not a regular
 * file", "is larger than 1 MiB", "cannot be opened (...)", "holds NUL bytes (...)": a UTF-16 file,
 * ...). Logs nothing. */
int gmt_supp_read_file(const char *path, char **text, size_t *mapped, size_t *len, char *why,
                       size_t why_len);

/* Splits text (len bytes, modified in place: lines become NUL-terminated patterns; a NUL byte
 * in the file ends a line; blanks around a pattern are dropped; an empty line or one starting
 * with '#' is no pattern; a UTF-8 byte order mark at the start is skipped) into pat[0..max).
 * Returns how many patterns the text holds, which may be more than max (those past max are not
 * stored). The caller leaves text[len] writable (gmt_supp_read_file's buffers are one byte longer).
 * The one parser of the library and the CLI. */
size_t gmt_supp_split(char *text, size_t len, const char **pat, size_t max);

/* Splits text (as gmt_supp_split) into s's patterns, the first GMT_SUPP_MAX_PATTERNS, counting
 * the rest in s->ignored. s->text is not touched. */
void gmt_supp_parse(gmt_supp_t *s, char *text, size_t len);

/* True when one of pat[0..n) matches one of the names of a frame (each may be NULL): symbol
 * (a native symbol, or a Python frame's function), module path, the module's base name, and
 * source file (a native frame's, as libdw read it from DWARF, or a Python frame's file). */
bool gmt_supp_match_names(const char *const *pat, size_t n, const char *symbol, const char *module,
                          const char *file);

/* gmt_supp_match_names with s's patterns. */
bool gmt_supp_match_frame(const gmt_supp_t *s, const char *symbol, const char *module,
                          const char *file);

void gmt_supp_free(gmt_supp_t *s);

#endif
