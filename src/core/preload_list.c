/* preload_list.c - see preload_list.h. */
#include "preload_list.h"

#include <string.h>

#define TRACER_FILE "libgpumemtrace.so"

bool gmt_preload_names_tracer(const char *p, size_t n)
{
    size_t base = n;
    while (base > 0 && p[base - 1] != '/')
        base--;
    return n - base >= sizeof TRACER_FILE - 1 &&
           memcmp(p + base, TRACER_FILE, sizeof TRACER_FILE - 1) == 0;
}

int gmt_preload_without(const char *list, char *out, size_t cap, gmt_preload_is_self_fn is_self,
                        void *arg)
{
    if (cap == 0) return -1;
    size_t pos = 0;
    int dropped = 0;
    out[0] = '\0';
    for (const char *p = list + strspn(list, ": "); *p; p += strspn(p, ": ")) {
        size_t n = strcspn(p, ": ");
        if (is_self(p, n, arg)) {
            dropped++;
        } else {
            size_t sep = pos > 0;
            if (pos + sep + n >= cap) {
                out[0] = '\0';
                return -1;
            }
            if (sep) out[pos++] = ':';
            memcpy(out + pos, p, n);
            pos += n;
        }
        p += n;
    }
    out[pos] = '\0';
    return dropped;
}

const char *gmt_preload_last(char *const *env, size_t *count)
{
    static const char var[] = "LD_PRELOAD=";
    const char *last = NULL;
    *count = 0;
    for (; env && *env; env++) {
        if (strncmp(*env, var, sizeof var - 1) != 0) continue;
        last = *env + sizeof var - 1;
        (*count)++;
    }
    return last;
}
