/* Hardware model files: every built-in model loads; every value of the
 * hardware schema survives the writer and the loader; bad inputs give
 * `file:line:column: message` at the right place; model names resolve
 * through TPSIM_MODEL_PATH and unknown ones list the available models. */
#include <check.h>
#include <math.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/collective.h"
#include "cost/hardware-schema.h"
#include "cost/kernel-cost.h"
#include "cost/topology.h"
#include "io/input/model-file.h"
#include "io/output/model-writer.h"

static char *
models_dir(void)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    ck_assert_msg(src != NULL, "TPSIM_SOURCE_DIR is not set");
    return g_build_filename(src, "models", NULL);
}

static char *
model_text(const char *name)
{
    g_autofree char *dir = models_dir();
    g_autofree char *file = g_strconcat(name, ".yaml", NULL);
    g_autofree char *path = g_build_filename(dir, file, NULL);
    char *text = NULL;
    ck_assert(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

static char *
write_temp(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    ck_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

START_TEST(test_all_models_load)
{
    g_autofree char *dir = models_dir();
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *entry;
    guint count = 0;

    ck_assert_ptr_nonnull(d);
    while ((entry = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_suffix(entry, ".yaml"))
            continue;
        g_autofree char *path = g_build_filename(dir, entry, NULL);
        g_autofree char *name = g_strndup(entry, strlen(entry) - 5);
        g_autoptr(GError) error = NULL;
        TpsHardware hw = {0};
        gboolean ok = tps_model_file_load(path, &hw, &error);
        ck_assert_msg(ok, "%s: %s", entry, error ? error->message : "?");
        ck_assert_str_eq(hw.name, name);
        ck_assert_uint_gt(hw.n_tiles, 0);
        ck_assert_uint_gt(hw.sms, 0);
        ck_assert_double_gt(hw.nccl_slot_bytes[TPS_PROTO_LL128], 0);
        tps_hardware_clear(&hw);
        count++;
    }
    ck_assert_uint_ge(count, 3);
}
END_TEST

/* The new models' datasheet figures and what follows from them, by hand:
 * a dense peak is half the sparse one the datasheets give per system
 * (HGX B200: BF16 36 PFLOPS, FP8 72 per 8 GPUs: 2250 and 4500 each; GB200
 * NVL72: 360 and 720 per 72 GPUs: 2500 and 5000; H200: 1979 and 3958 per
 * GPU: 989 and 1979), MXFP8 at the FP8 rate on Blackwell and none on
 * Hopper; the NVLink domain is the node on HGX and the rack of 18 trays
 * of 4 on NVL72, so GPU 71 is tray 17 of rack 0 and GPU 72 tray 18 of
 * rack 1; NVLink 900 GB/s both ways on H200 (450 each way), 1.8 TB/s
 * on Blackwell (900); memory as nvidia-smi reports it (143771 MiB / 1024
 * = 140.401 GiB on H200, 183359 / 1024 = 179.062 on B200); NCCL 2.28's
 * NVLS efficiency 0.74 on Blackwell, Hopper's 0.85 (the default) on H200
 * (tuning.cc nvlsEfficiency). */
static const struct {
    const char *name, *gpu;
    guint sms, gpus, domain;
    double bf16, fp8, mxfp8, nvlink, memory_gib, hbm;
    guint node_of_71, domain_of_72;
    double nvls_efficiency;
} new_models[] = {
    {"h200-sxm", "NVIDIA H200", 132, 8, 8, 989, 1979, 0, 450, 140.401, 4800, 8, 9, 0.85},
    {"b200", "NVIDIA B200", 148, 8, 8, 2250, 4500, 4500, 900, 179.062, 7672, 8, 9, 0.74},
    {"gb200-nvl72", "NVIDIA GB200", 148, 4, 72, 2500, 5000, 5000, 900, 185.0, 7672, 17, 1, 0.74},
};

START_TEST(test_new_models)
{
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_model_file_resolve(new_models[_i].name, NULL, &hw, &error), "%s",
                  error ? error->message : "");
    ck_assert_str_eq(hw.gpu_name, new_models[_i].gpu);
    ck_assert_uint_eq(hw.sms, new_models[_i].sms);
    ck_assert_uint_eq(hw.gpus_per_node, new_models[_i].gpus);
    ck_assert_uint_eq(tps_topo_domain_gpus(&hw), new_models[_i].domain);
    ck_assert_uint_eq(tps_topo_node(&hw, 71), new_models[_i].node_of_71);
    ck_assert_uint_eq(tps_topo_domain(&hw, 72), new_models[_i].domain_of_72);
    ck_assert_double_eq(hw.peak_tflops[TPS_DTYPE_BF16], new_models[_i].bf16);
    ck_assert_double_eq(hw.peak_tflops[TPS_DTYPE_FP16], new_models[_i].bf16);
    ck_assert_double_eq(hw.peak_tflops[TPS_DTYPE_FP8], new_models[_i].fp8);
    ck_assert_double_eq(hw.peak_tflops_mxfp8, new_models[_i].mxfp8);
    ck_assert_double_eq(hw.nvlink_gbps, new_models[_i].nvlink);
    ck_assert_double_eq(hw.memory_gib, new_models[_i].memory_gib);
    ck_assert_double_eq(hw.hbm_gbps, new_models[_i].hbm);
    ck_assert_double_eq(hw.nccl_nvls_efficiency, new_models[_i].nvls_efficiency);
    tps_hardware_clear(&hw);
}
END_TEST

/* The YAML file is the fixture the cost tests write out by hand: check the
 * loaded model reproduces the calibration figures too. */
START_TEST(test_a100_reproduces_calibration)
{
    g_autofree char *dir = models_dir();
    g_autofree char *path = g_build_filename(dir, "a100-sxm4-80gb.yaml", NULL);
    g_autoptr(GError) error = NULL;
    TpsHardware hw = {0};
    TpsKernelCost cost;
    TpsCollPlan plan;

    ck_assert_msg(tps_model_file_load(path, &hw, &error), "%s", error ? error->message : "");
    ck_assert_str_eq(hw.gpu_name, "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(hw.sms, 108);
    ck_assert_uint_eq(hw.n_tiles, 8);
    ck_assert_double_eq(hw.k_overhead, 100.9);
    ck_assert_double_eq(hw.nccl_channel_gbps[TPS_PROTO_SIMPLE], 12.42);
    ck_assert_double_eq(hw.nccl_channel_mem_gbps, 50.4);
    ck_assert_double_eq(hw.nccl_slot_bytes[TPS_PROTO_LL], 4096);

    tps_cost_gemm(&hw, TPS_DTYPE_FP16, 8192, 8192, 8192, 0, &cost);
    double tflops = cost.flops / (double)tps_kernel_cost_solo_ns(&hw, &cost, hw.sms) * 1e-3;
    ck_assert_double_eq_tol(tflops / 253.7, 1.0, 0.10);

    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 16777216.0, 8, &plan);
    TpsTime t = tps_coll_time_ns(&hw, &plan) + tps_cost_launch_ns(&hw);
    ck_assert_double_eq_tol(tps_coll_busbw_gbps(TPS_COLL_ALL_REDUCE, 8, 16777216.0, t) / 109.22,
                            1.0, 0.15);
    tps_hardware_clear(&hw);
}
END_TEST

/* Each built-in model, written by the writer and loaded again, has every
 * value of the schema as before (the models state at most 6 significant
 * digits, which the writer keeps), and writing that again gives the same
 * text. */
/* A model without measurements of its own has error bands at least as
 * wide as the validated model's in every class, and says why; the 40 GB
 * A100 shares the 80 GB one's cost parameters and so its bands. */
START_TEST(test_unmeasured_bands_wider)
{
    /* h20 has no measurement of its own: its bands are the widest A100 ones.
     * h100-sxm has vidur's H100 profiles: its measured classes are its own
     * residuals (not the A100 envelope), the rest their envelope. */
    TpsHardware a100 = {0}, a40 = {0}, h20 = {0}, h100 = {0};
    ck_assert(tps_model_file_resolve("a100-sxm4-80gb", NULL, &a100, NULL));
    ck_assert(tps_model_file_resolve("a100-sxm4-40gb", NULL, &a40, NULL));
    ck_assert(tps_model_file_resolve("h20", NULL, &h20, NULL));
    ck_assert(tps_model_file_resolve("h100-sxm", NULL, &h100, NULL));
    gboolean wider = FALSE;
    double lo = INFINITY, hi = -INFINITY;
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        ck_assert_double_le(h20.band_p10_pct[c], a100.band_p10_pct[c]);
        ck_assert_double_ge(h20.band_p90_pct[c], a100.band_p90_pct[c]);
        wider |= h20.band_p10_pct[c] < a100.band_p10_pct[c] ||
                 h20.band_p90_pct[c] > a100.band_p90_pct[c];
        ck_assert_double_eq(a40.band_p10_pct[c], a100.band_p10_pct[c]);
        ck_assert_double_eq(a40.band_p90_pct[c], a100.band_p90_pct[c]);
        lo = MIN(lo, h100.band_p10_pct[c]);
        hi = MAX(hi, h100.band_p90_pct[c]);
    }
    ck_assert(wider);
    ck_assert_ptr_nonnull(strstr(h20.band_basis, "no H20 measurement"));
    ck_assert_ptr_nonnull(strstr(h100.band_basis, "vidur H100"));
    /* The H100 GEMM band is narrower than its envelope (the memory class's
     * p10 is lower), and the unmeasured classes take that envelope. */
    ck_assert_double_gt(h100.band_p10_pct[TPS_BAND_GEMM], lo);
    ck_assert_double_eq(h100.band_p10_pct[TPS_BAND_COLLECTIVE], lo);
    ck_assert_double_eq(h100.band_p90_pct[TPS_BAND_HOST], hi);
    /* The new models take the envelope of the A100 classes (the lowest p10,
     * the highest p90 of a100-sxm4-80gb) in every class, each saying which
     * GPU has no measurement. */
    double lowest = a100.band_p10_pct[0], highest = a100.band_p90_pct[0];
    for (guint c = 1; c < TPS_BAND_COUNT; c++) {
        lowest = MIN(lowest, a100.band_p10_pct[c]);
        highest = MAX(highest, a100.band_p90_pct[c]);
    }
    static const char *const unmeasured[][2] = {{"h200-sxm", "no H200 measurement"},
                                                {"b200", "no B200 measurement"},
                                                {"gb200-nvl72", "no GB200 measurement"}};
    for (guint i = 0; i < G_N_ELEMENTS(unmeasured); i++) {
        TpsHardware hw = {0};
        ck_assert(tps_model_file_resolve(unmeasured[i][0], NULL, &hw, NULL));
        for (guint c = 0; c < TPS_BAND_COUNT; c++) {
            ck_assert_double_eq(hw.band_p10_pct[c], lowest);
            ck_assert_double_eq(hw.band_p90_pct[c], highest);
        }
        ck_assert_ptr_nonnull(strstr(hw.band_basis, unmeasured[i][1]));
        tps_hardware_clear(&hw);
    }
    tps_hardware_clear(&a100);
    tps_hardware_clear(&a40);
    tps_hardware_clear(&h20);
    tps_hardware_clear(&h100);
}
END_TEST

START_TEST(test_write_reload)
{
    g_autofree char *dir = models_dir();
    g_autofree char *tmp = g_dir_make_tmp("tpsim-model-XXXXXX", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *entry;
    guint n, compared = 0;
    const TpsHardwareField *fields = tps_hardware_schema(&n);

    ck_assert_ptr_nonnull(d);
    while ((entry = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_suffix(entry, ".yaml"))
            continue;
        g_autofree char *path = g_build_filename(dir, entry, NULL);
        g_autoptr(GError) error = NULL;
        TpsHardware hw = {0}, back = {0};
        ck_assert_msg(tps_model_file_load(path, &hw, &error), "%s", error ? error->message : "?");
        g_autofree char *text =
            tps_model_write(&hw, "written by test-model-file", NULL, NULL, "a comment");
        g_autofree char *copy = write_temp(tmp, entry, text);
        ck_assert_msg(tps_model_file_load(copy, &back, &error), "%s: %s", entry,
                      error ? error->message : "?");

        for (guint i = 0; i < n; i++) {
            const TpsHardwareField *f = &fields[i];
            guint count = tps_hardware_field_count(f, &hw);
            ck_assert_uint_eq(tps_hardware_field_count(f, &back), count);
            ck_assert_uint_gt(count, 0);
            for (guint v = 0; v < count; v++) {
                g_autofree char *key = tps_hardware_field_path(f, v);
                gsize off = tps_hardware_field_offset(f, v);
                if (f->type == TPS_HW_STRING)
                    /* An optional string left out is NULL on both sides. */
                    ck_assert_int_eq(g_strcmp0(*(char **)(void *)((char *)&back + off),
                                               *(char **)(void *)((char *)&hw + off)),
                                     0);
                else
                    ck_assert_msg(
                        tps_hardware_field_get(f, &back, v) == tps_hardware_field_get(f, &hw, v),
                        "%s %s: %g written, %g read back", entry, key,
                        tps_hardware_field_get(f, &hw, v), tps_hardware_field_get(f, &back, v));
                compared++;
            }
        }
        g_autofree char *again =
            tps_model_write(&back, "written by test-model-file", NULL, NULL, "a comment");
        ck_assert_str_eq(again, text);
        tps_hardware_clear(&hw);
        tps_hardware_clear(&back);
        g_unlink(copy);
    }
    g_rmdir(tmp);
    /* A model has 42 values besides its tiles, and 3 per tile: the two
     * A100s have 8 tiles, the H100 7. */
    ck_assert_uint_ge(compared, 2 * (42 + 3 * 8) + (42 + 3 * 7));
}
END_TEST

/* Values of a100-sxm4-80gb.yaml by path, as written in the file. */
static const struct {
    const char *path;
    double value;
} a100_values[] = {
    {"gpu.sms", 108},
    {"gpu.peak_tflops.fp16", 312},
    {"gpu.launch_us", 3.0},
    {"gemm.tiles.0.m", 256},
    {"gemm.tiles.4.n", 256},
    {"gemm.tiles.7.efficiency", 0.885},
    {"gemm.k_overhead", 100.9},
    {"gemm.latency_us", 6.08},
    {"gemm.split_k_min_k", 256},
    {"gpu.l2_mib", 40},
    {"node.gpus", 8},
    {"node.nvlink_gbps", 300},
    {"network.latency_us", 2.7},
    {"nccl.threads", 512},
    {"nccl.hw_latency_us.ll128", 1.9},
    {"nccl.channel_gbps.ll", 3.654},
    {"nccl.slot_bytes.simple", 131072},
    {"nccl.channel_mem_gbps", 50.4},
    {"nccl.p2p_channels", 8},
};

START_TEST(test_get_by_path)
{
    g_autofree char *dir = models_dir();
    g_autofree char *path = g_build_filename(dir, "a100-sxm4-80gb.yaml", NULL);
    g_autoptr(GError) error = NULL;
    TpsHardware hw = {0};
    double v = -1;

    ck_assert_msg(tps_model_file_load(path, &hw, &error), "%s", error ? error->message : "?");
    ck_assert_msg(tps_hardware_schema_get(&hw, a100_values[_i].path, &v, &error), "%s",
                  error ? error->message : "?");
    ck_assert_double_eq(v, a100_values[_i].value);
    tps_hardware_clear(&hw);
}
END_TEST

/* Mutations of a100-sxm4-80gb.yaml: `find` (unique in the file) becomes
 * `replace`; the error must point at the line of `find` and at the column of
 * `at` within the new line (or `column` when the error is at a map). */
static const struct {
    const char *find, *replace, *at;
    guint column;
    const char *message;
} bad[] = {
    {"  sms: 108", "  smss: 108", "smss", 0, "unknown key 'smss'"},
    {"  sms: 108", "  smss: 108", "smss", 0, "did you mean 'sms'"},
    {"  sms: 108", "  sms: many", "many", 0, "sms"},
    {"  sms: 108", "  sms: 0", "0", 0, "sms"},
    {"  sms: 108", "  sms: 5000", "5000", 0, "sms"},
    {"  hbm_efficiency: 0.90", "  hbm_efficiency: 1.5", "1.5", 0, "hbm_efficiency"},
    {"    ll128: 20.0", "    ll128: [20.0]", "[", 0, "ll128"},
    {"    - {m: 64, n: 64, efficiency: 0.885}", "    - {m: 64, n: 64, efficiency: 1.5}", "1.5", 0,
     "efficiency"},
    {"    - {m: 64, n: 64, efficiency: 0.885}", "    - {m: 64, n: 64, effciency: 0.8}", "effciency",
     0, "did you mean 'efficiency'"},
    {"attention:\n", "atention:\n", "atention", 0, "did you mean 'attention'"},
    {"  nic_gbps: 24", "  nic_gbps: fast", "fast", 0, "nic_gbps"},
    /* NCCL_ALGO / NCCL_PROTO lists, refused at their key's value. */
    {"  channels: 24 ", "  algo: Ring,Trie\n  channels: 24 ", "Ring,Trie", 0,
     "unknown name at 'Trie'"},
    {"  channels: 24 ", "  proto: ^LL,LL128,Simple\n  channels: 24 ", "^LL", 0, "allows nothing"},
    /* Per-function lists (NCCL 2.24's parseList): every list after the
     * first names its function, the function one NCCL has; none before
     * 2.24, whose NCCL reads the value as one list. */
    {"  channels: 24 ", "  algo: \"AllReduce:Tree;Ring\"\n  channels: 24 ", "\"AllReduce", 0,
     "every list after the first names its function"},
    {"  channels: 24 ", "  algo: \"Ring;AllGathr:Ring\"\n  channels: 24 ", "\"Ring", 0,
     "unknown function at 'AllGathr:Ring'"},
    {"  channels: 24 ", "  algo: \"AllReduce:Tree\"\n  version: \"2.23\"\n  channels: 24 ",
     "\"AllReduce", 0, "per-function lists are NCCL 2.24's; NCCL 2.23 reads"},
    {"  channels: 24 ", "  proto: \"AllReduce:^LL,LL128,Simple\"\n  channels: 24 ", "\"AllReduce",
     0, "allows nothing"},
    /* nccl.version: a release whose tuning tables tpsim holds (2.18-2.28),
     * refused at its value otherwise. */
    {"  channels: 24 ", "  version: \"2.17.1\"\n  channels: 24 ", "\"2.17.1\"", 0,
     "nccl.version '2.17.1': no tuning tables for it (known: 2.18 to 2.28"},
    {"  channels: 24 ", "  version: \"2.29\"\n  channels: 24 ", "\"2.29\"", 0,
     "nccl.version '2.29'"},
    {"  channels: 24 ", "  version: \"v2.19\"\n  channels: 24 ", "\"v2.19\"", 0,
     "nccl.version 'v2.19'"},
    {"  channels: 24 ", "  no_ll128_net: 2\n  channels: 24 ", "2\n", 0, "no_ll128_net"},
};

static guint
line_of(const char *text, const char *where)
{
    guint line = 1;
    for (const char *c = text; c < where; c++)
        if (*c == '\n')
            line++;
    return line;
}

static void
expect_error(const char *path, guint line, guint column, const char *message)
{
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_model_file_load(path, &hw, &error));
    ck_assert_ptr_nonnull(error);
    g_autofree char *prefix = g_strdup_printf("%s:%u:%u: ", path, line, column);
    printf("# %s\n", error->message);
    fflush(stdout);
    ck_assert_msg(g_str_has_prefix(error->message, prefix), "'%s' does not start with '%s'",
                  error->message, prefix);
    ck_assert_msg(strstr(error->message, message) != NULL, "'%s' lacks '%s'", error->message,
                  message);
    ck_assert_ptr_null(hw.name);
}

START_TEST(test_bad_input)
{
    g_autofree char *text = model_text("a100-sxm4-80gb");
    g_autofree char *dir = g_dir_make_tmp("tpsim-model-XXXXXX", NULL);
    const char *hit = strstr(text, bad[_i].find);

    ck_assert_ptr_nonnull(hit);
    ck_assert_ptr_null(strstr(hit + 1, bad[_i].find));
    GString *mutated = g_string_new_len(text, hit - text);
    g_string_append(mutated, bad[_i].replace);
    g_string_append(mutated, hit + strlen(bad[_i].find));
    g_autofree char *out = g_string_free(mutated, FALSE);
    g_autofree char *path = write_temp(dir, "bad.yaml", out);

    guint column = bad[_i].column;
    if (column == 0)
        column = (guint)(strstr(bad[_i].replace, bad[_i].at) - bad[_i].replace) + 1;
    expect_error(path, line_of(text, hit), column, bad[_i].message);
    g_unlink(path);
    g_rmdir(dir);
}
END_TEST

/* Where nccl.algo was written is kept for the errors of the calls it
 * leaves nothing for (cost/nccl-env.h): the value's line and column; a
 * per-function list is read (the default constants read them as 2.24
 * does). */
START_TEST(test_nccl_algo_position)
{
    g_autofree char *text = model_text("a100-sxm4-80gb");
    const char *hit = strstr(text, "  channels: 24 ");
    ck_assert_ptr_nonnull(hit);
    GString *s = g_string_new_len(text, hit - text);
    g_string_append(s, "  algo: \"AllReduce:Tree;AllGather:Ring\"\n");
    g_string_append(s, hit);
    g_autofree char *out = g_string_free(s, FALSE);
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_model_file_load_string("m.yaml", out, -1, &hw, &error), "%s",
                  error ? error->message : "");
    g_autofree char *want = g_strdup_printf("m.yaml:%u:9", line_of(text, hit));
    ck_assert_str_eq(hw.nccl_algo_at, want);
    ck_assert_ptr_null(hw.nccl_proto_at);
    TpsHardware copy;
    tps_hardware_copy(&copy, &hw);
    ck_assert_str_eq(copy.nccl_algo_at, want);
    tps_hardware_clear(&copy);
    tps_hardware_clear(&hw);
}
END_TEST

START_TEST(test_missing_key)
{
    /* Without gpu.sms the error is at the gpu map, whose first key is
     * `name` on the line after `gpu:`. */
    g_autofree char *text = model_text("a100-sxm4-80gb");
    g_autofree char *dir = g_dir_make_tmp("tpsim-model-XXXXXX", NULL);
    char *sms = strstr(text, "  sms: 108");
    char *end = strchr(sms, '\n');
    memmove(sms, end + 1, strlen(end + 1) + 1);
    g_autofree char *path = write_temp(dir, "missing.yaml", text);
    const char *gpu_name = strstr(text, "  name: \"NVIDIA");
    expect_error(path, line_of(text, gpu_name), 3, "missing key 'sms' in gpu");
    g_unlink(path);
    g_rmdir(dir);
}
END_TEST

/* An empty model file (or one of comments only) is an error at 1:1, like
 * the other loaders' empty files (issue 13). */
START_TEST(test_empty_model)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-model-XXXXXX", NULL);
    static const char *const texts[] = {"", "# nothing but a comment\n"};
    for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
        g_autofree char *path = write_temp(dir, "empty.yaml", texts[i]);
        expect_error(path, 1, 1, "empty hardware model file");
        g_unlink(path);
    }
    g_rmdir(dir);
}
END_TEST

START_TEST(test_missing_name)
{
    g_autofree char *text = model_text("a100-sxm4-80gb");
    g_autofree char *dir = g_dir_make_tmp("tpsim-model-XXXXXX", NULL);
    char *name = strstr(text, "name: a100-sxm4-80gb\n");
    ck_assert_ptr_nonnull(name);
    memcpy(name, "#", 1); /* comment the line out */
    g_autofree char *path = write_temp(dir, "noname.yaml", text);
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_model_file_load(path, &hw, &error));
    ck_assert_ptr_nonnull(strstr(error->message, "missing key 'name'"));
    ck_assert(g_str_has_prefix(error->message, path));
    g_unlink(path);
    g_rmdir(dir);
}
END_TEST

START_TEST(test_unknown_model_name)
{
    g_autofree char *dir = models_dir();
    g_setenv("TPSIM_MODEL_PATH", dir, TRUE);
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_model_file_resolve("a100", NULL, &hw, &error));
    printf("# %s\n", error->message);
    fflush(stdout);
    ck_assert(g_str_has_prefix(error->message, "unknown hardware model 'a100'; available: "));
    ck_assert_ptr_nonnull(
        strstr(error->message,
               "a100-sxm4-40gb, a100-sxm4-80gb, b200, gb200-nvl72, h100-sxm, h20, h200-sxm"));
}
END_TEST

START_TEST(test_resolve)
{
    g_autofree char *dir = models_dir();
    g_autofree char *tmp = g_dir_make_tmp("tpsim-model-XXXXXX", NULL);
    g_autofree char *text = model_text("h100-sxm");
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;

    /* By name, from TPSIM_MODEL_PATH first (a folder that does not exist is
     * skipped). */
    g_autofree char *search = g_strdup_printf("/nonexistent:%s", dir);
    g_setenv("TPSIM_MODEL_PATH", search, TRUE);
    ck_assert_msg(tps_model_file_resolve("h100-sxm", NULL, &hw, &error), "%s",
                  error ? error->message : "");
    ck_assert_str_eq(hw.name, "h100-sxm");
    ck_assert_uint_eq(hw.sms, 132);

    g_auto(GStrv) path = tps_model_file_search_path();
    ck_assert_str_eq(path[0], "/nonexistent");
    ck_assert_str_eq(path[1], dir);
    g_auto(GStrv) names = tps_model_file_list();
    ck_assert_str_eq(names[0], "a100-sxm4-40gb");

    /* By path relative to the scenario's folder. */
    g_autofree char *copy = write_temp(tmp, "mine.yaml", text);
    ck_assert(tps_model_file_resolve("mine.yaml", tmp, &hw, &error));
    ck_assert_str_eq(hw.name, "h100-sxm");

    /* A NAME whose file says another name is rejected. */
    g_autofree char *renamed = write_temp(tmp, "other.yaml", text);
    g_autofree char *search2 = g_strdup_printf("%s:%s", tmp, dir);
    g_setenv("TPSIM_MODEL_PATH", search2, TRUE);
    ck_assert(!tps_model_file_resolve("other", NULL, &hw, &error));
    ck_assert_ptr_nonnull(strstr(error->message, "does not match"));
    ck_assert_str_eq(hw.name, "h100-sxm"); /* untouched on failure */
    tps_hardware_clear(&hw);
    g_unlink(copy);
    g_unlink(renamed);
    g_rmdir(tmp);
}
END_TEST

static Suite *
model_file_suite(void)
{
    Suite *s = suite_create("model-file");
    TCase *tc;

    tc = tcase_create("load");
    tcase_add_test(tc, test_all_models_load);
    tcase_add_test(tc, test_a100_reproduces_calibration);
    tcase_add_loop_test(tc, test_new_models, 0, G_N_ELEMENTS(new_models));
    suite_add_tcase(s, tc);

    tc = tcase_create("schema");
    tcase_add_test(tc, test_unmeasured_bands_wider);
    tcase_add_test(tc, test_write_reload);
    tcase_add_loop_test(tc, test_get_by_path, 0, G_N_ELEMENTS(a100_values));
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_bad_input, 0, G_N_ELEMENTS(bad));
    tcase_add_test(tc, test_nccl_algo_position);
    tcase_add_test(tc, test_missing_key);
    tcase_add_test(tc, test_missing_name);
    tcase_add_test(tc, test_empty_model);
    suite_add_tcase(s, tc);

    tc = tcase_create("resolve");
    tcase_add_test(tc, test_unknown_model_name);
    tcase_add_test(tc, test_resolve);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(model_file_suite());
}
