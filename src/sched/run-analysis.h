/* What a finished run means: which kinds of span are compute and which are
 * communication, interval arithmetic on spans, and the exposed
 * communication of a rank. The one place these rules live: the result
 * table (sched/simulate.c), the timeline (render/timeline.c), the trace
 * export (render/trace-export.c) and the comparison with measured traces
 * all ask here.
 *
 * Exposed communication of a rank: the time when at least one of its
 * communication spans (TPS_CLASS_COMM: NCCL or userbuffers kernels,
 * copy-engine transfers) runs and none of its compute spans
 * (TPS_CLASS_COMPUTE: GEMM, attention, memory-bound kernels) does. Flows
 * (bytes on a link inside a communication kernel) and markers count as
 * neither: a flow is part of its kernel's time already.
 */
#pragma once

#include <glib.h>

#include "engine/run.h"

typedef enum {
    TPS_CLASS_COMPUTE, /* GEMM, attention, memory-bound kernels */
    TPS_CLASS_COMM,    /* communication kernels and copy-engine transfers */
    TPS_CLASS_LINK,    /* bytes on a link inside a communication kernel (flows) */
    TPS_CLASS_NONE,    /* markers: joins and barriers */
    TPS_CLASS_COUNT
} TpsKindClass;

TpsKindClass tps_kind_class(TpsTaskKind kind);
/* "compute", "comm", "link", "none". */
const char *tps_kind_class_name(TpsKindClass klass);

/* Whether spans of `kind` are GPU kernels as a profiler lists them (GEMM,
 * attention, memory-bound and communication kernels; not flows, copies nor
 * markers: a trace shows a memcpy as no kernel). */
gboolean tps_kind_is_kernel(TpsTaskKind kind);

/* ---- intervals ---- */

typedef struct {
    TpsTime start, end;
} TpsInterval;

/* Sort and merge `intervals` in place into disjoint intervals clipped to
 * [lo, hi) (empty ones dropped). */
void tps_intervals_normalise(GArray *intervals, TpsTime lo, TpsTime hi);
/* Length of the union of `intervals` within [lo, hi) (normalises them). */
TpsTime tps_intervals_measure(GArray *intervals, TpsTime lo, TpsTime hi);
/* |A \ B| within [lo, hi) (normalises both). */
TpsTime tps_intervals_exposed(GArray *a, GArray *b, TpsTime lo, TpsTime hi);
/* A \ B within [lo, hi) as a new array of sorted disjoint intervals
 * (normalises both). */
GArray *tps_intervals_subtract(GArray *a, GArray *b, TpsTime lo, TpsTime hi);

/* ---- runs ---- */

/* The intervals of `rank`'s spans of class `klass` (unmerged, new array).
 * `ids` (may be NULL: every span) restricts them to those task ids. */
GArray *tps_run_intervals(const TpsRun *run, guint rank, TpsKindClass klass, const GArray *ids);

/* Busy time of `rank`'s spans of `klass` within [lo, hi). */
TpsTime tps_run_busy(const TpsRun *run, guint rank, TpsKindClass klass, TpsTime lo, TpsTime hi);

/* Exposed communication of `rank` within [lo, hi) (TPS_TIME_NEVER as hi:
 * to the end), as sorted disjoint intervals (new array), and its length. */
GArray *tps_run_exposed_intervals(const TpsRun *run, guint rank, TpsTime lo, TpsTime hi);
TpsTime tps_run_exposed(const TpsRun *run, guint rank, TpsTime lo, TpsTime hi);
