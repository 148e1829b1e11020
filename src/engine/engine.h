/* The discrete-event engine: replays a dependency graph of GPU work on the
 * resources of a TP group.
 *
 * Resources of each simulated GPU (rank): an issuing host thread (below);
 * CUDA streams (FIFO, with a priority); a pool of SMs; HBM bandwidth; copy
 * engines; NVLink egress and ingress through NVSwitch; and, when ranks sit
 * in different nodes, an InfiniBand NIC egress/ingress.
 *
 * The host: one issuing thread per rank runs the rank's program in the
 * order it was built, one item after the other: the issue of each task with
 * `launch` set (its `host_ns`: the framework's CPU time for the op, the
 * launch call included), host-only work (tps_engine_host_work()), the event
 * calls of each stream wait (the machine's `stream_wait_ns`), and blocking
 * synchronisations (tps_engine_host_sync()), where the thread stalls until
 * a given task has ended, or until every task it launched before has ended
 * (the device is idle), and only then goes on. A launched task cannot start
 * before its issue is over, so when the thread is behind, the GPU idles.
 * Between tps_engine_graph_begin() and tps_engine_graph_end() the rank's
 * program is a captured CUDA graph: issuing it costs one graph launch at its
 * beginning, and nothing per task or stream wait inside.
 *
 * Work model of a task (all generic GPU notions; the cost layer fills them):
 *  - a fixed phase of `fixed_ns` first (latency), using no bandwidth;
 *  - then a fluid phase of one unit of work whose solo duration on `s` SMs is
 *        max(ceil(ctas / s) * wave_ns,  floor_ns,  bytes_r / capacity_r ...)
 *    over the bandwidth resources r it uses (HBM of its rank, and for a flow
 *    or a copy the link from src to dst and the HBM of both ends).
 *  Concurrent tasks share each bandwidth resource max-min fairly in bytes per
 *  ns (progressive filling); a task's SMs come from its rank's pool, handed
 *  out by stream priority, then start order. Rates are recomputed whenever a
 *  task starts or ends, and the finish events of the affected tasks move.
 *
 * A task starts once: its `after` predecessors have ended and its
 * `after_start` ones started; the task before it on its stream has ended;
 * its issue on the host is over (launched tasks); with
 * single_hw_queue, the task launched before it on its rank has started;
 * its container (parent) has started; and, for a copy, one of the rank's
 * copy engines is free (a FIFO per rank, in the order tasks became ready).
 * A container holds its SMs from its start until its fixed phase is over
 * and all its children have ended, and does no work of its own. SMs are
 * handed out again whenever the set of SM users of a rank changes: by
 * priority (a task without a stream takes its container's), then start
 * order, each taking min(ctas, max_sms or all) of what is left; a task may
 * get none and wait.
 *
 * Ordering: events are ordered by (time, sequence number), so a run is
 * bit-identical for the same graph. Time is integer nanoseconds; a finish
 * time is rounded up to the next nanosecond (within 1e-6 ns of a whole
 * nanosecond counts as that nanosecond, so float noise costs nothing).
 *
 * Ownership: the engine owns every task, stream and name; spans returned by
 * tps_engine_span() point into the engine and live as long as it does. Its
 * names (of tasks and streams) are reference-counted apart from it
 * (tps_engine_names_ref()), so that a run exported from it keeps them
 * without copying.
 *
 * Sources: engine.c (the object, task life cycle, run loop), engine-stream.c
 * (building the graph, run setup), engine-heap.c (event queue), engine-sm.c
 * (SM pools and waves), engine-fluid.c (bandwidth sharing); engine-private.h
 * holds what they share and says more.
 */
#pragma once

#include <glib.h>

#include "core/time.h"

typedef struct TpsEngine TpsEngine;
typedef guint32 TpsTaskId;
typedef guint32 TpsStreamId;

#define TPS_TASK_NONE G_MAXUINT32
#define TPS_STREAM_NONE G_MAXUINT32

typedef enum {
    TPS_KIND_GEMM,      /* matrix multiply (compute-bound kernel) */
    TPS_KIND_ATTENTION, /* attention core kernel(s) */
    TPS_KIND_MEMORY,    /* memory-bound kernel (LayerNorm, GeLU, dropout, ...) */
    TPS_KIND_COMM,      /* communication kernel (NCCL, SM-based userbuffers) */
    TPS_KIND_FLOW,      /* bytes moved over a link by a communication kernel */
    TPS_KIND_COPY,      /* copy-engine transfer (cudaMemcpyAsync) */
    TPS_KIND_MARKER,    /* zero-work node: joins, barriers */
    TPS_KIND_COUNT
} TpsTaskKind;

const char *tps_task_kind_name(TpsTaskKind kind);

/* Where one rank of a machine sits: the NVLink domain it shares with
 * other ranks (flows between ranks of one domain go over NVLink, the others
 * over NICs) and the NIC pool its flows leaving the domain go through. A
 * pool is named by a rank of the machine and its bandwidth is that rank's
 * `pool_gbps`; ranks that name the same pool share its NICs (the sched
 * layer places ranks on the topology: sched/placement.h). */
typedef struct {
    guint32 domain;   /* NVLink domain */
    guint32 pool;     /* rank that holds the NIC pool of this rank's traffic leaving the domain */
    double pool_gbps; /* per direction, of the pool this rank holds (when some rank names it) */
} TpsPlace;

/* The machine: what every rank has. Bandwidths in bytes/ns (= GB/s). */
typedef struct {
    guint ranks;              /* GPUs simulated (the slice of the grid a layer needs) */
    guint gpus_per_node;      /* without `place`: ranks r and q share an NVLink domain when
                                 r/gpus_per_node == q/..., and that domain's NICs are one
                                 pool of nic_gbps held by its first rank */
    const TpsPlace *place;    /* per rank, or NULL (gpus_per_node); copied by the engine */
    guint sms;                /* SMs per GPU */
    double hbm_gbps;          /* achievable HBM bandwidth per GPU (<= 0: HBM not modelled) */
    double nvlink_gbps;       /* NVLink bandwidth per GPU and direction (through NVSwitch) */
    double nic_gbps;          /* InfiniBand bandwidth per node and direction (all its NICs: a ring's
                                 channels are spread over them) */
    guint copy_engines;       /* copy engines per GPU usable for P2P copies */
    TpsTime launch_ns;        /* host time of issuing a launched task whose spec gives none */
    TpsTime stream_wait_ns;   /* host time of the event calls of one stream wait
                                 (cudaEventRecord + cudaStreamWaitEvent) */
    gboolean single_hw_queue; /* CUDA_DEVICE_MAX_CONNECTIONS=1: a launched task
                                 starts no earlier than the one launched before it */
    gboolean record_waits;    /* record each span's stream_wait (costs a write per
                                 dependency released; off for large frames) */
    gboolean folded;          /* each rank stands for identical peers (a folded TP group):
                                 a flow or copy to its own rank is one to a peer like it,
                                 so the receiving end's HBM use is kept apart from the
                                 sender's, as on a peer of its own */
} TpsMachine;

/* The NVLink domain of rank `r` of `m`. */
static inline guint
tps_machine_domain(const TpsMachine *m, guint r)
{
    return m->place ? m->place[r].domain : r / m->gpus_per_node;
}

/* The rank that holds the NIC pool of rank `r`'s traffic leaving its
 * domain. */
static inline guint
tps_machine_pool(const TpsMachine *m, guint r)
{
    return m->place ? m->place[r].pool : r / m->gpus_per_node * m->gpus_per_node;
}

/* One task. Fields left 0 mean "not used". */
typedef struct {
    TpsTaskKind kind;
    const char *name;     /* copied into the engine */
    guint rank;           /* GPU that runs it (for a flow: the sender) */
    TpsStreamId stream;   /* TPS_STREAM_NONE for flows and other children */
    TpsTaskId parent;     /* container this task belongs to, or TPS_TASK_NONE */
    gboolean launch;      /* issued by its rank's host thread, in the order added */
    TpsTime host_ns;      /* with `launch`: host time of issuing it; 0: the
                             machine's launch_ns (inside a captured graph: 0) */
    gboolean container;   /* holds its SMs until all its children end; no work of its own */
    gboolean copy_engine; /* needs one of the rank's copy engines */

    guint ctas;        /* CTAs (0: uses no SMs) */
    guint max_sms;     /* at most this many SMs (0: no limit) */
    TpsTime wave_ns;   /* time of one wave of CTAs */
    TpsTime fixed_ns;  /* latency phase before the fluid phase */
    TpsTime floor_ns;  /* the fluid phase takes at least this long alone */
    double hbm_bytes;  /* bytes through the HBM of `rank` */
    guint dst_rank;    /* flows and copies: receiver */
    double link_bytes; /* flows and copies: bytes over the link rank -> dst_rank
                          (also read from `rank`'s HBM and written to dst's HBM) */

    /* Reported only. */
    double flops;
    double bytes;
} TpsTaskSpec;

/* What the run recorded of one task. */
typedef struct {
    TpsTaskId id;
    TpsTaskKind kind;
    const char *name;
    guint rank;
    TpsStreamId stream; /* TPS_STREAM_NONE for flows and children */
    TpsTaskId parent;
    TpsTime launch; /* when its issue on the host was over (its start if
                       not launched) */
    TpsTime start;
    TpsTime end;
    double flops;
    double bytes;
    guint sms;           /* SMs it held when it started */
    TpsTime run_start;   /* when it first held an SM (a kernel started while every SM
                            was taken waits for one); 0 when it holds none or the
                            source does not tell: treat as `start` (tps_span_run_start) */
    TpsTime stream_wait; /* how long it was ready but for its stream predecessor:
                            queued behind the task before it on its stream
                            (0 unless the machine has record_waits) */
} TpsSpan;

/* When a span's work began: run_start when recorded, else start. */
static inline TpsTime
tps_span_run_start(const TpsSpan *span)
{
    return span->run_start > span->start && span->run_start < span->end ? span->run_start
                                                                       : span->start;
}

typedef struct {
    TpsTime makespan;      /* end of the last task */
    guint64 events;        /* events processed */
    guint64 rate_updates;  /* fluid re-solves of a whole component */
    guint64 local_updates; /* rate changes settled without one (see
                              tps_engine_set_incremental()) */
} TpsRunStats;

/* The arithmetic of fluid sharing (engine-fluid.c), in one place for the
 * engine and for the sched layer's replay of the pipeline step without it
 * (sched/pipeline-replay.c), whose times must be the engine's to the ns:
 * the two round alike because they call the same code. */

/* Remaining work below this counts as done (work is 1 unit per task). */
#define TPS_FLUID_WORK_EPSILON 1e-12
/* Relative slack when comparing fill levels, so that a resource saturated
 * by rounding does not need an extra round of the filling loop. */
#define TPS_FLUID_LEVEL_EPSILON 1e-12
/* Durations within this of a whole nanosecond round down to it. */
#define TPS_FLUID_ROUNDING_SLACK_NS 1e-6

/* The work left of `remaining` after running at `rate` from `last` to
 * `now`. */
static inline double
tps_fluid_advance(double remaining, double rate, TpsTime last, TpsTime now)
{
    if (rate > 0.0 && now > last) {
        remaining -= rate * (double)(now - last);
        if (remaining < 0.0)
            remaining = 0.0;
    }
    return remaining;
}

/* How long `work` takes at `rate` (> 0), rounded up to the ns; the slack
 * keeps float noise (2000.0000000001) from costing a whole nanosecond. */
static inline TpsTime
tps_fluid_duration(double work, double rate)
{
    return tps_time_from_ns(work / rate - TPS_FLUID_ROUNDING_SLACK_NS);
}

/* The level at which a resource of capacity `cap` saturates, `used` of it
 * taken by frozen tasks, its unfrozen tasks' shares summing to `coef`. */
static inline double
tps_fluid_level(double cap, double used, double coef)
{
    return MAX(cap - used, 0.0) / coef;
}

TpsEngine *tps_engine_new(const TpsMachine *machine);
void tps_engine_free(TpsEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsEngine, tps_engine_free)

/* The storage of the engine's interned names: every task and stream name
 * the engine hands out (spans, tps_engine_stream_name()) points into it. A
 * reference keeps those names alive after the engine is freed (an exported
 * run holds one); the count is atomic, so it may be dropped in any
 * thread. Nothing is written to it but by the engine while its graph is
 * built. */
typedef struct TpsEngineNames TpsEngineNames;
TpsEngineNames *tps_engine_names_ref(const TpsEngine *engine);
void tps_engine_names_unref(TpsEngineNames *names);

const TpsMachine *tps_engine_machine(const TpsEngine *engine);

/* By default a change that leaves every resource it touches slack (and
 * nobody's bottleneck) is settled locally: the changed tasks run at their
 * solo rates and the others keep theirs, which is the same max-min fair
 * allocation as a full re-solve. FALSE re-solves the whole connected
 * component on every change: the reference mode for tests and debugging.
 * Call before tps_engine_run(). */
void tps_engine_set_incremental(TpsEngine *engine, gboolean incremental);

/* A stream of `rank`. Higher priority wins SMs first (CUDA: lower number is
 * higher priority; here larger is higher). */
TpsStreamId tps_engine_add_stream(TpsEngine *engine, guint rank, int priority, const char *name);
const char *tps_engine_stream_name(const TpsEngine *engine, TpsStreamId stream);
guint tps_engine_stream_rank(const TpsEngine *engine, TpsStreamId stream);
guint tps_engine_n_streams(const TpsEngine *engine);

/* Add a task. Tasks on a stream run in the order they were added (FIFO);
 * tasks with `launch` set are issued by their rank's host thread, in
 * program order with its other items. Returns the new id. */
TpsTaskId tps_engine_add(TpsEngine *engine, const TpsTaskSpec *spec);

/* Host items of `rank`'s program, after what was added so far. */

/* `ns` of host-only time (framework work that issues nothing, event calls);
 * nothing inside a captured graph. */
void tps_engine_host_work(TpsEngine *engine, guint rank, TpsTime ns);

/* A blocking synchronisation: the thread stalls until `task` has ended
 * (cudaEventSynchronize, an `.item()` read of its result), or, for
 * TPS_TASK_NONE, until every task it launched before has ended
 * (cudaDeviceSynchronize); then it spends `ns` (the rest of the call).
 * Not allowed inside a captured graph (CUDA refuses it too). */
void tps_engine_host_sync(TpsEngine *engine, guint rank, TpsTaskId task, TpsTime ns);

/* A captured CUDA graph on `rank`: its launch costs `launch_ns` of host
 * time here; the tasks and stream waits added on `rank` until
 * tps_engine_graph_end() cost nothing to issue (they are issued by that
 * launch, in their order). */
void tps_engine_graph_begin(TpsEngine *engine, guint rank, TpsTime launch_ns);
void tps_engine_graph_end(TpsEngine *engine, guint rank);

/* Make room for `tasks` more tasks and `edges` more dependencies, so that
 * building a large graph does not copy its arrays as they grow (a hint:
 * adding more is fine). */
void tps_engine_reserve(TpsEngine *engine, guint tasks, guint edges);

/* `task` starts only after `pred` has ended. */
void tps_engine_after(TpsEngine *engine, TpsTaskId task, TpsTaskId pred);
/* `task` starts only after `pred` has started. */
void tps_engine_after_start(TpsEngine *engine, TpsTaskId task, TpsTaskId pred);

/* `task` ends no earlier than `pred` ends: once its own work is done it
 * keeps its SMs (and stays in its stream) until then, like a kernel that
 * spins on a flag set by `pred` (userbuffers receive kernels). */
void tps_engine_end_after(TpsEngine *engine, TpsTaskId task, TpsTaskId pred);

/* CUDA events: the last task added on `stream` (TPS_TASK_NONE if empty), and
 * making the next task added on `stream` wait for `task` to end
 * (cudaEventRecord + cudaStreamWaitEvent). A wait on TPS_TASK_NONE is a no-op. */
TpsTaskId tps_engine_record(const TpsEngine *engine, TpsStreamId stream);
void tps_engine_stream_wait(TpsEngine *engine, TpsStreamId stream, TpsTaskId task);

guint tps_engine_n_tasks(const TpsEngine *engine);

/* Run the graph to completion. On a deadlock returns FALSE with
 * TPS_ERROR_DEADLOCK naming the tasks that can never start and what each
 * waits on. Can be called once. */
gboolean tps_engine_run(TpsEngine *engine, TpsRunStats *stats, GError **error);

/* The recorded span of a task (after a run). */
const TpsSpan *tps_engine_span(const TpsEngine *engine, TpsTaskId task);

/* Read-only views of the graph, for exporters (traces, figures). */

/* Why an edge exists: the public mirror of the engine's edge kinds. */
typedef enum {
    TPS_EDGE_END,    /* tps_engine_after() and stream waits: pred ends first */
    TPS_EDGE_STREAM, /* previous task on the same stream */
    TPS_EDGE_START,  /* tps_engine_after_start(): pred starts first */
    TPS_EDGE_HWQ,    /* single hardware queue: the task launched before starts first */
    TPS_EDGE_PARENT, /* the container starts first */
    TPS_EDGE_HOLD,   /* tps_engine_end_after(): pred ends before the task may end */
} TpsEdgeKind;

guint tps_engine_n_edges(const TpsEngine *engine);
/* Edge `i` (< tps_engine_n_edges()): `succ` depends on `pred` as `kind` says.
 * Any output pointer may be NULL. */
void tps_engine_edge(const TpsEngine *engine, guint i, TpsTaskId *pred, TpsTaskId *succ,
                     TpsEdgeKind *kind);
/* The receiver of a flow or copy (a task with link bytes); the task's own
 * rank for any other task. */
guint tps_engine_task_dst_rank(const TpsEngine *engine, TpsTaskId task);
/* Whether the task paid a host launch (TpsTaskSpec.launch). */
gboolean tps_engine_task_launched(const TpsEngine *engine, TpsTaskId task);

/* What a rank's host thread did, item by item in program order (after the
 * run; before it, the times are 0). */
typedef enum {
    TPS_HOST_ISSUE, /* issuing `task` */
    TPS_HOST_WORK,  /* host-only time (framework work, event calls, a graph launch) */
    TPS_HOST_SYNC,  /* a synchronisation on `task` (TPS_TASK_NONE: the device): blocked
                       from `start` to `ready`, then busy until `end` */
} TpsHostKind;

typedef struct {
    TpsHostKind kind;
    TpsTaskId task;
    TpsTime start; /* the thread reached it (the end of the item before) */
    TpsTime ready; /* its own part began: a sync's wait was over, or, for an
                      issue, the host-only work just before it (event calls, a
                      graph launch) was done; = start otherwise */
    TpsTime end;   /* the thread went on */
} TpsHostItem;

guint tps_engine_n_host_items(const TpsEngine *engine, guint rank);
/* Item `i` (< tps_engine_n_host_items()) of `rank`'s program. */
void tps_engine_host_item(const TpsEngine *engine, guint rank, guint i, TpsHostItem *out);
/* The priority a stream was added with. */
int tps_engine_stream_priority(const TpsEngine *engine, TpsStreamId stream);
