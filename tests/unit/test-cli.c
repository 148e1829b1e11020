/* The tpsim command line, driven as users and other tools drive it:
 * exit statuses, messages, formats, atomic output. */
#include <check.h>

#include "test-util.h"
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <glib/gstdio.h>
#include <string.h>

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
    static const char *const fields[] = {"step_time_s", "exposed_comm_ms", "tp_comm_ms", "mfu",
                                         "memory_gib"};
    /* The gain over megatron: 0 for itself, negative for the slower one. */
    ck_assert_double_eq_tol(
        json_object_get_double_member(json_array_get_object_element(
                                          json_object_get_array_member(root, "results"), 0),
                                      "gain"),
        0.0, 1e-9);
    for (guint i = 0; i < 2; i++) {
        JsonObject *res = json_array_get_object_element(results, i);
        /* Fastest first: megatron hides part of the backward communication. */
        ck_assert_str_eq(json_object_get_string_member(res, "strategy"),
                         i ? "sp-blocking" : "megatron");
        ck_assert(json_object_has_member(res, "gain"));
        for (guint f = 0; f < G_N_ELEMENTS(fields); f++)
            ck_assert_msg(json_object_get_double_member(res, fields[f]) > 0, "%s", fields[f]);
        JsonObject *layer = json_object_get_object_member(res, "layer");
        ck_assert(json_object_get_double_member(layer, "forward_ms") > 0);
        ck_assert(json_object_get_double_member(layer, "backward_ms") > 0);
        ck_assert(json_object_has_member(res, "fits_memory"));
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
    ck_assert(json_object_get_double_member(op, "time_ms") > 0);
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
    static const char *const gemms[] = {"qkv_fprop", "fc1_fprop", "proj_fprop", "fc2_fprop",
                                        "proj_dgrad", "fc2_dgrad", "qkv_dgrad", "fc1_dgrad",
                                        "qkv_wgrad", "fc1_wgrad"};
    for (guint i = 0; i < G_N_ELEMENTS(gemms); i++)
        ck_assert_msg(strstr(r.out, gemms[i]), "no %s", gemms[i]);
    ck_assert(strstr(r.out, "ring_exchange"));
    ck_assert(strstr(r.out, "pipeline"));
    ck_assert(strstr(r.out, "bulk"));
    /* The reference is simulated on the side: a gain is shown. */
    ck_assert(strstr(r.out, "vs megatron"));
    ck_assert(strstr(r.out, "%"));
    run_clear(&r);
    tpsim(&r, "run", "scenarios/default.yaml", "--breakdown", "--format", "json", "--strategy",
          "bulk", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_data(parser, r.out, -1, NULL));
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonObject *res = json_array_get_object_element(json_object_get_array_member(root, "results"), 0);
    JsonArray *g = json_object_get_array_member(res, "gemms");
    ck_assert_uint_eq(json_array_get_length(g), 10);
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
    ck_assert(g_str_has_prefix(r.out, "scenario,hardware,strategy,step_time_s,forward_ms,"));
    g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
    ck_assert_uint_ge(g_strv_length(lines), 3);
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

START_TEST(test_every_scenario)
{
    g_autofree char *dir_path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", NULL);
    g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
    ck_assert_ptr_nonnull(dir);
    for (const char *f; (f = g_dir_read_name(dir));) {
        if (!g_str_has_suffix(f, ".yaml"))
            continue;
        g_autofree char *path = g_build_filename("scenarios", f, NULL);
        Run r;
        tpsim(&r, "run", path, "--format", "csv", NULL);
        ck_assert_msg(r.status == 0, "%s: %s", f, r.err);
        run_clear(&r);
    }
}
END_TEST

/* ---- tpsim validate ---- */

static gboolean
have_calibration_set(void)
{
    const char *shared = g_getenv("TPSIM_SHARED_DIR");
    g_autofree char *dir = shared ? g_build_filename(shared, "calibration", NULL) : NULL;
    if (dir != NULL && g_file_test(dir, G_FILE_TEST_IS_DIR))
        return TRUE;
    fprintf(stderr, "# skipped: no calibration set ($TPSIM_SHARED_DIR/calibration)\n");
    return FALSE;
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
    ck_assert_uint_eq(json_object_get_size(root), 1);
    JsonArray *sets = json_object_get_array_member(root, "datasets");
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

/* build-aux/check-validation.sh: passes on the recorded figures, fails
 * when a dataset's p90 has grown by more than a point over its record. */
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
    g_unlink(base);
    g_rmdir(dir);
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
    tcase_add_test(tc, test_input_errors);
    tcase_add_test(tc, test_every_scenario);
    tcase_add_test(tc, test_validate_json);
    tcase_add_test(tc, test_validate_doc);
    tcase_add_test(tc, test_validation_check_script);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
