/* gpumemtrace.c - entry point of the gpumemtrace command-line tool: verb dispatch and help.
 *
 * The tool has one verb per job (run a program traced, summarise a report, ...). main only
 * picks the verb; each verb parses its own options and returns the exit status. docs/cli.md
 * is the user-facing description and must follow this file.
 */
#include "cli/cli.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct verb_s {
    const char *name;
    int (*fn)(int argc, char **argv);
    void (*help)(FILE *to);
    const char *summary;
} verb_t;

static const verb_t verbs[] = {
    {"run", gmt_cli_run, gmt_cli_run_help,
     "run a command with the tracer preloaded; exits with the command's status"},
    {"report", gmt_cli_report, gmt_cli_report_help,
     "print a human summary of a report: leaks, peak owners, fragmentation, errors"},
    {"check", gmt_cli_check, gmt_cli_check_help,
     "CI gate: exit 1 when a report breaks a limit (leaks, peak, fragmentation, errors)"},
    {"diff", gmt_cli_diff, gmt_cli_diff_help,
     "what grew between two reports: peak per device, leaks, per call stack"},
    {"merge", gmt_cli_merge, gmt_cli_merge_help,
     "one job-level view of per-rank reports: peaks, imbalance, common leaks"},
    {"export", gmt_cli_export, gmt_cli_export_help,
     "convert a report: folded, speedscope, perfetto, html, prometheus, pprof"},
    {"top", gmt_cli_top, gmt_cli_top_help,
     "live bytes per device and top stacks of a running job, from its state file"},
    {"symbolize", gmt_cli_symbolize, gmt_cli_symbolize_help,
     "name the frames of a report written without libdw (function, file:line)"},
};

#define NVERBS (sizeof verbs / sizeof verbs[0])

static void usage(FILE *to)
{
    fprintf(to, "Usage: gpumemtrace VERB [ARGS...]\n"
                "       gpumemtrace help [VERB] | --help | --version\n"
                "\n"
                "Records CUDA memory allocations with call stacks and reports leaks, peak\n"
                "owners, fragmentation and failed allocations.\n"
                "\n"
                "Verbs:\n");
    int width = 0; /* the longest name, so that every summary starts in one column */
    for (size_t i = 0; i < NVERBS; i++)
        if ((int)strlen(verbs[i].name) > width) width = (int)strlen(verbs[i].name);
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(to, "  %-*s  %s\n", width, verbs[i].name, verbs[i].summary);
    fprintf(to, "\n"
                "Example:\n"
                "  gpumemtrace run -o train.json -- python train.py\n"
                "  gpumemtrace report train.json\n"
                "\n"
                "'gpumemtrace help VERB' (or 'gpumemtrace VERB --help') describes a verb's\n"
                "options. -h is --help; -V and 'version' are --version.\n");
}

static const verb_t *find_verb(const char *name)
{
    for (size_t i = 0; i < NVERBS; i++)
        if (strcmp(verbs[i].name, name) == 0) return &verbs[i];
    return NULL;
}

static int help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return GMT_EXIT_OK;
    }
    const verb_t *v = find_verb(argv[1]);
    if (!v) {
        gmt_cli_error("no verb '%s' (try 'gpumemtrace --help')", argv[1]);
        return GMT_EXIT_USAGE;
    }
    v->help(stdout);
    return GMT_EXIT_OK;
}

/* The verb's status, made 2 with one line when what it wrote to standard output was not all
 * written (a full disk, a closed pipe) and it did not say so itself (its --help): the line
 * names the verb, "gpumemtrace: VERB: writing standard output: ...", as the verbs' own lines
 * do; verb NULL for the tool's own output (--help, help VERB, --version). */
static int finish(const char *verb, int status)
{
    if (status == GMT_EXIT_USAGE) return status; /* it has said what went wrong */
    return gmt_stdout_ok(verb, "standard output") ? status : GMT_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return GMT_EXIT_USAGE;
    }
    const char *verb = argv[1];
    /* A closed pipe (`gpumemtrace report r.json | head -1`) is a write error like a full
     * disk: exit 2 and one line, as docs/cli.md says, not death by SIGPIPE. `run` keeps the
     * disposition it was given: an ignored signal stays ignored across exec, and CMD must
     * start as it would without the tool. */
    if (strcmp(verb, "run") != 0) signal(SIGPIPE, SIG_IGN);
    if (strcmp(verb, "--help") == 0 || strcmp(verb, "-h") == 0 || strcmp(verb, "help") == 0)
        return finish(NULL, help(argc - 1, argv + 1));
    if (strcmp(verb, "--version") == 0 || strcmp(verb, "-V") == 0 || strcmp(verb, "version") == 0) {
        printf("gpumemtrace %s (reads report versions %d to %d)\n", GMT_VERSION_STRING,
               GMT_REPORT_VERSION_MIN, GMT_REPORT_VERSION);
        return finish(NULL, GMT_EXIT_OK);
    }
    const verb_t *v = find_verb(verb);
    if (!v) {
        if (verb[0] == '-')
            gmt_cli_error("unknown option '%s'", verb);
        else
            gmt_cli_error("unknown verb '%s'", verb);
        usage(stderr);
        return GMT_EXIT_USAGE;
    }
    return finish(v->name, v->fn(argc - 1, argv + 1));
}
