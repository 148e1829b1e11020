/* Reading GPU traces: PyTorch profiler (Kineto) Chrome-trace JSON, gzipped or
 * plain, and the Chrome traces that `tpsim run --trace` writes.
 *
 * The file is streamed (io/trace/json-stream.h): each element of `traceEvents` is
 * parsed into a throw-away tree that is reused for the next one. Only what
 * the figures need is kept (kernels, the CPU-side launch events and ops
 * that link kernels to shapes), so memory grows with the number of kernels
 * and ops, not with the size of the JSON.
 *
 * Timestamps are read from their decimal text into integer nanoseconds
 * (Kineto's absolute microseconds reach 1.7e15, where a double no longer
 * holds the nanosecond fraction).
 *
 * Ranges, so that no sum or difference of them can overflow (issue 13,
 * D7): a timestamp within [0, 2^61] ns (before the epoch makes no sense: a
 * trace of a few kernels spanned decades), a duration within [0, 2^61] ns,
 * the durations of all kernels together at most
 * 2^62 ns, message sizes at most 2^50 bytes: a trace beyond them is refused
 * with the byte offset of the event. A GEMM dimension or product of
 * dimensions beyond 2^40 leaves the kernel's shape unknown.
 *
 * What is made of a trace lives elsewhere: its summary in
 * io/trace/trace-summary.h, the comparison with a simulated run in
 * render/compare.h.
 *
 * Ownership: a TpsTrace owns its kernels and every string they point to;
 * they live as long as the trace. Kernels are sorted by (device, stream,
 * start).
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>

#include "engine/run.h"
#include "io/trace/json-stream.h"

#define TPS_TRACE_MAX_TS_NS ((gint64)1 << 61)
#define TPS_TRACE_MAX_DUR_NS ((gint64)1 << 61)
#define TPS_TRACE_MAX_TOTAL_NS ((gint64)1 << 62)
#define TPS_TRACE_MAX_BYTES ((gint64)1 << 50)
#define TPS_TRACE_MAX_DIM ((gint64)1 << 40)

typedef enum {
    TPS_KERNEL_GEMM,  /* matrix multiply (cuBLAS, CUTLASS, split-K reduce, GEMV) */
    TPS_KERNEL_NCCL,  /* NCCL collective or point-to-point kernel */
    TPS_KERNEL_OTHER, /* every other GPU kernel */
    TPS_KERNEL_CLASS_COUNT
} TpsKernelClass;

/* "gemm", "nccl", "other". */
const char *tps_kernel_class_name(TpsKernelClass klass);

/* The input type of a GEMM kernel, from its name (docs/traces.md): the
 * tensor-core rate of each differs (A100: bf16 and fp16 312 TFLOP/s, tf32
 * 156, fp32 without tensor cores 19.5), so points of one must never be
 * fitted as another. */
typedef enum {
    TPS_TRACE_DTYPE_UNKNOWN, /* not a GEMM, or a name that does not say (split-K reduce) */
    TPS_TRACE_DTYPE_FP32,    /* SIMT sgemm */
    TPS_TRACE_DTYPE_TF32,    /* tensor-core single precision (s1688, tf32) */
    TPS_TRACE_DTYPE_FP16,
    TPS_TRACE_DTYPE_BF16,
    TPS_TRACE_DTYPE_COUNT
} TpsTraceDtype;

/* "unknown", "fp32", "tf32", "fp16", "bf16". */
const char *tps_trace_dtype_name(TpsTraceDtype dtype);
/* The type a GEMM kernel name says (TPS_TRACE_DTYPE_UNKNOWN when none). */
TpsTraceDtype tps_trace_gemm_dtype(const char *kernel_name);

typedef enum {
    TPS_TRACE_KINETO, /* PyTorch profiler */
    TPS_TRACE_TPSIM,  /* written by `tpsim run --trace` */
} TpsTraceFormat;

/* One GPU kernel. Strings belong to the trace. */
typedef struct {
    gint64 device;    /* Kineto: pid of the kernel event (the CUDA device); tpsim: the rank */
    gint64 stream;    /* Kineto: tid (the CUDA stream); tpsim: the thread id of the stream */
    const char *name; /* demangled kernel name as in the trace */
    gint64 ts_ns;     /* start, integer ns on the trace's clock (absolute for Kineto) */
    gint64 dur_ns;
    double ts_us; /* start in µs since tps_trace_start_ns(): exact to the ns */
    double dur_us;
    TpsKernelClass klass;

    /* NCCL kernels (NULL / -1 / 0 when unknown). */
    const char *collective; /* "AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                               "Reduce", "SendRecv", ... (from the kernel name) */
    const char *algorithm;  /* "RING", "TREE", "COLLNET", "NVLS", ... */
    const char *protocol;   /* "LL", "LL128", "SIMPLE" */
    gint64 bytes;           /* message bytes: max(In, Out msg nelems) x dtype size; -1 unknown */
    guint group_size;       /* ranks in the communicator ("Group size"); 0 unknown */

    /* GEMM kernels: the shape from the launching op's Input Dims (0 unknown).
     * C[m, n] = A[m, k] B[k, n], `batch` times (1 unless bmm). */
    gint64 m, n, k, batch;
    TpsTraceDtype dtype; /* from the kernel name (GEMM kernels; unknown otherwise) */
    const char *op;      /* name of the launching CPU op, NULL when not linked */
    gint64 op_id;        /* identity of that op invocation (several kernels of one op,
                            e.g. GEMM + split-K reduce, share it); -1 when not linked */
} TpsTraceKernel;

typedef struct TpsTrace TpsTrace;

/* Read `path` (gzip detected from the magic bytes, not the name). Errors
 * (TPS_ERROR_IO for an unreadable or corrupt file, TPS_ERROR_INPUT for JSON
 * that is not a trace) are prefixed with "PATH: " (and the byte offset of a
 * syntax error). */
TpsTrace *tps_trace_load(const char *path, GError **error);

/* Read from `stream`; `name` is used in messages and as the file name. */
TpsTrace *tps_trace_load_stream(GInputStream *stream, const char *name, GCancellable *cancellable,
                                GError **error);

/* Read from memory (tests, fuzzing). */
TpsTrace *tps_trace_load_data(const void *data, gsize len, const char *name, GError **error);

/* One element of a trace's traceEvents, as parsed: valid during the call. */
typedef void (*TpsTraceEventFunc)(const TpsJsonTree *tree, TpsJsonNode event, gpointer user_data);

/* Stream `stream` (gzip or plain) as tps_trace_load_stream() does, but give
 * every element of traceEvents to `func` instead of keeping kernels, for
 * passes that need other events (io/trace-host.h: the CPU side). Errors as
 * tps_trace_load_stream()'s. */
gboolean tps_trace_read_events(GInputStream *stream, const char *name, TpsTraceEventFunc func,
                               gpointer user_data, GCancellable *cancellable, GError **error);

void tps_trace_free(TpsTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsTrace, tps_trace_free)

TpsTraceFormat tps_trace_format(const TpsTrace *trace);
/* The name given at load time (the path). */
const char *tps_trace_name(const TpsTrace *trace);
/* deviceProperties name of the traced device (the device of the kernels;
 * the first entry when none matches); NULL when the trace has none. */
const char *tps_trace_gpu_name(const TpsTrace *trace);
/* numSms of that device; 0 when unknown. */
guint tps_trace_gpu_sms(const TpsTrace *trace);
/* Start of the earliest kernel (ns on the trace's clock). */
gint64 tps_trace_start_ns(const TpsTrace *trace);
/* The kernels, sorted by (device, stream, ts_ns). */
const TpsTraceKernel *tps_trace_kernels(const TpsTrace *trace, guint *n_kernels);
/* The name of a stream from the metadata events (tpsim: the simulated stream,
 * e.g. "compute"); NULL when the trace names none. */
const char *tps_trace_stream_name(const TpsTrace *trace, gint64 device, gint64 stream);

/* Classification rules (docs/traces.md). */
TpsKernelClass tps_trace_classify(const char *kernel_name);
/* Parse an NCCL kernel name, old (ncclKernel_<Coll>_<ALGO>_<PROTO>_<op>_<type>)
 * or new (ncclDevKernel_<Coll>_<op>_<type>_<ALGO>_<PROTO>). Outputs are
 * static strings or NULL. Returns FALSE when the name is no NCCL kernel. */
gboolean tps_trace_parse_nccl_name(const char *kernel_name, const char **collective,
                                   const char **algorithm, const char **protocol);
/* Bus bandwidth factor of nccl-tests for a collective over `n` ranks:
 * 2(n-1)/n all-reduce, (n-1)/n all-gather and reduce-scatter, 1 otherwise. */
double tps_trace_busbw_factor(const char *collective, guint n);

/* Names of the trace's processes from metadata ("megatron GPU0" in tpsim's
 * traces); NULL when it names none. */
const char *tps_trace_device_name(const TpsTrace *trace, gint64 device);

/* The strategy of a device of a trace that tpsim wrote, from its process
 * name "STRATEGY GPUr"; newly allocated, NULL when the device has no such
 * name. */
char *tps_trace_device_strategy(const TpsTrace *trace, gint64 device);

/* The strategy of a tpsim trace's runs when there is exactly one (from the
 * process names "STRATEGY GPUr"), newly allocated; NULL otherwise. */
char *tps_trace_tpsim_strategy(const TpsTrace *trace);

/* The measured kernels as a run, for the renderer's timeline, built
 * directly (no engine): one rank per device (in device order), one stream
 * per traced stream (named after it, or "stream N"), and each kernel a span
 * where and as long as the trace has it (ns since the first kernel's
 * start): GEMM kernels as TPS_KIND_GEMM, NCCL as TPS_KIND_COMM, others as
 * TPS_KIND_MEMORY. The windows cover the whole trace; `is_op` is set as
 * given and the label is "measured". In a tpsim trace holding several runs,
 * only `strategy`'s devices are taken (NULL: all). */
TpsRun *tps_trace_to_run(const TpsTrace *trace, const char *strategy, gboolean is_op,
                         GError **error);

/* The order of host events of a trace by thread, then start: the first
 * keys of the sort orders of CPU ops (trace-cpu.c) and of GEMM-linking ops
 * (trace-import.c), which then break ties their own way. */
static inline int
tps_trace_cmp_thread_time(gint64 pid_a, gint64 tid_a, gint64 ts_a, gint64 pid_b, gint64 tid_b,
                          gint64 ts_b)
{
    if (pid_a != pid_b)
        return pid_a < pid_b ? -1 : 1;
    if (tid_a != tid_b)
        return tid_a < tid_b ? -1 : 1;
    if (ts_a != ts_b)
        return ts_a < ts_b ? -1 : 1;
    return 0;
}
