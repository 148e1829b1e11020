#include "sched/run-analysis.h"

static const TpsKindClass kind_class[TPS_KIND_COUNT] = {
    [TPS_KIND_GEMM] = TPS_CLASS_COMPUTE,   [TPS_KIND_ATTENTION] = TPS_CLASS_COMPUTE,
    [TPS_KIND_MEMORY] = TPS_CLASS_COMPUTE, [TPS_KIND_COMM] = TPS_CLASS_COMM,
    [TPS_KIND_COPY] = TPS_CLASS_COMM,      [TPS_KIND_FLOW] = TPS_CLASS_LINK,
    [TPS_KIND_MARKER] = TPS_CLASS_NONE,
};

TpsKindClass
tps_kind_class(TpsTaskKind kind)
{
    g_return_val_if_fail(kind < TPS_KIND_COUNT, TPS_CLASS_NONE);
    return kind_class[kind];
}

const char *
tps_kind_class_name(TpsKindClass klass)
{
    static const char *const names[TPS_CLASS_COUNT] = {"compute", "comm", "link", "none"};
    g_return_val_if_fail(klass < TPS_CLASS_COUNT, "?");
    return names[klass];
}

gboolean
tps_kind_is_kernel(TpsTaskKind kind)
{
    return kind == TPS_KIND_GEMM || kind == TPS_KIND_ATTENTION || kind == TPS_KIND_MEMORY ||
           kind == TPS_KIND_COMM;
}

/* ---- intervals ---- */

static int
cmp_interval(gconstpointer a, gconstpointer b)
{
    const TpsInterval *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

void
tps_intervals_normalise(GArray *iv, TpsTime lo, TpsTime hi)
{
    guint w = 0;
    /* Lists often come in order (a copy of normalised intervals, spans of
     * one stream): the sort only when one is out of it. */
    for (guint i = 1; i < iv->len; i++)
        if (cmp_interval(&g_array_index(iv, TpsInterval, i - 1),
                         &g_array_index(iv, TpsInterval, i)) > 0) {
            g_array_sort(iv, cmp_interval);
            break;
        }
    for (guint i = 0; i < iv->len; i++) {
        TpsInterval x = g_array_index(iv, TpsInterval, i);
        x.start = MAX(x.start, lo);
        x.end = MIN(x.end, hi);
        if (x.end <= x.start)
            continue;
        if (w > 0 && x.start <= g_array_index(iv, TpsInterval, w - 1).end) {
            TpsInterval *last = &g_array_index(iv, TpsInterval, w - 1);
            last->end = MAX(last->end, x.end);
        } else {
            g_array_index(iv, TpsInterval, w++) = x;
        }
    }
    g_array_set_size(iv, w);
}

TpsTime
tps_intervals_measure(GArray *intervals, TpsTime lo, TpsTime hi)
{
    TpsTime sum = 0;
    tps_intervals_normalise(intervals, lo, hi);
    for (guint i = 0; i < intervals->len; i++) {
        const TpsInterval *x = &g_array_index(intervals, TpsInterval, i);
        sum += x->end - x->start;
    }
    return sum;
}

GArray *
tps_intervals_subtract(GArray *a, GArray *b, TpsTime lo, TpsTime hi)
{
    tps_intervals_normalise(a, lo, hi);
    tps_intervals_normalise(b, lo, hi);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    /* Both are sorted and disjoint: one sweep. */
    guint j = 0;
    for (guint i = 0; i < a->len; i++) {
        TpsTime s = g_array_index(a, TpsInterval, i).start;
        const TpsTime e = g_array_index(a, TpsInterval, i).end;
        while (j < b->len && g_array_index(b, TpsInterval, j).end <= s)
            j++;
        for (guint k = j; k < b->len && s < e; k++) {
            const TpsInterval *c = &g_array_index(b, TpsInterval, k);
            if (c->start >= e)
                break;
            if (c->start > s) {
                TpsInterval piece = {s, c->start};
                g_array_append_val(out, piece);
            }
            s = MAX(s, c->end);
        }
        if (s < e) {
            TpsInterval piece = {s, e};
            g_array_append_val(out, piece);
        }
    }
    return out;
}

TpsTime
tps_intervals_exposed(GArray *a, GArray *b, TpsTime lo, TpsTime hi)
{
    g_autoptr(GArray) rest = tps_intervals_subtract(a, b, lo, hi);
    return tps_intervals_measure(rest, lo, hi);
}

/* ---- runs ---- */

static void
append_span(GArray *out, const TpsSpan *sp, guint rank, TpsKindClass klass)
{
    if (sp->rank != rank || sp->end <= sp->start || tps_kind_class(sp->kind) != klass)
        return;
    TpsInterval iv = {sp->start, sp->end};
    g_array_append_val(out, iv);
}

GArray *
tps_run_intervals(const TpsRun *run, guint rank, TpsKindClass klass, const GArray *ids)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    if (ids) {
        for (guint i = 0; i < ids->len; i++)
            append_span(out, tps_run_span(run, g_array_index(ids, TpsTaskId, i)), rank, klass);
    } else {
        for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++)
            append_span(out, tps_run_span(run, id), rank, klass);
    }
    return out;
}

TpsTime
tps_run_busy(const TpsRun *run, guint rank, TpsKindClass klass, TpsTime lo, TpsTime hi)
{
    g_autoptr(GArray) iv = tps_run_intervals(run, rank, klass, NULL);
    return tps_intervals_measure(iv, lo, hi);
}

GArray *
tps_run_exposed_intervals(const TpsRun *run, guint rank, TpsTime lo, TpsTime hi)
{
    g_autoptr(GArray) comm = tps_run_intervals(run, rank, TPS_CLASS_COMM, NULL);
    g_autoptr(GArray) compute = tps_run_intervals(run, rank, TPS_CLASS_COMPUTE, NULL);
    return tps_intervals_subtract(comm, compute, lo, hi);
}

TpsTime
tps_run_exposed(const TpsRun *run, guint rank, TpsTime lo, TpsTime hi)
{
    g_autoptr(GArray) iv = tps_run_exposed_intervals(run, rank, lo, hi);
    return tps_intervals_measure(iv, lo, hi);
}
