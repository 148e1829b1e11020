/* The discrete-event engine (see engine.h for the model).
 *
 * Layout, chosen so that a million-task graph costs no allocation per event
 * and none per task beyond geometric growth of a few arrays:
 *  - tasks live in one GArray of structs, each embedding its TpsSpan, so the
 *    pointer tps_engine_span() returns is stable after the run;
 *  - dependency edges are appended to one array while the graph is built
 *    and turned into two CSR successor lists (released on start, released
 *    on end) when the run starts; a task becomes ready when its count of
 *    unmet conditions drops to zero;
 *  - events sit in an indexed binary min-heap keyed by (time, seq): each
 *    task has at most one pending event (end of its fixed or fluid phase)
 *    and each rank's host launcher has one, so a node's heap position is
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
#include "engine/engine.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

#define NONE32 G_MAXUINT32

/* Remaining work below this counts as done (work is 1 unit per task). */
#define WORK_EPSILON 1e-12
/* Relative slack when comparing fill levels, so that a resource saturated
 * by rounding does not need an extra round of the filling loop. */
#define LEVEL_EPSILON 1e-12
/* A resource loaded below (1 - this) of its capacity is slack. */
#define SLACK_EPSILON 1e-9
/* Durations within this of a whole nanosecond round down to it. */
#define ROUNDING_SLACK_NS 1e-6
/* How many blocked tasks a deadlock error names. */
#define DEADLOCK_REPORT_MAX 10

/* Bandwidth resources of one rank. */
enum { RES_HBM, RES_NVLINK_OUT, RES_NVLINK_IN, RES_NIC_OUT, RES_NIC_IN, RES_PER_RANK };

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
    guint32 launch_index; /* launched tasks: position in its rank's launch order */
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
    gboolean frozen; /* scratch of the filling loop */
    gboolean tail_pending; /* its pending event is the start of its last wave */
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

/* A growable list of ids. The run's lists are pushed to on every event;
 * GArray's out-of-line calls cost more than the work itself there, so the
 * hot path uses this inline one (it grows only while a run warms up). */
typedef struct {
    guint32 *data;
    guint32 len;
    guint32 cap;
} IdVec;

static void
idvec_grow(IdVec *v) {
    v->cap = MAX(16, v->cap * 2);
    v->data = g_renew(guint32, v->data, v->cap);
}

static inline void
idvec_push(IdVec *v, guint32 id) {
    if (G_UNLIKELY(v->len == v->cap))
        idvec_grow(v);
    v->data[v->len++] = id;
}

static void
idvec_clear(IdVec *v) {
    g_clear_pointer(&v->data, g_free);
    v->len = v->cap = 0;
}

typedef struct {
    guint32 free_ce;
    guint32 ce_head, ce_tail; /* FIFO of tasks waiting for a copy engine */
    IdVec sm_users;           /* running tasks with ctas > 0, in hand-out order */
    gboolean sm_dirty;        /* listed in engine->sm_dirty */
    guint32 launch_next;      /* next task of engine->launched[rank] to launch */
} Rank;

typedef struct {
    TpsTime time;
    guint64 seq;
    guint32 node; /* task id, or n_tasks + rank for a host launcher */
} HeapEntry;

struct TpsEngine {
    TpsMachine machine;
    GArray *tasks;   /* Task */
    GArray *streams; /* Stream */
    GArray *waits;   /* PendingWait */
    GArray *edges;   /* Edge */
    GStringChunk *names;
    const char *last_name_in, *last_name; /* the previous add's name, as given and interned */
    TpsTime *other_ready;  /* per task: when its last non-stream condition was met */
    TpsTime *stream_ready; /* per task: when its stream predecessor ended */
    TpsTaskId *last_launched; /* per rank, while building */
    GArray **launched;        /* per rank: launched task ids in add order */
    /* Out-degree of each task in start and end edges, counted while
     * building (the task is hot then) and turned into CSR offsets by the
     * run. */
    GArray *start_deg, *end_deg;
    /* Unmet start conditions per task (edges, pending launch). Kept out of
     * Task: the run scans it for roots and it is the hottest counter. */
    GArray *blockers;
    gboolean ran;
    gboolean incremental; /* try the local update before a full re-solve */

    /* Run state. */
    guint32 n_tasks;
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

static const char *const kind_names[TPS_KIND_COUNT] = {
    [TPS_KIND_GEMM] = "gemm",     [TPS_KIND_ATTENTION] = "attention", [TPS_KIND_MEMORY] = "memory",
    [TPS_KIND_COMM] = "comm",     [TPS_KIND_FLOW] = "flow",           [TPS_KIND_COPY] = "copy",
    [TPS_KIND_MARKER] = "marker",
};

const char *
tps_task_kind_name(TpsTaskKind kind) {
    g_return_val_if_fail((guint)kind < TPS_KIND_COUNT, "unknown");
    return kind_names[kind];
}

static inline Task *
task_at(const TpsEngine *engine, TpsTaskId id) {
    return &g_array_index(engine->tasks, Task, id);
}

static inline Fluid *
fluid_at(const TpsEngine *engine, guint32 id) {
    return &engine->fluids[id];
}

/* ---- Building the graph ---- */

TpsEngine *
tps_engine_new(const TpsMachine *machine) {
    g_return_val_if_fail(machine != NULL, NULL);
    g_return_val_if_fail(machine->ranks > 0, NULL);

    TpsEngine *engine = g_new0(TpsEngine, 1);
    engine->machine = *machine;
    if (engine->machine.gpus_per_node == 0)
        engine->machine.gpus_per_node = machine->ranks;
    engine->tasks = g_array_new(FALSE, FALSE, sizeof(Task));
    engine->streams = g_array_new(FALSE, FALSE, sizeof(Stream));
    engine->waits = g_array_new(FALSE, FALSE, sizeof(PendingWait));
    engine->edges = g_array_new(FALSE, FALSE, sizeof(Edge));
    engine->names = g_string_chunk_new(4096);
    engine->incremental = TRUE;
    engine->last_launched = g_new(TpsTaskId, machine->ranks);
    engine->launched = g_new(GArray *, machine->ranks);
    for (guint r = 0; r < machine->ranks; r++) {
        engine->last_launched[r] = TPS_TASK_NONE;
        engine->launched[r] = g_array_new(FALSE, FALSE, sizeof(guint32));
    }
    engine->start_deg = g_array_new(FALSE, TRUE, sizeof(guint32));
    engine->blockers = g_array_new(FALSE, TRUE, sizeof(guint32));
    engine->end_deg = g_array_new(FALSE, TRUE, sizeof(guint32));
    return engine;
}

void
tps_engine_free(TpsEngine *engine) {
    if (engine == NULL)
        return;
    g_array_unref(engine->tasks);
    g_array_unref(engine->streams);
    g_array_unref(engine->waits);
    g_array_unref(engine->edges);
    g_string_chunk_free(engine->names);
    g_free(engine->last_launched);
    for (guint r = 0; r < engine->machine.ranks; r++)
        g_array_unref(engine->launched[r]);
    g_free(engine->launched);
    g_array_unref(engine->start_deg);
    g_array_unref(engine->blockers);
    g_array_unref(engine->end_deg);
    g_free(engine->start_succ);
    g_free(engine->end_succ);
    if (engine->ranks != NULL) {
        for (guint r = 0; r < engine->machine.ranks; r++)
            idvec_clear(&engine->ranks[r].sm_users);
        g_free(engine->ranks);
    }
    if (engine->res != NULL) {
        for (guint i = 0; i < engine->n_res; i++)
            g_free(engine->res[i].members);
        g_free(engine->res);
    }
    g_free(engine->heap);
    g_free(engine->heap_pos);
    g_free(engine->other_ready);
    g_free(engine->stream_ready);
    g_free(engine->fluids);
    IdVec *scratch[] = {&engine->fluid_free, &engine->ready,       &engine->batch,
                        &engine->dirty_res,  &engine->dirty_fluid, &engine->comp_fluid,
                        &engine->comp_res,   &engine->sm_dirty};
    for (guint i = 0; i < G_N_ELEMENTS(scratch); i++)
        idvec_clear(scratch[i]);
    g_free(engine);
}

void
tps_engine_set_incremental(TpsEngine *engine, gboolean incremental) {
    g_return_if_fail(engine != NULL);
    engine->incremental = incremental;
}

const TpsMachine *
tps_engine_machine(const TpsEngine *engine) {
    g_return_val_if_fail(engine != NULL, NULL);
    return &engine->machine;
}

TpsStreamId
tps_engine_add_stream(TpsEngine *engine, guint rank, int priority, const char *name) {
    g_return_val_if_fail(engine != NULL, TPS_STREAM_NONE);
    g_return_val_if_fail(rank < engine->machine.ranks, TPS_STREAM_NONE);
    g_return_val_if_fail(!engine->ran, TPS_STREAM_NONE);

    Stream stream = {
        .rank = rank,
        .priority = priority,
        .name = g_string_chunk_insert_const(engine->names, name != NULL ? name : ""),
        .last = TPS_TASK_NONE,
        .wait_head = NONE32,
    };
    g_array_append_val(engine->streams, stream);
    return engine->streams->len - 1;
}

const char *
tps_engine_stream_name(const TpsEngine *engine, TpsStreamId stream) {
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, NULL);
    return g_array_index(engine->streams, Stream, stream).name;
}

guint
tps_engine_stream_rank(const TpsEngine *engine, TpsStreamId stream) {
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, 0);
    return g_array_index(engine->streams, Stream, stream).rank;
}

guint
tps_engine_n_streams(const TpsEngine *engine) {
    g_return_val_if_fail(engine != NULL, 0);
    return engine->streams->len;
}

guint
tps_engine_n_tasks(const TpsEngine *engine) {
    g_return_val_if_fail(engine != NULL, 0);
    return engine->tasks->len;
}

static void
add_edge(TpsEngine *engine, TpsTaskId pred, TpsTaskId succ, EdgeKind kind) {
    Edge edge = {.pred = pred, .succ = succ, .kind = kind};
    g_array_append_val(engine->edges, edge);
    if (kind == EDGE_HOLD)
        task_at(engine, succ)->children++;
    else
        g_array_index(engine->blockers, guint32, succ)++;
    gboolean on_end = kind == EDGE_END || kind == EDGE_STREAM || kind == EDGE_HOLD;
    g_array_index(on_end ? engine->end_deg : engine->start_deg, guint32, pred)++;
}

/* Builders add runs of tasks with one name (every chunk of a pipeline,
 * every step of a collective): skip the hash lookup when the caller passes
 * the same string again. The pointer alone is not enough (a caller may
 * reuse a buffer), so the text is compared too. */
static const char *
intern_name(TpsEngine *engine, const char *name) {
    if (name == NULL)
        name = "";
    if (engine->last_name_in != NULL && strcmp(engine->last_name_in, name) == 0)
        return engine->last_name;
    engine->last_name = g_string_chunk_insert_const(engine->names, name);
    engine->last_name_in = engine->last_name;
    return engine->last_name;
}

void
tps_engine_reserve(TpsEngine *engine, guint tasks, guint edges) {
    g_return_if_fail(engine != NULL && !engine->ran);
    guint t = engine->tasks->len, e = engine->edges->len;
    /* GArray has no reserve: grow, then shrink the length back. */
    g_array_set_size(engine->tasks, t + tasks);
    g_array_set_size(engine->tasks, t);
    g_array_set_size(engine->edges, e + edges);
    g_array_set_size(engine->edges, e);
    GArray *per_task[] = {engine->start_deg, engine->blockers, engine->end_deg};
    for (guint i = 0; i < G_N_ELEMENTS(per_task); i++) {
        guint n = per_task[i]->len;
        g_array_set_size(per_task[i], n + tasks + 1);
        g_array_set_size(per_task[i], n);
    }
}

TpsTaskId
tps_engine_add(TpsEngine *engine, const TpsTaskSpec *spec) {
    g_return_val_if_fail(engine != NULL && spec != NULL, TPS_TASK_NONE);
    g_return_val_if_fail(!engine->ran, TPS_TASK_NONE);
    g_return_val_if_fail((guint)spec->kind < TPS_KIND_COUNT, TPS_TASK_NONE);
    g_return_val_if_fail(spec->rank < engine->machine.ranks, TPS_TASK_NONE);
    g_return_val_if_fail(spec->stream == TPS_STREAM_NONE || spec->stream < engine->streams->len,
                         TPS_TASK_NONE);
    g_return_val_if_fail(spec->stream == TPS_STREAM_NONE ||
                             g_array_index(engine->streams, Stream, spec->stream).rank ==
                                 spec->rank,
                         TPS_TASK_NONE);
    g_return_val_if_fail(spec->parent == TPS_TASK_NONE || spec->parent < engine->tasks->len,
                         TPS_TASK_NONE);
    g_return_val_if_fail(spec->link_bytes <= 0.0 || spec->dst_rank < engine->machine.ranks,
                         TPS_TASK_NONE);
    g_return_val_if_fail(engine->tasks->len < STREAM_BIT - engine->machine.ranks - 1,
                         TPS_TASK_NONE);

    TpsTaskId id = engine->tasks->len;
    Task task = {
        .span =
            {
                .id = id,
                .kind = spec->kind,
                .name = intern_name(engine, spec->name),
                .rank = spec->rank,
                .stream = spec->stream,
                .parent = spec->parent,
                .flops = spec->flops,
                .bytes = spec->bytes,
            },
        .wave_ns = spec->wave_ns,
        .fixed_ns = spec->fixed_ns,
        .floor_ns = spec->floor_ns,
        .hbm_bytes = spec->hbm_bytes,
        .link_bytes = spec->link_bytes,
        .ctas = spec->ctas,
        .max_sms = spec->max_sms,
        .dst_rank = spec->link_bytes > 0.0 ? spec->dst_rank : spec->rank,
        .fluid = NONE32,
        .ce_next = NONE32,
        .flags = (spec->launch ? FLAG_LAUNCH : 0) | (spec->container ? FLAG_CONTAINER : 0) |
                 (spec->copy_engine ? FLAG_COPY_ENGINE : 0),
    };
    /* Parents come before children, so the inherited priority is known. */
    if (spec->stream != TPS_STREAM_NONE)
        task.priority = g_array_index(engine->streams, Stream, spec->stream).priority;
    else if (spec->parent != TPS_TASK_NONE)
        task.priority = task_at(engine, spec->parent)->priority;
    g_array_append_val(engine->tasks, task);
    g_array_set_size(engine->start_deg, id + 1);
    g_array_set_size(engine->blockers, id + 1);
    if (spec->launch)
        g_array_index(engine->blockers, guint32, id)++;
    g_array_set_size(engine->end_deg, id + 1);

    if (spec->stream != TPS_STREAM_NONE) {
        Stream *stream = &g_array_index(engine->streams, Stream, spec->stream);
        if (stream->last != TPS_TASK_NONE)
            add_edge(engine, stream->last, id, EDGE_STREAM);
        for (guint32 w = stream->wait_head; w != NONE32;) {
            const PendingWait *wait = &g_array_index(engine->waits, PendingWait, w);
            add_edge(engine, wait->task, id, EDGE_END);
            w = wait->next;
        }
        stream->wait_head = NONE32;
        stream->last = id;
    }
    if (spec->parent != TPS_TASK_NONE) {
        add_edge(engine, spec->parent, id, EDGE_PARENT);
        task_at(engine, spec->parent)->children++;
    }
    if (spec->launch) {
        TpsTaskId prev = engine->last_launched[spec->rank];
        if (engine->machine.single_hw_queue && prev != TPS_TASK_NONE)
            add_edge(engine, prev, id, EDGE_HWQ);
        engine->last_launched[spec->rank] = id;
        task_at(engine, id)->launch_index = engine->launched[spec->rank]->len;
        g_array_append_val(engine->launched[spec->rank], id);
    }
    return id;
}

void
tps_engine_after(TpsEngine *engine, TpsTaskId task, TpsTaskId pred) {
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(task < engine->tasks->len && pred < engine->tasks->len);
    add_edge(engine, pred, task, EDGE_END);
}

void
tps_engine_after_start(TpsEngine *engine, TpsTaskId task, TpsTaskId pred) {
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(task < engine->tasks->len && pred < engine->tasks->len);
    add_edge(engine, pred, task, EDGE_START);
}

void
tps_engine_end_after(TpsEngine *engine, TpsTaskId task, TpsTaskId pred) {
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(task < engine->tasks->len && pred < engine->tasks->len);
    add_edge(engine, pred, task, EDGE_HOLD);
}

TpsTaskId
tps_engine_record(const TpsEngine *engine, TpsStreamId stream) {
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, TPS_TASK_NONE);
    return g_array_index(engine->streams, Stream, stream).last;
}

void
tps_engine_stream_wait(TpsEngine *engine, TpsStreamId stream, TpsTaskId task) {
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(stream < engine->streams->len);
    if (task == TPS_TASK_NONE)
        return;
    g_return_if_fail(task < engine->tasks->len);

    Stream *s = &g_array_index(engine->streams, Stream, stream);
    PendingWait wait = {.task = task, .next = s->wait_head};
    g_array_append_val(engine->waits, wait);
    s->wait_head = engine->waits->len - 1;
}

const TpsSpan *
tps_engine_span(const TpsEngine *engine, TpsTaskId task) {
    g_return_val_if_fail(engine != NULL && task < engine->tasks->len, NULL);
    return &task_at(engine, task)->span;
}

/* ---- Event queue: indexed binary min-heap on (time, seq) ---- */

static inline gboolean
heap_less(const HeapEntry *a, const HeapEntry *b) {
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static inline void
heap_put(TpsEngine *engine, guint32 i, HeapEntry entry) {
    engine->heap[i] = entry;
    engine->heap_pos[entry.node] = i;
}

static void
heap_sift_up(TpsEngine *engine, guint32 i) {
    HeapEntry entry = engine->heap[i];
    while (i > 0) {
        guint32 parent = (i - 1) / 2;
        if (!heap_less(&entry, &engine->heap[parent]))
            break;
        heap_put(engine, i, engine->heap[parent]);
        i = parent;
    }
    heap_put(engine, i, entry);
}

static void
heap_sift_down(TpsEngine *engine, guint32 i) {
    HeapEntry entry = engine->heap[i];
    guint32 n = engine->heap_len;
    for (;;) {
        guint32 child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && heap_less(&engine->heap[child + 1], &engine->heap[child]))
            child++;
        if (!heap_less(&engine->heap[child], &entry))
            break;
        heap_put(engine, i, engine->heap[child]);
        i = child;
    }
    heap_put(engine, i, entry);
}

/* Queue `node` at `time`, moving it if it is queued already. The heap has
 * room for every node, so this never allocates. */
static void
heap_schedule(TpsEngine *engine, guint32 node, TpsTime time) {
    HeapEntry entry = {.time = time, .seq = engine->seq++, .node = node};
    guint32 i = engine->heap_pos[node];
    if (i == NONE32) {
        i = engine->heap_len++;
        heap_put(engine, i, entry);
        heap_sift_up(engine, i);
        return;
    }
    gboolean earlier = heap_less(&entry, &engine->heap[i]);
    heap_put(engine, i, entry);
    if (earlier)
        heap_sift_up(engine, i);
    else
        heap_sift_down(engine, i);
}

static void
heap_remove(TpsEngine *engine, guint32 node) {
    guint32 i = engine->heap_pos[node];
    if (i == NONE32)
        return;
    engine->heap_pos[node] = NONE32;
    guint32 last = --engine->heap_len;
    if (i == last)
        return;
    HeapEntry moved = engine->heap[last];
    gboolean earlier = heap_less(&moved, &engine->heap[i]);
    heap_put(engine, i, moved);
    if (earlier)
        heap_sift_up(engine, i);
    else
        heap_sift_down(engine, i);
}

static guint32
heap_pop(TpsEngine *engine) {
    guint32 node = engine->heap[0].node;
    engine->heap_pos[node] = NONE32;
    if (--engine->heap_len > 0) {
        /* The last entry can only sink from the root. */
        heap_put(engine, 0, engine->heap[engine->heap_len]);
        heap_sift_down(engine, 0);
    }
    return node;
}

/* ---- Run setup ---- */

/* Turn the out-degrees into CSR offsets (in place, one more slot for the
 * end) and fill the successor lists from the edge list. */
static void
build_csr(TpsEngine *engine) {
    guint32 n = engine->n_tasks;
    GArray *degs[2] = {engine->start_deg, engine->end_deg};
    for (guint d = 0; d < 2; d++) {
        g_array_set_size(degs[d], n + 1);
        guint32 *off = (guint32 *)(void *)degs[d]->data, acc = 0;
        for (guint32 i = 0; i <= n; i++) {
            guint32 deg = off[i];
            off[i] = acc;
            acc += deg;
        }
    }
    guint32 *start_off = (guint32 *)(void *)engine->start_deg->data;
    guint32 *end_off = (guint32 *)(void *)engine->end_deg->data;
    engine->start_succ = g_new(guint32, start_off[n] + 1);
    engine->end_succ = g_new(guint32, end_off[n] + 1);

    /* Fill with moving cursors (offset i ends up where i + 1 began), then
     * shift back: keeps release order equal to insertion order. */
    const Edge *edges = (const Edge *)(void *)engine->edges->data;
    for (guint32 e = 0; e < engine->edges->len; e++) {
        if (edges[e].kind == EDGE_END)
            engine->end_succ[end_off[edges[e].pred]++] = edges[e].succ;
        else if (edges[e].kind == EDGE_STREAM)
            engine->end_succ[end_off[edges[e].pred]++] = edges[e].succ | STREAM_BIT;
        else if (edges[e].kind == EDGE_HOLD)
            engine->end_succ[end_off[edges[e].pred]++] = edges[e].succ | HOLD_BIT;
        else
            engine->start_succ[start_off[edges[e].pred]++] = edges[e].succ;
    }
    for (guint32 i = n; i > 0; i--) {
        start_off[i] = start_off[i - 1];
        end_off[i] = end_off[i - 1];
    }
    start_off[0] = 0;
    end_off[0] = 0;
    engine->start_off = start_off;
    engine->end_off = end_off;
}

static void
setup_run(TpsEngine *engine) {
    const TpsMachine *m = &engine->machine;
    guint32 n = engine->tasks->len;
    engine->n_tasks = n;
    build_csr(engine);

    engine->ranks = g_new0(Rank, m->ranks);
    if (m->record_waits) {
        engine->other_ready = g_new0(TpsTime, n);
        engine->stream_ready = g_new0(TpsTime, n);
    }
    for (guint r = 0; r < m->ranks; r++) {
        engine->ranks[r].free_ce = m->copy_engines;
        engine->ranks[r].ce_head = engine->ranks[r].ce_tail = NONE32;
    }

    engine->n_res = m->ranks * RES_PER_RANK;
    engine->res = g_new0(Resource, engine->n_res);
    for (guint r = 0; r < m->ranks; r++) {
        double caps[RES_PER_RANK] = {
            [RES_HBM] = m->hbm_gbps,          [RES_NVLINK_OUT] = m->nvlink_gbps,
            [RES_NVLINK_IN] = m->nvlink_gbps, [RES_NIC_OUT] = m->nic_gbps,
            [RES_NIC_IN] = m->nic_gbps,
        };
        for (guint k = 0; k < RES_PER_RANK; k++) {
            Resource *res = &engine->res[r * RES_PER_RANK + k];
            res->cap = caps[k];
        }
    }

    guint32 n_nodes = n + m->ranks;
    engine->heap = g_new(HeapEntry, n_nodes);
    engine->heap_pos = g_new(guint32, n_nodes);
    memset(engine->heap_pos, 0xff, sizeof(guint32) * n_nodes);

    for (guint32 i = 0; i < n; i++)
        if (g_array_index(engine->blockers, guint32, i) == 0)
            idvec_push(&engine->ready, i);
    for (guint r = 0; r < m->ranks; r++)
        if (engine->launched[r]->len > 0)
            heap_schedule(engine, n + r, (TpsTime)m->launch_ns);
}

/* ---- Task life cycle ---- */

static inline void
release(TpsEngine *engine, TpsTaskId succ) {
    if (--g_array_index(engine->blockers, guint32, succ) == 0)
        idvec_push(&engine->ready, succ);
}

/* A condition other than its stream predecessor was met now. The times are
 * kept beside the tasks, not in them, so that a release touches no cold
 * task. */
static inline void
release_other(TpsEngine *engine, TpsTaskId succ) {
    if (engine->machine.record_waits)
        engine->other_ready[succ] = engine->now;
    release(engine, succ);
}

static void
mark_res_dirty(TpsEngine *engine, guint32 r) {
    if (!engine->res[r].dirty) {
        engine->res[r].dirty = TRUE;
        idvec_push(&engine->dirty_res, r);
    }
}

static void
mark_fluid_dirty(TpsEngine *engine, guint32 f) {
    Fluid *fluid = fluid_at(engine, f);
    if (!fluid->dirty) {
        fluid->dirty = TRUE;
        idvec_push(&engine->dirty_fluid, f);
    }
}

static void
add_use(Fluid *fluid, guint32 res, double bytes) {
    if (!(bytes > 0.0))
        return;
    for (guint k = 0; k < fluid->n_res; k++) {
        if (fluid->res[k] == res) {
            fluid->bytes[k] += bytes;
            return;
        }
    }
    g_assert(fluid->n_res < TASK_RES_MAX);
    fluid->res[fluid->n_res] = res;
    fluid->bytes[fluid->n_res] = bytes;
    fluid->n_res++;
}

static void end_task(TpsEngine *engine, TpsTaskId id);
static void unhold(TpsEngine *engine, TpsTaskId id);
static void work_done(TpsEngine *engine, TpsTaskId id);

/* Enter the fluid phase. Rates come from the next re-solve, except for a
 * task that needs nothing at all, which ends at once. */
static void
enter_fluid(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    const gboolean shares = t->ctas > 0 || t->link_bytes > 0.0 ||
                            (t->hbm_bytes > 0.0 && engine->machine.hbm_gbps > 0.0);
    if (!shares) {
        /* Nothing shared: its rate can never change, so it simply takes
         * its floor (the fluid machinery would give the same end, at the
         * cost of a slot and a re-solve). */
        if (t->floor_ns <= 0) {
            work_done(engine, id);
        } else {
            t->state = STATE_FLUID;
            heap_schedule(engine, id, engine->now + t->floor_ns);
        }
        return;
    }

    guint32 f;
    if (engine->fluid_free.len > 0) {
        f = engine->fluid_free.data[--engine->fluid_free.len];
    } else {
        if (engine->n_fluids == engine->cap_fluids) {
            engine->cap_fluids = MAX(16, 2 * engine->cap_fluids);
            engine->fluids = g_renew(Fluid, engine->fluids, engine->cap_fluids);
        }
        f = engine->n_fluids++;
        /* A new slot's search mark must start below every epoch. */
        engine->fluids[f].mark = 0;
    }
    Fluid *fluid = fluid_at(engine, f);
    *fluid = (Fluid){
        .task = id,
        .rate = -1.0,
        .remaining = 1.0,
        .last = engine->now,
        .mark = fluid->mark, /* keep: epochs only grow */
    };
    t->fluid = f;
    t->state = STATE_FLUID;

    guint32 src = t->span.rank, dst = t->dst_rank;
    /* hbm_gbps <= 0: HBM is not modelled on this machine (the pipeline
     * frame, whose tasks carry their own times), and flows do not pass
     * through it. */
    const gboolean hbm = engine->machine.hbm_gbps > 0.0;
    if (hbm)
        add_use(fluid, src * RES_PER_RANK + RES_HBM, t->hbm_bytes);
    if (t->link_bytes > 0.0) {
        const TpsMachine *m = &engine->machine;
        gboolean same_node = src / m->gpus_per_node == dst / m->gpus_per_node;
        if (hbm) {
            add_use(fluid, src * RES_PER_RANK + RES_HBM, t->link_bytes);
            add_use(fluid, dst * RES_PER_RANK + RES_HBM, t->link_bytes);
        }
        /* NVLink is per GPU; the NICs of a node are one resource, held by
         * the node's first rank, since NCCL spreads a ring's channels over
         * all of them. */
        guint32 src_link = same_node ? src : src / m->gpus_per_node * m->gpus_per_node;
        guint32 dst_link = same_node ? dst : dst / m->gpus_per_node * m->gpus_per_node;
        add_use(fluid, src_link * RES_PER_RANK + (same_node ? RES_NVLINK_OUT : RES_NIC_OUT),
                t->link_bytes);
        add_use(fluid, dst_link * RES_PER_RANK + (same_node ? RES_NVLINK_IN : RES_NIC_IN),
                t->link_bytes);
    }
    for (guint k = 0; k < fluid->n_res; k++) {
        Resource *res = &engine->res[fluid->res[k]];
        if (res->n_members == res->cap_members) {
            res->cap_members = MAX(8, 2 * res->cap_members);
            res->members = g_renew(Member, res->members, res->cap_members);
        }
        fluid->slot[k] = res->n_members;
        res->members[res->n_members++] = (Member){.fluid = f, .k = k};
        fluid->size = MAX(fluid->size, fluid->bytes[k]);
        mark_res_dirty(engine, fluid->res[k]);
    }
    for (guint k = 0; k < fluid->n_res; k++)
        fluid->share[k] = fluid->bytes[k] / fluid->size;
    mark_fluid_dirty(engine, f);
}

static void
leave_fluid(TpsEngine *engine, Task *t) {
    guint32 f = t->fluid;
    Fluid *fluid = fluid_at(engine, f);
    for (guint k = 0; k < fluid->n_res; k++) {
        Resource *res = &engine->res[fluid->res[k]];
        Member *members = res->members;
        guint32 slot = fluid->slot[k], last = --res->n_members;
        if (slot != last) {
            members[slot] = members[last];
            fluid_at(engine, members[slot].fluid)->slot[members[slot].k] = slot;
        }
        mark_res_dirty(engine, fluid->res[k]);
        res->left_load += MAX(fluid->rate, 0.0) * fluid->bytes[k];
    }
    fluid->task = NONE32;
    fluid->n_res = 0;
    idvec_push(&engine->fluid_free, f);
    t->fluid = NONE32;
}

static void
mark_sms_dirty(TpsEngine *engine, guint rank) {
    if (!engine->ranks[rank].sm_dirty) {
        engine->ranks[rank].sm_dirty = TRUE;
        idvec_push(&engine->sm_dirty, rank);
    }
}

static void
sm_remove(TpsEngine *engine, TpsTaskId id, guint rank) {
    Rank *r = &engine->ranks[rank];
    guint32 *users = r->sm_users.data, n = r->sm_users.len;
    for (guint i = 0; i < n; i++) {
        if (users[i] == id) {
            memmove(users + i, users + i + 1, sizeof(guint32) * (n - i - 1));
            r->sm_users.len--;
            break;
        }
    }
    mark_sms_dirty(engine, rank);
}

/* Insert in hand-out order: higher priority first, then start order (the
 * new task started last, so it goes after every task of its priority). */
static void
sm_insert(TpsEngine *engine, TpsTaskId id, guint rank, gint32 priority) {
    Rank *r = &engine->ranks[rank];
    idvec_push(&r->sm_users, id); /* room for one more */
    guint32 *users = r->sm_users.data;
    guint i = r->sm_users.len - 1;
    for (; i > 0 && task_at(engine, users[i - 1])->priority < priority; i--)
        users[i] = users[i - 1];
    users[i] = id;
    mark_sms_dirty(engine, rank);
}

static void
end_task(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    t->state = STATE_DONE;
    t->span.end = engine->now;
    engine->makespan = MAX(engine->makespan, engine->now);
    engine->n_done++;

    if (t->fluid != NONE32)
        leave_fluid(engine, t);
    if (t->ctas > 0)
        sm_remove(engine, id, t->span.rank);
    if (t->flags & FLAG_COPY_ENGINE) {
        engine->ranks[t->span.rank].free_ce++;
        engine->ce_freed = TRUE;
    }
    for (guint32 e = engine->end_off[id]; e < engine->end_off[id + 1]; e++) {
        guint32 succ = engine->end_succ[e];
        if (succ & HOLD_BIT) {
            unhold(engine, succ & ~HOLD_BIT);
        } else if (succ & STREAM_BIT) {
            if (engine->machine.record_waits)
                engine->stream_ready[succ & ~STREAM_BIT] = engine->now;
            release(engine, succ & ~STREAM_BIT);
        } else {
            release_other(engine, succ);
        }
    }
    if (t->span.parent != TPS_TASK_NONE)
        unhold(engine, t->span.parent);
}

/* One child or end_after() predecessor of `id` ended. */
static void
unhold(TpsEngine *engine, TpsTaskId id) {
    Task *p = task_at(engine, id);
    if (--p->children == 0 && p->state == STATE_HOLD)
        end_task(engine, id);
}

/* The work of `id` is done: it ends, or holds its SMs until what it must
 * outlive has ended (a container's children, end_after() predecessors). */
static void
work_done(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    if (t->children == 0) {
        end_task(engine, id);
        return;
    }
    if (t->fluid != NONE32)
        leave_fluid(engine, t);
    t->state = STATE_HOLD;
}

/* The fixed phase is over (or was empty). */
static void
after_fixed(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    if (t->flags & FLAG_CONTAINER) {
        work_done(engine, id);
        return;
    }
    enter_fluid(engine, id);
}

/* A Task spans three cache lines; starting it reads all of them. */
static inline void
prefetch_task(const TpsEngine *engine, TpsTaskId id) {
    const char *p = (const char *)task_at(engine, id);
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
    __builtin_prefetch(p + sizeof(Task) - 1);
}

/* On a large graph a task is cold when it starts (it was added, or
 * launched, long before), and that miss was the largest cost of the run.
 * The tasks that may start when `id` ends are known now, while it runs:
 * fetch them, and those their start or end releases at the same instant
 * (children of a container, the task after a zero-time join). */
static void
prefetch_next(const TpsEngine *engine, TpsTaskId id) {
    for (guint32 e = engine->end_off[id]; e < engine->end_off[id + 1]; e++) {
        TpsTaskId next = engine->end_succ[e] & ~(HOLD_BIT | STREAM_BIT);
        prefetch_task(engine, next);
        for (guint32 f = engine->start_off[next]; f < engine->start_off[next + 1]; f++)
            prefetch_task(engine, engine->start_succ[f]);
        for (guint32 f = engine->end_off[next]; f < engine->end_off[next + 1]; f++)
            prefetch_task(engine, engine->end_succ[f] & ~(HOLD_BIT | STREAM_BIT));
    }
}

static void
start_task(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    t->span.start = engine->now;
    /* The launcher never waits, so the k-th launch of a rank completes at
     * (k + 1) * launch_ns; recording it here keeps the launch event from
     * touching the (cold) task. */
    if (t->flags & FLAG_LAUNCH)
        t->span.launch = (TpsTime)(t->launch_index + 1) * (TpsTime)engine->machine.launch_ns;
    else
        t->span.launch = engine->now;
    for (guint32 e = engine->start_off[id]; e < engine->start_off[id + 1]; e++)
        release_other(engine, engine->start_succ[e]);
    /* Ready otherwise before its stream predecessor ended: it queued
     * behind that task. */
    if (engine->machine.record_waits && engine->stream_ready[id] > engine->other_ready[id])
        t->span.stream_wait = engine->stream_ready[id] - engine->other_ready[id];
    prefetch_next(engine, id);
    if (t->ctas > 0)
        sm_insert(engine, id, t->span.rank, t->priority);
    if (t->fixed_ns > 0) {
        t->state = STATE_FIXED;
        heap_schedule(engine, id, engine->now + t->fixed_ns);
    } else {
        after_fixed(engine, id);
    }
}

static void
ce_enqueue(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    Rank *r = &engine->ranks[t->span.rank];
    t->state = STATE_CE_QUEUE;
    t->ce_next = NONE32;
    if (r->ce_tail == NONE32)
        r->ce_head = id;
    else
        task_at(engine, r->ce_tail)->ce_next = id;
    r->ce_tail = id;
}

/* Serve copy-engine queues first (they were ready earlier), then the newly
 * ready tasks in ascending id; starts can make more tasks ready at the same
 * time (start edges), so repeat until none is left. */
static void
start_ready(TpsEngine *engine) {
    if (engine->ce_freed) {
        engine->ce_freed = FALSE;
        for (guint rank = 0; rank < engine->machine.ranks; rank++) {
            Rank *r = &engine->ranks[rank];
            while (r->free_ce > 0 && r->ce_head != NONE32) {
                TpsTaskId id = r->ce_head;
                r->ce_head = task_at(engine, id)->ce_next;
                if (r->ce_head == NONE32)
                    r->ce_tail = NONE32;
                r->free_ce--;
                start_task(engine, id);
            }
        }
    }
    while (engine->ready.len > 0) {
        IdVec batch = engine->ready;
        engine->ready = engine->batch;
        engine->batch = batch;
        guint32 *ids = batch.data;
        if (batch.len > 1) {
            /* Most batches are tiny; insertion sort beats qsort there and
             * needs no comparison callback. */
            for (guint i = 1; i < batch.len; i++) {
                guint32 v = ids[i];
                guint j = i;
                for (; j > 0 && ids[j - 1] > v; j--)
                    ids[j] = ids[j - 1];
                ids[j] = v;
            }
        }
        for (guint i = 0; i < batch.len; i++) {
            TpsTaskId id = ids[i];
            Task *t = task_at(engine, id);
            if (t->flags & FLAG_COPY_ENGINE) {
                Rank *r = &engine->ranks[t->span.rank];
                if (r->free_ce > 0 && r->ce_head == NONE32) {
                    r->free_ce--;
                    start_task(engine, id);
                } else {
                    ce_enqueue(engine, id);
                }
            } else {
                start_task(engine, id);
            }
        }
        engine->batch.len = 0;
    }
}

/* Hand out SMs on ranks whose set of SM users changed. */
static void
assign_sms(TpsEngine *engine) {
    guint sms = engine->machine.sms;
    for (guint d = 0; d < engine->sm_dirty.len; d++) {
        Rank *r = &engine->ranks[engine->sm_dirty.data[d]];
        r->sm_dirty = FALSE;
        guint free = sms;
        const guint32 *users = r->sm_users.data;
        for (guint i = 0; i < r->sm_users.len; i++) {
            Task *t = task_at(engine, users[i]);
            guint want = t->tail_ctas > 0 ? t->tail_ctas : t->ctas;
            guint demand = MIN(want, t->max_sms > 0 ? MIN(t->max_sms, sms) : sms);
            guint got = MIN(demand, free);
            free -= got;
            if (!(t->flags & FLAG_SMS_RECORDED)) {
                t->flags |= FLAG_SMS_RECORDED;
                t->span.sms = got;
            }
            if (got != t->alloc) {
                t->alloc = got;
                if (t->fluid != NONE32)
                    mark_fluid_dirty(engine, t->fluid);
            }
        }
    }
    engine->sm_dirty.len = 0;
}

/* ---- Fluid rates ---- */

static double
solo_rate(const Task *t) {
    double span_ns = 0.0;
    if (t->ctas > 0) {
        if (t->alloc == 0)
            return 0.0;
        if (t->tail_ctas > 0) /* the last 1/W of the work: its CTAs in waves of alloc */
            span_ns = (double)t->tail_waves *
                      (double)((t->tail_ctas + t->alloc - 1) / t->alloc) * (double)t->wave_ns;
        else
            span_ns = (double)((t->ctas + t->alloc - 1) / t->alloc) * (double)t->wave_ns;
    }
    span_ns = MAX(span_ns, (double)t->floor_ns);
    return span_ns > 0.0 ? 1.0 / span_ns : INFINITY;
}

static void
visit_fluid(TpsEngine *engine, guint32 f) {
    Fluid *fluid = fluid_at(engine, f);
    if (fluid->task == NONE32 || fluid->mark == engine->epoch)
        return;
    fluid->mark = engine->epoch;
    idvec_push(&engine->comp_fluid, f);
}

static void
visit_res(TpsEngine *engine, guint32 r) {
    if (engine->res[r].mark == engine->epoch)
        return;
    engine->res[r].mark = engine->epoch;
    idvec_push(&engine->comp_res, r);
}

/* Collect the component of fluid tasks and resources reachable from what
 * changed. Cheaper than re-solving every fluid task, and exact: tasks in
 * other components share no resource with the changed ones. */
static void
collect_component(TpsEngine *engine) {
    engine->epoch++;
    engine->comp_fluid.len = 0;
    engine->comp_res.len = 0;
    for (guint i = 0; i < engine->dirty_fluid.len; i++) {
        guint32 f = engine->dirty_fluid.data[i];
        fluid_at(engine, f)->dirty = FALSE;
        visit_fluid(engine, f);
    }
    for (guint i = 0; i < engine->dirty_res.len; i++) {
        guint32 r = engine->dirty_res.data[i];
        engine->res[r].dirty = FALSE;
        engine->res[r].left_load = 0.0;
        visit_res(engine, r);
    }
    engine->dirty_fluid.len = 0;
    engine->dirty_res.len = 0;

    guint i = 0, j = 0;
    while (i < engine->comp_fluid.len || j < engine->comp_res.len) {
        for (; i < engine->comp_fluid.len; i++) {
            Fluid *fluid = fluid_at(engine, engine->comp_fluid.data[i]);
            for (guint k = 0; k < fluid->n_res; k++)
                visit_res(engine, fluid->res[k]);
        }
        for (; j < engine->comp_res.len; j++) {
            const Resource *res = &engine->res[engine->comp_res.data[j]];
            for (guint m = 0; m < res->n_members; m++)
                visit_fluid(engine, res->members[m].fluid);
        }
    }
}

/* Fix a task's rate: its usage becomes fixed load on its resources. */
static void
freeze(TpsEngine *engine, Fluid *fluid, double rate) {
    fluid->frozen = TRUE;
    fluid->rate = rate;
    for (guint k = 0; k < fluid->n_res; k++) {
        Resource *res = &engine->res[fluid->res[k]];
        res->used += rate * fluid->bytes[k];
        res->coef -= fluid->share[k];
        res->n_unfrozen--;
    }
}

/* Max-min fair shares in bytes/ns by progressive filling: every unfrozen
 * task runs at level x / size; raise x until a task reaches its solo limit
 * (freeze it) or a resource saturates (freeze all its unfrozen tasks). The
 * loop runs once per distinct bottleneck, usually once or twice. Each
 * resource keeps the summed share of its unfrozen tasks, updated as they
 * freeze, so a round is one pass over tasks and one over resources. */
static void
fill(TpsEngine *engine) {
    const guint32 *comp = engine->comp_fluid.data;
    guint n = engine->comp_fluid.len;
    const guint32 *comp_res = engine->comp_res.data;
    guint n_res = engine->comp_res.len;
    guint unfrozen = 0;

    for (guint j = 0; j < n_res; j++) {
        Resource *res = &engine->res[comp_res[j]];
        res->used = 0.0;
        res->coef = 0.0;
        res->n_unfrozen = 0;
    }
    for (guint i = 0; i < n; i++) {
        Fluid *fluid = fluid_at(engine, comp[i]);
        fluid->frozen = FALSE;
        for (guint k = 0; k < fluid->n_res; k++) {
            Resource *res = &engine->res[fluid->res[k]];
            res->coef += fluid->share[k];
            res->n_unfrozen++;
        }
        if (fluid->size <= 0.0 || fluid->rmax <= 0.0)
            freeze(engine, fluid, fluid->rmax);
        else
            unfrozen++;
    }

    while (unfrozen > 0) {
        double level = INFINITY;
        for (guint i = 0; i < n; i++) {
            const Fluid *fluid = fluid_at(engine, comp[i]);
            if (!fluid->frozen)
                level = MIN(level, fluid->rmax * fluid->size);
        }
        for (guint j = 0; j < n_res; j++) {
            Resource *res = &engine->res[comp_res[j]];
            /* Where this resource saturates; decided for every resource
             * before any task freezes, so component order does not matter. */
            res->level =
                res->n_unfrozen > 0 ? MAX(res->cap - res->used, 0.0) / res->coef : INFINITY;
            level = MIN(level, res->level);
        }
        if (isinf(level)) {
            /* Only unbounded tasks on unbounded resources: cannot happen
             * with finite capacities, but never loop forever. */
            for (guint i = 0; i < n; i++) {
                Fluid *fluid = fluid_at(engine, comp[i]);
                if (!fluid->frozen)
                    freeze(engine, fluid, INFINITY);
            }
            break;
        }
        double bound = level * (1.0 + LEVEL_EPSILON);
        for (guint i = 0; i < n; i++) {
            Fluid *fluid = fluid_at(engine, comp[i]);
            if (fluid->frozen)
                continue;
            gboolean hit = fluid->rmax * fluid->size <= bound;
            for (guint k = 0; k < fluid->n_res && !hit; k++)
                hit = engine->res[fluid->res[k]].level <= bound;
            if (hit) {
                freeze(engine, fluid, MIN(level / fluid->size, fluid->rmax));
                unfrozen--;
            }
        }
    }
}

/* Move the finish event of a task whose rate was just recomputed. */
/* Work left before a kernel enters its last wave, when that wave is
 * partial (it then frees the SMs it no longer fills, which the block
 * scheduler hands to the kernels queued beside it); < 0 when it has no
 * such point ahead. */
static double
work_to_tail(const TpsEngine *engine, const Fluid *fluid) {
    const Task *t = task_at(engine, fluid->task);
    if (t->ctas == 0 || t->tail_ctas > 0 || t->alloc == 0 || t->wave_ns <= 0)
        return -1.0;
    guint32 waves = (t->ctas + t->alloc - 1) / t->alloc;
    if (waves < 2 || t->ctas - (waves - 1) * t->alloc >= t->alloc)
        return -1.0;
    return fluid->remaining - 1.0 / waves;
}

static void
reschedule(TpsEngine *engine, Fluid *fluid) {
    TpsTime now = engine->now;
    /* An unchanged rate keeps its event: no drift from re-rounding. */
    if (fluid->rate == fluid->old_rate)
        return;
    fluid->tail_pending = FALSE;
    if (fluid->remaining <= WORK_EPSILON || isinf(fluid->rate)) {
        heap_schedule(engine, fluid->task, now);
    } else if (fluid->rate > 0.0) {
        double work = fluid->remaining;
        double tail = work_to_tail(engine, fluid);
        if (tail > WORK_EPSILON) {
            work = tail;
            fluid->tail_pending = TRUE;
        }
        /* The slack keeps float noise (2000.0000000001) from costing a
         * whole nanosecond. */
        TpsTime dt = tps_time_from_ns(work / fluid->rate - ROUNDING_SLACK_NS);
        if (dt >= TPS_TIME_NEVER - now)
            heap_remove(engine, fluid->task);
        else
            heap_schedule(engine, fluid->task, now + dt);
    } else {
        heap_remove(engine, fluid->task); /* stalled until something changes */
    }
}

static void
advance(Fluid *fluid, TpsTime now) {
    if (fluid->rate > 0.0 && now > fluid->last) {
        fluid->remaining -= fluid->rate * (double)(now - fluid->last);
        if (fluid->remaining < 0.0)
            fluid->remaining = 0.0;
    }
    fluid->last = now;
    fluid->old_rate = fluid->rate;
}

/* Whether resource `r` is slack after the change with the changed tasks at
 * their solo rates, and was nobody's bottleneck before it. */
static gboolean
stays_slack(const TpsEngine *engine, guint32 r) {
    const Resource *res = &engine->res[r];
    double limit = res->cap * (1.0 - SLACK_EPSILON);
    double before = res->left_load, after = 0.0;
    gboolean all_capped = TRUE;
    for (guint m = 0; m < res->n_members; m++) {
        const Fluid *fluid = fluid_at(engine, res->members[m].fluid);
        double bytes = fluid->bytes[res->members[m].k];
        if (fluid->dirty) {
            after += fluid->rmax * bytes;
            before += MAX(fluid->rate, 0.0) * bytes;
        } else {
            after += fluid->rate * bytes;
            before += fluid->rate * bytes;
            all_capped = all_capped && fluid->rate == fluid->rmax;
        }
    }
    if (!(after <= limit))
        return FALSE;
    /* Slack before the change, or everyone still on it runs at its own
     * cap: either way it was nobody's bottleneck. */
    return before <= limit || all_capped;
}

/* The common case, without touching the component: every resource the
 * change touches stays slack and was nobody's bottleneck. Then the changed
 * tasks run at their solo rates and every other task keeps its rate, since
 * each of those is at its cap or bottlenecked on a resource the change did
 * not touch; that is the max-min fair allocation the full re-solve would
 * find. Returns FALSE (having changed nothing but the solo rates) when the
 * full re-solve is needed. */
static gboolean
update_locally(TpsEngine *engine) {
    const IdVec *dirty = &engine->dirty_fluid;
    for (guint i = 0; i < dirty->len; i++) {
        Fluid *fluid = fluid_at(engine, dirty->data[i]);
        if (fluid->task == NONE32)
            continue;
        fluid->rmax = solo_rate(task_at(engine, fluid->task));
        if (fluid->size > 0.0 && isinf(fluid->rmax))
            return FALSE; /* only a fair share bounds it */
    }
    for (guint i = 0; i < engine->dirty_res.len; i++)
        if (!stays_slack(engine, engine->dirty_res.data[i]))
            return FALSE;
    for (guint i = 0; i < dirty->len; i++) {
        const Fluid *fluid = fluid_at(engine, dirty->data[i]);
        for (guint k = 0; fluid->task != NONE32 && k < fluid->n_res; k++)
            if (!engine->res[fluid->res[k]].dirty && !stays_slack(engine, fluid->res[k]))
                return FALSE; /* (dirty ones were checked above) */
    }

    for (guint i = 0; i < dirty->len; i++) {
        Fluid *fluid = fluid_at(engine, dirty->data[i]);
        fluid->dirty = FALSE;
        if (fluid->task == NONE32)
            continue;
        advance(fluid, engine->now);
        fluid->rate = fluid->rmax;
        reschedule(engine, fluid);
    }
    for (guint i = 0; i < engine->dirty_res.len; i++) {
        engine->res[engine->dirty_res.data[i]].dirty = FALSE;
        engine->res[engine->dirty_res.data[i]].left_load = 0.0;
    }
    engine->dirty_fluid.len = 0;
    engine->dirty_res.len = 0;
    return TRUE;
}

static void
solve(TpsEngine *engine) {
    if (engine->dirty_fluid.len == 0 && engine->dirty_res.len == 0)
        return;
    if (engine->incremental && update_locally(engine)) {
        engine->local_updates++;
        return;
    }
    collect_component(engine);
    if (engine->comp_fluid.len == 0)
        return;
    engine->rate_updates++;

    TpsTime now = engine->now;
    const guint32 *comp = engine->comp_fluid.data;
    guint n = engine->comp_fluid.len;
    for (guint i = 0; i < n; i++) {
        Fluid *fluid = fluid_at(engine, comp[i]);
        advance(fluid, now);
        fluid->rmax = solo_rate(task_at(engine, fluid->task));
    }

    fill(engine);

    for (guint i = 0; i < n; i++)
        reschedule(engine, fluid_at(engine, comp[i]));
}

/* ---- Events and the main loop ---- */

/* A kernel reaches its last, partial wave: it keeps only the SMs its
 * remaining CTAs fill, at the same rate; the others go back to the pool. */
static void
enter_tail(TpsEngine *engine, TpsTaskId id) {
    Task *t = task_at(engine, id);
    Fluid *fluid = fluid_at(engine, t->fluid);
    advance(fluid, engine->now);
    fluid->tail_pending = FALSE;
    guint32 waves = (t->ctas + t->alloc - 1) / t->alloc;
    t->tail_waves = waves;
    t->tail_ctas = t->ctas - (waves - 1) * t->alloc;
    mark_sms_dirty(engine, t->span.rank);
    mark_fluid_dirty(engine, t->fluid);
    /* Its rate does not change by itself, so its end is due now; a re-solve
     * that changes the rate moves it. */
    if (fluid->rate > 0.0 && !isinf(fluid->rate))
        heap_schedule(engine, id,
                      engine->now +
                          tps_time_from_ns(fluid->remaining / fluid->rate - ROUNDING_SLACK_NS));
}

static void
handle(TpsEngine *engine, guint32 node) {
    if (node >= engine->n_tasks) {
        /* Host launcher of a rank: the next launch completes now; the
         * launcher goes on at once, it never waits for the GPU. */
        Rank *r = &engine->ranks[node - engine->n_tasks];
        GArray *launched = engine->launched[node - engine->n_tasks];
        TpsTaskId id = g_array_index(launched, guint32, r->launch_next++);
        release_other(engine, id);
        if (r->launch_next < launched->len)
            prefetch_task(engine, g_array_index(launched, guint32, r->launch_next));
        if (r->launch_next < launched->len)
            heap_schedule(engine, node, engine->now + (TpsTime)engine->machine.launch_ns);
        return;
    }
    Task *t = task_at(engine, node);
    switch (t->state) {
    case STATE_FIXED:
        after_fixed(engine, node);
        break;
    case STATE_FLUID:
        if (t->fluid != NONE32 && fluid_at(engine, t->fluid)->tail_pending)
            enter_tail(engine, node);
        else
            work_done(engine, node);
        break;
    default:
        g_assert_not_reached();
    }
}

static void
append_waits(const TpsEngine *engine, GString *msg, TpsTaskId id) {
    const Task *t = task_at(engine, id);
    const char *sep = "";
    static const char *const what[] = {
        [EDGE_END] = "end of",
        [EDGE_STREAM] = "stream predecessor",
        [EDGE_START] = "start of",
        [EDGE_HWQ] = "start of previous launch",
        [EDGE_PARENT] = "start of container",
        [EDGE_HOLD] = "end of",
    };

    g_string_append_printf(
        msg, "task '%s' (rank %u, stream %s) waits on: ", t->span.name, t->span.rank,
        t->span.stream == TPS_STREAM_NONE ? "none"
                                          : tps_engine_stream_name(engine, t->span.stream));
    switch (t->state) {
    case STATE_WAITING:
        if ((t->flags & FLAG_LAUNCH) &&
            t->launch_index >= engine->ranks[t->span.rank].launch_next) {
            g_string_append_printf(msg, "%shost launch", sep);
            sep = "; ";
        }
        for (guint e = 0; e < engine->edges->len; e++) {
            const Edge *edge = &g_array_index(engine->edges, Edge, e);
            if (edge->succ != id || edge->kind == EDGE_HOLD)
                continue;
            const Task *pred = task_at(engine, edge->pred);
            gboolean on_end = edge->kind == EDGE_END || edge->kind == EDGE_STREAM;
            gboolean met = on_end ? pred->state == STATE_DONE
                                  : pred->state != STATE_WAITING && pred->state != STATE_CE_QUEUE;
            if (met)
                continue;
            g_string_append_printf(msg, "%s%s '%s'", sep, what[edge->kind], pred->span.name);
            sep = "; ";
        }
        break;
    case STATE_CE_QUEUE:
        g_string_append(msg, "copy engine");
        break;
    case STATE_FLUID:
        g_string_append(msg, t->ctas > 0 && t->alloc == 0 ? "SMs" : "bandwidth");
        break;
    case STATE_HOLD:
        for (guint32 c = id + 1; c < engine->n_tasks; c++) {
            const Task *child = task_at(engine, c);
            if (child->span.parent == id && child->state != STATE_DONE) {
                g_string_append_printf(msg, "end of child '%s'", child->span.name);
                sep = "; ";
                break;
            }
        }
        for (guint e = 0; e < engine->edges->len; e++) {
            const Edge *edge = &g_array_index(engine->edges, Edge, e);
            if (edge->succ == id && edge->kind == EDGE_HOLD &&
                task_at(engine, edge->pred)->state != STATE_DONE) {
                g_string_append_printf(msg, "%send of '%s'", sep,
                                       task_at(engine, edge->pred)->span.name);
                sep = "; ";
            }
        }
        break;
    default:
        g_string_append(msg, "?");
        break;
    }
}

static void
set_deadlock_error(const TpsEngine *engine, GError **error) {
    g_autoptr(GString) msg = g_string_new(NULL);
    guint32 blocked = engine->n_tasks - engine->n_done;
    g_string_append_printf(msg, "deadlock at %" G_GINT64_FORMAT " ns: %u of %u tasks cannot finish",
                           (gint64)engine->now, blocked, engine->n_tasks);
    guint shown = 0;
    for (guint32 id = 0; id < engine->n_tasks && shown < DEADLOCK_REPORT_MAX; id++) {
        if (task_at(engine, id)->state == STATE_DONE)
            continue;
        g_string_append(msg, "\n  ");
        append_waits(engine, msg, id);
        shown++;
    }
    if (blocked > shown)
        g_string_append_printf(msg, "\n  ... and %u more", blocked - shown);
    g_set_error_literal(error, TPS_ERROR, TPS_ERROR_DEADLOCK, msg->str);
}

gboolean
tps_engine_run(TpsEngine *engine, TpsRunStats *stats, GError **error) {
    g_return_val_if_fail(engine != NULL, FALSE);
    g_return_val_if_fail(!engine->ran, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    engine->ran = TRUE;
    setup_run(engine);

    for (;;) {
        start_ready(engine);
        assign_sms(engine);
        solve(engine);
        if (engine->heap_len == 0)
            break;

        /* Collect every event due now before handling any, so handlers
         * never see a half-updated instant. */
        engine->now = engine->heap[0].time;
        IdVec *due = &engine->batch;
        due->len = 0;
        while (engine->heap_len > 0 && engine->heap[0].time == engine->now) {
            guint32 node = heap_pop(engine);
            idvec_push(due, node);
        }
        engine->events += due->len;
        for (guint i = 0; i < due->len; i++)
            handle(engine, due->data[i]);
        due->len = 0;
    }

    if (stats != NULL) {
        stats->makespan = engine->makespan;
        stats->events = engine->events;
        stats->rate_updates = engine->rate_updates;
        stats->local_updates = engine->local_updates;
    }
    if (engine->n_done < engine->n_tasks) {
        set_deadlock_error(engine, error);
        return FALSE;
    }
    return TRUE;
}

/* ---- Read-only views for exporters ---- */

guint
tps_engine_n_edges(const TpsEngine *engine)
{
    g_return_val_if_fail(engine != NULL, 0);
    return engine->edges->len;
}

void
tps_engine_edge(const TpsEngine *engine, guint i, TpsTaskId *pred, TpsTaskId *succ,
                TpsEdgeKind *kind)
{
    g_return_if_fail(engine != NULL && i < engine->edges->len);
    const Edge *edge = &g_array_index(engine->edges, Edge, i);
    if (pred)
        *pred = edge->pred;
    if (succ)
        *succ = edge->succ;
    if (kind) {
        /* The private kinds are listed in the same order as the public ones. */
        G_STATIC_ASSERT((int)EDGE_HOLD == (int)TPS_EDGE_HOLD);
        *kind = (TpsEdgeKind)edge->kind;
    }
}

guint
tps_engine_task_dst_rank(const TpsEngine *engine, TpsTaskId task)
{
    g_return_val_if_fail(engine != NULL && task < engine->tasks->len, 0);
    return task_at(engine, task)->dst_rank;
}

gboolean
tps_engine_task_launched(const TpsEngine *engine, TpsTaskId task)
{
    g_return_val_if_fail(engine != NULL && task < engine->tasks->len, FALSE);
    return (task_at(engine, task)->flags & FLAG_LAUNCH) != 0;
}

int
tps_engine_stream_priority(const TpsEngine *engine, TpsStreamId stream)
{
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, 0);
    return g_array_index(engine->streams, Stream, stream).priority;
}
