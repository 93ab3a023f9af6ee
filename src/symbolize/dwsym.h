/* dwsym.h - names for code addresses from ELF files: function (also static functions, from
 * .symtab), file:line and inlined frames from DWARF, C++ names demangled.
 *
 * One API for both uses: in process at report time and offline in the CLI. A frame is named
 * by (module path, build id, module-relative offset), so nothing here needs the process that
 * recorded it. The offset is relative to the start of the module's first loadable segment, as
 * dladdr's dli_fbase gives it (for a shared library or PIE this is the ELF virtual address).
 *
 * elfutils' libdw (libdwfl) is loaded with dlopen when a session opens, not linked: a traced
 * process pays nothing for it until the report is written, and a process without libdw still
 * gets a report (module + offset + dladdr symbols). The demangler is libstdc++'s
 * __cxa_demangle, looked up the same way. See docs/symbols.md.
 *
 * Each module file is opened once per session; its function symbols are sorted once and
 * looked up by binary search, and every resolved offset is memoised, so many stacks through a
 * few large libraries cost one open per library. Never touches the network: debuginfo is
 * looked for only in the module itself and by build id under /usr/lib/debug (no debuginfod).
 *
 * Sessions allocate (malloc): never open one in a CUDA hook or a signal handler. Not
 * thread-safe: one thread per session. Functions return 0 or a negative errno.
 */
#ifndef GMT_SYMBOLIZE_DWSYM_H
#define GMT_SYMBOLIZE_DWSYM_H

#include <stddef.h>
#include <stdint.h>

#define GMT_SYM_MAX_INLINE 8
#define GMT_BUILD_ID_HEX   41 /* up to 20 bytes of build id in hex, NUL-terminated */

typedef struct gmt_srcloc_s {
    const char *symbol; /* demangled; NULL when unknown */
    const char *file;   /* as the compiler recorded it; NULL when unknown */
    int line;           /* 0 when unknown */
} gmt_srcloc_t;

/* One address: the function the instruction belongs to (the ELF symbol) with the source line
 * in that function, and the inlined calls active at the instruction, innermost first, each
 * with the line inside the inlined function. Reading order, innermost first:
 * inlined[0], ..., inlined[ninlined-1], then the function itself. */
typedef struct gmt_symres_s {
    gmt_srcloc_t fn;
    int ninlined;
    gmt_srcloc_t inlined[GMT_SYM_MAX_INLINE];
} gmt_symres_t;

typedef struct gmt_dwsym_s gmt_dwsym_t;

/* Opens a session. -ENOSYS when libdw cannot be loaded; why (may be NULL) then says why. */
int gmt_dwsym_open(gmt_dwsym_t **out, char *why, size_t why_len);
void gmt_dwsym_close(gmt_dwsym_t *s);

/* Resolves the instruction at offset in the module at path. build_id (hex, may be NULL or "")
 * must match the file's when given (a file without a build id matches none). *out stays valid
 * until the session closes; its strings are NULL where unknown. -ENOENT: the file cannot be
 * read as ELF; -ESTALE: build id differs, or the file has none while build_id is given;
 * -ERANGE: the offset is outside the module. */
int gmt_dwsym_resolve(gmt_dwsym_t *s, const char *path, const char *build_id, uint64_t offset,
                      const gmt_symres_t **out);

/* Demangles an Itanium C++ name into buf; returns buf, or name itself when it is not mangled
 * or no demangler is available. */
const char *gmt_demangle(const char *name, char *buf, size_t len);

#endif
