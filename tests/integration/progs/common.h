/* common.h - helpers shared by the integration test programs.
 *
 * Each program is the ground truth of one case in ../check_report.py: the functions that
 * allocate are named, never inlined and exported (the programs are built with -O0, -fno-inline
 * and -rdynamic), so the report's stacks name them. A CUDA call that fails unexpectedly ends the
 * program with status 90 and a message, so a stand-in problem never looks like a tracer bug.
 * Facts only the program knows (a pitch, a child's pid) are printed as "GMT_FACT key=value".
 */
#ifndef GMT_TEST_COMMON_H
#define GMT_TEST_COMMON_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define SITE __attribute__((noinline, used, visibility("default")))

#define CK(call)                                                                                   \
    do {                                                                                           \
        long rc_ = (long)(call);                                                                   \
        if (rc_ != 0) {                                                                            \
            fprintf(stderr, "%s:%d: %s returned %ld\n", __FILE__, __LINE__, #call, rc_);           \
            exit(90);                                                                              \
        }                                                                                          \
    } while (0)

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__, #cond);         \
            exit(91);                                                                              \
        }                                                                                          \
    } while (0)

#define FACT(key, fmt, ...) printf("GMT_FACT " key "=" fmt "\n", __VA_ARGS__)

#define MIB (1024ul * 1024ul)

/* Until an allocation of GMT_STANDIN_HOLD_BYTES holds the stand-in driver's lock (bounded:
 * 60 s), as the stand-in's gmt_standin_holding() says; the driver is loaded global by the
 * runtime at the program's first CUDA call. A fixed sleep for the holding thread to get there
 * could run out on a loaded machine (under a sanitizer), and the case then did not test what
 * it names. */
static inline void gmt_wait_for_standin_hold(void)
{
    int (*holding)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "gmt_standin_holding");
    EXPECT(holding != NULL);
    for (int ms = 0; !holding(); ms++) {
        EXPECT(ms < 60000);
        usleep(1000);
    }
}

#endif
