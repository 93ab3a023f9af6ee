/* spin.h - the tracer's own tiny spinlock, for short critical sections that never call out.
 * Never held across a call into the application, CUDA, malloc or stdio. */
#ifndef GMT_CORE_SPIN_H
#define GMT_CORE_SPIN_H

#include <stdbool.h>
#include <time.h>

static inline void gmt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static inline void gmt_spin_lock(int *l)
{
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED))
            gmt_cpu_relax();
}

static inline int gmt_spin_trylock(int *l)
{
    return __atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) == 0;
}

/* The lock within `tries` attempts, pause_ns apart (nanosleep: async-signal-safe), or false:
 * for a reader that must not wait for ever on a holder that a signal or a crash may have
 * stopped (a report reading the timeline or the growth samples). */
static inline bool gmt_spin_lock_within(int *l, int tries, long pause_ns)
{
    for (int i = 0;; i++) {
        if (gmt_spin_trylock(l)) return true;
        if (i + 1 >= tries) return false;
        struct timespec d = {0, pause_ns};
        nanosleep(&d, NULL);
    }
}

static inline void gmt_spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
