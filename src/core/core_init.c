/* core_init.c - the core's stores: laid out in the region (region.h) at init, in a fresh
 * region in a fork child, attached from a state file for recovery; and the accessors the
 * report reads them through, whichever of those they are.
 */
#include "track_internal.h"
#include "unwind.h"

#include "clock.h"
#include "log.h"
#include "pyframes.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

gmt_config_t gmt_core_cfg;
gmt_stacks_t *gmt_core_stacks;
/* gmt_core_table, gmt_cs (at first the boot block), the ready flag, the stack settings and
 * the generation are words of hot.h's line. */
static bool recovered;
static bool viewed; /* recovered for a view: no table slots, no growth rows (recover) */
/* The recovered state's growth sampler block lay outside the region or off the alignment
 * blocks are handed out on (growth_off cleared). */
static bool growth_block_bad;

size_t gmt_track_state_bytes(void)
{
    return sizeof(gmt_core_state_t);
}

/* For region.c's judgement of an owner it cannot judge by pid (declared there). */
void gmt_track_state_life_offsets(size_t *alive, size_t *start_mono, size_t *start_wall)
{
    *alive = offsetof(gmt_core_state_t, alive_ns);
    *start_mono = offsetof(gmt_core_state_t, proc.start_mono_ns);
    *start_wall = offsetof(gmt_core_state_t, proc.start_wall_ns);
}

static void *core_block(size_t bytes, uint64_t *off)
{
    if (gmt_region_alloc(GMT_ARENA_CORE, bytes, 64, off) != 0) return NULL;
    return GMT_AT(void, *off);
}

static int lay_out(const gmt_config_t *c)
{
    gmt_region_header_t *h = gmt_region_header();
    uint64_t off;
    gmt_core_state_t *cs = core_block(sizeof *cs, &off);
    if (!cs) return -ENOMEM;
    memcpy(cs, &gmt_boot_state, sizeof *cs);
    cs->cfg = *c;
    cs->start_ns = gmt_now_ns();
    h->core_off = off;
    __atomic_store_n(&gmt_cs, cs, __ATOMIC_RELEASE);
    gmt_peaks_reset();
    gmt_table_t *t = core_block(sizeof *t, &off);
    if (!t || gmt_table_init(t, c->max_live) != 0) return -ENOMEM;
    h->table_off = off;
    gmt_stacks_t *st = core_block(sizeof *st, &off);
    uint32_t bound = c->max_stacks > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)c->max_stacks;
    if (!st || gmt_stacks_init(st, bound ? bound + 1 : 0) != 0) return -ENOMEM;
    h->stacks_off = off;
    gmt_core_table = t;
    gmt_core_stacks = st;
    return gmt_stats_init(cs->start_ns, c->timeline_points);
}

/* The Python code cache lives in the core block, so a recovered state resolves its Python
 * frames (docs/state.md). Only where an interpreter is present: in a state file the cache's
 * blocks are allocated on disk (tmpfs: memory) up front, so a file gets a smaller one. */
static void py_cache(const gmt_config_t *c)
{
    if (!c->python || !dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState")) return;
    bool file = gmt_region_file_backed();
    uint32_t entries = file ? 1u << 14 : 1u << 16;
    uint64_t text = file ? 8ull << 20 : 32ull << 20;
    size_t bytes = gmt_pycode_bytes(entries, text);
    uint64_t off;
    void *m = core_block(bytes, &off);
    if (m && gmt_pycode_init(m, bytes, entries, text) == 0) {
        gmt_cs->pycode_off = off;
        gmt_cs->pycode_bytes = bytes;
        return;
    }
    /* A fork child's cache was in the parent's region, gone now: never leave it pointing there.
     * Process memory then (not recoverable, frames still named in live reports). */
    m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
             0);
    if (m != MAP_FAILED) gmt_pycode_init(m, bytes, entries, text);
}

static void py_facts(void)
{
    gmt_cs->py_status = (int32_t)gmt_py_status();
    const char *v = gmt_py_version();
    snprintf(gmt_cs->py_version, sizeof gmt_cs->py_version, "%s", v ? v : "");
}

/* The state file as the lines about it name it: the path asked for with %p and %h expanded
 * and made absolute (gmt_region_asked_path), else GPUMEMTRACE_STATE as given (a pattern that
 * could not be expanded). Until this, the lines named the pattern, "DIR/s-%h.gmt exists
 * and is not a state file", a file that does not exist. */
static const char *state_shown(const char *state)
{
    const char *asked = gmt_region_asked_path();
    return asked[0] ? asked : state;
}

/* Why the state file asked for (state) is not used: one line, said and noted in the report's
 * warnings by the caller. A file that could not be made (gmt_region_create's rc, or another
 * of gmt_region_place's)... */
static void state_not_made(char *why, size_t len, const char *state, int rc)
{
    snprintf(why, len, "cannot create the state file %s (%s); keeping the state in memory only",
             state_shown(state), strerror(-rc));
}

/* ... and a name refused at the first CUDA call (gmt_region_place's rc, and why:
 * gmt_region_place_refusal). */
static void state_refused(char *why, size_t len, const char *pattern, int rc)
{
    const char *state = state_shown(pattern);
    switch (gmt_region_place_refusal()) {
    case GMT_REGION_REFUSED_NOT_STATE:
        snprintf(why, len,
                 "%s exists and is not a state file (a device, link, directory or another file "
                 "is never replaced); keeping the state in memory only",
                 state);
        return;
    case GMT_REGION_REFUSED_OWNER_RUNS: {
        double silent = 0;
        char host[65];
        gmt_region_where_t where = gmt_region_busy_where(&silent, host, sizeof host);
        if (where == GMT_REGION_OWNER_HERE) {
            snprintf(why, len,
                     "%s is the state file of pid %d, which still runs: not replaced; keeping "
                     "the state in memory only (a %%p in GPUMEMTRACE_STATE gives each process a "
                     "file)",
                     state, (int)gmt_region_busy_owner());
            return;
        }
        snprintf(why, len,
                 "%s is the state file of pid %d %s %s, which gave a sign of life %.0f s ago "
                 "(its tracer marks it every second while it runs): not replaced; keeping the "
                 "state in memory only (%%h and %%p in GPUMEMTRACE_STATE give each process a "
                 "file)",
                 state, (int)gmt_region_busy_owner(),
                 where == GMT_REGION_OWNER_OTHER_HOST ? "on host" : "in another pid namespace of",
                 where == GMT_REGION_OWNER_OTHER_HOST ? (host[0] ? host : "(unnamed)")
                                                      : "this host",
                 silent);
        return;
    }
    case GMT_REGION_REFUSED_CHURN:
        snprintf(why, len,
                 "%s changed each time it was about to be named (other processes naming their "
                 "state files there at the same moment); keeping the state in memory only",
                 state);
        return;
    case GMT_REGION_REFUSED_LOCKED:
        snprintf(why, len,
                 "%s is locked by another process (flock) that held it for %d ms: not replaced; "
                 "keeping the state in memory only",
                 state, GMT_REGION_LOCK_WAIT_MS);
        return;
    case GMT_REGION_REFUSED_MOUNT:
        snprintf(why, len,
                 "%s is a mount point, which no rename replaces (%s): not replaced; keeping the "
                 "state in memory only (mount its folder instead)",
                 state, strerror(-rc));
        return;
    case GMT_REGION_REFUSED_FD_LOST:
    case GMT_REGION_REFUSED_ERRNO:
        break;
    }
    state_not_made(why, len, pattern, rc);
}

/* A forked child whose GPUMEMTRACE_STATE has no %p keeps its state in memory (its parent's
 * file stays the parent's): said once, on stderr and in the report's warnings. */
static bool forked_in_memory;

static void say_forked_in_memory(void)
{
    forked_in_memory = false;
    gmt_info("forked child %d keeps its state in memory (put %%p in GPUMEMTRACE_STATE for a "
             "file per process)",
             (int)getpid());
}

void gmt_core_state_place(void)
{
    if (forked_in_memory) {
        say_forked_in_memory();
        gmt_track_note_warning("a forked child keeps its state in memory (GPUMEMTRACE_STATE "
                               "has no %%p: a file per process)");
    }
    /* A sign of life in the file as it gets its name, before the writer thread's first mark:
     * a process in another pid namespace or on another host judges the owner by it. */
    gmt_track_alive(gmt_now_ns());
    int rc = gmt_region_place();
    if (rc == 0) return;
    if (gmt_region_place_refusal() == GMT_REGION_REFUSED_FD_LOST) {
        /* the program closed the descriptor first: said already (region.c) */
        gmt_track_note_warning("the program closed the state file's descriptor before its first "
                               "CUDA call: %s was not named; keeping the state in memory only",
                               state_shown(gmt_core_cfg.state));
        return;
    }
    char why[GMT_PATH_MAX + 200];
    state_refused(why, sizeof why, gmt_core_cfg.state, rc);
    gmt_error("%s", why);
    gmt_track_note_warning("%s", why);
}

int gmt_core_init(const gmt_config_t *c)
{
    gmt_core_cfg = *c;
    gmt_clock_init(); /* the events' clock (clock.h) */
    int rc = gmt_region_create(c->state);
    /* A state file that could not be made: said now, whole, and in the report's warnings (its
     * config shows the path asked for, capture.state_file null) once the core's notes exist,
     * cut to a note's length there. Refusals of the path (something there, a running
     * process's file) come at the first CUDA call, as the file is named
     * (gmt_core_state_place), so that the helpers a traced job starts stay quiet. */
    char state_why[GMT_PATH_MAX + 160] = "";
    if (rc != 0 && c->state[0]) {
        state_not_made(state_why, sizeof state_why, c->state, rc);
        gmt_error("%s", state_why);
        rc = gmt_region_create(NULL);
    }
    if (rc == 0) rc = lay_out(c);
    if (rc != 0 && !state_why[0] && gmt_region_file_backed()) {
        /* The file took its first chunk but not the stores' first blocks (a nearly full disk,
         * a file size limit): the state in memory, as for a file that cannot be made. Until
         * this, tracing was turned off with a line that blamed memory. */
        snprintf(state_why, sizeof state_why,
                 "the state file %s cannot grow to hold the stores (no space left, or over the "
                 "file size limit); keeping the state in memory only",
                 state_shown(c->state));
        gmt_error("%s", state_why);
        __atomic_store_n(&gmt_cs, &gmt_boot_state, __ATOMIC_RELEASE);
        gmt_region_discard();
        gmt_region_destroy();
        rc = gmt_region_create(NULL);
        if (rc == 0) rc = lay_out(c);
    }
    if (rc != 0) {
        gmt_error("cannot map memory for the live table and stack store; tracing is off");
        return rc;
    }
    if (state_why[0]) gmt_track_note_warning("%s", state_why);
    gmt_stacks_global_init(c->unwind == GMT_UNWIND_LIBUNWIND);
    py_cache(c);
    gmt_py_init(c->python, c->py_checked); /* its own messages; native stacks whatever it returns */
    py_facts();
    gmt_track_modules_refresh();
    __atomic_add_fetch(&gmt_core_generation, 1, __ATOMIC_RELEASE);
    gmt_core_stack_depth = c->stack_depth > 0 ? c->stack_depth : 0;
    gmt_core_min_bytes = c->min_bytes;
    __atomic_store_n(&gmt_core_ready_flag, 1, __ATOMIC_RELEASE);
    return 0;
}

int gmt_core_reset_after_fork(void)
{
    __atomic_store_n(&gmt_core_ready_flag, 0, __ATOMIC_RELEASE);
    gmt_clock_reset_after_fork();
    /* Keep the notes and process facts; start the counters, failures, peaks and pools over. */
    if (gmt_cs != &gmt_boot_state) memcpy(&gmt_boot_state, gmt_cs, sizeof gmt_boot_state);
    gmt_cs = &gmt_boot_state;
    memset(&gmt_boot_state.counts, 0, sizeof gmt_boot_state.counts);
    memset(gmt_boot_state.failures_done, 0, sizeof gmt_boot_state.failures_done);
    gmt_boot_state.failures_next = 0;
    memset(gmt_boot_state.pools, 0, sizeof gmt_boot_state.pools);
    gmt_boot_state.pools_unlisted = 0;
    gmt_boot_state.proc.pid = (int32_t)getpid();
    gmt_boot_state.proc.ppid = (int32_t)getppid();
    gmt_boot_state.notes_lock = 0;
    /* The code cache and the growth samples were in the parent's region. */
    gmt_boot_state.pycode_off = gmt_boot_state.pycode_bytes = 0;
    gmt_boot_state.growth_off = 0;
    gmt_boot_state.growth_bytes = 0;
    gmt_unwind_after_fork(); /* the other threads' remembered walks */
    /* Said at the fork by the child of a process that named its file (one that called CUDA),
     * else at the child's own first CUDA call (gmt_core_state_place): a shell, a launcher or
     * pyenv's shims, which fork often and never call CUDA, said it for every child, dozens of
     * lines for one `python3 train.py`; a worker forked before its parent's first CUDA call
     * (the usual way to start GPU workers) still says it. */
    bool parent_named = gmt_region_path()[0] != 0;
    /* The parent's mapping of its state file stays the parent's. */
    gmt_region_destroy();
    gmt_core_table = NULL;
    gmt_core_stacks = NULL;
    gmt_config_t c = gmt_core_cfg;
    if (c.state[0] && !strstr(c.state, "%p")) {
        if (parent_named)
            say_forked_in_memory();
        else
            forked_in_memory = true; /* said at the child's own first CUDA call, if it comes */
        c.state[0] = 0;
    }
    return gmt_core_init(&c);
}

/* ---- recovery --------------------------------------------------------------------------- */

static void terminate(char *s, size_t len)
{
    s[len - 1] = 0;
}

#define BAD(what)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, "corrupt state file %s: %s", path, what);                            \
        return -EINVAL;                                                                            \
    } while (0)

/* view: the live table's slots and the growth samples left unread (gmt_track_recover_view). */
static int recover(const char *path, bool view, char *err, size_t errlen)
{
    __atomic_store_n(&gmt_core_ready_flag, 0, __ATOMIC_RELEASE);
    uint32_t arenas = GMT_REGION_ALL_ARENAS;
    if (view) arenas &= ~((1u << GMT_ARENA_TABLE) | (1u << GMT_ARENA_GROWTH));
    int rc = gmt_region_attach_arenas(path, arenas, err, errlen);
    if (rc) return rc;
    gmt_region_header_t *h = gmt_region_header();
    gmt_core_state_t *cs = GMT_AT(gmt_core_state_t, h->core_off);
    gmt_table_t *t = GMT_AT(gmt_table_t, h->table_off);
    gmt_stacks_t *st = GMT_AT(gmt_stacks_t, h->stacks_off);
    /* a view refuses the files a recovery does: the table's levels are checked all the same */
    if ((view ? gmt_table_check(t) : gmt_table_validate(t)) != 0) BAD("live table");
    if (gmt_stacks_validate(st) != 0) BAD("stack store");
    const gmt_arena_t *core = gmt_region_arena(GMT_ARENA_CORE);
    if (gmt_stats_attach(GMT_AT(void, h->stats_off),
                         core->offset + core->committed - h->stats_off) != 0)
        BAD("counters");
    /* Whatever the dead process held, nobody holds now; strings end inside their arrays. */
    cs->notes_lock = 0;
    for (int i = 0; i < GMT_STAT_SLOTS; i++)
        cs->peaks[i].lock = 0;
    if (cs->nbackends < 0 || cs->nbackends > GMT_MAX_BACKENDS) cs->nbackends = 0;
    if (cs->nwarnings < 0 || cs->nwarnings > GMT_MAX_WARNINGS) cs->nwarnings = 0;
    for (int i = 0; i < GMT_MAX_BACKENDS; i++)
        terminate(cs->backends[i], GMT_NOTE_LEN);
    for (int i = 0; i < GMT_MAX_WARNINGS; i++)
        terminate(cs->warnings[i], GMT_NOTE_LEN);
    terminate(cs->backend_reason, GMT_NOTE_LEN);
    if (cs->proc.argv_len >= sizeof cs->proc.argv) cs->proc.argv_len = sizeof cs->proc.argv - 1;
    cs->proc.argv[cs->proc.argv_len] = 0;
    terminate(cs->proc.hostname, sizeof cs->proc.hostname);
    if (cs->modules.count > GMT_MAX_MODULES) cs->modules.count = 0;
    for (int i = 0; i < GMT_MAX_MODULES; i++)
        terminate(cs->modules.mods[i].path, GMT_MODULE_PATH_LEN);
    gmt_config_sanitize(&cs->cfg); /* strings ended, bools 0 or 1, enums among their values */
    if (cs->cfg.timeline_points < 0 || cs->cfg.timeline_points > 65536) cs->cfg.timeline_points = 0;
    if (cs->cfg.top < 1 || cs->cfg.top > 100000) cs->cfg.top = 50;
    if (cs->cfg.stack_depth < 0 || cs->cfg.stack_depth > GMT_MAX_STACK_DEPTH)
        cs->cfg.stack_depth = 0;
    if (cs->failures_next > GMT_MAX_FAILURE_RECORDS) cs->failures_next = GMT_MAX_FAILURE_RECORDS;
    for (int i = 0; i < GMT_STAT_SLOTS; i++) {
        terminate(cs->devfacts[i].name, sizeof cs->devfacts[i].name);
        terminate(cs->devfacts[i].uuid, sizeof cs->devfacts[i].uuid);
    }
    terminate(cs->py_version, sizeof cs->py_version);
    /* The Python code cache, read-only; a bad one, or none where Python frames were captured,
     * leaves them unresolved, and the report says so (capture.python.code_cache_unusable). */
    void *pc = NULL;
    if (cs->pycode_off && gmt_region_holds_block(GMT_ARENA_CORE, cs->pycode_off, cs->pycode_bytes))
        pc = GMT_AT(void, cs->pycode_off);
    int pyrc = gmt_py_attach_recovered(pc, pc ? cs->pycode_bytes : 0,
                                       (gmt_py_status_t)cs->py_status, cs->py_version);
    if (pyrc)
        gmt_info("the state file's Python code cache is %s: Python frames are unnamed",
                 pyrc == -ENOENT ? "missing" : "not usable");
    /* A growth block outside what the file holds, or misaligned (no block ever is), is never
     * read; the report says its samples were damaged (gmt_track_growth_recovered). */
    growth_block_bad =
        cs->growth_off && !gmt_region_holds_block(GMT_ARENA_CORE, cs->growth_off, cs->growth_bytes);
    if (growth_block_bad) cs->growth_off = 0;
    gmt_core_cfg = cs->cfg;
    gmt_cs = cs;
    gmt_core_table = view ? NULL : t;
    gmt_core_stacks = st;
    recovered = true;
    viewed = view;
    __atomic_store_n(&gmt_core_ready_flag, 1, __ATOMIC_RELEASE);
    return 0;
}

int gmt_track_recover(const char *path, char *err, size_t errlen)
{
    return recover(path, false, err, errlen);
}

int gmt_track_recover_view(const char *path, char *err, size_t errlen)
{
    return recover(path, true, err, errlen);
}

bool gmt_track_recovered(void)
{
    return recovered;
}

unsigned gmt_track_end_mark(void)
{
    gmt_region_header_t *h = gmt_region_header();
    return h ? __atomic_load_n(&h->clean_exit, __ATOMIC_ACQUIRE) : GMT_REGION_END_NONE;
}

void gmt_track_table_settle(void)
{
    if (gmt_core_ready()) gmt_table_settle(gmt_core_table, GMT_TABLE_SETTLE_PER_CALL);
}

void gmt_track_mark_end(unsigned how)
{
    gmt_region_mark_end(how);
}

void gmt_track_state_discard(void)
{
    gmt_region_discard();
}

void gmt_track_state_before_exec(void)
{
    gmt_region_before_exec();
}

const char *gmt_track_state_path(void)
{
    return gmt_region_path();
}

uint64_t gmt_track_now_ns(void)
{
    if (!recovered) return gmt_now_ns();
    uint64_t last = gmt_stats_last_event_ns();
    uint64_t alive = __atomic_load_n(&gmt_cs->alive_ns, __ATOMIC_RELAXED);
    if (alive > last) last = alive;
    return last > gmt_cs->start_ns ? last : gmt_cs->start_ns;
}

void gmt_track_alive(uint64_t now_ns)
{
    if (!gmt_core_ready() || recovered) return;
    __atomic_store_n(&gmt_cs->alive_ns, now_ns, __ATOMIC_RELAXED);
}

void *gmt_track_growth_state(size_t bytes)
{
    /* in a recovered state the dead process's block is gmt_track_growth_recovered's */
    if (!gmt_core_ready() || recovered || bytes == 0 || bytes > UINT32_MAX) return NULL;
    uint64_t off = __atomic_load_n(&gmt_cs->growth_off, __ATOMIC_ACQUIRE);
    if (off) return gmt_cs->growth_bytes == bytes ? GMT_AT(void, off) : NULL;
    void *p = core_block(bytes, &off);
    if (!p) return NULL;
    memset(p, 0, bytes);
    gmt_cs->growth_bytes = (uint32_t)bytes;
    __atomic_store_n(&gmt_cs->growth_off, off, __ATOMIC_RELEASE);
    return p;
}

int gmt_track_growth_recovered(size_t bytes, void **state)
{
    *state = NULL;
    if (!recovered || !gmt_core_ready()) return 0;
    if (growth_block_bad) return -EINVAL;
    uint64_t off = __atomic_load_n(&gmt_cs->growth_off, __ATOMIC_ACQUIRE);
    if (!off) return 0;
    if (gmt_cs->growth_bytes != bytes) return -EINVAL;
    *state = GMT_AT(void, off);
    return 1;
}

int64_t *gmt_track_growth_rows(uint64_t bytes, uint64_t *usable)
{
    *usable = 0;
    gmt_arena_t *ar = gmt_region_arena(GMT_ARENA_GROWTH);
    if (!gmt_core_ready() || !ar || (recovered && viewed)) return NULL; /* rows left unread */
    if (!recovered) {
        uint64_t want = bytes < ar->reserved ? bytes : ar->reserved;
        if (want > __atomic_load_n(&ar->committed, __ATOMIC_ACQUIRE))
            gmt_region_ensure(GMT_ARENA_GROWTH, want); /* short of it: fewer ids are sampled */
    }
    *usable = __atomic_load_n(&ar->committed, __ATOMIC_ACQUIRE);
    return GMT_AT(int64_t, ar->offset);
}

/* ---- accessors ---------------------------------------------------------------------------- */

const gmt_config_t *gmt_track_config(void)
{
    return gmt_cs == &gmt_boot_state ? &gmt_core_cfg : &gmt_cs->cfg;
}

gmt_table_t *gmt_track_table(void)
{
    return gmt_core_table;
}

gmt_stacks_t *gmt_track_stacks(void)
{
    return gmt_core_stacks;
}

uint64_t gmt_track_start_ns(void)
{
    return gmt_cs->start_ns;
}

gmt_proc_t *gmt_track_proc(void)
{
    return &gmt_cs->proc;
}
