/* fuzz_report.c - libFuzzer target for the CLI's report reader (src/cli/report_load.c).
 *
 * Any byte string goes through gmt_report_parse into the model; when it loads, every stack is
 * walked the way the verbs walk them (cross-run key, nearest user frame, display formats) and
 * every group's stack pointer is dereferenced, and the report is exported in every format (the
 * exporters read everything the model holds). Crashes, hangs, leaks (ASan) and undefined
 * behaviour (UBSan) are failures; a refused input is not.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

static void walk_stack(const gmt_stack_t *st)
{
    char buf[1024];
    if (!st) return;
    char *key = gmt_stack_key(st);
    free(key);
    const gmt_frame_t *u = gmt_user_frame(st);
    if (u) gmt_frame_format(u, buf, sizeof buf);
    for (size_t i = 0; i < st->n; i++) {
        gmt_frame_format(&st->frames[i], buf, sizeof buf);
        gmt_frame_name(&st->frames[i], buf, sizeof buf);
        gmt_buf_t key_b = {0};
        gmt_frame_key_put(&key_b, &st->frames[i]);
        gmt_buf_free(&key_b);
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    gmt_report_t rep = {.path = "fuzz"};
    char why[256];
    if (gmt_report_parse((const char *)data, size, &rep, why, sizeof why) == 0) {
        for (size_t i = 0; i < rep.nstacks; i++)
            walk_stack(&rep.stacks[i]);
        for (size_t i = 0; i < rep.nleaks; i++)
            walk_stack(rep.leak_groups[i].stack);
        for (size_t i = 0; i < rep.npeaks; i++)
            for (size_t k = 0; k < rep.peaks[i].ngroups; k++)
                walk_stack(rep.peaks[i].groups[k].stack);
        for (size_t i = 0; i < rep.nerrors; i++)
            walk_stack(rep.errors[i].stack);
        for (size_t i = 0; i < rep.nsuspects; i++)
            walk_stack(rep.suspects[i].stack);
        (void)gmt_report_device(&rep, 0, -1);
        static const char *const formats[] = {"folded", "speedscope", "perfetto",
                                              "html",   "prometheus", "pprof"};
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
            gmt_buf_t b = {0};
            if (gmt_export_to(&rep, formats[i], i ? "leaks" : "peak", &b) != 0) abort();
            gmt_buf_free(&b);
        }
    } else if (!memchr(why, '\0', sizeof why) || why[0] == '\0') {
        abort(); /* a refusal always says why */
    }
    gmt_report_free(&rep);
    return 0;
}
