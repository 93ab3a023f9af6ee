/* symrep.h - native frames and library attribution for the report writer (report.c).
 *
 * One report at a time (the writer is serialised). Each module met in a stack is looked up
 * once per report (dladdr1: path, load address; build id from the mapped PT_NOTE; no file
 * I/O, no dl_iterate_phdr, whose lock fork does not reset) and, when `full` is set at
 * gmt_symrep_begin, a libdw session (dwsym.h) for function names, file:line and
 * inlined frames. `full` must be false where allocating is unsafe (a report from a CUDA hook,
 * or while a thread is stopped in a crash handler): then frames get module, offset, build id
 * and dladdr's symbol, and `gpumemtrace symbolize` can name them later. Everything the
 * not-full path uses comes from mmap and static storage.
 */
#ifndef GMT_SYMBOLIZE_SYMREP_H
#define GMT_SYMBOLIZE_SYMREP_H

#include "output/json_writer.h"

#include <stdbool.h>
#include <stdint.h>

void gmt_symrep_begin(bool full, uint32_t max_stack_ids);

/* Stacks of another process (a report rebuilt from a state file): the reports written after
 * this call resolve addresses against that process's module map instead of this one's, and
 * never ask dladdr. path and build_id (hex or NULL) must stay valid until the call with
 * (NULL, 0) that ends it. At most 2048 modules are used. */
typedef struct gmt_symrep_module_s {
    uint64_t start, end; /* mapped range: first loadable segment's page to the last one's end */
    const char *path;
    const char *build_id;
} gmt_symrep_module_t;
void gmt_symrep_set_foreign_modules(const gmt_symrep_module_t *mods, int n);
void gmt_symrep_end(void);

/* "symbols": {"resolver": "libdw"|"dladdr", "reason": why not libdw or null}. */
void gmt_symrep_write_status(jw_t *w);

/* One native frame object of the report's stacks (addr is a return address). */
void gmt_symrep_write_frame(jw_t *w, uint64_t addr);

/* The names suppression patterns are matched against for the native frame at return address
 * addr, NULL where unknown: module, symbol and file as gmt_symrep_write_frame writes them,
 * and dl_symbol, the dynamic symbol table's name (dladdr) where libdw gave the frame another
 * (a C++ name mangled; NULL in a report of another process's stacks, which dladdr does not
 * know). All NULL outside a session. */
typedef struct gmt_symrep_names_s {
    const char *module, *symbol, *file, *dl_symbol;
} gmt_symrep_names_t;
void gmt_symrep_names(uint64_t addr, gmt_symrep_names_t *out);

/* The library a stack's allocations are charged to (module basename), or NULL. */
const char *gmt_symrep_library(uint32_t stack_id);

/* Adds a live (memory-kind) group to the per-library exit bytes. */
void gmt_symrep_add_exit(uint32_t stack_id, int64_t bytes);

/* "libraries": [{library, peak_bytes, exit_bytes}] sorted by peak_bytes; peak bytes come from
 * each device's peak owners. */
void gmt_symrep_write_libraries(jw_t *w);

#endif
