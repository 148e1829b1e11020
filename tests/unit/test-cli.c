/* The tpsim command line, driven as users and other tools drive it:
 * exit statuses, messages, formats, atomic output. */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cost/hardware.h"
#include "io/input/model-file.h"

typedef struct {
    int status;
    char *out;
    char *err;
} Run;

static void
run_clear(Run *r)
{
    g_free(r->out);
    g_free(r->err);
}

/* Run tpsim with NULL-terminated arguments from the source folder. */
static void
tpsim(Run *r, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    va_list ap;
    va_start(ap, r);
    for (const char *a; (a = va_arg(ap, const char *));)
        g_ptr_array_add(args, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(args, NULL);
    r->out = r->err = NULL;
    r->status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"),
                               (const char *const *)args->pdata, &r->out, &r->err);
}

START_TEST(test_help_version)
{
    Run r;
    tpsim(&r, "--version", NULL);
    ck_assert_int_eq(r.status, 0);
    g_autofree char *version = g_strdup_printf("tpsim %s\n", g_getenv("TPSIM_VERSION"));
    ck_assert_str_eq(r.out, version);
    run_clear(&r);
    tpsim(&r, "--help", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "run"));
    run_clear(&r);
    tpsim(&r, "run", "--help", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert(strstr(r.out, "--strategy"));
    ck_assert(strstr(r.out, "megatron"));
    run_clear(&r);
    tpsim(&r, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    tpsim(&r, "frobnicate", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "unknown command 'frobnicate'"));
    run_clear(&r);
}
END_TEST

START_TEST(test_usage_errors)
{
    Run r;
    tpsim(&r, "run", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "missing SCENARIO.yaml"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/default.yaml", "--format", "xml", NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert(strstr(r.err, "unknown format 'xml'"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/default.yaml", "--no-such-option", NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
}
END_TEST

START_TEST(test_run_json)
{
    Run r;
    tpsim(&r, "run", "scenarios/gpt3-175b-tp8.yaml", "--format", "json", "--strategy",
          "sp-blocking", "--strategy", "megatron", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_data(parser, r.out, -1, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    ck_assert_str_eq(json_object_get_string_member(root, "tool"), "tpsim");
    ck_assert_str_eq(json_object_get_string_member(root, "version"), g_getenv("TPSIM_VERSION"));
    ck_assert_str_eq(json_object_get_string_member(root, "hardware"), "a100-sxm4-80gb");
    ck_assert_int_eq(json_object_get_int_member(root, "seed"), 1);
    JsonArray *results = json_object_get_array_member(root, "results");
    ck_assert_uint_eq(json_array_get_length(results), 2);
    static const char *const fields[] = {"step_time_s", "mfu", "memory_gib",
                                         "tokens_per_s_per_gpu"};
    /* Over megatron: no time saved and speedup 1 for itself. */
    JsonObject *first = json_array_get_object_element(results, 0);
    ck_assert_double_eq_tol(json_object_get_double_member(first, "time_saved"), 0.0, 1e-9);
    ck_assert_double_eq_tol(json_object_get_double_member(first, "speedup"), 1.0, 1e-9);
    for (guint i = 0; i < 2; i++) {
        JsonObject *res = json_array_get_object_element(results, i);
        /* Fastest first: megatron hides part of the backward communication. */
        ck_assert_str_eq(json_object_get_string_member(res, "strategy"),
                         i ? "sp-blocking" : "megatron");
        ck_assert(json_object_has_member(res, "time_saved"));
        for (guint f = 0; f < G_N_ELEMENTS(fields); f++)
            ck_assert_msg(json_object_get_double_member(res, fields[f]) > 0, "%s", fields[f]);
        JsonObject *layer = json_object_get_object_member(res, "layer");
        ck_assert(json_object_get_double_member(layer, "forward_ms") > 0);
        ck_assert(json_object_get_double_member(layer, "backward_ms") > 0);
        ck_assert(json_object_get_double_member(layer, "exposed_comm_ms") > 0);
        ck_assert(json_object_get_double_member(layer, "tp_comm_ms") > 0);
        ck_assert(json_object_has_member(res, "fits_memory"));
        /* The error band is around the prediction. */
        const double step = json_object_get_double_member(res, "step_time_s");
        ck_assert_double_lt(json_object_get_double_member(res, "step_time_s_low"), step);
        ck_assert_double_gt(json_object_get_double_member(res, "step_time_s_high"), step);
    }
    /* Byte-identical on a second run. */
    Run again;
    tpsim(&again, "run", "scenarios/gpt3-175b-tp8.yaml", "--format", "json", "--strategy",
          "sp-blocking", "--strategy", "megatron", NULL);
    ck_assert_str_eq(r.out, again.out);
    run_clear(&again);
    run_clear(&r);
}
END_TEST

START_TEST(test_run_op_json)
{
    Run r;
    tpsim(&r, "run", "scenarios/op-ag-gemm.yaml", "--format", "json", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_data(parser, r.out, -1, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonArray *results = json_object_get_array_member(root, "results");
    JsonObject *op = json_object_get_object_member(json_array_get_object_element(results, 0), "op");
    const double time = json_object_get_double_member(op, "time_ms");
    ck_assert(time > 0);
    ck_assert_double_lt(json_object_get_double_member(op, "time_ms_low"), time);
    ck_assert_double_gt(json_object_get_double_member(op, "time_ms_high"), time);
    ck_assert(json_object_get_double_member(op, "gemm_ms") > 0);
    ck_assert(json_object_get_double_member(op, "comm_ms") > 0);
    ck_assert(json_object_has_member(op, "overlap_efficiency"));
    run_clear(&r);
}
END_TEST

START_TEST(test_run_breakdown)
{
    Run r;
    tpsim(&r, "run", "scenarios/gpt3-175b-tp8.yaml", "--breakdown", "--strategy", "te-default",
          NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(strstr(r.out, "te-default: per GEMM of one layer"));
    static const char *const gemms[] = {"qkv_fprop",  "fc1_fprop", "proj_fprop", "fc2_fprop",
                                        "proj_dgrad", "fc2_dgrad", "qkv_dgrad",  "fc1_dgrad",
                                        "qkv_wgrad",  "fc1_wgrad"};
    for (guint i = 0; i < G_N_ELEMENTS(gemms); i++)
        ck_assert_msg(strstr(r.out, gemms[i]), "no %s", gemms[i]);
    ck_assert(strstr(r.out, "ring_exchange"));
    ck_assert(strstr(r.out, "pipeline"));
    ck_assert(strstr(r.out, "bulk"));

    /* The reference is simulated on the side: a gain is shown. */
    ck_assert(strstr(r.out, "saved vs megatron"));
    ck_assert(strstr(r.out, "%"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/default.yaml", "--breakdown", "--format", "json", "--strategy",
          "bulk", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_data(parser, r.out, -1, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonObject *res =
        json_array_get_object_element(json_object_get_array_member(root, "results"), 0);
    JsonArray *g = json_object_get_array_member(res, "gemms");
    ck_assert_uint_eq(json_array_get_length(g), 10);
    run_clear(&r);

    /* Megatron (LinearWithGradAccumulationAndAsyncCommunication): the
     * forward's collectives and the row-parallel dgrads' all-gathers on
     * the compute stream, the column-parallel backward's all-gather and
     * reduce-scatter on NCCL's side stream; never the method "none". */
    static const char *const megatron[][2] = {
        {"qkv_fprop", "blocking"},         {"fc1_fprop", "blocking"},
        {"proj_fprop", "blocking"},        {"fc2_fprop", "blocking"},
        {"proj_dgrad", "blocking"},        {"fc2_dgrad", "blocking"},
        {"qkv_dgrad", "nccl-side-stream"}, {"fc1_dgrad", "nccl-side-stream"},
        {"qkv_wgrad", "nccl-side-stream"}, {"fc1_wgrad", "nccl-side-stream"},
    };
    tpsim(&r, "run", "scenarios/default.yaml", "--breakdown", "--format", "json", "--strategy",
          "megatron", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autoptr(JsonParser) p2 = json_parser_new();
    ck_assert(json_parser_load_from_data(p2, r.out, -1, NULL));
    g = json_object_get_array_member(
        json_array_get_object_element(
            json_object_get_array_member(json_node_get_object(json_parser_get_root(p2)),
                                         "results"),
            0),
        "gemms");
    ck_assert_uint_eq(json_array_get_length(g), G_N_ELEMENTS(megatron));
    for (guint i = 0; i < G_N_ELEMENTS(megatron); i++) {
        JsonObject *o = json_array_get_object_element(g, i);
        ck_assert_str_eq(json_object_get_string_member(o, "gemm"), megatron[i][0]);
        ck_assert_str_eq(json_object_get_string_member(o, "method"), megatron[i][1]);
    }
    run_clear(&r);

    /* An op scenario's breakdown is its one GEMM, in every format. */
    tpsim(&r, "run", "scenarios/op-gemm-rs.yaml", "--breakdown", "--strategy", "ring-rs",
          "--format", "csv", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
    ck_assert_uint_eq(g_strv_length(lines), 3);
    ck_assert(strstr(lines[0], ",gemm,gemm_collective,gemm_method,gemm_span_ms,"));
    ck_assert(strstr(lines[1], ",op,ReduceScatter,ring_exchange,"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/op-gemm-rs.yaml", "--breakdown", "--strategy", "ring-rs", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(strstr(r.out, "ring-rs: per GEMM of the op"));
    run_clear(&r);
}
END_TEST

START_TEST(test_run_table_csv)
{
    Run r;
    tpsim(&r, "run", "scenarios/default.yaml", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(strstr(r.out, "strategy"));
    ck_assert(strstr(r.out, "ms"));
    ck_assert(strstr(r.out, "megatron"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/default.yaml", "--format", "csv", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(g_str_has_prefix(r.out, "scenario,hardware,strategy,skipped,time_saved,speedup,"
                                      "gpus,tp,pp,vpp,dp,micro_batch,recompute,"
                                      "distributed_optimizer,step_time_s,step_time_s_low,"
                                      "step_time_s_high,layer_forward_ms,"));
    g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
    ck_assert_uint_ge(g_strv_length(lines), 3);
    /* A run's strategies are ranked: `tied` ends its rows (the fastest: false). */
    ck_assert_msg(g_str_has_suffix(lines[0], ",hardware_sha256,tied"), "%s", lines[0]);
    ck_assert_msg(g_str_has_suffix(lines[1], ",false"), "%s", lines[1]);
    run_clear(&r);
}
END_TEST

START_TEST(test_output_atomic)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-cli-XXXXXX", NULL);
    g_autofree char *out = g_build_filename(dir, "result.json", NULL);
    Run r;
    tpsim(&r, "run", "scenarios/default.yaml", "--format", "json", "--output", out, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_str_eq(r.out, "");
    ck_assert(g_file_test(out, G_FILE_TEST_EXISTS));
    run_clear(&r);
    /* A failing run writes nothing. */
    g_autofree char *bad = g_build_filename(dir, "bad.yaml", NULL);
    g_autofree char *out2 = g_build_filename(dir, "none.json", NULL);
    ck_assert(g_file_set_contents(bad, "name: x\nhardware: a100-sxm4-80gb\nmodel:\n  hiden: 1\n",
                                  -1, NULL));
    tpsim(&r, "run", bad, "--output", out2, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert(!g_file_test(out2, G_FILE_TEST_EXISTS));
    ck_assert_msg(strstr(r.err, "bad.yaml:4:3:"), "%s", r.err);
    ck_assert(strstr(r.err, "did you mean 'hidden'"));
    run_clear(&r);
    g_unlink(bad);
    g_unlink(out);
    g_rmdir(dir);
}
END_TEST

/* ---- outputs: distinct, all or none, failures reported (issue 13) ---- */

static gint
compare_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file of the source tree, read. */
static char *
source_file(const char *folder, const char *name)
{
    g_autofree char *path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), folder, name, NULL);
    char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    return text;
}

/* The names in `dir`, sorted, joined by spaces. */
static char *
listing(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    ck_assert_ptr_nonnull(d);
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; (n = g_dir_read_name(d));)
        g_ptr_array_add(names, g_strdup(n));
    g_ptr_array_sort(names, compare_names);
    g_ptr_array_add(names, NULL);
    return g_strjoinv(" ", (char **)names->pdata);
}

static void
rm_rf(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (d == NULL)
        return;
    for (const char *n; (n = g_dir_read_name(d));) {
        g_autofree char *p = g_build_filename(dir, n, NULL);
        if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
            rm_rf(p);
        else
            g_unlink(p);
    }
    g_rmdir(dir);
}

static void
assert_contents(const char *path, const char *expected)
{
    g_autofree char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    ck_assert_str_eq(text, expected);
}

/* D10: an output that is an input, or two outputs that are one file, are
 * refused before any work (usage error), whatever the spelling. */
START_TEST(test_outputs_distinct)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-cli-XXXXXX", NULL);
    g_autofree char *scn = g_build_filename(dir, "x.yaml", NULL);
    g_autofree char *src = source_file("scenarios", "op-ag-gemm.yaml");
    ck_assert(g_file_set_contents(scn, src, -1, NULL));
    g_autofree char *lnk = g_build_filename(dir, "link.yaml", NULL);
    ck_assert_int_eq(symlink("x.yaml", lnk), 0);
    g_autofree char *same = g_build_filename(dir, "same.json", NULL);
    g_autofree char *same2 = g_strdup_printf("%s/../%s/./same.json", dir, strrchr(dir, '/') + 1);
    Run r;

    tpsim(&r, "run", scn, "--output", scn, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "is the input"), "%s", r.err);
    run_clear(&r);
    /* Through a link to the input. */
    tpsim(&r, "run", scn, "--format", "json", "--output", lnk, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    tpsim(&r, "run", lnk, "--trace", scn, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    assert_contents(scn, src);
    /* Two outputs, one file not yet there, spelled two ways. */
    tpsim(&r, "run", scn, "--output", same, "--trace", same2, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "are the same file"), "%s", r.err);
    run_clear(&r);
    g_autofree char *png = g_build_filename(dir, "t.png", NULL);
    tpsim(&r, "run", scn, "--timeline", png, "--trace", png, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    /* The same, once it exists (by inode: a hard link). */
    ck_assert(g_file_set_contents(same, "old\n", -1, NULL));
    g_autofree char *hard = g_build_filename(dir, "hard.json", NULL);
    ck_assert_int_eq(link(same, hard), 0);
    tpsim(&r, "run", scn, "--output", same, "--trace", hard, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    assert_contents(same, "old\n");
    g_autofree char *names = listing(dir);
    ck_assert_str_eq(names, "hard.json link.yaml same.json x.yaml");
    /* Devices are exempt: two outputs into /dev/null destroy nothing. */
    tpsim(&r, "run", scn, "--output", "/dev/null", "--trace", "/dev/null", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    /* The other commands: trace summary's input, calibrate's base. */
    g_autofree char *trace = g_build_filename(dir, "t.json", NULL);
    tpsim(&r, "run", scn, "--trace", trace, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    tpsim(&r, "trace", "summary", trace, "--output", trace, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    g_autofree char *model = g_build_filename(dir, "m.yaml", NULL);
    g_autofree char *model_src = source_file("models", "a100-sxm4-80gb.yaml");
    ck_assert(g_file_set_contents(model, model_src, -1, NULL));
    tpsim(&r, "calibrate", "--base", model, "--trace", trace, "--output", model, NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    assert_contents(model, model_src);
    rm_rf(dir);
}
END_TEST

/* D11: when a later output fails, the earlier ones are not written either
 * (and an old file keeps its content); when all succeed, all are there. */
START_TEST(test_outputs_all_or_none)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-cli-XXXXXX", NULL);
    g_autofree char *res = g_build_filename(dir, "r.txt", NULL);
    g_autofree char *png = g_build_filename(dir, "t.png", NULL);
    g_autofree char *json = g_build_filename(dir, "t.json", NULL);
    g_autofree char *bad = g_build_filename(dir, "no", "t.json", NULL);
    ck_assert(g_file_set_contents(res, "old\n", -1, NULL));
    Run r;
    tpsim(&r, "run", "scenarios/op-ag-gemm.yaml", "--output", res, "--timeline", png, "--trace",
          bad, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, bad), "%s", r.err);
    run_clear(&r);
    assert_contents(res, "old\n");
    g_autofree char *names = listing(dir);
    ck_assert_str_eq(names, "r.txt");
    /* A failing figure after the results: neither is written. */
    g_autofree char *bad_png = g_build_filename(dir, "no", "t.png", NULL);
    tpsim(&r, "run", "scenarios/op-ag-gemm.yaml", "--output", res, "--trace", json, "--timeline",
          bad_png, NULL);
    ck_assert_int_eq(r.status, 1);
    run_clear(&r);
    g_free(names);
    names = listing(dir);
    ck_assert_str_eq(names, "r.txt");

    tpsim(&r, "run", "scenarios/op-ag-gemm.yaml", "--output", res, "--timeline", png, "--trace",
          json, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    g_free(names);
    names = listing(dir);
    ck_assert_str_eq(names, "r.txt t.json t.png");
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(res, &text, NULL, NULL));
    ck_assert(strstr(text, "sp-blocking"));

    /* plot: a bad second definition leaves the first one's figure out. */
    g_autofree char *out = g_build_filename(dir, "figs", NULL);
    g_autofree char *plot_bad = g_build_filename(dir, "bad.yaml", NULL);
    ck_assert(g_file_set_contents(plot_bad, "kind: timeline\n", -1, NULL));
    tpsim(&r, "plot", "plots/rs-pipeline-chunks.yaml", plot_bad, "--output-dir", out, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_str_eq(r.out, "");
    run_clear(&r);
    g_autofree char *fig = g_build_filename(out, "rs-pipeline-chunks.png", NULL);
    ck_assert(!g_file_test(fig, G_FILE_TEST_EXISTS));
    rm_rf(dir);
}
END_TEST

/* D12: a result that cannot be written to standard output (a full disk
 * behind it) is an error, and nothing else is written. */
START_TEST(test_stdout_full)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-cli-XXXXXX", NULL);
    g_autofree char *json = g_build_filename(dir, "t.json", NULL);
    g_autofree char *trace = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "tests", "fuzz",
                                              "corpus", "kineto-small.json", NULL);
    const char *const run[] = {"run", "scenarios/op-ag-gemm.yaml", "--trace", json, NULL};
    const char *const summary[] = {"trace", "summary", trace, NULL};
    const char *const plot[] = {"plot", "plots/rs-pipeline-chunks.yaml", "--output-dir", dir, NULL};
    const char *const *cases[] = {run, summary, plot};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *err = NULL;
        int status = tps_test_spawn_to("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), cases[i],
                                       "/dev/full", &err);
        ck_assert_msg(status == 1, "%s: exit %d", cases[i][0], status);
        ck_assert_msg(strstr(err, "standard output"), "%s: %s", cases[i][0], err);
        g_autofree char *names = listing(dir);
        ck_assert_msg(*names == '\0', "%s left %s", cases[i][0], names);
    }
    rm_rf(dir);
}
END_TEST

/* The first `.NAME.tpsim-XXXXXX` in `dir`, waiting up to a minute for it
 * to appear; NULL if none did. */
static char *
wait_for_temp(const char *dir)
{
    for (int tries = 0; tries < 6000; tries++) {
        g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
        for (const char *n; (n = g_dir_read_name(d));)
            if (n[0] == '.' && strstr(n, ".tpsim-"))
                return g_build_filename(dir, n, NULL);
        g_usleep(10000);
    }
    return NULL;
}

/* Start `tpsim run op-ag-gemm.yaml --output FIFO --trace DIR/t.json`: with
 * nobody reading the FIFO it stays in its commit, its trace staged. */
static GPid
start_blocked_run(const char *dir, const char *fifo)
{
    g_autofree char *json = g_build_filename(dir, "t.json", NULL);
    const char *argv[] = {g_getenv("TPSIM_BIN"),
                          "run",
                          "scenarios/op-ag-gemm.yaml",
                          "--output",
                          fifo,
                          "--trace",
                          json,
                          NULL};
    GPid pid;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(g_spawn_async(g_getenv("TPSIM_SOURCE_DIR"), (char **)argv, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                                &pid, &error),
                  "%s", error ? error->message : "");
    return pid;
}

static void
make_old(const char *path)
{
    struct timeval tv[2];
    gettimeofday(&tv[0], NULL);
    tv[0].tv_sec -= 3600;
    tv[1] = tv[0];
    ck_assert_int_eq(utimes(path, tv), 0);
}

/* Temporary files: removed on SIGTERM; kept while their writer lives, even
 * when old; removed by the next run once a SIGKILL left them behind. */
START_TEST(test_outputs_killed)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-cli-XXXXXX", NULL);
    g_autofree char *fifo_dir = g_dir_make_tmp("tpsim-fifo-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(fifo_dir, "fifo", NULL);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);

    /* SIGTERM: the handler removes the staged trace. */
    GPid pid = start_blocked_run(dir, fifo);
    g_autofree char *tmp = wait_for_temp(dir);
    ck_assert_msg(tmp != NULL, "no temporary file appeared");
    /* Old, but its writer lives: another run into the folder keeps it. */
    make_old(tmp);
    g_autofree char *res = g_build_filename(dir, "r.txt", NULL);
    Run r;
    tpsim(&r, "run", "scenarios/op-ag-gemm.yaml", "--output", res, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    ck_assert_msg(g_file_test(tmp, G_FILE_TEST_EXISTS), "a live writer's file was removed");
    int status;
    ck_assert_int_eq(kill(pid, SIGTERM), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    g_spawn_close_pid(pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    g_autofree char *names = listing(dir);
    ck_assert_str_eq(names, "r.txt");

    /* SIGKILL leaves it; the next run into the folder removes it. */
    pid = start_blocked_run(dir, fifo);
    g_free(tmp);
    tmp = wait_for_temp(dir);
    ck_assert_ptr_nonnull(tmp);
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    g_spawn_close_pid(pid);
    ck_assert(g_file_test(tmp, G_FILE_TEST_EXISTS));
    make_old(tmp);
    tpsim(&r, "run", "scenarios/op-ag-gemm.yaml", "--output", res, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    g_free(names);
    names = listing(dir);
    ck_assert_str_eq(names, "r.txt");
    rm_rf(dir);
    rm_rf(fifo_dir);
}
END_TEST

/* D14: what a message quotes from the input (a key, a file name) reaches
 * the terminal with its control characters and stray bytes escaped. */
START_TEST(test_message_escapes)
{
    g_autofree char *dir = g_dir_make_tmp("tpsim-cli-XXXXXX", NULL);
    g_autofree char *scn = g_build_filename(dir, "esc.yaml", NULL);
    ck_assert(g_file_set_contents(scn,
                                  "name: z\nhardware: a100-sxm4-80gb\n"
                                  "model: {\"hid\\e[2J\\x9bden\": 1024}\n",
                                  -1, NULL));
    Run r;
    tpsim(&r, "run", scn, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "unknown key 'hid\\x1b[2J\\u009bden'"), "%s", r.err);
    ck_assert_ptr_null(strchr(r.err, '\033'));
    ck_assert_ptr_null(strstr(r.err, "\xc2\x9b"));
    run_clear(&r);
    /* A file name that is not UTF-8. */
    g_autofree char *odd = g_build_filename(dir, "odd\xff\x1b.yaml", NULL);
    tpsim(&r, "run", odd, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "odd\\xff\\x1b.yaml"), "%s", r.err);
    run_clear(&r);
    rm_rf(dir);
}
END_TEST

/* A bad option or option value exits 2 before any file is read, a bad
 * file 1, in every command (issue 23 item 7). */
START_TEST(test_exit_codes)
{
    static const struct {
        int status;
        const char *says;
        const char *args[10];
    } cases[] = {
        {2, "unknown strategy 'nosuch'", {"run", "scenarios/gpt3-175b-tp8.yaml", "--strategy",
                                          "nosuch", NULL}},
        {2, "unknown strategy", {"run", "no/such/file.yaml", "--strategy", "nosuch", NULL}},
        {2, "unknown format", {"run", "scenarios/gpt3-175b-tp8.yaml", "--format", "xml", NULL}},
        {2, "--timeline-rank", {"run", "scenarios/gpt3-175b-tp8.yaml", "--timeline-rank", "x",
                                NULL}},
        {2, "--timeline-window", {"run", "scenarios/gpt3-175b-tp8.yaml", "--timeline-window",
                                  "5:1", NULL}},
        /* A rank the scenario's TP group does not have. */
        {2, "--timeline-rank 9", {"run", "scenarios/gpt3-175b-tp8.yaml", "--timeline",
                                  "/nonexistent/t.png", "--timeline-rank", "9", NULL}},
        {2, "run: --model: unknown hardware model 'h100'",
         {"run", "--megatron-args", "tests/data/megatron/gpt3-175b.sh", "--model", "h100", NULL}},
        {1, "--model: no/such/model.yaml", {"run", "--megatron-args",
                                            "tests/data/megatron/gpt3-175b.sh", "--model",
                                            "no/such/model.yaml", NULL}},
        {2, "unknown strategy", {"compare", "--trace", "no/such.json", "--scenario",
                                 "scenarios/gpt3-175b-tp8.yaml", "--strategy", "nosuch", NULL}},
        {2, "unknown format", {"compare", "--trace", "no/such.json", "--scenario",
                               "scenarios/gpt3-175b-tp8.yaml", "--format", "xml", NULL}},
        {2, "unknown format", {"trace", "summary", "no/such.json", "--format", "xml", NULL}},
        {2, "unknown format", {"validate", "--format", "xml", NULL}},
        {1, "no/such/file.yaml", {"run", "no/such/file.yaml", NULL}},
        {1, "no/such.json", {"compare", "--trace", "no/such.json", "--scenario",
                             "scenarios/gpt3-175b-tp8.yaml", NULL}},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        Run r;
        r.out = r.err = NULL;
        r.status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), cases[i].args,
                                  &r.out, &r.err);
        ck_assert_msg(r.status == cases[i].status, "case %u: exit %d: %s", i, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].says) != NULL, "case %u: %s", i, r.err);
        /* The option is named, not a line of the script. */
        ck_assert_msg(strstr(r.err, "gpt3-175b.sh:") == NULL, "case %u: %s", i, r.err);
        run_clear(&r);
    }
}
END_TEST

START_TEST(test_input_errors)
{
    Run r;
    tpsim(&r, "run", "no/such/file.yaml", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert(strstr(r.err, "no/such/file.yaml"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/gpt3-175b-tp8.yaml", "--strategy", "tp-allreduce", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert(strstr(r.err, "sp: false"));
    run_clear(&r);
}
END_TEST

/* Every shipped scenario runs, and fits in its GPUs' memory under every
 * preset that applies (issue 12: examples that run on real clusters). */
START_TEST(test_every_scenario)
{
    g_autofree char *dir_path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", NULL);
    g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
    ck_assert_ptr_nonnull(dir);
    guint checked = 0;
    for (const char *f; (f = g_dir_read_name(dir));) {
        if (!g_str_has_suffix(f, ".yaml"))
            continue;
        g_autofree char *path = g_build_filename("scenarios", f, NULL);
        Run r;
        tpsim(&r, "run", path, "--format", "csv", NULL);
        ck_assert_msg(r.status == 0, "%s: %s", f, r.err);
        g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
        g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
        guint fits = 0;
        while (head[fits] != NULL && strcmp(head[fits], "fits_memory") != 0)
            fits++;
        for (guint l = 1; head[fits] != NULL && lines[l][0] != '\0'; l++) {
            g_auto(GStrv) cells = g_strsplit(lines[l], ",", -1);
            ck_assert_msg(g_strv_length(cells) > fits, "%s: %s", f, lines[l]);
            ck_assert_msg(strcmp(cells[fits], "true") == 0, "%s: %s does not fit in memory", f,
                          cells[2]);
            checked++;
        }
        run_clear(&r);
    }
    ck_assert_uint_gt(checked, 50); /* the model scenarios' presets were read */
}
END_TEST

/* Strategies that do not apply are rows "skipped: REASON", and the others
 * run; every file written is confirmed once on standard error. */
START_TEST(test_run_skipped_and_wrote)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-cli-wrote");
    g_autofree char *out = g_build_filename(dir, "r.csv", NULL);
    g_autofree char *trace = g_build_filename(dir, "t.json", NULL);
    Run r;
    tpsim(&r, "run", "scenarios/default.yaml", "--strategy", "tp-allreduce", "--strategy",
          "megatron", "--strategy", "custom", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
    ck_assert(g_str_has_prefix(lines[3], "megatron "));
    ck_assert(g_str_has_prefix(lines[4], "custom        skipped: strategy 'custom' needs an "
                                         "overlap: map"));
    ck_assert(g_str_has_prefix(lines[5], "tp-allreduce  skipped: strategy 'tp-allreduce' is for "
                                         "tensor parallelism without sequence parallelism"));
    ck_assert_str_eq(r.err, ""); /* standard output only: nothing to confirm */
    run_clear(&r);

    tpsim(&r, "run", "scenarios/default.yaml", "--strategy", "megatron", "--format", "csv",
          "--output", out, "--trace", trace, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autofree char *said = g_strdup_printf("wrote %s\nwrote %s\n", out, trace);
    ck_assert_str_eq(r.err, said);
    run_clear(&r);
    tps_test_remove_dir(dir);
}
END_TEST

/* ---- tpsim validate ---- */

/* TRUE, or the test is skipped. */
static gboolean
have_calibration_set(void)
{
    const char *shared = tps_test_shared_dir();
    g_autofree char *dir = shared ? g_build_filename(shared, "calibration", NULL) : NULL;
    if (dir != NULL && g_file_test(dir, G_FILE_TEST_IS_DIR))
        return TRUE;
    tps_test_skip("no calibration set ($TPSIM_SHARED_DIR/calibration)");
}

/* The JSON of issue 10: {"datasets": [{name, points, median_abs_pct,
 * p90_abs_pct, max_abs_pct, bias_pct}]}, exactly those keys, one dataset
 * per line (the CI check reads it with awk). */
START_TEST(test_validate_json)
{
    if (!have_calibration_set())
        return;
    Run r;
    tpsim(&r, "validate", "--format", "json", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_data(parser, r.out, -1, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    ck_assert_uint_eq(json_object_get_size(root), 2);
    JsonArray *sets = json_object_get_array_member(root, "datasets");
    /* The error-band classes: each one's quantiles now, and the model's
     * uncertainty section, which must be the same up to its rounding. */
    JsonArray *bands = json_object_get_array_member(root, "uncertainty");
    ck_assert_uint_eq(json_array_get_length(bands), TPS_BAND_COUNT);
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        JsonObject *o = json_array_get_object_element(bands, c);
        ck_assert_uint_eq(json_object_get_size(o), 7);
        ck_assert_str_eq(json_object_get_string_member(o, "class"), tps_band_class_names[c]);
        ck_assert_str_eq(json_object_get_string_member(o, "model"), "a100-sxm4-80gb");
        ck_assert(json_object_has_member(o, "points"));
        ck_assert_double_eq_tol(json_object_get_double_member(o, "p10_pct"),
                                json_object_get_double_member(o, "model_p10_pct"), 0.0501);
        ck_assert_double_eq_tol(json_object_get_double_member(o, "p90_pct"),
                                json_object_get_double_member(o, "model_p90_pct"), 0.0501);
    }
    ck_assert_uint_gt(json_array_get_length(sets), 20);
    static const char *const keys[] = {"name",        "points",      "median_abs_pct",
                                       "p90_abs_pct", "max_abs_pct", "bias_pct"};
    for (guint i = 0; i < json_array_get_length(sets); i++) {
        JsonObject *o = json_array_get_object_element(sets, i);
        ck_assert_uint_eq(json_object_get_size(o), G_N_ELEMENTS(keys));
        for (guint k = 0; k < G_N_ELEMENTS(keys); k++)
            ck_assert_msg(json_object_has_member(o, keys[k]), "no %s", keys[k]);
        /* One dataset per line. */
        g_autofree char *line =
            g_strdup_printf("  {\"name\": \"%s\", ", json_object_get_string_member(o, "name"));
        ck_assert_ptr_nonnull(strstr(r.out, line));
    }
    run_clear(&r);

    tpsim(&r, "validate", NULL);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "vidur-gemm/all "));
    run_clear(&r);
}
END_TEST

/* --points: every point of every set but the summary ones, as CSV; the
 * error column is the point's own error; a set counts as many lines as
 * its file has records (vidur's 2 x 2 all-reduce: 994). */
START_TEST(test_validate_points)
{
    if (!have_calibration_set())
        return;
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    g_autofree char *csv = g_build_filename(dir, "points.csv", NULL);
    Run r;
    tpsim(&r, "validate", "--points", csv, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "vidur-gemm/all "));
    run_clear(&r);
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(csv, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    ck_assert_str_eq(lines[0], "dataset,x,measured_us,predicted_us,error_pct");
    guint n_2x2 = 0, n_all = 0;
    for (guint i = 1; lines[i] != NULL && lines[i][0] != '\0'; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        ck_assert_uint_eq(g_strv_length(f), 5);
        if (strcmp(f[0], "vidur-all-reduce/2x2") == 0)
            n_2x2++;
        if (strcmp(f[0], "vidur-gemm/all") == 0)
            n_all++;
        const double m = g_ascii_strtod(f[2], NULL), p = g_ascii_strtod(f[3], NULL);
        ck_assert_double_eq_tol(g_ascii_strtod(f[4], NULL), 100.0 * (p - m) / m, 1e-9);
    }
    ck_assert_uint_eq(n_2x2, 994);
    ck_assert_uint_eq(n_all, 0);
    g_unlink(csv);
    g_rmdir(dir);
}
END_TEST

/* --kernels: the H100 GEMMs on recorded kernels. llama-2-7b's QKV at 4096
 * tokens and TP 1 (4096 x 12288 x 4096) is in 2 records of its H100 file
 * (python's csv module): the kernels set has 2 points. A tile the model
 * lacks is refused with the point; a file without gemm_algos too; with
 * --doc it is a usage error. */
START_TEST(test_validate_kernels)
{
    if (!have_calibration_set())
        return;
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    g_autofree char *good = g_build_filename(dir, "k.yaml", NULL);
    g_autofree char *bad = g_build_filename(dir, "bad.yaml", NULL);
    g_autofree char *none = g_build_filename(dir, "none.yaml", NULL);
    ck_assert(g_file_set_contents(good,
                                  "gemm_algos:\n"
                                  "  - {m: 4096, n: 12288, k: 4096, dtype: fp16, algo: 1, "
                                  "tile_id: 24, tile_m: 128, tile_n: 256, split_k: 1, "
                                  "cluster_m: 1, cluster_n: 2}\n",
                                  -1, NULL));
    ck_assert(g_file_set_contents(bad,
                                  "gemm_algos:\n"
                                  "  - {m: 4096, n: 12288, k: 4096, dtype: fp16, algo: 1, "
                                  "tile_id: 1, tile_m: 8, tile_n: 8, split_k: 1, "
                                  "cluster_m: 0, cluster_n: 0}\n",
                                  -1, NULL));
    ck_assert(g_file_set_contents(none, "launch:\n  - {what: kernel, us: 2.5}\n", -1, NULL));
    Run r;
    tpsim(&r, "validate", "--model", "h100-sxm", "--kernels", good, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_ptr_nonnull(strstr(r.out, "\nvidur-gemm/llama-2-7b/kernels  "));
    const char *row = strstr(r.out, "vidur-gemm/llama-2-7b/kernels");
    ck_assert_int_eq(atoi(row + strlen("vidur-gemm/llama-2-7b/kernels")), 2);
    ck_assert_ptr_null(strstr(r.out, "vidur-gemm/qwen-72b/kernels"));
    run_clear(&r);
    tpsim(&r, "validate", "--model", "h100-sxm", "--kernels", bad, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "bad.yaml: gemm_algos[0]") && strstr(r.err, "tile 8x8 is not in"),
                  "%s", r.err);
    run_clear(&r);
    tpsim(&r, "validate", "--kernels", none, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "none.yaml: no gemm_algos points"), "%s", r.err);
    run_clear(&r);
    tpsim(&r, "validate", "--kernels", good, "--doc", "x.md", "--plot-dir", dir, NULL);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "--kernels"), "%s", r.err);
    run_clear(&r);
    g_unlink(good);
    g_unlink(bad);
    g_unlink(none);
    g_rmdir(dir);
}
END_TEST

START_TEST(test_validate_doc)
{
    if (!have_calibration_set())
        return;
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    g_autofree char *doc = g_build_filename(dir, "v.md", NULL);
    g_autofree char *img = g_build_filename(dir, "img", NULL);
    static const char page[] = "# Page\n\nprose\n<!-- validate: begin (generated) -->\nold\n"
                               "<!-- validate: end -->\nafter\n";
    ck_assert(g_file_set_contents(doc, page, -1, NULL));
    Run r;
    tpsim(&r, "validate", "--doc", doc, NULL);
    ck_assert_int_eq(r.status, 2); /* --plot-dir goes with it */
    run_clear(&r);
    tpsim(&r, "validate", "--doc", doc, "--plot-dir", img, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(doc, &text, NULL, NULL));
    /* The prose stays, the block is replaced, the plots are linked from
     * the page's folder and written. */
    ck_assert(g_str_has_prefix(text, "# Page\n\nprose\n<!-- validate: begin (generated) -->\n"));
    ck_assert(g_str_has_suffix(text, "<!-- validate: end -->\nafter\n"));
    ck_assert_ptr_null(strstr(text, "old\n"));
    ck_assert_ptr_nonnull(strstr(text, "| `vidur-gemm/llama-3-8b` | 6240 |"));
    ck_assert_ptr_nonnull(strstr(text, "](img/validation-gemm.png)"));
    g_autofree char *png = g_build_filename(img, "validation-gemm.png", NULL);
    ck_assert(g_file_test(png, G_FILE_TEST_IS_REGULAR));

    /* A page without the markers is an input error and is left alone. */
    ck_assert(g_file_set_contents(doc, "no markers\n", -1, NULL));
    tpsim(&r, "validate", "--doc", doc, "--plot-dir", img, NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "needs one line starting"));
    run_clear(&r);
    g_autofree char *after = NULL;
    ck_assert(g_file_get_contents(doc, &after, NULL, NULL));
    ck_assert_str_eq(after, "no markers\n");

    g_autoptr(GDir) d = g_dir_open(img, 0, NULL);
    for (const char *f; d && (f = g_dir_read_name(d));) {
        g_autofree char *p = g_build_filename(img, f, NULL);
        g_unlink(p);
    }
    g_rmdir(img);
    g_unlink(doc);
    g_rmdir(dir);
}
END_TEST

/* The error bands the binary uses (the models' uncertainty sections) are
 * the figures recorded in docs/validation.json by `make validate`: a
 * model edited without recording, or a record without the model, fails. */
START_TEST(test_validation_record_bands)
{
    g_autofree char *path =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "docs", "validation.json", NULL);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_file(parser, path, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonArray *bands = json_object_get_array_member(root, "uncertainty");
    ck_assert_uint_eq(json_array_get_length(bands), TPS_BAND_COUNT);
    TpsHardware hw = {0};
    JsonObject *first = json_array_get_object_element(bands, 0);
    ck_assert(
        tps_model_file_resolve(json_object_get_string_member(first, "model"), NULL, &hw, NULL));
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        JsonObject *o = json_array_get_object_element(bands, c);
        ck_assert_str_eq(json_object_get_string_member(o, "class"), tps_band_class_names[c]);
        ck_assert_double_eq_tol(json_object_get_double_member(o, "p10_pct"), hw.band_p10_pct[c],
                                0.0501);
        ck_assert_double_eq_tol(json_object_get_double_member(o, "p90_pct"), hw.band_p90_pct[c],
                                0.0501);
    }
    tps_hardware_clear(&hw);
}
END_TEST

/* build-aux/check-validation.sh: passes on the recorded figures, fails
 * when a dataset's p90 has grown by more than a point over its record, or
 * when a model's error bands are not what the validation gives. */
START_TEST(test_validation_check_script)
{
    if (!have_calibration_set())
        return;
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    g_autofree char *script = g_build_filename(src, "build-aux", "check-validation.sh", NULL);
    g_autofree char *dir = g_dir_make_tmp("tpsim-validate-XXXXXX", NULL);
    g_autofree char *base = g_build_filename(dir, "base.json", NULL);
    Run r;
    tpsim(&r, "validate", "--format", "json", "--output", base, NULL);
    ck_assert_int_eq(r.status, 0);
    run_clear(&r);

    const char *argv[] = {"sh", script, g_getenv("TPSIM_BIN"), base, NULL};
    g_autofree char *out = NULL;
    int status = 0;
    ck_assert(g_spawn_sync(src, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, NULL,
                           &status, NULL));
    ck_assert_msg(g_spawn_check_wait_status(status, NULL), "%s", out);

    /* Record a p90 1.5 points below the real one for one dataset. */
    g_autofree char *json = NULL;
    ck_assert(g_file_get_contents(base, &json, NULL, NULL));
    char *line = strstr(json, "\"name\": \"vidur-gemm/all\"");
    ck_assert_ptr_nonnull(line);
    char *p90 = strstr(line, "\"p90_abs_pct\": ");
    ck_assert_ptr_nonnull(p90);
    p90 += strlen("\"p90_abs_pct\": ");
    char *end;
    double v = g_ascii_strtod(p90, &end);
    g_autofree char *lowered = g_strdup_printf("%.2f", v - 1.5);
    GString *mutated = g_string_new_len(json, p90 - json);
    g_string_append(mutated, lowered);
    g_string_append(mutated, end);
    ck_assert(g_file_set_contents(base, mutated->str, -1, NULL));
    g_string_free(mutated, TRUE);
    g_clear_pointer(&out, g_free);
    ck_assert(g_spawn_sync(src, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, NULL,
                           &status, NULL));
    ck_assert(!g_spawn_check_wait_status(status, NULL));
    ck_assert_msg(strstr(out, "vidur-gemm/all: p90 |error|") != NULL, "%s", out);

    /* A model whose GEMM band is a point narrower than the residuals. */
    g_autofree char *model_path = g_build_filename(src, "models", "a100-sxm4-80gb.yaml", NULL);
    g_autofree char *model = NULL;
    ck_assert(g_file_get_contents(model_path, &model, NULL, NULL));
    char *gemm = strstr(model, "\n  p10_pct:\n    gemm: ");
    ck_assert_ptr_nonnull(gemm);
    gemm += strlen("\n  p10_pct:\n    gemm: ");
    double p10 = g_ascii_strtod(gemm, &end);
    g_autofree char *narrow = g_strdup_printf("%.1f", p10 + 1.0);
    GString *edited = g_string_new_len(model, gemm - model);
    g_string_append(edited, narrow);
    g_string_append(edited, end);
    g_autofree char *edited_path = g_build_filename(dir, "a100-sxm4-80gb.yaml", NULL);
    ck_assert(g_file_set_contents(edited_path, edited->str, -1, NULL));
    g_string_free(edited, TRUE);
    ck_assert(g_file_set_contents(base, json, -1, NULL)); /* the p90 record restored */
    const char *argv_model[] = {"sh", script, g_getenv("TPSIM_BIN"), base, edited_path, NULL};
    g_clear_pointer(&out, g_free);
    ck_assert(g_spawn_sync(src, (char **)argv_model, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
                           NULL, &status, NULL));
    ck_assert(!g_spawn_check_wait_status(status, NULL));
    ck_assert_msg(strstr(out, "uncertainty.p10_pct.gemm is") != NULL, "%s", out);
    g_unlink(edited_path);
    g_unlink(base);
    g_rmdir(dir);
}
END_TEST

/* build-aux/gain-table.sh: reruns the scenarios of a folder and replaces
 * the generated block of the page, keeping the rest; a row per scenario
 * against megatron (op scenarios: sp-blocking), the cell of each preset
 * run being 100 (1 - t / t_ref) / 100 (t_ref / t - 1). A page without the
 * markers is refused and left alone. */
START_TEST(test_gain_table_script)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    g_autofree char *script = g_build_filename(src, "build-aux", "gain-table.sh", NULL);
    g_autofree char *dir = g_dir_make_tmp("tpsim-gains-XXXXXX", NULL);
    g_autofree char *scen = g_build_filename(dir, "scenarios", NULL);
    g_autofree char *doc = g_build_filename(dir, "gains.md", NULL);
    ck_assert_int_eq(g_mkdir(scen, 0700), 0);
    static const char *const names[] = {"op-ag-gemm.yaml", "gpt-345m-tp8.yaml"};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *from = g_build_filename(src, "scenarios", names[i], NULL);
        g_autofree char *to = g_build_filename(scen, names[i], NULL);
        g_autofree char *text = NULL;
        ck_assert(g_file_get_contents(from, &text, NULL, NULL));
        ck_assert(g_file_set_contents(to, text, -1, NULL));
    }
    static const char page[] =
        "# Gains\n\nprose\n"
        "<!-- gain-table:begin (build-aux/gain-table.sh writes this block) -->\nold\n"
        "<!-- gain-table:end -->\nafter\n";
    ck_assert(g_file_set_contents(doc, page, -1, NULL));
    const char *argv[] = {"sh", script, g_getenv("TPSIM_BIN"), doc, scen, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    ck_assert(g_spawn_sync(src, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                           &status, NULL));
    ck_assert_msg(g_spawn_check_wait_status(status, NULL), "%s", err);
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(doc, &text, NULL, NULL));
    ck_assert(g_str_has_prefix(text, "# Gains\n\nprose\n<!-- gain-table:begin"));
    ck_assert(g_str_has_suffix(text, "<!-- gain-table:end -->\nafter\n"));
    ck_assert_ptr_null(strstr(text, "\nold\n"));
    ck_assert_ptr_nonnull(strstr(text, "| gpt-345m-tp8 | megatron |"));
    ck_assert_ptr_nonnull(strstr(text, "| op-ag-gemm | sp-blocking |"));

    /* The op row's ring-exchange cell from the op's own times. */
    Run r;
    g_autofree char *op = g_build_filename(scen, "op-ag-gemm.yaml", NULL);
    tpsim(&r, "run", "-f", "csv", "-s", "ring-ag", "-s", "sp-blocking", op, NULL);
    ck_assert_int_eq(r.status, 0);
    double ring = 0.0, blocking = 0.0;
    g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
    g_auto(GStrv) head = g_strsplit(lines[0], ",", -1);
    guint tcol = 0; /* the op's time, by its header */
    while (head[tcol] != NULL && strcmp(head[tcol], "time_ms") != 0)
        tcol++;
    ck_assert_ptr_nonnull(head[tcol]);
    for (guint i = 1; lines[i] != NULL; i++) {
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        if (g_strv_length(f) <= tcol)
            continue;
        if (strcmp(f[2], "ring-ag") == 0)
            ring = g_ascii_strtod(f[tcol], NULL);
        else if (strcmp(f[2], "sp-blocking") == 0)
            blocking = g_ascii_strtod(f[tcol], NULL);
    }
    run_clear(&r);
    ck_assert(ring > 0.0 && blocking > 0.0);
    g_autofree char *cell = g_strdup_printf(" %+.1f / %+.1f |", 100 * (1 - ring / blocking),
                                            100 * (blocking / ring - 1));
    const char *row = strstr(text, "| op-ag-gemm | sp-blocking |");
    const char *eol = strchr(row, '\n');
    g_autofree char *row_text = g_strndup(row, eol - row);
    ck_assert_msg(strstr(row_text, cell) != NULL, "%s lacks%s", row_text, cell);

    /* Without the markers: refused, the page left alone. */
    ck_assert(g_file_set_contents(doc, "no markers\n", -1, NULL));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    ck_assert(g_spawn_sync(src, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, &err,
                           &status, NULL));
    ck_assert(!g_spawn_check_wait_status(status, NULL));
    g_autofree char *after = NULL;
    ck_assert(g_file_get_contents(doc, &after, NULL, NULL));
    ck_assert_str_eq(after, "no markers\n");

    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *to = g_build_filename(scen, names[i], NULL);
        g_unlink(to);
    }
    g_rmdir(scen);
    g_unlink(doc);
    g_rmdir(dir);
}
END_TEST

/* ---- tpsim search ---- */

/* A small GPT (8 heads, 4 layers, 16 sequences) in a new folder; its path. */
static char *
search_scenario(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "small.yaml", NULL);
    const char *text = "name: small\nhardware: a100-sxm4-80gb\n"
                       "model: {hidden: 512, heads: 8, layers: 4, seq_len: 512}\n"
                       "training: {micro_batch: 1, global_batch: 16}\n"
                       "parallel: {tp: 1}\n";
    ck_assert(g_file_set_contents(path, text, -1, NULL));
    return g_steal_pointer(&path);
}

static guint
count_lines(const char *path)
{
    g_autofree char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
    guint n = 0;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    return n;
}

/* The output file of a search is a plain CSV, ranked as the table: its
 * column line first ("rank,point,..."), rank 1 the table's best (its
 * layout and strategy), the ranks 1, 2, ... in order, and its sidecar
 * next to it. */
static void
search_file_is_ranked(const char *csv, const char *table)
{
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(csv, &text, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    ck_assert_msg(g_str_has_prefix(lines[0], "rank,point,scenario,"), "%s", lines[0]);
    g_auto(GStrv) names = g_strsplit(lines[0], ",", -1);
    g_auto(GStrv) best = g_strsplit(lines[1], ",", -1);
    ck_assert_uint_eq(g_strv_length(best), g_strv_length(names));
    for (guint i = 1; lines[i] && lines[i][0]; i++) {
        g_autofree char *rank = g_strdup_printf("%u,", i);
        ck_assert_msg(g_str_has_prefix(lines[i], rank), "%s", lines[i]);
    }
    const char *row1 = strstr(table, "\n   1 ");
    ck_assert(row1 != NULL);
    g_autofree char *line = g_strndup(row1 + 1, strcspn(row1 + 1, "\n"));
    g_auto(GStrv) words = g_strsplit_set(g_strstrip(line), " ", -1);
    GPtrArray *tokens = g_ptr_array_new();
    for (guint i = 0; words[i]; i++)
        if (words[i][0])
            g_ptr_array_add(tokens, words[i]);
    /* rank tp pp vpp dp mb recompute dist-opt strategy ... */
    static const char *const columns[] = {"tp", "pp", "vpp", "dp", "micro_batch", "recompute"};
    for (guint c = 0; c < G_N_ELEMENTS(columns); c++) {
        guint k = 0;
        while (names[k] && strcmp(names[k], columns[c]) != 0)
            k++;
        ck_assert(names[k] != NULL);
        ck_assert_str_eq(best[k], g_ptr_array_index(tokens, c + 1));
    }
    guint k = 0;
    while (names[k] && strcmp(names[k], "strategy") != 0)
        k++;
    ck_assert_str_eq(best[k], g_ptr_array_index(tokens, 8));
    g_ptr_array_unref(tokens);
    g_autofree char *sidecar = g_strconcat(csv, ".batch", NULL);
    g_autofree char *id = NULL;
    ck_assert(g_file_get_contents(sidecar, &id, NULL, NULL));
    ck_assert_msg(g_str_has_prefix(id, "tpsim batch ") && strstr(id, " ranked\n"), "%s", id);
}

/* The table, every row in the CSV (1770 layouts counted by hand in
 * test-search.c, a line each, after the column line), the figure; shards
 * merged are the whole search. */
START_TEST(test_search)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-search");
    g_autofree char *scenario = search_scenario(dir);
    g_autofree char *csv = g_build_filename(dir, "all.csv", NULL);
    g_autofree char *png = g_build_filename(dir, "front.png", NULL);
    Run r;
    tpsim(&r, "search", scenario, "--gpus", "16", "--top", "3", "--jobs", "2", "--output", csv,
          "--plot", png, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "small on 16 GPUs (a100-sxm4-80gb): 1770 layouts simulated"), "%s",
                  r.out);
    ck_assert(strstr(r.out, "rank"));
    ck_assert(strstr(r.out, "\n   3 ") && !strstr(r.out, "\n   4 "));
    ck_assert(strstr(r.out, "beats"));
    ck_assert_uint_eq(count_lines(csv), 1770 + 1);
    {
        /* A search's file rows have no `tied` (docs/scenario-format.md). */
        g_autofree char *text = NULL;
        ck_assert(g_file_get_contents(csv, &text, NULL, NULL));
        g_auto(GStrv) head = g_strsplit(text, "\n", 2);
        ck_assert_msg(g_str_has_suffix(head[0], ",hardware_sha256"), "%s", head[0]);
    }
    ck_assert(g_file_test(png, G_FILE_TEST_IS_REGULAR));
    search_file_is_ranked(csv, r.out);
    run_clear(&r);

    /* Two shards, merged: byte for byte the unsharded output. */
    g_autofree char *part0 = g_build_filename(dir, "part0.csv", NULL);
    g_autofree char *part1 = g_build_filename(dir, "part1.csv", NULL);
    g_autofree char *merged = g_build_filename(dir, "merged.csv", NULL);
    tpsim(&r, "search", scenario, "--gpus", "16", "--shard", "0/2", "--output", part0, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(strstr(r.out, "Shard 0/2"));
    run_clear(&r);
    tpsim(&r, "search", scenario, "--gpus", "16", "--shard", "1/2", "--output", part1, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    tpsim(&r, "merge", part1, part0, "--output", merged, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    g_autofree char *a = NULL, *b = NULL;
    ck_assert(g_file_get_contents(csv, &a, NULL, NULL));
    ck_assert(g_file_get_contents(merged, &b, NULL, NULL));
    ck_assert_str_eq(a, b);

    /* --all lists what does not fit (none here: the same rows). */
    g_autofree char *json = g_build_filename(dir, "all.json", NULL);
    tpsim(&r, "search", scenario, "--gpus", "16", "--all", "--output", json, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_search_errors)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-search");
    g_autofree char *scenario = search_scenario(dir);
    static const struct {
        const char *args[6];
        int status;
        const char *message;
    } cases[] = {
        {{"--gpus", "7"}, 1, "--gpus 7: no layout divides it"},
        {{"--gpus", "0"}, 2, "--gpus takes a whole number from 1"},
        {{"--top", "3"}, 2, "--gpus N is required"},
        {{"--gpus", "16", "--objective", "speed"}, 2, "--objective takes step_time or"},
        {{"--gpus", "16", "--resume"}, 2, "--resume needs --output FILE"},
        {{"--gpus", "16", "--shard", "2/2"}, 2, "search: "},
        {{"--gpus", "16", "--plot", "x.gif"}, 2, "x.gif"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        const char *args[10] = {"search", scenario};
        guint n = 2;
        for (guint k = 0; k < 6 && cases[i].args[k]; k++)
            args[n++] = cases[i].args[k];
        args[n] = NULL;
        Run r;
        r.out = r.err = NULL;
        r.status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), args, &r.out, &r.err);
        ck_assert_msg(r.status == cases[i].status, "case %u: %d %s", i, r.status, r.err);
        ck_assert_msg(strstr(r.err, cases[i].message), "case %u: %s", i, r.err);
        run_clear(&r);
    }
    /* An op scenario has no layouts. */
    Run r;
    tpsim(&r, "search", "scenarios/op-ag-gemm.yaml", "--gpus", "8", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert(strstr(r.err, "needs a model scenario"));
    run_clear(&r);
    tps_test_remove_dir(dir);
}
END_TEST

/* The shipped example of docs/search.md, on fewer GPUs than it says (the
 * same space, smaller). */
START_TEST(test_search_example)
{
    Run r;
    tpsim(&r, "search", "scenarios/gpt3-xl-search.yaml", "--gpus", "8", "--top", "5", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert(strstr(r.out, "gpt3-xl-search on 8 GPUs"));
    ck_assert(strstr(r.out, "beats"));
    run_clear(&r);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_help_version);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_run_json);
    tcase_add_test(tc, test_run_op_json);
    tcase_add_test(tc, test_run_table_csv);
    tcase_add_test(tc, test_run_breakdown);
    tcase_add_test(tc, test_output_atomic);
    tcase_add_test(tc, test_outputs_distinct);
    tcase_add_test(tc, test_outputs_all_or_none);
    tcase_add_test(tc, test_stdout_full);
    tcase_add_test(tc, test_outputs_killed);
    tcase_add_test(tc, test_input_errors);
    tcase_add_test(tc, test_exit_codes);
    tcase_add_test(tc, test_message_escapes);
    tcase_add_test(tc, test_every_scenario);
    tcase_add_test(tc, test_run_skipped_and_wrote);
    tcase_add_test(tc, test_search);
    tcase_add_test(tc, test_search_errors);
    tcase_add_test(tc, test_search_example);
    tcase_add_test(tc, test_validate_json);
    tcase_add_test(tc, test_validate_doc);
    tcase_add_test(tc, test_validate_points);
    tcase_add_test(tc, test_validate_kernels);
    tcase_add_test(tc, test_validation_record_bands);
    tcase_add_test(tc, test_validation_check_script);
    tcase_add_test(tc, test_gain_table_script);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
