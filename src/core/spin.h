/* spin.h - the tracer's own tiny spinlock, for short critical sections that never call out.
 * Never held across a call into the application, CUDA, malloc or stdio. */
#ifndef GMT_CORE_SPIN_H
#define GMT_CORE_SPIN_H

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

static inline void gmt_spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

#endif
