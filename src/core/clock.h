/* clock.h - monotonic and wall-clock time in nanoseconds (vDSO, no syscall, signal-safe). */
#ifndef GMT_CORE_CLOCK_H
#define GMT_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gmt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t gmt_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
