#include "engine/run.h"

/* tps_engine_export_run() copies the engine's tasks and edges from its
 * arrays rather than through an accessor call each. */
#include "engine/engine-private.h"

TpsRun *
tps_run_new(const char *label, guint ranks, guint gpus_per_node)
{
    TpsRun *run = g_new0(TpsRun, 1);
    run->label = g_strdup(label);
    run->ranks = ranks;
    run->gpus_per_node = gpus_per_node > 0 ? gpus_per_node : MAX(ranks, 1);
    run->spans = g_array_new(FALSE, FALSE, sizeof(TpsSpan));
    run->dst_rank = g_array_new(FALSE, FALSE, sizeof(guint));
    run->streams = g_array_new(FALSE, FALSE, sizeof(TpsRunStream));
    run->edges = g_array_new(FALSE, FALSE, sizeof(TpsRunEdge));
    run->host = g_array_new(FALSE, FALSE, sizeof(TpsHostSpan));
    run->strings = g_string_chunk_new(4096);
    return run;
}

void
tps_run_free(TpsRun *run)
{
    if (run == NULL)
        return;
    g_free(run->label);
    g_array_unref(run->spans);
    g_array_unref(run->dst_rank);
    g_array_unref(run->streams);
    g_array_unref(run->edges);
    g_array_unref(run->host);
    g_string_chunk_free(run->strings);
    tps_engine_names_unref(run->engine_names);
    g_free(run);
}

TpsStreamId
tps_run_add_stream(TpsRun *run, guint rank, int priority, const char *name)
{
    TpsRunStream s = {
        .name = g_string_chunk_insert_const(run->strings, name ? name : ""),
        .rank = rank,
        .priority = priority,
    };
    g_array_append_val(run->streams, s);
    return run->streams->len - 1;
}

TpsTaskId
tps_run_add_span(TpsRun *run, const TpsSpan *span, guint dst_rank)
{
    TpsSpan copy = *span;
    copy.id = run->spans->len;
    copy.name = g_string_chunk_insert_const(run->strings, span->name ? span->name : "");
    g_array_append_val(run->spans, copy);
    g_array_append_val(run->dst_rank, dst_rank);
    return copy.id;
}

void
tps_run_add_edge(TpsRun *run, TpsTaskId pred, TpsTaskId succ, TpsEdgeKind kind)
{
    TpsRunEdge e = {pred, succ, kind};
    g_array_append_val(run->edges, e);
}

const char *
tps_run_stream_name(const TpsRun *run, TpsStreamId id)
{
    if (id == TPS_STREAM_NONE || id >= run->streams->len)
        return NULL;
    return tps_run_stream(run, id)->name;
}

TpsRun *
tps_engine_export_run(const TpsEngine *engine)
{
    const TpsMachine *m = tps_engine_machine(engine);
    TpsRun *run = tps_run_new(NULL, m->ranks, m->gpus_per_node);
    const guint n = tps_engine_n_tasks(engine);

    /* The engine's names (never NULL) are kept, not copied: the run holds
     * a reference to them. */
    run->engine_names = tps_engine_names_ref(engine);
    const guint n_streams = tps_engine_n_streams(engine);
    g_array_set_size(run->streams, n_streams);
    for (TpsStreamId st = 0; st < n_streams; st++)
        g_array_index(run->streams, TpsRunStream, st) = (TpsRunStream){
            .name = tps_engine_stream_name(engine, st),
            .rank = tps_engine_stream_rank(engine, st),
            .priority = tps_engine_stream_priority(engine, st),
        };

    g_array_set_size(run->spans, n);
    g_array_set_size(run->dst_rank, n);
    TpsSpan *spans = (TpsSpan *)(void *)run->spans->data;
    guint *dst_rank = (guint *)(void *)run->dst_rank->data;
    for (TpsTaskId id = 0; id < n; id++) {
        const Task *t = task_at(engine, id);
        spans[id] = t->span;
        dst_rank[id] = t->dst_rank;
    }

    /* The private edge kinds are listed in the order of the public ones
     * (tps_engine_edge()). */
    const guint ne = engine->n_edges;
    g_array_set_size(run->edges, ne);
    const Edge *edges = engine->edges;
    TpsRunEdge *out = (TpsRunEdge *)(void *)run->edges->data;
    for (guint i = 0; i < ne; i++)
        out[i] = (TpsRunEdge){edges[i].pred, edges[i].succ, (TpsEdgeKind)edges[i].kind};

    /* What each rank's host thread did: a sync is its wait, then the rest
     * of its call; an issue may begin with host-only work. */
    for (guint r = 0; r < m->ranks; r++) {
        const guint items = tps_engine_n_host_items(engine, r);
        /* At most two intervals an item: room for them, then the length
         * of those written. */
        guint len = run->host->len;
        g_array_set_size(run->host, len + 2 * items);
        TpsHostSpan *host = (TpsHostSpan *)(void *)run->host->data;
        for (guint i = 0; i < items; i++) {
            TpsHostItem item;
            tps_engine_host_item(engine, r, i, &item);
            const gboolean sync = item.kind == TPS_HOST_SYNC;
            TpsHostSpan span = {.rank = r,
                                .kind = sync ? TPS_HOST_SYNC : TPS_HOST_WORK,
                                .task = sync ? item.task : TPS_TASK_NONE,
                                .start = item.start,
                                .end = item.ready};
            if (item.ready > item.start)
                host[len++] = span;
            span.kind = sync ? TPS_HOST_WORK : item.kind;
            span.task = sync ? TPS_TASK_NONE : item.task;
            span.start = item.ready;
            span.end = item.end;
            if (span.end > span.start)
                host[len++] = span;
        }
        g_array_set_size(run->host, len);
    }
    return run;
}
