/* Validation (calib/validate.h, calib/csv.h): the CSV reader and the
 * dataset readers on small hand-written snippets; the statistics against
 * hand-computed figures; the registry on the real calibration set, counting
 * rows so that no vidur GEMM record is dropped unseen. Expected values are
 * worked out by hand in the comments, not by the code under test. */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "calib/calibrate.h"
#include "calib/csv.h"
#include "calib/validate.h"
#include "core/error.h"

/* ---- CSV ---- */

START_TEST(test_csv_basic)
{
    /* CR LF endings, an empty line, no newline at the end; the header
     * repeats "t" (vtrain's two time(ns) columns): the first one counts. */
    static const char text[] = "a,t,b,t\r\n1,2.5,x,9\r\n\r\n3,-4e2,,10";
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsCsv) csv = tps_csv_parse(text, strlen(text), "s.csv", &error);
    ck_assert_msg(csv != NULL, "%s", error ? error->message : "?");
    ck_assert_uint_eq(tps_csv_n_rows(csv), 2);
    ck_assert_uint_eq(tps_csv_n_columns(csv), 4);
    guint c;
    ck_assert(tps_csv_column(csv, "t", &c, &error));
    ck_assert_uint_eq(c, 1);
    ck_assert_uint_eq(tps_csv_line(csv, 1), 4);
    ck_assert_str_eq(tps_csv_field(csv, 1, 2), "");
    double v;
    ck_assert(tps_csv_double(csv, 1, 1, &v, &error));
    ck_assert_double_eq(v, -400.0);
    guint64 u;
    ck_assert(tps_csv_uint(csv, 0, 3, &u, &error));
    ck_assert_uint_eq(u, 9);
}
END_TEST

START_TEST(test_csv_errors)
{
    g_autoptr(GError) error = NULL;
    static const char ragged[] = "a,b\n1,2\n3\n";
    ck_assert_ptr_null(tps_csv_parse(ragged, strlen(ragged), "r.csv", &error));
    ck_assert_str_eq(error->message, "r.csv:3: 1 fields, the header has 2");
    g_clear_error(&error);

    ck_assert_ptr_null(tps_csv_parse("", 0, "e.csv", &error));
    ck_assert_ptr_nonnull(strstr(error->message, "e.csv: empty file"));
    g_clear_error(&error);

    static const char text[] = "a,b\n1,x\n-1,2.5\n";
    g_autoptr(TpsCsv) csv = tps_csv_parse(text, strlen(text), "n.csv", &error);
    ck_assert_ptr_nonnull(csv);
    guint c;
    ck_assert(!tps_csv_column(csv, "c", &c, &error));
    ck_assert_str_eq(error->message, "n.csv: no column 'c'");
    g_clear_error(&error);
    double v;
    ck_assert(!tps_csv_double(csv, 0, 1, &v, &error));
    ck_assert_str_eq(error->message, "n.csv:2: column 'b': 'x' is not a number");
    g_clear_error(&error);
    guint64 u;
    ck_assert(!tps_csv_uint(csv, 1, 0, &u, &error));
    ck_assert_str_eq(error->message, "n.csv:3: column 'a': '-1' is not a whole number");
    g_clear_error(&error);
    ck_assert(!tps_csv_uint(csv, 1, 1, &u, &error));
    ck_assert_str_eq(error->message, "n.csv:3: column 'b': '2.5' is not a whole number");
}
END_TEST

/* ---- Statistics ---- */

static const struct {
    double errors[10];
    guint n;
    double median, p90, max, bias;
} stats_cases[] = {
    /* |e| sorted 0 5 10 20: median (5 + 10) / 2; p90 rank ceil(3.6) = 4:
     * 20; bias (10 - 20 + 5 + 0) / 4. */
    {{10, -20, 5, 0}, 4, 7.5, 20, 20, -1.25},
    /* 1..10: median (5 + 6) / 2; rank ceil(9) = 9: 9; bias 55 / 10. */
    {{3, 1, 2, 10, 9, 8, 7, 6, 5, 4}, 10, 5.5, 9, 10, 5.5},
    /* One point: every figure is it (bias keeps the sign). */
    {{-3}, 1, 3, 3, 3, -3},
    /* Odd count, signs mixed: |e| 1 2 4 8 16; median 4; rank ceil(4.5) =
     * 5: 16; bias (-1 + 2 - 4 + 8 - 16) / 5 = -2.2. */
    {{-1, 2, -4, 8, -16}, 5, 4, 16, 16, -2.2},
};

START_TEST(test_stats)
{
    TpsValidateStats st;
    tps_validate_stats_of(stats_cases[_i].errors, stats_cases[_i].n, &st);
    ck_assert_uint_eq(st.points, stats_cases[_i].n);
    ck_assert_double_eq_tol(st.median_abs_pct, stats_cases[_i].median, 1e-12);
    ck_assert_double_eq_tol(st.p90_abs_pct, stats_cases[_i].p90, 1e-12);
    ck_assert_double_eq_tol(st.max_abs_pct, stats_cases[_i].max, 1e-12);
    ck_assert_double_eq_tol(st.bias_pct, stats_cases[_i].bias, 1e-12);
}
END_TEST

START_TEST(test_stats_of_set)
{
    /* Errors: 110/100 - 1 = +10%, 45/50 - 1 = -10%, 30/20 - 1 = +50%. */
    g_autoptr(TpsValidateSet) set = tps_validate_set_new("s", "f", "x", FALSE);
    tps_validate_set_add(set, 1, 100, 110);
    tps_validate_set_add(set, 2, 50, 45);
    tps_validate_set_add(set, 3, 20, 30);
    TpsValidateStats st;
    tps_validate_set_stats(set, &st);
    ck_assert_uint_eq(st.points, 3);
    ck_assert_double_eq_tol(st.median_abs_pct, 10, 1e-9);
    ck_assert_double_eq_tol(st.p90_abs_pct, 50, 1e-9);
    ck_assert_double_eq_tol(st.bias_pct, 50.0 / 3, 1e-9);

    g_autoptr(TpsValidateSet) empty = tps_validate_set_new("e", "f", "x", FALSE);
    tps_validate_set_stats(empty, &st);
    ck_assert_uint_eq(st.points, 0);
    ck_assert(isnan(st.median_abs_pct) && isnan(st.p90_abs_pct) && isnan(st.bias_pct));
}
END_TEST

/* ---- vidur linear-layer profiles ---- */

/* The columns a vidur ops file has (times in ms), in an order of our own:
 * the reader goes by name. */
static const char vidur_header[] =
    "time_stats.attn_pre_proj.median,time_stats.attn_post_proj.median,"
    "time_stats.mlp_up_proj.median,time_stats.mlp_down_proj.median,time_stats.add.median,"
    "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,"
    "num_tensor_parallel_workers\n";

START_TEST(test_vidur_rows)
{
    g_autofree char *text = g_strconcat(vidur_header,
                                        /* Llama-3-8B, 512 tokens, TP 8 */
                                        "0.027,0.017,0.082,0.04,0.006,32,8,4096,14336,128256,True,"
                                        "512,8\n"
                                        /* an ungated MLP, TP 1 */
                                        "1,2,3,4,0.5,16,16,1024,4096,50000,False,64,1\n",
                                        NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsCsv) csv = tps_csv_parse(text, strlen(text), "v.csv", &error);
    ck_assert_ptr_nonnull(csv);
    g_autoptr(GArray) rows = tps_vidur_rows_parse(csv, &error);
    ck_assert_msg(rows != NULL, "%s", error ? error->message : "?");
    ck_assert_uint_eq(rows->len, 2);
    const TpsVidurRow *r = &g_array_index(rows, TpsVidurRow, 0);
    ck_assert(r->gated);
    ck_assert_double_eq_tol(r->us[TPS_VIDUR_QKV], 27.0, 1e-9);
    ck_assert_double_eq_tol(r->us[TPS_VIDUR_ADD], 6.0, 1e-9);

    /* head_dim 4096 / 32 = 128. QKV: (32 + 2 x 8) x 128 / 8 = 768 columns
     * of k 4096; projection: 4096 columns of k 4096 / 8 = 512; gated up:
     * 2 x 14336 / 8 = 3584 of k 4096; down: 4096 of k 14336 / 8 = 1792. */
    static const guint64 want[4][3] = {
        {512, 768, 4096}, {512, 4096, 512}, {512, 3584, 4096}, {512, 4096, 1792}};
    for (guint op = 0; op < 4; op++) {
        guint64 m, n, k;
        tps_vidur_gemm_shape(r, (TpsVidurOp)op, &m, &n, &k);
        ck_assert_uint_eq(m, want[op][0]);
        ck_assert_uint_eq(n, want[op][1]);
        ck_assert_uint_eq(k, want[op][2]);
    }
    /* Ungated: up is ffn / tp = 4096 columns. */
    guint64 m, n, k;
    tps_vidur_gemm_shape(&g_array_index(rows, TpsVidurRow, 1), TPS_VIDUR_UP, &m, &n, &k);
    ck_assert_uint_eq(n, 4096);

    /* Four GEMM points per record; TFLOP/s of the QKV of record 0:
     * 2 x 512 x 768 x 4096 FLOP in 27 us = 119.3 TFLOP/s. */
    g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(TpsGemmPoint));
    ck_assert_uint_eq(tps_vidur_gemm_points(rows, points), 8);
    ck_assert_uint_eq(points->len, 8);
    const TpsGemmPoint *p = &g_array_index(points, TpsGemmPoint, 0);
    ck_assert_double_eq_tol(p->tflops, 2.0 * 512 * 768 * 4096 / 27e-6 / 1e12, 1e-9);
    /* The down projection multiplies zeros (vidur's +-1e-3 weights
     * underflow SiluAndMul in fp16); the other three ops read data. */
    static const TpsGemmOperands operands[4] = {TPS_GEMM_OPERANDS_DATA, TPS_GEMM_OPERANDS_DATA,
                                                TPS_GEMM_OPERANDS_DATA, TPS_GEMM_OPERANDS_ZERO_A};
    for (guint i = 0; i < 4; i++) {
        ck_assert_int_eq(tps_vidur_gemm_operands((TpsVidurOp)i), operands[i]);
        ck_assert_int_eq(g_array_index(points, TpsGemmPoint, i).operands, operands[i]);
    }
    /* The block of record 0 is the sum of its five op medians, 0.027 +
     * 0.017 + 0.082 + 0.04 + 0.006 = 0.172 ms = 172 us; its ops were timed
     * 20 untimed + 10 timed repeats after the GPU started: 30 x 172 = 5160
     * us. Record 1: 1 + 2 + 3 + 4 + 0.5 = 10.5 ms, 315000 us. Every point
     * of a record carries it. */
    ck_assert_double_eq_tol(r->block_us, 172.0, 1e-9);
    ck_assert_double_eq_tol(tps_vidur_loaded_us(r), 5160.0, 1e-9);
    ck_assert_double_eq_tol(tps_vidur_loaded_us(&g_array_index(rows, TpsVidurRow, 1)), 315000.0,
                            1e-6);
    for (guint i = 0; i < 8; i++)
        ck_assert_double_eq_tol(g_array_index(points, TpsGemmPoint, i).loaded_us,
                                i < 4 ? 5160.0 : 315000.0, 1e-6);
}
END_TEST

START_TEST(test_vidur_errors)
{
    static const struct {
        const char *row;
        const char *message;
    } bad[] = {
        {"0.027,x,0.082,0.04,0.006,32,8,4096,14336,128256,True,512,8\n",
         "v.csv:2: column 'time_stats.attn_post_proj.median': 'x' is not a number"},
        {"0.027,0.017,0.082,0.04,0.006,32,8,4096,14336,128256,Maybe,512,8\n",
         "v.csv:2: column 'use_gated_mlp': 'Maybe' is not True or False"},
        {"0.027,0.017,0.082,0.04,0,32,8,4096,14336,128256,True,512,8\n",
         "v.csv:2: column 'time_stats.add.median': 0 is not a time"},
        /* 8 KV heads do not split over TP 16 */
        {"0.027,0.017,0.082,0.04,0.006,32,8,4096,14336,128256,True,512,16\n", NULL},
    };
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text = g_strconcat(vidur_header, bad[i].row, NULL);
        g_autoptr(GError) error = NULL;
        g_autoptr(TpsCsv) csv = tps_csv_parse(text, strlen(text), "v.csv", &error);
        ck_assert_ptr_nonnull(csv);
        ck_assert_ptr_null(tps_vidur_rows_parse(csv, &error));
        if (bad[i].message)
            ck_assert_str_eq(error->message, bad[i].message);
        else
            ck_assert_ptr_nonnull(strstr(error->message, "does not split over its TP degree"));
    }
    /* A missing column is named. */
    static const char no_add[] = "time_stats.attn_pre_proj.median\n1\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsCsv) csv = tps_csv_parse(no_add, strlen(no_add), "v.csv", &error);
    ck_assert_ptr_null(tps_vidur_rows_parse(csv, &error));
    ck_assert_str_eq(error->message, "v.csv: no column 'num_tokens'");
}
END_TEST

/* ---- Readers through the registry, on files written here ---- */

static char *
write_tmp(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    ck_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

/* The A100 model numbers that the collective predictions need. */
static void
a100_numbers(TpsHardware *hw)
{
    *hw = (TpsHardware){.sms = 108,
                        .peak_tflops = {312, 312},
                        .hbm_gbps = 2039,
                        .hbm_efficiency = 0.9,
                        .sm_mem_gbps = 66.8,
                        .launch_us = 3,
                        .gpus_per_node = 8,
                        .nvlink_gbps = 300,
                        .nvlink_efficiency = 0.8,
                        .nics_per_node = 8,
                        .nic_gbps = 24,
                        .net_duplex_efficiency = 1.0,
                        .nccl_channels = 24,
                        .nccl_threads = 512,
                        .nccl_base_latency_us = {6.6, 14, 8.4},
                        .nccl_hw_latency_us = {0.6, 1.9, 3.4},
                        .nccl_net_latency_us = {2.7, 4, 14},
                        .nccl_channel_gbps = {3.654, 20, 9.689},
                        .nccl_proto_efficiency = {0.5, 0.9375, 1.0},
                        .nccl_slot_bytes = {4096, 131072, 131072},
                        .host_nccl_call_us = 70};
}

/* Runs the registry row `name` on `dir` with the A100 model numbers that
 * the predictions need (none are checked here: the readers are). */
static GPtrArray *
run_row(const char *dir, const char *name)
{
    guint n;
    const TpsValidateDataset *rows = tps_validate_datasets(&n);
    const TpsValidateDataset *row = NULL;
    for (guint i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0)
            row = &rows[i];
    ck_assert_msg(row != NULL, "no row %s", name);
    TpsValidateDataset copy = *row;
    copy.file = g_path_get_basename(row->file);
    TpsHardware hw;
    a100_numbers(&hw);
    TpsValidateContext ctx = {&hw, dir, dir};
    GPtrArray *sets = g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_validate_run(&ctx, &copy, 1, sets, &error);
    g_free((char *)copy.file);
    ck_assert_msg(ok, "%s", error ? error->message : "?");
    return sets;
}

static const TpsValidateSet *
find_set(const GPtrArray *sets, const char *name)
{
    for (guint i = 0; i < sets->len; i++)
        if (strcmp(((const TpsValidateSet *)sets->pdata[i])->name, name) == 0)
            return sets->pdata[i];
    ck_abort_msg("no set %s", name);
    return NULL;
}

START_TEST(test_aicb_rule)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    /* AG 1 MiB over the TP group: an init.* call (dropped), a first call
     * (warm-up, dropped), then 0.1, 0.3, 0.2 ms: median 0.2 ms = 200 us.
     * A DP-group call, a group of unknown size and a size-0 all-reduce
     * are not taken; the lone RS call is its first: nothing is left. */
    g_autofree char *path = write_tmp(
        dir, "aicb-a100-tp2-collectives.csv",
        "comm_type,comm_group,comm_group_size,msg_size,stage,dst,src,additional,_elapsed_time,"
        "algbw,busbw,count\n"
        "CommType.all_gather,CommGroup.tp_group,2,1048576,init.model_setup,None,None,,50,0,0,1\n"
        "CommType.all_gather,CommGroup.tp_group,2,1048576,forward,None,None,,9.5,0,0,1\n"
        "CommType.all_gather,CommGroup.tp_group,2,1048576,forward,None,None,,0.1,0,0,1\n"
        "CommType.all_gather,CommGroup.dp_group,2,1048576,forward,None,None,,7,0,0,1\n"
        "CommType.all_gather,CommGroup.tp_group,None,1048576,forward,None,None,,7,0,0,1\n"
        "CommType.all_gather,CommGroup.tp_group,2,1048576,backward,None,None,,0.3,0,0,1\n"
        "CommType.all_reduce,CommGroup.tp_group,2,0,backward,None,None,,0.3,0,0,1\n"
        "CommType.all_reduce,CommGroup.tp_group,2,0,backward,None,None,,0.3,0,0,1\n"
        "CommType.reduce_scatter,CommGroup.tp_group,2,4096,backward,None,None,,0.3,0,0,1\n"
        "CommType.all_gather,CommGroup.tp_group,2,1048576,backward,None,None,,0.2,0,0,1\n");
    g_autoptr(GPtrArray) sets = run_row(dir, "aicb-tp2");
    ck_assert_uint_eq(sets->len, 3);
    const TpsValidateSet *ag = find_set(sets, "aicb-tp2/all-gather");
    ck_assert_uint_eq(ag->points->len, 1);
    const TpsValidatePoint *p = &g_array_index(ag->points, TpsValidatePoint, 0);
    ck_assert_double_eq(p->x, 1048576);
    ck_assert_double_eq_tol(p->measured, 200.0, 1e-9);
    ck_assert_uint_eq(find_set(sets, "aicb-tp2/reduce-scatter")->points->len, 0);
    ck_assert_uint_eq(find_set(sets, "aicb-tp2/all-reduce")->points->len, 0);
    g_unlink(path);
    g_rmdir(dir);
}
END_TEST

START_TEST(test_network_readers)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    /* vidur: one set per (workers, per node) layout, named nodes x per
     * node, in the order of the file; times in ms. */
    g_autofree char *ar =
        write_tmp(dir, "vidur-a100-dgx-all-reduce.csv",
                  ",time_stats.all_reduce.min,time_stats.all_reduce.max,time_stats.all_reduce.mean,"
                  "time_stats.all_reduce.median,time_stats.all_reduce.std,rank,num_workers,size,"
                  "collective,devices_per_node,max_devices_per_node\n"
                  "0,1,1,1,0.5,0,0,2,2048,all_reduce,1,8\n"
                  "1,1,1,1,0.25,0,0,16,4096,all_reduce,8,8\n"
                  "2,1,1,1,0.75,0,0,2,8192,all_reduce,1,8\n");
    g_autoptr(GPtrArray) sets = run_row(dir, "vidur-all-reduce");
    ck_assert_uint_eq(sets->len, 2);
    const TpsValidateSet *s = sets->pdata[0];
    ck_assert_str_eq(s->name, "vidur-all-reduce/2x1");
    ck_assert_uint_eq(s->points->len, 2);
    ck_assert_double_eq_tol(g_array_index(s->points, TpsValidatePoint, 1).measured, 750, 1e-9);
    ck_assert_str_eq(((const TpsValidateSet *)sets->pdata[1])->name, "vidur-all-reduce/2x8");

    /* vTrain: the first time(ns) (out-of-place), in ns. */
    g_autofree char *vt = write_tmp(dir, "vtrain-a100-all-reduce-8gpu.csv",
                                    "size(B),count,type,time(ns),busbw(GB/s),time(ns),"
                                    "busbw(GB/s)\n"
                                    "1048576,262144,float,92790,19.78,92150,19.91\n");
    g_autoptr(GPtrArray) vsets = run_row(dir, "vtrain-all-reduce/1x8");
    ck_assert_uint_eq(vsets->len, 1);
    const TpsValidatePoint *p =
        &g_array_index(((const TpsValidateSet *)vsets->pdata[0])->points, TpsValidatePoint, 0);
    ck_assert_double_eq_tol(p->measured, 92.79, 1e-9);

    /* A collective of another kind in a file is an error with its line. */
    g_autofree char *bad =
        write_tmp(dir, "vidur-a100-dgx-send-recv.csv",
                  ",time_stats.send_recv.median,num_workers,size,collective,devices_per_node\n"
                  "0,0.5,2,2048,send_recv,1\n"
                  "1,0.5,2,2048,all_reduce,1\n");
    guint n;
    const TpsValidateDataset *rows = tps_validate_datasets(&n);
    TpsValidateDataset row = {0};
    for (guint i = 0; i < n; i++)
        if (strcmp(rows[i].name, "vidur-send-recv") == 0)
            row = rows[i];
    row.file = "vidur-a100-dgx-send-recv.csv";
    TpsHardware hw = {.sms = 108};
    TpsValidateContext ctx = {&hw, dir, dir};
    g_autoptr(GPtrArray) none =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_validate_run(&ctx, &row, 1, none, &error));
    ck_assert_ptr_nonnull(strstr(error->message, "vidur-send-recv: "));
    ck_assert_ptr_nonnull(strstr(error->message, ":3: collective 'all_reduce'"));
    g_unlink(ar);
    g_unlink(vt);
    g_unlink(bad);
    g_rmdir(dir);
}
END_TEST

/* What each timer adds to the kernel: nothing (vidur's Kineto kernel
 * durations), one launch (nccl-tests' loop: launch_us 3), the host time of
 * an eager call (aicb's CUDA events: host.nccl_call_us 70). */
static const struct {
    TpsValidateTiming timing;
    double extra_us;
} timing_cases[] = {
    {TPS_VALIDATE_KERNEL, 0.0},
    {TPS_VALIDATE_LAUNCHED, 3.0},
    {TPS_VALIDATE_EAGER, 70.0},
};

START_TEST(test_coll_timing)
{
    TpsHardware hw;
    a100_numbers(&hw);
    const double bytes = 16777216.0;
    double kernel =
        tps_validate_predict_coll_us(&hw, TPS_VALIDATE_KERNEL, TPS_MEAS_ALL_GATHER, bytes, 2, 2);
    double t = tps_validate_predict_coll_us(&hw, timing_cases[_i].timing, TPS_MEAS_ALL_GATHER,
                                            bytes, 2, 2);
    ck_assert_double_eq_tol(t - kernel, timing_cases[_i].extra_us, 1e-6);
    /* Send/recv across nodes, by hand: Simple base 8.4 + network hop 14 us
     * + 24 MB at one NIC's 24 GB/s (1000 us), in one direction: the
     * duplex share does not apply. */
    hw.net_duplex_efficiency = 0.5;
    double sr =
        tps_validate_predict_coll_us(&hw, timing_cases[_i].timing, TPS_MEAS_SEND_RECV, 24e6, 2, 1);
    ck_assert_double_eq_tol(sr, 1022.4 + timing_cases[_i].extra_us, 1e-6);
}
END_TEST

/* Send/recv within a node, 8 MiB, by hand: timed as the sender's kernel
 * (vidur), NCCL's p2p path with 8 channels: 8 pieces of 1 MiB, each in 2
 * steps of 512 KiB into its 4 MiB FIFO: 8.4 + 2 x 3.4 us + 1048576 B /
 * 50.4 GB/s (20.805 us) = 36.005 us. Back-to-back calls (nccl-tests'
 * timing, calibrate's points) are paced by the link: 8.4 + 3.4 us +
 * 8388608 B / 240 GB/s (34.953 us) + one launch, 3 us = 49.753 us. */
START_TEST(test_send_recv_in_node)
{
    TpsHardware hw;
    a100_numbers(&hw);
    hw.nccl_p2p_channels = 8;
    hw.nccl_channel_mem_gbps = 50.4;
    hw.mem_nccl_buffer_kib[TPS_PROTO_SIMPLE] = 4096;
    double kernel =
        tps_validate_predict_coll_us(&hw, TPS_VALIDATE_KERNEL, TPS_MEAS_SEND_RECV, 8388608, 2, 2);
    ck_assert_double_eq_tol(kernel, 36.005, 0.002);
    double launched =
        tps_validate_predict_coll_us(&hw, TPS_VALIDATE_LAUNCHED, TPS_MEAS_SEND_RECV, 8388608, 2, 2);
    ck_assert_double_eq_tol(launched, 49.753, 0.002);
}
END_TEST

/* The layouts across nodes of vidur's curves are predicted with the model
 * of vidur's cluster, asked for by name; those within a node with ctx->hw. */
typedef struct {
    TpsHardware hw;
    guint calls;
    char *name;
    gboolean fail;
} ClusterStub;

static const TpsHardware *
cluster_stub(const TpsValidateContext *ctx, const char *name, GError **error)
{
    ClusterStub *stub = ctx->model_data;
    stub->calls++;
    g_free(stub->name);
    stub->name = g_strdup(name);
    if (stub->fail) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "unknown hardware model '%s'", name);
        return NULL;
    }
    return &stub->hw;
}

START_TEST(test_cluster_model)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    g_autofree char *ar =
        write_tmp(dir, "vidur-a100-dgx-all-reduce.csv",
                  ",time_stats.all_reduce.median,num_workers,size,collective,devices_per_node\n"
                  "0,10,2,67108864,all_reduce,1\n"
                  "1,0.5,2,67108864,all_reduce,2\n");
    guint n;
    const TpsValidateDataset *rows = tps_validate_datasets(&n);
    TpsValidateDataset row = {0};
    for (guint i = 0; i < n; i++)
        if (strcmp(rows[i].name, "vidur-all-reduce") == 0)
            row = rows[i];
    row.file = "vidur-a100-dgx-all-reduce.csv";
    TpsHardware hw;
    a100_numbers(&hw);
    ClusterStub stub = {.calls = 0};
    a100_numbers(&stub.hw);
    stub.hw.nic_gbps = 6.0;
    TpsValidateContext ctx = {&hw, dir, dir, cluster_stub, &stub};
    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_validate_run(&ctx, &row, 1, sets, &error), "%s", error->message);
    ck_assert_uint_eq(stub.calls, 1);
    ck_assert_str_eq(stub.name, "vidur-a100-dgx");
    const TpsValidatePoint *across =
        &g_array_index(find_set(sets, "vidur-all-reduce/2x1")->points, TpsValidatePoint, 0);
    const TpsValidatePoint *within =
        &g_array_index(find_set(sets, "vidur-all-reduce/1x2")->points, TpsValidatePoint, 0);
    /* 64 MiB over two nodes' 6 GB/s NICs: at least 11 ms; over DGX's 24
     * GB/s NICs it would be under 3 ms. */
    ck_assert_double_ge(across->predicted, 67108864.0 / 6.0 / 1e3);
    ck_assert_double_eq(across->predicted,
                        tps_validate_predict_coll_us(&stub.hw, TPS_VALIDATE_KERNEL,
                                                     TPS_MEAS_ALL_REDUCE, 67108864.0, 2, 1));
    ck_assert_double_eq(within->predicted,
                        tps_validate_predict_coll_us(&hw, TPS_VALIDATE_KERNEL, TPS_MEAS_ALL_REDUCE,
                                                     67108864.0, 2, 2));
    /* Each set names the model its points came from where it is not the
     * validated one (the residual plots' subtitles). */
    ck_assert_str_eq(find_set(sets, "vidur-all-reduce/2x1")->model, "vidur-a100-dgx");
    ck_assert_ptr_null(find_set(sets, "vidur-all-reduce/1x2")->model);
    /* A cluster model that cannot be loaded is the row's error. */
    stub.fail = TRUE;
    g_autoptr(GPtrArray) none =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_clear_error(&error);
    ck_assert(!tps_validate_run(&ctx, &row, 1, none, &error));
    ck_assert_ptr_nonnull(strstr(error->message, "vidur-all-reduce: unknown hardware model"));
    g_free(stub.name);
    g_unlink(ar);
    g_rmdir(dir);
}
END_TEST

/* ---- The registry on the real calibration set ---- */

START_TEST(test_registry_rows)
{
    guint n;
    const TpsValidateDataset *rows = tps_validate_datasets(&n);
    ck_assert_uint_gt(n, 0);
    for (guint i = 0; i < n; i++) {
        ck_assert_ptr_nonnull(rows[i].name);
        ck_assert_ptr_nonnull(rows[i].family);
        ck_assert_ptr_nonnull(rows[i].evaluate);
        ck_assert(rows[i].load == NULL || rows[i].file != NULL);
        ck_assert(rows[i].load == NULL || rows[i].free != NULL);
        for (guint j = 0; j < i; j++)
            ck_assert_str_ne(rows[i].name, rows[j].name);
    }
}
END_TEST

/* $TPSIM_SHARED_DIR/calibration, or the test is skipped. */
static char *
calibration_dir(void)
{
    const char *shared = tps_test_shared_dir();
    char *dir = shared ? g_build_filename(shared, "calibration", NULL) : NULL;
    if (dir == NULL || !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_free(dir);
        tps_test_skip("no calibration set ($TPSIM_SHARED_DIR/calibration)");
    }
    return dir;
}

/* An H100-like GEMM model with `n` tiles. */
static TpsHardware
h100_fixture(guint n, const TpsGemmTile *tiles)
{
    TpsHardware hw = {.gpu_name = (char *)"NVIDIA H100 80GB HBM3",
                      .sms = 132,
                      .peak_tflops = {989, 989},
                      .hbm_gbps = 3350,
                      .hbm_efficiency = 0.9,
                      .sm_mem_gbps = 93.9,
                      .n_tiles = n};
    memcpy(hw.tiles, tiles, n * sizeof(*tiles));
    return hw;
}

START_TEST(test_vidur_gemm_counts)
{
    g_autofree char *calibration = calibration_dir();
    guint n;
    const TpsValidateDataset *rows = tps_validate_datasets(&n);
    TpsHardware hw = {.sms = 108,
                      .peak_tflops = {312, 312},
                      .hbm_gbps = 2039,
                      .hbm_efficiency = 0.9,
                      .sm_mem_gbps = 66.8,
                      .n_tiles = 1,
                      .tiles = {{128, 128, 0.9}}};
    TpsValidateContext ctx = {&hw, calibration, NULL};
    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GError) error = NULL;
    /* The GEMM rows and their summary: the first four rows. */
    ck_assert_str_eq(rows[3].name, "vidur-gemm/all");
    ck_assert_msg(tps_validate_run(&ctx, rows, 4, sets, &error), "%s",
                  error ? error->message : "?");
    /* Records per file (wc -l minus the header): 1044, 1824, 1824; of them
     * with 512 tokens or more: 780, 1560, 1560 (counted with awk on
     * num_tokens); four GEMMs each. */
    static const struct {
        const char *name;
        guint points;
    } want[] = {
        {"vidur-gemm/llama-2-7b", 780 * 4},       {"vidur-gemm/llama-2-7b/small", 264 * 4},
        {"vidur-gemm/llama-3-8b", 1560 * 4},      {"vidur-gemm/llama-3-8b/small", 264 * 4},
        {"vidur-gemm/llama-3-70b", 1560 * 4},     {"vidur-gemm/llama-3-70b/small", 264 * 4},
        {"vidur-gemm/all", (780 + 1560 * 2) * 4}, {"vidur-gemm/all/small", 264 * 3 * 4},
    };
    ck_assert_uint_eq(sets->len, G_N_ELEMENTS(want));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        const TpsValidateSet *s = sets->pdata[i];
        ck_assert_str_eq(s->name, want[i].name);
        ck_assert_uint_eq(s->points->len, want[i].points);
        ck_assert(s->summary == (i >= 6));
    }
}
END_TEST

/* The recorded kernels' table: a shape's tile and split onto the run, a
 * tile the model lacks and a second kernel for one shape refused. */
START_TEST(test_kernels_table)
{
    TpsHardware hw = {
        .name = (char *)"fixture", .n_tiles = 2, .tiles = {{128, 128, 0.9}, {256, 128, 0.9}}};
    g_autoptr(GArray) algos = g_array_new(FALSE, FALSE, sizeof(TpsGemmAlgoPoint));
    const TpsGemmAlgoPoint a = {4096, 12288, 4096, TPS_DTYPE_FP16, 21, 24, 256, 128, 1, 2, 1};
    const TpsGemmAlgoPoint b = {1, 4096, 4096, TPS_DTYPE_FP16, 7, 20, 128, 128, 4, 0, 0};
    const TpsGemmAlgoPoint unknown = {2, 4096, 4096, TPS_DTYPE_FP16, 3, 600, 0, 0, 1, 0, 0};
    g_array_append_val(algos, a);
    g_array_append_val(algos, b);
    g_array_append_val(algos, unknown);
    g_array_append_val(algos, a); /* the same record again */
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsGemmKernels) k = tps_gemm_kernels_new(algos, &hw, "k.yaml", &error);
    ck_assert_msg(k != NULL, "%s", error ? error->message : "?");

    TpsGemmRun run = {TPS_GEMM_OPERANDS_DATA, 0.0, 0, 0, 0};
    ck_assert(tps_gemm_kernels_apply(k, TPS_DTYPE_FP16, 4096, 12288, 4096, &run));
    ck_assert_uint_eq(run.tile_m, 256);
    ck_assert_uint_eq(run.tile_n, 128);
    ck_assert_uint_eq(run.split_k, 1);
    ck_assert(tps_gemm_kernels_apply(k, TPS_DTYPE_FP16, 1, 4096, 4096, &run));
    ck_assert_uint_eq(run.tile_m, 128);
    ck_assert_uint_eq(run.split_k, 4);
    /* Another dtype, another shape, a tile not said: the model's choice. */
    TpsGemmRun free_run = {TPS_GEMM_OPERANDS_DATA, 0.0, 0, 0, 0};
    ck_assert(!tps_gemm_kernels_apply(k, TPS_DTYPE_BF16, 4096, 12288, 4096, &free_run));
    ck_assert(!tps_gemm_kernels_apply(k, TPS_DTYPE_FP16, 4096, 12288, 4095, &free_run));
    ck_assert(!tps_gemm_kernels_apply(k, TPS_DTYPE_FP16, 2, 4096, 4096, &free_run));
    ck_assert_uint_eq(free_run.tile_m, 0);

    const TpsGemmAlgoPoint wide = {8, 8, 8, TPS_DTYPE_FP16, 1, 19, 64, 256, 1, 0, 0};
    g_array_append_val(algos, wide);
    TpsGemmKernels *bad = tps_gemm_kernels_new(algos, &hw, "k.yaml", &error);
    ck_assert(bad == NULL);
    ck_assert_msg(strstr(error->message, "k.yaml: gemm_algos[4]") &&
                      strstr(error->message, "64x256 is not in fixture's gemm.tiles"),
                  "%s", error->message);
    g_clear_error(&error);

    g_array_set_size(algos, 2);
    TpsGemmAlgoPoint other = a;
    other.split_k = 2;
    g_array_append_val(algos, other);
    bad = tps_gemm_kernels_new(algos, &hw, "k.yaml", &error);
    ck_assert(bad == NULL);
    ck_assert_msg(strstr(error->message, "gemm_algos[2]: a second kernel for 4096x12288x4096"),
                  "%s", error->message);
}
END_TEST

/* Points on the whole GPU take their shape's recorded kernel, and the fit's
 * prediction runs on it: 4096 x 12288 x 4096 on 64x64 tiles of efficiency
 * 0.5 is slower than on the model's own 256x128 of 0.9. A point on fewer
 * SMs keeps the model's choice (the heuristic was asked for all of them). */
START_TEST(test_kernels_attach)
{
    const TpsGemmTile tiles[] = {{256, 128, 0.9}, {64, 64, 0.5}};
    TpsHardware hw = h100_fixture(2, tiles);
    g_autoptr(GArray) algos = g_array_new(FALSE, FALSE, sizeof(TpsGemmAlgoPoint));
    const TpsGemmAlgoPoint qkv = {4096, 12288, 4096, TPS_DTYPE_FP16, 1, 15, 64, 64, 1, 0, 0};
    g_array_append_val(algos, qkv);
    g_autoptr(TpsGemmKernels) kernels = tps_gemm_kernels_new(algos, &hw, "k.yaml", NULL);
    ck_assert(kernels != NULL);
    g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(TpsGemmPoint));
    const TpsGemmPoint all = {
        .m = 4096, .n = 12288, .k = 4096, .dtype = TPS_DTYPE_FP16, .tflops = 1};
    TpsGemmPoint full = all, reduced = all, other = all, named = all;
    full.sms = 0;
    named.sms = 132;
    reduced.sms = 100;
    other.k = 8192;
    g_array_append_val(points, full);
    g_array_append_val(points, reduced);
    g_array_append_val(points, other);
    g_array_append_val(points, named);
    const double own = tps_calib_predict_gemm(&hw, &full);
    ck_assert_uint_eq(tps_gemm_kernels_attach(kernels, points, hw.sms), 2);
    const TpsGemmPoint *p0 = &g_array_index(points, TpsGemmPoint, 0);
    ck_assert(p0->tile_m == 64 && p0->tile_n == 64 && p0->split_k == 1);
    ck_assert_uint_eq(g_array_index(points, TpsGemmPoint, 1).tile_m, 0);
    ck_assert_uint_eq(g_array_index(points, TpsGemmPoint, 2).tile_m, 0);
    ck_assert_uint_eq(g_array_index(points, TpsGemmPoint, 3).tile_m, 64);
    /* TFLOP/s: lower on the recorded kernel. */
    ck_assert(tps_calib_predict_gemm(&hw, p0) < own);
}
END_TEST

/* With recorded kernels, vidur's shapes that have one run on it: the QKV
 * GEMM of llama-2-7b at 4096 tokens and TP 1 (4096 x 12288 x 4096) is in
 * 2 records of the H100 file (python's csv module on num_tokens and
 * num_tensor_parallel_workers), both >= 512 tokens. */
START_TEST(test_vidur_gemm_kernels)
{
    g_autofree char *calibration = calibration_dir();
    guint n;
    const TpsValidateDataset *rows = tps_validate_h100_datasets(&n);
    ck_assert_str_eq(rows[0].name, "vidur-gemm/llama-2-7b");
    const TpsGemmTile tiles[] = {{256, 128, 0.9}, {64, 64, 0.5}};
    TpsHardware hw = h100_fixture(2, tiles);
    g_autoptr(GArray) algos = g_array_new(FALSE, FALSE, sizeof(TpsGemmAlgoPoint));
    const TpsGemmAlgoPoint qkv = {4096, 12288, 4096, TPS_DTYPE_FP16, 1, 15, 64, 64, 1, 0, 0};
    g_array_append_val(algos, qkv);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsGemmKernels) kernels = tps_gemm_kernels_new(algos, &hw, "k.yaml", &error);
    ck_assert(kernels != NULL);

    g_autoptr(GPtrArray) plain =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    TpsValidateContext ctx = {&hw, calibration, NULL};
    ck_assert(tps_validate_run(&ctx, rows, 1, plain, &error));
    ctx.kernels = kernels;
    ck_assert(tps_validate_run(&ctx, rows, 1, sets, &error));
    ck_assert_uint_eq(plain->len, 2);
    ck_assert_uint_eq(sets->len, 3);
    const TpsValidateSet *rec = sets->pdata[2];
    ck_assert_str_eq(rec->name, "vidur-gemm/llama-2-7b/kernels");
    ck_assert(rec->summary);
    ck_assert_uint_eq(rec->points->len, 2);
    /* The same points in the large set, slower on the recorded 64x64 tile
     * than on the model's own 256x128; every other point unchanged. */
    const TpsValidateSet *before = plain->pdata[0], *after = sets->pdata[0];
    ck_assert_uint_eq(before->points->len, after->points->len);
    guint moved = 0;
    for (guint i = 0; i < after->points->len; i++) {
        const TpsValidatePoint *p0 = &g_array_index(before->points, TpsValidatePoint, i);
        const TpsValidatePoint *p1 = &g_array_index(after->points, TpsValidatePoint, i);
        if (p1->predicted == p0->predicted)
            continue;
        moved++;
        ck_assert(p1->predicted > p0->predicted);
        ck_assert_double_eq(p1->x, 4096);
        gboolean in_rec = FALSE;
        for (guint j = 0; j < rec->points->len; j++)
            in_rec |= g_array_index(rec->points, TpsValidatePoint, j).predicted == p1->predicted;
        ck_assert(in_rec);
    }
    ck_assert_uint_eq(moved, 2);
}
END_TEST

/* An H100 model is judged on the H100 table alone, and that table reads
 * vidur's five H100 profiles. */
START_TEST(test_h100_rows)
{
    TpsHardware a100 = {.gpu_name = (char *)"NVIDIA A100-SXM4-80GB"};
    TpsHardware h100 = {.gpu_name = (char *)"NVIDIA H100 80GB HBM3"};
    TpsHardware none = {0};
    ck_assert(!tps_validate_measured_on_h100(&a100));
    ck_assert(tps_validate_measured_on_h100(&h100));
    ck_assert(!tps_validate_measured_on_h100(&none));

    guint n;
    const TpsValidateDataset *rows = tps_validate_h100_datasets(&n);
    /* Five GEMM files, their summary, five residual-add sets. */
    ck_assert_uint_eq(n, 11);
    ck_assert_str_eq(rows[5].name, "vidur-gemm/all");
    for (guint i = 0; i < n; i++)
        if (rows[i].file != NULL)
            ck_assert_msg(g_str_has_prefix(rows[i].file, "measured/vidur-h100-"), "%s",
                          rows[i].file);

    g_autofree char *calibration = calibration_dir();
    const TpsGemmTile tile = {128, 256, 0.8};
    h100 = h100_fixture(1, &tile);
    TpsValidateContext ctx = {&h100, calibration, NULL};
    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_validate_run(&ctx, rows, n, sets, &error), "%s",
                  error ? error->message : "?");
    /* Each file: 1044 records (wc -l minus the header), 780 of them with
     * 512 tokens or more (awk on num_tokens), four GEMMs each; the
     * summary pools the five; one residual add per record. */
    ck_assert_uint_eq(sets->len, 5 * 2 + 2 + 5);
    const TpsValidateSet *all = sets->pdata[10], *small = sets->pdata[11];
    ck_assert_str_eq(all->name, "vidur-gemm/all");
    ck_assert_uint_eq(all->points->len, 5 * 780 * 4);
    ck_assert_uint_eq(small->points->len, 5 * 264 * 4);
    const TpsValidateSet *add = sets->pdata[12];
    ck_assert_str_eq(add->name, "vidur-add/llama-2-7b");
    ck_assert_uint_eq(add->points->len, 1044);
}
END_TEST

static Suite *
validate_suite(void)
{
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("csv");
    tcase_add_test(tc, test_csv_basic);
    tcase_add_test(tc, test_csv_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("stats");
    tcase_add_loop_test(tc, test_stats, 0, G_N_ELEMENTS(stats_cases));
    tcase_add_test(tc, test_stats_of_set);
    suite_add_tcase(s, tc);

    tc = tcase_create("readers");
    tcase_add_test(tc, test_vidur_rows);
    tcase_add_test(tc, test_vidur_errors);
    tcase_add_test(tc, test_aicb_rule);
    tcase_add_test(tc, test_network_readers);
    tcase_add_loop_test(tc, test_coll_timing, 0, G_N_ELEMENTS(timing_cases));
    tcase_add_test(tc, test_send_recv_in_node);
    tcase_add_test(tc, test_cluster_model);
    suite_add_tcase(s, tc);

    tc = tcase_create("registry");
    tcase_add_test(tc, test_registry_rows);
    tcase_add_test(tc, test_vidur_gemm_counts);
    tcase_add_test(tc, test_h100_rows);
    tcase_add_test(tc, test_kernels_table);
    tcase_add_test(tc, test_kernels_attach);
    tcase_add_test(tc, test_vidur_gemm_kernels);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(validate_suite());
}
