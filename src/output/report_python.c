/* report_python.c - see report_python.h. */
#include "report_python.h"

#include "core/pyframes.h"

bool gmt_report_python_frame(jw_t *w, uint64_t frame)
{
    if (!gmt_py_is_frame(frame)) return false;
    gmt_py_frame_t pf;
    gmt_py_resolve(frame, &pf); /* unknown parts stay NULL / -1 */
    jw_object_begin(w, NULL);
    jw_string(w, "type", "python");
    jw_string(w, "file", pf.file);
    jw_string(w, "function", pf.function);
    if (pf.line >= 0)
        jw_int(w, "line", pf.line);
    else
        jw_null(w, "line");
    jw_object_end(w);
    return true;
}

bool gmt_report_python_names(uint64_t frame, const char **function, const char **file)
{
    if (!gmt_py_is_frame(frame)) return false;
    gmt_py_frame_t pf;
    gmt_py_resolve(frame, &pf);
    *function = pf.function;
    *file = pf.file;
    return true;
}

void gmt_report_python_stack_status(jw_t *w, const uint64_t *frames, uint32_t n)
{
    jw_string(w, "python", gmt_py_status_name(gmt_py_stack_status(frames, n)));
}

void gmt_report_python_capture(jw_t *w)
{
    bool unusable;
    bool recovered = gmt_py_recovered(&unusable);
    uint64_t damaged;
    bool attached = gmt_py_code_damaged(&damaged);
    jw_object_begin(w, "python");
    jw_string(w, "status", gmt_py_status_name(gmt_py_status()));
    jw_string(w, "version", gmt_py_version());
    if (gmt_py_status() == GMT_PY_CAPTURED) {
        /* The walks' counts and the code hook live in the process's own memory, not in its
         * state file (docs/state.md): a recovered report has none of them, rather than this
         * process's zeros and "off" read as the dead process's. */
        if (!recovered) {
            jw_uint(w, "checked_walks", gmt_py_checked_walks());
            jw_uint(w, "replayed_walks", gmt_py_replayed_walks());
            jw_uint(w, "noted_walks", gmt_py_noted_walks());
            jw_uint(w, "trusted_walks", gmt_py_trusted_walks());
            jw_uint(w, "sited_walks", gmt_py_sited_walks());
            const char *why;
            jw_string(w, "code_hook", gmt_py_code_hook(&why));
            if (why) jw_string(w, "code_hook_off", why);
            jw_uint(w, "unreadable_frames", gmt_py_unreadable_frames());
            jw_uint(w, "cut_walks", gmt_py_cut_walks());
        }
        /* The cache's own count, in the state file with it: none where recovery attached no
         * cache (its header, the count's place, failed the checks). */
        if (!recovered || attached) jw_uint(w, "code_cache_dropped", gmt_py_code_dropped());
    }
    /* A recovered report says how many of the state file's cache entries were damaged, 0
     * included, whatever the status: the cache names the frames all the same; or that the file
     * had no cache to name its Python frames by. */
    if (attached) jw_uint(w, "code_cache_damaged", damaged);
    if (unusable) jw_bool(w, "code_cache_unusable", true);
    jw_object_end(w);
}
