/* The data-parallel collectives of the step as Megatron-Core's DDP and
 * distributed optimizer run them (megatron/core/distributed/
 * distributed_data_parallel.py, param_and_grad_buffer.py): the gradient
 * buckets of a model chunk, the bytes of a bucket's gradient reduction
 * and of its parameter all-gather by dtype, and a collective's time over
 * the DP group placed on the topology. See docs/step-model.md, "Data
 * parallelism".
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "cost/collective.h"
#include "sched/scenario.h"

/* One gradient (and parameter) bucket of a model chunk on one GPU. */
typedef struct {
    guint layers;       /* the chunk's layers in it */
    guint dense;        /* of them, the dense layers of a model that mixes dense and
                           MoE layers (0 where it does not) */
    double params;      /* its parameters: the layers', and the head's or the
                           embedding's where it holds them */
    double gemm_params; /* of them, the layers' GEMM weights */
    double expert_params; /* of them, the routed experts' (model.moe): reduced over the
                             expert data-parallel group */
} TpsDpBucket;

/* The bucket size in parameters: training.ddp_bucket_size, else
 * Megatron's max(40M, 1M x dp). */
double tps_dp_bucket_size(const TpsScenario *scenario);

/* The buckets of model chunk `chunk` of stage `stage` into `out` (room
 * for the chunk's layers), in the order the backward completes them:
 * bucket 0 holds the chunk's last layers (and the head on the last
 * virtual stage), the last one its first layers (and the embedding on the
 * first virtual stage). Each holds ceil(bucket size / a layer's
 * parameters) layers, the first-layers bucket the rest. Returns their
 * number. */
guint tps_dp_buckets(const TpsScenario *scenario, guint stage, guint chunk, TpsDpBucket *out);

/* The expert data-parallel group of a mixture of experts: the ranks of
 * the expert grid (cost/grid.h) that hold the same experts, tp x cp x dp
 * / (etp x ep) of them; Megatron reduces (and the distributed optimizer
 * shards) the experts' gradients over it. */
guint tps_dp_expert_ranks(const TpsScenario *scenario);

/* The gradient reduction (kind `kind`) or parameter all-gather of
 * `bytes`, of which `expert_bytes` are the routed experts': the dense
 * part over the DP group, then the experts' over the expert DP group (one
 * after the other on the DP stream), each with its launch. */
TpsTime tps_dp_split_collective_ns(const TpsScenario *scenario, TpsCollKind kind, double bytes,
                                   double expert_bytes);

/* Bytes of the gradient reduction of `params` parameters: 4 each in fp32,
 * 2 in bf16 (training.grad_reduce_dtype). */
double tps_dp_grad_bytes(const TpsScenario *scenario, double params);

/* Bytes of the parameter all-gather of `params` parameters of which
 * `gemm_params` are GEMM weights: 2 each (bf16), the GEMM weights 1 with
 * training.fp8_param_gather. */
double tps_dp_param_bytes(const TpsScenario *scenario, double params, double gemm_params);

/* Whether the GEMM weights are kept and all-gathered in FP8
 * (fp8_param_gather, under fp8 with the distributed optimizer: a search
 * that turns the optimizer off turns it off with it). */
gboolean tps_dp_fp8_params(const TpsScenario *scenario);

/* Whether the parameter all-gather runs bucket by bucket under the
 * step's first forwards (overlap_param_gather with the distributed
 * optimizer, or FSDP optim / optim_grads, over dp >= 2) rather than in
 * the optimizer step. FSDP's buckets are its units, one layer each. */
gboolean tps_dp_gathers_in_forward(const TpsScenario *scenario);

/* Whether the optimizer states are sharded over the DP group: the
 * distributed optimizer, or any training.fsdp strategy. */
gboolean tps_dp_sharded_optimizer(const TpsScenario *scenario);

/* Whether FSDP shards the gradients (optim_grads, optim_grads_params):
 * each layer's gradients reduce-scattered after its backward of every
 * micro-batch, as Megatron FSDP's grad_reduce_every_bprop. */
gboolean tps_fsdp_grads(const TpsScenario *scenario);

/* Whether FSDP shards the parameters (optim_grads_params): each layer
 * all-gathered before its forward and again before its backward of every
 * micro-batch, and its unsharded copy dropped after. */
gboolean tps_fsdp_params(const TpsScenario *scenario);

/* Whether every forward (backward: FALSE, TRUE) of the step goes layer by
 * layer with FSDP's per-layer collectives (over dp >= 2). */
gboolean tps_fsdp_layer_op(const TpsScenario *scenario, gboolean backward);

/* A collective of `bytes` over the dp replicas of one GPU (rank 0's DP
 * group, placed on the topology), with its launch; 0 without replicas. */
TpsTime tps_dp_collective_ns(const TpsScenario *scenario, TpsCollKind kind, double bytes);
