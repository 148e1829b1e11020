/* tpsim-gpubench, CPU side: shape lists (defaults, scenarios, the command
 * line), the size sweep, SM and rank counts, argument handling, the plan;
 * the driver run on a fake device table (the cost model standing in for
 * a GPU) whose YAML reads back and calibrates; and the built binary's
 * no-GPU path (exit 3, one line), which is what this machine has either
 * way (CUDA build without a GPU, or the CPU stub). */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calibrate.h"
#include "calib/gpu/bench-algo.h"
#include "calib/gpu/bench-plan.h"
#include "core/error.h"
#include "io/input/measurements-file.h"
#include "io/input/model-file.h"
#include "io/input/scenario-file.h"

static gboolean
has_shape(const GArray *shapes, guint64 m, guint64 n, guint64 k)
{
    for (guint i = 0; i < shapes->len; i++) {
        const TpsBenchShape *s = &g_array_index(shapes, TpsBenchShape, i);
        if (s->m == m && s->n == n && s->k == k)
            return TRUE;
    }
    return FALSE;
}

static void
assert_unique(const GArray *shapes)
{
    for (guint i = 0; i < shapes->len; i++)
        for (guint j = i + 1; j < shapes->len; j++) {
            const TpsBenchShape *a = &g_array_index(shapes, TpsBenchShape, i);
            const TpsBenchShape *b = &g_array_index(shapes, TpsBenchShape, j);
            ck_assert(!(a->m == b->m && a->n == b->n && a->k == b->k && a->dtype == b->dtype));
        }
}

/* --- Shapes --- */

START_TEST(test_parse_shape)
{
    TpsBenchShape s;
    ck_assert(tps_bench_parse_shape("8192x6144x12288", &s, NULL));
    ck_assert_uint_eq(s.m, 8192);
    ck_assert_uint_eq(s.n, 6144);
    ck_assert_uint_eq(s.k, 12288);
    ck_assert_int_eq(s.dtype, TPS_DTYPE_BF16);
    ck_assert(tps_bench_parse_shape("1x2x3:fp16", &s, NULL));
    ck_assert_int_eq(s.dtype, TPS_DTYPE_FP16);

    const char *bad[] = {"",      "8192x6144", "1x2x3x4", "0x1x1",
                         "ax1x1", "1x1x1:fp8", "1x-1x1",  "1x1x4294967296"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GError) error = NULL;
        ck_assert_msg(!tps_bench_parse_shape(bad[i], &s, &error), "%s", bad[i]);
        ck_assert_int_eq(error->code, TPS_ERROR_USAGE);
        ck_assert_ptr_nonnull(strstr(error->message, bad[i]));
    }
}
END_TEST

START_TEST(test_parse_bytes)
{
    guint64 b;
    ck_assert(tps_bench_parse_bytes("1024", &b, NULL));
    ck_assert_uint_eq(b, 1024);
    ck_assert(tps_bench_parse_bytes("64K", &b, NULL));
    ck_assert_uint_eq(b, 65536);
    ck_assert(tps_bench_parse_bytes("16m", &b, NULL));
    ck_assert_uint_eq(b, 16u << 20);
    ck_assert(tps_bench_parse_bytes("1G", &b, NULL));
    ck_assert_uint_eq(b, 1u << 30);
    const char *bad[] = {"", "K", "0", "-1", "1.5M", "12Q", "2048G"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
        ck_assert_msg(!tps_bench_parse_bytes(bad[i], &b, NULL), "%s", bad[i]);
}
END_TEST

START_TEST(test_default_shapes)
{
    g_autoptr(GArray) shapes = g_array_new(FALSE, FALSE, sizeof(TpsBenchShape));
    tps_bench_default_shapes(shapes);
    /* GPT-3 175B, TP 8, 2048 tokens: 12 layer GEMMs fold into 10 distinct
     * shapes (fc1_dgrad = fc2_fprop, fc2_dgrad = fc1_fprop), 4 ring chunks,
     * 5 squares. */
    ck_assert_uint_eq(shapes->len, 19);
    assert_unique(shapes);
    ck_assert(has_shape(shapes, 2048, 4608, 12288)); /* qkv_fprop */
    ck_assert(has_shape(shapes, 2048, 12288, 1536)); /* proj_fprop */
    ck_assert(has_shape(shapes, 2048, 6144, 12288)); /* fc1_fprop */
    ck_assert(has_shape(shapes, 2048, 12288, 6144)); /* fc2_fprop */
    ck_assert(has_shape(shapes, 12288, 4608, 2048)); /* qkv_wgrad */
    ck_assert(has_shape(shapes, 6144, 12288, 2048)); /* fc2_wgrad */
    ck_assert(has_shape(shapes, 256, 6144, 12288));  /* fc1 ring chunk */
    ck_assert(has_shape(shapes, 1024, 1024, 1024));
    ck_assert(has_shape(shapes, 16384, 16384, 16384));
}
END_TEST

START_TEST(test_scenario_shapes)
{
    const char *op = "name: t\nhardware: a100-sxm4-80gb\n"
                     "op: {kind: ag_gemm, m: 8192, n: 49152, k: 12288, dtype: fp16}\n"
                     "parallel: {tp: 8}\n";
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("op.yaml", op, -1, &sc, &error), "%s",
                  error ? error->message : "?");
    g_autoptr(GArray) shapes = g_array_new(FALSE, FALSE, sizeof(TpsBenchShape));
    tps_bench_scenario_shapes(shapes, &sc);
    ck_assert_uint_eq(shapes->len, 2);
    ck_assert(has_shape(shapes, 8192, 6144, 12288));
    ck_assert(has_shape(shapes, 1024, 6144, 12288));
    ck_assert_int_eq(g_array_index(shapes, TpsBenchShape, 0).dtype, TPS_DTYPE_FP16);
    tps_scenario_clear(&sc);

    const char *rs = "name: t\nhardware: a100-sxm4-80gb\n"
                     "op: {kind: gemm_rs, m: 8192, n: 12288, k: 49152, dtype: bf16}\n"
                     "parallel: {tp: 4}\n";
    ck_assert(tps_scenario_file_load_string("rs.yaml", rs, -1, &sc, NULL));
    g_array_set_size(shapes, 0);
    tps_bench_scenario_shapes(shapes, &sc);
    ck_assert(has_shape(shapes, 8192, 12288, 12288));
    ck_assert(has_shape(shapes, 2048, 12288, 12288));
    tps_scenario_clear(&sc);
}
END_TEST

/* Every model scenario of scenarios/ gives its layer's GEMMs. */
START_TEST(test_all_scenarios)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    ck_assert(src != NULL);
    g_autofree char *dir = g_build_filename(src, "scenarios", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    ck_assert_ptr_nonnull(d);
    const char *entry;
    guint count = 0;
    while ((entry = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_suffix(entry, ".yaml"))
            continue;
        g_autofree char *path = g_build_filename(dir, entry, NULL);
        TpsBenchOptions o;
        tps_bench_options_init(&o);
        char *argv[] = {"tpsim-gpubench", "--scenario", path, NULL};
        g_autoptr(GError) error = NULL;
        gboolean ok = tps_bench_options_parse(&o, 3, argv, &error);
        ck_assert_msg(ok, "%s: %s", entry, error ? error->message : "?");
        ck_assert_uint_ge(o.shapes->len, 2);
        assert_unique(o.shapes);
        for (guint i = 0; i < o.shapes->len; i++) {
            const TpsBenchShape *s = &g_array_index(o.shapes, TpsBenchShape, i);
            ck_assert(s->m > 0 && s->n > 0 && s->k > 0);
        }
        tps_bench_options_clear(&o);
        count++;
    }
    ck_assert_uint_ge(count, 3);
}
END_TEST

/* --- Sweeps and counts --- */

START_TEST(test_size_sweep)
{
    g_autoptr(GArray) s = tps_bench_size_sweep(1024, (guint64)1 << 30);
    ck_assert_uint_eq(s->len, 21);
    ck_assert_uint_eq(g_array_index(s, guint64, 0), 1024);
    ck_assert_uint_eq(g_array_index(s, guint64, 20), (guint64)1 << 30);
    for (guint i = 1; i < s->len; i++)
        ck_assert_uint_eq(g_array_index(s, guint64, i), 2 * g_array_index(s, guint64, i - 1));
    g_autoptr(GArray) t = tps_bench_size_sweep(1000, 5000);
    ck_assert_uint_eq(t->len, 3); /* 1024, 2048, 4096 */
    ck_assert_uint_eq(g_array_index(t, guint64, 0), 1024);

    ck_assert_uint_eq(tps_bench_iters_for(20, 1024), 20);
    ck_assert_uint_eq(tps_bench_iters_for(20, 64.0 * 1024 * 1024), 20);
    ck_assert_uint_eq(tps_bench_iters_for(20, 256.0 * 1024 * 1024), 5);
    ck_assert_uint_eq(tps_bench_iters_for(20, 1024.0 * 1024 * 1024), 3);
    ck_assert_uint_eq(tps_bench_iters_for(0, 1024), 1);
}
END_TEST

START_TEST(test_sm_counts)
{
    g_autoptr(GArray) d = tps_bench_sm_counts(108, NULL);
    const guint expect[] = {108, 100, 92, 84, 81, 76, 54, 27};
    ck_assert_uint_eq(d->len, G_N_ELEMENTS(expect));
    for (guint i = 0; i < d->len; i++)
        ck_assert_uint_eq(g_array_index(d, guint, i), expect[i]);

    g_autoptr(GArray) req = g_array_new(FALSE, FALSE, sizeof(guint));
    const guint asked[] = {27, 200, 54, 27, 108};
    g_array_append_vals(req, asked, G_N_ELEMENTS(asked));
    g_autoptr(GArray) r = tps_bench_sm_counts(108, req);
    ck_assert_uint_eq(r->len, 3);
    ck_assert_uint_eq(g_array_index(r, guint, 0), 108);
    ck_assert_uint_eq(g_array_index(r, guint, 1), 54);
    ck_assert_uint_eq(g_array_index(r, guint, 2), 27);

    g_autoptr(GArray) h = tps_bench_sm_counts(132, NULL); /* H100 SXM */
    ck_assert_uint_eq(g_array_index(h, guint, 0), 132);
    ck_assert_uint_eq(g_array_index(h, guint, 1), 124);
    g_autoptr(GArray) none = tps_bench_sm_counts(0, NULL);
    ck_assert_uint_eq(none->len, 0);
}
END_TEST

START_TEST(test_rank_counts)
{
    const struct {
        guint gpus;
        guint n;
        guint last;
    } cases[] = {{1, 0, 0}, {2, 1, 2}, {6, 3, 6}, {8, 3, 8}, {16, 4, 16}};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GArray) r = tps_bench_rank_counts(cases[i].gpus);
        ck_assert_uint_eq(r->len, cases[i].n);
        if (r->len > 0) {
            ck_assert_uint_eq(g_array_index(r, guint, 0), 2);
            ck_assert_uint_eq(g_array_index(r, guint, r->len - 1), cases[i].last);
        }
    }
}
END_TEST

/* --- Arguments --- */

static gboolean
parse(TpsBenchOptions *o, GError **error, ...)
{
    va_list ap;
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, "tpsim-gpubench");
    va_start(ap, error);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL)
        g_ptr_array_add(argv, (char *)a);
    va_end(ap);
    tps_bench_options_init(o);
    return tps_bench_options_parse(o, (int)argv->len, (char **)argv->pdata, error);
}

START_TEST(test_options)
{
    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, NULL));
    ck_assert_uint_eq(o.iters, 20);
    ck_assert_uint_eq(o.min_bytes, 1024);
    ck_assert_uint_eq(o.max_bytes, (guint64)1 << 30);
    ck_assert_uint_eq(o.sections, TPS_BENCH_SECTION_ALL);
    ck_assert_uint_eq(o.shapes->len, 19);
    ck_assert_ptr_null(o.output);
    ck_assert(!o.plan_only);
    tps_bench_options_clear(&o);

    ck_assert(parse(&o, NULL, "--shape", "4096x4096x4096", "--shape", "1x2x3:fp16", "--shape",
                    "4096x4096x4096", "-o", "out.yaml", "--only", "gemm, launch", "--sms", "54,27",
                    "--min-bytes", "4K", "--max-bytes", "64M", "--iters", "5", "--gpus", "4",
                    "--op", "4096x16384x4096", "--tp", "4", "--splits", "8", "--plan", NULL));
    ck_assert_uint_eq(o.shapes->len, 2);
    ck_assert_str_eq(o.output, "out.yaml");
    ck_assert_uint_eq(o.sections, TPS_BENCH_SECTION_GEMM | TPS_BENCH_SECTION_LAUNCH);
    ck_assert_uint_eq(o.sms->len, 2);
    ck_assert_uint_eq(o.min_bytes, 4096);
    ck_assert_uint_eq(o.max_bytes, 64u << 20);
    ck_assert_uint_eq(o.iters, 5);
    ck_assert_uint_eq(o.max_gpus, 4);
    ck_assert_uint_eq(o.op.n, 16384);
    ck_assert_uint_eq(o.op_tp, 4);
    ck_assert_uint_eq(o.splits, 8);
    ck_assert(o.plan_only);
    tps_bench_options_clear(&o);

    /* An op scenario sets the strategies' op and tp. */
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    g_autofree char *op = g_build_filename(src, "scenarios", "op-ag-gemm.yaml", NULL);
    if (g_file_test(op, G_FILE_TEST_EXISTS)) {
        ck_assert(parse(&o, NULL, "--scenario", op, NULL));
        ck_assert_uint_eq(o.op.m, 8192);
        ck_assert_uint_eq(o.op_tp, 8);
        ck_assert_uint_eq(o.shapes->len, 2);
        tps_bench_options_clear(&o);
    }
}
END_TEST

static const struct {
    const char *args[4];
    int code;
    const char *message;
} bad_options[] = {
    {{"--bogus"}, TPS_ERROR_USAGE, "bogus"},
    {{"extra"}, TPS_ERROR_USAGE, "unexpected argument 'extra'"},
    {{"--shape", "1x2"}, TPS_ERROR_USAGE, "invalid shape"},
    {{"--only", "gemm,nope"}, TPS_ERROR_USAGE, "unknown measurement 'nope'"},
    {{"--min-bytes", "1M", "--max-bytes", "1K"}, TPS_ERROR_USAGE, "larger than"},
    {{"--iters", "0"}, TPS_ERROR_USAGE, "--iters"},
    {{"--tp", "1"}, TPS_ERROR_USAGE, "--tp"},
    {{"--sms", "54,x"}, TPS_ERROR_USAGE, "--sms"},
    {{"--scenario", "/nonexistent/s.yaml"}, TPS_ERROR_IO, "s.yaml"},
};

START_TEST(test_bad_options)
{
    TpsBenchOptions o;
    g_autoptr(GError) error = NULL;
    const char *const *a = bad_options[_i].args;
    ck_assert(!parse(&o, &error, a[0], a[1], a[2], a[3], NULL));
    ck_assert_msg(error->code == bad_options[_i].code ||
                      (bad_options[_i].code == TPS_ERROR_IO && error->code == TPS_ERROR_INPUT),
                  "%d: %s", error->code, error->message);
    ck_assert_msg(strstr(error->message, bad_options[_i].message) != NULL, "%s", error->message);
    tps_bench_options_clear(&o);
}
END_TEST

START_TEST(test_plan_describe)
{
    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, NULL));
    g_autofree char *plan = tps_bench_plan_describe(&o, 8, 108);
    ck_assert_ptr_nonnull(strstr(plan, "8 GPUs of 108 SMs"));
    ck_assert_ptr_nonnull(
        strstr(plan, "gemm: 19 shapes x 8 SM counts (108 100 92 84 81 76 54 27)"));
    ck_assert_ptr_nonnull(strstr(plan, "  2048x4608x12288 bf16\n"));
    ck_assert_ptr_nonnull(
        strstr(plan, "over 2 4 8 ranks, send_recv over 2; 21 sizes, 1 KiB to 1 GiB"));
    ck_assert_ptr_nonnull(strstr(plan, "copies: copy-engine P2P GPU 0 -> 1, 21 sizes"));
    ck_assert_ptr_nonnull(strstr(plan, "strategies: op 8192x49152x12288 bf16 over tp 8, 4 splits: "
                                       "blocking_ag_gemm ring_exchange_ag_gemm pipeline_gemm_rs "
                                       "bulk_overlap"));
    ck_assert_ptr_nonnull(strstr(plan, "output: standard output"));
    g_autofree char *one = tps_bench_plan_describe(&o, 1, 132);
    ck_assert_ptr_nonnull(strstr(one, "collectives: skipped (needs 2 GPUs)"));
    ck_assert_ptr_nonnull(strstr(one, "strategies: skipped (needs 2 GPUs)"));
    tps_bench_options_clear(&o);
}
END_TEST

/* --- The driver on a fake device: the cost model of a "true" A100 --- */

static TpsHardware fake_hw;
static guint fake_calls;
static gboolean fake_fail_collectives;

static int
fake_gemm(long m, long n, long k, int dtype, int sms, int iters, double *time_us, char *err,
          size_t err_len)
{
    TpsGemmPoint p = {(guint64)m, (guint64)n, (guint64)k, (TpsDtype)dtype, (guint)sms, 0};
    double tflops = tps_calib_predict_gemm(&fake_hw, &p);
    *time_us = 2.0 * m * n * k / tflops / 1e6;
    fake_calls++;
    return TPS_BENCH_OK;
}

static int
fake_collective(int kind, size_t bytes, int ranks, int iters, double *time_us, char *err,
                size_t err_len)
{
    if (fake_fail_collectives) {
        snprintf(err, err_len, "ncclAllGather: unhandled cuda error");
        return TPS_BENCH_FAILED;
    }
    ck_assert_int_eq(bytes % (2 * (size_t)ranks), 0);
    TpsCollPoint p = {(TpsMeasColl)kind, (double)bytes, (guint)ranks, 0, TRUE};
    *time_us = tps_calib_predict_coll(&fake_hw, &p);
    fake_calls++;
    return TPS_BENCH_OK;
}

static int
fake_copy(size_t bytes, int iters, double *time_us, char *err, size_t err_len)
{
    TpsCopyPoint p = {(double)bytes, 0};
    *time_us = tps_calib_predict_copy(&fake_hw, &p) + 2.0;
    fake_calls++;
    return TPS_BENCH_OK;
}

static int
fake_launch(int iters, double *kernel_us, double *event_us, char *err, size_t err_len)
{
    ck_assert_int_ge(iters, 100);
    *kernel_us = fake_hw.launch_us;
    *event_us = 0.9;
    fake_calls++;
    return TPS_BENCH_OK;
}

static int
fake_overlap(long m, long n, long k, int dtype, int comm, size_t bytes, int ranks, int iters,
             double *alone_us, double *beside_us, char *err, size_t err_len)
{
    CK_ATTRIBUTE_UNUSED int rc = fake_gemm(m, n, k, dtype, 0, iters, alone_us, err, err_len);
    *beside_us = *alone_us * 1.2;
    return TPS_BENCH_OK;
}

static int
fake_strategy(int strategy, long m, long n, long k, int dtype, int tp, int splits, int iters,
              double *time_us, char *err, size_t err_len)
{
    ck_assert_int_ge(tp, 2);
    *time_us = 1000.0 + strategy;
    fake_calls++;
    return TPS_BENCH_OK;
}

/* cuBLASLt's ids for the fake's kernels: CUBLASLT_MATMUL_TILE_128x256
 * (23), a split of 2 below 2048 rows, cluster 2x1x1 (3). */
static int
fake_gemm_algo(long m, long n, long k, int dtype, TpsBenchGemmAlgo *out, char *err, size_t err_len)
{
    (void)n, (void)k, (void)dtype, (void)err, (void)err_len;
    *out = (TpsBenchGemmAlgo){66, 23, m < 2048 ? 2 : 1, 3};
    fake_calls++;
    return 0;
}

static void
fake_close(void)
{
}

static const TpsBenchDevice fake_device = {
    .name = "fake",
    .gemm = fake_gemm,
    .gemm_algo = fake_gemm_algo,
    .collective = fake_collective,
    .copy = fake_copy,
    .launch = fake_launch,
    .overlap = fake_overlap,
    .strategy = fake_strategy,
    .close = fake_close,
};

START_TEST(test_driver)
{
    memset(&fake_hw, 0, sizeof(fake_hw));
    ck_assert(tps_model_file_resolve("a100-sxm4-80gb", NULL, &fake_hw, NULL));
    fake_hw.k_overhead = 400;
    fake_hw.nccl_channel_gbps[TPS_PROTO_SIMPLE] = 9.0;
    fake_hw.copy_engine_gbps = 190;
    fake_hw.launch_us = 2.2;
    fake_calls = 0;
    fake_fail_collectives = FALSE;

    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, "--max-bytes", "1G", "--shape", "8192x8192x8192", "--shape",
                    "2048x6144x12288", "--shape", "1024x1024x1024", "--iters", "3", NULL));
    TpsBenchDeviceInfo info = {.gpus = 8, .sms = 108};
    g_strlcpy(info.name, "NVIDIA A100-SXM4-80GB", sizeof(info.name));
    g_strlcpy(info.cuda, "13.0", sizeof(info.cuda));
    g_strlcpy(info.nccl, "2.28.9", sizeof(info.nccl));

    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_bench_run(&fake_device, &info, &o, m, NULL, &error), "%s",
                  error ? error->message : "?");
    ck_assert_str_eq(m->gpu, "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(m->gpus, 8);
    ck_assert_uint_eq(m->launch->len, 10);
    ck_assert_uint_eq(m->gemm->len, 3 * 8);
    /* 21 sizes x (3 collectives x ranks 2, 4, 8 + send/recv) */
    ck_assert_uint_eq(m->collectives->len, 21 * 10);
    ck_assert_uint_eq(m->copies->len, 21);
    ck_assert_uint_eq(m->overlap->len, 3 * 2);
    ck_assert_uint_eq(m->strategies->len, 4);
    /* One kernel a shape, in this project's m x n: the library's 128x256
     * is 128 along n and 256 along m; its cluster's 2 is along n. */
    ck_assert_uint_eq(m->gemm_algos->len, 3);
    const TpsGemmAlgoPoint *al = &g_array_index(m->gemm_algos, TpsGemmAlgoPoint, 2);
    ck_assert(al->m == 1024 && al->n == 1024 && al->k == 1024 && al->dtype == TPS_DTYPE_BF16);
    ck_assert(al->algo == 66 && al->tile_id == 23 && al->tile_m == 256 && al->tile_n == 128);
    ck_assert(al->split_k == 2 && al->cluster_m == 1 && al->cluster_n == 2);
    ck_assert_uint_eq(g_array_index(m->gemm_algos, TpsGemmAlgoPoint, 0).split_k, 1);
    const TpsStrategyPoint *ring = &g_array_index(m->strategies, TpsStrategyPoint, 1);
    ck_assert_str_eq(ring->name, "ring_exchange_ag_gemm");
    ck_assert_uint_eq(ring->tp, 8);
    ck_assert_str_eq(g_array_index(m->strategies, TpsStrategyPoint, 2).op, "gemm_rs");
    ck_assert_uint_eq(g_array_index(m->strategies, TpsStrategyPoint, 2).splits, 4);
    const TpsGemmPoint *g0 = &g_array_index(m->gemm, TpsGemmPoint, 0);
    ck_assert_uint_eq(g0->sms, 108);
    ck_assert_uint_eq(g_array_index(m->gemm, TpsGemmPoint, 7).sms, 27);

    /* The YAML reads back and calibrates to the fake's parameters. */
    g_autofree char *text = tps_measurements_format(m);
    g_autoptr(TpsMeasurements) back = tps_measurements_new();
    ck_assert_msg(tps_measurements_file_load_string("bench.yaml", text, -1, back, &error), "%s",
                  error ? error->message : "?");
    ck_assert_uint_eq(tps_measurements_count(back), tps_measurements_count(m));
    ck_assert_str_eq(back->source, "tpsim-gpubench 0.1.0");
    /* Byte counts are written exactly (1 GiB has 10 digits). */
    ck_assert_ptr_nonnull(strstr(text, "bytes: 1073741824,"));
    for (guint i = 0; i < m->collectives->len; i++)
        ck_assert_double_eq(g_array_index(back->collectives, TpsCollPoint, i).bytes,
                            g_array_index(m->collectives, TpsCollPoint, i).bytes);

    TpsHardware base = {0}, fitted = {0};
    ck_assert(tps_model_file_resolve("a100-sxm4-80gb", NULL, &base, NULL));
    g_autoptr(TpsCalibReport) report = NULL;
    ck_assert(tps_calibrate(&base, back, &fitted, &report, NULL));
    g_autofree char *summary = tps_calib_report_summary(report);
    fprintf(stderr, "driver on the fake device:\n%s\n", summary);
    ck_assert_double_eq_tol(fitted.launch_us, 2.2, 1e-6);
    ck_assert_double_eq_tol(fitted.nccl_channel_gbps[TPS_PROTO_SIMPLE], 9.0, 0.09);
    /* Copies of 8 MiB and more: the fake's 2 us setup is within 1%. */
    ck_assert_double_eq_tol(fitted.copy_engine_gbps, 190, 3.0);
    tps_hardware_clear(&base);
    tps_hardware_clear(&fitted);
    tps_hardware_clear(&fake_hw);
    tps_bench_options_clear(&o);
}
END_TEST

/* cuBLASLt's ids named, from the enumerators of cublasLt.h (CUDA 13.0):
 * CUBLASLT_MATMUL_TILE_64x64 = 15, _128x256 = 23, _256x128 = 24,
 * _256x1024 = 632; CUBLASLT_CLUSTER_SHAPE_2x1x1 = 3, _1x2x1 = 5,
 * _4x2x1 = 7; 0 is UNDEFINED / AUTO. */
static const struct {
    TpsBenchGemmAlgo raw;
    guint tile_m, tile_n, split_k, cluster_m, cluster_n;
} algo_ids[] = {
    {{1, 15, 1, 0}, 64, 64, 1, 0, 0},   {{2, 23, 1, 3}, 256, 128, 1, 1, 2},
    {{3, 24, 4, 5}, 128, 256, 4, 2, 1}, {{4, 632, 1, 7}, 1024, 256, 1, 2, 4},
    {{5, 0, 1, 0}, 0, 0, 1, 0, 0},      {{6, 99999, 0, 99999}, 0, 0, 1, 0, 0},
};

START_TEST(test_algo_ids)
{
    const TpsBenchShape sh = {4096, 12288, 4096, TPS_DTYPE_FP16};
    TpsGemmAlgoPoint p;
    tps_bench_algo_point(&sh, &algo_ids[_i].raw, &p);
    ck_assert(p.m == 4096 && p.n == 12288 && p.k == 4096 && p.dtype == TPS_DTYPE_FP16);
    ck_assert_int_eq(p.algo, algo_ids[_i].raw.algo);
    ck_assert_uint_eq(p.tile_id, (guint)algo_ids[_i].raw.tile_id);
    ck_assert_uint_eq(p.tile_m, algo_ids[_i].tile_m);
    ck_assert_uint_eq(p.tile_n, algo_ids[_i].tile_n);
    ck_assert_uint_eq(p.split_k, algo_ids[_i].split_k);
    ck_assert_uint_eq(p.cluster_m, algo_ids[_i].cluster_m);
    ck_assert_uint_eq(p.cluster_n, algo_ids[_i].cluster_n);
}
END_TEST

/* --vidur: the GEMMs of every record of a vidur profile, fp16, each shape
 * once: llama-2-7b's H100 file has 1044 records of 4 GEMMs, 4144 distinct
 * shapes (counted with python's csv module and the shapes of
 * tps_vidur_gemm_shape). */
START_TEST(test_vidur_shapes)
{
    const char *shared = tps_test_shared_dir();
    g_autofree char *file = shared ? g_build_filename(shared, "calibration", "measured",
                                                      "vidur-h100-llama-2-7b-hf-ops.csv", NULL)
                                   : NULL;
    if (file == NULL || !g_file_test(file, G_FILE_TEST_EXISTS))
        tps_test_skip("no calibration set ($TPSIM_SHARED_DIR/calibration)");
    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, "--vidur", file, "--only", "algos", NULL));
    ck_assert_uint_eq(o.sections, TPS_BENCH_SECTION_ALGOS);
    ck_assert_uint_eq(o.shapes->len, 4144);
    const TpsBenchShape *first = &g_array_index(o.shapes, TpsBenchShape, 0);
    ck_assert_int_eq(first->dtype, TPS_DTYPE_FP16);
    g_autofree char *plan = tps_bench_plan_describe(&o, 1, 132);
    ck_assert_ptr_nonnull(
        strstr(plan, "algos: cuBLASLt's first kernel for 4144 GEMM shapes (not timed)"));
    ck_assert_ptr_null(strstr(plan, "gemm:"));
    tps_bench_options_clear(&o);
    g_autoptr(GError) error = NULL;
    ck_assert(!parse(&o, &error, "--vidur", "/nonexistent/v.csv", NULL));
    ck_assert_msg(strstr(error->message, "v.csv") != NULL, "%s", error->message);
    tps_bench_options_clear(&o);
}
END_TEST

START_TEST(test_driver_error)
{
    memset(&fake_hw, 0, sizeof(fake_hw));
    ck_assert(tps_model_file_resolve("a100-sxm4-80gb", NULL, &fake_hw, NULL));
    fake_fail_collectives = TRUE;
    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, "--only", "collectives", NULL));
    TpsBenchDeviceInfo info = {.gpus = 2, .sms = 108};
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_bench_run(&fake_device, &info, &o, m, NULL, &error));
    ck_assert_int_eq(error->code, TPS_ERROR_IO);
    ck_assert_str_eq(error->message, "all_gather: ncclAllGather: unhandled cuda error");
    fake_fail_collectives = FALSE;
    tps_hardware_clear(&fake_hw);
    tps_bench_options_clear(&o);
}
END_TEST

/* Six GPUs: sizes are rounded down to split evenly over 6 ranks. */
START_TEST(test_driver_six_gpus)
{
    memset(&fake_hw, 0, sizeof(fake_hw));
    ck_assert(tps_model_file_resolve("a100-sxm4-80gb", NULL, &fake_hw, NULL));
    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, "--only", "collectives", "--max-bytes", "4K", NULL));
    TpsBenchDeviceInfo info = {.gpus = 6, .sms = 108};
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    ck_assert(tps_bench_run(&fake_device, &info, &o, m, NULL, NULL));
    /* 3 sizes x (3 collectives x ranks 2, 4, 6 + send/recv) */
    ck_assert_uint_eq(m->collectives->len, 3 * 10);
    gboolean six = FALSE;
    for (guint i = 0; i < m->collectives->len; i++) {
        const TpsCollPoint *p = &g_array_index(m->collectives, TpsCollPoint, i);
        ck_assert_double_eq(fmod(p->bytes, 2.0 * p->ranks), 0.0);
        if (p->ranks == 6 && p->bytes == 1020)
            six = TRUE;
    }
    ck_assert(six);
    tps_hardware_clear(&fake_hw);
    tps_bench_options_clear(&o);
}
END_TEST

/* One GPU: the multi-GPU measurements are skipped, GEMMs still run. */
START_TEST(test_driver_one_gpu)
{
    memset(&fake_hw, 0, sizeof(fake_hw));
    ck_assert(tps_model_file_resolve("h100-sxm", NULL, &fake_hw, NULL));
    TpsBenchOptions o;
    ck_assert(parse(&o, NULL, "--shape", "4096x4096x4096", NULL));
    TpsBenchDeviceInfo info = {.gpus = 1, .sms = 132};
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    ck_assert(tps_bench_run(&fake_device, &info, &o, m, NULL, NULL));
    ck_assert_uint_eq(m->gemm->len, 8);
    ck_assert_uint_eq(m->collectives->len, 0);
    ck_assert_uint_eq(m->copies->len, 0);
    ck_assert_uint_eq(m->overlap->len, 0);
    ck_assert_uint_eq(m->strategies->len, 0);
    tps_hardware_clear(&fake_hw);
    tps_bench_options_clear(&o);
}
END_TEST

/* --- The built binary: no GPU here, whichever backend it has --- */

static int
run_bench(const char *const *args, char **out, char **err)
{
    return tps_test_spawn("TPSIM_GPUBENCH", NULL, args, out, err);
}

START_TEST(test_binary_no_gpu)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-gpubench-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "m.yaml", NULL);
    const char *args[] = {"--output", path, NULL};
    g_autofree char *out = NULL, *err = NULL;
    ck_assert_int_eq(run_bench(args, &out, &err), 3);
    /* One line: "tpsim-gpubench: no GPU: ..." */
    ck_assert_msg(g_str_has_prefix(err, "tpsim-gpubench: no GPU: "), "%s", err);
    ck_assert_ptr_nonnull(strchr(err, '\n'));
    ck_assert_str_eq(strchr(err, '\n'), "\n");
    ck_assert_str_eq(out, "");
    ck_assert(!g_file_test(path, G_FILE_TEST_EXISTS));
    g_rmdir(dir);

    const char *none[] = {NULL};
    g_autofree char *out2 = NULL, *err2 = NULL;
    ck_assert_int_eq(run_bench(none, &out2, &err2), 3);
}
END_TEST

START_TEST(test_binary_usage)
{
    const char *bogus[] = {"--bogus", NULL};
    g_autofree char *o1 = NULL, *e1 = NULL;
    ck_assert_int_eq(run_bench(bogus, &o1, &e1), 2);
    ck_assert_ptr_nonnull(strstr(e1, "--bogus"));

    const char *help[] = {"--help", NULL};
    g_autofree char *o2 = NULL, *e2 = NULL;
    ck_assert_int_eq(run_bench(help, &o2, &e2), 0);
    ck_assert_ptr_nonnull(strstr(o2, "--output"));
    ck_assert_ptr_nonnull(strstr(o2, "3 no GPU"));

    const char *plan[] = {"--plan", "--gpus", "4", NULL};
    g_autofree char *o3 = NULL, *e3 = NULL;
    ck_assert_int_eq(run_bench(plan, &o3, &e3), 0);
    ck_assert_ptr_nonnull(strstr(o3, "tpsim-gpubench plan: 4 GPUs of 108 SMs"));
    ck_assert_ptr_nonnull(strstr(o3, "over 2 4 ranks"));

    const char *bad_scenario[] = {"--scenario", "/nonexistent.yaml", NULL};
    g_autofree char *o4 = NULL, *e4 = NULL;
    ck_assert_int_eq(run_bench(bad_scenario, &o4, &e4), 1);
}
END_TEST

static Suite *
gpubench_suite(void)
{
    Suite *s = suite_create("gpubench");
    TCase *tc;

    tc = tcase_create("shapes");
    tcase_add_test(tc, test_parse_shape);
    tcase_add_test(tc, test_parse_bytes);
    tcase_add_test(tc, test_default_shapes);
    tcase_add_test(tc, test_scenario_shapes);
    tcase_add_test(tc, test_all_scenarios);
    suite_add_tcase(s, tc);

    tc = tcase_create("sweeps");
    tcase_add_test(tc, test_size_sweep);
    tcase_add_test(tc, test_sm_counts);
    tcase_add_test(tc, test_rank_counts);
    suite_add_tcase(s, tc);

    tc = tcase_create("arguments");
    tcase_add_test(tc, test_options);
    tcase_add_loop_test(tc, test_bad_options, 0, G_N_ELEMENTS(bad_options));
    tcase_add_test(tc, test_plan_describe);
    suite_add_tcase(s, tc);

    tc = tcase_create("driver");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_driver);
    tcase_add_loop_test(tc, test_algo_ids, 0, G_N_ELEMENTS(algo_ids));
    tcase_add_test(tc, test_vidur_shapes);
    tcase_add_test(tc, test_driver_error);
    tcase_add_test(tc, test_driver_six_gpus);
    tcase_add_test(tc, test_driver_one_gpu);
    suite_add_tcase(s, tc);

    tc = tcase_create("binary");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_binary_no_gpu);
    tcase_add_test(tc, test_binary_usage);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(gpubench_suite());
}
