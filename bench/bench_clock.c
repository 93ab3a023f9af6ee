/* bench_clock.c - what one reading of the events' clock costs (core/clock.h): gmt_event_ns
 * (the time-stamp counter, scaled) against gmt_now_ns (clock_gettime through the vDSO), in
 * interleaved batches; prints the clock source and the median ns a reading of each.
 * usage: bench_clock [BATCHES]   (a batch: 200,000 readings of each) */
#include "core/clock.h"

#include <stdio.h>
#include <stdlib.h>

#define READS 200000

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 15;
    if (batches < 1 || batches > 1000) batches = 15;
    gmt_clock_init();
    double ev[1000], now[1000];
    volatile uint64_t sink = 0;
    for (int b = 0; b < batches; b++) {
        uint64_t t0 = gmt_now_ns();
        for (int i = 0; i < READS; i++)
            sink += gmt_event_ns();
        uint64_t t1 = gmt_now_ns();
        for (int i = 0; i < READS; i++)
            sink += gmt_now_ns();
        uint64_t t2 = gmt_now_ns();
        ev[b] = (double)(t1 - t0) / READS;
        now[b] = (double)(t2 - t1) / READS;
        if (b % 4 == 3) gmt_clock_recalibrate();
    }
    qsort(ev, (size_t)batches, sizeof ev[0], cmp);
    qsort(now, (size_t)batches, sizeof now[0], cmp);
    uint64_t a = gmt_now_ns(), e = gmt_event_ns(), c = gmt_now_ns();
    printf("counter %s\n", gmt_tsc_clock.on ? "on" : "off (clock_gettime)");
    printf("gmt_event_ns %.1f ns\ngmt_now_ns %.1f ns\n", ev[batches / 2], now[batches / 2]);
    printf("event clock - CLOCK_MONOTONIC %lld ns (bracket %llu ns)\n",
           (long long)(e - a) - (long long)((c - a) / 2), (unsigned long long)(c - a));
    return (int)(sink & 0);
}
