/* pylayout_probe.c - prints one row of src/core/pylayouts.inc for the CPython whose headers it
 * is compiled against (scripts/gen_pylayouts.sh builds it with -DPy_BUILD_CORE and each pyenv
 * version's include directories). Only offsetof/sizeof: the tracer reads these structures from
 * memory and must never guess their layout.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030B0000
#include <internal/pycore_frame.h>
#endif
#if PY_VERSION_HEX >= 0x030D0000
#include <internal/pycore_runtime.h>
#endif

#define NONE         0xffff
#define P(name, val) printf(" .%s = %u,", name, (unsigned)(val))

/* Bit position of a str state bitfield: set it alone and look. */
#define STATE_BIT(field)                                                                           \
    do {                                                                                           \
        PyASCIIObject o;                                                                           \
        unsigned w = 0;                                                                            \
        memset(&o, 0, sizeof o);                                                                   \
        o.state.field = 1;                                                                         \
        memcpy(&w, (char *)&o + offsetof(PyASCIIObject, state), sizeof w);                         \
        P("str_" #field "_bit", __builtin_ctz(w));                                                 \
    } while (0)

int main(void)
{
    printf("{.minor = %d,", PY_MINOR_VERSION);
    P("ob_type", offsetof(PyObject, ob_type));
    P("tp_name", offsetof(PyTypeObject, tp_name));
    P("tp_dealloc", offsetof(PyTypeObject, tp_dealloc));
#if PY_VERSION_HEX < 0x030B0000
    /* 3.9, 3.10: the thread state points at a chain of PyFrameObject. */
    P("ts_frame", offsetof(PyThreadState, frame));
    P("ts_cframe", NONE);
    P("ts_root_cframe", NONE);
    P("cf_current", NONE);
    P("fr_back", offsetof(PyFrameObject, f_back));
    P("fr_code", offsetof(PyFrameObject, f_code));
    P("fr_instr", offsetof(PyFrameObject, f_lasti));
    P("fr_is_entry", NONE);
    P("fr_owner", NONE);
    P("fr_size", sizeof(PyFrameObject));
    P("ts_chunk", NONE);
    P("ts_top", NONE);
    P("chunk_size", NONE);
    P("chunk_top", NONE);
    P("chunk_data", NONE);
#else
    /* 3.11+: frames live in the thread's data-stack chunks (pycore_frame.h). */
    P("ts_chunk", offsetof(PyThreadState, datastack_chunk));
    P("ts_top", offsetof(PyThreadState, datastack_top));
    P("chunk_size", offsetof(_PyStackChunk, size));
    P("chunk_top", offsetof(_PyStackChunk, top));
    P("chunk_data", offsetof(_PyStackChunk, data));
#if PY_VERSION_HEX < 0x030D0000
    P("ts_frame", NONE);
    P("ts_cframe", offsetof(PyThreadState, cframe));
    /* A thread state that runs no Python code points at its own root C frame. */
    P("ts_root_cframe", offsetof(PyThreadState, root_cframe));
    P("cf_current", offsetof(_PyCFrame, current_frame));
    P("fr_code", offsetof(_PyInterpreterFrame, f_code));
    P("fr_instr", offsetof(_PyInterpreterFrame, prev_instr));
#else
    P("ts_frame", offsetof(PyThreadState, current_frame));
    P("ts_cframe", NONE);
    P("ts_root_cframe", NONE);
    P("cf_current", NONE);
    P("fr_code", offsetof(_PyInterpreterFrame, f_executable));
    P("fr_instr", offsetof(_PyInterpreterFrame, instr_ptr));
#endif
    P("fr_back", offsetof(_PyInterpreterFrame, previous));
#if PY_VERSION_HEX < 0x030C0000
    P("fr_is_entry", offsetof(_PyInterpreterFrame, is_entry));
#else
    P("fr_is_entry", NONE);
#endif
    P("fr_owner", offsetof(_PyInterpreterFrame, owner));
    P("fr_size", offsetof(_PyInterpreterFrame, localsplus));
#endif
#if PY_VERSION_HEX >= 0x030C0000
    P("owner_cstack", FRAME_OWNED_BY_CSTACK);
#else
    P("owner_cstack", NONE);
#endif
    P("co_filename", offsetof(PyCodeObject, co_filename));
    P("co_name", offsetof(PyCodeObject, co_name));
#if PY_VERSION_HEX >= 0x030B0000
    P("co_qualname", offsetof(PyCodeObject, co_qualname));
    P("co_code", offsetof(PyCodeObject, co_code_adaptive));
#else
    P("co_qualname", NONE);
    P("co_code", NONE);
#endif
    P("co_firstlineno", offsetof(PyCodeObject, co_firstlineno));
#if PY_VERSION_HEX >= 0x030A0000
    P("co_linetable", offsetof(PyCodeObject, co_linetable));
#else
    P("co_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
#if PY_VERSION_HEX >= 0x030C0000
    P("co_version", offsetof(PyCodeObject, co_version));
#else
    P("co_version", NONE);
#endif
#if PY_VERSION_HEX < 0x030B0000
    P("co_codeobj", offsetof(PyCodeObject, co_code));
#else
    P("co_codeobj", NONE);
#endif
    P("bytes_size", offsetof(PyVarObject, ob_size));
    P("bytes_sval", offsetof(PyBytesObject, ob_sval));
    P("str_state", offsetof(PyASCIIObject, state));
    P("str_length", offsetof(PyASCIIObject, length));
    P("str_ascii_size", sizeof(PyASCIIObject));
    P("str_compact_size", sizeof(PyCompactUnicodeObject));
    STATE_BIT(kind);
    STATE_BIT(compact);
    STATE_BIT(ascii);
#if PY_VERSION_HEX >= 0x030D0000
    /* Where each offset above sits inside the interpreter's published _Py_DebugOffsets. */
    P("dbg_cookie_version", offsetof(_Py_DebugOffsets, version));
    P("dbg_free_threaded", offsetof(_Py_DebugOffsets, free_threaded));
    P("dbg_ts_frame", offsetof(_Py_DebugOffsets, thread_state.current_frame));
    P("dbg_fr_back", offsetof(_Py_DebugOffsets, interpreter_frame.previous));
    P("dbg_fr_code", offsetof(_Py_DebugOffsets, interpreter_frame.executable));
    P("dbg_fr_instr", offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr));
    P("dbg_fr_owner", offsetof(_Py_DebugOffsets, interpreter_frame.owner));
    P("dbg_co_filename", offsetof(_Py_DebugOffsets, code_object.filename));
    P("dbg_co_name", offsetof(_Py_DebugOffsets, code_object.name));
    P("dbg_co_qualname", offsetof(_Py_DebugOffsets, code_object.qualname));
    P("dbg_co_linetable", offsetof(_Py_DebugOffsets, code_object.linetable));
    P("dbg_co_firstlineno", offsetof(_Py_DebugOffsets, code_object.firstlineno));
    P("dbg_co_code", offsetof(_Py_DebugOffsets, code_object.co_code_adaptive));
    P("dbg_ob_type", offsetof(_Py_DebugOffsets, pyobject.ob_type));
    P("dbg_bytes_size", offsetof(_Py_DebugOffsets, bytes_object.ob_size));
    P("dbg_bytes_sval", offsetof(_Py_DebugOffsets, bytes_object.ob_sval));
    P("dbg_str_state", offsetof(_Py_DebugOffsets, unicode_object.state));
    P("dbg_str_length", offsetof(_Py_DebugOffsets, unicode_object.length));
    P("dbg_str_ascii_size", offsetof(_Py_DebugOffsets, unicode_object.asciiobject_size));
    P("dbg_size", sizeof(_Py_DebugOffsets));
#endif
    printf("},\n");
    return 0;
}
