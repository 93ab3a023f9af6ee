/* symbolize.h - turning a return address into module, offset and symbol (dladdr).
 *
 * dladdr gives exported and dynamic symbols at capture time; full symbol tables and file:line
 * are added when the report is written (src/symbolize/). Frames of the
 * tracer itself, of libcuda, libcudart and libcupti are "internal": the report trims them
 * from the innermost end of each stack so users see their own code first.
 */
#ifndef GMT_OUTPUT_SYMBOLIZE_H
#define GMT_OUTPUT_SYMBOLIZE_H

#include "module_class.h"

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

#endif
