/* report_recover.c - a report from a state file (docs/state.md): attach the file, then run the
 * one report writer over it. The writer reads the core through its accessors, which now point
 * into the file, so a recovered report is written by exactly the code that writes a live one.
 */
#include "report.h"

#include "core/track.h"

#include <stdio.h>
#include <string.h>

int gmt_report_recover(const char *state_path, int fd, char *err, size_t errlen)
{
    int rc = gmt_track_recover(state_path, err, errlen);
    if (rc) return rc;
    /* A state file without an end mark was left by a process that was killed (or is still
     * running): the report says "signal", with no signal name, since none was seen. One whose
     * image wrote its report and then called exec says "exec". */
    unsigned end = gmt_track_end_mark();
    rc = gmt_report_emit(fd,
                         end == GMT_REGION_END_EXIT   ? GMT_REASON_EXIT
                         : end == GMT_REGION_END_EXEC ? GMT_REASON_EXEC
                                                      : GMT_REASON_SIGNAL,
                         NULL, 0);
    if (rc) snprintf(err, errlen, "cannot write the report from %s: %s", state_path, strerror(-rc));
    return rc;
}
