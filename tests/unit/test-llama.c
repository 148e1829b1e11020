/* Llama-class models: SwiGLU, grouped-query attention, RMSNorm, rotary
 * positions, no biases, untied output layer, FP8 GEMMs.
 *
 * Expected values are derived here by hand from the published model
 * shapes and Megatron's layer, not read back from the code under test. */
#include <check.h>

#include "scenario-util.h"
#include "test-util.h"
#include <math.h>
#include <string.h>

#include "cost/kernel-cost.h"
#include "io/input/scenario-file.h"
#include "sched/layer.h"
#include "sched/pipeline.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

static void
load_text(const char *text, TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* ---- parameter counts of the shipped scenarios ---- */

typedef struct {
    const char *file;
    double exact;     /* counted by hand below */
    double published; /* the model card's figure */
} ParamCase;

/* Per layer (hidden h, 64 or 32 query heads of 128, 8 K/V heads, SwiGLU of
 * f, RMSNorm, no biases):
 *   Q and the projection: 2 h^2; K and V: 2 h x 8 x 128; MLP: 3 h f; two
 *   RMSNorms: 2 h.
 * Llama-2-70B (h 8192, f 28672): 134217728 + 16777216 + 704643072 + 16384
 *   = 855654400 a layer, x 80 = 68452352000; word embedding and untied
 *   output layer 2 x 32000 x 8192 = 524288000; final RMSNorm 8192:
 *   68976648192 (published: 68.98 B, the 70B model card's "70B" class).
 * Llama-3-8B (h 4096, f 14336): 33554432 + 8388608 + 176160768 + 8192 =
 *   218112000, x 32 = 6979584000; 2 x 128256 x 4096 = 1050673152; 4096:
 *   8030261248 (published: 8.03 B).
 * Llama-3-70B: the Llama-2-70B layers 68452352000; 2 x 128256 x 8192 =
 *   2101346304; 8192: 70553706496 (published: 70.55 B).
 * Llama-3-405B (h 16384, 128 query heads, f 53248, 126 layers): Q and the
 *   projection 2 x 16384^2 = 536870912; K and V 2 x 16384 x 8 x 128 =
 *   33554432; MLP 3 x 16384 x 53248 = 2617245696; RMSNorms 32768: 3187703808
 *   a layer, x 126 = 401650679808; 2 x 128256 x 16384 = 4202692608; 16384:
 *   405853388800 (published: "405B"). */
static const ParamCase param_cases[] = {
    {"llama2-70b-tp8.yaml", 68976648192.0, 68.98e9},
    {"llama2-70b-pp4.yaml", 68976648192.0, 68.98e9},
    {"llama3-8b.yaml", 8030261248.0, 8.03e9},
    {"llama3-70b.yaml", 70553706496.0, 70.55e9},
    {"llama3-405b.yaml", 405853388800.0, 405e9},
};

START_TEST(test_params)
{
    const ParamCase *c = &param_cases[_i];
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario(c->file, &sc);
    const double params = tps_model_params(&sc);
    ck_assert_double_eq_tol(params, c->exact, 0.5);
    ck_assert_double_eq_tol(params / c->published, 1.0, 0.005);
    /* The stages' GPUs hold the model once (untied: no copy of the
     * embedding), but for the RMSNorms, replicated over tp: two a layer
     * and the final one, h each. */
    double sum = 0.0;
    for (guint s = 0; s < sc.pp; s++)
        sum += tps_stage_params(&sc, s) * sc.tp;
    const double replicated = (2.0 * sc.layers + 1.0) * sc.hidden;
    ck_assert_double_eq_tol(sum, c->exact + (sc.tp - 1.0) * replicated, 1.0);
}
END_TEST

/* ---- the graph of a SwiGLU / GQA layer ---- */

/* hidden 1024, 16 query heads of 64, 4 K/V heads, SwiGLU of 2816, tp 2 with
 * SP, 512 tokens, RMSNorm, rope, no biases (sp-blocking: whole GEMMs). */
static const char small_text[] = "name: s\nhardware: h100-sxm\n"
                                 "model: {hidden: 1024, heads: 16, kv_heads: 4, ffn_hidden: 2816,"
                                 " mlp: swiglu, norm: rmsnorm, position_embedding: rope,"
                                 " bias: false, tie_embeddings: false, layers: 2, seq_len: 512}\n"
                                 "parallel: {tp: 2, sp: true}\n";

typedef struct {
    const char *name;
    TpsTaskKind kind;
    double m, n, k; /* GEMMs: flops 2 m n k; memory kernels: bytes m x n x k */
} SpanCase;

/* T = 512 tokens, t = 2: QKV n = (16 + 2 x 4) x 64 / 2 = 768, k = 1024;
 * projection n = 1024, k = 16 x 64 / 2 = 512; FC1 (gate and up) n =
 * 2 x 2816 / 2 = 2816; FC2 k = 2816 / 2 = 1408. SwiGLU reads 2 x 1408 and
 * writes 1408 per token (3 x 2 bytes x 1408); backward reads 1408 + 2816,
 * writes 2816 (5 x 2 x 1408). The K copy for flash attention: read and
 * write 512 x 2 K/V heads x 64 x 2 bytes; rope on K the same. RMSNorm's
 * finalize: one fp32 partial dgamma per SM (1 x 4 x 1024 x 132). */
static const SpanCase span_cases[] = {
    {"l0.qkv_fprop", TPS_KIND_GEMM, 512, 768, 1024},
    {"l0.proj_fprop", TPS_KIND_GEMM, 512, 1024, 512},
    {"l0.fc1_fprop", TPS_KIND_GEMM, 512, 2816, 1024},
    {"l0.fc2_fprop", TPS_KIND_GEMM, 512, 1024, 1408},
    {"l0.qkv_dgrad", TPS_KIND_GEMM, 512, 1024, 768},
    {"l0.qkv_wgrad", TPS_KIND_GEMM, 1024, 768, 512},
    {"l0.fc1_dgrad", TPS_KIND_GEMM, 512, 1024, 2816},
    {"l0.fc2_dgrad", TPS_KIND_GEMM, 512, 1408, 1024},
    {"l0.swiglu", TPS_KIND_MEMORY, 3, 2, 512 * 1408},
    {"l0.swiglu_bwd", TPS_KIND_MEMORY, 5, 2, 512 * 1408},
    {"l0.attn_k_copy", TPS_KIND_MEMORY, 2, 2, 512 * 128},
    {"l0.attn_q_copy", TPS_KIND_MEMORY, 2, 2, 512 * 512},
    {"l0.rope_k", TPS_KIND_MEMORY, 2, 2, 512 * 128},
    {"l0.ln2_bwd_finalize", TPS_KIND_MEMORY, 4, 1024, 132},
};

static const TpsSpan *
find_span(const TpsBuilder *b, const char *name)
{
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b->engine); id++) {
        const TpsSpan *sp = tps_engine_span(b->engine, id);
        if (sp->rank == 0 && strcmp(sp->name, name) == 0)
            return sp;
    }
    return NULL;
}

START_TEST(test_layer_spans)
{
    const SpanCase *c = &span_cases[_i];
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    load_text(small_text, &sc);
    tps_builder_init(&b, &sc, tps_strategy_lookup("sp-blocking")->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    const TpsSpan *sp = find_span(&b, c->name);
    ck_assert_msg(sp != NULL, "no span %s", c->name);
    ck_assert_int_eq(sp->kind, c->kind);
    if (c->kind == TPS_KIND_GEMM)
        ck_assert_double_eq_tol(sp->flops, 2.0 * c->m * c->n * c->k, 1.0);
    else
        ck_assert_double_eq_tol(sp->bytes, c->m * c->n * c->k, 1.0);
    /* No biases: no bias-gradient kernels. */
    ck_assert_ptr_null(find_span(&b, "l0.fc1_bias_grad"));
    ck_assert_ptr_null(find_span(&b, "l0.proj_bias_grad"));
    tps_builder_clear(&b);
}
END_TEST

/* ---- memory deltas ---- */

/* GPT-like base: hidden 1024, 16 heads, ffn 4096, tp 2 with SP, 512
 * tokens, flash attention; each case changes one key and states how the
 * per-layer activations and the last stage's parameters move. */
typedef struct {
    const char *model; /* the changed keys */
    double activation; /* delta in bytes of s b h (sbh = 512 x 1024) */
    double last_stage; /* delta of the last stage's parameters per GPU */
} MemoryCase;

static const MemoryCase memory_cases[] = {
    /* K and V kept at 4 of 16 heads: 2 x 2 bytes x (1 - 1/4) / t = 1.5. */
    {"kv_heads: 4", -1.5,
     /* QKV's columns from 3 x 1024 to (16 + 8) x 64 = 1536: weights
      * 1024 x 1536 / 2 and biases 1536 / 2 fewer (4 layers). */
     -4.0 * (1024.0 * 768.0 + 768.0)},
    /* SwiGLU with ffn 4096: the kept FC1 output doubles (8 -> 16 bytes of
     * sbh, / t); the MLP gets a third matrix, 1024 x 4096 / 2, and FC1's
     * bias 4096 / 2 more (4 layers). */
    {"mlp: swiglu, ffn_hidden: 4096", 8.0 / 2.0, 4.0 * (1024.0 * 4096.0 / 2.0 + 4096.0 / 2.0)},
    /* RMSNorm: no mu kept, 4 bytes a token fewer per norm (2 a layer,
     * / t with SP): -2 x 4 / 1024 / 2 of sbh; no beta: h fewer per norm,
     * 2 a layer and the final one. */
    {"norm: rmsnorm", -2.0 * 4.0 / 1024.0 / 2.0, -(4.0 * 2.0 + 1.0) * 1024.0},
    /* Q and K LayerNorms: their inputs (Q and K, 16 x 64 / 1024 = 1 wide
     * each) 2 x (1 + 1) / t = 2, their mu and rsigma per head and token
     * 8 x (16 + 16) / 1024 / t = 0.125; gamma and beta of 64 each for Q
     * and K: 256 a layer, 4 layers. */
    {"qk_norm: true", 2.0 + 0.125, 4.0 * 256.0},
    /* head_dim 128 (16 heads): Q, K, V and the attention output twice as
     * wide, 2 more bytes of sbh each (/ t): 4; QKV 1024 x 6144 / 2 in
     * place of 1024 x 3072 / 2, its bias 3072 / 2 more, the projection
     * 2048 x 1024 / 2 in place of 1024 x 1024 / 2 (4 layers). */
    {"head_dim: 128", 4.0, 4.0 * (1024.0 * 3072.0 / 2.0 + 3072.0 / 2.0 + 1024.0 * 1024.0 / 2.0)},
    /* Untied, one stage: the output layer's own 51200 x 1024 / 2. */
    {"tie_embeddings: false", 0.0, 51200.0 * 1024.0 / 2.0},
    /* No biases: QKV 3072 / 2, FC1 4096 / 2, projection and FC2 1024 each,
     * 4 layers. */
    {"bias: false", 0.0, -4.0 * (3072.0 / 2.0 + 4096.0 / 2.0 + 2.0 * 1024.0)},
};

START_TEST(test_memory_delta)
{
    const MemoryCase *c = &memory_cases[_i];
    static const char base[] = "name: m\nhardware: h100-sxm\n"
                               "model: {hidden: 1024, heads: 16, layers: 4, seq_len: 512%s%s}\n"
                               "parallel: {tp: 2, sp: true}\n";
    g_autofree char *plain = g_strdup_printf(base, "", "");
    g_autofree char *changed = g_strdup_printf(base, ", ", c->model);
    g_auto(TpsScenario) a = {0};
    g_auto(TpsScenario) b = {0};
    load_text(plain, &a);
    load_text(changed, &b);
    const double sbh = 512.0 * 1024.0;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&b) - tps_layer_activation_bytes(&a),
                            c->activation * sbh, 1e-6);
    ck_assert_double_eq_tol(tps_stage_params(&b, 0) - tps_stage_params(&a, 0), c->last_stage,
                            1e-6);
}
END_TEST

/* ---- defaults ---- */

START_TEST(test_swiglu_default_ffn)
{
    /* Megatron: int((4 x 4096 x 2 / 3) / 64) x 64 = int(10922.67 / 64) x 64
     * = 170 x 64 = 10880; GeLU: 4 x 4096. */
    g_auto(TpsScenario) sc = {0};
    load_text("name: f\nhardware: h100-sxm\n"
              "model: {hidden: 4096, heads: 32, layers: 2, seq_len: 512, mlp: swiglu}\n",
              &sc);
    ck_assert_uint_eq(sc.ffn_hidden, 10880);
    ck_assert_uint_eq(tps_scenario_kv_heads(&sc), 32);
    ck_assert_uint_eq(tps_scenario_default_ffn_hidden(4096, TPS_MLP_GELU), 16384);
}
END_TEST

/* ---- FP8 ---- */

static void
h100(TpsHardware *hw)
{
    g_auto(TpsScenario) sc = {0};
    load_text("name: h\nhardware: h100-sxm\nmodel: {hidden: 1024, heads: 16, layers: 2, "
              "seq_len: 512}\n",
              &sc);
    tps_hardware_copy(hw, &sc.hardware);
}

START_TEST(test_fp8_gemm_rate)
{
    /* A large square GEMM is bound by the tensor cores: at the H100's
     * 1979 FP8 TFLOP/s against 989 bf16 with the same tiles it takes a
     * little more than 989 / 1979 = 0.4997 of the bf16 time (the kernel's
     * fixed latency does not halve), and less than 0.6. */
    TpsHardware hw = {0};
    h100(&hw);
    TpsKernelCost bf16, fp8;
    tps_cost_gemm(&hw, TPS_DTYPE_BF16, 8192, 8192, 8192, 0, &bf16);
    tps_cost_gemm(&hw, TPS_DTYPE_FP8, 8192, 8192, 8192, 0, &fp8);
    const double ratio = (double)tps_kernel_cost_solo_ns(&hw, &fp8, hw.sms) /
                         (double)tps_kernel_cost_solo_ns(&hw, &bf16, hw.sms);
    ck_assert_msg(ratio > 989.0 / 1979.0 && ratio < 0.6, "fp8 / bf16 time %.4f", ratio);
    /* Operands of one byte, the bf16 output of two: compulsory bytes
     * 2 x 8192^2 x 1 + 8192^2 x 2 = 4 x 8192^2 at least, against 6 x in
     * bf16. */
    ck_assert(fp8.hbm_bytes < bf16.hbm_bytes);
    ck_assert(fp8.hbm_bytes >= 4.0 * 8192.0 * 8192.0);
    tps_hardware_clear(&hw);
}
END_TEST

/* TE's cast kernels in an fp8 layer: hidden 1024, 16 heads, tp 2 with SP,
 * 512 tokens (local 256), GeLU of 4096. Casts read 2 bytes and write 1 + 1
 * (the FP8 copy and its transpose); the transposes of the saved FP8
 * LayerNorm outputs read 1 and write 1 over all 512 tokens; the LayerNorm
 * writes 1 byte. */
static const SpanCase fp8_cases[] = {
    {"l0.proj_input_cast", TPS_KIND_MEMORY, 4, 512, 512},  /* T x h / t */
    {"l0.fc2_input_cast", TPS_KIND_MEMORY, 4, 512, 2048},  /* T x f / t */
    {"l0.fc2_grad_cast", TPS_KIND_MEMORY, 4, 512, 1024},   /* T x h */
    {"l0.proj_grad_cast", TPS_KIND_MEMORY, 4, 512, 1024},  /* T x h */
    {"l0.fc1_grad_cast", TPS_KIND_MEMORY, 4, 512, 2048},   /* T x f / t */
    {"l0.qkv_grad_cast", TPS_KIND_MEMORY, 4, 512, 1536},   /* T x 3 h / t */
    {"l0.qkv_input_transpose", TPS_KIND_MEMORY, 2, 512, 1024},
    {"l0.fc1_input_transpose", TPS_KIND_MEMORY, 2, 512, 1024},
    {"l0.ln1", TPS_KIND_MEMORY, 3, 256, 1024},
    {"l0.qkv_fprop", TPS_KIND_GEMM, 512, 1536, 1024},
};

START_TEST(test_fp8_layer)
{
    const SpanCase *c = &fp8_cases[_i];
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    load_text("name: f\nhardware: h100-sxm\nmodel: {hidden: 1024, heads: 16, layers: 2, "
              "seq_len: 512, dtype: fp8}\nparallel: {tp: 2, sp: true}\n",
              &sc);
    tps_builder_init(&b, &sc, tps_strategy_lookup("sp-blocking")->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    const TpsSpan *sp = find_span(&b, c->name);
    ck_assert_msg(sp != NULL, "no span %s", c->name);
    if (c->kind == TPS_KIND_GEMM)
        ck_assert_double_eq_tol(sp->flops, 2.0 * c->m * c->n * c->k, 1.0);
    else
        ck_assert_double_eq_tol(sp->bytes, c->m * c->n * c->k, 1.0);
    tps_builder_clear(&b);

    /* In bf16 none of the casts exist. */
    g_auto(TpsScenario) plain = {0};
    load_text("name: f\nhardware: h100-sxm\nmodel: {hidden: 1024, heads: 16, layers: 2, "
              "seq_len: 512}\nparallel: {tp: 2, sp: true}\n",
              &plain);
    tps_builder_init(&b, &plain, tps_strategy_lookup("sp-blocking")->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert_ptr_null(find_span(&b, "l0.proj_input_cast"));
    ck_assert_ptr_null(find_span(&b, "l0.qkv_grad_cast"));
    tps_builder_clear(&b);
}
END_TEST

START_TEST(test_fp8_all_gathers)
{
    /* Same layer, sp-blocking: six all-gathers a layer. QKV's and FC1's
     * LayerNorm outputs are gathered in FP8, forward and again for wgrad
     * (4 x T h x 1 byte); the projection's and FC2's incoming gradients in
     * bf16 (2 x T h x 2): 8 T h, against 12 T h in bf16. */
    static const char *const dtypes[2] = {"bf16", "fp8"};
    static const double expect[2] = {12.0, 8.0};
    for (guint i = 0; i < 2; i++) {
        g_autofree char *text =
            g_strdup_printf("name: f\nhardware: h100-sxm\nmodel: {hidden: 1024, heads: 16, "
                            "layers: 2, seq_len: 512, dtype: %s}\nparallel: {tp: 2, sp: true}\n",
                            dtypes[i]);
        g_auto(TpsScenario) sc = {0};
        TpsBuilder b;
        load_text(text, &sc);
        tps_builder_init(&b, &sc, tps_strategy_lookup("sp-blocking")->id);
        tps_layer_forward(&b, 0);
        tps_layer_backward(&b, 0);
        ck_assert_uint_eq(b.coll_count[TPS_COLL_ALL_GATHER], 6);
        ck_assert_double_eq_tol(b.coll_bytes[TPS_COLL_ALL_GATHER], expect[i] * 512.0 * 1024.0,
                                1.0);
        /* Reduce-scatters stay bf16: four of T h x 2 bytes. */
        ck_assert_double_eq_tol(b.coll_bytes[TPS_COLL_REDUCE_SCATTER], 8.0 * 512.0 * 1024.0, 1.0);
        tps_builder_clear(&b);
    }
}
END_TEST

START_TEST(test_fp8_memory)
{
    /* hidden 1024, 16 heads, ffn 4096, 4 layers, tp 2 with SP, 512 tokens.
     * Weights: the FP8 copy and transpose of each GEMM weight, 2 bytes x
     * (4 h^2 + 2 h f) / t = 2 x 12582912 / 2 per layer, 4 layers.
     * Activations (bytes of sbh a layer): the two FP8 LayerNorm outputs
     * 1 byte less each (replicated, / t with SP), the projection input's
     * column-wise FP8 copy 1 more beside the bf16 attention output
     * flash attention keeps (/ t), FC2's input one FP8 byte for two
     * (f / h = 4 elements of sbh, / t): -2/2 + 1/2 - 4/2 = -2.5. */
    static const char base[] = "name: m\nhardware: h100-sxm\n"
                               "model: {hidden: 1024, heads: 16, layers: 4, seq_len: 512%s}\n"
                               "parallel: {tp: 2, sp: true}\n";
    g_autofree char *plain = g_strdup_printf(base, "");
    g_autofree char *fp8 = g_strdup_printf(base, ", dtype: fp8");
    g_auto(TpsScenario) a = {0};
    g_auto(TpsScenario) b = {0};
    load_text(plain, &a);
    load_text(fp8, &b);
    TpsStageMemory ma, mb;
    tps_pipeline_stage_memory(&a, 0, &ma);
    tps_pipeline_stage_memory(&b, 0, &mb);
    ck_assert_double_eq_tol(mb.weights_grads - ma.weights_grads,
                            4.0 * 2.0 * (4.0 * 1024 * 1024 + 2.0 * 1024 * 4096) / 2.0, 1e-3);
    ck_assert_double_eq_tol(mb.optimizer, ma.optimizer, 1e-3);
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&b) - tps_layer_activation_bytes(&a),
                            -2.5 * 512.0 * 1024.0, 1e-3);
    /* The per-tensor list (inputs, statistics, outputs of the two norms,
     * two masks; Q, K, V, the projection input, the logsumexp, the GeLU
     * input, FC2's input): the LayerNorm outputs 1 byte of sbh / t, the
     * projection input 3 / t, FC2's input 4 / t. */
    double ta[TPS_LAYER_MAX_TENSORS], tb[TPS_LAYER_MAX_TENSORS];
    const guint na = tps_layer_activation_tensors(&a, ta);
    const guint nb = tps_layer_activation_tensors(&b, tb);
    ck_assert_uint_eq(na, nb);
    const double sbh = 512.0 * 1024.0;
    ck_assert_double_eq_tol(tb[4], sbh / 2.0, 1e-6);
    ck_assert_double_eq_tol(tb[5], sbh / 2.0, 1e-6);
    ck_assert_double_eq_tol(tb[11], 3.0 * sbh / 2.0, 1e-6);
    ck_assert_double_eq_tol(ta[11], 2.0 * sbh / 2.0, 1e-6);
    ck_assert_double_eq_tol(tb[14], 4.0 * sbh / 2.0, 1e-6);
    ck_assert_double_eq_tol(ta[14], 8.0 * sbh / 2.0, 1e-6);
    /* Selective recompute (core attention checkpointed) under fp8: the
     * bf16 attention output is the checkpoint's output, re-made in the
     * backward, and the logsumexp with it; the projection's FP8 copy
     * stays: 2 + 4 x 16 / 1024 bytes of sbh fewer (/ t), a tensor fewer.
     * In bf16 the projection keeps the output itself: only the
     * logsumexp goes. */
    const double fp8_all = tps_layer_activation_bytes(&b),
                 bf16_all = tps_layer_activation_bytes(&a);
    b.recompute = TPS_RECOMPUTE_SELECTIVE;
    a.recompute = TPS_RECOMPUTE_SELECTIVE;
    ck_assert_double_eq_tol(fp8_all - tps_layer_activation_bytes(&b),
                            (2.0 + 4.0 * 16.0 / 1024.0) * sbh / 2.0, 1e-6);
    ck_assert_double_eq_tol(bf16_all - tps_layer_activation_bytes(&a),
                            4.0 * 16.0 / 1024.0 * sbh / 2.0, 1e-6);
    ck_assert_uint_eq(tps_layer_activation_tensors(&b, tb), nb - 1);
}
END_TEST

/* ---- multi-head latent attention ----
 *
 * DeepSeek-V3's attention (config.json: hidden 7168, 128 heads,
 * q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128,
 * qk_rope_head_dim 64, v_head_dim 128) in one dense SwiGLU layer of 18432,
 * RMSNorm, no biases, 512 tokens; Megatron's defaults give qk_head_dim 128,
 * qk_pos_emb_head_dim 64, v_head_dim 128. */
static const char mla_text[] = "name: m\nhardware: h100-sxm\nmodel:\n  hidden: 7168\n  heads: 128\n"
                               "  ffn_hidden: 18432\n  mlp: swiglu\n  norm: rmsnorm\n"
                               "  position_embedding: rope\n  bias: false\n  layers: 1\n"
                               "  seq_len: 512\n  vocab: 1024\n  multi_latent_attention: true\n"
                               "  q_lora_rank: %s\n  kv_lora_rank: 512\n  qk_norm: true\n"
                               "parallel: {tp: %s, sp: true}\n";

static void
load_mla(const char *q_lora_rank, const char *tp, TpsScenario *sc)
{
    g_autofree char *text = g_strdup_printf(mla_text, q_lora_rank, tp);
    load_text(text, sc);
}

/* At tp 2 with SP: T = 512 tokens, 256 on the rank, 64 heads on the rank.
 * Down projections (whole weights, the rank's tokens): Q [256 x 7168] x
 * [7168 x 1536], KV to 512 + 64 = 576. Up projections (column-parallel on
 * the gathered latent): Q to 64 x (128 + 64) = 12288 from 1536, KV to
 * 64 x (128 + 128) = 16384 from 512. Projection from 64 x 128 = 8192.
 * Backward: the up projections' dgrad [512, latent] and wgrad [latent, n]
 * over 512 tokens, the down projections' over 256. Memory kernels (bf16):
 * the Q copy reads and writes 512 x 64 x 192, the V copy 512 x 64 x 128,
 * the rotary K 512 tokens x 64 channels (one head), the Q latent's norm
 * 256 x 1536 (read, write), its backward (read two, write one) the KV
 * latent's 256 x 512. Flash attention (no causal mask): 4 s^2 d FLOPs a
 * head with Q K^T at 192 and P V at 128, 2 s^2 (192 + 128) = 4 s^2 x 160,
 * 64 heads; backward 2.5 times that. Without a Q latent (q_lora_rank 0),
 * the column-parallel Q projection [512 x 7168] x [7168 x 12288]. */
static const SpanCase mla_cases[] = {
    {"l0.q_down_fprop", TPS_KIND_GEMM, 256, 1536, 7168},
    {"l0.kv_down_fprop", TPS_KIND_GEMM, 256, 576, 7168},
    {"l0.q_up_fprop", TPS_KIND_GEMM, 512, 12288, 1536},
    {"l0.kv_up_fprop", TPS_KIND_GEMM, 512, 16384, 512},
    {"l0.proj_fprop", TPS_KIND_GEMM, 512, 7168, 8192},
    {"l0.proj_dgrad", TPS_KIND_GEMM, 512, 8192, 7168},
    {"l0.q_up_dgrad", TPS_KIND_GEMM, 512, 1536, 12288},
    {"l0.q_up_wgrad", TPS_KIND_GEMM, 1536, 12288, 512},
    {"l0.kv_up_dgrad", TPS_KIND_GEMM, 512, 512, 16384},
    {"l0.kv_up_wgrad", TPS_KIND_GEMM, 512, 16384, 512},
    {"l0.kv_down_dgrad", TPS_KIND_GEMM, 256, 7168, 576},
    {"l0.kv_down_wgrad", TPS_KIND_GEMM, 7168, 576, 256},
    {"l0.q_down_dgrad", TPS_KIND_GEMM, 256, 7168, 1536},
    {"l0.q_down_wgrad", TPS_KIND_GEMM, 7168, 1536, 256},
    {"l0.attn_q_copy", TPS_KIND_MEMORY, 2, 2, 512 * 64 * 192},
    {"l0.attn_v_copy", TPS_KIND_MEMORY, 2, 2, 512 * 64 * 128},
    {"l0.rope_k", TPS_KIND_MEMORY, 2, 2, 512 * 64},
    {"l0.q_norm", TPS_KIND_MEMORY, 2, 2, 256 * 1536},
    {"l0.kv_norm_bwd", TPS_KIND_MEMORY, 3, 2, 256 * 512},
    {"l0.attn_fwd", TPS_KIND_ATTENTION, 4.0 * 512 * 512, 64, 160},
    {"l0.attn_bwd", TPS_KIND_ATTENTION, 2.5 * 4.0 * 512 * 512, 64, 160},
    {"l0.q_fprop", TPS_KIND_GEMM, 512, 12288, 7168}, /* q_lora_rank 0 */
};

START_TEST(test_mla_spans)
{
    const SpanCase *c = &mla_cases[_i];
    const gboolean no_q_latent = strcmp(c->name, "l0.q_fprop") == 0;
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    load_mla(no_q_latent ? "0" : "1536", "2", &sc);
    tps_builder_init(&b, &sc, tps_strategy_lookup("sp-blocking")->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    const TpsSpan *sp = find_span(&b, c->name);
    ck_assert_msg(sp != NULL, "no span %s", c->name);
    ck_assert_int_eq(sp->kind, c->kind);
    if (c->kind == TPS_KIND_MEMORY)
        ck_assert_double_eq_tol(sp->bytes, c->m * c->n * c->k, 1.0);
    else if (c->kind == TPS_KIND_GEMM)
        ck_assert_double_eq_tol(sp->flops, 2.0 * c->m * c->n * c->k, 1.0);
    else
        ck_assert_double_eq_tol(sp->flops, c->m * c->n * c->k, 1.0);
    /* No full-rank QKV, no Q latent without q_lora_rank. */
    ck_assert_ptr_null(find_span(&b, "l0.qkv_fprop"));
    if (no_q_latent)
        ck_assert_ptr_null(find_span(&b, "l0.q_down_fprop"));
    tps_builder_clear(&b);
}
END_TEST

/* One MLA layer's weights, DeepSeek-V3's (its ~187M a layer):
 *   Q down 7168 x 1536 = 11010048, Q up 1536 x 128 x 192 = 37748736,
 *   KV down 7168 x 576 = 4128768, KV up 512 x 128 x 256 = 16777216,
 *   projection 128 x 128 x 7168 = 117440512: 187105280; the latents'
 *   RMSNorms 1536 + 512 = 2048.
 * The layer at tp 1: + SwiGLU 3 x 7168 x 18432 = 396361728 + two RMSNorms
 *   2 x 7168 = 14336: 583483392.
 * At tp 2: the down projections whole (15138816), the rest halved
 *   (171966464 / 2 = 85983232), the MLP halved (198180864), the norms
 *   whole (2048 + 14336): 299319296.
 * Model FLOPs of a step (one sequence of 512, vocab 1024), per token
 * forward: the attention GEMMs 2 x 187105280 = 374210560, the MLP 2 x
 * 396361728 = 792723456, Q K^T and P V 2 x 512 x 128 x (192 + 128) =
 * 41943040, the logits 2 x 7168 x 1024 = 14680064: 1223557120; x 3
 * (backward) x 512 tokens = 1879383736320. */
START_TEST(test_mla_params_flops)
{
    g_auto(TpsScenario) one = {0};
    g_auto(TpsScenario) two = {0};
    load_mla("1536", "1", &one);
    load_mla("1536", "2", &two);
    ck_assert_double_eq_tol(tps_layer_params_per_gpu(&one), 583483392.0, 0.5);
    ck_assert_double_eq_tol(tps_layer_params_per_gpu(&two), 299319296.0, 0.5);
    ck_assert_double_eq_tol(tps_model_flops_per_iteration(&one), 1879383736320.0, 1.0);
    ck_assert_double_eq_tol(tps_model_flops_per_iteration(&two), 1879383736320.0, 1.0);
}
END_TEST

/* Activations of the MLA layer at tp 2 with SP (no recompute), in bytes
 * of s b h = 512 x 7168, over t = 2 (with SP everything but the
 * attention's Q, K, V, O is on the rank's 256 tokens):
 *   norms, masks: inputs 2 + 2, RMSNorm statistics 4 / h each, outputs
 *     2 + 2, dropout masks 1 + 1: 10 + 8 / h;
 *   latents: Q's up projection input and norm input 2 x 1536 each and
 *     the norm's statistics 4, KV's 2 x 512 each and 4: 8200 / h;
 *   attention: Q and K 2 x 128 x 192 each, V and O 2 x 128 x 128 each,
 *     the logsumexp 4 x 128: 164352 / h;
 *   MLP: SwiGLU's input 4 x 18432, FC2's input 2 x 18432: 110592 / h.
 * (10 + 283152 / 7168) / 2 x 3670016 = 18350080 + 72486912 = 90836992. */
START_TEST(test_mla_activations)
{
    g_auto(TpsScenario) sc = {0};
    load_mla("1536", "2", &sc);
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), 90836992.0, 1.0);
}
END_TEST

/* ---- located errors ---- */

typedef struct {
    const char *text;
    const char *message; /* the whole "FILE:LINE:COLUMN: message" prefix */
} ErrorCase;

static const ErrorCase error_cases[] = {
    /* Multi-head latent attention: its sizes without it, a head size it
     * does not have, learned positions, context parallelism. */
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  q_lora_rank: 256\n",
     "t.yaml:8:16: model.q_lora_rank needs model.multi_latent_attention: true"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  multi_latent_attention: true\n  head_dim: 128\n",
     "t.yaml:9:13: model.head_dim does not apply to multi-head latent attention"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  multi_latent_attention: true\n",
     "t.yaml:8:27: multi-head latent attention needs model.position_embedding: rope"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  multi_latent_attention: true\n  position_embedding: rope\n"
     "  bias: false\nparallel:\n  cp: 2\n  dp: 1\n",
     "t.yaml:12:7: multi-head latent attention with context parallelism"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  multi_latent_attention: true\n  position_embedding: rope\n",
     "t.yaml:8:27: multi-head latent attention with model.bias: true is not modelled"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  kv_heads: 6\n"
     "  layers: 2\n  seq_len: 512\n",
     "t.yaml:6:13: model.heads (16) must be divisible by model.kv_heads (6)"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  kv_heads: 4\n"
     "  layers: 2\n  seq_len: 512\nparallel:\n  tp: 8\n",
     "t.yaml:6:13: model.kv_heads (4) must be divisible by parallel.tp (8): Megatron splits"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  kv_heads: 32\n"
     "  layers: 2\n  seq_len: 512\n",
     "t.yaml:6:13: model.kv_heads (32) is more than model.heads (16)"},
    {"name: e\nhardware: a100-sxm4-80gb\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  dtype: fp8\n",
     "t.yaml:8:10: model.dtype fp8 needs FP8 tensor cores, which a100-sxm4-80gb"},
    {"name: e\nhardware: a100-sxm4-80gb\nop:\n  kind: ag_gemm\n  m: 1024\n  n: 1024\n"
     "  k: 1024\n  dtype: fp8\nparallel:\n  tp: 2\n",
     "t.yaml:8:10: op.dtype fp8 needs FP8 tensor cores"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  mlp: geglu\n",
     "t.yaml:8:8: 'model.mlp' is 'geglu'"},
    {"name: e\nhardware: h100-sxm\nmodel:\n  hidden: 1024\n  heads: 16\n  layers: 2\n"
     "  seq_len: 512\n  norm: RMSNorm\n",
     "t.yaml:8:9: 'model.norm' is 'RMSNorm'"},
};

START_TEST(test_errors)
{
    const ErrorCase *c = &error_cases[_i];
    g_autoptr(GError) error = NULL;
    g_auto(TpsScenario) sc = {0};
    ck_assert(!tps_scenario_file_load_string("t.yaml", c->text, -1, &sc, &error));
    ck_assert_ptr_nonnull(error);
    ck_assert_msg(g_str_has_prefix(error->message, c->message), "got '%s', expected '%s...'",
                  error->message, c->message);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("llama");
    TCase *tc = tcase_create("llama");
    tcase_add_loop_test(tc, test_params, 0, G_N_ELEMENTS(param_cases));
    tcase_add_loop_test(tc, test_layer_spans, 0, G_N_ELEMENTS(span_cases));
    tcase_add_loop_test(tc, test_memory_delta, 0, G_N_ELEMENTS(memory_cases));
    tcase_add_test(tc, test_swiglu_default_ffn);
    tcase_add_loop_test(tc, test_errors, 0, G_N_ELEMENTS(error_cases));
    tcase_add_loop_test(tc, test_mla_spans, 0, G_N_ELEMENTS(mla_cases));
    tcase_add_test(tc, test_mla_params_flops);
    tcase_add_test(tc, test_mla_activations);
    tcase_add_test(tc, test_fp8_gemm_rate);
    tcase_add_loop_test(tc, test_fp8_layer, 0, G_N_ELEMENTS(fp8_cases));
    tcase_add_test(tc, test_fp8_all_gathers);
    tcase_add_test(tc, test_fp8_memory);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
