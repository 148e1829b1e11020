/* Memory per GPU of a pipeline stage (docs/step-model.md, docs/cost-model.md
 * "Memory"): weights, gradients, optimizer states, the activations the
 * schedule keeps, and what a training process holds besides them. A
 * closed form of the scenario: nothing here simulates. */
#include "sched/pipeline.h"

#include <math.h>
#include <string.h>

#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "sched/data-parallel.h"
#include "sched/fp8-recipe.h"
#include "sched/placement.h"

/* The ring's buffers (Transformer Engine's AttnFuncWithCPAndKVP2P) over
 * `ring` ranks, of chunks of `chunk` tokens (batch included), with a Q row
 * and a K/V row (K and V) of so many bytes: forward, a receive buffer per
 * step after the first (ring - 1 K/V blocks of two chunks) and every
 * step's partial output until the merge (CP rank 0's: two chunks at the
 * first step, one at each other); backward, two buffers of a K/V block and
 * its dK/dV sums. */
static double
ring_buffer_bytes(double ring, double chunk, double q_row, double kv_row)
{
    const double block = 2.0 * chunk * kv_row; /* one rank's K/V */
    const double fwd = (ring - 1.0) * block + (ring + 1.0) * chunk * q_row;
    const double bwd = 2.0 * 2.0 * block;
    return MAX(fwd, bwd);
}

double
tps_cp_buffer_bytes(const TpsScenario *sc)
{
    if (sc->cp <= 1)
        return 0.0;
    const double cp = sc->cp, elt = tps_dtype_bytes(sc->dtype);
    const double chunk = (double)sc->micro_batch * (double)(sc->seq_len / (2 * sc->cp));
    const double d = (double)sc->hidden / (double)sc->heads;
    const double q_row = (double)sc->heads / sc->tp * d * elt;
    const double kv_row = 2.0 * (double)tps_scenario_kv_heads(sc) / sc->tp * d * elt;
    /* All-gathered K/V (AttnFuncWithCPAndKVAllGather), at the peak of the
     * backward: the gathered K/V in sequence order, the gathered dK/dV and
     * their reordered copy, cp blocks each (assumption: the gathered K/V
     * in rank order freed once reordered). */
    if (sc->cp_comm == TPS_CP_ALLGATHER)
        return 3.0 * cp * 2.0 * chunk * kv_row;
    if (sc->cp_comm == TPS_CP_P2P)
        return ring_buffer_bytes(cp, chunk, q_row, kv_row);
    /* All-to-all (AttnFuncWithCPAndQKVOA2A): the received Q, K and V (as
     * many bytes as the rank's own, in head shards) beside the sent ones
     * until attention (assumption: the send copies freed then); under
     * a2a+p2p, then the ring's buffers over cp / cp_a2a ranks on the head
     * shards (1 / cp_a2a of the rows, cp_a2a times the chunk). */
    const double a2a = tps_cp_a2a_size(sc);
    const double gathered = 2.0 * chunk * (q_row + kv_row);
    if (sc->cp_comm == TPS_CP_A2A)
        return gathered;
    return gathered + ring_buffer_bytes(cp / a2a, chunk * a2a, q_row / a2a, kv_row / a2a);
}

/* Scale-inverse bytes per element of an FP8 activation copy: a 1x128 or
 * 1x32 block's scale over its elements under the block recipes; a
 * tensor's single fp32 counts for nothing. */
static double
fp8_scale_per_element(const TpsScenario *sc)
{
    if (sc->fp8_recipe != TPS_FP8_BLOCKWISE && sc->fp8_recipe != TPS_FP8_MXFP8)
        return 0.0;
    const double block = 128.0 * 128.0;
    return tps_fp8_scale_bytes(sc->fp8_recipe, block, FALSE) / block;
}

/* Bytes per token of one norm's saved statistics (Transformer Engine's
 * LayerNorm and RMSNorm forward, transformer_engine/pytorch/ops and
 * module/layernorm_linear.py: rsigma, and LayerNorm's mu, fp32 a row). */
static double
norm_stat_bytes(const TpsScenario *sc)
{
    return (sc->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0) * 4.0;
}

/* The tensors a layer keeps besides its norms' and the MLP's, in units of
 * s b h / t (split over TP): the attention's, as Megatron-Core's
 * SelfAttention with Transformer Engine keeps them (docs/step-model.md,
 * "Activation memory"), into `split`; returns their number. Q is heads x
 * head_dim wide, K and V kv_heads x head_dim each. */
/* Multi-head latent attention's (bf16, flash): Q and K heads x
 * (qk_head_dim + qk_pos_emb_head_dim), V and O heads x v_head_dim, the
 * logsumexp; recomputed under selective recompute but for the checkpoint's
 * Q, K, V. */
static guint
mla_attention_tensors(const TpsScenario *sc, double split[8])
{
    const double h = sc->hidden, a = sc->heads;
    const double q = a * (double)tps_scenario_mla_qk_dim(sc) / h;
    const double v = a * (double)sc->v_head_dim / h;
    guint n = 0;
    split[n++] = 2.0 * q;
    split[n++] = 2.0 * q;
    split[n++] = 2.0 * v;
    split[n++] = 2.0 * v;
    if (sc->recompute != TPS_RECOMPUTE_SELECTIVE)
        split[n++] = 4.0 * a / h;
    return n;
}

/* Its latents, on the rank's own tokens (units of s b h, sharded by SP as
 * the norms' tensors): each the input of its up projection (2 bytes,
 * TE's LayerNormLinear ln_out), and with qk_norm the norm's input too and
 * its statistics. */
static guint
mla_latent_tensors(const TpsScenario *sc, double out[6])
{
    const double h = sc->hidden;
    const double widths[2] = {(double)sc->q_lora_rank, (double)sc->kv_lora_rank};
    guint n = 0;
    for (guint i = 0; i < 2; i++) {
        if (widths[i] == 0.0)
            continue;
        out[n++] = 2.0 * widths[i] / h;
        if (sc->qk_norm) {
            out[n++] = 2.0 * widths[i] / h;
            out[n++] = norm_stat_bytes(sc) / h;
        }
    }
    return n;
}

static guint
attention_tensors(const TpsScenario *sc, double sinv, double split[8])
{
    if (sc->mla)
        return mla_attention_tensors(sc, split);
    const double h = sc->hidden, a = sc->heads, kvh = (double)tps_scenario_kv_heads(sc);
    const double d = (double)tps_scenario_head_dim(sc);
    const double q = a * d / h, kv = kvh * d / h;
    const gboolean fp8 = sc->dtype == TPS_DTYPE_FP8;
    const gboolean selective = sc->recompute == TPS_RECOMPUTE_SELECTIVE;
    guint n = 0;
    /* Q (after RoPE), K and V: flash attention's saved inputs, or the
     * checkpoint's under selective recompute (core_attn). */
    split[n++] = 2.0 * q;
    split[n++] = 2.0 * kv;
    split[n++] = 2.0 * kv;
    /* The attention output, the projection's input: bf16 (2) is kept by
     * flash attention's backward (it reads O) and, in bf16, by the
     * projection itself; under dtype fp8 the projection keeps its own FP8
     * copy (1, its scale-inverse with it), column-wise only
     * (module/linear.py: the row-wise data is discarded once the forward
     * GEMM has run). Under selective recompute O is the checkpoint's
     * output, re-made in the backward: in fp8 only the FP8 copy stays. */
    if (!fp8)
        split[n++] = 2.0 * q;
    else
        split[n++] = (selective ? 0.0 : 2.0 * q) + (1.0 + sinv) * q;
    /* Flash attention's (and cuDNN's fused attention's) softmax
     * statistics, the logsumexp: fp32 per head and token (flash-attention
     * softmax_lse [b, heads, s]); recomputed under selective recompute. */
    if (sc->attention == TPS_ATTENTION_FLASH && !selective)
        split[n++] = 4.0 * a / h;
    /* qk_norm: the Q and K norms' inputs (2 bytes, the pre-RoPE Q and K)
     * and their statistics (per head and token). */
    if (sc->qk_norm) {
        split[n++] = 2.0 * (q + kv);
        split[n++] = norm_stat_bytes(sc) * (a + kvh) / h;
    }
    return n;
}

/* A mixture of experts keeps, in place of the MLP's (`mlp`, in units of
 * s b h / t): the shared experts' as a dense MLP's, and per rank the rows
 * its experts computed (L top_k etp skew of them, L = s b / t tokens):
 * FC1's input (h), its output (the activation's input, 2 f_e / etp gated)
 * and FC2's input (f_e / etp), 2 bytes each, under fp8 too (assumption:
 * the routed rows' FP8 copies not counted); in units of s b h / t:
 * 2 k etp skew + (4 or 2) k skew f_e / h + 2 k skew f_e / h. Returns the
 * routed rows' part; 0 and `mlp` untouched for a dense layer. */
static double
moe_kept(const TpsScenario *sc, double mlp[2])
{
    if (!tps_scenario_is_moe(sc))
        return 0.0;
    const double h = sc->hidden, fs = (double)sc->moe.shared_ffn_hidden;
    const double fe = (double)sc->moe.ffn_hidden, k = sc->moe.top_k;
    const double gated = sc->mlp == TPS_MLP_SWIGLU ? 4.0 : 2.0;
    double skew = sc->moe.load_imbalance;
    if (sc->moe.capacity_factor > 0.0)
        skew = MIN(skew, MAX(sc->moe.capacity_factor, 1.0));
    mlp[0] = gated * fs / h;
    mlp[1] = 2.0 * fs / h;
    return 2.0 * k * tps_scenario_etp(sc) * skew + gated * k * skew * fe / h +
           2.0 * k * skew * fe / h;
}

guint
tps_layer_activation_tensors(const TpsScenario *sc, double bytes[TPS_LAYER_MAX_TENSORS])
{
    const double t = sc->tp, h = sc->hidden, a = sc->heads;
    /* A CP rank's tokens: seq / cp of each sequence. */
    const double s = (double)(sc->seq_len / MAX(sc->cp, 1u)), b = sc->micro_batch;
    const double sbh = s * b * h;
    guint n = 0;
#define KEEP(coefficient, divisor) (bytes[n++] = (coefficient)*sbh / (divisor))

    /* Full recompute keeps only the layer input (sharded with SP). */
    if (sc->recompute == TPS_RECOMPUTE_FULL) {
        KEEP(2.0, sc->sp ? t : 1.0);
        return n;
    }
    /* In bytes of s b h (docs/step-model.md, "Activation memory"), the
     * norms' part, replicated over TP unless SP shards it: each norm's
     * input 2 (the norm's backward), its statistics (norm_stat_bytes / h),
     * its output (the QKV and FC1 input) 2, or under dtype fp8 that
     * output's FP8 copy 1 (Transformer Engine's LayerNormLinear keeps one
     * usage only: the row-wise data when SP gathers it again in the
     * backward, the column-wise otherwise), the two dropout masks 1 + 1.
     * Split over TP: the attention's (attention_tensors()), the
     * activation's input 2 f / h (SwiGLU's gate and up halves: 4 f / h),
     * the FC2 input 2 f / h, or its column-wise FP8 copy f / h. */
    const double replicated = sc->sp ? t : 1.0;
    const double f = sc->ffn_hidden;
    const double act = (sc->mlp == TPS_MLP_SWIGLU ? 4.0 : 2.0) * f / h;
    const gboolean fp8 = sc->dtype == TPS_DTYPE_FP8;
    /* Each FP8 copy also keeps its scale-inverse (sched/fp8-recipe.c): per
     * element, 4 / 128 bytes under blockwise, 1 / 32 under mxfp8; one
     * fp32 a tensor (nothing here) under delayed and tensorwise. */
    const double sinv = fp8 ? fp8_scale_per_element(sc) : 0.0;
    const double ln_out = fp8 ? 1.0 + sinv : 2.0;
    const double stats = norm_stat_bytes(sc) / h;
    /* The dropout masks only with a dropout: at model.hidden_dropout 0
     * PyTorch's dropout (aten/src/ATen/native/Dropout.cpp) returns its
     * input and saves no mask. */
    const double mask = sc->hidden_dropout > 0.0 ? 1.0 : 0.0;
    const double kept_replicated[] = {2.0, 2.0, stats, stats, ln_out, ln_out, mask, mask};
    double mlp[2] = {act, fp8 ? (1.0 + sinv) * f / h : 2.0 * f / h};
    const double moe_rows = moe_kept(sc, mlp);
    for (guint i = 0; i < G_N_ELEMENTS(kept_replicated); i++)
        KEEP(kept_replicated[i], replicated);
    double latents[6];
    const guint nl = sc->mla ? mla_latent_tensors(sc, latents) : 0;
    for (guint i = 0; i < nl; i++)
        KEEP(latents[i], replicated);
    double attention[8];
    const guint na = attention_tensors(sc, sinv, attention);
    for (guint i = 0; i < na; i++)
        KEEP(attention[i], t);
    for (guint i = 0; i < G_N_ELEMENTS(mlp); i++)
        KEEP(mlp[i], t);
    if (moe_rows > 0.0)
        KEEP(moe_rows, t);
    /* The attention scores: softmax output 2, its dropout mask 1, the
     * dropout output 2, in units of a s / h; flash attention and selective
     * recompute do not keep them. */
    if (sc->attention != TPS_ATTENTION_FLASH && sc->recompute != TPS_RECOMPUTE_SELECTIVE) {
        const double scores = a * s / h;
        KEEP(2.0 * scores, t);
        KEEP(1.0 * scores, t);
        KEEP(2.0 * scores, t);
    }
#undef KEEP
    g_assert(n <= TPS_LAYER_MAX_TENSORS);
    return n;
}

double
tps_layer_activation_bytes(const TpsScenario *sc)
{
    double bytes[TPS_LAYER_MAX_TENSORS];
    const guint n = tps_layer_activation_tensors(sc, bytes);
    double sum = 0.0;
    for (guint i = 0; i < n; i++)
        sum += bytes[i];
    return sum;
}

/* Output columns of QKV (heads + 2 kv_heads heads of hidden / heads, or
 * of model.head_dim) and of FC1 (2 f gated), over all ranks. */
static double
qkv_columns(const TpsScenario *sc)
{
    const double d =
        sc->head_dim != 0 ? (double)sc->head_dim : (double)sc->hidden / (double)sc->heads;
    return ((double)sc->heads + 2.0 * (double)tps_scenario_kv_heads(sc)) * d;
}

/* The projection's input columns: hidden, or heads x head_dim. */
static double
proj_columns(const TpsScenario *sc)
{
    return sc->head_dim != 0 ? (double)sc->heads * (double)sc->head_dim : (double)sc->hidden;
}

static double
fc1_columns_of(const TpsScenario *sc, double f)
{
    return (sc->mlp == TPS_MLP_SWIGLU ? 2.0 : 1.0) * f;
}

static double
fc1_columns(const TpsScenario *sc)
{
    return fc1_columns_of(sc, (double)sc->ffn_hidden);
}

/* Weights (and biases) of one normalisation: gamma and beta, or RMSNorm's
 * gamma alone. */
static double
norm_params(const TpsScenario *sc)
{
    return (sc->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0) * (double)sc->hidden;
}

double
tps_layer_expert_params_per_gpu(const TpsScenario *sc)
{
    if (!tps_scenario_is_moe(sc))
        return 0.0;
    const TpsMoe *m = &sc->moe;
    const double h = sc->hidden, f = (double)m->ffn_hidden;
    /* experts / ep experts on this rank, each FC1 and FC2 split over etp
     * (their biases too). */
    double expert = h * fc1_columns_of(sc, f) + f * h;
    if (sc->bias)
        expert += fc1_columns_of(sc, f) + h;
    return (double)(m->experts / MAX(sc->ep, 1u)) * expert / tps_scenario_etp(sc);
}

/* The attention's GEMM weights on one GPU: QKV and projection split by
 * TP, or multi-head latent attention's down projections whole and the
 * rest split. */
static double
attention_params_per_gpu(const TpsScenario *sc)
{
    const double t = sc->tp, h = sc->hidden;
    if (sc->mla)
        return tps_scenario_mla_replicated_params(sc) + tps_scenario_mla_split_params(sc) / t;
    return (h * qkv_columns(sc) + proj_columns(sc) * h) / t;
}

double
tps_layer_gemm_params_per_gpu(const TpsScenario *sc)
{
    const double t = sc->tp, h = sc->hidden, f = sc->ffn_hidden;
    if (sc->mla) {
        const double fs = tps_scenario_is_moe(sc) ? (double)sc->moe.shared_ffn_hidden : f;
        double p = attention_params_per_gpu(sc) + (h * fc1_columns_of(sc, fs) + fs * h) / t;
        if (tps_scenario_is_moe(sc))
            p += h * (double)sc->moe.experts + tps_layer_expert_params_per_gpu(sc);
        return p;
    }
    if (tps_scenario_is_moe(sc)) {
        /* QKV, projection, the shared experts split by TP; the router
         * [h, experts] replicated; the experts' own. */
        const double fs = (double)sc->moe.shared_ffn_hidden;
        return (h * qkv_columns(sc) + proj_columns(sc) * h + h * fc1_columns_of(sc, fs) + fs * h) /
                   t +
               h * (double)sc->moe.experts + tps_layer_expert_params_per_gpu(sc);
    }
    /* QKV [h, qkv], projection [heads x head_dim, h], FC1 [h, f or 2 f],
     * FC2 [f, h]. */
    return (h * qkv_columns(sc) + proj_columns(sc) * h + h * fc1_columns(sc) + f * h) / t;
}

double
tps_layer_params_per_gpu(const TpsScenario *sc)
{
    const double t = sc->tp, h = sc->hidden;
    /* QKV, projection, FC1, FC2 weights split by TP, and the biases of
     * the column-parallel ones (QKV, FC1); the row-parallel biases
     * (projection, FC2) and the two norms replicated. An MoE layer: the
     * shared experts in place of FC1 and FC2 (their biases likewise), the
     * experts' biases with their weights; the Q and K norms (qk_norm) of
     * head_dim each. */
    double params = tps_layer_gemm_params_per_gpu(sc) + 2.0 * norm_params(sc);
    const double fc1 = tps_scenario_is_moe(sc)
                           ? fc1_columns_of(sc, (double)sc->moe.shared_ffn_hidden)
                           : fc1_columns(sc);
    if (sc->bias)
        params += (qkv_columns(sc) + fc1) / t + 2.0 * h;
    /* Multi-head latent attention's qk_norm: the norms of its latents. */
    if (sc->qk_norm && sc->mla)
        params += (sc->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0) *
                  (double)(sc->q_lora_rank + sc->kv_lora_rank);
    else if (sc->qk_norm)
        params +=
            2.0 * (sc->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0) * (double)tps_scenario_head_dim(sc);
    return params;
}

/* The word embedding (and the learned position embedding) of the first
 * stage, on one GPU. */
static double
embedding_params(const TpsScenario *sc)
{
    const double h = sc->hidden;
    double params = (double)sc->vocab * h / sc->tp;
    if (sc->position == TPS_POSITION_LEARNED)
        params += (double)sc->seq_len * h;
    return params;
}

double
tps_layers_sum(const TpsScenario *sc, guint n, guint dense,
               double (*per_layer)(const TpsScenario *scenario))
{
    if (dense == 0)
        return (double)n * per_layer(sc);
    TpsScenario d;
    tps_scenario_dense_layer(sc, &d);
    return (double)(n - dense) * per_layer(sc) + (double)dense * per_layer(&d);
}

double
tps_stage_layers_sum(const TpsScenario *sc, guint stage,
                     double (*per_layer)(const TpsScenario *scenario))
{
    if (!tps_scenario_mixes_layers(sc))
        return (double)tps_scenario_stage_layers(sc, stage) * per_layer(sc);
    return tps_layers_sum(sc, tps_scenario_stage_layers(sc, stage),
                          tps_scenario_stage_dense_layers(sc, stage), per_layer);
}

double
tps_stage_params(const TpsScenario *sc, guint stage)
{
    const double h = sc->hidden, t = sc->tp;
    double params = tps_stage_layers_sum(sc, stage, tps_layer_params_per_gpu);
    if (stage == 0)
        params += embedding_params(sc);
    if (stage == sc->pp - 1) {
        params += norm_params(sc); /* the final norm */
        /* The output layer: its own weight when untied; tied, the last
         * stage of a pipeline holds a copy of the embedding (Megatron keeps
         * the two in step with the embedding-group all-reduce). */
        if (sc->pp > 1 || !sc->tie_embeddings)
            params += (double)sc->vocab * h / t;
    }
    return params;
}

double
tps_stage_optimizer_shard(const TpsScenario *sc, guint stage)
{
    const double params = tps_stage_params(sc, stage);
    if (!tps_dp_sharded_optimizer(sc))
        return params;
    const double expert = tps_stage_layers_sum(sc, stage, tps_layer_expert_params_per_gpu);
    if (!(expert > 0.0))
        return params / tps_scenario_grad_ranks(sc);
    return (params - expert) / tps_scenario_grad_ranks(sc) + expert / tps_dp_expert_ranks(sc);
}

double
tps_model_params(const TpsScenario *sc)
{
    TpsScenario one = *sc; /* plain values only are read: no copy of the strings */
    one.tp = 1;
    one.ep = 1; /* every expert, whole */
    one.etp = 1;
    const guint dense =
        tps_scenario_mixes_layers(sc) ? (guint)(sc->layers - tps_scenario_moe_layers(sc)) : 0;
    double params = tps_layers_sum(&one, (guint)sc->layers, dense, tps_layer_params_per_gpu) +
                    embedding_params(&one) + norm_params(sc);
    if (!sc->tie_embeddings)
        params += (double)sc->vocab * sc->hidden;
    return params;
}

/* What `count` requests of `bytes` each cost beyond their size in PyTorch's
 * caching allocator: requests up to half a small segment share small
 * segments (memory.alloc_small_segment_mib, each holds floor(segment /
 * bytes) of them), larger ones below half a segment share segments
 * (memory.alloc_segment_mib), larger ones still are rounded up to
 * memory.alloc_round_mib. The rest of a segment is reserved but holds no
 * request of that size; requests of other sizes could fill it, so this is
 * the most the rounding can keep. */
static double
allocator_waste(const TpsHardware *hw, double bytes, double count)
{
    const double mib = 1024.0 * 1024.0;
    const double small = hw->mem_alloc_small_segment_mib * mib;
    const double segment = hw->mem_alloc_segment_mib * mib, round = hw->mem_alloc_round_mib * mib;
    if (!(bytes > 0.0) || !(count > 0.0))
        return 0.0;
    if (bytes >= segment / 2.0)
        return count * (ceil(bytes / round) * round - bytes);
    const double shared = bytes <= small / 2.0 ? small : segment;
    const double per_segment = floor(shared / bytes);
    return ceil(count / per_segment) * shared - count * bytes;
}

/* NCCL's buffers on one GPU of `stage`: a connection holds a FIFO per
 * protocol on each of its channels. Rings (one connection per channel)
 * for the TP group, the DP group, the model-parallel group (tp x pp: the
 * gradient-norm all-reduce of Megatron's clip_grad) and, on the first and
 * last stage, the embedding group; send/recv connections to the
 * neighbouring stages (both neighbours with the interleaved schedule,
 * which wraps around), on memory.nccl_p2p_channels channels each, with the
 * Simple protocol only. */
static double
nccl_bytes(const TpsScenario *sc, guint stage)
{
    const TpsHardware *hw = &sc->hardware;
    const double kib = 1024.0;
    double fifo = 0.0;
    for (guint p = 0; p < TPS_PROTO_COUNT; p++)
        fifo += hw->mem_nccl_buffer_kib[p] * kib;
    guint rings = 0;
    rings += sc->tp > 1;
    rings += tps_scenario_grad_ranks(sc) > 1;
    rings += (guint64)sc->tp * sc->pp > 1;
    rings += sc->pp > 1 && (stage == 0 || stage == sc->pp - 1);
    guint peers = 0;
    if (sc->pp == 2)
        peers = 1;
    else if (sc->pp > 2)
        peers = sc->vpp > 1 || (stage > 0 && stage < sc->pp - 1) ? 2 : 1;
    /* The CP ring: a connection to the next CP rank and one from the last. */
    peers += sc->cp > 1 ? 2 : 0;
    /* A mixture of experts: the all-to-all's send/recv connections to the
     * other ep - 1 members of its EP group, and the rings of the ETP group
     * (when it is not the TP group) and of the expert data-parallel group
     * (when larger than one). */
    if (tps_scenario_is_moe(sc)) {
        peers += MAX(sc->ep, 1u) - 1;
        rings += tps_scenario_etp(sc) != sc->tp && tps_scenario_etp(sc) > 1;
        rings += tps_dp_expert_ranks(sc) > 1;
    }
    return rings * (double)hw->nccl_channels * fifo +
           peers * (double)hw->mem_nccl_p2p_channels * hw->mem_nccl_buffer_kib[TPS_PROTO_SIMPLE] *
               kib;
}

/* The NVLS buffers of one communicator over the group of `dims`, or 0 where
 * NCCL would not run the group's collective of `bytes` as NVLS
 * or NVLS_TREE (tps_coll_plan_group(): NVLS off on the hardware, excluded by nccl.algo,
 * or slower than Ring and Tree for it). NVIDIA/nccl src/transport/nvls.cc
 * ncclNvlsBufferSetup: nvls_channels x 2 (reduce and broadcast) x
 * NCCL_STEPS 8 x NCCL_NVLS_CHUNKSIZE (memory.nccl_nvls_chunk_kib) per
 * head, one head per member inside one NVLink domain (the unicast buffer
 * of the multicast object; its credits not counted); none for groups of
 * 2 GPUs or fewer (ncclNvlsInit, TPS_NVLS_MIN_LOCAL_RANKS). Set up at the communicator's first NVLS
 * collective (lazily), so a communicator whose collectives never pick NVLS
 * holds none. */
static double
nvls_group_bytes(const TpsScenario *sc, guint dims, guint64 ranks, TpsCollKind kind, double bytes)
{
    const TpsHardware *hw = &sc->hardware;
    /* A group too small for NVLS is not placed (the plan refuses it too). */
    if (!hw->nccl_nvls || !(hw->mem_nccl_nvls_chunk_kib > 0.0) || ranks < TPS_NVLS_MIN_LOCAL_RANKS)
        return 0.0;
    TpsGroupShape shape;
    tps_place_group_shape(sc, dims, &shape);
    TpsCollPlan plan;
    tps_coll_plan_group(hw, kind, bytes, &shape, &plan);
    if (plan.algo != TPS_ALGO_NVLS && plan.algo != TPS_ALGO_NVLS_TREE)
        return 0.0;
    /* NVLS_TREE: the same buffers, one head per member of a GPU's own
     * domain (its multicast object spans that domain only). */
    return (double)hw->nccl_nvls_channels * 2.0 * 8.0 * hw->mem_nccl_nvls_chunk_kib * 1024.0 *
           (double)(shape.ranks / MAX(shape.domains, 1u));
}

/* NVLS buffers of the TP group (its SP all-gather of a layer input, the
 * all-reduce without SP), the DP group (a gradient bucket's
 * reduce-scatter, or all-reduce without the distributed optimizer) and
 * the model-parallel group (the gradient norm's fp32 scalar). */
static double
nvls_bytes(const TpsScenario *sc)
{
    const double tokens = (double)(sc->seq_len / MAX(sc->cp, 1u)) * sc->micro_batch;
    const double activation = tokens * sc->hidden * tps_dtype_bytes(sc->dtype);
    double bytes = nvls_group_bytes(sc, TPS_DIM_BIT(TPS_DIM_TP), sc->tp,
                                    sc->sp ? TPS_COLL_ALL_GATHER : TPS_COLL_ALL_REDUCE, activation);
    const double bucket = tps_dp_grad_bytes(sc, tps_dp_bucket_size(sc));
    bytes += nvls_group_bytes(
        sc, TPS_SCENARIO_GRAD_DIMS, tps_scenario_grad_ranks(sc),
        tps_dp_sharded_optimizer(sc) ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE, bucket);
    bytes += nvls_group_bytes(sc, TPS_DIM_BIT(TPS_DIM_TP) | TPS_DIM_BIT(TPS_DIM_PP),
                              (guint64)sc->tp * sc->pp, TPS_COLL_ALL_REDUCE, 4.0);
    return bytes;
}

/* The largest FSDP unit of the stage's chunks (tps_dp_buckets(), a layer
 * with the embedding or the head where it holds them) into `unit`. */
static void
largest_unit(const TpsScenario *sc, guint stage, TpsDpBucket *unit)
{
    *unit = (TpsDpBucket){0};
    g_autofree TpsDpBucket *units = g_new(TpsDpBucket, MAX(tps_scenario_max_chunk_layers(sc), 1u));
    for (guint c = 0; c < sc->vpp; c++) {
        const guint n = tps_dp_buckets(sc, stage, c, units);
        for (guint k = 0; k < n; k++)
            if (units[k].params > unit->params)
                *unit = units[k];
    }
}

/* Weights and gradients under FSDP optim_grads (ZeRO-2) and
 * optim_grads_params (ZeRO-3), Megatron FSDP with its double buffer
 * (--fsdp-double-buffer; megatron_fsdp/param_and_grad_buffer.py): the
 * gradients are kept as this rank's shard (1/dp of the stage's) plus two
 * units' unsharded gradients, the reduce-scatter's input while a unit's
 * backward runs beside the previous unit's reduction. ZeRO-2 keeps every
 * weight as without FSDP; ZeRO-3 keeps the shard of the weights (2 bytes,
 * the GEMM weights 1 with fp8_param_gather) and two units' gathered
 * weights (all-gather output: the one computing, the one prefetched),
 * with Transformer Engine's FP8 copy and transpose of the units' GEMM
 * weights only (Megatron FSDP's keep_fp8_transpose_cache default false:
 * made at each use). Two units of the largest: assumption (the fixed pool
 * holds the largest unit's size per buffer). */
static double
fsdp_weights_grads(const TpsScenario *sc, guint stage, double unsharded)
{
    const double params = tps_stage_params(sc, stage);
    const double gemm = tps_stage_layers_sum(sc, stage, tps_layer_gemm_params_per_gpu);
    const double dp = tps_scenario_grad_ranks(sc);
    TpsDpBucket unit;
    largest_unit(sc, stage, &unit);
    const double grads =
        tps_dp_grad_bytes(sc, params) / dp + 2.0 * tps_dp_grad_bytes(sc, unit.params);
    if (!tps_fsdp_params(sc))
        return unsharded - tps_dp_grad_bytes(sc, params) + grads;
    double weights = tps_dp_param_bytes(sc, params, gemm) / dp +
                     2.0 * tps_dp_param_bytes(sc, unit.params, unit.gemm_params);
    if (sc->dtype == TPS_DTYPE_FP8) {
        weights += 2.0 * (tps_dp_fp8_params(sc) ? 1.0 : 2.0) * unit.gemm_params;
        if (sc->fp8_recipe == TPS_FP8_BLOCKWISE || sc->fp8_recipe == TPS_FP8_MXFP8)
            weights += 2.0 * 2.0 * tps_fp8_scale_bytes(sc->fp8_recipe, unit.gemm_params, TRUE);
    }
    return weights + grads;
}

/* Of one layer's GEMM weights, those Transformer Engine keeps FP8 copies
 * of: all but an MoE layer's router (a plain torch linear, bf16). */
static double
fp8_weight_params(const TpsScenario *sc)
{
    const double router = tps_scenario_is_moe(sc) ? (double)sc->hidden * sc->moe.experts : 0.0;
    return tps_layer_gemm_params_per_gpu(sc) - router;
}

/* The stage's weights, gradients and optimizer states. */
static void
stage_state_memory(const TpsScenario *sc, guint stage, TpsStageMemory *out)
{
    const double params = tps_stage_params(sc, stage);
    /* bf16 weight (2) and the main gradient (Megatron's DDP gradient
     * buffer: 4 bytes in fp32, 2 with training.grad_reduce_dtype bf16);
     * fp32 master weight and two Adam moments (12), sharded over dp by the
     * distributed optimizer. */
    out->weights_grads = 2.0 * params + tps_dp_grad_bytes(sc, params);
    /* dtype fp8: Transformer Engine's cached FP8 copy of each GEMM weight
     * and its transpose (one byte each); with fp8_param_gather they are
     * the weights, and the bf16 copy (2 bytes) is not kept. */
    if (sc->dtype == TPS_DTYPE_FP8) {
        const double gemm = tps_stage_layers_sum(sc, stage, fp8_weight_params);
        out->weights_grads += 2.0 * gemm;
        /* Their scale-inverses: 128x128 blocks under blockwise. */
        if (sc->fp8_recipe == TPS_FP8_BLOCKWISE || sc->fp8_recipe == TPS_FP8_MXFP8)
            out->weights_grads += 2.0 * tps_fp8_scale_bytes(sc->fp8_recipe, gemm, TRUE);
        if (tps_dp_fp8_params(sc))
            out->weights_grads -= 2.0 * gemm;
    }
    out->optimizer = 12.0 * tps_stage_optimizer_shard(sc, stage);
    if (tps_fsdp_grads(sc))
        out->weights_grads = fsdp_weights_grads(sc, stage, out->weights_grads);
}

/* The chunk of `stage` whose layers keep the most activations (all alike
 * but where Megatron counts the embedding or the loss as a layer, or where
 * a model mixes dense and MoE layers: erring high): its layers, and of
 * them the dense ones of a model that mixes. */
static void
largest_chunk(const TpsScenario *sc, guint stage, guint *layers, guint *dense)
{
    *layers = *dense = 0;
    if (!tps_scenario_mixes_layers(sc)) {
        for (guint c = 0; c < sc->vpp; c++)
            *layers = MAX(*layers, tps_scenario_chunk_layers(sc, stage, c));
        return;
    }
    double most = -1.0;
    for (guint c = 0; c < sc->vpp; c++) {
        const guint n = tps_scenario_chunk_layers(sc, stage, c);
        const guint d = tps_scenario_chunk_dense_layers(sc, stage, c);
        const double bytes = tps_layers_sum(sc, n, d, tps_layer_activation_bytes);
        if (bytes > most) {
            most = bytes;
            *layers = n;
            *dense = d;
        }
    }
}

/* One layer's kept tensors of each kind the chunk holds (the scenario's,
 * and a mixing model's dense layer's, or with `with_dense` the dense
 * layer's even where the chunk has none), each with how many of it are
 * held: `held` forwards times the chunk's layers of that kind. Returns
 * their number. */
static guint
held_tensors(const TpsScenario *sc, guint layers, guint dense, double held, gboolean with_dense,
             double bytes[2 * TPS_LAYER_MAX_TENSORS], double count[2 * TPS_LAYER_MAX_TENSORS])
{
    guint n = tps_layer_activation_tensors(sc, bytes);
    for (guint i = 0; i < n; i++)
        count[i] = held * (double)(layers - dense);
    if (dense == 0 && !with_dense)
        return n;
    TpsScenario d;
    tps_scenario_dense_layer(sc, &d);
    const guint m = tps_layer_activation_tensors(&d, bytes + n);
    for (guint i = n; i < n + m; i++)
        count[i] = held * (double)dense;
    return n + m;
}

/* One layer more of `tensors` (held_tensors()'s n of them, the MoE
 * layer's first, the dense layer's too where stage `stage` has dense
 * layers): of the larger kind of the stage's layers (with pp > 1 the
 * combined step's two chunks need not be the largest one, whose kinds
 * the held chunks are counted by). */
static void
one_layer_more(const TpsScenario *sc, guint stage, const double *tensors, guint n, double *count)
{
    const guint layers = tps_scenario_stage_layers(sc, stage);
    const guint dense = tps_scenario_stage_dense_layers(sc, stage);
    double scratch[TPS_LAYER_MAX_TENSORS], kind[2] = {0.0, 0.0};
    const guint moe_n = dense > 0 ? tps_layer_activation_tensors(sc, scratch) : n;
    for (guint i = 0; i < n; i++)
        kind[i >= moe_n] += tensors[i];
    const gboolean dense_more = dense == layers || (dense > 0 && kind[1] > kind[0]);
    for (guint i = dense_more ? moe_n : 0; i < (dense_more ? n : moe_n); i++)
        count[i] += 1.0;
}

/* Full recompute: the one layer's whole forward a stage holds while its
 * backward runs (the larger kind's where the stage mixes them). */
static double
recomputed_layer_bytes(const TpsScenario *sc, guint stage)
{
    TpsScenario kept = *sc; /* plain values only are read */
    kept.recompute = TPS_RECOMPUTE_NONE;
    double bytes = tps_layer_activation_bytes(&kept);
    if (tps_scenario_stage_dense_layers(sc, stage) > 0) {
        TpsScenario dense;
        tps_scenario_dense_layer(&kept, &dense);
        const double d = tps_layer_activation_bytes(&dense);
        bytes = tps_scenario_stage_dense_layers(sc, stage) < tps_scenario_stage_layers(sc, stage)
                    ? MAX(bytes, d)
                    : d;
    }
    return bytes;
}

/* The stage's activations in flight and their allocator rounding. */
static void
stage_activation_memory(const TpsScenario *sc, guint stage, TpsStageMemory *out)
{
    const TpsHardware *hw = &sc->hardware;
    guint layers_per_chunk, dense;
    largest_chunk(sc, stage, &layers_per_chunk, &dense);
    const guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
    /* Activations in flight: the stage's warm-up forwards plus the first
     * forward of the steady state, each holding one chunk of layers until
     * its backward (tps_pipeline_order(): after the warm-up the stage
     * alternates one forward and one backward, so the count never grows
     * again); all of its chunks when the warm-up covers them. Each kept
     * tensor is one allocation per layer and micro-batch held. The
     * combined 1F1B's warm-up (tps_pipe_warmup()) is that first steady
     * forward run alone, so it holds as many chunks. */
    const guint64 total = micro * sc->vpp;
    const guint64 chunks = tps_pipeline_raw_warmup(sc->pp, sc->vpp, stage) + 1;
    const double held = (double)MIN(chunks, total);
    const gboolean paired =
        tps_scenario_is_moe(sc) && sc->moe.overlap_ep_comm && total > 1 && chunks < total;
    double tensors[2 * TPS_LAYER_MAX_TENSORS], count[2 * TPS_LAYER_MAX_TENSORS];
    const guint n =
        held_tensors(sc, layers_per_chunk, dense, held,
                     paired && tps_scenario_stage_dense_layers(sc, stage) > 0, tensors, count);
    /* model.moe.overlap_ep_comm: while the pair of layer i runs, the next
     * micro-batch holds its layers up to i and the previous one its layers
     * from i on (Megatron's combined 1F1B): one layer more, of the larger
     * kind where the stage mixes them (held_tensors(): the MoE layer's
     * tensors first), on a stage with a steady pair at all. */
    if (paired)
        one_layer_more(sc, stage, tensors, n, count);
    for (guint i = 0; i < n; i++) {
        out->activations += count[i] * tensors[i];
        /* Tensors of one size share the allocator's segments. */
        gboolean seen = FALSE;
        for (guint j = 0; j < i && !seen; j++)
            seen = tensors[j] == tensors[i];
        if (seen)
            continue;
        double same = 0.0;
        for (guint j = i; j < n; j++)
            same += tensors[j] == tensors[i] ? count[j] : 0.0;
        out->fragmentation += allocator_waste(hw, tensors[i], same);
    }
    /* Full recompute: the layer whose backward runs re-runs its forward
     * first (Megatron-Core's CheckpointFunction, tensor_parallel/random.py,
     * one layer a checkpoint as tpsim models --recompute-method), and holds
     * its whole forward's activations, as without recompute, until its
     * backward is done: one layer's, once a stage (their allocator rounding
     * not counted: transient). */
    if (sc->recompute == TPS_RECOMPUTE_FULL)
        out->activations += recomputed_layer_bytes(sc, stage);
    /* The last stage's logits for the micro-batch in its loss: Megatron's
     * vocab-parallel cross entropy (tensor_parallel/cross_entropy.py
     * calculate_logits_max, in its fused and unfused forms alike) makes
     * an fp32 copy of the output layer's bf16 logits while the caller
     * still holds them, and keeps it for the backward; the backward's
     * fp32 gradient is cast back to bf16 beside it: 4 + 2 bytes an
     * element at the loss, two allocations. */
    if (stage == sc->pp - 1) {
        const double elements =
            (double)(sc->seq_len / MAX(sc->cp, 1u)) * sc->micro_batch * (double)sc->vocab / sc->tp;
        out->activations += (4.0 + 2.0) * elements;
        out->fragmentation +=
            allocator_waste(hw, 4.0 * elements, 1.0) + allocator_waste(hw, 2.0 * elements, 1.0);
    }
    /* The ring's buffers of the one layer whose attention runs. */
    out->activations += tps_cp_buffer_bytes(sc);
}

void
tps_pipeline_stage_memory(const TpsScenario *sc, guint stage, TpsStageMemory *out)
{
    memset(out, 0, sizeof *out);
    stage_state_memory(sc, stage, out);
    stage_activation_memory(sc, stage, out);
    const TpsHardware *hw = &sc->hardware;
    out->context = hw->mem_context_mib * 1024.0 * 1024.0;
    out->nvls = nvls_bytes(sc);
    out->nccl = nccl_bytes(sc, stage) + out->nvls;
    out->total = out->weights_grads + out->optimizer + out->activations + out->fragmentation +
                 out->context + out->nccl;
}

/* Whether Transformer Engine's userbuffers overlap of `slot` under
 * `method` gathers (TE's layers_all_gather_overlap: the forward QKV and
 * FC1, the backward projection and FC2, and the bulk gathers of the
 * LayerNorm outputs for QKV's and FC1's wgrad) or reduce-scatters (the
 * forward projection and FC2, the wgrads' bulk reduce-scatters, and QKV's
 * and FC1's dgrad when given a method other than bulk). */
static gboolean
userbuffers_gathers(TpsGemmSlot slot, TpsMethod method)
{
    switch (slot) {
    case TPS_GEMM_QKV_FPROP:
    case TPS_GEMM_FC1_FPROP:
    case TPS_GEMM_PROJ_DGRAD:
    case TPS_GEMM_FC2_DGRAD:
        return TRUE;
    case TPS_GEMM_QKV_DGRAD:
    case TPS_GEMM_FC1_DGRAD:
        return method == TPS_METHOD_BULK;
    default:
        return FALSE;
    }
}

/* Transformer Engine's initialize_ub (pytorch/module/base.py) registers
 * one buffer per GEMM it overlaps, of seq_len x micro_batch rows (over
 * cp) and hidden columns: the whole gathered input, or the output before
 * its reduce-scatter. Its elements are 1 byte under dtype fp8 where the
 * buffer gathers (fp8_buf: TE's layers_all_gather_overlap), else 2
 * (the reduce-scatters' bf16 outputs); a ring-exchange reduce-scatter
 * (CommOverlapP2P, common/comm_gemm_overlap/comm_gemm_overlap.cpp) holds
 * 2 tp - 1 chunks of rows / tp, for the received partial outputs. */
double
tps_userbuffers_bytes(const TpsScenario *sc, const TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT])
{
    const double elements =
        (double)(sc->seq_len / MAX(sc->cp, 1u)) * sc->micro_batch * (double)sc->hidden;
    const gboolean fp8 = sc->dtype == TPS_DTYPE_FP8;
    const double wide = fp8 ? 2.0 : tps_dtype_bytes(sc->dtype);
    double bytes = 0.0;
    for (guint slot = 0; slot < TPS_GEMM_OP; slot++) {
        const TpsMethod method = overlap[slot].method;
        if (method == TPS_METHOD_NONE)
            continue;
        if (userbuffers_gathers(slot, method)) {
            bytes += elements * (fp8 ? 1.0 : wide);
            continue;
        }
        const double t = sc->tp;
        const double chunks = method == TPS_METHOD_RING_EXCHANGE ? (2.0 * t - 1.0) / t : 1.0;
        bytes += elements * wide * chunks;
    }
    return bytes;
}

void
tps_stage_memory_add_userbuffers(const TpsScenario *sc,
                                 const TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT],
                                 TpsStageMemory *memory)
{
    const double bytes = tps_userbuffers_bytes(sc, overlap);
    memory->userbuffers += bytes;
    memory->total += bytes;
}
