/* Scenario files: every shipped scenario loads; defaults; and each kind of
 * bad input is rejected with "name:LINE:COLUMN: message" at the offending
 * node. */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/input/scenario-file.h"

/* A valid model scenario; the bad inputs below are variations of it, with
 * the lines numbered as in this text. */
#define BASE_HEAD "name: t\nhardware: a100-sxm4-80gb\n"
#define BASE_MODEL                                                                                 \
    "model:\n"                                                                                     \
    "  hidden: 12288\n"                                                                            \
    "  heads: 96\n"                                                                                \
    "  layers: 96\n"                                                                               \
    "  seq_len: 2048\n"
#define BASE_PARALLEL                                                                              \
    "parallel:\n"                                                                                  \
    "  tp: 8\n"                                                                                    \
    "  sp: true\n"

static const char *
source_dir(void)
{
    const char *dir = g_getenv("TPSIM_SOURCE_DIR");
    return dir != NULL ? dir : ".";
}

/* ---- every file in scenarios/ ---- */

START_TEST(test_all_scenarios_load)
{
    g_autofree char *dir_path = g_build_filename(source_dir(), "scenarios", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(GDir) dir = g_dir_open(dir_path, 0, &error);
    ck_assert_msg(dir != NULL, "%s", error != NULL ? error->message : "");

    guint count = 0;
    const char *entry;
    while ((entry = g_dir_read_name(dir)) != NULL) {
        if (!g_str_has_suffix(entry, ".yaml"))
            continue;
        g_autofree char *path = g_build_filename(dir_path, entry, NULL);
        g_autoptr(GError) local = NULL;
        TpsScenario scenario;
        gboolean ok = tps_scenario_file_load(path, &scenario, &local);
        ck_assert_msg(ok, "%s: %s", entry, local != NULL ? local->message : "(no error)");
        ck_assert_ptr_nonnull(scenario.name);
        ck_assert_ptr_nonnull(scenario.hardware.name);
        /* The name matches the file name, so results and files correspond. */
        g_autofree char *stem = g_strndup(entry, strlen(entry) - strlen(".yaml"));
        ck_assert_str_eq(scenario.name, stem);
        tps_scenario_clear(&scenario);
        count++;
    }
    ck_assert_uint_ge(count, 9);
}
END_TEST

START_TEST(test_shipped_values)
{
    g_autofree char *path =
        g_build_filename(source_dir(), "scenarios", "custom-overlap.yaml", NULL);
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    ck_assert_msg(tps_scenario_file_load(path, &sc, &error), "%s",
                  error != NULL ? error->message : "");
    ck_assert(!sc.is_op);
    ck_assert_uint_eq(sc.tp, 8);
    ck_assert(sc.sp);
    ck_assert(sc.has_overlap);
    ck_assert(sc.overlap[TPS_GEMM_FC2_FPROP].set);
    ck_assert_int_eq(sc.overlap[TPS_GEMM_FC2_FPROP].method, TPS_METHOD_PIPELINE);
    ck_assert_uint_eq(sc.overlap[TPS_GEMM_FC2_FPROP].num_sm, 4);
    ck_assert(!sc.overlap[TPS_GEMM_OP].set);
    ck_assert_str_eq(sc.file, path);
    tps_scenario_clear(&sc);

    g_free(path);
    path = g_build_filename(source_dir(), "scenarios", "op-ag-gemm.yaml", NULL);
    ck_assert_msg(tps_scenario_file_load(path, &sc, &error), "%s",
                  error != NULL ? error->message : "");
    ck_assert(sc.is_op);
    ck_assert_int_eq(sc.op_kind, TPS_OP_AG_GEMM);
    ck_assert_uint_eq(sc.m, 8192);
    ck_assert_uint_eq(sc.n, 49152);
    ck_assert_uint_eq(sc.k, 12288);
    ck_assert(sc.sp);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- defaults ---- */

START_TEST(test_defaults_model)
{
    static const char text[] = "name: d\nhardware: a100-sxm4-80gb\n"
                               "model: {hidden: 1024, heads: 16, layers: 4, seq_len: 512}\n";
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    ck_assert_msg(tps_scenario_file_load_string("d.yaml", text, -1, &sc, &error), "%s",
                  error != NULL ? error->message : "");
    ck_assert_str_eq(sc.name, "d");
    ck_assert_str_eq(sc.hardware_ref, "a100-sxm4-80gb");
    ck_assert_str_eq(sc.file, "d.yaml");
    ck_assert_uint_eq(sc.seed, 1);
    ck_assert(!sc.is_op);
    ck_assert_uint_eq(sc.ffn_hidden, 4 * 1024);
    ck_assert_uint_eq(sc.vocab, 51200);
    ck_assert_int_eq(sc.dtype, TPS_DTYPE_BF16);
    ck_assert_int_eq(sc.attention, TPS_ATTENTION_FLASH);
    ck_assert_uint_eq(sc.micro_batch, 1);
    ck_assert_uint_eq(sc.global_batch, 1);
    ck_assert_int_eq(sc.recompute, TPS_RECOMPUTE_NONE);
    ck_assert_uint_eq(sc.tp, 1);
    ck_assert_uint_eq(sc.pp, 1);
    ck_assert_uint_eq(sc.vpp, 1);
    ck_assert_uint_eq(sc.dp, 1);
    ck_assert(!sc.sp);
    ck_assert_ptr_null(sc.strategies);
    ck_assert(!sc.has_overlap);
    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++) {
        ck_assert(!sc.overlap[i].set);
        ck_assert_int_eq(sc.overlap[i].method, TPS_METHOD_NONE);
        ck_assert_uint_eq(sc.overlap[i].cga_size, 2);
        ck_assert(sc.overlap[i].use_ce);
    }
    ck_assert_str_eq(sc.hardware.name, "a100-sxm4-80gb");
    tps_scenario_clear(&sc);
    /* Destructors accept cleared objects. */
    tps_scenario_clear(&sc);
    tps_scenario_clear(NULL);
}
END_TEST

START_TEST(test_cuda_graphs_key)
{
    static const char text[] = BASE_HEAD BASE_MODEL "training: {cuda_graphs: true}\n";
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    ck_assert_msg(tps_scenario_file_load_string("g", text, -1, &sc, &error), "%s",
                  error != NULL ? error->message : "");
    ck_assert(sc.cuda_graphs);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_defaults_derived)
{
    static const char text[] = "name: d\nhardware: a100-sxm4-80gb\nseed: 42\n"
                               "model: {hidden: 1024, heads: 16, layers: 8, seq_len: 512,\n"
                               "        dtype: fp16, attention: unfused}\n"
                               "training: {micro_batch: 2, recompute: selective}\n"
                               "parallel: {tp: 4, pp: 2, dp: 3}\n"
                               "strategies: [tp-allreduce]\n";
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    ck_assert_msg(tps_scenario_file_load_string("d", text, -1, &sc, &error), "%s",
                  error != NULL ? error->message : "");
    ck_assert_uint_eq(sc.seed, 42);
    ck_assert_uint_eq(sc.global_batch, 6);
    ck_assert_int_eq(sc.dtype, TPS_DTYPE_FP16);
    ck_assert_int_eq(sc.attention, TPS_ATTENTION_UNFUSED);
    ck_assert_int_eq(sc.recompute, TPS_RECOMPUTE_SELECTIVE);
    ck_assert_uint_eq(sc.tp, 4);
    ck_assert_uint_eq(sc.pp, 2);
    ck_assert_uint_eq(sc.vpp, 1);
    ck_assert_uint_eq(sc.dp, 3);
    ck_assert(sc.overlap_grad_reduce);
    ck_assert(!sc.distributed_optimizer);
    ck_assert(!sc.cuda_graphs);
    ck_assert_ptr_nonnull(sc.strategies);
    ck_assert_str_eq(sc.strategies[0], "tp-allreduce");
    ck_assert_ptr_null(sc.strategies[1]);
    ck_assert_uint_eq(sc.strategies_line, 8);
    ck_assert_uint_eq(sc.strategies_column, 1);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_defaults_op)
{
    static const char text[] = "name: o\nhardware: a100-sxm4-80gb\n"
                               "op: {kind: gemm_rs, m: 8192, n: 12288, k: 49152}\n"
                               "parallel: {tp: 8}\n"
                               "overlap:\n"
                               "  op: {method: ring_exchange, num_splits: 8}\n";
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    ck_assert_msg(tps_scenario_file_load_string("o", text, -1, &sc, &error), "%s",
                  error != NULL ? error->message : "");
    ck_assert(sc.is_op);
    ck_assert(sc.sp);
    ck_assert_int_eq(sc.op_kind, TPS_OP_GEMM_RS);
    ck_assert_int_eq(sc.dtype, TPS_DTYPE_BF16);
    ck_assert(sc.has_overlap);
    const TpsOverlapConfig *op = &sc.overlap[TPS_GEMM_OP];
    ck_assert(op->set);
    ck_assert_uint_eq(op->line, 6);
    ck_assert_uint_eq(op->column, 3);
    ck_assert_int_eq(op->method, TPS_METHOD_RING_EXCHANGE);
    ck_assert_uint_eq(op->num_splits, 8);
    ck_assert_uint_eq(op->num_sm, 0);
    ck_assert_uint_eq(op->cga_size, 2);
    ck_assert(op->use_ce);
    ck_assert(!op->set_sm_margin);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_name_tables)
{
    ck_assert_str_eq(tps_gemm_slot_names[TPS_GEMM_QKV_FPROP], "qkv_fprop");
    ck_assert_str_eq(tps_gemm_slot_names[TPS_GEMM_FC1_WGRAD], "fc1_wgrad");
    ck_assert_str_eq(tps_gemm_slot_names[TPS_GEMM_OP], "op");
    ck_assert_ptr_null(tps_gemm_slot_names[TPS_GEMM_SLOT_COUNT]);
    ck_assert_str_eq(tps_method_names[TPS_METHOD_NONE], "none");
    ck_assert_str_eq(tps_method_names[TPS_METHOD_RING_EXCHANGE], "ring_exchange");
    ck_assert_str_eq(tps_method_names[TPS_METHOD_PIPELINE], "pipeline");
    ck_assert_str_eq(tps_method_names[TPS_METHOD_BULK], "bulk");
    ck_assert_ptr_null(tps_method_names[TPS_METHOD_BULK + 1]);
}
END_TEST

START_TEST(test_load_missing_file)
{
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    ck_assert(!tps_scenario_file_load("/nonexistent/x.yaml", &sc, &error));
    ck_assert_ptr_nonnull(error);
    tps_scenario_clear(&sc);
}
END_TEST

/* A hardware path is taken from the scenario's folder when it is not found
 * from the working directory. */
START_TEST(test_hardware_path)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *model = g_build_filename(source_dir(), "models", "a100-sxm4-80gb.yaml", NULL);
    g_autofree char *contents = NULL;
    ck_assert_msg(g_file_get_contents(model, &contents, NULL, &error), "%s",
                  error != NULL ? error->message : "");

    g_autofree char *dir = g_dir_make_tmp("tpsim-scenario-XXXXXX", &error);
    ck_assert_ptr_nonnull(dir);
    g_autofree char *hw_path = g_build_filename(dir, "my-gpu.yaml", NULL);
    g_autofree char *sc_path = g_build_filename(dir, "s.yaml", NULL);
    ck_assert(g_file_set_contents(hw_path, contents, -1, &error));
    ck_assert(g_file_set_contents(sc_path,
                                  "name: s\nhardware: my-gpu.yaml\n"
                                  "model: {hidden: 1024, heads: 16, layers: 4, seq_len: 512}\n",
                                  -1, &error));

    TpsScenario sc;
    gboolean ok = tps_scenario_file_load(sc_path, &sc, &error);
    ck_assert_msg(ok, "%s", error != NULL ? error->message : "");
    ck_assert_str_eq(sc.hardware_ref, "my-gpu.yaml");
    ck_assert_uint_gt(sc.hardware.gpus_per_node, 0);
    tps_scenario_clear(&sc);

    /* And by absolute path, from a string. */
    g_autofree char *text = g_strdup_printf(
        "name: s\nhardware: %s\nmodel: {hidden: 1024, heads: 16, layers: 4, seq_len: 512}\n",
        model);
    ok = tps_scenario_file_load_string("s", text, -1, &sc, &error);
    ck_assert_msg(ok, "%s", error != NULL ? error->message : "");
    tps_scenario_clear(&sc);

    g_remove(sc_path);
    g_remove(hw_path);
    g_rmdir(dir);
}
END_TEST

/* ---- bad inputs ---- */

typedef struct {
    const char *what;
    const char *text;
    const char *prefix;   /* exact start of the message */
    const char *fragment; /* somewhere in it */
} BadCase;

static const BadCase bad_cases[] = {
    {"an NVLink domain is whole nodes",
     "name: t\nhardware: {base: a100-sxm4-80gb, node: {gpus: 3}}\n" BASE_MODEL,
     "bad:2:47: ", "node.nvlink_domain_gpus (8) must be a multiple of node.gpus (3)"},
    {"parallel.order names dimensions", BASE_HEAD BASE_MODEL "parallel: {tp: 8, order: tp-dp-tp}\n",
     "bad:8:26: ", "'tp' appears twice in the order"},
    {"interleaving needs micro-batches in groups of pp",
     BASE_HEAD BASE_MODEL "training: {global_batch: 6}\nparallel: {tp: 8, pp: 4, vpp: 2}\n",
     "bad:8:26: ", "multiple of parallel.pp (4)"},
    {"distributed_optimizer is a boolean",
     BASE_HEAD BASE_MODEL "training: {distributed_optimizer: 2}\n", "bad:8:35: ", "true or false"},
    {"cuda_graphs is a boolean", BASE_HEAD BASE_MODEL "training: {cuda_graphs: yes please}\n",
     "bad:8:25: ", "true or false"},
    {"unknown key with a suggestion",
     BASE_HEAD "model:\n  hiden: 12288\n  heads: 96\n  layers: 96\n  seq_len: 2048\n",
     "bad:4:3: ", "did you mean 'hidden'"},
    {"unknown top-level key", BASE_HEAD BASE_MODEL "paralel: {tp: 8}\n",
     "bad:8:1: ", "did you mean 'parallel'"},
    {"wrong type: string where an integer goes",
     BASE_HEAD "model:\n  hidden: 12288\n  heads: ninety-six\n  layers: 96\n  seq_len: 2048\n",
     "bad:5:10: ", "heads"},
    {"wrong type: scalar where a map goes", BASE_HEAD "model: 12\n", "bad:3:8: ", ""},
    {"wrong type: strategies not a list", BASE_HEAD BASE_MODEL "strategies: megatron\n",
     "bad:8:13: ", "sequence"},
    {"out of range: tp 0", BASE_HEAD BASE_MODEL "parallel:\n  tp: 0\n", "bad:9:7: ", "parallel.tp"},
    {"out of range: tp 128", BASE_HEAD BASE_MODEL "parallel:\n  tp: 128\n",
     "bad:9:7: ", "parallel.tp"},
    /* Context parallelism: 2 cp chunks (2048 % 6), at model.seq_len's value
     * (line 7, column 12); a2a's heads (96 % (8 x 8)) at model.heads; an
     * exchange not modelled, and an unknown one, at parallel.cp_comm's
     * value (line 8: "parallel: {tp: 8, cp: 2, cp_comm: " is 34 columns). */
    {"the sequence in 2 cp chunks", BASE_HEAD BASE_MODEL "parallel: {tp: 8, cp: 3}\n",
     "bad:7:12: ", "model.seq_len (2048) must be divisible by 2 * parallel.cp (6)"},
    {"a2a needs heads by tp x cp", BASE_HEAD BASE_MODEL "parallel: {tp: 8, cp: 8, cp_comm: a2a}\n",
     "bad:5:10: ", "the all-to-all turns sequence shards into head shards"},
    {"a2a+p2p needs its a2a size",
     BASE_HEAD BASE_MODEL "parallel: {tp: 8, cp: 2, cp_comm: a2a+p2p}\n",
     "bad:8:35: ", "parallel.cp_comm a2a+p2p needs parallel.cp_a2a"},
    {"cp_comm unknown", BASE_HEAD BASE_MODEL "parallel: {tp: 8, cp: 2, cp_comm: ring}\n",
     "bad:8:35: ", "parallel.cp_comm"},
    {"heads not divisible by tp", BASE_HEAD BASE_MODEL "parallel:\n  tp: 7\n",
     "bad:5:10: ", "model.heads (96) must be divisible by parallel.tp (7)"},
    {"ffn_hidden not divisible by tp", BASE_HEAD BASE_MODEL "  ffn_hidden: 49156\n" BASE_PARALLEL,
     "bad:8:15: ", "model.ffn_hidden (49156) must be divisible by parallel.tp (8)"},
    {"hidden not divisible by heads",
     BASE_HEAD "model:\n  hidden: 12289\n  heads: 96\n  layers: 96\n  seq_len: 2048\n",
     "bad:4:11: ", "model.hidden (12289) must be divisible by model.heads (96)"},
    {"seq_len not divisible by tp under sp",
     BASE_HEAD
     "model:\n  hidden: 12288\n  heads: 96\n  layers: 96\n  seq_len: 2044\n" BASE_PARALLEL,
     "bad:7:12: ", "model.seq_len"},
    {"layers not divisible by pp", BASE_HEAD BASE_MODEL "parallel: {tp: 8, pp: 5}\n",
     "bad:6:11: ", "model.layers (96) must be divisible by parallel.pp (5)"},
    {"layers not divisible by pp * vpp", BASE_HEAD BASE_MODEL "parallel: {tp: 8, pp: 4, vpp: 5}\n",
     "bad:6:11: ", "parallel.pp * parallel.vpp (20)"},
    {"vpp without pp", BASE_HEAD BASE_MODEL "parallel: {vpp: 2}\n", "bad:8:17: ", "parallel.pp"},
    {"global_batch not a multiple of micro_batch * dp",
     BASE_HEAD BASE_MODEL "training: {micro_batch: 2, global_batch: 9}\n",
     "bad:8:42: ", "training.global_batch (9)"},
    {"bad dtype", BASE_HEAD BASE_MODEL "  dtype: fp8\n", "bad:8:10: ", "dtype"},
    {"bad recompute", BASE_HEAD BASE_MODEL "training: {recompute: some}\n",
     "bad:8:23: ", "recompute"},
    {"both model and op", BASE_HEAD BASE_MODEL "op: {kind: ag_gemm, m: 8192, n: 8192, k: 8192}\n",
     "bad:8:1: ", "exactly one of model:"},
    {"neither model nor op", BASE_HEAD "parallel: {tp: 8}\n", "bad:1:1: ", "model:"},
    {"missing name", "hardware: a100-sxm4-80gb\n" BASE_MODEL, "bad:1:1: ", "'name'"},
    {"missing model key", BASE_HEAD "model: {hidden: 1024, heads: 16, layers: 4}\n",
     "bad:3:8: ", "'seq_len'"},
    {"bad name characters", "name: gpt 3/tp8\nhardware: a100-sxm4-80gb\n" BASE_MODEL,
     "bad:1:7: ", "may only contain letters, digits"},
    {"unknown hardware lists the available ones", "name: t\nhardware: a100-nope\n" BASE_MODEL,
     "bad:2:11: ", "a100-sxm4-80gb"},
    {"hardware path to no file", "name: t\nhardware: ./no/such-model.yaml\n" BASE_MODEL,
     "bad:2:11: ", ""},
    {"pipeline on an all-gather layer",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  qkv_fprop: {method: pipeline}\n",
     "bad:12:23: ",
     "method 'pipeline' is not allowed for all-gather layers (Transformer Engine rejects it)"},
    {"pipeline on an ag_gemm op",
     BASE_HEAD "op: {kind: ag_gemm, m: 8192, n: 8192, k: 8192}\nparallel: {tp: 8}\n"
               "overlap:\n  op: {method: pipeline}\n",
     "bad:6:16: ", "method 'pipeline' is not allowed for all-gather layers"},
    {"overlap beyond the NVLink domain",
     BASE_HEAD BASE_MODEL "parallel: {tp: 16, sp: true}\noverlap:\n  proj_fprop: {method: "
                          "pipeline}\n",
     "bad:10:24: ", "comm+GEMM overlap is single-node TP only"},
    {"overlap without sp",
     BASE_HEAD BASE_MODEL "parallel: {tp: 8}\noverlap:\n  proj_fprop: "
                          "{method: pipeline}\n",
     "bad:9:1: ", "sequence parallelism"},
    {"overlap key of op scenarios in a model scenario",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  op: {method: ring_exchange}\n",
     "bad:12:3: ", "unknown key 'op'"},
    {"overlap entry with an unknown key",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  proj_fprop: {method: pipeline, num_sms: 4}\n",
     "bad:12:34: ", "did you mean 'num_sm'"},
    {"overlap num_splits out of range",
     BASE_HEAD BASE_MODEL BASE_PARALLEL
     "overlap:\n  proj_fprop: {method: pipeline, num_splits: 65}\n",
     "bad:12:46: ", "num_splits"},
    {"overlap unknown method",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  proj_fprop: {method: ring}\n",
     "bad:12:24: ", "method"},
    {"bulk on a layer whose communication depends on the GEMM",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  fc2_fprop: {method: bulk}\n",
     "bad:12:23: ", "method 'bulk' only applies"},
    {"wgrad set next to a non-bulk dgrad",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  qkv_dgrad: {method: ring_exchange}\n"
                                        "  qkv_wgrad: {method: bulk}\n",
     "bad:13:3: ", "overlap.qkv_wgrad cannot be set"},
    {"op scenario with training:",
     BASE_HEAD "op: {kind: gemm_rs, m: 8192, n: 8192, k: 8192}\ntraining: {micro_batch: 1}\n"
               "parallel: {tp: 8}\n",
     "bad:4:1: ", "training:"},
    {"op scenario without tp", BASE_HEAD "op: {kind: gemm_rs, m: 8192, n: 8192, k: 8192}\n",
     "bad:1:1: ", "'parallel'"},
    {"op scenario with sp false",
     BASE_HEAD "op: {kind: gemm_rs, m: 8192, n: 8192, k: 8192}\nparallel: {tp: 8, sp: false}\n",
     "bad:4:23: ", "sequence-parallel"},
    {"op m not divisible by tp",
     BASE_HEAD "op: {kind: gemm_rs, m: 8190, n: 8192, k: 8192}\nparallel: {tp: 8}\n",
     "bad:3:24: ", "op.m (8190)"},
    {"ag_gemm n not divisible by tp",
     BASE_HEAD "op: {kind: ag_gemm, m: 8192, n: 8190, k: 8192}\nparallel: {tp: 8}\n",
     "bad:3:33: ", "op.n"},
    {"gemm_rs k not divisible by tp",
     BASE_HEAD "op: {kind: gemm_rs, m: 8192, n: 8192, k: 8190}\nparallel: {tp: 8}\n",
     "bad:3:42: ", "op.k"},
    {"seed not a number", "name: t\nhardware: a100-sxm4-80gb\nseed: one\n" BASE_MODEL,
     "bad:3:7: ", "'seed'"},
    {"overlap num_sm not below the SM count",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  proj_fprop: {method: pipeline, num_sm: 108}\n",
     "bad:12:42: ", "108 SMs"},
    {"overlap entry without a method",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  proj_fprop: {num_sm: 8}\n",
     "bad:12:15: ", "'method'"},
    {"ring_exchange on a wgrad",
     BASE_HEAD BASE_MODEL BASE_PARALLEL "overlap:\n  fc1_wgrad: {method: ring_exchange}\n",
     "bad:12:23: ", "only 'bulk' or 'none'"},
    {"op scenario with pp",
     BASE_HEAD "op: {kind: gemm_rs, m: 8192, n: 8192, k: 8192}\n"
               "parallel: {tp: 8, pp: 2}\n",
     "bad:4:19: ", "parallel.pp does not apply"},
    {"model overlap key in an op scenario",
     BASE_HEAD "op: {kind: gemm_rs, m: 8192, n: 8192, k: 8192}\nparallel: {tp: 8}\n"
               "overlap:\n  fc2_fprop: {method: pipeline}\n",
     "bad:6:3: ", "unknown key 'fc2_fprop'"},
    {"empty strategies", BASE_HEAD BASE_MODEL "strategies: []\n", "bad:8:13: ", "empty"},
    {"duplicate strategy", BASE_HEAD BASE_MODEL "strategies: [megatron, megatron]\n",
     "bad:8:24: ", "twice"},
    {"duplicate keys", BASE_HEAD BASE_MODEL "  heads: 48\n", "bad:8:3: ", "heads"},
    /* Issue 13: what the simulation cannot represent, located. D3: a
     * 2^24-token sequence at hidden 2^20 has 2^32 CTAs in its GEMMs (the
     * step time once wrapped around: MFU 224%). */
    {"D3: more CTAs than 32 bits",
     BASE_HEAD "model: {hidden: 1048576, heads: 64, layers: 10000, seq_len: 16777216, "
               "ffn_hidden: 4194304}\nparallel: {tp: 8, sp: true}\n",
     "bad:3:61: ", "4294967296 CTAs"},
    /* D4: 2^16 sequences of 2^24 tokens: an overflow in the memory-bound
     * kernel costs once ended in "deadlock at 107432640651968549 ns". */
    {"D4: more CTAs than 32 bits, at the micro-batch",
     BASE_HEAD "model: {hidden: 1048576, heads: 65536, layers: 1, seq_len: 16777216, "
               "ffn_hidden: 4194304}\ntraining: {micro_batch: 65536}\nparallel: {tp: 1}\n",
     "bad:4:25: ", "training.micro_batch"},
    /* The step beyond 2^62 ns (with the slowdowns' room): 2^20
     * micro-batches of 10^5 layers of hidden 16384 at 64k tokens. */
    {"step beyond 2^62 ns, at the global batch",
     BASE_HEAD "model: {hidden: 16384, heads: 128, layers: 100000, seq_len: 65536}\n"
               "training: {global_batch: 1048576}\nparallel: {tp: 8, sp: true}\n",
     "bad:4:26: ", "a step would last at least"},
    {"step beyond 2^62 ns, at the layers when the batch is left out",
     BASE_HEAD "model: {hidden: 16384, heads: 128, layers: 100000, seq_len: 16777216}\n"
               "parallel: {tp: 8, sp: true}\n",
     "bad:3:44: ", "reduce model.layers"},
    /* The op of m = n = k = 8 with 64 pipeline splits (overlap efficiency
     * -31.2): 63 chunks without a column. */
    {"pipeline splits beyond the columns",
     BASE_HEAD "op: {kind: gemm_rs, m: 8, n: 8, k: 8}\nparallel: {tp: 8}\n"
               "overlap:\n  op: {method: pipeline, num_splits: 64}\n",
     "bad:6:38: ", "overlap.op.num_splits (64) is more than the 8 output columns (op.n)"},
    {"pipeline's default splits beyond the columns",
     BASE_HEAD "model: {hidden: 2, heads: 1, layers: 1, seq_len: 8}\n"
               "parallel: {tp: 1, sp: true}\noverlap:\n  fc2_fprop: {method: pipeline}\n",
     "bad:6:14: ", "overlap.fc2_fprop.num_splits (4) is more than the 2 output columns"},
    /* The shortest schedule beyond the pipeline's limit. */
    {"pipeline schedule beyond the limit",
     BASE_HEAD "model: {hidden: 1024, heads: 16, layers: 1024, seq_len: 1024}\n"
               "training: {global_batch: 1024}\nparallel: {tp: 1, pp: 1024}\n",
     "bad:5:23: ", "more than the 1048576 the simulation holds"},
    {"empty document", "# nothing\n", "bad:1:1: ", "empty"},
    {"not a map", "- a\n- b\n", "bad:1:1: ", ""},
};

START_TEST(test_bad_input)
{
    const BadCase *c = &bad_cases[_i];
    g_autoptr(GError) error = NULL;
    TpsScenario sc;
    gboolean ok = tps_scenario_file_load_string("bad", c->text, -1, &sc, &error);
    tps_scenario_clear(&sc);
    ck_assert_msg(!ok, "%s: accepted", c->what);
    ck_assert_ptr_nonnull(error);
    ck_assert_msg(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT), "%s: not an input error: %s",
                  c->what, error->message);
    ck_assert_msg(g_str_has_prefix(error->message, c->prefix), "%s: '%s' does not start with '%s'",
                  c->what, error->message, c->prefix);
    ck_assert_msg(strstr(error->message, c->fragment) != NULL, "%s: '%s' does not contain '%s'",
                  c->what, error->message, c->fragment);
}
END_TEST

static Suite *
scenario_file_suite(void)
{
    Suite *s = suite_create("scenario-file");
    TCase *tc;

    tc = tcase_create("shipped");
    tcase_add_test(tc, test_all_scenarios_load);
    tcase_add_test(tc, test_shipped_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("defaults");
    tcase_add_test(tc, test_defaults_model);
    tcase_add_test(tc, test_cuda_graphs_key);
    tcase_add_test(tc, test_defaults_derived);
    tcase_add_test(tc, test_defaults_op);
    tcase_add_test(tc, test_name_tables);
    tcase_add_test(tc, test_load_missing_file);
    tcase_add_test(tc, test_hardware_path);
    suite_add_tcase(s, tc);

    tc = tcase_create("bad-input");
    tcase_add_loop_test(tc, test_bad_input, 0, G_N_ELEMENTS(bad_cases));
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(scenario_file_suite());
}
