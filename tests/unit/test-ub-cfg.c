/* Transformer Engine userbuffers configurations in and out
 * (overlap: {ub_cfg: FILE}, tps_scenario_apply_ub_cfg_string, io/output/ub-cfg.h):
 * the round trip (a strategy written, read back: the same per-GEMM table
 * and the same prediction), a configuration with every key TE accepts,
 * located errors, and tpsim run --emit-ub-cfg. */
#include <check.h>

#include "test-util.h"
#include <string.h>

#include "io/input/scenario-file.h"
#include "io/output/ub-cfg.h"
#include "sched/simulate.h"

/* A small GPT at TP 8 with SP on one DGX A100: two layers, one micro-batch. */
static const char scenario_text[] = "name: t\nhardware: a100-sxm4-80gb\n"
                                    "model: {hidden: 2048, heads: 16, layers: 2, seq_len: 2048}\n"
                                    "training: {micro_batch: 1, global_batch: 1}\n"
                                    "parallel: {tp: 8, sp: true}\n";

static void
load(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", scenario_text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

static void
assert_same_table(const TpsOverlapConfig *a, const TpsOverlapConfig *b, const char *what)
{
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        const char *slot = tps_gemm_slot_names[s];
        ck_assert_msg(a[s].method == b[s].method, "%s %s: method", what, slot);
        ck_assert_msg(a[s].num_splits == b[s].num_splits, "%s %s: splits %u, %u", what, slot,
                      a[s].num_splits, b[s].num_splits);
        ck_assert_msg(a[s].num_sm == b[s].num_sm, "%s %s: sms", what, slot);
        ck_assert_msg(a[s].cga_size == b[s].cga_size, "%s %s: cga", what, slot);
        ck_assert_msg(a[s].set_sm_margin == b[s].set_sm_margin, "%s %s: margin", what, slot);
        ck_assert_msg(a[s].aggregate == b[s].aggregate, "%s %s: aggregate", what, slot);
        ck_assert_msg(a[s].use_ce == b[s].use_ce, "%s %s: use_ce", what, slot);
    }
}

/* Written, read back: the same table and the same step time. */
static const char *const round_trip_strategies[] = {"te-a100", "te-default", "bulk"};

START_TEST(test_round_trip)
{
    const char *name = round_trip_strategies[_i];
    g_auto(TpsScenario) sc = {0};
    load(&sc);
    const TpsStrategy *strategy = tps_strategy_lookup(name);
    gboolean incomplete = TRUE;
    g_autofree char *text = tps_ub_cfg_format(&sc, strategy, &incomplete);
    /* bulk leaves the forward and the AG dgrads to megatron's path. */
    ck_assert_int_eq(incomplete, strcmp(name, "bulk") == 0);

    g_auto(TpsScenario) back = {0};
    tps_scenario_copy(&back, &sc);
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(tps_scenario_apply_ub_cfg_string(&back, "ub.yaml", text, -1, notes, &error),
                  "%s\n%s", error ? error->message : "", text);
    ck_assert_uint_eq(notes->len, 0);

    TpsOverlapConfig want[TPS_GEMM_SLOT_COUNT], got[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(strategy, &sc, want);
    const TpsStrategy *custom = tps_strategy_lookup("custom");
    tps_strategy_overlap(custom, &back, got);
    if (strcmp(name, "bulk") == 0) {
        /* TE overlaps the GEMMs the file leaves out with its defaults. */
        ck_assert_int_eq(got[TPS_GEMM_QKV_FPROP].method, TPS_METHOD_RING_EXCHANGE);
        ck_assert_int_eq(got[TPS_GEMM_PROJ_FPROP].method, TPS_METHOD_PIPELINE);
        ck_assert_ptr_nonnull(strstr(text, "--disable-tp-comm-overlap-ag"));
        ck_assert_ptr_nonnull(strstr(text, "--disable-tp-comm-overlap-rs"));
        return;
    }
    assert_same_table(want, got, name);

    TpsResult a, b;
    ck_assert_msg(tps_simulate(&sc, strategy, &a, &error), "%s", error ? error->message : "");
    ck_assert_msg(tps_simulate(&back, custom, &b, &error), "%s", error ? error->message : "");
    ck_assert_double_eq(a.step_time_s, b.step_time_s);
}
END_TEST

/* A configuration as NeMo and Megatron users write them: booleans as 0/1,
 * every key TE accepts; each value derived from the file by hand. */
static const char full_cfg[] = "qkv_fprop:\n"
                               "  method: ring_exchange\n"
                               "  aggregate: 1\n"
                               "  atomic_gemm: 1\n"
                               "  fp8_buf: 1\n"
                               "proj_fprop:\n"
                               "  method: pipeline\n"
                               "  num_sm: 24\n"
                               "  cga_size: 2\n"
                               "  num_splits: 4\n"
                               "  set_sm_margin: 1\n"
                               "  atomic_gemm: 0\n"
                               "  comm_priority: -1\n"
                               "  gemm_priority: 0\n"
                               "  pipeline_rs_overlap_first_gemm: true\n"
                               "  is_reduce_scatter: true\n"
                               "fc2_fprop:\n"
                               "  method: ring_exchange\n"
                               "  use_ce: 0\n"
                               "fc1_dgrad:\n"
                               "  method: pipeline\n"
                               "  num_sm: 8\n"
                               "proj_wgrad:\n"
                               "  method: external\n";

START_TEST(test_full_config)
{
    g_auto(TpsScenario) sc = {0};
    load(&sc);
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(tps_scenario_apply_ub_cfg_string(&sc, "ub.yaml", full_cfg, -1, notes, &error),
                  "%s", error ? error->message : "");
    const TpsOverlapConfig *o = sc.overlap;
    ck_assert_int_eq(o[TPS_GEMM_QKV_FPROP].method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_int_eq(o[TPS_GEMM_QKV_FPROP].aggregate, TRUE);
    ck_assert_int_eq(o[TPS_GEMM_PROJ_FPROP].method, TPS_METHOD_PIPELINE);
    ck_assert_uint_eq(o[TPS_GEMM_PROJ_FPROP].num_sm, 24);
    ck_assert_uint_eq(o[TPS_GEMM_PROJ_FPROP].num_splits, 4);
    ck_assert_int_eq(o[TPS_GEMM_PROJ_FPROP].set_sm_margin, TRUE);
    ck_assert_int_eq(o[TPS_GEMM_FC2_FPROP].method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_int_eq(o[TPS_GEMM_FC2_FPROP].use_ce, FALSE);
    /* Not in the file: TE's defaults. */
    ck_assert_int_eq(o[TPS_GEMM_FC1_FPROP].method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_int_eq(o[TPS_GEMM_PROJ_DGRAD].method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_int_eq(o[TPS_GEMM_QKV_DGRAD].method, TPS_METHOD_BULK);
    ck_assert_int_eq(o[TPS_GEMM_QKV_WGRAD].method, TPS_METHOD_BULK);
    /* fc1_dgrad reduce-scatters: TE drops fc1_wgrad's bulk overlap. */
    ck_assert_int_eq(o[TPS_GEMM_FC1_DGRAD].method, TPS_METHOD_PIPELINE);
    ck_assert_int_eq(o[TPS_GEMM_FC1_WGRAD].method, TPS_METHOD_NONE);
    ck_assert_int_eq(o[TPS_GEMM_FC1_WGRAD].set, FALSE);

    /* What is not modelled is said, where the file says it. */
    static const char *const said[] = {
        "ub.yaml:4:3: qkv_fprop.atomic_gemm", "ub.yaml:5:3: qkv_fprop.fp8_buf",
        "ub.yaml:13:3: proj_fprop.comm_priority", "ub.yaml:14:3: proj_fprop.gemm_priority",
        "ub.yaml:15:3: proj_fprop.pipeline_rs_overlap_first_gemm",
        "ub.yaml:16:3: proj_fprop.is_reduce_scatter", "ub.yaml:23:1: proj_wgrad"};
    ck_assert_uint_eq(notes->len, G_N_ELEMENTS(said));
    for (guint i = 0; i < G_N_ELEMENTS(said); i++)
        ck_assert_msg(g_str_has_prefix(g_ptr_array_index(notes, i), said[i]), "%s",
                      (char *)g_ptr_array_index(notes, i));
}
END_TEST

typedef struct {
    const char *text;
    const char *where;
    const char *says;
} ErrorCase;

static const ErrorCase error_cases[] = {
    {"qkv_fprop:\n  methd: ring_exchange\n", "ub.yaml:2:3: ", "method"},
    {"qkv_fprop:\n  method: pipeline\n", "ub.yaml:2:11: ", "pipeline"},
    {"qkv_fprp:\n  method: bulk\n", "ub.yaml:1:1: ", "qkv_fprop"},
    {"qkv_dgrad:\n  method: ring_exchange\nqkv_wgrad:\n  method: bulk\n", "ub.yaml:3:1: ",
     "qkv_wgrad cannot be configured"},
    {"proj_fprop:\n  method: pipeline\n  num_sm: 200\n", "ub.yaml:3:11: ", "num_sm"},
    {"- qkv_fprop\n", "ub.yaml:1:1: ", "not a userbuffers configuration file"},
    {"proj_fprop: pipeline\n", "ub.yaml:1:13: ", "map"},
};

START_TEST(test_errors)
{
    const ErrorCase *c = &error_cases[_i];
    g_auto(TpsScenario) sc = {0};
    load(&sc);
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(!tps_scenario_apply_ub_cfg_string(&sc, "ub.yaml", c->text, -1, notes, &error),
                  "case %d applied", _i);
    ck_assert_msg(g_str_has_prefix(error->message, c->where), "case %d: %s", _i, error->message);
    ck_assert_msg(strstr(error->message, c->says) != NULL, "case %d: %s", _i, error->message);
}
END_TEST

/* overlap: {ub_cfg: FILE} in a scenario file, with an entry beside it. */
START_TEST(test_scenario_key)
{
    g_autofree char *dir = tps_test_tmpdir("ub-cfg");
    g_autofree char *ub = g_build_filename(dir, "ub.yaml", NULL);
    g_autofree char *path = g_build_filename(dir, "s.yaml", NULL);
    ck_assert(g_file_set_contents(ub, "proj_fprop:\n  method: ring_exchange\n", -1, NULL));
    g_autofree char *text = g_strdup_printf("%soverlap:\n  ub_cfg: ub.yaml\n"
                                            "  fc2_fprop: {method: pipeline, num_splits: 2}\n",
                                            scenario_text);
    ck_assert(g_file_set_contents(path, text, -1, NULL));
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load(path, &sc, &error), "%s", error ? error->message : "");
    ck_assert_int_eq(sc.overlap[TPS_GEMM_PROJ_FPROP].method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_int_eq(sc.overlap[TPS_GEMM_FC2_FPROP].method, TPS_METHOD_PIPELINE);
    ck_assert_uint_eq(sc.overlap[TPS_GEMM_FC2_FPROP].num_splits, 2);
    ck_assert_int_eq(sc.overlap[TPS_GEMM_QKV_WGRAD].method, TPS_METHOD_BULK);
    tps_scenario_clear(&sc);

    /* Megatron's --tp-comm-overlap-cfg names the same file; its switches
     * still turn a group off (the reduce-scatter overlaps here). */
    g_autofree char *mega = g_strdup_printf(
        "name: t\nhardware: a100-sxm4-80gb\nmegatron_args: \"--num-layers 2 --hidden-size 2048 "
        "--num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --bf16 "
        "--tensor-model-parallel-size 8 --sequence-parallel --tp-comm-overlap "
        "--tp-comm-overlap-cfg ub.yaml --disable-tp-comm-overlap-rs\"\n");
    ck_assert(g_file_set_contents(path, mega, -1, NULL));
    ck_assert_msg(tps_scenario_file_load(path, &sc, &error), "%s", error ? error->message : "");
    ck_assert_int_eq(sc.overlap[TPS_GEMM_PROJ_FPROP].method, TPS_METHOD_NONE);
    ck_assert_int_eq(sc.overlap[TPS_GEMM_FC2_FPROP].method, TPS_METHOD_NONE);
    ck_assert_int_eq(sc.overlap[TPS_GEMM_QKV_FPROP].method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_int_eq(sc.overlap[TPS_GEMM_FC1_WGRAD].method, TPS_METHOD_BULK);
    tps_scenario_clear(&sc);

    /* A missing file is the scenario's error, at its value. */
    g_autofree char *bad = g_strdup_printf("%soverlap:\n  ub_cfg: nowhere.yaml\n", scenario_text);
    ck_assert(g_file_set_contents(path, bad, -1, NULL));
    ck_assert(!tps_scenario_file_load(path, &sc, &error));
    g_autofree char *where = g_strdup_printf("%s:7:11: ", path);
    ck_assert_msg(g_str_has_prefix(error->message, where), "%s", error->message);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_cli)
{
    g_autofree char *dir = tps_test_tmpdir("ub-cfg-cli");
    g_autofree char *path = g_build_filename(dir, "s.yaml", NULL);
    g_autofree char *ub = g_build_filename(dir, "ub.yaml", NULL);
    ck_assert(g_file_set_contents(path, scenario_text, -1, NULL));
    const char *args[] = {"run", path, "-s", "megatron", "-s", "te-a100", "--emit-ub-cfg", ub,
                          NULL};
    g_autofree char *err = NULL;
    ck_assert_msg(tps_test_spawn("TPSIM_BIN", NULL, args, NULL, &err) == 0, "%s", err);
    g_autofree char *written = NULL;
    ck_assert(g_file_get_contents(ub, &written, NULL, NULL));
    ck_assert_ptr_nonnull(strstr(written, "strategy te-a100"));

    /* tpsim search: the best layout that uses userbuffers (here tp-allreduce
     * is faster, so one of the others). */
    g_autofree char *ub3 = g_build_filename(dir, "ub3.yaml", NULL);
    const char *search[] = {"search", path, "--gpus", "8", "--emit-ub-cfg", ub3, NULL};
    ck_assert_msg(tps_test_spawn("TPSIM_BIN", NULL, search, NULL, &err) == 0, "%s", err);
    g_autofree char *searched = NULL;
    ck_assert(g_file_get_contents(ub3, &searched, NULL, NULL));
    ck_assert_ptr_nonnull(strstr(searched, "# written by tpsim: strategy "));
    ck_assert_ptr_nonnull(strstr(searched, "  method: "));

    /* Only megatron: nothing to write, a usage error, no file. */
    g_autofree char *ub2 = g_build_filename(dir, "ub2.yaml", NULL);
    const char *none[] = {"run", path, "-s", "megatron", "--emit-ub-cfg", ub2, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, none, NULL, NULL), 2);
    ck_assert(!g_file_test(ub2, G_FILE_TEST_EXISTS));
    tps_test_remove_dir(dir);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("ub-cfg");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_round_trip, 0, G_N_ELEMENTS(round_trip_strategies));
    tcase_add_test(tc, test_full_config);
    tcase_add_loop_test(tc, test_errors, 0, G_N_ELEMENTS(error_cases));
    tcase_add_test(tc, test_scenario_key);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(suite());
}
