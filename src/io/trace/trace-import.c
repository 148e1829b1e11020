/* Reading Kineto and tpsim Chrome traces (trace-import.h).
 *
 * Layout: the trace and its kernels; the classification of kernel names;
 * the event handlers, which keep kernels, launch events and GEMM ops from
 * each event parsed by the JSON stream (io/trace/json-stream.h); the linking of
 * GEMM kernels to their op; the walk of the top-level object and the
 * accessors; the measured kernels as a TpsRun.
 */
#include "io/trace/trace-import.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "io/trace/json-stream.h"
#include "io/trace/trace-classify.h"

/* ---------------------------------------------------------------------- */
/* The trace                                                               */

typedef struct {
    gint64 pid, tid, ts_ns;
} Launch;

typedef struct {
    gint64 pid, tid, ts_ns, end_ns;
    gint64 ext_id;
    const char *name; /* interned */
    gint64 dims[3][6];
    guint8 ndims[3]; /* 0xff: not a flat int list */
    gint64 id;       /* index in ops */
} Op;

typedef struct {
    TpsTraceKernel k;
    gint64 correlation; /* -1 */
    gint64 ext_id;      /* -1 */
} RawKernel;

typedef struct {
    gint64 id;
    char *name;
    guint sms;
} DevProp;

struct TpsTrace {
    char *name;
    TpsTraceFormat format;
    GStringChunk *strings;
    GHashTable *interned;     /* string -> itself (in `strings`) */
    GArray *kernels;          /* TpsTraceKernel, sorted */
    GArray *devprops;         /* DevProp */
    GHashTable *stream_names; /* "device:stream" -> name (in strings) */
    GHashTable *device_names; /* "device" -> name (in strings) */
    GHashTable *string_ids;   /* non-numeric pid/tid -> id */
    gint64 start_ns;
    gboolean has_trace_events;
};

typedef struct {
    TpsTrace *trace;
    TpsJsonStream *js;    /* for the position of a value out of range */
    GError **error;       /* set by the first value out of range */
    gint64 total_dur_ns;  /* of the kernels kept, at most TPS_TRACE_MAX_TOTAL_NS */
    GArray *raw;          /* RawKernel */
    GHashTable *launches; /* correlation (gint64*) -> Launch* */
    GArray *launch_store; /* Launch, indexed by value of launches */
    GArray *ops;          /* Op */
    gboolean saw_kineto_kernel;
    /* tps_trace_read_events(): every element of traceEvents goes to `visit`
     * instead of the handlers above. */
    TpsTraceEventFunc visit;
    gpointer visit_data;
} Loader;

const char *
tps_kernel_class_name(TpsKernelClass klass)
{
    static const char *const names[] = {"gemm", "nccl", "other"};
    g_return_val_if_fail((guint)klass < TPS_KERNEL_CLASS_COUNT, "other");
    return names[klass];
}

static const char *
intern(TpsTrace *t, const char *s)
{
    if (s == NULL)
        return NULL;
    const char *found = g_hash_table_lookup(t->interned, s);
    if (found)
        return found;
    char *copy = g_string_chunk_insert(t->strings, s);
    g_hash_table_add(t->interned, copy);
    return copy;
}

/* pid or tid: a number, a numeric string, or any other string (mapped to
 * an id of its own above 2^40). */
static gboolean
node_id(TpsTrace *t, const TpsJsonTree *a, TpsJsonNode i, gint64 *out)
{
    if (i == TPS_JSON_NONE)
        return FALSE;
    if (tps_json_tree_int(a, i, out))
        return TRUE;
    if (tps_json_tree_type(a, i) != TPS_JSON_STRING)
        return FALSE;
    const char *s = tps_json_tree_text(a, i);
    gpointer v;
    if (g_hash_table_lookup_extended(t->string_ids, s, NULL, &v)) {
        *out = (gint64)GPOINTER_TO_SIZE(v);
        return TRUE;
    }
    gint64 id = ((gint64)1 << 40) + g_hash_table_size(t->string_ids);
    g_hash_table_insert(t->string_ids, g_strdup(s), GSIZE_TO_POINTER((gsize)id));
    *out = id;
    return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Ranges                                                                  */

/* A value out of the ranges of trace-import.h: the trace is refused, at the
 * end of the event that holds it. Returns FALSE. */
static gboolean
out_of_range(Loader *l, const char *what, const TpsJsonTree *a, TpsJsonNode node, const char *limit)
{
    const char *text = tps_json_tree_text(a, node);
    g_set_error(l->error, TPS_ERROR, TPS_ERROR_INPUT,
                "event ending at byte %" G_GUINT64_FORMAT ": %s %s%s%s is out of range (%s)",
                tps_json_stream_offset(l->js), what, text ? "'" : "", text ? text : "",
                text ? "'" : "", limit);
    return FALSE;
}

/* A time member (microseconds) in ns: FALSE without an error when absent or
 * not a number (the event is skipped, as any incomplete event), FALSE with
 * the error set below 0 or beyond the maximum of trace-import.h. */
static gboolean
read_time(Loader *l, const TpsJsonTree *a, TpsJsonNode ev, const char *key, gboolean duration,
          gint64 *out, gboolean *bad)
{
    TpsJsonNode node = tps_json_tree_member(a, ev, key);
    if (tps_json_tree_type(a, node) != TPS_JSON_NUMBER)
        return FALSE;
    gint64 v;
    const gint64 max = duration ? TPS_TRACE_MAX_DUR_NS : TPS_TRACE_MAX_TS_NS;
    /* A negative duration is no kernel's, and a timestamp before the
     * epoch (profilers count from it or from the process's start) made a
     * trace of a few kernels span decades. */
    if (!tps_json_tree_thousandths(a, node, &v) || v > max || v < 0) {
        *bad = TRUE;
        return out_of_range(l, key, a, node,
                            duration ? "a duration is 0 to 2^61 ns, 73 years"
                                     : "a timestamp is 0 to 2^61 ns, 73 years from the epoch");
    }
    *out = v;
    return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Event handlers                                                          */

static TpsKernelClass
tpsim_kind_class(const char *cat, gboolean *is_kernel)
{
    *is_kernel = TRUE;
    if (strcmp(cat, "gemm") == 0)
        return TPS_KERNEL_GEMM;
    if (strcmp(cat, "comm") == 0)
        return TPS_KERNEL_NCCL;
    if (strcmp(cat, "attention") == 0 || strcmp(cat, "memory") == 0)
        return TPS_KERNEL_OTHER;
    *is_kernel = FALSE;
    return TPS_KERNEL_OTHER;
}

/* The collective of a tpsim task name: its last dotted part
 * ("l1.qkv_fprop.ag", "l1.fc2_fprop.rs[2]"); NULL for a communication task
 * that is no collective ("l0.qkv_fprop.ag_send.flag", a userbuffers flag;
 * "l0.qkv_fprop.ag_recv", a receive of a ring exchange). */
static const char *
tpsim_collective(const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *tail = dot ? dot + 1 : name;
    g_autofree char *part = g_strndup(tail, strcspn(tail, "["));
    if (strcmp(part, "ag") == 0)
        return "AllGather";
    if (strcmp(part, "rs") == 0)
        return "ReduceScatter";
    if (strcmp(part, "ar") == 0)
        return "AllReduce";
    return NULL;
}

/* Message bytes from an element count, within TPS_TRACE_MAX_BYTES; -1 when
 * unknown; FALSE (the error set) beyond. */
static gboolean
message_bytes(Loader *l, const TpsJsonTree *a, TpsJsonNode node, gint64 nelems, int size,
              gint64 *bytes)
{
    if (nelems < 0 || size <= 0) {
        *bytes = -1;
        return TRUE;
    }
    if (nelems > TPS_TRACE_MAX_BYTES / size)
        return out_of_range(l, "the message size", a, node, "at most 2^50 bytes");
    *bytes = nelems * size;
    return TRUE;
}

static gboolean
handle_kernel(Loader *l, const TpsJsonTree *a, TpsJsonNode ev, const char *name, gboolean tpsim,
              TpsKernelClass tpsim_class)
{
    TpsTrace *t = l->trace;
    RawKernel rk = {.correlation = -1, .ext_id = -1};
    TpsTraceKernel *k = &rk.k;
    gboolean bad = FALSE;
    if (!node_id(t, a, tps_json_tree_member(a, ev, "pid"), &k->device) ||
        !node_id(t, a, tps_json_tree_member(a, ev, "tid"), &k->stream) ||
        !read_time(l, a, ev, "ts", FALSE, &k->ts_ns, &bad) ||
        !read_time(l, a, ev, "dur", TRUE, &k->dur_ns, &bad))
        return !bad;
    /* Every sum of durations (per class, per stream, overlapped) stays
     * below the total, which stays representable. */
    if (k->dur_ns > TPS_TRACE_MAX_TOTAL_NS - l->total_dur_ns)
        return out_of_range(l, "the sum of the kernels' durations", a,
                            tps_json_tree_member(a, ev, "dur"), "at most 2^62 ns");
    l->total_dur_ns += k->dur_ns;
    k->name = intern(t, name);
    k->klass = tpsim ? tpsim_class : tps_trace_classify(name);
    k->dtype = tpsim ? TPS_TRACE_DTYPE_UNKNOWN : tps_trace_gemm_dtype(name);
    k->bytes = -1;
    k->op_id = -1;
    TpsJsonNode args = tps_json_tree_member(a, ev, "args");
    tps_json_tree_member_int(a, args, "correlation", &rk.correlation);
    tps_json_tree_member_int(a, args, "External id", &rk.ext_id);
    if (k->klass == TPS_KERNEL_NCCL) {
        const char *coll = NULL, *algo = NULL, *proto = NULL;
        tps_trace_parse_nccl_name(name, &coll, &algo, &proto);
        const char *from_arg =
            tps_trace_collective_from_arg(tps_json_tree_member_string(a, args, "Collective name"));
        if ((coll == NULL || strcmp(coll, "Generic") == 0) && from_arg)
            coll = from_arg;
        if (coll && (strcmp(coll, "Send") == 0 || strcmp(coll, "Recv") == 0))
            coll = "SendRecv";
        const char *named = tps_json_tree_member_string(a, args, "collective"); /* tpsim's export */
        if (tpsim && named)
            coll = intern(t, named);
        if (coll == NULL && tpsim)
            coll = tpsim_collective(name);
        k->collective = coll;
        k->algorithm = algo;
        k->protocol = proto;
        gint64 in_n = -1, out_n = -1, group = 0;
        tps_json_tree_member_int(a, args, "In msg nelems", &in_n);
        tps_json_tree_member_int(a, args, "Out msg nelems", &out_n);
        int size = tps_trace_dtype_size(tps_json_tree_member_string(a, args, "dtype"));
        TpsJsonNode larger =
            tps_json_tree_member(a, args, in_n >= out_n ? "In msg nelems" : "Out msg nelems");
        if (!message_bytes(l, a, larger, MAX(in_n, out_n), size, &k->bytes))
            return FALSE;
        /* tpsim's export: the message size of a whole collective, else
         * what the task moves. */
        gint64 b;
        TpsJsonNode mnode = tps_json_tree_member(a, args, "message_bytes");
        TpsJsonNode bnode = tps_json_tree_member(a, args, "bytes");
        if (k->bytes < 0 && tpsim && tps_json_tree_int(a, mnode, &b) &&
            !message_bytes(l, a, mnode, b, 1, &k->bytes))
            return FALSE;
        if (k->bytes < 0 && tps_json_tree_int(a, bnode, &b) &&
            !message_bytes(l, a, bnode, b, 1, &k->bytes))
            return FALSE;
        if (tps_json_tree_member_int(a, args, "Group size", &group) && group > 0 &&
            group < G_MAXUINT)
            k->group_size = (guint)group;
    }
    if (tpsim && k->klass == TPS_KERNEL_GEMM) {
        /* tpsim's export: the GEMM's shape on one rank. */
        gint64 m = 0, n = 0, kk = 0;
        if (tps_json_tree_member_int(a, args, "m", &m) &&
            tps_json_tree_member_int(a, args, "n", &n) &&
            tps_json_tree_member_int(a, args, "k", &kk) && m > 0 && n > 0 && kk > 0 &&
            m < (1ll << 40) && n < (1ll << 40) && kk < (1ll << 40))
            k->m = m, k->n = n, k->k = kk, k->batch = 1;
    }
    g_array_append_val(l->raw, rk);
    return TRUE;
}

static gboolean
handle_op(Loader *l, const TpsJsonTree *a, TpsJsonNode ev, const char *name)
{
    static const char *const gemm_ops[] = {"aten::_addmm_activation",
                                           "aten::addmm",
                                           "aten::baddbmm",
                                           "aten::bmm",
                                           "aten::linear",
                                           "aten::matmul",
                                           "aten::mm"};
    gboolean wanted = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(gemm_ops) && !wanted; i++)
        wanted = strcmp(name, gemm_ops[i]) == 0;
    if (!wanted)
        return TRUE;
    Op op = {.ext_id = -1};
    gint64 dur;
    gboolean bad = FALSE;
    if (!node_id(l->trace, a, tps_json_tree_member(a, ev, "pid"), &op.pid) ||
        !node_id(l->trace, a, tps_json_tree_member(a, ev, "tid"), &op.tid) ||
        !read_time(l, a, ev, "ts", FALSE, &op.ts_ns, &bad) ||
        !read_time(l, a, ev, "dur", TRUE, &dur, &bad))
        return !bad;
    op.end_ns = op.ts_ns + dur;
    op.name = intern(l->trace, name);
    TpsJsonNode args = tps_json_tree_member(a, ev, "args");
    tps_json_tree_member_int(a, args, "External id", &op.ext_id);
    TpsJsonNode dims = tps_json_tree_member(a, args, "Input Dims");
    guint input = 0;
    if (tps_json_tree_type(a, dims) == TPS_JSON_ARRAY) {
        for (TpsJsonNode in = tps_json_tree_first(a, dims); in != TPS_JSON_NONE && input < 3;
             in = tps_json_tree_next(a, in), input++) {
            guint8 nd = 0;
            if (tps_json_tree_type(a, in) != TPS_JSON_ARRAY) {
                op.ndims[input] = 0xff;
                continue;
            }
            for (TpsJsonNode d = tps_json_tree_first(a, in); d != TPS_JSON_NONE;
                 d = tps_json_tree_next(a, d)) {
                gint64 v;
                if (nd >= 6 || tps_json_tree_type(a, d) != TPS_JSON_NUMBER ||
                    !tps_json_tree_int(a, d, &v)) {
                    nd = 0xff;
                    break;
                }
                op.dims[input][nd++] = v;
            }
            op.ndims[input] = nd;
        }
    }
    for (; input < 3; input++)
        op.ndims[input] = 0xff;
    op.id = l->ops->len;
    g_array_append_val(l->ops, op);
    return TRUE;
}

static gboolean
handle_launch(Loader *l, const TpsJsonTree *a, TpsJsonNode ev)
{
    gint64 corr;
    Launch launch;
    gboolean bad = FALSE;
    if (!tps_json_tree_member_int(a, tps_json_tree_member(a, ev, "args"), "correlation", &corr) ||
        !node_id(l->trace, a, tps_json_tree_member(a, ev, "pid"), &launch.pid) ||
        !node_id(l->trace, a, tps_json_tree_member(a, ev, "tid"), &launch.tid) ||
        !read_time(l, a, ev, "ts", FALSE, &launch.ts_ns, &bad))
        return !bad;
    g_array_append_val(l->launch_store, launch);
    gint64 *key = g_new(gint64, 1);
    *key = corr;
    g_hash_table_replace(l->launches, key, GUINT_TO_POINTER(l->launch_store->len));
    return TRUE;
}

static void
handle_metadata(Loader *l, const TpsJsonTree *a, TpsJsonNode ev, const char *name)
{
    if (strcmp(name, "process_name") == 0) {
        gint64 pid;
        const char *label =
            tps_json_tree_member_string(a, tps_json_tree_member(a, ev, "args"), "name");
        if (label == NULL || !node_id(l->trace, a, tps_json_tree_member(a, ev, "pid"), &pid))
            return;
        g_autofree char *stripped = g_strstrip(g_strdup(label));
        g_hash_table_replace(l->trace->device_names, g_strdup_printf("%" G_GINT64_FORMAT, pid),
                             (gpointer)intern(l->trace, stripped));
        return;
    }
    if (strcmp(name, "thread_name") != 0)
        return;
    gint64 pid, tid;
    const char *label = tps_json_tree_member_string(a, tps_json_tree_member(a, ev, "args"), "name");
    if (label == NULL || !node_id(l->trace, a, tps_json_tree_member(a, ev, "pid"), &pid) ||
        !node_id(l->trace, a, tps_json_tree_member(a, ev, "tid"), &tid))
        return;
    char *key = g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, pid, tid);
    g_autofree char *stripped = g_strstrip(g_strdup(label)); /* Kineto: "stream 7 " */
    g_hash_table_replace(l->trace->stream_names, key, (gpointer)intern(l->trace, stripped));
}

/* FALSE when a value of the event is out of range (the loader's error
 * set); events that lack what a handler needs are skipped. */
static gboolean
handle_event(Loader *l, const TpsJsonTree *a, TpsJsonNode ev)
{
    if (tps_json_tree_type(a, ev) != TPS_JSON_OBJECT)
        return TRUE;
    const char *ph = tps_json_tree_member_string(a, ev, "ph");
    const char *name = tps_json_tree_member_string(a, ev, "name");
    const char *cat = tps_json_tree_member_string(a, ev, "cat");
    if (ph == NULL || name == NULL)
        return TRUE;
    if (strcmp(ph, "M") == 0) {
        handle_metadata(l, a, ev, name);
        return TRUE;
    }
    if (strcmp(ph, "X") != 0 || cat == NULL)
        return TRUE;
    if (strcmp(cat, "kernel") == 0 || strcmp(cat, "Kernel") == 0) {
        l->saw_kineto_kernel = TRUE;
        return handle_kernel(l, a, ev, name, FALSE, TPS_KERNEL_OTHER);
    }
    if (strcmp(cat, "cpu_op") == 0 || strcmp(cat, "Operator") == 0)
        return handle_op(l, a, ev, name);
    if (strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0 ||
        strcmp(cat, "Runtime") == 0)
        return handle_launch(l, a, ev);
    gboolean is_kernel;
    TpsKernelClass klass = tpsim_kind_class(cat, &is_kernel);
    return is_kernel ? handle_kernel(l, a, ev, name, TRUE, klass) : TRUE;
}

static void
handle_device_properties(Loader *l, const TpsJsonTree *a, TpsJsonNode arr)
{
    if (tps_json_tree_type(a, arr) != TPS_JSON_ARRAY)
        return;
    for (TpsJsonNode c = tps_json_tree_first(a, arr); c != TPS_JSON_NONE;
         c = tps_json_tree_next(a, c)) {
        DevProp d = {.id = -1};
        gint64 sms = 0;
        tps_json_tree_member_int(a, c, "id", &d.id);
        const char *name = tps_json_tree_member_string(a, c, "name");
        if (name == NULL)
            continue;
        d.name = g_strdup(name);
        if (tps_json_tree_member_int(a, c, "numSms", &sms) && sms > 0 && sms < 100000)
            d.sms = (guint)sms;
        g_array_append_val(l->trace->devprops, d);
    }
}

/* ---------------------------------------------------------------------- */
/* Linking GEMM kernels to their ops                                       */

static int
cmp_op(gconstpointer pa, gconstpointer pb)
{
    const Op *a = pa, *b = pb;
    const int order =
        tps_trace_cmp_thread_time(a->pid, a->tid, a->ts_ns, b->pid, b->tid, b->ts_ns);
    if (order != 0)
        return order;
    /* Outer (longer) first, so that scanning backwards meets inner ones first. */
    if (a->end_ns != b->end_ns)
        return a->end_ns > b->end_ns ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The product of d[from..to), or 0 when a factor is not in [1,
 * TPS_TRACE_MAX_DIM] or the product exceeds it: the shape is then unknown,
 * never wrapped. */
static gint64
prod(const gint64 *d, int from, int to)
{
    gint64 p = 1;
    for (int i = from; i < to; i++) {
        if (d[i] < 1 || d[i] > TPS_TRACE_MAX_DIM || p > TPS_TRACE_MAX_DIM / d[i])
            return 0;
        p *= d[i];
    }
    return p;
}

static gboolean
dim_ok(gint64 v)
{
    return v >= 1 && v <= TPS_TRACE_MAX_DIM;
}

/* Shape of a GEMM op from its input dims; FALSE when they do not give one. */
static gboolean
op_shape(const Op *op, gint64 *m, gint64 *n, gint64 *k, gint64 *batch)
{
    const char *name = op->name;
    int a = 0, b = 1;
    if (strcmp(name, "aten::addmm") == 0 || strcmp(name, "aten::baddbmm") == 0 ||
        strcmp(name, "aten::_addmm_activation") == 0)
        a = 1, b = 2;
    if (op->ndims[a] == 0xff || op->ndims[b] == 0xff)
        return FALSE;
    int na = op->ndims[a], nb = op->ndims[b];
    const gint64 *da = op->dims[a], *db = op->dims[b];
    *batch = 1;
    if (strcmp(name, "aten::linear") == 0) {
        if (na < 1 || nb != 2 || da[na - 1] != db[1])
            return FALSE;
        *m = prod(da, 0, na - 1), *k = da[na - 1], *n = db[0];
        return *m > 0 && dim_ok(*k) && dim_ok(*n);
    }
    if (na < 2 || nb < 2 || da[na - 1] != db[nb - 2])
        return FALSE;
    *k = da[na - 1];
    *n = db[nb - 1];
    if (nb == 2) {
        *m = prod(da, 0, na - 1);
    } else {
        *m = da[na - 2];
        *batch = prod(da, 0, na - 2);
    }
    return *m > 0 && dim_ok(*n) && dim_ok(*k) && *batch > 0;
}

static const Op *
find_op_by_launch(const Loader *l, const Launch *launch)
{
    const Op *ops = (const Op *)(void *)l->ops->data;
    guint lo = 0, hi = l->ops->len;
    /* Last op with (pid, tid, ts) <= (launch pid, tid, ts). */
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        const Op *o = &ops[mid];
        gboolean le =
            o->pid < launch->pid ||
            (o->pid == launch->pid &&
             (o->tid < launch->tid || (o->tid == launch->tid && o->ts_ns <= launch->ts_ns)));
        if (le)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Scan back for the innermost op containing the launch; ops that nest
     * are adjacent, so a short scan suffices. */
    for (guint i = lo, seen = 0; i > 0 && seen < 64; i--, seen++) {
        const Op *o = &ops[i - 1];
        if (o->pid != launch->pid || o->tid != launch->tid)
            break;
        if (o->ts_ns <= launch->ts_ns && launch->ts_ns <= o->end_ns)
            return o;
    }
    return NULL;
}

static void
link_gemms(Loader *l)
{
    g_array_sort(l->ops, cmp_op);
    g_autoptr(GHashTable) by_ext = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, NULL);
    /* Innermost wins: ops are sorted outer first, so later inserts replace. */
    for (guint i = 0; i < l->ops->len; i++) {
        Op *o = &g_array_index(l->ops, Op, i);
        if (o->ext_id >= 0)
            g_hash_table_replace(by_ext, &o->ext_id, o);
    }
    for (guint i = 0; i < l->raw->len; i++) {
        RawKernel *rk = &g_array_index(l->raw, RawKernel, i);
        if (rk->k.klass != TPS_KERNEL_GEMM)
            continue;
        const Op *op = NULL;
        /* Newer Kineto: the kernel's External id is its op's. Older: it
         * repeats the correlation id, so go through the launch. */
        if (rk->ext_id >= 0 && rk->ext_id != rk->correlation)
            op = g_hash_table_lookup(by_ext, &rk->ext_id);
        if (op == NULL && rk->correlation >= 0) {
            gpointer v = g_hash_table_lookup(l->launches, &rk->correlation);
            if (v)
                op = find_op_by_launch(
                    l, &g_array_index(l->launch_store, Launch, GPOINTER_TO_UINT(v) - 1));
        }
        if (op == NULL)
            continue;
        rk->k.op = op->name;
        rk->k.op_id = op->id;
        gint64 m, n, k, batch;
        if (op_shape(op, &m, &n, &k, &batch))
            rk->k.m = m, rk->k.n = n, rk->k.k = k, rk->k.batch = batch;
    }
}

/* ---------------------------------------------------------------------- */
/* Loading                                                                 */

static int
cmp_kernel(gconstpointer pa, gconstpointer pb)
{
    const TpsTraceKernel *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->ts_ns != b->ts_ns)
        return a->ts_ns < b->ts_ns ? -1 : 1;
    if (a->dur_ns != b->dur_ns)
        return a->dur_ns < b->dur_ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void
devprop_clear(gpointer p)
{
    g_free(((DevProp *)p)->name);
}

void
tps_trace_free(TpsTrace *trace)
{
    if (trace == NULL)
        return;
    g_free(trace->name);
    if (trace->strings)
        g_string_chunk_free(trace->strings);
    if (trace->interned)
        g_hash_table_unref(trace->interned);
    if (trace->kernels)
        g_array_unref(trace->kernels);
    if (trace->devprops)
        g_array_unref(trace->devprops);
    if (trace->stream_names)
        g_hash_table_unref(trace->stream_names);
    if (trace->device_names)
        g_hash_table_unref(trace->device_names);
    if (trace->string_ids)
        g_hash_table_unref(trace->string_ids);
    g_free(trace);
}

static TpsTrace *
trace_new(const char *name)
{
    TpsTrace *t = g_new0(TpsTrace, 1);
    t->name = g_strdup(name);
    t->strings = g_string_chunk_new(64 * 1024);
    t->interned = g_hash_table_new(g_str_hash, g_str_equal);
    t->kernels = g_array_new(FALSE, FALSE, sizeof(TpsTraceKernel));
    t->devprops = g_array_new(FALSE, TRUE, sizeof(DevProp));
    g_array_set_clear_func(t->devprops, devprop_clear);
    t->stream_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    t->device_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    t->string_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return t;
}

/* The elements of the traceEvents array, one at a time, each parsed into
 * the stream's tree (reset for the next one). */
static gboolean
parse_events(TpsJsonStream *js, Loader *l, GError **error)
{
    if (!tps_json_stream_accept(js, '['))
        return tps_json_stream_fail(js, "traceEvents is not an array", error);
    l->trace->has_trace_events = TRUE;
    if (tps_json_stream_accept(js, ']'))
        return TRUE;
    for (gboolean more = TRUE; more;) {
        TpsJsonNode ev;
        if (!tps_json_stream_parse(js, &ev, error))
            return FALSE;
        if (l->visit != NULL) {
            l->visit(tps_json_stream_tree(js), ev, l->visit_data);
        } else {
            l->error = error;
            if (!handle_event(l, tps_json_stream_tree(js), ev))
                return FALSE;
        }
        if (!tps_json_stream_next(js, ']', "expected ',' or ']' in traceEvents", &more, error))
            return FALSE;
    }
    return TRUE;
}

/* The top-level object: traceEvents and deviceProperties are read, every
 * other member only checked. */
static gboolean
parse_top(TpsJsonStream *js, Loader *l, GError **error)
{
    int c = tps_json_stream_peek(js);
    if (c == '[') /* the JSON Array Format of Chrome traces */
        return parse_events(js, l, error);
    if (c != '{') {
        if (tps_json_stream_read_failed(js))
            return tps_json_stream_fail(js, "", error);
        if (c < 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "empty file");
            return FALSE;
        }
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "not a Kineto trace: the file is not a JSON object");
        return FALSE;
    }
    tps_json_stream_accept(js, '{');
    if (tps_json_stream_accept(js, '}'))
        return TRUE;
    for (gboolean more = TRUE; more;) {
        const char *key = tps_json_stream_read_key(js, error);
        if (key == NULL)
            return FALSE;
        if (strcmp(key, "traceEvents") == 0) {
            if (!parse_events(js, l, error))
                return FALSE;
        } else if (strcmp(key, "deviceProperties") == 0) {
            TpsJsonNode v;
            if (!tps_json_stream_parse(js, &v, error))
                return FALSE;
            handle_device_properties(l, tps_json_stream_tree(js), v);
        } else if (!tps_json_stream_skip(js, error)) {
            return FALSE;
        }
        if (!tps_json_stream_next(js, '}', "expected ',' or '}'", &more, error))
            return FALSE;
    }
    return TRUE;
}

/* The walk of the whole file: the top-level value, nothing after it, and a
 * traceEvents array somewhere. */
static gboolean
walk(TpsJsonStream *js, Loader *l, GError **error)
{
    gboolean ok = parse_top(js, l, error);
    if (ok) {
        /* Trailing bytes: only whitespace (and a read error is still one). */
        int c = tps_json_stream_peek(js);
        if (tps_json_stream_read_failed(js))
            ok = tps_json_stream_fail(js, "", error);
        else if (c >= 0)
            ok = tps_json_stream_fail(js, "data after the top-level value", error);
    }
    if (ok && !l->trace->has_trace_events) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "not a Kineto trace: no \"traceEvents\" array");
        ok = FALSE;
    }
    return ok;
}

static TpsTrace *
load(GInputStream *stream, const char *name, GCancellable *cancellable, GError **error)
{
    Loader l = {0};
    l.trace = trace_new(name);
    l.raw = g_array_new(FALSE, FALSE, sizeof(RawKernel));
    l.launches = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    l.launch_store = g_array_new(FALSE, FALSE, sizeof(Launch));
    l.ops = g_array_new(FALSE, FALSE, sizeof(Op));
    g_autoptr(TpsJsonStream) js = tps_json_stream_new(stream, cancellable);
    l.js = js;
    gboolean ok = walk(js, &l, error);
    TpsTrace *t = l.trace;
    if (ok) {
        link_gemms(&l);
        t->format = (!l.saw_kineto_kernel && l.raw->len > 0) ? TPS_TRACE_TPSIM : TPS_TRACE_KINETO;
        g_array_set_size(t->kernels, l.raw->len);
        gint64 start = G_MAXINT64;
        for (guint i = 0; i < l.raw->len; i++) {
            TpsTraceKernel *k = &g_array_index(t->kernels, TpsTraceKernel, i);
            *k = g_array_index(l.raw, RawKernel, i).k;
            start = MIN(start, k->ts_ns);
        }
        t->start_ns = l.raw->len ? start : 0;
        for (guint i = 0; i < t->kernels->len; i++) {
            TpsTraceKernel *k = &g_array_index(t->kernels, TpsTraceKernel, i);
            k->ts_us = (double)(k->ts_ns - t->start_ns) * 1e-3;
            k->dur_us = (double)k->dur_ns * 1e-3;
        }
        g_array_sort(t->kernels, cmp_kernel);
    }
    g_array_unref(l.raw);
    g_hash_table_unref(l.launches);
    g_array_unref(l.launch_store);
    g_array_unref(l.ops);
    if (!ok) {
        tps_trace_free(t);
        return NULL;
    }
    return t;
}

TpsTrace *
tps_trace_load_stream(GInputStream *stream, const char *name, GCancellable *cancellable,
                      GError **error)
{
    g_return_val_if_fail(G_IS_INPUT_STREAM(stream), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    GError *local = NULL;
    g_autoptr(GInputStream) source = tps_json_stream_open_input(stream, cancellable, &local);
    if (source == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", name, local->message);
        g_error_free(local);
        return NULL;
    }
    TpsTrace *t = load(source, name, cancellable, &local);
    if (t == NULL) {
        g_set_error(error, TPS_ERROR, local->domain == TPS_ERROR ? local->code : TPS_ERROR_IO,
                    "%s: %s", name, local->message);
        g_error_free(local);
    }
    return t;
}

gboolean
tps_trace_read_events(GInputStream *stream, const char *name, TpsTraceEventFunc func,
                      gpointer user_data, GCancellable *cancellable, GError **error)
{
    g_return_val_if_fail(G_IS_INPUT_STREAM(stream) && func != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    GError *local = NULL;
    g_autoptr(GInputStream) source = tps_json_stream_open_input(stream, cancellable, &local);
    if (source == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", name, local->message);
        g_error_free(local);
        return FALSE;
    }
    /* The trace only holds what the walk itself keeps (deviceProperties). */
    Loader l = {.trace = trace_new(name), .visit = func, .visit_data = user_data};
    g_autoptr(TpsJsonStream) js = tps_json_stream_new(source, cancellable);
    l.js = js;
    gboolean ok = walk(js, &l, &local);
    tps_trace_free(l.trace);
    if (!ok) {
        g_set_error(error, TPS_ERROR, local->domain == TPS_ERROR ? local->code : TPS_ERROR_IO,
                    "%s: %s", name, local->message);
        g_error_free(local);
    }
    return ok;
}

TpsTrace *
tps_trace_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autoptr(GFile) file = g_file_new_for_path(path);
    GError *local = NULL;
    g_autoptr(GFileInputStream) in = g_file_read(file, NULL, &local);
    if (in == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, local->message);
        g_error_free(local);
        return NULL;
    }
    return tps_trace_load_stream(G_INPUT_STREAM(in), path, NULL, error);
}

TpsTrace *
tps_trace_load_data(const void *data, gsize len, const char *name, GError **error)
{
    g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data(data, (gssize)len, NULL);
    return tps_trace_load_stream(in, name, NULL, error);
}

/* ---------------------------------------------------------------------- */
/* Accessors                                                               */

TpsTraceFormat
tps_trace_format(const TpsTrace *trace)
{
    return trace->format;
}

const char *
tps_trace_name(const TpsTrace *trace)
{
    return trace->name;
}

static const DevProp *
traced_device(const TpsTrace *trace)
{
    if (trace->devprops->len == 0)
        return NULL;
    if (trace->kernels->len > 0) {
        gint64 dev = g_array_index(trace->kernels, TpsTraceKernel, 0).device;
        for (guint i = 0; i < trace->devprops->len; i++)
            if (g_array_index(trace->devprops, DevProp, i).id == dev)
                return &g_array_index(trace->devprops, DevProp, i);
    }
    return &g_array_index(trace->devprops, DevProp, 0);
}

const char *
tps_trace_gpu_name(const TpsTrace *trace)
{
    const DevProp *d = traced_device(trace);
    return d ? d->name : NULL;
}

guint
tps_trace_gpu_sms(const TpsTrace *trace)
{
    const DevProp *d = traced_device(trace);
    return d ? d->sms : 0;
}

gint64
tps_trace_start_ns(const TpsTrace *trace)
{
    return trace->start_ns;
}

const TpsTraceKernel *
tps_trace_kernels(const TpsTrace *trace, guint *n_kernels)
{
    *n_kernels = trace->kernels->len;
    return (const TpsTraceKernel *)(void *)trace->kernels->data;
}

const char *
tps_trace_stream_name(const TpsTrace *trace, gint64 device, gint64 stream)
{
    char key[64];
    g_snprintf(key, sizeof key, "%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, device, stream);
    return g_hash_table_lookup(trace->stream_names, key);
}

const char *
tps_trace_device_name(const TpsTrace *trace, gint64 device)
{
    char key[32];
    g_snprintf(key, sizeof key, "%" G_GINT64_FORMAT, device);
    return g_hash_table_lookup(trace->device_names, key);
}

/* tpsim names its processes "STRATEGY GPUr" (render/trace-export.c). */
char *
tps_trace_device_strategy(const TpsTrace *trace, gint64 device)
{
    const char *pname = tps_trace_device_name(trace, device);
    const char *gpu = pname ? g_strrstr(pname, " GPU") : NULL;
    if (gpu == NULL || gpu == pname)
        return NULL;
    for (const char *p = gpu + 4; *p; p++)
        if (!g_ascii_isdigit(*p))
            return NULL;
    return g_strndup(pname, (gsize)(gpu - pname));
}

char *
tps_trace_tpsim_strategy(const TpsTrace *trace)
{
    if (trace->format != TPS_TRACE_TPSIM)
        return NULL;
    char *found = NULL;
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    for (guint i = 0; i < n; i++) {
        g_autofree char *run = tps_trace_device_strategy(trace, ks[i].device);
        if (run == NULL)
            continue;
        if (found == NULL) {
            found = g_steal_pointer(&run);
        } else if (strcmp(found, run) != 0) {
            g_free(found);
            return NULL;
        }
    }
    return found;
}

/* ---------------------------------------------------------------------- */
/* The measured run (timeline figures)                                     */

TpsRun *
tps_trace_to_run(const TpsTrace *trace, const char *strategy, gboolean is_op, GError **error)
{
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GArray) devices = g_array_new(FALSE, FALSE, sizeof(gint64));
    gint64 t0 = G_MAXINT64;
    for (guint i = 0; i < n; i++) {
        if (trace->format == TPS_TRACE_TPSIM && strategy) {
            g_autofree char *run = tps_trace_device_strategy(trace, ks[i].device);
            if (run && strcmp(run, strategy) != 0)
                continue;
        }
        g_array_append_val(keep, i);
        t0 = MIN(t0, ks[i].ts_ns);
        if (devices->len == 0 || g_array_index(devices, gint64, devices->len - 1) != ks[i].device)
            g_array_append_val(devices, ks[i].device); /* kernels are sorted by device */
    }
    if (keep->len == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no GPU kernels to draw", trace->name);
        return NULL;
    }
    TpsRun *run = tps_run_new("measured", devices->len, devices->len);
    run->is_op = is_op;
    guint rank = 0;
    gint64 cur_dev = ks[g_array_index(keep, guint, 0)].device, cur_stream = G_MININT64;
    TpsStreamId stream = TPS_STREAM_NONE;
    gint64 makespan = 0;
    for (guint j = 0; j < keep->len; j++) {
        const TpsTraceKernel *k = &ks[g_array_index(keep, guint, j)];
        if (k->device != cur_dev)
            rank++, cur_dev = k->device, cur_stream = G_MININT64;
        if (k->stream != cur_stream) {
            cur_stream = k->stream;
            const char *name = tps_trace_stream_name(trace, k->device, k->stream);
            g_autofree char *fallback = g_strdup_printf("stream %" G_GINT64_FORMAT, k->stream);
            stream = tps_run_add_stream(run, rank, 0, name ? name : fallback);
        }
        const char *base = g_str_has_prefix(k->name, "void ") ? k->name + 5 : k->name;
        g_autofree char *short_name = g_strndup(base, strcspn(base, "("));
        /* Each kernel where and as long as the trace has it. */
        TpsSpan span = {
            .kind = k->klass == TPS_KERNEL_GEMM   ? TPS_KIND_GEMM
                    : k->klass == TPS_KERNEL_NCCL ? TPS_KIND_COMM
                                                  : TPS_KIND_MEMORY,
            .name = short_name,
            .rank = rank,
            .stream = stream,
            .parent = TPS_TASK_NONE,
            .launch = k->ts_ns - t0,
            .start = k->ts_ns - t0,
            .end = k->ts_ns - t0 + k->dur_ns,
        };
        tps_run_add_span(run, &span, rank);
        makespan = MAX(makespan, k->ts_ns + k->dur_ns - t0);
    }
    run->fwd_start = 0;
    run->fwd_end = makespan;
    run->bwd_start = 0;
    run->bwd_end = makespan;
    return run;
}