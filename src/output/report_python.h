/* report_python.h - the report's Python pieces: one Python frame object, a stack's "python"
 * status and capture.python. Kept apart from report.c so its writer only calls in here.
 * Runs in the report writer (never in a hook); allocates nothing.
 */
#ifndef GMT_OUTPUT_REPORT_PYTHON_H
#define GMT_OUTPUT_REPORT_PYTHON_H

#include "json_writer.h"

#include <stdbool.h>
#include <stdint.h>

/* True when frame is a Python frame word; it is then written as
 * {"type":"python","file","function","line"} (null where unknown). */
bool gmt_report_python_frame(jw_t *w, uint64_t frame);

/* True when frame is a Python frame word; then *function and *file are its names (NULL where
 * unknown), for suppression patterns. */
bool gmt_report_python_names(uint64_t frame, const char **function, const char **file);

/* "python": the status of the stack frames[0..n). */
void gmt_report_python_stack_status(jw_t *w, const uint64_t *frames, uint32_t n);

/* "python": {"status", "version"} for capture, with the counters (docs/report.md). */
void gmt_report_python_capture(jw_t *w);

#endif
