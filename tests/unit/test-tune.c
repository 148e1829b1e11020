/* The tune module (sched/tune.h) and the bands of differences
 * (sched/bands.h, tps_result_difference()): the band of a - b from the
 * classes in which a and b differ, ties, a slot whose best method and
 * knobs are known by construction, exhaustive search against coordinate
 * descent, the verdict "do not overlap" with its mechanism, and the chosen
 * configuration written as a userbuffers file and read back. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "test-util.h"

#include "core/error.h"
#include "io/input/scenario-file.h"
#include "io/output/tune-writer.h"
#include "sched/bands.h"
#include "sched/tune-private.h"

/* ---- bands of differences ---- */

/* Two classes with hand-set residual quantiles: GEMM p10 -10%, p90 +20%;
 * collective p10 -5%, p90 +25%; every other class 0 (its parts are 0). */
static void
band_hardware(TpsHardware *hw)
{
    memset(hw, 0, sizeof *hw);
    hw->band_p10_pct[TPS_BAND_GEMM] = -10;
    hw->band_p90_pct[TPS_BAND_GEMM] = 20;
    hw->band_p10_pct[TPS_BAND_COLLECTIVE] = -5;
    hw->band_p90_pct[TPS_BAND_COLLECTIVE] = 25;
}

typedef struct {
    double a_gemm, a_coll, b_gemm, b_coll;
    double low, high; /* a - b, ns */
    gboolean tied;
} DiffCase;

/* measured = predicted / (1 + r) per class, r the same in a and b:
 * 1. shared GEMM 1000 cancels; collective +500: [500/1.25, 500/0.95]
 *    = [400, 526.3158].
 * 2. GEMM +200: [200/1.2, 200/0.9] = [166.6667, 222.2222]; collective
 *    -300: [-300/0.95, -300/1.25] = [-315.7895, -240]; sum [-149.1228,
 *    -17.7778]: a is faster beyond the band, not tied.
 * 3. GEMM -100: [-111.1111, -83.3333]; collective +100: [80, 105.2632];
 *    sum [-31.1111, 21.9298]: holds 0, tied.
 * 4. the same work: [0, 0], tied. */
static const DiffCase diff_cases[] = {
    {1000, 500, 1000, 0, 400.0, 526.315789, FALSE},
    {1200, 0, 1000, 300, -149.122807, -17.777778, FALSE},
    {1000, 300, 1100, 200, -31.111111, 21.929825, TRUE},
    {700, 300, 700, 300, 0.0, 0.0, TRUE},
};

START_TEST(test_band_of_difference)
{
    const DiffCase *c = &diff_cases[_i];
    TpsHardware hw;
    band_hardware(&hw);
    double a[TPS_BAND_COUNT] = {0}, b[TPS_BAND_COUNT] = {0}, low, high;
    a[TPS_BAND_GEMM] = c->a_gemm, a[TPS_BAND_COLLECTIVE] = c->a_coll;
    b[TPS_BAND_GEMM] = c->b_gemm, b[TPS_BAND_COLLECTIVE] = c->b_coll;
    tps_band_of_difference(&hw, a, b, &low, &high);
    ck_assert_double_eq_tol(low, c->low, 1e-5);
    ck_assert_double_eq_tol(high, c->high, 1e-5);

    /* The same through results whose parts sum to their step (scaling by
     * step / layer is then 1): the difference in seconds, and the tie. */
    TpsScenario sc = {0};
    sc.hardware = hw;
    TpsResult ra = {0}, rb = {0};
    memcpy(ra.band_parts_ns, a, sizeof a);
    memcpy(rb.band_parts_ns, b, sizeof b);
    ra.step_time_s = (c->a_gemm + c->a_coll) * 1e-9;
    rb.step_time_s = (c->b_gemm + c->b_coll) * 1e-9;
    double diff;
    tps_result_difference(&sc, &ra, &rb, &diff, &low, &high);
    ck_assert_double_eq_tol(diff, ((c->a_gemm + c->a_coll) - (c->b_gemm + c->b_coll)) * 1e-9,
                            1e-15);
    ck_assert_double_eq_tol(low, c->low * 1e-9, 1e-14);
    ck_assert_double_eq_tol(high, c->high * 1e-9, 1e-14);
    ck_assert_int_eq(tps_result_tied(&sc, &ra, &rb), c->tied);
}
END_TEST

/* ---- the search ---- */

/* A small GPT at TP 8 with SP on one DGX A100: two layers, one micro-batch. */
static const char scenario_text[] = "name: t\nhardware: a100-sxm4-80gb\n"
                                    "model: {hidden: 2048, heads: 16, layers: 2, seq_len: 2048}\n"
                                    "training: {micro_batch: 1, global_batch: 1}\n"
                                    "parallel: {tp: 8, sp: true}\n";

/* Wider: every GEMM of a rank has more output tiles than the A100 has
 * SMs (the smallest, a pipeline chunk of proj_fprop, is [4096 x 2048]:
 * 16 x 16 tiles of 256 x 128 = 256 > 108), so each takes all SMs it may. */
static const char wide_text[] = "name: w\nhardware: a100-sxm4-80gb\n"
                                "model: {hidden: 8192, heads: 64, layers: 2, seq_len: 4096}\n"
                                "training: {micro_batch: 1, global_batch: 1}\n"
                                "parallel: {tp: 8, sp: true}\n";

static void
load_wide(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("w.yaml", wide_text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

static void
load(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", scenario_text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* Every slot: only TE's default configuration; no group may be off. */
static void
minimal_space(const TpsScenario *sc, TpsTuneSpace *space)
{
    memset(space, 0, sizeof *space);
    TpsOverlapConfig te[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(tps_strategy_lookup("te-default"), sc, te);
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        te[s].given = ~0u;
        space->slot[s].c[space->slot[s].n++] = te[s];
    }
    space->max_exhaustive = 1000;
    space->max_passes = 4;
}

static void
run_tune_from(const TpsScenario *sc, const char *base, const TpsTuneSpace *space,
              TpsTuneReport *report)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_tune(sc, tps_strategy_lookup(base), space, 1, NULL, NULL, report, &error),
                  "%s", error ? error->message : "");
}

static void
run_tune(const TpsScenario *sc, const TpsTuneSpace *space, TpsTuneReport *report)
{
    run_tune_from(sc, "te-default", space, report);
}

/* The cache of simulated pieces (sched/simulate.h) returns what a fresh
 * simulation gives: the step, the layer and head figures and the per-GEMM
 * table, for overlap tables simulated in turn through one cache (the
 * embedding/head graph simulated once for all of them, the layer once per
 * table: the second time a table comes, all from the cache), and for a
 * scenario with another vocabulary (the head's own key: a head taken from
 * the first scenario would be the smaller vocabulary's). */
static void
assert_same_result(const TpsResult *a, const TpsResult *b)
{
    ck_assert_double_eq(a->step_time_s, b->step_time_s);
    ck_assert_double_eq(a->step_time_s_low, b->step_time_s_low);
    ck_assert_double_eq(a->step_time_s_high, b->step_time_s_high);
    ck_assert_double_eq(a->head_ms, b->head_ms);
    ck_assert_double_eq(a->forward_ms, b->forward_ms);
    ck_assert_double_eq(a->backward_ms, b->backward_ms);
    ck_assert_double_eq(a->exposed_comm_ms, b->exposed_comm_ms);
    ck_assert_double_eq(a->memory_gib, b->memory_gib);
    for (guint c = 0; c < TPS_BAND_COUNT; c++)
        ck_assert_double_eq(a->band_parts_ns[c], b->band_parts_ns[c]);
    for (guint s = 0; s < TPS_GEMM_SLOT_COUNT; s++) {
        const TpsGemmBreakdown *x = &a->gemms[s], *y = &b->gemms[s];
        ck_assert_int_eq(x->present, y->present);
        ck_assert_int_eq(x->method, y->method);
        ck_assert_pstr_eq(x->schedule, y->schedule);
        ck_assert_double_eq(x->time_ms, y->time_ms);
        ck_assert_double_eq(x->gemm_ms, y->gemm_ms);
        ck_assert_double_eq(x->comm_ms, y->comm_ms);
        ck_assert_double_eq(x->exposed_ms, y->exposed_ms);
    }
}

START_TEST(test_cache_same_as_fresh)
{
    g_auto(TpsScenario) sc = {0};
    load(&sc);
    const TpsStrategy *custom = tps_strategy_lookup("custom");
    TpsOverlapConfig te[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(tps_strategy_lookup("te-default"), &sc, te);
    /* Three tables: TE's, proj_fprop on ring exchange, then TE's again. */
    TpsOverlapConfig tables[3][TPS_GEMM_SLOT_COUNT];
    memcpy(tables[0], te, sizeof te);
    memcpy(tables[1], te, sizeof te);
    tps_tune_candidate(&sc, TPS_GEMM_PROJ_FPROP, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, FALSE, TRUE,
                       &tables[1][TPS_GEMM_PROJ_FPROP]);
    memcpy(tables[2], te, sizeof te);
    g_autoptr(TpsSimCache) cache = tps_sim_cache_new();
    g_autoptr(GError) error = NULL;
    double steps[3];
    for (guint t = 0; t < 3; t++) {
        memcpy(sc.overlap, tables[t], sizeof sc.overlap);
        sc.has_overlap = TRUE;
        TpsResult cached = {0}, fresh = {0};
        ck_assert_msg(tps_simulate_cached(&sc, custom, cache, &cached, NULL, &error), "%s",
                      error ? error->message : "");
        ck_assert(tps_simulate(&sc, custom, &fresh, &error));
        assert_same_result(&cached, &fresh);
        steps[t] = cached.step_time_s;
    }
    /* The tables differ, so the layer was not taken from the cache for
     * the second; the third was (the layer's hits and misses). */
    ck_assert_double_ne(steps[0], steps[1]);
    guint64 hits, misses;
    tps_sim_cache_stats(cache, &hits, &misses);
    ck_assert_uint_eq(hits, 1);
    ck_assert_uint_eq(misses, 2);

    /* Another vocabulary through the same cache: its own head. */
    sc.vocab *= 2;
    TpsResult cached = {0}, fresh = {0};
    ck_assert(tps_simulate_cached(&sc, custom, cache, &cached, NULL, &error));
    ck_assert(tps_simulate(&sc, custom, &fresh, &error));
    assert_same_result(&cached, &fresh);
}
END_TEST

/* Known by construction: a candidate whose SM margin leaves its GEMMs 8
 * of the A100's 108 SMs (num_sm 100) runs them at least 108/8 = 13.5
 * times slower than one that leaves them 106 (num_sm 2) or all (ring
 * exchange, copy engine) in the wide scenario, while its communication
 * gains at most what the whole collective takes; so on qkv_wgrad bulk 2 SMs beats bulk 100 SMs,
 * and on proj_fprop ring_exchange (no margin) beats pipeline with 100 SMs
 * of margin: the method and the knobs are known. Both exhaustive (4
 * points) and by coordinate descent (forced: max_exhaustive 0). */
START_TEST(test_known_best)
{
    g_auto(TpsScenario) sc = {0};
    load_wide(&sc);
    TpsTuneSpace space;
    minimal_space(&sc, &space);
    TpsTuneSlotSpace *w = &space.slot[TPS_GEMM_QKV_WGRAD], *p = &space.slot[TPS_GEMM_PROJ_FPROP];
    w->n = p->n = 0;
    tps_tune_candidate(&sc, TPS_GEMM_QKV_WGRAD, TPS_METHOD_BULK, 0, 100, TRUE, FALSE, TRUE,
                       &w->c[w->n++]);
    tps_tune_candidate(&sc, TPS_GEMM_QKV_WGRAD, TPS_METHOD_BULK, 0, 2, TRUE, FALSE, TRUE,
                       &w->c[w->n++]);
    tps_tune_candidate(&sc, TPS_GEMM_PROJ_FPROP, TPS_METHOD_PIPELINE, 4, 100, TRUE, FALSE, TRUE,
                       &p->c[p->n++]);
    tps_tune_candidate(&sc, TPS_GEMM_PROJ_FPROP, TPS_METHOD_RING_EXCHANGE, 8, 16, FALSE, FALSE,
                       TRUE, &p->c[p->n++]);
    ck_assert_uint_eq(tps_tune_space_size(&space), 4);
    /* The search starts from the slower ones (a custom map), so the space
     * holds nothing else. */
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        sc.overlap[s] = space.slot[s].c[0];
    sc.has_overlap = TRUE;
    for (int descent = 0; descent <= 1; descent++) {
        space.max_exhaustive = descent ? 0 : 1000;
        TpsTuneReport r;
        run_tune_from(&sc, "custom", &space, &r);
        ck_assert_int_eq(r.exhaustive, !descent);
        const TpsTuneEntry *best = tps_tune_best(&r);
        ck_assert_uint_eq(best->cfg[TPS_GEMM_QKV_WGRAD].num_sm, 2);
        ck_assert_int_eq(best->cfg[TPS_GEMM_PROJ_FPROP].method, TPS_METHOD_RING_EXCHANGE);
        /* Sorted, and every step a configuration of the space. */
        for (guint i = 1; i < r.ranked->len; i++)
            ck_assert_double_le(g_array_index(r.ranked, TpsTuneEntry, i - 1).result.step_time_s,
                                g_array_index(r.ranked, TpsTuneEntry, i).result.step_time_s);
        ck_assert_uint_le(r.evaluated, 4);
        tps_tune_report_clear(&r);
    }
}
END_TEST

/* The stated search: coordinate descent stops at a configuration that no
 * change of one slot (or one group on/off) makes faster. Checked against
 * every single change, each simulated on its own. */
START_TEST(test_descent_local_optimum)
{
    g_auto(TpsScenario) sc = {0};
    load(&sc);
    TpsTuneSpace space;
    minimal_space(&sc, &space);
    /* Three candidates on fc2_fprop and on fc1_wgrad, groups may be off. */
    TpsTuneSlotSpace *f = &space.slot[TPS_GEMM_FC2_FPROP], *w = &space.slot[TPS_GEMM_FC1_WGRAD];
    f->n = w->n = 0;
    static const guint splits[] = {2, 4, 8}, sms[] = {2, 8, 32};
    for (guint i = 0; i < 3; i++) {
        tps_tune_candidate(&sc, TPS_GEMM_FC2_FPROP, TPS_METHOD_PIPELINE, splits[i], 16, TRUE, FALSE,
                           TRUE, &f->c[f->n++]);
        tps_tune_candidate(&sc, TPS_GEMM_FC1_WGRAD, TPS_METHOD_BULK, 0, sms[i], FALSE, FALSE, TRUE,
                           &w->c[w->n++]);
    }
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        space.group_may_be_off[g] = TRUE;
    space.max_exhaustive = 0;
    TpsTuneReport r;
    run_tune(&sc, &space, &r);
    ck_assert_uint_ge(r.passes, 1);
    const TpsTuneEntry *best = tps_tune_best(&r);
    /* Exhaustive over the same space: (3 + 1) x (1 x 3 + 1) x ... points;
     * its best is at least as fast, and here (the two slots' effects are
     * in different passes of the layer) the same. */
    space.max_exhaustive = 1000;
    TpsTuneReport all;
    run_tune(&sc, &space, &all);
    ck_assert(all.exhaustive);
    ck_assert_double_le(tps_tune_best(&all)->result.step_time_s, best->result.step_time_s);
    ck_assert_double_eq(tps_tune_best(&all)->result.step_time_s, best->result.step_time_s);
    /* Every single change of the descent's choice is in the exhaustive
     * entries and is no faster. */
    for (guint i = 0; i < all.ranked->len; i++) {
        const TpsTuneEntry *e = &g_array_index(all.ranked, TpsTuneEntry, i);
        guint diffs = 0;
        for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
            diffs += e->group_on[g] != best->group_on[g];
        for (guint s = 0; s < TPS_GEMM_OP; s++)
            diffs += !tps_tune_same_config(&e->cfg[s], &best->cfg[s]);
        if (diffs == 1)
            ck_assert_double_ge(e->result.step_time_s, best->result.step_time_s);
    }
    tps_tune_report_clear(&r);
    tps_tune_report_clear(&all);
}
END_TEST

/* "Do not overlap" by construction: the only overlapped configurations
 * (the base among them, a custom map of the same) take 100 of 108 SMs by
 * margin on every slot (ring exchange with SM-based sends of 100 CTAs), so
 * their GEMMs run on 8 SMs, at least 13.5 times slower, and every one is
 * slower than no userbuffers beyond the band; the fastest is every group
 * off, and the mechanism named is the SMs the margin takes. */
START_TEST(test_do_not_overlap)
{
    g_auto(TpsScenario) sc = {0};
    load_wide(&sc);
    TpsTuneSpace space;
    memset(&space, 0, sizeof space);
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        TpsGemmSlot slot = (TpsGemmSlot)s;
        TpsTuneGroup g = tps_tune_group_of(slot);
        TpsMethod m = g == TPS_TUNE_GROUP_AG   ? TPS_METHOD_RING_EXCHANGE
                      : g == TPS_TUNE_GROUP_RS ? TPS_METHOD_PIPELINE
                                               : TPS_METHOD_BULK;
        guint splits = m == TPS_METHOD_RING_EXCHANGE ? sc.tp : m == TPS_METHOD_PIPELINE ? 4 : 0;
        TpsTuneSlotSpace *ss = &space.slot[s];
        tps_tune_candidate(&sc, slot, m, splits, 100, TRUE, FALSE, m != TPS_METHOD_RING_EXCHANGE,
                           &ss->c[ss->n++]);
        sc.overlap[s] = ss->c[0];
    }
    sc.has_overlap = TRUE;
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        space.group_may_be_off[g] = TRUE;
    space.max_exhaustive = 1000;
    TpsTuneReport r;
    run_tune_from(&sc, "custom", &space, &r);
    ck_assert(r.exhaustive);
    ck_assert_uint_eq(r.evaluated, 16); /* 2 x 2 x 2 x 2: each group on or off */
    const TpsTuneEntry *best = tps_tune_best(&r);
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        ck_assert_msg(!best->group_on[g], "group %u on: %.6f s against none %.6f s", g,
                      best->result.step_time_s, r.none.step_time_s);
    ck_assert_double_eq(best->result.step_time_s, r.none.step_time_s);
    ck_assert(!r.overlap_pays);
    ck_assert_msg(strstr(r.verdict, "SMs taken by the margin loses") != NULL, "%s", r.verdict);
    g_autofree char *text = tps_tune_format_text(&sc, tps_strategy_lookup("custom"), &r, 3, NULL);
    ck_assert_msg(strstr(text, "do not overlap: ") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "no --tp-comm-overlap") != NULL, "%s", text);
    tps_tune_report_clear(&r);
}
END_TEST

/* The chosen configuration written as Transformer Engine's YAML and read
 * back (every group on, so that the file says all of it): the same table
 * and the same step. */
START_TEST(test_ub_cfg_round_trip)
{
    g_auto(TpsScenario) sc = {0};
    load(&sc);
    TpsTuneSpace space;
    tps_tune_space_default(&sc, &space);
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        space.group_may_be_off[g] = FALSE;
    TpsTuneReport r;
    run_tune(&sc, &space, &r);
    const TpsTuneEntry *best = tps_tune_best(&r);
    g_autofree char *text = tps_tune_ub_cfg(&sc, &r);
    g_auto(TpsScenario) back = {0};
    tps_scenario_copy(&back, &sc);
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(tps_scenario_apply_ub_cfg_string(&back, "tuned.yaml", text, -1, notes, &error),
                  "%s\n%s", error ? error->message : "", text);
    TpsOverlapConfig got[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(tps_strategy_lookup("custom"), &back, got);
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        ck_assert_msg(tps_tune_same_config(&got[s], &best->cfg[s]) &&
                          got[s].cga_size == best->cfg[s].cga_size,
                      "%s differs after the round trip", tps_gemm_slot_names[s]);
    TpsResult again;
    ck_assert(tps_simulate(&back, tps_strategy_lookup("custom"), &again, &error));
    ck_assert_double_eq(again.step_time_s, best->result.step_time_s);
    tps_tune_report_clear(&r);
}
END_TEST

/* An op scenario, or one without SP, cannot be tuned: an input error. */
START_TEST(test_refused)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert(tps_scenario_file_load_string(
        "n.yaml",
        "name: n\nhardware: a100-sxm4-80gb\n"
        "model: {hidden: 2048, heads: 16, layers: 2, seq_len: 2048}\n"
        "training: {micro_batch: 1, global_batch: 1}\nparallel: {tp: 8, sp: false}\n",
        -1, &sc, &error));
    TpsTuneSpace space;
    tps_tune_space_default(&sc, &space);
    TpsTuneReport r;
    ck_assert(!tps_tune(&sc, tps_strategy_lookup("te-default"), &space, 1, NULL, NULL, &r, &error));
    ck_assert_int_eq(error->code, TPS_ERROR_INPUT);
    ck_assert_msg(strstr(error->message, "sequence parallelism") != NULL, "%s", error->message);
}
END_TEST

/* ---- the command line ---- */

typedef struct {
    const char *args[8]; /* after "tune", NULL-terminated */
    int status;
    const char *err; /* in standard error */
} CliCase;

/* Paths are relative to the source tree (the tests run there); BAD is the
 * bad file written by the test, OUT a file in its temporary folder. */
static const CliCase cli_cases[] = {
    {{NULL}, 2, "missing SCENARIO.yaml"},
    {{"scenarios/gpt3-xl-search.yaml", "scenarios/llama3-8b.yaml", NULL}, 2, "one scenario"},
    {{"--top", "0", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "--top takes"},
    {{"--jobs", "0", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "--jobs takes"},
    {{"--strategy", "te-defualt", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "did you mean"},
    {{"--strategy", "megatron", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "uses no userbuffers"},
    {{"-o", "-", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "--output needs a file"},
    {{"--model", "no-such-gpu", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "--model"},
    {{"-o", "scenarios/gpt3-xl-search.yaml", "scenarios/gpt3-xl-search.yaml", NULL}, 2, "input"},
    {{"scenarios/no-such-file.yaml", NULL}, 1, "no-such-file.yaml"},
    {{"BAD", NULL}, 1, "bad.yaml:4:"},
    {{"scenarios/op-gemm-rs.yaml", NULL}, 1, "model scenario"},
    {{"scenarios/gpt3-175b-tp8-nosp.yaml", NULL}, 1, "sequence parallelism"},
};

START_TEST(test_cli)
{
    const CliCase *c = &cli_cases[_i];
    g_autofree char *dir = tps_test_tmpdir("tune-cli");
    g_autofree char *bad = g_build_filename(dir, "bad.yaml", NULL);
    /* A key misspelt on line 4 (column 3: "hiden"). */
    ck_assert(g_file_set_contents(bad,
                                  "name: bad\nhardware: a100-sxm4-80gb\nmodel:\n  hiden: 2048\n"
                                  "  heads: 16\n  layers: 2\n  seq_len: 2048\n",
                                  -1, NULL));
    const char *args[10] = {"tune"};
    guint n = 1;
    for (guint i = 0; c->args[i] != NULL; i++)
        args[n++] = strcmp(c->args[i], "BAD") == 0 ? bad : c->args[i];
    args[n] = NULL;
    g_autofree char *out = NULL, *err = NULL;
    int status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), args, &out, &err);
    ck_assert_msg(status == c->status, "case %d: status %d, stderr %s", _i, status, err);
    ck_assert_msg(strstr(err, c->err) != NULL, "case %d: '%s' lacks '%s'", _i, err, c->err);
    ck_assert_str_eq(out, "");
    tps_test_remove_dir(dir);
}
END_TEST

/* A run: the report on standard output, the file with -o, read back by
 * the scenario loader as overlap: {ub_cfg: FILE}. */
START_TEST(test_cli_writes)
{
    g_autofree char *dir = tps_test_tmpdir("tune-cli");
    g_autofree char *ub = g_build_filename(dir, "ub.yaml", NULL);
    const char *args[] = {"tune", "scenarios/gpt3-xl-search.yaml", "-j", "1", "-o", ub, NULL};
    g_autofree char *out = NULL, *err = NULL;
    int status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), args, &out, &err);
    ck_assert_msg(status == 0, "%s", err);
    ck_assert_msg(strstr(out, "rank  step s  gain vs none") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "--tp-comm-overlap-cfg") != NULL, "%s", out);
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(ub, &text, NULL, NULL));
    ck_assert_msg(g_str_has_prefix(text, "# Transformer Engine userbuffers configuration"), "%s",
                  text);
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *path =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios/gpt3-xl-search.yaml", NULL);
    ck_assert(tps_scenario_file_load(path, &sc, &error));
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(tps_scenario_apply_ub_cfg_string(&sc, ub, text, -1, notes, &error), "%s",
                  error ? error->message : "");
    tps_test_remove_dir(dir);
}
END_TEST

/* tpsim run marks ties instead of ranking them: in the ag_gemm op,
 * ring-ag, te-a100 and te-default build the same ring exchange, so their
 * differences are 0 in every class and the band of each difference is
 * [0, 0], which holds 0; sp-blocking differs (a blocking all-gather: its
 * collective class), within the band since the H100 fit (below). */
START_TEST(test_run_ties)
{
    const char *args[] = {"run", "scenarios/op-ag-gemm.yaml", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), args, &out, &err);
    ck_assert_msg(status == 0, "%s", err);
    const char *line = strstr(out, "\ntied with ");
    ck_assert_msg(line != NULL, "%s", out);
    g_autofree char *tied = g_strndup(line + 1, strcspn(line + 1, "\n"));
    ck_assert_msg(strstr(tied, "ring-ag") && strstr(tied, "te-a100") && strstr(tied, "te-default"),
                  "%s", tied);
    /* sp-blocking (10.7% slower) is not: the interference class's p10 is
     * -36.6% (the H100 entry pytorch #143160 at the sustained clock,
     * docs/validation.md), and its difference band no longer holds 0; at
     * the -40.6% of the GEMMs' one clock it did. */
    ck_assert_msg(strstr(tied, "sp-blocking") == NULL, "%s", tied);
}
END_TEST

/* tpsim search names the ranks of its table tied with rank 1 in the
 * table's note (Llama 3 8B on 32 H100s: ranks 6 and 7, TP 1 with PP 2,
 * tie with rank 1, TP 2: they differ in classes whose bands are wide
 * without H100 measurements; the top five were enough before the
 * power-limited clock sped up the TP 2 GEMMs). */
START_TEST(test_search_ties)
{
    const char *args[] = {"search", "scenarios/llama3-8b.yaml", "--gpus", "32", "-j", "2",
                          "--top", "8", NULL};
    g_autofree char *out = NULL, *err = NULL;
    int status = tps_test_spawn("TPSIM_BIN", g_getenv("TPSIM_SOURCE_DIR"), args, &out, &err);
    ck_assert_msg(status == 0, "%s", err);
    ck_assert_msg(strstr(out, "Tied with rank 1") != NULL, "%s", out);
}
END_TEST

static Suite *
tune_suite(void)
{
    Suite *s = suite_create("tune");
    TCase *tc = tcase_create("bands");
    tcase_add_loop_test(tc, test_band_of_difference, 0, G_N_ELEMENTS(diff_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("search");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_cache_same_as_fresh);
    tcase_add_test(tc, test_known_best);
    tcase_add_test(tc, test_descent_local_optimum);
    tcase_add_test(tc, test_do_not_overlap);
    tcase_add_test(tc, test_ub_cfg_round_trip);
    tcase_add_test(tc, test_refused);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_cli, 0, G_N_ELEMENTS(cli_cases));
    tcase_add_test(tc, test_cli_writes);
    tcase_add_test(tc, test_run_ties);
    tcase_add_test(tc, test_search_ties);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(tune_suite());
}
