/* Engine internals shared by its source files: the records of tasks,
 * fluid slots, resources, streams and ranks, the engine struct, and the
 * small inline helpers of the hot path. Only the engine's own source files
 * include this; the model is described in engine.h.
 *
 * Which file holds what:
 *  - engine.c: new/free and accessors; the task life cycle (start, end of
 *    the fixed phase, work done, holds, end and release of successors); the
 *    copy-engine queues and the start of ready tasks; the run loop and
 *    event dispatch; deadlock reports; read-only views for exporters;
 *  - engine-stream.c: building the graph (streams, tasks, edges, stream
 *    waits and records, the host programs) and setting up a run (CSR
 *    successor lists, ranks, resources, the heap, the first ready tasks);
 *  - engine-host.c: the issuing threads: running each rank's host program,
 *    blocking and resuming its synchronisations;
 *  - engine-heap.c: the event queue;
 *  - engine-sm.c: SM pools (hand-out order and assignment), the wave
 *    arithmetic of solo rates, and a kernel's partial last wave;
 *  - engine-fluid.c: bandwidth sharing: entering and leaving the fluid
 *    phase, local updates, re-solves of a component by progressive
 *    filling, and moving the finish events.
 *  - run.c: the export of a finished run (tps_engine_export_run()), which
 *    copies the tasks' spans and the edges straight from their arrays.
 * The per-edge work (releases, prefetches) stays static in engine.c; calls
 * between files happen per task or per step, not per edge. Functions used
 * across files carry the eng_ prefix and hidden visibility: in a static
 * library their names would otherwise share the namespace of every
 * program linked with it.
 *
 * Layout, chosen so that a million-task graph costs no allocation per event
 * and none per task beyond geometric growth of a few arrays:
 *  - tasks live in one array of structs, each embedding its TpsSpan, so the
 *    pointer tps_engine_span() returns is stable after the run;
 *  - dependency edges are appended to one array while the graph is built
 *    and turned into two CSR successor lists (released on start, released
 *    on end) when the run starts; a task becomes ready when its count of
 *    unmet conditions drops to zero;
 *  - events sit in an indexed binary min-heap keyed by (time, seq): each
 *    task has at most one pending event (end of its fixed or fluid phase)
 *    and each rank's host thread has one, so a node's heap position is
 *    kept in a flat array indexed by node and nothing is allocated on
 *    insert; seq grows on every (re)schedule, which makes ties reproducible;
 *  - only tasks in their fluid phase carry rate state, in a pool of Fluid
 *    slots recycled through a free list; bandwidth resources keep the list
 *    of fluid tasks using them, and a re-solve covers only the connected
 *    component of tasks and resources reachable from what changed.
 *
 * One step of the run: pop every event due at the earliest time, handle
 * them, start the ready tasks in ascending id (repeating while starts make
 * more tasks ready), hand out SMs on the ranks whose set of SM users
 * changed, update the rates (locally when the change leaves every resource
 * it touches slack, else by re-solving the dirty fluid components), and move
 * the finish events whose rate changed.
 */
#pragma once

#include "engine/engine.h"

#define NONE32 G_MAXUINT32

/* The engine's names: a GStringChunk in a reference-counted box
 * (g_atomic_rc_box), so that exported runs can keep it. */
struct TpsEngineNames {
    GStringChunk *chunk;
};

/* Slots of the engine's cache of interned names (a power of two): the
 * builders cycle through a handful of names (a kernel's, its flows', its
 * flags'), each passed again from the same buffer. */
#define NAME_CACHE_SIZE 16

/* Bandwidth resources of one rank. */
enum {
    RES_HBM,
    RES_NVLINK_OUT,
    RES_NVLINK_IN,
    RES_NIC_OUT,
    RES_NIC_IN,
    RES_PER_RANK
};

/* A task uses at most: HBM of both ends, link egress, link ingress. */
#define TASK_RES_MAX 4

typedef enum {
    EDGE_END,    /* tps_engine_after() and stream waits */
    EDGE_STREAM, /* previous task on the same stream (ends first) */
    EDGE_START,  /* tps_engine_after_start() */
    EDGE_HWQ,    /* single hardware queue: previously launched task starts first */
    EDGE_PARENT, /* the container starts first */
    EDGE_HOLD,   /* tps_engine_end_after(): the predecessor ends first */
} EdgeKind;

/* Mark hold and stream edges in the end-successor lists (task ids stay
 * below both bits). */
#define HOLD_BIT 0x80000000u
#define STREAM_BIT 0x40000000u

typedef struct {
    TpsTaskId pred;
    TpsTaskId succ;
    guint32 kind;
} Edge;

typedef enum {
    STATE_WAITING,  /* some condition unmet */
    STATE_CE_QUEUE, /* ready, waiting for a copy engine */
    STATE_FIXED,    /* in its fixed (latency) phase */
    STATE_FLUID,    /* in its fluid phase */
    STATE_HOLD,     /* container: waiting for its children */
    STATE_DONE,
} TaskState;

enum {
    FLAG_LAUNCH = 1 << 0,
    FLAG_CONTAINER = 1 << 1,
    FLAG_COPY_ENGINE = 1 << 2,
    FLAG_SMS_RECORDED = 1 << 4,
    FLAG_HOST_WAIT = 1 << 5, /* a host thread blocked in a sync on it */
    FLAG_RAN_RECORDED = 1 << 6, /* span.run_start set: it has held an SM */
};

typedef struct {
    TpsSpan span; /* identity and reported fields live here, once */
    TpsTime wave_ns;
    TpsTime fixed_ns;
    TpsTime floor_ns;
    double hbm_bytes;
    double link_bytes;
    guint32 ctas;
    guint32 max_sms;
    guint32 dst_rank;
    guint32 children;     /* children and end_after() predecessors not yet ended */
    guint32 fluid;        /* Fluid slot while in the fluid phase, else NONE32 */
    guint32 ce_next;      /* next in its rank's copy-engine queue */
    guint32 alloc;        /* SMs held now */
    guint32 tail_ctas;    /* in its last, partial wave: the CTAs still running (0: not yet) */
    guint32 tail_waves;   /* the waves it had when it entered that wave */
    guint32 regrant_ctas; /* CTAs not finished when it last gained SMs mid-run (0: never) */
    guint32 regrant_sms;  /* the SMs it gained them to */
    double regrant_work;  /* its work left then */
    double regrant_span;  /* ns for its whole work at the rate from then on */
    double regrant_tail;  /* work left when the CTAs then in flight end (< 0: not tracked) */
    guint32 regrant_new;  /* the CTAs that were still to start then */
    gboolean regrant_fit; /* and they all started then */
    /* What that gain was computed from (another gain at the same instant
     * redoes it): CTAs, work, SMs held, whether it was the first. */
    double gain_ctas, gain_work;
    guint32 gain_had;
    gboolean gain_first;
    guint32 launch_index; /* launched tasks: index of its issue in its rank's host program */
    gint32 priority;      /* SM priority: its stream's, or its parent's */
    guint8 state;
    guint8 flags;
} Task;

/* Rate state of a task in its fluid phase. */
typedef struct {
    TpsTaskId task; /* NONE32 while the slot is free */
    guint32 n_res;
    guint32 res[TASK_RES_MAX];
    guint32 slot[TASK_RES_MAX]; /* index in the resource's member list */
    double bytes[TASK_RES_MAX];
    double share[TASK_RES_MAX]; /* bytes / size: usage per unit of fill level */
    double size;                /* max bytes over its resources (W) */
    double rmax;                /* solo rate limit from SMs and the floor */
    double rate;                /* work per ns; < 0 before the first solve */
    double old_rate;            /* scratch of the re-solve: rate before it */
    double remaining;           /* work left at time `last` */
    TpsTime last;
    guint32 mark; /* component search epoch */
    gboolean dirty;
    gboolean frozen;       /* scratch of the filling loop */
    gboolean tail_pending; /* its pending event is the start of its last wave */
    gboolean replan;       /* its task gained SMs: place its events anew */
} Fluid;

typedef struct {
    guint32 fluid;
    guint32 k; /* which of the fluid's resources this is */
} Member;

typedef struct {
    double cap;      /* bytes per ns */
    Member *members; /* fluid tasks using it */
    guint32 n_members, cap_members;
    guint32 mark;
    gboolean dirty;
    double left_load;   /* usage of the tasks that left it since the last update */
    double used;        /* scratch: usage of frozen tasks */
    double coef;        /* scratch: summed share of its unfrozen tasks */
    double level;       /* scratch: fill level at which it saturates */
    guint32 n_unfrozen; /* scratch: unfrozen tasks using it */
} Resource;

typedef struct {
    guint32 rank;
    gint32 priority;
    const char *name;
    TpsTaskId last;    /* last task added on it */
    guint32 wait_head; /* pending stream waits, a list in engine->waits */
} Stream;

typedef struct {
    TpsTaskId task;
    guint32 next;
} PendingWait;

/* One item of a rank's host program (engine.h). */
enum {
    HOST_ISSUE,
    HOST_WORK,
    HOST_SYNC
};

/* A sync on the device rather than on a task. */
#define HOST_DEVICE NONE32

typedef struct {
    TpsTime pre;    /* host-only work just before it (folded in: one event for both) */
    TpsTime ns;     /* its own host time (for a sync: after the wait) */
    TpsTime end;    /* run: when the thread went on */
    guint32 task;   /* HOST_ISSUE: the task; HOST_SYNC: the task, or HOST_DEVICE */
    guint32 kind;   /* HOST_* */
    guint32 before; /* HOST_SYNC on the device: launched tasks of the rank before it */
} HostItem;

/* A growable list of ids. The run's lists are pushed to on every event;
 * GArray's out-of-line calls cost more than the work itself there, so the
 * hot path uses this inline one (it grows only while a run warms up). */
typedef struct {
    guint32 *data;
    guint32 len;
    guint32 cap;
} IdVec;

/* Out of line: it runs only while a run warms up (engine.c). */
G_GNUC_INTERNAL void eng_idvec_grow(IdVec *v);

static inline void
idvec_push(IdVec *v, guint32 id)
{
    if (G_UNLIKELY(v->len == v->cap))
        eng_idvec_grow(v);
    v->data[v->len++] = id;
}

typedef struct {
    guint32 free_ce;
    guint32 ce_head, ce_tail; /* FIFO of tasks waiting for a copy engine */
    IdVec sm_users;           /* running tasks with ctas > 0, in hand-out order */
    gboolean sm_dirty;        /* listed in engine->sm_dirty */
    guint32 host_next;        /* the item of engine->host[rank] the thread is in */
    guint32 host_wait;        /* the task a sync is blocked on, HOST_DEVICE, or
                                 NONE32 - 1 when not blocked */
    guint32 launched_done;    /* launched tasks of the rank that have ended */
} Rank;

/* Rank.host_wait when the thread is not blocked (task ids stay below). */
#define HOST_RUNNING (NONE32 - 1)

typedef struct {
    TpsTime time;
    guint64 seq;
    guint32 node; /* task id, or n_tasks + rank for a host thread */
} HeapEntry;

struct TpsEngine {
    TpsMachine machine;
    /* The graph's tasks and edges, and the per-task counters below: plain
     * arrays pushed to inline, growing by doubling (or ahead, from
     * tps_engine_reserve()); a GArray call per task and per edge cost as
     * much as the rest of adding them. */
    Task *tasks;
    guint32 n_tasks;   /* tasks added */
    guint32 cap_tasks; /* room in tasks (and one more in the per-task counters) */
    Edge *edges;
    guint32 n_edges, cap_edges;
    GArray *streams; /* Stream */
    GArray *waits;   /* PendingWait */
    TpsEngineNames *names; /* task and stream names (shared with exported runs) */
    /* Interned names recently added, by the address they were given at
     * (intern_name()). */
    const char *name_cache[NAME_CACHE_SIZE];
    TpsTime *other_ready;                 /* per task: when its last non-stream condition was met */
    TpsTime *stream_ready;                /* per task: when its stream predecessor ended */
    TpsTaskId *last_launched;             /* per rank, while building */
    GArray **host;                        /* per rank: its host program, HostItem */
    guint32 *n_launched;                  /* per rank, while building: launched tasks so far */
    gboolean *captured;                   /* per rank, while building: inside a captured graph */
    TpsTime *host_pending; /* per rank, while building: host work not yet in an item */
    /* Out-degree of each task in start and end edges, counted while
     * building (the task is hot then) and turned into CSR offsets by the
     * run. */
    guint32 *start_deg, *end_deg;
    /* Unmet start conditions per task (edges, pending launch). Kept out of
     * Task: the run scans it for roots and it is the hottest counter. */
    guint32 *blockers;
    gboolean ran;
    gboolean incremental; /* try the local update before a full re-solve */

    /* Run state. */
    const guint32 *start_off, *end_off; /* CSR offsets: data of start_deg, end_deg */
    guint32 *start_succ;                /* CSR: released when a task starts */
    guint32 *end_succ;                  /* CSR: released when a task ends */
    Rank *ranks;
    Resource *res;
    guint32 n_res;
    HeapEntry *heap;
    guint32 heap_len;
    guint32 *heap_pos; /* per node, NONE32 when not queued */
    guint64 seq;
    Fluid *fluids; /* pool of fluid slots */
    guint32 n_fluids, cap_fluids;
    IdVec fluid_free;
    IdVec ready; /* tasks whose conditions are met */
    IdVec batch; /* scratch for ready and due lists */
    IdVec dirty_res;
    IdVec dirty_fluid;
    IdVec comp_fluid; /* scratch of the re-solve */
    IdVec comp_res;
    IdVec sm_dirty; /* ranks whose set of SM users changed */
    guint32 epoch;
    gboolean ce_freed;
    TpsTime now;
    guint32 n_done;
    guint64 events;
    guint64 rate_updates;
    guint64 local_updates;
    TpsTime makespan;
};

static inline Task *
task_at(const TpsEngine *engine, TpsTaskId id)
{
    return &engine->tasks[id];
}

static inline Fluid *
fluid_at(const TpsEngine *engine, guint32 id)
{
    return &engine->fluids[id];
}

static inline void
mark_fluid_dirty(TpsEngine *engine, guint32 f)
{
    Fluid *fluid = fluid_at(engine, f);
    if (!fluid->dirty) {
        fluid->dirty = TRUE;
        idvec_push(&engine->dirty_fluid, f);
    }
}

static inline void
advance(Fluid *fluid, TpsTime now)
{
    fluid->remaining = tps_fluid_advance(fluid->remaining, fluid->rate, fluid->last, now);
    fluid->last = now;
    fluid->old_rate = fluid->rate;
}

/* A condition of `succ` was met: it becomes ready when none is left. */
static inline void
release(TpsEngine *engine, TpsTaskId succ)
{
    if (--engine->blockers[succ] == 0)
        idvec_push(&engine->ready, succ);
}

/* A condition other than its stream predecessor was met now. The times are
 * kept beside the tasks, not in them, so that a release touches no cold
 * task. */
static inline void
release_other(TpsEngine *engine, TpsTaskId succ)
{
    if (engine->machine.record_waits)
        engine->other_ready[succ] = engine->now;
    release(engine, succ);
}

/* A Task spans three cache lines; starting it reads all of them. */
static inline void
prefetch_task(const TpsEngine *engine, TpsTaskId id)
{
    const char *p = (const char *)task_at(engine, id);
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
    __builtin_prefetch(p + sizeof(Task) - 1);
}

/* ---- Functions shared between the engine's files ---- */

/* engine.c: the work of `id` is done: it ends, or holds its SMs until what
 * it must outlive has ended. */
G_GNUC_INTERNAL void eng_work_done(TpsEngine *engine, TpsTaskId id);

/* engine-stream.c: turn the built graph into the run state (CSR successor
 * lists, ranks, resources, the heap, the first ready tasks). */
G_GNUC_INTERNAL void eng_setup_run(TpsEngine *engine);

/* engine-host.c: the host thread of `rank` runs its program from the
 * current item on: `item_done` says that item is over now (its event
 * fired); items that take no time are done at once, and it stops at one
 * that takes time (its end queued) or a sync whose condition is unmet
 * (blocked). A task some thread is blocked on ended (FLAG_HOST_WAIT); a
 * launched task of `rank` ended (it may unblock a device sync). */
G_GNUC_INTERNAL void eng_host_run(TpsEngine *engine, guint rank, gboolean item_done);
G_GNUC_INTERNAL void eng_host_task_ended(TpsEngine *engine, TpsTaskId id);
G_GNUC_INTERNAL void eng_host_launched_ended(TpsEngine *engine, guint rank);
/* While building: the issue of launched task `id` (`ns` of host time, none
 * inside a captured graph), and the event calls of a stream wait. */
G_GNUC_INTERNAL void eng_host_issue(TpsEngine *engine, guint rank, TpsTaskId id, TpsTime ns);
G_GNUC_INTERNAL void eng_host_stream_wait(TpsEngine *engine, guint rank);
/* At run setup: work left after the last item becomes an item of its own. */
G_GNUC_INTERNAL void eng_host_flush(TpsEngine *engine);

/* engine-heap.c: queue `node` (a task, or n_tasks + rank for a host
 * thread) at `time`, moving it if queued; unqueue it; move the entry at
 * `i` down to its place (for heap_pop() below). */
G_GNUC_INTERNAL void eng_heap_schedule(TpsEngine *engine, guint32 node, TpsTime time);
G_GNUC_INTERNAL void eng_heap_remove(TpsEngine *engine, guint32 node);
G_GNUC_INTERNAL void eng_heap_sift_down(TpsEngine *engine, guint32 i);

/* engine-sm.c: a task that starts joins its rank's SM users, one that ends
 * leaves them; SMs are handed out again on the ranks whose users changed;
 * the solo rate is the work per ns that the task's SMs (in waves of CTAs)
 * and its floor allow it alone; a kernel reaching its partial last wave
 * gives back the SMs it no longer fills. */
G_GNUC_INTERNAL void eng_sm_insert(TpsEngine *engine, TpsTaskId id, guint rank, gint32 priority);
G_GNUC_INTERNAL void eng_sm_remove(TpsEngine *engine, TpsTaskId id, guint rank);
G_GNUC_INTERNAL void eng_assign_sms(TpsEngine *engine);
G_GNUC_INTERNAL double eng_solo_rate(const Task *t);
G_GNUC_INTERNAL void eng_enter_tail(TpsEngine *engine, TpsTaskId id);

/* engine-fluid.c: a task enters its fluid phase (one that shares nothing
 * just takes its floor) and leaves it; the rates of what changed are
 * settled, locally or by re-solving the components it touches, and the
 * finish events whose rate changed move. */
G_GNUC_INTERNAL void eng_enter_fluid(TpsEngine *engine, TpsTaskId id);
G_GNUC_INTERNAL void eng_leave_fluid(TpsEngine *engine, Task *t);
G_GNUC_INTERNAL void eng_solve(TpsEngine *engine);

/* ---- The pop of the event queue ----
 * Inline here rather than in engine-heap.c: the run loop pops every event,
 * and a call per pop cost more than the pop. */

static inline void
heap_put(TpsEngine *engine, guint32 i, HeapEntry entry)
{
    engine->heap[i] = entry;
    engine->heap_pos[entry.node] = i;
}

static inline guint32
heap_pop(TpsEngine *engine)
{
    guint32 node = engine->heap[0].node;
    engine->heap_pos[node] = NONE32;
    if (--engine->heap_len > 0) {
        /* The last entry can only sink from the root. */
        heap_put(engine, 0, engine->heap[engine->heap_len]);
        eng_heap_sift_down(engine, 0);
    }
    return node;
}
