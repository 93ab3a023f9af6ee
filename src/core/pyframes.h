/* pyframes.h - Python frames of the calling thread, read without the GIL, spliced into its
 * native stack.
 *
 * PyTorch's bindings release the GIL before an operator allocates and its caching allocator
 * holds its own mutex while it calls cudaMalloc, so a hook may never take the GIL. Instead the
 * calling thread's own thread state is found through the interpreter's GIL-state TSS key
 * (PyGILState_GetThisThreadState: a pthread_getspecific, no lock; still set while the thread
 * has released the GIL) and its frame chain is walked with the structure offsets of the
 * running CPython (3.9 to 3.12: pylayouts.inc, generated from each version's headers; 3.13:
 * the _Py_DebugOffsets the interpreter publishes in _PyRuntime). A read is either a kernel
 * copy that fails cleanly (pwritev into a private memfd, or process_vm_readv on the process
 * itself) or, on the fast path, a direct load of memory the thread's own live chain proves
 * alive and that was read through the kernel before (see pyframes.c), so a bad pointer is an
 * error code, never a crash; once warm a walk makes no system call.
 *
 * A Python frame is captured as one tagged word in the ordinary frame array: tag 0xA in the
 * top four bits (user addresses are below 2^57), a code-cache entry index and the instruction
 * byte offset. The code cache copies each code object's file name, qualified name, first line
 * and line table the first time it is seen, so file, function and line can be resolved at
 * report time even after the code object was freed. The cache is one flat region with offsets
 * rather than pointers (gmt_pycode_init(mem, bytes)), so it can live in a state file.
 *
 * Everything here is thread-safe. gmt_py_splice allocates nothing and takes no lock.
 * Functions return 0 or a negative errno unless stated otherwise.
 */
#ifndef GMT_CORE_PYFRAMES_H
#define GMT_CORE_PYFRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_PY_MAX_FRAMES 64 /* Python frames kept per stack, innermost first */

#define GMT_PY_TAG_SHIFT 60
#define GMT_PY_TAG       0xAull

static inline bool gmt_py_is_frame(uint64_t word)
{
    return (word >> GMT_PY_TAG_SHIFT) == GMT_PY_TAG;
}

/* Per stack and for the process; names as in the report. */
typedef enum gmt_py_status_e {
    GMT_PY_NOT_PYTHON = 0,  /* no CPython in the process */
    GMT_PY_OFF = 1,         /* GPUMEMTRACE_PYTHON=0 */
    GMT_PY_UNSUPPORTED = 2, /* a CPython this tracer cannot read */
    GMT_PY_CAPTURED = 3,    /* frames are captured (process) / this stack has some */
    GMT_PY_NO_FRAMES = 4,   /* this stack's thread was not running Python */
} gmt_py_status_t;

const char *gmt_py_status_name(gmt_py_status_t s);

/* Looks the interpreter up (dlsym(RTLD_DEFAULT): libpython or a python executable that
 * exports its symbols) and maps the code cache. Call once, off the hot path. An unsupported
 * version gets one error line. enabled=false: status "off", nothing is looked at further.
 * checked_only (GPUMEMTRACE_PY_CHECKED: diagnostics, benchmarks): every read through the
 * kernel, as before the fast path existed. */
int gmt_py_init(bool enabled, bool checked_only);

/* Process status and the interpreter's version ("3.12.1"; NULL when there is none). */
gmt_py_status_t gmt_py_status(void);
const char *gmt_py_version(void);

/* gmt_py_splice's key in, its findings out, and its handle for gmt_py_note_id. */
typedef struct gmt_py_splice_s {
    /* In: the native frames' capture token (stacks.h; 0: not named) and the event's tag and
     * the core's generation (tag | gen << 32), under which a stack id is noted. */
    uint64_t key_token, key_tag_gen;
    uint32_t python; /* out: the Python frames the thread had (0: frames left as they were) */
    /* Out: the stack id noted for these Python frames (a replay of a remembered walk that gave
     * the same words as a noted one) under the key; frames are then left as they were. */
    uint32_t noted;
    void *note; /* the note the id is written to (NULL: none), and its stamp then */
    uint32_t stamp;
    uint64_t site; /* the walk's call site (pyframes.c's site_key; 0: none) */
} gmt_py_splice_t;
/* Hot path. frames[0..n) are the calling thread's native frames, innermost first; inserts its
 * Python frames before each native frame of the evaluation loop that runs them (frames beyond
 * the native depth are appended at the outer end). Returns the new count (<= cap). */
uint32_t gmt_py_splice(uint64_t *frames, uint32_t n, uint32_t cap, gmt_py_splice_t *sp);
/* The stack id the caller gave the frames of sp's splice (the native frames sp's key token
 * names, with its Python frames): noted for the next replay with the same words and key. */
void gmt_py_note_id(const gmt_py_splice_t *sp, uint32_t id);
/* Whether gmt_py_splice may add frames (the process runs a CPython whose frames are read):
 * then equal native frames do not mean equal stacks. */
bool gmt_py_splicing(void);

/* Status of one captured stack: captured when it holds a Python frame, else the process
 * status, with "captured" turned into "no-python-frames" — or "off" for an empty stack (none
 * was taken: GPUMEMTRACE_STACK_DEPTH=0, or below GPUMEMTRACE_MIN_BYTES). */
gmt_py_status_t gmt_py_stack_status(const uint64_t *frames, uint32_t n);

/* Report time: file, function (NUL-terminated, owned by the cache; NULL when unknown) and line
 * (-1 when unknown) of a Python frame word. */
typedef struct gmt_py_frame_s {
    const char *file;
    const char *function;
    int line;
} gmt_py_frame_t;
int gmt_py_resolve(uint64_t word, gmt_py_frame_t *out);

/* The code cache: header, entries, hash index, text arena; all offsets. gmt_pycode_init writes
 * the header only: mem must be zeroed (a fresh mapping or region block), or the index's old ids
 * name entries past the new cache's. */
size_t gmt_pycode_bytes(uint32_t max_entries, uint64_t text_bytes);
int gmt_pycode_init(void *mem, size_t bytes, uint32_t max_entries, uint64_t text_bytes);
/* Recovery (docs/state.md): resolve frames from a dead process's code cache at mem (a private
 * copy: entries that point outside it are disabled and counted, gmt_py_code_damaged) and report
 * its status and version. mem NULL: no cache, only the status. Whatever an earlier call attached
 * is detached first, whatever this one finds (`top` recovers at every view). 0; -EINVAL when
 * mem is not a usable cache (its header fails the checks), -ENOENT when mem is NULL and status
 * is GMT_PY_CAPTURED: either way no Python frame is named, and gmt_py_recovered says so. */
int gmt_py_attach_recovered(void *mem, size_t bytes, gmt_py_status_t status, const char *version);
/* Whether gmt_py_attach_recovered ran (the report is a recovered one); then *cache_unusable:
 * its last call returned -EINVAL or -ENOENT, no cache to name Python frames by
 * (capture.python.code_cache_unusable). Else false and *cache_unusable false. */
bool gmt_py_recovered(bool *cache_unusable);
/* Whether a cache gmt_py_attach_recovered attached is the one frames resolve from; then
 * *damaged: its filled-in entries that pointed outside its text (or whose strings and line
 * table did not fit in it) and were disabled: their frames resolve to null file, function and
 * line (capture.python.code_cache_damaged). Else false and *damaged 0. */
bool gmt_py_code_damaged(uint64_t *damaged);
/* For tests (tests/integration/state_poke.c): damages the code cache at mem as a damaged state
 * file would be, putting past the text arena the text offset of every filled-in entry whose
 * function (qualified name) is one of names[0..n). Returns how many, or -EINVAL when mem is not
 * a usable cache. */
int gmt_py_test_damage_cache(void *mem, size_t bytes, const char *const *names, int n);
/* For tests (tests/integration/state_poke.c): damages the header of the code cache at mem so
 * that recovery refuses the whole cache (one bit of its magic). 0, or -EINVAL when mem is not a
 * usable cache. */
int gmt_py_test_break_cache_header(void *mem, size_t bytes);

/* Line of a byte offset into a code object's instructions, from its copied line table.
 * minor: CPython 3.minor (9: co_lnotab, 10: co_linetable, 11+: location table). -1: none. */
int gmt_py_addr2line(int minor, const uint8_t *table, uint32_t len, int firstlineno,
                     uint32_t offset);

/* For tests: use the built-in layout of 3.minor with made-up type pointers, as if that
 * interpreter were present, and walk the frame chain of tstate (any value: a bad pointer must
 * only end the walk). Returns the number of Python frames written to words. */
int gmt_py_test_use_layout(int minor, uint64_t code_type, uint64_t str_type, uint64_t bytes_type);
/* The same with the layout L (pylayout.h), a built-in one changed: the walks' general code,
 * which the built-in layouts' own constants (pyframes.c) leave aside. */
struct layout_s;
int gmt_py_test_use_layout_of(const struct layout_s *L, uint64_t code_type, uint64_t str_type,
                              uint64_t bytes_type);
uint32_t gmt_py_test_walk(uint64_t tstate, uint64_t *words, uint32_t cap);
/* The same under a note key (native token, nonzero) as the event path walks: the thread's call
 * sites first where the code hook vouches for it. *noted: the id a note or call site answered
 * with (words then not written), else 0, and id (nonzero) is noted for the words as the event
 * path notes the stack id it made. */
uint32_t gmt_py_test_walk_keyed(uint64_t tstate, uint64_t *words, uint32_t cap, uint64_t token,
                                uint32_t id, uint32_t *noted);
/* The call-site key of the last gmt_py_test_walk_keyed (0: the walk was no call site), and the
 * set of the thread's call-site table it falls in. */
uint64_t gmt_py_test_last_site(uint32_t *set);
/* Walks (all threads) that needed a kernel copy: 0 per allocation in the steady state on
 * 3.11+ (the fast path, see pyframes.c); every walk on 3.9/3.10. */
uint64_t gmt_py_checked_walks(void);
/* Frames whose code object could not be read (kept as unknown frames), walks whose outer
 * frames are not kept (they reached GMT_PY_MAX_FRAMES or a frame that could not be read), and code
 * objects the code cache had no room for (their frames resolve to unknown), all threads. */
uint64_t gmt_py_unreadable_frames(void);
uint64_t gmt_py_cut_walks(void);
uint64_t gmt_py_code_dropped(void);
/* Walks (all threads) answered by replaying one their thread remembers (pyframes.c). */
uint64_t gmt_py_replayed_walks(void);
/* Of them, those whose stack id was noted (gmt_py_splice_t.noted). */
uint64_t gmt_py_noted_walks(void);
/* Of them, those that loaded no code object: the code hook vouched for them (pyframes.c). */
uint64_t gmt_py_trusted_walks(void);
/* Of them, those answered from a call site the thread noted (pyframes.c's site_walk). */
uint64_t gmt_py_sited_walks(void);
/* The code hook (pyframes.c): "active" or "off", with why (*why, else NULL). */
const char *gmt_py_code_hook(const char **why);
/* Tests: the code hook put into the type object at type (laid out as gmt_py_test_use_layout's
 * layout says; type_type: what its type word must be), as gmt_py_init does for PyCode_Type (0:
 * active); and a walk's code stamp (0: no hook to vouch for it). */
int gmt_py_test_code_hook(uint64_t type, uint64_t type_type);
uint64_t gmt_py_test_code_stamp(void);
/* For tests: the calling thread's reads so far, through the kernel and direct. */
void gmt_py_test_reads(uint64_t *checked, uint64_t *direct);
/* Tests: whether two chains (innermost and outermost code object, frames) share a way of the
 * thread's remembered walks. */
bool gmt_py_test_same_way(uint64_t inner_a, uint64_t outer_a, uint32_t nr_a, uint64_t inner_b,
                          uint64_t outer_b, uint32_t nr_b);
/* For tests: the calling thread's walks answered by replaying one it remembers (pyframes.c). */
uint64_t gmt_py_test_replays(void);
/* For tests: the calling thread's frames whose code object's entry came from its last walk's
 * outer frames (a walk that was not a whole replay). */
uint64_t gmt_py_test_outer_reused(void);
/* For tests: gmt_py_splice's merge of n native frames with np Python frames (words, and
 * whether each ends its run), evaluation frames in [eval_lo, eval_hi); at most cap. */
uint32_t gmt_py_test_splice(uint64_t *frames, uint32_t n, uint32_t cap, const uint64_t *words,
                            const uint8_t *seg_end, uint32_t np, uint64_t eval_lo,
                            uint64_t eval_hi);
/* For tests: allow (true) or forbid the direct reads of the fast path; on allows them
 * without asking an interpreter whether it finalizes (there is none). */
void gmt_py_test_use_fast(bool on, uint64_t frame_type); /* frame_type: PyFrame_Type (3.9/3.10) */
/* For tests: read memory through the memfd (true, the default) or process_vm_readv only. */
void gmt_py_test_use_memfd(bool on);

#ifdef GMT_PROBES
uint64_t gmt_py_touch_chain(void); /* probe.h "pytouch" */
#endif
#endif
