/* The issuing threads: each rank's host program run item after item (see
 * engine.h for the model, engine-private.h for the layout).
 *
 * A thread is always in exactly one item: its end is queued on the heap
 * (node n_tasks + rank), or it is blocked in a sync (Rank.host_wait), or
 * the program is over. Items that take no time (issues inside a captured
 * graph, a sync whose condition already holds and costs nothing) are done
 * in the same call, so a captured graph's tasks cost no event each. Host
 * work (event calls, framework time) is folded into the issue that
 * follows it, as its `pre` part: one event for both, which matters on
 * graphs with a stream wait before most launches. The thread keeps no
 * clock of its own: an item starts when the one before it ended, and each
 * item records its end, which is all the export needs.
 */
#include "engine/engine-private.h"

static inline HostItem *
host_item(const TpsEngine *engine, guint rank, guint32 i)
{
    return &g_array_index(engine->host[rank], HostItem, i);
}

/* Whether the condition of sync `item` holds now. */
static gboolean
sync_met(const TpsEngine *engine, const Rank *r, const HostItem *item)
{
    if (item->task == HOST_DEVICE)
        return r->launched_done >= item->before;
    return task_at(engine, item->task)->state == STATE_DONE;
}

/* The current item of `rank` is over now. */
static void
item_over(TpsEngine *engine, guint rank, Rank *r)
{
    HostItem *item = host_item(engine, rank, r->host_next);
    item->end = engine->now;
    if (item->kind == HOST_ISSUE) {
        /* The task was prefetched when this item began. */
        task_at(engine, item->task)->span.launch = engine->now;
        release_other(engine, item->task);
    }
    r->host_next++;
}

void
eng_host_run(TpsEngine *engine, guint rank, gboolean item_done)
{
    Rank *r = &engine->ranks[rank];
    const guint32 n = engine->host[rank]->len;

    if (item_done)
        item_over(engine, rank, r);
    while (r->host_next < n) {
        HostItem *item = host_item(engine, rank, r->host_next);
        if (item->kind == HOST_SYNC && !sync_met(engine, r, item)) {
            r->host_wait = item->task;
            if (item->task != HOST_DEVICE)
                task_at(engine, item->task)->flags |= FLAG_HOST_WAIT;
            return;
        }
        /* A sync has no work folded in (it was pushed before the sync). */
        const TpsTime busy = item->pre + item->ns;
        if (busy > 0) {
            if (item->kind == HOST_ISSUE)
                prefetch_task(engine, item->task);
            eng_heap_schedule(engine, engine->n_tasks + rank, engine->now + busy);
            return;
        }
        item_over(engine, rank, r);
    }
}

/* Resume the thread of `rank` from its sync, whose condition holds now:
 * the sync spends its own time, then the program goes on. */
static void
resume(TpsEngine *engine, guint rank)
{
    engine->ranks[rank].host_wait = HOST_RUNNING;
    eng_host_run(engine, rank, FALSE);
}

void
eng_host_task_ended(TpsEngine *engine, TpsTaskId id)
{
    /* Rare (a sync per step or so): look for every thread blocked on it. */
    for (guint rank = 0; rank < engine->machine.ranks; rank++)
        if (engine->ranks[rank].host_wait == id)
            resume(engine, rank);
}

void
eng_host_launched_ended(TpsEngine *engine, guint rank)
{
    Rank *r = &engine->ranks[rank];
    if (r->host_wait == HOST_DEVICE &&
        r->launched_done >= host_item(engine, rank, r->host_next)->before)
        resume(engine, rank);
}

/* ---- Building ---- */

/* Push an item; the pending work goes into an issue, or before anything
 * else as a work item of its own. */
static void
push(TpsEngine *engine, guint rank, guint32 kind, guint32 task, TpsTime ns)
{
    TpsTime pending = engine->host_pending[rank];
    engine->host_pending[rank] = 0;
    if (pending > 0 && kind != HOST_ISSUE) {
        HostItem work = {.ns = pending, .task = NONE32, .kind = HOST_WORK};
        g_array_append_val(engine->host[rank], work);
        pending = 0;
    }
    HostItem item = {
        .pre = pending,
        .ns = ns,
        .task = task,
        .kind = kind,
        .before = engine->n_launched[rank],
    };
    g_array_append_val(engine->host[rank], item);
}

/* Host work waits to be folded into the next issue. */
static void
add_work(TpsEngine *engine, guint rank, TpsTime ns)
{
    engine->host_pending[rank] += ns;
}

void
eng_host_flush(TpsEngine *engine)
{
    for (guint r = 0; r < engine->machine.ranks; r++)
        if (engine->host_pending[r] > 0) {
            HostItem work = {.ns = engine->host_pending[r], .task = NONE32, .kind = HOST_WORK};
            g_array_append_val(engine->host[r], work);
            engine->host_pending[r] = 0;
        }
}

void
eng_host_issue(TpsEngine *engine, guint rank, TpsTaskId id, TpsTime ns)
{
    task_at(engine, id)->launch_index = engine->host[rank]->len;
    push(engine, rank, HOST_ISSUE, id, engine->captured[rank] ? 0 : ns);
    engine->n_launched[rank]++;
}

void
eng_host_stream_wait(TpsEngine *engine, guint rank)
{
    if (engine->machine.stream_wait_ns > 0 && !engine->captured[rank])
        add_work(engine, rank, engine->machine.stream_wait_ns);
}

void
tps_engine_host_work(TpsEngine *engine, guint rank, TpsTime ns)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(rank < engine->machine.ranks && ns >= 0);
    if (ns > 0 && !engine->captured[rank])
        add_work(engine, rank, ns);
}

void
tps_engine_host_sync(TpsEngine *engine, guint rank, TpsTaskId task, TpsTime ns)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(rank < engine->machine.ranks && ns >= 0);
    g_return_if_fail(task == TPS_TASK_NONE || task < engine->n_tasks);
    g_return_if_fail(!engine->captured[rank]);
    push(engine, rank, HOST_SYNC, task == TPS_TASK_NONE ? HOST_DEVICE : task, ns);
}

void
tps_engine_graph_begin(TpsEngine *engine, guint rank, TpsTime launch_ns)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(rank < engine->machine.ranks && launch_ns >= 0);
    g_return_if_fail(!engine->captured[rank]);
    if (launch_ns > 0)
        add_work(engine, rank, launch_ns);
    engine->captured[rank] = TRUE;
}

void
tps_engine_graph_end(TpsEngine *engine, guint rank)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(rank < engine->machine.ranks);
    engine->captured[rank] = FALSE;
}

/* ---- After the run ---- */

guint
tps_engine_n_host_items(const TpsEngine *engine, guint rank)
{
    g_return_val_if_fail(engine != NULL && rank < engine->machine.ranks, 0);
    return engine->host[rank]->len;
}

void
tps_engine_host_item(const TpsEngine *engine, guint rank, guint i, TpsHostItem *out)
{
    g_return_if_fail(engine != NULL && rank < engine->machine.ranks && out != NULL);
    g_return_if_fail(i < engine->host[rank]->len);
    static const TpsHostKind kinds[] = {
        [HOST_ISSUE] = TPS_HOST_ISSUE,
        [HOST_WORK] = TPS_HOST_WORK,
        [HOST_SYNC] = TPS_HOST_SYNC,
    };
    const HostItem *item = host_item(engine, rank, i);
    /* The thread never idles but in a sync: an item starts where the one
     * before it ended, and its own part (after a sync's wait, or after the
     * work folded into an issue) is its own time before its end. */
    out->kind = kinds[item->kind];
    out->task = item->task == HOST_DEVICE || item->kind == HOST_WORK ? TPS_TASK_NONE : item->task;
    out->start = i > 0 ? host_item(engine, rank, i - 1)->end : 0;
    out->end = item->end;
    out->ready = MAX(out->start, item->end - item->ns);
}
