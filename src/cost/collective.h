/* Collectives as NCCL runs them on a ring.
 *
 * A collective of `bytes` (the full, gathered or unreduced buffer size per
 * rank) over n ranks runs as steps: n-1 for all-gather and reduce-scatter,
 * 2(n-1) for all-reduce; each step moves bytes/n from every rank to the next
 * one on the ring. The protocol (LL, LL128, Simple) is chosen by size as
 * NCCL's tuner does (the one with the smallest modelled time); each step
 * pays the protocol's per-hop latency; the data rate of a rank is bounded by
 * the link (times the protocol's payload efficiency) and by channels x the
 * per-channel rate; channels are CTAs that occupy SMs while the kernel runs.
 *
 * HBM: every hop stores the data into the receiver's FIFO and reads it
 * back, and the ranks read their user input and write their output, so a
 * ring moves about three times its link rate through each GPU's HBM
 * (NVIDIA/nccl issue #1428, the stated cause of calib
 * overlap-interference gemm_slowdown_beside_nccl). The engine charges the
 * FIFO store and re-read as the two ends of each step's flow (wire bytes);
 * hbm_step_bytes is the rest, the user-buffer traffic spread over the steps.
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "cost/hardware.h"
#include "cost/topology.h"

/* NCCL sets up NVLS only where its node holds more than two of the
 * communicator's GPUs (NVIDIA/nccl src/transport/nvls.cc ncclNvlsInit:
 * gpuCount <= 2 returns without NVLS, 2.18 to 2.28): a pair runs the ring. */
#define TPS_NVLS_MIN_LOCAL_RANKS 3

typedef enum {
    TPS_COLL_ALL_GATHER,
    TPS_COLL_REDUCE_SCATTER,
    TPS_COLL_ALL_REDUCE,
    TPS_COLL_COUNT
} TpsCollKind;

/* "AllGather", "ReduceScatter", "AllReduce"; NULL-terminated. */
extern const char *const tps_coll_kind_names[];

/* NCCL's algorithms (docs/cost-model.md, "Algorithms"): Ring (every kind);
 * Tree (all-reduce: a chain inside each NVLink domain, a binary tree
 * between them); NVLS (NVLink SHARP: the NVSwitches reduce and multicast,
 * one NVLink domain, where nccl.nvls is 1); NVLS_TREE (all-reduce across
 * NVLink domains where nccl.nvls is 1: NVLS inside each domain, a double
 * binary tree between them, NCCL 2.18+); COLLNET_DIRECT and COLLNET_CHAIN
 * (all-reduce across NVLink domains on an IB SHARP fabric, network.sharp
 * 1: the switches reduce). */
typedef enum {
    TPS_ALGO_RING,
    TPS_ALGO_TREE,
    TPS_ALGO_NVLS,
    TPS_ALGO_NVLS_TREE,
    TPS_ALGO_COLLNET_DIRECT,
    TPS_ALGO_COLLNET_CHAIN,
    TPS_ALGO_COUNT
} TpsCollAlgo;

/* "Ring", "Tree", "NVLS", "NVLSTree", "CollNetDirect", "CollNetChain"
 * (NCCL's spelling, as NCCL_ALGO reads them); NULL-terminated. */
extern const char *const tps_coll_algo_names[];

/* A list of names as NCCL_ALGO and NCCL_PROTO take it: names of `names`
 * (case-insensitive) separated by commas, all of them excluded when the
 * list starts with '^' (NVIDIA/nccl src/graph/tuning.cc parseList; one
 * list: tps_nccl_parse_lists() in cost/nccl-env.h reads NCCL 2.24's lists
 * per function). NULL allows all. Sets *mask (bit
 * i: names[i] allowed) and returns TRUE; FALSE for an unknown name (its
 * offset in *bad) or a list that allows nothing (*bad -1). */
gboolean tps_coll_parse_list(const char *value, const char *const *names, guint *mask, int *bad);

/* What bounds the channel count of a ring or tree on this model
 * (tps_coll_channels). */
typedef enum {
    TPS_CHANNELS_FIXED, /* nccl.channels, nccl.channels_nvlink_gbps 0 */
    TPS_CHANNELS_LINK,  /* nccl.channels scaled with node.nvlink_gbps */
    TPS_CHANNELS_MAX,   /* nccl.max_channels */
    TPS_CHANNELS_SMS,   /* gpu.sms */
} TpsChannelCap;

/* The channels of a ring or tree at full size: NCCL's search gives each
 * channel a share of the GPU's NVLink bandwidth and takes as many as cover
 * it (NVIDIA/nccl src/graph/search.cc: it stops once nChannels x bw
 * reaches the GPU's total), so nccl.channels, counted at
 * nccl.channels_nvlink_gbps, scale with node.nvlink_gbps: round(channels x
 * nvlink_gbps / channels_nvlink_gbps), at most nccl.max_channels and
 * gpu.sms. `cap` (may be NULL) says which bound holds. */
guint tps_coll_channels(const TpsHardware *hw, TpsChannelCap *cap);

/* A sentence on the bound of tps_coll_channels for what-if output. */
const char *tps_coll_channel_cap_text(TpsChannelCap cap);

typedef struct {
    TpsCollKind kind;
    TpsCollAlgo algo;
    TpsProtocol protocol;
    guint ranks;
    guint steps;             /* n-1 or 2(n-1) */
    guint channels;          /* CTAs held on each rank */
    double step_bytes;       /* payload moved per rank per step: bytes / n */
    double wire_bytes;       /* bytes on the link per step: step_bytes / proto efficiency */
    double rate_cap_gbps;    /* channels x per-channel rate, in payload bytes/ns */
    double hbm_step_bytes;   /* per rank per step: HBM bytes beyond the two ends of the
                                step's link transfer (user buffers, FIFO re-reads) */
    TpsTime base_ns;         /* once per collective (includes nothing of launch) */
    TpsTime step_latency_ns; /* per step */
    gboolean crosses_nodes;  /* ring leaves the NVLink domain */
    double link_gbps;        /* wire bytes/ns of the ring's slowest hop: NVLink, or the NICs
                                of the group's members in a domain when it crosses */
} TpsCollPlan;

/* Plan a collective of `bytes` over the group of `shape` (its members, the
 * NVLink domains they span and their NICs: cost/topology.h). */
void tps_coll_plan_group(const TpsHardware *hw, TpsCollKind kind, double bytes,
                         const TpsGroupShape *shape, TpsCollPlan *plan);

/* The same over `ranks` consecutive GPUs from rank 0 (a TP group in
 * Megatron's default order, the calibration set's collectives): ranks
 * beyond an NVLink domain of the model cross over its NICs. */
void tps_coll_plan(const TpsHardware *hw, TpsCollKind kind, double bytes, guint ranks,
                   TpsCollPlan *plan);

/* The closed-form time of a lone collective on idle links (no launch cost):
 * base + steps * (step latency + max(wire bytes / link, step bytes / cap)),
 * the link being NVLink, or the node's NICs when the ring crosses nodes.
 * The engine reproduces this (to rounding) when nothing else runs: each
 * step is a flow of wire bytes with a floor of step bytes / cap. */
TpsTime tps_coll_time_ns(const TpsHardware *hw, const TpsCollPlan *plan);

/* The duration of the sending rank's kernel for one send of `bytes` to a
 * peer on the same node (NCCL's p2p path over NVLink), the receiver having
 * drained its FIFO since the previous send. With nccl.p2p_channels > 0 the
 * send is split into pieces of at least 64 KiB over that many channels;
 * pieces up to 16 KiB go by LL; a Simple piece that fits its channel's
 * FIFO (memory.nccl_buffer_kib.simple) is copied into it in 512 KiB steps,
 * each paying hw_latency_us.simple, at channel_mem_gbps, and the kernel
 * ends without waiting for the receiver; otherwise the receiver paces the
 * send at the link rate. With nccl.p2p_channels 0, one Simple hop at the
 * link rate. No launch cost. Calls issued back to back with no host gap
 * keep the FIFO full and are paced by the link instead (docs/cost-model.md,
 * "Collectives"). */
TpsTime tps_p2p_send_ns(const TpsHardware *hw, double bytes);

/* NCCL's bus bandwidth for `bytes` of this kind: bytes / time x factor
 * (2(n-1)/n for all-reduce, (n-1)/n for AG and RS), in GB/s. */
double tps_coll_busbw_gbps(TpsCollKind kind, guint ranks, double bytes, TpsTime time_ns);
