/* Predicted against measured (compare.h).
 *
 * Layout: the per-stream accumulation shared by both sides; the reduction
 * of the measured kernels and of the simulated spans to the same rows; the
 * table and JSON writers.
 */
#include "render/compare.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "io/output/report-text.h"
#include "sched/run-analysis.h"

/* Per-name accumulation of streams: busy ns summed over devices. */
typedef struct {
    char *name;
    gint64 measured_ns, predicted_ns;
    guint measured_kernels, predicted_kernels;
} StreamAcc;

static StreamAcc *
stream_acc(GArray *accs, const char *name)
{
    for (guint i = 0; i < accs->len; i++)
        if (strcmp(g_array_index(accs, StreamAcc, i).name, name) == 0)
            return &g_array_index(accs, StreamAcc, i);
    StreamAcc a = {.name = g_strdup(name)};
    g_array_append_val(accs, a);
    return &g_array_index(accs, StreamAcc, accs->len - 1);
}

static double
error_pct(double measured, double predicted)
{
    return measured != 0.0 ? 100.0 * (predicted - measured) / measured : NAN;
}

static void
row_finish(TpsCompareRow *row, const char *label)
{
    row->label = g_strdup(label);
    row->error_pct = error_pct(row->measured_ms, row->predicted_ms);
    row->count_error_pct = error_pct(row->measured_count, row->predicted_count);
}

/* The kernel class a profiler would give a simulated span (its kind's
 * class of sched/run-analysis.h); FALSE for spans that are no kernels. */
static gboolean
kind_class(TpsTaskKind kind, TpsKernelClass *klass)
{
    if (!tps_kind_is_kernel(kind))
        return FALSE;
    *klass = kind == TPS_KIND_GEMM                    ? TPS_KERNEL_GEMM
             : tps_kind_class(kind) == TPS_CLASS_COMM ? TPS_KERNEL_NCCL
                                                      : TPS_KERNEL_OTHER;
    return TRUE;
}

typedef struct {
    gint64 key; /* device or rank */
    gint64 stream;
    gint64 start, end;
    gboolean nccl;
} KSpan;

static int
cmp_kspan(gconstpointer pa, gconstpointer pb)
{
    const KSpan *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

/* Busy time (union) of each (key, stream) group of sorted spans, by name. */
typedef const char *(*StreamNamer)(gconstpointer ctx, gint64 key, gint64 stream, char *buf,
                                   gsize size);

static void
accumulate_streams(GArray *spans, GArray *accs, gboolean measured, StreamNamer namer,
                   gconstpointer ctx)
{
    g_array_sort(spans, cmp_kspan);
    const KSpan *s = (const KSpan *)(void *)spans->data;
    guint n = spans->len;
    for (guint i = 0; i < n;) {
        guint j = i;
        gint64 busy = 0, cs = s[i].start, ce = s[i].start;
        for (; j < n && s[j].key == s[i].key && s[j].stream == s[i].stream; j++) {
            if (s[j].start > ce) {
                busy += ce - cs;
                cs = s[j].start;
            }
            ce = MAX(ce, s[j].end);
        }
        busy += ce - cs;
        char buf[64];
        StreamAcc *a = stream_acc(accs, namer(ctx, s[i].key, s[i].stream, buf, sizeof buf));
        if (measured)
            a->measured_ns += busy, a->measured_kernels += j - i;
        else
            a->predicted_ns += busy, a->predicted_kernels += j - i;
        i = j;
    }
}

typedef struct {
    const TpsTrace *trace;
    GHashTable *roles; /* "dev:stream" -> role name, for unnamed Kineto streams */
} MeasuredNames;

static const char *
measured_stream_name(gconstpointer ctx, gint64 device, gint64 stream, char *buf, gsize size)
{
    const MeasuredNames *m = ctx;
    g_snprintf(buf, size, "%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, device, stream);
    const char *role = m->roles ? g_hash_table_lookup(m->roles, buf) : NULL;
    if (role)
        return role;
    if (tps_trace_format(m->trace) == TPS_TRACE_TPSIM) {
        const char *name = tps_trace_stream_name(m->trace, device, stream);
        if (name)
            return name;
    }
    g_snprintf(buf, size, "stream %" G_GINT64_FORMAT, stream);
    return buf;
}

static const char *
predicted_stream_name(gconstpointer ctx, gint64 rank, gint64 stream, char *buf, gsize size)
{
    const TpsRun *run = ctx;
    if (stream == (gint64)TPS_STREAM_NONE)
        return "kernel parts"; /* as the trace export names them */
    return tps_run_stream_name(run, (TpsStreamId)stream);
}

/* One side of a comparison: its kernels per class, their spans, and the
 * devices (or ranks) they ran on. */
typedef struct {
    GArray *spans; /* KSpan */
    gint64 count[TPS_KERNEL_CLASS_COUNT], ns[TPS_KERNEL_CLASS_COUNT];
    guint units;    /* devices measured, ranks predicted */
    gint64 span_ns; /* first start to last end, summed over the units */
} Side;

static void
side_clear(Side *s)
{
    g_clear_pointer(&s->spans, g_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Side, side_clear)

/* Measured: the kernels of the run's devices (tpsim traces may hold
 * several runs). */
static gboolean
measured_side(const TpsTrace *trace, const TpsRun *record, Side *m, GError **error)
{
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    const gboolean tpsim = tps_trace_format(trace) == TPS_TRACE_TPSIM;
    m->spans = g_array_new(FALSE, FALSE, sizeof(KSpan));
    g_autoptr(GHashTable) mdevs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    /* Per device: first start and last end (for the span row). */
    g_autoptr(GHashTable) mfirst =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &ks[i];
        if (tpsim && record->label) {
            g_autofree char *run = tps_trace_device_strategy(trace, k->device);
            if (run && strcmp(run, record->label) != 0)
                continue;
        }
        if (!g_hash_table_contains(mdevs, &k->device)) {
            gint64 *key = g_new(gint64, 1);
            *key = k->device;
            g_hash_table_add(mdevs, key);
        }
        m->count[k->klass]++;
        m->ns[k->klass] += k->dur_ns;
        KSpan sp = {k->device, k->stream, k->ts_ns, k->ts_ns + k->dur_ns,
                    k->klass == TPS_KERNEL_NCCL};
        g_array_append_val(m->spans, sp);
        gint64 *fl = g_hash_table_lookup(mfirst, &k->device);
        if (fl == NULL) {
            gint64 *key = g_new(gint64, 1);
            *key = k->device;
            fl = g_new(gint64, 2);
            fl[0] = sp.start, fl[1] = sp.end;
            g_hash_table_insert(mfirst, key, fl);
        }
        fl[0] = MIN(fl[0], sp.start), fl[1] = MAX(fl[1], sp.end);
    }
    m->units = g_hash_table_size(mdevs);
    if (m->units == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no GPU kernels%s%s",
                    tps_trace_name(trace), tpsim ? " of strategy " : "",
                    tpsim ? record->label : "");
        return FALSE;
    }
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, mfirst);
    while (g_hash_table_iter_next(&it, NULL, &v))
        m->span_ns += ((gint64 *)v)[1] - ((gint64 *)v)[0];
    return TRUE;
}

/* Predicted: the kernels of the run, every rank. */
static gboolean
predicted_side(const TpsRun *record, Side *p, GError **error)
{
    p->spans = g_array_new(FALSE, FALSE, sizeof(KSpan));
    g_autofree gint64 *pfirst = g_new(gint64, record->ranks);
    g_autofree gint64 *plast = g_new(gint64, record->ranks);
    for (guint r = 0; r < record->ranks; r++)
        pfirst[r] = G_MAXINT64, plast[r] = G_MININT64;
    guint n_tasks = tps_run_n_spans(record);
    for (TpsTaskId id = 0; id < n_tasks; id++) {
        const TpsSpan *sp = tps_run_span(record, id);
        TpsKernelClass klass;
        if (!kind_class(sp->kind, &klass) || sp->rank >= record->ranks)
            continue;
        p->count[klass]++;
        p->ns[klass] += sp->end - sp->start;
        KSpan ksp = {sp->rank, sp->stream == TPS_STREAM_NONE ? (gint64)TPS_STREAM_NONE : sp->stream,
                     sp->start, sp->end, klass == TPS_KERNEL_NCCL};
        g_array_append_val(p->spans, ksp);
        pfirst[sp->rank] = MIN(pfirst[sp->rank], sp->start);
        plast[sp->rank] = MAX(plast[sp->rank], sp->end);
    }
    for (guint r = 0; r < record->ranks; r++)
        if (pfirst[r] != G_MAXINT64)
            p->units++, p->span_ns += plast[r] - pfirst[r];
    if (p->units == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "the simulated run has no kernels");
        return FALSE;
    }
    return TRUE;
}

/* A Kineto trace's streams are numbers: its busiest compute and NCCL
 * streams ("dev:stream") get the roles of the simulated "main" and
 * "nccl". */
static GHashTable *
kineto_roles(const GArray *mspans)
{
    GHashTable *roles = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) compute = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    g_autoptr(GHashTable) comm = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < mspans->len; i++) {
        const KSpan *sp = &g_array_index(mspans, KSpan, i);
        char *key = g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, sp->key, sp->stream);
        GHashTable *table = sp->nccl ? comm : compute;
        gint64 *acc = g_hash_table_lookup(table, key);
        if (acc == NULL) {
            acc = g_new0(gint64, 1);
            g_hash_table_insert(table, g_strdup(key), acc);
        }
        *acc += sp->end - sp->start;
        g_free(key);
    }
    const char *role_names[2] = {"main", "nccl"};
    GHashTable *tables[2] = {compute, comm};
    const char *taken = NULL;
    for (guint r = 0; r < 2; r++) {
        const char *best = NULL;
        gint64 best_ns = -1;
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, tables[r]);
        while (g_hash_table_iter_next(&it, &k, &v))
            if (*(gint64 *)v > best_ns && (taken == NULL || strcmp(taken, k) != 0))
                best = k, best_ns = *(gint64 *)v;
        if (best) {
            /* Only one device in a Kineto trace in practice; roles per stream key. */
            g_hash_table_insert(roles, g_strdup(best), (gpointer)role_names[r]);
            taken = best;
        }
    }
    return roles;
}

/* The rows of the kernel classes and of the span, per device and rank. */
static void
class_rows(TpsComparison *c, const Side *m, const Side *p)
{
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++) {
        TpsCompareRow *row = &c->classes[k];
        row->measured_count = (double)m->count[k] / m->units;
        row->predicted_count = (double)p->count[k] / p->units;
        row->measured_ms = (double)m->ns[k] * 1e-6 / m->units;
        row->predicted_ms = (double)p->ns[k] * 1e-6 / p->units;
        row_finish(row, tps_kernel_class_name(k));
    }
    c->span.measured_count = c->span.predicted_count = 1;
    c->span.measured_ms = (double)m->span_ns * 1e-6 / m->units;
    c->span.predicted_ms = (double)p->span_ns * 1e-6 / p->units;
    row_finish(&c->span, "span");
}

/* The rows of the streams, by name: the simulated ones first. */
static void
stream_rows(TpsComparison *c, const TpsTrace *trace, const TpsRun *record, const Side *m,
            const Side *p)
{
    MeasuredNames names = {.trace = trace};
    g_autoptr(GHashTable) roles = NULL;
    if (tps_trace_format(trace) == TPS_TRACE_KINETO)
        names.roles = roles = kineto_roles(m->spans);
    g_autoptr(GArray) accs = g_array_new(FALSE, TRUE, sizeof(StreamAcc));
    accumulate_streams(p->spans, accs, FALSE, predicted_stream_name, record);
    accumulate_streams(m->spans, accs, TRUE, measured_stream_name, &names);
    c->n_streams = accs->len;
    c->streams = g_new0(TpsCompareRow, MAX(accs->len, 1));
    for (guint i = 0; i < accs->len; i++) {
        StreamAcc *a = &g_array_index(accs, StreamAcc, i);
        TpsCompareRow *row = &c->streams[i];
        row->measured_count = (double)a->measured_kernels / m->units;
        row->predicted_count = (double)a->predicted_kernels / p->units;
        row->measured_ms = (double)a->measured_ns * 1e-6 / m->units;
        row->predicted_ms = (double)a->predicted_ns * 1e-6 / p->units;
        row_finish(row, a->name);
        g_free(a->name);
    }
}

TpsComparison *
tps_trace_compare(const TpsTrace *trace, const TpsRun *record, GError **error)
{
    g_return_val_if_fail(trace != NULL && record != NULL, NULL);
    g_auto(Side) m = {0};
    g_auto(Side) p = {0};
    if (!measured_side(trace, record, &m, error) || !predicted_side(record, &p, error))
        return NULL;

    TpsComparison *c = g_new0(TpsComparison, 1);
    c->trace_file = g_path_get_basename(tps_trace_name(trace));
    c->strategy = g_strdup(record->label);
    c->measured_devices = m.units;
    c->predicted_ranks = p.units;
    class_rows(c, &m, &p);
    stream_rows(c, trace, record, &m, &p);
    return c;
}

void
tps_comparison_free(TpsComparison *c)
{
    if (c == NULL)
        return;
    g_free(c->trace_file);
    g_free(c->strategy);
    for (guint i = 0; i < TPS_KERNEL_CLASS_COUNT; i++)
        g_free(c->classes[i].label);
    g_free(c->span.label);
    for (guint i = 0; i < c->n_streams; i++)
        g_free(c->streams[i].label);
    g_free(c->streams);
    g_free(c);
}

static void
table_row(GString *o, const TpsCompareRow *row, gboolean counts)
{
    g_string_append_printf(o, "%-14s", row->label);
    if (counts) {
        tps_report_cell(o, row->measured_count, 10, 1);
        tps_report_cell(o, row->predicted_count, 10, 1);
        tps_report_cell(o, row->count_error_pct, 8, 1);
    }
    tps_report_cell(o, row->measured_ms, 12, 3);
    tps_report_cell(o, row->predicted_ms, 12, 3);
    tps_report_cell(o, row->error_pct, 9, 1);
    g_string_append_c(o, '\n');
}

char *
tps_comparison_to_table(const TpsComparison *c)
{
    GString *o = g_string_new(NULL);
    g_string_append_printf(o,
                           "Measured   %s (%u device%s)\nPredicted  %s (%u rank%s)\n"
                           "Figures per device; error = (predicted - measured) / measured.\n\n",
                           c->trace_file, c->measured_devices, c->measured_devices == 1 ? "" : "s",
                           c->strategy ? c->strategy : "?", c->predicted_ranks,
                           c->predicted_ranks == 1 ? "" : "s");
    g_string_append(
        o, "class           measured predicted  count %   measured ms predicted ms  error %\n");
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++)
        table_row(o, &c->classes[k], TRUE);
    g_string_append(
        o, "\nstream          measured predicted kernels%   measured ms predicted ms  error %\n");
    for (guint i = 0; i < c->n_streams; i++)
        table_row(o, &c->streams[i], TRUE);
    g_string_append(
        o, "\n                                             measured ms predicted ms  error %\n");
    g_string_append_printf(o, "%-44s", "span (first kernel start to last end)");
    tps_report_cell(o, c->span.measured_ms, 13, 3);
    tps_report_cell(o, c->span.predicted_ms, 13, 3);
    tps_report_cell(o, c->span.error_pct, 9, 1);
    g_string_append_c(o, '\n');
    return g_string_free(o, FALSE);
}

static void
json_row(GString *o, const TpsCompareRow *row)
{
    g_string_append(o, "{\"name\": ");
    tps_report_json_string(o, row->label);
    g_string_append(o, ", \"measured_count\": ");
    tps_report_json_number(o, row->measured_count, 3);
    g_string_append(o, ", \"predicted_count\": ");
    tps_report_json_number(o, row->predicted_count, 3);
    g_string_append(o, ", \"measured_ms\": ");
    tps_report_json_number(o, row->measured_ms, 6);
    g_string_append(o, ", \"predicted_ms\": ");
    tps_report_json_number(o, row->predicted_ms, 6);
    g_string_append(o, ", \"error_pct\": ");
    tps_report_json_number(o, row->error_pct, 3);
    g_string_append(o, "}");
}

char *
tps_comparison_to_json(const TpsComparison *c)
{
    GString *o = g_string_new("{\n  \"trace\": ");
    tps_report_json_string(o, c->trace_file);
    g_string_append(o, ", \"strategy\": ");
    tps_report_json_string(o, c->strategy);
    g_string_append_printf(o,
                           ", \"measured_devices\": %u, \"predicted_ranks\": %u,\n  \"classes\": [",
                           c->measured_devices, c->predicted_ranks);
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++) {
        if (k)
            g_string_append(o, ",\n              ");
        json_row(o, &c->classes[k]);
    }
    g_string_append(o, "],\n  \"streams\": [");
    for (guint i = 0; i < c->n_streams; i++) {
        if (i)
            g_string_append(o, ",\n              ");
        json_row(o, &c->streams[i]);
    }
    g_string_append(o, "],\n  \"span\": ");
    json_row(o, &c->span);
    g_string_append(o, "\n}\n");
    return g_string_free(o, FALSE);
}

/* ---- same workload? ---- */

typedef struct {
    guint64 dim[3]; /* sorted */
    double ns;      /* kernel time with this shape (trace), or 0 */
    guint count;
} Shape3;

static void
sort3(guint64 d[3])
{
    for (guint i = 0; i < 2; i++)
        for (guint j = 0; j + 1 < 3 - i; j++)
            if (d[j] > d[j + 1]) {
                guint64 t = d[j];
                d[j] = d[j + 1];
                d[j + 1] = t;
            }
}

static gboolean
same3(const guint64 a[3], const guint64 b[3])
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

/* Add `ns` to the entry of shape `d` in `shapes` (GArray of Shape3). */
static void
shape_add(GArray *shapes, const guint64 d[3], double ns)
{
    for (guint i = 0; i < shapes->len; i++) {
        Shape3 *s = &g_array_index(shapes, Shape3, i);
        if (same3(s->dim, d)) {
            s->ns += ns;
            s->count++;
            return;
        }
    }
    Shape3 s = {{d[0], d[1], d[2]}, ns, 1};
    g_array_append_val(shapes, s);
}

static int
cmp_shape_time(gconstpointer a, gconstpointer b)
{
    const Shape3 *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns > y->ns ? -1 : 1;
    for (guint i = 3; i-- > 0;)
        if (x->dim[i] != y->dim[i])
            return x->dim[i] > y->dim[i] ? -1 : 1;
    return 0;
}

/* "8192x3072x1024" for the first `most` shapes (sorted dimensions, the
 * largest first), with their share of `total_ns` when it is not 0. */
static void
append_shapes(GString *s, GArray *shapes, guint most, double total_ns)
{
    for (guint i = 0; i < MIN(shapes->len, most); i++) {
        const Shape3 *x = &g_array_index(shapes, Shape3, i);
        g_string_append_printf(s,
                               "%s%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT,
                               i ? ", " : "", x->dim[2], x->dim[1], x->dim[0]);
        if (total_ns > 0)
            g_string_append_printf(s, " (%.0f%% of GEMM time)", 100.0 * x->ns / total_ns);
    }
    if (shapes->len > most)
        g_string_append_printf(s, " and %u more", shapes->len - most);
    if (shapes->len == 0)
        g_string_append(s, "none");
}

static gboolean
size_matches(double bytes, const double *sizes, guint n)
{
    for (guint i = 0; i < n; i++)
        if (fabs(bytes - sizes[i]) <= 0.01 * sizes[i])
            return TRUE;
    return FALSE;
}

gboolean
tps_trace_same_workload(const TpsTrace *trace, const TpsResult *result, char **evidence)
{
    g_return_val_if_fail(trace != NULL && result != NULL, TRUE);
    g_autoptr(GArray) ours = g_array_new(FALSE, FALSE, sizeof(Shape3));
    double sizes[TPS_GEMM_SLOT_COUNT];
    guint n_sizes = 0;
    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++) {
        const TpsGemmBreakdown *g = &result->gemms[slot];
        if (!g->present)
            continue;
        guint64 d[3] = {g->m, g->n, g->k};
        sort3(d);
        shape_add(ours, d, 0);
        if (g->comm_bytes > 0 && !size_matches(g->comm_bytes, sizes, n_sizes))
            sizes[n_sizes++] = g->comm_bytes;
    }

    g_autoptr(GArray) theirs = g_array_new(FALSE, FALSE, sizeof(Shape3));
    g_autoptr(GHashTable) colls = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    double shaped_ns = 0, matched_ns = 0;
    guint n_colls = 0, colls_matched = 0;
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &ks[i];
        if (k->klass == TPS_KERNEL_GEMM && k->m > 0 && k->n > 0 && k->k > 0) {
            guint64 d[3] = {(guint64)k->m, (guint64)k->n, (guint64)k->k};
            sort3(d);
            shape_add(theirs, d, (double)k->dur_ns);
            shaped_ns += (double)k->dur_ns;
            gboolean known = FALSE;
            for (guint j = 0; j < ours->len && !known; j++)
                known = same3(g_array_index(ours, Shape3, j).dim, d);
            if (known)
                matched_ns += (double)k->dur_ns;
        } else if (k->klass == TPS_KERNEL_NCCL && k->bytes > 0 && k->collective != NULL &&
                   (strcmp(k->collective, "AllGather") == 0 ||
                    strcmp(k->collective, "ReduceScatter") == 0 ||
                    strcmp(k->collective, "AllReduce") == 0)) {
            n_colls++;
            colls_matched += size_matches((double)k->bytes, sizes, n_sizes);
            char *key = g_strdup_printf("%s %.1f MiB", k->collective, (double)k->bytes / 1048576.0);
            guint c = GPOINTER_TO_UINT(g_hash_table_lookup(colls, key));
            g_hash_table_replace(colls, key, GUINT_TO_POINTER(c + 1));
        }
    }
    gboolean same = shaped_ns > 0 ? matched_ns >= 0.5 * shaped_ns
                                  : n_colls == 0 || colls_matched > 0;

    if (evidence != NULL) {
        g_array_sort(theirs, cmp_shape_time);
        /* The scenario's by size (all its shapes have time 0). */
        g_array_sort(ours, cmp_shape_time);
        GString *s = g_string_new(NULL);
        g_string_append(s, "the trace's largest GEMMs (dimensions, largest first): ");
        append_shapes(s, theirs, 3, shaped_ns);
        if (shaped_ns > 0)
            g_string_append_printf(s, "; %.0f%% of its shaped GEMM time has a shape of the "
                                      "scenario",
                                   100.0 * matched_ns / shaped_ns);
        g_string_append(s, "; the scenario's GEMMs per rank: ");
        append_shapes(s, ours, 4, 0);
        g_string_append(s, "; the trace's collectives: ");
        g_autoptr(GList) keys = g_list_sort(g_hash_table_get_keys(colls), (GCompareFunc)strcmp);
        guint shown = 0;
        for (GList *l = keys; l != NULL && shown < 4; l = l->next, shown++)
            g_string_append_printf(s, "%s%s (x%u)", shown ? ", " : "", (char *)l->data,
                                   GPOINTER_TO_UINT(g_hash_table_lookup(colls, l->data)));
        if (keys == NULL)
            g_string_append(s, "none with sizes");
        g_string_append(s, "; the scenario's TP collectives: ");
        for (guint i = 0; i < n_sizes; i++)
            g_string_append_printf(s, "%s%.1f MiB", i ? ", " : "", sizes[i] / 1048576.0);
        if (n_sizes == 0)
            g_string_append(s, "none");
        *evidence = g_string_free(s, FALSE);
    }
    return same;
}
