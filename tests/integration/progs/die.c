/* die.c - die_leak leaks 1 MiB, then the program ends by the signal named in argv[1]
 * ("TERM": raise(SIGTERM), "ABRT": abort(), "SEGV": raise(SIGSEGV); "PIPE", "ALRM", "USR2",
 * "XCPU", "VTALRM": that signal raised, each one whose default action ends the process). The
 * tracer must write the report (reason "signal" or "crash") before the signal takes its
 * course, and the exit status must still be the signal's.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <signal.h>
#include <string.h>

SITE void die_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

int main(int argc, char **argv)
{
    die_leak();
    const char *how = argc > 1 ? argv[1] : "TERM";
    if (strcmp(how, "TERM") == 0) raise(SIGTERM);
    if (strcmp(how, "ABRT") == 0) abort();
    if (strcmp(how, "SEGV") == 0) raise(SIGSEGV);
    static const struct {
        const char *name;
        int sig;
    } others[] = {{"PIPE", SIGPIPE},
                  {"ALRM", SIGALRM},
                  {"USR2", SIGUSR2},
                  {"XCPU", SIGXCPU},
                  {"VTALRM", SIGVTALRM}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (strcmp(how, others[i].name) == 0) raise(others[i].sig);
    return 0;
}
