/* The summary of a trace (`tpsim trace summary`): kernels and time per
 * class, NCCL collectives with message sizes and bus bandwidth where the
 * trace gives them, busy time per stream, and the fraction of NCCL time
 * overlapped by other kernels; as design.md's "Trace summary JSON" or an
 * aligned table (docs/traces.md).
 *
 * Ownership: a summary owns all its strings and arrays and does not point
 * into the trace it came from.
 */
#pragma once

#include <glib.h>

#include "io/trace/trace-import.h"

/* The figures of design.md's "Trace summary JSON". */
typedef struct {
    guint count;
    double total_ms;
} TpsClassFigures;

typedef struct {
    char *name; /* collective, as in the kernel names */
    guint count;
    double median_us;
    double median_bytes; /* NAN when the trace gives no sizes */
    double busbw_gbps;   /* sum(bytes x factor) / sum(time) over the kernels with sizes; NAN */
    char *algorithms;    /* "RING/LL" or "RING/LL, TREE/SIMPLE" (table only) */
} TpsCollectiveFigures;

typedef struct {
    gint64 device;
    gint64 stream;
    char *name; /* from metadata; NULL */
    guint kernels;
    double busy_ms; /* union of its kernels' intervals */
} TpsStreamFigures;

typedef struct {
    char *file; /* base name of the trace */
    char *gpu;  /* NULL when unknown */
    TpsClassFigures classes[TPS_KERNEL_CLASS_COUNT];
    TpsCollectiveFigures *collectives; /* sorted by name */
    guint n_collectives;
    TpsStreamFigures *streams; /* sorted by (device, stream) */
    guint n_streams;
    double comm_overlapped_fraction; /* 0 without NCCL kernels */

    /* Table only: GEMMs whose launching op gave a shape. */
    guint gemm_shaped; /* kernels */
    double gemm_shaped_ms;
    double gemm_tflops; /* FLOPs of those ops / their kernels' time; NAN */
    guint devices;      /* devices with kernels */
    double span_ms;     /* first kernel start to last kernel end */
} TpsTraceSummary;

TpsTraceSummary *tps_trace_summarize(const TpsTrace *trace);
void tps_trace_summary_free(TpsTraceSummary *summary);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsTraceSummary, tps_trace_summary_free)

/* design.md's JSON (exactly its keys), and an aligned table; newly allocated. */
char *tps_trace_summary_to_json(const TpsTraceSummary *summary);
char *tps_trace_summary_to_table(const TpsTraceSummary *summary);
