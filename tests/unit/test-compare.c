/* Predicted against measured: a run exported as a Chrome trace (the
 * renderer's trace export) and read back compares at 0% error, for model
 * and op scenarios and every strategy; a file holding several runs is
 * split by strategy; a real Kineto trace gives its own figures and the
 * stream roles; errors; the `tpsim compare` command line. */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/input/scenario-file.h"
#include "io/trace/trace-import.h"
#include "io/trace/trace-summary.h"
#include "render/compare.h"
#include "render/timeline.h"
#include "render/trace-export.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

static char *
scenario_path(const char *name)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    ck_assert_msg(src != NULL, "TPSIM_SOURCE_DIR is not set");
    return g_build_filename(src, "scenarios", name, NULL);
}

static void
load_scenario(const char *name, TpsScenario *scenario)
{
    g_autofree char *path = scenario_path(name);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load(path, scenario, &error), "%s",
                  error ? error->message : "");
}

static TpsRun *
simulate(const TpsScenario *scenario, const TpsStrategy *strategy)
{
    TpsResult result;
    TpsRun *record = NULL;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_simulate_record(scenario, strategy, &result, &record, &error), "%s",
                  error ? error->message : "");
    return record;
}

static TpsTrace *
export_and_read(TpsRun *const *records, guint n, const char *name)
{
    g_autofree char *json = tps_trace_export(records, n, name);
    g_autoptr(GError) error = NULL;
    TpsTrace *trace = tps_trace_load_data(json, strlen(json), "run.json", &error);
    ck_assert_msg(trace != NULL, "%s", error ? error->message : "");
    ck_assert_int_eq(tps_trace_format(trace), TPS_TRACE_TPSIM);
    return trace;
}

static void
assert_zero_error(const TpsComparison *c)
{
    const TpsCompareRow *rows[64];
    guint n = 0;
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++)
        rows[n++] = &c->classes[k];
    rows[n++] = &c->span;
    for (guint i = 0; i < c->n_streams && n < G_N_ELEMENTS(rows); i++)
        rows[n++] = &c->streams[i];
    for (guint i = 0; i < n; i++) {
        const TpsCompareRow *r = rows[i];
        ck_assert_msg(r->measured_count == r->predicted_count,
                      "%s: %g kernels measured, %g predicted", r->label, r->measured_count,
                      r->predicted_count);
        ck_assert_msg(fabs(r->measured_ms - r->predicted_ms) < 1e-9,
                      "%s: %.9f ms measured, %.9f predicted", r->label, r->measured_ms,
                      r->predicted_ms);
        ck_assert_msg(r->measured_ms == 0.0 ? isnan(r->error_pct) : r->error_pct == 0.0,
                      "%s: error %g%%", r->label, r->error_pct);
    }
    ck_assert_uint_eq(c->measured_devices, c->predicted_ranks);
}

static const char *const round_trip_scenarios[] = {"gpt-22b-tp8.yaml", "op-ag-gemm.yaml",
                                                   "op-gemm-rs.yaml", "gpt3-175b-tp8-nosp.yaml"};

/* Every strategy of each scenario: run, export, read back, compare. */
START_TEST(test_round_trip)
{
    TpsScenario scenario;
    load_scenario(round_trip_scenarios[_i], &scenario);
    g_autoptr(GError) error = NULL;
    g_autofree const TpsStrategy **chosen = tps_strategy_select(&scenario, NULL, &error);
    ck_assert_msg(chosen != NULL, "%s", error ? error->message : "");
    guint runs = 0;
    for (guint s = 0; chosen[s]; s++, runs++) {
        g_autoptr(TpsRun) record = simulate(&scenario, chosen[s]);
        TpsRun *records[] = {record};
        g_autoptr(TpsTrace) trace = export_and_read(records, 1, scenario.name);
        g_autofree char *strategy = tps_trace_tpsim_strategy(trace);
        ck_assert_str_eq(strategy, chosen[s]->name);
        g_autoptr(TpsComparison) c = tps_trace_compare(trace, record, &error);
        ck_assert_msg(c != NULL, "%s", error ? error->message : "");
        ck_assert_str_eq(c->strategy, chosen[s]->name);
        assert_zero_error(c);
        ck_assert(c->classes[TPS_KERNEL_GEMM].measured_count > 0);
        /* The JSON has every row. */
        g_autofree char *json = tps_comparison_to_json(c);
        g_autoptr(JsonParser) parser = json_parser_new();
        ck_assert(json_parser_load_from_data(parser, json, -1, NULL));
        JsonObject *root = json_node_get_object(json_parser_get_root(parser));
        ck_assert_uint_eq(json_array_get_length(json_object_get_array_member(root, "classes")), 3);
        ck_assert_uint_eq(json_array_get_length(json_object_get_array_member(root, "streams")),
                          c->n_streams);
        g_autofree char *table = tps_comparison_to_table(c);
        ck_assert_ptr_nonnull(strstr(table, chosen[s]->name));
    }
    ck_assert_uint_gt(runs, 0);
    tps_scenario_clear(&scenario);
}
END_TEST

/* One file with two runs: each comparison reads only its own devices. */
START_TEST(test_several_runs)
{
    TpsScenario scenario;
    load_scenario("gpt-22b-tp8.yaml", &scenario);
    g_autoptr(TpsRun) a = simulate(&scenario, tps_strategy_lookup("megatron"));
    g_autoptr(TpsRun) b = simulate(&scenario, tps_strategy_lookup("ring-ag"));
    TpsRun *records[] = {a, b};
    g_autoptr(TpsTrace) trace = export_and_read(records, 2, scenario.name);
    ck_assert_ptr_null(tps_trace_tpsim_strategy(trace));
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsComparison) ca = tps_trace_compare(trace, a, &error);
    ck_assert_msg(ca != NULL, "%s", error ? error->message : "");
    assert_zero_error(ca);
    g_autoptr(TpsComparison) cb = tps_trace_compare(trace, b, &error);
    ck_assert_msg(cb != NULL, "%s", error ? error->message : "");
    assert_zero_error(cb);
    /* A run that is not in the file. */
    g_autoptr(TpsRun) c = simulate(&scenario, tps_strategy_lookup("bulk"));
    g_autoptr(TpsComparison) cc = tps_trace_compare(trace, c, &error);
    ck_assert_ptr_null(cc);
    ck_assert_ptr_nonnull(strstr(error->message, "no GPU kernels of strategy bulk"));
    tps_scenario_clear(&scenario);
}
END_TEST

/* A real trace: measured figures are the summary's; the busiest compute
 * and NCCL streams take the roles "main" and "nccl"; the error sign says
 * predicted below measured. */
START_TEST(test_kineto)
{
    const char *shared = tps_test_shared_dir();
    g_autofree char *path =
        shared ? g_build_filename(shared, "traces", "hta-ddp-a100-r0of2", "nccl_data.json.gz", NULL)
               : NULL;
    if (path == NULL || !g_file_test(path, G_FILE_TEST_EXISTS))
        tps_test_skip("no shared traces ($TPSIM_SHARED_DIR/traces)");
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) trace = tps_trace_load(path, &error);
    ck_assert_msg(trace != NULL, "%s", error ? error->message : "");
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(trace);
    TpsScenario scenario;
    load_scenario("op-ag-gemm.yaml", &scenario);
    g_autoptr(TpsRun) record = simulate(&scenario, tps_strategy_lookup("sp-blocking"));
    g_autoptr(TpsComparison) c = tps_trace_compare(trace, record, &error);
    ck_assert_msg(c != NULL, "%s", error ? error->message : "");
    ck_assert_uint_eq(c->measured_devices, 1);
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++) {
        ck_assert_double_eq_tol(c->classes[k].measured_ms, s->classes[k].total_ms, 1e-9);
        ck_assert_double_eq(c->classes[k].measured_count, s->classes[k].count);
        if (c->classes[k].measured_ms > 0)
            ck_assert_double_eq_tol(c->classes[k].error_pct,
                                    100.0 *
                                        (c->classes[k].predicted_ms - c->classes[k].measured_ms) /
                                        c->classes[k].measured_ms,
                                    1e-9);
    }
    /* Stream 7 (compute) is "main", stream 40 (NCCL) is "nccl". */
    gboolean main_seen = FALSE, nccl_seen = FALSE;
    for (guint i = 0; i < c->n_streams; i++) {
        if (strcmp(c->streams[i].label, "main") == 0) {
            main_seen = TRUE;
            ck_assert_double_eq_tol(c->streams[i].measured_ms, s->streams[0].busy_ms, 1e-9);
        }
        if (strcmp(c->streams[i].label, "nccl") == 0) {
            nccl_seen = TRUE;
            ck_assert_double_eq_tol(c->streams[i].measured_ms, s->streams[1].busy_ms, 1e-9);
        }
    }
    ck_assert(main_seen && nccl_seen);
    tps_scenario_clear(&scenario);
}
END_TEST

/* The measured run as an engine record: each kernel where and as long as
 * it ran; the timeline lays out measured above predicted. */
START_TEST(test_record)
{
    TpsScenario scenario;
    load_scenario("op-ag-gemm.yaml", &scenario);
    g_autoptr(TpsRun) record = simulate(&scenario, tps_strategy_lookup("sp-blocking"));
    TpsRun *records[] = {record};
    g_autoptr(TpsTrace) trace = export_and_read(records, 1, scenario.name);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsRun) measured = tps_trace_to_run(trace, "sp-blocking", TRUE, &error);
    ck_assert_msg(measured != NULL, "%s", error ? error->message : "");
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    gint64 t0 = tps_trace_start_ns(trace);
    guint kernels = 0;
    for (TpsTaskId id = 0; id < tps_run_n_spans(measured); id++) {
        const TpsSpan *sp = tps_run_span(measured, id);
        if (sp->kind == TPS_KIND_MARKER)
            continue;
        const TpsTraceKernel *k = &ks[kernels++];
        ck_assert_int_eq(sp->start, k->ts_ns - t0);
        ck_assert_int_eq(sp->end - sp->start, k->dur_ns);
    }
    ck_assert_uint_eq(kernels, n);
    ck_assert_uint_eq(measured->ranks, record->ranks);

    TpsTimelineRun runs[] = {{measured, "measured"}, {record, "predicted"}};
    g_autoptr(TpsTimeline) tl = tps_timeline_new(runs, 2, "t", NULL, NULL, &error);
    ck_assert_msg(tl != NULL, "%s", error ? error->message : "");
    ck_assert_uint_eq(tl->panels->len, 2);
    ck_assert_uint_gt(tl->boxes->len, 0);
    tps_scenario_clear(&scenario);
}
END_TEST

static const char empty_trace[] = "{\"traceEvents\": []}";

START_TEST(test_no_kernels)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) trace =
        tps_trace_load_data(empty_trace, strlen(empty_trace), "empty.json", &error);
    ck_assert_ptr_nonnull(trace);
    TpsScenario scenario;
    load_scenario("op-ag-gemm.yaml", &scenario);
    g_autoptr(TpsRun) record = simulate(&scenario, tps_strategy_lookup("sp-blocking"));
    g_autoptr(TpsComparison) c = tps_trace_compare(trace, record, &error);
    ck_assert_ptr_null(c);
    ck_assert_int_eq(error->code, TPS_ERROR_INPUT);
    ck_assert(g_str_has_prefix(error->message, "empty.json: no GPU kernels"));
    tps_scenario_clear(&scenario);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Command line                                                            */

/* ---- the same workload? ---- */

/* One device of a GPT-style AG+GEMM at TP 8, as Kineto records it: FC1's
 * GEMM linked to aten::addmm with Input Dims [8192, 1024] x [1024, 3072]
 * (100 us), an attention bmm without a scenario shape (10 us), and the
 * all-gather of the [8192, 1024] bf16 input: 16 MiB. */
static const char gpt_trace[] =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 1000, \"dur\": 20, \"args\": {\"External id\": 6,"
    "   \"Input Dims\": [[3072], [8192, 1024], [1024, 3072], [], []]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 1010, \"dur\": 100,"
    "   \"args\": {\"External id\": 6}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::bmm\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 1500, \"dur\": 20, \"args\": {\"External id\": 8,"
    "   \"Input Dims\": [[16, 128, 64], [16, 64, 256]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_nn\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 1600, \"dur\": 10, \"args\": {\"External id\": 8}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\","
    "   \"name\": \"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    "   \"pid\": 0, \"tid\": 20, \"ts\": 1060, \"dur\": 200,"
    "   \"args\": {\"In msg nelems\": 1048576, \"Out msg nelems\": 8388608, \"Group size\": 8,"
    "   \"dtype\": \"BFloat16\"}}\n"
    " ]}\n";

/* The trace without its GEMM shapes: only the collective decides. */
static const char gpt_trace_no_shapes[] =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 1010, \"dur\": 100, \"args\": {}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\","
    "   \"name\": \"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    "   \"pid\": 0, \"tid\": 20, \"ts\": 1060, \"dur\": 200,"
    "   \"args\": {\"In msg nelems\": 1048576, \"Out msg nelems\": 8388608, \"Group size\": 8,"
    "   \"dtype\": \"BFloat16\"}}\n"
    " ]}\n";

/* An ag_gemm op m x n x k at TP 8 on the A100: per rank the GEMM is
 * [m, k] x [k, n/8] and the all-gather m x k x 2 bytes. */
static const struct {
    const char *trace;
    guint64 m, n, k;
    gboolean same;
    const char *evidence; /* a part of the evidence */
} workload_cases[] = {
    /* 8192 x 3072 x 1024 per rank: 100 of the 110 us of shaped GEMMs. */
    {gpt_trace, 8192, 24576, 1024, TRUE, "91% of its shaped GEMM time"},
    /* GPT-3's FC1 (8192 x 6144 x 12288 per rank): no shape in common. */
    {gpt_trace, 8192, 49152, 12288, FALSE, "8192x3072x1024 (91% of GEMM time)"},
    /* Without shapes: the 16 MiB all-gather is 8192 x 1024 x 2 bytes ... */
    {gpt_trace_no_shapes, 8192, 49152, 1024, TRUE, "AllGather 16.0 MiB (x1)"},
    /* ... and not 8192 x 12288 x 2 (192 MiB). */
    {gpt_trace_no_shapes, 8192, 49152, 12288, FALSE, "TP collectives: 192.0 MiB"},
};

START_TEST(test_same_workload)
{
    g_autoptr(GError) error = NULL;
    const char *json = workload_cases[_i].trace;
    g_autoptr(TpsTrace) trace = tps_trace_load_data(json, strlen(json), "gpt.json", &error);
    ck_assert_msg(trace != NULL, "%s", error ? error->message : "");
    g_autofree char *yaml = g_strdup_printf(
        "name: t\nhardware: a100-sxm4-80gb\nop: {kind: ag_gemm, m: %" G_GUINT64_FORMAT
        ", n: %" G_GUINT64_FORMAT ", k: %" G_GUINT64_FORMAT ", dtype: bf16}\nparallel: {tp: 8}\n",
        workload_cases[_i].m, workload_cases[_i].n, workload_cases[_i].k);
    TpsScenario scenario;
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", yaml, -1, &scenario, &error), "%s",
                  error ? error->message : "");
    TpsResult result;
    ck_assert(tps_simulate(&scenario, tps_strategy_lookup("sp-blocking"), &result, &error));
    g_autofree char *evidence = NULL;
    ck_assert_int_eq(tps_trace_same_workload(trace, &result, &evidence), workload_cases[_i].same);
    ck_assert_msg(strstr(evidence, workload_cases[_i].evidence), "%s", evidence);
    tps_scenario_clear(&scenario);
}
END_TEST

static int
run_tpsim(const char *const *args, char **out, char **err)
{
    return tps_test_spawn("TPSIM_BIN", NULL, args, out, err);
}

START_TEST(test_cli)
{
    g_autofree char *scenario = scenario_path("op-ag-gemm.yaml");
    g_autofree char *dir = g_dir_make_tmp("tpsim-compare-XXXXXX", NULL);
    g_autofree char *trace = g_build_filename(dir, "run.json", NULL);
    g_autofree char *out = NULL, *err = NULL;
    const char *run[] = {"run", scenario, "--strategy", "ring-ag", "--trace", trace, NULL};
    int rc = run_tpsim(run, &out, &err);
    ck_assert_msg(rc == 0, "%s", err);
    /* Round trip through the command line: the strategy comes from the trace. */
    const char *cmp[] = {"compare", "--trace",  trace,  "--scenario",
                         scenario,  "--format", "json", NULL};
    ck_assert_msg(run_tpsim(cmp, &out, &err) == 0, "%s", err);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert_msg(json_parser_load_from_data(parser, out, -1, NULL), "%s", out);
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    ck_assert_str_eq(json_object_get_string_member(root, "strategy"), "ring-ag");
    JsonArray *classes = json_object_get_array_member(root, "classes");
    for (guint i = 0; i < json_array_get_length(classes); i++) {
        JsonObject *row = json_array_get_object_element(classes, i);
        JsonNode *e = json_object_get_member(row, "error_pct");
        if (!JSON_NODE_HOLDS_NULL(e))
            ck_assert_double_eq(json_node_get_double(e), 0.0);
    }
    const char *table[] = {"compare", "--trace", trace, "--scenario", scenario, NULL};
    ck_assert_int_eq(run_tpsim(table, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(out, "error %"));

    const char *no_scenario[] = {"compare", "--trace", trace, NULL};
    ck_assert_int_eq(run_tpsim(no_scenario, &out, &err), 2);
    const char *extra[] = {"compare", "--trace", trace, "--scenario", scenario, "x", NULL};
    ck_assert_int_eq(run_tpsim(extra, &out, &err), 2);
    g_autofree char *png = g_build_filename(dir, "t.png", NULL);
    const char *timeline[] = {"compare", "--trace",    trace, "--scenario",
                              scenario,  "--timeline", png,   NULL};
    ck_assert_msg(run_tpsim(timeline, &out, &err) == 0, "%s", err);
    gsize len = 0;
    g_autofree char *image = NULL;
    ck_assert(g_file_get_contents(png, &image, &len, NULL));
    ck_assert(len > 8 && memcmp(image, "\x89PNG", 4) == 0);
    g_unlink(png);
    g_autofree char *txt = g_build_filename(dir, "t.txt", NULL);
    const char *bad_ext[] = {"compare", "--trace",    trace, "--scenario",
                             scenario,  "--timeline", txt,   NULL};
    ck_assert_int_eq(run_tpsim(bad_ext, &out, &err), 2);
    ck_assert(!g_file_test(txt, G_FILE_TEST_EXISTS));
    const char *bad_window[] = {"compare", "--trace",    trace, "--scenario",
                                scenario,  "--timeline", png,   "--timeline-window",
                                "5:1",     NULL};
    ck_assert_int_eq(run_tpsim(bad_window, &out, &err), 2);
    ck_assert(!g_file_test(png, G_FILE_TEST_EXISTS));
    const char *missing[] = {"compare",    "--trace", "/nonexistent.json",
                             "--scenario", scenario,  NULL};
    ck_assert_int_eq(run_tpsim(missing, &out, &err), 1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent.json: "));
    const char *strategy[] = {"compare", "--trace",    trace,     "--scenario",
                              scenario,  "--strategy", "no-such", NULL};
    ck_assert_int_eq(run_tpsim(strategy, &out, &err), 2); /* a bad option value */

    /* A CNN's DDP trace is not a GPT-3 layer: refused with the evidence
     * (its gradient all-reduces against the layer's 48 MiB TP collectives:
     * 2048 tokens x 12288 x 2 bytes), compared with --force. */
    const char *shared = tps_test_shared_dir();
    g_autofree char *ddp =
        shared ? g_build_filename(shared, "traces", "hta-ddp-a100-r0of2", "nccl_data.json.gz", NULL)
               : NULL;
    if (ddp != NULL && g_file_test(ddp, G_FILE_TEST_EXISTS)) {
        g_autofree char *gpt = scenario_path("gpt3-175b-tp8.yaml");
        const char *other[] = {"compare", "--trace", ddp, "--scenario", gpt, NULL};
        ck_assert_int_eq(run_tpsim(other, &out, &err), 1);
        ck_assert_msg(strstr(err, "does not record the workload of scenario 'gpt3-175b-tp8'"), "%s",
                      err);
        ck_assert_msg(strstr(err, "AllReduce 25.0 MiB"), "%s", err);
        ck_assert_msg(strstr(err, "TP collectives: 48.0 MiB"), "%s", err);
        ck_assert_msg(strstr(err, "--force"), "%s", err);
        ck_assert_str_eq(out, "");
        const char *forced[] = {"compare", "--trace", ddp, "--scenario", gpt, "--force", NULL};
        ck_assert_msg(run_tpsim(forced, &out, &err) == 0, "%s", err);
        ck_assert_msg(strstr(err, "warning"), "%s", err);
        ck_assert_ptr_nonnull(strstr(out, "error %"));
    }
    g_unlink(trace);
    g_rmdir(dir);
}
END_TEST

/* tpsim's own trace records the workload as a profiler's does: compare
 * accepts it (its GEMM shapes, its collectives' message sizes), and its
 * userbuffers flags and ring-exchange receives are no collectives. */
START_TEST(test_own_trace)
{
    g_autofree char *scenario = scenario_path("gpt3-175b-tp8.yaml");
    g_autofree char *dir = g_dir_make_tmp("tpsim-own-XXXXXX", NULL);
    g_autofree char *trace = g_build_filename(dir, "m.json", NULL);
    g_autofree char *out = NULL, *err = NULL;
    const char *run[] = {"run", scenario, "--strategy", "megatron", "--trace", trace, NULL};
    ck_assert_msg(run_tpsim(run, &out, &err) == 0, "%s", err);
    const char *cmp[] = {"compare", "--trace", trace, "--scenario", scenario, NULL};
    ck_assert_msg(run_tpsim(cmp, &out, &err) == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(out, "error %"));

    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load(trace, &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    TpsScenario sc;
    load_scenario("gpt3-175b-tp8.yaml", &sc);
    TpsResult result;
    ck_assert(tps_simulate(&sc, tps_strategy_lookup("megatron"), &result, &error));
    g_autofree char *evidence = NULL;
    ck_assert_msg(tps_trace_same_workload(t, &result, &evidence), "%s", evidence);
    ck_assert_msg(strstr(evidence, "100% of its shaped GEMM time") != NULL, "%s", evidence);
    ck_assert_msg(strstr(evidence, "AllGather 48.0 MiB") != NULL, "%s", evidence);
    tps_scenario_clear(&sc);

    const char *te[] = {"run", scenario, "--strategy", "te-default", "--trace", trace, NULL};
    ck_assert_msg(run_tpsim(te, &out, &err) == 0, "%s", err);
    const char *summary[] = {"trace", "summary", trace, NULL};
    g_free(out);
    out = NULL;
    ck_assert_msg(run_tpsim(summary, &out, &err) == 0, "%s", err);
    ck_assert_msg(strstr(out, "flag") == NULL && strstr(out, "Unknown") == NULL, "%s", out);
    const char *ag = strstr(out, "\nAllGather");
    ck_assert_msg(ag != NULL, "%s", out);
    guint count = 0;
    double us = 0, bytes = 0;
    ck_assert_int_eq(sscanf(ag, "\nAllGather %u %lf %lf", &count, &us, &bytes), 3);
    ck_assert_msg(bytes > 0, "%s", out);
    g_unlink(trace);
    g_rmdir(dir);
}
END_TEST

static Suite *
compare_suite(void)
{
    Suite *s = suite_create("compare");
    TCase *tc;

    tc = tcase_create("round-trip");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_round_trip, 0, G_N_ELEMENTS(round_trip_scenarios));
    tcase_add_test(tc, test_several_runs);
    suite_add_tcase(s, tc);

    tc = tcase_create("workload");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_same_workload, 0, G_N_ELEMENTS(workload_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("kineto");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_kineto);
    tcase_add_test(tc, test_no_kernels);
    tcase_add_test(tc, test_record);
    suite_add_tcase(s, tc);

    tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_own_trace);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(compare_suite());
}
