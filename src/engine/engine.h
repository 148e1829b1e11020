/* The discrete-event engine: replays a dependency graph of GPU work on the
 * resources of a TP group.
 *
 * Resources of each simulated GPU (rank): a host launch queue (every task
 * with `launch` set pays the rank's launch cost, in the order the tasks were
 * added for that rank); CUDA streams (FIFO, with a priority); a pool of SMs;
 * HBM bandwidth; copy engines; NVLink egress and ingress through NVSwitch;
 * and, when ranks sit in different nodes, an InfiniBand NIC egress/ingress.
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
 * its host launch is done (the k-th launched task of a rank at
 * (k + 1) * launch_ns: the launcher never waits for the GPU); with
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
 * tps_engine_span() point into the engine and live as long as it does.
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

/* The machine: what every rank has. Bandwidths in bytes/ns (= GB/s). */
typedef struct {
    guint ranks;          /* GPUs simulated (the TP group) */
    guint gpus_per_node;  /* ranks r and q share a node when r/gpus_per_node == q/... */
    guint sms;            /* SMs per GPU */
    double hbm_gbps;      /* achievable HBM bandwidth per GPU (<= 0: HBM not modelled) */
    double nvlink_gbps;   /* NVLink bandwidth per GPU and direction (through NVSwitch) */
    double nic_gbps;      /* InfiniBand bandwidth per node and direction (all its NICs: a ring's
                             channels are spread over them) */
    guint copy_engines;   /* copy engines per GPU usable for P2P copies */
    TpsTime launch_ns;    /* host launch cost per kernel or copy */
    gboolean single_hw_queue; /* CUDA_DEVICE_MAX_CONNECTIONS=1: a launched task
                                 starts no earlier than the one launched before it */
    gboolean record_waits;    /* record each span's stream_wait (costs a write per
                                 dependency released; off for large frames) */
} TpsMachine;

/* One task. Fields left 0 mean "not used". */
typedef struct {
    TpsTaskKind kind;
    const char *name;      /* copied into the engine */
    guint rank;            /* GPU that runs it (for a flow: the sender) */
    TpsStreamId stream;    /* TPS_STREAM_NONE for flows and other children */
    TpsTaskId parent;      /* container this task belongs to, or TPS_TASK_NONE */
    gboolean launch;       /* pays the host launch cost, in rank issue order */
    gboolean container;    /* holds its SMs until all its children end; no work of its own */
    gboolean copy_engine;  /* needs one of the rank's copy engines */

    guint ctas;            /* CTAs (0: uses no SMs) */
    guint max_sms;         /* at most this many SMs (0: no limit) */
    TpsTime wave_ns;       /* time of one wave of CTAs */
    TpsTime fixed_ns;      /* latency phase before the fluid phase */
    TpsTime floor_ns;      /* the fluid phase takes at least this long alone */
    double hbm_bytes;      /* bytes through the HBM of `rank` */
    guint dst_rank;        /* flows and copies: receiver */
    double link_bytes;     /* flows and copies: bytes over the link rank -> dst_rank
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
    TpsStreamId stream;    /* TPS_STREAM_NONE for flows and children */
    TpsTaskId parent;
    TpsTime launch;        /* when its host launch completed (its start if none) */
    TpsTime start;
    TpsTime end;
    double flops;
    double bytes;
    guint sms;             /* SMs it held when it started */
    TpsTime stream_wait;   /* how long it was ready but for its stream predecessor:
                              queued behind the task before it on its stream
                              (0 unless the machine has record_waits) */
} TpsSpan;

typedef struct {
    TpsTime makespan;      /* end of the last task */
    guint64 events;        /* events processed */
    guint64 rate_updates;  /* fluid re-solves of a whole component */
    guint64 local_updates; /* rate changes settled without one (see
                              tps_engine_set_incremental()) */
} TpsRunStats;

TpsEngine *tps_engine_new(const TpsMachine *machine);
void tps_engine_free(TpsEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsEngine, tps_engine_free)

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
 * tasks with `launch` set are launched in the order they were added on
 * their rank. Returns the new id. */
TpsTaskId tps_engine_add(TpsEngine *engine, const TpsTaskSpec *spec);

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
/* The priority a stream was added with. */
int tps_engine_stream_priority(const TpsEngine *engine, TpsStreamId stream);
