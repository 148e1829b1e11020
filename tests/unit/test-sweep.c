/* Sweep files (plan/sweep.h): dotted paths of every kind, ranges,
 * cartesian and zip, keep: {gpus}, located errors, the shipped sweeps. */
#include <string.h>

#include "io/input/scenario-file.h"
#include "plan/batch.h"
#include "plan/sweep.h"
#include "render/draw.h"
#include "render/plot-file.h"
#include "test-util.h"

/* A small valid base, inline, on line 1. */
#define BASE                                                                                       \
    "base: {name: s, hardware: a100-sxm4-80gb, model: {hidden: 4096, heads: 32, layers: 8, "     \
    "seq_len: 2048}, training: {global_batch: 64}, parallel: {tp: 2, sp: true}, overlap: "        \
    "{proj_fprop: {method: pipeline, num_splits: 2}}}\n"

static TpsSweep *
load_ok(const char *text)
{
    g_autoptr(GError) error = NULL;
    TpsSweep *sw = tps_sweep_load_string("s.yaml", text, -1, &error);
    ck_assert_msg(sw != NULL, "%s", error ? error->message : "");
    return sw;
}

static const TpsScenario *
point(const TpsSweep *sw, guint i)
{
    const TpsBatch *b = tps_sweep_batch(sw);
    ck_assert_uint_lt(i, b->points->len);
    return &((const TpsBatchPoint *)g_ptr_array_index(b->points, i))->scenario;
}

/* One path of each kind, its value read back from the point's scenario:
 * model, training (number, enum, flag), parallel, an overlap entry's
 * knob, hardware scalars of two sections (the model name becoming a
 * what-if) and an element of a hardware map. */
typedef struct {
    const char *path, *value;
    double expected;
} PathCase;

static double
scenario_value(const TpsScenario *sc, const char *path)
{
    if (strcmp(path, "model.seq_len") == 0)
        return (double)sc->seq_len;
    if (strcmp(path, "training.micro_batch") == 0)
        return (double)sc->micro_batch;
    if (strcmp(path, "training.recompute") == 0)
        return sc->recompute;
    if (strcmp(path, "training.distributed_optimizer") == 0)
        return sc->distributed_optimizer;
    if (strcmp(path, "parallel.tp") == 0)
        return sc->tp;
    if (strcmp(path, "overlap.proj_fprop.num_splits") == 0)
        return sc->overlap[TPS_GEMM_PROJ_FPROP].num_splits;
    if (strcmp(path, "hardware.node.nvlink_gbps") == 0)
        return sc->hardware.nvlink_gbps;
    if (strcmp(path, "hardware.network.nic_gbps") == 0)
        return sc->hardware.nic_gbps;
    if (strcmp(path, "hardware.gpu.peak_tflops.bf16") == 0)
        return sc->hardware.peak_tflops[TPS_DTYPE_BF16];
    ck_abort_msg("no case for %s", path);
    return 0;
}

static const PathCase path_cases[] = {
    {"model.seq_len", "4096", 4096},
    {"training.micro_batch", "4", 4},
    {"training.recompute", "full", TPS_RECOMPUTE_FULL},
    {"training.distributed_optimizer", "true", 1},
    {"parallel.tp", "4", 4},
    {"overlap.proj_fprop.num_splits", "4", 4},
    {"hardware.node.nvlink_gbps", "150", 150},
    {"hardware.network.nic_gbps", "12.5", 12.5},
    {"hardware.gpu.peak_tflops.bf16", "100", 100},
};

START_TEST(test_path_kinds)
{
    const PathCase *c = &path_cases[_i];
    g_autofree char *text = g_strdup_printf(BASE "vary:\n  %s: [%s]\n", c->path, c->value);
    g_autoptr(TpsSweep) sw = load_ok(text);
    const TpsBatch *b = tps_sweep_batch(sw);
    ck_assert_uint_eq(b->points->len, 1);
    const TpsBatchPoint *p = g_ptr_array_index(b->points, 0);
    ck_assert_str_eq(b->label_columns[0], c->path);
    ck_assert_str_eq(p->label_values[0], c->value);
    g_autofree char *key = g_strdup_printf("%s=%s", c->path, c->value);
    ck_assert_str_eq(p->key, key);
    ck_assert_msg(scenario_value(&p->scenario, c->path) == c->expected, "%s: %g", c->path,
                  scenario_value(&p->scenario, c->path));
    /* A hardware value changed names the model as changed. */
    if (g_str_has_prefix(c->path, "hardware."))
        ck_assert_str_eq(p->scenario.hardware.name, "a100-sxm4-80gb-what-if");
    else
        ck_assert_str_eq(p->scenario.hardware.name, "a100-sxm4-80gb");
}
END_TEST

/* Ranges by hand; cartesian with the last entry fastest; zip pairwise. */
START_TEST(test_ranges_and_order)
{
    g_autoptr(TpsSweep) sw = load_ok(BASE "vary:\n"
                                          "  model.seq_len: {from: 1024, to: 8192, times: 2}\n"
                                          "  hardware.node.nvlink_gbps: {from: 100, to: 300, "
                                          "step: 75}\n");
    const TpsBatch *b = tps_sweep_batch(sw);
    /* 1024, 2048, 4096, 8192 x 100, 175, 250. */
    ck_assert_uint_eq(b->points->len, 12);
    static const double seq[] = {1024, 2048, 4096, 8192};
    static const double nvl[] = {100, 175, 250};
    for (guint i = 0; i < 12; i++) {
        ck_assert_uint_eq((guint)point(sw, i)->seq_len, (guint)seq[i / 3]);
        ck_assert(point(sw, i)->hardware.nvlink_gbps == nvl[i % 3]);
    }
    const TpsBatchPoint *p5 = g_ptr_array_index(b->points, 5);
    ck_assert_str_eq(p5->key, "model.seq_len=2048;hardware.node.nvlink_gbps=250");

    g_autoptr(TpsSweep) zip = load_ok(BASE "vary:\n"
                                           "  model.seq_len: [1024, 4096]\n"
                                           "  training.micro_batch: [2, 8]\n"
                                           "zip: true\n");
    ck_assert_uint_eq(tps_sweep_batch(zip)->points->len, 2);
    ck_assert_uint_eq(point(zip, 1)->seq_len, 4096);
    ck_assert_uint_eq(point(zip, 1)->micro_batch, 8);
}
END_TEST

/* keep: {gpus: 64}: dp = 64 / (tp x pp); a tp x pp that does not divide
 * is a skipped point, its row saying why. */
START_TEST(test_keep_gpus)
{
    g_autoptr(TpsSweep) sw = load_ok(BASE "vary:\n"
                                          "  parallel.tp: [1, 2, 8, 3]\n"
                                          "  parallel.pp: [1, 4]\n"
                                          "keep: {gpus: 64}\n");
    /* tp, pp -> dp: (1,1) 64, (1,4) 16, (2,1) 32, (2,4) 8, (8,1) 8, (8,4) 2. */
    static const guint dp[] = {64, 16, 32, 8, 8, 2};
    for (guint i = 0; i < 6; i++) {
        ck_assert_uint_eq(point(sw, i)->dp, dp[i]);
        ck_assert_uint_eq(point(sw, i)->tp * point(sw, i)->pp * point(sw, i)->dp, 64);
    }
    const TpsBatch *b = tps_sweep_batch(sw);
    for (guint i = 6; i < 8; i++) {
        g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(TpsBatchRow));
        ck_assert(tps_sweep_eval(g_ptr_array_index(b->points, i), rows, sw, NULL));
        ck_assert_uint_eq(rows->len, 1);
        const TpsBatchRow *row = &g_array_index(rows, TpsBatchRow, 0);
        ck_assert_str_eq(row->skipped, i == 6
                                           ? "keep.gpus (64) is not divisible by tp x pp = 3 x 1"
                                           : "keep.gpus (64) is not divisible by tp x pp = 3 x 4");
        g_free(row->skipped);
    }
}
END_TEST

/* A combination the scenario rules refuse is a skipped point with the
 * rule's message, without a position (the point is in no file). */
START_TEST(test_rule_skips)
{
    g_autoptr(TpsSweep) sw = load_ok(BASE "vary:\n  parallel.tp: [3]\n");
    const TpsBatch *b = tps_sweep_batch(sw);
    g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(TpsBatchRow));
    ck_assert(tps_sweep_eval(g_ptr_array_index(b->points, 0), rows, sw, NULL));
    ck_assert_uint_eq(rows->len, 1);
    TpsBatchRow *row = &g_array_index(rows, TpsBatchRow, 0);
    ck_assert_str_eq(row->skipped, "model.heads (32) must be divisible by parallel.tp (3): each "
                                   "rank computes heads / tp attention heads");
    g_free(row->skipped);
}
END_TEST

typedef struct {
    const char *text; /* after BASE (line 1) */
    const char *message;
} ErrorCase;

static const ErrorCase error_cases[] = {
    {"vary:\n  model.seq_lenn: [1024]\n",
     "s.yaml:3:3: vary.model.seq_lenn: unknown key 'seq_lenn' in model; did you mean "
     "'seq_len'?"},
    {"vary:\n  modle.seq_len: [1024]\n",
     "s.yaml:3:3: vary.modle.seq_len: unknown key 'modle' in the scenario; did you mean "
     "'model'?"},
    {"vary:\n  hardware.gpu.peak_tflops.bf17: [1]\n",
     "s.yaml:3:3: vary.hardware.gpu.peak_tflops.bf17: unknown key 'bf17' in gpu.peak_tflops; "
     "did you mean 'bf16'?"},
    {"vary:\n  parallel.tp: [2, x]\n",
     "s.yaml:3:20: vary.parallel.tp: 'parallel.tp' must be a non-negative integer, not 'x'"},
    {"vary:\n  parallel.tp: [2, 128]\n",
     "s.yaml:3:20: vary.parallel.tp: 'parallel.tp' is 128, out of range [1, 64]"},
    {"vary:\n  training.recompute: [none, partial]\n",
     "s.yaml:3:30: vary.training.recompute: 'training.recompute' is 'partial'; must be one of: "
     "none, selective, full"},
    {"vary:\n  name.x: [1]\n",
     "s.yaml:3:12: name.x: 'name' is a value in the scenario, not a section with keys"},
    {"vary:\n  parallel.tp: [1, 2]\n  parallel.pp: [1]\nzip: true\n",
     "s.yaml:4:3: zip: true pairs the values in order, but vary.parallel.pp has 1 values and "
     "vary.parallel.tp 2"},
    {"vary:\n  parallel.tp: {from: 1, to: 4}\n",
     "s.yaml:3:16: vary.parallel.tp: a range is {from, to, step} or {from, to, times}"},
    {"vary:\n  parallel.dp: [1]\nkeep: {gpus: 8}\n",
     "s.yaml:3:3: parallel.dp cannot vary under keep.gpus, which derives it (gpus / (tp x pp))"},
    {"vary:\n  parallel.tp: []\n", "s.yaml:3:16: vary.parallel.tp has no values"},
    {"vary:\n  parallel.tp: [1]\nkep: {gpus: 8}\n",
     "s.yaml:4:1: unknown key 'kep' in the sweep; did you mean 'keep'?"},
    {"vary:\n  strategies: [megatron]\n",
     "s.yaml:3:3: strategies cannot vary (vary scalars of the scenario or of its hardware "
     "model; name strategies with the sweep's strategies:)"},
};

START_TEST(test_errors)
{
    const ErrorCase *c = &error_cases[_i];
    g_autofree char *text = g_strconcat(BASE, c->text, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsSweep) sw = tps_sweep_load_string("s.yaml", text, -1, &error);
    ck_assert_msg(sw == NULL, "%s", c->text);
    ck_assert_str_eq(error->message, c->message);
}
END_TEST

START_TEST(test_no_base)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsSweep) sw = tps_sweep_load_string("s.yaml", "vary: {parallel.tp: [1]}\n", -1,
                                                   &error);
    ck_assert(sw == NULL);
    ck_assert_str_eq(error->message,
                     "s.yaml:1:1: missing base: (a scenario file, or a scenario inline)");
}
END_TEST

/* Every sweep of sweeps/ loads and runs: each point gives rows, and the
 * points the file means to run are not all skipped. */
START_TEST(test_shipped)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    ck_assert(src != NULL);
    g_autofree char *dir = g_build_filename(src, "sweeps", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    ck_assert(d != NULL);
    guint files = 0;
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) {
        if (!g_str_has_suffix(name, ".yaml"))
            continue;
        files++;
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autoptr(GError) error = NULL;
        g_autoptr(TpsSweep) sw = tps_sweep_load(path, &error);
        ck_assert_msg(sw != NULL, "%s", error ? error->message : "");
        g_autoptr(GPtrArray) rows =
            g_ptr_array_new_with_free_func((GDestroyNotify)tps_batch_collected_free);
        TpsBatchOptions opts;
        tps_batch_options_init(&opts);
        opts.jobs = 2;
        opts.collect = rows;
        opts.progress = TPS_PROGRESS_NEVER;
        ck_assert_msg(tps_batch_run(tps_sweep_batch(sw), tps_sweep_eval, sw, &opts, &error),
                      "%s: %s", name, error ? error->message : "");
        guint results = 0;
        for (guint i = 0; i < rows->len; i++)
            results += ((TpsBatchCollected *)g_ptr_array_index(rows, i))->row.skipped == NULL;
        ck_assert_msg(results > 0, "%s: every point skipped", name);
    }
    ck_assert_uint_ge(files, 3);
}
END_TEST

/* ---- figures of sweep outputs (render/plot-file.c) ---- */

static char *
run_sweep_csv(const char *path, GError **error)
{
    g_autoptr(TpsSweep) sw = tps_sweep_load(path, error);
    if (sw == NULL)
        return NULL;
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 2;
    opts.progress = TPS_PROGRESS_NEVER;
    char *text = NULL;
    opts.text = &text;
    if (!tps_batch_run(tps_sweep_batch(sw), tps_sweep_eval, sw, &opts, error))
        return NULL;
    return text;
}

/* The figures of plots/ that run a sweep (test-render draws the others). */
START_TEST(test_plots_of_sweeps)
{
    tps_plot_file_set_sweep_runner(run_sweep_csv);
    g_autofree char *plots = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "plots", NULL);
    g_autoptr(GDir) d = g_dir_open(plots, 0, NULL);
    ck_assert(d != NULL);
    g_autofree char *dir = tps_test_tmpdir("sweep-plot");
    guint n = 0;
    const char *name;
    while ((name = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_build_filename(plots, name, NULL);
        g_autofree char *text = NULL;
        if (!g_str_has_suffix(name, ".yaml") || !g_file_get_contents(path, &text, NULL, NULL) ||
            strstr(text, "\nsweep: ") == NULL)
            continue;
        g_autoptr(GPtrArray) written = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_plot_file_render(path, dir, written, &error), "%s: %s", name,
                      error ? error->message : "");
        ck_assert_uint_ge(written->len, 1);
        n++;
    }
    ck_assert_uint_ge(n, 2);
    tps_test_remove_dir(dir);
}
END_TEST

/* A figure of a CSV output: columns checked against the data, rows
 * filtered by where:, one value per x required. */
static const char sweep_csv[] =
    "# tpsim batch 0123 shard all points 4\n"
    "point,parallel.tp,parallel.pp,scenario,hardware,strategy,skipped,step_time_s\n"
    "0,2,4,s,hw,megatron,,3.5\n"
    "0,2,4,s,hw,te-a100,,3.0\n"
    "1,2,8,s,hw,megatron,,3.25\n"
    "2,4,4,s,hw,,\"keep.gpus (64) is not divisible, by 3\",\n"
    "3,4,8,s,hw,megatron,,2.5\n";

typedef struct {
    const char *plot;
    const char *message; /* NULL: renders */
} PlotCase;

static const PlotCase plot_cases[] = {
    {"kind: sweep-lines\ndata: d.csv\nx: parallel.tp\nwhere: {parallel.pp: 4}\n", NULL},
    {"kind: sweep-heatmap\ndata: d.csv\nx: parallel.tp\ny: parallel.pp\nstrategy: megatron\n",
     NULL},
    {"kind: sweep-lines\ndata: d.csv\nx: parallel.tpp\n",
     "p.yaml:3:4: x: no column 'parallel.tpp' in the data; did you mean 'parallel.tp'?"},
    {"kind: sweep-lines\ndata: d.csv\nx: parallel.tp\n",
     "p.yaml:3:4: several rows of megatron at parallel.tp = 2: fix the other varied columns "
     "(parallel.tp, parallel.pp) with where: {COLUMN: VALUE}"},
    {"kind: sweep-heatmap\ndata: d.csv\nx: parallel.tp\ny: parallel.pp\n",
     "p.yaml:1:1: the data has several strategies (megatron, te-a100, ): name one with "
     "strategy:"},
    {"kind: sweep-lines\nx: parallel.tp\n",
     "p.yaml:1:1: give one of sweep: (a sweep file, run for the figure) and data: (the CSV "
     "output of tpsim sweep)"},
};

START_TEST(test_plot_data)
{
    const PlotCase *c = &plot_cases[_i];
    g_autofree char *dir = tps_test_tmpdir("sweep-plot");
    g_autofree char *csv = g_build_filename(dir, "d.csv", NULL);
    g_autofree char *plot = g_build_filename(dir, "p.yaml", NULL);
    ck_assert(g_file_set_contents(csv, sweep_csv, -1, NULL));
    ck_assert(g_file_set_contents(plot, c->plot, -1, NULL));
    g_autoptr(GPtrArray) written = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_plot_file_render(plot, dir, written, &error);
    if (c->message == NULL) {
        ck_assert_msg(ok, "%s", error ? error->message : "");
        ck_assert_uint_eq(written->len, 3); /* PNG, SVG and PDF by default */
    } else {
        ck_assert(!ok);
        g_autofree char *expected = g_strconcat(dir, "/", c->message, NULL);
        ck_assert_str_eq(error->message, expected);
    }
    tps_test_remove_dir(dir);
}
END_TEST

/* ---- hardware what-ifs in a scenario (io/input/scenario-file.c) ---- */

#define WHATIF_MODEL "model: {hidden: 4096, heads: 32, layers: 8, seq_len: 2048}\n"

typedef struct {
    const char *hardware; /* the hardware: line */
    const char *message;  /* NULL: loads */
} WhatIfCase;

static const WhatIfCase whatif_cases[] = {
    {"hardware: {base: a100-sxm4-80gb, node: {nvlink_gbps: 150}, gpu: {peak_tflops: {bf16: "
     "250}}}\n",
     NULL},
    {"hardware: {base: a100-sxm4-80gb, node: {nvlink_gbs: 150}}\n",
     "w.yaml:2:41: unknown key 'nvlink_gbs' in node; did you mean 'nvlink_gbps'?"},
    {"hardware: {base: a100-sxm4-80gb, nod: {nvlink_gbps: 150}}\n",
     "w.yaml:2:34: unknown key 'nod' in hardware; did you mean 'node'?"},
    {"hardware: {base: a100-sxm4-80gb, node: {nvlink_gbps: -1}}\n",
     "w.yaml:2:54: 'node.nvlink_gbps' is -1, out of range [1, 100000]"},
    {"hardware: {node: {nvlink_gbps: 150}}\n",
     "w.yaml:2:11: missing required key 'base' in hardware"},
    {"hardware: {base: a100-sxm4-80gb, name: x}\n",
     "w.yaml:2:34: unknown key 'name' in hardware; did you mean 'base'?"},
};

START_TEST(test_hardware_whatif)
{
    const WhatIfCase *c = &whatif_cases[_i];
    g_autofree char *text = g_strconcat("name: w\n", c->hardware, WHATIF_MODEL, NULL);
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_scenario_file_load_string("w.yaml", text, -1, &sc, &error);
    if (c->message != NULL) {
        ck_assert(!ok);
        ck_assert_str_eq(error->message, c->message);
        return;
    }
    ck_assert_msg(ok, "%s", error ? error->message : "");
    /* Values from the file: the A100 model's NVLink is 300 GB/s, its bf16
     * peak 312 TFLOP/s; the what-if sets 150 and 250, and the rest stays. */
    g_auto(TpsScenario) base = {0};
    g_autofree char *base_text = g_strconcat("name: w\nhardware: a100-sxm4-80gb\n", WHATIF_MODEL,
                                             NULL);
    ck_assert(tps_scenario_file_load_string("w.yaml", base_text, -1, &base, NULL));
    ck_assert(base.hardware.nvlink_gbps == 300 && sc.hardware.nvlink_gbps == 150);
    ck_assert(base.hardware.peak_tflops[TPS_DTYPE_BF16] == 312 &&
              sc.hardware.peak_tflops[TPS_DTYPE_BF16] == 250);
    ck_assert(sc.hardware.peak_tflops[TPS_DTYPE_FP16] == base.hardware.peak_tflops[TPS_DTYPE_FP16]);
    ck_assert(sc.hardware.nic_gbps == base.hardware.nic_gbps);
    ck_assert_str_eq(sc.hardware.name, "a100-sxm4-80gb-what-if");
    ck_assert_str_eq(sc.hardware_ref, "a100-sxm4-80gb");
}
END_TEST

/* ---- the command line: tpsim sweep and tpsim merge ---- */

/* Exit statuses and messages of the commands, and a sharded run merged
 * into the bytes of the whole one, through the program itself. */
START_TEST(test_cli)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    g_autofree char *dir = tps_test_tmpdir("sweep-cli");
    g_autofree char *whole = g_build_filename(dir, "whole.csv", NULL);
    g_autofree char *p0 = g_build_filename(dir, "p0.csv", NULL);
    g_autofree char *p1 = g_build_filename(dir, "p1.csv", NULL);
    g_autofree char *merged = g_build_filename(dir, "merged.csv", NULL);
    g_autofree char *out = NULL, *err = NULL;
    const char *sweep = "sweeps/nvlink-what-if.yaml";

    const char *run_whole[] = {"sweep", sweep, "--jobs", "2", "-o", whole, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, run_whole, &out, &err), 0);
    /* no progress bar (standard error is no terminal): the file's line only */
    g_autofree char *wrote = g_strdup_printf("wrote %s\nwrote %s.batch\n", whole, whole);
    ck_assert_str_eq(err, wrote);
    const char *run_p0[] = {"sweep", sweep, "--shard", "0/2", "-o", p0, "--progress", NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, run_p0, &out, &err), 0);
    ck_assert_msg(strstr(err, "3/3 points") != NULL, "%s", err); /* points 0, 2, 4 */
    const char *run_p1[] = {"sweep", sweep, "--shard", "1/2", "-o", p1, "-j", "1", NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, run_p1, &out, &err), 0);
    const char *merge[] = {"merge", p1, p0, "-o", merged, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, merge, &out, &err), 0);
    g_autofree char *a = NULL, *b = NULL;
    ck_assert(g_file_get_contents(whole, &a, NULL, NULL));
    ck_assert(g_file_get_contents(merged, &b, NULL, NULL));
    ck_assert_str_eq(a, b);
    /* To standard output without --output. */
    const char *run_stdout[] = {"sweep", sweep, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, run_stdout, &out, &err), 0);
    ck_assert_str_eq(out, a);

    /* Input errors: exit 1. */
    const char *merge_missing[] = {"merge", p0, "-o", merged, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, merge_missing, &out, &err), 1);
    ck_assert_msg(strstr(err, "shard 1/2 is missing") != NULL, "%s", err);
    const char *merge_twice[] = {"merge", p0, p0, "-o", merged, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, merge_twice, &out, &err), 1);
    ck_assert_msg(strstr(err, "are both shard 0/2") != NULL, "%s", err);
    g_autofree char *bad = g_build_filename(dir, "bad.yaml", NULL);
    g_autofree char *bad_text = g_strdup_printf("base: %s/scenarios/gpt3-175b-tp8.yaml\nvary:\n"
                                                "  model.seq_lenn: [1024]\n", src);
    ck_assert(g_file_set_contents(bad, bad_text, -1, NULL));
    const char *run_bad[] = {"sweep", bad, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", src, run_bad, &out, &err), 1);
    ck_assert_msg(strstr(err, "bad.yaml:3:3: vary.model.seq_lenn: unknown key") != NULL, "%s",
                  err);

    /* Usage errors: exit 2. */
    const char *usage[][8] = {
        {"sweep", sweep, "--shard", "2/2", NULL},
        {"sweep", sweep, "--resume", NULL},
        {"sweep", sweep, "--format", "xml", NULL},
        {"sweep", NULL},
        {"sweep", sweep, "-o", sweep, NULL},
        {"merge", NULL},
    };
    for (guint i = 0; i < G_N_ELEMENTS(usage); i++)
        ck_assert_msg(tps_test_spawn("TPSIM_BIN", src, usage[i], &out, &err) == 2, "%s %s: %s",
                      usage[i][0], usage[i][2] ? usage[i][2] : "", err);
    tps_test_remove_dir(dir);
}
END_TEST

/* The digest of a sweep (and of a search) covers its inputs as
 * resolved: the shards of one sweep file run against two versions of the
 * hardware model file it names do not merge; with the file as it was,
 * they do. */
START_TEST(test_digest_covers_inputs)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    g_autofree char *dir = tps_test_tmpdir("sweep-digest");
    g_autofree char *model_src = g_build_filename(src, "models", "a100-sxm4-80gb.yaml", NULL);
    g_autofree char *base_src = g_build_filename(src, "scenarios", "gpt3-175b-tp8.yaml", NULL);
    g_autofree char *model = NULL, *base = NULL;
    ck_assert(g_file_get_contents(model_src, &model, NULL, NULL));
    ck_assert(g_file_get_contents(base_src, &base, NULL, NULL));
    g_autofree char *base_here = NULL;
    {
        g_auto(GStrv) parts = g_strsplit(base, "hardware: a100-sxm4-80gb", 2);
        ck_assert_uint_eq(g_strv_length(parts), 2);
        base_here = g_strjoinv("hardware: hw.yaml", parts);
    }
    g_autofree char *hw = g_build_filename(dir, "hw.yaml", NULL);
    g_autofree char *scenario = g_build_filename(dir, "base.yaml", NULL);
    g_autofree char *sweep = g_build_filename(dir, "s.yaml", NULL);
    ck_assert(g_file_set_contents(hw, model, -1, NULL));
    ck_assert(g_file_set_contents(scenario, base_here, -1, NULL));
    ck_assert(g_file_set_contents(sweep,
                                  "base: base.yaml\nvary:\n  model.seq_len: [1024, 2048]\n"
                                  "strategies: [megatron]\n",
                                  -1, NULL));
    g_autofree char *p0 = g_build_filename(dir, "p0.csv", NULL);
    g_autofree char *p1 = g_build_filename(dir, "p1.csv", NULL);
    g_autofree char *merged = g_build_filename(dir, "merged.csv", NULL);
    g_autofree char *out = NULL, *err = NULL;
    const char *run_p0[] = {"sweep", sweep, "--shard", "0/2", "-o", p0, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, run_p0, &out, &err), 0);
    /* Another NVLink in the model file, the sweep and base unchanged. */
    g_autofree char *other = NULL;
    {
        g_auto(GStrv) parts = g_strsplit(model, "nvlink_gbps: 300", 2);
        ck_assert_uint_eq(g_strv_length(parts), 2);
        other = g_strjoinv("nvlink_gbps: 250", parts);
    }
    ck_assert(g_file_set_contents(hw, other, -1, NULL));
    const char *run_p1[] = {"sweep", sweep, "--shard", "1/2", "-o", p1, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, run_p1, &out, &err), 0);
    const char *merge[] = {"merge", p0, p1, "-o", merged, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, merge, &out, &err), 1);
    ck_assert_msg(strstr(err, "another batch") != NULL, "%s", err);
    ck_assert(!g_file_test(merged, G_FILE_TEST_EXISTS));
    /* The model file as it was: shard 1 again, now of the same batch. */
    ck_assert(g_file_set_contents(hw, model, -1, NULL));
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, run_p1, &out, &err), 0);
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, merge, &out, &err), 0);

    /* A search of the base the same: its shards against two versions of
     * the model file do not merge. */
    g_autofree char *s0 = g_build_filename(dir, "s0.csv", NULL);
    g_autofree char *s1 = g_build_filename(dir, "s1.csv", NULL);
    g_autofree char *sm = g_build_filename(dir, "sm.csv", NULL);
    const char *search_s0[] = {"search", scenario, "--gpus", "64", "--shard", "0/2", "-o", s0,
                               NULL};
    const char *search_s1[] = {"search", scenario, "--gpus", "64", "--shard", "1/2", "-o", s1,
                               NULL};
    const char *merge_s[] = {"merge", s0, s1, "-o", sm, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, search_s0, &out, &err), 0);
    ck_assert(g_file_set_contents(hw, other, -1, NULL));
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, search_s1, &out, &err), 0);
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, merge_s, &out, &err), 1);
    ck_assert_msg(strstr(err, "another batch") != NULL, "%s", err);
    ck_assert(!g_file_test(sm, G_FILE_TEST_EXISTS));
    ck_assert(g_file_set_contents(hw, model, -1, NULL));
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, search_s1, &out, &err), 0);
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", dir, merge_s, &out, &err), 0);
    tps_test_remove_dir(dir);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("sweep");
    tcase_add_checked_fixture(tc, NULL, tps_render_shutdown); /* the figures' font map */
    tcase_add_loop_test(tc, test_path_kinds, 0, G_N_ELEMENTS(path_cases));
    tcase_add_test(tc, test_ranges_and_order);
    tcase_add_test(tc, test_keep_gpus);
    tcase_add_test(tc, test_rule_skips);
    tcase_add_loop_test(tc, test_errors, 0, G_N_ELEMENTS(error_cases));
    tcase_add_test(tc, test_no_base);
    tcase_add_test(tc, test_shipped);
    tcase_add_test(tc, test_plots_of_sweeps);
    tcase_add_test(tc, test_cli);
    tcase_add_test(tc, test_digest_covers_inputs);
    tcase_add_loop_test(tc, test_hardware_whatif, 0, G_N_ELEMENTS(whatif_cases));
    tcase_add_loop_test(tc, test_plot_data, 0, G_N_ELEMENTS(plot_cases));
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
