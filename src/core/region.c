/* region.c - see region.h. */
#define _GNU_SOURCE
#include "region.h"

#include "clock.h"
#include "fdutil.h"
#include "log.h"
#include "proc_self.h"
#include "spin.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define RLX      __ATOMIC_RELAXED
#define PAGE     4096ull
#define MIB      (1024ull * 1024ull)
#define GIB      (1024ull * MIB)
#define MIN_GROW (1 * MIB)

/* Address space set aside per arena. Only what is committed costs memory or disk. */
static const uint64_t arena_reserve[GMT_ARENA_COUNT] = {
    [GMT_ARENA_CORE] = 256 * MIB,
    [GMT_ARENA_STACK_INDEX] = 256 * MIB,
    [GMT_ARENA_STACK_ENTRIES] = GMT_ARENA_STACK_ENTRIES_BYTES,
    [GMT_ARENA_FRAMES] = 4 * GIB,
    [GMT_ARENA_TABLE] = 24 * GIB,
    [GMT_ARENA_GROWTH] = 4 * GIB,
};

static struct {
    uint64_t total;
    int fd;         /* -1: anonymous; used through region_fd() */
    gmt_fd_id_t id; /* the state file's identity */
    bool fd_lost;   /* the descriptor was taken by the program and the file not found again */
    bool recovered;
    bool ready;
    uint32_t owner;  /* a recovered file's owner (its uid) */
    uint32_t unread; /* a recovered file's arenas left unread (1 << id): outside every bound */
    /* The file has its name (path) since the process's first CUDA call (gmt_region_place);
     * until then it has none (O_TMPFILE) or its temporary's (tmp: where the file system has no
     * O_TMPFILE). A recovered file is placed. */
    bool placed;
    char path[1024];
    char tmp[1024 + 32];
    /* The path asked for (GPUMEMTRACE_STATE expanded, made absolute), kept when the file is
     * not made or its name refused: the line that says so names it (gmt_region_asked_path) */
    char asked[1024];
} R = {.fd = -1};

/* The state file's descriptor, checked (fdutil.h): -1 when the region is anonymous or the
 * descriptor is no longer the state file's (the program closed it and reused its number:
 * close_range then open, dup2) and the file could not be opened again by its name as the same
 * file. Then the file stays as it is (what it holds was mapped before and stays mapped), grows
 * no more (a growth refused is counted: dropped_commit) and one line says so. */
static int region_fd(void)
{
    if (R.fd < 0 || R.fd_lost) return -1;
    if (gmt_fd_is(R.fd, &R.id)) return R.fd;
    const char *name = R.placed ? R.path : R.tmp; /* "": an unnamed file cannot be found */
    /* O_NONBLOCK: a lease on a file put there (its owner's) does not hold us for the lease
     * break time; O_NOCTTY: a terminal put there does not become ours (both refused below) */
    int fd = name[0] ? open(name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
    if (fd >= 0 && gmt_fd_is(fd, &R.id)) {
        /* The old number is the program's now: never closed. The new one is moved high with
         * checks: the program may be closing and opening descriptors meanwhile. */
        int high = gmt_fd_move_high_checked(fd, &R.id);
        if (high >= 0) return R.fd = high;
    }
    /* A descriptor opened here that is not the state file is left open, once: another file at
     * the name, or a number the program closed and reused meanwhile, which cannot be told
     * apart (closing it could close the program's file). */
    R.fd_lost = true;
    if (!name[0])
        gmt_error("the program closed the state file's descriptor before the file was named "
                  "(at the first CUDA call): the state file grows no more and gets no name");
    else
        gmt_error("the program closed the state file's descriptor and %s is no longer that "
                  "file: the state file grows no more",
                  name);
    return -1;
}

static int32_t busy_owner; /* the running owner of the state file last refused (-EBUSY) */
/* ... where it runs, and (not here) how long before the refusal its file last gave a sign of
 * life, with its host name as the file says it (printable bytes only) */
static gmt_region_where_t busy_where;
static double busy_silent_s;
static char busy_host[65]; /* a host name's 64 bytes at most (HOST_NAME_MAX) */
/* Why gmt_region_place last refused the name (its return value alone was ambiguous: a rename's
 * EBUSY, a bind mount there, was said to be "the state file of pid 0, which still runs") */
static gmt_region_refusal_t refusal;

gmt_region_refusal_t gmt_region_place_refusal(void)
{
    return refusal;
}

int32_t gmt_region_busy_owner(void)
{
    return busy_owner;
}

gmt_region_where_t gmt_region_busy_where(double *silent_s, char *host, size_t len)
{
    if (silent_s) *silent_s = busy_silent_s;
    if (host && len) snprintf(host, len, "%s", busy_host);
    return busy_where;
}

/* What /proc/PID/stat says of a process: its state letter, its number of threads and its start
 * time (clock ticks since boot); any may be NULL. 0, or -1 where it cannot be read (no /proc,
 * no such process, a line not of that shape). */
static int proc_stat(int32_t pid, char *state, int *threads, unsigned long long *start_ticks)
{
    char path[48], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    /* fields 3, 20 and 22 after the name, which may hold anything, ')' included */
    const char *st = gmt_proc_stat_field(buf, 3), *nt = gmt_proc_stat_field(buf, 20),
               *sa = gmt_proc_stat_field(buf, 22);
    if (!st || !nt || !sa) return -1;
    char *end;
    long nthreads = strtol(nt, &end, 10);
    if (end == nt) return -1;
    unsigned long long start = strtoull(sa, &end, 10);
    if (end == sa) return -1;
    if (state) *state = *st;
    if (threads) *threads = (int)nthreads;
    if (start_ticks) *start_ticks = start;
    return 0;
}

bool gmt_region_owner_alive(int32_t pid, uint64_t start_ticks)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) return false;
    char state = 0;
    int threads = 0;
    unsigned long long start = 0;
    if (proc_stat(pid, &state, &threads, &start) != 0) return true; /* no /proc: kill's word */
    /* A zombie has ended; but /proc/PID/stat says 'Z' too of a process whose main thread ended
     * (pthread_exit) while its other threads run on: their count, the leader's included, tells
     * them apart (a zombie is 1). Taken for ended, such a running job lost its state file to a
     * second job given the same path, and `top` said "gone". */
    if (state == 'X' || (state == 'Z' && threads <= 1)) return false;
    return !start_ticks || start == start_ticks;
}

static bool same_build(const gmt_region_header_t *h);
static bool id_known(const uint8_t id[16]);
/* Where the core block keeps its owner's signs of life (core_init.c): the writer thread's
 * mark and the process's start on its monotonic and wall clocks. */
void gmt_track_state_life_offsets(size_t *alive, size_t *start_mono, size_t *start_wall);

/* Reads n bytes at region offset va of the state file fd whose header h is (validated): the
 * chunk table maps it into the file. 0, or -1 where a chunk does not hold it. */
static int read_va(int fd, const gmt_region_header_t *h, uint64_t va, void *to, size_t n)
{
    while (n) {
        uint32_t i = 0;
        while (i < h->nchunks &&
               !(va >= h->chunks[i].va_off && va - h->chunks[i].va_off < h->chunks[i].len))
            i++;
        if (i >= h->nchunks) return -1;
        uint64_t in = h->chunks[i].len - (va - h->chunks[i].va_off);
        size_t k = n < in ? n : (size_t)in;
        if (pread(fd, to, k, (off_t)(h->chunks[i].file_off + (va - h->chunks[i].va_off))) !=
            (ssize_t)k)
            return -1;
        va += k;
        to = (char *)to + k;
        n -= k;
    }
    return 0;
}

/* How long the owner of the state file fd (header h) has given no sign of life, in seconds
 * by this reader's clocks: its writer thread marks the file every second while the process
 * runs (alive_ns, on the owner's monotonic clock; marked too as the file is named). The mark
 * is placed on the wall clock by the owner's start (start_wall_ns + alive_ns - start_mono_ns),
 * which neither a time namespace (a CRIU-restored container's offset monotonic clock) nor
 * another host changes; on the owner's boot (same_boot: another pid namespace of this host)
 * the monotonic clock is asked too, and the more recent answer is taken (a wall clock stepped
 * since the owner's start). -1 where the file cannot say: another version or build, no mark,
 * or times that do not add up (a mark in the future by more than GMT_REGION_SILENT_S: another
 * host's clock that far off, or a damaged file, judged as before the mark was read).
 *
 * Only what is read is checked (the header's version and sizes, the chunk that holds each
 * field): the file is a running owner's, which may be growing it as it is read, and
 * validate()'s checks of every arena and chunk then failed on a torn header, so a running job
 * was taken for one that cannot say, and replaced. */
static double owner_silent_s(int fd, const gmt_region_header_t *h, bool same_boot)
{
    if (h->version != GMT_REGION_VERSION || !same_build(h) || h->nchunks == 0 ||
        h->nchunks > GMT_REGION_MAX_CHUNKS)
        return -1;
    size_t at_alive, at_mono, at_wall;
    gmt_track_state_life_offsets(&at_alive, &at_mono, &at_wall);
    uint64_t alive, mono, wall, core = h->core_off;
    if (core > UINT64_MAX / 2 || read_va(fd, h, core + at_alive, &alive, sizeof alive) != 0 ||
        read_va(fd, h, core + at_mono, &mono, sizeof mono) != 0 ||
        read_va(fd, h, core + at_wall, &wall, sizeof wall) != 0 || !alive)
        return -1;
    const uint64_t slack = (uint64_t)GMT_REGION_SILENT_S * 1000000000ull;
    double best = -1;
    uint64_t last, now = gmt_wall_ns();
    if (wall && alive >= mono && !__builtin_add_overflow(wall, alive - mono, &last) &&
        last <= now + slack)
        best = last > now ? 0 : (double)(now - last) / 1e9;
    now = gmt_now_ns();
    if (same_boot && alive <= now + slack) {
        double by_mono = alive > now ? 0 : (double)(now - alive) / 1e9;
        if (best < 0 || by_mono < best) best = by_mono;
    }
    return best;
}

/* The host name a file records, for a line: printable ASCII only (the file is anyone's). */
static void printable_host(const gmt_region_whose_t *w, char *out, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof w->hostname && w->hostname[i] && n + 1 < len; i++) {
        unsigned char c = (unsigned char)w->hostname[i];
        out[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[n] = 0;
}

/* Whether the state file fd holds (magic read) belongs to another process that still runs:
 * one not ended (clean_exit) and, on this host and in this pid namespace as far as the file
 * says (gmt_region_owner_where; only version 8 on records it), alive
 * (gmt_region_owner_alive: not a zombie, not another process given the dead owner's pid). A
 * second job given the same GPUMEMTRACE_STATE (a rank beside another), or a helper a job
 * started, renamed its file over the job's, whose state could no longer be recovered or
 * watched (the helper's exit even removed it). Our own pid is the image before an exec:
 * replaced, as before. A file is named at its owner's first CUDA call (gmt_region_place), so
 * the shell or launcher that started us, which never called CUDA, has none here.
 *
 * The pid of an owner on another host or in another pid namespace (two containers given one
 * path on a shared volume) names another process here, or none: such an owner runs while its
 * file has given a sign of life within GMT_REGION_SILENT_S (another host's:
 * GMT_REGION_SILENT_OTHER_HOST_S; owner_silent_s). Until session 51 its file was always
 * replaced, running or not. */
static int32_t running_owner(int fd)
{
    /* zeroed: a file shorter than its header says (anyone's) reads its missing fields as
     * absent, not as what this stack held */
    gmt_region_header_t h;
    memset(&h, 0, sizeof h);
    if (pread(fd, &h, sizeof h, 0) < (ssize_t)offsetof(gmt_region_header_t, dropped_commit))
        return 0;
    if (h.pid <= 0 || h.clean_exit != GMT_REGION_END_NONE) return 0;
    gmt_region_whose_t here, owner;
    memset(&owner, 0, sizeof owner);
    if (h.version >= 8 && h.header_bytes >= offsetof(gmt_region_header_t, whose) + sizeof h.whose) {
        owner = h.whose;
        owner.hostname[sizeof owner.hostname - 1] = 0;
    }
    gmt_region_whose_read(&here);
    gmt_region_where_t where = gmt_region_owner_where(&owner, &here);
    if (where != GMT_REGION_OWNER_HERE) {
        bool same_boot = where == GMT_REGION_OWNER_OTHER_PIDNS && id_known(owner.boot_id) &&
                         id_known(here.boot_id);
        double silent = owner_silent_s(fd, &h, same_boot);
        if (silent < 0 || silent >= gmt_region_silent_limit_s(where)) return 0;
        busy_where = where;
        busy_silent_s = silent;
        printable_host(&owner, busy_host, sizeof busy_host);
        return h.pid;
    }
    if (h.pid == (int32_t)getpid()) return 0;
    busy_where = GMT_REGION_OWNER_HERE;
    uint64_t start = 0;
    if (h.version >= 11 &&
        h.header_bytes >= offsetof(gmt_region_header_t, start_ticks) + sizeof h.start_ticks)
        start = h.start_ticks;
    return gmt_region_owner_alive(h.pid, start) ? h.pid : 0;
}

/* A return of state_target_ok, lock_target and open_judged besides 0 and -errno: the path
 * changed under the judgement (another process named its file there, or swapped something
 * in), and is judged again (gmt_region_place). Not an errno: an open's or flock's EAGAIN
 * (EWOULDBLOCK: a lease, a lock) was taken for it and retried. */
#define REJUDGE 1

/* Opens the regular file lstat found at path (st) with flags (O_RDONLY, or O_RDWR for NFS's
 * exclusive lock), without any driver's open running first: it is looked at through an O_PATH
 * descriptor, and reopened through /proc/self/fd only when it is still that regular file (a
 * FIFO or device swapped in after the lstat was opened, and then replaced by the rename). The
 * descriptor is moved above the program's (held across the lock's wait, it must not be a
 * number the program closes and reuses); *id is its identity. 0, REJUDGE, or -errno. */
static int open_judged(const char *path, const struct stat *st, int flags, int *fd, gmt_fd_id_t *id)
{
    *fd = -1;
    int at = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (at < 0) return errno == ENOENT ? REJUDGE : -errno;
    struct stat now;
    if (fstat(at, &now) != 0 || !S_ISREG(now.st_mode) || now.st_dev != st->st_dev ||
        now.st_ino != st->st_ino) {
        close(at);
        return REJUDGE; /* something else there now: judged again */
    }
    id->dev = now.st_dev;
    id->ino = now.st_ino;
    char proc[48];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", at);
    int f = open(proc, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (f < 0 && errno == ENOENT) /* no /proc: by name, checked below */
        f = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    int e = errno;
    if (gmt_fd_is(at, id)) close(at);
    if (f < 0) return e == ENOENT ? REJUDGE : -e;
    if (!gmt_fd_is(f, id)) {
        close(f); /* by name, another file: ours, just opened */
        return REJUDGE;
    }
    if ((f = gmt_fd_move_high_checked(f, id)) < 0) return REJUDGE;
    *fd = f;
    return 0;
}

static void close_ours(int fd, const gmt_fd_id_t *id)
{
    if (fd >= 0 && gmt_fd_is(fd, id)) close(fd);
}

/* Whether the state file may be written at path: nothing there, an empty regular file (made by
 * mktemp, say) or an earlier state file of a process that no longer runs. A device, a link, a
 * directory or another file is never replaced (a state file is renamed into place: as root,
 * GPUMEMTRACE_STATE=/dev/null replaced the device with a file, and an unrelated file's content
 * was lost): -EEXIST; nor the state file of a process that still runs: -EBUSY
 * (gmt_region_busy_owner names it). A file to replace is left open in *old (else -1), read
 * only (opened for writing, a file a watcher sees written, a lease broken, an overlay's layer
 * copied up), with *st its lstat, for gmt_region_place to lock (lock_target). */
static int state_target_ok(const char *path, bool *vacant, int *old, gmt_fd_id_t *old_id,
                           struct stat *st)
{
    *vacant = false;
    *old = -1;
    if (lstat(path, st) != 0) {
        *vacant = errno == ENOENT;
        return errno == ENOENT ? 0 : -errno;
    }
    if (!S_ISREG(st->st_mode)) {
        refusal = GMT_REGION_REFUSED_NOT_STATE;
        return -EEXIST;
    }
    int fd;
    int rc = open_judged(path, st, O_RDONLY, &fd, old_id);
    if (st->st_size == 0 && rc != REJUDGE) { /* replaced; locked where it can be read */
        *old = fd;
        return 0;
    }
    if (rc != 0) return rc;
    char magic[8];
    ssize_t n = pread(fd, magic, sizeof magic, 0);
    if (n != (ssize_t)sizeof magic || memcmp(magic, GMT_REGION_MAGIC, 8) != 0) {
        close_ours(fd, old_id);
        refusal = GMT_REGION_REFUSED_NOT_STATE;
        return -EEXIST;
    }
    busy_owner = running_owner(fd);
    if (busy_owner) {
        close_ours(fd, old_id);
        refusal = GMT_REGION_REFUSED_OWNER_RUNS;
        return -EBUSY;
    }
    *old = fd;
    return 0;
}

/* Takes the replacing process's lock on the file judged replaceable (*old, open; st its
 * lstat), and checks that path is still that file: two jobs started together on one path, both
 * finding the same dead owner's file, renamed their files over it in turn, and the first, its
 * file replaced, ran on believing it had one (it said `state file: PATH`; a SIGKILL then left
 * nothing to recover). The second now waits for the first's rename, finds path another file,
 * and judges that one (REJUDGE). The lock is the file's (flock), released as *old is closed,
 * by a kill too. A process that holds it for longer than GMT_REGION_LOCK_WAIT_MS by the clock
 * (none of ours does: anyone who can read the file can) gets -ETIMEDOUT, never retried. NFS
 * grants an exclusive lock only to a writer (EBADF to a reader): the file is opened for
 * writing then, *old becoming that descriptor. A file system that has no such locks, or
 * refuses this one (Lustre without -o flock: ENOSYS; CIFS), is replaced without, as before. */
static int lock_target(int *old, gmt_fd_id_t *id, const char *path, const struct stat *st)
{
    const uint64_t deadline = gmt_now_ns() + GMT_REGION_LOCK_WAIT_MS * 1000000ull;
    bool reopened = false;
    while (flock(*old, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR) continue;
        if (errno == EBADF && !reopened) {
            int rw;
            gmt_fd_id_t rw_id;
            reopened = true;
            int rc = open_judged(path, st, O_RDWR, &rw, &rw_id);
            if (rc == REJUDGE) return REJUDGE;
            if (rc != 0) break; /* not writable by us: replaced without the lock */
            close_ours(*old, id);
            *old = rw;
            *id = rw_id;
            continue;
        }
        if (errno != EWOULDBLOCK) break; /* no locks here (ENOLCK, ENOSYS, ...) */
        if (gmt_now_ns() >= deadline) {
            refusal = GMT_REGION_REFUSED_LOCKED;
            return -ETIMEDOUT;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    struct stat now;
    if (lstat(path, &now) != 0) return errno == ENOENT ? REJUDGE : -errno;
    return gmt_fd_is(*old, id) && id->dev == now.st_dev && id->ino == now.st_ino ? 0 : REJUDGE;
}

/* The temporary's name: PATH.tmp.<pid>.<8 random hex digits> (PATH's base name cut where the
 * whole would pass NAME_MAX: gmt_temp_beside). A name anyone could foresee (PATH.tmp.<pid>,
 * until session 43) let a link or file planted there refuse the state file (O_EXCL): a
 * denial, never a write through. */
static int temp_name(char *out, size_t len, const char *path)
{
    uint32_t r = (uint32_t)gmt_temp_random();
    char suffix[40];
    snprintf(suffix, sizeof suffix, ".tmp.%d.%08x", (int)getpid(), r);
    return gmt_temp_beside(out, len, path, suffix);
}

/* The temporary renamed to path. Where path held nothing when state_target_ok looked, nothing
 * may have appeared since: the rename does not replace (RENAME_NOREPLACE; where the file
 * system lacks it, link and unlink, which never replace either; where it has no hard links
 * either, a second look just before a plain rename), so a file made there in between is kept
 * and the state file refused (-EEXIST). */
static int rename_into_place(const char *tmp, const char *path, bool vacant)
{
    if (!vacant) return rename(tmp, path) == 0 ? 0 : -errno;
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -errno;
    if (link(tmp, path) == 0) {
        unlink(tmp);
        return 0;
    }
    if (errno != EPERM && errno != EOPNOTSUPP) return -errno;
    /* Neither (a file system with no hard links either): checked again, as close as can be. */
    struct stat st;
    if (lstat(path, &st) == 0) return -EEXIST;
    return rename(tmp, path) == 0 ? 0 : -errno;
}

static gmt_region_header_t *hdr(void)
{
    return (gmt_region_header_t *)(void *)gmt_region_base_;
}

/* Where the stack entries begin, in hot.h's line: every event's stack entry is found from it,
 * without the header's line (the arenas' offsets are fixed once the header is written). */
static void publish_bases(void)
{
    uint8_t *b = gmt_region_base_;
    gmt_hot.stack_entries = b ? b + hdr()->arenas[GMT_ARENA_STACK_ENTRIES].offset : NULL;
}

gmt_region_header_t *gmt_region_header(void)
{
    return gmt_region_base_ ? hdr() : NULL;
}

bool gmt_region_ready(void)
{
    return __atomic_load_n(&R.ready, __ATOMIC_ACQUIRE);
}

bool gmt_region_recovered(void)
{
    return R.recovered;
}

bool gmt_region_recovered_foreign(uint32_t *owner)
{
    if (!R.recovered || R.owner == (uint32_t)geteuid()) return false;
    if (owner) *owner = R.owner;
    return true;
}

const char *gmt_region_path(void)
{
    return R.placed ? R.path : "";
}

const char *gmt_region_asked_path(void)
{
    return R.asked;
}

bool gmt_region_file_backed(void)
{
    return R.fd >= 0 && !R.recovered;
}

/* Makes [off, off+len) of the region usable. Called under grow_lock (or before the region
 * is published). */
static int commit(uint64_t off, uint64_t len)
{
    if (R.fd < 0) {
        if (mprotect(gmt_region_base_ + off, len, PROT_READ | PROT_WRITE) != 0) return -ENOMEM;
        return 0;
    }
    int fd = region_fd();
    if (fd < 0) return -ENOMEM;
    gmt_region_header_t *h = hdr();
    /* The header lives in the first chunk: before it is mapped, nothing is recorded yet. */
    uint64_t file_off = off == 0 ? 0 : h->file_bytes;
    if (off != 0 && h->nchunks >= GMT_REGION_MAX_CHUNKS) return -ENOMEM;
    /* Allocate the blocks now: a page fault on a hole of a full disk would be a SIGBUS in the
     * application. fallocate also moves the end of file. */
    gmt_fsize_guard_t guard; /* past the file size limit: refused, never SIGXFSZ (fdutil.h) */
    gmt_fsize_guard_begin(&guard);
    int grown = fallocate(fd, 0, (off_t)file_off, (off_t)len) == 0 ||
                (errno == EOPNOTSUPP && ftruncate(fd, (off_t)(file_off + len)) == 0);
    int e = errno;
    gmt_fsize_guard_end(&guard);
    if (!grown) return e == EFBIG || e == ENOSPC || e == EDQUOT ? -e : -ENOMEM;
    if (mmap(gmt_region_base_ + off, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
             (off_t)file_off) == MAP_FAILED)
        return -ENOMEM;
    if (off == 0) return 0; /* gmt_region_create records it */
    uint32_t n = h->nchunks;
    h->chunks[n].va_off = off;
    h->chunks[n].file_off = file_off;
    h->chunks[n].len = len;
    h->file_bytes = file_off + len;
    __atomic_store_n(&h->nchunks, n + 1, __ATOMIC_RELEASE);
    return 0;
}

static void size_table(uint32_t *sizes);

static int expand_path(const char *pat, char *out, size_t len)
{
    size_t pos = 0;
    for (const char *p = pat; *p; p++) {
        char tmp[260];
        const char *add = tmp;
        if (p[0] == '%' && p[1] == 'p') {
            snprintf(tmp, sizeof tmp, "%d", (int)getpid());
            p++;
        } else if (p[0] == '%' && p[1] == 'h') {
            /* the host name as GPUMEMTRACE_OUTPUT's %h gives it (gmt_host_file_name);
             * containers sharing a folder, whose pids repeat (often 1 in each), keep their
             * files apart by it */
            char host[256];
            if (gethostname(host, sizeof host) != 0) host[0] = 0;
            host[sizeof host - 1] = 0;
            if (gmt_host_file_name(host, tmp, sizeof tmp) != 0) return -ENAMETOOLONG;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            tmp[0] = '%', tmp[1] = 0;
            p++;
        } else {
            tmp[0] = *p, tmp[1] = 0;
        }
        size_t n = strlen(add);
        if (pos + n >= len) return -ENAMETOOLONG;
        memcpy(out + pos, add, n);
        pos += n;
    }
    out[pos] = 0;
    return 0;
}

static bool no_tmpfile; /* gmt_region_test_without_tmpfile */

void gmt_region_test_without_tmpfile(bool on)
{
    no_tmpfile = on;
}

/* The state file's descriptor, made in PATH's directory without a name (O_TMPFILE: nothing
 * is left behind by a process killed before its first CUDA call, and nothing found there can
 * interfere), or, where the file system has no O_TMPFILE, as the temporary R.tmp (O_EXCL,
 * O_NOFOLLOW; a name taken is tried again with other digits, 16 times). Mode 0666 less the
 * umask. The file gets its name at the first CUDA call (gmt_region_place). */
static int open_unnamed(void)
{
    char dir[sizeof R.path];
    const char *base;
    if (gmt_path_split(R.path, dir, sizeof dir, &base) == -ENAMETOOLONG) return -ENAMETOOLONG;
    R.tmp[0] = 0;
    int fd =
        no_tmpfile ? (errno = EOPNOTSUPP, -1) : open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
    if (fd >= 0) return fd;
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) return -errno;
    for (int attempt = 0; attempt < 16; attempt++) {
        int rc = temp_name(R.tmp, sizeof R.tmp, R.path);
        if (rc != 0) {
            R.tmp[0] = 0;
            return rc;
        }
        fd = open(R.tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) break;
    }
    if (fd < 0) {
        int e = errno;
        R.tmp[0] = 0;
        return -e;
    }
    return fd;
}

/* The boot-clock ticks at which this process started (/proc/self/stat), 0 when unknown. */
static uint64_t own_start_ticks(void)
{
    unsigned long long start = 0;
    return proc_stat((int32_t)getpid(), NULL, NULL, &start) == 0 ? start : 0;
}

int gmt_region_create(const char *state_path)
{
    if (gmt_region_base_) return -EALREADY;
    uint64_t total = 0;
    for (int a = 0; a < GMT_ARENA_COUNT; a++)
        total += arena_reserve[a];
    R.fd = -1;
    R.path[0] = 0;
    R.tmp[0] = 0;
    R.asked[0] = 0;
    R.placed = false;
    if (state_path && *state_path) {
        if (expand_path(state_path, R.path, sizeof R.path) != 0) return -ENAMETOOLONG;
        /* Relative: against the working directory now (as GPUMEMTRACE_OUTPUT is): the file
         * is named later and, for a process that traced nothing, removed by its name, which
         * must not move with a program that changes directory (a helper shell's `cd` left its
         * file behind). A name that would not fit so is refused, as a pattern too long is. */
        if (!gmt_path_make_absolute(R.path, sizeof R.path)) {
            R.path[0] = 0;
            return -ENAMETOOLONG;
        }
        memcpy(R.asked, R.path, sizeof R.asked);
        int fd = open_unnamed();
        if (fd < 0) {
            R.path[0] = 0;
            return fd;
        }
        R.fd = gmt_fd_move_high(fd);
        R.fd_lost = false;
        if (!gmt_fd_id_take(R.fd, &R.id)) {
            int e = errno;
            close(R.fd);
            if (R.tmp[0]) unlink(R.tmp);
            R.fd = -1;
            R.path[0] = R.tmp[0] = 0;
            return -e;
        }
    }
    int err = -ENOMEM;
    void *mem = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED) goto fail;
    gmt_region_base_ = mem;
    R.total = total;
    err = commit(0, MIN_GROW); /* -EFBIG past the file size limit, say */
    if (err != 0) {
        munmap(mem, total);
        gmt_region_base_ = NULL;
        goto fail;
    }
    gmt_region_header_t *h = hdr();
    memset(h, 0, sizeof *h);
    uint64_t off = 0;
    for (int a = 0; a < GMT_ARENA_COUNT; a++) {
        h->arenas[a].offset = off;
        h->arenas[a].reserved = arena_reserve[a];
        off += arena_reserve[a];
    }
    h->arenas[GMT_ARENA_CORE].committed = MIN_GROW;
    if (R.fd >= 0) {
        h->chunks[0].va_off = 0;
        h->chunks[0].file_off = 0;
        h->chunks[0].len = MIN_GROW;
        h->nchunks = 1;
        h->file_bytes = MIN_GROW;
    }
    h->arenas[GMT_ARENA_CORE].used = (sizeof *h + 63) & ~63ull;
    h->version = GMT_REGION_VERSION;
    h->header_bytes = sizeof *h;
    size_table(h->sizes);
    h->total_reserved = total;
    h->pid = (int32_t)getpid();
    gmt_region_whose_read(&h->whose);
    memcpy(h->magic, GMT_REGION_MAGIC, 8);
    publish_bases();
    R.recovered = false;
    __atomic_store_n(&R.ready, true, __ATOMIC_RELEASE);
    return 0;
fail:
    if (R.fd >= 0) {
        close(R.fd);
        if (R.tmp[0]) unlink(R.tmp);
        R.fd = -1;
    }
    R.path[0] = R.tmp[0] = 0;
    return err;
}

/* Links the unnamed file to a temporary name beside PATH (tmp): by /proc/self/fd (any user),
 * else by the descriptor itself (AT_EMPTY_PATH: where /proc is missing, with
 * CAP_DAC_READ_SEARCH). A name taken (a link planted there) is tried again with other digits,
 * 16 times; linkat never follows or replaces what is there. */
static int link_unnamed(int fd, char *tmp, size_t len)
{
    char proc[48];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    int rc = -EEXIST;
    for (int attempt = 0; attempt < 16 && rc == -EEXIST; attempt++) {
        if ((rc = temp_name(tmp, len, R.path)) != 0) return rc;
        if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) == 0) return 0;
        rc = -errno;
        if (rc == -ENOENT && linkat(fd, "", AT_FDCWD, tmp, AT_EMPTY_PATH) == 0) return 0;
        if (rc == -ENOENT) rc = -errno;
    }
    return rc;
}

/* Removes name when it still refers to this process's file (lstat: a name replaced since, by a
 * link or another file, is not ours to remove). */
static bool unlink_ours(const char *name)
{
    struct stat there;
    return name[0] && lstat(name, &there) == 0 && S_ISREG(there.st_mode) &&
           R.id.dev == there.st_dev && R.id.ino == there.st_ino && unlink(name) == 0;
}

/* How many times gmt_region_place judges the path again after it changed under it. */
#define PLACE_ATTEMPTS 4

int gmt_region_place(void)
{
    if (R.placed || R.recovered || R.fd < 0 || !gmt_region_base_ || !R.path[0]) return 0;
    refusal = GMT_REGION_REFUSED_ERRNO;
    int fd = region_fd();
    int rc = REJUDGE;
    if (fd < 0) {
        refusal = GMT_REGION_REFUSED_FD_LOST;
        rc = -EBADF;
    }
    /* Judged again when the path changed between the judgement and the rename: another job
     * named its file there first (a file where there was none: renameat2's -EEXIST; or the
     * file judged replaceable is no longer there: lock_target), or something was swapped in.
     * Two ranks started together on one path: the second then finds the first's file, which
     * runs, and says so; before, it said the path "is not a state file", or replaced the
     * first's file. */
    for (int attempt = 0; rc == REJUDGE && attempt < PLACE_ATTEMPTS; attempt++) {
        bool vacant = false;
        int old = -1;
        gmt_fd_id_t old_id = {0, 0};
        struct stat st;
        rc = state_target_ok(R.path, &vacant, &old, &old_id, &st);
        if (rc == 0 && old >= 0) rc = lock_target(&old, &old_id, R.path, &st);
        /* read here, not as the library loads: the processes that never name a file (helpers,
         * launchers) skip it, and no reader sees the header before the file has its name */
        if (rc == 0) hdr()->start_ticks = own_start_ticks();
        char linked[sizeof R.tmp];
        const char *from = R.tmp;
        if (rc == 0 && !R.tmp[0]) {
            rc = link_unnamed(fd, linked, sizeof linked);
            from = linked;
        }
        if (rc == 0) {
            rc = rename_into_place(from, R.path, vacant);
            if (rc == -EEXIST && vacant) rc = REJUDGE; /* named by another meanwhile */
            /* a file bind-mounted there (a container given one file of the host) */
            if (rc == -EBUSY) refusal = GMT_REGION_REFUSED_MOUNT;
            if (rc != 0 && from == linked) unlink_ours(linked);
        }
        close_ours(old, &old_id); /* the lock with it */
    }
    if (rc == REJUDGE) {
        refusal = GMT_REGION_REFUSED_CHURN;
        rc = -ESTALE;
    }
    unlink_ours(R.tmp); /* named (gone already), or refused: the file stays the process's own */
    R.tmp[0] = 0;
    if (rc != 0) {
        R.path[0] = 0;
        return rc;
    }
    R.placed = true;
    return 0;
}

void gmt_region_before_exec(void)
{
    if (!R.placed) gmt_region_discard();
}

void gmt_region_discard(void)
{
    if (R.fd < 0 || R.recovered) return;
    char *name = R.placed ? R.path : R.tmp;
    if (unlink_ours(name)) name[0] = 0;
    R.placed = false;
}

void gmt_region_destroy(void)
{
    __atomic_store_n(&R.ready, false, __ATOMIC_RELEASE);
    if (gmt_region_base_) munmap(gmt_region_base_, R.total);
    gmt_region_base_ = NULL;
    publish_bases();
    if (R.fd >= 0 && gmt_fd_is(R.fd, &R.id)) close(R.fd); /* a number the program reused stays */
    R.fd = -1;
    R.fd_lost = false;
    R.path[0] = R.tmp[0] = 0;
    R.placed = false;
    R.recovered = false;
    R.unread = 0;
}

static int commit_to(gmt_region_header_t *h, gmt_arena_t *ar, uint64_t end)
{
    int rc = 0;
    gmt_spin_lock(&h->grow_lock);
    uint64_t c = __atomic_load_n(&ar->committed, RLX);
    if (end > c) {
        /* Grow by a quarter at least, so commits are logarithmic in the final size. */
        uint64_t want = c + (c / 4 > MIN_GROW ? c / 4 : MIN_GROW);
        if (want < end) want = end;
        want = (want + PAGE - 1) & ~(PAGE - 1);
        if (want > ar->reserved) want = ar->reserved;
        rc = end > want ? -ENOMEM : commit(ar->offset + c, want - c);
        if (rc == 0)
            __atomic_store_n(&ar->committed, want, __ATOMIC_RELEASE);
        else
            __atomic_fetch_add(&h->dropped_commit, 1, RLX);
    }
    gmt_spin_unlock(&h->grow_lock);
    return rc;
}

gmt_arena_t *gmt_region_arena(gmt_arena_id_t a)
{
    gmt_region_header_t *h = gmt_region_header();
    return h && (unsigned)a < GMT_ARENA_COUNT ? &h->arenas[a] : NULL;
}

int gmt_region_ensure(gmt_arena_id_t a, uint64_t end)
{
    gmt_region_header_t *h = hdr();
    if (!h || R.recovered || (unsigned)a >= GMT_ARENA_COUNT) return -EINVAL;
    gmt_arena_t *ar = &h->arenas[a];
    if (end <= __atomic_load_n(&ar->committed, __ATOMIC_ACQUIRE)) return 0;
    return commit_to(h, ar, end);
}

int gmt_region_alloc(gmt_arena_id_t a, uint64_t bytes, uint64_t align, uint64_t *off)
{
    gmt_region_header_t *h = hdr();
    if (!h || R.recovered || (unsigned)a >= GMT_ARENA_COUNT) return -EINVAL;
    gmt_arena_t *ar = &h->arenas[a];
    uint64_t cur = __atomic_load_n(&ar->used, RLX), start, end;
    do {
        start = (cur + align - 1) & ~(align - 1);
        end = start + bytes;
        if (end > ar->reserved || end < start) {
            __atomic_fetch_add(&h->dropped_commit, 1, RLX);
            return -ENOMEM;
        }
    } while (!__atomic_compare_exchange_n(&ar->used, &cur, end, 1, RLX, RLX));
    if (end > __atomic_load_n(&ar->committed, __ATOMIC_ACQUIRE)) {
        int rc = commit_to(h, ar, end);
        if (rc) return rc;
    }
    *off = ar->offset + start;
    return 0;
}

void gmt_region_release(uint64_t off, uint64_t bytes)
{
    uint64_t lo = (off + PAGE - 1) & ~(PAGE - 1), hi = (off + bytes) & ~(PAGE - 1);
    if (!gmt_region_base_ || R.recovered || hi <= lo) return;
    if (R.fd >= 0) {
        /* The file ranges behind [lo, hi): a hole each, the mapping stays. */
        int fd = region_fd();
        if (fd < 0) return; /* the pages stay: nothing is lost but their room */
        gmt_region_header_t *h = hdr();
        uint32_t n = __atomic_load_n(&h->nchunks, __ATOMIC_ACQUIRE);
        for (uint32_t i = 0; i < n; i++) {
            uint64_t a = h->chunks[i].va_off, e = a + h->chunks[i].len;
            uint64_t from = lo > a ? lo : a, to = hi < e ? hi : e;
            if (from < to)
                (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                                (off_t)(h->chunks[i].file_off + (from - a)), (off_t)(to - from));
        }
    } else
        (void)madvise(gmt_region_base_ + lo, hi - lo, MADV_DONTNEED);
}

int gmt_region_reuse(uint64_t off, uint64_t bytes)
{
    if (!gmt_region_base_ || R.recovered) return -EINVAL;
    if (R.fd < 0) return 0; /* anonymous pages come back zeroed on first touch */
    int fd = region_fd();
    if (fd < 0) return -ENOMEM;
    gmt_region_header_t *h = hdr();
    uint32_t n = __atomic_load_n(&h->nchunks, __ATOMIC_ACQUIRE);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t a = h->chunks[i].va_off, e = a + h->chunks[i].len;
        uint64_t from = off > a ? off : a, to = off + bytes < e ? off + bytes : e;
        if (from < to &&
            fallocate(fd, 0, (off_t)(h->chunks[i].file_off + (from - a)), (off_t)(to - from)) !=
                0 &&
            errno != EOPNOTSUPP)
            return -ENOMEM;
    }
    return 0;
}

void gmt_region_mark_end(uint32_t how)
{
    if (gmt_region_base_ && !R.recovered)
        __atomic_store_n(&hdr()->clean_exit, how, __ATOMIC_RELEASE);
}

/* ---- whose pid ------------------------------------------------------------------------------ */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The boot id's 16 bytes from its text ("xxxxxxxx-xxxx-...", hyphens skipped); zeros when it
 * is not one (no /proc, a kernel without it): then it is not compared. */
static void read_boot_id(uint8_t id[16])
{
    char text[64];
    memset(id, 0, 16);
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) return;
    uint8_t got[16];
    int nib = 0;
    for (ssize_t i = 0; i < n && nib < 32; i++) {
        if (text[i] == '-') continue;
        int d = hex_digit(text[i]);
        if (d < 0) return;
        if (nib % 2 == 0)
            got[nib / 2] = (uint8_t)(d << 4);
        else
            got[nib / 2] |= (uint8_t)d;
        nib++;
    }
    if (nib == 32) memcpy(id, got, 16);
}

void gmt_region_whose_read(gmt_region_whose_t *w)
{
    memset(w, 0, sizeof *w);
    /* The namespace the process itself is in (not pid_for_children): fork, unshare and setns
     * never change it, so what a file records stays true for its owner. */
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) == 0) {
        w->pidns_dev = (uint64_t)st.st_dev;
        w->pidns_ino = (uint64_t)st.st_ino;
    }
    read_boot_id(w->boot_id);
    if (gethostname(w->hostname, sizeof w->hostname) != 0) w->hostname[0] = 0;
    w->hostname[sizeof w->hostname - 1] = 0;
}

static bool id_known(const uint8_t id[16])
{
    for (int i = 0; i < 16; i++)
        if (id[i]) return true;
    return false;
}

gmt_region_where_t gmt_region_owner_where(const gmt_region_whose_t *owner,
                                          const gmt_region_whose_t *here)
{
    /* A file's name is whatever it holds: compared within its array, never past it. */
    size_t on = strnlen(owner->hostname, sizeof owner->hostname);
    size_t hn = strnlen(here->hostname, sizeof here->hostname);
    if (id_known(owner->boot_id) && id_known(here->boot_id)) {
        /* one boot of one kernel: the host whatever its name (a container's own name on the
         * host's pids is still this host) */
        if (memcmp(owner->boot_id, here->boot_id, 16) != 0) return GMT_REGION_OWNER_OTHER_HOST;
    } else if (on && hn && (on != hn || memcmp(owner->hostname, here->hostname, on) != 0)) {
        return GMT_REGION_OWNER_OTHER_HOST;
    }
    /* Namespaces of one host differ by inode; the first (init's) has the same inode on every
     * host, so this tells containers apart, never hosts. */
    if (owner->pidns_ino && here->pidns_ino &&
        (owner->pidns_ino != here->pidns_ino || owner->pidns_dev != here->pidns_dev))
        return GMT_REGION_OWNER_OTHER_PIDNS;
    return GMT_REGION_OWNER_HERE;
}

/* ---- readers ------------------------------------------------------------------------------ */

/* Sizes published by the stores: declared here, defined by their owners. */
size_t gmt_track_state_bytes(void);
size_t gmt_stats_state_bytes(void);
size_t gmt_table_header_bytes(void);
size_t gmt_table_slot_bytes(void);
size_t gmt_stacks_header_bytes(void);
size_t gmt_stacks_entry_bytes(void);

static void size_table(uint32_t *sizes)
{
    sizes[GMT_SIZE_HEADER] = sizeof(gmt_region_header_t);
    sizes[GMT_SIZE_CORE_STATE] = (uint32_t)gmt_track_state_bytes();
    sizes[GMT_SIZE_STATS_STATE] = (uint32_t)gmt_stats_state_bytes();
    sizes[GMT_SIZE_TABLE] = (uint32_t)gmt_table_header_bytes();
    sizes[GMT_SIZE_SLOT] = (uint32_t)gmt_table_slot_bytes();
    sizes[GMT_SIZE_STACKS] = (uint32_t)gmt_stacks_header_bytes();
    sizes[GMT_SIZE_STACK_ENTRY] = (uint32_t)gmt_stacks_entry_bytes();
}

/* Whether a header's structure sizes are this build's (its version checked apart). */
static bool same_build(const gmt_region_header_t *h)
{
    uint32_t want[GMT_SIZE_COUNT] = {0};
    size_table(want);
    return h->header_bytes == sizeof *h && memcmp(want, h->sizes, sizeof want) == 0;
}

/* The arena chunk i belongs to: the last whose offset is at or below the chunk's. */
static int chunk_arena(const gmt_region_header_t *h, uint32_t i)
{
    int a = 0;
    while (a < GMT_ARENA_COUNT - 1 && h->chunks[i].va_off >= h->arenas[a + 1].offset)
        a++;
    return a;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return -EINVAL;                                                                            \
    } while (0)

/* Checks a header read from a file of `size` bytes: version, sizes, arenas, and that the
 * chunks cover each arena's committed bytes exactly, in order, inside the file. */
static int validate(const gmt_region_header_t *h, uint64_t size, char *err, size_t errlen)
{
    if (memcmp(h->magic, GMT_REGION_MAGIC, 8) != 0)
        FAIL("not a gpumemtrace state file (bad magic)");
    if (h->version != GMT_REGION_VERSION)
        FAIL("state file version %u, this gpumemtrace reads version %u", h->version,
             GMT_REGION_VERSION);
    if (!same_build(h)) FAIL("state file written by a different build (structure sizes differ)");
    uint32_t want[GMT_SIZE_COUNT] = {0};
    size_table(want);
    uint64_t prev_end = 0;
    for (int a = 0; a < GMT_ARENA_COUNT; a++) {
        const gmt_arena_t *ar = &h->arenas[a];
        if (ar->offset != prev_end || ar->reserved > (1ull << 40) || ar->committed > ar->reserved)
            FAIL("corrupt state file: arena %d out of bounds", a);
        prev_end = ar->offset + ar->reserved;
    }
    if (h->total_reserved != prev_end) FAIL("corrupt state file: bad reservation size");
    if (h->nchunks == 0 || h->nchunks > GMT_REGION_MAX_CHUNKS)
        FAIL("corrupt state file: %u chunks", h->nchunks);
    uint64_t covered[GMT_ARENA_COUNT] = {0};
    for (uint32_t i = 0; i < h->nchunks; i++) {
        uint64_t va = h->chunks[i].va_off, fo = h->chunks[i].file_off, len = h->chunks[i].len;
        int a = chunk_arena(h, i);
        const gmt_arena_t *ar = &h->arenas[a];
        if (len == 0 || len % PAGE || va % PAGE || fo % PAGE || va != ar->offset + covered[a] ||
            len > ar->committed - covered[a])
            FAIL("corrupt state file: chunk %u out of place", i);
        if (fo > size || len > size - fo)
            FAIL("truncated state file: %llu bytes, chunk %u needs %llu", (unsigned long long)size,
                 i, (unsigned long long)(fo + len));
        covered[a] += len;
    }
    for (int a = 0; a < GMT_ARENA_COUNT; a++)
        if (covered[a] != h->arenas[a].committed)
            FAIL("corrupt state file: arena %d is not covered by its chunks", a);
    struct {
        uint64_t off;
        uint64_t bytes;
        const char *what;
    } blocks[] = {
        {h->core_off, want[GMT_SIZE_CORE_STATE], "core block"},
        {h->stats_off, want[GMT_SIZE_STATS_STATE], "stats block"},
        {h->table_off, want[GMT_SIZE_TABLE], "live table"},
        {h->stacks_off, want[GMT_SIZE_STACKS], "stack store"},
    };
    const gmt_arena_t *core = &h->arenas[GMT_ARENA_CORE];
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (blocks[i].off < sizeof *h || blocks[i].off % GMT_REGION_BLOCK_ALIGN != 0 ||
            blocks[i].bytes > core->committed || blocks[i].off > core->committed - blocks[i].bytes)
            FAIL("corrupt state file: %s out of bounds", blocks[i].what);
    return 0;
}

/* Bounds of what a recovered store may touch: [off, off+bytes) inside a committed arena (of
 * those read: an arena a recovery left unread holds nothing). */
bool gmt_region_contains(uint64_t off, uint64_t bytes)
{
    gmt_region_header_t *h = gmt_region_header();
    if (!h) return false;
    for (int a = 0; a < GMT_ARENA_COUNT; a++) {
        if (R.unread & (1u << a)) continue;
        const gmt_arena_t *ar = &h->arenas[a];
        if (off >= ar->offset && bytes <= ar->committed &&
            off - ar->offset <= ar->committed - bytes)
            return true;
    }
    return false;
}

/* Reads len bytes at file offset off: 0, -ENODATA where the file ends first, or -errno. */
static int read_plain(int fd, uint8_t *to, uint64_t len, uint64_t off)
{
    while (len) {
        size_t want = len < (1u << 30) ? (size_t)len : (1u << 30);
        ssize_t got = pread(fd, to, want, (off_t)off);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return -errno;
        if (got == 0) return -ENODATA;
        to += got;
        off += (uint64_t)got;
        len -= (uint64_t)got;
    }
    return 0;
}

/* read_plain into memory that holds zeros, but for the file's holes (SEEK_DATA, SEEK_HOLE):
 * they read as zeros, which `to` holds already, so a sparse file costs the reader its data
 * only, never its length (a header whose chunks cover a sparse file of tens of GiB made the
 * reader's memory as large: 3 GiB of resident zeros for a 6 MiB state file with a 3 GiB hole,
 * and a report --recover of a 30 GiB one was killed for memory). A file that ends inside a
 * hole skipped is truncated (-ENODATA), as when it ends first under a read. */
static int read_at(int fd, uint8_t *to, uint64_t len, uint64_t off)
{
    const uint64_t end = off + len;
    while (off < end) {
        off_t data = lseek(fd, (off_t)off, SEEK_DATA);
        if (data < 0 && errno != ENXIO) return read_plain(fd, to, end - off, off); /* no holes */
        /* ENXIO: nothing but hole from off (or off is past the end: checked below) */
        uint64_t from = data < 0 || (uint64_t)data > end ? end : (uint64_t)data;
        to += from - off;
        off = from;
        if (off == end) break;
        off_t hole = lseek(fd, (off_t)off, SEEK_HOLE);
        /* a hole at off (the file changed in between): one page read as it is now */
        uint64_t upto = hole < 0 || (uint64_t)hole <= off ? off + PAGE : (uint64_t)hole;
        if (upto > end) upto = end;
        int e = read_plain(fd, to, upto - off, off);
        if (e) return e;
        to += upto - off;
        off = upto;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) return -errno;
    return (uint64_t)sb.st_size < end ? -ENODATA : 0;
}

bool gmt_region_holds_block(gmt_arena_id_t a, uint64_t off, uint64_t bytes)
{
    gmt_region_header_t *h = gmt_region_header();
    if (!h || (unsigned)a >= GMT_ARENA_COUNT || (R.unread & (1u << a))) return false;
    const gmt_arena_t *ar = &h->arenas[a];
    return off % GMT_REGION_BLOCK_ALIGN == 0 && off >= ar->offset && bytes <= ar->committed &&
           off - ar->offset <= ar->committed - bytes;
}

int gmt_region_attach(const char *path, char *err, size_t errlen)
{
    return gmt_region_attach_arenas(path, GMT_REGION_ALL_ARENAS, err, errlen);
}

int gmt_region_attach_arenas(const char *path, uint32_t arenas, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO put at the path after the reader looked (`top` looks before each
     * view) is opened at once and refused below as not a regular file; opened blocking, it
     * hung the reader until a writer came. A regular file reads the same either way. */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        /* A job names its file at its first CUDA call: one killed before it, or that never
         * made one, leaves none (docs/state.md). */
        snprintf(err, errlen, "cannot open %s: %s%s", path, strerror(e),
                 e == ENOENT ? " (a traced process names its state file at its first CUDA call)"
                             : "");
        return -e;
    }
    struct stat sb;
    static gmt_region_header_t h; /* 12 KiB: not on the stack */
    int rc = -EINVAL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        goto out;
    }
    /* The magic first: a file that is no state file at all (a report given by mistake) is
     * told so whatever its size; only a file that starts as one and is too short for the
     * header is a truncated state file. A state file is renamed into place only once its
     * header is written, so an empty file never was one. */
    char magic[8];
    ssize_t got = pread(fd, magic, sizeof magic, 0);
    if (got < 0) {
        rc = -errno;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(-rc));
        goto out;
    }
    if (got == 0) {
        snprintf(err, errlen, "%s: empty file, not a gpumemtrace state file", path);
        goto out;
    }
    if (memcmp(magic, GMT_REGION_MAGIC, (size_t)got) != 0) {
        /* a report given where its state file goes (a JSON object): said, with its verb */
        size_t at = 0;
        while (at < (size_t)got && strchr(" \t\r\n", magic[at]) && magic[at])
            at++;
        snprintf(err, errlen, "%s: not a gpumemtrace state file (bad magic)%s", path,
                 at < (size_t)got && magic[at] == '{'
                     ? ": a JSON file, a report perhaps: 'gpumemtrace report FILE' reads one"
                     : "");
        goto out;
    }
    if ((uint64_t)sb.st_size < sizeof h || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        snprintf(err, errlen, "truncated state file %s: %lld bytes, no complete header", path,
                 (long long)sb.st_size);
        goto out;
    }
    rc = validate(&h, (uint64_t)sb.st_size, err, errlen);
    if (rc) goto out;
    /* Each chunk is read into memory of our own at its place: the report writer may settle
     * peaks or reset locks a killed owner held (none of it reaches the file), and whatever the
     * owner, or anyone, does to the file from now on is not seen. A mapping of the file saw
     * later writes, so that a field checked here could hold another value when used, and a
     * file truncated while it was read raised SIGBUS (19 recoveries of 300, of a file being
     * truncated and written back, died so). The rest of the reservation stays inaccessible,
     * and every store checks its offsets against what is committed. Only the arenas asked for
     * are read: the chunks of the others stay inaccessible too, and gmt_region_contains holds
     * that they contain nothing (`top` reads no live table: 97 of a 103 MiB file's MiB with a
     * million live allocations, which it copied for every view). */
    uint8_t *m =
        mmap(NULL, h.total_reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    rc = -ENOMEM;
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "cannot reserve address space for %s", path);
        goto out;
    }
    arenas |= 1u << GMT_ARENA_CORE; /* the stores' headers and the header itself */
    for (uint32_t i = 0; i < h.nchunks; i++) {
        if (!(arenas & (1u << chunk_arena(&h, i)))) continue;
        uint8_t *at = m + h.chunks[i].va_off;
        if (mmap(at, h.chunks[i].len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0) == MAP_FAILED) {
            snprintf(err, errlen, "cannot hold %s in memory: %s", path, strerror(errno));
            munmap(m, h.total_reserved);
            goto out;
        }
        int e = read_at(fd, at, h.chunks[i].len, h.chunks[i].file_off);
        if (e) {
            if (e == -ENODATA)
                snprintf(err, errlen, "truncated state file %s: it became shorter while read",
                         path);
            else
                snprintf(err, errlen, "cannot read %s: %s", path, strerror(-e));
            rc = e == -ENODATA ? -EINVAL : e;
            munmap(m, h.total_reserved);
            goto out;
        }
    }
    gmt_region_destroy();
    gmt_region_base_ = m;
    /* The header read with the chunks may differ from the validated copy if the owner still
     * runs: use the copy's view of the chunks and arenas (later growth is simply not seen). */
    memcpy(m, &h, sizeof h);
    publish_bases();
    R.total = h.total_reserved;
    R.recovered = true;
    R.owner = (uint32_t)sb.st_uid;
    R.unread = GMT_REGION_ALL_ARENAS & ~arenas;
    snprintf(R.path, sizeof R.path, "%s", path);
    R.placed = true;
    hdr()->grow_lock = 0;
    __atomic_store_n(&R.ready, true, __ATOMIC_RELEASE);
    rc = 0;
out:
    close(fd);
    return rc;
}
