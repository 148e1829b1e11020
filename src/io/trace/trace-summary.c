/* The summary of a trace (trace-summary.h): figures per class, collective
 * and stream, the overlap of NCCL time, and its two output formats.
 */
#include "io/trace/trace-summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "io/output/report-text.h"

/* ---------------------------------------------------------------------- */
/* Summary                                                                 */

typedef struct {
    gint64 start, end;
} Span;

static int
cmp_span(gconstpointer pa, gconstpointer pb)
{
    const Span *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

/* Sort and merge in place; returns the number of disjoint spans. */
static guint
merge_spans(Span *s, guint n)
{
    if (n == 0)
        return 0;
    qsort(s, n, sizeof *s, cmp_span);
    guint w = 0;
    for (guint i = 1; i < n; i++) {
        if (s[i].start <= s[w].end)
            s[w].end = MAX(s[w].end, s[i].end);
        else
            s[++w] = s[i];
    }
    return w + 1;
}

/* Length of [start, end) covered by the merged spans. */
static gint64
covered(const Span *s, guint n, gint64 start, gint64 end)
{
    guint lo = 0, hi = n;
    while (lo < hi) { /* first span ending after start */
        guint mid = lo + (hi - lo) / 2;
        if (s[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    gint64 sum = 0;
    for (guint i = lo; i < n && s[i].start < end; i++)
        sum += MIN(end, s[i].end) - MAX(start, s[i].start);
    return sum;
}

/* The figures of one collective name, gathered kernel by kernel. */
typedef struct {
    const char *name; /* the trace's, or "Unknown" */
    guint count;
    GArray *durs;     /* double, us */
    GArray *bytes;    /* double */
    GHashTable *seen; /* "ALGO/PROTO" already listed (created on the first) */
    GPtrArray *algos; /* in order of first appearance (likewise) */
    double bus_bytes;
    gint64 bus_ns;
    gboolean bus_ok;
} CollAcc;

static CollAcc *
coll_acc_new(const char *name)
{
    CollAcc *a = g_new0(CollAcc, 1);
    a->name = name;
    a->durs = g_array_new(FALSE, FALSE, sizeof(double));
    a->bytes = g_array_new(FALSE, FALSE, sizeof(double));
    a->bus_ok = TRUE;
    return a;
}

static void
coll_acc_free(CollAcc *a)
{
    g_array_unref(a->durs);
    g_array_unref(a->bytes);
    if (a->seen)
        g_hash_table_unref(a->seen);
    if (a->algos)
        g_ptr_array_unref(a->algos);
    g_free(a);
}

static void
coll_acc_add(CollAcc *a, const TpsTraceKernel *k)
{
    a->count++;
    double d = k->dur_us;
    g_array_append_val(a->durs, d);
    if (k->bytes >= 0) {
        double b = (double)k->bytes;
        g_array_append_val(a->bytes, b);
        double factor = tps_trace_busbw_factor(k->collective, k->group_size);
        if (isnan(factor))
            a->bus_ok = FALSE;
        a->bus_bytes += b * factor;
        a->bus_ns += k->dur_ns; /* at most the trace's total (trace-import.h) */
    }
    if (k->algorithm || k->protocol) {
        char *ap = g_strdup_printf("%s/%s", k->algorithm ? k->algorithm : "?",
                                   k->protocol ? k->protocol : "?");
        if (a->seen == NULL) {
            a->seen = g_hash_table_new(g_str_hash, g_str_equal);
            a->algos = g_ptr_array_new_with_free_func(g_free);
        }
        if (g_hash_table_contains(a->seen, ap)) {
            g_free(ap);
        } else {
            g_ptr_array_add(a->algos, ap);
            g_hash_table_add(a->seen, ap);
        }
    }
}

static void
coll_acc_finish(CollAcc *a, TpsCollectiveFigures *f)
{
    f->name = g_strdup(a->name);
    f->count = a->count;
    f->median_us = tps_median((double *)(void *)a->durs->data, a->durs->len);
    f->median_bytes = tps_median((double *)(void *)a->bytes->data, a->bytes->len);
    f->busbw_gbps =
        a->bytes->len > 0 && a->bus_ok && a->bus_ns > 0 ? a->bus_bytes / (double)a->bus_ns : NAN;
    if (a->algos) {
        g_ptr_array_add(a->algos, NULL);
        f->algorithms = g_strjoinv(", ", (char **)a->algos->pdata);
        g_ptr_array_set_size(a->algos, a->algos->len - 1);
    } else {
        f->algorithms = g_strdup("");
    }
}

static int
cmp_coll_acc(gconstpointer pa, gconstpointer pb)
{
    return strcmp((*(CollAcc *const *)pa)->name, (*(CollAcc *const *)pb)->name);
}

/* Busy time per stream (the union of its kernels); kernels are sorted by
 * (device, stream, start). */
static void
summarize_streams(TpsTraceSummary *s, const TpsTrace *trace, const TpsTraceKernel *ks, guint n)
{
    GArray *streams = g_array_new(FALSE, TRUE, sizeof(TpsStreamFigures));
    for (guint i = 0; i < n;) {
        guint j = i;
        gint64 busy = 0, cur_s = ks[i].ts_ns, cur_e = ks[i].ts_ns;
        for (; j < n && ks[j].device == ks[i].device && ks[j].stream == ks[i].stream; j++) {
            if (ks[j].ts_ns > cur_e) {
                busy += cur_e - cur_s;
                cur_s = ks[j].ts_ns;
            }
            cur_e = MAX(cur_e, ks[j].ts_ns + ks[j].dur_ns);
        }
        busy += cur_e - cur_s;
        TpsStreamFigures f = {
            .device = ks[i].device,
            .stream = ks[i].stream,
            .kernels = j - i,
            .busy_ms = (double)busy * 1e-6,
            .name = g_strdup(tps_trace_stream_name(trace, ks[i].device, ks[i].stream))};
        g_array_append_val(streams, f);
        i = j;
    }
    s->n_streams = streams->len;
    s->streams = (TpsStreamFigures *)(void *)g_array_free(streams, FALSE);
}

/* Kernels and time per class, the devices, the span, and the rate of the
 * GEMM kernels of known shape (each op's work counted once). */
static void
summarize_classes(TpsTraceSummary *s, const TpsTraceKernel *ks, guint n)
{
    gint64 cls_ns[TPS_KERNEL_CLASS_COUNT] = {0};
    gint64 first = G_MAXINT64, last = G_MININT64;
    g_autoptr(GHashTable) devices = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GHashTable) ops_seen =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    double gemm_flops = 0;
    gint64 gemm_shaped_ns = 0;
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &ks[i];
        s->classes[k->klass].count++;
        cls_ns[k->klass] += k->dur_ns;
        first = MIN(first, k->ts_ns);
        last = MAX(last, k->ts_ns + k->dur_ns);
        g_hash_table_add(devices, (gpointer)&k->device);
        if (k->klass == TPS_KERNEL_GEMM && k->m > 0) {
            s->gemm_shaped++;
            gemm_shaped_ns += k->dur_ns;
            if (!g_hash_table_contains(ops_seen, &k->op_id)) {
                gint64 *key = g_new(gint64, 1);
                *key = k->op_id;
                g_hash_table_add(ops_seen, key);
                gemm_flops += 2.0 * (double)k->batch * (double)k->m * (double)k->n * (double)k->k;
            }
        }
    }
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        s->classes[c].total_ms = (double)cls_ns[c] * 1e-6;
    s->devices = g_hash_table_size(devices);
    s->span_ms = n ? (double)(last - first) * 1e-6 : 0.0;
    s->gemm_shaped_ms = (double)gemm_shaped_ns * 1e-6;
    s->gemm_tflops = gemm_shaped_ns > 0 ? gemm_flops / (double)gemm_shaped_ns * 1e-3 : NAN;
}

/* Collectives: one pass over the kernels into per-name accumulators (a
 * trace with many distinct names costs linear time, not a scan of every
 * kernel per name: issue 13, D8), then sorted by name. */
static void
summarize_collectives(TpsTraceSummary *s, const TpsTraceKernel *ks, guint n, gboolean tpsim)
{
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GPtrArray) accs = g_ptr_array_new_with_free_func((GDestroyNotify)coll_acc_free);
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &ks[i];
        if (k->klass != TPS_KERNEL_NCCL)
            continue;
        /* tpsim names its collectives; its other communication tasks
         * (userbuffers flags, the receives of a ring exchange) are none. */
        if (tpsim && k->collective == NULL)
            continue;
        const char *name = k->collective ? k->collective : "Unknown";
        CollAcc *acc = g_hash_table_lookup(by_name, name);
        if (acc == NULL) {
            acc = coll_acc_new(name);
            g_ptr_array_add(accs, acc);
            g_hash_table_insert(by_name, (gpointer)name, acc);
        }
        coll_acc_add(acc, k);
    }
    g_ptr_array_sort(accs, cmp_coll_acc);
    s->n_collectives = accs->len;
    s->collectives = g_new0(TpsCollectiveFigures, MAX(accs->len, 1));
    for (guint c = 0; c < accs->len; c++)
        coll_acc_finish(g_ptr_array_index(accs, c), &s->collectives[c]);
}

/* The fraction of NCCL kernel time that other kernels of the same device
 * overlap. */
static double
comm_overlapped_fraction(const TpsTraceKernel *ks, guint n)
{
    gint64 nccl_ns = 0, overlapped_ns = 0;
    g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(Span));
    for (guint i = 0; i < n;) {
        guint j = i;
        while (j < n && ks[j].device == ks[i].device)
            j++;
        g_array_set_size(spans, 0);
        for (guint q = i; q < j; q++)
            if (ks[q].klass != TPS_KERNEL_NCCL) {
                Span sp = {ks[q].ts_ns, ks[q].ts_ns + ks[q].dur_ns};
                g_array_append_val(spans, sp);
            }
        guint m = merge_spans((Span *)(void *)spans->data, spans->len);
        for (guint q = i; q < j; q++)
            if (ks[q].klass == TPS_KERNEL_NCCL) {
                nccl_ns += ks[q].dur_ns;
                overlapped_ns += covered((Span *)(void *)spans->data, m, ks[q].ts_ns,
                                         ks[q].ts_ns + ks[q].dur_ns);
            }
        i = j;
    }
    return nccl_ns > 0 ? (double)overlapped_ns / (double)nccl_ns : 0.0;
}

TpsTraceSummary *
tps_trace_summarize(const TpsTrace *trace)
{
    g_return_val_if_fail(trace != NULL, NULL);
    TpsTraceSummary *s = g_new0(TpsTraceSummary, 1);
    s->file = g_path_get_basename(tps_trace_name(trace));
    s->gpu = g_strdup(tps_trace_gpu_name(trace));
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    summarize_streams(s, trace, ks, n);
    summarize_classes(s, ks, n);
    summarize_collectives(s, ks, n, tps_trace_format(trace) == TPS_TRACE_TPSIM);
    s->comm_overlapped_fraction = comm_overlapped_fraction(ks, n);
    return s;
}

void
tps_trace_summary_free(TpsTraceSummary *s)
{
    if (s == NULL)
        return;
    g_free(s->file);
    g_free(s->gpu);
    for (guint i = 0; i < s->n_collectives; i++) {
        g_free(s->collectives[i].name);
        g_free(s->collectives[i].algorithms);
    }
    g_free(s->collectives);
    for (guint i = 0; i < s->n_streams; i++)
        g_free(s->streams[i].name);
    g_free(s->streams);
    g_free(s);
}

/* ---------------------------------------------------------------------- */
/* Output                                                                  */

char *
tps_trace_summary_to_json(const TpsTraceSummary *s)
{
    GString *o = g_string_new("{\n  \"file\": ");
    tps_report_json_string(o, s->file);
    g_string_append(o, ", \"gpu\": ");
    tps_report_json_string(o, s->gpu);
    g_string_append(o, ",\n  \"classes\": {");
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++) {
        g_string_append_printf(
            o, "%s\"%s\": {\"count\": %u, \"total_ms\": ", c ? ",\n              " : "",
            tps_kernel_class_name(c), s->classes[c].count);
        tps_report_json_number(o, s->classes[c].total_ms, 3);
        g_string_append(o, "}");
    }
    g_string_append(o, "},\n  \"collectives\": [");
    for (guint i = 0; i < s->n_collectives; i++) {
        const TpsCollectiveFigures *f = &s->collectives[i];
        g_string_append(o, i ? ",\n                  {\"name\": " : "{\"name\": ");
        tps_report_json_string(o, f->name);
        g_string_append_printf(o, ", \"count\": %u, \"median_us\": ", f->count);
        tps_report_json_number(o, f->median_us, 3);
        g_string_append(o, ", \"median_bytes\": ");
        tps_report_json_number(o, f->median_bytes, 1);
        g_string_append(o, ", \"busbw_GBps\": ");
        tps_report_json_number(o, f->busbw_gbps, 3);
        g_string_append(o, "}");
    }
    g_string_append(o, "],\n  \"streams\": [");
    for (guint i = 0; i < s->n_streams; i++) {
        const TpsStreamFigures *f = &s->streams[i];
        g_string_append_printf(o,
                               "%s{\"device\": %" G_GINT64_FORMAT ", \"stream\": %" G_GINT64_FORMAT
                               ", \"kernels\": %u, \"busy_ms\": ",
                               i ? ",\n              " : "", f->device, f->stream, f->kernels);
        tps_report_json_number(o, f->busy_ms, 3);
        g_string_append(o, "}");
    }
    g_string_append(o, "],\n  \"comm_overlapped_fraction\": ");
    tps_report_json_number(o, s->comm_overlapped_fraction, 4);
    g_string_append(o, "\n}\n");
    return g_string_free(o, FALSE);
}

char *
tps_trace_summary_to_table(const TpsTraceSummary *s)
{
    GString *o = g_string_new(NULL);
    g_string_append_printf(o, "Trace   %s\nGPU     %s\n", s->file,
                           s->gpu ? s->gpu : "(not in the trace)");
    g_string_append_printf(o, "Span    %.3f ms on %u device%s\n\n", s->span_ms, s->devices,
                           s->devices == 1 ? "" : "s");
    double total = 0;
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        total += s->classes[c].total_ms;
    g_string_append(o, "class      kernels   total ms   share\n");
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        g_string_append_printf(o, "%-8s %9u %10.3f %6.1f%%\n", tps_kernel_class_name(c),
                               s->classes[c].count, s->classes[c].total_ms,
                               total > 0 ? 100.0 * s->classes[c].total_ms / total : 0.0);
    if (s->n_collectives) {
        g_string_append(
            o,
            "\ncollective      count  median us  median bytes  busbw GB/s  algorithm/protocol\n");
        for (guint i = 0; i < s->n_collectives; i++) {
            const TpsCollectiveFigures *f = &s->collectives[i];
            g_string_append_printf(o, "%-14s %6u ", f->name, f->count);
            tps_report_cell(o, f->median_us, 10, 1);
            tps_report_cell(o, f->median_bytes, 14, 0);
            tps_report_cell(o, f->busbw_gbps, 12, 2);
            g_string_append_printf(o, "  %s\n",
                                   f->algorithms && *f->algorithms ? f->algorithms : "-");
        }
    }
    g_string_append(o, "\ndevice  stream  kernels    busy ms  name\n");
    for (guint i = 0; i < s->n_streams; i++) {
        const TpsStreamFigures *f = &s->streams[i];
        g_string_append_printf(o, "%6" G_GINT64_FORMAT "  %6" G_GINT64_FORMAT "  %7u %10.3f  %s\n",
                               f->device, f->stream, f->kernels, f->busy_ms,
                               f->name ? f->name : "");
    }
    g_string_append_printf(o, "\nNCCL time overlapped by other kernels: %.1f%%\n",
                           100.0 * s->comm_overlapped_fraction);
    if (s->gemm_shaped > 0)
        g_string_append_printf(o, "GEMMs with shapes: %u of %u kernels, %.3f ms, %.2f TFLOP/s\n",
                               s->gemm_shaped, s->classes[TPS_KERNEL_GEMM].count, s->gemm_shaped_ms,
                               s->gemm_tflops);
    return g_string_free(o, FALSE);
}
