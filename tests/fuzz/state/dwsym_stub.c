/* dwsym_stub.c - the fuzz target's stand-in for symbolize/dwsym.c: libdw decompressing the
 * modules' debug sections at every recovery took over half of the target's time (zlib, under
 * perf), and what it reads are the module files, not the state file. The state file gives the
 * symbolizer a path, a build id and an offset per frame: this stand-in reads them whole (a
 * string not ended inside the file's copy would be read past its array, which ASan reports)
 * and names nothing, so the report's frames take the path the library takes for a module
 * libdw cannot read. */
#include "symbolize/dwsym.h"

#include <errno.h>
#include <string.h>

struct gmt_dwsym_s {
    int unused;
};

static gmt_dwsym_t one;

int gmt_dwsym_open(gmt_dwsym_t **out, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    *out = &one;
    return 0;
}

void gmt_dwsym_close(gmt_dwsym_t *s)
{
    (void)s;
}

int gmt_dwsym_resolve(gmt_dwsym_t *s, const char *path, const char *build_id, uint64_t offset,
                      const gmt_symres_t **out)
{
    (void)s, (void)offset;
    *out = NULL;
    volatile size_t n = strlen(path) + (build_id ? strlen(build_id) : 0);
    (void)n;
    return -ENOENT;
}

const char *gmt_demangle(const char *name, char *buf, size_t len)
{
    (void)buf, (void)len;
    return name;
}
