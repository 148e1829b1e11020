/* A scenario: what to simulate, as read from a scenario file (design.md,
 * "Scenario file"). The io layer fills it; the sched layer turns it into
 * dependency graphs. Plain data, owned by the caller; tps_scenario_clear()
 * frees the strings and arrays inside, tps_scenario_copy() duplicates them,
 * so a scenario can be handled as a value (copied, changed, validated).
 *
 * The rules between values (divisibility by tp and pp, batch sizes, the
 * limits of each number) have one owner, tps_scenario_validate(): the
 * loader runs it on what it read, and anything that changes a scenario
 * afterwards (a sweep) runs it on the changed copy.
 */
#pragma once

#include <glib.h>

#include "cost/grid.h"
#include "cost/hardware.h"

typedef enum {
    TPS_ATTENTION_FLASH,
    TPS_ATTENTION_UNFUSED,
} TpsAttention;

/* The MLP (Megatron's --swiglu): GeLU over FC1's ffn_hidden columns, or
 * SwiGLU, gated: FC1 is the fused gate and up projection of 2 x ffn_hidden
 * columns, and silu(gate) x up feeds FC2. */
typedef enum {
    TPS_MLP_GELU,
    TPS_MLP_SWIGLU,
} TpsMlp;

/* The normalisation of the layer and of the head (Megatron's
 * --normalization LayerNorm | RMSNorm). */
typedef enum {
    TPS_NORM_LAYERNORM,
    TPS_NORM_RMSNORM,
} TpsNorm;

/* Position embedding (Megatron's --position-embedding-type): a learned
 * table of seq_len x hidden added to the word embedding, or rotary
 * embeddings applied to Q and K in every layer (no parameters). */
typedef enum {
    TPS_POSITION_LEARNED,
    TPS_POSITION_ROPE,
} TpsPosition;

/* NULL-terminated names, indexed by the enums above (the values of
 * model.mlp, model.norm, model.position_embedding). */
extern const char *const tps_mlp_names[];
extern const char *const tps_norm_names[];
extern const char *const tps_position_names[];

/* parallel.cp_comm: how attention exchanges what context parallelism
 * splits (Megatron's --cp-comm-type, Transformer Engine's
 * AttnFuncWithCPAndKVP2P, ...AndQKVOA2A, ...AndKVAllGather). */
typedef enum {
    TPS_CP_P2P,       /* ring attention: K/V blocks around the CP group */
    TPS_CP_A2A,       /* DeepSpeed Ulysses: all-to-all of Q, K, V and the output */
    TPS_CP_ALLGATHER, /* K/V all-gathered before attention */
    TPS_CP_A2A_P2P,   /* a2a inside the NVLink domain, ring across (hierarchical) */
    TPS_CP_COMM_COUNT
} TpsCpComm;

extern const char *const tps_cp_comm_names[];

/* model.moe.dispatcher: how a mixture-of-experts layer moves tokens to
 * their experts and back (Megatron's --moe-token-dispatcher-type):
 * all-to-all over the expert-parallel group, or all-gather of every
 * token over it and reduce-scatter of the outputs, or flex: DeepEP's
 * fused dispatch and combine (cost/alltoall-flex.h). */
typedef enum {
    TPS_MOE_ALLTOALL,
    TPS_MOE_ALLGATHER,
    TPS_MOE_FLEX,
    TPS_MOE_DISPATCHER_COUNT
} TpsMoeDispatcher;

extern const char *const tps_moe_dispatcher_names[];

/* model.moe: a mixture of experts in place of the MLP of its layers
 * (sched/moe.c; Megatron-Core's MoELayer). experts 0: a dense model. */
typedef struct {
    guint experts;               /* --num-experts; 0: no MoE */
    guint top_k;                 /* --moe-router-topk (default 2) */
    guint64 ffn_hidden;          /* per expert (--moe-ffn-hidden-size; default model.ffn_hidden) */
    guint64 shared_ffn_hidden;   /* the shared experts' width (0: none) */
    guint layer_freq;            /* every Nth layer is MoE (1: all); 0: `pattern` */
    char *pattern;               /* layer_freq as a list: '0' / '1' per layer (owned) */
    TpsMoeDispatcher dispatcher; /* default alltoall */
    gboolean grouped_gemm;       /* --moe-grouped-gemm: one grouped GEMM for the local experts */
    double capacity_factor;      /* --moe-expert-capacity-factor; 0: dropless */
    double load_imbalance;       /* the busiest expert's tokens over the mean (default: a
                                    measured one by expert_bias, below) */
    gboolean expert_bias;        /* --moe-router-enable-expert-bias: auxiliary-loss-free
                                    balancing (DeepSeek's per-expert routing bias) */
    gboolean shared_expert_overlap; /* --moe-shared-expert-overlap */
    gboolean overlap_ep_comm;       /* --overlap-moe-expert-parallel-comm: one micro-batch's
                                       all-to-alls under another's compute (pp 1) */
    guint router_groups;            /* --moe-router-num-groups: experts in this many equal
                                       groups, a token's top_k from router_group_topk of
                                       them (node-limited routing); 0: none */
    guint router_group_topk;        /* --moe-router-group-topk (0 without groups) */
    guint line, column;             /* of model.moe, for messages */
} TpsMoe;

typedef enum {
    TPS_RECOMPUTE_NONE,
    TPS_RECOMPUTE_SELECTIVE,
    TPS_RECOMPUTE_FULL,
} TpsRecompute;

/* The dtype the data-parallel gradients are reduced in and kept in
 * (Megatron's DDP gradient buffer): fp32 (grad_reduce_in_fp32, Megatron's
 * default under bf16) or bf16 (--grad-reduce-in-bf16). */
typedef enum {
    TPS_GRAD_REDUCE_FP32,
    TPS_GRAD_REDUCE_BF16,
} TpsGradReduceDtype;

/* NULL-terminated names of training.grad_reduce_dtype. */
extern const char *const tps_grad_reduce_dtype_names[];

/* training.fsdp: Megatron FSDP's data-parallel sharding strategies
 * (--data-parallel-sharding-strategy): nothing sharded but as the
 * distributed optimizer says; the optimizer states (ZeRO-1); and the
 * gradients (ZeRO-2); and the parameters (ZeRO-3). */
typedef enum {
    TPS_FSDP_NONE,
    TPS_FSDP_OPTIM,
    TPS_FSDP_OPTIM_GRADS,
    TPS_FSDP_OPTIM_GRADS_PARAMS,
} TpsFsdp;

extern const char *const tps_fsdp_names[];

/* training.fsdp_impl: Megatron FSDP (--use-megatron-fsdp) or PyTorch's
 * FSDP2 (--use-torch-fsdp2, optim_grads_params only). */
typedef enum {
    TPS_FSDP_IMPL_MEGATRON,
    TPS_FSDP_IMPL_TORCH,
} TpsFsdpImpl;

extern const char *const tps_fsdp_impl_names[];

/* model.fp8_recipe under dtype fp8: Transformer Engine's recipes
 * (transformer_engine/common/recipe/__init__.py): DelayedScaling,
 * Float8CurrentScaling, Float8BlockScaling, MXFP8BlockScaling
 * (sched/fp8-recipe.h). */
typedef enum {
    TPS_FP8_DELAYED,
    TPS_FP8_TENSORWISE,
    TPS_FP8_BLOCKWISE,
    TPS_FP8_MXFP8,
} TpsFp8Recipe;

/* NULL-terminated names of model.fp8_recipe (Megatron's --fp8-recipe). */
extern const char *const tps_fp8_recipe_names[];

typedef enum {
    TPS_OP_AG_GEMM,
    TPS_OP_GEMM_RS,
} TpsOpKind;

/* Overlap methods of real-schedules.md section 2; what each one is (slots,
 * defaults, graph builders) is its row in sched/method.h. */
typedef enum {
    TPS_METHOD_NONE,
    TPS_METHOD_RING_EXCHANGE,
    TPS_METHOD_PIPELINE,
    TPS_METHOD_BULK,
    TPS_METHOD_COUNT
} TpsMethod;

/* The per-GEMM overlap names of real-schedules.md section 2 (plus `op`, the
 * single key of op scenarios). */
typedef enum {
    TPS_GEMM_QKV_FPROP,
    TPS_GEMM_FC1_FPROP,
    TPS_GEMM_PROJ_FPROP,
    TPS_GEMM_FC2_FPROP,
    TPS_GEMM_PROJ_DGRAD,
    TPS_GEMM_FC2_DGRAD,
    TPS_GEMM_QKV_DGRAD,
    TPS_GEMM_FC1_DGRAD,
    TPS_GEMM_QKV_WGRAD,
    TPS_GEMM_FC1_WGRAD,
    TPS_GEMM_OP,
    TPS_GEMM_SLOT_COUNT
} TpsGemmSlot;

/* NULL-terminated names, indexed by TpsGemmSlot / TpsMethod (the method
 * names are defined beside the method table, in method.c). */
extern const char *const tps_gemm_slot_names[];
extern const char *const tps_method_names[];

/* Bits of TpsOverlapConfig.given: the knobs written in the scenario (or
 * its userbuffers file, or set by a preset); the others take Transformer
 * Engine's defaults (tps_strategy_overlap()). */
typedef enum {
    TPS_KNOB_NUM_SPLITS = 1u << 0,
    TPS_KNOB_NUM_SM = 1u << 1,
    TPS_KNOB_CGA_SIZE = 1u << 2,
    TPS_KNOB_SET_SM_MARGIN = 1u << 3,
    TPS_KNOB_AGGREGATE = 1u << 4,
    TPS_KNOB_USE_CE = 1u << 5,
} TpsKnob;

typedef struct {
    gboolean set;       /* given in the scenario */
    guint line, column; /* where, for messages about combinations */
    TpsMethod method;
    guint num_splits; /* 0: the method's default */
    guint num_sm;     /* 0: the method's default */
    guint cga_size;   /* default 2 */
    gboolean set_sm_margin;
    gboolean aggregate;
    gboolean use_ce; /* default TRUE */
    guint given;     /* TpsKnob bits of the knobs written; the others are TE's defaults */
} TpsOverlapConfig;

typedef struct {
    char *name;
    char *hardware_ref; /* as written: a model NAME or a path */
    char *hardware_file;   /* the model file it resolved to, absolute (NULL: none, a model
                              read from text); recorded in the results */
    char *hardware_sha256; /* the SHA-256 of that file's bytes */
    char *file;         /* the scenario file, for messages */
    guint64 seed;

    gboolean is_op; /* op scenario (op:) rather than model scenario (model:) */

    /* model: */
    guint64 hidden, heads, ffn_hidden, layers, seq_len, vocab;
    guint64 kv_heads; /* K/V heads (Megatron's --num-query-groups, grouped-query
                         attention); 0: as many as heads (multi-head attention),
                         read through tps_scenario_kv_heads() */
    TpsDtype dtype;
    TpsFp8Recipe fp8_recipe; /* under dtype fp8; default delayed */
    TpsAttention attention;
    TpsMlp mlp;
    TpsNorm norm;
    TpsPosition position;
    gboolean bias;           /* the linear layers have biases (default true; Megatron's
                                --disable-bias-linear: false) */
    gboolean tie_embeddings; /* the output layer uses the word embedding's weight (default
                                true; --untie-embeddings-and-output-weights: false) */
    double hidden_dropout;   /* the dropout after the projection and FC2 (Megatron's
                                --hidden-dropout, default 0.1); at 0 PyTorch's dropout
                                returns its input and keeps no mask */
    guint64 head_dim;        /* channels per attention head (Megatron's --kv-channels);
                                0: hidden / heads, read through tps_scenario_head_dim() */
    gboolean qk_norm;        /* a norm over each head of Q and K (--qk-layernorm); with
                                multi_latent_attention the norms of the Q and KV latents */
    /* Multi-head latent attention (Megatron's --multi-latent-attention,
     * MLASelfAttention; DeepSeek-V2/V3): Q through a q_lora_rank latent
     * (0: Megatron's None, one column-parallel Q projection), K and V
     * through a kv_lora_rank latent, qk_head_dim + qk_pos_emb_head_dim
     * channels per Q and K head (the second part rotary), v_head_dim per
     * V head. Defaults are Megatron's (arguments.py). */
    gboolean mla;
    guint64 q_lora_rank, kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim;
    TpsMoe moe;
    guint64 fp8_amax_history_len; /* delayed scaling's amax history per FP8 tensor
                                     (--fp8-amax-history-len; default 1, Megatron's) */
    gboolean causal;         /* causal attention mask: flash attention skips the masked
                                blocks (default false: every block computed, as the
                                attention model assumed before context parallelism) */

    /* training: */
    guint64 micro_batch, global_batch;
    TpsRecompute recompute;
    gboolean distributed_optimizer; /* shard optimizer states over dp (RS + AG of gradients
                                       and parameters instead of an all-reduce) */
    gboolean overlap_grad_reduce;   /* reduce gradient buckets during the last backward
                                       (default true, as Megatron-core runs it) */
    gboolean cuda_graphs;           /* each layer's forward and backward replayed as one
                                       captured CUDA graph: one graph launch of host time
                                       instead of each op's (default false: eager) */
    gboolean overlap_param_gather;  /* the distributed optimizer's parameter all-gather
                                       bucket by bucket under the next step's first forward
                                       (Megatron's --overlap-param-gather; default false) */
    guint64 ddp_bucket_size;        /* gradient bucket in parameters (--ddp-bucket-size);
                                       0: Megatron's max(40M, 1M x dp) */
    TpsGradReduceDtype grad_reduce_dtype; /* default fp32 */
    gboolean fp8_param_gather;            /* under fp8, the GEMM weights kept and all-gathered in
                                             FP8 (--fp8-param-gather; default false) */
    TpsFsdp fsdp;                         /* default none (sched/data-parallel.h) */
    TpsFsdpImpl fsdp_impl;                /* default megatron */

    /* parallel: */
    guint tp, pp, vpp, dp;
    guint cp;          /* context parallel size (default 1; Megatron's
                          --context-parallel-size) */
    TpsCpComm cp_comm; /* default p2p */
    guint cp_a2a;      /* a2a+p2p: the a2a size (Megatron's
                          --hierarchical-context-parallel-sizes, first), the ring
                          over cp / cp_a2a; 0: not given */
    gboolean sp;
    /* An uneven pipeline (Megatron's --decoder-first/last-pipeline-num-layers):
     * the layers of the first and of the last stage (0: not given, the
     * others' share), the rest split evenly over the middle stages; or the
     * embedding and the loss counted as a layer each in an even split
     * (--account-for-embedding/loss-in-pipeline-split). Read through
     * tps_scenario_chunk_layers(). */
    guint first_stage_layers, last_stage_layers;
    gboolean account_for_embedding, account_for_loss;
    gboolean cp_columns;         /* write the CP result columns at cp 1 too (set by a sweep
                                    that varies parallel.cp, so that its rows agree) */
    guint ep;  /* expert parallel size (--expert-model-parallel-size; default 1) */
    guint etp; /* expert tensor parallel size (--expert-tensor-parallel-size); 0: tp,
                  read through tps_scenario_etp() */
    TpsDim order[TPS_DIM_COUNT]; /* parallel.order: Megatron's rank order, fastest first
                                    (default tp-cp-ep-dp-pp); read through
                                    tps_scenario_order() */

    /* op: (dtype above is shared) */
    TpsOpKind op_kind;
    guint64 m, n, k;

    /* strategies: names as written (NULL-terminated), or NULL for "every preset
     * that applies". */
    char **strategies;
    guint strategies_line, strategies_column;

    TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT];
    gboolean has_overlap;

    TpsHardware hardware; /* resolved model */
} TpsScenario;

/* The scenario's rank order (its `order`, or Megatron's default where it
 * is not a permutation of the dimensions, as in a zeroed scenario). */
void tps_scenario_order(const TpsScenario *scenario, TpsDim order[TPS_DIM_COUNT]);

/* The transformer layers of model chunk `chunk` of pipeline stage `stage`
 * as Megatron splits them (megatron/core/transformer/transformer_block.py,
 * get_num_layers_to_build): a stage's layers are parallel.first_stage_layers
 * on the first stage and last_stage_layers on the last where given, the
 * others' share the rest evenly; with account_for_embedding (_loss) the
 * even split counts the embedding (the loss) as a layer and the first
 * (last) virtual stage holds one layer fewer; each stage's layers are
 * split evenly over its vpp model chunks. Valid on a validated scenario. */
guint tps_scenario_chunk_layers(const TpsScenario *scenario, guint stage, guint chunk);
/* Of all of a stage's model chunks. */
guint tps_scenario_stage_layers(const TpsScenario *scenario, guint stage);
/* The most layers of any model chunk of any stage. */
guint tps_scenario_max_chunk_layers(const TpsScenario *scenario);
/* Whether the layers are split other than evenly. */
gboolean tps_scenario_uneven(const TpsScenario *scenario);

/* The K/V heads of a model scenario: kv_heads, or heads when not given. */
static inline guint64
tps_scenario_kv_heads(const TpsScenario *scenario)
{
    return scenario->kv_heads != 0 ? scenario->kv_heads : scenario->heads;
}

/* Multi-head latent attention's Q and K channels per head (the
 * position-free part and the rotary part). */
static inline guint64
tps_scenario_mla_qk_dim(const TpsScenario *scenario)
{
    return scenario->qk_head_dim + scenario->qk_pos_emb_head_dim;
}

/* Multi-head latent attention's weights whole on every TP rank: the down
 * projections [h, q_lora_rank] (none without a Q latent) and [h,
 * kv_lora_rank + qk_pos_emb_head_dim] (TELinear "duplicated"). */
static inline double
tps_scenario_mla_replicated_params(const TpsScenario *scenario)
{
    const double h = (double)scenario->hidden;
    return h * (double)scenario->q_lora_rank +
           h * (double)(scenario->kv_lora_rank + scenario->qk_pos_emb_head_dim);
}

/* Its weights split over TP: the Q up projection [q_lora_rank, heads x
 * (qk_head_dim + qk_pos_emb_head_dim)] (without a Q latent the Q
 * projection from h), the KV up projection [kv_lora_rank, heads x
 * (qk_head_dim + v_head_dim)], the output projection [heads x v_head_dim,
 * h]. */
static inline double
tps_scenario_mla_split_params(const TpsScenario *scenario)
{
    const double h = (double)scenario->hidden, a = (double)scenario->heads;
    const double q_in = scenario->q_lora_rank > 0 ? (double)scenario->q_lora_rank : h;
    return q_in * a * (double)tps_scenario_mla_qk_dim(scenario) +
           (double)scenario->kv_lora_rank * a *
               (double)(scenario->qk_head_dim + scenario->v_head_dim) +
           a * (double)scenario->v_head_dim * h;
}

/* Channels per attention head: model.head_dim, or hidden / heads. */
static inline guint64
tps_scenario_head_dim(const TpsScenario *scenario)
{
    return scenario->head_dim != 0 ? scenario->head_dim : scenario->hidden / scenario->heads;
}

/* The expert tensor parallel size: parallel.etp, or tp when not given. */
static inline guint
tps_scenario_etp(const TpsScenario *scenario)
{
    return scenario->etp != 0 ? scenario->etp : scenario->tp;
}

/* Whether the model has a mixture of experts, and whether layer `index`
 * (0-based, of the whole model) is one of its MoE layers. */
static inline gboolean
tps_scenario_is_moe(const TpsScenario *scenario)
{
    return scenario->moe.experts > 0;
}
gboolean tps_scenario_moe_layer(const TpsScenario *scenario, guint64 index);
/* model.moe.load_imbalance's default, the busiest expert's load over the
 * mean measured by Wang et al., "Auxiliary-Loss-Free Load Balancing
 * Strategy for Mixture-of-Experts" (DeepSeek, arXiv:2408.15664), Table 2:
 * MaxVio_global = max_i Load_i / mean Load - 1 on the validation set, for
 * their 1B and 3B MoE models: with the auxiliary loss
 * (coefficient 0.001) 0.72 and 0.52, the larger taken (a validation set's
 * loads summed over its batches are at least as balanced as one step's:
 * a step's max over mean is larger still); with the loss-free bias 0.04
 * at both. */
#define TPS_MOE_IMBALANCE_AUX_LOSS 1.72
#define TPS_MOE_IMBALANCE_EXPERT_BIAS 1.04
/* The MoE layers of the model. */
guint64 tps_scenario_moe_layers(const TpsScenario *scenario);
/* Whether an MoE model mixes dense and MoE layers (model.moe.layer_freq):
 * then its dense layers keep model.ffn_hidden's MLP, and the pipeline
 * times, counts and sizes each stage's layers by their kind. */
gboolean tps_scenario_mixes_moe_layers(const TpsScenario *scenario);
static inline gboolean
tps_scenario_mixes_layers(const TpsScenario *scenario)
{
    /* (A dense model at once: the step frame asks for every chunk.) */
    return scenario->moe.experts > 0 && tps_scenario_mixes_moe_layers(scenario);
}
/* `dense`: a copy of `scenario` whose layers are its dense ones (no
 * model.moe; the strings shared, not copied: do not clear it). */
void tps_scenario_dense_layer(const TpsScenario *scenario, TpsScenario *dense);
/* The dense layers among layers first .. first + n - 1 of a model that
 * mixes dense and MoE layers; 0 for one that does not (its layers are all
 * of the scenario's kind). */
guint tps_scenario_dense_layers_in(const TpsScenario *scenario, guint64 first, guint n);
/* The index (0-based, of the whole model) of the first layer of model
 * chunk `chunk` of stage `stage`, as Megatron's
 * get_transformer_layer_offset() places it. */
guint64 tps_scenario_chunk_first_layer(const TpsScenario *scenario, guint stage, guint chunk);
/* Of that chunk's layers, and of the stage's, the dense ones (0 unless the
 * model mixes). */
guint tps_scenario_chunk_dense_layers(const TpsScenario *scenario, guint stage, guint chunk);
guint tps_scenario_stage_dense_layers(const TpsScenario *scenario, guint stage);

/* The ranks a gradient is reduced over (and the distributed optimizer
 * shards over): Megatron's dp-cp group, dp x cp (each CP rank holds
 * gradients of its own tokens for the same weights). */
static inline guint
tps_scenario_grad_ranks(const TpsScenario *scenario)
{
    return scenario->dp * (scenario->cp > 1 ? scenario->cp : 1u);
}

/* The dimensions of that group (cost/grid.h bits). */
#define TPS_SCENARIO_GRAD_DIMS (TPS_DIM_BIT(TPS_DIM_DP) | TPS_DIM_BIT(TPS_DIM_CP))

/* Megatron's default FFN width (megatron/training/arguments.py): 4 x
 * hidden, or with SwiGLU two thirds of it rounded down to a multiple of 64
 * (as many MLP parameters with three matrices as GeLU's two). */
guint64 tps_scenario_default_ffn_hidden(guint64 hidden, TpsMlp mlp);

/* Fill the defaults of design.md (seed 1, vocab 51200, dtype bf16, flash,
 * micro_batch 1, tp/pp/vpp/dp 1, sp false, ...). */
void tps_scenario_init(TpsScenario *scenario);
/* Free what the scenario owns and leave it zeroed; accepts NULL and a
 * scenario cleared before. */
void tps_scenario_clear(TpsScenario *scenario);
/* Deep copy into `dst`, which is overwritten, not cleared (as
 * tps_hardware_copy()): give it zeroed or cleared memory. Strings, the
 * strategy list and the hardware model are duplicated, so the two can be
 * changed and cleared independently. */
void tps_scenario_copy(TpsScenario *dst, const TpsScenario *src);
/* A heap scenario with the defaults of tps_scenario_init(); free with
 * tps_scenario_free() (accepts NULL). */
TpsScenario *tps_scenario_new(void);
void tps_scenario_free(TpsScenario *scenario);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsScenario, tps_scenario_free)
/* g_auto(TpsScenario) sc = {0}; clears it at the end of the scope. */
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TpsScenario, tps_scenario_clear)

/* ---- validation ---- */

/* Limits of the numbers of a scenario. They are not physical limits: they
 * keep every product the cost models form (tokens x hidden x ffn,
 * m x n x k) far from 2^64 and catch a misplaced exponent. The loader
 * reads each value within them; tps_scenario_validate() holds values set
 * later to the same ones. */
#define TPS_SCENARIO_MAX_TP 64
#define TPS_SCENARIO_MAX_PP 1024
#define TPS_SCENARIO_MAX_VPP 64
#define TPS_SCENARIO_MAX_DP (1u << 20)
/* tp x cp ranks are simulated for a layer with context parallelism (the
 * slice's and its ring neighbour's: TPS_MAX_RANKS of sched/builder.h). */
#define TPS_SCENARIO_MAX_CP 64
#define TPS_SCENARIO_MAX_HIDDEN (1u << 20)
#define TPS_SCENARIO_MAX_HEADS (1u << 16)
#define TPS_SCENARIO_MAX_FFN (1u << 22)
#define TPS_SCENARIO_MAX_LAYERS 100000
#define TPS_SCENARIO_MAX_SEQ (1u << 24)
#define TPS_SCENARIO_MAX_VOCAB (1u << 24)
#define TPS_SCENARIO_MAX_MICRO_BATCH (1u << 16)
#define TPS_SCENARIO_MAX_GLOBAL_BATCH (G_GUINT64_CONSTANT(1) << 32)
#define TPS_SCENARIO_MAX_OP_DIM (1u << 24)
#define TPS_SCENARIO_MAX_NUM_SPLITS 64
#define TPS_SCENARIO_MAX_EP 1024
#define TPS_SCENARIO_MAX_EXPERTS 4096
#define TPS_SCENARIO_MAX_HEAD_DIM 4096

/* The longest step the simulation represents: times are signed 64-bit
 * nanoseconds, and 2^62 leaves a factor of two for the sums the engine
 * forms (an end is a start plus a duration). */
#define TPS_SCENARIO_MAX_STEP_NS (G_GINT64_CONSTANT(1) << 62)

/* The values validation can find wrong, each named in messages by its key
 * path in scenario files ("model.heads", "overlap.fc2_fprop.num_splits"). */
typedef enum {
    TPS_FIELD_NONE,
    TPS_FIELD_HIDDEN,
    TPS_FIELD_HEADS,
    TPS_FIELD_FFN_HIDDEN,
    TPS_FIELD_LAYERS,
    TPS_FIELD_SEQ_LEN,
    TPS_FIELD_VOCAB,
    TPS_FIELD_MICRO_BATCH,
    TPS_FIELD_GLOBAL_BATCH,
    TPS_FIELD_TP,
    TPS_FIELD_PP,
    TPS_FIELD_VPP,
    TPS_FIELD_DP,
    TPS_FIELD_CP,
    TPS_FIELD_CP_COMM, /* not a number */
    TPS_FIELD_OP_M,
    TPS_FIELD_OP_N,
    TPS_FIELD_OP_K,
    TPS_FIELD_NUM_SPLITS, /* of the overlap entry TpsScenarioProblem.slot */
    TPS_FIELD_KV_HEADS,   /* 0 (as many as heads) or 1 to heads */
    TPS_FIELD_DTYPE,      /* model.dtype, or op.dtype in op scenarios (not a number) */
    TPS_FIELD_OP_DTYPE,
    TPS_FIELD_FIRST_STAGE_LAYERS, /* 0 (not given) or 1 to layers */
    TPS_FIELD_LAST_STAGE_LAYERS,
    TPS_FIELD_ACCOUNT_EMBEDDING, /* a flag */
    TPS_FIELD_EP,
    TPS_FIELD_ETP,         /* 0 (tp) or 1 to MAX_TP */
    TPS_FIELD_MOE_EXPERTS, /* 0 (dense) or 1 to MAX_EXPERTS */
    TPS_FIELD_MOE_TOP_K,
    TPS_FIELD_MOE_FFN_HIDDEN,
    TPS_FIELD_MOE_LAYER_FREQ,
    TPS_FIELD_MOE_DISPATCHER, /* not a number */
    TPS_FIELD_HEAD_DIM,       /* 0 (hidden / heads) or 1 to MAX_HEAD_DIM */
    TPS_FIELD_FP8_RECIPE,        /* model.fp8_recipe (not a number) */
    TPS_FIELD_MOE_OVERLAP_EP_COMM, /* a flag */
    /* model.moe.router_groups and router_group_topk: 0 (none) or 1 to
     * MAX_EXPERTS */
    TPS_FIELD_MOE_ROUTER_GROUPS,
    TPS_FIELD_MOE_ROUTER_GROUP_TOPK,
    TPS_FIELD_MLA,               /* model.multi_latent_attention (a flag) */
    TPS_FIELD_Q_LORA_RANK,       /* 0 (none) or 1 to MAX_HIDDEN */
    TPS_FIELD_KV_LORA_RANK,
    TPS_FIELD_QK_HEAD_DIM,
    TPS_FIELD_QK_POS_EMB_HEAD_DIM,
    TPS_FIELD_V_HEAD_DIM,
    TPS_FIELD_COUNT
} TpsScenarioField;

/* Where a rule failed, for a caller that points at its own source of the
 * value (the loader: the node in the file). */
typedef struct {
    /* The value to change: for "a must be divisible by b", a. */
    TpsScenarioField field;
    /* The other value of the rule, to point at when `field` was left at a
     * default (ffn_hidden is 4 * hidden: point at tp); TPS_FIELD_NONE if
     * none. */
    TpsScenarioField fallback;
    TpsGemmSlot slot; /* for TPS_FIELD_NUM_SPLITS */
} TpsScenarioProblem;

/* The key path of `field` in scenario files, newly allocated ("model.heads";
 * with `slot` for overlap fields: "overlap.proj_fprop.num_splits"). */
char *tps_scenario_field_path(TpsScenarioField field, TpsGemmSlot slot);

/* Check the values of a complete scenario (defaults filled in, as the
 * loader leaves it) against their limits and against each other, in the
 * order a reader fixes them: limits first, then the model's shape, then the
 * layout, then the batch; last, what the simulation can represent: the
 * shortest pipeline schedule within its limit and, when the hardware model
 * is resolved (hardware.sms > 0), every kernel's CTAs in 32 bits and the
 * step below TPS_SCENARIO_MAX_STEP_NS (the loader validates again after
 * reading the hardware model). Returns FALSE with a TPS_ERROR_INPUT error
 * whose message names the keys ("model.heads (96) must be divisible by
 * parallel.tp (7): ...") but no position, and fills `problem` (may be
 * NULL). The overlap: entries' methods are checked where they are read
 * (io/input/scenario-file.c): their rules depend on the hardware model. */
gboolean tps_scenario_validate(const TpsScenario *scenario, TpsScenarioProblem *problem,
                               GError **error);

/* The step of a model scenario at the GPU's peak rates, in ns (its
 * hardware model resolved): what validation holds below
 * TPS_SCENARIO_MAX_STEP_NS with room for the simulation's slowdowns. */
double tps_scenario_step_estimate_ns(const TpsScenario *scenario);
