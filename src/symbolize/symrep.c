/* symrep.c - see symrep.h. */
#define _GNU_SOURCE
#include "symrep.h"

#include "attribute.h"
#include "core/pyframes.h"
#include "core/stats.h"
#include "core/track.h"
#include "dwsym.h"
#include "output/symbolize.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GMT_MAX_MODS  2048
#define GMT_MOD_SLOTS 4096
#define GMT_MAX_LIBS  255
#define GMT_LIB_NAME  64 /* a Python package's or script's name (attribute.h), NUL included */

typedef struct mod_s {
    uint64_t start, end; /* mapped range: first PT_LOAD's page to the last PT_LOAD's end */
    const char *path;    /* the loader's string, or exe_path */
    char build_id[GMT_BUILD_ID_HEX];
} mod_t;

typedef struct lib_s {
    const char *name;
    int64_t peak, exit;
} lib_t;

static const gmt_symrep_module_t *foreign;
static int nforeign;

static struct {
    bool active, full, foreign, recovered;
    gmt_dwsym_t *dws;
    char why[256];
    mod_t mods[GMT_MAX_MODS];
    int nmods;
    int16_t slot[GMT_MOD_SLOTS]; /* in process: hash of module start -> 1 + index in mods */
    char exe_path[4096];
    int16_t *lib_of; /* per stack id: 0 unknown, -1 none, else 1 + index into libs */
    uint32_t max_ids;
    lib_t libs[GMT_MAX_LIBS];
    char lib_names[GMT_MAX_LIBS][GMT_LIB_NAME]; /* the names made here, not a module's */
    int nlibs;
} S;

/* ---- the module snapshot ---------------------------------------------------------------- */

static void note_build_id(const ElfW(Phdr) * ph, ElfW(Addr) bias, char *out)
{
    const unsigned char *p = (const unsigned char *)(uintptr_t)(bias + ph->p_vaddr);
    size_t left = ph->p_memsz;
    while (left >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
        size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
        size_t total = sizeof *nh + name + desc;
        if (total > left) return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            memcmp(p + sizeof *nh, "GNU", 4) == 0) {
            const unsigned char *d = p + sizeof *nh + name;
            size_t n = nh->n_descsz;
            if (n > (GMT_BUILD_ID_HEX - 1) / 2) n = (GMT_BUILD_ID_HEX - 1) / 2;
            static const char hex[] = "0123456789abcdef";
            for (size_t i = 0; i < n; i++) {
                out[2 * i] = hex[d[i] >> 4];
                out[2 * i + 1] = hex[d[i] & 15];
            }
            out[2 * n] = 0;
            return;
        }
        p += total;
        left -= total;
    }
}

/* The module holding probe in this process, added to S.mods the first time one of its
 * addresses is seen. dladdr1 takes the loader's dl_load_lock, which fork resets in the child;
 * dl_iterate_phdr would take dl_load_write_lock, which fork does not reset, so a child forked
 * while the writer held it would hang in its own exit report. The module's program headers
 * and build-id note are read from its mapped image (the first page holds the ELF header). */
static const mod_t *local_mod(uint64_t probe)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1((void *)(uintptr_t)probe, &info, (void **)&lm, RTLD_DL_LINKMAP) ||
        !info.dli_fbase || !lm)
        return NULL;
    uint64_t base = (uint64_t)(uintptr_t)info.dli_fbase;
    size_t h = (size_t)((base >> 12) * 0x9e3779b97f4a7c15ull >> 52) & (GMT_MOD_SLOTS - 1);
    for (size_t k = 0; k < GMT_MOD_SLOTS; k++, h = (h + 1) & (GMT_MOD_SLOTS - 1)) {
        int16_t i = S.slot[h];
        if (i == 0) break;
        if (S.mods[i - 1].start == base) return probe < S.mods[i - 1].end ? &S.mods[i - 1] : NULL;
    }
    if (S.nmods >= GMT_MAX_MODS || S.slot[h] != 0) return NULL;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(uintptr_t)base;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_phentsize != sizeof(ElfW(Phdr)) ||
        eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(ElfW(Phdr)) > page)
        return NULL;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(uintptr_t)(base + eh->e_phoff);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD) continue;
        if (ph[i].p_vaddr < lo) lo = ph[i].p_vaddr;
        if (ph[i].p_vaddr + ph[i].p_memsz > hi) hi = ph[i].p_vaddr + ph[i].p_memsz;
    }
    if (hi == 0) return NULL;
    uint64_t bias = base - (lo & ~(page - 1));
    mod_t *m = &S.mods[S.nmods];
    memset(m, 0, sizeof *m);
    m->start = base;
    m->end = bias + hi;
    if (lm->l_name && *lm->l_name) {
        m->path = lm->l_name;
    } else { /* the main program */
        if (!S.exe_path[0]) {
            ssize_t n = readlink("/proc/self/exe", S.exe_path, sizeof S.exe_path - 1);
            S.exe_path[n > 0 ? n : 0] = 0;
        }
        m->path = S.exe_path[0] ? S.exe_path : info.dli_fname;
    }
    for (int i = 0; i < eh->e_phnum && !m->build_id[0]; i++)
        if (ph[i].p_type == PT_NOTE && bias + ph[i].p_vaddr >= m->start &&
            bias + ph[i].p_vaddr + ph[i].p_memsz <= m->end)
            note_build_id(&ph[i], bias, m->build_id);
    S.slot[h] = (int16_t)(++S.nmods);
    return probe < m->end ? m : NULL;
}

/* A report rebuilt from a state file (gmt_track_recovered): the dead process's module map,
 * recorded in the file, stands for this process's loader. */
static const mod_t *recovered_mod(uint64_t probe)
{
    const gmt_module_t *tm = NULL;
    if (!gmt_track_module_of(probe, &tm) || !tm) return NULL;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    uint64_t start = tm->lo & ~(page - 1);
    size_t h = (size_t)((start >> 12) * 0x9e3779b97f4a7c15ull >> 52) & (GMT_MOD_SLOTS - 1);
    for (size_t k = 0; k < GMT_MOD_SLOTS; k++, h = (h + 1) & (GMT_MOD_SLOTS - 1)) {
        int16_t i = S.slot[h];
        if (i == 0) break;
        if (S.mods[i - 1].start == start) return &S.mods[i - 1];
    }
    if (S.nmods >= GMT_MAX_MODS || S.slot[h] != 0) return NULL;
    mod_t *m = &S.mods[S.nmods];
    memset(m, 0, sizeof *m);
    m->start = start;
    m->end = tm->hi;
    m->path = tm->path[0] ? tm->path : NULL;
    static const char hex[] = "0123456789abcdef";
    uint32_t n = tm->build_id_len < sizeof tm->build_id ? tm->build_id_len : sizeof tm->build_id;
    for (uint32_t i = 0; i < n; i++) {
        m->build_id[2 * i] = hex[tm->build_id[i] >> 4];
        m->build_id[2 * i + 1] = hex[tm->build_id[i] & 15];
    }
    m->build_id[2 * n] = 0;
    S.slot[h] = (int16_t)(++S.nmods);
    return m;
}

static int cmp_mod(const void *a, const void *b)
{
    const mod_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const mod_t *find_mod(uint64_t addr)
{
    int lo = 0, hi = S.nmods;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (S.mods[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return NULL;
    const mod_t *m = &S.mods[lo - 1];
    return addr < m->end ? m : NULL;
}

/* ---- session ---------------------------------------------------------------------------- */

#define GMT_LIBDW_STACK_ROOM (1024 * 1024)

/* Bytes of stack below this frame on the calling thread (SIZE_MAX when unknown). */
static size_t stack_room(void)
{
    pthread_attr_t attr;
    void *lo = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return SIZE_MAX;
    int rc = pthread_attr_getstack(&attr, &lo, &size);
    pthread_attr_destroy(&attr);
    char here;
    uintptr_t h = (uintptr_t)&here, l = (uintptr_t)lo;
    if (rc != 0 || !lo || h < l || h - l > size) return SIZE_MAX;
    return (size_t)(h - l);
}

void gmt_symrep_begin(bool full, uint32_t max_stack_ids)
{
    S.active = true;
    S.full = false;
    S.dws = NULL;
    S.nmods = 0;
    S.nlibs = 0;
    memset(S.slot, 0, sizeof S.slot);
    S.recovered = gmt_track_recovered();
    S.foreign = foreign != NULL || S.recovered;
    if (S.foreign) {
        for (int i = 0; i < nforeign && S.nmods < GMT_MAX_MODS; i++) {
            mod_t *m = &S.mods[S.nmods++];
            memset(m, 0, sizeof *m);
            m->start = foreign[i].start;
            m->end = foreign[i].end;
            m->path = foreign[i].path;
            if (foreign[i].build_id)
                snprintf(m->build_id, sizeof m->build_id, "%s", foreign[i].build_id);
        }
        qsort(S.mods, (size_t)S.nmods, sizeof *S.mods, cmp_mod);
    }
    S.max_ids = max_stack_ids;
    size_t bytes = (size_t)max_stack_ids * sizeof *S.lib_of;
    void *p = bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    : MAP_FAILED;
    S.lib_of = p == MAP_FAILED ? NULL : p;
    if (!full) {
        snprintf(S.why, sizeof S.why,
                 "report written where allocating is unsafe (CUDA hook, crash, signal or exec); "
                 "'gpumemtrace symbolize' names the frames");
        return;
    }
    S.why[0] = 0;
    /* libdw keeps large arrays on the stack (its line-table reader ~300 KiB): on a thread
     * with less room than this (a small application thread asking for a snapshot), names
     * are left for later rather than risk the guard page. */
    size_t room = stack_room();
    if (room < GMT_LIBDW_STACK_ROOM) {
        snprintf(S.why, sizeof S.why,
                 "%zu KiB of stack left on the writing thread, libdw needs %d KiB; "
                 "'gpumemtrace symbolize' names the frames",
                 room >> 10, GMT_LIBDW_STACK_ROOM >> 10);
        return;
    }
    if (gmt_dwsym_open(&S.dws, S.why, sizeof S.why) == 0) S.full = true;
}

void gmt_symrep_set_foreign_modules(const gmt_symrep_module_t *mods, int n)
{
    foreign = n > 0 ? mods : NULL;
    nforeign = n > 0 ? n : 0;
}

void gmt_symrep_end(void)
{
    gmt_dwsym_close(S.dws);
    S.dws = NULL;
    if (S.lib_of) munmap(S.lib_of, (size_t)S.max_ids * sizeof *S.lib_of);
    S.lib_of = NULL;
    S.active = false;
}

void gmt_symrep_write_status(jw_t *w)
{
    jw_object_begin(w, "symbols");
    jw_string(w, "resolver", S.full ? "libdw" : "dladdr");
    jw_string(w, "reason", S.full ? NULL : S.why);
    jw_object_end(w);
}

/* ---- one frame -------------------------------------------------------------------------- */

typedef struct frame_s {
    const char *module;
    uint64_t offset;
    const char *build_id;
    const char *symbol;
    const gmt_symres_t *res; /* libdw's answer or NULL */
} frame_t;

static void resolve(uint64_t addr, frame_t *f)
{
    memset(f, 0, sizeof *f);
    uint64_t probe = addr > 0 ? addr - 1 : addr;
    const mod_t *m = S.recovered ? recovered_mod(probe)
                     : S.foreign ? find_mod(probe)
                                 : local_mod(probe);
    if (m && m->path) {
        f->module = m->path;
        f->offset = addr - m->start;
        f->build_id = m->build_id[0] ? m->build_id : NULL;
        /* A return address: name the call instruction before it. */
        if (S.full && f->module[0] == '/' && f->offset > 0 &&
            gmt_dwsym_resolve(S.dws, f->module, f->build_id, f->offset - 1, &f->res) == 0 &&
            f->res->fn.symbol) {
            f->symbol = f->res->fn.symbol;
            return;
        }
    }
    if (S.foreign) return; /* dladdr knows this process, not the one that ran */
    /* dladdr: the dynamic symbol table only, but no file I/O and no allocation. */
    gmt_frame_info_t fi;
    gmt_symbolize(addr, &fi);
    if (!f->module && fi.module) {
        f->module = fi.module;
        f->offset = fi.offset;
    }
    f->symbol = fi.symbol;
}

void gmt_symrep_names(uint64_t addr, gmt_symrep_names_t *out)
{
    memset(out, 0, sizeof *out);
    if (!S.active) return;
    frame_t f;
    resolve(addr, &f);
    out->module = f.module;
    out->symbol = f.symbol;
    out->file = f.res ? f.res->fn.file : NULL;
    if (S.foreign || !f.res || !f.symbol || f.symbol != f.res->fn.symbol) return;
    gmt_frame_info_t fi; /* libdw named it: dladdr's spelling too */
    gmt_symbolize(addr, &fi);
    if (fi.symbol && strcmp(fi.symbol, f.symbol) != 0) out->dl_symbol = fi.symbol;
}

static void write_loc(jw_t *w, const char *file, int line)
{
    jw_string(w, "file", file);
    if (file && line > 0)
        jw_int(w, "line", line);
    else
        jw_null(w, "line");
}

void gmt_symrep_write_frame(jw_t *w, uint64_t addr)
{
    frame_t f;
    resolve(addr, &f);
    /* Without libdw, dladdr's name is written as the loader has it (demangling allocates);
     * 'gpumemtrace symbolize' demangles it later. */
    const char *sym = f.symbol;
    jw_object_begin(w, NULL);
    jw_string(w, "type", "native");
    jw_hex(w, "address", addr);
    jw_string(w, "module", f.module);
    if (f.module)
        jw_uint(w, "offset", f.offset);
    else
        jw_null(w, "offset");
    jw_string(w, "build_id", f.build_id);
    jw_string(w, "symbol", sym);
    write_loc(w, f.res ? f.res->fn.file : NULL, f.res ? f.res->fn.line : 0);
    jw_array_begin(w, "inlined");
    for (int i = 0; f.res && i < f.res->ninlined; i++) {
        jw_object_begin(w, NULL);
        jw_string(w, "symbol", f.res->inlined[i].symbol);
        write_loc(w, f.res->inlined[i].file, f.res->inlined[i].line);
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

/* ---- libraries -------------------------------------------------------------------------- */

/* name: a module's string (lives as long as the report), or one made in a caller's buffer
 * (made: copied here, GMT_LIB_NAME bytes at most). */
static int lib_index(const char *name, bool made)
{
    for (int i = 0; i < S.nlibs; i++)
        if (strcmp(S.libs[i].name, name) == 0) return i;
    if (S.nlibs >= GMT_MAX_LIBS) return -1;
    if (made) {
        snprintf(S.lib_names[S.nlibs], GMT_LIB_NAME, "%s", name);
        name = S.lib_names[S.nlibs];
    }
    S.libs[S.nlibs] = (lib_t){.name = name};
    return S.nlibs++;
}

/* The Python code behind a stack's first interpreter frame: the stack's innermost Python
 * frame charges the bytes to its package or script (attribute.h). fr: the stack from its
 * innermost end, where every frame before the interpreter's is machinery or Python: a Python
 * frame is placed before the evaluation frame that runs it, so when that frame is the first
 * interpreter frame (a call made straight from the evaluation loop: a specialised builtin, a
 * Cython vectorcall) the Python frame comes before it. -1: none, or no name. */
static int python_library(const uint64_t *fr, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!gmt_py_is_frame(fr[i])) continue;
        gmt_py_frame_t pf;
        gmt_py_resolve(fr[i], &pf);
        char buf[GMT_LIB_NAME];
        const char *name = gmt_attr_python_library(pf.file, buf, sizeof buf);
        return name ? lib_index(name, true) : -1;
    }
    return -1;
}

static int attribute_stack(uint32_t id)
{
    uint32_t depth = 0;
    const uint64_t *fr = gmt_stacks_frames(gmt_track_stacks(), id, &depth);
    for (uint32_t i = 0; fr && i < depth; i++) {
        if (gmt_py_is_frame(fr[i])) continue; /* a Python frame word, not an address */
        frame_t f;
        resolve(fr[i], &f);
        if (!f.module || !*f.module) continue;
        if (gmt_attr_frame_internal(f.module, f.symbol)) continue;
        /* Reached through the interpreter (ctypes, a binding's Python code): the Python code
         * that called, not python3.X, which every such stack passes through. */
        if (gmt_attr_is_interpreter(f.module)) {
            int k = python_library(fr, depth);
            if (k >= 0) return k;
        }
        char buf[GMT_LIB_NAME];
        const char *ext = gmt_attr_extension_library(f.module, buf, sizeof buf);
        return ext ? lib_index(ext, true) : lib_index(gmt_attr_basename(f.module), false);
    }
    return -1;
}

static int lib_of_stack(uint32_t id)
{
    if (!S.active || id == 0 || id >= S.max_ids) return -1;
    if (!S.lib_of) return attribute_stack(id);
    if (S.lib_of[id] == 0) S.lib_of[id] = (int16_t)(attribute_stack(id) + 1);
    return S.lib_of[id] > 0 ? S.lib_of[id] - 1 : -1;
}

const char *gmt_symrep_library(uint32_t stack_id)
{
    int i = lib_of_stack(stack_id);
    return i >= 0 ? S.libs[i].name : NULL;
}

void gmt_symrep_add_exit(uint32_t stack_id, int64_t bytes)
{
    int i = lib_of_stack(stack_id);
    if (i >= 0) S.libs[i].exit += bytes;
}

static int cmp_lib(const void *a, const void *b)
{
    const lib_t *x = *(const lib_t *const *)a, *y = *(const lib_t *const *)b;
    if (x->peak != y->peak) return x->peak > y->peak ? -1 : 1;
    if (x->exit != y->exit) return x->exit > y->exit ? -1 : 1;
    return strcmp(x->name, y->name);
}

void gmt_symrep_write_libraries(jw_t *w)
{
    size_t cap = (size_t)S.max_ids + GMT_PEAK_STACKLESS_KINDS;
    size_t bytes = cap * sizeof(gmt_peak_group_t);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    gmt_peak_group_t *pg = p == MAP_FAILED ? NULL : p;
    for (int s = 0; pg && s < GMT_STAT_SLOTS; s++) {
        gmt_dev_totals_t d;
        gmt_stats_device(s, &d);
        if (!d.seen || d.in_use_peak <= 0) continue;
        int n = gmt_track_peak_groups(s, pg, (int)cap, NULL);
        for (int i = 0; i < n; i++) {
            int k = lib_of_stack(pg[i].stack_id);
            if (k >= 0) S.libs[k].peak += pg[i].bytes;
        }
    }
    if (pg) munmap(pg, bytes);
    /* Sorted through pointers: S.libs keeps its order, so the per-stack cache stays valid for
     * the sections written after this one. */
    const lib_t *order[GMT_MAX_LIBS];
    for (int i = 0; i < S.nlibs; i++)
        order[i] = &S.libs[i];
    qsort(order, (size_t)S.nlibs, sizeof *order, cmp_lib);
    jw_array_begin(w, "libraries");
    for (int i = 0; i < S.nlibs; i++) {
        const lib_t *l = order[i];
        if (!l->peak && !l->exit) continue;
        jw_object_begin(w, NULL);
        jw_string(w, "library", l->name);
        jw_int(w, "peak_bytes", l->peak);
        jw_int(w, "exit_bytes", l->exit);
        jw_object_end(w);
    }
    jw_array_end(w);
}
