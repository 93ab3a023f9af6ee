/* pylayout.h - private to pyframes.c (and its unit test): the structure offsets of one
 * CPython minor version, as generated into pylayouts.inc by scripts/gen_pylayouts.sh.
 * NONE marks a field the version does not have.
 */
#ifndef GMT_CORE_PYLAYOUT_H
#define GMT_CORE_PYLAYOUT_H

#include <stdint.h>

#define NONE 0xffff

typedef struct layout_s {
    int minor;
    uint16_t ob_type;
    uint16_t tp_name, tp_dealloc; /* PyTypeObject's */
    uint16_t ts_frame, ts_cframe, ts_root_cframe, cf_current;
    uint16_t fr_back, fr_code, fr_instr, fr_is_entry, fr_owner, fr_size;
    uint16_t ts_chunk, ts_top;                  /* 3.11+: datastack_chunk, datastack_top */
    uint16_t chunk_size, chunk_top, chunk_data; /* 3.11+: _PyStackChunk */
    uint16_t owner_cstack; /* 3.12+: FRAME_OWNED_BY_CSTACK, the shim of a native eval frame */
    uint16_t co_filename, co_name, co_qualname, co_code, co_firstlineno, co_linetable;
    uint16_t co_version; /* 3.12+: a number each new code object takes from a counter */
    uint16_t co_codeobj; /* 3.9-3.10: the bytecode's bytes object (co_code) */
    uint16_t bytes_size, bytes_sval;
    uint16_t str_state, str_length, str_ascii_size, str_compact_size;
    uint16_t str_kind_bit, str_compact_bit, str_ascii_bit; /* bit positions in the state word */
    /* 3.13+: where each field sits in _Py_DebugOffsets */
    uint16_t dbg_cookie_version, dbg_free_threaded, dbg_ts_frame, dbg_fr_back, dbg_fr_code,
        dbg_fr_instr, dbg_fr_owner, dbg_co_filename, dbg_co_name, dbg_co_qualname, dbg_co_linetable,
        dbg_co_firstlineno, dbg_co_code, dbg_ob_type, dbg_bytes_size, dbg_bytes_sval, dbg_str_state,
        dbg_str_length, dbg_str_ascii_size, dbg_size;
} layout_t;

static const layout_t gmt_py_layouts[] = {
#include "pylayouts.inc"
};

#endif
