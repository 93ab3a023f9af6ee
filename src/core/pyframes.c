/* pyframes.c - see pyframes.h.
 *
 * Walk, per version (innermost first):
 *   3.9, 3.10  tstate->frame -> PyFrameObject {f_back, f_code, f_lasti}; one native
 *              _PyEval_EvalFrameDefault per Python frame.
 *   3.11       tstate->cframe->current_frame -> _PyInterpreterFrame {f_code, previous,
 *              prev_instr, is_entry}; Python-to-Python calls share one native evaluation
 *              frame, and is_entry marks the outermost frame of each.
 *   3.12       as 3.11, but each native evaluation frame pushes a shim frame (owner
 *              FRAME_OWNED_BY_CSTACK) instead of setting is_entry.
 *   3.13       tstate->current_frame, f_executable (code or not), instr_ptr; offsets read
 *              from the interpreter's _Py_DebugOffsets.
 * The code cache is a lock-free insert-only hash like the stack store: reserve an entry, fill
 * it, publish it into the index with a CAS.
 */
#define _GNU_SOURCE
#include "pyframes.h"
#include "unwind.h"

#include "config.h"
#include "log.h"
#include "probe.h"
#include "pylayout.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define RLX __ATOMIC_RELAXED

#define MAX_WALK_STEPS (GMT_PY_MAX_FRAMES * 4) /* shims and non-code frames included */
#define READ_MAX       512                     /* bytes of a frame or code object read */
#define CODE_BATCH     16
#define CODE_READ_MAX  160 /* a code object head: the fields up to its line table */
#define NAME_MAX_UTF8  1024
#define TABLE_MAX      (256u << 10)

/* The process's view of its interpreter; written once by gmt_py_init, read-only after. */
static struct {
    gmt_py_status_t status;
    layout_t lay;
    uint32_t frame_read, code_read; /* bytes to read of a frame and of a code object */
    uint64_t code_type, str_type, bytes_type;
    uint64_t frame_type;        /* 3.9, 3.10: PyFrame_Type (the fast path learns frame objects) */
    void *(*this_tstate)(void); /* PyGILState_GetThisThreadState */
    uint64_t eval_lo, eval_hi;  /* _PyEval_EvalFrameDefault */
    int (*is_finalizing)(void); /* _Py_IsFinalizing (3.11, 3.12) / Py_IsFinalizing (3.13) */
    int fast;                   /* 3.11+: the direct reads of the fast path may be used */
    char version[32];
} py;

/* Reads of the calling thread: kernel copies (each one system call or more) and direct loads
 * (tests look at these); walks that needed a kernel copy, for the report. */
static __thread uint64_t n_checked __attribute__((tls_model("initial-exec")));
static __thread uint64_t n_direct __attribute__((tls_model("initial-exec")));
/* Frames whose entry came from the last walk's outer frames (memo_suffix; tests). */
static __thread uint64_t n_outer __attribute__((tls_model("initial-exec")));
static uint64_t checked_walks; /* atomic */
/* Atomic, for the report (capture.python): frames whose code object could not be read, each
 * kept as an unknown frame (file, function and line null) in its place rather than left out,
 * which made a caller look like it called its callee's callee; and walks whose outer frames
 * are not kept: they reached GMT_PY_MAX_FRAMES, or a frame that could not be read. */
static uint64_t unreadable_frames;
static uint64_t cut_walks;

/* Checked reads. The kernel copies from any address of ours and fails cleanly (EFAULT or a
 * short count) where nothing readable is mapped, so a bad pointer never faults:
 *  - process_vm_readv on the process itself: one call per read, but it pins every page of
 *    every range (~0.4 us per further range here), so it serves single reads and windows;
 *  - for many scattered small ranges: pwritev from the addresses into this thread's slot of a
 *    private memfd, then pread back; copy_from_user costs little per range (13 ranges: ~2 us
 *    against ~10 us). Not used where memfd_create is unavailable, for threads beyond
 *    MEM_SLOTS, for reads larger than a slot, or when the descriptor is no longer ours (a
 *    program that closed it and reused the number must never see our writes: its device
 *    and inode are checked before every use). */
#define MEM_SLOTS      256
#define MEM_SLOT_BYTES (16u << 10)

static pid_t self_pid;
static int mem_fd = -1;
static dev_t mem_dev;
static ino_t mem_ino;
static uint32_t mem_next_slot; /* atomic */
static int use_memfd = 1;      /* tests switch it off to cover the fallback */
static __thread int32_t mem_slot __attribute__((tls_model("initial-exec"))); /* slot + 1 */

static int thread_slot(void)
{
    if (mem_slot == 0) {
        uint32_t s = __atomic_fetch_add(&mem_next_slot, 1, RLX);
        mem_slot = s < MEM_SLOTS ? (int32_t)s + 1 : -1;
    }
    return mem_slot > 0 ? mem_slot - 1 : -1;
}

static void open_memfd(void)
{
    if (mem_fd >= 0) close(mem_fd);
    mem_fd = -1;
    int fd = (int)syscall(SYS_memfd_create, "gpumemtrace-pyread", 1u /* MFD_CLOEXEC */);
    if (fd < 0) return;
    /* Far from the small numbers a program opens and closes itself. */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
    if (high >= 0) {
        close(fd);
        fd = high;
    }
    struct stat st;
    if (ftruncate(fd, (off_t)MEM_SLOTS * MEM_SLOT_BYTES) != 0 || fstat(fd, &st) != 0) {
        close(fd);
        return;
    }
    mem_dev = st.st_dev;
    mem_ino = st.st_ino;
    mem_fd = fd;
}

/* Copies the remote ranges, concatenated, into dst (total bytes at most); returns how many
 * bytes were copied: always a prefix, short at the first unreadable range. */
static size_t gather(uint8_t *dst, const struct iovec *remote, int n, size_t total)
{
    for (int i = 0; i < n; i++) {
        uint64_t a = (uint64_t)(uintptr_t)remote[i].iov_base;
        if (a < 4096 || a + remote[i].iov_len < a || (a >> 56) != 0) {
            n = i; /* never hand the kernel an address that cannot be ours */
            break;
        }
    }
    if (n == 0) return 0;
    n_checked++;
    /* process_vm_readv is as cheap for one or two ranges and cheaper for whole pages; the
     * memfd wins by far for many small scattered ranges (code-object heads). */
    int slot = use_memfd && n >= 3 && mem_fd >= 0 && total <= MEM_SLOT_BYTES ? thread_slot() : -1;
    struct stat st;
    if (slot >= 0 && fstat(mem_fd, &st) == 0 && st.st_dev == mem_dev && st.st_ino == mem_ino) {
        off_t off = (off_t)slot * MEM_SLOT_BYTES;
        /* The raw system call: a sanitizer's pwritev wrapper would check the (deliberately
         * unchecked) source ranges itself. x86-64/aarch64: offset in one register. */
        ssize_t w = syscall(SYS_pwritev, mem_fd, remote, n, (unsigned long)off, 0ul);
        if (w <= 0) return 0;
        ssize_t r = pread(mem_fd, dst, (size_t)w, off);
        return r == w ? (size_t)w : 0;
    }
    struct iovec local = {dst, total};
    ssize_t got = process_vm_readv(self_pid, &local, 1, remote, (unsigned long)n, 0);
    return got > 0 ? (size_t)got : 0;
}

static int safe_read(void *dst, uint64_t src, size_t n)
{
    struct iovec r = {(void *)(uintptr_t)src, n};
    return gather(dst, &r, 1, n) == n ? 0 : -EFAULT;
}

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void refresh_pid(void)
{
    self_pid = getpid();
}

/* A forked child shares the parent's memfd (one open file): it gets its own. */
static void after_fork_child(void)
{
    refresh_pid();
    if (mem_fd >= 0) open_memfd();
}

/* ---- code cache --------------------------------------------------------------------------- */

#define PYCODE_MAGIC 0x676d74707963646full /* "gmtpycdo" */

typedef struct pycode_entry_s {
    uint64_t code;  /* the code object's address */
    uint64_t ident; /* its file and name pointers and first line: detects a reused address */
    uint64_t text;  /* offset of file\0function\0table in the arena */
    uint32_t table_len;
    int32_t firstlineno;
    uint32_t ready; /* atomic: 1 once filled in */
    uint32_t pad;
} pycode_entry_t;

typedef struct pycode_s {
    uint64_t magic;
    uint32_t max_entries; /* ids 1 .. max_entries-1; 0: unknown code */
    uint32_t index_mask;
    uint64_t text_bytes;
    uint32_t next_id;   /* atomic */
    uint32_t minor;     /* CPython 3.minor whose line tables are stored */
    uint64_t next_text; /* atomic */
    uint64_t dropped;   /* atomic: code objects that did not fit */
    /* followed by entries[max_entries], index[index_mask+1] (uint32), text[text_bytes] */
} pycode_t;

static pycode_t *cache;
/* Bumped at every store of `cache`: an entry id is only meaningful in the cache that gave it
 * (a walk's replay below checks it). */
static uint32_t cache_gen;

static uint32_t pow2_at_least(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return (uint32_t)p;
}

static pycode_entry_t *cache_entries(pycode_t *c)
{
    return (pycode_entry_t *)(c + 1);
}

static uint32_t *cache_index(pycode_t *c)
{
    return (uint32_t *)(cache_entries(c) + c->max_entries);
}

static char *cache_text(pycode_t *c)
{
    return (char *)(cache_index(c) + c->index_mask + 1);
}

size_t gmt_pycode_bytes(uint32_t max_entries, uint64_t text_bytes)
{
    uint32_t index = pow2_at_least((uint64_t)max_entries * 2);
    return sizeof(pycode_t) + (size_t)max_entries * sizeof(pycode_entry_t) +
           (size_t)index * sizeof(uint32_t) + text_bytes;
}

int gmt_pycode_init(void *mem, size_t bytes, uint32_t max_entries, uint64_t text_bytes)
{
    if (!mem || max_entries < 2 || max_entries > (1u << 27) ||
        bytes < gmt_pycode_bytes(max_entries, text_bytes))
        return -EINVAL;
    pycode_t *c = mem;
    memset(c, 0, sizeof *c);
    c->max_entries = max_entries;
    c->index_mask = pow2_at_least((uint64_t)max_entries * 2) - 1;
    c->text_bytes = text_bytes;
    c->next_id = 1;
    c->minor = (uint32_t)py.lay.minor;
    c->magic = PYCODE_MAGIC;
    __atomic_store_n(&cache, c, __ATOMIC_RELEASE);
    __atomic_fetch_add(&cache_gen, 1, __ATOMIC_RELEASE);
    return 0;
}

/* Append a UTF-8 copy of a str object (compact strings only: code names always are) to dst;
 * returns the bytes written, 0 when it is not a readable str. A string longer than dst holds
 * ends in CUT_MARK where it was cut (a file name of thousands of bytes: generated code). */
#define CUT_MARK "\xe2\x80\xa6" /* U+2026, an ellipsis: no character of a path */
static size_t copy_str(uint64_t obj, char *dst, size_t cap)
{
    const layout_t *L = &py.lay;
    uint8_t head[READ_MAX];
    size_t hsize = L->str_compact_size;
    if (hsize > sizeof head || safe_read(head, obj, hsize)) return 0;
    if (ld64(head + L->ob_type) != py.str_type) return 0;
    uint32_t state = ld32(head + L->str_state);
    unsigned kind = (state >> L->str_kind_bit) & 7, compact = (state >> L->str_compact_bit) & 1,
             ascii = (state >> L->str_ascii_bit) & 1;
    if (!compact || (kind != 1 && kind != 2 && kind != 4)) return 0;
    uint64_t len = ld64(head + L->str_length);
    uint64_t data = obj + (ascii ? L->str_ascii_size : L->str_compact_size);
    size_t out = 0, room = cap - sizeof CUT_MARK; /* a character is at most 4 bytes */
    uint8_t chunk[256];
    uint64_t i = 0;
    while (i < len && out + 4 < room) {
        uint64_t take = len - i, j = 0;
        if (take > sizeof chunk / kind) take = sizeof chunk / kind;
        if (safe_read(chunk, data + i * kind, take * kind)) return 0;
        for (; j < take && out + 4 < room; j++) {
            uint32_t cp = chunk[j];
            if (kind == 2) {
                uint16_t u;
                memcpy(&u, chunk + 2 * j, 2);
                cp = u;
            } else if (kind == 4) {
                cp = ld32(chunk + 4 * j);
            }
            if (cp >= 0xd800 && cp < 0xe000) cp = '?'; /* lone surrogate: not valid UTF-8 */
            if (cp > 0x10ffff) cp = '?';
            if (cp < 0x80) {
                dst[out++] = (char)cp;
            } else if (cp < 0x800) {
                dst[out++] = (char)(0xc0 | (cp >> 6));
                dst[out++] = (char)(0x80 | (cp & 0x3f));
            } else if (cp < 0x10000) {
                dst[out++] = (char)(0xe0 | (cp >> 12));
                dst[out++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                dst[out++] = (char)(0x80 | (cp & 0x3f));
            } else {
                dst[out++] = (char)(0xf0 | (cp >> 18));
                dst[out++] = (char)(0x80 | ((cp >> 12) & 0x3f));
                dst[out++] = (char)(0x80 | ((cp >> 6) & 0x3f));
                dst[out++] = (char)(0x80 | (cp & 0x3f));
            }
        }
        i += j;
    }
    if (i < len) {
        memcpy(dst + out, CUT_MARK, sizeof CUT_MARK - 1);
        out += sizeof CUT_MARK - 1;
    }
    return out;
}

/* Fill entry e from the code object (head: its first code_read bytes). */
static void fill_entry(pycode_t *c, pycode_entry_t *e, const uint8_t *head)
{
    const layout_t *L = &py.lay;
    char file[NAME_MAX_UTF8], func[NAME_MAX_UTF8];
    size_t flen = copy_str(ld64(head + L->co_filename), file, sizeof file);
    uint64_t nameobj = ld64(head + (L->co_qualname != NONE ? L->co_qualname : L->co_name));
    size_t nlen = copy_str(nameobj, func, sizeof func);
    /* The line table: a bytes object. */
    uint64_t tobj = ld64(head + L->co_linetable), tlen = 0;
    uint8_t bhead[64];
    if (L->bytes_sval <= sizeof bhead && !safe_read(bhead, tobj, L->bytes_sval) &&
        ld64(bhead + L->ob_type) == py.bytes_type) {
        tlen = ld64(bhead + L->bytes_size);
        if ((int64_t)tlen < 0) tlen = 0;
        if (tlen > TABLE_MAX) tlen = TABLE_MAX; /* lines past it show as unknown */
    }
    uint64_t need = flen + 1 + nlen + 1 + tlen;
    uint64_t off = __atomic_fetch_add(&c->next_text, need, RLX);
    if (off + need > c->text_bytes) {
        /* No room for the text: the entry stays, its frames resolve to "unknown". */
        __atomic_fetch_add(&c->dropped, 1, RLX);
        e->text = UINT64_MAX;
        return;
    }
    char *t = cache_text(c) + off;
    memcpy(t, file, flen);
    t[flen] = 0;
    memcpy(t + flen + 1, func, nlen);
    t[flen + 1 + nlen] = 0;
    uint8_t *tab = (uint8_t *)t + flen + 1 + nlen + 1;
    if (tlen && safe_read(tab, tobj + L->bytes_sval, tlen)) tlen = 0;
    e->text = off;
    e->table_len = (uint32_t)tlen;
}

static uint64_t code_hash(uint64_t code, uint64_t ident)
{
    uint64_t h = (code ^ (ident * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* The layout's offsets (and the code type) that a walk reads for every frame, copied from
 * py.lay once a walk: read as py.lay's fields, each was loaded again for every frame, since
 * the walk's stores (its raw frames, the counters) might have changed them for all the
 * compiler knew. */
typedef struct walk_offs_s {
    uint32_t fr_back, fr_code, fr_instr, fr_is_entry, fr_owner, owner_cstack;
    uint32_t ob_type, co_filename, co_name, co_firstlineno, co_code;
    uint32_t co_linetable, co_version, co_codeobj, bytes_size, bytes_sval;
    int minor;
    uint64_t code_type;
} walk_offs_t;

static inline void walk_offs_load(walk_offs_t *o)
{
    const layout_t *L = &py.lay;
    *o = (walk_offs_t){
        .fr_back = L->fr_back,
        .fr_code = L->fr_code,
        .fr_instr = L->fr_instr,
        .fr_is_entry = L->fr_is_entry,
        .fr_owner = L->fr_owner,
        .owner_cstack = L->owner_cstack,
        .ob_type = L->ob_type,
        .co_filename = L->co_filename,
        .co_name = L->co_name,
        .co_firstlineno = L->co_firstlineno,
        .co_code = L->co_code,
        .co_linetable = L->co_linetable,
        .co_version = L->co_version,
        .co_codeobj = L->co_codeobj,
        .bytes_size = L->bytes_size,
        .bytes_sval = L->bytes_sval,
        .minor = L->minor,
        .code_type = py.code_type,
    };
}

/* 3.9-3.11: a print of the line table's content: its length and its first (up to) 8 and last 8
 * bytes (what a line moved by blank lines or statements changes in the tables of 3.9-3.11: the
 * first entries' line deltas, or the length). Loaded directly (direct: the head was, so the
 * code object is alive, a live frame holds it, and so is its table) or through the kernel. 0
 * when the table's address is not plausible or its read fails. */
static bool plausible(uint64_t a, uint64_t n);
__attribute__((noinline, cold)) static uint64_t table_words_read(const walk_offs_t *o,
                                                                 uint64_t tobj, uint64_t *w)
{
    uint8_t b[READ_MAX];
    if ((size_t)o->bytes_sval + 8 > sizeof b || safe_read(b, tobj, o->bytes_sval + 8u)) return 0;
    uint64_t len = ld64(b + o->bytes_size);
    if (len > TABLE_MAX) return 0;
    w[0] = ld64(b + o->bytes_sval);
    uint8_t last[8] = {0};
    if (len >= 16 && safe_read(last, tobj + o->bytes_sval + len - 8, 8)) return 0;
    w[1] = ld64(last);
    return len;
}

static inline uint64_t table_print(const walk_offs_t *o, uint64_t tobj, bool direct)
{
    if ((tobj & 7) || !plausible(tobj, o->bytes_sval + TABLE_MAX)) return 0;
    uint64_t w[2] = {0, 0}, len;
    if (direct) {
        const uint8_t *t = (const uint8_t *)(uintptr_t)tobj;
        len = ld64(t + o->bytes_size);
        if (len > TABLE_MAX) return 0;
        /* A table shorter than 8 bytes is loaded as 8 (masked to its length below): ob_sval is
         * 16-byte aligned in a block rounded up to 16 bytes (pymalloc's and malloc's), so the
         * load stays inside the object's block. */
        w[0] = ld64(t + o->bytes_sval);
        if (len >= 16) w[1] = ld64(t + o->bytes_sval + len - 8);
    } else {
        len = table_words_read(o, tobj, w);
    }
    if (len < 8) w[0] &= (1ull << (8 * len)) - 1;
    uint64_t h = (len * 0x9e3779b97f4a7c15ull ^ w[0]) * 0xff51afd7ed558ccdull;
    return (h ^ w[1]) * 0xc4ceb9fe1a85ec53ull;
}

/* What tells one code object from another at the same address (head: its first bytes, already
 * type-checked, of a code object a live frame holds): its file and name objects, its first
 * line and its line table's address; and, since a code object made at a freed one's address
 * often gets all of those at the freed one's addresses too (exec of one string after another:
 * every "<string>" code object's file, name and first line are the same), 3.12+'s co_version
 * (each new code object takes the next number of a counter), or before 3.12, where there is
 * none, the line table's print (table_print) and the bytecode's length (3.11: inline) or
 * object (3.9-3.10). An audit found lines and names of freed code objects given to new ones
 * (session 25): docs/python.md, "Code objects that reuse an address". */
static inline uint64_t code_ident(const walk_offs_t *o, const uint8_t *head, bool direct)
{
    int32_t first = (int32_t)ld32(head + o->co_firstlineno);
    uint64_t tobj = ld64(head + o->co_linetable);
    uint64_t id = ld64(head + o->co_filename) ^ (ld64(head + o->co_name) << 1) ^
                  ((uint64_t)(uint32_t)first << 40) ^ (tobj * 0x9e3779b97f4a7c15ull);
    if (o->co_version != NONE)
        return id ^ ((uint64_t)ld32(head + o->co_version) * 0xff51afd7ed558ccdull);
    uint64_t code_words = o->co_codeobj != NONE ? ld64(head + o->co_codeobj)
                                                : ld64(head + o->bytes_size); /* 3.11: units */
    return id ^ ((code_words ^ table_print(o, tobj, direct)) * 0xc4ceb9fe1a85ec53ull);
}

/* Whether the code object at head (loaded directly: a live frame holds it) is no longer the
 * one a remembered walk saw there (its type and identity words; ident: code_ident's then). A
 * probe build's "pyident" switch checks neither (core/probe.h). */
static inline bool code_changed(const walk_offs_t *o, const uint8_t *head, uint64_t ident)
{
    if (GMT_PROBE_SKIPS(GMT_PROBE_PYIDENT)) return false;
    return ld64(head + o->ob_type) != o->code_type || code_ident(o, head, true) != ident;
}

/* Entry id of a code object (head: its first bytes, already type-checked; ident: its
 * code_ident); 0 when the cache is full or absent. Lock-free. */
static uint32_t code_id(uint64_t code, const uint8_t *head, uint64_t ident)
{
    pycode_t *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (!c) return 0;
    const layout_t *L = &py.lay;
    int32_t first = (int32_t)ld32(head + L->co_firstlineno);
    uint64_t h = code_hash(code, ident);
    uint32_t *index = cache_index(c);
    pycode_entry_t *ents = cache_entries(c);
    uint32_t mine = 0;
    for (uint32_t i = 0; i <= c->index_mask && i < 64; i++) {
        uint32_t *slot = &index[(h + i) & c->index_mask];
        uint32_t id = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (id == 0) {
            if (!mine) {
                mine = __atomic_fetch_add(&c->next_id, 1, RLX);
                if (mine >= c->max_entries) {
                    __atomic_store_n(&c->next_id, c->max_entries, RLX);
                    break;
                }
                pycode_entry_t *e = &ents[mine];
                e->code = code;
                e->ident = ident;
                e->firstlineno = first;
                fill_entry(c, e, head);
                __atomic_store_n(&e->ready, 1, __ATOMIC_RELEASE);
            }
            if (__atomic_compare_exchange_n(slot, &id, mine, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
                return mine;
        }
        pycode_entry_t *e = &ents[id];
        if (__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) && e->code == code && e->ident == ident)
            return id; /* (an entry we reserved and lost stays unused) */
    }
    __atomic_fetch_add(&c->dropped, 1, RLX);
    return 0;
}

/* ---- the walk ----------------------------------------------------------------------------- */

typedef struct pyframe_s {
    uint64_t word;
    uint8_t seg_end; /* the outermost Python frame run by one native evaluation frame */
} pyframe_t;

/* A local copy of the memory around the frame last read: in 3.11+ a thread's frames sit
 * next to each other in its data stack (each caller below its callee), so one read usually
 * serves several frames. The window is the frame's page up to the frame's end, plus the page
 * below when it is readable: whole pages, so a read of them succeeds or fails as one. */
#define PAGE       4096u
#define PAGE_BYTES PAGE
#define WIN_SIZE   (2 * PAGE + READ_MAX)

typedef struct window_s {
    uint64_t base[2]; /* [0]: the frame's page up to its end; [1]: the page below */
    uint32_t len[2];
    uint8_t buf[WIN_SIZE]; /* [0] at buf, [1] right after it */
} window_t;

static const uint8_t *window_get(window_t *w, uint64_t addr, uint32_t n)
{
    if (addr < 4096 || addr + n < addr || (addr >> 56) != 0)
        return NULL; /* before the hit
test: addr + n must not wrap into the window */
    for (int i = 0, at = 0; i < 2; at += (int)w->len[i], i++)
        if (w->len[i] && addr >= w->base[i] && addr + n <= w->base[i] + w->len[i])
            return w->buf + at + (addr - w->base[i]);
    uint64_t page = addr & ~(uint64_t)(PAGE - 1);
    uint32_t own = (uint32_t)(addr + n - page); /* <= PAGE + READ_MAX */
    struct iovec remote[2] = {{(void *)(uintptr_t)page, own},
                              {(void *)(uintptr_t)(page - PAGE), PAGE}};
    size_t got = gather(w->buf, remote, page >= 2 * PAGE ? 2 : 1, (size_t)own + PAGE);
    w->len[0] = w->len[1] = 0;
    if (got < own) return NULL;
    w->base[0] = page;
    w->len[0] = own;
    if (got == (size_t)own + PAGE) {
        w->base[1] = page - PAGE;
        w->len[1] = PAGE;
    }
    return w->buf + (addr - page);
}

/* ---- the fast path (3.11+): direct loads where the memory is proven alive ------------------
 *
 * The calling thread is inside our hook, so its own thread state and frame chain cannot change
 * under us, and CPython keeps alive what that chain references: the thread's data-stack chunks
 * (linked from tstate->datastack_chunk by `previous`; each one mapping), the frames in their
 * live part (below datastack_top, or below a previous chunk's top), the code objects those
 * frames hold strong references to (f_code / f_executable), and the C-stack structures of the
 * evaluation loops that are our callers (3.11/3.12 _PyCFrame, 3.12+ shim frames). What is
 * loaded directly is only ever:
 *  - the thread state's first bytes and the chunk headers and ranges, once each has been read
 *    through the kernel by this thread (cached per thread, keyed by the thread state);
 *  - a frame inside the live part of a chunk of the current chunk list;
 *  - the type word of the code object such a frame references, and its head when that type is
 *    PyCode_Type;
 *  - a C-stack structure above this thread's stack pointer, inside the run of whole pages of
 *    its stack that this thread has proven readable through the kernel (a page with one
 *    readable byte is readable; the pages between two proven ones are checked when the run
 *    grows over them). A model's modules re-enter the interpreter from C at every level of
 *    nesting, each entry with its structures at another place of the stack: a run of pages
 *    serves them all, where a list of addresses read before would be too short.
 * Everything else (generator and coroutine frames, which live inside their heap objects; a
 * chunk not seen before; a C-stack structure outside the run) goes through the kernel copy.
 * While the interpreter finalizes (it then frees other threads' states) nothing is direct. */
#define KNOWN_CHUNKS    8
#define CHUNK_MAX       (1u << 20) /* larger chunks (rare: huge frames) stay on the checked path */
#define STACK_RUN_MAX   CHUNK_MAX  /* the proven run of stack pages: what range_readable checks */
#define STACK_SPAN      (64ull << 20)
#define TSTATE_HEAD_MAX 512u

/* Per thread slot (MEM_SLOTS of them, the memfd's numbering): addresses at which this thread
 * has read a code object through the kernel before. Only such an address is loaded directly,
 * so a frame that is not what it seems can never make us load from an address nothing was
 * ever read at. Direct-mapped; a collision costs one kernel copy. */
#define KNOWN_CODE 512
static uint64_t *known_code_mem; /* [MEM_SLOTS][2][KNOWN_CODE], mapped by map_cache */

static uint64_t *known_code_of_thread(void)
{
    int slot = known_code_mem ? thread_slot() : -1;
    return slot >= 0 ? known_code_mem + (size_t)slot * 2 * KNOWN_CODE : NULL;
}

/* 3.9, 3.10: the same for frame objects (PyFrame_Type read there through the kernel). */
static uint64_t *known_frames_of_thread(void)
{
    uint64_t *k = known_code_of_thread();
    return k ? k + KNOWN_CODE : NULL;
}

/* The thread's remembered walks, for their replay (walk(), step 1b): per raw frame its code
 * object, the identity words read from it (code_ident), its entry id and whether it ended a
 * native evaluation frame's run. PY_WAYS chains a thread, one per way by a hash of the chain's
 * innermost and outermost code objects and its length (a model's call sites allocate in turn,
 * every step: one remembered walk was written over by each of them). In the per-thread slot's
 * numbering (a slot is one thread's for good, and threads beyond MEM_SLOTS have none), mapped
 * by map_cache (touched as used). */
#define PY_WAY_BITS 6
#define PY_WAYS     (1u << PY_WAY_BITS)
/* A way's replays come out with other words when the chain's frames are at other lines (a
 * function that allocates at several): a way keeps PY_NOTE_WAYS of the word lists its replays
 * gave, each with the stack id the event path noted for it and the native frames' token
 * (gmt_py_splice_t), written in turn. Chains longer than PY_NOTE_FRAMES keep none. */
#define PY_NOTE_WAYS   8 /* one function allocating from several lines through one chain */
#define PY_NOTE_FRAMES 32
typedef struct pynote_s {
    uint32_t nr;             /* words held; 0: none */
    uint32_t stamp;          /* changed whenever the words are written: a handle's check */
    uint64_t token, tag_gen; /* the noted id's key (0: none) */
    uint32_t id;
    /* The frames' instructions the words were made from, under the way's content `content`:
     * while the way holds that content (the same code objects and entry ids), the same
     * instructions make the same words, so a replay compares these and builds no word. Each
     * as note_instr_of keeps it (3.11+: with its frame's run end, one compare a frame). */
    uint32_t content;
    uint64_t word[PY_NOTE_FRAMES];
    uint64_t instr[PY_NOTE_FRAMES];
} pynote_t;
typedef struct walkway_s {
    uint32_t gen;    /* cache_gen when recorded */
    uint32_t nr;     /* raw frames; 0: nothing to replay */
    uint64_t cstamp; /* the code stamp its code objects were last seen under (0: none) */
    uint8_t seg[GMT_PY_MAX_FRAMES];
    uint32_t id[GMT_PY_MAX_FRAMES];
    uint64_t code[GMT_PY_MAX_FRAMES], ident[GMT_PY_MAX_FRAMES];
    uint32_t note_next; /* the note written next when none holds the words */
    uint32_t content;   /* changed whenever the way is written (pynote_t's instr) */
    uint32_t note_hit;  /* the note the last replay found or wrote */
    pynote_t note[PY_NOTE_WAYS];
} walkway_t;
/* A thread's call sites (walk(), step 0): a walk whose id a note holds, indexed by a key of
 * its frames' instructions and run ends and the note's key (the native frames' token, the tag
 * and generation), names the way and the note that hold it, so that the next walk from that
 * site compares the chain with them as it reads it (site_walk) instead of reading it into raw
 * frames, finding the way and replaying. Two ways a set: a site new to its set goes in front
 * and the one that was there moves behind, so that two sites of one set used in turn (a loop's
 * two allocating lines) both keep their entries, where a direct-mapped table had them write
 * each other over on every walk (1 run in 256 of two such sites); key 0: empty. */
#define PY_SITE_SET_BITS 7
#define PY_SITES         (2u << PY_SITE_SET_BITS)
typedef struct pysite_s {
    uint64_t key;
    uint8_t way, note;
} pysite_t;
typedef struct walkmemo_s {
    uint8_t busy;     /* a walk of this thread is using it (one nested in it goes without) */
    uint8_t last;     /* the way of the thread's last remembered walk (memo_suffix's) */
    uint64_t replays; /* walks answered by the replay: written by the owner, summed on read */
    uint64_t noted;   /* of them, answered with a noted stack id (same) */
    uint64_t trusted; /* of them, with no code object loaded: the code hook vouched (same) */
    uint64_t sited;   /* of them, answered by site_walk (same) */
    walkway_t way[PY_WAYS];
    pysite_t site[PY_SITES];
} walkmemo_t;
static walkmemo_t *walk_memo_mem; /* [MEM_SLOTS] */

static walkmemo_t *walk_memo_of_thread(void)
{
    int slot = walk_memo_mem ? thread_slot() : -1;
    return slot >= 0 ? &walk_memo_mem[slot] : NULL;
}

/* 4-way sets: a direct-mapped table would let two hot addresses evict each other on every
 * walk (25 addresses in 512 slots collide with odds near one half). */
#define KNOWN_WAYS 4
static uint64_t *known_set(uint64_t *table, uint64_t a)
{
    uint64_t h = (a * 0x9e3779b97f4a7c15ull) >> 40;
    return table + (h & (KNOWN_CODE / KNOWN_WAYS - 1)) * KNOWN_WAYS;
}

static bool known_has(uint64_t *table, uint64_t a)
{
    uint64_t *set = known_set(table, a);
    for (int i = 0; i < KNOWN_WAYS; i++)
        if (set[i] == a) return true;
    return false;
}

static void known_add(uint64_t *table, uint64_t a)
{
    uint64_t *set = known_set(table, a);
    for (int i = 0; i < KNOWN_WAYS; i++)
        if (set[i] == a || set[i] == 0) {
            set[i] = a;
            return;
        }
    memmove(set + 1, set, (KNOWN_WAYS - 1) * sizeof *set); /* the oldest goes */
    set[0] = a;
}

typedef struct fastcache_s {
    uint64_t tstate; /* the thread state the rest was validated for; 0: none */
    uint64_t chunk_lo[KNOWN_CHUNKS], chunk_hi[KNOWN_CHUNKS];
    uint64_t stack_lo, stack_hi; /* whole pages of this thread's stack proven readable */
    uint32_t next_chunk;
} fastcache_t;

static __thread fastcache_t fc __attribute__((tls_model("initial-exec")));

/* The live chunks of one walk: frames may be loaded from [live_lo, live_hi), and read up to
 * hi (the chunk's mapping). */
typedef struct fastwalk_s {
    uint32_t n;
    uint64_t live_lo[KNOWN_CHUNKS], live_hi[KNOWN_CHUNKS], hi[KNOWN_CHUNKS];
    uintptr_t sp; /* the walk's own frame: the callers' C-stack structures lie above it */
} fastwalk_t;

static int test_fast_no_finalize_check; /* tests: there is no interpreter to ask */

static bool plausible(uint64_t a, uint64_t n)
{
    return a >= 4096 && a + n > a && ((a + n) >> 56) == 0;
}

/* One kernel copy of a byte of every page of [lo, hi): all mapped and readable, or not. */
static __attribute__((noinline)) bool range_readable(uint64_t lo, uint64_t hi)
{
    uint64_t first = lo & ~(uint64_t)(PAGE_BYTES - 1);
    uint64_t pages = (hi - 1 - first) / PAGE_BYTES + 1;
    struct iovec remote[CHUNK_MAX / PAGE_BYTES + 1];
    uint8_t sink[CHUNK_MAX / PAGE_BYTES + 1];
    if (hi <= lo || pages > sizeof sink) return false;
    for (uint64_t i = 0; i < pages; i++)
        remote[i] = (struct iovec){(void *)(uintptr_t)(i ? first + i * PAGE_BYTES : lo), 1};
    struct iovec local = {sink, (size_t)pages};
    n_checked++;
    ssize_t got = process_vm_readv(self_pid, &local, 1, remote, (unsigned long)pages, 0);
    return got == (ssize_t)pages;
}

static bool fast_enabled(void)
{
    if (!py.fast) return false;
    if (py.is_finalizing) return py.is_finalizing() == 0;
    return test_fast_no_finalize_check;
}

/* Validates (once) the thread state head and finds the live chunk list. false: no fast path
 * for this walk. */
static bool fast_begin(uint64_t tstate, fastwalk_t *fw)
{
    const layout_t *L = &py.lay;
    fw->n = 0;
    if (!fast_enabled() || (tstate & 7)) return false;
    uint32_t head = L->ts_chunk == NONE ? 0 : L->ts_chunk > L->ts_top ? L->ts_chunk : L->ts_top;
    uint16_t tf = L->ts_cframe != NONE ? L->ts_cframe : L->ts_frame;
    if (tf > head) head = tf;
    if (L->ts_root_cframe != NONE && L->ts_root_cframe + L->cf_current > head)
        head = L->ts_root_cframe + L->cf_current; /* read directly by first_frame */
    head += 8;
    if (head > TSTATE_HEAD_MAX || !plausible(tstate, head)) return false;
    if (fc.tstate != tstate) {
        uint8_t tmp[TSTATE_HEAD_MAX];
        memset(&fc, 0, sizeof fc);
        if (safe_read(tmp, tstate, head)) return false;
        fc.tstate = tstate;
    }
    const uint8_t *ts = (const uint8_t *)(uintptr_t)tstate;
    if (L->ts_chunk == NONE) return true; /* 3.9, 3.10: heap frame objects, no chunks */
    n_direct++;
    uint64_t chunk = ld64(ts + L->ts_chunk), top = ld64(ts + L->ts_top);
    for (uint32_t i = 0; chunk && i < KNOWN_CHUNKS; i++) {
        uint32_t k = 0;
        while (k < KNOWN_CHUNKS && fc.chunk_lo[k] != chunk)
            k++;
        uint64_t hdr_end = L->chunk_data;
        if (k == KNOWN_CHUNKS) {
            /* First sight: header through the kernel, then every page of its range. */
            uint8_t hdr[64];
            if ((chunk & 7) || hdr_end > sizeof hdr || !plausible(chunk, hdr_end) ||
                safe_read(hdr, chunk, hdr_end))
                break;
            uint64_t size = ld64(hdr + L->chunk_size);
            if (size < hdr_end || size > CHUNK_MAX || !plausible(chunk, size) ||
                !range_readable(chunk, chunk + size))
                break;
            k = fc.next_chunk++ % KNOWN_CHUNKS;
            fc.chunk_lo[k] = chunk;
            fc.chunk_hi[k] = chunk + size;
        }
        const uint8_t *c = (const uint8_t *)(uintptr_t)chunk;
        n_direct++;
        uint64_t size = ld64(c + L->chunk_size);
        if (chunk + size != fc.chunk_hi[k]) { /* a new chunk at a known address */
            fc.chunk_lo[k] = fc.chunk_hi[k] = 0;
            continue; /* validated afresh (not found in the cache any more) */
        }
        uint64_t lo = chunk + hdr_end;
        uint64_t live = i == 0 ? top : lo + ld64(c + L->chunk_top) * 8;
        if (live < lo || live > chunk + size) break;
        fw->live_lo[fw->n] = lo;
        fw->live_hi[fw->n] = live;
        fw->hi[fw->n] = chunk + size;
        fw->n++;
        chunk = ld64(c); /* previous */
    }
    return true;
}

/* A frame of n bytes at a that lies in the live part of a chunk of this walk. */
static bool in_live_chunk(const fastwalk_t *fw, uint64_t a, uint32_t n)
{
    for (uint32_t i = 0; i < fw->n; i++)
        if (a >= fw->live_lo[i] && a < fw->live_hi[i] && a + n <= fw->hi[i]) return true;
    return false;
}

static bool on_stack(const fastwalk_t *fw, uint64_t a, uint32_t n)
{
    return a >= fw->sp && a + n > a && a + n - fw->sp < STACK_SPAN;
}

static bool stack_known(const fastwalk_t *fw, uint64_t a, uint32_t n)
{
    return on_stack(fw, a, n) && a >= fc.stack_lo && a + n <= fc.stack_hi;
}

/* [a, a + n) has just been read through the kernel: its pages join the proven run, and so do
 * the pages between it and the run, once checked (one kernel copy). A place too far from the
 * run, or a gap that is not readable, starts a new run. */
static void stack_learn(const fastwalk_t *fw, uint64_t a, uint32_t n)
{
    if (!on_stack(fw, a, n) || stack_known(fw, a, n)) return;
    uint64_t lo = a & ~(uint64_t)(PAGE_BYTES - 1);
    uint64_t hi = (a + n + PAGE_BYTES - 1) & ~(uint64_t)(PAGE_BYTES - 1);
    if (fc.stack_hi > fc.stack_lo) {
        uint64_t nlo = lo < fc.stack_lo ? lo : fc.stack_lo;
        uint64_t nhi = hi > fc.stack_hi ? hi : fc.stack_hi;
        bool ok = nhi - nlo <= STACK_RUN_MAX;
        if (ok && hi < fc.stack_lo) ok = range_readable(hi, fc.stack_lo);
        if (ok && lo > fc.stack_hi) ok = range_readable(fc.stack_hi, lo);
        if (ok) {
            lo = nlo;
            hi = nhi;
        }
    }
    fc.stack_lo = lo;
    fc.stack_hi = hi;
}

/* ---- the code hook: a replay loads no code object ---------------------------------------------
 *
 * A replay checks each frame's code object against the one its memo saw at that address
 * (code_changed): a code object freed and another made there must not take its lines. That is
 * a load of each frame's code object (on 3.12 some 380 of the walk's 1,590 instructions a
 * pair, 13 frames). Every code object is freed by its type's deallocator, PyCode_Type's
 * tp_dealloc: the tracer puts a hook there, once (gmt_py_init) with a compare-and-swap, that
 * counts the code objects destroyed and calls the deallocator that was there. While no code
 * object was destroyed since a walk was remembered, every code object it saw is alive at its
 * address still (a frame's code does not change, and the frames of the walk being replayed
 * were all made before it read the count), so the replay needs no check. A way remembers the
 * count its walk read first (code_stamp); a replay that reads the same count skips
 * code_changed. Any destruction makes every way check again, once: a replay whose checks pass
 * stamps its way anew.
 *
 * Why a hook and not CPython's code watchers (PyCode_AddWatcher, 3.12+): a watcher takes one of
 * the interpreter's 8 slots, which a program that registers its own (a JIT) would then miss;
 * registering needs the GIL, which PyTorch's operators have released when they allocate; and
 * watchers are per interpreter and cleared by a finalization. The type is shared by every
 * interpreter of the process and outlives a finalization; its slot is written while another
 * thread may be destroying a code object, which is sound: an object in its deallocator has no
 * reference left, so no live frame, and no walk remembered after the hook, can hold it. Every
 * fast-path walk checks the slot still holds the hook (anything else there, even a wrapper
 * that hands on to it, turns the hook off for good). The library is never unloaded (-z
 * nodelete). */
enum { CH_UNSET, CH_ACTIVE, CH_OFF };
static struct {
    int state;             /* atomic: CH_* */
    const char *why;       /* atomic; CH_OFF: why (the report's code_hook_off) */
    void (**slot)(void *); /* &PyCode_Type.tp_dealloc */
    void (*orig)(void *);  /* atomic: what was there */
} ch;
static uint64_t code_destroys; /* atomic: code objects destroyed since the hook went in */

static void code_dealloc_hook(void *code)
{
    __atomic_add_fetch(&code_destroys, 1, __ATOMIC_SEQ_CST);
    __atomic_load_n(&ch.orig, __ATOMIC_ACQUIRE)(code);
}

static void hook_off(const char *why)
{
    __atomic_store_n(&ch.why, why, RLX);
    __atomic_store_n(&ch.state, CH_OFF, __ATOMIC_RELEASE);
}

/* Whether the object file that holds a also holds b (dladdr's base). */
static bool same_object(const void *a, const void *b)
{
    Dl_info ia, ib;
    return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase && ia.dli_fbase == ib.dli_fbase;
}

/* Puts the hook in, from gmt_py_init (once a process: its state is inherited by a fork);
 * without (no: why) where walks are never replayed, having no fast path. type_type: the
 * address of PyType_Type. The only write this tracer makes to the interpreter, so only where
 * the type object is laid out as the layout says: its type word PyType_Type (a build whose
 * objects have another head, --with-trace-refs, puts other words there), its name "code", and
 * the word to be replaced a function of the interpreter's own object file. */
static void hook_install(const char *no, uint64_t type_type)
{
    if (__atomic_load_n(&ch.state, __ATOMIC_ACQUIRE) != CH_UNSET) return;
    if (no) {
        hook_off(no);
        return;
    }
    const uint8_t *type = (const uint8_t *)(uintptr_t)py.code_type;
    const char *name = type_type && ld64(type + py.lay.ob_type) == type_type
                           ? (const char *)(uintptr_t)ld64(type + py.lay.tp_name)
                           : NULL;
    void (**slot)(void *) = (void (**)(void *))(uintptr_t)(py.code_type + py.lay.tp_dealloc);
    void (*orig)(void *) = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!name || !same_object(type, name) || strcmp(name, "code") != 0 || !orig ||
        orig == code_dealloc_hook || !same_object(type, (const void *)(uintptr_t)orig)) {
        hook_off("PyCode_Type is not laid out as this tracer reads it");
        return;
    }
    __atomic_store_n(&ch.orig, orig, __ATOMIC_RELEASE);
    ch.slot = slot;
    void (*expect)(void *) = orig;
    if (!__atomic_compare_exchange_n(slot, &expect, code_dealloc_hook, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        hook_off("PyCode_Type's deallocator changed while the hook went in");
        return;
    }
    __atomic_store_n(&ch.state, CH_ACTIVE, __ATOMIC_RELEASE);
}

/* The walk's code stamp: the count of destroyed code objects + 1, read before any frame; 0
 * when the hook cannot vouch for this walk. */
static inline uint64_t code_stamp(void)
{
    if (__builtin_expect(__atomic_load_n(&ch.state, __ATOMIC_ACQUIRE) != CH_ACTIVE, 0)) return 0;
    if (__builtin_expect(__atomic_load_n(ch.slot, __ATOMIC_ACQUIRE) != code_dealloc_hook, 0)) {
        hook_off("another deallocator replaced the hook in PyCode_Type");
        return 0;
    }
    return __atomic_load_n(&code_destroys, __ATOMIC_ACQUIRE) + 1;
}

typedef struct rawframe_s {
    uint64_t code, instr;
    uint8_t seg_end;
    uint8_t direct; /* the frame lies in a live chunk: its code object is alive */
} rawframe_t;

/* A frame's instruction and run end (0 or 1) as one word, as notes keep them (pynote_t) and call
 * sites hash and compare them (site_walk): the instruction shifted up by one, which loses no
 * bit of an address below 2^63 (a user-space one), so that no two pairs give one word. One
 * instruction on x86-64 (lea). */
static inline uint64_t site_key_of(uint64_t instr, uint8_t seg_end)
{
    return instr << 1 | seg_end;
}

/* A raw frame's word in a note: site_key_of from 3.11, which has call sites; 3.9-3.10 (old),
 * which have none, the instruction alone (their replay then compares it as read). */
static inline uint64_t note_instr_of(bool old, const rawframe_t *r)
{
    return old ? r->instr : site_key_of(r->instr, r->seg_end);
}

/* The first frame of the chain; 0 when there is none or it cannot be read. */
static uint64_t first_frame(uint64_t tstate, const fastwalk_t *fw, bool fast)
{
    const layout_t *L = &py.lay;
    uint8_t word[8];
    if (L->ts_cframe != NONE) {
        uint64_t cf;
        if (fast) {
            n_direct++;
            cf = ld64((const uint8_t *)(uintptr_t)tstate + L->ts_cframe);
        } else if (safe_read(word, tstate + L->ts_cframe, 8)) {
            return 0;
        } else {
            cf = ld64(word);
        }
        uint64_t at = cf + L->cf_current;
        /* A thread state that runs no Python code (an autograd engine thread: its state made
         * once, the GIL released) points at its own root C frame, in the head fast_begin
         * validated. */
        bool own_root = L->ts_root_cframe != NONE && cf == tstate + L->ts_root_cframe;
        if (fast && (at & 7) == 0 && (own_root || stack_known(fw, at, 8))) {
            n_direct++;
            return ld64((const uint8_t *)(uintptr_t)at);
        }
        if (safe_read(word, at, 8)) return 0;
        if (fast && (at & 7) == 0) stack_learn(fw, at, 8);
        return ld64(word);
    }
    if (fast) {
        n_direct++;
        return ld64((const uint8_t *)(uintptr_t)tstate + L->ts_frame);
    }
    return safe_read(word, tstate + L->ts_frame, 8) ? 0 : ld64(word);
}

/* 3.11's PRECALL (166) and its adaptive and specialized forms, by their numbers in 3.11's
 * opcode.h (fixed within a minor version). */
static const bool precall_311[256] = {
    [166] = true, /* PRECALL */
    [64] = true,  [65] = true,  [66] = true,  [67] = true,  [72] = true,  [73] = true,
    [76] = true,  [77] = true,  [78] = true,  [79] = true,  [80] = true,  [81] = true,
    [113] = true, [121] = true, [127] = true, [141] = true, [143] = true,
};

/* 3.11: a call out of a line leaves its frame at that call's CALL instruction, until the
 * interpreter specializes the PRECALL before it: most specialized forms (a builtin, a type, a
 * method descriptor) then make the call themselves and skip the CALL, so the frame is left 4
 * bytes earlier (PRECALL and its one cache unit). One call, two words, and the stack of a
 * line's first calls a twin of its later ones' with the same frames shown (docs/python.md,
 * "Limits", until session 43). The offset of an instruction that is a PRECALL is taken as its
 * CALL's. head: the code object's first bytes (its length in code units); code_direct: it may
 * be loaded from (a live frame holds it and it was read there before), else its byte is copied
 * through the kernel. An offset outside the code is left as it is. */
__attribute__((noinline)) static uint64_t call_offset_311(const walk_offs_t *o, uint64_t code,
                                                          const uint8_t *head, bool code_direct,
                                                          uint64_t off)
{
    uint64_t units = ld64(head + o->bytes_size);
    if ((off & 1) || off / 2 >= units) return off;
    uint64_t at = code + o->co_code + off;
    uint8_t op;
    if (code_direct)
        op = *(const uint8_t *)(uintptr_t)at;
    else if (safe_read(&op, at, 1))
        return off;
    return precall_311[op] ? off + 4 : off;
}

/* A frame's word: its code object's entry id and the instruction's offset in its code (3.11:
 * call_offset_311's). head, code_direct: as call_offset_311's. */
__attribute__((always_inline)) static inline uint64_t
frame_word_of(const walk_offs_t *o, const rawframe_t *r, uint32_t id, bool old, const uint8_t *head,
              bool code_direct)
{
    uint64_t off;
    if (old) {
        int32_t lasti = (int32_t)(uint32_t)r->instr;
        off = lasti < 0 ? 0 : o->minor == 9 ? (uint64_t)lasti : (uint64_t)lasti * 2;
    } else {
        uint64_t start = r->code + o->co_code;
        off = r->instr >= start ? r->instr - start : 0;
        if (o->minor == 11) off = call_offset_311(o, r->code, head, code_direct, off);
    }
    if (off > UINT32_MAX) off = UINT32_MAX;
    return (GMT_PY_TAG << GMT_PY_TAG_SHIFT) | ((uint64_t)id << 32) | off;
}

static inline uint64_t frame_word(const walk_offs_t *o, const rawframe_t *r, uint32_t id,
                                  const uint8_t *head, bool code_direct)
{
    return frame_word_of(o, r, id, o->minor <= 10, head, code_direct);
}

/* The direct reads' ranges of a walk, each as one unsigned compare: the frames of its first live
 * chunk (in_live_chunk's test for chunk 0, frame >= lo, frame < live_hi, frame + frame_read <=
 * hi, as frame - lo < span; lo > 0, so it also fails at 0) and the structures on the C stack in
 * the run this thread proved readable (stack_known's test, as frame - slo < sspan). */
typedef struct chunkspan_s {
    uint64_t lo, span, slo, sspan;
} chunkspan_t;

/* fw's ranges (chunkspan_t); false when its first chunk cannot hold a frame. */
__attribute__((always_inline)) static inline bool chunk_span(const fastwalk_t *fw,
                                                             uint32_t frame_read, chunkspan_t *c)
{
    const uint64_t lo = fw->live_lo[0], hi = fw->hi[0];
    uint64_t end = fw->live_hi[0];
    if (hi < frame_read || lo == 0) return false;
    if (end > hi - frame_read + 1) end = hi - frame_read + 1;
    c->lo = lo;
    c->span = end > lo ? end - lo : 0;
    c->slo = fw->sp > fc.stack_lo ? fw->sp : fc.stack_lo;
    uint64_t send = 0;
    if (fc.stack_hi > fc.stack_lo && fc.stack_hi >= frame_read) {
        send = fc.stack_hi - frame_read + 1;
        if (fw->sp + STACK_SPAN - frame_read < send) send = fw->sp + STACK_SPAN - frame_read;
    }
    c->sspan = send > c->slo ? send - c->slo : 0;
    return true;
}

/* Step 1 (walk) for the frames that lie in the live part of the walk's first chunk, the
 * innermost, where a program's frames mostly are, and for the 3.12+ shim frames in the run of
 * the C stack this thread has proven readable (the fast path, 3.11+): the general loop's work
 * for each such frame, in a function of its own that keeps the offsets in registers (inside
 * walk() they were loaded from its frame again for every frame): some 20 instructions a frame
 * against the general loop's 53 (3.11, callgrind). Returns the raw frames written; *framep
 * and *stepsp are where the general loop goes on (the first frame in neither place, or the
 * walk's end). */
__attribute__((noinline)) static uint32_t chain_in_chunk(const walk_offs_t *o, const fastwalk_t *fw,
                                                         rawframe_t *raw, uint32_t cap,
                                                         uint32_t frame_read, uint64_t *framep,
                                                         uint32_t *stepsp, uint32_t *direct)
{
    chunkspan_t c;
    if (!chunk_span(fw, frame_read, &c)) return 0;
    const uint64_t lo = c.lo, span = c.span, slo = c.slo, sspan = c.sspan;
    const uint32_t off_back = o->fr_back, off_code = o->fr_code, off_instr = o->fr_instr;
    const uint32_t off_owner = o->fr_owner, cstack = o->owner_cstack, off_entry = o->fr_is_entry;
    uint64_t frame = *framep;
    uint32_t steps = *stepsp, steps0 = steps, nr = 0;
    while (nr < cap && steps < MAX_WALK_STEPS && !(frame & 7)) {
        uint8_t in_chunk = frame - lo < span;
        if (!in_chunk && frame - slo >= sspan) break;
        const uint8_t *f = (const uint8_t *)(uintptr_t)frame;
        uint64_t back = ld64(f + off_back);
        if (back == frame) back = 0; /* a loop ends the walk (so does MAX_WALK_STEPS) */
        if (cstack != NONE && f[off_owner] == cstack) {
            if (nr) raw[nr - 1].seg_end = 1; /* a native evaluation frame's shim */
        } else {
            raw[nr].code = ld64(f + off_code);
            raw[nr].instr = ld64(f + off_instr);
            raw[nr].seg_end = off_entry != NONE && f[off_entry];
            raw[nr].direct = in_chunk; /* as the general loop: in a live chunk only */
            nr++;
        }
        frame = back;
        steps++;
    }
    *direct += steps - steps0;
    *framep = frame;
    *stepsp = steps;
    return nr;
}

/* Step 1 (walk) for 3.9 and 3.10's frame objects that this thread read through the kernel
 * before (known_frames), reached from its live chain: the general loop's work for each, in a
 * function of its own as chain_in_chunk (75 instructions a frame in the general loop on 3.10,
 * callgrind). It stops, for the general loop to go on from, at the first frame that is not
 * known, or lies in the proven stack run (which the general loop tests first), or whose type
 * word is not a frame's (the general loop ends the walk there, reading it again). */
__attribute__((noinline)) static uint32_t
chain_known(const walk_offs_t *o, const fastwalk_t *fw, uint64_t *known_frames, rawframe_t *raw,
            uint32_t cap, uint32_t frame_read, uint64_t *framep, uint32_t *stepsp, uint32_t *direct)
{
    const uint32_t off_back = o->fr_back, off_code = o->fr_code, off_instr = o->fr_instr;
    const uint32_t off_type = o->ob_type;
    const uint64_t frame_type = py.frame_type;
    uint64_t frame = *framep;
    uint32_t steps = *stepsp, steps0 = steps, nr = 0;
    while (frame && nr < cap && steps < MAX_WALK_STEPS && !(frame & 7)) {
        if (in_live_chunk(fw, frame, frame_read) || stack_known(fw, frame, frame_read) ||
            !known_has(known_frames, frame) || !plausible(frame, frame_read))
            break;
        const uint8_t *f = (const uint8_t *)(uintptr_t)frame;
        if (ld64(f + off_type) != frame_type) break;
        uint64_t back = ld64(f + off_back);
        if (back == frame) back = 0; /* a loop ends the walk (so does MAX_WALK_STEPS) */
        /* 3.9, 3.10: no shims; every frame ends a run; f_lasti is 32 bits */
        raw[nr].code = ld64(f + off_code);
        raw[nr].instr = ld32(f + off_instr);
        raw[nr].seg_end = 1;
        raw[nr].direct = 1;
        nr++;
        frame = back;
        steps++;
    }
    *direct += steps - steps0;
    *framep = frame;
    *stepsp = steps;
    return nr;
}

/* The way a chain of nr raw frames is remembered in: by its innermost and outermost code
 * objects and its length (consecutive allocations of a model share the outer frames and
 * differ inside). */
static inline uint32_t way_index(uint64_t inner, uint64_t outer, uint32_t nr)
{
    uint64_t h = (inner ^ (outer << 1) ^ nr) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> (64 - PY_WAY_BITS));
}

static inline walkway_t *way_of_chain(walkmemo_t *m, const rawframe_t *raw, uint32_t nr)
{
    return &m->way[way_index(raw[0].code, raw[nr - 1].code, nr)];
}

/* replay_walk's loop, for the versions `old` says. With a hint (note_hint), the words are
 * built only when an instruction differs from the hint's: *noted says they were not. */
__attribute__((always_inline)) static inline uint32_t
replay_loop(const walk_offs_t *o, const walkway_t *m, const rawframe_t *raw, uint32_t nr,
            pyframe_t *out, uint32_t *direct, bool old, bool trusted, const pynote_t *hint,
            bool *noted)
{
    uint64_t differ = 0;
    for (uint32_t i = 0; i < nr; i++) {
        if (!raw[i].direct || raw[i].code != m->code[i] || raw[i].seg_end != m->seg[i]) {
            *direct += i;
            return 0;
        }
        /* Loaded before at this address (the memo records only code objects read there) and
         * alive now: direct loads, as step 2's. */
        const uint8_t *head = (const uint8_t *)(uintptr_t)raw[i].code;
        if (!trusted && code_changed(o, head, m->ident[i])) {
            *direct += i + 1;
            return 0;
        }
        if (hint) {
            differ |= note_instr_of(old, &raw[i]) ^ hint->instr[i];
            continue;
        }
        out[i].word = frame_word_of(o, &raw[i], m->id[i], old, head, true);
        out[i].seg_end = raw[i].seg_end;
    }
    *direct += nr;
    if (hint && !differ) {
        *noted = true;
        return nr;
    }
    for (uint32_t i = 0; hint && i < nr; i++) {
        out[i].word =
            frame_word_of(o, &raw[i], m->id[i], old, (const uint8_t *)(uintptr_t)raw[i].code, true);
        out[i].seg_end = raw[i].seg_end;
    }
    return nr;
}

/* The replay of a remembered walk: when the chain just read has the same frames' code
 * objects (every frame in a live chunk, so every code object is alive: the frame holds it)
 * and the same runs, in the same cache, each code object needs only its type and identity
 * words checked (an object freed and another made at its address differs in them) instead
 * of the lookups of step 2 and 3; the instructions are the new ones. Returns the frames
 * written, 0 when anything differs (the caller walks on as if there were no memo). */
__attribute__((noinline)) static uint32_t replay_walk(const walk_offs_t *o, const walkway_t *m,
                                                      const rawframe_t *raw, uint32_t nr,
                                                      uint32_t gen, uint64_t stamp, pyframe_t *out,
                                                      uint32_t *direct, const pynote_t *hint,
                                                      bool *noted)
{
    if (m->nr == 0 || m->nr != nr || m->gen != gen) return 0;
    /* No code object destroyed since the way's were last seen: they are the same (above). */
    const bool trusted = stamp && m->cstamp == stamp;
    /* A call of its own, with the offsets in registers for its loop (inlined into walk(),
     * they were loaded from its frame for every frame), and a loop for 3.9-3.10 and one for
     * 3.11+ (frame_word_of). One pass: a chain that differs from the memo's reads the code
     * objects of the frames before the first that differs, which the full walk then reads
     * again. */
    const walk_offs_t oc = *o;
    *noted = false;
    if (oc.minor <= 10)
        return trusted ? replay_loop(&oc, m, raw, nr, out, direct, true, true, hint, noted)
                       : replay_loop(&oc, m, raw, nr, out, direct, true, false, hint, noted);
    return trusted ? replay_loop(&oc, m, raw, nr, out, direct, false, true, hint, noted)
                   : replay_loop(&oc, m, raw, nr, out, direct, false, false, hint, noted);
}

/* When the whole chain is not the last walk's: how many of its outermost frames hold, frame
 * by frame from the outer end, the code objects of the last walk's outermost frames (in live
 * chunks, the same runs). A model's consecutive allocations share their outer frames (the
 * training loop, the enclosing modules' calls) and differ in the innermost few; those outer
 * frames need only replay_walk's checks. 0 when the memo does not belong to this cache. */
static uint32_t memo_suffix(const walkway_t *m, const rawframe_t *raw, uint32_t nr, uint32_t gen)
{
    if (m->nr == 0 || m->gen != gen) return 0;
    uint32_t k = 0;
    while (k < nr && k < m->nr) {
        const rawframe_t *r = &raw[nr - 1 - k];
        uint32_t mi = m->nr - 1 - k;
        if (!r->direct || r->code != m->code[mi] || r->seg_end != m->seg[mi]) break;
        k++;
    }
    return k;
}

/* pn now stands for raw's instructions under w's content (pynote_t), and is w's note_hit. */
static void note_instrs(walkway_t *w, pynote_t *pn, const rawframe_t *raw, uint32_t n)
{
    const bool old = py.lay.minor <= 10;
    for (uint32_t i = 0; i < n; i++)
        pn->instr[i] = note_instr_of(old, &raw[i]);
    pn->content = w->content;
    w->note_hit = (uint32_t)(pn - w->note);
}

/* The set of the thread's call-site table that site key falls in. */
static inline uint32_t site_set_of(uint64_t key)
{
    return (uint32_t)(key >> (64 - PY_SITE_SET_BITS));
}

/* The two entries of site key's set in m's call sites. */
static inline pysite_t *site_set(walkmemo_t *m, uint64_t key)
{
    return &m->site[site_set_of(key) * 2];
}

/* The walk's site (sp->site, its key; 0: none) now answered by note pn of memo m: the next walk
 * from it tries pn first (site_walk). */
static void site_note(walkmemo_t *m, const pynote_t *pn, const gmt_py_splice_t *sp)
{
    if (!sp->site) return;
    size_t k = (size_t)((const char *)pn - (const char *)m->way) / sizeof(walkway_t);
    if (k >= PY_WAYS) return;
    pysite_t *s = site_set(m, sp->site);
    if (s[0].key != sp->site) {
        if (s[1].key == sp->site)
            s++; /* kept behind: it stays there */
        else
            s[1] = s[0]; /* new to the set: in front, the front one behind */
    }
    s->key = sp->site;
    s->way = (uint8_t)k;
    s->note = (uint8_t)(pn - m->way[k].note);
}

/* A walk answered by note pn, which holds its words under sp's key: pn's id, counted. */
static inline void note_take(walkmemo_t *m, pynote_t *pn, gmt_py_splice_t *sp)
{
    sp->note = pn;
    sp->stamp = pn->stamp;
    sp->noted = pn->id;
    __atomic_store_n(&m->noted, m->noted + 1, RLX);
}

/* A replay answered by note pn: taken, and remembered for the walk's site. */
static void note_answer(walkmemo_t *m, pynote_t *pn, gmt_py_splice_t *sp)
{
    note_take(m, pn, sp);
    site_note(m, pn, sp);
}

/* After a replay of way w gave out[0..n): the note that holds these words under sp's key
 * (its id in sp->noted), else one that holds them with no id yet, else one written with them
 * in turn; sp->note is where the caller's id goes. The same words may stand under several keys
 * (one Python line reaching the allocation by two native paths): a note each. */
static void note_find(walkmemo_t *m, walkway_t *w, const pyframe_t *out, const rawframe_t *raw,
                      uint32_t n, gmt_py_splice_t *sp)
{
    if (n > PY_NOTE_FRAMES || !sp->key_token) return;
    pynote_t *fresh = NULL;
    for (uint32_t v = 0; v < PY_NOTE_WAYS; v++) {
        pynote_t *pn = &w->note[v];
        if (pn->nr != n) continue;
        uint32_t i = 0;
        while (i < n && pn->word[i] == out[i].word)
            i++;
        if (i < n) continue;
        if (pn->token == sp->key_token && pn->tag_gen == sp->key_tag_gen) {
            note_instrs(w, pn, raw, n);
            note_answer(m, pn, sp);
            return;
        }
        if (!pn->token && !fresh) fresh = pn;
    }
    pynote_t *pn = fresh;
    if (!pn) {
        pn = &w->note[w->note_next++ % PY_NOTE_WAYS];
        pn->stamp++;
        pn->token = 0;
        for (uint32_t i = 0; i < n; i++)
            pn->word[i] = out[i].word;
        pn->nr = n;
    }
    note_instrs(w, pn, raw, n);
    sp->note = pn;
    sp->stamp = pn->stamp;
}

/* The note a replay of w's chain of n frames may answer from without building its words (the
 * one the last replay found or wrote, for this content, key and length, with an id); NULL
 * when there is none. note_find's answer when the instructions match too: its words match. */
static pynote_t *note_hint(walkway_t *w, uint32_t n, const gmt_py_splice_t *sp)
{
    if (!sp || n > PY_NOTE_FRAMES || !sp->key_token || w->note_hit >= PY_NOTE_WAYS) return NULL;
    pynote_t *pn = &w->note[w->note_hit];
    if (pn->nr != n || pn->content != w->content || !pn->id || pn->token != sp->key_token ||
        pn->tag_gen != sp->key_tag_gen)
        return NULL;
    return pn;
}

/* walk() step 1 for the frames that chain_in_chunk or chain_known left: each read directly
 * where it is known to be readable, else through the kernel. A call of its own, apart from
 * walk()'s replayed path: inlined, its code lay between that path's blocks, which then took
 * more code lines than their bytes fill (session 21). Returns the raw frames now in raw. */
__attribute__((noinline)) static uint32_t chain_rest(const walk_offs_t *op, fastwalk_t *fw,
                                                     uint64_t *known_frames, rawframe_t *raw,
                                                     uint32_t nr, uint32_t cap, uint64_t frame,
                                                     uint32_t steps, uint32_t *direct_reads_out,
                                                     bool fast)
{
    const walk_offs_t o = *op;
    const uint32_t frame_read = py.frame_read;
    uint32_t direct_reads = *direct_reads_out;
    window_t w;
    w.len[0] = w.len[1] = 0;
    for (; frame && nr < cap && steps < MAX_WALK_STEPS; steps++) {
        if (frame & 7) {
            __atomic_fetch_add(&cut_walks, 1, RLX); /* the frames beyond are not kept */
            break;
        }
        const uint8_t *f = NULL;
        uint8_t direct = 0;
        if (fast && in_live_chunk(fw, frame, frame_read)) {
            f = (const uint8_t *)(uintptr_t)frame;
            direct = 1;
            direct_reads++;
        } else if (fast && stack_known(fw, frame, frame_read)) {
            f = (const uint8_t *)(uintptr_t)frame; /* a shim frame seen before */
            direct_reads++;
        } else if (known_frames && known_has(known_frames, frame) && plausible(frame, frame_read)) {
            /* 3.9, 3.10: a frame object this thread read through the kernel before, reached
             * from its live chain (each frame holds a strong reference to its f_back). */
            f = (const uint8_t *)(uintptr_t)frame;
            direct_reads++;
            if (ld64(f + o.ob_type) != py.frame_type) break;
            direct = 1;
        } else {
            f = window_get(&w, frame, frame_read);
            if (!f) { /* a frame that cannot be read: the frames beyond are not kept */
                __atomic_fetch_add(&cut_walks, 1, RLX);
                break;
            }
            if (fast) stack_learn(fw, frame, frame_read);
            if (known_frames && ld64(f + o.ob_type) == py.frame_type)
                known_add(known_frames, frame);
        }
        uint64_t back = ld64(f + o.fr_back);
        if (back == frame) back = 0; /* a loop ends the walk (so does MAX_WALK_STEPS) */
        if (o.owner_cstack != NONE && f[o.fr_owner] == o.owner_cstack) {
            if (nr) raw[nr - 1].seg_end = 1; /* a native evaluation frame's shim */
        } else {
            raw[nr].code = ld64(f + o.fr_code);
            raw[nr].instr = o.minor <= 10 ? ld32(f + o.fr_instr) : ld64(f + o.fr_instr);
            raw[nr].seg_end = o.minor <= 10 || (o.fr_is_entry != NONE && f[o.fr_is_entry]);
            raw[nr].direct = direct;
            nr++;
        }
        frame = back;
    }

    *direct_reads_out = direct_reads;
    return nr;
}

/* A walk's end, replayed or not: counted as checked when it read through the kernel, its
 * direct reads added to the thread's count once. Returns n. */
static inline uint32_t walk_done(uint32_t n, uint64_t checked_before, uint32_t direct_reads)
{
    if (n_checked != checked_before) __atomic_fetch_add(&checked_walks, 1, RLX);
    n_direct += direct_reads;
    return n;
}

/* walk() when the chain was not replayed: steps 1c, 2 and 3 (the frames' code objects looked
 * up), and the chain remembered for its next replay. A call of its own, for the reason
 * chain_rest is one. m, way: the thread's memo and the chain's way in it, or NULL. */
__attribute__((noinline)) static uint32_t
walk_lookup(const walk_offs_t *op, walkmemo_t *m, walkway_t *way, const rawframe_t *raw,
            uint32_t nr, uint32_t gen, uint64_t stamp, pyframe_t *out, bool fast,
            uint32_t direct_reads, uint64_t checked_before)
{
    const walk_offs_t o = *op;
    uint64_t idents[GMT_PY_MAX_FRAMES];
    uint32_t ids[GMT_PY_MAX_FRAMES];
    /* 1c. The outer frames that the last walk had too: their ids from the memo, checked as a
     * replay checks them (a frame that fails goes back to the lookups below). */
    const walkway_t *lw = m ? &m->way[m->last] : NULL;
    uint32_t outer = lw ? memo_suffix(lw, raw, nr, gen) : 0;
    uint32_t inner = nr - outer; /* the frames of steps 2 and 3 */
    const bool trusted = stamp && lw && lw->cstamp == stamp;
    for (uint32_t k = 0; k < outer; k++) {
        uint32_t i = nr - 1 - k, mi = lw->nr - 1 - k;
        const uint8_t *head = (const uint8_t *)(uintptr_t)raw[i].code;
        if (!trusted) direct_reads++;
        if (!trusted && code_changed(&o, head, lw->ident[mi])) {
            inner = nr - k; /* this one and the inner ones are looked up */
            break;
        }
        idents[i] = lw->ident[mi]; /* by raw index until the outer frames are placed below */
        ids[i] = lw->id[mi];
        n_outer++;
    }

    /* 2. Their code objects' heads, CODE_BATCH at a time in as few reads as the memory
     * allows; 3. a word for each type-checked code object (3.13's f_executable may be None). */
    uint8_t heads[CODE_BATCH * CODE_READ_MAX];
    uint64_t *known = fast ? known_code_of_thread() : NULL;
    uint32_t cr = py.code_read, n = 0;
    for (uint32_t base = 0; base < inner; base += CODE_BATCH) {
        uint32_t cnt = inner - base < CODE_BATCH ? inner - base : CODE_BATCH;
        uint8_t ok[CODE_BATCH] = {0}, unread[CODE_BATCH] = {0};
        const uint8_t *direct_head[CODE_BATCH] = {0};
        /* A code object that a frame in a live chunk references is alive: its type word is
         * loaded directly, and its head when that type is PyCode_Type (3.13's f_executable
         * may be None, a smaller object). The others go through the kernel in one batch. */
        uint32_t idx[CODE_BATCH], nidx = 0;
        for (uint32_t i = 0; i < cnt; i++) {
            const rawframe_t *r = &raw[base + i];
            if (r->direct && known && r->code && known_has(known, r->code) && (r->code & 7) == 0 &&
                plausible(r->code, cr)) {
                const uint8_t *c = (const uint8_t *)(uintptr_t)r->code;
                direct_reads++;
                if (ld64(c + o.ob_type) == o.code_type) direct_head[i] = c;
                ok[i] = direct_head[i] != NULL; /* not a code object: skipped below */
                continue;
            }
            idx[nidx++] = i;
        }
        for (uint32_t start = 0; start < nidx;) {
            struct iovec remote[CODE_BATCH];
            uint32_t k = 0;
            for (uint32_t i = start; i < nidx; i++, k++)
                remote[k] = (struct iovec){(void *)(uintptr_t)raw[base + idx[i]].code, cr};
            size_t got = gather(heads + (size_t)start * cr, remote, (int)k, (size_t)k * cr);
            uint32_t full = (uint32_t)(got / cr);
            for (uint32_t i = 0; i < full; i++)
                ok[idx[start + i]] = 1;
            start += full + 1; /* the one after the readable ones is not readable: skip it */
        }
        uint32_t batch_pos[CODE_BATCH] = {0};
        for (uint32_t i = 0; i < nidx; i++) {
            batch_pos[idx[i]] = i;
            uint64_t code = raw[base + idx[i]].code;
            unread[idx[i]] = !ok[idx[i]] && code && (code & 7) == 0 && plausible(code, cr);
            if (known && ok[idx[i]] && (code & 7) == 0 &&
                ld64(heads + (size_t)i * cr + o.ob_type) == o.code_type)
                known_add(known, code); /* a code object was read there */
        }
        for (uint32_t j = 0; j < cnt; j++) {
            const rawframe_t *r = &raw[base + j];
            const uint8_t *head =
                direct_head[j] ? direct_head[j] : heads + (size_t)batch_pos[j] * cr;
            if (unread[j]) { /* its place kept: an unknown frame (id 0, offset 0) */
                __atomic_fetch_add(&unreadable_frames, 1, RLX);
                idents[n] = 0;
                ids[n] = 0;
                out[n].word = GMT_PY_TAG << GMT_PY_TAG_SHIFT;
                out[n].seg_end = r->seg_end;
                n++;
                continue;
            }
            if (!ok[j] || (r->code & 7) || ld64(head + o.ob_type) != o.code_type) {
                if (r->seg_end && n) out[n - 1].seg_end = 1;
                continue;
            }
            uint64_t ident = code_ident(&o, head, direct_head[j] != NULL);
            uint32_t id = code_id(r->code, head, ident);
            idents[n] = ident;
            ids[n] = id;
            out[n].word = frame_word(&o, r, id, head, direct_head[j] != NULL);
            out[n].seg_end = r->seg_end;
            n++;
        }
    }
    /* The outer frames, each a word: n < inner only when an inner frame gave none, and then
     * n <= i, so no outer frame's id is overwritten before it is moved. */
    for (uint32_t i = inner; i < nr; i++) {
        idents[n] = idents[i];
        ids[n] = ids[i];
        out[n].word =
            frame_word(&o, &raw[i], ids[n], (const uint8_t *)(uintptr_t)raw[i].code, true);
        out[n].seg_end = raw[i].seg_end;
        n++;
    }
    if (n) out[n - 1].seg_end = 1;
    if (m) {
        /* Remembered when every raw frame gave a word with an id, all in live chunks. */
        bool keep = n == nr && n > 0;
        for (uint32_t i = 0; keep && i < nr; i++)
            keep = raw[i].direct && ids[i] != 0;
        if (keep) {              /* into its chain's way (another chain there is written over) */
            if (way->gen != gen) /* ids of another cache: no note's words stand for them */
                for (uint32_t v = 0; v < PY_NOTE_WAYS; v++)
                    way->note[v].nr = 0;
            way->nr = 0;
            way->content++; /* no note's instructions stand for the new content */
            for (uint32_t i = 0; i < nr; i++) {
                way->code[i] = raw[i].code;
                way->ident[i] = idents[i];
                way->id[i] = ids[i];
                way->seg[i] = raw[i].seg_end;
            }
            way->gen = gen;
            way->cstamp = stamp;
            way->nr = nr;
            m->last = (uint8_t)(way - m->way);
        }
        m->busy = 0;
    }
    return walk_done(n, checked_before, direct_reads);
}

/* Step 0 (walk, 3.11+, the code hook active): a call site this thread noted an id for.
 *
 * The chain is read as chain_in_chunk reads it, from frames of the walk's first live chunk
 * alone (frame - lo < span: loaded directly, frame_read bytes of each inside the chunk), each
 * followed by at most one shim in the stack run this thread proved readable (frame - slo <
 * sspan), which marks a run end (3.12+; 3.11 marks a run's outermost frame is_entry). Every
 * frame's instruction (an address inside its code object's bytecode: the code object and the
 * offset in one word) and run end, the count, and sp's note key (the native frames' token, the
 * tag and generation) make the site's key, written to sp->site: the note that answers this walk,
 * whichever step finds it, is remembered under it (site_note). Every frame, not the first few: a
 * model's layers share their innermost frames (the same forward at the same depth) and differ in
 * the line of the module that calls them, further out; a key of the first frames alone named one
 * entry for all of them, written over in turn.
 *
 * The site table's entry under the key names a way and a note; the chain as read is compared
 * with them (every frame the note's instruction and run end, one word: site_key_of; the same
 * count). With the way's code objects vouched for by the code hook (stamp), in this cache
 * (gen), and the note's id under sp's key, that id answers the walk: no raw frame, no way
 * found, no word built. Equal instructions are the same code object: each lies inside its
 * frame's code object, alive (the frame holds it), and the note's inside the way's, alive too
 * (stamp), and two live objects never overlap. */
/* The frame after a run's end (3.12+): back, neither a frame of the chunk nor 0, as the shim
 * that ends a run, and the frame past it in *next (in the chunk, or 0: the chain's end). False
 * where back is not a shim of the stack run this thread proved readable, or the chain goes on
 * outside the chunk (not a call site). */
__attribute__((always_inline)) static inline bool site_past_shim(chunkspan_t c, uint64_t back,
                                                                 uint32_t off_back,
                                                                 uint32_t off_owner, uint8_t cstack,
                                                                 uint64_t *next)
{
    const uint8_t *shim = (const uint8_t *)(uintptr_t)back;
    if (back - c.slo >= c.sspan || (back & 7) || shim[off_owner] != cstack) return false;
    *next = ld64(shim + off_back);
    return *next - c.lo < c.span || !*next;
}

/* site_walk's body, for one layout's offsets (constants where the caller's are). */
__attribute__((always_inline)) static inline uint32_t
site_walk_at(chunkspan_t c, walkmemo_t *m, uint64_t first, uint32_t gen, uint64_t stamp,
             gmt_py_splice_t *sp, uint32_t *direct, uint32_t off_instr, uint32_t off_back,
             uint32_t off_owner, uint8_t cstack, uint32_t off_entry)
{
    /* The key: every frame's instruction (an address inside its code object's bytecode: the
     * code object and the offset in one word) and run end, as one word (site_key_of), and
     * their count. */
    uint64_t h = sp->key_token * 0x9e3779b97f4a7c15ull ^ sp->key_tag_gen, frame = first;
    uint64_t ins[PY_NOTE_FRAMES]; /* each frame's site_key_of */
    uint32_t k = 0;
    if (!frame || frame - c.lo >= c.span) return 0; /* each next frame is tested as it is found */
    for (;;) {
        if (k == PY_NOTE_FRAMES) return 0; /* no note holds it */
        const uint8_t *f = (const uint8_t *)(uintptr_t)frame;
        uint64_t key = site_key_of(ld64(f + off_instr), 0);
        uint64_t back = ld64(f + off_back);
        bool last = false;
        if (off_entry != NONE) { /* 3.11: a run's first frame is marked is_entry */
            key |= f[off_entry] != 0;
            if (__builtin_expect(back - c.lo >= c.span, 0)) {
                if (back) return 0;
                last = true;
            }
        } else if (__builtin_expect(back - c.lo >= c.span, 0)) {
            /* The common case, a frame of the chunk, tests nothing more: it is not 0. */
            if (back) {
                if (!site_past_shim(c, back, off_back, off_owner, cstack, &back)) return 0;
                key |= 1; /* a run's end */
            }
            last = !back;
        }
        ins[k++] = key;
        h = (h ^ key) * 0xff51afd7ed558ccdull;
        if (last) break;
        frame = back;
    }
    h ^= h >> 31;
    sp->site = (h ^ k) | 1;
    const pysite_t *s = site_set(m, sp->site);
    if (s->key != sp->site && (++s)->key != sp->site) return 0;
    const walkway_t *w = &m->way[s->way];
    pynote_t *pn = &m->way[s->way].note[s->note];
    const uint32_t n = w->nr;
    if (n != k || w->gen != gen || w->cstamp != stamp || pn->nr != n || pn->content != w->content ||
        !pn->id || pn->token != sp->key_token || pn->tag_gen != sp->key_tag_gen)
        return 0;
    /* The chain as read against the note: each frame's instruction and run end (the note's run
     * ends are its way's: a note is written from a chain that matched them, and a way written
     * again changes its content). An instruction is an address inside its frame's code object,
     * alive (the frame holds it), and the note's inside the way's code object, alive too
     * (stamp): the same instruction is the same code object, not compared apart. */
    if (memcmp(ins, pn->instr, (size_t)n * sizeof ins[0]) != 0) return 0;
    *direct += n;
    note_take(m, pn, sp); /* the site is already this one's */
    m->last = s->way;
    return n;
}

/* Returns the frames (the way's count), 0 when there is no such site or anything differs (walk()
 * then goes on as before). */
__attribute__((noinline)) static uint32_t site_walk(const walk_offs_t *o, const fastwalk_t *fw,
                                                    walkmemo_t *m, uint64_t frame, uint32_t gen,
                                                    uint64_t stamp, gmt_py_splice_t *sp,
                                                    uint32_t *direct)
{
    chunkspan_t c;
    if (o->minor < 11 || !fw->n || !sp->key_token || !chunk_span(fw, py.frame_read, &c)) return 0;
    /* 3.12 and 3.13's _PyInterpreterFrame (pylayouts.inc), then 3.11's: its offsets as
     * constants, which leave the loops their registers. */
    if (o->fr_instr == 56 && o->fr_back == 8 && o->fr_owner == 70 && o->owner_cstack == 3)
        return site_walk_at(c, m, frame, gen, stamp, sp, direct, 56, 8, 70, 3, NONE);
    /* 3.11's: runs marked is_entry. */
    if (o->fr_instr == 56 && o->fr_back == 48 && o->fr_is_entry == 68 && o->owner_cstack == NONE)
        return site_walk_at(c, m, frame, gen, stamp, sp, direct, 56, 48, 0, 0, 68);
    return site_walk_at(c, m, frame, gen, stamp, sp, direct, o->fr_instr, o->fr_back, o->fr_owner,
                        (uint8_t)o->owner_cstack, o->owner_cstack == NONE ? o->fr_is_entry : NONE);
}

#ifdef GMT_PROBES
/* "pytouch" (probe.h): the chain site_walk reads (each frame's instruction and link, the shims
 * between runs), read now and thrown away. 3.11+ only. */
uint64_t gmt_py_touch_chain(void)
{
    if (py.status != GMT_PY_CAPTURED) return 0;
    void *ts = py.this_tstate();
    if (!ts) return 0;
    walk_offs_t o;
    walk_offs_load(&o);
    fastwalk_t fw;
    fw.n = 0;
    fw.sp = (uintptr_t)__builtin_frame_address(0);
    if (o.minor < 11 || !fast_begin((uint64_t)(uintptr_t)ts, &fw)) return 0;
    uint64_t frame = first_frame((uint64_t)(uintptr_t)ts, &fw, true);
    chunkspan_t c;
    if (!fw.n || !chunk_span(&fw, py.frame_read, &c)) return 0;
    uint64_t sum = 0;
    for (int k = 0; k < PY_NOTE_FRAMES && frame && frame - c.lo < c.span; k++) {
        const uint8_t *f = (const uint8_t *)(uintptr_t)frame;
        sum += ld64(f + o.fr_instr);
        uint64_t back = ld64(f + o.fr_back);
        if (back && back - c.lo >= c.span) {
            if (o.owner_cstack == NONE ||
                !site_past_shim(c, back, o.fr_back, o.fr_owner, (uint8_t)o.owner_cstack, &back))
                break;
        }
        frame = back;
    }
    return sum;
}
#endif

static uint32_t walk(uint64_t tstate, pyframe_t *out, uint32_t cap, gmt_py_splice_t *sp)
{
    fastwalk_t fw; /* its chunks' words are written before they are counted in n */
    fw.n = 0;
    fw.sp = (uintptr_t)__builtin_frame_address(0);
    walk_offs_t o;
    walk_offs_load(&o);
    uint32_t direct_reads = 0; /* added to n_direct once, at the end */
    uint64_t checked_before = n_checked;
    bool fast = fast_begin(tstate, &fw);
    uint64_t *known_frames =
        fast && o.minor <= 10 && py.frame_type ? known_frames_of_thread() : NULL;
    /* Before any frame is read (code_stamp). */
    uint64_t stamp = fast ? code_stamp() : 0;
    uint64_t frame = first_frame(tstate, &fw, fast);
    if (cap > GMT_PY_MAX_FRAMES) cap = GMT_PY_MAX_FRAMES;
    uint32_t gen = __atomic_load_n(&cache_gen, __ATOMIC_ACQUIRE);
    walkmemo_t *m = fast ? walk_memo_of_thread() : NULL;
    if (m && m->busy) m = NULL;

    /* 0. A chain from a site this thread noted an id for, vouched for by the code hook:
     * compared with that note's as it is read (site_walk). */
    if (sp && m && stamp) {
        m->busy = 1;
        uint32_t n = site_walk(&o, &fw, m, frame, gen, stamp, sp, &direct_reads);
        if (n) {
            __atomic_store_n(&m->trusted, m->trusted + 1, RLX);
            __atomic_store_n(&m->sited, m->sited + 1, RLX);
            __atomic_store_n(&m->replays, m->replays + 1, RLX);
            m->busy = 0;
            return walk_done(n, checked_before, direct_reads);
        }
        m->busy = 0;
    }

    /* 1. The frame chain, innermost first: code pointer and instruction of each. */
    rawframe_t raw[GMT_PY_MAX_FRAMES];
    uint32_t nr = 0, steps = 0;
    const uint32_t frame_read = py.frame_read;
    if (fast && fw.n && o.minor >= 11)
        nr = chain_in_chunk(&o, &fw, raw, cap, frame_read, &frame, &steps, &direct_reads);
    else if (known_frames)
        nr =
            chain_known(&o, &fw, known_frames, raw, cap, frame_read, &frame, &steps, &direct_reads);
    if (frame && nr < cap && steps < MAX_WALK_STEPS)
        nr = chain_rest(&o, &fw, known_frames, raw, nr, cap, frame, steps, &direct_reads, fast);
    if (nr == cap) __atomic_fetch_add(&cut_walks, 1, RLX);

    /* 1b. The same chain as one the thread remembers: its words again (replay_walk). */
    walkway_t *way = m && nr ? way_of_chain(m, raw, nr) : NULL;
    if (m) {
        m->busy = 1;
        pynote_t *hint = way ? note_hint(way, nr, sp) : NULL;
        bool noted = false;
        uint32_t n =
            way ? replay_walk(&o, way, raw, nr, gen, stamp, out, &direct_reads, hint, &noted) : 0;
        if (n && noted) {
            note_answer(m, hint, sp); /* from the instructions alone (note_hint): no word built */
        } else if (n) {
            out[n - 1].seg_end = 1;
            if (sp) note_find(m, way, out, raw, n, sp);
        }
        if (n) {
            if (stamp && way->cstamp == stamp) __atomic_store_n(&m->trusted, m->trusted + 1, RLX);
            way->cstamp = stamp; /* every code object checked, or vouched for */
            m->last = (uint8_t)(way - m->way);
            m->busy = 0;
            __atomic_store_n(&m->replays, m->replays + 1, RLX);
            return walk_done(n, checked_before, direct_reads);
        }
    }
    return walk_lookup(&o, m, way, raw, nr, gen, stamp, out, fast, direct_reads, checked_before);
}

/* frames (n native frames, innermost first) with the Python frames pf spliced in: each run
 * before the evaluation frame (in [eval_lo, eval_lo + eval_span)) that runs it, the runs left
 * after the last native frame; at most cap in all. An evaluation frame is kept as one address,
 * eval_lo + 1 (its function's entry, as a return address names it): where its own return
 * address points is the instruction that called out, which moves once CPython 3.11+
 * specializes that instruction, so a line's first calls were a stack of their own beside its
 * later ones with the same frames shown (3.13: list(map(f, ...)) made groups of 99 and 1). */
static uint32_t splice_runs(uint64_t *frames, uint32_t n, uint32_t cap, const pyframe_t *pf,
                            uint32_t np, uint64_t eval_lo, uint64_t eval_span)
{
    uint64_t native[GMT_PY_MAX_FRAMES * 4];
    if (n > sizeof native / sizeof native[0]) n = sizeof native / sizeof native[0];
    memcpy(native, frames, n * sizeof *frames);
    uint32_t out = 0, p = 0, i = 0;
    for (; i < n && p < np && out < cap; i++) {
        uint64_t f = native[i];
        if (f - eval_lo < eval_span) {
            /* This evaluation frame runs the next run of Python frames. */
            do {
                frames[out++] = pf[p].word;
            } while (!pf[p++].seg_end && p < np && out < cap);
            if (out == cap) break;
            f = eval_lo + 1;
        }
        frames[out++] = f;
    }
    /* Every Python frame placed: the rest of the native frames as they are; or the native
     * frames used up: the Python frames left. */
    if (p == np && i < n && out < cap) {
        uint32_t k = n - i < cap - out ? n - i : cap - out;
        memcpy(frames + out, native + i, (size_t)k * sizeof *frames);
        out += k;
    }
    while (p < np && out < cap)
        frames[out++] = pf[p++].word;
    return out;
}

uint32_t gmt_py_splice(uint64_t *frames, uint32_t n, uint32_t cap, gmt_py_splice_t *sp)
{
    sp->python = sp->noted = 0;
    sp->note = NULL;
    sp->site = 0;
    if (py.status != GMT_PY_CAPTURED || n > cap) return n;
    void *ts = py.this_tstate();
    if (!ts) return n;
    pyframe_t pf[GMT_PY_MAX_FRAMES];
    int saved_errno = errno; /* the program's errno survives the failed reads of a walk */
    uint32_t np = walk((uint64_t)(uintptr_t)ts, pf, GMT_PY_MAX_FRAMES, sp);
    errno = saved_errno;
    sp->python = np;
    if (!np) return n;
    if (sp->noted) return n; /* the caller takes the id: the frames are not needed */
    /* In locals: the stores to frames could alias the globals for the compiler. */
    uint64_t span = py.eval_hi > py.eval_lo ? py.eval_hi - py.eval_lo : 0;
    return splice_runs(frames, n, cap, pf, np, py.eval_lo, span);
}

uint32_t gmt_py_test_splice(uint64_t *frames, uint32_t n, uint32_t cap, const uint64_t *words,
                            const uint8_t *seg_end, uint32_t np, uint64_t eval_lo, uint64_t eval_hi)
{
    pyframe_t pf[GMT_PY_MAX_FRAMES];
    if (np > GMT_PY_MAX_FRAMES) np = GMT_PY_MAX_FRAMES;
    for (uint32_t i = 0; i < np; i++)
        pf[i] = (pyframe_t){words[i], seg_end[i]};
    return splice_runs(frames, n, cap, pf, np, eval_lo, eval_hi > eval_lo ? eval_hi - eval_lo : 0);
}

static uint64_t test_last_site; /* gmt_py_test_walk_keyed's last sp.site */

uint32_t gmt_py_test_walk_keyed(uint64_t tstate, uint64_t *words, uint32_t cap, uint64_t token,
                                uint32_t id, uint32_t *noted)
{
    if (use_memfd && mem_fd < 0) open_memfd();
    pyframe_t pf[GMT_PY_MAX_FRAMES];
    if (cap > GMT_PY_MAX_FRAMES) cap = GMT_PY_MAX_FRAMES;
    gmt_py_splice_t sp = {.key_token = token, .key_tag_gen = 1};
    uint32_t n = walk(tstate, pf, cap, token ? &sp : NULL);
    for (uint32_t i = 0; i < n && !sp.noted; i++)
        words[i] = pf[i].word;
    if (token && !sp.noted && id) gmt_py_note_id(&sp, id); /* as the event path notes its id */
    if (noted) *noted = sp.noted;
    test_last_site = sp.site;
    return n;
}

uint64_t gmt_py_test_last_site(uint32_t *set)
{
    if (set) *set = site_set_of(test_last_site);
    return test_last_site;
}

uint32_t gmt_py_test_walk(uint64_t tstate, uint64_t *words, uint32_t cap)
{
    return gmt_py_test_walk_keyed(tstate, words, cap, 0, 0, NULL);
}

/* ---- status, init ------------------------------------------------------------------------- */

const char *gmt_py_status_name(gmt_py_status_t s)
{
    switch (s) {
    case GMT_PY_OFF:
        return "off";
    case GMT_PY_UNSUPPORTED:
        return "unsupported";
    case GMT_PY_CAPTURED:
        return "captured";
    case GMT_PY_NO_FRAMES:
        return "no-python-frames";
    default:
        return "not-python";
    }
}

bool gmt_py_splicing(void)
{
    return __atomic_load_n(&py.status, __ATOMIC_RELAXED) == GMT_PY_CAPTURED;
}

gmt_py_status_t gmt_py_status(void)
{
    return py.status;
}

const char *gmt_py_version(void)
{
    return py.version[0] ? py.version : NULL;
}

gmt_py_status_t gmt_py_stack_status(const uint64_t *frames, uint32_t n)
{
    if (py.status != GMT_PY_CAPTURED) return py.status;
    if (!frames || n == 0) return GMT_PY_OFF; /* no stack taken (depth 0, below MIN_BYTES) */
    for (uint32_t i = 0; i < n; i++)
        if (gmt_py_is_frame(frames[i])) return GMT_PY_CAPTURED;
    return GMT_PY_NO_FRAMES;
}

static int derive_read_sizes(void)
{
    const layout_t *L = &py.lay;
    uint32_t f = 0, c = 0;
    uint16_t fr[] = {L->fr_back, L->fr_code, L->fr_instr, L->fr_is_entry, L->fr_owner};
    uint16_t co[] = {L->ob_type,        L->co_filename,  L->co_name,    L->co_qualname,
                     L->co_firstlineno, L->co_linetable, L->co_version, L->co_codeobj,
                     L->bytes_size /* 3.11: the code object's own length */};
    for (size_t i = 0; i < sizeof fr / sizeof fr[0]; i++)
        if (fr[i] != NONE && fr[i] + 8u > f) f = fr[i] + 8u;
    for (size_t i = 0; i < sizeof co / sizeof co[0]; i++)
        if (co[i] != NONE && co[i] + 8u > c) c = co[i] + 8u;
    py.frame_read = f;
    py.code_read = c;
    return f <= READ_MAX && c <= CODE_READ_MAX && L->str_compact_size <= READ_MAX ? 0 : -EPROTO;
}

static const layout_t *builtin_layout(int minor)
{
    for (size_t i = 0; i < sizeof gmt_py_layouts / sizeof gmt_py_layouts[0]; i++)
        if (gmt_py_layouts[i].minor == minor) return &gmt_py_layouts[i];
    return NULL;
}

/* 3.13+: replace the header offsets by the ones the running interpreter publishes. */
static int use_debug_offsets(const uint8_t *rt)
{
    layout_t *L = &py.lay;
    uint8_t d[1024];
    if (L->dbg_size == 0 || L->dbg_size > sizeof d ||
        safe_read(d, (uint64_t)(uintptr_t)rt, L->dbg_size))
        return -EFAULT;
    if (memcmp(d, "xdebugpy", 8) != 0) return -EPROTO;
    uint64_t ver = ld64(d + L->dbg_cookie_version);
    if ((ver >> 16) != (0x0300u | (unsigned)L->minor)) return -EPROTO;
    if (ld64(d + L->dbg_free_threaded)) return -ENOTSUP;
    struct {
        uint16_t *field, at;
    } map[] = {
        {&L->ts_frame, L->dbg_ts_frame},
        {&L->fr_back, L->dbg_fr_back},
        {&L->fr_code, L->dbg_fr_code},
        {&L->fr_instr, L->dbg_fr_instr},
        {&L->fr_owner, L->dbg_fr_owner},
        {&L->co_filename, L->dbg_co_filename},
        {&L->co_name, L->dbg_co_name},
        {&L->co_qualname, L->dbg_co_qualname},
        {&L->co_linetable, L->dbg_co_linetable},
        {&L->co_firstlineno, L->dbg_co_firstlineno},
        {&L->co_code, L->dbg_co_code},
        {&L->ob_type, L->dbg_ob_type},
        {&L->bytes_size, L->dbg_bytes_size},
        {&L->bytes_sval, L->dbg_bytes_sval},
        {&L->str_state, L->dbg_str_state},
        {&L->str_length, L->dbg_str_length},
        {&L->str_ascii_size, L->dbg_str_ascii_size},
    };
    uint16_t vals[sizeof map / sizeof map[0]];
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        uint64_t v = ld64(d + map[i].at);
        if (v >= READ_MAX - 8) return -EPROTO; /* not a plausible offset */
        vals[i] = (uint16_t)v;
    }
    /* co_version is not published: it sits a fixed distance before co_filename (two pointers
     * and itself between them), so it moves with it. */
    uint16_t built_filename = L->co_filename;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        *map[i].field = vals[i];
    if (L->co_version != NONE) {
        int v = (int)L->co_version + (int)L->co_filename - (int)built_filename;
        if (v < 0 || v >= READ_MAX - 8) return -EPROTO;
        L->co_version = (uint16_t)v;
    }
    return 0;
}

static int map_cache(void)
{
    /* The fast path's per-thread tables of code addresses (without them it stays off). */
    if (!known_code_mem) {
        void *k = mmap(NULL, (size_t)MEM_SLOTS * 2 * KNOWN_CODE * sizeof(uint64_t),
                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (k != MAP_FAILED) known_code_mem = k;
    }
    if (!walk_memo_mem) { /* without it walks are not replayed */
        void *k = mmap(NULL, (size_t)MEM_SLOTS * sizeof(walkmemo_t), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (k != MAP_FAILED) walk_memo_mem = k;
    }
    pycode_t *given = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (given) { /* handed over (core_init.c: in the region) before the version was known */
        given->minor = (uint32_t)py.lay.minor;
        return 0;
    }
    uint32_t entries = 1u << 16;
    uint64_t text = 32ull << 20;
    size_t bytes = gmt_pycode_bytes(entries, text);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) return -ENOMEM;
    return gmt_pycode_init(m, bytes, entries, text);
}

static int parse_version(int *major, int *minor, int *micro)
{
    const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version");
    if (hex) {
        *major = (int)((*hex >> 24) & 0xff);
        *minor = (int)((*hex >> 16) & 0xff);
        *micro = (int)((*hex >> 8) & 0xff);
        return 0;
    }
    const char *(*getv)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    const char *s = getv ? getv() : NULL;
    if (s && sscanf(s, "%d.%d.%d", major, minor, micro) >= 2) return 0;
    return -ENOENT;
}

static int setup_types(void)
{
    py.code_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
    py.str_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    py.bytes_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyBytes_Type");
    py.frame_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyFrame_Type");
    return py.code_type && py.str_type && py.bytes_type ? 0 : -ENOENT;
}

static void find_eval_range(void)
{
    void *f = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        py.eval_lo = (uint64_t)(uintptr_t)f;
        py.eval_hi = py.eval_lo + sym->st_size;
    }
}

static void unsupported(const char *why)
{
    py.status = GMT_PY_UNSUPPORTED;
    gmt_error("Python %s: %s; stacks are native only", py.version, why);
}

int gmt_py_init(bool enabled, bool checked_only)
{
    static int atfork_done;
    refresh_pid();
    if (!atfork_done) {
        atfork_done = 1;
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    py.this_tstate = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    int major = 0, minor = 0, micro = 0;
    if (!py.this_tstate || parse_version(&major, &minor, &micro)) {
        py.status = GMT_PY_NOT_PYTHON;
        return 0;
    }
    snprintf(py.version, sizeof py.version, "%d.%d.%d", major, minor, micro);
    if (!enabled) {
        py.status = GMT_PY_OFF;
        return 0;
    }
    const layout_t *L = major == 3 ? builtin_layout(minor) : NULL;
    if (!L) {
        unsupported("not a supported CPython (3.9 to 3.13)");
        return -ENOTSUP;
    }
    py.lay = *L;
    if (setup_types()) {
        unsupported("type objects not found");
        return -ENOENT;
    }
    open_memfd();
    uint64_t probe = 0x5079, got = 0;
    if (safe_read(&got, (uint64_t)(uintptr_t)&probe, sizeof probe) || got != probe) {
        unsupported("neither a memfd nor process_vm_readv can read the process's memory");
        return -EPERM;
    }
    uint16_t header_ts_frame = py.lay.ts_frame;
    if (minor >= 13) {
        const uint8_t *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
        int rc = rt ? use_debug_offsets(rt) : -ENOENT;
        if (rc) {
            unsupported(rc == -ENOTSUP ? "free-threaded build"
                                       : "its _Py_DebugOffsets are missing or not understood");
            return rc;
        }
    }
    if (derive_read_sizes()) {
        unsupported("its structures are larger than this tracer reads");
        return -EPROTO;
    }
    find_eval_range();
    /* The fast path needs the data-stack offsets of the headers (3.13 does not publish them):
     * only where the published thread-state offset agrees with the headers', and only with a
     * way to see finalization. */
    py.is_finalizing =
        (int (*)(void))dlsym(RTLD_DEFAULT, minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
    py.fast = py.is_finalizing && py.lay.ts_frame == header_ts_frame && !checked_only;
    int rc = map_cache();
    if (rc) {
        unsupported("no memory for the code cache");
        return rc;
    }
    py.status = GMT_PY_CAPTURED;
    hook_install(checked_only ? "Python frames are read through the kernel only "
                                "(GPUMEMTRACE_PY_CHECKED): no replay to vouch for"
                 : !py.fast   ? "no fast path for this interpreter: no replay to vouch for"
                              : NULL,
                 (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyType_Type"));
    /* Beyond the innermost evaluation frame the Python frames say more than the interpreter's
     * own native frames: the native walk ends there (docs/unwind.md). */
    if (py.eval_hi > py.eval_lo) gmt_unwind_stop_at(py.eval_lo, py.eval_hi);
    gmt_info("Python %s: Python frames are captured (without the GIL)", py.version);
    return 0;
}

uint64_t gmt_py_checked_walks(void)
{
    return __atomic_load_n(&checked_walks, RLX);
}

uint64_t gmt_py_unreadable_frames(void)
{
    return __atomic_load_n(&unreadable_frames, RLX);
}

uint64_t gmt_py_cut_walks(void)
{
    return __atomic_load_n(&cut_walks, RLX);
}

uint64_t gmt_py_code_dropped(void)
{
    pycode_t *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    return c ? __atomic_load_n(&c->dropped, RLX) : 0;
}

void gmt_py_note_id(const gmt_py_splice_t *sp, uint32_t id)
{
    walkmemo_t *m = sp->note && sp->key_token ? walk_memo_of_thread() : NULL;
    if (!m || m->busy) return;
    m->busy = 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pynote_t *pn = sp->note;
    if (pn->stamp == sp->stamp) { /* still the words the splice found */
        pn->token = sp->key_token;
        pn->tag_gen = sp->key_tag_gen;
        pn->id = id;
        site_note(m, pn, sp);
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    m->busy = 0;
}

/* The threads' replays (or, noted: those of them answered with a noted id; trusted: those that
 * loaded no code object), summed. */
enum { SUM_REPLAYS, SUM_NOTED, SUM_TRUSTED, SUM_SITED };
static uint64_t memo_sum(int what)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; walk_memo_mem && i < MEM_SLOTS; i++) {
        const walkmemo_t *m = &walk_memo_mem[i];
        sum += __atomic_load_n(what == SUM_NOTED     ? &m->noted
                               : what == SUM_TRUSTED ? &m->trusted
                               : what == SUM_SITED   ? &m->sited
                                                     : &m->replays,
                               RLX);
    }
    return sum;
}

uint64_t gmt_py_trusted_walks(void)
{
    return memo_sum(SUM_TRUSTED);
}

uint64_t gmt_py_sited_walks(void)
{
    return memo_sum(SUM_SITED);
}

int gmt_py_test_code_hook(uint64_t type, uint64_t type_type)
{
    __atomic_store_n(&ch.state, CH_UNSET, __ATOMIC_RELEASE);
    ch.why = NULL;
    uint64_t saved = py.code_type;
    py.code_type = type;
    hook_install(NULL, type_type);
    py.code_type = saved;
    return __atomic_load_n(&ch.state, __ATOMIC_ACQUIRE) == CH_ACTIVE ? 0 : -1;
}

uint64_t gmt_py_test_code_stamp(void)
{
    return code_stamp();
}

const char *gmt_py_code_hook(const char **why)
{
    int state = __atomic_load_n(&ch.state, __ATOMIC_ACQUIRE);
    *why = state == CH_OFF ? __atomic_load_n(&ch.why, RLX) : NULL;
    return state == CH_ACTIVE ? "active" : "off";
}

uint64_t gmt_py_noted_walks(void)
{
    return memo_sum(SUM_NOTED);
}

uint64_t gmt_py_replayed_walks(void)
{
    return memo_sum(SUM_REPLAYS);
}

void gmt_py_test_reads(uint64_t *checked, uint64_t *direct)
{
    *checked = n_checked;
    *direct = n_direct;
}

uint64_t gmt_py_test_outer_reused(void)
{
    return n_outer;
}

bool gmt_py_test_same_way(uint64_t inner_a, uint64_t outer_a, uint32_t nr_a, uint64_t inner_b,
                          uint64_t outer_b, uint32_t nr_b)
{
    return way_index(inner_a, outer_a, nr_a) == way_index(inner_b, outer_b, nr_b);
}

uint64_t gmt_py_test_replays(void)
{
    const walkmemo_t *m = walk_memo_of_thread(); /* the thread's own for good */
    return m ? __atomic_load_n(&m->replays, RLX) : 0;
}

void gmt_py_test_use_fast(bool on, uint64_t frame_type)
{
    py.fast = on;
    uint64_t *known = known_code_of_thread();
    if (known) memset(known, 0, 2 * KNOWN_CODE * sizeof *known);
    walkmemo_t *m = walk_memo_of_thread();
    for (uint32_t k = 0; m && k < PY_WAYS; k++)
        m->way[k].nr = 0; /* a new fixture may sit where the last one's objects were */
    py.frame_type = frame_type;
    py.is_finalizing = NULL;
    test_fast_no_finalize_check = on;
    memset(&fc, 0, sizeof fc);
}

void gmt_py_test_use_memfd(bool on)
{
    use_memfd = on;
    if (on && mem_fd < 0) open_memfd();
}

int gmt_py_test_use_layout(int minor, uint64_t code_type, uint64_t str_type, uint64_t bytes_type)
{
    const layout_t *L = builtin_layout(minor);
    if (!L) return -ENOTSUP;
    return gmt_py_test_use_layout_of(L, code_type, str_type, bytes_type);
}

int gmt_py_test_use_layout_of(const struct layout_s *L, uint64_t code_type, uint64_t str_type,
                              uint64_t bytes_type)
{
    int minor = L->minor;
    refresh_pid();
    py.lay = *L;
    py.code_type = code_type;
    py.str_type = str_type;
    py.bytes_type = bytes_type;
    if (derive_read_sizes()) return -EPROTO;
    snprintf(py.version, sizeof py.version, "3.%d.0", minor);
    int rc = map_cache();
    if (!rc) cache->minor = (uint32_t)minor;
    return rc;
}

/* ---- report time -------------------------------------------------------------------------- */

static int lnotab_line(const uint8_t *t, uint32_t len, int line, uint32_t addrq)
{
    uint32_t addr = 0;
    for (uint32_t i = 0; i + 1 < len; i += 2) {
        addr += t[i];
        if (addr > addrq) break;
        line += (int8_t)t[i + 1];
    }
    return line;
}

static int linetable310_line(const uint8_t *t, uint32_t len, int line, uint32_t addrq)
{
    uint32_t start = 0;
    for (uint32_t i = 0; i + 1 < len; i += 2) {
        uint32_t end = start + t[i];
        int8_t d = (int8_t)t[i + 1];
        int cur = -1;
        if (d != -128) {
            line += d;
            cur = line;
        }
        if (addrq >= start && addrq < end) return cur;
        start = end;
    }
    return -1;
}

/* A 6-bit-chunk varint; a table that ends inside one moves *i past len. */
static uint32_t varint(const uint8_t *t, uint32_t len, uint32_t *i)
{
    uint32_t v = 0, shift = 0;
    for (;;) {
        if (*i >= len) {
            *i = len + 1;
            return v;
        }
        uint8_t b = t[(*i)++];
        if (shift < 32) v |= (uint32_t)(b & 63) << shift;
        shift += 6;
        if (!(b & 64)) return v;
    }
}

static int location_line(const uint8_t *t, uint32_t len, int line, uint32_t addrq)
{
    uint32_t unit = addrq / 2, addr = 0, i = 0;
    while (i < len) {
        uint8_t b = t[i++];
        if (!(b & 0x80)) return -1; /* not at an entry start: corrupt table */
        unsigned code = (b >> 3) & 15, units = (b & 7) + 1u;
        int cur;
        if (code == 15) {
            cur = -1;
        } else if (code == 14) { /* long form: line delta, end line, columns */
            uint32_t v = varint(t, len, &i);
            line += (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
            varint(t, len, &i);
            varint(t, len, &i);
            varint(t, len, &i);
            cur = line;
        } else if (code == 13) { /* no columns */
            uint32_t v = varint(t, len, &i);
            line += (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
            cur = line;
        } else if (code >= 10) { /* one line form: delta in the code, two column bytes */
            line += (int)code - 10;
            i += 2;
            cur = line;
        } else { /* short form: same line, one column byte */
            i += 1;
            cur = line;
        }
        if (i > len) return -1; /* truncated entry */
        if (unit >= addr && unit < addr + units) return cur;
        addr += units;
    }
    return -1;
}

int gmt_py_addr2line(int minor, const uint8_t *table, uint32_t len, int firstlineno,
                     uint32_t offset)
{
    if (!table) return -1;
    if (minor == 9) return lnotab_line(table, len, firstlineno, offset);
    if (minor == 10) return linetable310_line(table, len, firstlineno, offset);
    if (minor >= 11) return location_line(table, len, firstlineno, offset);
    return -1;
}

/* Whether c (bytes long) is a code cache whose header can be trusted: recovery and
 * gmt_py_test_damage_cache. */
static bool cache_usable(const pycode_t *c, size_t bytes)
{
    return bytes >= sizeof *c && c->magic == PYCODE_MAGIC && c->max_entries >= 2 &&
           c->max_entries <= (1u << 27) && c->text_bytes != 0 && c->text_bytes <= bytes &&
           c->index_mask == pow2_at_least((uint64_t)c->max_entries * 2) - 1 &&
           gmt_pycode_bytes(c->max_entries, c->text_bytes) <= bytes;
}

/* What gmt_py_attach_recovered found (never called in a traced process): the cache it attached
 * and the entries it disabled there, or that the state file's cache could not be used. */
static bool recovered;
static bool recovered_unusable;
static pycode_t *recovered_cache;
static uint64_t recovered_damaged;

int gmt_py_attach_recovered(void *mem, size_t bytes, gmt_py_status_t status, const char *version)
{
    py.status = status <= GMT_PY_NO_FRAMES ? status : GMT_PY_NOT_PYTHON;
    snprintf(py.version, sizeof py.version, "%s", version ? version : "");
    /* What an earlier recovery attached goes first, whatever this one finds: `top` recovers at
     * every view, each time from a new mapping of the file (the last one is unmapped). */
    recovered = true;
    recovered_unusable = false;
    recovered_cache = NULL;
    recovered_damaged = 0;
    __atomic_store_n(&cache, NULL, __ATOMIC_RELEASE);
    __atomic_fetch_add(&cache_gen, 1, __ATOMIC_RELEASE);
    pycode_t *c = mem;
    if (!c) { /* captured Python frames, nothing to name them by */
        recovered_unusable = py.status == GMT_PY_CAPTURED;
        return recovered_unusable ? -ENOENT : 0;
    }
    if (!cache_usable(c, bytes)) {
        recovered_unusable = true;
        return -EINVAL;
    }
    char *text = cache_text(c);
    text[c->text_bytes - 1] = 0; /* every string ends inside the arena */
    pycode_entry_t *ents = cache_entries(c);
    uint64_t damaged = 0;
    for (uint32_t i = 0; i < c->max_entries; i++) {
        pycode_entry_t *e = &ents[i];
        if (!e->ready || e->text == UINT64_MAX) continue;
        if (e->text >= c->text_bytes) {
            e->ready = 0;
            damaged++;
            continue;
        }
        size_t rest = c->text_bytes - e->text, fl = strnlen(text + e->text, rest);
        size_t nl = fl + 1 < rest ? strnlen(text + e->text + fl + 1, rest - fl - 1) : rest;
        if (fl + nl + 2 > rest || e->table_len > rest - fl - nl - 2) {
            e->ready = 0;
            damaged++;
        }
    }
    recovered_damaged = damaged;
    recovered_cache = c;
    __atomic_store_n(&cache, c, __ATOMIC_RELEASE);
    __atomic_fetch_add(&cache_gen, 1, __ATOMIC_RELEASE);
    return 0;
}

bool gmt_py_code_damaged(uint64_t *damaged)
{
    pycode_t *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    *damaged = c && c == recovered_cache ? recovered_damaged : 0;
    return c && c == recovered_cache;
}

bool gmt_py_recovered(bool *cache_unusable)
{
    *cache_unusable = recovered_unusable;
    return recovered;
}

int gmt_py_test_break_cache_header(void *mem, size_t bytes)
{
    pycode_t *c = mem;
    if (!c || !cache_usable(c, bytes)) return -EINVAL;
    c->magic ^= 1; /* one bit of the magic, as a damaged file's might be */
    return 0;
}

int gmt_py_test_damage_cache(void *mem, size_t bytes, const char *const *names, int n)
{
    pycode_t *c = mem;
    if (!c || !cache_usable(c, bytes)) return -EINVAL;
    const char *text = cache_text(c);
    pycode_entry_t *ents = cache_entries(c);
    int damaged = 0;
    for (uint32_t i = 1; i < c->max_entries; i++) {
        pycode_entry_t *e = &ents[i];
        if (!e->ready || e->text >= c->text_bytes) continue;
        size_t rest = c->text_bytes - e->text, fl = strnlen(text + e->text, rest);
        if (fl + 1 >= rest) continue;
        const char *fn = text + e->text + fl + 1;
        if (strnlen(fn, rest - fl - 1) == rest - fl - 1) continue; /* no end inside the arena */
        for (int k = 0; k < n; k++) {
            if (strcmp(fn, names[k]) == 0) {
                e->text = c->text_bytes; /* past the arena, as a damaged file's would be */
                damaged++;
                break;
            }
        }
    }
    return damaged;
}

int gmt_py_resolve(uint64_t word, gmt_py_frame_t *out)
{
    out->file = out->function = NULL;
    out->line = -1;
    pycode_t *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (!gmt_py_is_frame(word)) return -EINVAL;
    uint32_t id = (uint32_t)((word >> 32) & 0x0fffffff), off = (uint32_t)word;
    if (!c || id == 0 || id >= c->max_entries) return -ENOENT;
    pycode_entry_t *e = &cache_entries(c)[id];
    if (!__atomic_load_n(&e->ready, __ATOMIC_ACQUIRE) || e->text == UINT64_MAX) return -ENOENT;
    const char *t = cache_text(c) + e->text;
    out->file = t[0] ? t : NULL;
    size_t fl = strlen(t);
    out->function = t[fl + 1] ? t + fl + 1 : NULL;
    const uint8_t *tab = (const uint8_t *)t + fl + 1 + strlen(t + fl + 1) + 1;
    out->line = gmt_py_addr2line((int)c->minor, tab, e->table_len, e->firstlineno, off);
    return 0;
}
