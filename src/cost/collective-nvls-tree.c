/* NCCL's NVLS_TREE all-reduce (cost/collective-nvls-tree.h).
 *
 * NCCL's model (NVIDIA/nccl src/graph/tuning.cc ncclTopoTuneModel), in
 * two forms by release (nccl.version, cost/nccl-tuning.h):
 *   2.19 to 2.27 (v2.19.3-1, v2.23.4-1, v2.27.7-1):
 *     bandwidth  busBw = nChannels x min(bwIntra, nNodes <= 2 ? bwInter :
 *                bwInter / 2), algorithm bandwidth busBw x 5/6;
 *     latency    baseLat 0 + hwLat[NVLINK] (23 us to 2.20, then 25) +
 *                2 log2i(nNodes) x hwLat[NET] 14 us;
 *   2.18 (v2.18.6-1):
 *     bandwidth  busBw = nChannels x (nNodes <= 2 ? bwIntra : bwInter),
 *                algorithm bandwidth busBw x 0.70 nNodes / (2 (nNodes - 1));
 *     latency    baseLat 23 us + 2 (nNodes - 1) x hwLat[NET] 19 us;
 *   Simple only; all-reduce only (src/enqueue.cc); off on one node.
 * nChannels x bwIntra is taken as NVLink x efficiency and nChannels x
 * bwInter as the ring's network graph (nccl.net_graph_gbps, or the
 * domain's NICs), as cost/collective.c takes them for Ring and Tree.
 * Not taken: 2.28's form (per channel, nvlsEfficiency,
 * perChMaxNVLSTreeBws, hwLat[NET] 20.9 us), which needs the GPU's compute
 * capability; 2.28 takes the 2.27 form. */
#include "cost/collective-nvls-tree.h"
#include "cost/nccl-tuning.h"

#include <string.h>

#define NVLS_TREE_NVLINK_US 25.0
#define NVLS_TREE_NET_US 14.0
#define NVLS_TREE_RATIO (5.0 / 6.0)

gboolean
tps_nvls_tree_offered(const TpsHardware *hw, TpsCollKind kind, const TpsGroupShape *shape)
{
    return hw->nccl_nvls && kind == TPS_COLL_ALL_REDUCE && shape->crosses && shape->domains > 1 &&
           shape->per_domain >= TPS_NVLS_MIN_LOCAL_RANKS;
}

double
tps_nvls_tree_model_us(const TpsHardware *hw, const TpsNcclTuning *t, double bytes,
                       const TpsGroupShape *shape, double net_graph)
{
    if (!tps_nvls_tree_offered(hw, TPS_COLL_ALL_REDUCE, shape))
        return -1.0;
    const guint nodes = shape->domains;
    const double intra = hw->nvlink_gbps * hw->nvlink_efficiency;
    const double base = t->nvls_tree_us[0], nvlink = t->nvls_tree_us[1], net = t->nvls_tree_us[2];
    if (t->nvls_tree_2_18) {
        const double bus = nodes <= 2 ? intra : net_graph;
        const double algo_bw = bus * 0.70 * nodes / (2.0 * (nodes - 1));
        return base + 2.0 * (nodes - 1) * net + bytes / (1e3 * algo_bw);
    }
    const double inter = nodes <= 2 ? net_graph : net_graph / 2.0;
    const double algo_bw = MIN(intra, inter) * NVLS_TREE_RATIO;
    const double lat = base + nvlink + 2.0 * tps_nccl_tree_depth(nodes) * net;
    return lat + bytes / (1e3 * algo_bw);
}

/* Two steps, reduce up and broadcast down, each pipelined through two
 * stages that run at once:
 *   NVLink: the domain's NVSwitches reduce (multimem loads) then multicast
 *     (multimem stores), as NVLS does inside one domain (plan_nvls in
 *     cost/collective.c): per step bytes (1 + 1/ppn) / 2 per direction on
 *     each GPU's NVLink, the CTAs' payload bytes / 2 at nvls_channels x
 *     channel_gbps.simple;
 *   network: the domain's reduced buffer goes up (then comes down) a double
 *     binary tree of domains, each tree carrying half of it, spread over
 *     the NICs of the domain's members (the shape's nic_gbps x
 *     duplex_efficiency): two domains send each other a half per step
 *     (bytes / 2 per direction), more domains up to `bytes` (an interior
 *     domain receives from two children), as plan_tree has it.
 * A step takes the slower stage: wire bytes are the NVLink ones, the link
 * the NVLink rate lowered to the network's equivalent where that is slower.
 * Latency: NCCL's own, 25 us once and log2(domains) network hops of
 * 14 us per step. */
void
tps_nvls_tree_plan(const TpsHardware *hw, double bytes, const TpsGroupShape *shape,
                   TpsCollPlan *plan)
{
    const guint domains = MAX(shape->domains, 1u);
    const guint ppn = MAX(shape->ranks / domains, 1u);
    const double nvlink = hw->nvlink_gbps * hw->nvlink_efficiency;
    const double nvl_wire = bytes * (1.0 + 1.0 / ppn) / 2.0;
    const double net_bytes = domains == 2 ? bytes / 2.0 : bytes;
    const double net = shape->nic_gbps * hw->net_duplex_efficiency;
    double link = nvlink;
    /* nvl_wire / link = max(nvl_wire / nvlink, net_bytes / net) */
    if (net > 0.0 && net_bytes > 0.0)
        link = MIN(nvlink, net * (1.0 + 1.0 / ppn) / 2.0 * (bytes / net_bytes));

    memset(plan, 0, sizeof(*plan));
    plan->kind = TPS_COLL_ALL_REDUCE;
    plan->algo = TPS_ALGO_NVLS_TREE;
    plan->protocol = TPS_PROTO_SIMPLE;
    plan->ranks = shape->ranks;
    plan->crosses_nodes = shape->crosses;
    plan->link_gbps = link;
    plan->channels = hw->nccl_nvls_channels;
    plan->rate_cap_gbps = hw->nccl_nvls_channels * hw->nccl_channel_gbps[TPS_PROTO_SIMPLE];
    plan->steps = 2;
    plan->step_bytes = bytes / 2.0;
    plan->wire_bytes = nvl_wire;
    plan->base_ns = tps_time_from_us(NVLS_TREE_NVLINK_US);
    plan->step_latency_ns = tps_time_from_us(tps_nccl_tree_depth(domains) * NVLS_TREE_NET_US);
}
