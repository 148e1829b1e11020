/* Scenario defaults, name tables, lifetime and validation (see scenario.h). */
#include "sched/scenario.h"

#include "cost/alltoall-flex.h"
#include "cost/topology.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "sched/method.h"
#include "sched/pipeline.h"
#include "sched/placement.h"

/* Indexed by TpsGemmSlot; the order is the one of real-schedules.md
 * section 2, and the names are the keys of `overlap:` in scenario files. */
const char *const tps_gemm_slot_names[] = {
    [TPS_GEMM_QKV_FPROP] = "qkv_fprop",
    [TPS_GEMM_FC1_FPROP] = "fc1_fprop",
    [TPS_GEMM_PROJ_FPROP] = "proj_fprop",
    [TPS_GEMM_FC2_FPROP] = "fc2_fprop",
    [TPS_GEMM_PROJ_DGRAD] = "proj_dgrad",
    [TPS_GEMM_FC2_DGRAD] = "fc2_dgrad",
    [TPS_GEMM_QKV_DGRAD] = "qkv_dgrad",
    [TPS_GEMM_FC1_DGRAD] = "fc1_dgrad",
    [TPS_GEMM_QKV_WGRAD] = "qkv_wgrad",
    [TPS_GEMM_FC1_WGRAD] = "fc1_wgrad",
    [TPS_GEMM_OP] = "op",
    [TPS_GEMM_SLOT_COUNT] = NULL,
};
G_STATIC_ASSERT(G_N_ELEMENTS(tps_gemm_slot_names) == TPS_GEMM_SLOT_COUNT + 1);

/* Megatron's spellings, lower case: --swiglu, --normalization,
 * --position-embedding-type. */
const char *const tps_mlp_names[] = {[TPS_MLP_GELU] = "gelu", [TPS_MLP_SWIGLU] = "swiglu", NULL};
const char *const tps_grad_reduce_dtype_names[] = {
    [TPS_GRAD_REDUCE_FP32] = "fp32", [TPS_GRAD_REDUCE_BF16] = "bf16", NULL};

const char *const tps_fsdp_names[] = {[TPS_FSDP_NONE] = "none",
                                      [TPS_FSDP_OPTIM] = "optim",
                                      [TPS_FSDP_OPTIM_GRADS] = "optim_grads",
                                      [TPS_FSDP_OPTIM_GRADS_PARAMS] = "optim_grads_params",
                                      NULL};

const char *const tps_fsdp_impl_names[] = {
    [TPS_FSDP_IMPL_MEGATRON] = "megatron", [TPS_FSDP_IMPL_TORCH] = "torch", NULL};
const char *const tps_fp8_recipe_names[] = {[TPS_FP8_DELAYED] = "delayed",
                                            [TPS_FP8_TENSORWISE] = "tensorwise",
                                            [TPS_FP8_BLOCKWISE] = "blockwise",
                                            [TPS_FP8_MXFP8] = "mxfp8",
                                            NULL};
const char *const tps_norm_names[] = {
    [TPS_NORM_LAYERNORM] = "layernorm", [TPS_NORM_RMSNORM] = "rmsnorm", NULL};
/* Megatron's --cp-comm-type spellings. */
const char *const tps_cp_comm_names[] = {[TPS_CP_P2P] = "p2p",
                                         [TPS_CP_A2A] = "a2a",
                                         [TPS_CP_ALLGATHER] = "allgather",
                                         [TPS_CP_A2A_P2P] = "a2a+p2p",
                                         NULL};
G_STATIC_ASSERT(G_N_ELEMENTS(tps_cp_comm_names) == TPS_CP_COMM_COUNT + 1);
/* Megatron's --moe-token-dispatcher-type spellings. */
const char *const tps_moe_dispatcher_names[] = {[TPS_MOE_ALLTOALL] = "alltoall",
                                                [TPS_MOE_ALLGATHER] = "allgather",
                                                [TPS_MOE_FLEX] = "flex",
                                                NULL};
G_STATIC_ASSERT(G_N_ELEMENTS(tps_moe_dispatcher_names) == TPS_MOE_DISPATCHER_COUNT + 1);
const char *const tps_position_names[] = {
    [TPS_POSITION_LEARNED] = "learned_absolute", [TPS_POSITION_ROPE] = "rope", NULL};

guint64
tps_scenario_default_ffn_hidden(guint64 hidden, TpsMlp mlp)
{
    /* int((4 * h * 2 / 3) / 64) * 64, in integers: floor(8h / 3 / 64). */
    if (mlp == TPS_MLP_SWIGLU)
        return 8 * hidden / (3 * 64) * 64;
    return 4 * hidden;
}

void
tps_scenario_order(const TpsScenario *scenario, TpsDim order[TPS_DIM_COUNT])
{
    g_return_if_fail(scenario != NULL && order != NULL);
    guint seen = 0;
    for (guint i = 0; i < TPS_DIM_COUNT; i++)
        if (scenario->order[i] < TPS_DIM_COUNT)
            seen |= TPS_DIM_BIT(scenario->order[i]);
    if (seen != (1u << TPS_DIM_COUNT) - 1) {
        tps_grid_parse_order(TPS_GRID_DEFAULT_ORDER, order, NULL);
        return;
    }
    memcpy(order, scenario->order, sizeof(scenario->order));
}

/* Megatron's --moe-layer-freq: an integer N puts an MoE layer where
 * index % N == 0 (megatron/core/models/gpt/gpt_layer_specs.py,
 * get_gpt_decoder_block_spec's moe_layer_pattern: layer i, 0-based over
 * the whole model, is MoE when i % N == 0, so the first layer always is);
 * a list gives 1 (MoE) or 0 (dense) per layer. */
gboolean
tps_scenario_moe_layer(const TpsScenario *sc, guint64 index)
{
    if (sc->moe.experts == 0)
        return FALSE;
    if (sc->moe.layer_freq == 0)
        return sc->moe.pattern != NULL && index < strlen(sc->moe.pattern) &&
               sc->moe.pattern[index] == '1';
    return index % sc->moe.layer_freq == 0;
}

guint64
tps_scenario_moe_layers(const TpsScenario *sc)
{
    guint64 n = 0;
    for (guint64 i = 0; i < sc->layers; i++)
        n += tps_scenario_moe_layer(sc, i);
    return n;
}

gboolean
tps_scenario_mixes_moe_layers(const TpsScenario *sc)
{
    if (sc->moe.experts == 0 || sc->layers < 2)
        return FALSE;
    if (sc->moe.layer_freq != 0)
        return sc->moe.layer_freq > 1;
    return sc->moe.pattern != NULL && strchr(sc->moe.pattern, '0') != NULL &&
           strchr(sc->moe.pattern, '1') != NULL;
}

void
tps_scenario_dense_layer(const TpsScenario *sc, TpsScenario *dense)
{
    *dense = *sc; /* plain values only are read: no copy of the strings */
    dense->moe.experts = 0;
}

guint
tps_scenario_dense_layers_in(const TpsScenario *sc, guint64 first, guint n)
{
    if (!tps_scenario_mixes_layers(sc))
        return 0;
    guint dense = 0;
    for (guint64 i = first; i < first + n; i++)
        dense += !tps_scenario_moe_layer(sc, i);
    return dense;
}

guint64
tps_scenario_chunk_first_layer(const TpsScenario *sc, guint stage, guint chunk)
{
    /* Megatron's get_transformer_layer_offset(): the layers of every
     * virtual stage before this one (chunk-major: virtual stage chunk x pp
     * + stage), which its closed forms add up to on a valid split. */
    guint64 first = 0;
    const guint vstage = chunk * sc->pp + stage;
    for (guint v = 0; v < vstage; v++)
        first += tps_scenario_chunk_layers(sc, v % sc->pp, v / sc->pp);
    return first;
}

guint
tps_scenario_chunk_dense_layers(const TpsScenario *sc, guint stage, guint chunk)
{
    if (!tps_scenario_mixes_layers(sc))
        return 0;
    return tps_scenario_dense_layers_in(sc, tps_scenario_chunk_first_layer(sc, stage, chunk),
                                        tps_scenario_chunk_layers(sc, stage, chunk));
}

guint
tps_scenario_stage_dense_layers(const TpsScenario *sc, guint stage)
{
    guint n = 0;
    if (!tps_scenario_mixes_layers(sc))
        return 0;
    for (guint c = 0; c < sc->vpp; c++)
        n += tps_scenario_chunk_dense_layers(sc, stage, c);
    return n;
}

gboolean
tps_scenario_uneven(const TpsScenario *sc)
{
    return sc->first_stage_layers != 0 || sc->last_stage_layers != 0 || sc->account_for_embedding ||
           sc->account_for_loss;
}

/* The layers of stage `stage` before its chunks' split, as Megatron's
 * get_num_layers_to_build() counts them (the embedding and the loss
 * counted as layers with account_for_*). */
static guint64
stage_share(const TpsScenario *sc, guint stage)
{
    if (sc->first_stage_layers == 0 && sc->last_stage_layers == 0)
        return (sc->layers + (sc->account_for_embedding ? 1 : 0) + (sc->account_for_loss ? 1 : 0)) /
               sc->pp;
    if (stage == sc->pp - 1 && sc->last_stage_layers != 0)
        return sc->last_stage_layers;
    if (stage == 0 && sc->first_stage_layers != 0)
        return sc->first_stage_layers;
    const guint given = (sc->first_stage_layers != 0) + (sc->last_stage_layers != 0);
    const guint64 rest = sc->layers - sc->first_stage_layers - sc->last_stage_layers;
    return sc->pp > given ? rest / (sc->pp - given) : 0;
}

guint
tps_scenario_chunk_layers(const TpsScenario *sc, guint stage, guint chunk)
{
    guint64 n = stage_share(sc, stage) / sc->vpp;
    if (sc->account_for_embedding && stage == 0 && chunk == 0 && n > 0)
        n--;
    if (sc->account_for_loss && stage == sc->pp - 1 && chunk == sc->vpp - 1 && n > 0)
        n--;
    return (guint)n;
}

guint
tps_scenario_stage_layers(const TpsScenario *sc, guint stage)
{
    if (!tps_scenario_uneven(sc))
        return (guint)(sc->layers / sc->pp);
    guint n = 0;
    for (guint c = 0; c < sc->vpp; c++)
        n += tps_scenario_chunk_layers(sc, stage, c);
    return n;
}

guint
tps_scenario_max_chunk_layers(const TpsScenario *sc)
{
    if (!tps_scenario_uneven(sc))
        return (guint)(sc->layers / ((guint64)sc->pp * sc->vpp));
    guint most = 0;
    for (guint s = 0; s < sc->pp; s++)
        for (guint c = 0; c < sc->vpp; c++)
            most = MAX(most, tps_scenario_chunk_layers(sc, s, c));
    return most;
}

void
tps_scenario_init(TpsScenario *scenario)
{
    g_return_if_fail(scenario != NULL);

    memset(scenario, 0, sizeof *scenario);
    scenario->seed = 1;

    scenario->vocab = 51200;
    scenario->dtype = TPS_DTYPE_BF16;
    scenario->attention = TPS_ATTENTION_FLASH;
    scenario->mlp = TPS_MLP_GELU;
    scenario->norm = TPS_NORM_LAYERNORM;
    scenario->position = TPS_POSITION_LEARNED;
    scenario->bias = TRUE;
    scenario->tie_embeddings = TRUE;
    scenario->hidden_dropout = 0.1; /* Megatron's default --hidden-dropout */
    scenario->fp8_amax_history_len = 1; /* Megatron's default --fp8-amax-history-len */
    /* Megatron's defaults of --kv-lora-rank, --qk-head-dim,
     * --qk-pos-emb-head-dim, --v-head-dim (--q-lora-rank: None). */
    scenario->kv_lora_rank = 32;
    scenario->qk_head_dim = 128;
    scenario->qk_pos_emb_head_dim = 64;
    scenario->v_head_dim = 128;
    /* hidden, heads, layers, seq_len are required for model scenarios and
     * ffn_hidden / global_batch default to values derived from others: the
     * loader fills them in once the rest is known (0 = not given). */

    scenario->micro_batch = 1;
    scenario->recompute = TPS_RECOMPUTE_NONE;
    scenario->overlap_grad_reduce = TRUE;
    scenario->cuda_graphs = FALSE; /* eager, as Megatron runs by default */
    scenario->overlap_param_gather = FALSE; /* Megatron's default */
    scenario->grad_reduce_dtype = TPS_GRAD_REDUCE_FP32;

    scenario->tp = 1;
    scenario->pp = 1;
    scenario->vpp = 1;
    tps_grid_parse_order(TPS_GRID_DEFAULT_ORDER, scenario->order, NULL);
    scenario->dp = 1;
    scenario->cp = 1;
    scenario->cp_comm = TPS_CP_P2P;
    scenario->sp = FALSE;
    scenario->ep = 1;
    scenario->moe.top_k = 2;      /* Megatron's --moe-router-topk default */
    scenario->moe.layer_freq = 1; /* --moe-layer-freq default */
    scenario->moe.dispatcher = TPS_MOE_ALLTOALL;
    /* The measured skew under the auxiliary loss (Megatron's default
     * aux_loss router; TPS_MOE_IMBALANCE_AUX_LOSS); the scenario file sets
     * it by model.moe.expert_bias where model.moe.load_imbalance is not
     * given. */
    scenario->moe.load_imbalance = TPS_MOE_IMBALANCE_AUX_LOSS;

    scenario->op_kind = TPS_OP_AG_GEMM;

    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++) {
        TpsOverlapConfig *config = &scenario->overlap[i];
        config->method = TPS_METHOD_NONE;
        config->cga_size = 2;
        config->use_ce = TRUE;
    }
}

void
tps_scenario_clear(TpsScenario *scenario)
{
    if (scenario == NULL)
        return;
    g_clear_pointer(&scenario->name, g_free);
    g_clear_pointer(&scenario->hardware_ref, g_free);
    g_clear_pointer(&scenario->hardware_file, g_free);
    g_clear_pointer(&scenario->hardware_sha256, g_free);
    g_clear_pointer(&scenario->file, g_free);
    g_clear_pointer(&scenario->strategies, g_strfreev);
    g_clear_pointer(&scenario->moe.pattern, g_free);
    tps_hardware_clear(&scenario->hardware);
    /* Whatever tps_hardware_clear() leaves behind, a second clear must be
     * harmless (destructors accept cleared objects). */
    memset(&scenario->hardware, 0, sizeof scenario->hardware);
}

void
tps_scenario_copy(TpsScenario *dst, const TpsScenario *src)
{
    g_return_if_fail(dst != NULL && src != NULL);
    if (dst == src)
        return;
    /* Every member the scenario owns is listed here and in
     * tps_scenario_clear(); the rest is plain values. */
    memcpy(dst, src, sizeof *dst);
    dst->name = g_strdup(src->name);
    dst->hardware_ref = g_strdup(src->hardware_ref);
    dst->hardware_file = g_strdup(src->hardware_file);
    dst->hardware_sha256 = g_strdup(src->hardware_sha256);
    dst->file = g_strdup(src->file);
    dst->strategies = g_strdupv(src->strategies);
    dst->moe.pattern = g_strdup(src->moe.pattern);
    tps_hardware_copy(&dst->hardware, &src->hardware);
}

TpsScenario *
tps_scenario_new(void)
{
    TpsScenario *scenario = g_new(TpsScenario, 1);
    tps_scenario_init(scenario);
    return scenario;
}

void
tps_scenario_free(TpsScenario *scenario)
{
    if (scenario == NULL)
        return;
    tps_scenario_clear(scenario);
    g_free(scenario);
}

/* ---- validation ---- */

/* Which scenarios a field or a rule concerns. */
enum {
    FOR_MODEL = 1 << 0,
    FOR_OP = 1 << 1,
};

typedef struct {
    const char *path; /* key path in scenario files */
    gsize offset;     /* in TpsScenario */
    gboolean wide;    /* guint64, else guint */
    guint kinds;
    guint64 max; /* every field is at least 1 */
} FieldInfo;

#define FIELD(path, member, wide, kinds, max)                                                      \
    {                                                                                              \
        path, offsetof(TpsScenario, member), wide, kinds, max                                      \
    }

static const FieldInfo fields[TPS_FIELD_COUNT] = {
    [TPS_FIELD_HIDDEN] = FIELD("model.hidden", hidden, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_HIDDEN),
    [TPS_FIELD_HEADS] = FIELD("model.heads", heads, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_HEADS),
    [TPS_FIELD_FFN_HIDDEN] =
        FIELD("model.ffn_hidden", ffn_hidden, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_FFN),
    [TPS_FIELD_LAYERS] = FIELD("model.layers", layers, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_LAYERS),
    [TPS_FIELD_SEQ_LEN] = FIELD("model.seq_len", seq_len, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_SEQ),
    [TPS_FIELD_VOCAB] = FIELD("model.vocab", vocab, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_VOCAB),
    [TPS_FIELD_MICRO_BATCH] =
        FIELD("training.micro_batch", micro_batch, TRUE, FOR_MODEL, TPS_SCENARIO_MAX_MICRO_BATCH),
    [TPS_FIELD_GLOBAL_BATCH] = FIELD("training.global_batch", global_batch, TRUE, FOR_MODEL,
                                     TPS_SCENARIO_MAX_GLOBAL_BATCH),
    [TPS_FIELD_TP] = FIELD("parallel.tp", tp, FALSE, FOR_MODEL | FOR_OP, TPS_SCENARIO_MAX_TP),
    [TPS_FIELD_PP] = FIELD("parallel.pp", pp, FALSE, FOR_MODEL, TPS_SCENARIO_MAX_PP),
    [TPS_FIELD_VPP] = FIELD("parallel.vpp", vpp, FALSE, FOR_MODEL, TPS_SCENARIO_MAX_VPP),
    [TPS_FIELD_DP] = FIELD("parallel.dp", dp, FALSE, FOR_MODEL, TPS_SCENARIO_MAX_DP),
    [TPS_FIELD_CP] = FIELD("parallel.cp", cp, FALSE, FOR_MODEL, TPS_SCENARIO_MAX_CP),
    [TPS_FIELD_CP_COMM] = {"parallel.cp_comm", 0, FALSE, 0, 0},
    [TPS_FIELD_OP_M] = FIELD("op.m", m, TRUE, FOR_OP, TPS_SCENARIO_MAX_OP_DIM),
    [TPS_FIELD_OP_N] = FIELD("op.n", n, TRUE, FOR_OP, TPS_SCENARIO_MAX_OP_DIM),
    [TPS_FIELD_OP_K] = FIELD("op.k", k, TRUE, FOR_OP, TPS_SCENARIO_MAX_OP_DIM),
    /* Per overlap entry: the path and the value depend on the slot. */
    [TPS_FIELD_NUM_SPLITS] = {"num_splits", 0, FALSE, FOR_MODEL | FOR_OP,
                              TPS_SCENARIO_MAX_NUM_SPLITS},
    /* Checked by rules of their own (0 is kv_heads' default; dtype is not a
     * number): no kinds, so the range loop skips them. */
    [TPS_FIELD_KV_HEADS] = FIELD("model.kv_heads", kv_heads, TRUE, 0, TPS_SCENARIO_MAX_HEADS),
    [TPS_FIELD_DTYPE] = {"model.dtype", 0, FALSE, 0, 0},
    [TPS_FIELD_OP_DTYPE] = {"op.dtype", 0, FALSE, 0, 0},
    [TPS_FIELD_FIRST_STAGE_LAYERS] =
        FIELD("parallel.first_stage_layers", first_stage_layers, FALSE, 0, TPS_SCENARIO_MAX_LAYERS),
    [TPS_FIELD_LAST_STAGE_LAYERS] =
        FIELD("parallel.last_stage_layers", last_stage_layers, FALSE, 0, TPS_SCENARIO_MAX_LAYERS),
    [TPS_FIELD_ACCOUNT_EMBEDDING] = {"parallel.account_for_embedding_in_pipeline_split", 0, FALSE,
                                     0, 0},
    [TPS_FIELD_EP] = FIELD("parallel.ep", ep, FALSE, FOR_MODEL, TPS_SCENARIO_MAX_EP),
    /* Checked by the MoE rules (0 is their default or "dense"). */
    [TPS_FIELD_ETP] = FIELD("parallel.etp", etp, FALSE, 0, TPS_SCENARIO_MAX_TP),
    [TPS_FIELD_MOE_EXPERTS] =
        FIELD("model.moe.experts", moe.experts, FALSE, 0, TPS_SCENARIO_MAX_EXPERTS),
    [TPS_FIELD_MOE_TOP_K] = FIELD("model.moe.top_k", moe.top_k, FALSE, 0, TPS_SCENARIO_MAX_EXPERTS),
    [TPS_FIELD_MOE_FFN_HIDDEN] =
        FIELD("model.moe.ffn_hidden", moe.ffn_hidden, TRUE, 0, TPS_SCENARIO_MAX_FFN),
    [TPS_FIELD_MOE_LAYER_FREQ] = {"model.moe.layer_freq", 0, FALSE, 0, 0},
    [TPS_FIELD_MOE_DISPATCHER] = {"model.moe.dispatcher", 0, FALSE, 0, 0},
    [TPS_FIELD_HEAD_DIM] = FIELD("model.head_dim", head_dim, TRUE, 0, TPS_SCENARIO_MAX_HEAD_DIM),
    [TPS_FIELD_FP8_RECIPE] = {"model.fp8_recipe", 0, FALSE, 0, 0},
    [TPS_FIELD_MOE_OVERLAP_EP_COMM] = {"model.moe.overlap_ep_comm", 0, FALSE, 0, 0},
    [TPS_FIELD_MOE_ROUTER_GROUPS] =
        FIELD("model.moe.router_groups", moe.router_groups, FALSE, 0, TPS_SCENARIO_MAX_EXPERTS),
    [TPS_FIELD_MOE_ROUTER_GROUP_TOPK] = FIELD("model.moe.router_group_topk", moe.router_group_topk,
                                              FALSE, 0, TPS_SCENARIO_MAX_EXPERTS),
    /* Checked by the latent attention's rule (mla_fits). */
    [TPS_FIELD_MLA] = {"model.multi_latent_attention", 0, FALSE, 0, 0},
    [TPS_FIELD_Q_LORA_RANK] =
        FIELD("model.q_lora_rank", q_lora_rank, TRUE, 0, TPS_SCENARIO_MAX_HIDDEN),
    [TPS_FIELD_KV_LORA_RANK] =
        FIELD("model.kv_lora_rank", kv_lora_rank, TRUE, 0, TPS_SCENARIO_MAX_HIDDEN),
    [TPS_FIELD_QK_HEAD_DIM] =
        FIELD("model.qk_head_dim", qk_head_dim, TRUE, 0, TPS_SCENARIO_MAX_HEAD_DIM),
    [TPS_FIELD_QK_POS_EMB_HEAD_DIM] =
        FIELD("model.qk_pos_emb_head_dim", qk_pos_emb_head_dim, TRUE, 0, TPS_SCENARIO_MAX_HEAD_DIM),
    [TPS_FIELD_V_HEAD_DIM] =
        FIELD("model.v_head_dim", v_head_dim, TRUE, 0, TPS_SCENARIO_MAX_HEAD_DIM),
};

#undef FIELD

char *
tps_scenario_field_path(TpsScenarioField field, TpsGemmSlot slot)
{
    g_return_val_if_fail(field > TPS_FIELD_NONE && field < TPS_FIELD_COUNT, NULL);
    if (field == TPS_FIELD_NUM_SPLITS) {
        g_return_val_if_fail(slot < TPS_GEMM_SLOT_COUNT, NULL);
        return g_strdup_printf("overlap.%s.%s", tps_gemm_slot_names[slot], fields[field].path);
    }
    return g_strdup(fields[field].path);
}

/* The value of a field that is one member of the scenario (all but the
 * overlap entries'). */
static guint64
member_value(const TpsScenario *sc, TpsScenarioField field)
{
    const FieldInfo *f = &fields[field];
    return f->wide ? G_STRUCT_MEMBER(guint64, sc, f->offset)
                   : G_STRUCT_MEMBER(guint, sc, f->offset);
}

static gboolean fail(TpsScenarioProblem *problem, TpsScenarioField field, TpsScenarioField fallback,
                     TpsGemmSlot slot, GError **error, const char *format, ...) G_GNUC_PRINTF(6, 7);

static gboolean
fail(TpsScenarioProblem *problem, TpsScenarioField field, TpsScenarioField fallback,
     TpsGemmSlot slot, GError **error, const char *format, ...)
{
    if (problem != NULL) {
        problem->field = field;
        problem->fallback = fallback;
        problem->slot = slot;
    }
    va_list args;
    va_start(args, format);
    g_autofree char *message = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error_literal(error, TPS_ERROR, TPS_ERROR_INPUT, message);
    return FALSE;
}

/* The message is the one of the YAML reader's range check, so that a value
 * set after loading reads as if it had been written in the file. */
static gboolean
check_range(guint64 value, TpsScenarioField field, TpsGemmSlot slot, TpsScenarioProblem *problem,
            GError **error)
{
    if (value >= 1 && value <= fields[field].max)
        return TRUE;
    g_autofree char *path = tps_scenario_field_path(field, slot);
    return fail(problem, field, TPS_FIELD_NONE, slot, error,
                "'%s' is %" G_GUINT64_FORMAT ", out of range [1, %" G_GUINT64_FORMAT "]", path,
                value, fields[field].max);
}

/* A rule between values: `field` must be a multiple of `by` (times `by2`
 * unless TPS_FIELD_NONE), where `when` holds; or `check`, for a rule of
 * another shape. Messages point at the dividend, the value to change in
 * the usual case (heads, not tp). */
typedef struct Rule Rule;
struct Rule {
    guint kinds;
    gboolean (*when)(const TpsScenario *sc); /* NULL: always */
    TpsScenarioField field, by, by2;
    TpsScenarioField fallback; /* see TpsScenarioProblem */
    const char *why;
    gboolean (*check)(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error);
};

static gboolean
with_sp(const TpsScenario *sc)
{
    return sc->sp;
}

static gboolean
interleaved(const TpsScenario *sc)
{
    return sc->vpp > 1;
}

static gboolean
is_ag_gemm(const TpsScenario *sc)
{
    return sc->op_kind == TPS_OP_AG_GEMM;
}

static gboolean
is_gemm_rs(const TpsScenario *sc)
{
    return sc->op_kind == TPS_OP_GEMM_RS;
}

static gboolean
vpp_needs_stages(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    if (sc->pp >= 2)
        return TRUE;
    return fail(problem, TPS_FIELD_VPP, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                "parallel.vpp (%u) needs pipeline stages (parallel.pp > 1)", sc->vpp);
}

/* Megatron's interleaved schedule runs micro-batches in groups of pp. */
static gboolean
micro_batches_in_groups(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
    if (micro % sc->pp == 0)
        return TRUE;
    return fail(problem, TPS_FIELD_GLOBAL_BATCH, TPS_FIELD_VPP, TPS_GEMM_SLOT_COUNT, error,
                "the interleaved schedule (parallel.vpp > 1) needs the number of micro-batches "
                "(%" G_GUINT64_FORMAT " = global_batch / (micro_batch * dp)) to be a multiple of "
                "parallel.pp (%u)",
                micro, sc->pp);
}

/* Context parallelism (parallel.cp > 1): the sequence in 2 x cp chunks,
 * two per CP rank (Megatron's causal load balancing), Transformer Engine's
 * fused attention, and what each exchange needs of the heads. */
static gboolean
with_cp(const TpsScenario *sc)
{
    return sc->cp > 1;
}

static gboolean
cp_sequence_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    if (sc->seq_len % (2ull * sc->cp) != 0)
        return fail(problem, TPS_FIELD_SEQ_LEN, TPS_FIELD_CP, none, error,
                    "model.seq_len (%" G_GUINT64_FORMAT ") must be divisible by 2 * parallel.cp "
                    "(%u): the sequence is split in 2 x cp chunks, two per CP rank",
                    sc->seq_len, 2 * sc->cp);
    if (sc->sp && (sc->seq_len / sc->cp) % sc->tp != 0)
        return fail(problem, TPS_FIELD_SEQ_LEN, TPS_FIELD_CP, none, error,
                    "model.seq_len / parallel.cp (%" G_GUINT64_FORMAT
                    ") must be divisible by parallel.tp (%u): sequence parallelism shards a CP "
                    "rank's tokens over tp",
                    sc->seq_len / sc->cp, sc->tp);
    if (sc->attention != TPS_ATTENTION_FLASH)
        return fail(problem, TPS_FIELD_CP, TPS_FIELD_NONE, none, error,
                    "parallel.cp (%u) needs model.attention flash: context parallelism runs "
                    "Transformer Engine's fused attention on each block",
                    sc->cp);
    if (sc->tp > TPS_SCENARIO_MAX_TP / 2)
        return fail(problem, TPS_FIELD_CP, TPS_FIELD_TP, none, error,
                    "parallel.cp (%u) with parallel.tp %u: a layer with context parallelism "
                    "simulates 2 x tp ranks, at most %u",
                    sc->cp, sc->tp, TPS_SCENARIO_MAX_TP);
    return TRUE;
}

static gboolean
cp_comm_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    if (sc->cp_comm == TPS_CP_A2A || sc->cp_comm == TPS_CP_A2A_P2P) {
        const guint a2a = sc->cp_comm == TPS_CP_A2A ? sc->cp : sc->cp_a2a;
        if (sc->cp_comm == TPS_CP_A2A_P2P && (a2a < 2 || a2a >= sc->cp || sc->cp % a2a != 0))
            return fail(problem, TPS_FIELD_CP_COMM, TPS_FIELD_CP, none, error,
                        "parallel.cp_comm a2a+p2p needs parallel.cp_a2a, a divisor of "
                        "parallel.cp (%u) between 2 and cp / 2 (the a2a size; the ring runs over "
                        "cp / cp_a2a)",
                        sc->cp);
        const guint64 heads_ways = (guint64)sc->tp * a2a;
        if (sc->heads % heads_ways != 0 || tps_scenario_kv_heads(sc) % heads_ways != 0)
            return fail(problem, TPS_FIELD_HEADS, TPS_FIELD_CP_COMM, none, error,
                        "model.heads (%" G_GUINT64_FORMAT ") and the K/V heads (%" G_GUINT64_FORMAT
                        ") must be divisible by parallel.tp * the a2a size (%" G_GUINT64_FORMAT
                        "): the all-to-all turns sequence shards into head shards",
                        sc->heads, tps_scenario_kv_heads(sc), heads_ways);
    }
    /* The machine of a layer: the slice and a set of tp stand-ins per kind
     * of peer (sched/placement.h TpsCpSets). */
    if (tps_place_layer_ranks(sc) > TPS_SCENARIO_MAX_TP)
        return fail(problem, TPS_FIELD_CP_COMM, TPS_FIELD_TP, none, error,
                    "parallel.cp_comm %s with parallel.tp %u and parallel.cp %u: the layer "
                    "simulates %u ranks (the TP group and one of stand-ins per kind of CP peer), "
                    "at most %u",
                    tps_cp_comm_names[sc->cp_comm], sc->tp, sc->cp, tps_place_layer_ranks(sc),
                    TPS_SCENARIO_MAX_TP);
    return TRUE;
}

/* ---- what the simulation can represent ----
 *
 * Times are signed 64-bit nanoseconds and a kernel's CTAs a 32-bit count.
 * The rules below keep every scenario the loader accepts inside those, so
 * that no figure wraps around (issue 13, D3 and D4): they need the
 * hardware model, and the loader runs the validation again once it has
 * read it. */

static gboolean
with_hardware(const TpsScenario *sc)
{
    return sc->hardware.sms > 0 && sc->hardware.n_tiles > 0;
}

/* The most CTAs a GEMM [m x n] can have with the model's smallest tile
 * sides, as a double (it may be far beyond 2^32). */
static double
gemm_ctas(const TpsHardware *hw, double m, double n)
{
    guint tm = G_MAXUINT, tn = G_MAXUINT;
    for (guint i = 0; i < hw->n_tiles; i++) {
        tm = MIN(tm, hw->tiles[i].m);
        tn = MIN(tn, hw->tiles[i].n);
    }
    return ceil(m / tm) * ceil(n / tn);
}

/* Flash attention's blocks of 128 queries (cost/attention.c). */
#define FLASH_BLOCK 128.0

/* Every kernel's CTAs in 32 bits: the GEMMs of a layer (tokens x the
 * widest output, the weight gradients' h or ffn x the widest), the
 * attention core (a block per 128 queries of each head and sequence, or
 * the unfused scores' tiles), the op's GEMM. */
static gboolean
ctas_fit(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsHardware *hw = &sc->hardware;
    const double limit = G_MAXUINT;
    double ctas;
    const char *what;
    TpsScenarioField field;
    if (sc->is_op) {
        const double n = sc->op_kind == TPS_OP_AG_GEMM ? (double)sc->n / sc->tp : (double)sc->n;
        ctas = gemm_ctas(hw, (double)sc->m, n);
        what = "the op's GEMM";
        field = TPS_FIELD_OP_M;
    } else {
        const double t = sc->tp, h = sc->hidden, f = sc->ffn_hidden, s = sc->seq_len;
        const double b = sc->micro_batch, tokens = b * s, heads = sc->heads / t;
        const double fc1 = (sc->mlp == TPS_MLP_SWIGLU ? 2.0 : 1.0) * f / t;
        const double widest = MAX(MAX(3.0 * h / t, h), MAX(fc1, ceil((double)sc->vocab / t)));
        ctas = MAX(gemm_ctas(hw, tokens, widest), gemm_ctas(hw, MAX(h, fc1), widest));
        what = "a GEMM of the layer";
        const double attention = sc->attention == TPS_ATTENTION_FLASH
                                     ? b * heads * ceil(s / FLASH_BLOCK)
                                     : b * heads * gemm_ctas(hw, s, s);
        if (attention > ctas) {
            ctas = attention;
            what = "the attention core";
        }
        field = sc->micro_batch > 1 ? TPS_FIELD_MICRO_BATCH : TPS_FIELD_SEQ_LEN;
    }
    if (ctas <= limit)
        return TRUE;
    g_autofree char *path = tps_scenario_field_path(field, TPS_GEMM_SLOT_COUNT);
    return fail(problem, field, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                "%s would have %.0f CTAs (thread blocks), more than the %u a kernel has in the "
                "simulation: reduce %s",
                what, ctas, G_MAXUINT, path);
}

/* The step at the GPU's peak rates, in ns: every FLOP of the busiest
 * stage at the tensor-core peak, every byte of the activations through HBM
 * (read and written three times), the TP collectives at the NVLink (or the
 * network's) rate, every kernel's launch, the pipeline's fill and drain,
 * the DP reduction and the optimizer. The simulation is slower (GEMM
 * efficiencies, exposed communication): the rule below leaves it a factor
 * of STEP_SLACK, and a step beyond the range anyway stops the pipeline with
 * an error (sched/pipeline.c), never a wrapped number. */
#define STEP_SLACK 4.0

double
tps_scenario_step_estimate_ns(const TpsScenario *sc)
{
    const TpsHardware *hw = &sc->hardware;
    const double t = sc->tp, h = sc->hidden, f = sc->ffn_hidden, s = sc->seq_len;
    const double b = sc->micro_batch, V = sc->vocab, tokens = b * s;
    const double micro = (double)sc->global_batch / ((double)sc->micro_batch * sc->dp);
    double layers = 0.0; /* the most of any stage */
    for (guint st = 0; st < sc->pp; st++)
        layers = MAX(layers, (double)tps_scenario_stage_layers(sc, st));
    /* FLOP/ns; the bf16 rate under fp8 (attention and the head), or the
     * fp8 one where it is the lower (a model that may say 0). */
    const double peak =
        MAX(MIN(hw->peak_tflops[sc->dtype], hw->peak_tflops[tps_dtype_compute(sc->dtype)]), 1.0) *
        1e3;
    const double hbm = hw->hbm_gbps * hw->hbm_efficiency;
    double link = hw->nvlink_gbps * hw->nvlink_efficiency;
    if (sc->tp > tps_topo_domain_gpus(hw))
        link = MIN(link, hw->nics_per_node * hw->nic_gbps);
    const double nic = hw->nic_gbps;

    /* One layer, one micro-batch, one GPU: forward, backward (twice the
     * forward) and the forward again under full recompute. */
    /* (GQA and fewer MLP matrices only make a layer cheaper: 3 f for
     * SwiGLU's three, the GeLU MLP's 2 f otherwise.) */
    /* A mixture of experts: top_k experts' FFNs (each as wide as
     * model.moe.ffn_hidden, the busiest one load_imbalance times the mean
     * tokens) and the shared experts' per token. */
    const double width = sc->moe.experts > 0 ? (double)sc->moe.top_k * sc->moe.ffn_hidden *
                                                       MAX(sc->moe.load_imbalance, 1.0) +
                                                   (double)sc->moe.shared_ffn_hidden
                                             : f;
    const double mlp = (sc->mlp == TPS_MLP_SWIGLU ? 3.0 : 2.0) * width;
    const double forward = 2.0 * tokens * h * (4.0 * h + mlp) / t + 4.0 * tokens * s * h / t;
    const double passes = sc->recompute == TPS_RECOMPUTE_FULL ? 4.0 : 3.0;
    guint splits = MAX(sc->tp, 4u);
    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
        splits = MAX(splits, sc->overlap[i].num_splits);
    /* About 30 kernels a layer forward and backward, and 3 a chunk for
     * each of its 10 overlappable GEMMs. */
    const double kernels = 30.0 + 30.0 * splits;
    const double comm = sc->tp > 1 ? 10.0 * 2.0 * tokens * h / link : 0.0;
    const double layer = passes * forward / peak + 6.0 * tps_layer_activation_bytes(sc) / hbm +
                         comm + kernels * hw->launch_us * 1e3;
    /* The output layer and loss (the last stage): 3 x 2 T h V / t FLOPs,
     * the fp32 logits written and read. */
    const double head = 6.0 * tokens * h * V / t / peak + 3.0 * 4.0 * tokens * V / t / hbm;
    /* Fill and drain: pp - 1 more micro-batches' time on the busiest
     * stage. */
    const double stage = (micro + sc->pp - 1.0) * (layers * layer + head);
    /* All gradients reduced over the network (4 bytes each, twice: a
     * ring), the fused Adam step (30 bytes each through HBM). */
    const double params = tps_stage_params(sc, 0) + tps_stage_params(sc, sc->pp - 1);
    const double dp = sc->dp > 1 ? 2.0 * 4.0 * params / nic : 0.0;
    return stage + dp + 30.0 * params / hbm;
}

static gboolean
step_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const double estimate = tps_scenario_step_estimate_ns(sc);
    if (STEP_SLACK * estimate < (double)TPS_SCENARIO_MAX_STEP_NS)
        return TRUE;
    /* Point at what multiplies the step: the micro-batches, else the
     * layers, else the micro-batch's size. */
    const guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
    TpsScenarioField field = TPS_FIELD_SEQ_LEN, fallback = TPS_FIELD_NONE;
    if (micro > 1) {
        field = TPS_FIELD_GLOBAL_BATCH;
        fallback = TPS_FIELD_LAYERS;
    } else if (sc->layers > (guint64)sc->pp * sc->vpp) {
        field = TPS_FIELD_LAYERS;
    } else if (sc->micro_batch > 1) {
        field = TPS_FIELD_MICRO_BATCH;
    }
    g_autofree char *path = tps_scenario_field_path(field, TPS_GEMM_SLOT_COUNT);
    return fail(problem, field, fallback, TPS_GEMM_SLOT_COUNT, error,
                "a step would last at least %.3g s (%.3g ns at the GPU's peak rates), beyond "
                "the %.3g ns the simulation represents with room for its slowdowns (2^62 / %g): "
                "reduce %s",
                estimate * 1e-9, estimate, (double)TPS_SCENARIO_MAX_STEP_NS / STEP_SLACK,
                STEP_SLACK, path);
}

/* The shortest pipeline schedule the step simulates must fit its limit:
 * pp x vpp x the micro-batches it needs x 2 chunks. */
static gboolean
schedule_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
    const guint64 ops = tps_pipeline_min_ops(sc->pp, sc->vpp, micro);
    if (ops <= TPS_PIPELINE_MAX_OPS)
        return TRUE;
    return fail(problem, TPS_FIELD_PP, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                "the pipeline schedule of parallel.pp (%u) x parallel.vpp (%u) stages needs "
                "%" G_GUINT64_FORMAT
                " forward and backward chunks, more than the %" G_GUINT64_FORMAT
                " the simulation holds",
                sc->pp, sc->vpp, ops, (guint64)TPS_PIPELINE_MAX_OPS);
}

/* A pipeline chunk split along the output columns (the pipeline method:
 * num_splits chunks of n / num_splits columns, the last one taking the
 * rest) needs a column for each chunk: more chunks than columns leave GEMM
 * chunks of no columns, each still launched, waited for and
 * reduce-scattered (the overlap efficiency of -31 of issue 13). The output
 * columns are the hidden size for every reduce-scattered GEMM of a layer,
 * n for a gemm_rs op. */
static gboolean
splits_have_columns(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const guint64 columns = sc->is_op ? sc->n : sc->hidden;
    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++) {
        const TpsOverlapConfig *c = &sc->overlap[slot];
        const TpsMethodInfo *m = tps_method_info(c->method);
        if (!c->set || !m->has_splits || m->splits_per_rank)
            continue;
        const guint splits = c->num_splits != 0 ? c->num_splits : m->defaults.num_splits;
        if (splits <= columns)
            continue;
        g_autofree char *path = tps_scenario_field_path(TPS_FIELD_NUM_SPLITS, (TpsGemmSlot)slot);
        return fail(problem, TPS_FIELD_NUM_SPLITS, TPS_FIELD_NONE, (TpsGemmSlot)slot, error,
                    "%s (%u) is more than the %" G_GUINT64_FORMAT " output columns (%s) the "
                    "'%s' method splits its GEMM along: chunks without a column would still "
                    "be launched and reduce-scattered",
                    path, splits, columns, sc->is_op ? "op.n" : "model.hidden", m->name);
    }
    return TRUE;
}

/* Grouped-query attention: the query heads are split in kv_heads groups,
 * and Megatron splits the groups over tp (megatron/core/transformer/
 * attention.py asserts num_query_groups % tensor_model_parallel_size == 0:
 * it does not replicate K/V heads across ranks). */
static gboolean
kv_heads_fit(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const guint64 kv = sc->kv_heads;
    if (kv == 0)
        return TRUE;
    if (kv > sc->heads)
        return fail(problem, TPS_FIELD_KV_HEADS, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                    "model.kv_heads (%" G_GUINT64_FORMAT ") is more than model.heads (%" G_GUINT64_FORMAT
                    "): each K/V head serves a group of query heads",
                    kv, sc->heads);
    if (sc->heads % kv != 0)
        return fail(problem, TPS_FIELD_KV_HEADS, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                    "model.heads (%" G_GUINT64_FORMAT ") must be divisible by model.kv_heads (%" G_GUINT64_FORMAT
                    "): the query heads form kv_heads groups of as many heads",
                    sc->heads, kv);
    if (kv % sc->tp != 0)
        return fail(problem, TPS_FIELD_KV_HEADS, TPS_FIELD_TP, TPS_GEMM_SLOT_COUNT, error,
                    "model.kv_heads (%" G_GUINT64_FORMAT ") must be divisible by parallel.tp (%u): "
                    "Megatron splits the K/V heads (--num-query-groups) over tensor-parallel ranks "
                    "and does not replicate them",
                    kv, sc->tp);
    return TRUE;
}

static gboolean
heads_split_hidden(const TpsScenario *sc)
{
    return sc->head_dim == 0 && !sc->mla;
}

static gboolean
with_mla(const TpsScenario *sc)
{
    return sc->mla;
}

/* Multi-head latent attention as Megatron's MLASelfAttention runs it
 * (megatron/core/transformer/multi_latent_attention.py): its head sizes
 * are its own keys (--kv-channels and --num-query-groups do not apply), its
 * rotary part needs rotary positions, and what tpsim models of it is the
 * fused attention kernel without context parallelism. */
static gboolean
mla_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const char *why = NULL;
    TpsScenarioField field = TPS_FIELD_MLA;
    if (sc->head_dim != 0) {
        field = TPS_FIELD_HEAD_DIM;
        why = "model.head_dim does not apply to multi-head latent attention: its heads are "
              "model.qk_head_dim + model.qk_pos_emb_head_dim (Q, K) and model.v_head_dim (V) wide";
    } else if (sc->kv_heads != 0 && sc->kv_heads != sc->heads) {
        field = TPS_FIELD_KV_HEADS;
        why = "model.kv_heads does not apply to multi-head latent attention: every head has its "
              "own K and V, up-projected from the shared latent";
    } else if (sc->kv_lora_rank == 0 || sc->qk_head_dim == 0 || sc->qk_pos_emb_head_dim == 0 ||
               sc->v_head_dim == 0) {
        field = sc->kv_lora_rank == 0  ? TPS_FIELD_KV_LORA_RANK
                : sc->qk_head_dim == 0 ? TPS_FIELD_QK_HEAD_DIM
                : sc->v_head_dim == 0  ? TPS_FIELD_V_HEAD_DIM
                                       : TPS_FIELD_QK_POS_EMB_HEAD_DIM;
        why = "model.kv_lora_rank, model.qk_head_dim, model.qk_pos_emb_head_dim and "
              "model.v_head_dim must be at least 1 (only model.q_lora_rank may be 0: no Q latent)";
    } else if (sc->position != TPS_POSITION_ROPE) {
        why = "multi-head latent attention needs model.position_embedding: rope (its "
              "qk_pos_emb_head_dim channels are the rotary part of Q and K)";
    } else if (sc->attention != TPS_ATTENTION_FLASH) {
        why = "multi-head latent attention is modelled with the fused (flash) attention kernel "
              "only: set model.attention: flash";
    } else if (sc->bias) {
        why = "multi-head latent attention with model.bias: true is not modelled (Megatron builds "
              "its down and up projections without biases): set model.bias: false";
    } else if (sc->dtype == TPS_DTYPE_FP8) {
        field = TPS_FIELD_DTYPE;
        why = "multi-head latent attention under model.dtype fp8 is not modelled (the FP8 casts "
              "of its latents and down projections): use bf16";
    } else if (sc->cp > 1) {
        field = TPS_FIELD_CP;
        why = "multi-head latent attention with context parallelism (parallel.cp > 1) is not "
              "modelled";
    }
    if (why == NULL)
        return TRUE;
    return fail(problem, field, TPS_FIELD_MLA, TPS_GEMM_SLOT_COUNT, error, "%s", why);
}

/* ---- mixture of experts ----
 *
 * Megatron's rules (megatron/training/arguments.py, parallel_state.py,
 * moe/moe_layer.py): the experts split evenly over the expert-parallel
 * ranks, each expert's FFN over the expert tensor-parallel ranks, and the
 * expert grid etp x ep x edp x pp covers the dense grid's GPUs; with
 * tensor parallelism the MoE layer needs sequence parallelism. */
static gboolean
with_moe(const TpsScenario *sc)
{
    return sc->moe.experts > 0;
}

/* Node-limited routing (Megatron's group_limited_topk in moe_utils.py):
 * the experts in router_groups equal groups, each token's top_k drawn
 * from router_group_topk of them. */
static gboolean
router_groups_fit(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    const TpsMoe *m = &sc->moe;
    if (m->router_groups == 0 && m->router_group_topk == 0)
        return TRUE;
    if (m->router_groups == 0 || m->router_group_topk == 0)
        return fail(problem,
                    m->router_groups == 0 ? TPS_FIELD_MOE_ROUTER_GROUP_TOPK
                                          : TPS_FIELD_MOE_ROUTER_GROUPS,
                    TPS_FIELD_NONE, none, error,
                    "model.moe.router_groups and router_group_topk go together (Megatron's "
                    "--moe-router-num-groups and --moe-router-group-topk)");
    if (m->experts % m->router_groups != 0)
        return fail(problem, TPS_FIELD_MOE_ROUTER_GROUPS, TPS_FIELD_NONE, none, error,
                    "model.moe.experts (%u) must be divisible by model.moe.router_groups (%u): "
                    "the groups are equal",
                    m->experts, m->router_groups);
    const guint64 pool = (guint64)m->router_group_topk * (m->experts / m->router_groups);
    if (m->router_group_topk > m->router_groups || m->top_k > pool)
        return fail(problem, TPS_FIELD_MOE_ROUTER_GROUP_TOPK, TPS_FIELD_NONE, none, error,
                    "model.moe.router_group_topk (%u) must be at most router_groups (%u), and "
                    "its groups must hold top_k (%u) experts",
                    m->router_group_topk, m->router_groups, m->top_k);
    return TRUE;
}

static gboolean
moe_shape_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    const TpsMoe *m = &sc->moe;
    if (m->top_k < 1 || m->top_k > m->experts)
        return fail(problem, TPS_FIELD_MOE_TOP_K, TPS_FIELD_NONE, none, error,
                    "model.moe.top_k (%u) must be between 1 and model.moe.experts (%u): each "
                    "token goes to top_k distinct experts",
                    m->top_k, m->experts);
    if (m->experts % sc->ep != 0)
        return fail(problem, TPS_FIELD_MOE_EXPERTS, TPS_FIELD_EP, none, error,
                    "model.moe.experts (%u) must be divisible by parallel.ep (%u): each "
                    "expert-parallel rank holds experts / ep experts",
                    m->experts, sc->ep);
    if (m->ffn_hidden % tps_scenario_etp(sc) != 0)
        return fail(problem, TPS_FIELD_MOE_FFN_HIDDEN, TPS_FIELD_ETP, none, error,
                    "model.moe.ffn_hidden (%" G_GUINT64_FORMAT ") must be divisible by the "
                    "expert tensor-parallel size (%u): each expert's FC1 and FC2 are split "
                    "over etp",
                    m->ffn_hidden, tps_scenario_etp(sc));
    if (m->shared_ffn_hidden % sc->tp != 0)
        return fail(problem, TPS_FIELD_MOE_FFN_HIDDEN, TPS_FIELD_NONE, none, error,
                    "model.moe.shared_ffn_hidden (%" G_GUINT64_FORMAT ") must be divisible by "
                    "parallel.tp (%u): the shared experts are split over tp like a dense MLP",
                    m->shared_ffn_hidden, sc->tp);
    return router_groups_fit(sc, problem, error);
}

/* The flex dispatcher with etp > 1, as tpsim counts it
 * (tps_flex_plan_etp()): the etp ranks of an EP rank in one NVLink domain
 * (etp dividing the domain's `near` members), and an EP peer in the
 * rank's own domain, whose stand-in takes the forwarding over NVLink
 * (placement.c's EP stand-ins are of the EP peers, not of the ETP ones). */
static gboolean
flex_etp_fits(const TpsScenario *sc, guint etp, guint near, TpsScenarioProblem *problem,
              GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    TpsEpSets sets;
    tps_place_ep_sets(sc, &sets);
    if (near % etp != 0)
        return fail(problem, TPS_FIELD_MOE_DISPATCHER, TPS_FIELD_ETP, none, error,
                    "model.moe.dispatcher flex with parallel.etp %u: the ETP ranks of an EP "
                    "rank must share an NVLink domain (%u of the group's ranks a domain)",
                    etp, near);
    if (sets.near_count == 0)
        return fail(problem, TPS_FIELD_MOE_DISPATCHER, TPS_FIELD_ETP, none, error,
                    "model.moe.dispatcher flex with parallel.etp %u and no EP peer in a rank's "
                    "NVLink domain is not modelled (the tokens forwarded over NVLink would go to "
                    "its ETP peers only)",
                    etp);
    return TRUE;
}

/* What DeepEP's normal kernels, under Megatron's flex dispatcher, can run
 * (cost/alltoall-flex.h). */
static gboolean
flex_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    const TpsScenarioField at = TPS_FIELD_MOE_DISPATCHER;
    /* Buffer.get_dispatch_config's table of group sizes; the group is
     * ETP x EP (MoEFlexTokenDispatcher: one group over the TP and EP
     * ranks). */
    static const guint sizes[] = {2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144, 160};
    const guint etp = tps_scenario_etp(sc), ranks = etp * sc->ep;
    gboolean listed = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++)
        listed = listed || ranks == sizes[i];
    if (sc->ep < 2)
        return fail(problem, at, TPS_FIELD_EP, none, error,
                    "model.moe.dispatcher flex needs parallel.ep > 1 (Megatron: \"DeepEP "
                    "dispatcher requires TPxEP > 1\")");
    if (!listed)
        return fail(problem, at, TPS_FIELD_EP, none, error,
                    "model.moe.dispatcher flex: DeepEP has no kernel configuration for %u ranks "
                    "(ETP %u x EP %u; Buffer.get_dispatch_config: 2, 4, 8, 16, 24, 32, 48, 64, "
                    "96, 128, 144 or 160)",
                    ranks, etp, sc->ep);
    if (sc->cuda_graphs)
        return fail(problem, at, TPS_FIELD_NONE, none, error,
                    "model.moe.dispatcher flex with training.cuda_graphs: DeepEP's dispatch waits "
                    "on the host for the receive counts, which a captured graph cannot "
                    "(Megatron's fused_a2a.py)");
    /* The topology (checked once the hardware model is in: the loader's
     * second pass). */
    if (sc->hardware.gpus_per_node == 0)
        return TRUE;
    TpsGroupShape shape;
    tps_place_expert_group_shape(sc, TPS_DIM_BIT(TPS_DIM_TP) | TPS_DIM_BIT(TPS_DIM_EP), &shape);
    const guint near = shape.crosses ? shape.per_domain : shape.ranks;
    const gboolean fits =
        ranks <= TPS_FLEX_MAX_NVL_PEERS ? !shape.crosses : near == TPS_FLEX_MAX_NVL_PEERS;
    if (!fits)
        return fail(problem, at, TPS_FIELD_EP, none, error,
                    "model.moe.dispatcher flex: DeepEP's kernels need the ETP x EP group on one "
                    "NVLink domain up to %u ranks, and beyond in groups of exactly %u per domain "
                    "(here %u of its %u ranks share one)",
                    TPS_FLEX_MAX_NVL_PEERS, TPS_FLEX_MAX_NVL_PEERS, near, ranks);
    if (etp > 1 && !flex_etp_fits(sc, etp, near, problem, error))
        return FALSE;
    const guint groups = sc->moe.router_groups;
    const guint domains = ranks / MAX(near, 1u);
    if (groups > 0 &&
        ((sc->ep % groups != 0 && groups % sc->ep != 0) ||
         (domains % groups != 0 && groups % domains != 0)))
        return fail(problem, TPS_FIELD_MOE_ROUTER_GROUPS, TPS_FIELD_NONE, none, error,
                    "model.moe.router_groups (%u) with dispatcher flex must nest with the EP "
                    "group's %u ranks and %u NVLink domains (one dividing the other): tpsim "
                    "counts a token's destinations only then",
                    groups, sc->ep, domains);
    return TRUE;
}

static gboolean
moe_layout_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    const guint64 dense = (guint64)sc->tp * MAX(sc->cp, 1u) * sc->dp;
    const guint64 expert = (guint64)tps_scenario_etp(sc) * sc->ep;
    if (sc->etp > sc->tp * MAX(sc->cp, 1u) * sc->dp || dense % expert != 0)
        return fail(problem, TPS_FIELD_EP, TPS_FIELD_ETP, none, error,
                    "parallel.ep (%u) x the expert tensor-parallel size (%u) must divide "
                    "tp x cp x dp (%" G_GUINT64_FORMAT "): the expert grid (etp-ep-edp-pp) "
                    "covers the same GPUs as the dense one",
                    sc->ep, tps_scenario_etp(sc), dense);
    if (sc->tp > 1 && !sc->sp)
        return fail(problem, TPS_FIELD_MOE_EXPERTS, TPS_FIELD_NONE, none, error,
                    "model.moe with parallel.tp %u needs parallel.sp true (Megatron: a "
                    "mixture of experts with tensor parallelism runs sequence parallel)",
                    sc->tp);
    if (sc->cp > 1)
        return fail(problem, TPS_FIELD_CP, TPS_FIELD_NONE, none, error,
                    "parallel.cp %u with model.moe is not modelled yet (the layer's machine "
                    "places either CP stand-ins or the expert groups, not both): use cp 1",
                    sc->cp);
    if (sc->moe.dispatcher == TPS_MOE_FLEX && !flex_fits(sc, problem, error))
        return FALSE;
    if (tps_scenario_moe_layers(sc) == 0)
        return fail(problem, TPS_FIELD_MOE_LAYER_FREQ, TPS_FIELD_NONE, none, error,
                    "model.moe.layer_freq makes none of the %" G_GUINT64_FORMAT
                    " layers MoE: a dense model has no model.moe",
                    sc->layers);
    /* The machine of a layer: the slice and a set of tp stand-ins per kind
     * of EP peer (sched/placement.h TpsEpSets). */
    if (tps_place_layer_ranks(sc) > TPS_SCENARIO_MAX_TP)
        return fail(problem, TPS_FIELD_EP, TPS_FIELD_TP, none, error,
                    "parallel.ep %u with parallel.tp %u: the layer simulates %u ranks (the TP "
                    "group and one of stand-ins per kind of EP peer), at most %u",
                    sc->ep, sc->tp, tps_place_layer_ranks(sc), TPS_SCENARIO_MAX_TP);
    return TRUE;
}

/* model.moe.overlap_ep_comm as Megatron-Core allows it
 * (transformer_config.py's checks of overlap_moe_expert_parallel_comm:
 * expert parallelism, the alltoall or flex dispatcher, no full
 * recompute, not with moe_shared_expert_overlap; virtual pipelining
 * when pp > 1), and what tpsim builds of it: the combined 1F1B of one
 * stage (pp 1) and the combined interleaved 1F1B (pp > 1, vpp > 1,
 * pipeline-pair.c), in any dtype (FP8 included: Megatron's bf16-or-fp16
 * check is of the params' dtype, FP8 runs on bf16), with the alltoall or
 * flex dispatcher, with layers mixing MoE and dense (model.moe.layer_freq)
 * at any pp. cp is refused for every MoE layer (moe_layout_fits()). */
static gboolean
ep_overlap_fits(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsScenarioField key = TPS_FIELD_MOE_OVERLAP_EP_COMM;
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    if (!sc->moe.overlap_ep_comm)
        return TRUE;
    if (sc->ep < 2)
        return fail(problem, key, TPS_FIELD_NONE, none, error,
                    "model.moe.overlap_ep_comm needs expert parallelism (parallel.ep > 1, "
                    "Megatron's rule): with ep %u there is no all-to-all to hide",
                    sc->ep);
    if (sc->moe.dispatcher == TPS_MOE_ALLGATHER)
        return fail(problem, key, TPS_FIELD_NONE, none, error,
                    "model.moe.overlap_ep_comm needs the alltoall (or flex) dispatcher "
                    "(Megatron's rule), not %s",
                    tps_moe_dispatcher_names[sc->moe.dispatcher]);
    if (sc->recompute == TPS_RECOMPUTE_FULL)
        return fail(problem, key, TPS_FIELD_NONE, none, error,
                    "model.moe.overlap_ep_comm with training.recompute full: Megatron "
                    "refuses full recomputation with it");
    if (sc->moe.shared_expert_overlap)
        return fail(problem, key, TPS_FIELD_NONE, none, error,
                    "model.moe.overlap_ep_comm with model.moe.shared_expert_overlap: "
                    "Megatron refuses the two together");
    if (sc->pp > 1 && sc->vpp < 2)
        return fail(problem, key, TPS_FIELD_NONE, none, error,
                    "model.moe.overlap_ep_comm with parallel.pp %u needs virtual pipelining "
                    "(parallel.vpp > 1, Megatron's rule)",
                    sc->pp);
    if (sc->fsdp != TPS_FSDP_NONE || sc->cuda_graphs)
        return fail(problem, key, TPS_FIELD_NONE, none, error,
                    "model.moe.overlap_ep_comm with %s is not modelled yet",
                    sc->cuda_graphs ? "training.cuda_graphs" : "training.fsdp");
    return TRUE;
}

static gboolean
without_moe(const TpsScenario *sc)
{
    return sc->moe.experts == 0;
}

static gboolean
ep_needs_experts(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    if (sc->ep == 1 && sc->etp == 0)
        return TRUE;
    const TpsScenarioField field = sc->ep != 1 ? TPS_FIELD_EP : TPS_FIELD_ETP;
    return fail(problem, field, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                "%s needs a mixture of experts (model.moe.experts): a dense model has no "
                "experts to place",
                fields[field].path);
}

static gboolean
even(const TpsScenario *sc)
{
    return !tps_scenario_uneven(sc);
}

static gboolean
even_interleaved(const TpsScenario *sc)
{
    return sc->vpp > 1 && !tps_scenario_uneven(sc);
}

static gboolean
uneven_interleaved(const TpsScenario *sc)
{
    return sc->vpp > 1 && tps_scenario_uneven(sc);
}

/* The uneven split's rules, Megatron's (TransformerConfig.__post_init__
 * and get_num_layers_to_build()): the first and last stages' layers need
 * stages, are not combined with the embedding or loss accounting, leave
 * layers for the middle stages exactly when there are middle stages, and
 * those layers split evenly; with the accounting, the layers plus the
 * embedding and the loss split evenly. */
static gboolean
uneven_stages(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    const guint first = sc->first_stage_layers, last = sc->last_stage_layers;
    const TpsScenarioField field =
        first != 0 ? TPS_FIELD_FIRST_STAGE_LAYERS : TPS_FIELD_LAST_STAGE_LAYERS;
    const char *key = fields[field].path;
    if (first == 0 && last == 0) {
        const guint64 n =
            sc->layers + (sc->account_for_embedding ? 1 : 0) + (sc->account_for_loss ? 1 : 0);
        if (n % sc->pp == 0)
            return TRUE;
        return fail(problem, TPS_FIELD_LAYERS, TPS_FIELD_ACCOUNT_EMBEDDING, none, error,
                    "model.layers (%" G_GUINT64_FORMAT ") with the embedding and loss counted as "
                    "layers (%" G_GUINT64_FORMAT ") must be divisible by parallel.pp (%u): every "
                    "pipeline stage holds as many (Megatron's "
                    "--account-for-embedding/loss-in-pipeline-split)",
                    sc->layers, n, sc->pp);
    }
    if (sc->pp < 2)
        return fail(problem, field, TPS_FIELD_NONE, none, error,
                    "%s needs pipeline stages (parallel.pp > 1)", key);
    if (sc->account_for_embedding || sc->account_for_loss)
        return fail(problem, field, TPS_FIELD_NONE, none, error,
                    "%s cannot be combined with "
                    "parallel.account_for_embedding/loss_in_pipeline_split (Megatron refuses both)",
                    key);
    const guint middle = sc->pp - (first != 0) - (last != 0);
    if ((guint64)first + last > sc->layers)
        return fail(problem, field, TPS_FIELD_NONE, none, error,
                    "parallel.first_stage_layers (%u) + parallel.last_stage_layers (%u) exceed "
                    "model.layers (%" G_GUINT64_FORMAT ")",
                    first, last, sc->layers);
    const guint64 rest = sc->layers - first - last;
    if ((rest == 0) != (middle == 0) || (middle > 0 && rest % middle != 0))
        return fail(problem, field, TPS_FIELD_NONE, none, error,
                    "%s leaves %" G_GUINT64_FORMAT " of model.layers (%" G_GUINT64_FORMAT
                    ") for %u middle pipeline stages: they must split evenly, and there must "
                    "be middle layers exactly when there are middle stages (Megatron's rule)",
                    key, rest, sc->layers, middle);
    return TRUE;
}

/* With interleaving, each stage's layers split evenly over its model
 * chunks. */
static gboolean
uneven_chunks(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    for (guint s = 0; s < sc->pp; s++) {
        const guint64 n = stage_share(sc, s);
        if (n % sc->vpp == 0)
            continue;
        const TpsScenarioField field =
            s == 0 && sc->first_stage_layers != 0           ? TPS_FIELD_FIRST_STAGE_LAYERS
            : s == sc->pp - 1 && sc->last_stage_layers != 0 ? TPS_FIELD_LAST_STAGE_LAYERS
                                                            : TPS_FIELD_LAYERS;
        return fail(problem, field, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                    "pipeline stage %u's %" G_GUINT64_FORMAT
                    " layers must be divisible by parallel.vpp (%u): each model chunk of a stage "
                    "holds as many",
                    s, n, sc->vpp);
    }
    return TRUE;
}

/* FP8 GEMMs need FP8 tensor cores: the model's gpu.peak_tflops.fp8 is 0 on
 * GPUs without them (A100). */
static gboolean
fp8_supported(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    if (sc->dtype != TPS_DTYPE_FP8 || sc->hardware.peak_tflops[TPS_DTYPE_FP8] > 0.0)
        return TRUE;
    const char *path = sc->is_op ? "op.dtype" : "model.dtype";
    return fail(problem, sc->is_op ? TPS_FIELD_OP_DTYPE : TPS_FIELD_DTYPE, TPS_FIELD_NONE,
                TPS_GEMM_SLOT_COUNT, error,
                "%s fp8 needs FP8 tensor cores, which %s (%s) does not have "
                "(gpu.peak_tflops_fp8 is 0): use bf16, or an H100 model",
                path, sc->hardware.name ? sc->hardware.name : "the hardware model",
                sc->hardware.gpu_name ? sc->hardware.gpu_name : "?");
}

/* MXFP8 (model.fp8_recipe mxfp8, TE's MXFP8BlockScaling) needs
 * block-scaled tensor cores, which only Blackwell has (NVIDIA Blackwell
 * architecture technical brief; TE runs the recipe on compute capability
 * 10.0 and up): the model's gpu.peak_tflops_mxfp8 is 0 on the others. */
static gboolean
mxfp8_supported(const TpsScenario *sc, TpsScenarioProblem *problem, GError **error)
{
    if (sc->dtype != TPS_DTYPE_FP8 || sc->fp8_recipe != TPS_FP8_MXFP8 ||
        sc->hardware.peak_tflops_mxfp8 > 0.0)
        return TRUE;
    return fail(problem, TPS_FIELD_FP8_RECIPE, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT, error,
                "model.fp8_recipe mxfp8 needs MXFP8 tensor cores (Blackwell), which %s (%s) "
                "does not have (gpu.peak_tflops_mxfp8 is 0): use delayed, tensorwise or "
                "blockwise, or a Blackwell model (b200, gb200-nvl72)",
                sc->hardware.name ? sc->hardware.name : "the hardware model",
                sc->hardware.gpu_name ? sc->hardware.gpu_name : "?");
}

/* In the order of design.md: the model's shape, the layout, the batch. The
 * vocabulary needs no rule: Megatron pads it to a multiple of tp. */
static const Rule rules[] = {
    {.kinds = FOR_MODEL,
     .when = heads_split_hidden,
     .field = TPS_FIELD_HIDDEN,
     .by = TPS_FIELD_HEADS,
     .why = "each head gets hidden / heads channels"},
    {.kinds = FOR_MODEL,
     .field = TPS_FIELD_HEADS,
     .by = TPS_FIELD_TP,
     .why = "each rank computes heads / tp attention heads"},
    {.kinds = FOR_MODEL, .check = kv_heads_fit},
    {.kinds = FOR_MODEL, .when = with_mla, .check = mla_fits},
    {.kinds = FOR_MODEL,
     .field = TPS_FIELD_FFN_HIDDEN,
     .by = TPS_FIELD_TP,
     .fallback = TPS_FIELD_TP,
     .why = "FC1 and FC2 are split over tp"},
    {.kinds = FOR_MODEL,
     .when = with_sp,
     .field = TPS_FIELD_SEQ_LEN,
     .by = TPS_FIELD_TP,
     .why = "sequence parallelism shards the sequence over tp"},
    {.kinds = FOR_MODEL,
     .when = even,
     .field = TPS_FIELD_LAYERS,
     .by = TPS_FIELD_PP,
     .why = "every pipeline stage holds as many layers"},
    {.kinds = FOR_MODEL, .when = tps_scenario_uneven, .check = uneven_stages},
    {.kinds = FOR_MODEL, .when = interleaved, .check = vpp_needs_stages},
    {.kinds = FOR_MODEL,
     .when = even_interleaved,
     .field = TPS_FIELD_LAYERS,
     .by = TPS_FIELD_PP,
     .by2 = TPS_FIELD_VPP,
     .why = "every virtual stage holds as many layers"},
    {.kinds = FOR_MODEL, .when = uneven_interleaved, .check = uneven_chunks},
    {.kinds = FOR_MODEL,
     .field = TPS_FIELD_GLOBAL_BATCH,
     .by = TPS_FIELD_MICRO_BATCH,
     .by2 = TPS_FIELD_DP,
     .why = "a step is a whole number of micro-batches per replica"},
    {.kinds = FOR_MODEL, .when = interleaved, .check = micro_batches_in_groups},
    {.kinds = FOR_MODEL, .when = with_cp, .check = cp_sequence_fits},
    {.kinds = FOR_MODEL, .when = with_cp, .check = cp_comm_fits},
    {.kinds = FOR_MODEL, .when = without_moe, .check = ep_needs_experts},
    {.kinds = FOR_MODEL, .when = with_moe, .check = moe_shape_fits},
    {.kinds = FOR_MODEL, .when = with_moe, .check = moe_layout_fits},
    {.kinds = FOR_MODEL, .when = with_moe, .check = ep_overlap_fits},
    /* ag_gemm: input [m, k] gathered along m, weight [k, n/tp];
     * gemm_rs: input [m, k/tp], output [m, n] reduce-scattered along m. */
    {.kinds = FOR_OP,
     .when = is_ag_gemm,
     .field = TPS_FIELD_OP_M,
     .by = TPS_FIELD_TP,
     .why = "the input is gathered along m"},
    {.kinds = FOR_OP,
     .when = is_gemm_rs,
     .field = TPS_FIELD_OP_M,
     .by = TPS_FIELD_TP,
     .why = "the output is reduce-scattered along m"},
    {.kinds = FOR_OP,
     .when = is_ag_gemm,
     .field = TPS_FIELD_OP_N,
     .by = TPS_FIELD_TP,
     .why = "each rank holds n / tp weight columns"},
    {.kinds = FOR_OP,
     .when = is_gemm_rs,
     .field = TPS_FIELD_OP_K,
     .by = TPS_FIELD_TP,
     .why = "each rank holds k / tp input columns"},
    {.kinds = FOR_MODEL | FOR_OP, .check = splits_have_columns},
    /* What the simulation can represent (with the hardware model). */
    {.kinds = FOR_MODEL | FOR_OP, .when = with_hardware, .check = fp8_supported},
    {.kinds = FOR_MODEL, .when = with_hardware, .check = mxfp8_supported},
    {.kinds = FOR_MODEL | FOR_OP, .when = with_hardware, .check = ctas_fit},
    {.kinds = FOR_MODEL, .when = with_hardware, .check = step_fits},
    {.kinds = FOR_MODEL, .check = schedule_fits},
};

static gboolean
check_rule(const TpsScenario *sc, const Rule *rule, TpsScenarioProblem *problem, GError **error)
{
    if (rule->check != NULL)
        return rule->check(sc, problem, error);

    const TpsGemmSlot none = TPS_GEMM_SLOT_COUNT;
    guint64 value = member_value(sc, rule->field);
    guint64 by = member_value(sc, rule->by);
    if (rule->by2 != TPS_FIELD_NONE)
        by *= member_value(sc, rule->by2);
    if (value % by == 0) /* by >= 1: the ranges were checked first */
        return TRUE;
    g_autofree char *what = tps_scenario_field_path(rule->field, none);
    g_autofree char *by_what =
        rule->by2 == TPS_FIELD_NONE
            ? tps_scenario_field_path(rule->by, none)
            : g_strdup_printf("%s * %s", fields[rule->by].path, fields[rule->by2].path);
    return fail(problem, rule->field, rule->fallback, none, error,
                "%s (%" G_GUINT64_FORMAT ") must be divisible by %s (%" G_GUINT64_FORMAT "): %s",
                what, value, by_what, by, rule->why);
}

gboolean
tps_scenario_validate(const TpsScenario *scenario, TpsScenarioProblem *problem, GError **error)
{
    g_return_val_if_fail(scenario != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    const guint kind = scenario->is_op ? FOR_OP : FOR_MODEL;
    if (problem != NULL)
        *problem = (TpsScenarioProblem){TPS_FIELD_NONE, TPS_FIELD_NONE, TPS_GEMM_SLOT_COUNT};

    for (guint f = TPS_FIELD_NONE + 1; f < TPS_FIELD_COUNT; f++)
        if (f != TPS_FIELD_NUM_SPLITS && (fields[f].kinds & kind) &&
            !check_range(member_value(scenario, (TpsScenarioField)f), (TpsScenarioField)f,
                         TPS_GEMM_SLOT_COUNT, problem, error))
            return FALSE;
    /* 0: the method's default. */
    for (guint s = 0; s < TPS_GEMM_SLOT_COUNT; s++)
        if (scenario->overlap[s].num_splits != 0 &&
            !check_range(scenario->overlap[s].num_splits, TPS_FIELD_NUM_SPLITS, (TpsGemmSlot)s,
                         problem, error))
            return FALSE;

    for (guint i = 0; i < G_N_ELEMENTS(rules); i++) {
        const Rule *rule = &rules[i];
        if ((rule->kinds & kind) && (rule->when == NULL || rule->when(scenario)) &&
            !check_rule(scenario, rule, problem, error))
            return FALSE;
    }
    return TRUE;
}
