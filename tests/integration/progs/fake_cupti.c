/* fake_cupti.c - a shared object that says on standard error that it was loaded, and nothing
 * else: put where only a candidate path cut short names it, a libcupti the tracer must never
 * load (integration.backend_cupti_long_home). */
#include <unistd.h>

__attribute__((constructor)) static void say_loaded(void)
{
    static const char line[] = "GMT_FAKE_CUPTI_LOADED\n";
    if (write(2, line, sizeof line - 1) < 0) return;
}
