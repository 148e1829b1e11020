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

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "engine/engine.h"

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

GArray *
tps_pipeline_order(guint pp, guint vpp, guint64 micro, guint stage)
{
    GArray *ops = g_array_new(FALSE, FALSE, sizeof(TpsPipeOp));
    const guint64 total = micro * vpp;
    guint64 warmup;

    g_return_val_if_fail(stage < pp && vpp >= 1, ops);
    if (vpp == 1)
        warmup = MIN((guint64)(pp - stage - 1), micro);
    else
        warmup = MIN((guint64)(pp - stage - 1) * 2 + (guint64)(vpp - 1) * pp, total);

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

/* ---- memory ---- */

double
tps_layer_activation_bytes(const TpsScenario *sc)
{
    const double t = sc->tp, h = sc->hidden, a = sc->heads;
    const double s = sc->seq_len, b = sc->micro_batch;
    /* s b h (34 + 5 a s / h) bytes without parallelism; 10 + 24/t + 5as/(ht)
     * with TP only, (34 + 5as/h)/t with TP and SP. The 5as/h term (attention
     * scores, softmax and dropout outputs) is not stored by flash attention
     * or under selective recompute; full recompute keeps only the layer
     * input. */
    double scores = 5.0 * a * s / h;
    if (sc->attention == TPS_ATTENTION_FLASH || sc->recompute == TPS_RECOMPUTE_SELECTIVE)
        scores = 0.0;
    if (sc->recompute == TPS_RECOMPUTE_FULL)
        return 2.0 * s * b * h / (sc->sp ? t : 1.0);
    if (sc->sp)
        return s * b * h * (34.0 + scores) / t;
    return s * b * h * (10.0 + 24.0 / t + scores / t);
}

static double
layer_params_per_gpu(const TpsScenario *sc)
{
    const double t = sc->tp, h = sc->hidden, f = sc->ffn_hidden;
    /* QKV, projection, FC1, FC2 weights and biases split by TP; the two
     * LayerNorms (and the row-parallel biases) replicated. */
    return (4.0 * h * h + 2.0 * h * f + 3.0 * h + f) / t + 5.0 * h;
}

double
tps_stage_params(const TpsScenario *sc, guint stage)
{
    const double h = sc->hidden, t = sc->tp;
    double params = (double)sc->layers / sc->pp * layer_params_per_gpu(sc);
    if (stage == 0)
        params += (double)sc->vocab * h / t + (double)sc->seq_len * h; /* word + position */
    if (stage == sc->pp - 1) {
        params += 2.0 * h; /* final LayerNorm */
        if (sc->pp > 1)
            params += (double)sc->vocab * h / t; /* the output layer's copy of the embedding */
    }
    return params;
}

void
tps_pipeline_stage_memory(const TpsScenario *sc, guint stage, TpsStageMemory *out)
{
    const double params = tps_stage_params(sc, stage);
    const double layers_per_chunk = (double)sc->layers / ((double)sc->pp * sc->vpp);
    const double act_layer = tps_layer_activation_bytes(sc);
    const guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);

    /* bf16 weight (2) and fp32 main gradient (4); fp32 master weight and two
     * Adam moments (12), sharded over dp by the distributed optimizer. */
    out->weights_grads = 6.0 * params;
    out->optimizer = 12.0 * params / (sc->distributed_optimizer ? sc->dp : 1);

    /* Activations in flight: walk the stage's schedule. */
    g_autoptr(GArray) ops = tps_pipeline_order(sc->pp, sc->vpp, micro, stage);
    double held = 0.0, peak = 0.0;
    for (guint i = 0; i < ops->len; i++) {
        const TpsPipeOp *op = &g_array_index(ops, TpsPipeOp, i);
        held += (op->backward ? -1.0 : 1.0) * layers_per_chunk * act_layer;
        peak = MAX(peak, held);
    }
    /* The last stage's fp32 logits for the micro-batch in its loss. */
    if (stage == sc->pp - 1)
        peak += 4.0 * sc->seq_len * sc->micro_batch * (double)sc->vocab / sc->tp;
    out->activations = peak;
    out->total = out->weights_grads + out->optimizer + out->activations;
}

/* ---- data-parallel collectives ---- */

/* A gradient or parameter collective over the dp replicas of one GPU, with
 * its launch. Replicas sit in other nodes (each GPU with its own NIC) unless
 * tp x dp GPUs fit in one node. */
static TpsTime
dp_collective(const TpsScenario *sc, TpsCollKind kind, double bytes)
{
    if (sc->dp < 2 || bytes <= 0.0)
        return 0;
    TpsHardware hw = sc->hardware; /* shallow: only read */
    if ((guint64)sc->tp * sc->dp > sc->hardware.gpus_per_node) {
        hw.gpus_per_node = 1;
        hw.nics_per_node = 1;
    }
    TpsCollPlan plan;
    tps_coll_plan(&hw, kind, bytes, sc->dp, &plan);
    return tps_cost_launch_ns(&sc->hardware) + tps_coll_time_ns(&hw, &plan);
}

/* ---- the pipeline graph ---- */

typedef struct {
    TpsEngine *engine;
    const TpsScenario *sc;
    TpsStreamId *compute, *dp; /* per stage */
} Pipe;

static TpsTaskId
add_chunk(Pipe *p, guint stage, TpsTaskKind kind, const char *name, TpsTime ns)
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
 * weights and biases and the two LayerNorms' weights and biases; the word
 * and position embeddings; the final LayerNorm; the output layer's copy. */
static double
stage_tensors(const TpsScenario *sc, guint stage)
{
    double n = 12.0 * sc->layers / sc->pp;
    if (stage == 0)
        n += 2;
    if (stage == sc->pp - 1)
        n += 2 + (sc->pp > 1 ? 1 : 0);
    return n;
}

/* A launched kernel of `ns` on the stage's compute stream. */
static TpsTaskId
add_issued(Pipe *p, guint stage, TpsTaskKind kind, const char *name, TpsTime ns, TpsTime host)
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
multi_tensor(Pipe *p, guint stage, const char *name, guint depth, double elements, double tensors,
             double bytes)
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
scalar_all_reduce_item(Pipe *p, guint stage, const char *name)
{
    const TpsScenario *sc = p->sc;
    const TpsHardware *hw = &sc->hardware;
    const guint ranks = sc->tp * sc->pp;
    if (ranks < 2)
        return;
    TpsCollPlan plan;
    tps_coll_plan(hw, TPS_COLL_ALL_REDUCE, 4.0, ranks, &plan);
    TpsTaskId ar = add_issued(p, stage, TPS_KIND_COMM, name, tps_coll_time_ns(hw, &plan),
                              tps_time_from_us(hw->host_nccl_us));
    tps_engine_host_sync(p->engine, stage, ar, tps_time_from_us(hw->host_memcpy_us));
}

/* The optimizer step of `stage` over `params` parameters of which this GPU
 * updates `shard` (all, or 1/dp with the distributed optimizer). */
static void
optimizer_step(Pipe *p, guint stage, double params, double shard)
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
    if (sc->distributed_optimizer) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COMM,
            .name = "optimizer.param_gather",
            .rank = stage,
            .stream = p->compute[stage],
            .parent = TPS_TASK_NONE,
            .floor_ns = MAX(dp_collective(sc, TPS_COLL_ALL_GATHER, 2.0 * params), 1),
        };
        tps_engine_add(p->engine, &spec);
    }
    /* The next step starts from a zeroed fp32 gradient buffer. */
    TpsKernelCost zero;
    tps_cost_memory(hw, 4.0 * params, &zero);
    add_issued(p, stage, TPS_KIND_MEMORY, "optimizer.zero_grad",
               tps_kernel_cost_solo_ns(hw, &zero, hw->sms),
               tps_time_from_us(hw->host_elementwise_us));
}

static TpsTaskId
add_dp(Pipe *p, guint stage, const char *name, TpsTime ns)
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

/* The activation (or gradient) of one micro-batch from stage `from` to
 * `to`, after `producer`; `consumer` waits for it. */
static void
add_transfer(Pipe *p, guint from, guint to, TpsTaskId producer, TpsTaskId consumer)
{
    const TpsScenario *sc = p->sc;
    if (from == to) {
        tps_engine_after(p->engine, consumer, producer);
        return;
    }
    const gboolean same_node =
        from / tps_engine_machine(p->engine)->gpus_per_node ==
        to / tps_engine_machine(p->engine)->gpus_per_node;
    TpsTaskSpec spec = {
        .kind = TPS_KIND_FLOW,
        .name = "p2p",
        .rank = from,
        .stream = TPS_STREAM_NONE,
        .parent = TPS_TASK_NONE,
        .fixed_ns = tps_time_from_us(same_node ? sc->hardware.nccl_hw_latency_us[TPS_PROTO_SIMPLE]
                                               : sc->hardware.network_latency_us),
        .dst_rank = to,
        .link_bytes = (double)sc->micro_batch * sc->seq_len * sc->hidden *
                      tps_dtype_bytes(sc->dtype),
    };
    TpsTaskId flow = tps_engine_add(p->engine, &spec);
    tps_engine_after(p->engine, flow, producer);
    tps_engine_after(p->engine, consumer, flow);
}

gboolean
tps_pipeline_simulate(const TpsScenario *sc, const TpsPieceTimes *pc, TpsStepResult *res,
                      GError **error)
{
    const guint pp = sc->pp, vpp = sc->vpp, tp = sc->tp;
    const guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
    const guint layers_chunk = (guint)(sc->layers / ((guint64)pp * vpp));
    const TpsHardware *hw = &sc->hardware;
    const guint gpn = MAX(hw->gpus_per_node, 1u);
    const guint nodes_per_stage = tp > gpn ? (tp + gpn - 1) / gpn : 1;
    g_autofree TpsTime *before_opt = NULL, *opt_end = NULL;
    gboolean ok = FALSE;

    memset(res, 0, sizeof(*res));
    g_return_val_if_fail(pp >= 1 && micro >= 1, FALSE);

    TpsMachine machine = {
        .ranks = pp,
        .gpus_per_node = tp < gpn ? gpn / tp : 1, /* stages per node */
        .sms = hw->sms,
        .hbm_gbps = 0.0, /* not modelled: chunks carry their own times */
        .nvlink_gbps = tp * hw->nvlink_gbps * hw->nvlink_efficiency,
        .nic_gbps = nodes_per_stage * hw->nics_per_node * hw->nic_gbps,
        .copy_engines = 1,
    };
    g_autofree TpsStreamId *compute = g_new(TpsStreamId, pp);
    g_autofree TpsStreamId *dp = g_new(TpsStreamId, pp);
    Pipe p = {.engine = tps_engine_new(&machine), .sc = sc, .compute = compute, .dp = dp};
    for (guint s = 0; s < pp; s++) {
        p.compute[s] = tps_engine_add_stream(p.engine, s, 0, "compute");
        p.dp[s] = tps_engine_add_stream(p.engine, s, 0, "dp");
    }
    /* Chunks and a transfer per chunk (bucket pieces and DP tasks are few);
     * each transfer has two edges, each chunk its stream edge. */
    const guint64 chunks = (guint64)pp * vpp * micro * 2;
    tps_engine_reserve(p.engine, (guint)MIN(chunks * 2 + 64 * pp, G_MAXUINT32 / 2),
                       (guint)MIN(chunks * 3 + 64 * pp, G_MAXUINT32 / 2));

    /* Gradient buckets: layers per bucket (Megatron's DDP buckets of
     * max(40M, 1M x dp) parameters). */
    const double layer_params = layer_params_per_gpu(sc);
    const double bucket_params = MAX(40e6, 1e6 * sc->dp);
    const guint layers_per_bucket =
        (guint)MIN((double)layers_chunk, MAX(1.0, ceil(bucket_params / layer_params)));
    const TpsCollKind grad_kind =
        sc->distributed_optimizer ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE;

    /* ids[((stage * vpp + chunk) * micro + mb) * 2 + backward]: the chunk's
     * first and last task (the last micro-batch's backward is split into
     * buckets). */
    const gsize n_ops = (gsize)pp * vpp * micro * 2;
    g_autofree TpsTaskId *first = g_new(TpsTaskId, n_ops);
    g_autofree TpsTaskId *last = g_new(TpsTaskId, n_ops);
#define OP_INDEX(s, c, j, bwd) ((((gsize)(s) * vpp + (c)) * micro + (j)) * 2 + (bwd))

    for (guint s = 0; s < pp; s++) {
        g_autoptr(GArray) ops = tps_pipeline_order(pp, vpp, micro, s);
        for (guint i = 0; i < ops->len; i++) {
            const TpsPipeOp *op = &g_array_index(ops, TpsPipeOp, i);
            const guint vstage = op->chunk * pp + s;
            const gboolean first_v = vstage == 0, last_v = vstage == pp * vpp - 1;
            const gsize idx = OP_INDEX(s, op->chunk, op->mb, op->backward);
            if (!op->backward) {
                TpsTime ns = layers_chunk * pc->layer_fwd + (first_v ? pc->emb_fwd : 0) +
                             (last_v ? pc->head_fwd : 0);
                first[idx] = last[idx] = add_chunk(&p, s, TPS_KIND_GEMM, "forward", ns);
                continue;
            }
            const TpsTime extra = (first_v ? pc->emb_bwd : 0) + (last_v ? pc->head_bwd : 0);
            const gboolean final_mb = op->mb == micro - 1;
            if (!final_mb || !sc->overlap_grad_reduce || sc->dp < 2) {
                first[idx] = last[idx] =
                    add_chunk(&p, s, TPS_KIND_GEMM, "backward", layers_chunk * pc->layer_bwd + extra);
                continue;
            }
            /* The last micro-batch: layer by layer (in reverse), each bucket
             * of gradients reduced as soon as it is complete. */
            TpsTime carry = last_v ? pc->head_bwd : 0;
            first[idx] = TPS_TASK_NONE;
            for (guint done = 0; done < layers_chunk;) {
                guint n = MIN(layers_per_bucket, layers_chunk - done);
                done += n;
                gboolean tail = done == layers_chunk;
                TpsTime ns = n * pc->layer_bwd + carry + (tail && first_v ? pc->emb_bwd : 0);
                carry = 0;
                TpsTaskId piece = add_chunk(&p, s, TPS_KIND_GEMM, "backward", ns);
                if (first[idx] == TPS_TASK_NONE)
                    first[idx] = piece;
                last[idx] = piece;
                double grads = n * layer_params;
                if (done == n && last_v)
                    grads += 2.0 * sc->hidden +
                             (pp > 1 ? (double)sc->vocab * sc->hidden / tp : 0.0);
                if (tail && first_v)
                    grads += tps_stage_params(sc, s) - layers_chunk * vpp * layer_params;
                tps_engine_stream_wait(p.engine, p.dp[s], piece);
                add_dp(&p, s, "dp_grad_reduce", dp_collective(sc, grad_kind, 4.0 * grads));
            }
        }
    }

    /* Activations forward, gradients backward, between virtual stages. */
    for (guint s = 0; s < pp; s++) {
        for (guint c = 0; c < vpp; c++) {
            const guint vstage = c * pp + s;
            for (guint64 j = 0; j < micro; j++) {
                if (vstage > 0) {
                    guint ps = (vstage - 1) % pp, pc_ = (vstage - 1) / pp;
                    add_transfer(&p, ps, s, last[OP_INDEX(ps, pc_, j, 0)],
                                 first[OP_INDEX(s, c, j, 0)]);
                }
                if (vstage + 1 < pp * vpp) {
                    guint ns = (vstage + 1) % pp, nc = (vstage + 1) / pp;
                    add_transfer(&p, ns, s, last[OP_INDEX(ns, nc, j, 1)],
                                 first[OP_INDEX(s, c, j, 1)]);
                }
            }
        }
    }

    /* Without overlap, the whole reduction follows the stage's last
     * backward. */
    for (guint s = 0; s < pp; s++) {
        const double params = tps_stage_params(sc, s);
        if (!sc->overlap_grad_reduce && sc->dp > 1) {
            tps_engine_stream_wait(p.engine, p.dp[s], tps_engine_record(p.engine, p.compute[s]));
            for (double left = params; left > 0; left -= bucket_params)
                add_dp(&p, s, "dp_grad_reduce",
                       dp_collective(sc, grad_kind, 4.0 * MIN(left, bucket_params)));
        }
    }
    /* Then the optimizer step: every task from here on is one. */
    const TpsTaskId first_opt = tps_engine_n_tasks(p.engine);
    for (guint s = 0; s < pp; s++) {
        const double params = tps_stage_params(sc, s);
        tps_engine_stream_wait(p.engine, p.compute[s], tps_engine_record(p.engine, p.dp[s]));
        optimizer_step(&p, s, params, params / (sc->distributed_optimizer ? sc->dp : 1));
    }
#undef OP_INDEX

    TpsRunStats stats;
    if (!tps_engine_run(p.engine, &stats, error)) {
        g_prefix_error(error, "%s: pipeline schedule: ", sc->name);
        goto out;
    }
    res->step = stats.makespan;
    res->tasks = tps_engine_n_tasks(p.engine);
    res->events = stats.events;

    /* Each stage's optimizer step: from the end of its last chunk or
     * reduction to the end of its last optimizer task. */
    before_opt = g_new0(TpsTime, pp);
    opt_end = g_new0(TpsTime, pp);
    for (TpsTaskId id = 0; id < res->tasks; id++) {
        const TpsSpan *sp = tps_engine_span(p.engine, id);
        if (id < first_opt)
            before_opt[sp->rank] = MAX(before_opt[sp->rank], sp->end);
        else
            opt_end[sp->rank] = MAX(opt_end[sp->rank], sp->end);
    }
    for (guint s = 0; s < pp; s++)
        res->optimizer = MAX(res->optimizer, opt_end[s] - before_opt[s]);

    /* Compute end, stage 0's busy time, and the end of DP reductions. */
    TpsTime busy0 = 0, dp_end = 0;
    for (TpsTaskId id = 0; id < first_opt; id++) {
        const TpsSpan *sp = tps_engine_span(p.engine, id);
        if (sp->kind == TPS_KIND_GEMM) {
            res->compute_end = MAX(res->compute_end, sp->end);
            if (sp->rank == 0)
                busy0 += sp->end - sp->start;
        } else if (sp->kind == TPS_KIND_COMM) {
            dp_end = MAX(dp_end, sp->end);
        }
    }
    res->bubble_fraction =
        res->compute_end > 0 ? 1.0 - (double)busy0 / (double)res->compute_end : 0.0;
    res->dp_exposed = dp_end > res->compute_end ? dp_end - res->compute_end : 0;

    for (guint s = 0; s < pp; s++) {
        TpsStageMemory m;
        tps_pipeline_stage_memory(sc, s, &m);
        if (s == 0 || m.total > res->memory.total) {
            res->memory = m;
            res->busiest_stage = s;
        }
    }
    ok = TRUE;
out:
    tps_engine_free(p.engine);
    return ok;
}
