/* Chrome trace event format export: see trace-export.h. */
#include "render/trace-export.h"
#include "render/span-order.h"

#include <string.h>

#include "core/output.h"
#include "core/text.h"

#define TID_LINK 100000u  /* + dst * 64 + row */
#define TID_CHILD 200000u /* tasks without a stream that are not flows */
#define TID_EXPOSED 300000u

static void
append_json_string(GString *s, const char *text)
{
    g_string_append_c(s, '"');
    for (const char *p = text ? text : ""; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            g_string_append_printf(s, "\\%c", c);
        else if (c < 0x20)
            g_string_append_printf(s, "\\u%04x", c);
        else
            g_string_append_c(s, (char)c);
    }
    g_string_append_c(s, '"');
}

/* Nanoseconds as microseconds with three decimals, whatever the locale. */
static void
append_us(GString *s, TpsTime ns)
{
    g_string_append_printf(s, "%" G_GUINT64_FORMAT ".%03u", (guint64)(ns / 1000),
                           (guint)(ns % 1000));
}

static void
append_double(GString *s, double v)
{
    char buf[TPS_TEXT_DOUBLE_LEN];
    g_string_append(s, tps_text_double(buf, v));
}

static void
meta(GString *s, const char *what, guint pid, guint tid, gboolean thread, const char *name)
{
    g_string_append_printf(s, ",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u", what, pid);
    if (thread)
        g_string_append_printf(s, ",\"tid\":%u", tid);
    g_string_append(s, ",\"args\":{\"name\":");
    append_json_string(s, name);
    g_string_append(s, "}}");
}

static void
sort_meta(GString *s, const char *what, guint pid, guint tid, gboolean thread, guint index)
{
    g_string_append_printf(s, ",\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u", what, pid);
    if (thread)
        g_string_append_printf(s, ",\"tid\":%u", tid);
    g_string_append_printf(s, ",\"args\":{\"sort_index\":%u}}", index);
}

/* The names and sort order of a run's processes (its ranks) and of their
 * stream threads. */
static void
name_processes(GString *s, const TpsRun *rec, guint run)
{
    for (guint r = 0; r < rec->ranks; r++) {
        g_autofree char *pname = g_strdup_printf("%s GPU%u", rec->label, r);
        meta(s, "process_name", 1000 * run + r + 1, 0, FALSE, pname);
        sort_meta(s, "process_sort_index", 1000 * run + r + 1, 0, FALSE, 1000 * run + r);
    }
    for (guint st = 0; st < rec->streams->len; st++) {
        guint pid = 1000 * run + tps_run_stream(rec, st)->rank + 1;
        meta(s, "thread_name", pid, st + 1, TRUE, tps_run_stream(rec, st)->name);
        sort_meta(s, "thread_sort_index", pid, st + 1, TRUE, st);
    }
}

/* The thread of each task into tid_of: its stream's, a row of its (src,
 * dst) link for a flow or copy without a stream (rows so that a thread's
 * events never overlap, each row's thread named), else the kernel parts'. */
static void
assign_threads(GString *s, const TpsRun *rec, guint run, guint *tid_of)
{
    const guint ntasks = tps_run_n_spans(rec);
    g_autoptr(GArray) flows = g_array_new(FALSE, FALSE, sizeof(TpsSpanStart));
    for (TpsTaskId id = 0; id < ntasks; id++) {
        const TpsSpan *sp = tps_run_span(rec, id);
        if (sp->stream != TPS_STREAM_NONE) {
            tid_of[id] = sp->stream + 1;
        } else if (sp->kind == TPS_KIND_FLOW || sp->kind == TPS_KIND_COPY) {
            TpsSpanStart it = {sp->start, id};
            g_array_append_val(flows, it);
        } else {
            tid_of[id] = TID_CHILD;
        }
    }
    g_array_sort(flows, tps_span_start_cmp);
    /* Per (src, dst): end times of its rows. */
    g_autoptr(GHashTable) rows =
        g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
    g_autoptr(GHashTable) named = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint i = 0; i < flows->len; i++) {
        TpsTaskId id = g_array_index(flows, TpsSpanStart, i).id;
        const TpsSpan *sp = tps_run_span(rec, id);
        guint dst = tps_run_dst_rank(rec, id);
        gpointer key = GUINT_TO_POINTER(sp->rank * rec->ranks + dst + 1);
        GArray *ends = g_hash_table_lookup(rows, key);
        if (ends == NULL) {
            ends = g_array_new(FALSE, FALSE, sizeof(TpsTime));
            g_hash_table_insert(rows, key, ends);
        }
        guint r;
        for (r = 0; r < ends->len; r++)
            if (g_array_index(ends, TpsTime, r) <= sp->start)
                break;
        if (r == ends->len)
            g_array_append_val(ends, sp->end);
        else
            g_array_index(ends, TpsTime, r) = sp->end;
        guint tid = TID_LINK + dst * 64 + MIN(r, 63u);
        tid_of[id] = tid;
        guint pid = 1000 * run + sp->rank + 1;
        gpointer nkey = GUINT_TO_POINTER(pid * 1000003u + tid);
        if (!g_hash_table_contains(named, nkey)) {
            g_hash_table_add(named, nkey);
            g_autofree char *tname = r == 0 ? g_strdup_printf("NVLink → GPU%u", dst)
                                            : g_strdup_printf("NVLink → GPU%u #%u", dst, r + 1);
            meta(s, "thread_name", pid, tid, TRUE, tname);
            sort_meta(s, "thread_sort_index", pid, tid, TRUE, 1000 + dst * 64 + r);
        }
    }
}

/* The GEMM slot of a task name ("l1.qkv_fprop", "l1.qkv_fprop.ag",
 * "l1r.fc1_fprop.gemm[2]"): its second dotted part; `tail` what follows it
 * ("" for the GEMM itself, "ag", "rs[2]"). -1 when none. */
static int
name_slot(const char *name, const char **tail)
{
    const char *dot = strchr(name, '.');
    if (dot == NULL)
        return -1;
    const char *part = dot + 1;
    gsize len = strcspn(part, ".[");
    for (int i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
        if (strlen(tps_gemm_slot_names[i]) == len &&
            strncmp(part, tps_gemm_slot_names[i], len) == 0) {
            *tail = part[len] == '.' ? part + len + 1 : part + len;
            return i;
        }
    return -1;
}

/* What a profiler records of the workload: a GEMM's shape, a collective's
 * name and message size (see trace-export.h). */
static void
append_workload(GString *s, const TpsSpan *sp, const TpsResult *result)
{
    const char *tail;
    int slot = result != NULL ? name_slot(sp->name, &tail) : -1;
    if (slot < 0 || !result->gemms[slot].present)
        return;
    const TpsGemmBreakdown *g = &result->gemms[slot];
    if (sp->kind == TPS_KIND_GEMM && tail[0] == '\0') {
        g_string_append_printf(s,
                               ",\"m\":%" G_GUINT64_FORMAT ",\"n\":%" G_GUINT64_FORMAT
                               ",\"k\":%" G_GUINT64_FORMAT,
                               g->m, g->n, g->k);
        return;
    }
    static const char *const colls[][2] = {
        {"ag", "AllGather"}, {"rs", "ReduceScatter"}, {"ar", "AllReduce"}};
    if (sp->kind != TPS_KIND_COMM || g->comm_bytes <= 0)
        return;
    for (guint i = 0; i < G_N_ELEMENTS(colls); i++)
        if (strcmp(tail, colls[i][0]) == 0) {
            g_string_append_printf(s, ",\"collective\":\"%s\",\"message_bytes\":", colls[i][1]);
            append_double(s, g->comm_bytes);
            return;
        }
}

/* A complete event for each task, on its thread. */
static void
export_tasks(GString *s, const TpsRun *rec, const TpsResult *result, guint run,
             const guint *tid_of)
{
    const guint ntasks = tps_run_n_spans(rec);
    gboolean child_named[1024] = {FALSE};
    for (TpsTaskId id = 0; id < ntasks; id++) {
        const TpsSpan *sp = tps_run_span(rec, id);
        guint pid = 1000 * run + sp->rank + 1;
        if (tid_of[id] == TID_CHILD && sp->rank < G_N_ELEMENTS(child_named) &&
            !child_named[sp->rank]) {
            child_named[sp->rank] = TRUE;
            meta(s, "thread_name", pid, TID_CHILD, TRUE, "kernel parts");
        }
        g_string_append(s, ",\n{\"name\":");
        append_json_string(s, sp->name);
        g_string_append_printf(s, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":",
                               tps_task_kind_name(sp->kind), pid, tid_of[id]);
        append_us(s, sp->start);
        g_string_append(s, ",\"dur\":");
        append_us(s, sp->end - sp->start);
        g_string_append(s, ",\"args\":{\"bytes\":");
        append_double(s, sp->bytes);
        g_string_append(s, ",\"flops\":");
        append_double(s, sp->flops);
        g_string_append_printf(s, ",\"sms\":%u,\"task\":%u", sp->sms, sp->id);
        if (sp->kind == TPS_KIND_FLOW || sp->kind == TPS_KIND_COPY)
            g_string_append_printf(s, ",\"dst_rank\":%u", tps_run_dst_rank(rec, id));
        append_workload(s, sp, result);
        g_string_append(s, "}}");
    }
}

/* Exposed TP communication of rank 0 (as the reports count it), on a
 * thread of its own. */
static void
export_exposed(GString *s, const TpsRun *rec, guint run)
{
    guint pid = 1000 * run + 1;
    meta(s, "thread_name", pid, TID_EXPOSED, TRUE, "exposed TP comm");
    sort_meta(s, "thread_sort_index", pid, TID_EXPOSED, TRUE, 0);
    g_autoptr(GArray) exposed = tps_run_exposed_intervals(rec, 0, 0, TPS_TIME_NEVER);
    for (guint i = 0; i < exposed->len; i++) {
        const TpsInterval *iv = &g_array_index(exposed, TpsInterval, i);
        g_string_append_printf(s,
                               ",\n{\"name\":\"exposed\",\"cat\":\"exposed\","
                               "\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":",
                               pid, TID_EXPOSED);
        append_us(s, iv->start);
        g_string_append(s, ",\"dur\":");
        append_us(s, iv->end - iv->start);
        g_string_append(s, ",\"args\":{}}");
    }
}

/* Flow arrows for dependencies that cross threads. */
static void
export_dependencies(GString *s, const TpsRun *rec, guint run, const guint *tid_of, guint64 *flow_id)
{
    for (guint e = 0; e < rec->edges->len; e++) {
        const TpsRunEdge *edge = &g_array_index(rec->edges, TpsRunEdge, e);
        const TpsTaskId pred = edge->pred, succ = edge->succ;
        const TpsEdgeKind kind = edge->kind;
        if (kind == TPS_EDGE_STREAM || kind == TPS_EDGE_HWQ || kind == TPS_EDGE_PARENT)
            continue;
        const TpsSpan *a = tps_run_span(rec, pred), *b = tps_run_span(rec, succ);
        if (a->rank == b->rank && tid_of[pred] == tid_of[succ])
            continue;
        TpsTime from = kind == TPS_EDGE_START ? a->start : a->end;
        TpsTime to = kind == TPS_EDGE_HOLD ? b->end : b->start;
        /* The "s" event must lie inside its slice to bind to it. */
        if (from > a->start && from == a->end)
            from--;
        if (to > b->start && to == b->end && kind == TPS_EDGE_HOLD)
            to--;
        guint64 fid = ++*flow_id;
        const char *name = kind == TPS_EDGE_HOLD ? "ends after" : "depends on";
        g_string_append_printf(s,
                               ",\n{\"name\":\"%s\",\"cat\":\"dependency\",\"ph\":\"s\","
                               "\"id\":%" G_GUINT64_FORMAT ",\"pid\":%u,\"tid\":%u,\"ts\":",
                               name, fid, 1000 * run + a->rank + 1, tid_of[pred]);
        append_us(s, from);
        g_string_append_printf(s,
                               "},\n{\"name\":\"%s\",\"cat\":\"dependency\",\"ph\":\"f\","
                               "\"bp\":\"e\",\"id\":%" G_GUINT64_FORMAT
                               ",\"pid\":%u,\"tid\":%u,\"ts\":",
                               name, fid, 1000 * run + b->rank + 1, tid_of[succ]);
        append_us(s, to);
        g_string_append(s, "}");
    }
}

static void
export_run(GString *s, const TpsRun *rec, const TpsResult *result, guint run, guint64 *flow_id)
{
    g_autofree guint *tid_of = g_new0(guint, tps_run_n_spans(rec));
    name_processes(s, rec, run);
    assign_threads(s, rec, run, tid_of);
    export_tasks(s, rec, result, run, tid_of);
    export_exposed(s, rec, run);
    export_dependencies(s, rec, run, tid_of, flow_id);
}

char *
tps_trace_export(TpsRun *const *records, guint n, const char *scenario_name)
{
    return tps_trace_export_results(records, NULL, n, scenario_name);
}

char *
tps_trace_export_results(TpsRun *const *records, const TpsResult *results, guint n,
                         const char *scenario_name)
{
    GString *s = g_string_sized_new(1 << 20);
    g_string_append(s,
                    "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"tpsim\",\"scenario\":");
    append_json_string(s, scenario_name);
    g_string_append(s, ",\"strategies\":[");
    for (guint i = 0; i < n; i++) {
        if (i)
            g_string_append_c(s, ',');
        append_json_string(s, records[i]->label);
    }
    g_string_append(s, "]},\n\"traceEvents\":[");
    /* Every event is written with a leading ",\n"; the first one's is
     * dropped at the end. */
    const gsize first = s->len;
    guint64 flow_id = 0;
    for (guint i = 0; i < n; i++)
        export_run(s, records[i], results != NULL ? &results[i] : NULL, i, &flow_id);
    if (s->len > first && s->str[first] == ',')
        g_string_erase(s, (gssize)first, 1);
    g_string_append(s, "\n]}\n");
    return g_string_free(s, FALSE);
}

gboolean
tps_trace_export_write(TpsRun *const *records, guint n, const char *scenario_name, const char *path,
                       GError **error)
{
    return tps_trace_export_write_results(records, NULL, n, scenario_name, path, error);
}

gboolean
tps_trace_export_write_results(TpsRun *const *records, const TpsResult *results, guint n,
                               const char *scenario_name, const char *path, GError **error)
{
    g_autofree char *text = tps_trace_export_results(records, results, n, scenario_name);
    return tps_write_atomic(path, text, strlen(text), error);
}
