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

static int record_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    gmt_modmap_t *mm = arg;
    if (mm->count >= GMT_MAX_MODULES) return 1;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
    if (hi == 0) return 0;
    gmt_module_t *m = &mm->mods[mm->count];
    memset(m, 0, sizeof *m);
    m->base = info->dlpi_addr;
    m->lo = lo;
    m->hi = hi;
    const char *path = info->dlpi_name;
    if (!path || !*path) {
        /* The main program has no name in the list: its path is /proc/self/exe. */
        ssize_t n = mm->count == 0 ? readlink("/proc/self/exe", m->path, sizeof m->path - 1) : -1;
        if (n > 0)
            m->path[n] = 0;
        else
            snprintf(m->path, sizeof m->path, "%s", mm->count == 0 ? "[main]" : "[unknown]");
    } else {
        snprintf(m->path, sizeof m->path, "%s", path);
    }
    build_id_of(info, m);
    mm->count++;
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
    mm->count = 0;
    gmt_dl_iterate_phdr(record_cb, mm);
    mm->adds = c[0];
    mm->subs = c[1];
    __atomic_store_n(&mm->seq, mm->seq + 1, __ATOMIC_RELEASE);
    gmt_spin_unlock(&refresh_lock);
}

bool gmt_track_module_of(uint64_t addr, const gmt_module_t **mod)
{
    const gmt_modmap_t *mm = &gmt_cs->modules;
    uint32_t n = mm->count < GMT_MAX_MODULES ? mm->count : GMT_MAX_MODULES;
    for (uint32_t i = 0; i < n; i++)
        if (addr >= mm->mods[i].lo && addr < mm->mods[i].hi) {
            *mod = &mm->mods[i];
            return true;
        }
    return false;
}
