/* cmd_symbolize.c - `gpumemtrace symbolize [-o OUT] FILE`: names the native frames of a report
 * written without libdw (see symbolize/offline.h), in place or into OUT.
 *
 * The report is read by the loader every verb shares (report_load.c), so symbolize accepts and
 * refuses the files the other verbs do, with the same one-line reasons; it only skips the
 * loader's own naming of the frames, which is what it does here to the JSON it writes back. */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "symbolize/offline.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define USAGE "usage: gpumemtrace symbolize [-o OUT] FILE"

void gmt_cli_symbolize_help(FILE *to)
{
    fprintf(to, "Usage: gpumemtrace symbolize [-o OUT] FILE\n"
                "\n"
                "Fills function names, file:line and inlined frames into a report written\n"
                "without libdw (an out-of-memory or crash report, or a machine without libdw),\n"
                "from the module files named in it, where they are still there with the same\n"
                "build id. Rewrites FILE unless -o OUT is given ('-o -': standard output;\n"
                "FILE '-': standard input, with -o). Every verb that reads a report does the\n"
                "same in memory.\n"
                "\n"
                "  -o, --output OUT  write the symbolized report to OUT, not over FILE\n"
                "  -h, --help        this help\n");
}

/* The line for a report left as it was (nothing to name, or no libdw here); exit 0. */
static int said_unchanged(const gmt_offline_stats_t *st)
{
    if (!st->named_when_written && !st->no_libdw)
        fprintf(stderr,
                "gpumemtrace: nothing to name: all %u native frames have file:line "
                "already, from an earlier symbolize\n",
                st->frames);
    else if (st->named_when_written)
        fprintf(stderr, "gpumemtrace: nothing to name: the report's frames were named when it "
                        "was written (libdw)\n");
    else
        fprintf(stderr, "gpumemtrace: left as it was: libdw is not available here to look up "
                        "the frames its earlier symbolize left unnamed\n");
    return GMT_EXIT_OK;
}

static const struct option long_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int gmt_cli_symbolize(int argc, char **argv)
{
    const char *out = NULL, *in = NULL;
    /* getopt_long as every other verb: --output=OUT, -oOUT, -- and the same option errors */
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (!*optarg) {
                gmt_cli_error("symbolize: -o needs a path (" USAGE ")");
                return GMT_EXIT_USAGE;
            }
            out = optarg;
            break;
        case 'h':
            gmt_cli_symbolize_help(stdout);
            return GMT_EXIT_OK;
        case ':':
            gmt_cli_error("symbolize: -o needs a path (" USAGE ")");
            return GMT_EXIT_USAGE;
        default:
            gmt_cli_option_error("symbolize", long_opts, optopt, argv[optind - 1]);
            return GMT_EXIT_USAGE;
        }
    }
    if (argc - optind > 1) {
        gmt_cli_error("symbolize: one report at a time (" USAGE ")");
        return GMT_EXIT_USAGE;
    }
    in = optind < argc ? argv[optind] : NULL;
    if (!in) {
        gmt_cli_error("symbolize: no report file given (" USAGE ")");
        return GMT_EXIT_USAGE;
    }
    /* Without -o the report is rewritten where it was read: standard input has no place. */
    if (!out && strcmp(in, "-") == 0) {
        gmt_cli_error("symbolize: standard input needs -o OUT (-o - for standard output)");
        return GMT_EXIT_USAGE;
    }
    gmt_report_t rep;
    char why[256];
    if (gmt_report_load_as_written(in, &rep, why, sizeof why)) {
        gmt_cli_error("%s: %s", strcmp(in, "-") == 0 ? "<stdin>" : gmt_tty(in), why);
        return GMT_EXIT_USAGE;
    }
    /* The model borrows strings from rep.root; naming the frames replaces some of them, so
     * nothing below reads the model. */
    gmt_offline_stats_t st;
    int rc = gmt_symbolize_report_json(rep.root, &st, why, sizeof why);
    if (rc) {
        gmt_cli_error("symbolize: %s", why);
        gmt_report_free(&rep);
        return GMT_EXIT_USAGE;
    }
    /* Left as it was (nothing to name, or no libdw to name it with, or every frame named by an
     * earlier symbolize): rewriting it in place would change its bytes for nothing. */
    bool all_named = st.frames && st.already == st.frames;
    if (!out && (st.named_when_written || st.no_libdw || all_named)) {
        gmt_report_free(&rep);
        return said_unchanged(&st);
    }
    gmt_json_exact_ints(rep.root);
    char *printed = cJSON_PrintUnformatted(rep.root);
    gmt_report_free(&rep);
    char *text = printed ? gmt_json_controls_escaped(printed) : NULL;
    free(printed);
    const char *target = out ? out : in;
    rc = text ? gmt_write_output(target, text, strlen(text)) : -ENOMEM;
    free(text);
    if (rc) {
        gmt_cli_error(
            "symbolize: cannot write %s: %s", strcmp(target, "-") == 0 ? "<stdout>" : target,
            rc == -EEXIST ? "it exists and is not a regular file (-o - for standard output)"
                          : strerror(-rc));
        return GMT_EXIT_USAGE;
    }
    if (st.named_when_written || st.no_libdw || all_named) return said_unchanged(&st);
    /* Frames an earlier symbolize gave file:line are not looked up again, nor counted as
     * named now (a second symbolize said "named 10 of 10 native frames" having named none):
     * the count is of the frames looked up, those left said apart. */
    if (st.already)
        fprintf(stderr,
                "gpumemtrace: named %u of the %u native frames without file:line (the other %u "
                "had it already, from an earlier symbolize, and were left as they were)",
                st.named, st.frames - st.already, st.already);
    else
        fprintf(stderr, "gpumemtrace: named %u of %u native frames", st.named, st.frames);
    if (st.stale)
        fprintf(stderr, "; %u frames left unnamed: their module's build id differs", st.stale);
    if (st.missing) fprintf(stderr, "; %u frames of modules not found here", st.missing);
    if (st.bare)
        fprintf(stderr, "; %u frames their module has no symbols or debug info for", st.bare);
    if (st.unverified)
        fprintf(stderr, "; %u frames without a build id left as they were", st.unverified);
    fputc('\n', stderr);
    return GMT_EXIT_OK;
}
