/* NCCL's copy-engine all-gather on the engine (cost/collective-ce.h): per
 * rank, on the collective's stream, a synchronisation, the batch of
 * copies, a synchronisation; no task holds an SM. */
#include "sched/builder.h"

#include "cost/collective-ce.h"

/* One ncclMemOpSync on every rank's `streams`: the rank's flag copies
 * (a task of sync_ns: the copy-engine operations in stream order), then
 * its wait on the peers' flags (cuStreamBatchMemOp), which ends once
 * every rank's flags are written. The first of the collective (`launch`)
 * is the one task the host launches, for the whole NCCL call. The wait
 * is pushed into the rank's hardware queue too, at no host time of its
 * own: with one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) nothing
 * launched after it starts before it is satisfied (NVIDIA/nccl issue
 * #2238: the zero-SM all-gather serialises with compute under one
 * connection, and overlaps with it under several). Returns each rank's
 * wait in `out`. */
static void
ce_sync(TpsBuilder *b, const TpsStreamId *streams, const TpsCeCollPlan *plan, gboolean launch,
        const char *name, TpsOpIds *out)
{
    TpsOpIds flags;
    const TpsTime host_ns = launch ? tps_ce_coll_host_ns(b->hw, plan) : 0;
    g_autofree char *wait_name = g_strdup_printf("%s.wait", name);
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COPY,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = launch,
            .host_ns = host_ns,
            .fixed_ns = plan->sync_ns,
            .bytes = 4.0 * plan->sync_flags,
        };
        flags.id[r] = tps_builder_add(b, &spec);
    }
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_MARKER,
            .name = wait_name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
        };
        out->id[r] = tps_builder_add_as_is(b, &spec);
        for (guint q = 0; q < b->ranks; q++)
            if (q != r)
                tps_builder_after(b, out->id[r], flags.id[q]);
    }
}

/* Copy i of rank r (0: into its own output; i > 0: into rank r + i's),
 * a child of `parent` or, with none, next on r's stream. */
static TpsTaskId
ce_copy(TpsBuilder *b, const TpsStreamId *streams, const TpsCeCollPlan *plan, guint r, guint i,
        TpsTaskId parent, const char *name)
{
    const double shard = plan->shard_bytes;
    TpsTaskSpec spec = {
        .kind = TPS_KIND_COPY,
        .name = name,
        .rank = r,
        .stream = parent == TPS_TASK_NONE ? streams[r] : TPS_STREAM_NONE,
        .parent = parent,
        .copy_engine = TRUE,
        .floor_ns = tps_time_from_ns(shard / plan->copy_gbps),
        .bytes = shard,
    };
    if (i == 0) {
        spec.hbm_bytes = 2.0 * shard; /* read and written in r's own HBM */
    } else {
        spec.dst_rank = (r + i) % b->ranks;
        spec.link_bytes = shard; /* read at r, written at the peer */
    }
    return tps_builder_add(b, &spec);
}

/* The batch outside a graph: per rank a container of no SMs on the
 * stream, its copies its children, all issued at once (the engine's
 * copy-engine queue runs `engines` of them at a time, in order). */
static void
ce_batch(TpsBuilder *b, const TpsStreamId *streams, const TpsCeCollPlan *plan, const char *name)
{
    g_autofree char *copy_name = g_strdup_printf("%s.copy", name);
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COPY,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .container = TRUE,
            .bytes = plan->shard_bytes * plan->copies,
        };
        const TpsTaskId batch = tps_builder_add(b, &spec);
        for (guint i = 0; i < plan->copies; i++)
            ce_copy(b, streams, plan, r, i, batch, copy_name);
    }
}

/* The batch inside a captured graph: one copy after the other on the
 * stream, with NCCL's intra-batch synchronisations between them. */
static void
ce_graph_copies(TpsBuilder *b, const TpsStreamId *streams, const TpsCeCollPlan *plan,
                const char *name)
{
    g_autofree char *copy_name = g_strdup_printf("%s.copy", name);
    g_autofree char *sync_name = g_strdup_printf("%s.batch_sync", name);
    const guint intra = plan->syncs - 2;
    TpsOpIds unused;
    for (guint i = 0; i < plan->copies; i++) {
        for (guint r = 0; r < b->ranks; r++)
            ce_copy(b, streams, plan, r, i, TPS_TASK_NONE, copy_name);
        if (intra > 0 && (i + 1) % TPS_CE_SYNC_FREQ == 0 && i + 1 < plan->copies)
            ce_sync(b, streams, plan, FALSE, sync_name, &unused);
    }
    /* The extra one that keeps the count of synchronisations even. */
    if (intra > (plan->copies - 1) / TPS_CE_SYNC_FREQ)
        ce_sync(b, streams, plan, FALSE, sync_name, &unused);
}

void
tps_builder_ce_all_gather(TpsBuilder *b, const TpsStreamId *streams, double bytes, const char *name,
                          TpsOpIds *out)
{
    TpsCeCollPlan plan;
    TpsOpIds ready, done;
    tps_ce_coll_plan(b->hw, bytes, b->ranks, b->in_graph, &plan);
    b->coll_bytes[TPS_COLL_ALL_GATHER] += bytes;
    b->coll_count[TPS_COLL_ALL_GATHER]++;
    g_autofree char *ready_name = g_strdup_printf("%s.ce_ready", name);
    g_autofree char *done_name = g_strdup_printf("%s.ce_complete", name);
    ce_sync(b, streams, &plan, TRUE, ready_name, &ready);
    if (plan.graph)
        ce_graph_copies(b, streams, &plan, name);
    else
        ce_batch(b, streams, &plan, name);
    ce_sync(b, streams, &plan, FALSE, done_name, &done);
    if (out)
        *out = done;
}
