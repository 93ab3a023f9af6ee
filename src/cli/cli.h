/* cli.h - the gpumemtrace command-line tool: its verbs and the report reader they share.
 *
 * Each verb is a function taking the arguments from the verb's own name onwards (argv[0] is
 * the verb) and returning the process exit status: GMT_EXIT_OK, GMT_EXIT_FAIL (a check broke a
 * limit) or GMT_EXIT_USAGE (bad usage or bad input). Everything else here returns 0 or a
 * negative errno, as in the rest of the project. Nothing is thread-safe; the tool is
 * single-threaded.
 */
#ifndef GMT_CLI_CLI_H
#define GMT_CLI_CLI_H

#include "gmt_version.h"

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#define GMT_EXIT_OK    0
#define GMT_EXIT_FAIL  1
#define GMT_EXIT_USAGE 2

/* The report versions this tool reads: 1 .. GMT_REPORT_VERSION (from gmt_version.h); the
 * writer bumps it on incompatible changes. */
#define GMT_REPORT_SCHEMA "gpumemtrace.report"

/* ---- verbs (gpumemtrace.c dispatches) ---- */

int gmt_cli_run(int argc, char **argv);
int gmt_cli_report(int argc, char **argv);
int gmt_cli_symbolize(int argc, char **argv); /* cmd_symbolize.c (symbols, docs/symbols.md) */

void gmt_cli_run_help(FILE *to);
void gmt_cli_report_help(FILE *to);
void gmt_cli_symbolize_help(FILE *to);

/* Print "gpumemtrace: <message>" and a newline on stderr. */
void gmt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- report loading (report_load.c) ---- */

/* A loaded report. root owns the whole document; the section pointers borrow from it and are
 * guaranteed by gmt_report_load to exist with the type the schema gives them (objects or
 * arrays). Elements of the array sections, and leaks.groups, are guaranteed to be objects;
 * fields inside them are not checked: read them with the gmt_json_* accessors below. */
typedef struct gmt_report_s {
    cJSON *root;
    const char *path; /* as given to gmt_report_load; borrowed */
    int version;
    const cJSON *tool, *process, *config, *capture, *summary, *leaks, *stacks; /* objects */
    const cJSON *devices, *peak, *fragmentation, *timeline, *errors;           /* arrays */
    const cJSON *leak_groups;                                                  /* array */
} gmt_report_t;

/* Read and check the report at path ("-": standard input). On failure *rep is left empty,
 * a one-phrase reason (no file name, no newline) is written to why, and the return is
 * -ENOENT/-EACCES/... for a file that cannot be read, -EINVAL for one that is not JSON or not
 * a gpumemtrace report, -ENOTSUP for a report of another version. */
int gmt_report_load(const char *path, gmt_report_t *rep, char *why, size_t why_len);

/* gmt_report_load, printing "gpumemtrace: PATH: <why>" on failure. */
int gmt_report_open(const char *path, gmt_report_t *rep);

/* Free what gmt_report_load allocated; safe on an empty or already freed report. */
void gmt_report_free(gmt_report_t *rep);

/* The frames array of a stack id, or NULL when the report has no such stack. */
const cJSON *gmt_report_stack(const gmt_report_t *rep, int64_t stack_id);

/* The devices[] entry with this device number, or NULL. */
const cJSON *gmt_report_device(const gmt_report_t *rep, int64_t device);

/* Typed field accessors: the value of obj[key] when it exists with that type, else dflt. */
int64_t gmt_json_int(const cJSON *obj, const char *key, int64_t dflt);
double gmt_json_num(const cJSON *obj, const char *key, double dflt);
const char *gmt_json_str(const cJSON *obj, const char *key, const char *dflt);
bool gmt_json_bool(const cJSON *obj, const char *key, bool dflt);
bool gmt_json_has_num(const cJSON *obj, const char *key);

/* ---- formatting (report_load.c) ---- */

/* "512 B", "3.00 MiB", "1.50 GiB". Returns buf. */
char *gmt_fmt_bytes(uint64_t bytes, char *buf, size_t len);
#define GMT_FMT_BYTES_LEN 32

/* Parse a non-negative decimal integer in [min, max]; 0 or -EINVAL. */
int gmt_parse_int_range(const char *s, long min, long max, long *out);

#endif
