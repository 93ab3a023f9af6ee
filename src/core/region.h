/* region.h - one mapping that holds every store of the core (docs/state.md).
 *
 * The region is one contiguous reservation of address space, cut into arenas at fixed
 * offsets: the core block (counters, peaks, failures, pools, notes, process facts, the
 * configuration, the module map, timelines), the stack index, the stack entries, the frame
 * arena and the live table. Stores keep offsets, never pointers, so the same bytes can be
 * read by another process. An arena grows by committing more of its reservation: in anonymous
 * memory an mprotect, in a state file (GPUMEMTRACE_STATE) an fallocate that makes the file
 * longer and a mapping of the new chunk at its place (recorded in the header). Growth that the host
 * refuses (no memory, disk full) fails with -ENOMEM and is counted in the header; it never raises
 * SIGBUS in the application.
 *
 * A state file starts with gmt_region_header_t: magic "GMTSTATE", version, the sizes of the
 * structures it holds, the arenas' offsets and extents, the owner's pid and a clean-exit flag,
 * and what the pid is a pid of (the owner's host and pid namespace).
 * gmt_region_attach reads such a file into memory of its own (never written back, and blind to
 * what happens to the file after), checks every offset against the file's size and makes the
 * core's accessors point into it, so the report writer reads a dead process's state through
 * the same code as a live one's.
 *
 * Functions return 0 or a negative errno.
 */
#ifndef GMT_CORE_REGION_H
#define GMT_CORE_REGION_H

#include "hot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_REGION_MAGIC      "GMTSTATE"
#define GMT_REGION_VERSION    11
#define GMT_REGION_MAX_CHUNKS 512

typedef enum gmt_arena_id_e {
    GMT_ARENA_CORE = 0,      /* fixed-size blocks of every module */
    GMT_ARENA_STACK_INDEX,   /* the stack store's hash index levels */
    GMT_ARENA_STACK_ENTRIES, /* stack entries, in chunks */
    GMT_ARENA_FRAMES,        /* the frame arena, in chunks */
    GMT_ARENA_TABLE,         /* live table levels (the largest) */
    GMT_ARENA_GROWTH,        /* the growth sampler's rows, indexed by stack id */
    GMT_ARENA_COUNT
} gmt_arena_id_t;

/* Address space of the stack entries' arena: it bounds the stack ids (an id is an entry's
 * index), which the live table keeps in 25 bits (table.h; asserted in track.c). */
#define GMT_ARENA_STACK_ENTRIES_BYTES (2ull << 30)

typedef struct gmt_arena_s {
    uint64_t offset;    /* from the start of the region */
    uint64_t reserved;  /* bytes of address space set aside */
    uint64_t committed; /* atomic: bytes usable (file: allocated on disk) */
    uint64_t used;      /* atomic: bytes handed out */
} gmt_arena_t;

/* Sizes of the structures a reader must agree on; a mismatch is a version error. */
enum {
    GMT_SIZE_HEADER = 0,
    GMT_SIZE_CORE_STATE,
    GMT_SIZE_STATS_STATE,
    GMT_SIZE_TABLE,
    GMT_SIZE_SLOT,
    GMT_SIZE_STACKS,
    GMT_SIZE_STACK_ENTRY,
    GMT_SIZE_COUNT = 8
};

/* What the owner's pid is a pid of: its host (the boot, the name) and its pid namespace, read
 * once as the file is laid out. A reader on another host or in another pid namespace (a
 * shared file system, a container) finds another process or none under that pid, so it must
 * not judge the owner by it (docs/state.md, "Whose pid"). A field not known is zero ("" for
 * the name). */
typedef struct gmt_region_whose_s {
    uint64_t pidns_dev, pidns_ino; /* stat() of /proc/self/ns/pid */
    uint8_t boot_id[16];           /* /proc/sys/kernel/random/boot_id, the UUID's 16 bytes */
    char hostname[256];            /* gethostname() */
} gmt_region_whose_t;

typedef struct gmt_region_header_s {
    char magic[8]; /* "GMTSTATE" */
    uint32_t version;
    uint32_t header_bytes;
    uint32_t sizes[GMT_SIZE_COUNT];
    uint64_t total_reserved;
    int32_t pid;
    uint32_t clean_exit;     /* GMT_REGION_END_*: how the owner's image ended, if it said */
    uint64_t dropped_commit; /* atomic: growth the host refused */
    uint64_t core_off;       /* the core block (track.c) */
    uint64_t stats_off;      /* the stats block (stats.c) */
    uint64_t table_off;      /* the live table's header */
    uint64_t stacks_off;     /* the stack store's header */
    int grow_lock;
    uint32_t nchunks; /* atomic: chunks of the file mapped so far */
    uint64_t file_bytes;
    gmt_arena_t arenas[GMT_ARENA_COUNT];
    /* A state file is a sequence of chunks, each mapped at its place in the reservation: the
     * file stays as long as what is committed, whatever the arenas' offsets. */
    struct {
        uint64_t va_off, file_off, len;
    } chunks[GMT_REGION_MAX_CHUNKS];
    gmt_region_whose_t whose; /* the owner's host and pid namespace (version 8 on) */
    /* The owner's start on the boot clock, in clock ticks (/proc/PID/stat's 22nd field; 0 when
     * unknown): a process found under its pid that started at another time is another one,
     * given the pid of an owner that died (version 11 on) */
    uint64_t start_ticks;
} gmt_region_header_t;

/* Creates the region: anonymous memory when state_path is NULL or empty, else a file in that
 * path's directory ("%p" in the path becomes the pid; a relative path is made absolute now),
 * without a name (O_TMPFILE; where the file system has none, a temporary file made with
 * O_EXCL|O_NOFOLLOW), mode from the umask. gmt_region_place names it. */
int gmt_region_create(const char *state_path);
/* Names the state file (the process's first CUDA call): its temporary is renamed to the path,
 * which must hold nothing, an empty regular file or the state file of a process that no longer
 * runs. -EEXIST: something there that is no state file; -EBUSY: the state file of another
 * process that still runs (gmt_region_busy_owner); another -errno where the name cannot be
 * made. Refused, the file stays the process's own, nameless: the state is kept, in no file
 * another process can read. 0 without a file, or named already. */
int gmt_region_place(void);
/* Why gmt_region_place last refused the name (its return value is the errno where one says). */
typedef enum gmt_region_refusal_e {
    GMT_REGION_REFUSED_ERRNO = 0,  /* the name could not be made: the errno says why */
    GMT_REGION_REFUSED_NOT_STATE,  /* something there that is no state file (-EEXIST) */
    GMT_REGION_REFUSED_OWNER_RUNS, /* a running process's state file (-EBUSY) */
    GMT_REGION_REFUSED_CHURN,      /* the path changed each time it was about to be named */
    GMT_REGION_REFUSED_LOCKED,     /* another process held the file's lock (-ETIMEDOUT) */
    GMT_REGION_REFUSED_FD_LOST,    /* the program closed the descriptor first (-EBADF) */
    GMT_REGION_REFUSED_MOUNT       /* the path is a mount point: no rename replaces it (-EBUSY) */
} gmt_region_refusal_t;
gmt_region_refusal_t gmt_region_place_refusal(void);
/* The pid of the process still running whose state file gmt_region_place refused to replace
 * (it returned -EBUSY). */
int32_t gmt_region_busy_owner(void);
/* Whether pid is a process that runs here, not a zombie (one whose main thread ended while
 * others run is no zombie), and (start_ticks not 0) the one that started at start_ticks (a
 * state file header's): a later process given a dead owner's pid is another one. Without
 * /proc, kill(pid, 0)'s word. */
bool gmt_region_owner_alive(int32_t pid, uint64_t start_ticks);
/* Unmaps the region (fork child, tests). A state file is left as it is. */
void gmt_region_destroy(void);
bool gmt_region_ready(void);
/* True when the region was attached from a file rather than created by this process. */
bool gmt_region_recovered(void);
/* True when the region was attached from a file that another user owns (*owner: its uid): a
 * path its process recorded (the suppressions file) is that user's choice, not this one's. */
bool gmt_region_recovered_foreign(uint32_t *owner);
/* The state file in use: "" when anonymous, or not named (yet, or refused: gmt_region_place). */
const char *gmt_region_path(void);
/* The path the state file was asked for (%p and %h expanded, made absolute) by the last
 * gmt_region_create, kept when the file could not be made or its name was refused, for the
 * line that says so: "" for an anonymous region or a pattern that could not be expanded. */
const char *gmt_region_asked_path(void);
/* Whether the region is this process's file, named or not. */
bool gmt_region_file_backed(void);
/* Tests: gmt_region_create takes the way of a file system without O_TMPFILE (a temporary
 * file named at once) while on. */
void gmt_region_test_without_tmpfile(bool on);
/* Removes this process's state file (not a recovered one) when its name still refers to the
 * file this process made: for a process that ends having traced nothing, so that the helpers
 * a traced job starts (a shell, a compiler) leave no file behind. The mapping stays. */
void gmt_region_discard(void);
/* Before an exec: a file not named yet loses its temporary name (a file system without
 * O_TMPFILE), as the image that exec's names no file and its exit handlers never run (an
 * O_TMPFILE file goes with its descriptor). A named file stays, for the image after it. */
void gmt_region_before_exec(void);

gmt_region_header_t *gmt_region_header(void);

/* Hands out `bytes` (rounded to `align`, a power of two) of arena a, committing more of its
 * reservation when needed. Lock-free unless it must commit (then a short spin lock of the
 * region's own). -ENOMEM when the reservation is spent or the host refuses. */
int gmt_region_alloc(gmt_arena_id_t a, uint64_t bytes, uint64_t align, uint64_t *off);
/* Makes the first end bytes of arena a usable (for stores indexed by position). */
int gmt_region_ensure(gmt_arena_id_t a, uint64_t end);
/* True when [off, off+bytes) lies inside the committed part of one arena. */
bool gmt_region_contains(uint64_t off, uint64_t bytes);
/* Blocks of the core arena and the stack index's levels are handed out on this alignment
 * (gmt_region_alloc's align): one read from a state file elsewhere is damage (a misaligned
 * structure is undefined behaviour to read), refused like one outside the file. */
#define GMT_REGION_BLOCK_ALIGN 64
/* [off, off+bytes) inside the committed part of arena a, the arena read (an arena a recovery
 * left unread holds nothing), and off on GMT_REGION_BLOCK_ALIGN. A recovered store's block is
 * checked against the arena it is allocated in, not any: a block placed in another arena is
 * damage whichever arenas a reader reads (`report --recover` reads the live table's, `top`
 * does not, and both refuse a stack index placed there). */
bool gmt_region_holds_block(gmt_arena_id_t a, uint64_t off, uint64_t bytes);
/* The arena's descriptor (offset, committed...). */
gmt_arena_t *gmt_region_arena(gmt_arena_id_t a);
/* Gives the pages of [off, off+bytes) back to the host (contents become zero). */
void gmt_region_release(uint64_t off, uint64_t bytes);
/* Before released pages are used again: a state file allocates their blocks again (so a full
 * disk is an error here, not a SIGBUS later). 0 or -ENOMEM. */
int gmt_region_reuse(uint64_t off, uint64_t bytes);

#define gmt_region_base_ (gmt_hot.region_base) /* region.c writes it */
/* Pointer to the region's byte at off. */
#define GMT_AT(type, off) ((type *)(void *)(gmt_region_base_ + (off)))

/* How the owner's image ended (the header's clean_exit): nothing said (killed, or running),
 * its exit report written, or its report written before an exec (0 again if the exec failed). */
#define GMT_REGION_END_NONE 0u
#define GMT_REGION_END_EXIT 1u
#define GMT_REGION_END_EXEC 2u
void gmt_region_mark_end(uint32_t how);

/* Reads this process's host and pid namespace into *w, as a file's header records its
 * owner's (no stdio, no allocation: it runs as the tracer starts). */
void gmt_region_whose_read(gmt_region_whose_t *w);

/* Whether a state file's owner pid names a process here: HERE when every field known on both
 * sides agrees (the boot id, else the host name; and the pid namespace), nothing known
 * included (a pid is then the only evidence, as before the fields existed); OTHER_HOST when
 * the boot ids differ (another host, or this one before a restart) or, where one is not
 * known, the host names; OTHER_PIDNS when the host is this one and the pid namespace is not. */
typedef enum gmt_region_where_e {
    GMT_REGION_OWNER_HERE = 0,
    GMT_REGION_OWNER_OTHER_HOST,
    GMT_REGION_OWNER_OTHER_PIDNS
} gmt_region_where_t;
gmt_region_where_t gmt_region_owner_where(const gmt_region_whose_t *owner,
                                          const gmt_region_whose_t *here);
/* An owner on another host or in another pid namespace, which no reader can judge by its pid,
 * runs as far as its file says while it has given a sign of life within this many seconds:
 * its writer thread marks the file every second while it runs (docs/state.md, "Whose pid"). */
#define GMT_REGION_SILENT_S 30
/* ... and one on another host, whose mark reaches this host as its pages are written back to
 * the shared file system (NFS: about 30 s), this long */
#define GMT_REGION_SILENT_OTHER_HOST_S 120
/* The window for an owner that runs where (GMT_REGION_SILENT_S, or another host's). */
static inline double gmt_region_silent_limit_s(gmt_region_where_t where)
{
    return where == GMT_REGION_OWNER_OTHER_HOST ? GMT_REGION_SILENT_OTHER_HOST_S
                                                : GMT_REGION_SILENT_S;
}
/* How long gmt_region_place waits for another process's lock on a file it would replace (well
 * under the start-up's 2 s, past which the program's other threads' first calls go untraced). */
#define GMT_REGION_LOCK_WAIT_MS 500
/* Where the owner of the state file gmt_region_place last refused (-EBUSY) runs; not here:
 * *silent_s, how long before the refusal its file last gave a sign of life, and its host name
 * as the file says it (printable ASCII, cut to len). */
gmt_region_where_t gmt_region_busy_where(double *silent_s, char *host, size_t len);

/* Reads a state file into memory of this process, each chunk at its place, and validates it:
 * the bytes checked are the bytes used, whatever the file's owner writes or truncates meanwhile.
 * On error returns a negative errno and writes one line saying why into err. Replaces any
 * region of this process. */
int gmt_region_attach(const char *path, char *err, size_t errlen);
/* gmt_region_attach reading only the chunks of the arenas in the mask `arenas` (1 << id; the
 * core arena always, it holds the header and the stores' headers): the others are checked as
 * the header places them, but not read, and held empty (gmt_region_contains refuses them; a
 * touch of their place faults). For a reader that needs part of the state (`top`). */
#define GMT_REGION_ALL_ARENAS ((1u << GMT_ARENA_COUNT) - 1)
int gmt_region_attach_arenas(const char *path, uint32_t arenas, char *err, size_t errlen);

#endif
