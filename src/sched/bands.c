/* Error bands: see bands.h. */
#include "sched/bands.h"

#include <math.h>

#include "sched/run-analysis.h"

typedef enum {
    RUN_GEMM,
    RUN_ATTENTION,
    RUN_MEMORY,
    RUN_COMM,
    RUN_COUNT
} Running;

typedef struct {
    TpsTime at;
    Running what;
    int delta; /* +1 a span starts, -1 it ends */
} Edge;

static int
cmp_edge(gconstpointer pa, gconstpointer pb)
{
    const Edge *a = pa, *b = pb;
    if (a->at != b->at)
        return a->at < b->at ? -1 : 1;
    return a->delta - b->delta; /* ends first: no empty overlap counted */
}

static gboolean
running_of(TpsTaskKind kind, Running *what)
{
    switch (kind) {
    case TPS_KIND_GEMM:
        *what = RUN_GEMM;
        return TRUE;
    case TPS_KIND_ATTENTION:
        *what = RUN_ATTENTION;
        return TRUE;
    case TPS_KIND_MEMORY:
        *what = RUN_MEMORY;
        return TRUE;
    case TPS_KIND_COMM:
    case TPS_KIND_COPY:
        *what = RUN_COMM;
        return TRUE;
    case TPS_KIND_FLOW: /* inside its kernel's time already */
    case TPS_KIND_MARKER:
    case TPS_KIND_COUNT:
        break;
    }
    return FALSE;
}

/* The class of an instant at which `n[]` spans of each kind run. */
static TpsBandClass
class_of(const guint n[RUN_COUNT], gboolean small_gemms)
{
    const gboolean compute = n[RUN_GEMM] + n[RUN_ATTENTION] + n[RUN_MEMORY] > 0;
    if (compute && n[RUN_COMM] > 0)
        return TPS_BAND_INTERFERENCE;
    if (n[RUN_GEMM] > 0)
        return small_gemms ? TPS_BAND_GEMM_SMALL : TPS_BAND_GEMM;
    if (n[RUN_ATTENTION] > 0)
        return TPS_BAND_ATTENTION;
    if (n[RUN_MEMORY] > 0)
        return TPS_BAND_MEMORY;
    if (n[RUN_COMM] > 0)
        return TPS_BAND_COLLECTIVE;
    return TPS_BAND_HOST;
}

void
tps_band_parts(const TpsRun *run, guint rank, TpsTime lo, TpsTime hi, gboolean small_gemms,
               TpsTime parts[TPS_BAND_COUNT])
{
    g_return_if_fail(run != NULL && parts != NULL);
    if (hi <= lo)
        return;
    g_autoptr(GArray) edges = g_array_new(FALSE, FALSE, sizeof(Edge));
    for (guint i = 0; i < tps_run_n_spans(run); i++) {
        const TpsSpan *sp = tps_run_span(run, i);
        Running what;
        if (sp->rank != rank || sp->end <= lo || sp->start >= hi || sp->end <= sp->start ||
            !running_of(sp->kind, &what))
            continue;
        Edge start = {MAX(sp->start, lo), what, +1}, end = {MIN(sp->end, hi), what, -1};
        g_array_append_val(edges, start);
        g_array_append_val(edges, end);
    }
    g_array_sort(edges, cmp_edge);
    guint n[RUN_COUNT] = {0};
    TpsTime at = lo;
    for (guint i = 0; i < edges->len; i++) {
        const Edge *e = &g_array_index(edges, Edge, i);
        parts[class_of(n, small_gemms)] += e->at - at;
        at = e->at;
        n[e->what] = (guint)((int)n[e->what] + e->delta);
    }
    parts[class_of(n, small_gemms)] += hi - at;
}

void
tps_band_of_parts(const TpsHardware *hw, const TpsTime parts[TPS_BAND_COUNT], double *low_ns,
                  double *high_ns)
{
    g_return_if_fail(hw != NULL && parts != NULL && low_ns != NULL && high_ns != NULL);
    double low = 0.0, high = 0.0;
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        /* A residual r = predicted / measured - 1: measured = predicted / (1 + r). */
        low += (double)parts[c] / (1.0 + hw->band_p90_pct[c] / 100.0);
        high += (double)parts[c] / (1.0 + hw->band_p10_pct[c] / 100.0);
    }
    *low_ns = low;
    *high_ns = high;
}

void
tps_band_of_difference(const TpsHardware *hw, const double a[TPS_BAND_COUNT],
                       const double b[TPS_BAND_COUNT], double *low_ns, double *high_ns)
{
    g_return_if_fail(hw != NULL && a != NULL && b != NULL && low_ns != NULL && high_ns != NULL);
    double low = 0.0, high = 0.0;
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        const double d = a[c] - b[c];
        /* measured = predicted / (1 + r): the larger r, the smaller |d|. */
        const double small = d / (1.0 + hw->band_p90_pct[c] / 100.0);
        const double large = d / (1.0 + hw->band_p10_pct[c] / 100.0);
        low += MIN(small, large);
        high += MAX(small, large);
    }
    *low_ns = low;
    *high_ns = high;
}
