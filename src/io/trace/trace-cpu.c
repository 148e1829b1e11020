/* The CPU side of Kineto traces (trace-cpu.h): one streaming pass keeps
 * the CPU ops, the runtime calls and the GPU activities of a trace, then
 * each thread's events are walked in time order to take the samples. */
#include "io/trace/trace-cpu.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "io/trace/json-stream.h"
#include "io/trace/trace-import.h"

/* Above this median aten::view duration a trace is not used (trace-cpu.h). */
#define VIEW_LIMIT_US 2.0

static const char *const class_names[TPS_CPU_CLASS_COUNT] = {
    [TPS_CPU_GEMM] = "gemm",
    [TPS_CPU_ELEMENTWISE] = "elementwise",
    [TPS_CPU_NCCL] = "nccl",
    [TPS_CPU_MEMCPY] = "memcpy",
    [TPS_CPU_LAUNCH] = "launch",
    [TPS_CPU_EVENT_RECORD] = "event_record",
    [TPS_CPU_STREAM_WAIT] = "stream_wait",
    [TPS_CPU_GRAPH_LAUNCH] = "graph_launch",
    [TPS_CPU_LAUNCH_TO_START] = "launch_to_start",
};

const char *
tps_cpu_class_name(TpsCpuClass klass)
{
    g_return_val_if_fail((guint)klass < TPS_CPU_CLASS_COUNT, "unknown");
    return class_names[klass];
}

/* What a runtime call is. */
typedef enum {
    CALL_OTHER,
    CALL_KERNEL, /* cudaLaunchKernel, cudaLaunchKernelExC, cuLaunchKernel(Ex) */
    CALL_MEMCPY,
    CALL_MEMSET,
    CALL_EVENT_RECORD,
    CALL_STREAM_WAIT,
    CALL_GRAPH_LAUNCH,
    CALL_SYNC, /* blocks the thread: stream, event or device synchronize, cudaMemcpy */
} CallKind;

static const struct {
    const char *name;
    CallKind kind;
} call_names[] = {
    {"cudaLaunchKernel", CALL_KERNEL},         {"cudaLaunchKernelExC", CALL_KERNEL},
    {"cuLaunchKernel", CALL_KERNEL},           {"cuLaunchKernelEx", CALL_KERNEL},
    {"cudaMemcpyAsync", CALL_MEMCPY},          {"cudaMemsetAsync", CALL_MEMSET},
    {"cudaEventRecord", CALL_EVENT_RECORD},    {"cudaEventRecordWithFlags", CALL_EVENT_RECORD},
    {"cudaStreamWaitEvent", CALL_STREAM_WAIT}, {"cudaGraphLaunch", CALL_GRAPH_LAUNCH},
    {"cudaStreamSynchronize", CALL_SYNC},      {"cudaDeviceSynchronize", CALL_SYNC},
    {"cudaEventSynchronize", CALL_SYNC},       {"cudaMemcpy", CALL_SYNC},
};

static CallKind
call_kind(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(call_names); i++)
        if (strcmp(name, call_names[i].name) == 0)
            return call_names[i].kind;
    return CALL_OTHER;
}

static gboolean
launches(CallKind kind)
{
    return kind == CALL_KERNEL || kind == CALL_MEMCPY || kind == CALL_MEMSET;
}

/* A CPU op (call = -1) or a runtime call on one thread. */
typedef struct {
    gint64 pid, tid;
    gint64 ts, end; /* ns */
    gint64 correlation;
    gint call; /* CallKind, or -1 for an op */
} CpuEvent;

/* A GPU activity: what a launch call launched. */
typedef struct {
    gint64 device, stream;
    gint64 ts, end;
    gint64 correlation;
    TpsCpuClass klass; /* GEMM, ELEMENTWISE, NCCL or MEMCPY */
} GpuEvent;

typedef struct {
    GArray *cpu;   /* CpuEvent */
    GArray *gpu;   /* GpuEvent */
    GArray *views; /* double: aten::view durations in us */
} Pass;

typedef struct {
    char *name;
    double view_us;
    gboolean used;
    GArray *samples[TPS_CPU_CLASS_COUNT]; /* double, us, sorted */
} TraceSamples;

struct TpsCpuProfile {
    GPtrArray *traces; /* TraceSamples */
};

/* ---- Reading the events ---- */

/* pid and tid: numbers, or strings (some traces name threads). */
static gint64
thread_id(const TpsJsonTree *a, TpsJsonNode node)
{
    gint64 v;
    if (tps_json_tree_int(a, node, &v))
        return v;
    const char *s = tps_json_tree_text(a, node);
    return s != NULL ? -(gint64)g_str_hash(s) - 1 : G_MININT64;
}

static gboolean
span_ns(const TpsJsonTree *a, TpsJsonNode ev, gint64 *ts, gint64 *end)
{
    gint64 dur;
    if (!tps_json_tree_thousandths(a, tps_json_tree_member(a, ev, "ts"), ts) ||
        !tps_json_tree_thousandths(a, tps_json_tree_member(a, ev, "dur"), &dur) || dur < 0 ||
        *ts > G_MAXINT64 / 2 || dur > G_MAXINT64 / 4)
        return FALSE;
    *end = *ts + dur;
    return TRUE;
}

static void
visit(const TpsJsonTree *a, TpsJsonNode ev, gpointer data)
{
    Pass *p = data;
    const char *ph = tps_json_tree_member_string(a, ev, "ph");
    const char *cat = tps_json_tree_member_string(a, ev, "cat");
    const char *name = tps_json_tree_member_string(a, ev, "name");
    if (ph == NULL || cat == NULL || name == NULL || strcmp(ph, "X") != 0)
        return;
    gint64 ts, end;
    if (!span_ns(a, ev, &ts, &end))
        return;
    TpsJsonNode args = tps_json_tree_member(a, ev, "args");
    gint64 correlation = -1;
    tps_json_tree_member_int(a, args, "correlation", &correlation);

    if (strcmp(cat, "cpu_op") == 0 || strcmp(cat, "cuda_runtime") == 0 ||
        strcmp(cat, "cuda_driver") == 0) {
        gboolean op = strcmp(cat, "cpu_op") == 0;
        CpuEvent e = {
            .pid = thread_id(a, tps_json_tree_member(a, ev, "pid")),
            .tid = thread_id(a, tps_json_tree_member(a, ev, "tid")),
            .ts = ts,
            .end = end,
            .correlation = correlation,
            .call = op ? -1 : (gint)call_kind(name),
        };
        g_array_append_val(p->cpu, e);
        if (op && strcmp(name, "aten::view") == 0) {
            double us = (double)(end - ts) * 1e-3;
            g_array_append_val(p->views, us);
        }
        return;
    }
    TpsCpuClass klass;
    if (strcmp(cat, "kernel") == 0) {
        TpsKernelClass k = tps_trace_classify(name);
        klass = k == TPS_KERNEL_GEMM   ? TPS_CPU_GEMM
                : k == TPS_KERNEL_NCCL ? TPS_CPU_NCCL
                                       : TPS_CPU_ELEMENTWISE;
    } else if (strcmp(cat, "gpu_memcpy") == 0) {
        klass = TPS_CPU_MEMCPY;
    } else if (strcmp(cat, "gpu_memset") == 0) {
        klass = TPS_CPU_ELEMENTWISE;
    } else {
        return;
    }
    if (correlation < 0)
        return;
    GpuEvent g = {
        .device = thread_id(a, tps_json_tree_member(a, ev, "pid")),
        .stream = thread_id(a, tps_json_tree_member(a, ev, "tid")),
        .ts = ts,
        .end = end,
        .correlation = correlation,
        .klass = klass,
    };
    g_array_append_val(p->gpu, g);
}

/* ---- Samples ---- */

static int
cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Thread, then time; an op before a call that starts with it, and the
 * longer of two ops first (the outer one). */
static int
cmp_cpu(gconstpointer pa, gconstpointer pb)
{
    const CpuEvent *a = pa, *b = pb;
    const int order = tps_trace_cmp_thread_time(a->pid, a->tid, a->ts, b->pid, b->tid, b->ts);
    if (order != 0)
        return order;
    if ((a->call < 0) != (b->call < 0))
        return a->call < 0 ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end;
}

static int
cmp_gpu(gconstpointer pa, gconstpointer pb)
{
    const GpuEvent *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

static void
add_sample(TraceSamples *t, TpsCpuClass klass, gint64 ns)
{
    double us = (double)ns * 1e-3;
    g_array_append_val(t->samples[klass], us);
}

/* An outermost op being walked: the one thing it launched (or none), and
 * whether it launched more or synchronised. */
typedef struct {
    const CpuEvent *op;
    const CpuEvent *launch;
    guint launches;
    gboolean synced;
} OuterOp;

/* The sample of a finished outer op `cur`, after `prev` (NULL: the first
 * on its thread). */
static void
close_op(TraceSamples *t, GHashTable *by_corr, const OuterOp *prev, const OuterOp *cur)
{
    if (cur->op == NULL || cur->launches != 1 || cur->synced || prev == NULL || prev->op == NULL ||
        prev->synced)
        return;
    const GpuEvent *g = g_hash_table_lookup(by_corr, &cur->launch->correlation);
    if (g == NULL)
        return;
    TpsCpuClass klass = cur->launch->call == CALL_MEMCPY   ? TPS_CPU_MEMCPY
                        : cur->launch->call == CALL_MEMSET ? TPS_CPU_ELEMENTWISE
                                                           : g->klass;
    if (klass == TPS_CPU_MEMCPY && cur->launch->call != CALL_MEMCPY)
        return; /* a kernel correlated to a copy: inconsistent, skip */
    add_sample(t, klass, (cur->op->end - cur->op->ts) + (cur->op->ts - prev->op->end));
}

/* The GPU activities by correlation id (`by_corr`), and the end of the
 * activity before each on its stream (`before`, into `prev_end`, one per
 * activity), `gpu` sorted by (device, stream, start). */
static void
index_launched(GArray *gpu, GHashTable *by_corr, GHashTable *before, gint64 *prev_end)
{
    for (guint i = 0; i < gpu->len; i++) {
        GpuEvent *g = &g_array_index(gpu, GpuEvent, i);
        const GpuEvent *q = i > 0 ? &g_array_index(gpu, GpuEvent, i - 1) : NULL;
        prev_end[i] =
            q != NULL && q->device == g->device && q->stream == g->stream ? q->end : G_MININT64;
        g_hash_table_insert(by_corr, &g->correlation, g);
        g_hash_table_insert(before, &g->correlation, &prev_end[i]);
    }
}

/* The samples of a runtime call `e` of its own: its time by kind, and for
 * a launch onto an idle stream the time to its activity's start. */
static void
sample_call(TraceSamples *t, const CpuEvent *e, GHashTable *by_corr, GHashTable *before)
{
    switch ((CallKind)e->call) {
    case CALL_KERNEL:
    case CALL_MEMCPY:
    case CALL_MEMSET: {
        add_sample(t, TPS_CPU_LAUNCH, e->end - e->ts);
        const GpuEvent *g = g_hash_table_lookup(by_corr, &e->correlation);
        const gint64 *idle_since = g_hash_table_lookup(before, &e->correlation);
        if (g != NULL && idle_since != NULL && *idle_since <= e->ts && g->ts >= e->ts)
            add_sample(t, TPS_CPU_LAUNCH_TO_START, g->ts - e->ts);
        break;
    }
    case CALL_EVENT_RECORD:
        add_sample(t, TPS_CPU_EVENT_RECORD, e->end - e->ts);
        break;
    case CALL_STREAM_WAIT:
        add_sample(t, TPS_CPU_STREAM_WAIT, e->end - e->ts);
        break;
    case CALL_GRAPH_LAUNCH:
        add_sample(t, TPS_CPU_GRAPH_LAUNCH, e->end - e->ts);
        break;
    case CALL_SYNC:
    case CALL_OTHER:
        break;
    }
}

static void
take_samples(Pass *p, TraceSamples *t)
{
    g_array_sort(p->cpu, cmp_cpu);
    g_array_sort(p->gpu, cmp_gpu);

    /* What each launch launched, and whether its stream was idle then:
     * the end of the activity before it on the same stream. */
    g_autoptr(GHashTable) by_corr = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GHashTable) before = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autofree gint64 *prev_end = g_new(gint64, MAX(p->gpu->len, 1u));
    index_launched(p->gpu, by_corr, before, prev_end);

    OuterOp prev = {0}, cur = {0};
    gboolean have_prev = FALSE;
    for (guint i = 0; i < p->cpu->len; i++) {
        const CpuEvent *e = &g_array_index(p->cpu, CpuEvent, i);
        const CpuEvent *last = i > 0 ? &g_array_index(p->cpu, CpuEvent, i - 1) : NULL;
        if (last == NULL || last->pid != e->pid || last->tid != e->tid) {
            /* A new thread: close the last op of the previous one. */
            close_op(t, by_corr, have_prev ? &prev : NULL, &cur);
            memset(&prev, 0, sizeof prev);
            memset(&cur, 0, sizeof cur);
            have_prev = FALSE;
        }
        if (e->call < 0) {
            if (cur.op != NULL && e->ts < cur.op->end)
                continue; /* inside the current outer op */
            close_op(t, by_corr, have_prev ? &prev : NULL, &cur);
            if (cur.op != NULL) {
                prev = cur;
                have_prev = TRUE;
            }
            cur = (OuterOp){.op = e};
            continue;
        }
        /* A runtime call: its own sample, and its outer op's count. */
        sample_call(t, e, by_corr, before);
        if (cur.op == NULL || e->ts >= cur.op->end) {
            /* Outside any op: a sync there still makes the next gap a wait. */
            if (e->call == CALL_SYNC && cur.op != NULL)
                cur.synced = TRUE;
            continue;
        }
        if (launches((CallKind)e->call)) {
            cur.launches++;
            cur.launch = e;
        } else if (e->call == CALL_SYNC) {
            cur.synced = TRUE;
        }
    }
    close_op(t, by_corr, have_prev ? &prev : NULL, &cur);
    for (guint k = 0; k < TPS_CPU_CLASS_COUNT; k++)
        g_array_sort(t->samples[k], cmp_double);
}

/* ---- The profile ---- */

static void
trace_samples_free(gpointer data)
{
    TraceSamples *t = data;
    g_free(t->name);
    for (guint k = 0; k < TPS_CPU_CLASS_COUNT; k++)
        g_array_unref(t->samples[k]);
    g_free(t);
}

TpsCpuProfile *
tps_cpu_profile_new(void)
{
    TpsCpuProfile *profile = g_new0(TpsCpuProfile, 1);
    profile->traces = g_ptr_array_new_with_free_func(trace_samples_free);
    return profile;
}

void
tps_cpu_profile_free(TpsCpuProfile *profile)
{
    if (profile == NULL)
        return;
    g_ptr_array_unref(profile->traces);
    g_free(profile);
}

/* The value at rank round(p (n - 1)) of sorted `v`. */
static double
quantile(const GArray *v, double p)
{
    if (v->len == 0)
        return 0.0;
    guint i = (guint)floor(p * (v->len - 1) + 0.5);
    return g_array_index(v, double, MIN(i, v->len - 1));
}

gboolean
tps_cpu_profile_add_stream(TpsCpuProfile *profile, GInputStream *stream, const char *name,
                           GError **error)
{
    g_return_val_if_fail(profile != NULL && name != NULL, FALSE);
    Pass p = {
        .cpu = g_array_new(FALSE, FALSE, sizeof(CpuEvent)),
        .gpu = g_array_new(FALSE, FALSE, sizeof(GpuEvent)),
        .views = g_array_new(FALSE, FALSE, sizeof(double)),
    };
    gboolean ok = tps_trace_read_events(stream, name, visit, &p, NULL, error);
    if (ok) {
        TraceSamples *t = g_new0(TraceSamples, 1);
        t->name = g_strdup(name);
        for (guint k = 0; k < TPS_CPU_CLASS_COUNT; k++)
            t->samples[k] = g_array_new(FALSE, FALSE, sizeof(double));
        g_array_sort(p.views, cmp_double);
        t->view_us = p.views->len > 0 ? quantile(p.views, 0.5) : -1.0;
        t->used = t->view_us <= VIEW_LIMIT_US;
        take_samples(&p, t);
        g_ptr_array_add(profile->traces, t);
    }
    g_array_unref(p.cpu);
    g_array_unref(p.gpu);
    g_array_unref(p.views);
    return ok;
}

gboolean
tps_cpu_profile_add_file(TpsCpuProfile *profile, const char *path, GError **error)
{
    g_return_val_if_fail(profile != NULL && path != NULL, FALSE);
    g_autoptr(GFile) file = g_file_new_for_path(path);
    GError *local = NULL;
    g_autoptr(GFileInputStream) in = g_file_read(file, NULL, &local);
    if (in == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, local->message);
        g_error_free(local);
        return FALSE;
    }
    return tps_cpu_profile_add_stream(profile, G_INPUT_STREAM(in), path, error);
}

guint
tps_cpu_profile_n_traces(const TpsCpuProfile *profile)
{
    g_return_val_if_fail(profile != NULL, 0);
    return profile->traces->len;
}

static const TraceSamples *
trace_at(const TpsCpuProfile *profile, guint trace)
{
    return g_ptr_array_index(profile->traces, trace);
}

const char *
tps_cpu_profile_trace_name(const TpsCpuProfile *profile, guint trace)
{
    g_return_val_if_fail(profile != NULL && trace < profile->traces->len, NULL);
    return trace_at(profile, trace)->name;
}

double
tps_cpu_profile_trace_view_us(const TpsCpuProfile *profile, guint trace)
{
    g_return_val_if_fail(profile != NULL && trace < profile->traces->len, -1.0);
    return trace_at(profile, trace)->view_us;
}

gboolean
tps_cpu_profile_trace_used(const TpsCpuProfile *profile, guint trace)
{
    g_return_val_if_fail(profile != NULL && trace < profile->traces->len, FALSE);
    return trace_at(profile, trace)->used;
}

void
tps_cpu_profile_stats(const TpsCpuProfile *profile, TpsCpuClass klass, int trace, TpsCpuStats *out)
{
    g_return_if_fail(profile != NULL && out != NULL && (guint)klass < TPS_CPU_CLASS_COUNT);
    g_return_if_fail(trace < (int)profile->traces->len);
    g_autoptr(GArray) pooled = NULL;
    const GArray *v;
    if (trace >= 0) {
        v = trace_at(profile, (guint)trace)->samples[klass];
    } else {
        pooled = g_array_new(FALSE, FALSE, sizeof(double));
        for (guint i = 0; i < profile->traces->len; i++) {
            const TraceSamples *t = trace_at(profile, i);
            if (t->used)
                g_array_append_vals(pooled, t->samples[klass]->data, t->samples[klass]->len);
        }
        g_array_sort(pooled, cmp_double);
        v = pooled;
    }
    *out = (TpsCpuStats){
        .n = v->len,
        .p25 = quantile(v, 0.25),
        .median = quantile(v, 0.5),
        .p75 = quantile(v, 0.75),
    };
}

char *
tps_cpu_profile_to_table(const TpsCpuProfile *profile)
{
    g_return_val_if_fail(profile != NULL, NULL);
    GString *out = g_string_new(NULL);
    g_string_append_printf(out,
                           "traces (used when their aten::view ops take at most %.0f us at "
                           "the median: more is the profiler's own cost)\n",
                           VIEW_LIMIT_US);
    for (guint i = 0; i < profile->traces->len; i++) {
        const TraceSamples *t = trace_at(profile, i);
        g_autofree char *base = g_path_get_basename(t->name);
        if (t->view_us < 0)
            g_string_append_printf(out, "  %-2u %-40s aten::view   none  %s\n", i + 1, base,
                                   t->used ? "used" : "not used");
        else
            g_string_append_printf(out, "  %-2u %-40s aten::view %6.1f  %s\n", i + 1, base,
                                   t->view_us, t->used ? "used" : "not used");
    }
    g_string_append(out, "\nclass                 n      p25   median      p75  "
                         "median per used trace (us; -: no sample)\n");
    for (guint k = 0; k < TPS_CPU_CLASS_COUNT; k++) {
        TpsCpuStats st;
        tps_cpu_profile_stats(profile, (TpsCpuClass)k, -1, &st);
        g_string_append_printf(out, "%-16s %6u %8.1f %8.1f %8.1f ", class_names[k], st.n, st.p25,
                               st.median, st.p75);
        for (guint i = 0; i < profile->traces->len; i++) {
            if (!trace_at(profile, i)->used)
                continue;
            TpsCpuStats ts;
            tps_cpu_profile_stats(profile, (TpsCpuClass)k, (int)i, &ts);
            if (ts.n == 0)
                g_string_append_printf(out, " %u:-", i + 1);
            else
                g_string_append_printf(out, " %u:%.1f", i + 1, ts.median);
        }
        g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}
