/* The files a command reads (issue 24): no output may replace one of them,
 * a scenario's relative model path is its own folder's, a file of another
 * kind is refused without quoting it, a figure's text is bounded, and the
 * options and trace values that make no sense are refused. Runs the tpsim
 * built (TPSIM_BIN). */
#include <check.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-util.h"

typedef struct {
    int status;
    char *out, *err;
} Run;

static void
run_clear(Run *r)
{
    g_clear_pointer(&r->out, g_free);
    g_clear_pointer(&r->err, g_free);
}

/* tpsim ARGS... (NULL-terminated) in `cwd` into `r`. */
static void
tpsim_in(Run *r, const char *cwd, ...)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    va_list ap;
    va_start(ap, cwd);
    for (const char *a = va_arg(ap, const char *); a != NULL; a = va_arg(ap, const char *))
        g_ptr_array_add(args, (gpointer)a);
    va_end(ap);
    g_ptr_array_add(args, NULL);
    r->status =
        tps_test_spawn("TPSIM_BIN", cwd, (const char *const *)args->pdata, &r->out, &r->err);
}

static char *
source_file(const char *folder, const char *name)
{
    g_autofree char *path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), folder, name, NULL);
    char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    return text;
}

static void
write_file(const char *dir, const char *name, const char *text)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    ck_assert_msg(g_file_set_contents(path, text, -1, NULL), "cannot write %s", path);
}

static void
assert_contents(const char *dir, const char *name, const char *expected)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "%s is gone", path);
    ck_assert_msg(strcmp(text, expected) == 0, "%s was changed", path);
}

/* Remove `dir` and everything under it. */
static void
remove_tree(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (d == NULL)
        return;
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK))
            remove_tree(path);
        else
            g_unlink(path);
    }
    g_rmdir(dir);
}

/* A small scenario (one all-gather + GEMM) on the model `hardware`. */
static char *
op_scenario(const char *hardware)
{
    return g_strdup_printf("name: op\nhardware: %s\n"
                           "op: {kind: ag_gemm, m: 8192, n: 49152, k: 12288, dtype: bf16}\n"
                           "parallel: {tp: 8}\n",
                           hardware);
}

static const char layer_scenario[] = "name: t\nhardware: a100-sxm4-80gb\n"
                                     "model: {hidden: 2048, heads: 16, layers: 2, seq_len: 2048}\n"
                                     "training: {micro_batch: 1, global_batch: 1}\n"
                                     "parallel: {tp: 8, sp: true}\n"
                                     "overlap: {ub_cfg: ub.yaml}\n";

/* Issue 24, 5: every file read is an input that no output may replace. */
START_TEST(test_outputs_not_inputs)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-inputs");
    g_autofree char *model = source_file("models", "a100-sxm4-80gb.yaml");
    write_file(dir, "m.yaml", model);
    g_autofree char *scn = op_scenario("m.yaml");
    write_file(dir, "x.yaml", scn);
    Run r = {0};

    /* run -o over the scenario's hardware model. */
    tpsim_in(&r, dir, "run", "x.yaml", "-o", "m.yaml", NULL);
    ck_assert_msg(r.status != 0, "run -o over the model: exit 0");
    ck_assert_msg(strstr(r.err, "is the input 'm.yaml'"), "%s", r.err);
    run_clear(&r);
    assert_contents(dir, "m.yaml", model);
    /* Through another spelling of the same file. */
    tpsim_in(&r, dir, "run", "x.yaml", "--trace", "./m.yaml", NULL);
    ck_assert_msg(r.status != 0, "run --trace over the model: exit 0");
    run_clear(&r);
    assert_contents(dir, "m.yaml", model);

    /* --emit-ub-cfg over the scenario's own ub_cfg file. */
    const char *ub = "proj_fprop:\n  method: ring_exchange\n";
    write_file(dir, "ub.yaml", ub);
    write_file(dir, "l.yaml", layer_scenario);
    tpsim_in(&r, dir, "run", "l.yaml", "--emit-ub-cfg", "ub.yaml", NULL);
    ck_assert_msg(r.status != 0, "--emit-ub-cfg over the ub_cfg: exit 0");
    ck_assert_msg(strstr(r.err, "is the input './ub.yaml'"), "%s", r.err);
    run_clear(&r);
    assert_contents(dir, "ub.yaml", ub);

    /* sweep -o over its base scenario, or over the base's model. */
    const char *sweep = "base: x.yaml\nvary:\n  op.m: [4096, 8192]\n";
    write_file(dir, "s.yaml", sweep);
    tpsim_in(&r, dir, "sweep", "s.yaml", "-o", "x.yaml", NULL);
    ck_assert_msg(r.status != 0, "sweep -o over the base: exit 0");
    ck_assert_msg(strstr(r.err, "is the input"), "%s", r.err);
    run_clear(&r);
    assert_contents(dir, "x.yaml", scn);
    tpsim_in(&r, dir, "sweep", "s.yaml", "-o", "m.yaml", NULL);
    ck_assert_msg(r.status != 0, "sweep -o over the model: exit 0");
    run_clear(&r);
    assert_contents(dir, "m.yaml", model);
    /* The sweep file itself, as before. */
    tpsim_in(&r, dir, "sweep", "s.yaml", "-o", "s.yaml", NULL);
    ck_assert_int_eq(r.status, 2);
    run_clear(&r);
    assert_contents(dir, "s.yaml", sweep);

    /* search -o or --plot over the scenario's model. */
    tpsim_in(&r, dir, "search", "x.yaml", "--gpus", "8", "-o", "m.yaml", NULL);
    ck_assert_msg(r.status != 0, "search -o over the model: exit 0");
    ck_assert_msg(strstr(r.err, "is the input 'm.yaml'"), "%s", r.err);
    run_clear(&r);
    assert_contents(dir, "m.yaml", model);
    tpsim_in(&r, dir, "search", "l.yaml", "--gpus", "8", "--emit-ub-cfg", "ub.yaml", NULL);
    ck_assert_msg(r.status != 0, "search --emit-ub-cfg over the ub_cfg: exit 0");
    run_clear(&r);
    assert_contents(dir, "ub.yaml", ub);

    /* A Megatron-LM script and its --model. */
    const char *script = "torchrun pretrain_gpt.py --num-layers 2 --hidden-size 2048 "
                         "--num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 "
                         "--global-batch-size 1 --bf16 --tensor-model-parallel-size 8\n";
    write_file(dir, "train.sh", script);
    tpsim_in(&r, dir, "run", "--megatron-args", "train.sh", "--model", "m.yaml", "-o", "train.sh",
             NULL);
    ck_assert_msg(r.status != 0, "run -o over the script: exit 0");
    run_clear(&r);
    assert_contents(dir, "train.sh", script);
    tpsim_in(&r, dir, "run", "--megatron-args", "train.sh", "--model", "m.yaml", "-o", "m.yaml",
             NULL);
    ck_assert_msg(r.status != 0, "run -o over --model: exit 0");
    run_clear(&r);
    assert_contents(dir, "m.yaml", model);

    /* validate -o or --points over its --model. */
    tpsim_in(&r, dir, "validate", "--model", "m.yaml", "-o", "m.yaml", NULL);
    ck_assert_msg(r.status != 0, "validate -o over --model: exit 0");
    ck_assert_msg(strstr(r.err, "is the input 'm.yaml'"), "%s", r.err);
    run_clear(&r);
    tpsim_in(&r, dir, "validate", "--model", "m.yaml", "--points", "m.yaml", NULL);
    ck_assert_msg(r.status != 0, "validate --points over --model: exit 0");
    run_clear(&r);
    assert_contents(dir, "m.yaml", model);

    /* What is not read may still be written. */
    tpsim_in(&r, dir, "run", "x.yaml", "-o", "out.txt", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    remove_tree(dir);
}
END_TEST

/* Issue 24, 6: a relative hardware path is the scenario's folder's, not
 * the current folder's. */
START_TEST(test_model_path_relative)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-inputs");
    g_autofree char *sub = g_build_filename(dir, "sub", NULL);
    g_autofree char *sub_models = g_build_filename(sub, "models", NULL);
    g_autofree char *top_models = g_build_filename(dir, "models", NULL);
    ck_assert_int_eq(g_mkdir_with_parents(sub_models, 0755), 0);
    ck_assert_int_eq(g_mkdir_with_parents(top_models, 0755), 0);
    g_autofree char *model = source_file("models", "a100-sxm4-80gb.yaml");
    /* The same model under two names: the one beside the scenario is
     * meant; the one of the current folder has the same relative path. */
    g_autoptr(GString) near = g_string_new(model);
    g_string_replace(near, "name: a100-sxm4-80gb", "name: near-model", 1);
    g_autoptr(GString) far = g_string_new(model);
    g_string_replace(far, "name: a100-sxm4-80gb", "name: far-model", 1);
    write_file(sub_models, "m.yaml", near->str);
    write_file(top_models, "m.yaml", far->str);
    g_autofree char *scn = op_scenario("models/m.yaml");
    write_file(sub, "x.yaml", scn);
    Run r = {0};

    tpsim_in(&r, dir, "run", "sub/x.yaml", "--format", "json", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "near-model") != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, "far-model") == NULL, "the current folder's model was used");
    /* The results name the file as resolved and the digest of its bytes;
     * the CSV has both as its last two columns before `tied` (added after
     * them; the last row, sp-blocking, the slowest, is not tied with the
     * fastest: at the interference class's p10 of -36.6% its difference
     * band no longer holds 0, test-tune's test_run_ties). */
    g_autofree char *near_path = g_build_filename(sub_models, "m.yaml", NULL);
    g_autofree char *canonical = g_canonicalize_filename(near_path, NULL);
    g_autofree char *sha = g_compute_checksum_for_string(G_CHECKSUM_SHA256, near->str, -1);
    g_autofree char *file_member = g_strdup_printf("\"hardware_file\" : \"%s\"", canonical);
    g_autofree char *sha_member = g_strdup_printf("\"hardware_sha256\" : \"%s\"", sha);
    ck_assert_msg(strstr(r.out, file_member) != NULL, "%s", r.out);
    ck_assert_msg(strstr(r.out, sha_member) != NULL, "%s", r.out);
    run_clear(&r);
    tpsim_in(&r, dir, "run", "sub/x.yaml", "--format", "csv", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    g_autofree char *tail = g_strdup_printf(",%s,%s,false\n", canonical, sha);
    ck_assert_msg(g_str_has_suffix(r.out, tail), "%s", r.out);
    run_clear(&r);
    /* The same from the scenario's folder. */
    tpsim_in(&r, sub, "run", "x.yaml", "--format", "json", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    ck_assert_msg(strstr(r.out, "near-model") != NULL, "%s", r.out);
    run_clear(&r);
    /* Only the current folder has it: not found, at the scenario's value. */
    g_autofree char *gone = g_build_filename(sub_models, "m.yaml", NULL);
    ck_assert_int_eq(g_unlink(gone), 0);
    tpsim_in(&r, dir, "run", "sub/x.yaml", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "sub/x.yaml:2:11: ") != NULL, "%s", r.err);
    run_clear(&r);
    /* A NAME keeps its lookup in the model folders. */
    g_autofree char *named = op_scenario("a100-sxm4-80gb");
    write_file(sub, "n.yaml", named);
    tpsim_in(&r, dir, "run", "sub/n.yaml", NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    remove_tree(dir);
}
END_TEST

/* Issue 24, 7: a file of another kind named as a model, a userbuffers
 * configuration, a scenario or a sweep is refused without its bytes. */
START_TEST(test_not_that_kind)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-inputs");
    /* What /etc/shadow looks like (a list, a map of other keys: the same). */
    static const char *const secrets[] = {
        "root:*:19999:0:99999:7:::\ndaemon:*:19999:0:99999:7:::\n",
        "root: \"*:19999:0:99999:7:::\"\ndaemon: x\n",
        "- root:*:19999\n- daemon\n",
    };
    Run r = {0};
    for (guint i = 0; i < G_N_ELEMENTS(secrets); i++) {
        write_file(dir, "secret", secrets[i]);
        g_autofree char *scn = op_scenario("./secret");
        write_file(dir, "x.yaml", scn);
        tpsim_in(&r, dir, "run", "x.yaml", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "root") == NULL && strstr(r.err, "daemon") == NULL,
                      "the file is quoted: %s", r.err);
        ck_assert_msg(strstr(r.err, "tpsim: ./secret:1:1: not a hardware model file (no 'name:'") !=
                          NULL,
                      "%s", r.err);
        run_clear(&r);

        /* The same file as the scenario, its ub_cfg, a sweep. */
        tpsim_in(&r, dir, "run", "secret", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "root") == NULL, "the file is quoted: %s", r.err);
        ck_assert_msg(strstr(r.err, "secret:1:1: not a scenario file") != NULL, "%s", r.err);
        run_clear(&r);
        g_autoptr(GString) ub = g_string_new(layer_scenario);
        g_string_replace(ub, "ub.yaml", "secret", 1);
        write_file(dir, "l.yaml", ub->str);
        tpsim_in(&r, dir, "run", "l.yaml", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "root") == NULL, "the file is quoted: %s", r.err);
        ck_assert_msg(strstr(r.err, "not a userbuffers configuration file") != NULL, "%s", r.err);
        run_clear(&r);
        tpsim_in(&r, dir, "sweep", "secret", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "root") == NULL, "the file is quoted: %s", r.err);
        ck_assert_msg(strstr(r.err, "not a sweep file") != NULL, "%s", r.err);
        run_clear(&r);
        tpsim_in(&r, dir, "calibrate", "--measurements", "secret", "--base", "a100-sxm4-80gb",
                 "-o", "fit.yaml", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, "root") == NULL, "the file is quoted: %s", r.err);
        ck_assert_msg(strstr(r.err, "not a measurements file") != NULL, "%s", r.err);
        run_clear(&r);
    }
    /* A real model file with a wrong key still names it. */
    g_autofree char *model = source_file("models", "a100-sxm4-80gb.yaml");
    g_autofree char *typo = g_strconcat(model, "nodes: {}\n", NULL);
    write_file(dir, "m.yaml", typo);
    g_autofree char *scn = op_scenario("m.yaml");
    write_file(dir, "x.yaml", scn);
    tpsim_in(&r, dir, "run", "x.yaml", NULL);
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "unknown key 'nodes'") != NULL, "%s", r.err);
    run_clear(&r);
    remove_tree(dir);
}
END_TEST

/* Issue 24, 9: a plot's title is bounded (4,000 characters took seconds
 * to lay out). */
START_TEST(test_plot_text_bounded)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-inputs");
    g_autofree char *scn =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", "op-ag-gemm.yaml", NULL);
    g_autofree char *title = g_strnfill(4000, 'x');
    g_autofree char *plot = g_strdup_printf("kind: timeline\nscenario: %s\ntitle: %s\n"
                                            "formats: [svg]\n",
                                            scn, title);
    write_file(dir, "p.yaml", plot);
    Run r = {0};
    const gint64 t0 = g_get_monotonic_time();
    tpsim_in(&r, dir, "plot", "p.yaml", "-o", dir, NULL);
    const double seconds = (double)(g_get_monotonic_time() - t0) * 1e-6;
    ck_assert_int_eq(r.status, 1);
    ck_assert_msg(strstr(r.err, "p.yaml:3:8: title: 4000 characters, more than the 200") != NULL,
                  "%s", r.err);
    ck_assert_msg(seconds < 2.0, "%.2f s", seconds);
    run_clear(&r);
    /* 200 are fine. */
    g_autofree char *fine = g_strnfill(200, 'y');
    g_autofree char *plot2 = g_strdup_printf("kind: timeline\nscenario: %s\ntitle: %s\n"
                                             "formats: [svg]\n",
                                             scn, fine);
    write_file(dir, "p.yaml", plot2);
    tpsim_in(&r, dir, "plot", "p.yaml", "-o", dir, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    remove_tree(dir);
}
END_TEST

/* Issue 24, 13: --jobs 0 is refused as the message says. */
START_TEST(test_jobs_range)
{
    g_autofree char *sweep =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "sweeps", "seq-len.yaml", NULL);
    g_autofree char *scn =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", "gpt-345m-tp8.yaml", NULL);
    Run r = {0};
    static const char *const bad[] = {"0", "-1", "4097"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        tpsim_in(&r, NULL, "sweep", sweep, "--jobs", bad[i], "-o", "/dev/null", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "--jobs takes 1 to 4096") != NULL, "%s", r.err);
        run_clear(&r);
        tpsim_in(&r, NULL, "search", scn, "--gpus", "16", "--jobs", bad[i], "-o", "/dev/null",
                 NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strstr(r.err, "--jobs takes 1 to 4096") != NULL, "%s", r.err);
        run_clear(&r);
    }
    g_autofree char *dir = g_dir_make_tmp("tpsim-jobs-XXXXXX", NULL);
    ck_assert_ptr_nonnull(dir);
    g_autofree char *out = g_build_filename(dir, "s.csv", NULL);
    tpsim_in(&r, NULL, "sweep", sweep, "--jobs", "1", "-o", out, NULL);
    ck_assert_msg(r.status == 0, "%s", r.err);
    run_clear(&r);
    tps_test_remove_dir(dir);
}
END_TEST

static Suite *
inputs_suite(void)
{
    Suite *s = suite_create("inputs");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_outputs_not_inputs);
    tcase_add_test(tc, test_model_path_relative);
    tcase_add_test(tc, test_not_that_kind);
    tcase_add_test(tc, test_plot_text_bounded);
    tcase_add_test(tc, test_jobs_range);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(inputs_suite());
}
