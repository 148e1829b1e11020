/* Predicted against measured (`tpsim compare`): a trace (io/trace/trace-import.h)
 * beside a simulated run (engine/run.h), reduced to the same rows.
 *
 * It reads no file: it sets a measured trace beside a simulated run for the
 * reader, as the timeline (render/timeline.h) draws the two, so it lives
 * with the other presentations in render, above io's trace and sched's run
 * analysis (which classifies the simulated spans).
 *
 * Both sides are reduced the same way: kernels per class (engine kinds
 * GEMM -> gemm, COMM -> nccl, ATTENTION and MEMORY -> other; flows, copies
 * and markers are no kernels, as memcpy is none in a trace) and busy time
 * per stream, each averaged over the devices (measured) or ranks
 * (predicted) that have kernels, so one traced rank compares with the
 * simulated TP group. Streams are matched by name (a trace of tpsim's
 * own); a Kineto trace's streams are numbers, so its stream with the most
 * non-NCCL time stands for "main" and the one with the most NCCL time for
 * "nccl".
 *
 * Ownership: a comparison owns its strings and rows and points into
 * neither the trace nor the run.
 */
#pragma once

#include <glib.h>

#include "engine/run.h"
#include "io/trace/trace-import.h"
#include "sched/simulate.h"

typedef struct {
    char *label;                            /* class or stream name; "span" */
    double measured_count, predicted_count; /* per device */
    double measured_ms, predicted_ms;       /* per device */
    double error_pct; /* 100 (predicted - measured) / measured; NAN when measured is 0 */
    double count_error_pct;
} TpsCompareRow;

typedef struct {
    char *trace_file;
    char *strategy;
    guint measured_devices;
    guint predicted_ranks;
    TpsCompareRow classes[TPS_KERNEL_CLASS_COUNT];
    TpsCompareRow span; /* first kernel start to last kernel end (per device, mean) */
    TpsCompareRow *streams;
    guint n_streams;
} TpsComparison;

/* Compare `trace` with the run in `record` (strategy name taken from it).
 * In a trace written by tpsim holding several runs, only the devices of
 * the run of that strategy are read; an error (TPS_ERROR_INPUT) when the
 * trace has no kernels there. */
TpsComparison *tps_trace_compare(const TpsTrace *trace, const TpsRun *record, GError **error);
void tps_comparison_free(TpsComparison *comparison);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsComparison, tps_comparison_free)

/* Whether `trace` records the workload `result` simulates (`tpsim compare`
 * refuses to set a CNN's trace against a GPT layer): the GEMM shapes of
 * the trace's GEMM kernels that have one (Kineto's Input Dims) against the
 * scenario's per-rank GEMMs (TpsGemmBreakdown m, n, k, compared as sorted
 * triples, so a transposed operand matches), and, when the trace has no
 * shapes, the message sizes of its AllGather, ReduceScatter and AllReduce
 * kernels against the scenario's TP collectives (within 1%).
 *
 * Different: less than half of the shaped GEMM time has a shape of the
 * scenario, or (without shapes) no collective has one of its sizes. A
 * trace with neither (tpsim's own traces) is taken as the same. `evidence`
 * (if non-NULL) receives, newly allocated, the largest GEMM shapes of each
 * side and the collective sizes, whatever the answer. */
gboolean tps_trace_same_workload(const TpsTrace *trace, const TpsResult *result,
                                 char **evidence);

char *tps_comparison_to_table(const TpsComparison *comparison);
char *tps_comparison_to_json(const TpsComparison *comparison);
