/* gpumemtrace.h - the public API of libgpumemtrace.so.
 *
 * A program that is traced (LD_PRELOAD=libgpumemtrace.so or CUDA_INJECTION64_PATH) can ask
 * the tracer for a report at a moment of its choosing. With GCC or Clang the functions are
 * declared weak here, so a program that includes this header links without the library and
 * still runs untraced; a function's address is then null, so test it before the call:
 *
 *     if (gmt_snapshot) gmt_snapshot(NULL);
 *
 * That holds for a position-independent executable (the default of most distributions' GCC
 * and Clang) and for a shared library. An executable linked with -no-pie has its weak
 * references settled when it is linked, to null where no library defines them, so it never
 * sees the preloaded tracer's: there, or with another compiler, look the functions up with
 * dlsym(RTLD_DEFAULT, "gmt_snapshot"). Define GPUMEMTRACE_NO_WEAK before the include for
 * plain declarations (a program linked with -lgpumemtrace).
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

#if !defined(GPUMEMTRACE_NO_WEAK) && (defined(__GNUC__) || defined(__clang__))
#define GPUMEMTRACE_API __attribute__((weak))
#else
#define GPUMEMTRACE_API
#endif

/* The library's version, "MAJOR.MINOR.PATCH". */
GPUMEMTRACE_API const char *gmt_version(void);

/* 1 when the tracer is recording in this process, 0 when it is off (init failed, or the
 * process was forked with GPUMEMTRACE_FOLLOW_FORK=0). */
GPUMEMTRACE_API int gmt_active(void);

/* Writes a snapshot report now, beside GPUMEMTRACE_OUTPUT (".snapshot-<n>" before ".json"),
 * or to `path` when it is not NULL. Returns 0, or a negative errno when the report could not
 * be written (the reason is also logged). Must not be called from a signal handler: send
 * GPUMEMTRACE_SNAPSHOT_SIGNAL instead. */
GPUMEMTRACE_API int gmt_snapshot(const char *path);

#ifdef __cplusplus
}
#endif

#endif
