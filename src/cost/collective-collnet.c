/* NCCL's CollNet all-reduce (cost/collective-collnet.h).
 *
 * NCCL's model (NVIDIA/nccl src/graph/tuning.cc ncclTopoTuneModel, the
 * same for an all-reduce at v2.23.4-1 and v2.28.9-1), Simple only:
 *   bandwidth  busBw = nChannels x bwIntra; Direct: divided by
 *              f = r - (r - 1) / 2, r = ppn / nChannels (the GPUs per
 *              NIC), and x 0.85 on compute capability 9.0 and later;
 *              algorithm bandwidth busBw x 0.5;
 *   latency    Direct 2 (min(1, ppn - 1) x 3.7 + (ppn - 1) x 0.4) + 31 us,
 *              Chain 2 (ppn - 1) x 2.8 + 30 us (hwLat[NVLINK] and
 *              hwLat[NET] of COLLNET_DIRECT / COLLNET_CHAIN; one GPU per
 *              node takes the Tree's network latency, 14 us).
 * nChannels x bwIntra: the graph search raises a CollNet graph's bwIntra
 * up to twice bwInter (src/graph/search.cc, second pass, "2 nodes or
 * collnet"), so min(2 x the ring's network graph, NVLink x efficiency);
 * Direct's nChannels are its heads, the domain's members with a NIC each:
 * their share of the node's NICs, at most ppn. Compute capability 9.0 and later is taken
 * as nccl.nvls 1 (tpsim's Hopper and Blackwell models; it has no compute
 * capability key). */
#include "cost/collective-collnet.h"

#include <string.h>

#define COLLNET_DIRECT_NVLINK_US 3.7
#define COLLNET_DIRECT_NET_US 31.0
#define COLLNET_DIRECT_ARITY_US 0.4
#define COLLNET_CHAIN_NVLINK_US 2.8
#define COLLNET_CHAIN_NET_US 30.0
#define COLLNET_PPN1_NET_US 14.0
#define COLLNET_DIRECT_SM90_EFFICIENCY 0.85

gboolean
tps_collnet_offered(const TpsHardware *hw, TpsCollKind kind, const TpsGroupShape *shape)
{
    return hw->net_sharp && kind == TPS_COLL_ALL_REDUCE && shape->crosses && shape->domains > 1;
}

/* The domain's heads: its members with a NIC of their own, the members'
 * share of the node's NICs (ppn x nics / gpus), at most ppn. */
static guint
heads(const TpsHardware *hw, guint ppn)
{
    if (hw->gpus_per_node == 0)
        return ppn;
    guint share = (guint)((guint64)ppn * hw->nics_per_node / hw->gpus_per_node);
    return MAX(1u, MIN(ppn, share));
}

/* NCCL's latencies of a CollNet step: NVLink's per step (Direct: one hop
 * to the head and the head's arity; Chain: the chain's hops), the
 * network's once. */
static double
hop_us(gboolean direct, guint ppn)
{
    if (!direct)
        return (ppn - 1) * COLLNET_CHAIN_NVLINK_US;
    return MIN(1u, ppn - 1) * COLLNET_DIRECT_NVLINK_US + (ppn - 1) * COLLNET_DIRECT_ARITY_US;
}

static double
net_us(gboolean direct, guint ppn)
{
    return ppn == 1 ? COLLNET_PPN1_NET_US : direct ? COLLNET_DIRECT_NET_US : COLLNET_CHAIN_NET_US;
}

double
tps_collnet_model_us(const TpsHardware *hw, TpsCollAlgo a, double bytes, const TpsGroupShape *shape,
                     double net_graph)
{
    if (!tps_collnet_offered(hw, TPS_COLL_ALL_REDUCE, shape))
        return -1.0;
    const guint ppn = MAX(shape->ranks / shape->domains, 1u);
    if (a != TPS_ALGO_COLLNET_DIRECT && a != TPS_ALGO_COLLNET_CHAIN)
        return -1.0;
    const gboolean direct = a == TPS_ALGO_COLLNET_DIRECT;
    double bus = MIN(2.0 * net_graph, hw->nvlink_gbps * hw->nvlink_efficiency);
    if (direct) {
        double r = (double)ppn / heads(hw, ppn);
        bus /= r - (r - 1.0) / 2.0;
        if (hw->nccl_nvls)
            bus *= COLLNET_DIRECT_SM90_EFFICIENCY;
    }
    const double lat = 2.0 * hop_us(direct, ppn) + net_us(direct, ppn);
    return lat + bytes / (1e3 * bus * 0.5);
}

/* Two steps, reduce up and broadcast down, each pipelined through NVLink
 * and the network, the step taking the slower:
 *   network: the switches reduce, so a domain sends its buffer up once and
 *     receives the result once, up and down at the same time on full-duplex
 *     links: bytes / 2 per step through the NICs of the domain's members
 *     (the shape's nic_gbps x duplex_efficiency);
 *   NVLink: Direct reduce-scatters the buffer to the heads and all-gathers
 *     it back, bytes (ppn - 1) / ppn per direction and GPU a step; Chain
 *     passes the whole buffer along the chain, `bytes` a step.
 * The CTAs: the ring's channels at channel_gbps.simple. Latency NCCL's:
 * the network's once, the NVLink part per step. */
void
tps_collnet_plan(const TpsHardware *hw, TpsCollAlgo a, double bytes, const TpsGroupShape *shape,
                 TpsCollPlan *plan)
{
    const guint ppn = MAX(shape->ranks / MAX(shape->domains, 1u), 1u);
    const gboolean direct = a == TPS_ALGO_COLLNET_DIRECT;
    const double nvlink = hw->nvlink_gbps * hw->nvlink_efficiency;
    const double nvl_bytes = direct ? bytes * (ppn - 1) / ppn : bytes;
    const double net_bytes = bytes / 2.0;
    const double net = shape->nic_gbps * hw->net_duplex_efficiency;

    memset(plan, 0, sizeof(*plan));
    plan->kind = TPS_COLL_ALL_REDUCE;
    plan->algo = direct ? TPS_ALGO_COLLNET_DIRECT : TPS_ALGO_COLLNET_CHAIN;
    plan->protocol = TPS_PROTO_SIMPLE;
    plan->ranks = shape->ranks;
    plan->crosses_nodes = shape->crosses;
    plan->steps = 2;
    plan->channels = tps_coll_channels(hw, NULL);
    plan->rate_cap_gbps = plan->channels * hw->nccl_channel_gbps[TPS_PROTO_SIMPLE];
    /* The payload the CTAs move per step: the larger of the two stages. */
    plan->step_bytes = MAX(nvl_bytes, net_bytes);
    plan->wire_bytes = plan->step_bytes;
    /* wire / link = max(nvl_bytes / nvlink, net_bytes / net) */
    double t = nvl_bytes / nvlink;
    if (net > 0.0)
        t = MAX(t, net_bytes / net);
    plan->link_gbps = t > 0.0 ? plan->wire_bytes / t : nvlink;
    plan->base_ns = tps_time_from_us(net_us(direct, ppn));
    plan->step_latency_ns = tps_time_from_us(hop_us(direct, ppn));
}
