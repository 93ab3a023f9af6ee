/* claim.h - a slot of a fixed array that one thread at a time may hold (a counter shard, a
 * remembered stack walk): claimed by flipping its flag 0 -> 1, given back by storing 0. */
#ifndef GMT_CORE_CLAIM_H
#define GMT_CORE_CLAIM_H

#include <stdint.h>

/* The first free flag of flags[0..n), looked at from start on (wrapping), claimed; its index,
 * or -1 when all are held. Acquire: the previous holder's writes, released with the flag, are
 * seen. */
static inline int gmt_claim_flag(uint32_t *flags, uint32_t n, uint32_t start)
{
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = (start + k) % n, zero = 0;
        if (__atomic_load_n(&flags[i], __ATOMIC_RELAXED) == 0 &&
            __atomic_compare_exchange_n(&flags[i], &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return (int)i;
    }
    return -1;
}

/* Gives a claimed flag back; release: the holder's writes come before the next holder's. */
static inline void gmt_claim_release(uint32_t *flag)
{
    __atomic_store_n(flag, 0, __ATOMIC_RELEASE);
}

#endif
