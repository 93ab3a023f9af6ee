/* modules.c - the module map kept in the core block: path, load bias, extent and GNU build
 * id of every loaded object, re-recorded when dl_iterate_phdr's adds/subs counters moved. A
 * recovered state names its frames by module and offset from it (track.h).
 */
#define _GNU_SOURCE
#include "track_internal.h"

#include "loader.h"
#include "spin.h"

#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NOTE_ALIGN(x) (((x) + 3u) & ~3u)

static int refresh_lock;

static void build_id_of(const struct dl_phdr_info *info, gmt_module_t *m)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)(const void *)p;
            const uint8_t *name = p + sizeof *n;
            const uint8_t *desc = name + NOTE_ALIGN(n->n_namesz);
            if (desc + n->n_descsz > end) break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                uint32_t len = n->n_descsz < sizeof m->build_id ? n->n_descsz : sizeof m->build_id;
                memcpy(m->build_id, desc, len);
                m->build_id_len = len;
                return;
            }
            p = desc + NOTE_ALIGN(n->n_descsz);
        }
    }
}

static int counters_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    uint64_t *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1; /* the counters are the same for every object: one is enough */
}

/* A re-recording in place: the n-th object goes over the map's n-th entry, and count is
 * lowered only at the end. The map read meanwhile (a report of this process, or a recovery
 * after a SIGKILL that came in the middle: the state file keeps what was stored) holds
 * every module, each entry whole: an entry being written reads as none (hi 0 first, hi last),
 * and an entry that already holds the same object at the same place is not written at all.
 * Before, the map was emptied first and a kill then left a recovered report no module at all
 * (integration.state_kill under ThreadSanitizer: the kill came right after a snapshot had
 * loaded libdw, while the writer thread re-recorded). */
typedef struct record_s {
    gmt_modmap_t *mm;
    uint32_t n; /* entries of this recording so far */
} record_t;

static int record_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    record_t *rec = arg;
    gmt_modmap_t *mm = rec->mm;
    if (rec->n >= GMT_MAX_MODULES) return 1;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (hi == 0) return 0;
    gmt_module_t *m = &mm->mods[rec->n];
    const char *path = info->dlpi_name;
    if (rec->n < mm->count && m->hi == hi && m->lo == lo && m->base == info->dlpi_addr &&
        (!path || !*path || strncmp(m->path, path, sizeof m->path - 1) == 0)) {
        rec->n++; /* the same object at the same place: left as it is, never unfindable */
        return 0;
    }
    __atomic_store_n(&m->hi, 0, __ATOMIC_RELAXED); /* no address is in [lo, 0) */
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    m->base = info->dlpi_addr;
    m->lo = lo;
    memset(m->build_id, 0, sizeof m->build_id);
    m->build_id_len = 0;
    memset(m->path, 0, sizeof m->path);
    if (!path || !*path) {
        /* The main program has no name in the list: its path is /proc/self/exe. */
        ssize_t n = rec->n == 0 ? readlink("/proc/self/exe", m->path, sizeof m->path - 1) : -1;
        if (n > 0)
            m->path[n] = 0;
        else
            snprintf(m->path, sizeof m->path, "%s", rec->n == 0 ? "[main]" : "[unknown]");
    } else {
        snprintf(m->path, sizeof m->path, "%s", path);
    }
    build_id_of(info, m);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&m->hi, hi, __ATOMIC_RELEASE);
    rec->n++;
    if (rec->n > mm->count) __atomic_store_n(&mm->count, rec->n, __ATOMIC_RELEASE);
    return 0;
}

void gmt_track_modules_refresh(void)
{
    /* Only a state file is ever read by another process; without one the map has no reader,
     * and dl_iterate_phdr contends for the loader's lock with every unwinding thread. */
    if (gmt_track_recovered() || !*gmt_track_state_path()) return;
    if (!gmt_spin_trylock(&refresh_lock)) return;
    gmt_modmap_t *mm = &gmt_cs->modules;
    uint64_t c[2] = {0, 0};
    gmt_dl_iterate_phdr(counters_cb, c);
    if (mm->count && c[0] == mm->adds && c[1] == mm->subs) {
        gmt_spin_unlock(&refresh_lock);
        return;
    }
    __atomic_store_n(&mm->seq, mm->seq + 1, __ATOMIC_RELEASE); /* odd: being written */
    record_t rec = {mm, 0};
    gmt_dl_iterate_phdr(record_cb, &rec);
    __atomic_store_n(&mm->count, rec.n, __ATOMIC_RELEASE); /* the entries past it: unloaded */
    mm->adds = c[0];
    mm->subs = c[1];
    __atomic_store_n(&mm->seq, mm->seq + 1, __ATOMIC_RELEASE);
    gmt_spin_unlock(&refresh_lock);
}

bool gmt_track_module_of(uint64_t addr, const gmt_module_t **mod)
{
    const gmt_modmap_t *mm = &gmt_cs->modules;
    uint32_t n = __atomic_load_n(&mm->count, __ATOMIC_ACQUIRE);
    if (n > GMT_MAX_MODULES) n = GMT_MAX_MODULES;
    for (uint32_t i = 0; i < n; i++)
        if (addr < __atomic_load_n(&mm->mods[i].hi, __ATOMIC_ACQUIRE) && addr >= mm->mods[i].lo) {
            *mod = &mm->mods[i];
            return true;
        }
    return false;
}
