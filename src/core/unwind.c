/* unwind.c - see unwind.h and docs/unwind.md.
 *
 * The rule cache is a two-way table of 64-bit words, one per instruction address (the call
 * instruction's last byte, return address - 1). A word holds the address's high bits (its
 * key), a way bit and a 31-bit rule; an address's home slot is its low bits mixed with its
 * key, and its word sits in the home slot (way 0) or the home slot's neighbour (slot ^ 1,
 * way 1), so (home slot, key) names one address and a reader that sees its key and way in
 * either word has that address's rule: one or two plain loads, no torn pair to validate. Two
 * ways, because a direct-mapped table let two addresses of one stack that share a slot evict
 * each other at every walk (seen on the H200: two misses per allocation in a PyTorch loop).
 * Words are written once per miss and cleared by a flush.
 */
#define _GNU_SOURCE
#include "unwind.h"

#include "claim.h"
#include "loader.h"

#include <errno.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define RLX __ATOMIC_RELAXED

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GMT_UNWIND_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define GMT_UNWIND_ASAN 1
#endif
#ifdef GMT_UNWIND_ASAN
/* The walk reads other frames' saved registers, which ASan may see as another frame's
 * variables; the reads are bounds-checked here instead. */
#define NO_ASAN __attribute__((no_sanitize_address))
#else
#define NO_ASAN
#endif

/* gmt_unwind's frame must be its own, with no clone or split part (its frame address and return
 * address are the walk's start). */
#if defined(__clang__)
#define NOINLINE_EXACT __attribute__((noinline))
#else
#define NOINLINE_EXACT __attribute__((noinline, noclone))
#endif

/* Rule word: bits 0-1 kind, bit 2 CFA register (0 RSP, 1 RBP), bits 3-7 k where RBP is saved
 * at CFA - 8k (0: RBP unchanged; the word's bits 0-7 masked with 0xf8 are 8k itself), bits
 * 8-30 CFA offset; bit 31 of the cached word is its way (not part of the rule). */
enum { R_EMPTY = 0, R_STD = 1, R_LAST = 2, R_UNSUP = 3 };
#define R_CFA_RBP   4u
#define R_RBP_SHIFT 3
#define R_RBP_MAX   31u
#define R_RBP_BYTES 0xf8u
#define R_OFF_SHIFT 8
#define R_OFF_MAX   ((1u << 23) - 1)
#define W_WAY1      (1u << 31)

#define TABLE_BITS 15
#define TABLE_SIZE (1u << TABLE_BITS)
#define TABLE_MASK (TABLE_SIZE - 1)
/* Addresses above this are not cached (user space is below 2^47 without 5-level paging). */
#define ADDR_BITS 47

/* A walk whose CFA climbs more than this above the stack pointer it started from is redone by
 * libunwind: with exact CFI it is a stack deeper than any thread's default (8 MiB), without it
 * a wrong rule that would read far from the stack. */
#define STACK_SPAN (16ull << 20)

static uint64_t *table;                      /* TABLE_SIZE words, mmap'd once */
static int force_libunwind;                  /* GPUMEMTRACE_UNWIND=libunwind */
static uint32_t flush_gen;                   /* atomic: bumped by every flush */
static unsigned long long seen_subs = ~0ull; /* atomic: the loader's unload count last seen */
static uint64_t n_fallbacks, n_misses, n_flushes;
/* gmt_unwind_stop_at's range: a frame at an address a with a - 1 - stop_lo < stop_span ends
 * the walk (stop_span 0: none). Read once a walk, and remembered with it. It is set once a
 * process (when Python frames start to be captured): a walk at that moment may pair one
 * range's low end with the other's span and end at a frame too early or not at all, which
 * only shortens or lengthens that one stack. */
static uint64_t stop_lo, stop_span;

static void memo_key_init(void);

void gmt_unwind_init(int force)
{
    __atomic_store_n(&force_libunwind, force, RLX);
    memo_key_init();
    if (__atomic_load_n(&table, __ATOMIC_ACQUIRE)) return;
    void *p = mmap(NULL, TABLE_SIZE * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return;
    uint64_t *expect = NULL;
    if (!__atomic_compare_exchange_n(&table, &expect, (uint64_t *)p, 0, __ATOMIC_RELEASE, RLX))
        munmap(p, TABLE_SIZE * sizeof(uint64_t));
}

void gmt_unwind_flush(void)
{
    uint64_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    __atomic_add_fetch(&flush_gen, 1, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&n_flushes, 1, RLX);
    if (!t) return;
    for (uint32_t i = 0; i < TABLE_SIZE; i++)
        __atomic_store_n(&t[i], 0, RLX);
}

static void note_subs(unsigned long long subs)
{
    unsigned long long was = __atomic_load_n(&seen_subs, __ATOMIC_ACQUIRE);
    if (was == subs) return;
    if (__atomic_compare_exchange_n(&seen_subs, &was, subs, 0, __ATOMIC_ACQ_REL, RLX) &&
        was != ~0ull)
        gmt_unwind_flush();
}

static int subs_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        note_subs(info->dlpi_subs);
    return 1; /* the counters are the same in every entry */
}

void gmt_unwind_check_modules(void)
{
    gmt_dl_iterate_phdr(subs_cb, NULL);
}

static void memo_sums(gmt_unwind_stats_t *out);

void gmt_unwind_stats(gmt_unwind_stats_t *out)
{
    out->fallbacks = __atomic_load_n(&n_fallbacks, RLX);
    out->misses = __atomic_load_n(&n_misses, RLX);
    out->flushes = __atomic_load_n(&n_flushes, RLX);
    memo_sums(out);
}

/* ---- reading CFI ------------------------------------------------------------------------ */

typedef struct {
    const uint8_t *p, *end;
    int bad;
} rd_t;

static uint64_t rd_fixed(rd_t *r, unsigned n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, r->p, n); /* little-endian */
    r->p += n;
    return v;
}

/* A LEB128 number's bits, and in *bits how many were read (7 per byte). */
static uint64_t rd_leb(rd_t *r, unsigned *bits)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->bad || r->p >= r->end) break;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *bits = shift + 7;
            return v;
        }
    }
    r->bad = 1;
    *bits = 0;
    return 0;
}

static uint64_t rd_uleb(rd_t *r)
{
    unsigned bits;
    return rd_leb(r, &bits);
}

static int64_t rd_sleb(rd_t *r)
{
    unsigned bits;
    uint64_t v = rd_leb(r, &bits);
    if (bits && bits < 64 && (v >> (bits - 1) & 1)) v |= ~0ull << bits; /* sign-extend */
    return (int64_t)v;
}

/* Skips a block that starts with its ULEB128 length (an expression, augmentation data). */
static void rd_skip_block(rd_t *r)
{
    uint64_t len = rd_uleb(r);
    if (r->bad || (uint64_t)(r->end - r->p) < len) {
        r->bad = 1;
        return;
    }
    r->p += len;
}

/* A DW_EH_PE-encoded pointer. datarel: the base for DW_EH_PE_datarel (0: not allowed). An
 * indirect pointer is read as its address (only skipped, never followed). */
static uint64_t rd_enc(rd_t *r, uint8_t enc, uint64_t datarel)
{
    if (enc == 0xff) { /* DW_EH_PE_omit */
        r->bad = 1;
        return 0;
    }
    uint64_t base;
    switch (enc & 0x70) {
    case 0x00:
        base = 0;
        break;
    case 0x10:
        base = (uint64_t)(uintptr_t)r->p;
        break;
    case 0x30:
        base = datarel;
        if (!base) r->bad = 1;
        break;
    default:
        r->bad = 1;
        return 0;
    }
    uint64_t v;
    switch (enc & 0x0f) {
    case 0x00:
        v = rd_fixed(r, 8);
        break;
    case 0x01:
        v = rd_uleb(r);
        break;
    case 0x02:
        v = rd_fixed(r, 2);
        break;
    case 0x03:
        v = rd_fixed(r, 4);
        break;
    case 0x04:
        v = rd_fixed(r, 8);
        break;
    case 0x09:
        v = (uint64_t)rd_sleb(r);
        break;
    case 0x0a:
        v = (uint64_t)(int64_t)(int16_t)rd_fixed(r, 2);
        break;
    case 0x0b:
        v = (uint64_t)(int64_t)(int32_t)rd_fixed(r, 4);
        break;
    case 0x0c:
        v = rd_fixed(r, 8);
        break;
    default:
        r->bad = 1;
        return 0;
    }
    return base + v;
}

/* Register rules of one row. Columns 0-16 (the integer registers and the return address);
 * a rule for a higher column makes the row unsupported. */
#define NCOLS     17
#define COL_RBP   6
#define COL_RSP   7
#define COL_RA    16
#define STACK_MAX 8
enum { W_SAME = 0, W_UNDEF, W_OFFSET, W_OTHER };

typedef struct {
    uint8_t where[NCOLS];
    int64_t off_rbp, off_ra; /* W_OFFSET of columns 6 and 16 */
    uint8_t cfa_kind;        /* 0: register + offset; 1: expression */
    uint64_t cfa_reg;
    int64_t cfa_off;
} row_t;

typedef struct {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    int has_z;
    const uint8_t *insn, *insn_end;
} cie_t;

static void set_col(row_t *row, uint64_t reg, uint8_t where, int64_t off, int *bad)
{
    if (reg >= NCOLS) {
        *bad = 1;
        return;
    }
    row->where[reg] = where;
    if (reg == COL_RBP) row->off_rbp = off;
    if (reg == COL_RA) row->off_ra = off;
}

static void restore_col(row_t *row, const row_t *init, uint64_t reg, int *bad)
{
    if (reg >= NCOLS) {
        *bad = 1;
        return;
    }
    set_col(row, reg, init->where[reg], reg == COL_RBP ? init->off_rbp : init->off_ra, bad);
}

/* Runs a CFA program from loc until the row that covers target (target < 0: to the end).
 * Returns 0, or -1 for anything the compact rule does not follow. init: the CIE's row for
 * DW_CFA_restore (NULL while running the CIE itself). */
static int run_cfa(const cie_t *cie, const uint8_t *p, const uint8_t *end, uint64_t loc,
                   uint64_t target, int to_end, row_t *row, const row_t *init)
{
    row_t stack[STACK_MAX];
    int depth = 0, bad = 0;
    rd_t r = {p, end, 0};
    while (!bad && !r.bad && r.p < r.end) {
        uint8_t op = *r.p++;
        uint64_t reg, delta = 0;
        int advance = 0;
        switch (op & 0xc0) {
        case 0x40:
            delta = op & 0x3f;
            advance = 1;
            break;
        case 0x80:
            set_col(row, op & 0x3f, W_OFFSET, (int64_t)rd_uleb(&r) * cie->data_align, &bad);
            break;
        case 0xc0:
            if (!init) return -1;
            restore_col(row, init, op & 0x3f, &bad);
            break;
        default:
            switch (op) {
            case 0x00:
                break; /* nop */
            case 0x02:
                delta = rd_fixed(&r, 1);
                advance = 1;
                break;
            case 0x03:
                delta = rd_fixed(&r, 2);
                advance = 1;
                break;
            case 0x04:
                delta = rd_fixed(&r, 4);
                advance = 1;
                break;
            case 0x05: /* offset_extended */
                reg = rd_uleb(&r);
                set_col(row, reg, W_OFFSET, (int64_t)rd_uleb(&r) * cie->data_align, &bad);
                break;
            case 0x11: /* offset_extended_sf */
                reg = rd_uleb(&r);
                set_col(row, reg, W_OFFSET, rd_sleb(&r) * cie->data_align, &bad);
                break;
            case 0x06: /* restore_extended */
                if (!init) return -1;
                restore_col(row, init, rd_uleb(&r), &bad);
                break;
            case 0x07:
                set_col(row, rd_uleb(&r), W_UNDEF, 0, &bad);
                break;
            case 0x08:
                set_col(row, rd_uleb(&r), W_SAME, 0, &bad);
                break;
            case 0x09: /* register */
            case 0x14: /* val_offset */
            case 0x15: /* val_offset_sf: its operand an SLEB, as long as a ULEB of the same bytes */
                reg = rd_uleb(&r);
                (void)rd_uleb(&r);
                set_col(row, reg, W_OTHER, 0, &bad);
                break;
            case 0x0a:
                if (depth == STACK_MAX) return -1;
                stack[depth++] = *row;
                break;
            case 0x0b:
                if (depth == 0) return -1;
                /* The CFA rule is part of the state here, as in GCC's and libunwind's
                 * readers. */
                *row = stack[--depth];
                break;
            case 0x0c: /* def_cfa */
                row->cfa_reg = rd_uleb(&r);
                row->cfa_off = (int64_t)rd_uleb(&r);
                row->cfa_kind = 0;
                break;
            case 0x12: /* def_cfa_sf */
                row->cfa_reg = rd_uleb(&r);
                row->cfa_off = rd_sleb(&r) * cie->data_align;
                row->cfa_kind = 0;
                break;
            case 0x0d:
                row->cfa_reg = rd_uleb(&r);
                break;
            case 0x0e:
                row->cfa_off = (int64_t)rd_uleb(&r);
                break;
            case 0x13:
                row->cfa_off = rd_sleb(&r) * cie->data_align;
                break;
            case 0x0f: /* def_cfa_expression */
                rd_skip_block(&r);
                row->cfa_kind = 1;
                break;
            case 0x10: /* expression */
            case 0x16: /* val_expression */
                reg = rd_uleb(&r);
                rd_skip_block(&r);
                set_col(row, reg, W_OTHER, 0, &bad);
                break;
            case 0x2e:
                (void)rd_uleb(&r);
                break; /* GNU_args_size */
            default:
                return -1; /* set_loc, negative_offset_extended, ... */
            }
        }
        if (advance) {
            if (to_end) return -1; /* a CIE's initial instructions do not advance */
            loc += delta * cie->code_align;
            if (loc > target) break;
        }
    }
    return bad || r.bad ? -1 : 0;
}

static int parse_cie(const uint8_t *cie_p, cie_t *cie)
{
    rd_t r = {cie_p, cie_p + 16, 0};
    uint32_t len = (uint32_t)rd_fixed(&r, 4);
    if (len == 0 || len == 0xffffffffu) return -1;
    r.end = cie_p + 4 + len;
    if (rd_fixed(&r, 4) != 0) return -1; /* CIE id */
    uint8_t version = (uint8_t)rd_fixed(&r, 1);
    if (version != 1 && version != 3) return -1;
    const char *aug = (const char *)r.p;
    size_t alen = strnlen(aug, (size_t)(r.end - r.p));
    if (r.p + alen >= r.end) return -1;
    r.p += alen + 1;
    cie->code_align = rd_uleb(&r);
    cie->data_align = rd_sleb(&r);
    uint64_t ra = version == 1 ? rd_fixed(&r, 1) : rd_uleb(&r);
    if (r.bad || ra != COL_RA || cie->code_align == 0) return -1;
    cie->fde_enc = 0; /* absptr */
    cie->has_z = alen != 0;
    if (alen) {
        if (aug[0] != 'z') return -1;
        uint64_t zlen = rd_uleb(&r);
        if (r.bad || (uint64_t)(r.end - r.p) < zlen) return -1;
        const uint8_t *zend = r.p + zlen;
        for (size_t i = 1; i < alen; i++) {
            switch (aug[i]) {
            case 'R':
                cie->fde_enc = (uint8_t)rd_fixed(&r, 1);
                break;
            case 'L':
                (void)rd_fixed(&r, 1);
                break;
            case 'P': {
                uint8_t enc = (uint8_t)rd_fixed(&r, 1);
                (void)rd_enc(&r, enc & 0x7f, 0);
                break;
            }
            default:
                return -1; /* 'S' (signal frame) and anything unknown */
            }
        }
        if (r.bad || r.p > zend) return -1;
        r.p = zend;
    }
    cie->insn = r.p;
    cie->insn_end = r.end;
    return 0;
}

/* The rule for address a, from the FDE at fde_p. */
static uint32_t rule_from_fde(const uint8_t *fde_p, uint64_t a)
{
    rd_t r = {fde_p, fde_p + 8, 0};
    uint32_t len = (uint32_t)rd_fixed(&r, 4);
    if (len == 0 || len == 0xffffffffu) return R_UNSUP;
    r.end = fde_p + 4 + len;
    const uint8_t *idp = r.p;
    uint32_t cie_off = (uint32_t)rd_fixed(&r, 4);
    if (r.bad || cie_off == 0) return R_UNSUP;
    cie_t cie;
    if (parse_cie(idp - cie_off, &cie) != 0) return R_UNSUP;
    uint64_t start = rd_enc(&r, cie.fde_enc, 0);
    uint64_t range = rd_enc(&r, cie.fde_enc & 0x0f, 0);
    if (r.bad || a < start || a - start >= range) return R_UNSUP;
    if (cie.has_z) rd_skip_block(&r); /* the FDE's augmentation data: nothing we use */
    if (r.bad) return R_UNSUP;
    row_t init;
    memset(&init, 0, sizeof init); /* every column "same value" */
    init.cfa_reg = COL_RSP;
    if (run_cfa(&cie, cie.insn, cie.insn_end, 0, 0, 1, &init, NULL) != 0) return R_UNSUP;
    row_t row = init;
    if (run_cfa(&cie, r.p, r.end, start, a, 0, &row, &init) != 0) return R_UNSUP;

    /* The compact rule, exactly where libunwind's fast trace takes the frame as standard. */
    if (row.where[COL_RA] == W_UNDEF || row.where[COL_RBP] == W_UNDEF) return R_LAST;
    if (row.cfa_kind != 0 || (row.cfa_reg != COL_RSP && row.cfa_reg != COL_RBP)) return R_UNSUP;
    if (row.cfa_off < 8 || row.cfa_off > (int64_t)R_OFF_MAX) return R_UNSUP;
    if (row.where[COL_RA] != W_OFFSET || row.off_ra != -8) return R_UNSUP;
    if (row.where[COL_RSP] != W_SAME) return R_UNSUP;
    for (int i = 0; i < NCOLS; i++)
        if (row.where[i] == W_OTHER) return R_UNSUP;
    uint32_t k = 0;
    if (row.where[COL_RBP] == W_OFFSET) {
        if (row.off_rbp >= -8 || row.off_rbp % 8 != 0 || -row.off_rbp / 8 > (int64_t)R_RBP_MAX)
            return R_UNSUP;
        k = (uint32_t)(-row.off_rbp / 8);
    }
    return R_STD | (row.cfa_reg == COL_RBP ? R_CFA_RBP : 0) | (k << R_RBP_SHIFT) |
           ((uint32_t)row.cfa_off << R_OFF_SHIFT);
}

/* The FDE covering a in the module whose .eh_frame_hdr is at hdr, or NULL. */
static const uint8_t *find_fde(const uint8_t *hdr, size_t hdr_size, uint64_t a)
{
    rd_t r = {hdr, hdr + hdr_size, 0};
    uint8_t version = (uint8_t)rd_fixed(&r, 1);
    uint8_t ptr_enc = (uint8_t)rd_fixed(&r, 1);
    uint8_t cnt_enc = (uint8_t)rd_fixed(&r, 1);
    uint8_t tab_enc = (uint8_t)rd_fixed(&r, 1);
    if (r.bad || version != 1 || tab_enc != 0x3b) return NULL; /* datarel | sdata4 */
    (void)rd_enc(&r, ptr_enc, (uint64_t)(uintptr_t)hdr);
    uint64_t count = rd_enc(&r, cnt_enc, (uint64_t)(uintptr_t)hdr);
    if (r.bad || count == 0 || count > (uint64_t)(r.end - r.p) / 8) return NULL;
    const int32_t *tab = (const int32_t *)(const void *)r.p;
    int64_t rel = (int64_t)(a - (uint64_t)(uintptr_t)hdr);
    /* The last entry whose start is <= a. */
    uint64_t lo = 0, hi = count;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        int32_t s;
        memcpy(&s, &tab[mid * 2], sizeof s);
        if ((int64_t)s <= rel)
            lo = mid;
        else
            hi = mid;
    }
    int32_t s, f;
    memcpy(&s, &tab[lo * 2], sizeof s);
    memcpy(&f, &tab[lo * 2 + 1], sizeof f);
    if ((int64_t)s > rel) return NULL;
    return hdr + f;
}

typedef struct {
    uint64_t a;
    uint32_t rule;
    int found; /* a lies in a loaded object */
} find_t;

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    find_t *f = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        note_subs(info->dlpi_subs);
    const ElfW(Phdr) *eh = NULL;
    int in = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t lo = info->dlpi_addr + ph->p_vaddr;
            if (f->a >= lo && f->a - lo < ph->p_memsz) in = 1;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh = ph;
        }
    }
    if (!in) return 0;
    f->found = 1;
    if (eh) {
        const uint8_t *fde =
            find_fde((const uint8_t *)(info->dlpi_addr + eh->p_vaddr), eh->p_memsz, f->a);
        if (fde) f->rule = rule_from_fde(fde, f->a);
    }
    return 1;
}

/* Below 2^ADDR_BITS the key has 32 bits; above, it never matches a word (not cached). The
 * slot is the low bits mixed with the key's, so (slot, key) gives back the address. */
static inline uint64_t key_of(uint64_t a)
{
    return a >> TABLE_BITS;
}

static inline uint32_t slot_of(uint64_t a, uint64_t key)
{
    return (uint32_t)((a ^ key) & TABLE_MASK);
}

__attribute__((noinline)) static uint32_t rule_miss(uint64_t *t, uint64_t a)
{
    uint32_t gen = __atomic_load_n(&flush_gen, __ATOMIC_ACQUIRE);
    find_t f = {a, R_UNSUP, 0};
    gmt_dl_iterate_phdr(find_cb, &f);
    __atomic_fetch_add(&n_misses, 1, RLX);
    if (!f.found || (a >> ADDR_BITS)) return f.rule; /* not cached: no object holds a */
    uint64_t key = key_of(a);
    uint32_t home = slot_of(a, key);
    /* The home slot if it is free, else its neighbour if that is, else one of the two by the
     * address's bit 4 (so that a third address meeting a full pair keeps one of them). */
    uint32_t way = 0;
    if (__atomic_load_n(&t[home], RLX) != 0)
        way = __atomic_load_n(&t[home ^ 1], RLX) == 0 ? 1 : (uint32_t)(a >> 4) & 1;
    uint64_t *slot = &t[home ^ way];
    uint64_t word = key << 32 | (way ? W_WAY1 : 0) | f.rule;
    __atomic_store_n(slot, word, __ATOMIC_RELEASE);
    /* A flush since the look-up started may have unloaded the object read: take it back. */
    if (__atomic_load_n(&flush_gen, __ATOMIC_SEQ_CST) != gen)
        __atomic_compare_exchange_n(slot, &word, 0, 0, RLX, RLX);
    return f.rule;
}

/* The rule for a; an empty word (0) whose key matches (a below 2^TABLE_BITS, never code)
 * reads as R_EMPTY, which the walk takes as unsupported. */
static inline uint32_t rule_of(uint64_t *t, uint64_t a)
{
    uint64_t key = key_of(a);
    uint32_t home = slot_of(a, key);
    uint64_t w = __atomic_load_n(&t[home], RLX);
    if (__builtin_expect((w >> 32) == key && !(w & W_WAY1), 1)) return (uint32_t)w;
    w = __atomic_load_n(&t[home ^ 1], RLX);
    if ((w >> 32) == key && (w & W_WAY1)) return (uint32_t)w & ~W_WAY1;
    return rule_miss(t, a);
}

uint32_t gmt_unwind_rule_probe(uint64_t a)
{
    uint64_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    return t ? rule_of(t, a) : R_UNSUP;
}

uint32_t gmt_unwind_home_slot(uint64_t a)
{
    return slot_of(a, key_of(a));
}

/* ---- the walk --------------------------------------------------------------------------- */

/* A saved register on the stack (the CFA need not be aligned). */
NO_ASAN static inline uintptr_t load_word(uintptr_t at)
{
    uintptr_t v;
    __builtin_memcpy(&v, (const void *)at, sizeof v);
    return v;
}

/* unw_backtrace's answer for the caller of gmt_unwind: its own walk starts in this function
 * (or wherever the compiler put the call), so its entries up to and including the return
 * address into gmt_unwind's caller (ra0) are matched, not counted. */
__attribute__((noinline)) static int fallback(void **buf, int max, uintptr_t ra0)
{
    void *tmp[GMT_UNWIND_MAX + 4];
    __atomic_fetch_add(&n_fallbacks, 1, RLX);
    int saved = errno;  /* libunwind's address checks read a pipe and leave EAGAIN behind */
    gmt_loader_enter(); /* libunwind finds each frame's object with dl_iterate_phdr */
    int n = unw_backtrace(tmp, max + 4);
    gmt_loader_leave();
    errno = saved;
    int i = 0;
    while (i < n && i < 4 && (uintptr_t)tmp[i] != ra0)
        i++;
    if (i == n || i == 4) return 0;
    int out = 0;
    for (; i < n && out < max; i++)
        buf[out++] = tmp[i];
    return out;
}

/* ---- the replay of a thread's remembered walks -------------------------------------------
 *
 * A walk is a function of where it starts (return address, stack pointer, and RBP if a rule
 * uses it before a frame restores it), of the rules of the addresses it meets (the same until
 * the rule cache is flushed) and of the stack words it reads (return addresses, saved RBPs).
 * A thread remembers its walks with where it read each word: when a walk starts at the same
 * place as a remembered one, with no flush since, and every word reads the same again (in walk
 * order, so each address read is the one a fresh walk would compute), the result is the same
 * and is copied out: a load and a compare a word instead of a rule look-up a frame, and no
 * rule's cache line touched (in a PyTorch step the program's work evicts them between
 * allocations: docs/PERFORMANCE.md, "Session 9"). A thread keeps MEMO_WAYS walks in sets of
 * MEMO_SET_WAYS, a walk in either of two sets that a hash of where it starts picks (its call
 * sites repeat every step), so that a place reached by several call paths (an allocator's frame
 * under every operator: the same return address and stack pointer, other callers above) keeps
 * a walk for each in up to 2 * MEMO_SET_WAYS ways, and places whose first sets meet spill into
 * their second ones; the least recently used of the eight is given up for a new walk
 * ("Session 10", "Session 14"). They live in slots
 * of MEMO_SLOTS (a thread claims one at its first walk and gives it back at exit; threads
 * beyond that walk every time), each slot's walks mapped at its first claim and kept for the
 * next thread, so the TLS stays a pointer. */
#define MEMO_FRAMES   64 /* rbp_used has a bit per step */
#define MEMO_SLOTS    256
#define MEMO_SET_BITS 5
#define MEMO_SETS     (1u << MEMO_SET_BITS)
#define MEMO_SET_WAYS 4
#define MEMO_WAYS     (MEMO_SETS * MEMO_SET_WAYS) /* remembered walks a thread */

typedef struct way_s {
    uintptr_t ip0, sp0, rbp0;
    uint64_t stop_lo; /* the stop range the walk ended at (or not) */
    uint32_t n, max, gen;
    uint32_t rbp_n; /* saved RBPs a later step's CFA used: rbp_at and rbp_val's first rbp_n */
    uint8_t rbp0_used;
    gmt_walk_note_t note; /* the walk's number and the caller's words (gmt_unwind_walk) */
    /* Offsets from sp0 (a walk stays within STACK_SPAN of it): a frame's words in 24 bytes. */
    uint32_t at[MEMO_FRAMES]; /* where the return address frames[i + 1] was read */
    /* While the walk runs, where step i read a saved RBP and what it read; once it is written,
     * those a later step used, in step order (memo_keep_rbps). */
    uint32_t rbp_at[MEMO_FRAMES];
    uintptr_t rbp_val[MEMO_FRAMES];
    void *frames[MEMO_FRAMES];
} way_t;
_Static_assert(STACK_SPAN < (1ull << 32), "a word's offset from the start fits 32 bits");

/* A set's ways by their start's hash (read before any way's): the key of the walk each way
 * holds (0: none), when each was last walked or replayed (the memo's replays then) and the
 * way last walked or replayed (checked first: a start reached by several callers, one of them
 * in a loop, replays the loop's walk without checking the others' first). */
typedef struct set_s {
    uint64_t key[MEMO_SET_WAYS];
    uint32_t used[MEMO_SET_WAYS];
    uint32_t mru;
} set_t;

typedef struct memo_s {
    set_t *sets; /* MEMO_SETS, then the ways: mapped at the slot's first claim; NULL: none */
    way_t *ways; /* MEMO_WAYS, set by set */
    /* Written by the owner alone; summed by gmt_unwind_stats. */
    uint64_t replays;
    uint64_t missed_new;   /* walks from a start the set did not hold */
    uint64_t missed_other; /* walks from a start it held, with other frames (or settings) */
} memo_t;

static memo_t memos[MEMO_SLOTS];
static uint32_t memo_owned[MEMO_SLOTS]; /* atomic: 1 while a thread holds the slot */
static pthread_key_t memo_key;
static int memo_key_made; /* atomic: memo_key exists */
static __thread memo_t *my_memo __attribute__((tls_model("initial-exec")));
static __thread uint8_t memo_state
    __attribute__((tls_model("initial-exec"))); /* 0, 1 mine, 2 none */
static __thread uint8_t memo_busy __attribute__((tls_model("initial-exec")));
/* Numbers the thread's remembered walks (only under memo_busy: no nested increment). */
static __thread uint64_t walk_serial __attribute__((tls_model("initial-exec")));

/* At thread exit (the key's destructor, on the exiting thread): the slot is another thread's
 * to claim now (its walks are forgotten at that claim), so a walk this thread still makes
 * (another destructor freeing memory) must not touch it. */
static void memo_give_back(void *v)
{
    memo_t *m = v;
    my_memo = NULL;
    memo_state = 2;
    gmt_claim_release(&memo_owned[m - memos]);
}

static void memo_key_init(void)
{
    if (__atomic_load_n(&memo_key_made, __ATOMIC_ACQUIRE)) return;
    if (pthread_key_create(&memo_key, memo_give_back) == 0)
        __atomic_store_n(&memo_key_made, 1, __ATOMIC_RELEASE);
}

/* A thread's first walk: a slot, its walks mapped once (about 200 KiB, touched as used) and
 * forgotten. */
__attribute__((noinline)) static memo_t *memo_claim(void)
{
    memo_state = 2;
    if (!__atomic_load_n(&memo_key_made, __ATOMIC_ACQUIRE)) return NULL;
    int i = gmt_claim_flag(memo_owned, MEMO_SLOTS, 0);
    if (i < 0) return NULL;
    memo_t *m = &memos[i];
    if (!m->sets) {
        void *p = mmap(NULL, MEMO_SETS * sizeof(set_t) + MEMO_WAYS * sizeof(way_t),
                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            gmt_claim_release(&memo_owned[i]);
            return NULL;
        }
        m->ways = (way_t *)(void *)((set_t *)p + MEMO_SETS);
        m->sets = p; /* zero: nothing remembered */
    } else {
        memset(m->sets, 0, MEMO_SETS * sizeof(set_t)); /* no way holds a walk */
    }
    /* The counts go on from the last owner's: they are summed over the slots, and a thread's
     * walks stay counted after it exits. */
    if (pthread_setspecific(memo_key, m) != 0) {
        gmt_claim_release(&memo_owned[i]);
        return NULL;
    }
    my_memo = m;
    memo_state = 1;
    return my_memo;
}

static inline memo_t *memo_mine(void)
{
    if (__builtin_expect(memo_state == 1, 1)) return my_memo;
    return memo_state == 0 ? memo_claim() : NULL;
}

/* The hash of a walk's start (ip, sp): by the stack pointer mostly (a capture's start is one
 * return address; its depth differs by call path), every bit mixed into the top ones (one
 * multiply left nearby stack pointers' top bits in step: under ASan's larger frames
 * python.nested's 25 call sites filled one set past its ways in most runs, session 13). Its
 * top bits name the two sets, and with the low bit set it is the key a way holds (never 0). */
static inline uint64_t start_hash(uintptr_t ip, uintptr_t sp)
{
    uint64_t h = ((uint64_t)(sp >> 4) ^ ((uint64_t)ip << 7)) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
    return h * 0xbf58476d1ce4e5b9ull;
}

/* The start's first set, by the hash's top bits. */
static inline uint32_t first_set(uint64_t h)
{
    return (uint32_t)(h >> (64 - MEMO_SET_BITS));
}

/* The start's second set, by the hash's next bits (the first's neighbour when they name the
 * first again): its walks have 2 * MEMO_SET_WAYS ways. */
static inline uint32_t second_set(uint64_t h)
{
    uint32_t s0 = first_set(h);
    uint32_t s1 = (uint32_t)(h >> (64 - 2 * MEMO_SET_BITS)) & (MEMO_SETS - 1);
    return s1 == s0 ? s1 ^ 1 : s1;
}

/* Where a new walk is written, of the start's two sets' ways (c * MEMO_SET_WAYS + k): an empty
 * one (the first set's first), else the one least recently walked or replayed. */
static inline uint32_t sets_victim(set_t *const set[2])
{
    uint32_t best = 0, oldest = UINT32_MAX;
    for (uint32_t c = 0; c < 2; c++)
        for (uint32_t k = 0; k < MEMO_SET_WAYS; k++) {
            if (!set[c]->key[k]) return c * MEMO_SET_WAYS + k;
            if (set[c]->used[k] < oldest) {
                oldest = set[c]->used[k];
                best = c * MEMO_SET_WAYS + k;
            }
        }
    return best;
}

static void memo_sums(gmt_unwind_stats_t *out)
{
    out->replays = out->missed_new = out->missed_other = 0;
    for (uint32_t i = 0; i < MEMO_SLOTS; i++) {
        out->replays += __atomic_load_n(&memos[i].replays, RLX);
        out->missed_new += __atomic_load_n(&memos[i].missed_new, RLX);
        out->missed_other += __atomic_load_n(&memos[i].missed_other, RLX);
    }
}

uint32_t gmt_unwind_test_ways_held(void)
{
    uint32_t n = 0;
    if (memo_state != 1 || !my_memo->sets) return 0;
    for (uint32_t i = 0; i < MEMO_SETS; i++)
        for (uint32_t k = 0; k < MEMO_SET_WAYS; k++)
            n += my_memo->sets[i].key[k] != 0;
    return n;
}

void gmt_unwind_stop_at(uint64_t lo, uint64_t hi)
{
    __atomic_store_n(&stop_span, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&stop_lo, lo, RLX);
    __atomic_store_n(&stop_span, hi > lo ? hi - lo : 0, __ATOMIC_RELEASE);
}

void gmt_unwind_after_fork(void)
{
    /* The other threads' slots stay claimed by threads the child does not have; their walks
     * are forgotten when a thread of the child claims them. The counts start over: the child's
     * report counts the child's walks. */
    for (uint32_t i = 0; i < MEMO_SLOTS; i++) {
        if (&memos[i] != my_memo) __atomic_store_n(&memo_owned[i], 0, RLX);
        memos[i].replays = memos[i].missed_new = memos[i].missed_other = 0;
    }
}

/* w: a way whose set holds the start's key (a walk written in whole: the key is cleared
 * while a way is written). Returns the frames replayed; 0 when the stack differs from the
 * walk's, or the way holds another start; STALE when it holds this start walked under other
 * settings (another depth, a flushed rule cache, another stop range), which no later walk
 * from here asks for again: the way a new walk from this start is written in. */
#define STALE (-1)
NO_ASAN static inline int replay(const way_t *w, void **buf, int max, uintptr_t ip, uintptr_t sp,
                                 uintptr_t rbp, uint32_t gen, uint64_t slo)
{
    if (w->ip0 != ip || w->sp0 != sp) return 0;
    if (w->max != (uint32_t)max || w->gen != gen || w->stop_lo != slo) return STALE;
    if (w->rbp0_used && w->rbp0 != rbp) return 0;
    uint32_t n = w->n;
    /* The saved RBPs a later step used (code without frame pointers has few or none), in the
     * order the walk read them, then every return address, stopping at the first word that
     * differs (a stack that differs is not read further than the walk's order goes on
     * matching it). The return addresses checked and copied in one pass (a walk that differs
     * is written over by the full one). */
    for (uint32_t j = 0; j < w->rbp_n; j++)
        if (load_word(sp + w->rbp_at[j]) != w->rbp_val[j]) return 0;
    buf[0] = w->frames[0];
    for (uint32_t i = 0; i + 1 < n; i++) {
        uintptr_t ra = load_word(sp + w->at[i]);
        if (ra != (uintptr_t)w->frames[i + 1]) return 0;
        buf[i + 1] = (void *)ra;
    }
    return (int)n;
}

/* A walk of n frames written into w: of the saved RBPs its steps read (rbp_at and rbp_val by
 * step), those a later step's CFA used (bit i of used: step i's), in step order, at the front;
 * the steps past the last frame's (a step i gives frame i + 1) are not replayed. */
static void memo_keep_rbps(way_t *w, uint64_t used, uint32_t n)
{
    uint32_t j = 0;
    for (uint64_t u = used; u; u &= u - 1) {
        uint32_t i = (uint32_t)__builtin_ctzll(u);
        if (i + 1 >= n) break;
        w->rbp_at[j] = w->rbp_at[i]; /* j <= i: each read before it is written over */
        w->rbp_val[j] = w->rbp_val[i];
        j++;
    }
    w->rbp_n = j;
}

/* A replay from way k of set: counted (owner only; summed on read), the way marked last used,
 * its note handed out. */
static inline void memo_replayed(memo_t *m, set_t *set, uint32_t k, way_t *way,
                                 gmt_walk_note_t **note)
{
    uint64_t r = m->replays + 1;
    __atomic_store_n(&m->replays, r, RLX);
    set->used[k] = (uint32_t)r;
    set->mru = k;
    *note = &way->note;
}

/* What a lookup that missed its first candidate way leaves for the walk: the way to write the
 * walk in, emptied (its set's key cleared until the walk is written in whole). */
typedef struct memo_pick_s {
    way_t *w;
    set_t *set;
    uint32_t victim; /* in set */
} memo_pick_t;

/* The rest of a lookup of the start hashed h, past its first set's way k0 (its last used,
 * checked by the caller: MEMO_SET_WAYS when it held another start's walk; stale0 when it held
 * this start walked under other settings): the first set's other ways with the key, then the
 * second set's. Returns the frames of a replay (and *note), or 0 with the way the walk goes
 * in. */
NO_ASAN __attribute__((noinline)) static int memo_rest(memo_t *m, uint64_t h, uint32_t k0,
                                                       bool stale0, void **buf, int max,
                                                       uintptr_t ip, uintptr_t sp, uintptr_t rbp,
                                                       uint32_t gen, uint64_t slo,
                                                       gmt_walk_note_t **note, memo_pick_t *pick)
{
    uint64_t key = h | 1;
    uint32_t si[2] = {first_set(h), second_set(h)};
    set_t *const sets[2] = {&m->sets[si[0]], &m->sets[si[1]]};
    bool held = k0 < MEMO_SET_WAYS;
    uint32_t stale = stale0 ? k0 : 2 * MEMO_SET_WAYS;
    for (uint32_t c = 0; c < 2; c++) {
        way_t *ways = &m->ways[si[c] * MEMO_SET_WAYS];
        for (uint32_t k = 0;; k++) {
            while (k < MEMO_SET_WAYS && (sets[c]->key[k] != key || (c == 0 && k == k0)))
                k++;
            if (k >= MEMO_SET_WAYS) break;
            held = true;
            int n = replay(&ways[k], buf, max, ip, sp, rbp, gen, slo);
            if (n > 0) {
                memo_replayed(m, sets[c], k, &ways[k], note);
                return n;
            }
            if (n == STALE) stale = c * MEMO_SET_WAYS + k;
        }
    }
    uint64_t *missed = held ? &m->missed_other : &m->missed_new;
    __atomic_store_n(missed, *missed + 1, RLX);
    /* A way of this start walked under other settings is written over first: kept, it would
     * take one of the start's ways (which tell its callers apart) for good, and be checked in
     * vain before them at every replay. */
    uint32_t v = stale < 2 * MEMO_SET_WAYS ? stale : sets_victim(sets);
    uint32_t c = v / MEMO_SET_WAYS;
    pick->set = sets[c];
    pick->victim = v % MEMO_SET_WAYS;
    pick->set->key[pick->victim] = 0; /* empty until the walk is written in */
    pick->set->used[pick->victim] = (uint32_t)m->replays;
    pick->set->mru = pick->victim;
    pick->w = &m->ways[si[c] * MEMO_SET_WAYS + pick->victim];
    pick->w->note.walk = 0;
    return 0;
}

/* The walk from the frame fp of the public function it is inlined into: [fp] is the caller's
 * RBP, [fp+8] the return address, fp+16 the caller's stack pointer after the return (its
 * CFA). */
NO_ASAN __attribute__((always_inline)) static inline int
unwind_from(const uintptr_t *fp, void **buf, int max, gmt_walk_note_t **note)
{
    *note = NULL;
    if (max <= 0) return 0;
    if (max > GMT_UNWIND_MAX) max = GMT_UNWIND_MAX;
    uintptr_t rbp = fp[0], ip = fp[1], sp = (uintptr_t)(fp + 2);
    const uintptr_t ra0 = ip, sp0 = sp, rbp0 = rbp, limit = sp + STACK_SPAN;
    uint64_t *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
    if (!t || __atomic_load_n(&force_libunwind, RLX)) return fallback(buf, max, ra0);
    uint32_t gen = __atomic_load_n(&flush_gen, __ATOMIC_ACQUIRE);
    uint64_t sspan = __atomic_load_n(&stop_span, __ATOMIC_ACQUIRE);
    uint64_t slo = sspan ? __atomic_load_n(&stop_lo, RLX) : 0;
    memo_t *m = memo_busy || max > MEMO_FRAMES ? NULL : memo_mine();
    way_t *w = NULL;
    set_t *set = NULL;
    uint32_t victim = 0;
    uint64_t key = 0;
    if (m) {
        memo_busy = 1;
        uint64_t h = start_hash(ra0, sp0);
        key = h | 1;
        /* The way of the start's first set last walked or replayed, when it holds the start's
         * key (one call site, or one in a loop: the walk it needs); the other ways and the
         * second set in memo_rest. */
        uint32_t s0 = first_set(h), k = m->sets[s0].mru;
        if (m->sets[s0].key[k] != key) k = MEMO_SET_WAYS;
        int n = 0;
        if (k < MEMO_SET_WAYS) {
            way_t *way = &m->ways[s0 * MEMO_SET_WAYS + k];
            n = replay(way, buf, max, ip, sp, rbp, gen, slo);
            if (n > 0) {
                memo_replayed(m, &m->sets[s0], k, way, note);
                memo_busy = 0;
                return n;
            }
        }
        memo_pick_t pick;
        n = memo_rest(m, h, k, n == STALE, buf, max, ip, sp, rbp, gen, slo, note, &pick);
        if (n > 0) {
            memo_busy = 0;
            return n;
        }
        w = pick.w;
        set = pick.set;
        victim = pick.victim;
    }
    void **out = buf, **end = buf + max;
    *out++ = (void *)ip;
    uint32_t i = 0;
    /* Which saved RBP a later RBP-based CFA uses: only those are checked at a replay (in code
     * without frame pointers a saved RBP is any value, a loop counter, say). */
    int rbp_from = -1; /* the step whose read the current RBP came from; -1: the start's */
    bool rbp0_used = false;
    uint64_t rbp_used = 0; /* bit i: step i's saved RBP is used (MEMO_FRAMES is 64) */
    while (out < end) {
        uint32_t r = rule_of(t, (uint64_t)ip - 1);
        if (__builtin_expect((r & 3) != R_STD, 0)) {
            if ((r & 3) == R_LAST) break;
            goto give_up;
        }
        if (r & R_CFA_RBP) {
            if (rbp_from < 0)
                rbp0_used = true;
            else if (rbp_from < MEMO_FRAMES) /* deeper steps are never remembered */
                rbp_used |= 1ull << rbp_from;
        }
        uintptr_t cfa = ((r & R_CFA_RBP) ? rbp : sp) + (r >> R_OFF_SHIFT);
        if (__builtin_expect(cfa < sp + 8 || cfa > limit, 0)) goto give_up;
        uintptr_t save = r & R_RBP_BYTES;
        if (save) {
            if (cfa - save < sp) goto give_up;
            rbp = load_word(cfa - save);
            rbp_from = (int)i;
            if (w) {
                w->rbp_at[i] = (uint32_t)(cfa - save - sp0);
                w->rbp_val[i] = rbp;
            }
        }
        ip = load_word(cfa - 8);
        if (w) w->at[i] = (uint32_t)(cfa - 8 - sp0); /* below limit: within 32 bits */
        i++;
        sp = cfa;
        if (__builtin_expect(ip < 0x4000, 0)) goto give_up;
        *out++ = (void *)ip;
        if (ip - 1 - slo < sspan) break; /* the interpreter: Python frames go on from here */
    }
    int n = (int)(out - buf);
    if (w) {
        w->ip0 = ra0;
        w->sp0 = sp0;
        w->rbp0 = rbp0;
        w->rbp0_used = rbp0_used;
        w->stop_lo = slo;
        w->n = (uint32_t)n;
        w->max = (uint32_t)max;
        w->gen = gen;
        memo_keep_rbps(w, rbp_used, (uint32_t)n);
        __builtin_memcpy(w->frames, buf, (size_t)n * sizeof *buf);
        w->note = (gmt_walk_note_t){.walk = ++walk_serial};
        *note = &w->note;
        set->key[victim] = key;
        memo_busy = 0;
    }
    return n;
give_up:
    if (m) memo_busy = 0; /* only the walk that took the slot lets it go (not a nested one) */
    return fallback(buf, max, ra0);
}

NO_ASAN NOINLINE_EXACT int gmt_unwind(void **buf, int max)
{
    gmt_walk_note_t *note;
    return unwind_from(__builtin_frame_address(0), buf, max, &note);
}

NO_ASAN NOINLINE_EXACT int gmt_unwind_walk(void **buf, int max, gmt_walk_note_t **note)
{
    return unwind_from(__builtin_frame_address(0), buf, max, note);
}
