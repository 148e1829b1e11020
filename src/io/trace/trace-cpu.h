/* The CPU side of PyTorch profiler (Kineto) traces: how long the framework
 * keeps the issuing thread busy per op class, the figures that the host
 * section of a hardware model is fitted to (docs/cost-model.md, "Host").
 *
 * Per trace, each thread's events are walked in time order. An op is an
 * outermost `cpu_op` (not inside another op of the same thread: the call
 * the framework made, e.g. aten::linear, not the aten::addmm inside it).
 * Samples, in microseconds:
 *  - framework ops (gemm, elementwise, nccl, memcpy): an op that launched
 *    exactly one thing (one cudaLaunchKernel/Ex, cudaMemcpyAsync or
 *    cudaMemsetAsync) and called no synchronisation, classed by what it
 *    launched (the kernel's class by name as in trace-import.h, a memset
 *    counting as elementwise); the sample is the op's duration plus the
 *    gap since the end of the op before it on the thread (the Python and
 *    framework time between ops), when that op called no synchronisation
 *    either (its gap would be a wait, not work);
 *  - runtime calls: the duration of each launch call (cudaLaunchKernel/Ex,
 *    cudaMemcpyAsync, cudaMemsetAsync, cuLaunchKernel), cudaEventRecord,
 *    cudaStreamWaitEvent, cudaGraphLaunch;
 *  - launch to start: from a launch call's start to the start of what it
 *    launched, when that GPU stream was idle at the call (nothing queued:
 *    the launch latency, not a queue).
 * Traces whose aten::view ops take more than 2 us at the median are not
 * used (a view launches nothing and allocates nothing: more is the
 * profiler's own per-op cost, which inflates every op); traces without
 * views are used.
 *
 * Ownership: a profile owns its samples and names.
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>

typedef enum {
    TPS_CPU_GEMM,            /* framework op launching one GEMM */
    TPS_CPU_ELEMENTWISE,     /* framework op launching one other kernel or a memset */
    TPS_CPU_NCCL,            /* framework op launching one NCCL kernel */
    TPS_CPU_MEMCPY,          /* framework op launching one cudaMemcpyAsync */
    TPS_CPU_LAUNCH,          /* a launch call */
    TPS_CPU_EVENT_RECORD,    /* cudaEventRecord */
    TPS_CPU_STREAM_WAIT,     /* cudaStreamWaitEvent */
    TPS_CPU_GRAPH_LAUNCH,    /* cudaGraphLaunch */
    TPS_CPU_LAUNCH_TO_START, /* launch call start to GPU start, stream idle */
    TPS_CPU_CLASS_COUNT
} TpsCpuClass;

/* "gemm", "elementwise", "nccl", "memcpy", "launch", "event_record",
 * "stream_wait", "graph_launch", "launch_to_start". */
const char *tps_cpu_class_name(TpsCpuClass klass);

typedef struct {
    guint n;
    double p25, median, p75; /* us; nearest rank (index round(p (n - 1))); 0 when n = 0 */
} TpsCpuStats;

typedef struct TpsCpuProfile TpsCpuProfile;

TpsCpuProfile *tps_cpu_profile_new(void);
void tps_cpu_profile_free(TpsCpuProfile *profile);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsCpuProfile, tps_cpu_profile_free)

/* Add one trace (gzip or plain), read from `path` or a stream. Errors as
 * tps_trace_load()'s; the profile is unchanged on error. */
gboolean tps_cpu_profile_add_file(TpsCpuProfile *profile, const char *path, GError **error);
gboolean tps_cpu_profile_add_stream(TpsCpuProfile *profile, GInputStream *stream, const char *name,
                                    GError **error);

guint tps_cpu_profile_n_traces(const TpsCpuProfile *profile);
const char *tps_cpu_profile_trace_name(const TpsCpuProfile *profile, guint trace);
/* The median aten::view duration of a trace in us (< 0: it has none), and
 * whether the trace is used (see above). */
double tps_cpu_profile_trace_view_us(const TpsCpuProfile *profile, guint trace);
gboolean tps_cpu_profile_trace_used(const TpsCpuProfile *profile, guint trace);

/* Statistics of a class in trace `trace`, or pooled over the used traces
 * for trace = -1. */
void tps_cpu_profile_stats(const TpsCpuProfile *profile, TpsCpuClass klass, int trace,
                           TpsCpuStats *out);

/* The profile as an aligned text table: the traces and whether each is
 * used, then per class the pooled n, p25, median, p75 and each used
 * trace's median. Newly allocated. */
char *tps_cpu_profile_to_table(const TpsCpuProfile *profile);
