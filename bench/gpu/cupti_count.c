/* cupti_count.c - a probe for bench/gpu/driver_calls.sh: an LD_PRELOAD library that subscribes
 * to CUPTI for every driver and runtime API call and, at exit, prints how many times each was
 * entered ("calls DOMAIN NAME COUNT", most frequent first). Run beside the tracer with
 * GPUMEMTRACE_BACKEND=hooks (the tracer then holds no CUPTI subscription), the difference from
 * a native run is what the tracer itself asks of the driver per allocation.
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_CBID 4096

static unsigned long long counts[2][MAX_CBID];

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void *data)
{
    const CUpti_CallbackData *cb = data;
    (void)userdata;
    if (cb->callbackSite != CUPTI_API_ENTER || cbid >= MAX_CBID) return;
    int d = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    __atomic_fetch_add(&counts[d][cbid], 1, __ATOMIC_RELAXED);
}

typedef struct row_s {
    unsigned long long n;
    int domain;
    unsigned cbid;
} row_t;

static int by_count(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

__attribute__((destructor)) static void probe_fini(void)
{
    static row_t rows[2 * MAX_CBID];
    size_t n = 0;
    for (int d = 0; d < 2; d++)
        for (unsigned i = 0; i < MAX_CBID; i++)
            if (counts[d][i]) rows[n++] = (row_t){counts[d][i], d, i};
    qsort(rows, n, sizeof rows[0], by_count);
    for (size_t i = 0; i < n && i < 40; i++) {
        const char *name = "?";
        CUpti_CallbackDomain dom =
            rows[i].domain ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
        if (cuptiGetCallbackName(dom, rows[i].cbid, &name) != CUPTI_SUCCESS) name = "?";
        fprintf(stderr, "calls %s %s %llu\n", rows[i].domain ? "runtime" : "driver", name,
                rows[i].n);
    }
}

__attribute__((constructor)) static void probe_init(void)
{
    CUpti_SubscriberHandle sub;
    if (cuptiSubscribe(&sub, on_call, NULL) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_count: cuptiSubscribe failed\n");
        return;
    }
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
}
