/* Fuzz target: arbitrary bytes through the Kineto / Chrome trace importer
 * (plain or gzip), then the summary and its two renderings, as
 * `tpsim trace summary` does, and through the CPU-side pass of
 * `tpsim trace host`. What loads holds the ranges of trace-import.h (no
 * value wrapped) and summarises to figures that are finite and within
 * their definitions. */
#include <glib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/trace/trace-cpu.h"
#include "io/trace/trace-import.h"
#include "io/trace/trace-summary.h"

/* The CPU-side pass over the same bytes: it reads every event the
 * importer skips. */
static void
cpu_pass(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    TpsCpuProfile *profile = tps_cpu_profile_new();
    GInputStream *in = g_memory_input_stream_new_from_data(data, (gssize)size, NULL);
    if (tps_cpu_profile_add_stream(profile, in, "fuzz", &error)) {
        g_assert(error == NULL);
        for (guint k = 0; k < TPS_CPU_CLASS_COUNT; k++) {
            TpsCpuStats st;
            tps_cpu_profile_stats(profile, (TpsCpuClass)k, -1, &st);
            g_assert(st.p25 <= st.median && st.median <= st.p75);
        }
        char *table = tps_cpu_profile_to_table(profile);
        g_assert(table != NULL);
        g_free(table);
    } else {
        g_assert(error != NULL && error->message != NULL);
        g_error_free(error);
    }
    g_object_unref(in);
    tps_cpu_profile_free(profile);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
    cpu_pass(data, size);
    TpsTrace *trace = tps_trace_load_data(data, size, "fuzz", &error);
    if (trace == NULL) {
        /* A failure always says why. */
        g_assert(error != NULL && error->message != NULL);
        g_error_free(error);
        return 0;
    }
    g_assert(error == NULL);
    guint n = 0;
    const TpsTraceKernel *kernels = tps_trace_kernels(trace, &n);
    for (guint i = 1; i < n; i++)
        g_assert(kernels[i - 1].device < kernels[i].device ||
                 (kernels[i - 1].device == kernels[i].device &&
                  (kernels[i - 1].stream < kernels[i].stream ||
                   (kernels[i - 1].stream == kernels[i].stream &&
                    kernels[i - 1].ts_ns <= kernels[i].ts_ns))));
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &kernels[i];
        g_assert(k->dur_ns >= 0 && k->dur_ns <= TPS_TRACE_MAX_DUR_NS);
        g_assert(k->ts_ns >= -TPS_TRACE_MAX_TS_NS && k->ts_ns <= TPS_TRACE_MAX_TS_NS);
        g_assert(k->bytes >= -1 && k->bytes <= TPS_TRACE_MAX_BYTES);
        g_assert(k->m == 0 ||
                 (k->m <= TPS_TRACE_MAX_DIM && k->n >= 1 && k->n <= TPS_TRACE_MAX_DIM &&
                  k->k >= 1 && k->k <= TPS_TRACE_MAX_DIM && k->batch >= 1 &&
                  k->batch <= TPS_TRACE_MAX_DIM));
    }
    TpsTraceSummary *summary = tps_trace_summarize(trace);
    g_assert(isfinite(summary->span_ms) && summary->span_ms >= 0);
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        g_assert(isfinite(summary->classes[c].total_ms) && summary->classes[c].total_ms >= 0);
    for (guint s = 0; s < summary->n_streams; s++)
        g_assert(summary->streams[s].busy_ms >= 0 &&
                 summary->streams[s].busy_ms <= summary->span_ms * (1 + 1e-12));
    g_assert(summary->comm_overlapped_fraction >= 0 &&
             summary->comm_overlapped_fraction <= 1 + 1e-12);
    char *json = tps_trace_summary_to_json(summary);
    char *table = tps_trace_summary_to_table(summary);
    g_assert(json != NULL && table != NULL);
    g_free(json);
    g_free(table);
    tps_trace_summary_free(summary);
    tps_trace_free(trace);
    return 0;
}
