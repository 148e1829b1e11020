/* NCCL's copy-engine all-gather: see collective-ce.h. */
#include "cost/collective-ce.h"

#include <math.h>

/* Whether NCCL cuts the batch for its intra-batch synchronisation
 * (ncclCeAllGather: more than TPS_CE_SYNC_FREQ copies and
 * TPS_CE_SYNC_MSG_BYTES in all). */
static gboolean
intra_batch_sync(const TpsCeCollPlan *p)
{
    return p->copies > TPS_CE_SYNC_FREQ && p->shard_bytes * p->copies >= TPS_CE_SYNC_MSG_BYTES;
}

/* Synchronisations of a batch issued copy by copy inside a graph: one
 * after every TPS_CE_SYNC_FREQ-th copy but the last, and one more when the
 * count of groups of copies is even (ncclCeLaunchBatchOps keeps their
 * number even so that the ready and complete flags alternate). */
static guint
graph_intra_syncs(const TpsCeCollPlan *p)
{
    if (!p->graph || !intra_batch_sync(p))
        return 0;
    const guint groups = (p->copies + TPS_CE_SYNC_FREQ - 1) / TPS_CE_SYNC_FREQ;
    return (p->copies - 1) / TPS_CE_SYNC_FREQ + (groups % 2 == 0 ? 1 : 0);
}

void
tps_ce_coll_plan(const TpsHardware *hw, double bytes, guint ranks, gboolean graph,
                 TpsCeCollPlan *plan)
{
    g_return_if_fail(ranks >= 2 && hw->copy_engines > 0);
    *plan = (TpsCeCollPlan){
        .ranks = ranks,
        .copies = ranks,
        .graph = graph,
        .shard_bytes = bytes / ranks,
        .sync_flags = hw->nccl_nvls ? 1 : ranks - 1,
        .copy_gbps = hw->copy_engine_gbps,
        .link_gbps = hw->nvlink_gbps * hw->nvlink_efficiency,
    };
    plan->engines = graph ? 1 : MIN(hw->copy_engines, plan->copies);
    plan->sync_ns = tps_time_from_us(plan->sync_flags * hw->nccl_ce_op_latency_us);
    plan->syncs = 2 + graph_intra_syncs(plan);
    /* Per synchronisation: cuStreamWriteValue32 of the sequence number,
     * the flag copies, one cuStreamBatchMemOp of the waits; and the batch:
     * one cudaMemcpyBatchAsync, or a cudaMemcpyAsync per copy in a graph
     * (where the host issues nothing per call: the graph's launch). */
    plan->host_calls = plan->syncs * (plan->sync_flags + 2) + (graph ? plan->copies : 1);
}

/* The rate of a running copy: the local one (index 0) at the copy
 * engine's rate, the others sharing the link among `peers` running. */
static double
copy_rate(const TpsCeCollPlan *p, guint index, guint peers)
{
    if (index == 0)
        return p->copy_gbps;
    return MIN(p->copy_gbps, p->link_gbps / peers);
}

TpsTime
tps_ce_coll_copy_ns(const TpsCeCollPlan *p)
{
    g_autofree double *left = g_new(double, p->copies);
    for (guint i = 0; i < p->copies; i++)
        left[i] = p->shard_bytes;
    double now = 0.0;
    guint first = 0, next = 0; /* copies [first, next) have started; done ones are 0 */
    while (first < p->copies) {
        guint running = 0, peers = 0;
        for (guint i = first; i < next; i++)
            running += left[i] > 0.0;
        for (; next < p->copies && running < p->engines; next++)
            running++;
        for (guint i = first; i < next; i++)
            peers += i > 0 && left[i] > 0.0;
        double dt = INFINITY;
        for (guint i = first; i < next; i++)
            if (left[i] > 0.0)
                dt = MIN(dt, left[i] / copy_rate(p, i, peers));
        now += dt;
        for (guint i = first; i < next; i++)
            if (left[i] > 0.0) {
                left[i] -= dt * copy_rate(p, i, peers);
                if (left[i] <= p->shard_bytes * 1e-12)
                    left[i] = 0.0;
            }
        while (first < next && left[first] == 0.0)
            first++;
    }
    /* As the engine rounds (tps_fluid_duration): float noise within 1e-6
     * ns of a whole nanosecond costs nothing. */
    return tps_time_from_ns(now - 1e-6);
}

TpsTime
tps_ce_coll_time_ns(const TpsCeCollPlan *plan)
{
    return plan->syncs * plan->sync_ns + tps_ce_coll_copy_ns(plan);
}

TpsTime
tps_ce_coll_host_ns(const TpsHardware *hw, const TpsCeCollPlan *plan)
{
    return tps_time_from_us(hw->host_nccl_us + (plan->host_calls - 1) * hw->host_launch_us);
}

TpsTime
tps_ce_coll_group_ns(const TpsHardware *hw, double bytes, const TpsGroupShape *shape)
{
    TpsCeCollPlan ce;
    tps_ce_coll_plan(hw, bytes, shape->ranks, FALSE, &ce);
    return tps_ce_coll_time_ns(&ce);
}
