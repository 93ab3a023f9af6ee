/* fork_child.c - pre_fork allocates and frees 4096 bytes, then the process forks; the child
 * leaks 1 MiB from child_leak and exits; the parent waits, leaks 2 MiB from parent_leak.
 * Each process's report holds only its own leak. With the argument "term" the child dies by
 * SIGTERM instead of exiting (run with GPUMEMTRACE_FOLLOW_FORK=0: the untraced child's signal
 * must not reach the parent's writer thread); with "usr1", by SIGUSR1 (the default snapshot
 * signal, left at its default by the program). With "exec PROG [RANK]" the child runs PROG
 * instead (with RANK in its environment when given): a program started under a traced one.
 * With "fds" the parent says how many pipes it holds before the fork (GMT_FACT parent_pipes=,
 * the tracer's only: the program opens none) and the child how many after its first CUDA call
 * (GMT_FACT child_pipes=): the same, as the child's tracer starts over with its own.
 * With "usr1_early" the child raises SIGUSR1 (the tracer's snapshot signal, its handler the
 * parent's) before its first CUDA call, then leaks and exits. With "fork_first" the parent
 * forks before any CUDA call of its own (no pre_fork), as a program starting GPU workers does.
 */
#include "common.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

SITE void pre_fork(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 4096));
    CK(cudaFree(p));
}

SITE void child_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

SITE void parent_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
}

/* The pipes among this process's open descriptors. */
static int count_pipes(void)
{
    DIR *d = opendir("/proc/self/fd");
    EXPECT(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        if (len > 0) {
            target[len] = '\0';
            n += strncmp(target, "pipe:", 5) == 0;
        }
    }
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    int term = 0;
    if (argc > 1 && strcmp(argv[1], "term") == 0) term = SIGTERM;
    if (argc > 1 && strcmp(argv[1], "usr1") == 0) term = SIGUSR1;
    int fds = argc > 1 && strcmp(argv[1], "fds") == 0;
    int usr1_early = argc > 1 && strcmp(argv[1], "usr1_early") == 0;
    const char *exec_prog = argc > 2 && strcmp(argv[1], "exec") == 0 ? argv[2] : NULL;
    int fork_first = argc > 1 && strcmp(argv[1], "fork_first") == 0;
    if (!fork_first) pre_fork();
    if (fds) FACT("parent_pipes", "%d", count_pipes());
    fflush(stdout);
    pid_t pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        if (exec_prog) {
            if (argc > 3) setenv("RANK", argv[3], 1);
            execl(exec_prog, exec_prog, (char *)NULL);
            _exit(127);
        }
        if (usr1_early) raise(SIGUSR1);
        child_leak();
        if (fds) FACT("child_pipes", "%d", count_pipes());
        if (term) raise(term);
        exit(0);
    }
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid);
    if (term)
        EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == term);
    else
        EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    FACT("parent_pid", "%d", (int)getpid());
    FACT("child_pid", "%d", (int)pid);
    parent_leak();
    return 0;
}
