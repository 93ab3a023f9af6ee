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

#include "log.h"
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
    void *(*this_tstate)(void); /* PyGILState_GetThisThreadState */
    uint64_t eval_lo, eval_hi;  /* _PyEval_EvalFrameDefault */
    char version[32];
} py;

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
    return 0;
}

/* Append a UTF-8 copy of a str object (compact strings only: code names always are) to dst;
 * returns the bytes written, 0 when it is not a readable str. */
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
    size_t out = 0;
    uint8_t chunk[256];
    for (uint64_t i = 0; i < len && out + 4 < cap;) {
        uint64_t take = len - i;
        if (take > sizeof chunk / kind) take = sizeof chunk / kind;
        if (safe_read(chunk, data + i * kind, take * kind)) return 0;
        for (uint64_t j = 0; j < take && out + 4 < cap; j++) {
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
        i += take;
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

/* Entry id of a code object (head: its first bytes, already type-checked); 0 when the cache
 * is full or absent. Lock-free. */
static uint32_t code_id(uint64_t code, const uint8_t *head)
{
    pycode_t *c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
    if (!c) return 0;
    const layout_t *L = &py.lay;
    int32_t first = (int32_t)ld32(head + L->co_firstlineno);
    uint64_t ident = ld64(head + L->co_filename) ^ (ld64(head + L->co_name) << 1) ^
                     ((uint64_t)(uint32_t)first << 40);
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
#define PAGE     4096u
#define WIN_SIZE (2 * PAGE + READ_MAX)

typedef struct window_s {
    uint64_t base[2]; /* [0]: the frame's page up to its end; [1]: the page below */
    uint32_t len[2];
    uint8_t buf[WIN_SIZE]; /* [0] at buf, [1] right after it */
} window_t;

static const uint8_t *window_get(window_t *w, uint64_t addr, uint32_t n)
{
    for (int i = 0, at = 0; i < 2; at += (int)w->len[i], i++)
        if (w->len[i] && addr >= w->base[i] && addr + n <= w->base[i] + w->len[i])
            return w->buf + at + (addr - w->base[i]);
    if (addr < 4096 || addr + n < addr || (addr >> 56) != 0) return NULL;
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

typedef struct rawframe_s {
    uint64_t code, instr;
    uint8_t seg_end;
} rawframe_t;

static uint32_t walk(uint64_t tstate, pyframe_t *out, uint32_t cap)
{
    const layout_t *L = &py.lay;
    uint8_t word[8];
    if (L->ts_cframe != NONE) {
        if (safe_read(word, tstate + L->ts_cframe, 8)) return 0;
        if (safe_read(word, ld64(word) + L->cf_current, 8)) return 0;
    } else if (safe_read(word, tstate + L->ts_frame, 8)) {
        return 0;
    }
    uint64_t frame = ld64(word);
    if (cap > GMT_PY_MAX_FRAMES) cap = GMT_PY_MAX_FRAMES;

    /* 1. The frame chain, innermost first: code pointer and instruction of each. */
    window_t w;
    w.len[0] = w.len[1] = 0;
    rawframe_t raw[GMT_PY_MAX_FRAMES];
    uint32_t nr = 0;
    for (uint32_t steps = 0; frame && nr < cap && steps < MAX_WALK_STEPS; steps++) {
        const uint8_t *f = (frame & 7) ? NULL : window_get(&w, frame, py.frame_read);
        if (!f) break;
        uint64_t back = ld64(f + L->fr_back);
        if (back == frame) back = 0; /* a loop ends the walk (so does MAX_WALK_STEPS) */
        if (L->owner_cstack != NONE && f[L->fr_owner] == L->owner_cstack) {
            if (nr) raw[nr - 1].seg_end = 1; /* a native evaluation frame's shim */
        } else {
            raw[nr].code = ld64(f + L->fr_code);
            raw[nr].instr = L->minor <= 10 ? ld32(f + L->fr_instr) : ld64(f + L->fr_instr);
            raw[nr].seg_end = L->minor <= 10 || (L->fr_is_entry != NONE && f[L->fr_is_entry]);
            nr++;
        }
        frame = back;
    }

    /* 2. Their code objects' heads, CODE_BATCH at a time in as few reads as the memory
     * allows; 3. a word for each type-checked code object (3.13's f_executable may be None). */
    uint8_t heads[CODE_BATCH * CODE_READ_MAX];
    uint32_t cr = py.code_read, n = 0;
    for (uint32_t base = 0; base < nr; base += CODE_BATCH) {
        uint32_t cnt = nr - base < CODE_BATCH ? nr - base : CODE_BATCH;
        uint8_t ok[CODE_BATCH] = {0};
        for (uint32_t start = 0; start < cnt;) {
            struct iovec remote[CODE_BATCH];
            uint32_t k = 0;
            for (uint32_t i = start; i < cnt; i++, k++)
                remote[k] = (struct iovec){(void *)(uintptr_t)raw[base + i].code, cr};
            size_t got = gather(heads + (size_t)start * cr, remote, (int)k, (size_t)k * cr);
            uint32_t full = (uint32_t)(got / cr);
            for (uint32_t i = 0; i < full; i++)
                ok[start + i] = 1;
            start += full + 1; /* the one after the readable ones is not readable: skip it */
        }
        for (uint32_t j = 0; j < cnt; j++) {
            const rawframe_t *r = &raw[base + j];
            const uint8_t *head = heads + (size_t)j * cr;
            if (!ok[j] || (r->code & 7) || ld64(head + L->ob_type) != py.code_type) {
                if (r->seg_end && n) out[n - 1].seg_end = 1;
                continue;
            }
            uint64_t off;
            if (L->minor <= 10) {
                int32_t lasti = (int32_t)(uint32_t)r->instr;
                off = lasti < 0 ? 0 : L->minor == 9 ? (uint64_t)lasti : (uint64_t)lasti * 2;
            } else {
                uint64_t start = r->code + L->co_code;
                off = r->instr >= start ? r->instr - start : 0;
            }
            if (off > UINT32_MAX) off = UINT32_MAX;
            uint32_t id = code_id(r->code, head);
            out[n].word = (GMT_PY_TAG << GMT_PY_TAG_SHIFT) | ((uint64_t)id << 32) | off;
            out[n].seg_end = r->seg_end;
            n++;
        }
    }
    if (n) out[n - 1].seg_end = 1;
    return n;
}

uint32_t gmt_py_splice(uint64_t *frames, uint32_t n, uint32_t cap)
{
    if (py.status != GMT_PY_CAPTURED || n > cap) return n;
    void *ts = py.this_tstate();
    if (!ts) return n;
    pyframe_t pf[GMT_PY_MAX_FRAMES];
    int saved_errno = errno; /* the program's errno survives the failed reads of a walk */
    uint32_t np = walk((uint64_t)(uintptr_t)ts, pf, GMT_PY_MAX_FRAMES);
    errno = saved_errno;
    if (!np) return n;
    uint64_t native[GMT_PY_MAX_FRAMES * 4];
    if (n > sizeof native / sizeof native[0]) n = sizeof native / sizeof native[0];
    memcpy(native, frames, n * sizeof *frames);
    uint32_t out = 0, p = 0;
    for (uint32_t i = 0; i < n && out < cap; i++) {
        if (p < np && native[i] >= py.eval_lo && native[i] < py.eval_hi) {
            /* This evaluation frame runs the next run of Python frames. */
            do {
                frames[out++] = pf[p].word;
            } while (!pf[p++].seg_end && p < np && out < cap);
        }
        if (out < cap) frames[out++] = native[i];
    }
    while (p < np && out < cap)
        frames[out++] = pf[p++].word;
    return out;
}

uint32_t gmt_py_test_walk(uint64_t tstate, uint64_t *words, uint32_t cap)
{
    if (use_memfd && mem_fd < 0) open_memfd();
    pyframe_t pf[GMT_PY_MAX_FRAMES];
    if (cap > GMT_PY_MAX_FRAMES) cap = GMT_PY_MAX_FRAMES;
    uint32_t n = walk(tstate, pf, cap);
    for (uint32_t i = 0; i < n; i++)
        words[i] = pf[i].word;
    return n;
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
    uint16_t co[] = {L->ob_type,     L->co_filename,    L->co_name,
                     L->co_qualname, L->co_firstlineno, L->co_linetable};
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
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        *map[i].field = vals[i];
    return 0;
}

static int map_cache(void)
{
    if (__atomic_load_n(&cache, __ATOMIC_ACQUIRE)) return 0;
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

int gmt_py_init(bool enabled)
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
    int rc = map_cache();
    if (rc) {
        unsupported("no memory for the code cache");
        return rc;
    }
    py.status = GMT_PY_CAPTURED;
    gmt_info("Python %s: Python frames are captured (without the GIL)", py.version);
    return 0;
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
