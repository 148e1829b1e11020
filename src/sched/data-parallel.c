/* The data-parallel collectives of the step: see data-parallel.h. */
#include "sched/data-parallel.h"

#include <math.h>

#include "cost/collective-ce.h"
#include "cost/kernel-cost.h"
#include "sched/pipeline.h"
#include "sched/placement.h"

double
tps_dp_bucket_size(const TpsScenario *sc)
{
    /* distributed_data_parallel.py: bucket_size = max(40000000, 1000000 x
     * the DP group's size) unless --ddp-bucket-size gives it. */
    return sc->ddp_bucket_size > 0 ? (double)sc->ddp_bucket_size : MAX(40e6, 1e6 * tps_scenario_grad_ranks(sc));
}

/* The final norm and the output layer's own weight (a copy of the
 * embedding when tied in a pipeline) of the last stage. */
static double
head_params(const TpsScenario *sc)
{
    const gboolean output = sc->pp > 1 || !sc->tie_embeddings;
    return (sc->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0) * sc->hidden +
           (output ? (double)sc->vocab * sc->hidden / sc->tp : 0.0);
}

/* One layer's parameters, GEMM weights and routed experts' parameters:
 * [0] of the scenario's layer, [1] of a mixing model's dense layer. */
typedef struct {
    double params[2], gemm[2], expert[2];
} LayerParams;

static void
layer_params_of(const TpsScenario *sc, LayerParams *lp)
{
    lp->params[0] = lp->params[1] = tps_layer_params_per_gpu(sc);
    lp->gemm[0] = lp->gemm[1] = tps_layer_gemm_params_per_gpu(sc);
    lp->expert[0] = lp->expert[1] = tps_layer_expert_params_per_gpu(sc);
    if (!tps_scenario_mixes_layers(sc))
        return;
    TpsScenario dense;
    tps_scenario_dense_layer(sc, &dense);
    lp->params[1] = tps_layer_params_per_gpu(&dense);
    lp->gemm[1] = tps_layer_gemm_params_per_gpu(&dense);
    lp->expert[1] = tps_layer_expert_params_per_gpu(&dense);
}

/* `n` layers of which `dense` are dense: their sum of a per-layer value. */
static double
kinds_sum(guint n, guint dense, const double value[2])
{
    return dense == 0 ? n * value[0] : (n - dense) * value[0] + dense * value[1];
}

/* The layers of the next bucket, whose last layer is `end` - 1 (the
 * buckets fill from a chunk's last layer, `first` its first): the even
 * `per_bucket`, but in a model that mixes dense and MoE layers (unlike
 * sizes) as Megatron's _ParamAndGradBuffer closes a bucket, once the
 * parameters added in backward order reach the bucket size. */
static guint
next_bucket_layers(const TpsScenario *sc, guint64 first, guint64 end, guint per_bucket,
                   const LayerParams *lp)
{
    if (!tps_scenario_mixes_layers(sc) || sc->fsdp != TPS_FSDP_NONE)
        return (guint)MIN(per_bucket, end - first);
    const double size = tps_dp_bucket_size(sc);
    double params = 0.0;
    guint n = 0;
    while (end - n > first && params < size) {
        n++;
        params += lp->params[tps_scenario_moe_layer(sc, end - n) ? 0 : 1];
    }
    return n;
}

guint
tps_dp_buckets(const TpsScenario *sc, guint s, guint chunk, TpsDpBucket *out)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    const guint layers_chunk = tps_scenario_chunk_layers(sc, s, chunk);
    const guint vstage = chunk * pp + s;
    const gboolean first_v = vstage == 0, last_v = vstage == pp * vpp - 1;
    LayerParams lp;
    layer_params_of(sc, &lp);
    /* FSDP's units are the transformer layers (one bucket each). */
    const guint per_bucket =
        sc->fsdp != TPS_FSDP_NONE
            ? 1u
            : (guint)MIN((double)layers_chunk,
                         MAX(1.0, ceil(tps_dp_bucket_size(sc) / lp.params[0])));
    const guint64 first =
        tps_scenario_mixes_layers(sc) ? tps_scenario_chunk_first_layer(sc, s, chunk) : 0;
    guint count = 0;
    /* At least one bucket: a chunk of no layer (Megatron's embedding
     * counted in the split) still has its embedding's or head's. */
    guint done = 0;
    do {
        const guint64 end = first + layers_chunk - done;
        const guint n = next_bucket_layers(sc, first, end, per_bucket, &lp);
        const guint dense =
            tps_scenario_mixes_layers(sc) ? tps_scenario_dense_layers_in(sc, end - n, n) : 0;
        done += n;
        TpsDpBucket b = {.layers = n,
                         .dense = dense,
                         .params = kinds_sum(n, dense, lp.params),
                         .gemm_params = kinds_sum(n, dense, lp.gemm),
                         .expert_params = kinds_sum(n, dense, lp.expert)};
        if (done == n && last_v)
            b.params += head_params(sc);
        /* The embedding: what the stage holds beyond its layers (and its
         * head when it is also the last stage). */
        if (done == layers_chunk && first_v)
            b.params += tps_stage_params(sc, s) -
                        tps_stage_layers_sum(sc, s, tps_layer_params_per_gpu) -
                        (s == pp - 1 ? head_params(sc) : 0.0);
        out[count++] = b;
    } while (done < layers_chunk);
    return count;
}

double
tps_dp_grad_bytes(const TpsScenario *sc, double params)
{
    return (sc->grad_reduce_dtype == TPS_GRAD_REDUCE_BF16 ? 2.0 : 4.0) * params;
}

double
tps_dp_param_bytes(const TpsScenario *sc, double params, double gemm_params)
{
    return 2.0 * params - (tps_dp_fp8_params(sc) ? gemm_params : 0.0);
}

gboolean
tps_dp_fp8_params(const TpsScenario *sc)
{
    return sc->fp8_param_gather && tps_dp_sharded_optimizer(sc) && sc->dtype == TPS_DTYPE_FP8;
}

gboolean
tps_dp_gathers_in_forward(const TpsScenario *sc)
{
    return sc->overlap_param_gather && tps_dp_sharded_optimizer(sc) && !tps_fsdp_params(sc) &&
           tps_scenario_grad_ranks(sc) >= 2;
}

gboolean
tps_dp_sharded_optimizer(const TpsScenario *sc)
{
    return sc->distributed_optimizer || sc->fsdp != TPS_FSDP_NONE;
}

gboolean
tps_fsdp_grads(const TpsScenario *sc)
{
    return sc->fsdp == TPS_FSDP_OPTIM_GRADS || sc->fsdp == TPS_FSDP_OPTIM_GRADS_PARAMS;
}

gboolean
tps_fsdp_params(const TpsScenario *sc)
{
    return sc->fsdp == TPS_FSDP_OPTIM_GRADS_PARAMS;
}

gboolean
tps_fsdp_layer_op(const TpsScenario *sc, gboolean backward)
{
    if (sc->fsdp == TPS_FSDP_NONE || sc->fsdp == TPS_FSDP_OPTIM ||
        (!backward && sc->fsdp == TPS_FSDP_OPTIM_GRADS))
        return FALSE;
    return tps_scenario_grad_ranks(sc) >= 2;
}

TpsTime
tps_dp_collective_ns(const TpsScenario *sc, TpsCollKind kind, double bytes)
{
    if (tps_scenario_grad_ranks(sc) < 2 || bytes <= 0.0)
        return 0;
    TpsGroupShape shape;
    tps_place_group_shape(sc, TPS_SCENARIO_GRAD_DIMS, &shape);
    return tps_coll_group_ns(&sc->hardware, kind, bytes, &shape);
}

guint
tps_dp_expert_ranks(const TpsScenario *sc)
{
    const guint64 dense = (guint64)sc->tp * MAX(sc->cp, 1u) * sc->dp;
    const guint64 expert = (guint64)tps_scenario_etp(sc) * MAX(sc->ep, 1u);
    return (guint)(dense / MAX(expert, 1u));
}

TpsTime
tps_dp_split_collective_ns(const TpsScenario *sc, TpsCollKind kind, double bytes,
                           double expert_bytes)
{
    if (!(expert_bytes > 0.0))
        return tps_dp_collective_ns(sc, kind, bytes);
    TpsTime ns = tps_dp_collective_ns(sc, kind, bytes - expert_bytes);
    if (tps_dp_expert_ranks(sc) >= 2) {
        TpsGroupShape shape;
        tps_place_expert_group_shape(sc, TPS_DIM_BIT(TPS_DIM_DP), &shape);
        ns += tps_coll_group_ns(&sc->hardware, kind, expert_bytes, &shape);
    }
    return ns;
}
