/* config.h - the tracer's configuration, read once at start-up from GPUMEMTRACE_* variables.
 *
 * Every variable lives in one table in config.c (name, type, default, limits, help). A bad
 * value produces one stderr line naming the variable, the bad value and the value used
 * instead; the program always runs on. Functions return 0 or a negative errno.
 */
#ifndef GMT_CORE_CONFIG_H
#define GMT_CORE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_PATH_MAX        1024
#define GMT_MAX_STACK_DEPTH 128

typedef enum gmt_backend_e {
    GMT_BACKEND_AUTO = 0,
    GMT_BACKEND_CUPTI = 1,
    GMT_BACKEND_HOOKS = 2,
} gmt_backend_t;

/* GPUMEMTRACE_UNWIND: how native stacks are walked (core/unwind.h). */
typedef enum gmt_unwind_mode_e {
    GMT_UNWIND_NATIVE = 0,    /* gmt_unwind, unw_backtrace where it cannot be exact */
    GMT_UNWIND_LIBUNWIND = 1, /* unw_backtrace for every walk */
} gmt_unwind_mode_t;

/* GPUMEMTRACE_GROWTH_WARMUP: the start of the run that growth suspects ignore, either a
 * fraction of the run (0 <= value < 1) or seconds. */
typedef struct gmt_warmup_s {
    double value;
    bool seconds;
} gmt_warmup_t;

typedef struct gmt_config_s {
    char output[GMT_PATH_MAX];
    int stack_depth;
    bool python;
    int backend;         /* gmt_backend_t */
    int snapshot_signal; /* 0: none */
    bool oom_report;
    uint64_t min_bytes;
    int top;
    int log_level; /* gmt_log_level_t */
    char state[GMT_PATH_MAX];
    char suppressions[GMT_PATH_MAX];
    uint64_t max_live;   /* upper bound on tracked live allocations; 0: none */
    uint64_t max_stacks; /* upper bound on distinct call stacks; 0: none */
    bool follow_fork;
    bool follow_exec;
    int timeline_points;
    int oom_reports; /* out-of-memory reports at most; 0: none */
    bool fsync;      /* fsync each report before its rename */
    bool py_checked; /* every Python read through the kernel (diagnostics; in fsync's padding) */
    gmt_warmup_t growth_warmup;
    int unwind; /* gmt_unwind_mode_t */
} gmt_config_t;

typedef const char *(*gmt_getenv_fn)(const char *name);

/* Fill *cfg from the environment through getenv_fn (NULL: the process environment).
 * Returns the number of variables that had a bad value (each already reported). */
int gmt_config_load(gmt_config_t *cfg, gmt_getenv_fn getenv_fn);

/* The i-th line the last gmt_config_load said about a bad value (the first 8 kept), NULL past
 * the last: repeated in the report's capture.warnings, where the stderr line alone was lost
 * with a job's log (a GPUMEMTRACE_STATE over 1023 bytes left no trace in the report). */
const char *gmt_config_refused(int i);

/* A relative GPUMEMTRACE_SUPPRESSIONS made absolute against the working directory now (it is
 * read when a report is written, by then perhaps in another directory); left as it is when
 * the working directory cannot be read or the result would not fit. */
void gmt_config_fix_suppressions(gmt_config_t *cfg);

/* A variable of the process environment: secure_getenv(3), so nothing is taken from the
 * environment of a set-user-ID / set-group-ID program. Every variable the tracer reads goes
 * through here. */
const char *gmt_env(const char *name);

/* The process's rank from RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK (the first
 * that holds a number in [0, 2^30)); 0 when none does. getenv_fn NULL: gmt_env. */
int gmt_env_rank(gmt_getenv_fn getenv_fn);
/* How many ranks the job has, from the variable beside the one gmt_env_rank took (WORLD_SIZE,
 * OMPI_COMM_WORLD_SIZE, SLURM_NTASKS, PMI_SIZE): 0 when it is not set, not a number in
 * [1, 2^30), or not above the rank (no rank variable: 0). getenv_fn NULL: gmt_env. */
int gmt_env_world_size(gmt_getenv_fn getenv_fn);
/* Whether one of the variables gmt_env_rank reads names a rank (gmt_env_rank says 0 otherwise). */
bool gmt_env_has_rank(void);

/* Memory this host (or its cgroup) can give, in bytes: what MAX_LIVE / MAX_STACKS are
 * bounded by. gmt_config_set_host_memory overrides it (tests; 0: measure again). */
uint64_t gmt_host_memory(void);
void gmt_config_set_host_memory(uint64_t bytes);

/* Defaults only, no environment. */
void gmt_config_defaults(gmt_config_t *cfg);
/* A configuration read from a state file (recovery), which may hold any bytes: every string
 * ends inside its array, every bool is 0 or 1, and an enum outside its values takes its
 * default, so that reading or printing it (gmt_config_item) is defined. Numbers are left as
 * they are (the recovery bounds those it uses). */
void gmt_config_sanitize(gmt_config_t *cfg);

/* Iterate the effective configuration as (variable name, printable value) pairs, for the
 * report. Returns false when idx is past the end. */
bool gmt_config_item(const gmt_config_t *cfg, size_t idx, const char **name, char *value,
                     size_t value_len);

/* Parsers shared with the CLI; each returns 0 or -EINVAL. */
int gmt_parse_bool(const char *s, bool *out);
int gmt_parse_size(const char *s, uint64_t *out);
int gmt_parse_signal(const char *s, int *out);
/* "0.2" (fraction of the run, below 1), "30" or "30s" or "0.5s" (seconds), "20%". */
int gmt_parse_warmup(const char *s, gmt_warmup_t *out);
const char *gmt_signal_name(int sig);

#endif
