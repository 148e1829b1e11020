/* The graph builder: the streams of every rank and the operations that
 * every rank issues in the same order (kernels, GEMMs, memory-bound
 * kernels, NCCL ring collectives, stream waits). */
#include "sched/builder.h"

#include <string.h>

#include "cost/alltoall.h"
#include "cost/collective-ce.h"
#include "cost/kernel-cost.h"
#include "sched/fp8-recipe.h"
#include "sched/placement.h"

void
tps_builder_machine(const TpsScenario *scenario, TpsPlace *place, TpsMachine *machine)
{
    const TpsHardware *hw = &scenario->hardware;
    tps_place_layer(scenario, place);
    *machine = (TpsMachine){
        .ranks = tps_place_layer_ranks(scenario),
        .gpus_per_node = hw->gpus_per_node,
        .place = place,
        .sms = hw->sms,
        .hbm_gbps = tps_cost_hbm_gbps(hw),
        .nvlink_gbps = hw->nvlink_gbps * hw->nvlink_efficiency,
        .nic_gbps = hw->nic_gbps * hw->nics_per_node,
        .copy_engines = hw->copy_engines,
        /* Every launched task states its host time (tps_builder_add). */
        .launch_ns = 0,
        /* The event calls of a stream wait (docs/cost-model.md, "Host"). */
        .stream_wait_ns = tps_time_from_us(hw->host_event_record_us + hw->host_stream_wait_us),
        /* Megatron's SP path needs CUDA_DEVICE_MAX_CONNECTIONS=1 so that a
         * collective is queued before the GEMM launched after it
         * (real-schedules.md section 1). */
        .single_hw_queue = TRUE,
        /* For --breakdown's notes on serialised communication. */
        .record_waits = TRUE,
    };
}

static void init_builder(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy,
                         gboolean single_hw_queue, gboolean fold);

void
tps_builder_init(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy)
{
    tps_builder_init_queues(b, scenario, strategy, TRUE);
}

gboolean
tps_builder_can_fold(const TpsScenario *scenario)
{
    TpsPlace place[TPS_MAX_RANKS];
    TpsGroupShape tp;
    if (scenario->tp < 2 || scenario->cp > 1 || tps_scenario_is_moe(scenario) ||
        tps_place_layer_ranks(scenario) != scenario->tp)
        return FALSE;
    tps_place_group_shape(scenario, TPS_DIM_BIT(TPS_DIM_TP), &tp);
    if (tp.crosses)
        return FALSE;
    tps_place_layer(scenario, place);
    for (guint r = 1; r < scenario->tp; r++)
        if (place[r].domain != place[0].domain)
            return FALSE;
    return TRUE;
}

void
tps_builder_init_fold(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy)
{
    init_builder(b, scenario, strategy, TRUE, tps_builder_can_fold(scenario));
}

void
tps_builder_init_queues(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy,
                        gboolean single_hw_queue)
{
    init_builder(b, scenario, strategy, single_hw_queue, FALSE);
}

/* Every rank's streams (folded: rank 0's, which the others' name). */
static void
add_streams(TpsBuilder *b, const TpsScenario *scenario)
{
    /* Stream priorities as the real systems create them: NCCL's and the
     * userbuffers communication streams high, TE's GEMM streams low. */
    static const char *const gemm_names[3] = {"gemm0", "gemm1", "gemm2"};
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++) {
        b->main[r] = tps_engine_add_stream(b->engine, r, 0, "main");
        b->side[r] = tps_engine_add_stream(b->engine, r, 1, "nccl");
        for (guint j = 0; j < 3; j++)
            b->gemm[j][r] = tps_engine_add_stream(b->engine, r, -1, gemm_names[j]);
        b->send[r] = tps_engine_add_stream(b->engine, r, 1, "ub_send");
        b->recv[r] = tps_engine_add_stream(b->engine, r, 1, "ub_recv");
        b->comm[r] = tps_engine_add_stream(b->engine, r, 1, "ub_comm");
        b->cp[r] =
            scenario->cp > 1 ? tps_engine_add_stream(b->engine, r, 0, "cp") : TPS_STREAM_NONE;
        b->cp_attn[r] =
            scenario->cp > 1 ? tps_engine_add_stream(b->engine, r, 0, "cp_attn") : TPS_STREAM_NONE;
        b->moe[r] = scenario->moe.shared_expert_overlap || scenario->moe.overlap_ep_comm
                        ? tps_engine_add_stream(b->engine, r, 0, "moe_a2a")
                        : TPS_STREAM_NONE;
    }
    for (guint r = tps_builder_sim_ranks(b); r < b->ranks; r++) {
        b->main[r] = b->main[0];
        b->side[r] = b->side[0];
        for (guint j = 0; j < 3; j++)
            b->gemm[j][r] = b->gemm[j][0];
        b->send[r] = b->send[0];
        b->recv[r] = b->recv[0];
        b->comm[r] = b->comm[0];
        b->cp[r] = b->cp[0];
        b->cp_attn[r] = b->cp_attn[0];
        b->moe[r] = b->moe[0];
    }
}

static void
init_builder(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy,
             gboolean single_hw_queue, gboolean fold)
{
    TpsMachine machine;
    TpsPlace place[TPS_MAX_RANKS];

    memset(b, 0, sizeof(*b));
    g_assert(scenario->tp >= 1 && tps_place_layer_ranks(scenario) <= TPS_MAX_RANKS);
    tps_builder_machine(scenario, place, &machine);
    machine.single_hw_queue = single_hw_queue;
    if (fold) {
        machine.ranks = 1;
        machine.folded = TRUE;
        b->folded = TRUE;
        b->fold_ids = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
        b->fold_edge[0] = TPS_TASK_NONE;
    }
    b->engine = tps_engine_new(&machine);
    b->scenario = scenario;
    b->hw = &scenario->hardware;
    b->gemm_hw = b->hw;
    if (scenario->dtype == TPS_DTYPE_FP8 &&
        tps_fp8_gemm_tflops(scenario->fp8_recipe, b->hw) != b->hw->peak_tflops[TPS_DTYPE_FP8]) {
        b->gemm_view = *b->hw;
        b->gemm_view.peak_tflops[TPS_DTYPE_FP8] = tps_fp8_gemm_tflops(scenario->fp8_recipe, b->hw);
        b->gemm_hw = &b->gemm_view;
    }
    b->strategy = strategy;
    b->ranks = scenario->tp;
    tps_place_group_shape(scenario, TPS_DIM_BIT(TPS_DIM_TP), &b->tp_shape);
    if (scenario->cp > 1)
        tps_place_cp_sets(scenario, &b->cp_sets);
    tps_place_ep_sets(scenario, &b->ep_sets);
    b->slot = TPS_GEMM_SLOT_COUNT;
    tps_strategy_overlap(tps_strategy_by_id(strategy), scenario, b->overlap);
    add_streams(b, scenario);
    if (tps_scenario_is_moe(scenario)) {
        tps_place_expert_group_shape(scenario, TPS_DIM_BIT(TPS_DIM_EP), &b->ep_shape);
        tps_place_expert_group_shape(scenario, TPS_DIM_BIT(TPS_DIM_TP), &b->etp_shape);
        tps_place_expert_group_shape(scenario, TPS_DIM_BIT(TPS_DIM_TP) | TPS_DIM_BIT(TPS_DIM_EP),
                                     &b->etp_ep_shape);
    }
    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
        b->slot_tasks[i] = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
    for (guint r = 0; r < TPS_MAX_RANKS; r++)
        b->gemm_slowdown[r] = 1.0;
    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
        b->slot_coll[i] = TPS_COLL_COUNT;
}

void
tps_builder_note_slot(TpsBuilder *b, TpsGemmSlot slot, guint64 m, guint64 n, guint64 k,
                      TpsCollKind kind, double bytes)
{
    TpsKernelCost cost;
    if (!b->recording)
        return;
    const TpsTime launch = tps_cost_launch_ns(b->hw);
    tps_cost_gemm(b->gemm_hw, b->scenario->dtype, m, n, k, 0, &cost);
    b->slot_gemm_alone[slot] = launch + tps_kernel_cost_solo_ns(b->hw, &cost, b->hw->sms);
    b->slot_coll[slot] = b->ranks > 1 ? kind : TPS_COLL_COUNT;
    b->slot_m[slot] = m;
    b->slot_n[slot] = n;
    b->slot_k[slot] = k;
    b->slot_bytes[slot] = b->slot_coll[slot] != TPS_COLL_COUNT ? bytes : 0;
    b->slot_comm_alone[slot] = 0;
    if (b->slot_coll[slot] != TPS_COLL_COUNT)
        b->slot_comm_alone[slot] = tps_coll_group_ns(b->hw, kind, bytes, &b->tp_shape);
}

void
tps_builder_clear(TpsBuilder *b)
{
    g_clear_pointer(&b->engine, tps_engine_free);
    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
        g_clear_pointer(&b->slot_tasks[i], g_array_unref);
    g_clear_pointer(&b->fold_ids, g_array_unref);
}

/* The host time of issuing a launched task of this kind (tps_builder_add). */
static TpsTime
host_ns(const TpsBuilder *b, TpsTaskKind kind)
{
    const TpsHardware *hw = b->hw;
    double us;
    if (b->library) {
        us = hw->host_launch_us;
    } else {
        switch (kind) {
        case TPS_KIND_GEMM:
        case TPS_KIND_ATTENTION:
            us = hw->host_gemm_us;
            break;
        case TPS_KIND_COMM:
            us = hw->host_nccl_us;
            break;
        case TPS_KIND_COPY:
            us = hw->host_memcpy_us;
            break;
        default:
            us = hw->host_elementwise_us;
            break;
        }
    }
    return tps_time_from_us(us);
}

TpsTaskId
tps_builder_task(const TpsBuilder *b, TpsTaskId id)
{
    if (!b->folded || id == TPS_TASK_NONE || !(id & TPS_BUILDER_FOLD_BIT))
        return id;
    const guint k = id & ~TPS_BUILDER_FOLD_BIT;
    g_assert(k < b->fold_ids->len);
    return g_array_index(b->fold_ids, TpsTaskId, k);
}

/* A folded build's task: another rank's k-th is rank 0's k-th (a stand-in
 * id); rank 0's is added with its container named by the engine's id and
 * its flows' receiver (an identical peer) rank 0 itself. */
static TpsTaskId
add_folded(TpsBuilder *b, const TpsTaskSpec *spec)
{
    if (spec->rank != 0)
        return TPS_BUILDER_FOLD_BIT | b->fold_next[spec->rank]++;
    TpsTaskSpec mine = *spec;
    mine.parent = tps_builder_task(b, spec->parent);
    mine.dst_rank = 0;
    const TpsTaskId id = tps_engine_add(b->engine, &mine);
    g_array_append_val(b->fold_ids, id);
    b->fold_next[0]++;
    return id;
}

/* The task added to the engine (folded: rank 0's, another rank's a
 * stand-in), and listed for the breakdown when it belongs to the current
 * slot on rank 0. */
static inline TpsTaskId
add_recorded(TpsBuilder *b, const TpsTaskSpec *spec)
{
    TpsTaskId id = G_UNLIKELY(b->folded) ? add_folded(b, spec) : tps_engine_add(b->engine, spec);
    if (b->recording && b->slot < TPS_GEMM_SLOT_COUNT && spec->rank == 0)
        g_array_append_val(b->slot_tasks[b->slot], id);
    return id;
}

TpsTaskId
tps_builder_add(TpsBuilder *b, const TpsTaskSpec *spec)
{
    TpsTaskSpec with_host;
    if (spec->launch && spec->host_ns == 0) {
        with_host = *spec;
        with_host.host_ns = host_ns(b, spec->kind);
        spec = &with_host;
    }
    return add_recorded(b, spec);
}

TpsTaskId
tps_builder_add_as_is(TpsBuilder *b, const TpsTaskSpec *spec)
{
    return add_recorded(b, spec);
}

/* Whether a dependency is one a folded build has already: another rank's
 * (its successor a stand-in), or the one just added again (a rank's
 * several peers all being rank 0). */
static gboolean
fold_dependency(TpsBuilder *b, TpsTaskId succ, TpsTaskId *pred, guint kind)
{
    if (!b->folded)
        return FALSE;
    if (succ & TPS_BUILDER_FOLD_BIT)
        return TRUE;
    *pred = tps_builder_task(b, *pred);
    if (b->fold_edge[0] == succ && b->fold_edge[1] == *pred && b->fold_edge_kind == kind)
        return TRUE;
    b->fold_edge[0] = succ;
    b->fold_edge[1] = *pred;
    b->fold_edge_kind = kind;
    return FALSE;
}

void
tps_builder_after(TpsBuilder *b, TpsTaskId succ, TpsTaskId pred)
{
    if (!fold_dependency(b, succ, &pred, TPS_EDGE_END))
        tps_engine_after(b->engine, succ, pred);
}

void
tps_builder_after_start(TpsBuilder *b, TpsTaskId succ, TpsTaskId pred)
{
    if (!fold_dependency(b, succ, &pred, TPS_EDGE_START))
        tps_engine_after_start(b->engine, succ, pred);
}

void
tps_builder_end_after(TpsBuilder *b, TpsTaskId succ, TpsTaskId pred)
{
    if (!fold_dependency(b, succ, &pred, TPS_EDGE_HOLD))
        tps_engine_end_after(b->engine, succ, pred);
}

void
tps_builder_kernel(TpsBuilder *b, const TpsStreamId *streams, TpsTaskKind kind, const char *name,
                   const TpsKernelCost *cost, TpsOpIds *out)
{
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = kind,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .ctas = cost->ctas,
            .max_sms = cost->max_sms,
            .wave_ns = kind == TPS_KIND_GEMM && b->gemm_slowdown[r] != 1.0
                           ? tps_time_from_ns((double)cost->wave_ns * b->gemm_slowdown[r])
                           : cost->wave_ns,
            .fixed_ns = cost->fixed_ns,
            .floor_ns = cost->floor_ns,
            .hbm_bytes = cost->hbm_bytes,
            .flops = cost->flops,
            .bytes = cost->hbm_bytes,
        };
        TpsTaskId id = tps_builder_add(b, &spec);
        if (out)
            out->id[r] = id;
    }
}

void
tps_builder_gemm(TpsBuilder *b, const TpsStreamId *streams, const char *name, guint64 m, guint64 n,
                 guint64 k, guint max_sms, TpsOpIds *out)
{
    tps_builder_gemm_dtype(b, streams, name, b->scenario->dtype, m, n, k, max_sms, out);
}

void
tps_builder_gemm_dtype(TpsBuilder *b, const TpsStreamId *streams, const char *name, TpsDtype dtype,
                       guint64 m, guint64 n, guint64 k, guint max_sms, TpsOpIds *out)
{
    TpsKernelCost cost;
    tps_cost_gemm(b->gemm_hw, dtype, m, n, k, max_sms, &cost);
    tps_builder_kernel(b, streams, TPS_KIND_GEMM, name, &cost, out);
    b->gemm_count++;
}

void
tps_builder_batched_gemm(TpsBuilder *b, const char *name, guint64 count, guint64 m, guint64 n,
                         guint64 k)
{
    TpsKernelCost cost;
    tps_cost_batched_gemm(b->hw, tps_dtype_compute(b->scenario->dtype), count, m, n, k, 0, &cost);
    tps_builder_kernel(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
}

void
tps_builder_memory(TpsBuilder *b, const TpsStreamId *streams, const char *name, double bytes,
                   TpsOpIds *out)
{
    TpsKernelCost cost;
    tps_cost_memory(b->hw, bytes, &cost);
    tps_builder_kernel(b, streams, TPS_KIND_MEMORY, name, &cost, out);
}

/* An NCCL ring collective: per rank a container holding the channels' SMs
 * and one flow per ring step. */
void
tps_builder_collective(TpsBuilder *b, const TpsStreamId *streams, TpsCollKind kind, double bytes,
                       const char *name, TpsOpIds *out)
{
    const guint n = b->ranks;
    TpsCollPlan plan;
    TpsOpIds containers;
    g_autofree TpsTaskId *flows = NULL;

    if (n < 2)
        return;
    if (tps_ce_coll_applies(b->hw, kind, &b->tp_shape)) {
        tps_builder_ce_all_gather(b, streams, bytes, name, out);
        return;
    }
    tps_coll_plan_group(b->hw, kind, bytes, &b->tp_shape, &plan);
    b->coll_bytes[kind] += bytes;
    b->coll_count[kind]++;

    for (guint r = 0; r < n; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COMM,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .container = TRUE,
            .ctas = plan.channels,
            .bytes = plan.step_bytes * plan.steps,
        };
        containers.id[r] = tps_builder_add(b, &spec);
    }

    /* Step s of rank r sends to r+1 the chunk it received at step s-1 from
     * r-1 (all-gather: forwards it; reduce-scatter: adds its own part
     * first). The receiver must be inside its kernel too. */
    g_autofree char *flow_name = g_strdup_printf("%s.step", name);
    TpsTime floor_ns = tps_time_from_ns(plan.step_bytes / plan.rate_cap_gbps);
    flows = g_new(TpsTaskId, (gsize)n * plan.steps);
    for (guint s = 0; s < plan.steps; s++) {
        for (guint r = 0; r < n; r++) {
            guint dst = (r + 1) % n;
            TpsTaskSpec spec = {
                .kind = TPS_KIND_FLOW,
                .name = flow_name,
                .rank = r,
                .stream = TPS_STREAM_NONE,
                .parent = containers.id[r],
                .fixed_ns = plan.step_latency_ns + (s == 0 ? plan.base_ns : 0),
                .floor_ns = floor_ns,
                /* The FIFO store and re-read are the flow's two ends; the
                 * user-buffer reads and writes of the step come on top. */
                .hbm_bytes = plan.hbm_step_bytes,
                .dst_rank = dst,
                .link_bytes = plan.wire_bytes,
                .bytes = plan.step_bytes,
            };
            TpsTaskId id = tps_builder_add(b, &spec);
            flows[s * n + r] = id;
            if (s == 0) {
                tps_builder_after_start(b, id, containers.id[dst]);
            } else {
                tps_builder_after(b, id, flows[(s - 1) * n + r]);
                tps_builder_after(b, id, flows[(s - 1) * n + (r + n - 1) % n]);
            }
        }
    }
    if (out)
        *out = containers;
}

/* The latency of a transfer from slice rank `r` to machine rank `to`: NCCL's
 * Simple latency, and the network's when `to` is in another NVLink
 * domain. */
static TpsTime
cp_latency_ns(const TpsBuilder *b, guint r, guint to)
{
    const TpsHardware *hw = b->hw;
    const TpsMachine *m = tps_engine_machine(b->engine);
    const gboolean near = tps_machine_domain(m, r) == tps_machine_domain(m, to);
    return tps_time_from_us(hw->nccl_base_latency_us[TPS_PROTO_SIMPLE] +
                            (near ? hw->nccl_hw_latency_us[TPS_PROTO_SIMPLE]
                                  : hw->network_latency_us));
}

/* One communication kernel of `ctas` CTAs and `bytes` on `stream` of
 * slice rank r, a container of its transfers. */
static TpsTaskId
stream_kernel(TpsBuilder *b, TpsStreamId stream, guint r, guint ctas, double bytes,
              const char *name)
{
    TpsTaskSpec kernel = {
        .kind = TPS_KIND_COMM,
        .name = name,
        .rank = r,
        .stream = stream,
        .parent = TPS_TASK_NONE,
        .launch = TRUE,
        .container = TRUE,
        .ctas = ctas,
        .bytes = bytes,
    };
    return tps_builder_add(b, &kernel);
}

/* One kernel of `ctas` CTAs and `bytes` on slice rank r's CP stream. */
static TpsTaskId
cp_stream_kernel(TpsBuilder *b, guint r, guint ctas, double bytes, const char *name)
{
    return stream_kernel(b, b->cp[r], r, ctas, bytes, name);
}

/* One transfer of `bytes` of `kernel`, from slice rank r to rank `to` (a
 * stand-in of a peer), after `latency`, paced by the link (a block is
 * larger than a channel's FIFO, cost/collective.h tps_p2p_send_ns), with
 * `hbm` more bytes through r's HBM. */
static TpsTaskId
transfer_flow(TpsBuilder *b, TpsTaskId kernel, guint r, guint to, double bytes, TpsTime latency,
              double hbm, const char *name)
{
    TpsTaskSpec flow = {
        .kind = TPS_KIND_FLOW,
        .name = name,
        .rank = r,
        .stream = TPS_STREAM_NONE,
        .parent = kernel,
        .fixed_ns = latency,
        .hbm_bytes = hbm,
        .dst_rank = to,
        .link_bytes = bytes,
        .bytes = bytes,
    };
    return tps_builder_add(b, &flow);
}

/* One transfer of a CP kernel to a stand-in of a CP peer. */
static TpsTaskId
cp_flow(TpsBuilder *b, TpsTaskId kernel, guint r, guint to, double bytes, const char *name)
{
    return transfer_flow(b, kernel, r, to, bytes, cp_latency_ns(b, r, to), 0.0, name);
}

/* One kernel of `ctas` CTAs on slice rank r's CP stream with `steps`
 * transfers of `bytes` to its neighbour (ranks tp.. stand for it), in
 * sequence; returns the kernel. */
static TpsTaskId
cp_kernel(TpsBuilder *b, guint r, guint ctas, double bytes, guint steps, const char *name,
          const char *flow_name)
{
    const TpsTaskId id = cp_stream_kernel(b, r, ctas, bytes * steps, name);
    TpsTaskId prev = TPS_TASK_NONE;
    for (guint s = 0; s < steps; s++) {
        const TpsTaskId f = cp_flow(b, id, r, b->cp_sets.ring + r, bytes, flow_name);
        if (prev != TPS_TASK_NONE)
            tps_builder_after(b, f, prev);
        prev = f;
    }
    return id;
}

void
tps_builder_cp_sendrecv(TpsBuilder *b, double bytes, const char *name, TpsOpIds *out)
{
    g_return_if_fail(b->scenario->cp > 1);
    g_autofree char *flow_name = g_strdup_printf("%s.flow", name);
    for (guint r = 0; r < b->ranks; r++) {
        const TpsTaskId id =
            cp_kernel(b, r, MAX(b->hw->nccl_p2p_channels, 1u), bytes, 1, name, flow_name);
        if (out)
            out->id[r] = id;
    }
}

void
tps_builder_cp_ring(TpsBuilder *b, double bytes, guint steps, const char *name, TpsOpIds *out)
{
    g_return_if_fail(b->scenario->cp > 1 && steps >= 1);
    g_autofree char *flow_name = g_strdup_printf("%s.step", name);
    for (guint r = 0; r < b->ranks; r++) {
        const TpsTaskId id =
            cp_kernel(b, r, MAX(b->hw->nccl_channels, 1u), bytes, steps, name, flow_name);
        if (out)
            out->id[r] = id;
    }
}

/* One transfer of slice rank r's all-to-all, to a stand-in of `set`. */
static void
a2a_flow(TpsBuilder *b, TpsTaskId kernel, guint r, guint set, double bytes, const char *name)
{
    if (bytes > 0.0)
        cp_flow(b, kernel, r, set + r, bytes, name);
}

void
tps_builder_cp_a2a(TpsBuilder *b, double piece, const char *name, TpsOpIds *out)
{
    g_return_if_fail(b->scenario->cp > 1 && tps_cp_a2a_size(b->scenario) > 1);
    g_autofree char *near_name = g_strdup_printf("%s.nvlink", name);
    g_autofree char *far_name = g_strdup_printf("%s.net", name);
    const TpsCpSets *sets = &b->cp_sets;
    for (guint r = 0; r < b->ranks; r++) {
        const TpsCpA2aPeers *p = &sets->peers[r];
        const double near = piece * p->near_count, far = piece * p->far_count;
        const TpsTaskId id =
            cp_stream_kernel(b, r, MAX(b->hw->nccl_p2p_channels, 1u), near + far, name);
        a2a_flow(b, id, r, sets->near, near, near_name);
        a2a_flow(b, id, r, sets->far, far, far_name);
        if (out)
            out->id[r] = id;
    }
}

/* The EP exchange on every rank: one kernel of `ctas` CTAs and
 * `kernel_bytes` on `streams[r]`, with a flow of `near` bytes to its near
 * stand-in over NVLink and one of `far` bytes to its far one over the NIC
 * pool (either absent at 0), each starting after the group's latency and
 * moving its `hbm` bytes through the rank's HBM. */
static void
ep_exchange(TpsBuilder *b, const TpsStreamId *streams, guint ctas, double kernel_bytes,
            const double bytes[2], const double hbm[2], const char *name, TpsOpIds *out)
{
    const TpsEpSets *sets = &b->ep_sets;
    g_autofree char *near_name = g_strdup_printf("%s.nvlink", name);
    g_autofree char *far_name = g_strdup_printf("%s.net", name);
    const TpsTime latency = tps_alltoall_latency_ns(b->hw, &b->ep_shape);
    for (guint r = 0; r < b->ranks; r++) {
        const TpsTaskId id = stream_kernel(b, streams[r], r, ctas, kernel_bytes, name);
        if (bytes[0] > 0.0)
            transfer_flow(b, id, r, sets->near + r, bytes[0], latency, hbm[0], near_name);
        if (bytes[1] > 0.0)
            transfer_flow(b, id, r, sets->far + r, bytes[1], latency, hbm[1], far_name);
        if (out)
            out->id[r] = id;
    }
}

void
tps_builder_ep_a2a(TpsBuilder *b, const TpsStreamId *streams, double bytes, const char *name,
                   TpsOpIds *out)
{
    const TpsEpSets *sets = &b->ep_sets;
    g_return_if_fail(b->ep_shape.ranks > 1 && sets->near_count + sets->far_count > 0);
    const double piece = bytes / b->ep_shape.ranks;
    const double near = piece * sets->near_count, far = piece * sets->far_count;
    /* Its sends and the symmetric receives through its HBM, the own
     * piece's copy read and written (with the NVLink flow, or the NIC's
     * where it has none): 2 x bytes in all, as the closed form's kernel. */
    const double sent[2] = {near, far};
    const double hbm[2] = {near + 2.0 * piece, far + (near > 0.0 ? 0.0 : 2.0 * piece)};
    ep_exchange(b, streams, tps_alltoall_channels(b->hw), bytes, sent, hbm, name, out);
}

void
tps_builder_library_begin(TpsBuilder *b)
{
    g_return_if_fail(!b->library);
    const double us = MAX(0.0, b->hw->host_gemm_us - b->hw->host_launch_us);
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        tps_engine_host_work(b->engine, r, tps_time_from_us(us));
    b->library = TRUE;
}

void
tps_builder_library_end(TpsBuilder *b)
{
    b->library = FALSE;
}

void
tps_builder_graph_begin(TpsBuilder *b)
{
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        tps_engine_graph_begin(b->engine, r, tps_time_from_us(b->hw->host_graph_launch_us));
    b->in_graph = TRUE;
}

void
tps_builder_graph_end(TpsBuilder *b)
{
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        tps_engine_graph_end(b->engine, r);
    b->in_graph = FALSE;
}

void
tps_builder_host_sync(TpsBuilder *b, const TpsOpIds *on)
{
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        tps_engine_host_sync(b->engine, r, tps_builder_task(b, on->id[r]),
                             tps_time_from_us(b->hw->host_memcpy_us));
}

/* Each rank's `stream` waits for the op `on` (cudaStreamWaitEvent). */
void
tps_builder_wait(TpsBuilder *b, const TpsStreamId *streams, const TpsOpIds *on)
{
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        tps_engine_stream_wait(b->engine, streams[r], tps_builder_task(b, on->id[r]));
}

/* The last op on each rank's `stream`. */
void
tps_builder_record(TpsBuilder *b, const TpsStreamId *streams, TpsOpIds *out)
{
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        out->id[r] = tps_engine_record(b->engine, streams[r]);
    /* Folded: the others' last op is rank 0's. */
    for (guint r = tps_builder_sim_ranks(b); r < b->ranks; r++)
        out->id[r] = out->id[0];
}

void
tps_builder_mark(TpsBuilder *b, const char *name, TpsOpIds *out)
{
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_MARKER,
            .name = name,
            .rank = r,
            .stream = b->main[r],
            .parent = TPS_TASK_NONE,
        };
        out->id[r] = tps_builder_add(b, &spec);
    }
}

void
tps_builder_ep_flex(TpsBuilder *b, const TpsStreamId *streams, const TpsFlexPlan *plan,
                    const char *name, TpsOpIds *out)
{
    const TpsEpSets *sets = &b->ep_sets;
    g_return_if_fail(b->ep_shape.ranks > 1 && sets->near_count + sets->far_count > 0);
    const double near = sets->near ? plan->nvlink_bytes : 0.0;
    const double far = sets->far ? plan->nic_bytes : 0.0;
    /* Each send read from HBM and the symmetric receive written. */
    const double sent[2] = {near, far}, hbm[2] = {2.0 * near, 2.0 * far};
    ep_exchange(b, streams, plan->sms, near + far, sent, hbm, name, out);
}
