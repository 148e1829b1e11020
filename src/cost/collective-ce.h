/* NCCL's copy-engine (CE) all-gather, where nccl.ce_collectives is 1.
 *
 * Since NCCL 2.28 (NVIDIA/nccl src/ce_coll.cc; release notes of 2.28.3), a
 * communicator whose CTA policy is NCCL_CTA_POLICY_ZERO (NCCL_CTA_POLICY=
 * ZERO) runs ncclAllGather on buffers registered in symmetric windows
 * (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC) without a kernel, when
 * every rank of the communicator is on one NVLink domain (2.28: one node;
 * 2.30: one LSA team). Each rank, on the collective's stream:
 *   1. synchronises with the others (ncclMemOpSync, "ready"): it writes its
 *      flag into every peer, one 4-byte copy-engine copy each (cudaMemcpy-
 *      Async), or one copy into the NVSwitch multicast address where NVLS
 *      exists, then waits on the peers' flags (cuStreamBatchMemOp);
 *   2. copies its shard into its own output (out of place) and into the
 *      output of each peer: one cudaMemcpyBatchAsync of n copies, which
 *      carry no order among them, so the copy engines may run several at
 *      once; inside a captured CUDA graph the batch is n cudaMemcpyAsync
 *      calls, one after the other on the stream (ncclCeLaunchBatchOps);
 *   3. synchronises again ("complete" flags), so that no rank reads its
 *      output before every peer has written it.
 * No SM is held at any point. HBM: each copy reads its shard at the sender
 * and writes it at the receiver (no FIFO in between): 2 x bytes through
 * each rank's HBM, against the ring's FIFO store and re-read per step.
 *
 * AlltoAll, Gather and Scatter have CE versions too; ReduceScatter and
 * AllReduce have none (a copy engine cannot add; ncclCeImplemented): with
 * the policy set they keep NCCL's kernels, and so they do here. A group
 * that spans NVLink domains keeps the kernel as well (NCCL 2.28 and 2.29;
 * 2.30's hierarchical CE all-gather over the network's RMA proxy is not
 * modelled). docs/cost-model.md, "Copy-engine collectives", has the
 * numbers.
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "cost/collective.h"
#include "cost/hardware.h"
#include "cost/kernel-cost.h"
#include "cost/topology.h"

/* NCCL's intra-batch synchronisation (CE_COLL_INTRA_BATCH_SYNC_FREQ,
 * _MSG_THRESHOLD of src/ce_coll.cc): a batch of more than 8 copies and
 * at least 512 MiB in all is cut into rounds; inside a captured graph a
 * synchronisation follows every 8th copy. */
#define TPS_CE_SYNC_FREQ 8u
#define TPS_CE_SYNC_MSG_BYTES (512.0 * 1024 * 1024)

typedef struct {
    guint ranks;
    guint copies;       /* per rank: the local copy and one per peer (n) */
    guint engines;      /* copies running at once: min(gpu.copy_engines, copies), 1 in a
                           captured graph (the copies follow each other on the stream) */
    gboolean graph;     /* issued inside a captured CUDA graph */
    double shard_bytes; /* each copy: bytes / n */
    guint sync_flags;   /* flag copies per synchronisation: 1 (NVLS multicast) or n-1 */
    TpsTime sync_ns;    /* one synchronisation: sync_flags x nccl.ce_op_latency_us */
    guint syncs;        /* synchronisations: 2, and the intra-batch ones of a graph */
    guint host_calls;   /* runtime calls the host makes (a kernel collective: 1) */
    double copy_gbps;   /* one copy engine: node.copy_engine_gbps */
    double link_gbps;   /* NVLink payload per GPU and direction: node.nvlink_gbps x
                           node.nvlink_efficiency */
} TpsCeCollPlan;

/* Whether NCCL runs a collective of `kind` over the group of `shape` by
 * copy engines: nccl.ce_collectives is 1, the kind is an all-gather, and
 * the group has 2 ranks or more, all on one NVLink domain. */
static inline gboolean
tps_ce_coll_applies(const TpsHardware *hw, TpsCollKind kind, const TpsGroupShape *shape)
{
    return hw->nccl_ce_collectives && hw->copy_engines > 0 && kind == TPS_COLL_ALL_GATHER &&
           shape->ranks >= 2 && shape->domains == 1;
}

/* Plan the CE all-gather of `bytes` (the gathered buffer per rank) over
 * `ranks` GPUs of one NVLink domain; `graph`: issued inside a captured
 * CUDA graph. */
void tps_ce_coll_plan(const TpsHardware *hw, double bytes, guint ranks, gboolean graph,
                      TpsCeCollPlan *plan);

/* The time of the copies alone on idle links, every rank alike: the
 * copies start in order (the local one first) on `engines` copy engines;
 * a copy to a peer runs at min(copy_gbps, link_gbps / the peer copies
 * running), the local copy at copy_gbps (HBM is not the bound here; the
 * engine charges it). The engine gives the same to rounding. */
TpsTime tps_ce_coll_copy_ns(const TpsCeCollPlan *plan);

/* The whole collective on idle links, no launch: syncs x sync_ns + the
 * copies. */
TpsTime tps_ce_coll_time_ns(const TpsCeCollPlan *plan);

/* The host time of issuing it: host.nccl_us for the NCCL call, and
 * host.launch_us for each runtime call beyond the one a kernel takes. */
TpsTime tps_ce_coll_host_ns(const TpsHardware *hw, const TpsCeCollPlan *plan);

/* The CE all-gather of `bytes` over the group of `shape`, outside a
 * graph, on idle links: tps_ce_coll_time_ns (no kernel launch). */
TpsTime tps_ce_coll_group_ns(const TpsHardware *hw, double bytes, const TpsGroupShape *shape);

/* A collective over the group of `shape` on idle links (the closed forms
 * of the DP and expert collectives): the CE all-gather where it applies
 * (tps_ce_coll_group_ns), else NCCL's kernel with its launch. Inline: the
 * step model asks it per DP collective. */
static inline TpsTime
tps_coll_group_ns(const TpsHardware *hw, TpsCollKind kind, double bytes, const TpsGroupShape *shape)
{
    if (tps_ce_coll_applies(hw, kind, shape))
        return tps_ce_coll_group_ns(hw, bytes, shape);
    TpsCollPlan plan;
    tps_coll_plan_group(hw, kind, bytes, shape, &plan);
    return tps_cost_launch_ns(hw) + tps_coll_time_ns(hw, &plan);
}
