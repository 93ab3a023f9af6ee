/* offline.h - naming the frames of a report written without libdw (the CLI side).
 *
 * A report written where libdw could not be used (a CUDA hook's out-of-memory report, a crash,
 * a machine without libdw) holds module path, build id and offset per native frame. Where the
 * module file is still there and its build id matches, this fills symbol (demangled), file,
 * line and inlined from it, and marks capture.symbols.resolver "offline". Frames that already
 * have a file are left alone, as are frames of a module whose build id differs (or that has
 * none) and frames without a build id (nothing proves the file here is the one that ran).
 */
#ifndef GMT_SYMBOLIZE_OFFLINE_H
#define GMT_SYMBOLIZE_OFFLINE_H

#include <stdbool.h>

#include <cJSON.h>

typedef struct gmt_offline_stats_s {
    unsigned frames;     /* native frames looked at */
    unsigned already;    /* frames that had a file already (an earlier symbolize): not looked up */
    unsigned named;      /* frames looked up that got file:line or a name */
    unsigned stale;      /* frames of modules whose build id differs */
    unsigned missing;    /* frames of modules that cannot be read here */
    unsigned bare;       /* frames their module, read here, has no name or line for (stripped) */
    unsigned unverified; /* frames without a build id (a v1 report): not looked up */
    /* Why nothing was looked at: the report was named when it was written (libdw), or it was
     * named offline before and libdw is not here to look up what that left unnamed. */
    bool named_when_written, no_libdw;
} gmt_offline_stats_t;

/* Symbolizes root (a parsed report) in place. 0 when done or nothing was needed (a report
 * written with libdw); -ENOSYS when libdw is not available (why says so). st may be NULL. A
 * report symbolized already ("offline") has the frames it left unnamed looked up again. */
int gmt_symbolize_report_json(cJSON *root, gmt_offline_stats_t *st, char *why, size_t why_len);

/* For the CLI's report loader: when text (len bytes) is a report whose frames were named
 * without libdw, a malloc'd copy with them named (its length in *out_len); NULL when there is
 * nothing to do or naming fails. Weak, so that the loader calls it only where it is linked
 * (the CLI, not the report reader's fuzz target). */
char *gmt_symbolize_report_text(const char *text, size_t len, size_t *out_len)
    __attribute__((weak));

#endif
