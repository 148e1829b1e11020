/* Chrome trace event format (JSON) of recorded runs, for Perfetto
 * (ui.perfetto.dev) and chrome://tracing.
 *
 * Why in render and not io: like the timeline it is a view of the spans of
 * a run for a person to read, it names lanes (threads) the way the
 * timeline does, and it needs only the engine and GLib; io stays the layer
 * of the project's own input and result formats.
 *
 * Mapping: one process per (strategy, rank) (pid = 1000 * run + rank + 1,
 * named "STRATEGY GPUr"); one thread per stream (named after it), one per
 * NVLink direction that carries flows ("NVLink → GPUd", split into more
 * threads when flows on it overlap), and one "exposed TP comm" thread on
 * the rank the figures mark. Every span is a complete event ("ph":"X",
 * ts and dur in microseconds with nanosecond decimals, args bytes, flops,
 * sms, kind, task id), so the spans of one thread never overlap. Every
 * dependency edge that crosses threads (stream waits, cross-rank
 * receives, start edges, end-after holds) is a flow arrow: an "s" event
 * at the predecessor's end (its start for start edges) and an "f" event
 * ("bp":"e") at the successor's start, paired by "id". Stream order,
 * hardware-queue order and container membership are not drawn: they
 * would hide the arrows that matter under thousands of obvious ones.
 */
#pragma once

#include <glib.h>

#include "sched/simulate.h"

/* The trace of `n` runs as newly allocated JSON text. `scenario_name`
 * goes into "otherData". */
char *tps_trace_export(TpsRun *const *records, guint n, const char *scenario_name);

/* tps_trace_export() with each run's result (results[i] of records[i];
 * NULL: none), so that the trace records the workload as a profiler's
 * does: a GEMM's task has the args "m", "n" and "k" of its slot's GEMM on
 * one rank, a whole collective of a slot "collective" (AllGather,
 * ReduceScatter, AllReduce) and "message_bytes", its whole buffer as
 * NCCL's message size ("bytes" stays what the task moves). */
char *tps_trace_export_results(TpsRun *const *records, const TpsResult *results, guint n,
                               const char *scenario_name);

/* tps_trace_export() written to `path` atomically. */
gboolean tps_trace_export_write(TpsRun *const *records, guint n, const char *scenario_name,
                                const char *path, GError **error);

/* tps_trace_export_results() written to `path` atomically. */
gboolean tps_trace_export_write_results(TpsRun *const *records, const TpsResult *results,
                                        guint n, const char *scenario_name, const char *path,
                                        GError **error);
