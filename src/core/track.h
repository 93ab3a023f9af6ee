/* track.h - the core's small internal API: what every capture layer calls.
 *
 * A hook calls the real CUDA function, describes the result as a gmt_event_t and calls:
 *   gmt_track_alloc   after an allocation succeeded
 *   gmt_track_free_begin / _end  around the real release (removed and accounted for before,
 *                     so a reused address is never misowned and a synchronizing release's
 *                     bookkeeping overlaps the device's work; restored when it failed)
 *   gmt_track_failure after an allocation failed
 * The core captures the call stack itself, on the calling thread.
 *
 * Exactly-once: a runtime hook brackets its real call with gmt_track_runtime_enter/leave.
 * An event from a lower layer (driver hooks, CUPTI) inside that bracket is recorded once,
 * under the runtime API's name; the runtime hook records only when no lower layer did.
 * A release recorded by a runtime hook makes the lower layers' release of the same call a
 * no-op.
 *
 * Thread-safe and lock-free on the hot path. Allocates nothing after gmt_core_init.
 */
#ifndef GMT_CORE_TRACK_H
#define GMT_CORE_TRACK_H

#include "config.h"
#include "event.h"
#include "stacks.h"
#include "stats.h"
#include "hot.h"
#include "region.h" /* GMT_REGION_END_* */
#include "table.h"
#include "tls.h"

#include <stdbool.h>
#include <stdint.h>

/* Maps the table, the stack store and the timelines. 0 or a negative errno (then every
 * track call is a counted drop). */
int gmt_core_init(const gmt_config_t *cfg);
#define gmt_core_ready_flag (gmt_hot.core_ready) /* core_init.c; read through gmt_core_ready() */
static inline bool gmt_core_ready(void)
{
    return __atomic_load_n(&gmt_core_ready_flag, __ATOMIC_ACQUIRE) != 0;
}
/* In a forked child: start over with an empty live set and zero counters, so the child's
 * report describes the child alone. Maps fresh memory (the parent's stays copy-on-write and
 * is unmapped). 0 or a negative errno. */
int gmt_core_reset_after_fork(void);

/* A zero-byte request or a NULL result is not an allocation: nothing is recorded. */
void gmt_track_alloc(const gmt_event_t *ev);
/* A release in two steps around the real call, on one thread: gmt_track_free_begin removes the
 * allocation from the table before the call (so an address handed out again at once is never
 * misattributed) and accounts for the release, and returns true when it held it;
 * gmt_track_free_end(ok) then settles what the call covered beyond its first record (ok:
 * cuMemUnmap of several mappings) or puts the record and its bytes back as they were (the real
 * call failed: the allocation is still live). gmt_track_free is both at once, for a release known
 * to succeed. */
bool gmt_track_free_begin(const gmt_event_t *ev);
void gmt_track_free_end(bool ok);
/* gmt_track_free_end's common case, settled inline: the real release went through (ok) and
 * covered the one record its begin took, so nothing is left but to say so. True when that was
 * the case; false: call gmt_track_free_end(ok). It writes one thread-local word and calls
 * nothing (no CUDA call, so no reentrancy guard needed): a signal handler's release between
 * its load and its store settles this pending release as gone (gmt_track_free_begin), as it
 * would between the real call's return and gmt_track_free_end. */
#define GMT_PENDING_NONE 0
#define GMT_PENDING_ONE  1
static inline bool gmt_track_free_end_quick(bool ok)
{
    if (!ok || gmt_tls.pending_set != GMT_PENDING_ONE) return false;
    gmt_tls.pending_set = GMT_PENDING_NONE;
    return true;
}
void gmt_track_free(const gmt_event_t *ev);
void gmt_track_failure(const gmt_event_t *ev);

/* Inline: every runtime hook runs them (core/nesting.c owns the state). The bracket `f` lives
 * in the hook's frame until gmt_track_runtime_leave; brackets nest (a signal handler's CUDA
 * call inside a hook's real call opens and closes its own). */
static inline void gmt_track_runtime_enter(gmt_nest_t *f, gmt_api_t api, bool is_free)
{
    f->up = gmt_tls.nest;
    f->frames = NULL;       /* token and nframes are read only beside frames, written before it */
    f->api = (uint16_t)api; /* with the next three: one store (tls.h) */
    f->is_free = is_free;
    f->deferred = 0;
    f->inner = 0;
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* filled before a signal handler can see it */
    gmt_tls.nest = f;
}

/* The runtime API whose bracket is innermost on this thread; 0 outside any. */
static inline gmt_api_t gmt_track_runtime_api(void)
{
    return gmt_tls.nest ? (gmt_api_t)gmt_tls.nest->api : (gmt_api_t)0;
}

/* True when a lower layer recorded an event inside the current runtime bracket (so the runtime
 * hook records nothing more). A runtime-layer event recorded before gmt_track_runtime_leave
 * is not counted as one: it is the hook's own. */
static inline bool gmt_track_runtime_inner(const gmt_nest_t *f)
{
    return f->inner > 0;
}

/* Closes bracket f (the innermost); true when a lower layer recorded this call already. */
static inline bool gmt_track_runtime_leave(gmt_nest_t *f)
{
    gmt_tls.nest = f->up;
    return f->inner > 0;
}

/* Called by a runtime allocation hook right after gmt_track_runtime_enter: captures the
 * program's stack now, shallow (the hook is the only tracer frame above it), into the hook's
 * own array `frames` (GMT_STACKS_CAPTURE_MAX entries, alive until gmt_track_runtime_leave:
 * the walk's own buffer, the frames left where it put them), for the events of this bracket.
 * Does nothing when stacks are off. */
void gmt_track_runtime_capture_slow(gmt_nest_t *f, uint64_t *frames);
#define gmt_core_stack_depth (gmt_hot.stack_depth) /* the configured depth; 0: stacks off */
#define gmt_core_min_bytes   (gmt_hot.min_bytes)   /* GPUMEMTRACE_MIN_BYTES */
/* size: the bytes the call asks for, or a lower bound; taken only when min_bytes is set (an
 * allocation below it gets no stack, so none is walked for it). */
#define gmt_track_runtime_capture(f, frames, size_expr)                                            \
    do {                                                                                           \
        if (gmt_core_stack_depth > 0 &&                                                            \
            (gmt_core_min_bytes == 0 || (size_expr) >= gmt_core_min_bytes))                        \
            gmt_track_runtime_capture_slow(f, frames);                                             \
    } while (0)

typedef struct gmt_counts_s {
    uint64_t events; /* alloc + free + failure events handed to the core */
    uint64_t allocs;
    uint64_t frees;
    uint64_t failures;
    uint64_t unknown_frees; /* frees of addresses the table did not hold */
    uint64_t failed_frees;  /* releases the real call refused: their records were restored */
    uint64_t nested_merged; /* lower-layer events merged into a runtime call */
    uint64_t dropped_table_full;
    uint64_t dropped_no_core;  /* events before init or after init failed */
    uint64_t dropped_stacks;   /* allocations whose stack did not fit the store */
    uint64_t dropped_failures; /* failure records past the error ring */
    uint64_t dropped_invalid;  /* events with an out-of-range kind, API or layer */
    uint64_t dropped_start;    /* CUDA calls passed through untraced while start-up was stuck */
    /* pool allocations whose pool found the list of GMT_MAX_POOLS full: recorded (totals,
     * leaks), in no pool's figures (the report's capture.pool_list) */
    uint64_t unlisted_pool_allocs;
    uint64_t per_layer[GMT_LAYER_COUNT];
} gmt_counts_t;

void gmt_track_counts(gmt_counts_t *out);
/* A CUDA call the capture layer let through untraced because start-up could not finish. */
void gmt_track_count_start_drop(void);

#define GMT_MAX_FAILURE_RECORDS 256
typedef struct gmt_failure_s {
    uint64_t time_ns;
    uint64_t size;
    /* Successful allocations on this device before the failure: the report compares it with
     * the count at report time to say whether the program went on (errors[].recovered). */
    uint64_t device_allocs;
    int64_t free_bytes;  /* device free memory at the moment, -1 when unknown */
    int64_t total_bytes; /* -1 when unknown */
    int32_t device;
    int32_t result;
    uint32_t stack_id;
    uint8_t api, kind, layer;
    /* the event's GMT_EVENT_OOM and GMT_EVENT_PROBE (state file version 9; 8 held 1 for out of
     * memory) */
    uint8_t flags;
} gmt_failure_t;
#define GMT_FAILURE_FLAGS (GMT_EVENT_OOM | GMT_EVENT_PROBE) /* the event flags a record keeps */

int gmt_track_failures(gmt_failure_t *out, int max);

/* The live set at a device's in-use peak, grouped by stack id. Taken lazily: at the first
 * release after a new peak (when the live set is still the peak's), or at report time. */
typedef struct gmt_peak_group_s {
    uint32_t stack_id; /* 0: the allocations recorded without a stack, of one kind */
    uint8_t kind;      /* gmt_kind_t */
    uint8_t api;       /* gmt_api_t; stack id 0: the latest such allocation's */
    int64_t bytes;
    int64_t count;
} gmt_peak_group_t;

/* Copies the groups live at slot's peak, the stacks' then those without a stack (at most
 * GMT_PEAK_STACKLESS_KINDS more than the stack store's ids); returns how many (<= max). The
 * kinds of bytes in use (gmt_kind_in_use) have one group without a stack each. */
#define GMT_PEAK_STACKLESS_KINDS 3
int gmt_track_peak_groups(int slot, gmt_peak_group_t *out, int max, int64_t *peak_bytes);
/* Makes sure every device's peak snapshot is current (call before reading them). */
void gmt_track_settle_peaks(void);

/* Stream-ordered pools seen so far (pool handle 0: the device's current pool), for the
 * report's reserved-versus-used view. Returns how many were copied. A pool allocation's record
 * keeps the index of its (device, pool) in this list (gmt_record_t.pool, 7 bits of the table's
 * slot): 0 .. GMT_MAX_POOLS - 1, or GMT_POOL_UNLISTED once the list was full when it was made.
 * Other records keep GMT_POOL_NONE. Entries are never removed, so an index stays valid for the
 * life of the process (and of its state file). */
#define GMT_MAX_POOLS     64
#define GMT_POOL_NONE     126 /* not a pool allocation */
#define GMT_POOL_UNLISTED 127 /* a pool allocation whose pool found the list full */
typedef struct gmt_pool_seen_s {
    int32_t device;
    uint8_t index; /* in the list: what the records of this pool keep */
    uint64_t pool;
} gmt_pool_seen_t;
int gmt_track_pools(gmt_pool_seen_t *out, int max);

/* Driver's used bytes on a device when its peak snapshot was taken (-1: unknown). */
int64_t gmt_track_peak_driver_used(int slot);

/* Providers installed by the capture layer; the core calls them, never includes them. */
typedef int (*gmt_meminfo_fn)(int32_t device, uint64_t *free_bytes, uint64_t *total_bytes);
void gmt_track_set_meminfo(gmt_meminfo_fn fn);
gmt_meminfo_fn gmt_track_meminfo(void);

/* The bytes NVML counts for this process on the device with this UUID; 0, or a negative errno
 * with why saying what. NULL while the driver is off (below) and in a recovered state. */
typedef int (*gmt_procmem_fn)(const char *uuid, uint64_t *used, char *why, size_t why_len);
void gmt_track_set_procmem(gmt_procmem_fn fn);
gmt_procmem_fn gmt_track_procmem(void);

/* Called (outside any lock) after an out-of-memory failure was recorded. */
typedef void (*gmt_oom_fn)(const gmt_failure_t *f);
void gmt_track_set_oom_hook(gmt_oom_fn fn);

/* A pool's reserved and used bytes as the driver reports them; 0 or a negative errno. */
typedef struct gmt_pool_info_s {
    uint64_t reserved, reserved_high, used, used_high;
} gmt_pool_info_t;
typedef int (*gmt_poolinfo_fn)(int32_t device, uint64_t pool, gmt_pool_info_t *out);
void gmt_track_set_poolinfo(gmt_poolinfo_fn fn);
gmt_poolinfo_fn gmt_track_poolinfo(void);
/* A device's graph memory (CUDA graphs' memory nodes) as the driver reports it, in the same
 * four figures; 0 or a negative errno. */
typedef int (*gmt_graphmeminfo_fn)(int32_t device, gmt_pool_info_t *out);
void gmt_track_set_graphmeminfo(gmt_graphmeminfo_fn fn);
gmt_graphmeminfo_fn gmt_track_graphmeminfo(void);

/* While off, the providers that call the driver (meminfo, poolinfo, graphmeminfo) are NULL and
 * devinfo reads the facts recorded earlier (gmt_track_devfacts_refresh): a report written for
 * a signal or a crash must not call the driver, which the signalled thread may be inside,
 * holding its locks (docs/security.md). Every thread sees it: one that settles a peak meanwhile
 * records the driver's bytes there as unknown. */
void gmt_track_driver_off(bool off);
bool gmt_track_driver_is_off(void);

/* Device facts for the report (name, UUID, total memory); 0 or a negative errno. */
typedef int (*gmt_devinfo_fn)(int32_t device, char *name, size_t name_len, char *uuid,
                              size_t uuid_len, uint64_t *total_bytes);
void gmt_track_set_devinfo(gmt_devinfo_fn fn);
/* The provider; in a recovered state, a reader of the facts the dead process recorded. */
gmt_devinfo_fn gmt_track_devinfo(void);
/* Records the facts of every device seen and not yet recorded, through the provider. Off the
 * hot path. Not `thorough`: only devices with a charged allocation (gmt_stats_slot_charged,
 * a few loads each) are looked at; thorough: every device seen, by summing its counters
 * across the threads' shards (1 MiB read for 64 unseen devices), as a report does. */
void gmt_track_devfacts_refresh(bool thorough);

/* What the capture layer tells the report about itself: the backends in use (a short name
 * each, e.g. "runtime-hooks", "driver-hooks", "cupti"), why, and warnings. Rare path: may
 * take the core's own lock; never call from a signal handler. Copies the strings. */
void gmt_track_note_backend(const char *name, const char *reason);
void gmt_track_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* gmt_track_warn without its log line: for a problem its caller has already said on standard
 * error (an error line), so that the report's warnings carry it too. */
void gmt_track_note_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define GMT_MAX_BACKENDS 4
#define GMT_MAX_WARNINGS 32
#define GMT_NOTE_LEN     256
int gmt_track_backends(char out[][GMT_NOTE_LEN], int max, char *reason, size_t reason_len);
int gmt_track_warnings(char out[][GMT_NOTE_LEN], int max);

const gmt_config_t *gmt_track_config(void);
gmt_table_t *gmt_track_table(void);
gmt_stacks_t *gmt_track_stacks(void);
uint64_t gmt_track_start_ns(void);

/* ---- process facts, module map, state files (docs/state.md) ---- */

/* What the report says about the process; filled by gmt_report_process_init. */
typedef struct gmt_proc_s {
    char argv[8192]; /* NUL-separated, as in /proc/self/cmdline */
    uint64_t argv_len;
    char hostname[256];
    int32_t rank;
    int32_t pid;
    int32_t ppid;
    int32_t world_size; /* ranks in the job, 0 when not known (a state file before it: 0) */
    uint64_t start_wall_ns;
    uint64_t start_mono_ns;
} gmt_proc_t;
gmt_proc_t *gmt_track_proc(void);

/* The modules loaded in the process (path, load base, extent, GNU build id), so that frames of
 * a recovered state can be named by module and offset. Written under a sequence counter. */
#define GMT_MAX_MODULES     512
#define GMT_MODULE_PATH_LEN 232
typedef struct gmt_module_s {
    uint64_t base, lo, hi; /* load bias; lowest and highest address of its segments */
    uint8_t build_id[20];
    uint32_t build_id_len;
    char path[GMT_MODULE_PATH_LEN];
} gmt_module_t;
typedef struct gmt_modmap_s {
    uint32_t seq; /* odd while being written */
    uint32_t count;
    uint64_t adds, subs; /* dl_iterate_phdr's counters when recorded */
    gmt_module_t mods[GMT_MAX_MODULES];
} gmt_modmap_t;
/* Re-records the module map if modules were loaded or unloaded since (dl_iterate_phdr's
 * adds/subs). Takes the loader's lock: never call from a hook or a signal handler. */
void gmt_track_modules_refresh(void);
/* Finishes a move of the live table the inserts left unfinished (gmt_table_settle), at most
 * GMT_TABLE_SETTLE_PER_CALL entries a call: the writer thread's, every 100 ms, so the table's
 * memory follows the live set also after the allocations stop. */
#define GMT_TABLE_SETTLE_PER_CALL 65536
void gmt_track_table_settle(void);
/* The module holding addr in the recorded map; false when none. */
bool gmt_track_module_of(uint64_t addr, const gmt_module_t **mod);

/* Now, for the report: the clock; in a recovered state, the last time the process was seen
 * alive: its last event or its writer thread's last wake (gmt_track_alive), whichever came
 * later. */
uint64_t gmt_track_now_ns(void);
/* The writer thread says the process is alive at now_ns (the events' clock), into the core
 * block, so the state file holds it. */
void gmt_track_alive(uint64_t now_ns);
/* Makes the core's accessors (table, stacks, stats, failures, peaks, notes, process facts,
 * configuration) read the state file at path. 0 or a negative errno with one line in err. */
int gmt_track_recover(const char *path, char *err, size_t errlen);
/* gmt_track_recover for a view (`top`): the live table's slots and the growth samples are not
 * read (the table's levels are checked, so a file is refused as gmt_track_recover refuses it),
 * so its memory and time follow the stacks, not the live allocations; gmt_track_table() and
 * gmt_track_growth_rows() are then NULL. */
int gmt_track_recover_view(const char *path, char *err, size_t errlen);
bool gmt_track_recovered(void);
/* How the state's owner ended: GMT_REGION_END_* (core/region.h), docs/state.md. */
unsigned gmt_track_end_mark(void);
void gmt_track_mark_end(unsigned how);
/* The state file in use ("" for none). */
const char *gmt_track_state_path(void);
/* Names the state file (gmt_region_place), at the process's first CUDA call: a process that
 * never calls CUDA (the shell or launcher that started the job, the helpers it starts) names
 * none, and says nothing about the path. A refusal (something there that is no state file,
 * the file of another process that still runs) is said in one line and noted in the warnings;
 * the state stays the process's own, in no file another process reads. */
void gmt_core_state_place(void);
/* The state file removed (gmt_region_discard): for a process that ends having traced nothing. */
void gmt_track_state_discard(void);
/* Before an exec: the state file's temporary removed where the file has no name yet
 * (gmt_region_before_exec). */
void gmt_track_state_before_exec(void);
/* Memory in the region for the growth sampler (output/growth.h), so a recovered state has its
 * samples. gmt_track_growth_state: a block of `bytes` in the core block, allocated (zeroed) on
 * the first call in a live process (NULL in a recovered state, whose block
 * gmt_track_growth_recovered reads). gmt_track_growth_rows: the rows' arena with at least `bytes`
 * committed (as much as could be; *usable gets the committed bytes); NULL when none. Only the
 * sampler thread calls these in a live process. */
void *gmt_track_growth_state(size_t bytes);
/* In a recovered state, the dead process's growth block (*state): 1 when it is there, 0 when
 * the process had none (it never sampled; also outside a recovered state), -EINVAL when the
 * file's is unusable: outside the region or not `bytes` long (a damaged file). */
int gmt_track_growth_recovered(size_t bytes, void **state);
int64_t *gmt_track_growth_rows(uint64_t bytes, uint64_t *usable);

#endif
