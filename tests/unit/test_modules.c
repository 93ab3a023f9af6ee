/* test_modules.c - the module map (core/modules.c) read while it is re-recorded: every module
 * stays findable, as a recovery after a SIGKILL in the middle of a re-recording needs (the
 * state file keeps what was stored when the process died). A thread loads and unloads a
 * library and re-records the map each time; meanwhile this thread asks for the module of its
 * own code, which never moves. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/config.h"
#include "core/track.h"

static char dir[] = "/tmp/gmt-test-modules-XXXXXX";
static int done; /* atomic */
static int rounds;

static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++) {
        void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!h) break;
        gmt_track_modules_refresh();
        dlclose(h);
        gmt_track_modules_refresh();
        rounds++;
    }
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_map_whole_while_rerecorded(void **state)
{
    (void)state;
    void *probe = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!probe) skip(); /* no library to load and unload here */
    dlclose(probe);
    const gmt_module_t *m = NULL;
    uint64_t here = (uint64_t)(uintptr_t)&test_map_whole_while_rerecorded;
    assert_true(gmt_track_module_of(here, &m));
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, churn, NULL), 0);
    long asked = 0, missed = 0;
    while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        if (!gmt_track_module_of(here, &m)) missed++;
        asked++;
    }
    pthread_join(t, NULL);
    printf("%d re-recordings (twice each), %ld lookups, %ld missed\n", rounds, asked, missed);
    assert_true(rounds > 0);
    assert_int_equal(missed, 0);
    assert_true(gmt_track_module_of(here, &m));
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    gmt_config_t cfg;
    gmt_config_defaults(&cfg);
    snprintf(cfg.state, sizeof cfg.state, "%s/s.gmt", dir);
    if (gmt_core_init(&cfg) != 0) return 3;
    gmt_core_state_place(); /* the file named, as at the first CUDA call: the map is kept */
    gmt_track_modules_refresh();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_map_whole_while_rerecorded),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char path[sizeof dir + 8];
    snprintf(path, sizeof path, "%s/s.gmt", dir);
    unlink(path);
    rmdir(dir);
    return rc;
}
