/* sched/fp8-recipe and the layer's FP8 kernels per model.fp8_recipe: the
 * bytes of each recipe's amax, scale and cast kernels, current scaling's
 * amax all-reduces over the TP group, the scale-inverse bytes kept.
 * Expected values derived by hand (the arithmetic in the comments). */
#include <check.h>

#include "test-util.h"
#include <string.h>

#include "cost/kernel-cost.h"
#include "io/input/model-file.h"
#include "io/input/scenario-file.h"
#include "sched/fp8-recipe.h"
#include "sched/layer.h"
#include "sched/pipeline.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* An operand of 256 x 1024 = 262,144 elements read in bf16, needing its
 * rowwise and columnwise copies. */
#define E 262144.0

typedef struct {
    TpsFp8Recipe recipe;
    gboolean weight;
    double amax, scale, cast, scale_inv;
} QuantCase;

static const QuantCase quant_cases[] = {
    /* Delayed: one cast, read 2 E, write E + E and two fp32 scale-inverses:
     * 4 E + 8 = 1,048,584. */
    {TPS_FP8_DELAYED, FALSE, 0.0, 0.0, 1048584.0, 8.0},
    /* Tensorwise: the amax kernel reads 2 E and writes 4: 524,292; the
     * scale kernel reads 4, writes 4 + 4: 12; the cast as delayed's. */
    {TPS_FP8_TENSORWISE, FALSE, 524292.0, 12.0, 1048584.0, 8.0},
    /* Blockwise 1x128: E / 128 = 2,048 fp32 scales a copy, 2 x 8,192 =
     * 16,384 bytes: 4 E + 16,384 = 1,064,960. */
    {TPS_FP8_BLOCKWISE, FALSE, 0.0, 0.0, 1064960.0, 16384.0},
    /* Blockwise 128x128 (a weight): E / 16,384 = 16 blocks, 2 x 64 = 128
     * bytes: 4 E + 128 = 1,048,704. */
    {TPS_FP8_BLOCKWISE, TRUE, 0.0, 0.0, 1048704.0, 128.0},
    /* MXFP8: E / 32 = 8,192 E8M0 bytes a copy, 16,384 for two: as
     * blockwise's 1x128 (4 bytes / 128 = 1 byte / 32). */
    {TPS_FP8_MXFP8, FALSE, 0.0, 0.0, 1064960.0, 16384.0},
};

START_TEST(test_quantize_bytes)
{
    const QuantCase *c = &quant_cases[_i];
    TpsFp8Quant q;
    tps_fp8_quantize(c->recipe, E, 2.0, TRUE, c->weight, &q);
    ck_assert_double_eq_tol(q.amax, c->amax, 1e-6);
    ck_assert_double_eq_tol(q.scale, c->scale, 1e-6);
    ck_assert_double_eq_tol(q.cast, c->cast, 1e-6);
    ck_assert_double_eq_tol(q.scale_inv, c->scale_inv, 1e-6);
    /* Rowwise only: one copy, 2 E + E + one copy's scales. */
    tps_fp8_quantize(c->recipe, E, 2.0, FALSE, c->weight, &q);
    ck_assert_double_eq_tol(q.cast, 3.0 * E + c->scale_inv / 2.0, 1e-6);
}
END_TEST

static void
load_text(const char *text, TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* hidden 1024, 16 heads, GeLU of 4096, tp 2 with SP, seq 512 (512
 * tokens, 256 a rank), 2 layers, on an H100. */
static void
small_layer(const char *recipe, TpsScenario *sc)
{
    g_autofree char *text =
        g_strdup_printf("name: f\nhardware: h100-sxm\nmodel: {hidden: 1024, heads: 16, layers: 2, "
                        "seq_len: 512, dtype: fp8%s%s}\nparallel: {tp: 2, sp: true}\n",
                        recipe ? ", fp8_recipe: " : "", recipe ? recipe : "");
    load_text(text, sc);
}

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

/* Rank 0's spans whose name ends in `suffix`. */
static guint
count_suffix(const TpsBuilder *b, const char *suffix)
{
    guint n = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b->engine); id++) {
        const TpsSpan *sp = tps_engine_span(b->engine, id);
        if (sp->rank == 0 && g_str_has_suffix(sp->name, suffix))
            n++;
    }
    return n;
}

typedef struct {
    const char *recipe;
    const char *name;
    double bytes; /* -1: the span must not exist */
} SpanCase;

/* T = 512 tokens, local 256, h 1024, h / t 512, f / t 2048, 3 h / t 1536. */
static const SpanCase span_cases[] = {
    /* Delayed (the default, as before): LayerNorm writes FP8, read 2 write
     * 1 over 256 x 1024; casts 4 bytes an element; no amax kernels. */
    {NULL, "l0.ln1", 3.0 * 256 * 1024},
    {NULL, "l0.proj_input_cast", 4.0 * 512 * 512},
    {NULL, "l0.proj_input_cast_amax", -1},
    {NULL, "l0.ln1_out_cast", -1},
    {"delayed", "l0.fc2_grad_cast", 4.0 * 512 * 1024},
    /* Tensorwise: the LayerNorm writes bf16 (read 2, write 2 over 256 x
     * 1024), then amax (2 x 262,144 + 4), scale 12, cast rowwise (3 x
     * 262,144 + 4) on the rank's tokens. */
    {"tensorwise", "l0.ln1", 4.0 * 256 * 1024},
    {"tensorwise", "l0.ln1_out_cast_amax", 2.0 * 256 * 1024 + 4.0},
    {"tensorwise", "l0.ln1_out_cast_scale", 12.0},
    {"tensorwise", "l0.ln1_out_cast", 3.0 * 256 * 1024 + 4.0},
    /* The projection input: amax 2 x 262,144 + 4, cast 4 x 262,144 + 8. */
    {"tensorwise", "l0.proj_input_cast_amax", 2.0 * 512 * 512 + 4.0},
    {"tensorwise", "l0.proj_input_cast", 4.0 * 512 * 512 + 8.0},
    {"tensorwise", "l0.qkv_grad_cast_amax", 2.0 * 512 * 1536 + 4.0},
    {"tensorwise", "l0.qkv_input_transpose", 2.0 * 512 * 1024},
    /* Blockwise: no amax kernel; the projection input's quantize 4 x
     * 262,144 + 2 x 4 x 262,144 / 128 = 1,048,576 + 16,384; the saved
     * LayerNorm output's transpose 2 x 524,288 + 4 x 524,288 / 128 =
     * 1,048,576 + 16,384. */
    {"blockwise", "l0.proj_input_cast_amax", -1},
    {"blockwise", "l0.proj_input_cast", 1048576.0 + 16384.0},
    {"blockwise", "l0.ln1_out_cast", 3.0 * 256 * 1024 + 4.0 * 256 * 1024 / 128},
    {"blockwise", "l0.qkv_input_transpose", 1048576.0 + 16384.0},
    {"blockwise", "l0.fc1_grad_cast", 4.0 * 512 * 2048 + 8.0 * 512 * 2048 / 128},
};

START_TEST(test_layer_spans)
{
    const SpanCase *c = &span_cases[_i];
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    small_layer(c->recipe, &sc);
    tps_builder_init(&b, &sc, tps_strategy_lookup("sp-blocking")->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    const TpsSpan *sp = find_span(&b, c->name);
    if (c->bytes < 0.0)
        ck_assert_msg(sp == NULL, "%s: %s exists", c->recipe, c->name);
    else {
        ck_assert_msg(sp != NULL, "%s: no span %s", c->recipe, c->name);
        ck_assert_double_eq_tol(sp->bytes, c->bytes, 1.0);
    }
    tps_builder_clear(&b);
}
END_TEST

typedef struct {
    const char *recipe;
    guint amax, scale, all_reduce;
} CountCase;

/* Per layer, forward and backward: 6 quantized tensors besides the two
 * transposes under tensorwise (the two LayerNorm outputs, the projection
 * and FC2 inputs, four output gradients: 8), each with an amax and a
 * scale kernel; the amax all-reduced over the TP group for the two
 * column-parallel SP inputs (the LayerNorm outputs) and the two
 * row-parallel output gradients (FC2's and the projection's): 4
 * all-reduces of 4 bytes. None under delayed (its amax history is not
 * reduced within the layer) nor blockwise (local block scales). */
static const CountCase count_cases[] = {
    {"delayed", 0, 0, 0},
    {"tensorwise", 8, 8, 4},
    {"blockwise", 0, 0, 0},
};

START_TEST(test_amax_reductions)
{
    const CountCase *c = &count_cases[_i];
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    small_layer(c->recipe, &sc);
    tps_builder_init(&b, &sc, tps_strategy_lookup("sp-blocking")->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert_uint_eq(count_suffix(&b, "_amax"), c->amax);
    ck_assert_uint_eq(count_suffix(&b, "_scale"), c->scale);
    ck_assert_uint_eq(b.coll_count[TPS_COLL_ALL_REDUCE], c->all_reduce);
    ck_assert_double_eq_tol(b.coll_bytes[TPS_COLL_ALL_REDUCE], 4.0 * c->all_reduce, 1e-9);
    tps_builder_clear(&b);
}
END_TEST

START_TEST(test_scale_memory)
{
    /* Kept activations, blockwise minus delayed: each FP8 copy's 1x128
     * scales, 4 / 128 = 1/32 byte an element. s b h = 512 x 1024 =
     * 524,288. The two LayerNorm outputs (one copy each, sharded over t =
     * 2 by SP): 2 x (1/32) / 2 = 1/32; the projection input (one
     * column-wise copy, over t): 1 / 32 / 2 = 1/64; FC2's input (one copy
     * of f / h = 4, over t): 4 / 32 / 2 = 1/16. Sum 7/64 x 524,288 =
     * 57,344 bytes. Tensorwise keeps what delayed keeps. */
    g_auto(TpsScenario) delayed = {0}, tensorwise = {0}, blockwise = {0};
    small_layer(NULL, &delayed);
    small_layer("tensorwise", &tensorwise);
    small_layer("blockwise", &blockwise);
    const double base = tps_layer_activation_bytes(&delayed);
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&blockwise) - base, 57344.0, 1e-6);
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&tensorwise), base, 1e-6);
    /* Weights: the FP8 copy and its transpose of 2 layers x 12 h^2 / t =
     * 12,582,912 GEMM parameters, each with 128x128 block scales: 2 x 4 x
     * 12,582,912 / 16,384 = 6,144 bytes more under blockwise. */
    TpsStageMemory d, t, bl;
    tps_pipeline_stage_memory(&delayed, 0, &d);
    tps_pipeline_stage_memory(&tensorwise, 0, &t);
    tps_pipeline_stage_memory(&blockwise, 0, &bl);
    ck_assert_double_eq_tol(bl.weights_grads - d.weights_grads, 6144.0, 1e-6);
    ck_assert_double_eq_tol(t.weights_grads, d.weights_grads, 1e-6);
}
END_TEST

/* GPU time of a memory-bound kernel of `bytes` alone on the H100. */
static TpsTime
memory_ns(const TpsHardware *hw, double bytes)
{
    TpsKernelCost cost;
    tps_cost_memory(hw, bytes, &cost);
    return MAX(tps_kernel_cost_solo_ns(hw, &cost, hw->sms), 1);
}

START_TEST(test_weight_casts)
{
    /* The once-per-step weight casts of 16 layers (hidden 8192, 64 heads,
     * GeLU of 4h, tp 8): per GPU, QKV 8192 x 24576 / 8 = 25,165,824, the
     * projection 8192^2 / 8 = 8,388,608, FC1 and FC2 8192 x 32768 / 8 =
     * 33,554,432 parameters. Delayed: one cast of 4 W; tensorwise: an
     * amax of 2 W + 4, a scale of 12 and a cast of 4 W + 8; blockwise: a
     * quantize of 4 W + 2 x 4 W / 16,384. The optimizer phase grows by
     * the stage's 16 layers of each difference (the casts are GPU-bound:
     * 47 launches of 3 us below the GPU time of each weight's casts). */
    static const double weights[4] = {25165824.0, 8388608.0, 33554432.0, 33554432.0};
    static const char *const recipes[3] = {"delayed", "tensorwise", "blockwise"};
    TpsStepResult r[3];
    const TpsPieceTimes pieces = {.layer_fwd = 1000000, .layer_bwd = 2000000};
    TpsScenario sc[3];
    for (guint i = 0; i < 3; i++) {
        g_autofree char *text = g_strdup_printf(
            "name: w\nhardware: h100-sxm\nmodel: {hidden: 8192, heads: 64, layers: 16, "
            "seq_len: 1024, dtype: fp8, fp8_recipe: %s}\n"
            "training: {micro_batch: 1, global_batch: 2}\nparallel: {tp: 8, sp: true}\n",
            recipes[i]);
        load_text(text, &sc[i]);
        ck_assert(tps_pipeline_simulate(&sc[i], &pieces, &r[i], NULL));
    }
    const TpsHardware *hw = &sc[0].hardware;
    TpsTime tensorwise = 0, blockwise = 0;
    for (guint w = 0; w < 4; w++) {
        const double W = weights[w];
        const TpsTime delayed = memory_ns(hw, 4.0 * W);
        tensorwise += 16 * (memory_ns(hw, 2.0 * W + 4.0) + memory_ns(hw, 12.0) +
                            memory_ns(hw, 4.0 * W + 8.0) - delayed);
        blockwise += 16 * (memory_ns(hw, 4.0 * W + 8.0 * W / 16384.0) - delayed);
    }
    ck_assert_int_eq(r[1].optimizer - r[0].optimizer, tensorwise);
    ck_assert_int_eq(r[2].optimizer - r[0].optimizer, blockwise);
    ck_assert(tensorwise > 0 && blockwise > 0);
    for (guint i = 0; i < 3; i++)
        tps_scenario_clear(&sc[i]);
}
END_TEST

START_TEST(test_cache_keyed_by_recipe)
{
    /* The pieces cache: the same layer under tensorwise is not delayed's
     * (its amax kernels and all-reduces make the forward longer), so a
     * shared cache misses twice. */
    g_autoptr(TpsSimCache) cache = tps_sim_cache_new();
    g_auto(TpsScenario) delayed = {0}, tensorwise = {0};
    small_layer(NULL, &delayed);
    small_layer("tensorwise", &tensorwise);
    const TpsStrategy *strategy = tps_strategy_lookup("sp-blocking");
    TpsResult a, b;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_simulate_cached(&delayed, strategy, cache, &a, NULL, &error), "%s",
                  error ? error->message : "");
    ck_assert_msg(tps_simulate_cached(&tensorwise, strategy, cache, &b, NULL, &error), "%s",
                  error ? error->message : "");
    guint64 hits, misses;
    tps_sim_cache_stats(cache, &hits, &misses);
    ck_assert_uint_eq(hits, 0);
    ck_assert_uint_eq(misses, 2);
    ck_assert(b.forward_ms > a.forward_ms);
}
END_TEST

/* MXFP8 runs on Blackwell: on b200 the recipe loads and its GEMMs run at
 * gpu.peak_tflops_mxfp8 (4500, the HGX B200 FP8 figure: 72 PFLOPS sparse
 * per 8 GPUs, dense half). With that rate halved in a what-if (2250) the
 * layer's FP8 GEMMs take longer, so the layer does; under delayed scaling
 * the same what-if changes nothing (its GEMMs run at gpu.peak_tflops_fp8).
 * The layer: hidden 8192, 64 heads, GeLU of 32768, seq 8192, tp 2 with SP:
 * QKV 8192 x 12288 x 8192 (1.65e12 FLOPs, 367 us at 4500 TFLOP/s), the
 * others as large, longer than their host issue (68 us a GEMM op). */
static double
blackwell_forward(const char *recipe, const char *hardware)
{
    g_autofree char *text = g_strdup_printf(
        "name: mx\nhardware: %s\nmodel: {hidden: 8192, heads: 64, layers: 2, seq_len: 8192, "
        "dtype: fp8, fp8_recipe: %s}\nparallel: {tp: 2, sp: true}\n",
        hardware, recipe);
    g_auto(TpsScenario) sc = {0};
    load_text(text, &sc);
    ck_assert_double_eq(tps_fp8_gemm_tflops(TPS_FP8_DELAYED, &sc.hardware), 4500.0);
    TpsResult r;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_simulate(&sc, tps_strategy_lookup("megatron"), &r, &error), "%s",
                  error ? error->message : "");
    return r.forward_ms + r.backward_ms;
}

START_TEST(test_mxfp8_on_blackwell)
{
    const char *halved = "{base: b200, gpu: {peak_tflops_mxfp8: 2250}}";
    TpsHardware hw = {0};
    ck_assert(tps_model_file_resolve("b200", NULL, &hw, NULL));
    ck_assert_double_eq(tps_fp8_gemm_tflops(TPS_FP8_MXFP8, &hw), 4500.0);
    tps_hardware_clear(&hw);
    const double mx = blackwell_forward("mxfp8", "b200");
    const double mx_halved = blackwell_forward("mxfp8", halved);
    ck_assert_msg(mx_halved > mx * 1.05, "mxfp8 at 2250: %g ms, at 4500: %g ms", mx_halved, mx);
    ck_assert_double_eq(blackwell_forward("delayed", halved), blackwell_forward("delayed", "b200"));
}
END_TEST

/* Refused where the key is: a recipe without FP8, MXFP8 on a model
 * without MXFP8 tensor cores (the H100), fp8_param_gather with a recipe
 * other than delayed. */
typedef struct {
    const char *model, *training, *where, *what;
} Refused;

static const Refused refused[] = {
    {"\n  fp8_recipe: tensorwise\n", "", "r:8:15: ", "needs model.dtype fp8"},
    {"\n  dtype: fp8\n  fp8_recipe: mxfp8\n", "",
     "r:9:15: ", "mxfp8 needs MXFP8 tensor cores (Blackwell), which h100-sxm"},
    {"\n  dtype: fp8\n  fp8_recipe: nvfp4\n", "", "r:9:15: ", "nvfp4"},
    {"\n  dtype: fp8\n  fp8_recipe: blockwise\n",
     "training: {distributed_optimizer: true, fp8_param_gather: true}\n",
     "r:10:", "fp8_recipe delayed only"},
};

START_TEST(test_refused)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf("name: r\nhardware: h100-sxm\nmodel:\n"
                                            "  hidden: 1024\n  heads: 16\n  layers: 2\n"
                                            "  seq_len: 512%s%s",
                                            refused[_i].model, refused[_i].training);
    ck_assert(!tps_scenario_file_load_string("r", text, -1, &sc, &error));
    ck_assert_msg(g_str_has_prefix(error->message, refused[_i].where) &&
                      strstr(error->message, refused[_i].what) != NULL,
                  "%s", error->message);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("fp8-recipe");
    TCase *tc = tcase_create("recipes");
    tcase_add_loop_test(tc, test_quantize_bytes, 0, G_N_ELEMENTS(quant_cases));
    tcase_add_loop_test(tc, test_layer_spans, 0, G_N_ELEMENTS(span_cases));
    tcase_add_loop_test(tc, test_amax_reductions, 0, G_N_ELEMENTS(count_cases));
    tcase_add_test(tc, test_scale_memory);
    tcase_add_test(tc, test_weight_casts);
    tcase_add_test(tc, test_cache_keyed_by_recipe);
    tcase_add_loop_test(tc, test_refused, 0, G_N_ELEMENTS(refused));
    tcase_add_test(tc, test_mxfp8_on_blackwell);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
