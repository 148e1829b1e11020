/* Scenario files: strict loading (see scenario-file.h and design.md,
 * "Scenario file").
 *
 * The loader runs in three passes over the YAML tree, so that the first
 * error reported is the most basic one: (1) shape (known keys, required
 * keys, exactly one of model:/op:), (2) values (types and ranges, section by
 * section, in the order of design.md), (3) consistency between values (divisibility by
 * tp/pp, batch sizes: tps_scenario_validate() of sched/scenario.h owns those
 * rules; the loader places its message), then the hardware model, then
 * `overlap:`, whose rules depend on the hardware (NVLink domain, SM count).
 *
 * Every error is "file:line:column: message" at the node that is wrong;
 * for a relation between two values it is the value that has to change in
 * the usual case (the dividend: heads, not tp), or the divisor when the
 * dividend was left at its default.
 */
#include "io/input/scenario-file.h"

#include <string.h>

#include "core/error.h"
#include "io/input/megatron-args.h"
#include "io/input/model-file.h"
#include "sched/data-parallel.h"
#include "sched/method.h"
#include "sched/placement.h"

/* Ranges: the limits are owned by sched/scenario.h, which holds values set
 * after loading to the same ones. */
#define MAX_TP TPS_SCENARIO_MAX_TP
#define MAX_PP TPS_SCENARIO_MAX_PP
#define MAX_VPP TPS_SCENARIO_MAX_VPP
#define MAX_DP TPS_SCENARIO_MAX_DP
#define MAX_HIDDEN TPS_SCENARIO_MAX_HIDDEN
#define MAX_HEADS TPS_SCENARIO_MAX_HEADS
#define MAX_FFN TPS_SCENARIO_MAX_FFN
#define MAX_LAYERS TPS_SCENARIO_MAX_LAYERS
#define MAX_SEQ TPS_SCENARIO_MAX_SEQ
#define MAX_VOCAB TPS_SCENARIO_MAX_VOCAB
#define MAX_MICRO_BATCH TPS_SCENARIO_MAX_MICRO_BATCH
#define MAX_GLOBAL_BATCH TPS_SCENARIO_MAX_GLOBAL_BATCH
#define MAX_OP_DIM TPS_SCENARIO_MAX_OP_DIM
#define MAX_NUM_SPLITS TPS_SCENARIO_MAX_NUM_SPLITS
#define MAX_NUM_SM 132 /* H100 SXM; also checked against the model's SM count */
#define MAX_CGA 8
#define MAX_NAME 128
#define MAX_BUCKET (G_GUINT64_CONSTANT(1) << 40) /* parameters: far above any model's */

static const char *const root_keys[] = {
    "name",     "hardware",   "seed",    "model", "training",
    "parallel", "strategies", "overlap", "op",    "megatron_args", NULL,
};
static const char *const model_keys[] = {
    "hidden",     "heads",          "kv_heads",       "ffn_hidden",
    "mlp",        "norm",           "layers",         "seq_len",
    "vocab",      "dtype",          "attention",      "position_embedding",
    "bias",       "tie_embeddings", "hidden_dropout", "causal",
    "fp8_recipe", "head_dim",       "qk_norm",        "moe",
    "fp8_amax_history_len",
    "multi_latent_attention", "q_lora_rank", "kv_lora_rank", "qk_head_dim",
    "qk_pos_emb_head_dim", "v_head_dim",
    NULL,
};
static const char *const moe_keys[] = {
    "experts",           "top_k",
    "ffn_hidden",        "shared_ffn_hidden",
    "layer_freq",        "dispatcher",
    "grouped_gemm",      "capacity_factor",
    "load_imbalance",    "shared_expert_overlap",
    "overlap_ep_comm",   "router_groups",
    "router_group_topk", "expert_bias",
    NULL,
};
static const char *const training_keys[] = {
    "micro_batch",
    "global_batch",
    "recompute",
    "distributed_optimizer",
    "overlap_grad_reduce",
    "cuda_graphs",
    "overlap_param_gather",
    "ddp_bucket_size",
    "grad_reduce_dtype",
    "fp8_param_gather",
    "fsdp",
    "fsdp_impl",
    NULL,
};
static const char *const parallel_keys[] = {"tp",
                                            "sp",
                                            "pp",
                                            "vpp",
                                            "dp",
                                            "cp",
                                            "cp_comm",
                                            "cp_a2a",
                                            "ep",
                                            "etp",
                                            "order",
                                            "first_stage_layers",
                                            "last_stage_layers",
                                            "account_for_embedding_in_pipeline_split",
                                            "account_for_loss_in_pipeline_split",
                                            NULL};
static const char *const op_keys[] = {"kind", "m", "n", "k", "dtype", NULL};
static const char *const overlap_entry_keys[] = {
    "method", "num_splits", "num_sm", "cga_size", "set_sm_margin", "aggregate", "use_ce", NULL,
};

/* Indexed by the enums of sched/scenario.h. */
static const char *const attention_names[] = {"flash", "unfused", NULL};
static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const op_kind_names[] = {"ag_gemm", "gemm_rs", NULL};

/* The keys of `overlap:` come from tps_gemm_slot_names: all but the last
 * (`op`) in model scenarios, only `op` in op scenarios. */
G_STATIC_ASSERT(TPS_GEMM_OP == TPS_GEMM_SLOT_COUNT - 1);

typedef struct {
    const TpsYamlDoc *doc;
    TpsScenario *sc;
    const char *base_dir;
    /* Sections (NULL when absent). */
    const TpsYamlNode *root, *model, *training, *parallel, *op, *overlap;
} Loader;

/* tps_yaml_get() that accepts an absent section. */
static TpsYamlNode *
get(const TpsYamlNode *map, const char *key)
{
    if (map == NULL || map->type != TPS_YAML_MAP)
        return NULL;
    return tps_yaml_get(map, key);
}

static TpsYamlNode *
get_key_node(const TpsYamlNode *map, const char *key)
{
    if (map == NULL || map->type != TPS_YAML_MAP || map->keys == NULL)
        return NULL;
    for (guint i = 0; i < map->keys->len; i++) {
        TpsYamlNode *k = g_ptr_array_index(map->keys, i);
        if (k->value != NULL && strcmp(k->value, key) == 0)
            return k;
    }
    return NULL;
}

/* The node an error about `key` of `map` points at: its value, else
 * `fallback`. */
static const TpsYamlNode *
node_or(const TpsYamlNode *map, const char *key, const TpsYamlNode *fallback)
{
    const TpsYamlNode *node = map != NULL ? get(map, key) : NULL;
    return node != NULL ? node : fallback;
}

static gboolean
read_uint(const Loader *l, const TpsYamlNode *map, const char *section, const char *key,
          guint64 min, guint64 max, guint64 *out, GError **error)
{
    const TpsYamlNode *node = get(map, key);
    if (node == NULL)
        return TRUE;
    g_autofree char *qualified =
        section != NULL ? g_strdup_printf("%s.%s", section, key) : g_strdup(key);
    return tps_yaml_uint(l->doc, node, qualified, min, max, out, error);
}

static gboolean
read_guint(const Loader *l, const TpsYamlNode *map, const char *section, const char *key, guint min,
           guint max, guint *out, GError **error)
{
    guint64 value = *out;
    if (!read_uint(l, map, section, key, min, max, &value, error))
        return FALSE;
    *out = (guint)value;
    return TRUE;
}

static gboolean
read_bool(const Loader *l, const TpsYamlNode *map, const char *section, const char *key,
          gboolean *out, GError **error)
{
    const TpsYamlNode *node = get(map, key);
    if (node == NULL)
        return TRUE;
    g_autofree char *qualified = g_strdup_printf("%s.%s", section, key);
    return tps_yaml_bool(l->doc, node, qualified, out, error);
}

static gboolean
read_enum(const Loader *l, const TpsYamlNode *map, const char *section, const char *key,
          const char *const *choices, guint *out, GError **error)
{
    const TpsYamlNode *node = get(map, key);
    if (node == NULL)
        return TRUE;
    g_autofree char *qualified = g_strdup_printf("%s.%s", section, key);
    return tps_yaml_enum(l->doc, node, qualified, choices, out, error);
}

static gboolean
require(const Loader *l, const TpsYamlNode *map, const char *section, const char *key,
        GError **error)
{
    if (get(map, key) != NULL)
        return TRUE;
    return tps_yaml_error(l->doc, map, error, "missing required key '%s' in %s", key, section);
}

/* A section that must be a map, when present. */
static gboolean
section(const Loader *l, const char *key, const char *const *known, const TpsYamlNode **out,
        GError **error)
{
    const TpsYamlNode *node = get(l->root, key);
    *out = NULL;
    if (node == NULL)
        return TRUE;
    if (!tps_yaml_expect(l->doc, node, TPS_YAML_MAP, key, error))
        return FALSE;
    if (known != NULL && !tps_yaml_check_keys(l->doc, node, key, known, error))
        return FALSE;
    *out = node;
    return TRUE;
}

/* ---- pass 1: shape ---- */

static gboolean
check_shape(Loader *l, GError **error)
{
    if (!tps_yaml_check_kind(l->doc, l->root, "scenario", root_keys, error))
        return FALSE;
    if (!tps_yaml_check_keys(l->doc, l->root, "the scenario", root_keys, error))
        return FALSE;
    if (!require(l, l->root, "the scenario", "name", error) ||
        !require(l, l->root, "the scenario", "hardware", error))
        return FALSE;

    TpsYamlNode *model_key = get_key_node(l->root, "model");
    TpsYamlNode *op_key = get_key_node(l->root, "op");
    if (model_key != NULL && op_key != NULL) {
        const TpsYamlNode *later =
            op_key->line > model_key->line ||
                    (op_key->line == model_key->line && op_key->column > model_key->column)
                ? op_key
                : model_key;
        return tps_yaml_error(l->doc, later, error,
                              "a scenario has exactly one of model: (a transformer) and op: "
                              "(one AG+GEMM or GEMM+RS), not both");
    }
    if (model_key == NULL && op_key == NULL)
        return tps_yaml_error(l->doc, l->root, error,
                              "missing model: (a transformer) or op: (one AG+GEMM or GEMM+RS); a "
                              "scenario has exactly one of them");
    l->sc->is_op = op_key != NULL;

    if (l->sc->is_op) {
        TpsYamlNode *training_key = get_key_node(l->root, "training");
        if (training_key != NULL)
            return tps_yaml_error(l->doc, training_key, error,
                                  "training: does not apply to op scenarios (they run one "
                                  "operation, not a training step)");
        if (!require(l, l->root, "an op scenario", "parallel", error))
            return FALSE;
    }

    if (!section(l, "model", model_keys, &l->model, error) ||
        !section(l, "training", training_keys, &l->training, error) ||
        !section(l, "parallel", parallel_keys, &l->parallel, error) ||
        !section(l, "op", op_keys, &l->op, error) ||
        !section(l, "overlap", NULL, &l->overlap, error))
        return FALSE;

    if (l->model != NULL) {
        static const char *const required[] = {"hidden", "heads", "layers", "seq_len"};
        for (guint i = 0; i < G_N_ELEMENTS(required); i++)
            if (!require(l, l->model, "model", required[i], error))
                return FALSE;
    }
    if (l->op != NULL) {
        static const char *const required[] = {"kind", "m", "n", "k"};
        for (guint i = 0; i < G_N_ELEMENTS(required); i++)
            if (!require(l, l->op, "op", required[i], error))
                return FALSE;
    }
    if (l->sc->is_op) {
        if (!require(l, l->parallel, "parallel", "tp", error))
            return FALSE;
        static const char *const model_only[] = {"pp",      "vpp",    "dp", "cp",
                                                 "cp_comm", "cp_a2a", "ep", "etp"};
        for (guint i = 0; i < G_N_ELEMENTS(model_only); i++) {
            TpsYamlNode *key = get_key_node(l->parallel, model_only[i]);
            if (key != NULL)
                return tps_yaml_error(l->doc, key, error,
                                      "parallel.%s does not apply to op scenarios (one TP group "
                                      "runs the operation; only tp and sp are read)",
                                      model_only[i]);
        }
    }
    return TRUE;
}

/* ---- pass 2: values ---- */

static gboolean
load_name(Loader *l, GError **error)
{
    const TpsYamlNode *node = get(l->root, "name");
    const char *name;
    if (!tps_yaml_string(l->doc, node, "name", &name, error))
        return FALSE;
    if (name[0] == '\0')
        return tps_yaml_error(l->doc, node, error, "name is empty");
    if (strlen(name) > MAX_NAME)
        return tps_yaml_error(l->doc, node, error, "name is longer than %d characters", MAX_NAME);
    for (const char *p = name; *p != '\0'; p++) {
        if (!g_ascii_isalnum(*p) && *p != '.' && *p != '_' && *p != '-')
            return tps_yaml_error(l->doc, node, error,
                                  "name '%s' may only contain letters, digits, '.', '_' and '-' "
                                  "(it names output files)",
                                  name);
    }
    l->sc->name = g_strdup(name);
    return TRUE;
}

/* `hardware:` is a model NAME or path, or a what-if: a map of `base:` (a
 * NAME or path) and the model file's sections with the values to change
 * (applied in load_hardware()). */
static gboolean
load_hardware_ref(Loader *l, GError **error)
{
    const TpsYamlNode *node = get(l->root, "hardware");
    const char *ref;
    if (node != NULL && node->type == TPS_YAML_MAP) {
        if (!require(l, node, "hardware", "base", error))
            return FALSE;
        node = get(node, "base");
        if (!tps_yaml_string(l->doc, node, "hardware.base", &ref, error))
            return FALSE;
    } else if (!tps_yaml_string(l->doc, node, "hardware", &ref, error)) {
        return FALSE;
    }
    if (ref[0] == '\0')
        return tps_yaml_error(l->doc, node, error,
                              "hardware is empty (a model name, such as a100-sxm4-80gb, or a path "
                              "to a model file)");
    l->sc->hardware_ref = g_strdup(ref);
    return TRUE;
}

/* model.fp8_recipe only under dtype fp8. mxfp8 on hardware without MXFP8
 * tensor cores is refused with the hardware model (tps_scenario_validate(),
 * at this key). */
static gboolean
check_fp8_recipe(Loader *l, const TpsYamlNode *m, GError **error)
{
    const TpsYamlNode *key = get(m, "fp8_recipe");
    if (key == NULL)
        return TRUE;
    if (l->sc->dtype != TPS_DTYPE_FP8)
        return tps_yaml_error(l->doc, key, error,
                              "model.fp8_recipe needs model.dtype fp8 (a recipe scales FP8 "
                              "GEMM operands)");
    return TRUE;
}

/* model.moe.layer_freq: an integer N (every Nth layer, from the first),
 * or a list of 0 / 1, one per layer (Megatron's --moe-layer-freq). */
static gboolean
read_layer_freq(Loader *l, const TpsYamlNode *node, GError **error)
{
    TpsMoe *moe = &l->sc->moe;
    if (node == NULL)
        return TRUE;
    if (node->type != TPS_YAML_SEQ) {
        guint64 freq = moe->layer_freq;
        if (!tps_yaml_uint(l->doc, node, "model.moe.layer_freq", 1, MAX_LAYERS, &freq, error))
            return FALSE;
        moe->layer_freq = (guint)freq;
        return TRUE;
    }
    const guint n = node->items != NULL ? node->items->len : 0;
    if (n != l->sc->layers)
        return tps_yaml_error(
            l->doc, node, error,
            "model.moe.layer_freq lists %u layers; model.layers is %" G_GUINT64_FORMAT
            " (one 0 or 1 per layer)",
            n, l->sc->layers);
    GString *pattern = g_string_sized_new(n);
    for (guint i = 0; i < n; i++) {
        guint64 bit = 0;
        if (!tps_yaml_uint(l->doc, g_ptr_array_index(node->items, i), "model.moe.layer_freq", 0, 1,
                           &bit, error)) {
            g_string_free(pattern, TRUE);
            return FALSE;
        }
        g_string_append_c(pattern, bit ? '1' : '0');
    }
    g_free(moe->pattern);
    moe->pattern = g_string_free(pattern, FALSE);
    moe->layer_freq = 0;
    return TRUE;
}

/* model.moe: (sched/scenario.h TpsMoe); its rules between values are
 * tps_scenario_validate()'s. */
static gboolean
load_moe(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    TpsMoe *moe = &sc->moe;
    const TpsYamlNode *m = get(l->model, "moe");
    if (m == NULL)
        return TRUE;
    if (!tps_yaml_expect(l->doc, m, TPS_YAML_MAP, "model.moe", error) ||
        !tps_yaml_check_keys(l->doc, m, "model.moe", moe_keys, error) ||
        !require(l, m, "model.moe", "experts", error))
        return FALSE;
    moe->line = m->line;
    moe->column = m->column;
    guint dispatcher = moe->dispatcher;
    if (!read_guint(l, m, "model.moe", "experts", 1, TPS_SCENARIO_MAX_EXPERTS, &moe->experts,
                    error) ||
        !read_guint(l, m, "model.moe", "top_k", 1, TPS_SCENARIO_MAX_EXPERTS, &moe->top_k, error) ||
        !read_uint(l, m, "model.moe", "ffn_hidden", 1, MAX_FFN, &moe->ffn_hidden, error) ||
        !read_uint(l, m, "model.moe", "shared_ffn_hidden", 0, MAX_FFN, &moe->shared_ffn_hidden,
                   error) ||
        !read_layer_freq(l, get(m, "layer_freq"), error) ||
        !read_enum(l, m, "model.moe", "dispatcher", tps_moe_dispatcher_names, &dispatcher, error) ||
        !read_bool(l, m, "model.moe", "grouped_gemm", &moe->grouped_gemm, error) ||
        (get(m, "capacity_factor") != NULL &&
         !tps_yaml_double(l->doc, get(m, "capacity_factor"), "model.moe.capacity_factor", 0.01,
                          1024.0, &moe->capacity_factor, error)) ||
        (get(m, "load_imbalance") != NULL &&
         !tps_yaml_double(l->doc, get(m, "load_imbalance"), "model.moe.load_imbalance", 1.0, 1024.0,
                          &moe->load_imbalance, error)) ||
        !read_bool(l, m, "model.moe", "shared_expert_overlap", &moe->shared_expert_overlap,
                   error) ||
        !read_guint(l, m, "model.moe", "router_groups", 1, TPS_SCENARIO_MAX_EXPERTS,
                    &moe->router_groups, error) ||
        !read_guint(l, m, "model.moe", "router_group_topk", 1, TPS_SCENARIO_MAX_EXPERTS,
                    &moe->router_group_topk, error))
        return FALSE;
    moe->dispatcher = (TpsMoeDispatcher)dispatcher;
    if (!read_bool(l, m, "model.moe", "overlap_ep_comm", &moe->overlap_ep_comm, error) ||
        !read_bool(l, m, "model.moe", "expert_bias", &moe->expert_bias, error))
        return FALSE;
    /* Unstated, the busiest expert's measured load under the scenario's
     * balancing (sched/scenario.h). */
    if (get(m, "load_imbalance") == NULL)
        moe->load_imbalance =
            moe->expert_bias ? TPS_MOE_IMBALANCE_EXPERT_BIAS : TPS_MOE_IMBALANCE_AUX_LOSS;
    if (moe->shared_expert_overlap && moe->shared_ffn_hidden == 0)
        return tps_yaml_error(l->doc, get(m, "shared_expert_overlap"), error,
                              "model.moe.shared_expert_overlap needs shared experts "
                              "(model.moe.shared_ffn_hidden > 0)");
    if (moe->shared_expert_overlap && moe->dispatcher == TPS_MOE_ALLGATHER)
        return tps_yaml_error(l->doc, get(m, "shared_expert_overlap"), error,
                              "model.moe.shared_expert_overlap is built for the alltoall "
                              "and flex dispatchers only (Megatron's rule)");
    if (get(m, "ffn_hidden") == NULL)
        moe->ffn_hidden = sc->ffn_hidden; /* Megatron: --moe-ffn-hidden-size defaults to it */
    return TRUE;
}

/* Multi-head latent attention (model.multi_latent_attention and its
 * sizes; model.q_lora_rank 0 is Megatron's None, no Q latent). Its sizes
 * mean nothing without it: refused there. */
static gboolean
read_mla(Loader *l, const TpsYamlNode *m, GError **error)
{
    static const char *const sizes[] = {"q_lora_rank", "kv_lora_rank", "qk_head_dim",
                                        "qk_pos_emb_head_dim", "v_head_dim"};
    TpsScenario *sc = l->sc;
    guint64 *out[] = {&sc->q_lora_rank, &sc->kv_lora_rank, &sc->qk_head_dim,
                      &sc->qk_pos_emb_head_dim, &sc->v_head_dim};
    if (!read_bool(l, m, "model", "multi_latent_attention", &sc->mla, error))
        return FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        const guint64 max = i < 2 ? MAX_HIDDEN : TPS_SCENARIO_MAX_HEAD_DIM;
        if (!read_uint(l, m, "model", sizes[i], i == 0 ? 0 : 1, max, out[i], error))
            return FALSE;
        if (get(m, sizes[i]) != NULL && !sc->mla)
            return tps_yaml_error(l->doc, get(m, sizes[i]), error,
                                  "model.%s needs model.multi_latent_attention: true", sizes[i]);
    }
    return TRUE;
}

static gboolean
load_model(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *m = l->model;
    guint dtype = sc->dtype, attention = sc->attention, mlp = sc->mlp, norm = sc->norm;
    guint position = sc->position, recipe = sc->fp8_recipe;

    if (!read_uint(l, m, "model", "hidden", 1, MAX_HIDDEN, &sc->hidden, error) ||
        !read_uint(l, m, "model", "heads", 1, MAX_HEADS, &sc->heads, error) ||
        !read_uint(l, m, "model", "kv_heads", 1, MAX_HEADS, &sc->kv_heads, error) ||
        !read_uint(l, m, "model", "ffn_hidden", 1, MAX_FFN, &sc->ffn_hidden, error) ||
        !read_enum(l, m, "model", "mlp", tps_mlp_names, &mlp, error) ||
        !read_enum(l, m, "model", "norm", tps_norm_names, &norm, error) ||
        !read_uint(l, m, "model", "layers", 1, MAX_LAYERS, &sc->layers, error) ||
        !read_uint(l, m, "model", "seq_len", 1, MAX_SEQ, &sc->seq_len, error) ||
        !read_uint(l, m, "model", "vocab", 1, MAX_VOCAB, &sc->vocab, error) ||
        !read_enum(l, m, "model", "dtype", tps_dtype_names, &dtype, error) ||
        !read_enum(l, m, "model", "fp8_recipe", tps_fp8_recipe_names, &recipe, error) ||
        !read_uint(l, m, "model", "fp8_amax_history_len", 1, 1u << 20, &sc->fp8_amax_history_len,
                   error) ||
        !read_enum(l, m, "model", "attention", attention_names, &attention, error) ||
        !read_enum(l, m, "model", "position_embedding", tps_position_names, &position, error) ||
        !read_bool(l, m, "model", "bias", &sc->bias, error) ||
        !read_bool(l, m, "model", "tie_embeddings", &sc->tie_embeddings, error) ||
        (get(m, "hidden_dropout") != NULL &&
         !tps_yaml_double(l->doc, get(m, "hidden_dropout"), "model.hidden_dropout", 0.0, 1.0,
                          &sc->hidden_dropout, error)) ||
        !read_bool(l, m, "model", "causal", &sc->causal, error) ||
        !read_uint(l, m, "model", "head_dim", 1, TPS_SCENARIO_MAX_HEAD_DIM, &sc->head_dim, error) ||
        !read_bool(l, m, "model", "qk_norm", &sc->qk_norm, error) || !read_mla(l, m, error))
        return FALSE;
    sc->dtype = (TpsDtype)dtype;
    sc->attention = (TpsAttention)attention;
    sc->mlp = (TpsMlp)mlp;
    sc->norm = (TpsNorm)norm;
    sc->position = (TpsPosition)position;
    sc->fp8_recipe = (TpsFp8Recipe)recipe;
    if (get(m, "ffn_hidden") == NULL)
        sc->ffn_hidden = tps_scenario_default_ffn_hidden(sc->hidden, sc->mlp);
    return check_fp8_recipe(l, m, error) && load_moe(l, error);
}

/* training.fsdp and training.fsdp_impl, with Megatron's rules
 * (megatron/training/arguments.py): PyTorch's FSDP2 shards everything
 * (optim_grads_params) and runs without Megatron's distributed optimizer;
 * without pipeline parallelism, checked once parallel: is read
 * (check_fsdp_parallel()). */
static gboolean
load_fsdp(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *t = l->training;
    guint fsdp = sc->fsdp, impl = sc->fsdp_impl;
    if (!read_enum(l, t, "training", "fsdp", tps_fsdp_names, &fsdp, error) ||
        !read_enum(l, t, "training", "fsdp_impl", tps_fsdp_impl_names, &impl, error))
        return FALSE;
    sc->fsdp = (TpsFsdp)fsdp;
    sc->fsdp_impl = (TpsFsdpImpl)impl;
    if (sc->fsdp != TPS_FSDP_NONE && sc->moe.experts > 0)
        return tps_yaml_error(l->doc, get(t, "fsdp"), error,
                              "training.fsdp %s with model.moe is not modelled yet (FSDP's units "
                              "and the experts' shards over the expert data-parallel group): "
                              "use none",
                              tps_fsdp_names[sc->fsdp]);
    const TpsYamlNode *key = get(t, "fsdp_impl");
    if (sc->fsdp_impl != TPS_FSDP_IMPL_TORCH)
        return TRUE;
    if (sc->fsdp != TPS_FSDP_OPTIM_GRADS_PARAMS)
        return tps_yaml_error(l->doc, key, error,
                              "training.fsdp_impl torch needs training.fsdp optim_grads_params "
                              "(PyTorch's FSDP2 shards parameters, gradients and optimizer "
                              "states)");
    if (sc->distributed_optimizer)
        return tps_yaml_error(l->doc, key, error,
                              "training.fsdp_impl torch with training.distributed_optimizer "
                              "(Megatron: --use-torch-fsdp2 is not supported with the "
                              "distributed optimizer)");
    return TRUE;
}

/* PyTorch's FSDP2 without pipeline parallelism (Megatron:
 * --use-torch-fsdp2 is not supported with it). */
static gboolean
check_fsdp_parallel(const Loader *l, GError **error)
{
    if (l->sc->fsdp_impl != TPS_FSDP_IMPL_TORCH || l->sc->pp <= 1)
        return TRUE;
    return tps_yaml_error(l->doc, get(l->training, "fsdp_impl"), error,
                          "training.fsdp_impl torch needs parallel.pp 1 (Megatron: "
                          "--use-torch-fsdp2 is not supported with pipeline parallelism)");
}

/* The data-parallel keys of training:, with Megatron's rules between
 * them (megatron/training/arguments.py): --overlap-param-gather needs the
 * distributed optimizer and --overlap-grad-reduce, --fp8-param-gather the
 * distributed optimizer and FP8 weights. The model: section is read
 * before. */
static gboolean
load_data_parallel(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *t = l->training;
    guint grad_dtype = sc->grad_reduce_dtype;
    if (!load_fsdp(l, error))
        return FALSE;
    if (!read_bool(l, t, "training", "overlap_param_gather", &sc->overlap_param_gather, error) ||
        !read_uint(l, t, "training", "ddp_bucket_size", 1, MAX_BUCKET, &sc->ddp_bucket_size,
                   error) ||
        !read_enum(l, t, "training", "grad_reduce_dtype", tps_grad_reduce_dtype_names, &grad_dtype,
                   error) ||
        !read_bool(l, t, "training", "fp8_param_gather", &sc->fp8_param_gather, error))
        return FALSE;
    sc->grad_reduce_dtype = (TpsGradReduceDtype)grad_dtype;
    const TpsYamlNode *opg = get(t, "overlap_param_gather");
    if (sc->overlap_param_gather && !tps_dp_sharded_optimizer(sc))
        return tps_yaml_error(l->doc, opg, error,
                              "training.overlap_param_gather needs training.distributed_optimizer "
                              "or training.fsdp (Megatron: --overlap-param-gather only with the "
                              "distributed optimizer or Megatron FSDP)");
    if (sc->overlap_param_gather && !sc->overlap_grad_reduce)
        return tps_yaml_error(l->doc, opg, error,
                              "training.overlap_param_gather needs training.overlap_grad_reduce "
                              "(Megatron: --overlap-param-gather with --overlap-grad-reduce)");
    const TpsYamlNode *f8 = get(t, "fp8_param_gather");
    if (sc->fp8_param_gather && !tps_dp_sharded_optimizer(sc))
        return tps_yaml_error(l->doc, f8, error,
                              "training.fp8_param_gather needs training.distributed_optimizer "
                              "or training.fsdp (Megatron: --fp8-param-gather only with the distributed optimizer "
                              "or FSDP)");
    if (sc->fp8_param_gather && sc->dtype != TPS_DTYPE_FP8)
        return tps_yaml_error(l->doc, f8, error,
                              "training.fp8_param_gather needs model.dtype fp8 (it keeps the FP8 "
                              "weights instead of the bf16 ones)");
    if (sc->fp8_param_gather && sc->fp8_recipe != TPS_FP8_DELAYED)
        return tps_yaml_error(l->doc, f8, error,
                              "training.fp8_param_gather is modelled with model.fp8_recipe "
                              "delayed only (the FP8 weights of the other recipes and their "
                              "gathers are not)");
    return TRUE;
}

static gboolean
load_training(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *t = l->training;
    guint recompute = sc->recompute;

    if (t == NULL)
        return TRUE;
    if (!read_uint(l, t, "training", "micro_batch", 1, MAX_MICRO_BATCH, &sc->micro_batch, error) ||
        !read_uint(l, t, "training", "global_batch", 1, MAX_GLOBAL_BATCH, &sc->global_batch,
                   error) ||
        !read_enum(l, t, "training", "recompute", recompute_names, &recompute, error) ||
        !read_bool(l, t, "training", "distributed_optimizer", &sc->distributed_optimizer, error) ||
        !read_bool(l, t, "training", "overlap_grad_reduce", &sc->overlap_grad_reduce, error) ||
        !read_bool(l, t, "training", "cuda_graphs", &sc->cuda_graphs, error) ||
        !load_data_parallel(l, error))
        return FALSE;
    sc->recompute = (TpsRecompute)recompute;
    return TRUE;
}

/* parallel.order: Megatron's rank order ("tp-cp-ep-dp-pp"). */
static gboolean
read_order(const Loader *l, const TpsYamlNode *map, TpsDim order[TPS_DIM_COUNT], GError **error)
{
    const TpsYamlNode *node = get(map, "order");
    if (node == NULL)
        return TRUE;
    if (node->type != TPS_YAML_SCALAR)
        return tps_yaml_error(l->doc, node, error,
                              "parallel.order must be a string such as '%s'",
                              TPS_GRID_DEFAULT_ORDER);
    g_autofree char *problem = NULL;
    if (!tps_grid_parse_order(node->value, order, &problem))
        return tps_yaml_error(l->doc, node, error, "parallel.order: %s", problem);
    return TRUE;
}

/* The uneven pipeline split (model scenarios; its rules are
 * tps_scenario_validate()'s). */
static gboolean
load_split(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *p = l->parallel;
    static const char *const keys[] = {"first_stage_layers", "last_stage_layers",
                                       "account_for_embedding_in_pipeline_split",
                                       "account_for_loss_in_pipeline_split"};
    for (guint i = 0; i < G_N_ELEMENTS(keys) && sc->is_op; i++)
        if (get(p, keys[i]) != NULL)
            return tps_yaml_error(l->doc, get(p, keys[i]), error,
                                  "parallel.%s: model scenarios only (an op has no pipeline)",
                                  keys[i]);
    return read_guint(l, p, "parallel", "first_stage_layers", 1, MAX_LAYERS,
                      &sc->first_stage_layers, error) &&
           read_guint(l, p, "parallel", "last_stage_layers", 1, MAX_LAYERS, &sc->last_stage_layers,
                      error) &&
           read_bool(l, p, "parallel", "account_for_embedding_in_pipeline_split",
                     &sc->account_for_embedding, error) &&
           read_bool(l, p, "parallel", "account_for_loss_in_pipeline_split", &sc->account_for_loss,
                     error);
}

/* parallel.cp, cp_comm and cp_a2a (context parallelism). */
static gboolean
read_cp(const Loader *l, const TpsYamlNode *p, TpsScenario *sc, GError **error)
{
    guint comm = sc->cp_comm;
    if (!read_guint(l, p, "parallel", "cp", 1, TPS_SCENARIO_MAX_CP, &sc->cp, error) ||
        !read_enum(l, p, "parallel", "cp_comm", tps_cp_comm_names, &comm, error) ||
        !read_guint(l, p, "parallel", "cp_a2a", 1, TPS_SCENARIO_MAX_CP, &sc->cp_a2a, error))
        return FALSE;
    sc->cp_comm = (TpsCpComm)comm;
    return TRUE;
}

static gboolean
load_parallel(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *p = l->parallel;

    if (p == NULL)
        return TRUE;
    if (!read_guint(l, p, "parallel", "tp", 1, MAX_TP, &sc->tp, error) ||
        !read_bool(l, p, "parallel", "sp", &sc->sp, error) ||
        !read_guint(l, p, "parallel", "pp", 1, MAX_PP, &sc->pp, error) ||
        !read_guint(l, p, "parallel", "vpp", 1, MAX_VPP, &sc->vpp, error) ||
        !read_guint(l, p, "parallel", "dp", 1, MAX_DP, &sc->dp, error) ||
        !read_cp(l, p, sc, error) ||
        !read_guint(l, p, "parallel", "ep", 1, TPS_SCENARIO_MAX_EP, &sc->ep, error) ||
        !read_guint(l, p, "parallel", "etp", 1, MAX_TP, &sc->etp, error) ||
        !read_order(l, p, sc->order, error) || !load_split(l, error))
        return FALSE;
    if (sc->is_op) {
        const TpsYamlNode *sp = get(p, "sp");
        if (sp != NULL && !sc->sp)
            return tps_yaml_error(l->doc, sp, error,
                                  "op scenarios are always sequence-parallel (an all-gather or a "
                                  "reduce-scatter around the GEMM); leave out parallel.sp or set "
                                  "it to true");
        sc->sp = TRUE;
    }
    return TRUE;
}

static gboolean
load_op(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *o = l->op;
    guint kind = sc->op_kind, dtype = sc->dtype;

    if (!read_enum(l, o, "op", "kind", op_kind_names, &kind, error) ||
        !read_uint(l, o, "op", "m", 1, MAX_OP_DIM, &sc->m, error) ||
        !read_uint(l, o, "op", "n", 1, MAX_OP_DIM, &sc->n, error) ||
        !read_uint(l, o, "op", "k", 1, MAX_OP_DIM, &sc->k, error) ||
        !read_enum(l, o, "op", "dtype", tps_dtype_names, &dtype, error))
        return FALSE;
    sc->op_kind = (TpsOpKind)kind;
    sc->dtype = (TpsDtype)dtype;
    return TRUE;
}

static gboolean
load_strategies(Loader *l, GError **error)
{
    TpsYamlNode *key = get_key_node(l->root, "strategies");
    const TpsYamlNode *node = get(l->root, "strategies");

    if (node == NULL)
        return TRUE;
    if (!tps_yaml_expect(l->doc, node, TPS_YAML_SEQ, "strategies", error))
        return FALSE;
    if (node->items == NULL || node->items->len == 0)
        return tps_yaml_error(l->doc, node, error,
                              "strategies is empty; leave it out to run every preset that "
                              "applies");

    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < node->items->len; i++) {
        const TpsYamlNode *item = g_ptr_array_index(node->items, i);
        const char *name;
        if (!tps_yaml_string(l->doc, item, "strategies", &name, error))
            return FALSE;
        if (name[0] == '\0')
            return tps_yaml_error(l->doc, item, error, "empty strategy name");
        for (guint j = 0; j < names->len; j++)
            if (strcmp(g_ptr_array_index(names, j), name) == 0)
                return tps_yaml_error(l->doc, item, error, "strategy '%s' is listed twice", name);
        g_ptr_array_add(names, g_strdup(name));
    }
    g_ptr_array_add(names, NULL);
    l->sc->strategies = (char **)g_ptr_array_free(g_steal_pointer(&names), FALSE);
    /* The key's position, so that the sched layer can point at the list when a
     * name is not a preset or does not apply. */
    l->sc->strategies_line = key != NULL ? key->line : node->line;
    l->sc->strategies_column = key != NULL ? key->column : node->column;
    return TRUE;
}

/* ---- pass 3: consistency ---- */

/* The node of the key at `path` ("model.heads"), NULL when not written. */
static const TpsYamlNode *
node_at(const Loader *l, const char *path, gboolean section_only)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    guint n = g_strv_length(parts) - (section_only ? 1 : 0);
    const TpsYamlNode *node = l->root;
    for (guint i = 0; i < n && node != NULL; i++)
        node = get(node, parts[i]);
    return node;
}

/* The relations between values are tps_scenario_validate()'s; the loader
 * only places its message: at the value to change, else at the other value
 * of the rule when that one was left at its default, else at the section. */
static gboolean
check_consistency(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    if (!sc->is_op && get(l->training, "global_batch") == NULL)
        sc->global_batch = sc->micro_batch * sc->dp;

    TpsScenarioProblem problem;
    g_autoptr(GError) local = NULL;
    if (tps_scenario_validate(sc, &problem, &local))
        return TRUE;

    g_autofree char *path = tps_scenario_field_path(problem.field, problem.slot);
    const TpsYamlNode *node = node_at(l, path, FALSE);
    if (node == NULL && problem.fallback != TPS_FIELD_NONE) {
        g_autofree char *other = tps_scenario_field_path(problem.fallback, problem.slot);
        node = node_at(l, other, FALSE);
    }
    if (node == NULL)
        node = node_at(l, path, TRUE);
    if (node == NULL)
        node = l->root;
    return tps_yaml_error(l->doc, node, error, "%s", local->message);
}

/* ---- hardware ---- */

static gboolean
ref_is_path(const char *ref)
{
    return strchr(ref, '/') != NULL || g_str_has_suffix(ref, ".yaml");
}

/* Whether `ref` names nothing that exists (an unknown model name, or a path
 * to no file): the scenario is then what is wrong, and the message points
 * at its `hardware:` value. When the model file exists, its own loader's
 * message already points into it. */
static gboolean
ref_not_found(const char *ref, const char *base_dir)
{
    if (ref_is_path(ref)) {
        /* Where tps_model_file_resolve() looks: the scenario's folder. */
        if (base_dir != NULL && !g_path_is_absolute(ref)) {
            g_autofree char *joined = g_build_filename(base_dir, ref, NULL);
            return !g_file_test(joined, G_FILE_TEST_IS_REGULAR);
        }
        return !g_file_test(ref, G_FILE_TEST_IS_REGULAR);
    }
    g_auto(GStrv) names = tps_model_file_list();
    return names == NULL || !g_strv_contains((const char *const *)names, ref);
}

/* The SHA-256 of the model file's bytes, beside its path: the results say
 * which file they rest on, not only its name. */
static void
note_hardware_digest(TpsScenario *sc)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    if (sc->hardware_file && g_file_get_contents(sc->hardware_file, &text, &len, NULL))
        sc->hardware_sha256 =
            g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)text, len);
}

static gboolean
load_hardware(Loader *l, GError **error)
{
    GError *local = NULL;
    const char *ref = l->sc->hardware_ref;

    const TpsYamlNode *whatif = get(l->root, "hardware");
    g_clear_pointer(&l->sc->hardware_file, g_free);
    g_clear_pointer(&l->sc->hardware_sha256, g_free);
    if (tps_model_file_resolve_at(ref, l->base_dir, &l->sc->hardware, &l->sc->hardware_file,
                                  &local)) {
        note_hardware_digest(l->sc);
        if (whatif == NULL || whatif->type != TPS_YAML_MAP)
            return TRUE;
        static const char *const skip[] = {"base", NULL};
        if (!tps_model_file_apply(l->doc, whatif, skip, &l->sc->hardware, error))
            return FALSE;
        /* The results name a model that is not the file's. */
        if (whatif->keys->len > 1) {
            char *name = g_strdup_printf("%s-what-if", l->sc->hardware.name);
            g_free(l->sc->hardware.name);
            l->sc->hardware.name = name;
        }
        return TRUE;
    }
    if (ref_not_found(ref, l->base_dir)) {
        /* The scenario names something that is not there: an input error at
         * its hardware: value, even where the model loader saw an I/O error
         * (a path to no file). */
        const TpsYamlNode *node = get(l->root, "hardware");
        if (node != NULL && node->type == TPS_YAML_MAP)
            node = get(node, "base");
        if (node != NULL) { /* always: checked in check_shape() */
            GError *input = g_error_new(TPS_ERROR, TPS_ERROR_INPUT, "%s:%u:%u: %s", l->doc->file,
                                        node->line, node->column, local->message);
            g_error_free(local);
            local = input;
        }
    }
    g_propagate_error(error, local);
    return FALSE;
}

/* ---- overlap ---- */

/* wgrad GEMMs communicate nothing of their own: a method the table does
 * not allow there is rejected with this slot's reason, not the method's. */
static gboolean
slot_is_wgrad(TpsGemmSlot slot)
{
    return slot == TPS_GEMM_QKV_WGRAD || slot == TPS_GEMM_FC1_WGRAD;
}

/* The methods other than none that `slot` may take (bits of TpsMethod). */
static guint
methods_allowed_on(const TpsScenario *sc, TpsGemmSlot slot)
{
    guint which = 0;
    for (guint m = TPS_METHOD_NONE + 1; m < TPS_METHOD_COUNT; m++)
        if (tps_method_allows(tps_method_info((TpsMethod)m), slot, sc->op_kind))
            which |= 1u << m;
    return which;
}

/* The TpsKnob bits of the knobs the entry `value` writes: the others take
 * Transformer Engine's defaults (tps_strategy_overlap()). */
static guint
knobs_given(const TpsYamlNode *value)
{
    static const struct {
        const char *key;
        TpsKnob bit;
    } knobs[] = {
        {"num_splits", TPS_KNOB_NUM_SPLITS}, {"num_sm", TPS_KNOB_NUM_SM},
        {"cga_size", TPS_KNOB_CGA_SIZE},     {"set_sm_margin", TPS_KNOB_SET_SM_MARGIN},
        {"aggregate", TPS_KNOB_AGGREGATE},   {"use_ce", TPS_KNOB_USE_CE},
    };
    guint given = 0;
    for (guint i = 0; i < G_N_ELEMENTS(knobs); i++)
        if (get(value, knobs[i].key) != NULL)
            given |= knobs[i].bit;
    return given;
}

static gboolean
load_overlap_entry(Loader *l, TpsGemmSlot slot, const TpsYamlNode *key, const TpsYamlNode *value,
                   GError **error)
{
    TpsScenario *sc = l->sc;
    TpsOverlapConfig *config = &sc->overlap[slot];
    const char *slot_name = tps_gemm_slot_names[slot];
    g_autofree char *where = g_strdup_printf("overlap.%s", slot_name);
    guint method = TPS_METHOD_NONE;

    if (!tps_yaml_expect(l->doc, value, TPS_YAML_MAP, where, error) ||
        !tps_yaml_check_keys(l->doc, value, where, overlap_entry_keys, error))
        return FALSE;
    const TpsYamlNode *method_node = get(value, "method");
    if (method_node == NULL) {
        g_autofree char *all = tps_method_join((1u << TPS_METHOD_COUNT) - 1, "");
        return tps_yaml_error(l->doc, value, error, "missing required key 'method' in %s (%s)",
                              where, all);
    }
    if (!read_enum(l, value, where, "method", tps_method_names, &method, error) ||
        !read_guint(l, value, where, "num_splits", 1, MAX_NUM_SPLITS, &config->num_splits, error) ||
        !read_guint(l, value, where, "num_sm", 1, MAX_NUM_SM, &config->num_sm, error) ||
        !read_guint(l, value, where, "cga_size", 1, MAX_CGA, &config->cga_size, error) ||
        !read_bool(l, value, where, "set_sm_margin", &config->set_sm_margin, error) ||
        !read_bool(l, value, where, "aggregate", &config->aggregate, error) ||
        !read_bool(l, value, where, "use_ce", &config->use_ce, error))
        return FALSE;
    config->method = (TpsMethod)method;
    config->set = TRUE;
    config->line = key->line;
    config->column = key->column;
    config->given = knobs_given(value);

    if (config->method == TPS_METHOD_NONE)
        return TRUE;

    /* Combinations Transformer Engine rejects, or that have no meaning:
     * the method table's slot rules. */
    const TpsMethodInfo *info = tps_method_info(config->method);
    if (!tps_method_allows(info, slot, sc->op_kind)) {
        if (slot_is_wgrad(slot)) {
            g_autofree char *allowed = tps_method_join(methods_allowed_on(sc, slot), "'");
            return tps_yaml_error(l->doc, method_node, error,
                                  "%s: only %s or 'none' apply (the wgrad GEMM hides the bulk "
                                  "reduce-scatter of the dgrad output; its own output is not "
                                  "communicated)",
                                  where, allowed);
        }
        return tps_yaml_error(l->doc, method_node, error, "%s: %s", where, info->rejected);
    }
    if (config->num_sm != 0 && sc->hardware.sms != 0 && config->num_sm >= sc->hardware.sms)
        return tps_yaml_error(l->doc, node_or(value, "num_sm", value), error,
                              "%s.num_sm (%u) must be less than the %u SMs of a %s", where,
                              config->num_sm, sc->hardware.sms,
                              sc->hardware.name != NULL ? sc->hardware.name : "GPU");
    guint domain_gpus;
    if (sc->hardware.gpus_per_node != 0 && tps_place_tp_crosses(sc, &domain_gpus))
        return tps_yaml_error(l->doc, method_node, error,
                              "%s: comm+GEMM overlap is single-node TP only (userbuffers need "
                              "the NVLink domain), but the TP group (parallel.tp %u) spans more "
                              "than the %u GPUs of one NVLink domain of %s",
                              where, sc->tp, domain_gpus,
                              sc->hardware.name != NULL ? sc->hardware.name : "this model");
    return TRUE;
}

/* ---- overlap.ub_cfg: Transformer Engine userbuffers configurations ---- */

/* The GEMM names of initialize_ub() (transformer_engine/pytorch/module/
 * base.py) and the keys of each entry (its add_ub() arguments). */
static const char *const ub_names[] = {
    "qkv_fprop", "qkv_dgrad", "qkv_wgrad", "proj_fprop", "proj_dgrad", "proj_wgrad",
    "fc1_fprop", "fc1_dgrad", "fc1_wgrad", "fc2_fprop",  "fc2_dgrad",  "fc2_wgrad", NULL,
};
static const char *const ub_entry_keys[] = {
    "method",      "is_reduce_scatter", "num_sm",        "cga_size",      "set_sm_margin",
    "num_splits",  "aggregate",         "atomic_gemm",   "use_ce",        "fp8_buf",
    "comm_priority", "gemm_priority",   "pipeline_rs_overlap_first_gemm", NULL,
};
static const char *const ub_bool_keys[] = {"set_sm_margin", "aggregate", "use_ce", NULL};

static void
ub_slot_reset(TpsScenario *sc, TpsGemmSlot slot)
{
    TpsOverlapConfig *c = &sc->overlap[slot];
    memset(c, 0, sizeof *c);
    c->method = TPS_METHOD_NONE;
    c->cga_size = 2;
    c->use_ce = TRUE;
}

static void
ub_note(GPtrArray *notes, const TpsYamlDoc *doc, const TpsYamlNode *node, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

static void
ub_note(GPtrArray *notes, const TpsYamlDoc *doc, const TpsYamlNode *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_ptr_array_add(notes, g_strdup_printf("%s:%u:%u: %s", doc->file, node->line, node->column,
                                           msg));
}

/* Every slot of the op given TE's default method, placed at the file's
 * start (`line`, `column`). */
static void
ub_set_defaults(TpsScenario *sc, guint line, guint column)
{
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        ub_slot_reset(sc, (TpsGemmSlot)s);
        sc->overlap[s].method = tps_method_te_default((TpsGemmSlot)s, sc->op_kind);
        sc->overlap[s].set = TRUE;
        sc->overlap[s].line = line;
        sc->overlap[s].column = column;
    }
}

/* A key `k` (value `v`) of the entry `key` that tpsim does not model:
 * noted when it matters. */
static void
ub_note_unmodelled(GPtrArray *notes, const TpsYamlDoc *ub, const TpsYamlNode *key,
                   const TpsYamlNode *k, const TpsYamlNode *v)
{
    const char *text = v->type == TPS_YAML_SCALAR ? v->value : "...";
    gboolean off = strcmp(text, "false") == 0 || strcmp(text, "0") == 0;
    if (strcmp(k->value, "atomic_gemm") == 0 && !off)
        ub_note(notes, ub, k,
                "%s.atomic_gemm: not modelled (FP8 atomic GEMM); simulated as "
                "the split method",
                key->value);
    else if (strcmp(k->value, "pipeline_rs_overlap_first_gemm") == 0 && !off)
        ub_note(notes, ub, k,
                "%s.pipeline_rs_overlap_first_gemm: not modelled; the first "
                "chunk's reduce-scatter waits as without it",
                key->value);
    else if (strcmp(k->value, "fp8_buf") == 0)
        ub_note(notes, ub, k,
                "%s.fp8_buf: read, not used (TE sets it itself; tpsim's FP8 "
                "all-gathers follow model.dtype)",
                key->value);
    else if (strcmp(k->value, "comm_priority") == 0 || strcmp(k->value, "gemm_priority") == 0)
        ub_note(notes, ub, k, "%s.%s: not modelled (the streams keep TE's default priorities)",
                key->value, k->value);
    else if (strcmp(k->value, "is_reduce_scatter") == 0)
        ub_note(notes, ub, k, "%s.is_reduce_scatter: ignored (the GEMM's name says)", key->value);
}

/* The keys tpsim models of the entry `key` (its map `value`), as an
 * overlap: entry (booleans also as 0 and 1, which TE takes; the method
 * TE's default for `slot` when not given); the others noted. */
static TpsYamlNode *
ub_entry_as_overlap(GPtrArray *notes, const TpsYamlDoc *ub, const TpsYamlNode *key,
                    const TpsYamlNode *value, guint slot)
{
    TpsYamlNode *entry = tps_yaml_node_new(TPS_YAML_MAP, NULL, value->line, value->column);
    for (guint j = 0; j < value->keys->len; j++) {
        const TpsYamlNode *k = g_ptr_array_index(value->keys, j);
        const TpsYamlNode *v = g_ptr_array_index(value->items, j);
        if (!g_strv_contains(overlap_entry_keys, k->value)) {
            ub_note_unmodelled(notes, ub, key, k, v);
            continue;
        }
        TpsYamlNode *copy = tps_yaml_node_copy(v);
        if (copy->type == TPS_YAML_SCALAR && copy->plain &&
            g_strv_contains(ub_bool_keys, k->value) &&
            (strcmp(copy->value, "0") == 0 || strcmp(copy->value, "1") == 0)) {
            char *b = g_strdup(copy->value[0] == '1' ? "true" : "false");
            g_free(copy->value);
            copy->value = b;
        }
        tps_yaml_map_set(entry, tps_yaml_node_copy(k), copy);
    }
    if (get(entry, "method") == NULL)
        tps_yaml_map_set(
            entry, tps_yaml_node_new(TPS_YAML_SCALAR, "method", key->line, key->column),
            tps_yaml_node_new(TPS_YAML_SCALAR,
                              tps_method_names[tps_method_te_default(slot, TPS_OP_AG_GEMM)],
                              key->line, key->column));
    return entry;
}

/* One entry of the file, `key`: `value`, applied to its slot of ul->sc;
 * *wgrad_written set for a wgrad slot. */
static gboolean
apply_ub_entry(Loader *ul, GPtrArray *notes, const TpsYamlNode *key, const TpsYamlNode *value,
               gboolean *wgrad_written, GError **error)
{
    const TpsYamlDoc *ub = ul->doc;
    if (!tps_yaml_expect(ub, value, TPS_YAML_MAP, key->value, error) ||
        !tps_yaml_check_keys(ub, value, key->value, ub_entry_keys, error))
        return FALSE;
    if (strcmp(key->value, "proj_wgrad") == 0 || strcmp(key->value, "fc2_wgrad") == 0) {
        ub_note(notes, ub, key,
                "%s: not modelled (TE's 'external' overlap of a row-parallel wgrad with "
                "its dgrad's ring exchange); ignored",
                key->value);
        return TRUE;
    }
    guint slot;
    for (slot = 0; slot < TPS_GEMM_OP; slot++)
        if (strcmp(tps_gemm_slot_names[slot], key->value) == 0)
            break;
    g_assert(slot < TPS_GEMM_OP);

    TpsYamlNode *entry = ub_entry_as_overlap(notes, ub, key, value, slot);
    ub_slot_reset(ul->sc, (TpsGemmSlot)slot);
    gboolean ok = load_overlap_entry(ul, (TpsGemmSlot)slot, key, entry, error);
    tps_yaml_node_free(entry);
    if (!ok)
        return FALSE;
    if (slot_is_wgrad((TpsGemmSlot)slot))
        wgrad_written[slot] = TRUE;
    return TRUE;
}

/* TE: a dgrad given a reduce-scatter method drops its wgrad's bulk
 * overlap, and configuring that wgrad as well (`wgrad_written`) is an
 * error there. */
static gboolean
ub_drop_wgrads_of_rs_dgrads(TpsScenario *sc, const TpsYamlDoc *ub, const gboolean *wgrad_written,
                            GError **error)
{
    const TpsYamlNode *root = ub->root;
    static const TpsGemmSlot pairs[][2] = {
        {TPS_GEMM_QKV_DGRAD, TPS_GEMM_QKV_WGRAD},
        {TPS_GEMM_FC1_DGRAD, TPS_GEMM_FC1_WGRAD},
    };
    for (guint i = 0; i < G_N_ELEMENTS(pairs); i++) {
        const TpsMethodInfo *dgrad = tps_method_info(sc->overlap[pairs[i][0]].method);
        if (dgrad->gemm_rs == NULL)
            continue;
        const char *wgrad_name = tps_gemm_slot_names[pairs[i][1]];
        if (wgrad_written[pairs[i][1]])
            return tps_yaml_error(ub, get_key_node(root, wgrad_name), error,
                                  "%s cannot be configured when %s uses '%s': the dgrad then "
                                  "overlaps its reduce-scatter and the wgrad has none "
                                  "(Transformer Engine rejects it)",
                                  wgrad_name, tps_gemm_slot_names[pairs[i][0]], dgrad->name);
        ub_slot_reset(sc, pairs[i][1]);
    }
    return TRUE;
}

/* Apply the userbuffers configuration `ub` (its own document: messages
 * point into it) to the overlap table of l->sc. */
static gboolean
apply_ub_cfg(Loader *l, const TpsYamlDoc *ub, GPtrArray *notes, GError **error)
{
    Loader ul = *l;
    ul.doc = ub;
    const TpsYamlNode *root = ub->root;
    ub_set_defaults(l->sc, root != NULL ? root->line : 1, root != NULL ? root->column : 1);
    if (root == NULL)
        return TRUE; /* an empty file: TE's defaults */
    if (!tps_yaml_check_kind(ub, root, "userbuffers configuration", ub_names, error) ||
        !tps_yaml_check_keys(ub, root, "a userbuffers configuration", ub_names, error))
        return FALSE;

    gboolean wgrad_written[TPS_GEMM_SLOT_COUNT] = {FALSE};
    for (guint i = 0; i < root->keys->len; i++)
        if (!apply_ub_entry(&ul, notes, g_ptr_array_index(root->keys, i),
                            g_ptr_array_index(root->items, i), wgrad_written, error))
            return FALSE;
    return ub_drop_wgrads_of_rs_dgrads(l->sc, ub, wgrad_written, error);
}

/* overlap.ub_cfg: FILE, relative to the scenario's folder. */
static gboolean
load_ub_cfg_ref(Loader *l, const TpsYamlNode *node, GError **error)
{
    const char *ref;
    if (!tps_yaml_string(l->doc, node, "overlap.ub_cfg", &ref, error))
        return FALSE;
    g_autofree char *path = g_path_is_absolute(ref) || l->base_dir == NULL
                                ? g_strdup(ref)
                                : g_build_filename(l->base_dir, ref, NULL);
    if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
        return tps_yaml_error(l->doc, node, error, "overlap.ub_cfg: no file '%s'", path);
    g_autoptr(TpsYamlDoc) ub = tps_yaml_load_file(path, error);
    if (ub == NULL)
        return FALSE;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    if (!apply_ub_cfg(l, ub, notes, error))
        return FALSE;
    tps_input_notes_print("userbuffers config", notes);
    return TRUE;
}

gboolean
tps_scenario_apply_ub_cfg_string(TpsScenario *scenario, const char *name, const char *text,
                                 gssize len, GPtrArray *notes, GError **error)
{
    g_return_val_if_fail(scenario != NULL && name != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    g_autoptr(TpsYamlDoc) ub = tps_yaml_load_string(name, text != NULL ? text : "", len, error);
    if (ub == NULL)
        return FALSE;
    Loader l = {.doc = ub, .sc = scenario, .base_dir = "."};
    if (!scenario->sp)
        return tps_yaml_error(ub, ub->root, error,
                              "a userbuffers configuration needs sequence parallelism");
    if (!apply_ub_cfg(&l, ub, notes, error))
        return FALSE;
    scenario->has_overlap = TRUE;
    return TRUE;
}

static gboolean
load_overlap(Loader *l, GError **error)
{
    TpsScenario *sc = l->sc;
    const TpsYamlNode *o = l->overlap;

    if (o == NULL)
        return TRUE;
    if (!sc->sp) {
        TpsYamlNode *key = get_key_node(l->root, "overlap");
        return tps_yaml_error(l->doc, key != NULL ? key : o, error,
                              "overlap: needs sequence parallelism (parallel.sp: true): "
                              "comm+GEMM overlap splits the all-gathers and reduce-scatters "
                              "of SP (Megatron's --tp-comm-overlap requires "
                              "--sequence-parallel)");
    }
    const char *model_slots[TPS_GEMM_SLOT_COUNT + 1];
    memcpy(model_slots, tps_gemm_slot_names, TPS_GEMM_OP * sizeof model_slots[0]);
    model_slots[TPS_GEMM_OP] = "ub_cfg";
    model_slots[TPS_GEMM_OP + 1] = NULL;
    const char *const *slots = sc->is_op ? &tps_gemm_slot_names[TPS_GEMM_OP] : model_slots;
    if (!tps_yaml_check_keys(l->doc, o, "overlap", slots, error))
        return FALSE;

    /* A Transformer Engine userbuffers configuration first; the entries
     * written beside it replace its GEMMs'. */
    const TpsYamlNode *ub = get(o, "ub_cfg");
    if (ub != NULL && !load_ub_cfg_ref(l, ub, error))
        return FALSE;

    for (guint i = 0; o->keys != NULL && i < o->keys->len; i++) {
        const TpsYamlNode *key = g_ptr_array_index(o->keys, i);
        const TpsYamlNode *value = g_ptr_array_index(o->items, i);
        if (strcmp(key->value, "ub_cfg") == 0)
            continue;
        guint slot;
        for (slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++)
            if (strcmp(tps_gemm_slot_names[slot], key->value) == 0)
                break;
        g_assert(slot < TPS_GEMM_SLOT_COUNT); /* tps_yaml_check_keys passed */
        if (!load_overlap_entry(l, (TpsGemmSlot)slot, key, value, error))
            return FALSE;
    }

    /* Transformer Engine: a dgrad set to a method that splits a GEMM+RS
     * (pipeline, ring_exchange: a gemm_rs builder in the method table)
     * overlaps the dgrad's reduce-scatter instead of the bulk all-gather,
     * and drops the wgrad bulk overlap of that layer; configuring that wgrad
     * as well is an assertion failure there (initialize_ub). */
    static const TpsGemmSlot pairs[][2] = {
        {TPS_GEMM_QKV_DGRAD, TPS_GEMM_QKV_WGRAD},
        {TPS_GEMM_FC1_DGRAD, TPS_GEMM_FC1_WGRAD},
    };
    for (guint i = 0; i < G_N_ELEMENTS(pairs); i++) {
        const TpsOverlapConfig *dgrad = &sc->overlap[pairs[i][0]];
        const TpsOverlapConfig *wgrad = &sc->overlap[pairs[i][1]];
        const TpsMethodInfo *dgrad_method = tps_method_info(dgrad->method);
        if (dgrad->set && wgrad->set && dgrad_method->gemm_rs != NULL) {
            const char *wgrad_name = tps_gemm_slot_names[pairs[i][1]];
            return tps_yaml_error(l->doc, get_key_node(o, wgrad_name), error,
                                  "overlap.%s cannot be set when overlap.%s uses '%s': the "
                                  "dgrad then overlaps its reduce-scatter and the wgrad has "
                                  "none (Transformer Engine rejects it)",
                                  wgrad_name, tps_gemm_slot_names[pairs[i][0]], dgrad_method->name);
        }
    }
    sc->has_overlap = TRUE;
    return TRUE;
}

/* ---- megatron_args: ---- */

/* A scenario with megatron_args: is the sections the launch script sets
 * (io/input/megatron-args.h), with the file's own keys over them: a key written
 * in model:, training:, parallel: or overlap: replaces the script's value.
 * Returns the merged document, NULL with `error` set; `*merged_out` is
 * FALSE (and nothing allocated) when the scenario has no megatron_args:. */
static TpsYamlDoc *
merge_megatron(const TpsYamlDoc *doc, gboolean *merged_out, GError **error)
{
    *merged_out = FALSE;
    const TpsYamlNode *args = get(doc->root, "megatron_args");
    if (args == NULL)
        return NULL;
    *merged_out = TRUE;
    const char *text;
    if (!tps_yaml_string(doc, args, "megatron_args", &text, error))
        return NULL;
    TpsYamlNode *op = get_key_node(doc->root, "op");
    if (op != NULL) {
        tps_yaml_error(doc, op, error,
                       "op: and megatron_args: do not go together (a launch script describes "
                       "a transformer: model:)");
        return NULL;
    }
    /* The file's tp and pp replace the script's before it is mapped, so
     * that dp (the script's world over tp x pp), sp (at tp > 1 only) and the
     * vocabulary's padding follow them, as Megatron derives them. A value
     * that is no whole number is left to the loader's message. */
    TpsMegatronLayout layout = {0};
    const TpsYamlNode *parallel = get(doc->root, "parallel");
    if (parallel != NULL && parallel->type == TPS_YAML_MAP) {
        const TpsYamlNode *tp = get(parallel, "tp"), *pp = get(parallel, "pp");
        if (tp != NULL && tp->type == TPS_YAML_SCALAR)
            (void)g_ascii_string_to_unsigned(tp->value, 10, 1, TPS_SCENARIO_MAX_TP, &layout.tp,
                                             NULL);
        if (pp != NULL && pp->type == TPS_YAML_SCALAR)
            (void)g_ascii_string_to_unsigned(pp->value, 10, 1, TPS_SCENARIO_MAX_PP, &layout.pp,
                                             NULL);
    }
    /* Positions inside the value: past the opening quote on its line. */
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    TpsYamlNode *root = tps_megatron_args_parse_layout(doc->file, text, -1, args->line,
                                                       args->column + (args->plain ? 0 : 1),
                                                       &layout, notes, error);
    if (root == NULL)
        return NULL;
    tps_megatron_notes_print(notes);

    static const char *const sections[] = {"model", "training", "parallel", "overlap", NULL};
    const TpsYamlNode *file_root = doc->root;
    for (guint i = 0; i < file_root->keys->len; i++) {
        const TpsYamlNode *key = g_ptr_array_index(file_root->keys, i);
        const TpsYamlNode *value = g_ptr_array_index(file_root->items, i);
        if (strcmp(key->value, "megatron_args") == 0)
            continue;
        TpsYamlNode *mine = get(root, key->value);
        if (g_strv_contains(sections, key->value) && mine != NULL &&
            value->type == TPS_YAML_MAP && mine->type == TPS_YAML_MAP) {
            for (guint j = 0; j < value->keys->len; j++)
                tps_yaml_map_set(mine, tps_yaml_node_copy(g_ptr_array_index(value->keys, j)),
                                 tps_yaml_node_copy(g_ptr_array_index(value->items, j)));
            continue;
        }
        tps_yaml_map_set(root, tps_yaml_node_copy(key), tps_yaml_node_copy(value));
    }
    return tps_yaml_doc_new(doc->file, root);
}

/* ---- entry points ---- */

static gboolean load_doc_merged(const TpsYamlDoc *doc, const char *base_dir,
                                gboolean values_only, TpsScenario *scenario, GError **error);

static gboolean
load_doc(const TpsYamlDoc *doc, const char *base_dir, gboolean values_only,
         TpsScenario *scenario, GError **error)
{
    if (doc->root != NULL && doc->root->type == TPS_YAML_MAP) {
        gboolean merged;
        g_autoptr(TpsYamlDoc) with_args = merge_megatron(doc, &merged, error);
        if (merged)
            return with_args != NULL &&
                   load_doc_merged(with_args, base_dir, values_only, scenario, error);
    }
    return load_doc_merged(doc, base_dir, values_only, scenario, error);
}

static gboolean
load_doc_merged(const TpsYamlDoc *doc, const char *base_dir, gboolean values_only,
                TpsScenario *scenario, GError **error)
{
    Loader l = {.doc = doc, .sc = scenario, .base_dir = base_dir, .root = doc->root};

    if (doc->root == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s:1:1: the scenario is empty (it needs at least name:, hardware: and "
                    "model: or op:)",
                    doc->file);
        return FALSE;
    }
    if (!check_shape(&l, error))
        return FALSE;

    /* Values in the order of design.md. */
    if (!load_name(&l, error) || !load_hardware_ref(&l, error) ||
        !read_uint(&l, l.root, NULL, "seed", 0, G_MAXUINT64, &scenario->seed, error))
        return FALSE;
    if (scenario->is_op) {
        if (!load_op(&l, error) || !load_parallel(&l, error))
            return FALSE;
    } else {
        if (!load_model(&l, error) || !load_training(&l, error) || !load_parallel(&l, error) ||
            !check_fsdp_parallel(&l, error))
            return FALSE;
    }
    if (!load_strategies(&l, error))
        return FALSE;

    if (!values_only && !check_consistency(&l, error))
        return FALSE;

    if (!load_hardware(&l, error) || !load_overlap(&l, error))
        return FALSE;
    if (values_only)
        return TRUE;
    /* Again, with the hardware model and the overlap: entries: what the
     * simulation can represent depends on them (tps_scenario_validate()). */
    return check_consistency(&l, error);
}

gboolean
tps_scenario_file_load(const char *path, TpsScenario *scenario, GError **error)
{
    g_return_val_if_fail(path != NULL, FALSE);
    g_return_val_if_fail(scenario != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    tps_scenario_init(scenario);
    scenario->file = g_strdup(path);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_file(path, error);
    if (doc == NULL)
        return FALSE;
    g_autofree char *base_dir = g_path_get_dirname(path);
    return load_doc(doc, base_dir, FALSE, scenario, error);
}

gboolean
tps_scenario_file_load_string(const char *name, const char *text, gssize len, TpsScenario *scenario,
                              GError **error)
{
    g_return_val_if_fail(name != NULL, FALSE);
    g_return_val_if_fail(text != NULL || len == 0, FALSE);
    g_return_val_if_fail(scenario != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    tps_scenario_init(scenario);
    scenario->file = g_strdup(name);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string(name, text != NULL ? text : "", len, error);
    if (doc == NULL)
        return FALSE;
    return load_doc(doc, ".", FALSE, scenario, error);
}

gboolean
tps_scenario_file_load_doc(const TpsYamlDoc *doc, const char *base_dir, gboolean values_only,
                           TpsScenario *scenario, GError **error)
{
    g_return_val_if_fail(doc != NULL && scenario != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    tps_scenario_init(scenario);
    scenario->file = g_strdup(doc->file);
    return load_doc(doc, base_dir != NULL ? base_dir : ".", values_only, scenario, error);
}
