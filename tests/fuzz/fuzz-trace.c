/* Fuzz target: arbitrary bytes through the Kineto / Chrome trace importer
 * (plain or gzip), then the summary and its two renderings, as
 * `tpsim trace summary` does. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/trace-import.h"
#include "io/trace-summary.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *error = NULL;
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
    TpsTraceSummary *summary = tps_trace_summarize(trace);
    char *json = tps_trace_summary_to_json(summary);
    char *table = tps_trace_summary_to_table(summary);
    g_assert(json != NULL && table != NULL);
    g_free(json);
    g_free(table);
    tps_trace_summary_free(summary);
    tps_trace_free(trace);
    return 0;
}
