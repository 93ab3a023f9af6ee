/* fuzz_config.c - libFuzzer target for the configuration parser (src/core/config.c).
 *
 * The input is split at NUL bytes into values given, in order, to the GPUMEMTRACE_* variables
 * and the rank variables through a fake getenv; every parser is also fed each value directly.
 * Whatever the input, the configuration that comes out must be inside its bounds: a value out
 * of them aborts (a finding).
 */
#include "core/config.h"

#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 32

static char buf[65536 + 1];
static const char *values[MAX_VALUES];
static int nvalues;

/* Variable i of the table gets value i; the rank variables take values from the end. */
static const char *fake_getenv(const char *name)
{
    static const char *const names[] = {
        "GPUMEMTRACE_OUTPUT",
        "GPUMEMTRACE_STACK_DEPTH",
        "GPUMEMTRACE_PYTHON",
        "GPUMEMTRACE_BACKEND",
        "GPUMEMTRACE_SNAPSHOT_SIGNAL",
        "GPUMEMTRACE_OOM_REPORT",
        "GPUMEMTRACE_MIN_BYTES",
        "GPUMEMTRACE_TOP",
        "GPUMEMTRACE_LOG",
        "GPUMEMTRACE_STATE",
        "GPUMEMTRACE_SUPPRESSIONS",
        "GPUMEMTRACE_MAX_LIVE",
        "GPUMEMTRACE_MAX_STACKS",
        "GPUMEMTRACE_FOLLOW_FORK",
        "GPUMEMTRACE_FOLLOW_EXEC",
        "GPUMEMTRACE_TIMELINE_POINTS",
        "GPUMEMTRACE_OOM_REPORTS",
        "GPUMEMTRACE_FSYNC",
        "GPUMEMTRACE_GROWTH_WARMUP",
        "RANK",
        "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID",
        "PMI_RANK",
        /* after the rank variables, so that existing corpus entries keep their meaning */
        "GPUMEMTRACE_UNWIND",
        "GPUMEMTRACE_PY_CHECKED",
        "WORLD_SIZE",
        "OMPI_COMM_WORLD_SIZE",
        "SLURM_NTASKS",
        "PMI_SIZE",
    };
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(names[i], name) == 0) return i < nvalues ? values[i] : NULL;
    return NULL;
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) abort();                                                                         \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > sizeof buf - 1) size = sizeof buf - 1;
    memcpy(buf, data, size);
    buf[size] = 0;
    nvalues = 0;
    for (size_t pos = 0; pos <= size && nvalues < MAX_VALUES;) {
        values[nvalues++] = buf + pos;
        pos += strlen(buf + pos) + 1;
    }
    gmt_config_t c;
    int bad = gmt_config_load(&c, fake_getenv);
    CHECK(bad >= 0 && bad <= nvalues);
    CHECK(strlen(c.output) > 0 && strlen(c.output) < GMT_PATH_MAX);
    CHECK(strlen(c.state) < GMT_PATH_MAX && strlen(c.suppressions) < GMT_PATH_MAX);
    CHECK(c.stack_depth >= 0 && c.stack_depth <= GMT_MAX_STACK_DEPTH);
    CHECK(c.backend >= 0 && c.backend <= 2);
    CHECK(c.snapshot_signal == 0 ||
          (c.snapshot_signal > 0 && c.snapshot_signal <= SIGRTMAX && c.snapshot_signal != SIGKILL &&
           c.snapshot_signal != SIGTERM && c.snapshot_signal != SIGSEGV));
    CHECK(c.top >= 1 && c.top <= 100000);
    CHECK(c.log_level >= 0 && c.log_level <= 2);
    CHECK(c.max_live <= (1ull << 36));
    CHECK(c.max_stacks <= (1ull << 28));
    CHECK(c.timeline_points >= 16 && c.timeline_points <= 65536);
    CHECK(c.oom_reports >= 0 && c.oom_reports <= 100000);
    CHECK(c.growth_warmup.value >= 0 && c.growth_warmup.value == c.growth_warmup.value);
    CHECK(c.unwind >= 0 && c.unwind <= 1);
    int rank = gmt_env_rank(fake_getenv);
    CHECK(rank >= 0 && rank < (1 << 30));
    int world = gmt_env_world_size(fake_getenv);
    CHECK(world == 0 || (world > rank && world < (1 << 30)));
    char value[GMT_PATH_MAX + 64];
    const char *name;
    for (size_t i = 0; gmt_config_item(&c, i, &name, value, sizeof value); i++)
        CHECK(name && strlen(value) < sizeof value);
    for (int i = 0; i < nvalues; i++) {
        uint64_t v = 77;
        bool b = false;
        int sig = -1;
        if (gmt_parse_size(values[i], &v) != 0) CHECK(v == 77);
        if (gmt_parse_bool(values[i], &b) == 0) CHECK(b == true || b == false);
        if (gmt_parse_signal(values[i], &sig) == 0)
            CHECK(sig == 0 || (sig > 0 && sig <= SIGRTMAX));
        else
            CHECK(sig == -1);
    }
    return 0;
}
