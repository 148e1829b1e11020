/* Building the graph (streams, tasks, dependency edges, stream waits and
 * records, the issue of launched tasks in the host programs) and turning it
 * into the run state (see engine-private.h for the layout).
 */
#include "engine/engine-private.h"

#include <string.h>

/* ---- Building the graph ---- */

TpsStreamId
tps_engine_add_stream(TpsEngine *engine, guint rank, int priority, const char *name)
{
    g_return_val_if_fail(engine != NULL, TPS_STREAM_NONE);
    g_return_val_if_fail(rank < engine->machine.ranks, TPS_STREAM_NONE);
    g_return_val_if_fail(!engine->ran, TPS_STREAM_NONE);

    Stream stream = {
        .rank = rank,
        .priority = priority,
        .name = g_string_chunk_insert_const(engine->names->chunk, name != NULL ? name : ""),
        .last = TPS_TASK_NONE,
        .wait_head = NONE32,
    };
    g_array_append_val(engine->streams, stream);
    return engine->streams->len - 1;
}

const char *
tps_engine_stream_name(const TpsEngine *engine, TpsStreamId stream)
{
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, NULL);
    return g_array_index(engine->streams, Stream, stream).name;
}

guint
tps_engine_stream_rank(const TpsEngine *engine, TpsStreamId stream)
{
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, 0);
    return g_array_index(engine->streams, Stream, stream).rank;
}

guint
tps_engine_n_streams(const TpsEngine *engine)
{
    g_return_val_if_fail(engine != NULL, 0);
    return engine->streams->len;
}

guint
tps_engine_n_tasks(const TpsEngine *engine)
{
    g_return_val_if_fail(engine != NULL, 0);
    return engine->n_tasks;
}

/* Make room for `tasks` tasks and `edges` edges in all (the arrays grow
 * to at least that, by doubling at least). */
static void
grow(TpsEngine *engine, guint32 tasks, guint32 edges)
{
    if (tasks > engine->cap_tasks) {
        guint32 cap = MAX(tasks, MAX(64u, engine->cap_tasks * 2));
        engine->tasks = g_renew(Task, engine->tasks, cap);
        /* One more for the CSR offsets' end (build_csr()). */
        engine->start_deg = g_renew(guint32, engine->start_deg, cap + 1);
        engine->end_deg = g_renew(guint32, engine->end_deg, cap + 1);
        engine->blockers = g_renew(guint32, engine->blockers, cap + 1);
        engine->cap_tasks = cap;
    }
    if (edges > engine->cap_edges) {
        guint32 cap = MAX(edges, MAX(64u, engine->cap_edges * 2));
        engine->edges = g_renew(Edge, engine->edges, cap);
        engine->cap_edges = cap;
    }
}

static void
add_edge(TpsEngine *engine, TpsTaskId pred, TpsTaskId succ, EdgeKind kind)
{
    if (G_UNLIKELY(engine->n_edges == engine->cap_edges))
        grow(engine, 0, engine->n_edges + 1);
    engine->edges[engine->n_edges++] = (Edge){.pred = pred, .succ = succ, .kind = kind};
    if (kind == EDGE_HOLD)
        task_at(engine, succ)->children++;
    else
        engine->blockers[succ]++;
    gboolean on_end = kind == EDGE_END || kind == EDGE_STREAM || kind == EDGE_HOLD;
    (on_end ? engine->end_deg : engine->start_deg)[pred]++;
}

/* Builders add runs of tasks with a few names (every chunk of a pipeline,
 * every step of a collective, with its flows and flags), each passed again
 * from the same buffer: skip the hash lookup when the slot of the buffer's
 * address holds the same text. The address alone is not enough (a caller
 * may reuse a buffer), so the text is compared too; interning gives one
 * copy per text, so a slot's name whose text matches is the very pointer
 * the lookup would return. */
static const char *
intern_name(TpsEngine *engine, const char *name)
{
    if (name == NULL)
        name = "";
    /* The address's low bits are alignment: hash the ones above. */
    const guintptr a = (guintptr)name;
    const char **slot = &engine->name_cache[((a >> 4) ^ (a >> 10)) & (NAME_CACHE_SIZE - 1)];
    if (*slot != NULL && strcmp(*slot, name) == 0)
        return *slot;
    *slot = g_string_chunk_insert_const(engine->names->chunk, name);
    return *slot;
}

void
tps_engine_reserve(TpsEngine *engine, guint tasks, guint edges)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(tasks <= G_MAXUINT32 - engine->n_tasks - 1 &&
                     edges <= G_MAXUINT32 - engine->n_edges);
    grow(engine, engine->n_tasks + tasks, engine->n_edges + edges);
}

/* Task `id`, the next, from its spec: its span, its costs and flags, the
 * priority of its stream or else of its parent, no edges yet (but the
 * launch that a launched task waits for). */
static void
init_task(TpsEngine *engine, TpsTaskId id, const TpsTaskSpec *spec)
{
    if (G_UNLIKELY(id == engine->cap_tasks))
        grow(engine, id + 1, 0);
    Task *task = &engine->tasks[id];
    *task = (Task){
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
        task->priority = g_array_index(engine->streams, Stream, spec->stream).priority;
    else if (spec->parent != TPS_TASK_NONE)
        task->priority = task_at(engine, spec->parent)->priority;
    engine->n_tasks = id + 1;
    engine->start_deg[id] = 0;
    engine->end_deg[id] = 0;
    engine->blockers[id] = spec->launch ? 1 : 0;
}

/* Task `id` the last of its stream: after the one before it and the
 * stream's pending waits. */
static void
append_to_stream(TpsEngine *engine, TpsStreamId s, TpsTaskId id)
{
    Stream *stream = &g_array_index(engine->streams, Stream, s);
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

/* Launched task `id` issued by its rank's host program, after the rank's
 * last launched task on a single hardware queue. */
static void
issue_launch(TpsEngine *engine, const TpsTaskSpec *spec, TpsTaskId id)
{
    TpsTaskId prev = engine->last_launched[spec->rank];
    if (engine->machine.single_hw_queue && prev != TPS_TASK_NONE)
        add_edge(engine, prev, id, EDGE_HWQ);
    engine->last_launched[spec->rank] = id;
    eng_host_issue(engine, spec->rank, id,
                   spec->host_ns > 0 ? spec->host_ns : engine->machine.launch_ns);
}

TpsTaskId
tps_engine_add(TpsEngine *engine, const TpsTaskSpec *spec)
{
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
    g_return_val_if_fail(spec->parent == TPS_TASK_NONE || spec->parent < engine->n_tasks,
                         TPS_TASK_NONE);
    g_return_val_if_fail(spec->link_bytes <= 0.0 || spec->dst_rank < engine->machine.ranks,
                         TPS_TASK_NONE);
    g_return_val_if_fail(engine->n_tasks < STREAM_BIT - engine->machine.ranks - 1,
                         TPS_TASK_NONE);
    g_return_val_if_fail(spec->host_ns >= 0, TPS_TASK_NONE);

    TpsTaskId id = engine->n_tasks;
    init_task(engine, id, spec);
    if (spec->stream != TPS_STREAM_NONE)
        append_to_stream(engine, spec->stream, id);
    if (spec->parent != TPS_TASK_NONE) {
        add_edge(engine, spec->parent, id, EDGE_PARENT);
        task_at(engine, spec->parent)->children++;
    }
    if (spec->launch)
        issue_launch(engine, spec, id);
    return id;
}

void
tps_engine_after(TpsEngine *engine, TpsTaskId task, TpsTaskId pred)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(task < engine->n_tasks && pred < engine->n_tasks);
    add_edge(engine, pred, task, EDGE_END);
}

void
tps_engine_after_start(TpsEngine *engine, TpsTaskId task, TpsTaskId pred)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(task < engine->n_tasks && pred < engine->n_tasks);
    add_edge(engine, pred, task, EDGE_START);
}

void
tps_engine_end_after(TpsEngine *engine, TpsTaskId task, TpsTaskId pred)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(task < engine->n_tasks && pred < engine->n_tasks);
    add_edge(engine, pred, task, EDGE_HOLD);
}

TpsTaskId
tps_engine_record(const TpsEngine *engine, TpsStreamId stream)
{
    g_return_val_if_fail(engine != NULL && stream < engine->streams->len, TPS_TASK_NONE);
    return g_array_index(engine->streams, Stream, stream).last;
}

void
tps_engine_stream_wait(TpsEngine *engine, TpsStreamId stream, TpsTaskId task)
{
    g_return_if_fail(engine != NULL && !engine->ran);
    g_return_if_fail(stream < engine->streams->len);
    if (task == TPS_TASK_NONE)
        return;
    g_return_if_fail(task < engine->n_tasks);

    Stream *s = &g_array_index(engine->streams, Stream, stream);
    PendingWait wait = {.task = task, .next = s->wait_head};
    g_array_append_val(engine->waits, wait);
    s->wait_head = engine->waits->len - 1;
    /* The host records an event and makes the stream wait on it. */
    eng_host_stream_wait(engine, s->rank);
}

/* ---- Run setup ---- */

/* Turn the out-degrees into CSR offsets (in place, one more slot for the
 * end) and fill the successor lists from the edge list. */
static void
build_csr(TpsEngine *engine)
{
    guint32 n = engine->n_tasks;
    guint32 *degs[2] = {engine->start_deg, engine->end_deg};
    for (guint d = 0; d < 2; d++) {
        /* The arrays have room for it (grow()). */
        degs[d][n] = 0;
        guint32 *off = degs[d], acc = 0;
        for (guint32 i = 0; i <= n; i++) {
            guint32 deg = off[i];
            off[i] = acc;
            acc += deg;
        }
    }
    guint32 *start_off = engine->start_deg;
    guint32 *end_off = engine->end_deg;
    engine->start_succ = g_new(guint32, start_off[n] + 1);
    engine->end_succ = g_new(guint32, end_off[n] + 1);

    /* Fill with moving cursors (offset i ends up where i + 1 began), then
     * shift back: keeps release order equal to insertion order. */
    const Edge *edges = engine->edges;
    for (guint32 e = 0; e < engine->n_edges; e++) {
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

void
eng_setup_run(TpsEngine *engine)
{
    const TpsMachine *m = &engine->machine;
    guint32 n = engine->n_tasks;
    /* An empty graph has no arrays yet: room for the CSR offsets' end. */
    grow(engine, 1, 0);
    build_csr(engine);

    engine->ranks = g_new0(Rank, m->ranks);
    if (m->record_waits) {
        engine->other_ready = g_new0(TpsTime, n);
        engine->stream_ready = g_new0(TpsTime, n);
    }
    for (guint r = 0; r < m->ranks; r++) {
        engine->ranks[r].free_ce = m->copy_engines;
        engine->ranks[r].ce_head = engine->ranks[r].ce_tail = NONE32;
        engine->ranks[r].host_wait = HOST_RUNNING;
    }

    engine->n_res = m->ranks * RES_PER_RANK;
    engine->res = g_new0(Resource, engine->n_res);
    for (guint r = 0; r < m->ranks; r++) {
        double caps[RES_PER_RANK] = {
            [RES_HBM] = m->hbm_gbps,          [RES_NVLINK_OUT] = m->nvlink_gbps,
            [RES_NVLINK_IN] = m->nvlink_gbps,
            [RES_NIC_OUT] = m->place ? m->place[r].pool_gbps : m->nic_gbps,
            [RES_NIC_IN] = m->place ? m->place[r].pool_gbps : m->nic_gbps,
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
        if (engine->blockers[i] == 0)
            idvec_push(&engine->ready, i);
    /* Each host thread starts its program at time 0. */
    eng_host_flush(engine);
    for (guint r = 0; r < m->ranks; r++)
        eng_host_run(engine, r, FALSE);
}
