/* symbolize.h - turning a return address into module, offset and symbol (dladdr).
 *
 * Full symbol tables and file:line come with the stacks work; dladdr gives exported and
 * dynamic symbols, which is what a -rdynamic program or a shared library shows. Frames of the
 * tracer itself, of libcuda, libcudart and libcupti are "internal": the report trims them
 * from the innermost end of each stack so users see their own code first.
 */
#ifndef GMT_OUTPUT_SYMBOLIZE_H
#define GMT_OUTPUT_SYMBOLIZE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct gmt_frame_info_s {
    const char *module; /* path as the loader knows it; NULL when unknown */
    uint64_t offset;    /* address - module base */
    const char *symbol; /* NULL when unknown */
    bool internal;
} gmt_frame_info_t;

/* Never fails: unknown parts are NULL. Returned strings belong to the loader. */
void gmt_symbolize(uint64_t addr, gmt_frame_info_t *out);

/* True for modules whose frames are trimmed (tracer, CUDA driver/runtime, CUPTI). */
bool gmt_module_is_internal(const char *path);

#endif
