/* growth.c - see growth.h. */
#include "growth.h"

#include "core/spin.h"
#include "core/track.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define RLX __ATOMIC_RELAXED

int gmt_growth_init(gmt_growth_t *g, uint32_t max_ids)
{
    memset(g, 0, sizeof *g);
    if (max_ids == 0) return -EINVAL;
    g->map_bytes = (size_t)max_ids * GMT_GROWTH_POINTS * sizeof(int64_t);
    void *p = mmap(NULL, g->map_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        g->map_bytes = 0;
        return -ENOMEM;
    }
    g->bytes = p;
    g->max_ids = max_ids;
    g->interval_ns = GMT_GROWTH_INTERVAL_NS;
    return 0;
}

void gmt_growth_destroy(gmt_growth_t *g)
{
    if (g->bytes) munmap(g->bytes, g->map_bytes);
    memset(g, 0, sizeof *g);
}

static int64_t *row(gmt_growth_t *g, uint32_t id)
{
    return g->bytes + (size_t)id * GMT_GROWTH_POINTS;
}

/* Keeps the odd points (so the newest stays) and doubles the interval. */
static void decimate(gmt_growth_t *g)
{
    int half = GMT_GROWTH_POINTS / 2;
    for (int i = 0; i < half; i++)
        g->t_ns[i] = g->t_ns[2 * i + 1];
    for (uint32_t id = 1; id < g->ids_seen; id++) {
        int64_t *r = row(g, id);
        for (int i = 0; i < half; i++)
            r[i] = r[2 * i + 1];
        for (int i = half; i < GMT_GROWTH_POINTS; i++)
            r[i] = 0;
    }
    g->n = half;
    g->interval_ns *= 2;
}

uint64_t gmt_growth_tick(gmt_growth_t *g, uint64_t now_ns, uint32_t nids, gmt_growth_live_fn fn,
                         void *ctx)
{
    if (!g->bytes) return g->interval_ns ? g->interval_ns : GMT_GROWTH_INTERVAL_NS;
    if (g->n > 0 && now_ns < g->next_ns) return g->next_ns - now_ns;
    if (nids > g->max_ids) nids = g->max_ids;
    gmt_spin_lock(&g->lock);
    if (g->n == GMT_GROWTH_POINTS) decimate(g);
    int k = g->n;
    g->t_ns[k] = now_ns;
    for (uint32_t id = 1; id < nids; id++) {
        int64_t b = 0;
        if (!fn(id, &b, ctx) || b < 0) b = 0;
        row(g, id)[k] = b;
    }
    if (nids > g->ids_seen) g->ids_seen = nids;
    g->n = k + 1;
    g->next_ns = now_ns + g->interval_ns;
    gmt_spin_unlock(&g->lock);
    return g->interval_ns;
}

uint64_t gmt_growth_warmup_end(const gmt_warmup_t *w, uint64_t start_ns, uint64_t now_ns)
{
    double v = w->value > 0 ? w->value : 0;
    double run = now_ns > start_ns ? (double)(now_ns - start_ns) : 0;
    double off = w->seconds ? v * 1e9 : v * run;
    if (off > run) off = run;
    return start_ns + (uint64_t)off;
}

/* Bounded wait for the lock: a report must never hang on the sampler (0.1 ms apart, ~50 ms in
 * all). */
static bool lock_briefly(int *lock)
{
    return gmt_spin_lock_within(lock, 500, 100 * 1000);
}

static void judge(const gmt_growth_t *g, uint32_t id, int first, uint64_t now_ns, int64_t now_b,
                  gmt_growth_suspect_t *s, bool *flagged)
{
    const int64_t *r = g->bytes + (size_t)id * GMT_GROWTH_POINTS;
    int np = 0;
    for (int i = first; i < g->n; i++) {
        s->t_ns[np] = g->t_ns[i];
        s->bytes[np++] = r[i];
    }
    s->t_ns[np] = now_ns;
    s->bytes[np++] = now_b;
    s->npoints = np;
    s->stack_id = id;
    s->live_bytes = now_b;
    /* saturated: a recovered state file's samples are the file's word (a damaged one held
     * INT64_MIN, and the plain difference overflowed) */
    if (__builtin_sub_overflow(s->bytes[np - 1], s->bytes[0], &s->growth_bytes))
        s->growth_bytes = s->bytes[np - 1] > s->bytes[0] ? INT64_MAX : INT64_MIN;
    int rises = 0;
    for (int i = 1; i < np; i++)
        if (s->bytes[i] > s->bytes[i - 1]) rises++;
    int steps = np - 1;
    *flagged = np >= 3 && s->growth_bytes > 0 && rises >= 2 && 2 * rises >= steps;
}

/* The first sample at or after the warm-up's end; the caller holds the lock. */
static int first_judged(const gmt_growth_t *g, uint64_t warmup_end_ns)
{
    int first = 0;
    while (first < g->n && g->t_ns[first] < warmup_end_ns)
        first++;
    return first;
}

int gmt_growth_points(gmt_growth_t *g, uint64_t warmup_end_ns)
{
    if (!g) return 1; /* the value now alone */
    if (!lock_briefly(&g->lock)) return -EBUSY;
    int points = g->n - first_judged(g, warmup_end_ns) + 1;
    gmt_spin_unlock(&g->lock);
    return points;
}

int gmt_growth_suspects(gmt_growth_t *g, uint64_t warmup_end_ns, uint64_t now_ns, uint32_t nids,
                        gmt_growth_live_fn fn, void *ctx, gmt_growth_suspect_t *out, int max,
                        int *total)
{
    if (total) *total = 0;
    if (!g || !g->bytes || max < 0) return 0;
    if (!lock_briefly(&g->lock)) return -EBUSY;
    int first = first_judged(g, warmup_end_ns);
    if (nids > g->ids_seen) nids = g->ids_seen; /* ids never sampled have no history */
    int n = 0, all = 0;
    gmt_growth_suspect_t cand;
    for (uint32_t id = 1; id < nids && first < g->n; id++) {
        int64_t now_b = 0;
        if (!fn(id, &now_b, ctx)) continue;
        bool flagged;
        judge(g, id, first, now_ns, now_b, &cand, &flagged);
        if (!flagged) continue;
        all++;
        /* Insert into out[0..n) sorted by growth, largest first; drop past max. */
        int pos = n;
        while (pos > 0 && out[pos - 1].growth_bytes < cand.growth_bytes)
            pos--;
        if (pos >= max) continue;
        int last = n < max ? n : max - 1;
        memmove(&out[pos + 1], &out[pos], (size_t)(last - pos) * sizeof *out);
        out[pos] = cand;
        if (n < max) n++;
    }
    gmt_spin_unlock(&g->lock);
    if (total) *total = all;
    return n;
}

/* ---- the process's sampler ----------------------------------------------------------------- */

/* The sampler's state and rows live in the region (core/track.h), so a state file holds the
 * samples and a recovered report has the same suspects (docs/state.md). */
#define ROW_BYTES ((uint64_t)GMT_GROWTH_POINTS * sizeof(int64_t))

static gmt_growth_t *proc_growth;
static int proc_ready; /* 0 not yet, 1 set up, -1 failed */

static bool stack_live(uint32_t id, int64_t *bytes, void *ctx)
{
    gmt_stacks_t *st = ctx;
    gmt_stack_entry_t *e = gmt_stacks_entry(st, id);
    if (!e || !__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE)) return false;
    uint8_t kind = gmt_stacks_tag_kind(e->tag);
    if (kind == GMT_KIND_VMM_RESERVE || kind == GMT_KIND_VMM_MAP) return false;
    *bytes = __atomic_load_n(&e->live_bytes, RLX);
    return true;
}

uint64_t gmt_growth_sample_process(uint64_t now_ns)
{
    if (!gmt_core_ready()) return GMT_GROWTH_INTERVAL_NS;
    gmt_stacks_t *st = gmt_track_stacks();
    int r = __atomic_load_n(&proc_ready, __ATOMIC_ACQUIRE);
    if (r < 0) return UINT64_MAX;
    if (r == 0) {
        gmt_growth_t *g = gmt_track_growth_state(sizeof *g); /* zeroed */
        uint64_t usable;
        int64_t *rows = g ? gmt_track_growth_rows(0, &usable) : NULL; /* the arena's start */
        if (!rows) {
            __atomic_store_n(&proc_ready, -1, __ATOMIC_RELEASE);
            return UINT64_MAX;
        }
        g->interval_ns = GMT_GROWTH_INTERVAL_NS;
        g->bytes = rows; /* never moves */
        proc_growth = g;
        __atomic_store_n(&proc_ready, 1, __ATOMIC_RELEASE);
    }
    gmt_growth_t *g = proc_growth;
    uint32_t nids = gmt_stacks_count(st) + 1;
    uint64_t usable = 0;
    int64_t *rows = gmt_track_growth_rows((uint64_t)nids * ROW_BYTES, &usable);
    uint64_t max = usable / ROW_BYTES;
    if (max > st->max_entries) max = st->max_entries;
    /* Only this thread writes max_ids; readers look at ids_seen, never more. */
    g->max_ids = rows ? (uint32_t)max : 0;
    if (!g->max_ids) return g->interval_ns;
    return gmt_growth_tick(g, now_ns, nids, stack_live, st);
}

const char *gmt_growth_status_name(gmt_growth_status_t s)
{
    switch (s) {
    case GMT_GROWTH_JUDGED:
        return "judged";
    case GMT_GROWTH_NO_SAMPLES:
        return "no_samples";
    case GMT_GROWTH_DAMAGED:
        return "damaged";
    case GMT_GROWTH_NOT_JUDGED:
        return "not_judged";
    case GMT_GROWTH_TOO_FEW:
        return "too_few_samples";
    }
    return "not_judged";
}

/* A recovered state: the dead process's sampler, checked against what the file holds. */
static gmt_growth_t *recovered_growth(gmt_growth_status_t *status)
{
    void *state = NULL;
    int rc = gmt_track_growth_recovered(sizeof(gmt_growth_t), &state);
    *status = rc == 0 ? GMT_GROWTH_NO_SAMPLES : GMT_GROWTH_DAMAGED;
    if (rc <= 0) return NULL; /* the process never sampled, or its block is unusable */
    gmt_growth_t *g = state;
    uint64_t usable = 0;
    int64_t *rows = gmt_track_growth_rows(0, &usable);
    if (!rows) return NULL;
    g->lock = 0; /* whatever the dead sampler held */
    g->bytes = rows;
    g->max_ids = (uint32_t)(usable / ROW_BYTES < UINT32_MAX ? usable / ROW_BYTES : UINT32_MAX);
    if (g->n < 0 || g->n > GMT_GROWTH_POINTS || g->ids_seen > g->max_ids) return NULL;
    *status = g->n == 0 ? GMT_GROWTH_NO_SAMPLES : GMT_GROWTH_JUDGED;
    return g->n == 0 ? NULL : g;
}

gmt_growth_t *gmt_growth_process(gmt_growth_status_t *status)
{
    if (gmt_track_recovered()) return recovered_growth(status);
    gmt_growth_t *g = __atomic_load_n(&proc_ready, __ATOMIC_ACQUIRE) == 1 ? proc_growth : NULL;
    *status = g ? GMT_GROWTH_JUDGED : GMT_GROWTH_NO_SAMPLES;
    return g;
}

void gmt_growth_reset_after_fork(void)
{
    /* The parent's samples were in its region; the child's stack store is new. */
    proc_growth = NULL;
    __atomic_store_n(&proc_ready, 0, __ATOMIC_RELEASE);
}
