/* gpumemtrace.h - the public API of libgpumemtrace.so.
 *
 * A program that is traced (LD_PRELOAD=libgpumemtrace.so or CUDA_INJECTION64_PATH) can ask
 * the tracer for a report at a moment of its choosing. Declare the functions weak, or look
 * them up with dlsym(RTLD_DEFAULT, "gmt_snapshot"), so that the program still runs untraced.
 *
 * All functions are thread-safe. Strings returned are owned by the library and live for the
 * life of the process.
 */
#ifndef GPUMEMTRACE_H
#define GPUMEMTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

/* GPUMEMTRACE_VERSION_MAJOR/_MINOR/_PATCH/_STRING and GPUMEMTRACE_REPORT_SCHEMA_VERSION,
 * written by CMake from the project's version. */
#include "gpumemtrace/version.h"

/* The library's version, "MAJOR.MINOR.PATCH". */
const char *gmt_version(void);

/* 1 when the tracer is recording in this process, 0 when it is off (init failed, or the
 * process was forked with GPUMEMTRACE_FOLLOW_FORK=0). */
int gmt_active(void);

/* Writes a snapshot report now, beside GPUMEMTRACE_OUTPUT (".snapshot-<n>" before ".json"),
 * or to `path` when it is not NULL. Returns 0, or a negative errno when the report could not
 * be written (the reason is also logged). Must not be called from a signal handler: send
 * GPUMEMTRACE_SNAPSHOT_SIGNAL instead. */
int gmt_snapshot(const char *path);

#ifdef __cplusplus
}
#endif

#endif
