/* dwsym.c - see dwsym.h. libdw is reached only through the function table `dw`, filled by
 * dlsym from the library loaded at the first session. */
#define _GNU_SOURCE
#include "dwsym.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- libdw, loaded at run time --------------------------------------------------------- */

#define GMT_DW_FUNCS(X)                                                                            \
    X(dwfl_begin)                                                                                  \
    X(dwfl_end)                                                                                    \
    X(dwfl_report_begin)                                                                           \
    X(dwfl_report_elf)                                                                             \
    X(dwfl_report_end)                                                                             \
    X(dwfl_module_info)                                                                            \
    X(dwfl_module_build_id)                                                                        \
    X(dwfl_module_getsymtab)                                                                       \
    X(dwfl_module_getsym_info)                                                                     \
    X(dwfl_module_getsrc)                                                                          \
    X(dwfl_lineinfo)                                                                               \
    X(dwfl_module_addrdie)                                                                         \
    X(dwfl_build_id_find_debuginfo)                                                                \
    X(dwfl_offline_section_address)                                                                \
    X(dwarf_tag)                                                                                   \
    X(dwarf_attr)                                                                                  \
    X(dwarf_attr_integrate)                                                                        \
    X(dwarf_formstring)                                                                            \
    X(dwarf_formudata)                                                                             \
    X(dwarf_getsrcfiles)                                                                           \
    X(dwarf_filesrc)                                                                               \
    X(dwarf_child)                                                                                 \
    X(dwarf_siblingof)                                                                             \
    X(dwarf_haspc)                                                                                 \
    X(dwarf_hasattr)

static struct {
#define GMT_DW_PTR(name) __typeof__(&name) name;
    GMT_DW_FUNCS(GMT_DW_PTR)
#undef GMT_DW_PTR
} dw;

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
static demangle_fn cxa_demangle;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];
static bool loaded;

static void load_libdw(void)
{
    /* RTLD_LOCAL: libdw's and libelf's symbols do not join the program's namespace. The
     * loader looks beside this library first (DT_RPATH $ORIGIN in the bundle). */
    void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(load_error, sizeof load_error, "libdw.so.1 not loadable: %s",
                 e ? e : "unknown error");
        return;
    }
#define GMT_DW_SYM(name)                                                                           \
    *(void **)&dw.name = dlsym(h, #name);                                                          \
    if (!dw.name) {                                                                                \
        snprintf(load_error, sizeof load_error, "libdw.so.1 lacks %s", #name);                     \
        return;                                                                                    \
    }
    GMT_DW_FUNCS(GMT_DW_SYM)
#undef GMT_DW_SYM
    loaded = true;
}

static void load_demangler(void)
{
    *(void **)&cxa_demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (cxa_demangle) return;
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    if (h) *(void **)&cxa_demangle = dlsym(h, "__cxa_demangle");
}

static pthread_once_t demangle_once = PTHREAD_ONCE_INIT;

const char *gmt_demangle(const char *name, char *buf, size_t len)
{
    if (!name || strncmp(name, "_Z", 2) != 0 || len == 0) return name;
    pthread_once(&demangle_once, load_demangler);
    if (!cxa_demangle) return name;
    int status = -1;
    char *d = cxa_demangle(name, NULL, NULL, &status);
    if (!d || status != 0) {
        free(d);
        return name;
    }
    snprintf(buf, len, "%s", d);
    free(d);
    return buf;
}

/* ---- session storage -------------------------------------------------------------------- */

typedef struct chunk_s {
    struct chunk_s *next;
    size_t used, cap;
    char data[];
} chunk_t;

/* The DWARF of one function, found once: later addresses in it walk down from `sub`. */
typedef struct funcdie_s {
    int state; /* 1: cu/sub valid; -1: no DWARF for this function */
    Dwarf_Addr bias;
    Dwarf_Die cu, sub;
} funcdie_t;

typedef struct func_s {
    uint64_t lo, size;
    const char *name; /* as in the symbol table; demangled lazily into `pretty` */
    const char *pretty;
    funcdie_t *die;
    bool global;
} func_t;

typedef struct memo_s {
    uint64_t offset;
    gmt_symres_t *res;
} memo_t;

typedef struct module_s {
    char *path;
    int err; /* 0, or why this module cannot be used */
    char build_id[GMT_BUILD_ID_HEX];
    Dwfl *dwfl;
    Dwfl_Module *mod;
    uint64_t start, end;
    func_t *funcs;
    size_t nfuncs;
    memo_t *memo; /* open addressing, power of two */
    size_t memo_cap, memo_used;
    struct module_s *next_in_bucket;
} module_t;

#define GMT_MOD_BUCKETS 1024

struct gmt_dwsym_s {
    chunk_t *chunks;
    module_t *buckets[GMT_MOD_BUCKETS];
    module_t *last;
};

static void *arena(gmt_dwsym_t *s, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    chunk_t *c = s->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 60000 ? n : 60000;
        c = malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = s->chunks;
        s->chunks = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

static const char *arena_str(gmt_dwsym_t *s, const char *str)
{
    if (!str) return NULL;
    size_t n = strlen(str) + 1;
    char *p = arena(s, n);
    if (p) memcpy(p, str, n);
    return p;
}

static const char *pretty_name(gmt_dwsym_t *s, const char *name)
{
    if (!name || strncmp(name, "_Z", 2) != 0) return name;
    char buf[2048];
    const char *d = gmt_demangle(name, buf, sizeof buf);
    return d == name ? name : arena_str(s, d);
}

int gmt_dwsym_open(gmt_dwsym_t **out, char *why, size_t why_len)
{
    *out = NULL;
    pthread_once(&load_once, load_libdw);
    if (!loaded) {
        if (why && why_len) snprintf(why, why_len, "%s", load_error);
        return -ENOSYS;
    }
    gmt_dwsym_t *s = calloc(1, sizeof *s);
    if (!s) return -ENOMEM;
    *out = s;
    return 0;
}

void gmt_dwsym_close(gmt_dwsym_t *s)
{
    if (!s) return;
    for (size_t b = 0; b < GMT_MOD_BUCKETS; b++) {
        module_t *m = s->buckets[b];
        while (m) {
            module_t *next = m->next_in_bucket;
            if (m->dwfl) dw.dwfl_end(m->dwfl);
            free(m->funcs);
            free(m->memo);
            free(m->path);
            free(m);
            m = next;
        }
    }
    chunk_t *c = s->chunks;
    while (c) {
        chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(s);
}

/* ---- opening a module ------------------------------------------------------------------- */

/* ELF files are found by path only; never through debuginfod. */
static int find_elf_none(Dwfl_Module *mod, void **ud, const char *name, Dwarf_Addr base,
                         char **file_name, Elf **elfp)
{
    (void)mod, (void)ud, (void)name, (void)base, (void)file_name, (void)elfp;
    return -1;
}

/* Paths come from reports and the loader: open only regular files, never block on a FIFO. */
static int open_regular(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

static int try_open(const char *a, const char *b, const char *c, char **name_out)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s%s%s", a, b, c);
    if (n <= 0 || (size_t)n >= sizeof path) return -1;
    int fd = open_regular(path);
    if (fd >= 0 && name_out) *name_out = strdup(path);
    return fd;
}

/* Separate debuginfo: by build id under /usr/lib/debug/.build-id, then by .gnu_debuglink
 * beside the file, in .debug/ there, and under /usr/lib/debug. The standard callback would
 * also ask debuginfod servers (network), which this tool never does. */
static int find_debuginfo_local(Dwfl_Module *mod, void **ud, const char *modname, Dwarf_Addr base,
                                const char *file_name, const char *debuglink, GElf_Word crc,
                                char **debuginfo_file_name)
{
    int fd = dw.dwfl_build_id_find_debuginfo(mod, ud, modname, base, file_name, debuglink, crc,
                                             debuginfo_file_name);
    if (fd >= 0 || !debuglink || !*debuglink || strchr(debuglink, '/') || !file_name) return fd;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", file_name);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[1] = 0;
    else
        strcpy(dir, "./");
    /* The debuglink names a file other than the module itself. */
    const char *base_name = strrchr(file_name, '/') ? strrchr(file_name, '/') + 1 : file_name;
    if (strcmp(base_name, debuglink) != 0 &&
        (fd = try_open(dir, "", debuglink, debuginfo_file_name)) >= 0)
        return fd;
    if ((fd = try_open(dir, ".debug/", debuglink, debuginfo_file_name)) >= 0) return fd;
    char sys[4200];
    snprintf(sys, sizeof sys, "/usr/lib/debug%s", dir[0] == '/' ? dir : "/");
    return try_open(sys, "", debuglink, debuginfo_file_name);
}

static char *debuginfo_path_none = NULL;
static const Dwfl_Callbacks callbacks = {
    .find_elf = find_elf_none,
    .find_debuginfo = find_debuginfo_local,
    .section_address = NULL, /* filled at first use: dwfl_offline_section_address */
    .debuginfo_path = &debuginfo_path_none,
};

static int cmp_func(const void *a, const void *b)
{
    const func_t *x = a, *y = b;
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->global != y->global) return x->global ? -1 : 1;
    if ((x->size != 0) != (y->size != 0)) return x->size ? -1 : 1;
    return 0;
}

static void load_funcs(module_t *m)
{
    int n = dw.dwfl_module_getsymtab(m->mod);
    if (n <= 0) return;
    m->funcs = malloc((size_t)n * sizeof *m->funcs);
    if (!m->funcs) return;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dw.dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, NULL, NULL);
        if (!name || !*name || shndx == SHN_UNDEF) continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
        if (addr < m->start || addr >= m->end) continue;
        m->funcs[m->nfuncs++] = (func_t){.lo = addr,
                                         .size = sym.st_size,
                                         .name = name,
                                         .global = GELF_ST_BIND(sym.st_info) != STB_LOCAL};
    }
    qsort(m->funcs, m->nfuncs, sizeof *m->funcs, cmp_func);
}

static void hex_build_id(module_t *m)
{
    const unsigned char *bits = NULL;
    GElf_Addr vaddr;
    int len = dw.dwfl_module_build_id(m->mod, &bits, &vaddr);
    if (len <= 0 || !bits) return;
    if (len > (GMT_BUILD_ID_HEX - 1) / 2) len = (GMT_BUILD_ID_HEX - 1) / 2;
    for (int i = 0; i < len; i++)
        snprintf(m->build_id + 2 * i, 3, "%02x", bits[i]);
}

static void open_module(module_t *m)
{
    static Dwfl_Callbacks cb;
    if (!cb.section_address) {
        cb = callbacks;
        cb.section_address = dw.dwfl_offline_section_address;
    }
    int fd = open_regular(m->path);
    if (fd < 0) {
        m->err = -ENOENT;
        return;
    }
    unsigned char magic[4];
    if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0) {
        close(fd);
        m->err = -ENOENT;
        return;
    }
    m->dwfl = dw.dwfl_begin(&cb);
    if (!m->dwfl) {
        close(fd);
        m->err = -ENOMEM;
        return;
    }
    dw.dwfl_report_begin(m->dwfl);
    /* base 0: the module's addresses are the file's virtual addresses. libdwfl owns fd. */
    m->mod = dw.dwfl_report_elf(m->dwfl, m->path, m->path, fd, 0, false);
    dw.dwfl_report_end(m->dwfl, NULL, NULL);
    if (!m->mod) {
        /* A damaged ELF file. Whether libdwfl closed fd is not documented; closing it again
         * could hit a descriptor another thread just opened, so it may stay open. */
        m->err = -ENOENT;
        return;
    }
    Dwarf_Addr start = 0, end = 0;
    dw.dwfl_module_info(m->mod, NULL, &start, &end, NULL, NULL, NULL, NULL);
    m->start = start;
    m->end = end;
    hex_build_id(m);
    load_funcs(m);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static module_t *get_module(gmt_dwsym_t *s, const char *path)
{
    if (s->last && strcmp(s->last->path, path) == 0) return s->last;
    size_t b = hash_str(path) & (GMT_MOD_BUCKETS - 1);
    for (module_t *m = s->buckets[b]; m; m = m->next_in_bucket)
        if (strcmp(m->path, path) == 0) return s->last = m;
    module_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->path = strdup(path);
    if (!m->path) {
        free(m);
        return NULL;
    }
    open_module(m);
    m->next_in_bucket = s->buckets[b];
    s->buckets[b] = m;
    return s->last = m;
}

/* ---- resolving -------------------------------------------------------------------------- */

static func_t *find_func(module_t *m, uint64_t addr)
{
    size_t lo = 0, hi = m->nfuncs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->funcs[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* lo: first entry above addr. Look back over aliases and nested symbols a little. */
    for (size_t k = 0; k < 4 && lo > k; k++) {
        func_t *f = &m->funcs[lo - 1 - k];
        if (addr < f->lo + (f->size ? f->size : 1)) return f;
        if (f->size == 0 && k == 0) return f; /* unsized: up to the next symbol */
    }
    return NULL;
}

static const char *die_name(gmt_dwsym_t *s, Dwarf_Die *die)
{
    Dwarf_Attribute a;
    static const unsigned attrs[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (dw.dwarf_attr_integrate(die, attrs[i], &a)) {
            const char *n = dw.dwarf_formstring(&a);
            if (n) return pretty_name(s, n);
        }
    return NULL;
}

/* Fills r's inlined[] from the inlined-subroutine DIEs active at the address, innermost
 * first, and moves r->fn's line to the outermost call site. */
static void apply_inlines(gmt_dwsym_t *s, Dwarf_Die *cu, Dwarf_Die *inl, int n, gmt_symres_t *r)
{
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    bool have_files = false;
    for (int i = 0; i < n; i++) {
        if (r->ninlined < GMT_SYM_MAX_INLINE)
            r->inlined[r->ninlined++] =
                (gmt_srcloc_t){die_name(s, &inl[i]), r->fn.file, r->fn.line};
        /* The line we are at in the caller is where this inlined call was made. */
        Dwarf_Attribute a;
        Dwarf_Word v = 0;
        r->fn.line = dw.dwarf_attr(&inl[i], DW_AT_call_line, &a) && dw.dwarf_formudata(&a, &v) == 0
                         ? (int)v
                         : 0;
        r->fn.file = NULL;
        if (dw.dwarf_attr(&inl[i], DW_AT_call_file, &a) && dw.dwarf_formudata(&a, &v) == 0) {
            if (!have_files) have_files = dw.dwarf_getsrcfiles(cu, &files, &nfiles) == 0;
            if (have_files && v < nfiles)
                r->fn.file = dw.dwarf_filesrc(files, (size_t)v, NULL, NULL);
        }
    }
}

/* Descends from scope into the child scope holding pc, recording the inlined subroutines on
 * the way (outermost first) in out. A lexical block without addresses is searched through
 * rather than entered blindly. True when a child scope held pc. */
static bool descend(Dwarf_Die *scope, Dwarf_Addr pc, Dwarf_Die *out, int *n, int max, int depth)
{
    Dwarf_Die child;
    if (depth > 64 || dw.dwarf_child(scope, &child) != 0) return false;
    do {
        int tag = dw.dwarf_tag(&child);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
            tag != DW_TAG_try_block && tag != DW_TAG_catch_block)
            continue;
        bool ranged =
            dw.dwarf_hasattr(&child, DW_AT_low_pc) || dw.dwarf_hasattr(&child, DW_AT_ranges);
        if (ranged) {
            if (dw.dwarf_haspc(&child, pc) != 1) continue;
            if (tag == DW_TAG_inlined_subroutine && *n < max) out[(*n)++] = child;
            descend(&child, pc, out, n, max, depth + 1);
            return true;
        }
        if (tag == DW_TAG_lexical_block) {
            int before = *n;
            if (descend(&child, pc, out, n, max, depth + 1)) return true;
            *n = before;
        }
    } while (dw.dwarf_siblingof(&child, &child) == 0);
    return false;
}

/* The inlined subroutines active at pc inside the function sub, innermost first. */
static int walk_down(Dwarf_Die *sub, Dwarf_Addr pc, Dwarf_Die *out, int max)
{
    int n = 0;
    descend(sub, pc, out, &n, max, 0);
    for (int i = 0; i < n / 2; i++) {
        Dwarf_Die t = out[i];
        out[i] = out[n - 1 - i];
        out[n - 1 - i] = t;
    }
    return n;
}

/* The out-of-line function DIE whose code holds pc: a child of the CU, or of a namespace or
 * class in it (C++ compilers may nest definitions there). */
static int find_subprogram(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out, int depth)
{
    Dwarf_Die child;
    if (depth > 16 || dw.dwarf_child(parent, &child) != 0) return -ENOENT;
    do {
        int tag = dw.dwarf_tag(&child);
        if (tag == DW_TAG_subprogram) {
            if (dw.dwarf_haspc(&child, pc) == 1) {
                *out = child;
                return 0;
            }
        } else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
                   tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
                   tag == DW_TAG_module) {
            if (find_subprogram(&child, pc, out, depth + 1) == 0) return 0;
        }
    } while (dw.dwarf_siblingof(&child, &child) == 0);
    return -ENOENT;
}

static void inline_chain(gmt_dwsym_t *s, module_t *m, func_t *f, uint64_t addr, gmt_symres_t *r)
{
    Dwarf_Die inl[GMT_SYM_MAX_INLINE * 2];
    const int max = (int)(sizeof inl / sizeof *inl);
    if (f && f->die) {
        if (f->die->state != 1) return;
        int n = walk_down(&f->die->sub, addr - f->die->bias, inl, max);
        apply_inlines(s, &f->die->cu, inl, n, r);
        return;
    }
    /* First address in this function: find its concrete DIE in the CU once. */
    funcdie_t *fd = f ? arena(s, sizeof *fd) : NULL;
    if (f) f->die = fd;
    if (fd) fd->state = -1;
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dw.dwfl_module_addrdie(m->mod, addr, &bias);
    Dwarf_Die sub;
    if (!cu || find_subprogram(cu, addr - bias, &sub, 0) != 0) return;
    if (!r->fn.symbol) r->fn.symbol = die_name(s, &sub);
    if (fd) *fd = (funcdie_t){.state = 1, .bias = bias, .cu = *cu, .sub = sub};
    int n = walk_down(&sub, addr - bias, inl, max);
    apply_inlines(s, cu, inl, n, r);
}

static memo_t *memo_slot(module_t *m, uint64_t offset)
{
    if (m->memo_used * 2 >= m->memo_cap) {
        size_t cap = m->memo_cap ? m->memo_cap * 2 : 256;
        memo_t *t = calloc(cap, sizeof *t);
        if (!t) return NULL;
        for (size_t i = 0; i < m->memo_cap; i++) {
            if (!m->memo[i].res) continue;
            size_t j = (m->memo[i].offset * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
            while (t[j].res)
                j = (j + 1) & (cap - 1);
            t[j] = m->memo[i];
        }
        free(m->memo);
        m->memo = t;
        m->memo_cap = cap;
    }
    size_t j = (offset * 0x9e3779b97f4a7c15ull >> 20) & (m->memo_cap - 1);
    while (m->memo[j].res && m->memo[j].offset != offset)
        j = (j + 1) & (m->memo_cap - 1);
    return &m->memo[j];
}

int gmt_dwsym_resolve(gmt_dwsym_t *s, const char *path, const char *build_id, uint64_t offset,
                      const gmt_symres_t **out)
{
    *out = NULL;
    if (!s || !path || !*path) return -EINVAL;
    module_t *m = get_module(s, path);
    if (!m) return -ENOMEM;
    if (m->err) return m->err;
    /* Only a file with the recorded build id is the one that ran: a file without one (another
     * build at the path, linked with --build-id=none) proves nothing, as one with another. */
    if (build_id && *build_id && (!m->build_id[0] || strcasecmp(build_id, m->build_id) != 0))
        return -ESTALE;
    uint64_t addr = m->start + offset;
    if (addr < m->start || addr >= m->end) return -ERANGE;
    memo_t *slot = memo_slot(m, offset);
    if (!slot) return -ENOMEM;
    if (slot->res) {
        *out = slot->res;
        return 0;
    }
    gmt_symres_t *r = arena(s, sizeof *r);
    if (!r) return -ENOMEM;
    func_t *f = find_func(m, addr);
    if (f) {
        if (!f->pretty) f->pretty = pretty_name(s, f->name);
        r->fn.symbol = f->pretty;
    }
    Dwfl_Line *line = dw.dwfl_module_getsrc(m->mod, addr);
    if (line) {
        int ln = 0;
        r->fn.file = dw.dwfl_lineinfo(line, NULL, &ln, NULL, NULL, NULL);
        r->fn.line = r->fn.file ? ln : 0;
    }
    inline_chain(s, m, f, addr, r);
    slot->offset = offset;
    slot->res = r;
    m->memo_used++;
    *out = r;
    return 0;
}
