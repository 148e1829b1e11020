/* The step frame: see pipeline.h.
 *
 * Placement follows Megatron: tensor parallelism inside a node, pipeline
 * and data parallelism across nodes (several pipeline stages share a node
 * when tp is smaller than the node). A stage boundary is crossed by every
 * TP rank with its share of the activation (sequence-sharded with SP, or
 * Megatron's scatter/gather split without it), so the whole TP group moves
 * micro_batch x seq x hidden elements per boundary, over NVLink inside a
 * node or over the node's NICs.
 *
 * Data parallelism: each GPU reduces its gradients with its replicas, in
 * buckets of max(40M, 1M x dp) parameters (Megatron's DDP bucket size),
 * with NCCL rings over InfiniBand (one NIC per GPU on a DGX). With
 * overlap_grad_reduce, a bucket is reduced as soon as the last micro-batch's
 * backward has produced it; otherwise all buckets go after the stage's last
 * backward. With the distributed optimizer the reduction is a
 * reduce-scatter and the updated parameters are all-gathered after the
 * optimizer step.
 *
 * The optimizer step is issued by each stage's host thread as Megatron
 * issues it (megatron/core/optimizer/optimizer.py, clip_grads.py), on
 * the stage's compute stream after its last chunk and reduction: with
 * fp16, the unscale-and-inf-check kernels, an all-reduce of the flag over
 * the model-parallel group and its .item(); the gradient norm (apex
 * multi_tensor_l2norm), its all-reduce and .item(); Adam (multi-tensor
 * kernels) and the copy of the fp32 master weights into the bf16 ones; the
 * distributed optimizer's parameter all-gather; and the zeroing of the
 * gradient buffer for the next step. Each .item() blocks the host until
 * its all-reduce has ended, so the kernels after it wait for their issue.
 *
 * Simplifications, stated: P2P transfers are asynchronous (the sender does
 * not wait for the receiver), the DP collectives do not take SMs from the
 * backward chunks they overlap (the layer times are those of the TP group
 * alone), the chunks' own host issue is in their (steady-state) layer
 * times, and the embedding-group all-reduce between the first and last
 * stages is not modelled.
 */
#include "sched/pipeline.h"
#include "sched/pipeline-private.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "engine/engine.h"
#include "sched/data-parallel.h"
#include "sched/fp8-recipe.h"
#include "sched/placement.h"

/* ---- schedule ---- */

static void
push(GArray *ops, guint chunk, guint64 mb, gboolean backward)
{
    TpsPipeOp op = {chunk, mb, backward};
    g_array_append_val(ops, op);
}

/* The k-th forward (or backward) of a stage in the interleaved schedule:
 * micro-batches go in groups of pp through each model chunk in turn
 * (Megatron's get_model_chunk_id); backward visits the chunks in reverse. */
static void
interleaved_op(guint pp, guint vpp, guint64 k, gboolean backward, guint *chunk, guint64 *mb)
{
    guint c = (guint)((k / pp) % vpp);
    *chunk = backward ? vpp - 1 - c : c;
    *mb = (k / ((guint64)pp * vpp)) * pp + k % pp;
}

guint64
tps_pipeline_raw_warmup(guint pp, guint vpp, guint stage)
{
    return vpp == 1 ? (guint64)(pp - stage - 1)
                    : (guint64)(pp - stage - 1) * 2 + (guint64)(vpp - 1) * pp;
}

GArray *
tps_pipeline_order(guint pp, guint vpp, guint64 micro, guint stage)
{
    g_return_val_if_fail(stage < pp && vpp >= 1, g_array_new(FALSE, FALSE, sizeof(TpsPipeOp)));
    return tps_pipeline_order_warmup(pp, vpp, micro, stage,
                                     MIN(tps_pipeline_raw_warmup(pp, vpp, stage), micro * vpp));
}

GArray *
tps_pipeline_order_warmup(guint pp, guint vpp, guint64 micro, guint stage, guint64 warmup)
{
    GArray *ops = g_array_new(FALSE, FALSE, sizeof(TpsPipeOp));
    const guint64 total = micro * vpp;
    g_return_val_if_fail(stage < pp && vpp >= 1 && warmup <= total, ops);

    guint chunk;
    guint64 mb, f = 0, b = 0;
    for (; f < warmup; f++) {
        interleaved_op(pp, vpp, f, FALSE, &chunk, &mb);
        push(ops, chunk, mb, FALSE);
    }
    /* Steady state: one forward, one backward. */
    for (; f < total; f++, b++) {
        interleaved_op(pp, vpp, f, FALSE, &chunk, &mb);
        push(ops, chunk, mb, FALSE);
        interleaved_op(pp, vpp, b, TRUE, &chunk, &mb);
        push(ops, chunk, mb, TRUE);
    }
    for (; b < total; b++) {
        interleaved_op(pp, vpp, b, TRUE, &chunk, &mb);
        push(ops, chunk, mb, TRUE);
    }
    return ops;
}

/* ---- the pipeline graph ---- */

void
tps_pipe_clear(TpsPipe *p)
{
    g_clear_pointer(&p->engine, tps_engine_free);
    g_clear_pointer(&p->compute, g_free);
    g_clear_pointer(&p->dp, g_free);
    g_clear_pointer(&p->held, g_free);
    g_clear_pointer(&p->first, g_free);
    g_clear_pointer(&p->last, g_free);
    g_clear_pointer(&p->arrival, g_free);
}

TpsTaskId
tps_pipe_add_chunk(TpsPipe *p, guint stage, TpsTaskKind kind, const char *name, TpsTime ns)
{
    TpsTaskSpec spec = {
        .kind = kind,
        .name = name,
        .rank = stage,
        .stream = p->compute[stage],
        .parent = TPS_TASK_NONE,
        .floor_ns = MAX(ns, 1),
    };
    return tps_engine_add(p->engine, &spec);
}

/* ---- the optimizer step ---- */

/* apex's multi_tensor_apply (csrc/multi_tensor_apply.cuh): one kernel for
 * at most 320 chunks of 65536 elements and at most this many tensors per
 * list, by the number of lists (depth 1: l2norm; 2: scale; 4: Adam). */
#define MT_CHUNK 65536.0
#define MT_MAX_BLOCKS 320.0
static const double mt_max_tensors[] = {110, 64, 48, 36, 30};

/* Parameter tensors of a stage: per layer the QKV, projection, FC1 and FC2
 * weights (and biases) and the two norms' weights (and LayerNorm's
 * biases); the word and (learned) position embeddings; the final norm; the
 * output layer's weight (a copy of the embedding when tied). */
static double
stage_tensors(const TpsScenario *sc, guint stage)
{
    const double norm = sc->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0;
    double n = (4.0 * (sc->bias ? 2.0 : 1.0) + 2.0 * norm) * tps_scenario_stage_layers(sc, stage);
    if (stage == 0)
        n += sc->position == TPS_POSITION_LEARNED ? 2 : 1;
    if (stage == sc->pp - 1)
        n += norm + (sc->pp > 1 || !sc->tie_embeddings ? 1 : 0);
    return n;
}

/* A launched kernel of `ns` on the stage's compute stream. */
static TpsTaskId
add_issued(TpsPipe *p, guint stage, TpsTaskKind kind, const char *name, TpsTime ns, TpsTime host)
{
    TpsTaskSpec spec = {
        .kind = kind,
        .name = name,
        .rank = stage,
        .stream = p->compute[stage],
        .parent = TPS_TASK_NONE,
        .launch = TRUE,
        .host_ns = MAX(host, 1),
        .floor_ns = MAX(ns, 1),
    };
    return tps_engine_add(p->engine, &spec);
}

/* One multi-tensor op over `elements` of `tensors` tensors in `depth`
 * lists, moving `bytes` per element: one framework op whose n kernels are
 * launched from C++ (host time: the op's, then one launch call h each),
 * each of GPU time g. On the stage's stream, which shares nothing here,
 * kernel k starts at I + (k - 1) max(h, g) (I: the first one's issue), so
 * two tasks give the same times as n and keep large optimizers cheap to
 * simulate: the first kernel, then the other n - 1 as one task, issued
 * with h and followed by the rest of the issue as host work when the GPU
 * is the slower (it starts at I + g and lasts (n - 1) g), or issued with
 * (n - 1) h and lasting g when the host is (it starts when the last one is
 * issued). */
static void
multi_tensor(TpsPipe *p, guint stage, const char *name, guint depth, double elements,
             double tensors, double bytes)
{
    const TpsHardware *hw = &p->sc->hardware;
    const double kernels = MAX(1.0, MAX(ceil(ceil(elements / MT_CHUNK) / MT_MAX_BLOCKS),
                                        ceil(tensors / mt_max_tensors[depth - 1])));
    TpsKernelCost cost;
    tps_cost_memory(hw, bytes * elements / kernels, &cost);
    const TpsTime g = MAX(tps_kernel_cost_solo_ns(hw, &cost, hw->sms), 1);
    const TpsTime h = MAX(tps_time_from_us(hw->host_launch_us), 1);
    const TpsTime rest = (TpsTime)kernels - 1;
    tps_engine_host_work(p->engine, stage,
                         tps_time_from_us(MAX(0.0, hw->host_elementwise_us - hw->host_launch_us)));
    add_issued(p, stage, TPS_KIND_MEMORY, name, g, h);
    if (rest == 0)
        return;
    if (g >= h) {
        add_issued(p, stage, TPS_KIND_MEMORY, name, rest * g, h);
        tps_engine_host_work(p->engine, stage, (rest - 1) * h);
    } else {
        add_issued(p, stage, TPS_KIND_MEMORY, name, g, rest * h);
    }
}

/* An all-reduce of one fp32 scalar over the model-parallel group (tp x pp
 * GPUs) and the host's .item() of it: the host waits until it has ended. */
static void
scalar_all_reduce_item(TpsPipe *p, guint stage, const char *name)
{
    const TpsScenario *sc = p->sc;
    const TpsHardware *hw = &sc->hardware;
    if (sc->tp * sc->pp < 2)
        return;
    TpsGroupShape shape;
    tps_place_group_shape(sc, TPS_DIM_BIT(TPS_DIM_TP) | TPS_DIM_BIT(TPS_DIM_PP), &shape);
    TpsCollPlan plan;
    tps_coll_plan_group(hw, TPS_COLL_ALL_REDUCE, 4.0, &shape, &plan);
    TpsTaskId ar = add_issued(p, stage, TPS_KIND_COMM, name, tps_coll_time_ns(hw, &plan),
                              tps_time_from_us(hw->host_nccl_us));
    tps_engine_host_sync(p->engine, stage, ar, tps_time_from_us(hw->host_memcpy_us));
}

/* Under dtype fp8, Transformer Engine casts each GEMM weight to FP8 and
 * its transpose (fp8_cast_transpose_fused: read 2 bytes, write 1 + 1) in
 * the first micro-batch of a step and caches both for the others
 * (is_first_microbatch). Placed here, after the update that makes them
 * stale: the same kernels on the same stream, one step apart. One kernel
 * per weight of each layer (QKV, projection, FC1, FC2), each issued from
 * inside its module (one launch of host time). */
/* Delayed scaling with fp8_param_gather, once a step after the optimizer
 * has cast its shards: the FP8 weights' `weights` amaxes packed into one
 * buffer (multi_tensor_scale), all-reduced (MAX) over the data-parallel
 * group and unpacked (Transformer Engine's
 * _cast_master_weights_to_fp8_delayed_scaling, tensor/utils.py). */
static void
fp8_weight_amax_reduction(TpsPipe *p, guint stage, double weights)
{
    const TpsScenario *sc = p->sc;
    const TpsHardware *hw = &sc->hardware;
    if (tps_scenario_grad_ranks(sc) < 2)
        return;
    TpsKernelCost pack;
    tps_cost_memory(hw, 2.0 * 4.0 * weights, &pack);
    const TpsTime pack_ns = tps_kernel_cost_solo_ns(hw, &pack, hw->sms);
    const TpsTime launch = tps_time_from_us(hw->host_elementwise_us);
    add_issued(p, stage, TPS_KIND_MEMORY, "fp8.weight_amax_pack", pack_ns, launch);
    TpsGroupShape shape;
    tps_place_group_shape(sc, TPS_SCENARIO_GRAD_DIMS, &shape);
    TpsCollPlan plan;
    tps_coll_plan_group(hw, TPS_COLL_ALL_REDUCE, 4.0 * weights, &shape, &plan);
    add_issued(p, stage, TPS_KIND_COMM, "fp8.weight_amax.ar", tps_coll_time_ns(hw, &plan),
               tps_time_from_us(hw->host_nccl_us));
    add_issued(p, stage, TPS_KIND_MEMORY, "fp8.weight_amax_unpack", pack_ns, launch);
}

/* One GEMM weight of each layer of a kind: its elements on this GPU and
 * how many such weights a layer holds (a routed expert's: experts / ep of
 * them; 0: none). */
typedef struct {
    double elements, count;
} LayerWeight;

/* The GEMM weights a layer of `sc`'s kind casts to FP8: QKV, projection,
 * FC1, FC2 (a mixture of experts: the shared experts' in place of FC1 and
 * FC2, and the routed experts' FC1 and FC2, each its own weight in TE's
 * GroupedLinear; the router is not a TE module and stays bf16). */
static void
layer_fp8_weights(const TpsScenario *sc, LayerWeight w[6])
{
    const double t = sc->tp, h = sc->hidden, f = sc->ffn_hidden;
    const double d = h / (double)sc->heads;
    const double qkv = ((double)sc->heads + 2.0 * (double)tps_scenario_kv_heads(sc)) * d;
    const double gate = sc->mlp == TPS_MLP_SWIGLU ? 2.0 : 1.0;
    w[0] = (LayerWeight){h * qkv / t, 1.0};
    w[1] = (LayerWeight){h * h / t, 1.0};
    w[2] = (LayerWeight){h * gate * f / t, 1.0};
    w[3] = (LayerWeight){f * h / t, 1.0};
    w[4] = w[5] = (LayerWeight){0.0, 0.0};
    if (!tps_scenario_is_moe(sc))
        return;
    const double fs = (double)sc->moe.shared_ffn_hidden, fe = (double)sc->moe.ffn_hidden;
    const double etp = tps_scenario_etp(sc);
    const double local = (double)(sc->moe.experts / MAX(sc->ep, 1u));
    w[2] = (LayerWeight){h * gate * fs / t, fs > 0.0 ? 1.0 : 0.0};
    w[3] = (LayerWeight){fs * h / t, fs > 0.0 ? 1.0 : 0.0};
    w[4] = (LayerWeight){h * gate * fe / etp, local};
    w[5] = (LayerWeight){fe * h / etp, local};
}

/* The recipe's kernels of one FP8 weight of `elements` (sched/fp8-recipe.c):
 * the cast alone under delayed scaling; amax, scale and cast under current
 * scaling; one quantize with 128x128 block scales under blockwise. No
 * amax reduction: each rank scales its own shard. Their time into *ns,
 * their number into *kernels. */
static void
fp8_weight_cast_ns(const TpsScenario *sc, double elements, TpsTime *ns, guint *kernels)
{
    const TpsHardware *hw = &sc->hardware;
    /* With fp8_param_gather the FP8 weights come from the all-gather (the
     * optimizer casts its shard): only the transpose is made (read 1,
     * write 1). */
    const double bytes = tps_dp_fp8_params(sc) ? 2.0 : 4.0;
    double parts[3] = {bytes * elements, 0.0, 0.0};
    if (sc->fp8_recipe != TPS_FP8_DELAYED) {
        TpsFp8Quant q;
        tps_fp8_quantize(sc->fp8_recipe, elements, 2.0, TRUE, TRUE, &q);
        parts[0] = q.cast;
        parts[1] = q.amax;
        parts[2] = q.scale;
    }
    *ns = 0;
    *kernels = 0;
    for (guint k = 0; k < 3; k++) {
        if (parts[k] <= 0.0)
            continue;
        TpsKernelCost cost;
        tps_cost_memory(hw, parts[k], &cost);
        *ns += MAX(tps_kernel_cost_solo_ns(hw, &cost, hw->sms), 1);
        (*kernels)++;
    }
}

static void
fp8_weight_casts(TpsPipe *p, guint stage)
{
    const TpsScenario *sc = p->sc;
    const TpsHardware *hw = &sc->hardware;
    static const char *const names[6] = {
        "fp8.qkv_weight_cast", "fp8.proj_weight_cast",       "fp8.fc1_weight_cast",
        "fp8.fc2_weight_cast", "fp8.expert_fc1_weight_cast", "fp8.expert_fc2_weight_cast"};
    /* The stage's layers of the scenario's kind and, in a model that mixes
     * dense and MoE layers, its dense ones. */
    const guint dense = tps_scenario_stage_dense_layers(sc, stage);
    const double layers[2] = {(double)(tps_scenario_stage_layers(sc, stage) - dense), dense};
    TpsScenario dense_sc;
    tps_scenario_dense_layer(sc, &dense_sc);
    LayerWeight w[2][6];
    layer_fp8_weights(sc, w[0]);
    layer_fp8_weights(&dense_sc, w[1]);
    const TpsTime launch = MAX(tps_time_from_us(hw->host_launch_us), 1);
    double weights = 0.0;
    for (guint i = 0; i < 6; i++) {
        /* The stage's kernels of this weight back to back: their time and
         * host launches. */
        TpsTime ns = 0;
        TpsTime kernels = 0;
        for (guint k = 0; k < 2; k++) {
            const TpsTime n = (TpsTime)(layers[k] * w[k][i].count);
            if (n == 0)
                continue;
            TpsTime g;
            guint per;
            fp8_weight_cast_ns(sc, w[k][i].elements, &g, &per);
            ns += n * g;
            kernels += n * per;
            weights += (double)n;
        }
        /* (A dense model's stage of no layers still issues its four.) */
        if (kernels == 0 && (i >= 4 || tps_scenario_is_moe(sc)))
            continue;
        add_issued(p, stage, TPS_KIND_MEMORY, names[i], ns, launch);
        if (kernels > 1)
            tps_engine_host_work(p->engine, stage, (kernels - 1) * launch);
    }
    if (tps_dp_fp8_params(sc) && sc->fp8_recipe == TPS_FP8_DELAYED)
        fp8_weight_amax_reduction(p, stage, weights);
}

/* The optimizer step of `stage` over `params` parameters of which this GPU
 * updates `shard` (all, or 1/dp with the distributed optimizer). */
void
tps_pipe_optimizer_step(TpsPipe *p, guint stage, double params, double shard)
{
    const TpsScenario *sc = p->sc;
    const TpsHardware *hw = &sc->hardware;
    const double tensors = stage_tensors(sc, stage);
    if (sc->dtype == TPS_DTYPE_FP16) {
        /* Dynamic loss scaling: unscale the fp32 main gradients and look
         * for inf/NaN (read and write), then agree on the flag. */
        multi_tensor(p, stage, "optimizer.unscale", 1, shard, tensors, 8.0);
        scalar_all_reduce_item(p, stage, "optimizer.found_inf.ar");
    }
    /* Gradient clipping's norm: read the fp32 main gradients, then the
     * squared norm (one small op) and its all-reduce; the clip itself
     * runs only when the norm exceeds the limit. */
    multi_tensor(p, stage, "optimizer.grad_norm", 1, shard, tensors, 4.0);
    add_issued(p, stage, TPS_KIND_MEMORY, "optimizer.norm_pow", 1,
               tps_time_from_us(hw->host_elementwise_us));
    scalar_all_reduce_item(p, stage, "optimizer.grad_norm.ar");
    /* Adam: read gradient, master weight and both moments, write the three
     * fp32 states (28 bytes); then the bf16 copy of the master weights
     * (read 4, write 2). */
    multi_tensor(p, stage, "optimizer.adam", 4, shard, tensors, 28.0);
    multi_tensor(p, stage, "optimizer.copy_params", 2, shard, tensors, 6.0);
    /* The distributed optimizer's parameter all-gather, unless it goes
     * bucket by bucket under the next step's first forward. */
    if (tps_dp_sharded_optimizer(sc) && !tps_fsdp_params(sc) && !tps_dp_gathers_in_forward(sc)) {
        const double gemm = tps_stage_layers_sum(sc, stage, tps_layer_gemm_params_per_gpu);
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COMM,
            .name = "optimizer.param_gather",
            .rank = stage,
            .stream = p->compute[stage],
            .parent = TPS_TASK_NONE,
            .floor_ns =
                MAX(tps_dp_split_collective_ns(
                        sc, TPS_COLL_ALL_GATHER, tps_dp_param_bytes(sc, params, gemm),
                        2.0 * tps_stage_layers_sum(sc, stage, tps_layer_expert_params_per_gpu)),
                    1),
        };
        tps_engine_add(p->engine, &spec);
    }
    if (sc->dtype == TPS_DTYPE_FP8)
        fp8_weight_casts(p, stage);
    /* The next step starts from a zeroed fp32 gradient buffer (FSDP's
     * sharded gradients: the shard). */
    TpsKernelCost zero;
    tps_cost_memory(hw, 4.0 * (tps_fsdp_grads(sc) ? shard : params), &zero);
    add_issued(p, stage, TPS_KIND_MEMORY, "optimizer.zero_grad",
               tps_kernel_cost_solo_ns(hw, &zero, hw->sms),
               tps_time_from_us(hw->host_elementwise_us));
}

TpsTaskId
tps_pipe_add_dp(TpsPipe *p, guint stage, const char *name, TpsTime ns)
{
    TpsTaskSpec spec = {
        .kind = TPS_KIND_COMM,
        .name = name,
        .rank = stage,
        .stream = p->dp[stage],
        .parent = TPS_TASK_NONE,
        .floor_ns = MAX(ns, 1),
    };
    return tps_engine_add(p->engine, &spec);
}

/* Whether stages `from` and `to` share an NVLink domain of `m`. */
gboolean
tps_pipe_same_node(const TpsMachine *m, guint from, guint to)
{
    return tps_machine_domain(m, from) == tps_machine_domain(m, to);
}

/* The flow that carries one micro-batch's activation (or gradient) from
 * stage `from` to `to`: over NVLink inside a node, else over the NICs. */
void
tps_pipe_transfer_spec(const TpsScenario *sc, const TpsMachine *m, guint from, guint to,
                       TpsTaskSpec *spec)
{
    const gboolean near = tps_pipe_same_node(m, from, to);
    *spec = (TpsTaskSpec){
        .kind = TPS_KIND_FLOW,
        .name = "p2p",
        .rank = from,
        .stream = TPS_STREAM_NONE,
        .parent = TPS_TASK_NONE,
        .fixed_ns = tps_time_from_us(near ? sc->hardware.nccl_hw_latency_us[TPS_PROTO_SIMPLE]
                                          : sc->hardware.network_latency_us),
        .dst_rank = to,
        .link_bytes = (double)sc->micro_batch * (sc->seq_len / MAX(sc->cp, 1u)) * sc->hidden *
                      tps_dtype_bytes(sc->dtype),
    };
}

/* The activation (or gradient) of one micro-batch from stage `from` to
 * `to`, after `producer`; `consumer` waits for it. Returns the flow
 * (TPS_TASK_NONE when both virtual stages are on one rank). */
static TpsTaskId
add_transfer(TpsPipe *p, guint from, guint to, TpsTaskId producer, TpsTaskId consumer)
{
    const TpsScenario *sc = p->sc;
    if (from == to) {
        tps_engine_after(p->engine, consumer, producer);
        return TPS_TASK_NONE;
    }
    TpsTaskSpec spec;
    tps_pipe_transfer_spec(sc, tps_engine_machine(p->engine), from, to, &spec);
    TpsTaskId flow = tps_engine_add(p->engine, &spec);
    tps_engine_after(p->engine, flow, producer);
    tps_engine_after(p->engine, consumer, flow);
    return flow;
}

/* The machine of the step graph: a rank per stage, placed on the topology
 * as its rank in global rank 0's pipeline group (tps_place_stages()), with
 * its TP group's NVLink and NICs. The placement is allocated: g_free
 * machine->place. */
void
tps_pipe_machine(const TpsScenario *sc, TpsMachine *machine)
{
    const TpsHardware *hw = &sc->hardware;
    TpsPlace *place = g_new(TpsPlace, sc->pp);
    tps_place_stages(sc, place);
    *machine = (TpsMachine){
        .ranks = sc->pp,
        .gpus_per_node = 1,
        .place = place,
        .sms = hw->sms,
        .hbm_gbps = 0.0, /* not modelled: chunks carry their own times */
        .nvlink_gbps = sc->tp * hw->nvlink_gbps * hw->nvlink_efficiency,
        .nic_gbps = tps_topo_nic_share_gbps(hw, sc->tp),
        .copy_engines = 1,
    };
}

/* A new engine on `machine` in `p`, with each stage's compute and DP
 * streams. */
void
tps_pipe_engine(TpsPipe *p, const TpsMachine *machine)
{
    const guint pp = p->sc->pp;
    p->engine = tps_engine_new(machine);
    p->compute = g_new(TpsStreamId, pp);
    p->dp = g_new(TpsStreamId, pp);
    p->held = g_new(TpsTaskId, 2 * pp);
    for (guint s = 0; s < pp; s++) {
        p->held[2 * s] = p->held[2 * s + 1] = TPS_TASK_NONE;
        p->compute[s] = tps_engine_add_stream(p->engine, s, 0, "compute");
        p->dp[s] = tps_engine_add_stream(p->engine, s, 0, "dp");
    }
}

/* The longest chunk: validation keeps the step, and so every chunk, below
 * TPS_SCENARIO_MAX_STEP_NS; checked here too, as an error rather than a
 * wrapped number, for a caller that skipped it. */
gboolean
tps_pipe_chunks_fit(const TpsScenario *sc, const TpsPieceTimes *pc, GError **error)
{
    const guint layers_chunk = tps_scenario_max_chunk_layers(sc);
    const TpsTime ends = MAX(pc->emb_fwd + pc->head_fwd, pc->emb_bwd + pc->head_bwd);
    const TpsTime pairs = MAX(MAX(pc->layer_fb, pc->dense_fb), MAX(pc->dense_moe_fb, pc->moe_dense_fb));
    const TpsTime layer =
        MAX(MAX(MAX(pc->layer_fwd, pc->layer_bwd), MAX(pc->dense_fwd, pc->dense_bwd)), pairs);
    if (layer > 0 && layers_chunk > (guint64)(TPS_SCENARIO_MAX_STEP_NS - ends) / (guint64)layer) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: a pipeline chunk of %u layers takes more than the %" G_GINT64_FORMAT
                    " ns a step can last",
                    sc->file != NULL ? sc->file : sc->name, layers_chunk, TPS_SCENARIO_MAX_STEP_NS);
        return FALSE;
    }
    return TRUE;
}

/* The forward (backward) of `layers` layers of which `dense` are the dense
 * layers of a model that mixes dense and MoE layers. */
static TpsTime
layers_ns(const TpsPieceTimes *pc, guint layers, guint dense, gboolean backward)
{
    const TpsTime layer = backward ? pc->layer_bwd : pc->layer_fwd;
    if (dense == 0)
        return layers * layer;
    return (layers - dense) * layer + dense * (backward ? pc->dense_bwd : pc->dense_fwd);
}

/* Of model chunk `chunk` of stage `s`, of `layers` layers. */
static TpsTime
chunk_ns(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, guint chunk, guint layers,
         gboolean backward)
{
    const guint dense =
        tps_scenario_mixes_layers(sc) ? tps_scenario_chunk_dense_layers(sc, s, chunk) : 0;
    return layers_ns(pc, layers, dense, backward);
}

/* The first micro-batch's forward of model chunk `chunk` of stage `s`
 * when the distributed optimizer's parameters are all-gathered under it
 * (Megatron's overlap_param_gather): a task per bucket in forward order
 * (the buckets of tps_dp_buckets() from the last), each waiting for its
 * bucket's all-gather, which the forward pre-hook of the bucket's first
 * module waits for before it dispatches the next bucket's
 * (param_and_grad_buffer.py, finish_param_sync): the all-gathers run back
 * to back on the DP stream from the step's start, and the first bucket's,
 * needed by the first layer, hides behind nothing on the first stage. */
static guint
forward_gather_pieces(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, guint chunk,
                      TpsPipePiece *out)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    const guint layers_chunk = tps_scenario_chunk_layers(sc, s, chunk);
    const guint vstage = chunk * pp + s;
    const gboolean first_v = vstage == 0, last_v = vstage == pp * vpp - 1;
    g_autofree TpsDpBucket *buckets = g_new(TpsDpBucket, MAX(layers_chunk, 1u));
    const guint count = tps_dp_buckets(sc, s, chunk, buckets);
    for (guint k = 0; k < count; k++) {
        const TpsDpBucket *b = &buckets[count - 1 - k];
        out[k] = (TpsPipePiece){
            .ns = layers_ns(pc, b->layers, b->dense, FALSE) +
                  (k == 0 && first_v ? pc->emb_fwd : 0) +
                  (k + 1 == count && last_v ? pc->head_fwd : 0),
            .gather = TRUE,
            .ag_ns = tps_dp_split_collective_ns(sc, TPS_COLL_ALL_GATHER,
                                                tps_dp_param_bytes(sc, b->params, b->gemm_params),
                                                2.0 * b->expert_params)};
    }
    return count;
}

/* An op of stage `s` under FSDP (tps_fsdp_layer_op()): a task per layer
 * (the FSDP unit, with the embedding in the first layer's and the head in
 * the last's), in the op's order. With sharded parameters each waits for
 * its all-gather, prefetched one unit ahead into a double buffer; with
 * sharded gradients each backward task's gradients are reduce-scattered
 * after it, every micro-batch (megatron_fsdp.py: grad_reduce_every_bprop;
 * docs/runtime_schedule.md: AG i+1 prefetched before Fwd i, AG i-1 before
 * RS i). */
/* A copy of `bytes` (read and written) on the compute stream: PyTorch
 * FSDP2's per-parameter copy-out of a unit's gathered parameters
 * (foreach_all_gather_copy_out) and the copy-in of its unsharded
 * gradients into the reduce-scatter's input (chunk_cat), which Megatron
 * FSDP's flat buffers do without (Megatron FSDP's runtime_schedule.md:
 * FSDP2 issues more data copy); 0 under Megatron FSDP. */
static TpsTime
fsdp2_copy_ns(const TpsScenario *sc, double bytes)
{
    if (sc->fsdp_impl != TPS_FSDP_IMPL_TORCH || bytes <= 0.0)
        return 0;
    TpsKernelCost cost;
    tps_cost_memory(&sc->hardware, 2.0 * bytes, &cost);
    return tps_kernel_cost_solo_ns(&sc->hardware, &cost, sc->hardware.sms);
}

static guint
fsdp_pieces(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, const TpsPipeOp *op,
            TpsPipePiece *out)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    const guint layers_chunk = tps_scenario_chunk_layers(sc, s, op->chunk);
    const guint vstage = op->chunk * pp + s;
    const gboolean first_v = vstage == 0, last_v = vstage == pp * vpp - 1;
    const gboolean params = tps_fsdp_params(sc);
    g_autofree TpsDpBucket *units = g_new(TpsDpBucket, MAX(layers_chunk, 1u));
    const guint count = tps_dp_buckets(sc, s, op->chunk, units);
    for (guint k = 0; k < count; k++) {
        /* Units in the op's order: the last layer first in the backward. */
        const guint u = op->backward ? k : count - 1 - k;
        const TpsDpBucket *b = &units[u];
        const gboolean emb = u + 1 == count && first_v, head = u == 0 && last_v;
        const double param_bytes = tps_dp_param_bytes(sc, b->params, b->gemm_params);
        out[k] = (TpsPipePiece){
            .gather = params,
            .prefetch = params,
            .ag_ns = params ? tps_dp_collective_ns(sc, TPS_COLL_ALL_GATHER, param_bytes) : 0,
            .ns = params ? fsdp2_copy_ns(sc, param_bytes) : 0};
        if (op->backward) {
            const double grad_bytes = tps_dp_grad_bytes(sc, b->params);
            out[k].ns += layers_ns(pc, b->layers, b->dense, TRUE) + (emb ? pc->emb_bwd : 0) +
                         (head ? pc->head_bwd : 0) + fsdp2_copy_ns(sc, grad_bytes);
            out[k].reduce = TRUE;
            out[k].dp_ns = tps_dp_collective_ns(sc, TPS_COLL_REDUCE_SCATTER, grad_bytes);
        } else {
            out[k].ns += layers_ns(pc, b->layers, b->dense, FALSE) + (emb ? pc->emb_fwd : 0) +
                         (head ? pc->head_fwd : 0);
        }
    }
    return count;
}

/* The tasks of op `op` of stage `s` with `micro` micro-batches: one, but
 * for the last micro-batch's backward with overlapped gradient reduction,
 * which goes layer by layer (in reverse), each bucket of gradients
 * (tps_dp_buckets()) reduced as soon as it is complete, and for the first
 * micro-batch's forward when the parameters are all-gathered in it, one
 * task per bucket in forward order, each after its bucket's all-gather.
 * `out` holds at least the layers of a chunk; returns the number of
 * tasks. */
static guint
op_pieces(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, const TpsPipeOp *op,
          guint64 micro, TpsPipePiece *out)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    const guint layers_chunk = tps_scenario_chunk_layers(sc, s, op->chunk);
    const guint vstage = op->chunk * pp + s;
    const gboolean first_v = vstage == 0, last_v = vstage == pp * vpp - 1;
    if (tps_fsdp_layer_op(sc, op->backward))
        return fsdp_pieces(sc, pc, s, op, out);
    if (!op->backward) {
        if (op->mb == 0 && tps_dp_gathers_in_forward(sc))
            return forward_gather_pieces(sc, pc, s, op->chunk, out);
        /* The combined interleaved 1F1B: a steady forward carries its
         * combined step (the backward after it in the order only its
         * ends). */
        guint other;
        if (tps_pipe_pair_partner(sc, s, op, micro, &other)) {
            const TpsTime ends_fwd = (first_v ? pc->emb_fwd : 0) + (last_v ? pc->head_fwd : 0);
            out[0] = (TpsPipePiece){.ns = tps_pipe_pair_ns(sc, pc, s, op->chunk, other) + ends_fwd};
            return 1;
        }
        /* Paired (model.moe.overlap_ep_comm, pp 1): every forward but the
         * first runs beside the backward before it, and carries the pairs
         * (pipeline-pair.c, the chunk's layer j beside its layer L - 1 - j). */
        const TpsTime ends_fwd = (first_v ? pc->emb_fwd : 0) + (last_v ? pc->head_fwd : 0);
        const TpsTime layers_ns = pc->layer_fb > 0 && pp == 1 && op->mb > 0
                                      ? tps_pipe_pair_ns(sc, pc, s, op->chunk, op->chunk)
                                      : chunk_ns(sc, pc, s, op->chunk, layers_chunk, FALSE);
        out[0] = (TpsPipePiece){.ns = layers_ns + ends_fwd};
        return 1;
    }
    const TpsTime extra = (first_v ? pc->emb_bwd : 0) + (last_v ? pc->head_bwd : 0);
    guint other;
    if (tps_pipe_pair_partner(sc, s, op, micro, &other)) {
        /* Its layers ran in the combined step of the forward before it. */
        out[0] = (TpsPipePiece){.ns = extra};
        return 1;
    }
    if (pc->layer_fb > 0 && pp == 1 && op->mb + 1 < micro) {
        /* Its layers ran in the next forward's pair. */
        out[0] = (TpsPipePiece){.ns = extra};
        return 1;
    }
    if (op->mb != micro - 1 || !sc->overlap_grad_reduce || tps_scenario_grad_ranks(sc) < 2) {
        out[0] = (TpsPipePiece){.ns = chunk_ns(sc, pc, s, op->chunk, layers_chunk, TRUE) + extra};
        return 1;
    }
    const TpsCollKind grad_kind =
        tps_dp_sharded_optimizer(sc) ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE;
    g_autofree TpsDpBucket *buckets = g_new(TpsDpBucket, MAX(layers_chunk, 1u));
    const guint count = tps_dp_buckets(sc, s, op->chunk, buckets);
    for (guint k = 0; k < count; k++) {
        const gboolean tail = k + 1 == count;
        out[k] = (TpsPipePiece){
            .ns = layers_ns(pc, buckets[k].layers, buckets[k].dense, TRUE) +
                  (k == 0 && last_v ? pc->head_bwd : 0) + (tail && first_v ? pc->emb_bwd : 0),
            .reduce = TRUE,
            .dp_ns =
                tps_dp_split_collective_ns(sc, grad_kind, tps_dp_grad_bytes(sc, buckets[k].params),
                                           tps_dp_grad_bytes(sc, buckets[k].expert_params))};
    }
    return count;
}

guint
tps_pipe_op_pieces(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, const TpsPipeOp *op,
                   guint64 micro, TpsPipePiece *out)
{
    const guint n = op_pieces(sc, pc, s, op, micro, out);
    /* Delayed scaling's amax reduction ends the chunk's pass. */
    out[n - 1].ns += op->backward ? pc->amax_bwd : pc->amax_fwd;
    return n;
}

/* A memory-bound kernel of `bytes` on all SMs. */
static TpsTime
memory_kernel_ns(const TpsHardware *hw, double bytes)
{
    TpsKernelCost cost;
    tps_cost_memory(hw, bytes, &cost);
    return tps_kernel_cost_solo_ns(hw, &cost, hw->sms);
}

/* The FP8 GEMMs of the model chunk that holds the most: 4 a dense layer;
 * an MoE layer's QKV, projection, shared experts' two and each local
 * expert's two (GroupedLinear keeps a scaling state per expert). */
static double
chunk_fp8_gemms(const TpsScenario *sc)
{
    if (!tps_scenario_is_moe(sc))
        return 4.0 * (double)tps_scenario_max_chunk_layers(sc);
    TpsScenario dense_sc;
    tps_scenario_dense_layer(sc, &dense_sc);
    LayerWeight w[2][6];
    layer_fp8_weights(sc, w[0]);
    layer_fp8_weights(&dense_sc, w[1]);
    double per_layer[2] = {0.0, 0.0}, most = 0.0;
    for (guint k = 0; k < 2; k++)
        for (guint i = 0; i < 6; i++)
            per_layer[k] += w[k][i].count;
    for (guint st = 0; st < sc->pp; st++)
        for (guint c = 0; c < sc->vpp; c++) {
            const double dense = tps_scenario_chunk_dense_layers(sc, st, c);
            const double n = tps_scenario_chunk_layers(sc, st, c);
            most = MAX(most, (n - dense) * per_layer[0] + dense * per_layer[1]);
        }
    return most;
}

void
tps_pipe_amax_times(const TpsScenario *sc, TpsPieceTimes *pc)
{
    pc->amax_fwd = pc->amax_bwd = 0;
    if (sc->dtype != TPS_DTYPE_FP8 || sc->fp8_recipe != TPS_FP8_DELAYED)
        return;
    const TpsHardware *hw = &sc->hardware;
    const double gemms = chunk_fp8_gemms(sc);
    const guint dims = TPS_DIM_BIT(TPS_DIM_TP) | TPS_SCENARIO_GRAD_DIMS;
    TpsGroupShape shape;
    tps_place_group_shape(sc, dims, &shape);
    for (guint b = 0; b < 2; b++) {
        /* Amaxes of the chunk's FP8 tensors, fp32 each. */
        const double n = (b == 0 ? 3.0 : 2.0) * gemms;
        /* torch.cat of the amaxes (read, write); the all-reduce; the fused
         * update (tex.fused_amax_and_scale_update_after_reduction: reads
         * and rewrites each history, writes each scale). */
        TpsTime t = memory_kernel_ns(hw, 2.0 * 4.0 * n);
        if ((guint64)sc->tp * tps_scenario_grad_ranks(sc) > 1) {
            TpsCollPlan plan;
            tps_coll_plan_group(hw, TPS_COLL_ALL_REDUCE, 4.0 * n, &shape, &plan);
            t += tps_cost_launch_ns(hw) + tps_coll_time_ns(hw, &plan);
        }
        t += memory_kernel_ns(hw, 4.0 * n * (2.0 * (double)sc->fp8_amax_history_len + 1.0) +
                                      4.0 * n * 2.0);
        (b == 0 ? &pc->amax_fwd : &pc->amax_bwd)[0] = t;
    }
}

/* Without overlap, the whole reduction of stage `s` follows its last
 * backward: the times of its buckets' reductions, in order, into `out`. */
void
tps_pipe_tail_reductions(const TpsScenario *sc, guint s, GArray *out)
{
    const double bucket_params = tps_dp_bucket_size(sc);
    const TpsCollKind grad_kind =
        tps_dp_sharded_optimizer(sc) ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE;
    g_array_set_size(out, 0);
    /* The experts' share of each bucket: theirs of the stage's. */
    const double stage_params = tps_stage_params(sc, s);
    const double expert_share =
        tps_stage_layers_sum(sc, s, tps_layer_expert_params_per_gpu) / stage_params;
    for (double left = stage_params; left > 0; left -= bucket_params) {
        const double piece = MIN(left, bucket_params);
        TpsTime ns = tps_dp_split_collective_ns(sc, grad_kind, tps_dp_grad_bytes(sc, piece),
                                                tps_dp_grad_bytes(sc, piece * expert_share));
        g_array_append_val(out, ns);
    }
}

/* The engine of `micro` micro-batches per replica on the pipeline's
 * machine, with room for its tasks and edges, and the arrays of each op's
 * first and last task and arrival. */
static void
pipe_engine_for(const TpsScenario *sc, guint64 micro, TpsPipe *p)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    TpsMachine machine;
    tps_pipe_machine(sc, &machine);
    tps_pipe_engine(p, &machine);
    g_free((gpointer)machine.place);
    /* Chunks and a transfer per chunk (bucket pieces and DP tasks are few);
     * each transfer has two edges, each chunk its stream edge. The caller
     * keeps `micro` within TPS_PIPELINE_MAX_OPS. */
    const gsize n_ops = (gsize)pp * vpp * micro * 2;
    /* FSDP: a task per layer and its collectives. */
    const gsize per_op = tps_fsdp_layer_op(sc, TRUE) ? 3 * MAX(tps_scenario_max_chunk_layers(sc), 1u) : 1;
    tps_engine_reserve(p->engine, (guint)MIN(n_ops * (1 + per_op) + 64 * pp, G_MAXUINT32 / 2),
                       (guint)MIN(n_ops * (2 + per_op) + 64 * pp, G_MAXUINT32 / 2));
    p->first = g_new(TpsTaskId, n_ops);
    p->last = g_new(TpsTaskId, n_ops);
    p->arrival = g_new(TpsTaskId, n_ops);
}

/* The tasks of an op whose pieces prefetch their all-gathers (FSDP's
 * sharded parameters) into op `idx`: on the DP stream, the first unit's
 * all-gather, then at each unit the next one's (issued before the unit
 * runs) and, after the unit, its reduce-scatter: AG 0, AG 1, RS 0, AG 2,
 * RS 1, ... as one NCCL communicator runs them in issue order. Each unit
 * waits for its all-gather, and each all-gather for the end of the unit
 * two before on the stage (of this op or the one before), whose buffer it
 * fills. */
static void
add_prefetched(TpsPipe *p, guint s, gboolean backward, const TpsPipePiece *pieces, guint n,
               gsize idx)
{
    g_autofree TpsTaskId *ag = g_new(TpsTaskId, n);
    TpsTaskId *held = p->held + 2 * s;
    if (held[0] != TPS_TASK_NONE)
        tps_engine_stream_wait(p->engine, p->dp[s], held[0]);
    ag[0] = tps_pipe_add_dp(p, s, "fsdp_param_gather", pieces[0].ag_ns);
    for (guint k = 0; k < n; k++) {
        /* The next unit's all-gather, into the buffer of the unit before
         * this one. */
        if (k + 1 < n) {
            if (held[1] != TPS_TASK_NONE)
                tps_engine_stream_wait(p->engine, p->dp[s], held[1]);
            ag[k + 1] = tps_pipe_add_dp(p, s, "fsdp_param_gather", pieces[k + 1].ag_ns);
        }
        const TpsTaskId unit = tps_pipe_add_chunk(p, s, TPS_KIND_GEMM,
                                                  backward ? "backward" : "forward", pieces[k].ns);
        tps_engine_after(p->engine, unit, ag[k]);
        if (pieces[k].reduce) {
            tps_engine_stream_wait(p->engine, p->dp[s], unit);
            tps_pipe_add_dp(p, s, "fsdp_grad_reduce", pieces[k].dp_ns);
        }
        if (k == 0)
            p->first[idx] = unit;
        p->last[idx] = unit;
        held[0] = held[1];
        held[1] = unit;
    }
}

/* Stage s's order of ops with its warm-up (tps_pipe_warmup(): the
 * combined interleaved 1F1B's one forward more). */
static GArray *
stage_order(const TpsScenario *sc, guint64 micro, guint s)
{
    return tps_pipeline_order_warmup(sc->pp, sc->vpp, micro, s,
                                     tps_pipe_warmup(sc, s, micro * sc->vpp));
}

/* Every stage's ops in its schedule's order, each as its chunk tasks, a
 * bucket's gradient reduction on the DP stream after the chunk that
 * completes it. */
static void
pipe_add_ops(const TpsScenario *sc, const TpsPieceTimes *pc, guint64 micro, TpsPipe *p)
{
    const guint pp = sc->pp;
    g_autofree TpsPipePiece *pieces =
        g_new(TpsPipePiece, MAX(tps_scenario_max_chunk_layers(sc), 1u));
    for (guint s = 0; s < pp; s++) {
        g_autoptr(GArray) ops = stage_order(sc, micro, s);
        for (guint i = 0; i < ops->len; i++) {
            const TpsPipeOp *op = &g_array_index(ops, TpsPipeOp, i);
            const gsize idx = tps_pipe_op_index(p, s, op->chunk, op->mb, op->backward);
            const guint n = tps_pipe_op_pieces(sc, pc, s, op, micro, pieces);
            p->arrival[idx] = TPS_TASK_NONE;
            p->first[idx] = TPS_TASK_NONE;
            if (n > 0 && pieces[0].prefetch) {
                add_prefetched(p, s, op->backward, pieces, n, idx);
                continue;
            }
            /* The parameter all-gathers first, so that the op's tasks
             * are consecutive. */
            const TpsTaskId gathers = tps_engine_n_tasks(p->engine);
            for (guint k = 0; k < n; k++)
                if (pieces[k].gather)
                    tps_pipe_add_dp(p, s, "dp_param_gather", pieces[k].ag_ns);
            for (guint k = 0; k < n; k++) {
                TpsTaskId id = tps_pipe_add_chunk(
                    p, s, TPS_KIND_GEMM, op->backward ? "backward" : "forward", pieces[k].ns);
                if (p->first[idx] == TPS_TASK_NONE)
                    p->first[idx] = id;
                p->last[idx] = id;
                if (pieces[k].gather)
                    tps_engine_after(p->engine, id, gathers + k);
                if (pieces[k].reduce) {
                    tps_engine_stream_wait(p->engine, p->dp[s], id);
                    tps_pipe_add_dp(p, s, "dp_grad_reduce", pieces[k].dp_ns);
                }
            }
        }
    }
}

/* Activations forward, gradients backward, between virtual stages. */
static void
pipe_add_transfers(const TpsScenario *sc, guint64 micro, TpsPipe *p)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    for (guint s = 0; s < pp; s++) {
        for (guint c = 0; c < vpp; c++) {
            const guint vstage = c * pp + s;
            for (guint64 j = 0; j < micro; j++) {
                if (vstage > 0) {
                    guint ps = (vstage - 1) % pp, pc_ = (vstage - 1) / pp;
                    gsize to = tps_pipe_op_index(p, s, c, j, FALSE);
                    p->arrival[to] = add_transfer(
                        p, ps, s, p->last[tps_pipe_op_index(p, ps, pc_, j, FALSE)], p->first[to]);
                }
                if (vstage + 1 < pp * vpp) {
                    guint ns = (vstage + 1) % pp, nc = (vstage + 1) / pp;
                    gsize to = tps_pipe_op_index(p, s, c, j, TRUE);
                    p->arrival[to] = add_transfer(
                        p, ns, s, p->last[tps_pipe_op_index(p, ns, nc, j, TRUE)], p->first[to]);
                }
            }
        }
    }
}

/* The combined interleaved 1F1B: a steady forward's combined step waits
 * for the input of the backward it runs beside too (pre_backward before
 * any layer, pipeline-pair.c). */
static void
pipe_pair_inputs(const TpsScenario *sc, guint64 micro, TpsPipe *p)
{
    const guint pp = sc->pp;
    if (tps_pipe_pair_extra(sc) == 0)
        return;
    for (guint s = 0; s < pp; s++) {
        g_autoptr(GArray) ops = stage_order(sc, micro, s);
        for (guint i = 0; i + 1 < ops->len; i++) {
            const TpsPipeOp *f = &g_array_index(ops, TpsPipeOp, i), *b = f + 1;
            guint other;
            if (f->backward || !tps_pipe_pair_partner(sc, s, f, micro, &other))
                continue;
            const TpsTaskId in = p->arrival[tps_pipe_op_index(p, s, b->chunk, b->mb, TRUE)];
            if (in != TPS_TASK_NONE)
                tps_engine_after(p->engine,
                                 p->first[tps_pipe_op_index(p, s, f->chunk, f->mb, FALSE)], in);
        }
    }
}

/* Without overlap, the whole reduction follows the stage's last
 * backward. */
static void
pipe_add_tail_reductions(const TpsScenario *sc, TpsPipe *p)
{
    g_autoptr(GArray) reductions = g_array_new(FALSE, FALSE, sizeof(TpsTime));
    for (guint s = 0; s < sc->pp; s++) {
        if (!sc->overlap_grad_reduce && tps_scenario_grad_ranks(sc) > 1 && !tps_fsdp_grads(sc)) {
            tps_engine_stream_wait(p->engine, p->dp[s],
                                   tps_engine_record(p->engine, p->compute[s]));
            tps_pipe_tail_reductions(sc, s, reductions);
            for (guint k = 0; k < reductions->len; k++)
                tps_pipe_add_dp(p, s, "dp_grad_reduce", g_array_index(reductions, TpsTime, k));
        }
    }
}

/* Then the optimizer step of every stage, after its reductions: every task
 * from the one returned on is one. */
static TpsTaskId
pipe_add_optimizer_steps(const TpsScenario *sc, TpsPipe *p)
{
    const TpsTaskId first_opt = tps_engine_n_tasks(p->engine);
    for (guint s = 0; s < sc->pp; s++) {
        const double params = tps_stage_params(sc, s);
        tps_engine_stream_wait(p->engine, p->compute[s], tps_engine_record(p->engine, p->dp[s]));
        tps_pipe_optimizer_step(p, s, params, tps_stage_optimizer_shard(sc, s));
    }
    return first_opt;
}

/* Each stage's optimizer step: from the end of its last chunk or
 * reduction to the end of its last optimizer task; the longest into
 * `fig`. */
static void
pipe_optimizer_figure(const TpsPipe *p, guint pp, TpsPipeFigures *fig)
{
    g_autofree TpsTime *before_opt = g_new0(TpsTime, pp);
    g_autofree TpsTime *opt_end = g_new0(TpsTime, pp);
    for (TpsTaskId id = 0; id < fig->tasks; id++) {
        const TpsSpan *sp = tps_engine_span(p->engine, id);
        if (id < fig->first_opt)
            before_opt[sp->rank] = MAX(before_opt[sp->rank], sp->end);
        else
            opt_end[sp->rank] = MAX(opt_end[sp->rank], sp->end);
    }
    for (guint s = 0; s < pp; s++)
        fig->optimizer = MAX(fig->optimizer, opt_end[s] - before_opt[s]);
}

/* Compute end, stage 0's busy time, and the end of DP reductions. */
static void
pipe_span_figures(const TpsPipe *p, TpsPipeFigures *fig)
{
    for (TpsTaskId id = 0; id < fig->first_opt; id++) {
        const TpsSpan *sp = tps_engine_span(p->engine, id);
        if (sp->kind == TPS_KIND_GEMM) {
            fig->compute_end = MAX(fig->compute_end, sp->end);
            if (sp->rank == 0)
                fig->busy0 += sp->end - sp->start;
        } else if (sp->kind == TPS_KIND_COMM) {
            fig->dp_end = MAX(fig->dp_end, sp->end);
        }
    }
}

/* How long stage 0's gathered first forwards wait for their all-gathers:
 * each task's start less when it could have started without them (the
 * previous task on the stream, the input's arrival). The chunk before
 * model chunk c's first forward on stage 0 is chunk c - 1's forward of
 * micro-batch pp - 1 (the warm-up). */
static void
pipe_gather_figure(const TpsPipe *p, TpsPipeFigures *fig)
{
    const TpsScenario *sc = p->sc;
    if (!tps_dp_gathers_in_forward(sc))
        return;
    for (guint c = 0; c < sc->vpp; c++) {
        const gsize idx = tps_pipe_op_index(p, 0, c, 0, FALSE);
        TpsTime ready = 0;
        if (c > 0)
            ready = tps_engine_span(p->engine,
                                    p->last[tps_pipe_op_index(p, 0, c - 1, sc->pp - 1, FALSE)])
                        ->end;
        if (p->arrival[idx] != TPS_TASK_NONE)
            ready = MAX(ready, tps_engine_span(p->engine, p->arrival[idx])->end);
        for (TpsTaskId id = p->first[idx]; id <= p->last[idx]; id++) {
            const TpsSpan *sp = tps_engine_span(p->engine, id);
            fig->gather_wait += sp->start - ready;
            ready = sp->end;
        }
    }
}

/* Build the step graph of `micro` micro-batches per replica into `p` and
 * run it. */
static gboolean
pipe_run(const TpsScenario *sc, const TpsPieceTimes *pc, guint64 micro, TpsPipe *p,
         TpsPipeFigures *fig, GError **error)
{
    memset(fig, 0, sizeof *fig);
    *p = (TpsPipe){.sc = sc, .micro = micro};
    if (!tps_pipe_chunks_fit(sc, pc, error))
        return FALSE;
    TpsPieceTimes with_amax = *pc;
    tps_pipe_amax_times(sc, &with_amax);
    pc = &with_amax;

    pipe_engine_for(sc, micro, p);
    pipe_add_ops(sc, pc, micro, p);
    pipe_add_transfers(sc, micro, p);
    pipe_pair_inputs(sc, micro, p);
    pipe_add_tail_reductions(sc, p);
    const TpsTaskId first_opt = pipe_add_optimizer_steps(sc, p);

    TpsRunStats stats;
    if (!tps_engine_run(p->engine, &stats, error)) {
        g_prefix_error(error, "%s: pipeline schedule: ", sc->file != NULL ? sc->file : sc->name);
        return FALSE;
    }
    fig->step = stats.makespan;
    fig->first_opt = first_opt;
    fig->tasks = tps_engine_n_tasks(p->engine);
    fig->events = stats.events;
    pipe_optimizer_figure(p, sc->pp, fig);
    pipe_span_figures(p, fig);
    pipe_gather_figure(p, fig);
    return TRUE;
}

/* ---- the steady state ----
 *
 * Why a repeat proves a period: the engine is deterministic and knows no
 * absolute time (only differences of integer event times), and a task's
 * fluid progress is a function of the integer times at which the set of
 * tasks beside it changed, from its start (at remaining work 1) to its end.
 * So if every task alive at a moment T, and every task that starts or ends
 * before its end, runs exactly P later as its copy one cycle later, the
 * whole state at T + P is the state at T shifted, and with the same
 * steady-state ops ahead it repeats again, cycle after cycle, until the
 * cool-down, which then runs the same as in a schedule with fewer cycles.
 * The checks below are that condition: all tasks of a window of
 * micro-batches wider than those in flight at once, compared with their
 * copies, all of it before the shorter schedule starts to differ from the
 * longer one (its first cool-down op, or an op of its last micro-batch). */

/* Whether span b is span a shifted by `shift`, start and end, and ends
 * before `limit`. */
static gboolean
same_shifted(const TpsPipe *p, TpsTaskId a, TpsTaskId b, TpsTime shift, TpsTime limit)
{
    if (a == TPS_TASK_NONE || b == TPS_TASK_NONE)
        return a == b;
    const TpsSpan *x = tps_engine_span(p->engine, a), *y = tps_engine_span(p->engine, b);
    return y->start - x->start == shift && y->end - x->end == shift && y->end < limit;
}

/* Whether every task of micro-batches [lo, hi), on every stage and model
 * chunk, forward and backward, with the transfers that feed them, runs
 * exactly `*period` ns before its copy `cycle` micro-batches later, and
 * those copies end before `limit`; the period is taken from the first
 * task. */
static gboolean
repeats(const TpsPipe *p, guint64 lo, guint64 hi, guint64 cycle, TpsTime limit, TpsTime *period)
{
    const guint pp = p->sc->pp, vpp = p->sc->vpp;
    const TpsSpan *a = tps_engine_span(p->engine, p->first[tps_pipe_op_index(p, 0, 0, lo, FALSE)]);
    const TpsSpan *b =
        tps_engine_span(p->engine, p->first[tps_pipe_op_index(p, 0, 0, lo + cycle, FALSE)]);
    *period = b->start - a->start;
    if (*period <= 0)
        return FALSE;
    for (guint64 j = lo; j < hi; j++)
        for (guint s = 0; s < pp; s++)
            for (guint c = 0; c < vpp; c++)
                for (guint bwd = 0; bwd < 2; bwd++) {
                    gsize x = tps_pipe_op_index(p, s, c, j, bwd),
                          y = tps_pipe_op_index(p, s, c, j + cycle, bwd);
                    if (!same_shifted(p, p->first[x], p->first[y], *period, limit) ||
                        !same_shifted(p, p->last[x], p->last[y], *period, limit) ||
                        !same_shifted(p, p->arrival[x], p->arrival[y], *period, limit))
                        return FALSE;
                }
    return TRUE;
}

/* Stage 0's chunk time over micro-batches [lo, lo + n). */
static TpsTime
busy_of(const TpsPipe *p, guint64 lo, guint64 n)
{
    TpsTime busy = 0;
    for (guint64 j = lo; j < lo + n; j++)
        for (guint c = 0; c < p->sc->vpp; c++)
            for (guint bwd = 0; bwd < 2; bwd++) {
                const TpsSpan *sp =
                    tps_engine_span(p->engine, p->first[tps_pipe_op_index(p, 0, c, j, bwd)]);
                busy += sp->end - sp->start;
            }
    return busy;
}

/* The position of model chunk `chunk` of micro-batch `mb` among a stage's
 * forwards (or backwards): the inverse of interleaved_op(). */
static guint64
op_position(guint pp, guint vpp, guint chunk, guint64 mb, gboolean backward)
{
    const guint c = backward ? vpp - 1 - chunk : chunk;
    return (mb / pp) * pp * vpp + (guint64)c * pp + mb % pp;
}

/* Whether every op of micro-batch `mb` is in the steady state (one forward,
 * one backward) on every stage, with `micro` micro-batches: its forwards
 * after the warm-up and its backwards before the cool-down. Stage 0 has the
 * longest warm-up and cool-down, so it decides. */
static gboolean
steady_mb(guint pp, guint vpp, guint64 micro, guint64 mb)
{
    const guint64 warmup = tps_pipeline_raw_warmup(pp, vpp, 0), total = micro * vpp;
    if (mb >= micro || warmup >= total)
        return FALSE;
    for (guint c = 0; c < vpp; c++)
        if (op_position(pp, vpp, c, mb, FALSE) < warmup ||
            op_position(pp, vpp, c, mb, TRUE) >= total - warmup)
            return FALSE;
    return TRUE;
}

/* When the shorter schedule starts to differ from a longer one: the first
 * start of a cool-down op (a backward after the stage's last forward) or of
 * an op of the last micro-batch (its backward holds the gradient
 * buckets). */
static TpsTime
divergence(const TpsPipe *p)
{
    const guint pp = p->sc->pp, vpp = p->sc->vpp;
    const guint64 total = p->micro * vpp;
    TpsTime when = TPS_TIME_NEVER;
    for (guint s = 0; s < pp; s++) {
        const guint64 warmup = MIN(tps_pipeline_raw_warmup(pp, vpp, s), total);
        for (guint c = 0; c < vpp; c++)
            for (guint bwd = 0; bwd < 2; bwd++) {
                const TpsTaskId id = p->first[tps_pipe_op_index(p, s, c, p->micro - 1, bwd)];
                when = MIN(when, tps_engine_span(p->engine, id)->start);
            }
        if (warmup == 0)
            continue;
        /* The first cool-down backward: position total - warmup. */
        guint chunk;
        guint64 mb;
        interleaved_op(pp, vpp, total - warmup, TRUE, &chunk, &mb);
        const TpsTaskId id = p->first[tps_pipe_op_index(p, s, chunk, mb, TRUE)];
        when = MIN(when, tps_engine_span(p->engine, id)->start);
    }
    return when;
}

/* A period: the micro-batches after which a stage's order repeats (the
 * interleaved schedule goes through its chunks in groups of pp). */
static guint64
group(guint pp, guint vpp)
{
    return vpp > 1 ? pp : 1;
}

/* Micro-batches with tasks in flight at once, at most: a stage's warm-up
 * forwards in micro-batches, a group of pp for the interleaved order, and
 * one for the transfers. */
static guint64
depth(guint pp, guint vpp)
{
    return (tps_pipeline_raw_warmup(pp, vpp, 0) + vpp) / vpp + group(pp, vpp) + 1;
}

/* A cycle of c periods of g micro-batches (c = 1 .. max_cycle) is looked
 * for after `settle` periods of steady state: where the transfers pace the
 * pipeline and share links, the overlaps of forward and backward transfers
 * drift by a few ns a period before they lock into a cycle of several
 * periods (or never do: then every micro-batch is simulated). The window
 * compared is REPEATS cycles plus the micro-batches in flight at once.
 * While no cycle shows, the settle time grows by SETTLE_GROWTH and the
 * longest cycle looked for by CYCLE_GROWTH up to MAX_CYCLE, as long as the
 * shorter schedule is shorter. */
#define MAX_CYCLE 16
#define CYCLE_GROWTH 4
#define REPEATS 2
#define SETTLE_FIRST 2
#define SETTLE_GROWTH 8

/* The micro-batches to simulate so that the steady state holds `settle`
 * periods of `g` micro-batches, then the window for cycles of up to
 * `max_cycle` periods and their copies, then the micro-batches in flight
 * before the cool-down: *lo is the first compared micro-batch. */
static guint64
short_micro(guint pp, guint vpp, guint64 settle, guint64 max_cycle, guint64 *lo)
{
    const guint64 g = group(pp, vpp);
    guint64 first = 0;
    while (!steady_mb(pp, vpp, G_GUINT64_CONSTANT(1) << 40, first))
        first++;
    *lo = first + settle * g;
    const guint64 end = *lo + 2 * depth(pp, vpp) + (REPEATS + 1) * max_cycle * g;
    guint64 micro = (end + g - 1) / g * g;
    while (!steady_mb(pp, vpp, micro, end - 1))
        micro += g;
    return micro;
}

/* Whether the window of a cycle of `cycle` micro-batches from `lo` repeats
 * in `p`, before it diverges from a longer schedule; fills its time. */
static gboolean
cycle_repeats(const TpsPipe *p, guint64 lo, guint64 cycle, TpsTime *period)
{
    const guint64 hi = lo + depth(p->sc->pp, p->sc->vpp) + REPEATS * cycle;
    return hi + cycle <= p->micro && repeats(p, lo, hi, cycle, divergence(p), period);
}

/* The shortest cycle (in micro-batches, a multiple of g) that repeats from
 * `lo` on in `p`, with its time; 0 if none. */
static guint64
find_cycle(const TpsPipe *p, guint64 lo, guint64 max_cycle, TpsTime *period)
{
    const guint64 g = group(p->sc->pp, p->sc->vpp);
    for (guint64 c = 1; c <= max_cycle; c++)
        if (cycle_repeats(p, lo, c * g, period))
            return c * g;
    return 0;
}

guint64
tps_pipeline_min_ops(guint pp, guint vpp, guint64 micro)
{
    g_return_val_if_fail(pp >= 1 && vpp >= 1, 0);
    guint64 lo;
    const guint64 shorter = short_micro(pp, vpp, SETTLE_FIRST, 1, &lo);
    return (guint64)pp * vpp * 2 * MIN(micro, shorter);
}

/* ---- the step ---- */

static gboolean
too_many_ops(const TpsScenario *sc, guint64 micro)
{
    return micro > TPS_PIPELINE_MAX_OPS / 2 / ((guint64)sc->pp * sc->vpp);
}

static void
finish(const TpsScenario *sc, const TpsPipeFigures *fig, guint64 simulated, TpsStepResult *res)
{
    res->step = fig->step;
    res->compute_end = fig->compute_end;
    res->optimizer = fig->optimizer;
    res->param_gather_exposed = fig->gather_wait;
    res->bubble_fraction =
        fig->compute_end > 0 ? 1.0 - (double)fig->busy0 / (double)fig->compute_end : 0.0;
    res->dp_exposed = fig->dp_end > fig->compute_end ? fig->dp_end - fig->compute_end : 0;
    res->tasks = fig->tasks;
    res->events = fig->events;
    res->micro_simulated = simulated;
    res->shared = fig->shared;
    res->lone = fig->lone;
    res->in_order = fig->in_order;
    res->periods = fig->periods;
    res->part_ops = fig->part_ops;

    for (guint s = 0; s < sc->pp; s++) {
        TpsStageMemory m;
        tps_pipeline_stage_memory(sc, s, &m);
        if (s == 0 || m.total > res->memory.total) {
            res->memory = m;
            res->busiest_stage = s;
        }
    }
}

static guint64
micro_batches(const TpsScenario *sc)
{
    return sc->global_batch / (sc->micro_batch * sc->dp);
}

gboolean
tps_pipeline_simulate_full(const TpsScenario *sc, const TpsPieceTimes *pc, TpsStepResult *res,
                           GError **error)
{
    const guint64 micro = micro_batches(sc);
    memset(res, 0, sizeof(*res));
    g_return_val_if_fail(sc->pp >= 1 && micro >= 1, FALSE);
    if (too_many_ops(sc, micro)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: training.global_batch (%" G_GUINT64_FORMAT
                    "): simulating all %" G_GUINT64_FORMAT
                    " micro-batches on %u x %u virtual stages is beyond the "
                    "limit of %" G_GUINT64_FORMAT " pipeline chunks",
                    sc->file != NULL ? sc->file : sc->name, sc->global_batch, micro, sc->pp,
                    sc->vpp, (guint64)TPS_PIPELINE_MAX_OPS);
        return FALSE;
    }
    TpsPipe p;
    TpsPipeFigures fig;
    gboolean ok = pipe_run(sc, pc, micro, &p, &fig, error);
    if (ok)
        finish(sc, &fig, micro, res);
    tps_pipe_clear(&p);
    return ok;
}

gboolean
tps_pipeline_simulate_replay(const TpsScenario *sc, const TpsPieceTimes *pc, TpsStepResult *res,
                             gboolean *replayed, GError **error)
{
    const guint64 micro = micro_batches(sc);
    memset(res, 0, sizeof(*res));
    *replayed = FALSE;
    g_return_val_if_fail(sc->pp >= 1 && micro >= 1, FALSE);
    if (too_many_ops(sc, micro))
        return TRUE;
    TpsPipeFigures fig;
    if (!tps_pipe_replay(sc, pc, micro, TPS_REPLAY_CHEAPEST, &fig, replayed, error))
        return FALSE;
    if (*replayed)
        finish(sc, &fig, micro, res);
    return TRUE;
}

gboolean
tps_pipeline_simulate(const TpsScenario *sc, const TpsPieceTimes *pc, TpsStepResult *res,
                      GError **error)
{
    gboolean replayed;
    if (!tps_pipeline_simulate_replay(sc, pc, res, &replayed, error))
        return FALSE;
    return replayed || tps_pipeline_simulate_periodic(sc, pc, res, error);
}

gboolean
tps_pipeline_simulate_periodic(const TpsScenario *sc, const TpsPieceTimes *pc, TpsStepResult *res,
                               GError **error)
{
    const guint64 micro = micro_batches(sc);

    memset(res, 0, sizeof(*res));
    g_return_val_if_fail(sc->pp >= 1 && micro >= 1, FALSE);
    /* FSDP's per-layer ops: the cycle's checks and stage 0's busy time
     * read one task per op; the combined interleaved 1F1B's warm-up is
     * longer than the cycle search's (steady_mb()): every micro-batch is
     * simulated. */
    if (tps_fsdp_layer_op(sc, TRUE) || tps_pipe_pair_extra(sc) > 0)
        return tps_pipeline_simulate_full(sc, pc, res, error);

    for (guint64 settle = SETTLE_FIRST, max_cycle = 1;;
         settle *= SETTLE_GROWTH, max_cycle = MIN(max_cycle * CYCLE_GROWTH, MAX_CYCLE)) {
        guint64 lo;
        guint64 shorter = short_micro(sc->pp, sc->vpp, settle, max_cycle, &lo);
        if (shorter >= micro || too_many_ops(sc, shorter))
            break;
        TpsPipe p;
        TpsPipeFigures fig;
        if (!pipe_run(sc, pc, shorter, &p, &fig, error)) {
            tps_pipe_clear(&p);
            return FALSE;
        }
        TpsTime period;
        const guint64 cycle = find_cycle(&p, lo, max_cycle, &period);
        if (cycle == 0) {
            tps_pipe_clear(&p);
            continue;
        }
        /* Whole cycles are left out: simulate the few micro-batches more
         * that make the rest a multiple of the cycle (the same prefix, so
         * the same cycle, checked again). */
        const guint64 extra = (micro - shorter) % cycle;
        if (extra != 0) {
            tps_pipe_clear(&p);
            shorter += extra;
            if (shorter >= micro || too_many_ops(sc, shorter))
                break;
            if (!pipe_run(sc, pc, shorter, &p, &fig, error)) {
                tps_pipe_clear(&p);
                return FALSE;
            }
            TpsTime again;
            if (!cycle_repeats(&p, lo, cycle, &again) || again != period) {
                tps_pipe_clear(&p);
                continue;
            }
        }
        /* From `lo` on the schedule repeats every cycle (see
         * docs/step-model.md): the micro-batches left out are `skipped`
         * more cycles of it, and everything after them (cool-down, DP
         * reduction, optimizer) comes that much later. */
        const guint64 skipped = (micro - shorter) / cycle;
        const TpsTime busy = busy_of(&p, lo, cycle);
        tps_pipe_clear(&p);
        if ((guint64)period > (guint64)(TPS_SCENARIO_MAX_STEP_NS - fig.step) / skipped) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: training.global_batch (%" G_GUINT64_FORMAT "): the step would "
                        "last more than %" G_GINT64_FORMAT " ns, the longest the simulation "
                        "represents",
                        sc->file != NULL ? sc->file : sc->name, sc->global_batch,
                        TPS_SCENARIO_MAX_STEP_NS);
            return FALSE;
        }
        fig.step += (TpsTime)skipped * period;
        fig.compute_end += (TpsTime)skipped * period;
        if (fig.dp_end > 0)
            fig.dp_end += (TpsTime)skipped * period;
        fig.busy0 += (TpsTime)skipped * busy;
        finish(sc, &fig, shorter, res);
        res->period = period;
        res->cycle = cycle;
        res->cycle_from = lo;
        return TRUE;
    }
    /* Short enough to simulate whole, or no periodic regime found in a
     * shorter schedule: every micro-batch, within the limit. */
    return tps_pipeline_simulate_full(sc, pc, res, error);
}

/* ---- the schedule as data ---- */

/* Every micro-batch is drawn up to this many chunks: a figure of a few
 * thousand boxes is drawn in well under a second. */
#define SCHEDULE_DRAW_OPS 4096

gboolean
tps_pipeline_schedule(const TpsScenario *sc, const TpsPieceTimes *pc, TpsStepSchedule **out,
                      GError **error)
{
    g_autoptr(TpsStepSchedule) s = g_new0(TpsStepSchedule, 1);
    if (!tps_pipeline_simulate(sc, pc, &s->result, error))
        return FALSE;
    s->pp = sc->pp;
    s->vpp = sc->vpp;
    s->micro_step = micro_batches(sc);
    /* The schedule the step's times came from: the shorter one when it was
     * extrapolated, else every micro-batch (drawn only when cheap: with no
     * cycle and many chunks, the first SCHEDULE_DRAW_OPS are drawn, which
     * the figure says). */
    s->micro = s->result.cycle > 0 ? s->result.micro_simulated : s->micro_step;
    const guint64 per_mb = (guint64)sc->pp * sc->vpp * 2;
    if (s->result.cycle == 0 && s->micro * per_mb > SCHEDULE_DRAW_OPS)
        s->micro = MAX(SCHEDULE_DRAW_OPS / per_mb, 1);
    TpsPipe p;
    TpsPipeFigures fig;
    if (!pipe_run(sc, pc, s->micro, &p, &fig, error)) {
        tps_pipe_clear(&p);
        return FALSE;
    }
    s->run = tps_engine_export_run(p.engine);
    s->run->label = g_strdup("pipeline");
    s->run->fwd_start = 0;
    s->run->fwd_end = fig.step;
    s->ops = g_array_new(FALSE, FALSE, sizeof(TpsStepOp));
    for (guint st = 0; st < sc->pp; st++)
        for (guint c = 0; c < sc->vpp; c++)
            for (guint64 j = 0; j < s->micro; j++)
                for (guint bwd = 0; bwd < 2; bwd++) {
                    const gsize idx = tps_pipe_op_index(&p, st, c, j, bwd);
                    TpsStepOp op = {.stage = st,
                                    .chunk = c,
                                    .mb = j,
                                    .backward = bwd,
                                    .first = p.first[idx],
                                    .last = p.last[idx],
                                    .arrival = p.arrival[idx]};
                    g_array_append_val(s->ops, op);
                }
    s->first_optimizer = fig.first_opt;
    tps_pipe_clear(&p);
    *out = g_steal_pointer(&s);
    return TRUE;
}

void
tps_step_schedule_free(TpsStepSchedule *s)
{
    if (s == NULL)
        return;
    if (s->run)
        tps_run_free(s->run);
    if (s->ops)
        g_array_unref(s->ops);
    g_free(s);
}
