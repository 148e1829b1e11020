/* The summary of a trace (trace-summary.h): figures per class, collective
 * and stream, the overlap of NCCL time, and its two output formats.
 */
#include "io/trace-summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/stats.h"
#include "io/report-text.h"

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

static int
cmp_collective(gconstpointer pa, gconstpointer pb)
{
    return strcmp(((const TpsCollectiveFigures *)pa)->name,
                  ((const TpsCollectiveFigures *)pb)->name);
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
    gint64 cls_ns[TPS_KERNEL_CLASS_COUNT] = {0};

    /* Streams: kernels are sorted by (device, stream, start). */
    GArray *streams = g_array_new(FALSE, TRUE, sizeof(TpsStreamFigures));
    gint64 first = G_MAXINT64, last = G_MININT64;
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

    /* Collectives. */
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    GArray *colls = g_array_new(FALSE, TRUE, sizeof(TpsCollectiveFigures));
    for (guint i = 0; i < n; i++)
        if (ks[i].klass == TPS_KERNEL_NCCL) {
            const char *name = ks[i].collective ? ks[i].collective : "Unknown";
            if (!g_hash_table_contains(by_name, name)) {
                TpsCollectiveFigures f = {.name = g_strdup(name)};
                g_array_append_val(colls, f);
                g_hash_table_add(by_name, (gpointer)name);
            }
        }
    g_array_sort(colls, cmp_collective);
    for (guint c = 0; c < colls->len; c++) {
        TpsCollectiveFigures *f = &g_array_index(colls, TpsCollectiveFigures, c);
        g_autoptr(GArray) durs = g_array_new(FALSE, FALSE, sizeof(double));
        g_autoptr(GArray) bytes = g_array_new(FALSE, FALSE, sizeof(double));
        g_autoptr(GPtrArray) algos = g_ptr_array_new_with_free_func(g_free);
        double bus_bytes = 0;
        gint64 bus_ns = 0;
        gboolean bus_ok = TRUE;
        for (guint i = 0; i < n; i++) {
            const TpsTraceKernel *k = &ks[i];
            if (k->klass != TPS_KERNEL_NCCL ||
                strcmp(k->collective ? k->collective : "Unknown", f->name) != 0)
                continue;
            f->count++;
            double d = k->dur_us;
            g_array_append_val(durs, d);
            if (k->bytes >= 0) {
                double b = (double)k->bytes;
                g_array_append_val(bytes, b);
                double factor = tps_trace_busbw_factor(k->collective, k->group_size);
                if (isnan(factor))
                    bus_ok = FALSE;
                bus_bytes += b * factor;
                bus_ns += k->dur_ns;
            }
            if (k->algorithm || k->protocol) {
                g_autofree char *ap = g_strdup_printf("%s/%s", k->algorithm ? k->algorithm : "?",
                                                      k->protocol ? k->protocol : "?");
                gboolean have = FALSE;
                for (guint a = 0; a < algos->len && !have; a++)
                    have = strcmp(algos->pdata[a], ap) == 0;
                if (!have)
                    g_ptr_array_add(algos, g_steal_pointer(&ap));
            }
        }
        f->median_us = tps_median((double *)(void *)durs->data, durs->len);
        f->median_bytes = tps_median((double *)(void *)bytes->data, bytes->len);
        f->busbw_gbps = bytes->len > 0 && bus_ok && bus_ns > 0 ? bus_bytes / (double)bus_ns : NAN;
        g_ptr_array_add(algos, NULL);
        f->algorithms = g_strjoinv(", ", (char **)algos->pdata);
    }
    s->n_collectives = colls->len;
    s->collectives = (TpsCollectiveFigures *)(void *)g_array_free(colls, FALSE);

    /* Communication overlapped by compute, per device. */
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
    s->comm_overlapped_fraction = nccl_ns > 0 ? (double)overlapped_ns / (double)nccl_ns : 0.0;
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
        g_string_append(o, ", \"busbw_gbps\": ");
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

