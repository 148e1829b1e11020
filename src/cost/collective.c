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

#include <math.h>
#include <string.h>

const char *const tps_coll_kind_names[] = {"AllGather", "ReduceScatter", "AllReduce", NULL};

/* NCCL's per-protocol thread counts and per-thread byte thresholds for the
 * channel reduction (NVIDIA/nccl src/include/device.h NCCL_LL_MAX_NTHREADS
 * 512, NCCL_LL128_MAX_NTHREADS 640; src/graph/tuning.cc
 * NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD 8, 8, 64, the LL one times the
 * number of ranks for rings). Simple's thread count is hw->nccl_threads.
 * These are properties of the NCCL code, not of the hardware. */
static const guint proto_threads[TPS_PROTO_COUNT] = {512, 640, 0};
static const guint proto_threshold[TPS_PROTO_COUNT] = {8, 8, 64};

static guint
reduced_channels(const TpsHardware *hw, TpsProtocol p, double bytes, guint ranks)
{
    double nc = hw->nccl_channels;
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

static double
step_time_ns(const TpsCollPlan *plan)
{
    TpsTime wire = tps_time_from_ns(plan->wire_bytes / plan->link_gbps);
    TpsTime floor_ns = tps_time_from_ns(plan->step_bytes / plan->rate_cap_gbps);
    return (double)(plan->step_latency_ns + MAX(wire, floor_ns));
}

static void
plan_protocol(const TpsHardware *hw, TpsCollKind kind, TpsProtocol p, double bytes,
              const TpsGroupShape *shape, gboolean reduce_channels, TpsCollPlan *plan)
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
    double ch_link = hw->nccl_channel_gbps[p];
    /* LL128 runs on the same CTAs as Simple, moving 128-byte lines of 120
     * payload bytes: Simple's rate times its payload fraction, as NCCL's
     * tuner has it (NVIDIA/nccl src/graph/tuning.cc: LL128 busBw =
     * min(0.92 x Simple's, nChannels x perChMaxRingLL128Bw), the LL128 key
     * being that cap). Its lower latency, not its rate, is why it is chosen
     * for mid sizes. */
    if (p == TPS_PROTO_LL128)
        ch_link = MIN(ch_link, hw->nccl_channel_gbps[TPS_PROTO_SIMPLE] * eff);
    /* 0 (a model built in code that leaves it unset): no such term. */
    const double mem_ns =
        hw->nccl_channel_mem_gbps > 0.0 ? user_chunks / steps / hw->nccl_channel_mem_gbps : 0.0;
    const double ch_rate = 1.0 / (1.0 / ch_link + mem_ns);

    memset(plan, 0, sizeof(*plan));
    plan->kind = kind;
    plan->protocol = p;
    plan->ranks = ranks;
    plan->crosses_nodes = crosses;
    plan->link_gbps = link;
    plan->steps = steps;
    plan->channels = reduce_channels ? reduced_channels(hw, p, bytes, ranks) : hw->nccl_channels;
    plan->step_bytes = bytes / ranks;
    plan->wire_bytes = plan->step_bytes / eff;
    plan->rate_cap_gbps = plan->channels * ch_rate;
    /* The engine's NIC resources carry nic_gbps in each direction; the
     * duplex share of a ring across nodes reaches it as this floor. */
    if (crosses && hw->net_duplex_efficiency < 1.0)
        plan->rate_cap_gbps = MIN(plan->rate_cap_gbps, link * eff);
    plan->hbm_step_bytes = plan->step_bytes * user_chunks / plan->steps;

    /* Pipeline fill of one hop: the first slot of a channel's share of the
     * step, at the payload rate one channel gets while all of them stream. */
    double share = MIN(ch_rate, link * eff / plan->channels);
    double slot = MIN(plan->step_bytes / plan->channels, hw->nccl_slot_bytes[p]);
    double hop_us = crosses ? hw->nccl_net_latency_us[p] : hw->nccl_hw_latency_us[p];
    plan->base_ns = tps_time_from_us(hw->nccl_base_latency_us[p]);
    plan->step_latency_ns = tps_time_from_ns(hop_us * 1e3 + slot / share);
}

void
tps_coll_plan(const TpsHardware *hw, TpsCollKind kind, double bytes, guint ranks, TpsCollPlan *plan)
{
    g_return_if_fail(hw != NULL && plan != NULL && kind < TPS_COLL_COUNT);
    TpsGroupShape shape;
    tps_topo_contiguous_shape(hw, ranks, &shape);
    tps_coll_plan_group(hw, kind, bytes, &shape, plan);
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

    /* As NCCL: the protocol is chosen by the model with all channels, and
     * only then are channels taken away for small buffers. */
    TpsTime best = TPS_TIME_NEVER;
    TpsProtocol chosen = TPS_PROTO_SIMPLE;
    for (guint p = 0; p < TPS_PROTO_COUNT; p++) {
        TpsCollPlan candidate;
        plan_protocol(hw, kind, (TpsProtocol)p, bytes, shape, FALSE, &candidate);
        TpsTime t = tps_coll_time_ns(hw, &candidate);
        if (t < best) {
            best = t;
            chosen = (TpsProtocol)p;
        }
    }
    plan_protocol(hw, kind, chosen, bytes, shape, TRUE, plan);
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
