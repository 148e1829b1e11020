/* The graph builder: an engine for the TP group of a scenario, the streams
 * of every rank, and the operations every rank issues in the same order.
 *
 * Every rank runs the same program: operations are added rank by rank in
 * host issue order, so the engine's launch queue sees what a real rank
 * would launch. Collectives are NCCL ring kernels: per rank a container
 * task holding the channels' SMs, and one flow per ring step, each step
 * waiting for the previous step's data from the left neighbour.
 *
 * Folded (tps_builder_init_fold), where the ranks are alike, the engine
 * holds rank 0's tasks alone and the other ranks' ids stand for them; the
 * ops are written for every rank all the same.
 */
#pragma once

#include <glib.h>

#include "cost/alltoall-flex.h"
#include "cost/collective.h"
#include "cost/topology.h"
#include "cost/kernel-cost.h"
#include "engine/engine.h"
#include "sched/placement.h"
#include "sched/scenario.h"
#include "sched/strategy.h"

#define TPS_MAX_RANKS 64

/* One operation on every rank. */
typedef struct {
    TpsTaskId id[TPS_MAX_RANKS];
} TpsOpIds;

/* Builder state: the engine and the streams of each rank. */
typedef struct {
    TpsEngine *engine;
    const TpsScenario *scenario;
    const TpsHardware *hw;
    /* What the FP8 GEMMs run on: hw, or under the mxfp8 recipe a view of it
     * (gemm_view: a shallow copy, owning nothing) whose FP8 peak is
     * gpu.peak_tflops_mxfp8 (tps_fp8_gemm_tflops()). */
    const TpsHardware *gemm_hw;
    TpsHardware gemm_view;
    TpsStrategyId strategy;
    guint ranks;
    TpsStreamId main[TPS_MAX_RANKS]; /* the compute stream */
    TpsStreamId side[TPS_MAX_RANKS]; /* the NCCL side stream (higher priority) */
    /* Userbuffers streams (Transformer Engine): GEMM chunk streams at low
     * priority, the copy-engine send and receive streams and the stream of
     * the SM-based communication kernels at high priority. */
    TpsStreamId gemm[3][TPS_MAX_RANKS];
    TpsStreamId send[TPS_MAX_RANKS];
    TpsStreamId recv[TPS_MAX_RANKS];
    TpsStreamId comm[TPS_MAX_RANKS];
    /* Context parallelism (cp > 1 only): the stream of the CP group's NCCL
     * send/recv (PyTorch's process-group stream, default priority). */
    TpsStreamId cp[TPS_MAX_RANKS];
    /* And the second stream forward attention alternates with the compute
     * stream (Transformer Engine's cp_stream: block i on stream i % 2). */
    TpsStreamId cp_attn[TPS_MAX_RANKS];
    /* A mixture of experts (model.moe): the stream of the expert-parallel
     * all-to-alls when they overlap the shared experts
     * (model.moe.shared_expert_overlap), and rank 0's expert groups on the
     * topology: EP, ETP and the allgather dispatcher's ETP x EP. */
    TpsStreamId moe[TPS_MAX_RANKS];
    TpsGroupShape ep_shape, etp_shape, etp_ep_shape;
    /* The overlap configuration of each GEMM under the strategy. */
    TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT];
    /* Collective volume added, by kind, in bytes per rank (for the analytic
     * volume checks). */
    double coll_bytes[TPS_COLL_COUNT];
    guint coll_count[TPS_COLL_COUNT];
    guint gemm_count; /* GEMM kernels added on rank 0 */
    /* Per-rank slowdown of GEMMs (1.0: nominal), for straggler studies:
     * a rank's GEMM waves take this many times longer. */
    double gemm_slowdown[TPS_MAX_RANKS];
    /* Host issue (docs/cost-model.md, "Host"): inside a library op (between
     * tps_builder_library_begin() and _end()) each task costs one launch
     * call of host time, otherwise the framework op of its class. */
    gboolean library;
    /* Between tps_builder_graph_begin() and _end(): the ranks' programs
     * are captured CUDA graphs. */
    gboolean in_graph;
    /* Per-GEMM breakdown: while `recording`, the rank-0 tasks added for the
     * current `slot` are listed in slot_tasks[slot]. */
    gboolean recording;
    TpsGemmSlot slot;
    GArray *slot_tasks[TPS_GEMM_SLOT_COUNT];
    /* And, per slot, its collective (TPS_COLL_COUNT: none), the unsplit
     * GEMM alone and the blocking NCCL collective alone on idle resources
     * (launch included): the references of the overlap efficiency. */
    TpsCollKind slot_coll[TPS_GEMM_SLOT_COUNT];
    guint64 slot_m[TPS_GEMM_SLOT_COUNT], slot_n[TPS_GEMM_SLOT_COUNT], slot_k[TPS_GEMM_SLOT_COUNT];
    double slot_bytes[TPS_GEMM_SLOT_COUNT]; /* its collective's buffer; 0 without one */
    TpsTime slot_gemm_alone[TPS_GEMM_SLOT_COUNT];
    TpsTime slot_comm_alone[TPS_GEMM_SLOT_COUNT];
    TpsGroupShape tp_shape; /* the TP group on the topology: what its collectives cross */
    TpsCpSets cp_sets;      /* cp > 1: the machine's stand-ins for the CP peers */
    TpsEpSets ep_sets;      /* the EP all-to-all's stand-ins (near and far 0: none) */
    /* Folded (tps_builder_init_fold): the engine simulates rank 0 alone,
     * standing for the group's identical ranks. Rank 0's tasks in the
     * order added (fold_ids); another rank's k-th task is added as a
     * stand-in id (TPS_BUILDER_FOLD_BIT | k) that names rank 0's k-th
     * (tps_builder_task()); fold_next counts each rank's tasks. */
    gboolean folded;
    GArray *fold_ids;
    guint fold_next[TPS_MAX_RANKS];
    TpsTaskId fold_edge[2]; /* the last dependency added (successor, predecessor) */
    guint fold_edge_kind;
} TpsBuilder;

/* A stand-in task id of a folded build (never a real id: those stay far
 * below). */
#define TPS_BUILDER_FOLD_BIT 0x80000000u

/* The ranks the engine simulates: 1 when folded, else b->ranks. Host
 * items and stream waits are issued on these only. */
static inline guint
tps_builder_sim_ranks(const TpsBuilder *b)
{
    return b->folded ? 1 : b->ranks;
}

/* The engine's task an id of the builder stands for: itself, or in a
 * folded build for another rank's task, rank 0's counterpart. */
TpsTaskId tps_builder_task(const TpsBuilder *b, TpsTaskId id);

/* The machine of the layer's slice of `scenario` (ranks = tp: rank 0's TP
 * group), placed on the topology into `place` (tp entries), which the
 * machine points to. */
void tps_builder_machine(const TpsScenario *scenario, TpsPlace *place, TpsMachine *machine);

/* Create the engine and the streams. Free with tps_builder_clear(). */
void tps_builder_init(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy);
/* The same on a machine with one hardware queue per GPU
 * (CUDA_DEVICE_MAX_CONNECTIONS=1, what Megatron and Transformer Engine
 * require, and tps_builder_init's) or not (PyTorch's async TP and plain
 * CUDA programs run with the default of several queues). */
void tps_builder_init_queues(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy,
                             gboolean single_hw_queue);
void tps_builder_clear(TpsBuilder *b);

/* Whether every rank of the layer's machine for `scenario` is the same:
 * only the TP group (no CP or EP stand-ins, no expert layers), every rank
 * in one NVLink domain. Then every rank runs the same work on the same
 * kind of links at the same times, and rank 0 alone stands for them all
 * (docs/step-model.md, "One rank for the TP group's identical ranks"). */
gboolean tps_builder_can_fold(const TpsScenario *scenario);

/* tps_builder_init, folded where tps_builder_can_fold(): the engine holds
 * rank 0 only; the builder's functions take and give every rank's ids as
 * before, another rank's being stand-ins for rank 0's (tps_builder_task),
 * and a flow to another rank goes to rank 0 as to an identical peer
 * (TpsMachine.folded). Only rank 0's spans exist: for the step time's
 * pieces, not for records, timelines or traces, which draw every rank. */
void tps_builder_init_fold(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy);

/* Dependencies between the builder's tasks (tps_engine_after,
 * _after_start, _end_after); in a folded build, another rank's are
 * rank 0's own again and are not added twice. */
void tps_builder_after(TpsBuilder *b, TpsTaskId succ, TpsTaskId pred);
void tps_builder_after_start(TpsBuilder *b, TpsTaskId succ, TpsTaskId pred);
void tps_builder_end_after(TpsBuilder *b, TpsTaskId succ, TpsTaskId pred);

/* Markers: a zero-work task on each rank's main stream; after it ends every
 * op added before it on main has ended. */
void tps_builder_mark(TpsBuilder *b, const char *name, TpsOpIds *out);

/* An NCCL ring collective of `bytes` (the full buffer of each rank) on
 * each rank's `streams[r]`; `out` (may be NULL) receives the kernels.
 * An all-gather that NCCL runs by copy engines (nccl.ce_collectives:
 * tps_ce_coll_applies) is tps_builder_ce_all_gather() instead. */
void tps_builder_collective(TpsBuilder *b, const TpsStreamId *streams, TpsCollKind kind,
                            double bytes, const char *name, TpsOpIds *out);

/* NCCL's copy-engine all-gather of `bytes` over the TP group
 * (cost/collective-ce.h, builder-ce.c): per rank on `streams[r]` a
 * synchronisation, the copies (a batch, or one after the other inside a
 * captured graph), a synchronisation; no SMs. `out` (may be NULL)
 * receives each rank's last task. */
void tps_builder_ce_all_gather(TpsBuilder *b, const TpsStreamId *streams, double bytes,
                               const char *name, TpsOpIds *out);

/* Note the references of `slot` (when recording): its GEMM [m,k]x[k,n]
 * and its collective of `bytes` (kind TPS_COLL_COUNT: none). */
void tps_builder_note_slot(TpsBuilder *b, TpsGemmSlot slot, guint64 m, guint64 n, guint64 k,
                           TpsCollKind kind, double bytes);

/* Add one task (recording it for the breakdown when it belongs to the
 * current slot on rank 0). A launched task whose spec gives no host_ns
 * gets its class's: inside a library op one launch call, else the
 * framework op of its kind (GEMM and attention kernels: a GEMM op; NCCL
 * kernels: an NCCL call; copies: a copy op; others: an elementwise op). */
TpsTaskId tps_builder_add(TpsBuilder *b, const TpsTaskSpec *spec);

/* The expert-parallel all-to-all on every rank (model.moe, ep > 1): one
 * NCCL send/recv kernel on `streams[r]` (nccl.p2p_channels CTAs) whose
 * `bytes` (what the rank sends in all, its own piece included) go in
 * pieces of bytes / ep: near_count of them to its near stand-in over
 * NVLink, far_count to its far one over the NIC pool (TpsEpSets), side by
 * side, each flow starting after the group's latency
 * (tps_alltoall_latency_ns) and moving its bytes and the symmetric
 * receive through the rank's HBM (the own piece's copy with the NVLink
 * flow). Alone, it takes tps_alltoall_ns(); beside other traffic it
 * shares the links. */
void tps_builder_ep_a2a(TpsBuilder *b, const TpsStreamId *streams, double bytes, const char *name,
                        TpsOpIds *out);
/* DeepEP's dispatch or combine (model.moe.dispatcher flex) on every rank:
 * one kernel of plan->sms CTAs on `streams[r]` whose NVLink bytes go to
 * the near stand-in and NIC bytes to the far one, side by side, after the
 * group's latency (cost/alltoall-flex.h), each moving its bytes and the
 * symmetric receive through the rank's HBM. Alone, it takes
 * tps_flex_ns(). */
void tps_builder_ep_flex(TpsBuilder *b, const TpsStreamId *streams, const TpsFlexPlan *plan,
                         const char *name, TpsOpIds *out);
/* The same, a launched task's host_ns taken as given (0: its issue costs
 * no host time: an item the host pushed in the call before it). */
TpsTaskId tps_builder_add_as_is(TpsBuilder *b, const TpsTaskSpec *spec);

/* One library op on every rank: the framework's time for the call (a GEMM
 * op's, less the one launch it includes), then every task until
 * tps_builder_library_end() is launched from inside it (one launch call
 * of host time each): Transformer Engine's userbuffers GEMMs, which issue
 * their chunks, copies and communication kernels from C++. */
void tps_builder_library_begin(TpsBuilder *b);
void tps_builder_library_end(TpsBuilder *b);

/* A captured CUDA graph on every rank (training.cuda_graphs): one graph
 * launch of host time, then nothing per task until tps_builder_graph_end(). */
void tps_builder_graph_begin(TpsBuilder *b);
void tps_builder_graph_end(TpsBuilder *b);

/* Every rank's host thread blocks until `on->id[r]` has ended (an .item()
 * read of its result: then a copy op's host time). */
void tps_builder_host_sync(TpsBuilder *b, const TpsOpIds *on);

/* A kernel with `cost` on each rank's `streams[r]` (host-launched). */
void tps_builder_kernel(TpsBuilder *b, const TpsStreamId *streams, TpsTaskKind kind,
                        const char *name, const TpsKernelCost *cost, TpsOpIds *out);

/* A GEMM [m,k]x[k,n] on at most `max_sms` SMs (0: all). */
void tps_builder_gemm(TpsBuilder *b, const TpsStreamId *streams, const char *name, guint64 m,
                      guint64 n, guint64 k, guint max_sms, TpsOpIds *out);

/* The same in `dtype` rather than the scenario's (the output layer, which
 * is not a Transformer Engine module and stays bf16 under fp8). */
void tps_builder_gemm_dtype(TpsBuilder *b, const TpsStreamId *streams, const char *name,
                            TpsDtype dtype, guint64 m, guint64 n, guint64 k, guint max_sms,
                            TpsOpIds *out);

/* `count` GEMMs in one kernel on the main stream (attention, in
 * tps_dtype_compute() of the scenario's dtype). */
void tps_builder_batched_gemm(TpsBuilder *b, const char *name, guint64 count, guint64 m, guint64 n,
                              guint64 k);

/* A memory-bound kernel moving `bytes` through HBM. */
void tps_builder_memory(TpsBuilder *b, const TpsStreamId *streams, const char *name, double bytes,
                        TpsOpIds *out);

/* Context parallelism's ring step on every rank: one NCCL send/recv
 * kernel on its CP stream (nccl.p2p_channels CTAs) sending `bytes` to its
 * ring neighbour and receiving as many from the other (the machine's
 * ranks tp.. stand for the neighbour: sched/placement.h); `out` (may be
 * NULL) receives the kernels, which end when the transfer has. */
void tps_builder_cp_sendrecv(TpsBuilder *b, double bytes, const char *name, TpsOpIds *out);

/* An NCCL ring all-gather (or reduce-scatter) over the CP group on every
 * rank's CP stream: one kernel (nccl.channels CTAs, one NCCL call of host
 * time) whose `steps` transfers of `bytes` each to the ring neighbour run
 * one after the other. */
void tps_builder_cp_ring(TpsBuilder *b, double bytes, guint steps, const char *name,
                         TpsOpIds *out);

/* An NCCL all-to-all over the a2a group (cp_comm a2a, a2a+p2p) on every
 * rank's CP stream: one kernel (nccl.p2p_channels CTAs, one NCCL call of
 * host time), as NCCL runs it, a grouped send and receive of `piece`
 * bytes with every other member; the pieces to the members in the
 * sender's NVLink domain go as one transfer over NVLink, those to the
 * others as one over the NICs, at the same time (TpsCpSets' near and far
 * stand-ins), each after NCCL's latency on its path. */
void tps_builder_cp_a2a(TpsBuilder *b, double piece, const char *name, TpsOpIds *out);

/* Each rank's `streams[r]` waits for `on->id[r]` (cudaStreamWaitEvent). */
void tps_builder_wait(TpsBuilder *b, const TpsStreamId *streams, const TpsOpIds *on);

/* The last op on each rank's `streams[r]` (cudaEventRecord). */
void tps_builder_record(TpsBuilder *b, const TpsStreamId *streams, TpsOpIds *out);
