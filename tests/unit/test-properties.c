/* Properties over the accepted input space (issue 13, "No arithmetic
 * surprises"): scenarios drawn at random (seeded, so a failure reproduces)
 * inside the ranges the loader accepts, loaded through it (what it rejects
 * is skipped and counted), simulated under one preset that applies, and
 * checked for what must hold whatever the numbers:
 *
 *  - every figure finite, times and memory positive, fractions in [0, 1];
 *  - MFU <= HFU <= 1, also on a hardware model with perfect GEMM tiles
 *    (efficiency 1, no prologue), where nothing but the physics keeps it
 *    there;
 *  - exposed communication within the communication, memory parts summing
 *    to the total;
 *  - monotone where physics says so: one more layer per stage, or twice
 *    the micro-batches, is never faster and never needs less memory;
 *  - op scenarios: finite times, the blocking strategy's efficiency 0, and
 *    an efficiency above 1 only where the overlapped op beat its unsplit
 *    GEMM (Flux's definition: 1 - (time - gemm) / (blocking - gemm)).
 */
#include <check.h>

#include "test-util.h"
#include <math.h>
#include <string.h>

#include "io/input/scenario-file.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

#define SEED 20240613
#define MODEL_SCENARIOS 240
#define OP_SCENARIOS 60

static const char *const models[] = {"a100-sxm4-80gb", "a100-sxm4-40gb", "h100-sxm"};

static guint
pick(GRand *rng, const guint *values, guint n)
{
    return values[g_rand_int_range(rng, 0, (gint32)n)];
}

#define PICK(rng, ...)                                                                             \
    pick(rng, (const guint[]){__VA_ARGS__}, sizeof((const guint[]){__VA_ARGS__}) / sizeof(guint))

/* A model scenario drawn at random; FALSE when the loader rejects it. */
static gboolean
draw_model(GRand *rng, TpsScenario *sc, char **text_out)
{
    const guint tp = PICK(rng, 1, 2, 4, 8);
    const gboolean sp = tp > 1 && g_rand_boolean(rng);
    const guint heads = tp * PICK(rng, 1, 2, 3, 4, 8, 16);
    const guint head_dim = PICK(rng, 8, 32, 64, 128, 256);
    const guint hidden = heads * head_dim;
    const guint ffn = tp * PICK(rng, 1, 3, 64, 1024, 4096) * (hidden / tp > 0 ? 1 : 1);
    const guint pp = PICK(rng, 1, 1, 2, 3, 4);
    const guint vpp = pp > 1 ? PICK(rng, 1, 1, 2) : 1;
    const guint layers = pp * vpp * PICK(rng, 1, 2, 3, 5);
    /* Now and then the far end of the ranges, where the loader's
     * representability rules start to refuse. */
    const gboolean far = g_rand_int_range(rng, 0, 8) == 0;
    const guint seq = (sp ? tp : 1) * (far ? PICK(rng, 65536, 1u << 20, 1u << 21)
                                           : PICK(rng, 1, 16, 128, 512, 1024, 4096));
    const guint micro_batch = far ? PICK(rng, 64, 1024, 65536) : PICK(rng, 1, 1, 2, 4);
    const guint dp = PICK(rng, 1, 1, 2, 4, 16);
    const guint micro = (vpp > 1 ? pp : 1) * (far ? PICK(rng, 1u << 16, 1u << 20, 1u << 24)
                                                  : PICK(rng, 1, 2, 3, 8, 64, 1000));
    static const char *const recompute[] = {"none", "selective", "full"};
    static const char *const attention[] = {"flash", "unfused"};
    g_autofree char *text = g_strdup_printf(
        "name: drawn\nhardware: %s\n"
        "model: {hidden: %u, heads: %u, ffn_hidden: %u, layers: %u, seq_len: %u, vocab: %u, "
        "attention: %s}\n"
        "training: {micro_batch: %u, global_batch: %" G_GUINT64_FORMAT ", recompute: %s, "
        "distributed_optimizer: %s, overlap_grad_reduce: %s}\n"
        "parallel: {tp: %u, sp: %s, pp: %u, vpp: %u, dp: %u}\n",
        models[g_rand_int_range(rng, 0, G_N_ELEMENTS(models))], hidden, heads, ffn, layers, seq,
        PICK(rng, 1000, 32000, 51200, 128256), attention[g_rand_int_range(rng, 0, 2)], micro_batch,
        (guint64)micro * micro_batch * dp, recompute[g_rand_int_range(rng, 0, 3)],
        g_rand_boolean(rng) ? "true" : "false", g_rand_boolean(rng) ? "true" : "false", tp,
        sp ? "true" : "false", pp, vpp, dp);
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_scenario_file_load_string("drawn", text, -1, sc, &error);
    if (!ok)
        tps_scenario_clear(sc);
    if (text_out != NULL)
        *text_out = g_steal_pointer(&text);
    return ok;
}

/* Perfect GEMM tiles: nothing but launches, waves and the rest of the
 * step keeps the MFU below 1. */
static void
perfect_tiles(TpsHardware *hw)
{
    for (guint i = 0; i < hw->n_tiles; i++)
        hw->tiles[i].efficiency = 1.0;
    hw->k_overhead = 0.0;
    hw->flash_fwd_efficiency = 1.0;
    hw->flash_bwd_efficiency = 1.0;
}

#define FINITE_POSITIVE(x) (isfinite(x) && (x) > 0.0)
#define FINITE_NONNEGATIVE(x) (isfinite(x) && (x) >= 0.0)

static void
check_model_result(const TpsScenario *sc, const TpsResult *r, const char *text)
{
    const double eps = 1e-9;
    ck_assert_msg(FINITE_POSITIVE(r->step_time_s), "step %g\n%s", r->step_time_s, text);
    ck_assert_msg(FINITE_POSITIVE(r->forward_ms) && FINITE_POSITIVE(r->backward_ms), "%s", text);
    ck_assert_msg(FINITE_NONNEGATIVE(r->exposed_comm_ms) && FINITE_NONNEGATIVE(r->tp_comm_ms), "%s",
                  text);
    ck_assert_msg(r->exposed_comm_ms <= r->tp_comm_ms + 1e-6, "exposed %g > comm %g\n%s",
                  r->exposed_comm_ms, r->tp_comm_ms, text);
    /* Of the dense BF16 peak, also under fp8: no more than the fastest
     * dtype's peak over it (2 where FP8 runs at twice BF16's rate). */
    const TpsHardware *hw = &sc->hardware;
    const double ceiling = MAX(hw->peak_tflops[sc->dtype], hw->peak_tflops[TPS_DTYPE_BF16]) /
                           hw->peak_tflops[TPS_DTYPE_BF16];
    ck_assert_msg(FINITE_POSITIVE(r->mfu) && r->mfu <= r->hfu + eps && r->hfu <= ceiling,
                  "mfu %g hfu %g (ceiling %g)\n%s", r->mfu, r->hfu, ceiling, text);
    ck_assert_msg(fabs(r->model_tflops_per_gpu - r->mfu * hw->peak_tflops[TPS_DTYPE_BF16]) <=
                      1e-9 * r->model_tflops_per_gpu,
                  "model %g TFLOP/s, mfu %g\n%s", r->model_tflops_per_gpu, r->mfu, text);
    ck_assert_msg(FINITE_POSITIVE(r->tokens_per_s), "%s", text);
    ck_assert_msg(FINITE_POSITIVE(r->memory_gib) && FINITE_POSITIVE(r->memory_weights_gib) &&
                      FINITE_POSITIVE(r->memory_optimizer_gib) &&
                      FINITE_POSITIVE(r->memory_activations_gib) &&
                      FINITE_POSITIVE(r->memory_overheads_gib),
                  "%s", text);
    const double parts = r->memory_weights_gib + r->memory_optimizer_gib +
                         r->memory_activations_gib + r->memory_overheads_gib;
    ck_assert_msg(fabs(parts - r->memory_gib) <= 1e-9 * r->memory_gib, "%s", text);
    ck_assert_msg(r->fits_memory == (r->memory_gib <= sc->hardware.memory_gib), "%s", text);
    ck_assert_msg(r->bubble_fraction >= 0.0 && r->bubble_fraction < 1.0, "bubble %g\n%s",
                  r->bubble_fraction, text);
    ck_assert_msg(FINITE_NONNEGATIVE(r->dp_exposed_ms) && FINITE_POSITIVE(r->optimizer_ms), "%s",
                  text);
    ck_assert_uint_eq(r->micro_batches, sc->global_batch / (sc->micro_batch * sc->dp));
}

/* The preset to run: one that applies, drawn. */
static const TpsStrategy *
draw_strategy(GRand *rng, const TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    g_autofree const TpsStrategy **all = tps_strategy_select(sc, NULL, &error);
    ck_assert_msg(all != NULL, "%s", error != NULL ? error->message : "");
    guint n = 0;
    while (all[n] != NULL)
        n++;
    ck_assert_uint_gt(n, 0);
    return all[g_rand_int_range(rng, 0, (gint32)n)];
}

START_TEST(test_model_properties)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed(SEED);
    g_autoptr(TpsSimCache) cache = tps_sim_cache_new();
    guint accepted = 0, rejected = 0;
    for (guint i = 0; accepted < MODEL_SCENARIOS; i++) {
        g_auto(TpsScenario) sc = {0};
        g_autofree char *text = NULL;
        if (!draw_model(rng, &sc, &text)) {
            rejected++;
            ck_assert_msg(rejected < 4 * MODEL_SCENARIOS,
                          "the loader rejects most drawn scenarios");
            continue;
        }
        accepted++;
        if (i % 5 == 0)
            perfect_tiles(&sc.hardware);
        const TpsStrategy *strategy = draw_strategy(rng, &sc);
        TpsResult r;
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_simulate_cached(&sc, strategy, cache, &r, NULL, &error), "%s: %s\n%s",
                      strategy->name, error != NULL ? error->message : "", text);
        check_model_result(&sc, &r, text);

        /* One more layer per virtual stage: never faster, never less
         * memory (the layer pieces come from the cache: same shapes). */
        g_auto(TpsScenario) more = {0};
        tps_scenario_copy(&more, &sc);
        more.layers += (guint64)sc.pp * sc.vpp;
        TpsResult m;
        if (tps_scenario_validate(&more, NULL, NULL)) {
            ck_assert_msg(tps_simulate_cached(&more, strategy, cache, &m, NULL, &error), "%s",
                          error != NULL ? error->message : "");
            check_model_result(&more, &m, text);
            ck_assert_msg(m.step_time_s > r.step_time_s, "%u layers %.9g s, %u: %.9g s\n%s",
                          (guint)sc.layers, r.step_time_s, (guint)more.layers, m.step_time_s, text);
            ck_assert_msg(m.memory_gib >= r.memory_gib, "%s", text);
        }
        /* Twice the micro-batches: never faster, never less memory. */
        g_auto(TpsScenario) twice = {0};
        tps_scenario_copy(&twice, &sc);
        twice.global_batch *= 2;
        if (tps_scenario_validate(&twice, NULL, NULL)) {
            ck_assert_msg(tps_simulate_cached(&twice, strategy, cache, &m, NULL, &error), "%s",
                          error != NULL ? error->message : "");
            check_model_result(&twice, &m, text);
            ck_assert_msg(m.step_time_s > r.step_time_s, "%s", text);
            ck_assert_msg(m.memory_gib >= r.memory_gib, "%s", text);
        }
    }
    /* The draws reach both sides of the loader's gate. */
    ck_assert_uint_gt(rejected, 0);
}
END_TEST

static gboolean
draw_op(GRand *rng, TpsScenario *sc, char **text_out)
{
    const guint tp = PICK(rng, 2, 4, 8);
    const gboolean ag = g_rand_boolean(rng);
    const guint m = tp * PICK(rng, 1, 2, 16, 256, 1024, 4096);
    const guint n = tp * PICK(rng, 1, 3, 64, 1536, 6144);
    const guint k = tp * PICK(rng, 1, 8, 128, 1536, 6144);
    g_autofree char *overlap = NULL;
    if (g_rand_boolean(rng))
        overlap = ag ? g_strdup("overlap:\n  op: {method: ring_exchange}\n")
                     : g_strdup_printf("overlap:\n  op: {method: pipeline, num_splits: %u}\n",
                                       PICK(rng, 1, 2, 4, 8, 64));
    g_autofree char *text =
        g_strdup_printf("name: drawn\nhardware: %s\nop: {kind: %s, m: %u, n: %u, k: %u}\n"
                        "parallel: {tp: %u}\n%s",
                        models[g_rand_int_range(rng, 0, G_N_ELEMENTS(models))],
                        ag ? "ag_gemm" : "gemm_rs", m, n, k, tp, overlap ? overlap : "");
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_scenario_file_load_string("drawn", text, -1, sc, &error);
    if (!ok)
        tps_scenario_clear(sc);
    if (text_out != NULL)
        *text_out = g_steal_pointer(&text);
    return ok;
}

START_TEST(test_op_properties)
{
    g_autoptr(GRand) rng = g_rand_new_with_seed(SEED + 1);
    guint accepted = 0;
    for (guint i = 0; accepted < OP_SCENARIOS; i++) {
        ck_assert_uint_lt(i, 8 * OP_SCENARIOS);
        g_auto(TpsScenario) sc = {0};
        g_autofree char *text = NULL;
        if (!draw_op(rng, &sc, &text))
            continue;
        accepted++;
        const TpsStrategy *strategy = draw_strategy(rng, &sc);
        TpsResult r;
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_simulate(&sc, strategy, &r, &error), "%s: %s\n%s", strategy->name,
                      error != NULL ? error->message : "", text);
        ck_assert_msg(FINITE_POSITIVE(r.op_time_ms) && FINITE_POSITIVE(r.op_gemm_ms) &&
                          FINITE_NONNEGATIVE(r.op_comm_ms) && isfinite(r.op_overlap_efficiency),
                      "%s", text);
        if (strategy->id == TPS_STRATEGY_SP_BLOCKING)
            ck_assert_msg(r.op_overlap_efficiency == 0.0, "%s", text);
        /* Above 1 only where the op beat its unsplit GEMM. */
        if (r.op_overlap_efficiency > 1.0)
            ck_assert_msg(r.op_time_ms < r.op_gemm_ms, "%s: %g\n%s", strategy->name,
                          r.op_overlap_efficiency, text);
    }
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("properties");
    TCase *tc = tcase_create("drawn");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_model_properties);
    tcase_add_test(tc, test_op_properties);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
