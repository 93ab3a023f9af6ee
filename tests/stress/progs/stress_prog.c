/* stress_prog.c - the programs of the stress cases (../run_stress.py), one per subcommand:
 *
 *   random SEED N   N random CUDA calls (allocations of every size including 0, good, double,
 *                   bogus, NULL, interior and wrong-kind frees). Prints one line per call: its
 *                   return value and what the returned pointer is relative to earlier ones (so
 *                   the output is the same with and without the tracer), then the live set the
 *                   program knows: GMT_FACT live_count / live_bytes.
 *   storm usr1|term threads allocate while another thread sends SIGUSR1 to the process (300
 *                   in a burst, then one every 0.5 ms); "term" ends with SIGTERM raised during
 *                   the storm, "usr1" returns from main while it goes on.
 *   exitterm        threads allocate; a thread sends SIGTERM in a loop while main calls exit.
 *   termexit        threads allocate; one of them gets SIGTERM, and once the signal's report
 *                   is being written (its temporary file is in GPUMEMTRACE_OUTPUT's folder)
 *                   main calls exit(0).
 *   twosig          threads allocate; SIGTERM, then SIGINT 200 us later, during the report.
 *   forks N         4 threads allocate (2 of them from code no loaded object holds, as a JIT's,
 *                   whose every stack walk asks the loader) and SIGUSR1 asks for snapshots every
 *                   3 ms while main forks N children one after another; each child leaks 1 MiB
 *                   and exits. Prints GMT_FACT hung=<children killed after 10 s>.
 *   fsize BYTES     RLIMIT_FSIZE = BYTES (SIGXFSZ ignored), leaks 1 MiB, exits 0: no report fits.
 *   exit _exit|_Exit|exit  leaks 3 MiB in exit_leak, then ends the named way with status 3.
 *   leak            leaks 1 MiB in simple_leak, returns 0.
 *   none            no CUDA call at all.
 */
#define _GNU_SOURCE
#include "../../integration/progs/common.h"

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int g_stop;
/* Threads that have begun running: the fork storm waits for all, since a thread still being
 * started (ASan's thread start calls malloc) when fork() is called is the program's own
 * hazard under GCC 12's ASan, whose allocator lock a child would inherit held. */
static int g_running;

static void wait_running(int n)
{
    while (__atomic_load_n(&g_running, __ATOMIC_ACQUIRE) < n)
        usleep(1000);
}

/* ---- allocations from code no loaded object holds (a JIT's) ---- */

typedef cudaError_t (*thunk_fn)(void **p, size_t size, cudaError_t (*fn)(void **, size_t));
static thunk_fn g_thunk;

/* x86-64: fn(p, size) called from anonymous executable memory, so the walk of every such
 * allocation meets a return address that no loaded object holds: the tracer's unwinder
 * cannot cache a rule for it and asks the loader (dl_iterate_phdr) at each one. */
static void make_thunk(void)
{
    static const unsigned char code[] = {
        0x48, 0x83, 0xec, 0x08, /* sub $8, %rsp (the call's stack aligned) */
        0xff, 0xd2,             /* call *%rdx */
        0x48, 0x83, 0xc4, 0x08, /* add $8, %rsp */
        0xc3,                   /* ret */
    };
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT(m != MAP_FAILED);
    memcpy(m, code, sizeof code);
    CK(mprotect(m, 4096, PROT_READ | PROT_EXEC));
    g_thunk = (thunk_fn)m;
}

static cudaError_t malloc_4k(void **p, size_t size)
{
    return cudaMalloc(p, size);
}

/* arg NULL: cudaMalloc called from here; else through the thunk (make_thunk first). */
static void *churn(void *arg)
{
    bool jit = arg != NULL;
    __atomic_add_fetch(&g_running, 1, __ATOMIC_ACQ_REL);
    while (!g_stop) {
        void *p = NULL;
        cudaError_t rc = jit ? g_thunk(&p, 4096, malloc_4k) : cudaMalloc(&p, 4096);
        if (rc == cudaSuccess) cudaFree(p);
    }
    return NULL;
}

static void start_churn(pthread_t *th, int n)
{
    for (int i = 0; i < n; i++)
        CK(pthread_create(&th[i], NULL, churn, NULL));
}

static void stop_churn(pthread_t *th, int n)
{
    g_stop = 1;
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

/* ---- random ---- */

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define MAXA 4096
typedef struct alloc_s {
    uintptr_t p;
    size_t size;
    int host;
    int live;
} alloc_t;
static alloc_t all[MAXA];
static int nall;

/* Which earlier allocation (freed or live) had this address: -1 none. */
static int same_address(uintptr_t p, int upto)
{
    for (int i = upto - 1; i >= 0; i--)
        if (all[i].p == p) return i;
    return -1;
}

static int pick(int live, int host)
{
    int cand[MAXA], n = 0;
    for (int i = 0; i < nall; i++)
        if (all[i].p && all[i].live == live && (host < 0 || all[i].host == host)) cand[n++] = i;
    return n ? cand[next_rand() % (uint64_t)n] : -1;
}

static void mark_freed(uintptr_t p)
{
    for (int i = 0; i < nall; i++)
        if (all[i].live && all[i].p == p) all[i].live = 0;
}

SITE void random_calls(int n)
{
    static const size_t sizes[] = {0, 1, 255, 4096, 1 << 16, 3 << 20};
    for (int step = 0; step < n; step++) {
        int op = (int)(next_rand() % 10);
        if (nall >= MAXA - 1) op = 3;
        int rc = 0, target = -1;
        uintptr_t arg = 0;
        switch (op) {
        case 0:
        case 1:
        case 2: { /* allocate, device or pinned host */
            void *p = NULL;
            size_t size = sizes[next_rand() % 6];
            int host = op == 2;
            rc = host ? cudaMallocHost(&p, size) : cudaMalloc(&p, size);
            alloc_t *a = &all[nall];
            *a = (alloc_t){(uintptr_t)p, size, host, rc == 0 && p};
            /* Pinned host memory comes from mmap, whose address reuse depends on the rest of
             * the process: only device addresses (the stand-in's own arena) are compared. */
            int reuse = !p ? -2 : host ? -3 : same_address((uintptr_t)p, nall);
            printf("%d alloc%s size=%zu rc=%d ptr=%s reuse=%d\n", step, host ? "host" : "", size,
                   rc, p ? "set" : "null", reuse);
            nall++;
            continue;
        }
        case 3: /* a good free of the right kind */
            target = pick(1, -1);
            if (target < 0) break;
            arg = all[target].p;
            rc = all[target].host ? cudaFreeHost((void *)arg) : cudaFree((void *)arg);
            break;
        case 4: /* double free (device: host addresses may be reused by mmap) */
            target = pick(0, 0);
            if (target < 0) break;
            arg = all[target].p;
            rc = all[target].host ? cudaFreeHost((void *)arg) : cudaFree((void *)arg);
            break;
        case 5: /* bogus */
            arg = (uintptr_t)0x10000000000ull + (next_rand() % 1000) * 8;
            rc = (next_rand() & 1) ? cudaFree((void *)arg) : cudaFreeHost((void *)arg);
            break;
        case 6: /* NULL */
            rc = (next_rand() & 1) ? cudaFree(NULL) : cudaFreeHost(NULL);
            break;
        case 7: /* interior */
            target = pick(1, -1);
            if (target < 0 || all[target].size < 2) break;
            arg = all[target].p + 1;
            rc = all[target].host ? cudaFreeHost((void *)arg) : cudaFree((void *)arg);
            break;
        default: /* wrong kind */
            target = pick(1, -1);
            if (target < 0) break;
            arg = all[target].p;
            rc = all[target].host ? cudaFree((void *)arg) : cudaFreeHost((void *)arg);
            break;
        }
        if (rc == 0 && arg) mark_freed(arg);
        printf("%d free op=%d target=%d rc=%d\n", step, op, target, rc);
    }
    long count = 0, bytes = 0;
    for (int i = 0; i < nall; i++)
        if (all[i].live && all[i].size > 0) count++, bytes += (long)all[i].size;
    FACT("live_count", "%ld", count);
    FACT("live_bytes", "%ld", bytes);
}

/* ---- storms ---- */

/* SIGUSR1s the storm has sent: main goes on only once one was, so that a run whose storm
 * thread was not scheduled before main returned (a loaded CI machine) is not read as a burst
 * that gave no snapshot. */
static int storm_sent;

static void *usr1_storm(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++) {
        kill(getpid(), SIGUSR1);
        __atomic_add_fetch(&storm_sent, 1, __ATOMIC_RELEASE);
        if (i % 50 == 0) usleep(2000);
    }
    for (;;) { /* and on, through the exit report */
        kill(getpid(), SIGUSR1);
        usleep(500);
    }
    return NULL;
}

SITE void storm_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 2 * MIB));
}

static void storm(const char *mode)
{
    pthread_t th[4], s;
    storm_leak();
    start_churn(th, 4);
    CK(pthread_create(&s, NULL, usr1_storm, NULL));
    while (__atomic_load_n(&storm_sent, __ATOMIC_ACQUIRE) == 0)
        usleep(100);
    if (strcmp(mode, "term") == 0) {
        usleep(20000);
        raise(SIGTERM); /* dies here, by SIGTERM */
    }
    usleep(30000);
    stop_churn(th, 4); /* returns from main while the storm goes on */
}

static void *term_loop(void *arg)
{
    (void)arg;
    for (;;) {
        kill(getpid(), SIGTERM);
        usleep(200);
    }
    return NULL;
}

/* Whether a report's temporary file (".NAME.tmp-...") is in dir. */
static int temp_file_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));)
        found = e->d_name[0] == '.' && strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return found;
}

/* ---- forks ---- */

SITE void child_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

static void *usr1_ticks(void *arg)
{
    (void)arg;
    __atomic_add_fetch(&g_running, 1, __ATOMIC_ACQ_REL);
    while (!g_stop) {
        kill(getpid(), SIGUSR1); /* snapshots being written while the forks happen */
        usleep(3000);
    }
    return NULL;
}

/* Where a hung child waits, on stderr (run_stress.py shows it): the parent's threads by id
 * (a lock's owner in the child is one of them), then each thread of the child by gdb where
 * there is one, and the owner of the loader's lock that fork() leaves held (docs/security.md,
 * "Fork"): a wait inside the sanitizer's runtime shows as __sanitizer frames, one in the
 * tracer as gpumemtrace's. */
static void describe_hung(pid_t pid)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "{ echo '== hung fork child %d; the threads of its parent %d:'; "
             "for t in /proc/%d/task/*; do echo \"  ${t##*/} $(cat $t/comm)\"; done; "
             "command -v gdb >/dev/null && env -u LD_PRELOAD timeout 60 gdb -p %d -batch "
             "-ex 'thread apply all bt 40' "
             "-ex 'p _rtld_global._dl_load_write_lock.mutex.__data.__owner'; "
             "echo '== end of hung child %d'; } >&2 2>/dev/null",
             (int)pid, (int)getpid(), (int)getpid(), (int)pid, (int)pid);
    if (system(cmd) != 0) fprintf(stderr, "stress_prog: could not describe child %d\n", (int)pid);
}

static void forks(int n)
{
    pthread_t th[4], ticks;
    storm_leak();
    make_thunk();
    start_churn(th, 2);
    for (int i = 2; i < 4; i++)
        CK(pthread_create(&th[i], NULL, churn, &g_thunk));
    CK(pthread_create(&ticks, NULL, usr1_ticks, NULL));
    wait_running(5);
    int hung = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            child_leak();
            exit(0);
        }
        EXPECT(pid > 0);
        int status = 0, waited = 0;
        while (waitpid(pid, &status, WNOHANG) == 0) {
            if (++waited > 1000) { /* 10 s */
                describe_hung(pid);
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                hung++;
                break;
            }
            usleep(10000);
        }
        if (!hung) EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    stop_churn(th, 4);
    pthread_join(ticks, NULL);
    FACT("hung", "%d", hung);
}

SITE void simple_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, MIB));
}

static void exit_from_handler(int sig)
{
    (void)sig;
    _exit(3);
}

SITE void exit_leak(void)
{
    void *p = NULL;
    CK(cudaMalloc(&p, 3 * MIB));
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) return 2;
    const char *cmd = argv[1];
    if (strcmp(cmd, "random") == 0 && argc == 4) {
        rng ^= strtoull(argv[2], NULL, 10) * 0x9e3779b97f4a7c15ull;
        random_calls(atoi(argv[3]));
    } else if (strcmp(cmd, "storm") == 0 && argc == 3) {
        storm(argv[2]);
    } else if (strcmp(cmd, "exitterm") == 0) {
        pthread_t th[2], t;
        storm_leak();
        start_churn(th, 2);
        usleep(10000);
        CK(pthread_create(&t, NULL, term_loop, NULL));
        exit(0);
    } else if (strcmp(cmd, "termexit") == 0) {
        /* The signal goes to a churning thread (its handler waits for the writer thread's
         * report), so that main is free to call exit while that report is written. */
        pthread_t th[2];
        storm_leak();
        start_churn(th, 2);
        usleep(10000);
        const char *out = getenv("GPUMEMTRACE_OUTPUT");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", out ? out : "./x");
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        else
            snprintf(dir, sizeof dir, ".");
        CK(pthread_kill(th[0], SIGTERM));
        for (int i = 0; i < 50000 && !temp_file_in(dir); i++)
            usleep(100);
        exit(0);
    } else if (strcmp(cmd, "twosig") == 0) {
        pthread_t th[2];
        storm_leak();
        start_churn(th, 2);
        usleep(10000);
        kill(getpid(), SIGTERM);
        usleep(200);
        kill(getpid(), SIGINT);
        for (;;)
            pause();
    } else if (strcmp(cmd, "forks") == 0 && argc == 3) {
        forks(atoi(argv[2]));
    } else if (strcmp(cmd, "fsize") == 0 && argc == 3) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {(rlim_t)atol(argv[2]), (rlim_t)atol(argv[2])};
        CK(setrlimit(RLIMIT_FSIZE, &rl));
        simple_leak();
    } else if (strcmp(cmd, "exit") == 0 && argc == 3) {
        exit_leak();
        fflush(stdout);
        if (strcmp(argv[2], "_exit") == 0) _exit(3);
        if (strcmp(argv[2], "_Exit") == 0) _Exit(3);
        if (strcmp(argv[2], "handler") == 0) { /* _exit from the program's own handler */
            signal(SIGUSR2, exit_from_handler);
            raise(SIGUSR2);
        }
        exit(3);
    } else if (strcmp(cmd, "ooms") == 0 && argc == 3) {
        simple_leak();
        for (int i = 0; i < atoi(argv[2]); i++) {
            void *p = NULL;
            EXPECT(cudaMalloc(&p, 2048 * MIB) == cudaErrorMemoryAllocation);
        }
    } else if (strcmp(cmd, "leak") == 0) {
        simple_leak();
    } else if (strcmp(cmd, "none") == 0) {
        return 0;
    } else {
        return 2;
    }
    return 0;
}
