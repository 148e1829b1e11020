/* A finished run as plain data: what figures, traces, tables and
 * comparisons read, whoever produced it.
 *
 * The engine exports one after tps_engine_run() (tps_engine_export_run());
 * the trace importer builds one from measured kernels without any engine
 * (tps_run_new() and the add functions). Nothing in a TpsRun points into an
 * engine: it owns every span, stream and edge, and its strings or a
 * reference to the names of the engine it came from (TpsEngineNames), and
 * outlives that engine.
 *
 * Task ids are indexes into `spans` (span i has id i); streams are indexes
 * into `streams`. The analysis of a run (which kinds are compute or
 * communication, busy and exposed intervals) is sched/run-analysis.h.
 */
#pragma once

#include <glib.h>

#include "engine/engine.h"

typedef struct {
    const char *name; /* "main", "nccl", "stream 7", ... (owned by the run) */
    guint rank;
    int priority;
} TpsRunStream;

typedef struct {
    TpsTaskId pred, succ;
    TpsEdgeKind kind;
} TpsRunEdge;

/* One interval of the issuing thread of `rank`, [start, end): issuing
 * `task` (TPS_HOST_ISSUE, ending when the task's span says `launch`),
 * host-only work (TPS_HOST_WORK: framework work, event calls, a graph
 * launch, the rest of a sync call), or blocked in a synchronisation until
 * `task` ended (TPS_HOST_SYNC; TPS_TASK_NONE: until the device was idle).
 * Only intervals that take time are listed. */
typedef struct {
    guint rank;
    TpsHostKind kind;
    TpsTaskId task;
    TpsTime start, end;
} TpsHostSpan;

typedef struct {
    char *label;    /* the strategy preset, or "measured" for a trace */
    gboolean is_op; /* an op scenario's run (one AG+GEMM or GEMM+RS) */
    guint ranks;    /* GPUs of the run (rank ids 0..ranks-1) */
    guint gpus_per_node;

    /* Pass windows: model runs, layer l1's forward and layer l0's backward
     * (the measured layer); op runs, the whole op in fwd and bwd = 0..0;
     * measured runs, the whole trace in both. */
    TpsTime fwd_start, fwd_end;
    TpsTime bwd_start, bwd_end;

    GArray *spans;    /* TpsSpan, index = task id; names and stream ids as in the run */
    GArray *dst_rank; /* guint per span: receiver of a flow or copy, else its own rank */
    GArray *streams;  /* TpsRunStream */
    GArray *edges;    /* TpsRunEdge */
    GArray *host;     /* TpsHostSpan, by rank then program order */

    GStringChunk *strings;        /* the names added by the add functions */
    TpsEngineNames *engine_names; /* exported runs: a reference to the engine's names, which
                                     the exported spans and streams point to (else NULL) */
} TpsRun;

/* An empty run over `ranks` GPUs labelled `label`. */
TpsRun *tps_run_new(const char *label, guint ranks, guint gpus_per_node);
void tps_run_free(TpsRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsRun, tps_run_free)

TpsStreamId tps_run_add_stream(TpsRun *run, guint rank, int priority, const char *name);
/* Append a span; its id is its index (span->id is overwritten), its name is
 * copied. `dst_rank` as in TpsRun.dst_rank. Returns the id. */
TpsTaskId tps_run_add_span(TpsRun *run, const TpsSpan *span, guint dst_rank);
void tps_run_add_edge(TpsRun *run, TpsTaskId pred, TpsTaskId succ, TpsEdgeKind kind);

static inline guint
tps_run_n_spans(const TpsRun *run)
{
    return run->spans->len;
}

static inline const TpsSpan *
tps_run_span(const TpsRun *run, TpsTaskId id)
{
    return &g_array_index(run->spans, TpsSpan, id);
}

static inline guint
tps_run_dst_rank(const TpsRun *run, TpsTaskId id)
{
    return g_array_index(run->dst_rank, guint, id);
}

static inline const TpsRunStream *
tps_run_stream(const TpsRun *run, TpsStreamId id)
{
    return &g_array_index(run->streams, TpsRunStream, id);
}

/* Name of stream `id`; NULL for TPS_STREAM_NONE. */
const char *tps_run_stream_name(const TpsRun *run, TpsStreamId id);

/* The run of `engine` after tps_engine_run(): spans, streams, edges and
 * what each rank's host thread did. Windows are left 0 and the label NULL:
 * the caller knows what the graph was. */
TpsRun *tps_engine_export_run(const TpsEngine *engine);
