/* NCCL ring collectives: protocol choice, channels, per-step cost.
 *
 * For each protocol p the plan is
 *   channels  nc: hw->nccl_channels, reduced for small buffers as NCCL's
 *             getAlgoInfo does (NVIDIA/nccl src/enqueue.cc, "Ring/Tree channel
 *             tuning": while bytes < nc x threads x threshold, nc--);
 *   payload   step = bytes / n per rank per step, on the wire step / eff_p
 *             (LL: 8-byte lines carry 4 data bytes + 4 flag bytes, 0.5;
 *             LL128: 128-byte lines carry 120 data bytes + 8 flag bytes;
 *             Simple: data only, synchronised by separate flags, 1.0);
 *   rate cap  nc x channel_gbps[p] (payload);
 *   latency   base[p] once, and per step the per-hop latency hw[p] (NVLink)
 *             or net[p] (InfiniBand) plus the pipeline fill: a channel must
 *             receive min(step / nc, slot[p]) bytes before the next rank can
 *             forward them, at the rate a channel gets when all nc stream;
 * and its time is
 *   base + steps x (latency + max(wire / link, step / cap)),
 * which is what the engine replays: per step one flow of `wire` bytes on the
 * link with fixed_ns = latency and floor_ns = step / cap.
 *
 * HBM per rank, in chunks of step = bytes / n: each of the n-1 (all-reduce:
 * 2(n-1)) received chunks is stored into the FIFO and read back (2 x wire,
 * which the engine charges at the two ends of each flow); beside that an
 * all-gather reads its own chunk once and writes all n into its output,
 * a reduce-scatter reads its n input chunks and writes its one output
 * chunk, both n + 1 chunks, and an all-reduce does both, 2n. That user
 * traffic is spread evenly over the steps (hbm_step_bytes), so a lone ring
 * moves 2 wire + (n+1)/(n-1) step bytes per step: three times its link
 * rate, as NCCL's maintainers count it (NVIDIA/nccl issue #1428). The protocol with
 * the smallest time with all channels is chosen, as NCCL's tuner does with its
 * own model (src/enqueue.cc picks algorithm and protocol first, then reduces
 * the channels).
 */
#include "cost/collective.h"
#include "cost/collective-collnet.h"
#include "cost/collective-nvls.h"
#include "cost/collective-nvls-tree.h"
#include "cost/nccl-env.h"
#include "cost/nccl-tuning.h"

#include <math.h>
#include <string.h>

const char *const tps_coll_kind_names[] = {"AllGather", "ReduceScatter", "AllReduce", NULL};
const char *const tps_coll_algo_names[] = {"Ring",          "Tree",         "NVLS", "NVLSTree",
                                           "CollNetDirect", "CollNetChain", NULL};

/* NCCL's tuning constants of the algorithms beyond the ring, properties of
 * the NCCL code, not of the hardware (NVIDIA/nccl src/graph/tuning.cc
 * ncclTunerConstantsDefaults; the ring's are the model's nccl.*_latency_us,
 * the Tree's and NVLS's model ones nccl.version's, cost/nccl-tuning.h,
 * cost/collective-nvls.h): NVLS's one latency on NVLink in tpsim's plan
 * (Simple only, no base);
 * the LL bus-bandwidth caps across nodes of x86 Intel hosts (llMaxBws,
 * 2 nodes and more; one node takes channel_gbps.ll x channels); the
 * network post overhead of a ring step across nodes (getNetOverhead, x3
 * for Simple). */
#define NVLS_LATENCY_US 25.0
#define LL_MAX_BW_2_NODES 39.0
#define LL_MAX_BW_NODES 20.4
#define NET_OVERHEAD_US 1.0

guint
tps_coll_channels(const TpsHardware *hw, TpsChannelCap *cap)
{
    g_return_val_if_fail(hw != NULL, 1);
    TpsChannelCap why = TPS_CHANNELS_FIXED;
    double nc = hw->nccl_channels;
    if (hw->nccl_channels_nvlink_gbps > 0.0) {
        nc = MAX(1.0, round(nc * hw->nvlink_gbps / hw->nccl_channels_nvlink_gbps));
        why = TPS_CHANNELS_LINK;
    }
    if (hw->nccl_max_channels > 0 && nc > hw->nccl_max_channels) {
        nc = hw->nccl_max_channels;
        why = TPS_CHANNELS_MAX;
    }
    if (hw->sms > 0 && nc > hw->sms) {
        nc = hw->sms;
        why = TPS_CHANNELS_SMS;
    }
    if (cap)
        *cap = why;
    return (guint)nc;
}

const char *
tps_coll_channel_cap_text(TpsChannelCap cap)
{
    switch (cap) {
    case TPS_CHANNELS_FIXED:
        return "NCCL's channels are fixed (nccl.channels_nvlink_gbps 0)";
    case TPS_CHANNELS_LINK:
        return "NCCL's channels follow the NVLink bandwidth";
    case TPS_CHANNELS_MAX:
        return "NCCL's channels are capped at nccl.max_channels: more NVLink bandwidth does not "
               "move its rings and trees";
    case TPS_CHANNELS_SMS:
        return "NCCL's channels are capped at the GPU's SMs";
    }
    return "";
}

/* NCCL's per-protocol thread counts and per-thread byte thresholds for the
 * channel reduction (NVIDIA/nccl src/include/device.h NCCL_LL_MAX_NTHREADS
 * 512, NCCL_LL128_MAX_NTHREADS 640; src/graph/tuning.cc
 * NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD 8, 8, 64, the LL one times the
 * number of ranks for rings). Simple's thread count is hw->nccl_threads.
 * These are properties of the NCCL code, not of the hardware. */
static const guint proto_threads[TPS_PROTO_COUNT] = {512, 640, 0};
static const guint proto_threshold[TPS_PROTO_COUNT] = {8, 8, 64};

static guint
reduced_channels(const TpsHardware *hw, guint full, TpsProtocol p, double bytes, guint ranks)
{
    double nc = full;
    double nt = p == TPS_PROTO_SIMPLE ? hw->nccl_threads : proto_threads[p];
    double threshold = proto_threshold[p] * (p == TPS_PROTO_LL ? ranks : 1);

    while (bytes < nc * nt * threshold) {
        if (nc >= 2)
            nc -= 1;
        else if (fmod(nt, 128.0) == 0.0)
            nt /= 2;
        else
            break;
    }
    return (guint)MAX(nc, 1.0);
}

/* Capacity, in wire bytes/ns, of the slowest hop of the ring. Across NVLink
 * domains NCCL spreads its channels' rings so that each crosses the domain
 * boundary on a different GPU and NIC, so the boundary hop has the NICs of
 * all the group's members in the domain (the shape's nic_gbps). Every such
 * NIC sends one ring's data out and receives another's at the same time, so
 * each direction keeps duplex_efficiency of its rate (1 on InfiniBand with
 * GPUDirect RDMA; less where both directions share a path, e.g. a bounce
 * through host memory). */
static double
ring_link_gbps(const TpsHardware *hw, const TpsGroupShape *shape)
{
    double link = hw->nvlink_gbps * hw->nvlink_efficiency;
    if (shape->crosses)
        link = MIN(link, shape->nic_gbps * hw->net_duplex_efficiency);
    return link;
}

/* One channel's link rate for protocol p. LL128 runs on the same CTAs as
 * Simple, moving 128-byte lines of 120 payload bytes: Simple's rate times
 * its payload fraction, as NCCL's tuner has it (NVIDIA/nccl
 * src/graph/tuning.cc: LL128 busBw = min(0.92 x Simple's, nChannels x
 * perChMaxRingLL128Bw), the LL128 key being that cap). Its lower latency,
 * not its rate, is why it is chosen for mid sizes. */
static double
channel_link_gbps(const TpsHardware *hw, TpsProtocol p)
{
    double ch_link = hw->nccl_channel_gbps[p];
    if (p == TPS_PROTO_LL128)
        ch_link = MIN(ch_link, hw->nccl_channel_gbps[TPS_PROTO_SIMPLE] *
                                   hw->nccl_proto_efficiency[TPS_PROTO_LL128]);
    return ch_link;
}

static double
step_time_ns(const TpsCollPlan *plan)
{
    TpsTime wire = tps_time_from_ns(plan->wire_bytes / plan->link_gbps);
    TpsTime floor_ns = tps_time_from_ns(plan->step_bytes / plan->rate_cap_gbps);
    return (double)(plan->step_latency_ns + MAX(wire, floor_ns));
}

/* NCCL's Simple ring kernels move a channel's chunk of a step in
 * SlicePerChunk slices, ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS = 4 / 2
 * (NVIDIA/nccl src/include/collectives.h; the same for all-gather and
 * reduce-scatter), each at least 1/32 of SLICESTEPS = 2 FIFO steps of
 * NCCL_BUFFSIZE / NCCL_STEPS (src/device/prims_simple.h genericOp:
 * sliceSize = max(divUp(nelem, 16 x SlicePerChunk) x 16, stepSize x
 * StepPerSlice / 32); NCCL_STEPS 8, src/include/device.h). A slice is
 * posted to the next rank (postPeer) once the CTA has written all of it, and
 * the next rank's CTA waits for it (waitPeer) before it reduces and
 * forwards it. */
#define NCCL_SLICES_PER_CHUNK 2.0
#define NCCL_STEPS 8.0
#define NCCL_SLICE_STEPS 2.0

/* The first slice of a Simple channel chunk of `chunk` bytes (the whole
 * chunk when it is below the minimum slice). */
static double
simple_first_slice(const TpsHardware *hw, double chunk)
{
    const double step = hw->mem_nccl_buffer_kib[TPS_PROTO_SIMPLE] * 1024.0 / NCCL_STEPS;
    return MIN(chunk, MAX(chunk / NCCL_SLICES_PER_CHUNK, step * NCCL_SLICE_STEPS / 32.0));
}

/* The bytes of a channel's chunk of one step that a rank must hold before
 * it forwards them, at most nccl.slot_bytes of the protocol: inside an
 * NVLink domain a Simple ring's first slice (simple_first_slice); LL and
 * LL128 move a chunk as one slice (SlicePerChunk 1), and across NVLink
 * domains the network proxy moves whole FIFO steps: the chunk. */
static double
ring_fill_bytes(const TpsHardware *hw, TpsProtocol p, double chunk, gboolean crosses)
{
    double fill = p == TPS_PROTO_SIMPLE && !crosses ? simple_first_slice(hw, chunk) : chunk;
    return MIN(fill, hw->nccl_slot_bytes[p]);
}

static void
plan_protocol(const TpsHardware *hw, TpsCollKind kind, TpsProtocol p, double bytes,
              const TpsGroupShape *shape, guint full, gboolean reduce_channels, TpsCollPlan *plan)
{
    const guint ranks = shape->ranks;
    const gboolean crosses = shape->crosses;
    const double link = ring_link_gbps(hw, shape);
    const double eff = hw->nccl_proto_efficiency[p];
    const guint steps = kind == TPS_COLL_ALL_REDUCE ? 2 * (ranks - 1) : ranks - 1;
    /* A channel is one CTA that, besides moving each step over the link,
     * reads the user input and writes the user output (user_chunks chunks
     * of bytes/n over the steps, see hbm_step_bytes below), in series: a
     * payload byte costs the channel 1/channel_gbps + u/channel_mem_gbps,
     * u the user chunks per step. Fewer ranks mean more user chunks per
     * step (all-reduce 2n/2(n-1): 2 on 2 GPUs, 8/7 on 8), hence the lower
     * bus bandwidth of 2 GPUs (docs/cost-model.md, "Collectives"). */
    const double user_chunks = kind == TPS_COLL_ALL_REDUCE ? 2.0 * ranks : ranks + 1.0;
    double ch_link = channel_link_gbps(hw, p);
    /* 0 (a model built in code that leaves it unset): no such term. */
    const double mem_ns =
        hw->nccl_channel_mem_gbps > 0.0 ? user_chunks / steps / hw->nccl_channel_mem_gbps : 0.0;
    const double ch_rate = 1.0 / (1.0 / ch_link + mem_ns);

    memset(plan, 0, sizeof(*plan));
    plan->kind = kind;
    plan->algo = TPS_ALGO_RING;
    plan->protocol = p;
    plan->ranks = ranks;
    plan->crosses_nodes = crosses;
    plan->link_gbps = link;
    plan->steps = steps;
    plan->channels = reduce_channels ? reduced_channels(hw, full, p, bytes, ranks) : full;
    plan->step_bytes = bytes / ranks;
    plan->wire_bytes = plan->step_bytes / eff;
    plan->rate_cap_gbps = plan->channels * ch_rate;
    /* The engine's NIC resources carry nic_gbps in each direction; the
     * duplex share of a ring across nodes reaches it as this floor. */
    if (crosses && hw->net_duplex_efficiency < 1.0)
        plan->rate_cap_gbps = MIN(plan->rate_cap_gbps, link * eff);
    plan->hbm_step_bytes = plan->step_bytes * user_chunks / plan->steps;

    /* Pipeline fill of one hop: what a rank must have of a channel's share
     * of the step before it can forward it (ring_fill_bytes), at the
     * payload rate one channel gets while all of them stream. */
    double share = MIN(ch_rate, link * eff / plan->channels);
    double slot = ring_fill_bytes(hw, p, plan->step_bytes / plan->channels, crosses);
    double hop_us = crosses ? hw->nccl_net_latency_us[p] : hw->nccl_hw_latency_us[p];
    plan->base_ns = tps_time_from_us(hw->nccl_base_latency_us[p]);
    plan->step_latency_ns = tps_time_from_ns(hop_us * 1e3 + slot / share);
}

/* ---- Tree and NVLS ---- */

/* NCCL's Tree all-reduce: inside each of the group's NVLink domains a
 * chain of its ppn GPUs, between the domains a double binary tree (two
 * trees, each carrying half of the data, every domain interior in at most
 * one). Data is reduced up the chain and tree, then broadcast down: two
 * steps, each moving the whole buffer once over every NVLink hop of the
 * chain (a GPU sends `bytes` to its parent going up, to its child going
 * down), each paying ppn - 1 NVLink hops and log2(domains) network hops of
 * latency and pipeline fill. Between domains a step moves bytes / 2 per
 * direction through a domain's NICs when there are two domains (each tree
 * crosses once each way), up to `bytes` when more (an interior domain of a
 * binary tree receives from two children). Channels and their user-buffer
 * traffic (input read, output written: one pass per step) are the ring's. */
static void
plan_tree(const TpsHardware *hw, TpsProtocol p, double bytes, const TpsGroupShape *shape,
          guint full, gboolean reduce_channels, TpsCollPlan *plan)
{
    const guint ranks = shape->ranks;
    const guint domains = MAX(shape->domains, 1u);
    const guint ppn = ranks / domains;
    const double eff = hw->nccl_proto_efficiency[p];
    double link = hw->nvlink_gbps * hw->nvlink_efficiency;
    if (shape->crosses)
        link = MIN(link, shape->nic_gbps * hw->net_duplex_efficiency * (domains == 2 ? 2.0 : 1.0));
    const double mem_ns = hw->nccl_channel_mem_gbps > 0.0 ? 1.0 / hw->nccl_channel_mem_gbps : 0.0;
    const double ch_rate = 1.0 / (1.0 / channel_link_gbps(hw, p) + mem_ns);

    memset(plan, 0, sizeof(*plan));
    plan->kind = TPS_COLL_ALL_REDUCE;
    plan->algo = TPS_ALGO_TREE;
    plan->protocol = p;
    plan->ranks = ranks;
    plan->crosses_nodes = shape->crosses;
    plan->link_gbps = link;
    plan->steps = 2;
    plan->channels = reduce_channels ? reduced_channels(hw, full, p, bytes, ranks) : full;
    plan->step_bytes = bytes;
    plan->wire_bytes = bytes / eff;
    plan->rate_cap_gbps = plan->channels * ch_rate;
    plan->hbm_step_bytes = bytes;

    double share = MIN(ch_rate, link * eff / plan->channels);
    double fill_ns = MIN(bytes / plan->channels, hw->nccl_slot_bytes[p]) / share;
    /* The latencies of the newest constants (2.23-2.28), whatever
     * nccl.version chooses with: 2.19-2.22's 28 us per Simple hop were a
     * tuning choice NCCL revised, not a property of the hardware. */
    const TpsNcclTuning *lat = tps_nccl_tuning(NULL);
    double hops_ns = (ppn - 1) * (lat->tree_nvlink_us[p] * 1e3 + fill_ns) +
                     tps_nccl_tree_depth(domains) * (lat->tree_net_us[p] * 1e3 + fill_ns);
    plan->base_ns = tps_time_from_us(lat->tree_base_us[p]);
    plan->step_latency_ns = tps_time_from_ns(hops_ns);
}

/* NCCL's NVLS (NVLink SHARP) inside one NVLink domain: the GPUs' CTAs
 * issue multimem loads that the NVSwitches answer with the sum over all
 * GPUs and multimem stores that they copy to every GPU. A reduce-scatter
 * is one step: each GPU's NVLink carries the (n-1)/n of its buffer the
 * others' loads read; an all-gather the (n-1)/n it receives; an
 * all-reduce does both, two steps of bytes (1 + 1/n) / 2 per direction
 * (its loads read the whole buffer out, its stores bring it all in). No
 * FIFO: the flows' two ends are the user buffers' HBM reads and writes.
 * nccl.nvls_channels CTAs each move channel_gbps.simple (the Simple
 * channel's rate, without the FIFO's store and re-read); one latency of
 * 25 us (tuning.cc hwLat[NVLINK][NVLS][Simple]) and no per-step one. */
static void
plan_nvls(const TpsHardware *hw, TpsCollKind kind, double bytes, const TpsGroupShape *shape,
          TpsCollPlan *plan)
{
    const guint n = shape->ranks;
    memset(plan, 0, sizeof(*plan));
    plan->kind = kind;
    plan->algo = TPS_ALGO_NVLS;
    plan->protocol = TPS_PROTO_SIMPLE;
    plan->ranks = n;
    plan->link_gbps = hw->nvlink_gbps * hw->nvlink_efficiency;
    plan->channels = hw->nccl_nvls_channels;
    plan->rate_cap_gbps = hw->nccl_nvls_channels * hw->nccl_channel_gbps[TPS_PROTO_SIMPLE];
    if (kind == TPS_COLL_ALL_REDUCE) {
        plan->steps = 2;
        plan->step_bytes = bytes / 2.0;
        plan->wire_bytes = bytes * (1.0 + 1.0 / n) / 2.0;
    } else {
        plan->steps = 1;
        plan->step_bytes = plan->wire_bytes = bytes * (n - 1) / n;
    }
    plan->base_ns = tps_time_from_us(NVLS_LATENCY_US);
}

/* ---- NCCL's choice ---- */

static gboolean
allowed(guint mask, guint i)
{
    return (mask & (1u << i)) != 0;
}

/* The names nccl.algo and nccl.proto allow for `kind` (cost/nccl-env.h). */
static guint
algo_mask(const TpsHardware *hw, TpsCollKind kind)
{
    return tps_nccl_allowed(hw->nccl_algo, tps_coll_algo_names, kind);
}

static guint
proto_mask(const TpsHardware *hw, TpsCollKind kind)
{
    return tps_nccl_allowed(hw->nccl_proto, tps_protocol_names, kind);
}

/* LL128 off across nodes by nccl.no_ll128_net: NCCL's automatic rule,
 * which a nccl.proto list for the kind replaces (NVIDIA/nccl
 * src/graph/tuning.cc: only LL128's default, 2, is subject to it; a list
 * sets it 0 or 1). */
static gboolean
ll128_off(const TpsHardware *hw, TpsCollKind kind, const TpsGroupShape *shape)
{
    return shape->crosses && hw->nccl_no_ll128_net && !tps_nccl_covers(hw->nccl_proto, kind);
}

/* Whether NCCL has NVLS for a group: nccl.nvls, one NVLink domain, and
 * more than two of the group's GPUs in it (TPS_NVLS_MIN_LOCAL_RANKS). */
static gboolean
nvls_offered(const TpsHardware *hw, const TpsGroupShape *shape)
{
    return hw->nccl_nvls && !shape->crosses && shape->ranks >= TPS_NVLS_MIN_LOCAL_RANKS;
}

/* The graph bandwidths NCCL's model takes (nChannels x bwIntra or bwInter,
 * what its topology search found): in one domain NVLink x efficiency
 * (NCCL's own figure, 20 GB/s per NVLink3 link x 12 = 240 on A100, is that
 * value); across domains nccl.net_graph_gbps, or the domain's NICs where
 * it is 0, for the ring; the tree's the same but, refined on two nodes,
 * raised to twice it where NVLink carries that (src/graph/search.cc, second
 * pass: "increase bwIntra for trees (2 nodes or collnet)", up to
 * 2 x bwInter; the model takes bwIntra on two nodes). */
static void
nccl_graphs(const TpsHardware *hw, const TpsNcclTuning *t, const TpsGroupShape *shape,
            double *ring, double *tree)
{
    const double nvlink = hw->nvlink_gbps * hw->nvlink_efficiency;
    *ring = *tree = nvlink;
    if (!shape->crosses)
        return;
    *ring = *tree = hw->nccl_net_graph_gbps > 0.0 ? hw->nccl_net_graph_gbps : shape->nic_gbps;
    if (t->refined && shape->domains == 2)
        *tree = MIN(2.0 * *ring, nvlink);
}

/* NCCL's LL bus-bandwidth cap (llMaxBws): one node channel_gbps.ll x
 * channels, x86 Intel rows across nodes. */
static double
ll_max_gbps(const TpsHardware *hw, guint nodes)
{
    return nodes == 1   ? hw->nccl_channel_gbps[TPS_PROTO_LL] * hw->nccl_channels
           : nodes == 2 ? LL_MAX_BW_2_NODES
                        : LL_MAX_BW_NODES;
}

/* NCCL's ring in its model: the time (us) of protocol p. */
static double
nccl_ring_us(const TpsHardware *hw, const TpsNcclTuning *t, TpsCollKind kind, TpsProtocol p,
             double bytes, const TpsGroupShape *shape, guint nc, double graph)
{
    const guint n = shape->ranks, nodes = MAX(shape->domains, 1u), ppn = n / nodes;
    const gboolean all_reduce = kind == TPS_COLL_ALL_REDUCE;
    const guint nsteps = all_reduce ? 2 * (n - 1) : n - 1;
    const double ll_max = ll_max_gbps(hw, nodes);
    const double ll_share = !t->ring_ll_quarter         ? 0.5
                            : (nodes > 1 || all_reduce) ? 0.25
                                                        : 1.0 / 3.0;
    double bus = p == TPS_PROTO_LL ? MIN(ll_max, graph * ll_share)
                 : p == TPS_PROTO_LL128
                     ? MIN(graph * 0.92, nc * hw->nccl_channel_gbps[TPS_PROTO_LL128])
                     : graph;
    double intra = hw->nccl_hw_latency_us[p];
    double inter = ppn == 1 && t->ring_ppn1_tree_net ? t->tree_net_us[p]
                                                      : hw->nccl_net_latency_us[p];
    guint inter_steps = 0;
    if (nodes > 1) {
        intra = MAX(intra, NET_OVERHEAD_US * (p == TPS_PROTO_SIMPLE ? 3.0 : 1.0));
        guint hops = t->ring_net_steps_per_node ? nodes : nodes - 1;
        inter_steps = all_reduce ? 2 * hops : nodes - 1;
    }
    /* Signed: NCCL up to 2.22 counts 2 x nodes network steps, more than a
     * two-rank ring has (its int arithmetic takes the difference below 0). */
    double lat = hw->nccl_base_latency_us[p] + ((double)nsteps - inter_steps) * intra +
                 inter_steps * inter;
    /* The ring's plateau (ncclTopoGetAlgoTime): a Simple all-reduce across
     * nodes of at least 64 bytes per channel and rank, x 1.4 from compute
     * capability 8.0 (every GPU tpsim models). */
    if (t->refined && p == TPS_PROTO_SIMPLE && nodes > 1 && all_reduce &&
        bytes / ((double)nc * n) >= 64.0)
        lat *= 1.4;
    return lat + bytes / (1e3 * bus * n / nsteps);
}

/* NCCL's tree in its model (all-reduce only): the time (us) of protocol p. Inside one NVLink domain
 * only when forced (nccl.algo): NCCL's model picks Tree LL128 there for a
 * band of sizes (2-2.5 MB on 8 A100s) where the measured curves
 * (vtrain-all-reduce/1x8, vidur-all-reduce/1x8) show no tree regime, and a
 * chain's pipeline is not modelled finely enough to say why. */
static double
nccl_tree_us(const TpsHardware *hw, const TpsNcclTuning *t, TpsCollKind kind, TpsProtocol p,
             double bytes, const TpsGroupShape *shape, guint nc, double graph)
{
    const guint n = shape->ranks, nodes = MAX(shape->domains, 1u), ppn = n / nodes;
    if (kind != TPS_COLL_ALL_REDUCE || (!shape->crosses && algo_mask(hw, kind) != (1u << TPS_ALGO_TREE)))
        return -1.0;
    const double ll_max = ll_max_gbps(hw, nodes);
    double bus = graph * 0.92;
    if (p == TPS_PROTO_LL)
        bus = MIN(bus / 3.8, ll_max);
    else if (p == TPS_PROTO_LL128)
        bus = MIN(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                  nc * hw->nccl_channel_gbps[TPS_PROTO_LL128]);
    if (t->refined)
        bus *= tps_nccl_tree_correction(p, bytes);
    const double hops_us =
        (ppn - 1) * t->tree_nvlink_us[p] + tps_nccl_tree_depth(nodes) * t->tree_net_us[p];
    double lat = t->tree_base_us[p] + 2.0 * hops_us;
    return lat + bytes / (1e3 * bus * 0.5);
}

/* The constants of hw's nccl.version (an unknown one is refused when the
 * model is read; a model built in code falls back to the default). */
static const TpsNcclTuning *
tuning_of(const TpsHardware *hw)
{
    const TpsNcclTuning *t = tps_nccl_tuning(hw->nccl_version);
    return t != NULL ? t : tps_nccl_tuning(NULL);
}

/* The time NCCL's own tuning model gives algorithm a with protocol p (us),
 * or -1 where NCCL has no such algorithm for the call (NVIDIA/nccl
 * src/graph/tuning.cc ncclTopoTuneModel, src/enqueue.cc: time = latency +
 * bytes / algorithm bandwidth), with the constants of nccl.version
 * (cost/nccl-tuning.h). No LL128 across nodes where nccl.no_ll128_net is 1. */
static double
nccl_model_us(const TpsHardware *hw, const TpsNcclTuning *t, TpsCollKind kind, TpsCollAlgo a,
              TpsProtocol p, double bytes, const TpsGroupShape *shape, guint nc)
{
    if (p == TPS_PROTO_LL128 && ll128_off(hw, kind, shape))
        return -1.0;
    double ring, tree;
    nccl_graphs(hw, t, shape, &ring, &tree);
    switch (a) {
    case TPS_ALGO_RING:
        return nccl_ring_us(hw, t, kind, p, bytes, shape, nc, ring);
    case TPS_ALGO_TREE:
        return nccl_tree_us(hw, t, kind, p, bytes, shape, nc, tree);
    case TPS_ALGO_NVLS:
        if (!nvls_offered(hw, shape) || p != TPS_PROTO_SIMPLE)
            return -1.0;
        return tps_nvls_model_us(hw, t, kind, bytes, shape);
    case TPS_ALGO_NVLS_TREE:
        return p == TPS_PROTO_SIMPLE ? tps_nvls_tree_model_us(hw, t, bytes, shape, ring) : -1.0;
    case TPS_ALGO_COLLNET_DIRECT:
    case TPS_ALGO_COLLNET_CHAIN:
        return p == TPS_PROTO_SIMPLE ? tps_collnet_model_us(hw, a, bytes, shape, ring) : -1.0;
    default:
        return -1.0;
    }
}

/* The algorithm and protocol NCCL picks: the smallest time of its own
 * model among those nccl.algo and nccl.proto allow (as NCCL_ALGO and
 * NCCL_PROTO restrict it). NCCL_PROTO naming only protocols an algorithm
 * lacks (NVLS, NVLS_TREE, CollNet: Simple only) leaves that algorithm out.
 * Where the lists leave nothing, the ring: what NCCL 2.19 to 2.23 run;
 * TRUE where hw's release fails the call instead (cost/nccl-env.h). */
static gboolean
choose(const TpsHardware *hw, TpsCollKind kind, double bytes, const TpsGroupShape *shape,
       guint nc, TpsCollAlgo *algo, TpsProtocol *proto)
{
    const guint algos = algo_mask(hw, kind), protos = proto_mask(hw, kind);
    const TpsNcclTuning *t = tuning_of(hw);
    double best = -1.0;
    *algo = TPS_ALGO_RING;
    *proto = TPS_PROTO_SIMPLE;
    /* One NVLink domain without NVLS and Tree not forced: the ring is the
     * only candidate (nccl_model_us refuses the others), its protocol
     * chosen by the caller. */
    if (!shape->crosses && !nvls_offered(hw, shape) && hw->nccl_algo == NULL)
        return FALSE;
    for (guint a = 0; a < TPS_ALGO_COUNT; a++) {
        /* Those NCCL has not for this call, skipped before the model. */
        if (!allowed(algos, a) || (a == TPS_ALGO_TREE && kind != TPS_COLL_ALL_REDUCE) ||
            (a == TPS_ALGO_NVLS && !nvls_offered(hw, shape)) ||
            (a == TPS_ALGO_NVLS_TREE && !tps_nvls_tree_offered(hw, kind, shape)) ||
            (a >= TPS_ALGO_COLLNET_DIRECT && !tps_collnet_offered(hw, kind, shape)))
            continue;
        for (guint p = 0; p < TPS_PROTO_COUNT; p++) {
            if (!allowed(protos, p) || (a >= TPS_ALGO_NVLS && p != TPS_PROTO_SIMPLE))
                continue;
            double us = nccl_model_us(hw, t, kind, a, p, bytes, shape, nc);
            if (us >= 0.0 && (best < 0.0 || us < best)) {
                best = us;
                *algo = a;
                *proto = p;
            }
        }
    }
    return best < 0.0 && !tps_nccl_ring_backup(hw);
}

void
tps_coll_plan(const TpsHardware *hw, TpsCollKind kind, double bytes, guint ranks, TpsCollPlan *plan)
{
    g_return_if_fail(hw != NULL && plan != NULL && kind < TPS_COLL_COUNT);
    TpsGroupShape shape;
    tps_topo_contiguous_shape(hw, ranks, &shape);
    tps_coll_plan_group(hw, kind, bytes, &shape, plan);
}

/* The plan of a group of 2 or more ranks, bytes >= 0; TRUE where NCCL
 * fails the call (choose()). */
static gboolean
plan_group(const TpsHardware *hw, TpsCollKind kind, double bytes, const TpsGroupShape *shape,
           TpsCollPlan *plan)
{
    /* As NCCL: algorithm and protocol are chosen by its model with all
     * channels, and only then are channels taken away for small buffers. */
    TpsCollAlgo algo;
    TpsProtocol proto;
    const guint nc = tps_coll_channels(hw, NULL);
    const gboolean refused = choose(hw, kind, bytes, shape, nc, &algo, &proto);
    if (algo == TPS_ALGO_TREE) {
        plan_tree(hw, proto, bytes, shape, nc, TRUE, plan);
        return refused;
    }
    if (algo == TPS_ALGO_NVLS) {
        plan_nvls(hw, kind, bytes, shape, plan);
        return refused;
    }
    if (algo == TPS_ALGO_NVLS_TREE) {
        tps_nvls_tree_plan(hw, bytes, shape, plan);
        return refused;
    }
    if (algo == TPS_ALGO_COLLNET_DIRECT || algo == TPS_ALGO_COLLNET_CHAIN) {
        tps_collnet_plan(hw, algo, bytes, shape, plan);
        return refused;
    }
    /* The ring's protocol: the one of smallest time in this model, whose
     * latencies and caps were fitted with that rule (docs/cost-model.md,
     * "Algorithms": NCCL's own model, used for the algorithm, picks the
     * same protocol on the calibration curves but at their edges). */
    TpsTime best = TPS_TIME_NEVER;
    const guint protos = proto_mask(hw, kind);
    for (guint p = 0; p < TPS_PROTO_COUNT; p++) {
        if (!allowed(protos, p) || (p == TPS_PROTO_LL128 && ll128_off(hw, kind, shape)))
            continue;
        TpsCollPlan candidate;
        plan_protocol(hw, kind, (TpsProtocol)p, bytes, shape, nc, FALSE, &candidate);
        TpsTime t = tps_coll_time_ns(hw, &candidate);
        if (t < best) {
            best = t;
            proto = (TpsProtocol)p;
        }
    }
    plan_protocol(hw, kind, proto, bytes, shape, nc, TRUE, plan);
    return refused;
}

/* ---- The memo of plans ----
 *
 * A step plans the same few collectives over and over (every layer's
 * all-gathers and reduce-scatters, every micro-batch), so each thread
 * keeps the plans it made, keyed by everything a plan depends on: the
 * call (kind, bytes, the group's shape) and the hardware's values that
 * plan_group reads, the numbers themselves, not the model's address, so a
 * what-if's hardware (a copy with one value changed, or a new model at a
 * freed model's address) never meets another's plan. One slot per hash,
 * the newest plan kept. */
typedef struct {
    double bytes, nic_gbps, nvlink_gbps, nvlink_efficiency, duplex, channels_nvlink_gbps,
        channel_mem_gbps, net_graph_gbps, nvls_efficiency;
    double base[TPS_PROTO_COUNT], hop[TPS_PROTO_COUNT], net[TPS_PROTO_COUNT], rate[TPS_PROTO_COUNT],
        eff[TPS_PROTO_COUNT], slot[TPS_PROTO_COUNT], simple_buffer_kib;
    guint kind, ranks, domains, per_domain, leaves, crosses, channels, max_channels, sms, threads,
        nvls, nvls_channels, algos, protos, ll128_net, ll128_listed, ring_backup, tuning_first,
        tuning_refined, sharp, nics, gpus;
} PlanKey;

#define PLAN_MEMO_SLOTS 64

typedef struct {
    gboolean used, refused;
    PlanKey key;
    TpsCollPlan plan;
} PlanMemo;

static _Thread_local PlanMemo plan_memo[PLAN_MEMO_SLOTS];

static void
plan_key(const TpsHardware *hw, TpsCollKind kind, double bytes, const TpsGroupShape *shape,
         PlanKey *k)
{
    memset(k, 0, sizeof(*k)); /* padding included: keys are compared bytewise */
    k->bytes = bytes;
    k->nic_gbps = shape->nic_gbps;
    k->nvlink_gbps = hw->nvlink_gbps;
    k->nvlink_efficiency = hw->nvlink_efficiency;
    k->duplex = hw->net_duplex_efficiency;
    k->channels_nvlink_gbps = hw->nccl_channels_nvlink_gbps;
    k->channel_mem_gbps = hw->nccl_channel_mem_gbps;
    k->simple_buffer_kib = hw->mem_nccl_buffer_kib[TPS_PROTO_SIMPLE];
    for (guint p = 0; p < TPS_PROTO_COUNT; p++) {
        k->base[p] = hw->nccl_base_latency_us[p];
        k->hop[p] = hw->nccl_hw_latency_us[p];
        k->net[p] = hw->nccl_net_latency_us[p];
        k->rate[p] = hw->nccl_channel_gbps[p];
        k->eff[p] = hw->nccl_proto_efficiency[p];
        k->slot[p] = hw->nccl_slot_bytes[p];
    }
    k->kind = kind;
    k->ranks = shape->ranks;
    k->domains = shape->domains;
    k->per_domain = shape->per_domain;
    k->leaves = shape->leaves;
    k->crosses = shape->crosses;
    k->channels = hw->nccl_channels;
    k->max_channels = hw->nccl_max_channels;
    k->sms = hw->sms;
    k->threads = hw->nccl_threads;
    k->nvls = hw->nccl_nvls;
    k->nvls_channels = hw->nccl_nvls_channels;
    k->nvls_efficiency = hw->nccl_nvls_efficiency;
    k->algos = algo_mask(hw, kind);
    k->protos = proto_mask(hw, kind);
    k->ll128_listed = tps_nccl_covers(hw->nccl_proto, kind);
    k->ring_backup = tps_nccl_ring_backup(hw);
    k->net_graph_gbps = hw->nccl_net_graph_gbps;
    k->ll128_net = hw->nccl_no_ll128_net;
    const TpsNcclTuning *t = tuning_of(hw);
    k->tuning_first = t->first;
    k->tuning_refined = t->refined;
    k->sharp = hw->net_sharp;
    k->nics = hw->nics_per_node;
    k->gpus = hw->gpus_per_node;
}

/* FNV-1a over the key's 64-bit words. */
static guint
plan_key_slot(const PlanKey *k)
{
    G_STATIC_ASSERT(sizeof(PlanKey) % sizeof(guint64) == 0);
    guint64 words[sizeof(PlanKey) / sizeof(guint64)];
    memcpy(words, k, sizeof(words));
    guint64 h = 14695981039346656037ull;
    for (gsize i = 0; i < G_N_ELEMENTS(words); i++)
        h = (h ^ words[i]) * 1099511628211ull;
    return (guint)((h ^ (h >> 32)) % PLAN_MEMO_SLOTS);
}

void
tps_coll_plan_group(const TpsHardware *hw, TpsCollKind kind, double bytes,
                    const TpsGroupShape *shape, TpsCollPlan *plan)
{
    g_return_if_fail(hw != NULL && shape != NULL && plan != NULL && kind < TPS_COLL_COUNT);
    const guint ranks = shape->ranks;

    if (ranks < 2) {
        memset(plan, 0, sizeof(*plan));
        plan->kind = kind;
        plan->protocol = TPS_PROTO_SIMPLE;
        plan->ranks = ranks;
        plan->step_bytes = bytes;
        plan->wire_bytes = bytes;
        plan->rate_cap_gbps = 1.0;
        return;
    }
    if (!(bytes > 0.0))
        bytes = 0.0;

    PlanKey key;
    plan_key(hw, kind, bytes, shape, &key);
    PlanMemo *m = &plan_memo[plan_key_slot(&key)];
    if (m->used && memcmp(&m->key, &key, sizeof(key)) == 0) {
        *plan = m->plan;
    } else {
        m->refused = plan_group(hw, kind, bytes, shape, plan);
        m->used = TRUE;
        m->key = key;
        m->plan = *plan;
    }
    if (m->refused)
        tps_nccl_note_refusal(kind, shape);
}

TpsTime
tps_coll_time_ns(const TpsHardware *hw, const TpsCollPlan *plan)
{
    g_return_val_if_fail(hw != NULL && plan != NULL, 0);
    if (plan->steps == 0)
        return 0;
    return plan->base_ns + (TpsTime)(plan->steps * step_time_ns(plan));
}

double
tps_coll_busbw_gbps(TpsCollKind kind, guint ranks, double bytes, TpsTime time_ns)
{
    g_return_val_if_fail(kind < TPS_COLL_COUNT, 0.0);
    if (time_ns <= 0 || ranks == 0)
        return 0.0;
    double factor =
        kind == TPS_COLL_ALL_REDUCE ? 2.0 * (ranks - 1) / ranks : (double)(ranks - 1) / ranks;
    return bytes / (double)time_ns * factor;
}

/* NCCL's p2p path on NVLink, properties of the NCCL code (2.14-2.19):
 * a send is cut into pieces of at least P2P_MIN_PIECE bytes, aligned to
 * it, one per channel (src/enqueue.cc scheduleP2pTasksToPlan and
 * calcP2pChunkSize: minSize = stepSize / 8, stepSize = p2pChunkSize); a
 * piece of up to P2P_LL_THRESHOLD bytes goes by LL, a larger one by Simple
 * in steps of P2P_NVL_CHUNK bytes (src/init.cc NCCL_P2P_NVL_CHUNKSIZE,
 * src/proxy.cc ncclProxyComputeP2p; src/enqueue.cc NCCL_P2P_LL_THRESHOLD). */
#define P2P_NVL_CHUNK (512.0 * 1024.0)
#define P2P_MIN_PIECE (P2P_NVL_CHUNK / 8.0)
#define P2P_LL_THRESHOLD 16384.0

/* On NVLink between A100s NCCL uses P2P read (src/transport/p2p.cc: read
 * enabled by default on NVLink for compute capability 8.0): the Simple
 * FIFO lives on the sender, whose CTA copies its piece from the user
 * buffer into it, step by step, and posts each step; the receiver pulls
 * the steps over NVLink. So the sender's kernel ends once its piece is in
 * its own FIFO, if the FIFO holds all of it and the receiver has drained
 * it since the last send; only a piece larger than the FIFO makes it wait
 * for the receiver, which then paces the whole send at the link rate. The
 * copy is one user-buffer pass of a CTA (channel_mem_gbps, the rate fitted
 * on the rings' user-buffer traffic), and each step pays the per-step
 * latency of a Simple ring step on NVLink (hw_latency_us.simple). */
TpsTime
tps_p2p_send_ns(const TpsHardware *hw, double bytes)
{
    g_return_val_if_fail(hw != NULL, 0);
    if (!(bytes > 0.0))
        bytes = 0.0;
    const double link = hw->nvlink_gbps * hw->nvlink_efficiency;
    const double simple_us =
        hw->nccl_base_latency_us[TPS_PROTO_SIMPLE] + hw->nccl_hw_latency_us[TPS_PROTO_SIMPLE];
    const double paced_ns = simple_us * 1e3 + bytes / link;
    if (hw->nccl_p2p_channels == 0)
        return tps_time_from_ns(paced_ns);

    double piece = MAX(P2P_MIN_PIECE, ceil(bytes / hw->nccl_p2p_channels));
    piece = ceil(piece / P2P_MIN_PIECE) * P2P_MIN_PIECE;
    piece = MIN(piece, bytes);
    if (piece <= P2P_LL_THRESHOLD)
        return tps_time_from_ns(
            (hw->nccl_base_latency_us[TPS_PROTO_LL] + hw->nccl_hw_latency_us[TPS_PROTO_LL]) * 1e3 +
            piece / hw->nccl_channel_gbps[TPS_PROTO_LL]);
    if (piece > hw->mem_nccl_buffer_kib[TPS_PROTO_SIMPLE] * 1024.0)
        return tps_time_from_ns(paced_ns);
    const double steps = ceil(piece / P2P_NVL_CHUNK);
    /* 0 (a model built in code that leaves it unset): no copy term. */
    const double copy_ns =
        hw->nccl_channel_mem_gbps > 0.0 ? piece / hw->nccl_channel_mem_gbps : 0.0;
    return tps_time_from_ns((hw->nccl_base_latency_us[TPS_PROTO_SIMPLE] +
                             steps * hw->nccl_hw_latency_us[TPS_PROTO_SIMPLE]) *
                                1e3 +
                            copy_ns);
}
