/* The discrete-event engine: its object, the life cycle of a task and the
 * run loop (see engine.h for the model, engine-private.h for the layout
 * and which file holds what).
 */
#include "engine/engine-private.h"

#include "core/error.h"

/* How many blocked tasks a deadlock error names. */
#define DEADLOCK_REPORT_MAX 10

static const char *const kind_names[TPS_KIND_COUNT] = {
    [TPS_KIND_GEMM] = "gemm",     [TPS_KIND_ATTENTION] = "attention", [TPS_KIND_MEMORY] = "memory",
    [TPS_KIND_COMM] = "comm",     [TPS_KIND_FLOW] = "flow",           [TPS_KIND_COPY] = "copy",
    [TPS_KIND_MARKER] = "marker",
};

const char *
tps_task_kind_name(TpsTaskKind kind)
{
    g_return_val_if_fail((guint)kind < TPS_KIND_COUNT, "unknown");
    return kind_names[kind];
}

void
eng_idvec_grow(IdVec *v)
{
    v->cap = MAX(16, v->cap * 2);
    v->data = g_renew(guint32, v->data, v->cap);
}

static void
idvec_clear(IdVec *v)
{
    g_clear_pointer(&v->data, g_free);
    v->len = v->cap = 0;
}

/* ---- The engine ---- */

TpsEngine *
tps_engine_new(const TpsMachine *machine)
{
    g_return_val_if_fail(machine != NULL, NULL);
    g_return_val_if_fail(machine->ranks > 0, NULL);

    TpsEngine *engine = g_new0(TpsEngine, 1);
    engine->machine = *machine;
    if (engine->machine.gpus_per_node == 0)
        engine->machine.gpus_per_node = machine->ranks;
    if (machine->place)
        engine->machine.place = g_memdup2(machine->place, sizeof(TpsPlace) * machine->ranks);
    engine->streams = g_array_new(FALSE, FALSE, sizeof(Stream));
    engine->waits = g_array_new(FALSE, FALSE, sizeof(PendingWait));
    engine->names = g_atomic_rc_box_new0(TpsEngineNames);
    engine->names->chunk = g_string_chunk_new(4096);
    engine->incremental = TRUE;
    engine->last_launched = g_new(TpsTaskId, machine->ranks);
    engine->host = g_new(GArray *, machine->ranks);
    engine->n_launched = g_new0(guint32, machine->ranks);
    engine->captured = g_new0(gboolean, machine->ranks);
    engine->host_pending = g_new0(TpsTime, machine->ranks);
    for (guint r = 0; r < machine->ranks; r++) {
        engine->last_launched[r] = TPS_TASK_NONE;
        engine->host[r] = g_array_new(FALSE, FALSE, sizeof(HostItem));
    }
    return engine;
}

void
tps_engine_free(TpsEngine *engine)
{
    if (engine == NULL)
        return;
    g_free(engine->tasks);
    g_array_unref(engine->streams);
    g_array_unref(engine->waits);
    g_free(engine->edges);
    tps_engine_names_unref(engine->names);
    g_free(engine->last_launched);
    for (guint r = 0; r < engine->machine.ranks; r++)
        g_array_unref(engine->host[r]);
    g_free(engine->host);
    g_free(engine->n_launched);
    g_free(engine->captured);
    g_free(engine->host_pending);
    g_free((gpointer)engine->machine.place);
    g_free(engine->start_deg);
    g_free(engine->blockers);
    g_free(engine->end_deg);
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

TpsEngineNames *
tps_engine_names_ref(const TpsEngine *engine)
{
    g_return_val_if_fail(engine != NULL, NULL);
    return g_atomic_rc_box_acquire(engine->names);
}

static void
names_clear(gpointer data)
{
    g_string_chunk_free(((TpsEngineNames *)data)->chunk);
}

void
tps_engine_names_unref(TpsEngineNames *names)
{
    if (names != NULL)
        g_atomic_rc_box_release_full(names, names_clear);
}

void
tps_engine_set_incremental(TpsEngine *engine, gboolean incremental)
{
    g_return_if_fail(engine != NULL);
    engine->incremental = incremental;
}

const TpsMachine *
tps_engine_machine(const TpsEngine *engine)
{
    g_return_val_if_fail(engine != NULL, NULL);
    return &engine->machine;
}

const TpsSpan *
tps_engine_span(const TpsEngine *engine, TpsTaskId task)
{
    g_return_val_if_fail(engine != NULL && task < engine->n_tasks, NULL);
    return &task_at(engine, task)->span;
}

/* ---- Task life cycle ---- */

static void unhold(TpsEngine *engine, TpsTaskId id);

static void
end_task(TpsEngine *engine, TpsTaskId id)
{
    Task *t = task_at(engine, id);
    t->state = STATE_DONE;
    t->span.end = engine->now;
    engine->makespan = MAX(engine->makespan, engine->now);
    engine->n_done++;

    if (t->fluid != NONE32)
        eng_leave_fluid(engine, t);
    if (t->ctas > 0)
        eng_sm_remove(engine, id, t->span.rank);
    if (t->flags & FLAG_COPY_ENGINE) {
        engine->ranks[t->span.rank].free_ce++;
        engine->ce_freed = TRUE;
    }
    if (t->flags & (FLAG_LAUNCH | FLAG_HOST_WAIT)) {
        if (t->flags & FLAG_LAUNCH) {
            engine->ranks[t->span.rank].launched_done++;
            if (G_UNLIKELY(engine->ranks[t->span.rank].host_wait == HOST_DEVICE))
                eng_host_launched_ended(engine, t->span.rank);
        }
        if (G_UNLIKELY(t->flags & FLAG_HOST_WAIT))
            eng_host_task_ended(engine, id);
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
unhold(TpsEngine *engine, TpsTaskId id)
{
    Task *p = task_at(engine, id);
    if (--p->children == 0 && p->state == STATE_HOLD)
        end_task(engine, id);
}

/* The work of `id` is done: it ends, or holds its SMs until what it must
 * outlive has ended (a container's children, end_after() predecessors). */
void
eng_work_done(TpsEngine *engine, TpsTaskId id)
{
    Task *t = task_at(engine, id);
    if (t->children == 0) {
        end_task(engine, id);
        return;
    }
    if (t->fluid != NONE32)
        eng_leave_fluid(engine, t);
    t->state = STATE_HOLD;
}

/* The fixed phase is over (or was empty). */
static void
after_fixed(TpsEngine *engine, TpsTaskId id)
{
    Task *t = task_at(engine, id);
    if (t->flags & FLAG_CONTAINER) {
        eng_work_done(engine, id);
        return;
    }
    eng_enter_fluid(engine, id);
}

/* On a large graph a task is cold when it starts (it was added, or
 * launched, long before), and that miss was the largest cost of the run.
 * The tasks that may start when `id` ends are known now, while it runs:
 * fetch them, and those their start or end releases at the same instant
 * (children of a container, the task after a zero-time join). */
static void
prefetch_next(const TpsEngine *engine, TpsTaskId id)
{
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
start_task(TpsEngine *engine, TpsTaskId id)
{
    Task *t = task_at(engine, id);
    t->span.start = engine->now;
    /* A launched task's issue time was written when its issue ended. */
    if (!(t->flags & FLAG_LAUNCH))
        t->span.launch = engine->now;
    for (guint32 e = engine->start_off[id]; e < engine->start_off[id + 1]; e++)
        release_other(engine, engine->start_succ[e]);
    /* Ready otherwise before its stream predecessor ended: it queued
     * behind that task. */
    if (engine->machine.record_waits && engine->stream_ready[id] > engine->other_ready[id])
        t->span.stream_wait = engine->stream_ready[id] - engine->other_ready[id];
    prefetch_next(engine, id);
    if (t->ctas > 0)
        eng_sm_insert(engine, id, t->span.rank, t->priority);
    if (t->fixed_ns > 0) {
        t->state = STATE_FIXED;
        eng_heap_schedule(engine, id, engine->now + t->fixed_ns);
    } else {
        after_fixed(engine, id);
    }
}

static void
ce_enqueue(TpsEngine *engine, TpsTaskId id)
{
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
start_ready(TpsEngine *engine)
{
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

/* ---- Events and the main loop ---- */

static void
handle(TpsEngine *engine, guint32 node)
{
    if (node >= engine->n_tasks) {
        /* The host thread of a rank ended its current item. */
        eng_host_run(engine, node - engine->n_tasks, TRUE);
        return;
    }
    Task *t = task_at(engine, node);
    switch (t->state) {
    case STATE_FIXED:
        after_fixed(engine, node);
        break;
    case STATE_FLUID:
        if (t->fluid != NONE32 && fluid_at(engine, t->fluid)->tail_pending)
            eng_enter_tail(engine, node);
        else
            eng_work_done(engine, node);
        break;
    default:
        g_assert_not_reached();
    }
}

static void
append_waits(const TpsEngine *engine, GString *msg, TpsTaskId id)
{
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
        if ((t->flags & FLAG_LAUNCH) && t->launch_index >= engine->ranks[t->span.rank].host_next) {
            const Rank *r = &engine->ranks[t->span.rank];
            g_string_append_printf(msg, "%shost launch", sep);
            if (r->host_wait == HOST_DEVICE)
                g_string_append(msg, " (the host waits for the device)");
            else if (r->host_wait != HOST_RUNNING)
                g_string_append_printf(msg, " (the host waits for '%s')",
                                       task_at(engine, r->host_wait)->span.name);
            sep = "; ";
        }
        for (guint e = 0; e < engine->n_edges; e++) {
            const Edge *edge = &engine->edges[e];
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
        for (guint e = 0; e < engine->n_edges; e++) {
            const Edge *edge = &engine->edges[e];
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
set_deadlock_error(const TpsEngine *engine, GError **error)
{
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
tps_engine_run(TpsEngine *engine, TpsRunStats *stats, GError **error)
{
    g_return_val_if_fail(engine != NULL, FALSE);
    g_return_val_if_fail(!engine->ran, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    engine->ran = TRUE;
    eng_setup_run(engine);

    for (;;) {
        start_ready(engine);
        /* Both do nothing when nothing is dirty; checking here saves the
         * call on the many steps that change no SM user and no rate. */
        if (engine->sm_dirty.len > 0)
            eng_assign_sms(engine);
        if (engine->dirty_fluid.len > 0 || engine->dirty_res.len > 0)
            eng_solve(engine);
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
    return engine->n_edges;
}

void
tps_engine_edge(const TpsEngine *engine, guint i, TpsTaskId *pred, TpsTaskId *succ,
                TpsEdgeKind *kind)
{
    g_return_if_fail(engine != NULL && i < engine->n_edges);
    const Edge *edge = &engine->edges[i];
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
    g_return_val_if_fail(engine != NULL && task < engine->n_tasks, 0);
    return task_at(engine, task)->dst_rank;
}

gboolean
tps_engine_task_launched(const TpsEngine *engine, TpsTaskId task)
{
    g_return_val_if_fail(engine != NULL && task < engine->n_tasks, FALSE);
    return (task_at(engine, task)->flags & FLAG_LAUNCH) != 0;
}

int
tps_engine_stream_priority(const TpsEngine *engine, TpsStreamId stream)
{
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, 0);
    return g_array_index(engine->streams, Stream, stream).priority;
}
