/* cmd_run.c - `gpumemtrace run [options] -- CMD [ARGS...]`: run a program with the tracer.
 *
 * Turns the options into the GPUMEMTRACE_* variables the library reads (docs/cli.md lists the
 * mapping), puts libgpumemtrace.so first in LD_PRELOAD and then execs CMD in place of this
 * process. Because nothing stays behind to wait for it, CMD's exit status and any signal that
 * ends it reach the caller unchanged, and CMD keeps the tool's pid, environment, terminal and
 * open files. Option values are checked here, before the exec, so a typo is an immediate error
 * (exit 2) rather than a warning from inside the traced program.
 */
#include "cli/cli.h"
#include "core/config.h"
#include "core/preload_list.h"
#include "output/report.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIB_NAME "libgpumemtrace.so"

extern char **environ;

/* Where an installed or unpacked tool finds the library, relative to its own directory, in the
 * order they are tried. The build tree puts both in one directory; install() puts the CLI in
 * bin/ and the library in lib/ (or lib64/, or lib/<multiarch>/ under a Debian-style prefix).
 * The help and the not-found error print this list, so neither can drift from it. */
static const char *const lib_dirs[] = {
    "../lib",
    ".",
    "../lib64",
#if defined(__x86_64__)
    "../lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
    "../lib/aarch64-linux-gnu",
#endif
};
#define NLIB_DIRS (sizeof lib_dirs / sizeof lib_dirs[0])

enum {
    OPT_DEPTH = 256,
    OPT_NO_PYTHON,
    OPT_BACKEND,
    OPT_MIN_BYTES,
    OPT_TOP,
    OPT_STATE,
    OPT_SUPPRESSIONS,
    OPT_LOG,
    OPT_SNAPSHOT_SIGNAL,
    OPT_NO_OOM_REPORT,
    OPT_NO_FOLLOW_FORK,
    OPT_NO_FOLLOW_EXEC,
    OPT_NO_FRAMEWORK_CACHE,
};

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"depth", required_argument, NULL, OPT_DEPTH},
    {"no-python", no_argument, NULL, OPT_NO_PYTHON},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"min-bytes", required_argument, NULL, OPT_MIN_BYTES},
    {"top", required_argument, NULL, OPT_TOP},
    {"state", required_argument, NULL, OPT_STATE},
    {"suppressions", required_argument, NULL, OPT_SUPPRESSIONS},
    {"log", required_argument, NULL, OPT_LOG},
    {"snapshot-signal", required_argument, NULL, OPT_SNAPSHOT_SIGNAL},
    {"no-oom-report", no_argument, NULL, OPT_NO_OOM_REPORT},
    {"no-follow-fork", no_argument, NULL, OPT_NO_FOLLOW_FORK},
    {"no-follow-exec", no_argument, NULL, OPT_NO_FOLLOW_EXEC},
    {"no-framework-cache", no_argument, NULL, OPT_NO_FRAMEWORK_CACHE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void gmt_cli_run_help(FILE *to)
{
    fprintf(to,
            "Usage: gpumemtrace run [options] -- CMD [ARGS...]\n"
            "\n"
            "Runs CMD with libgpumemtrace.so preloaded and exits with CMD's status. The\n"
            "options set the GPUMEMTRACE_* variables; the rest of the environment passes\n"
            "through.\n"
            "\n"
            "  -o, --output PATH         report path; %%p pid, %%r rank, %%h host, %%t time\n"
            "                            (GPUMEMTRACE_OUTPUT, default gpumemtrace-%%p.json)\n"
            "      --depth N             native frames per stack, 0-%d; 0 turns stacks off\n"
            "      --no-python           do not capture Python frames\n"
            "      --backend B           auto, cupti or hooks\n"
            "      --min-bytes SIZE      smaller allocations are counted but get no stack\n"
            "                            (SIZE: bytes, or B/K/M/G/T with KiB/KB forms)\n"
            "      --top N               stacks listed per report section\n"
            "      --state PATH          memory-mapped state file, recoverable after SIGKILL\n"
            "      --suppressions FILE   frame patterns left out of leak verdicts\n"
            "      --log LEVEL           quiet, info or debug\n"
            "      --snapshot-signal SIG signal that writes a snapshot report (or 'none')\n"
            "      --no-oom-report       no report when an allocation runs out of memory\n"
            "      --no-follow-fork      do not trace forked children\n"
            "      --no-follow-exec      do not trace programs CMD execs\n"
            "      --no-framework-cache  turn off PyTorch's and JAX's caching allocators, so\n"
            "                            every tensor gets its own stack\n"
            "  -h, --help                this help\n"
            "\n"
            "The library is GPUMEMTRACE_LIBRARY when set (and not empty). Otherwise the first\n"
            "readable " LIB_NAME " found in these directories, relative to the one this\n"
            "tool's executable is in (/proc/self/exe, links resolved), in this order:\n"
            "  ",
            GMT_MAX_STACK_DEPTH);
    for (size_t i = 0; i < NLIB_DIRS; i++)
        fprintf(to, "%s%s/", i ? ", " : "", lib_dirs[i]);
    fputs("\n", to);
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, for any bad usage of run. Returns -EINVAL. */
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gmt_cli_verror("run: ", " (see 'gpumemtrace help run')", fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static int set_env(const char *name, const char *value)
{
    if (setenv(name, value, 1) != 0) {
        gmt_cli_error("run: cannot set %s: %s", name, strerror(errno));
        return -errno;
    }
    return 0;
}

/* var's value v against the working directory now, '%' in the directory doubled (the library
 * reads "%%" as a '%' in both paths), a '/' added when dir; what ("the report", "the state
 * file") names it in a line. The library takes a relative path against its process's working
 * directory as it loads, and a process of the job started or exec'd after a change of
 * directory (a script's cd, then the program) would use another file. It takes a path of
 * GMT_PATH_MAX - 1 bytes at most, and falls back from inside CMD for a longer one: said here,
 * before CMD runs. 0, or -1 after a line. */
static int absolute_path(const char *var, const char *v, bool dir, const char *what)
{
    if (v[0] == '/') {
        if (strlen(v) < GMT_PATH_MAX) return 0;
        gmt_cli_error("run: %s's path is too long (%zu bytes; at most %d)", what, strlen(v),
                      GMT_PATH_MAX - 1);
        return -1;
    }
    char cwd[PATH_MAX], out[2 * PATH_MAX + 2];
    if (!getcwd(cwd, sizeof cwd)) {
        gmt_cli_error("run: cannot read the working directory (%s) to place %s", strerror(errno),
                      what);
        return -1;
    }
    size_t n = 0;
    for (const char *c = cwd; *c; c++) {
        if (*c == '%') out[n++] = '%';
        out[n++] = *c;
    }
    int w = snprintf(out + n, sizeof out - n, "%s%s%s", n > 1 ? "/" : "", v, dir ? "/" : "");
    if (w < 0 || n + (size_t)w >= GMT_PATH_MAX) {
        gmt_cli_error("run: %s's path in %s is too long (%zu bytes; at most %d)", what,
                      gmt_tty(cwd), n + (size_t)(w < 0 ? 0 : w), GMT_PATH_MAX - 1);
        return -1;
    }
    return set_env(var, out) ? -1 : 0;
}

/* The report's name (-o, else GPUMEMTRACE_OUTPUT, else the default) made absolute. */
static int output_absolute(void)
{
    const char *v = getenv("GPUMEMTRACE_OUTPUT");
    if (!v || !*v) v = "gpumemtrace-%p.json";
    /* A directory's name, by the library's rule, keeps saying so with a '/': the library takes
     * a name holding a '%' (the doubled one of a working directory like a%b) for a file's
     * otherwise. */
    bool dir = v[0] != '/' && v[strlen(v) - 1] != '/' && gmt_report_name_is_dir(v);
    return absolute_path("GPUMEMTRACE_OUTPUT", v, dir, "the report");
}

/* The state file's name (--state, else GPUMEMTRACE_STATE; none when empty) made absolute, as
 * the report's: `gpumemtrace top NAME` in the directory run was started in finds the file of
 * a program a script started after a cd, not one the script's shell left there. */
static int state_absolute(void)
{
    const char *v = getenv("GPUMEMTRACE_STATE");
    return v && *v ? absolute_path("GPUMEMTRACE_STATE", v, false, "the state file") : 0;
}

/* A relative GPUMEMTRACE_SUPPRESSIONS from the environment made absolute as --suppressions is
 * (a plain path: no '%' in it is doubled): the library takes it against its own working
 * directory as it loads, and a program a script starts after a cd would find no file. One
 * that names nothing is left for the library to say so. */
static int suppressions_absolute(void)
{
    const char *v = getenv("GPUMEMTRACE_SUPPRESSIONS");
    char resolved[PATH_MAX];
    if (!v || !*v || v[0] == '/' || !realpath(v, resolved) || strlen(resolved) >= GMT_PATH_MAX)
        return 0;
    return set_env("GPUMEMTRACE_SUPPRESSIONS", resolved) ? -1 : 0;
}

/* Why the file at path cannot be the library (the dynamic loader would refuse it with a
 * warning and run the program untraced), or NULL when it is a readable ELF file. */
static const char *not_a_library(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) return strerror(errno);
    if (S_ISDIR(st.st_mode)) return "a directory, not the library";
    if (!S_ISREG(st.st_mode)) return "not a regular file";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return strerror(errno);
    static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
    unsigned char magic[4] = {0};
    ssize_t n = read(fd, magic, sizeof magic);
    close(fd);
    if (n != (ssize_t)sizeof magic || memcmp(magic, elf, sizeof elf) != 0)
        return "not a shared library (no ELF header)";
    return NULL;
}

/* The library's absolute path, in buf. 0, or -ENOENT after printing why. */
static int find_library(char *buf, size_t len)
{
    const char *env = getenv("GPUMEMTRACE_LIBRARY");
    if (env && *env) {
        char resolved[PATH_MAX];
        const char *why = NULL;
        if (!realpath(env, resolved) || access(resolved, R_OK) != 0)
            why = strerror(errno);
        else
            why = not_a_library(resolved);
        if (why) {
            gmt_cli_error("run: GPUMEMTRACE_LIBRARY=%s: %s", gmt_tty(env), why);
            return -ENOENT;
        }
        snprintf(buf, len, "%s", resolved);
        return 0;
    }

    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        gmt_cli_error("run: cannot find my own path (/proc/self/exe: %s); set "
                      "GPUMEMTRACE_LIBRARY to the path of " LIB_NAME,
                      strerror(errno));
        return -ENOENT;
    }
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';

    for (size_t i = 0; i < NLIB_DIRS; i++) {
        char cand[PATH_MAX + 64], resolved[PATH_MAX];
        snprintf(cand, sizeof cand, "%s/%s/" LIB_NAME, exe, lib_dirs[i]);
        if (realpath(cand, resolved) && access(resolved, R_OK) == 0 && !not_a_library(resolved)) {
            snprintf(buf, len, "%s", resolved);
            return 0;
        }
    }
    /* One line naming every place tried, in the order tried. */
    char tried[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < NLIB_DIRS && used < sizeof tried; i++) {
        int w = snprintf(tried + used, sizeof tried - used, "%s%s/", i ? ", " : "", lib_dirs[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    gmt_cli_error("run: " LIB_NAME " not found relative to %s (tried, in order: %s); set "
                  "GPUMEMTRACE_LIBRARY to its path",
                  exe, tried);
    return -ENOENT;
}

/* The basename of an LD_PRELOAD entry of n bytes at p, and its length in *bn. */
static const char *entry_base(const char *p, size_t n, size_t *bn)
{
    const char *b = p;
    for (size_t i = 0; i < n; i++)
        if (p[i] == '/') b = p + i + 1;
    *bn = n - (size_t)(b - p);
    return b;
}

static bool base_starts(const char *b, size_t bn, const char *prefix)
{
    size_t n = strlen(prefix);
    return bn >= n && memcmp(b, prefix, n) == 0;
}

/* A sanitizer runtime (GCC's libasan.so.8, clang's libclang_rt.asan-x86_64.so, ...): it must
 * be the first library loaded, or an instrumented program aborts at start ("ASan runtime does
 * not come first in initial library list"). It interposes no CUDA call and not dlsym. */
static bool is_sanitizer_runtime(const char *p, size_t n)
{
    static const char *const names[] = {"libasan.so", "libtsan.so", "libubsan.so", "libhwasan.so",
                                        "libmsan.so", "liblsan.so", "libclang_rt."};
    size_t bn;
    const char *b = entry_base(p, n, &bn);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (base_starts(b, bn, names[i])) return true;
    return false;
}

/* 1 when the entry is lib itself (the same path, or another path to the same file), 2 when it
 * is another copy of the tracer (a file named libgpumemtrace.so*, as GPUMEMTRACE_FOLLOW_EXEC=0
 * tells it), else 0. */
static int tracer_entry(const char *p, size_t n, const char *lib)
{
    if (n == strlen(lib) && memcmp(p, lib, n) == 0) return 1;
    char path[PATH_MAX], resolved[PATH_MAX];
    if (n < sizeof path) {
        memcpy(path, p, n);
        path[n] = '\0';
        if (strchr(path, '/') && realpath(path, resolved) && strcmp(resolved, lib) == 0) return 1;
    }
    /* another copy: the library's own rule (core/preload_list.h) */
    return gmt_preload_names_tracer(p, n) ? 2 : 0;
}

static bool log_quiet(void)
{
    const char *lvl = getenv("GPUMEMTRACE_LOG");
    return lvl && strcasecmp(lvl, "quiet") == 0;
}

/* LD_PRELOAD becomes: the sanitizer runtimes it held (they must come first), then lib, then
 * every other entry it held, in their order. lib is there exactly once: entries naming it (by
 * any path) are dropped, and so are other copies of the tracer (a second tracer in the process
 * would record every call twice), each said in one line unless GPUMEMTRACE_LOG is quiet. The
 * tracer comes before every other preloaded library, so its cuda*, cu* and dlsym definitions
 * are the ones the program's calls reach. ld.so splits the list on spaces and colons, so a
 * library path holding either cannot be preloaded; the new list is joined with colons. */
static int prepend_preload_to(const char *lib, const char *old);

static int prepend_preload(const char *lib)
{
    if (strpbrk(lib, " :")) {
        gmt_cli_error("run: the library path '%s' contains a space or colon, which LD_PRELOAD "
                      "cannot hold; move it or set GPUMEMTRACE_LIBRARY",
                      lib);
        return -EINVAL;
    }
    /* The last LD_PRELOAD, the one ld.so reads where the environment gives it more than once
     * (setenv would replace only the first, and CMD would run untraced): its libraries are the
     * ones CMD would have had. Every copy goes, said in one line. */
    size_t copies;
    const char *old = gmt_preload_last(environ, &copies);
    if (copies > 1) {
        if (!log_quiet())
            fprintf(stderr,
                    "gpumemtrace: run: LD_PRELOAD was set %zu times in the environment: the last "
                    "(the one the dynamic loader reads) kept, the others left out\n",
                    copies);
        char *keep = strdup(old);
        if (!keep) return -ENOMEM;
        unsetenv("LD_PRELOAD");
        int rc = prepend_preload_to(lib, keep);
        free(keep);
        return rc;
    }
    return prepend_preload_to(lib, old);
}

/* prepend_preload with old, the list CMD would have had (NULL or empty: none). */
static int prepend_preload_to(const char *lib, const char *old)
{
    if (!old || !*old) return set_env("LD_PRELOAD", lib);

    size_t cap = strlen(lib) + 1 + strlen(old) + 1, used = 0;
    char *joined = malloc(cap);
    if (!joined) return -ENOMEM;
    joined[0] = '\0';
    /* Pass 0: sanitizer runtimes; then lib; pass 1: the others. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            used += (size_t)snprintf(joined + used, cap - used, "%s%s", used ? ":" : "", lib);
        for (const char *p = old + strspn(old, " :"); *p;) {
            size_t n = strcspn(p, " :");
            bool first = is_sanitizer_runtime(p, n);
            int self = first ? 0 : tracer_entry(p, n, lib);
            if (self == 2 && pass == 1 && !log_quiet()) {
                char shown[1024];
                size_t sn = 0;
                shown[0] = '\0';
                gmt_escape_append(shown, sizeof shown, &sn, p, n);
                fprintf(stderr,
                        "gpumemtrace: run: LD_PRELOAD held another copy of the tracer, %s: "
                        "left out (%s is preloaded instead)\n",
                        shown, gmt_tty(lib));
            }
            if (!self && first == (pass == 0)) {
                if (used) joined[used++] = ':';
                memcpy(joined + used, p, n);
                used += n;
                joined[used] = '\0';
            }
            p += n;
            p += strspn(p, " :");
        }
    }
    int rc = set_env("LD_PRELOAD", joined);
    free(joined);
    return rc;
}

static int check_choice(const char *value, const char *const *choices, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(value, choices[i]) == 0) return 0;
    return -EINVAL;
}

/* Parse the options into environment changes. Returns a negative errno after printing a
 * usage error, 1 after --help, 0 to go on; *cmd_index is where CMD starts. */
static int parse_options(int argc, char **argv, int *cmd_index)
{
    static const char *const backends[] = {"auto", "cupti", "hooks"};
    static const char *const levels[] = {"quiet", "info", "debug"};
    long num;
    uint64_t size;
    int sig;

    opterr = 0;
    optind = 1;
    int c;
    /* '+': stop at CMD, so its own options are left alone even without "--". */
    while ((c = getopt_long(argc, argv, "+:o:h", long_opts, NULL)) != -1) {
        const char *v = optarg;
        int rc = 0;
        switch (c) {
        case 'o':
            if (!*v) return usage_error("--output needs a non-empty path");
            /* "--" as the value is the separator, the path forgotten before it (run --output
             * -- CMD): taken as a file name, the report would be a file called "--". */
            if (strcmp(v, "--") == 0) return usage_error("--output needs a path before '--'");
            rc = set_env("GPUMEMTRACE_OUTPUT", v);
            break;
        case OPT_DEPTH:
            if (gmt_parse_int_range(v, 0, GMT_MAX_STACK_DEPTH, &num))
                return usage_error("bad --depth '%s': expected 0 to %d", v, GMT_MAX_STACK_DEPTH);
            rc = set_env("GPUMEMTRACE_STACK_DEPTH", v);
            break;
        case OPT_NO_PYTHON:
            rc = set_env("GPUMEMTRACE_PYTHON", "0");
            break;
        case OPT_BACKEND:
            if (check_choice(v, backends, 3))
                return usage_error("bad --backend '%s': expected %s", v, "auto, cupti or hooks");
            rc = set_env("GPUMEMTRACE_BACKEND", v);
            break;
        case OPT_MIN_BYTES:
            if (gmt_parse_size(v, &size) || size > INT64_MAX)
                return usage_error("bad --min-bytes '%s': expected %s", v, GMT_CLI_SIZE_EXPECTED);
            rc = set_env("GPUMEMTRACE_MIN_BYTES", v);
            break;
        case OPT_TOP:
            if (gmt_parse_int_range(v, 1, 100000, &num))
                return usage_error("bad --top '%s': expected %s", v, "1 to 100000");
            rc = set_env("GPUMEMTRACE_TOP", v);
            break;
        case OPT_STATE:
            if (!*v) return usage_error("--state needs a non-empty path");
            if (strcmp(v, "--") == 0) return usage_error("--state needs a path before '--'");
            if (strlen(v) >= GMT_PATH_MAX)
                return usage_error("--state path is too long (%zu bytes; at most %d)", strlen(v),
                                   GMT_PATH_MAX - 1);
            rc = set_env("GPUMEMTRACE_STATE", v);
            break;
        case OPT_SUPPRESSIONS: {
            /* Checked now, and made absolute so a program that changes directory still
             * finds it. A directory or a FIFO is refused here too: the library reads only a
             * regular file, and would say so from inside CMD and use no suppressions. */
            char resolved[PATH_MAX];
            struct stat st;
            if (!*v || !realpath(v, resolved) || access(resolved, R_OK) != 0 ||
                stat(resolved, &st) != 0)
                return usage_error("--suppressions %s: %s", v, *v ? strerror(errno) : "empty path");
            if (!S_ISREG(st.st_mode))
                return usage_error("--suppressions %s: is %s, not a regular file", v,
                                   gmt_file_kind(st.st_mode));
            if (strlen(resolved) >= GMT_PATH_MAX)
                return usage_error("--suppressions %s: its absolute path is too long (%zu "
                                   "bytes; at most %d)",
                                   v, strlen(resolved), GMT_PATH_MAX - 1);
            rc = set_env("GPUMEMTRACE_SUPPRESSIONS", resolved);
            break;
        }
        case OPT_LOG:
            if (check_choice(v, levels, 3))
                return usage_error("bad --log '%s': expected %s", v, "quiet, info or debug");
            rc = set_env("GPUMEMTRACE_LOG", v);
            break;
        case OPT_SNAPSHOT_SIGNAL:
            if (gmt_parse_signal(v, &sig))
                return usage_error("bad --snapshot-signal '%s': expected %s", v,
                                   "SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGWINCH, SIGPWR, "
                                   "SIGTTIN, a real-time signal number, or none");
            rc = set_env("GPUMEMTRACE_SNAPSHOT_SIGNAL", v);
            break;
        case OPT_NO_OOM_REPORT:
            rc = set_env("GPUMEMTRACE_OOM_REPORT", "0");
            break;
        case OPT_NO_FOLLOW_FORK:
            rc = set_env("GPUMEMTRACE_FOLLOW_FORK", "0");
            break;
        case OPT_NO_FOLLOW_EXEC:
            rc = set_env("GPUMEMTRACE_FOLLOW_EXEC", "0");
            break;
        case OPT_NO_FRAMEWORK_CACHE:
            rc = set_env("PYTORCH_NO_CUDA_MEMORY_CACHING", "1");
            if (!rc) rc = set_env("XLA_PYTHON_CLIENT_ALLOCATOR", "platform");
            break;
        case 'h':
            gmt_cli_run_help(stdout);
            return 1;
        case ':':
            return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: {
            /* optopt names an unknown short option, or an option that takes no value given
             * one (--no-python=1: its code, not a character); an unknown long one leaves it 0. */
            const char *flag = gmt_cli_flag_given_value(long_opts, optopt, argv[optind - 1]);
            if (flag) return usage_error("option '--%s' takes no value", flag);
            if (optopt) return usage_error("unknown option '-%c'", optopt);
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
        }
        if (rc) return rc;
    }
    *cmd_index = optind;
    return 0;
}

int gmt_cli_run(int argc, char **argv)
{
    int cmd_index = 0;
    int rc = parse_options(argc, argv, &cmd_index);
    if (rc > 0) return GMT_EXIT_OK;
    if (rc < 0) return GMT_EXIT_USAGE;
    if (cmd_index >= argc) {
        usage_error("no command given: gpumemtrace run [options] -- CMD [ARGS...]");
        return GMT_EXIT_USAGE;
    }

    char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) || prepend_preload(lib) || output_absolute() ||
        state_absolute() || suppressions_absolute())
        return GMT_EXIT_USAGE;

    char **cmd = argv + cmd_index;
    fflush(NULL);
    execvp(cmd[0], cmd);
    /* Like a shell: 127 when there is no such command, 126 when it cannot be run. */
    int err = errno;
    if (err == ENOENT)
        gmt_cli_error("run: %s: command not found", gmt_tty(cmd[0]));
    else
        gmt_cli_error("run: %s: %s", gmt_tty(cmd[0]), strerror(err));
    return err == ENOENT ? 127 : 126;
}
