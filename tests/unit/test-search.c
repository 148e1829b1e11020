/* The layout search (sched/search.c): the space enumerated, pruned by
 * memory before simulating, ranked; the figure's Pareto front. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "test-util.h"
#include "core/error.h"
#include "io/input/scenario-file.h"
#include "io/output/search-writer.h"
#include "render/search-plot.h"
#include "sched/search.h"

/* A small GPT: 8 heads, 4 layers, 16 sequences a step, on A100 80GB
 * nodes of 8 GPUs. */
static void
small(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    const char *text = "name: small\nhardware: a100-sxm4-80gb\n"
                       "model: {hidden: 512, heads: 8, layers: 4, seq_len: 512}\n"
                       "training: {micro_batch: 1, global_batch: 16}\n"
                       "parallel: {tp: 1}\n";
    ck_assert_msg(tps_scenario_file_load_string("small", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* The space of the small GPT on 16 GPUs, by hand. tp divides the 8 heads,
 * the 8 GPUs of a node and 16: 1, 2, 4, 8; pp divides the 4 layers, and
 * tp x pp divides 16: (tp, pp, dp) = (1,1,16) (1,2,8) (1,4,4) (2,1,8)
 * (2,2,4) (2,4,2) (4,1,4) (4,2,2) (4,4,1) (8,1,2) (8,2,1). vpp divides
 * layers / pp when pp > 1: 1 and 2 at pp 2, else 1. The micro-batch
 * divides 16 / dp. Then 3 recompute modes, the distributed optimizer off
 * and on (only off at dp 1), and the presets: at tp 1 only tp-allreduce,
 * above it the 9 implemented ones that apply (custom needs an overlap:
 * map, so it is proposed and skipped).
 *   layouts (v, mb) per pair, x 3 x D x S:
 *   (1,1,16): mb 1                      1 x 3 x 2 x 1 =   6
 *   (1,2,8):  mb 1, 2; vpp 2 needs the 2/mb micro-batches even: only mb 1
 *             3 valid, 1 refused          3 x 3 x 2 x 1 =  18
 *   (1,4,4):  mb 1, 2, 4                  3 x 3 x 2 x 1 =  18
 *   (2,1,8):  mb 1, 2                     2 x 3 x 2 x 9 = 108
 *   (2,2,4):  mb 1, 2, 4; vpp 2: mb 1, 2  5 x 3 x 2 x 9 = 270 (1 refused)
 *   (2,4,2):  mb 1, 2, 4, 8               4 x 3 x 2 x 9 = 216
 *   (4,1,4):  mb 1, 2, 4                  3 x 3 x 2 x 9 = 162
 *   (4,2,2):  mb 1..8 (4); vpp 2: 3       7 x 3 x 2 x 9 = 378 (1 refused)
 *   (4,4,1):  mb 1..16 (5)                5 x 3 x 1 x 9 = 135
 *   (8,1,2):  mb 1..8 (4)                 4 x 3 x 2 x 9 = 216
 *   (8,2,1):  mb 1..16 (5); vpp 2: 4      9 x 3 x 1 x 9 = 243 (1 refused)
 * 1770 layouts. Refused by validation (vpp 2 with an odd number of
 * micro-batches), per refused (v, mb): 3 x 2 x 1 + 3 x 2 x 9 + 3 x 2 x 9
 * + 3 x 1 x 9 = 6 + 54 + 54 + 27 = 141. custom skipped once per (v, mb,
 * recompute, optimizer) at tp > 1: 12 + 36 + 24 + 18 + 48 + 15 + 24 + 30
 * = 207. Proposed: 1770 + 141 + 207 = 2118. */
START_TEST(test_enumeration_counts)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    TpsSearchOptions opt = {.gpus = 16};
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsSearch) s = tps_search_new(&sc, &opt, &error);
    ck_assert_msg(s != NULL, "%s", error ? error->message : "");
    const TpsSearchCounts *c = tps_search_counts(s);
    ck_assert_uint_eq(tps_search_n_points(s), 1770);
    ck_assert_uint_eq(c->invalid, 141);
    ck_assert_uint_eq(c->presets_skipped, 207);
    ck_assert_uint_eq(c->candidates, 2118);
    ck_assert_uint_eq(c->no_memory, 0);
    ck_assert(strstr(c->first_invalid, "parallel.pp"));

    /* Every key once; every layout's GPUs 16. */
    g_autoptr(GHashTable) keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < tps_search_n_points(s); i++) {
        const TpsLayout *l = tps_search_layout(s, i);
        ck_assert_uint_eq(l->tp * l->pp * l->dp, 16);
        ck_assert(g_hash_table_add(keys, tps_layout_key(l)));
    }
    /* Across nodes: tp 16 does not divide the 8 heads; the count stays. */
    opt.allow_cross_node_tp = TRUE;
    g_autoptr(TpsSearch) s2 = tps_search_new(&sc, &opt, &error);
    ck_assert_uint_eq(tps_search_n_points(s2), 1770);
}
END_TEST

/* Context parallelism with --max-cp 2 on 2 GPUs: (tp, pp, cp) with tp x pp
 * x cp dividing 2 and 2 cp dividing the 512 tokens: (1,1,2) at dp 1 is the
 * only split with cp 2. Its layouts: vpp 1 (pp 1), micro-batches 1, 2, 4,
 * 8, 16 (divisors of 16 / dp), 3 recompute modes, the distributed
 * optimizer off only (dp 1), tp-allreduce only (tp 1): 5 x 3 = 15, by
 * ring attention, as many with K/V all-gathered, and as many by
 * all-to-all (8 heads, and as many K/V heads, divide by tp x cp = 2).
 * Without --max-cp there is none. */
START_TEST(test_context_parallel_space)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    g_autoptr(GError) error = NULL;
    for (guint max_cp = 0; max_cp <= 2; max_cp += 2) {
        TpsSearchOptions opt = {.gpus = 2, .max_cp = max_cp};
        g_autoptr(TpsSearch) s = tps_search_new(&sc, &opt, &error);
        ck_assert_msg(s != NULL, "%s", error ? error->message : "");
        guint with_cp[TPS_CP_COMM_COUNT] = {0};
        for (guint i = 0; i < tps_search_n_points(s); i++) {
            const TpsLayout *l = tps_search_layout(s, i);
            ck_assert_uint_eq(l->tp * l->pp * l->dp * MAX(l->cp, 1u), 2);
            if (l->cp < 2)
                continue;
            with_cp[l->cp_comm]++;
            g_autofree char *key = tps_layout_key(l);
            const char *prefix = l->cp_comm == TPS_CP_A2A         ? "tp1-cp2-a2a-pp1-vpp1-"
                                 : l->cp_comm == TPS_CP_ALLGATHER ? "tp1-cp2-allgather-pp1-vpp1-"
                                                                  : "tp1-cp2-pp1-vpp1-";
            ck_assert_msg(g_str_has_prefix(key, prefix), "%s", key);
        }
        ck_assert_uint_eq(with_cp[TPS_CP_P2P], max_cp ? 15 : 0);
        ck_assert_uint_eq(with_cp[TPS_CP_A2A], max_cp ? 15 : 0);
        ck_assert_uint_eq(with_cp[TPS_CP_ALLGATHER], max_cp ? 15 : 0);
        ck_assert_uint_eq(with_cp[TPS_CP_A2A_P2P], 0);
    }
}
END_TEST

/* a2a+p2p in the space: 16 GPUs, --max-cp 16, the small GPT (8 heads, as
 * many K/V heads) on A100 nodes of 8. Its a2a group fills the NVLink
 * domain: 8 / tp CP ranks, which must be 2 or more, short of cp, divide
 * cp, and with tp divide the 8 heads. tp x cp = 16 leaves pp = dp = 1:
 * (tp, cp) = (1, 16): a2a 8; (2, 8): 4; (4, 4): 2; (8, 2): 1, none; and
 * with tp x cp = 8 or less the a2a group is cp or more: none. */
START_TEST(test_hierarchical_space)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    g_autoptr(GError) error = NULL;
    TpsSearchOptions opt = {.gpus = 16, .max_cp = 16};
    g_autoptr(TpsSearch) s = tps_search_new(&sc, &opt, &error);
    ck_assert_msg(s != NULL, "%s", error ? error->message : "");
    gboolean seen[3] = {FALSE, FALSE, FALSE};
    for (guint i = 0; i < tps_search_n_points(s); i++) {
        const TpsLayout *l = tps_search_layout(s, i);
        if (l->cp_comm != TPS_CP_A2A_P2P)
            continue;
        g_auto(TpsScenario) run = {0};
        tps_scenario_copy(&run, &sc);
        tps_layout_apply(l, &run);
        const guint want = l->tp == 1 ? 8 : l->tp == 2 ? 4 : l->tp == 4 ? 2 : 0;
        ck_assert_msg(want && l->cp == 16 / l->tp, "tp %u cp %u", l->tp, l->cp);
        ck_assert_uint_eq(run.cp_a2a, want);
        seen[l->tp == 1 ? 0 : l->tp == 2 ? 1 : 2] = TRUE;
        g_autofree char *key = tps_layout_key(l);
        g_autofree char *prefix = g_strdup_printf("tp%u-cp%u-a2a+p2p-pp1-", l->tp, l->cp);
        ck_assert_msg(g_str_has_prefix(key, prefix), "%s", key);
    }
    ck_assert(seen[0] && seen[1] && seen[2]);
}
END_TEST

/* --max-cp's default: powers of two while a CP rank keeps 8192 tokens,
 * up to 16. 8K: 1 (8192 / 2 = 4096 < 8192); 16K: 2; 24K: 2 (24576 / 4 =
 * 6144); 32K: 4; 128K: 16 (131072 / 16 = 8192); 1M: 16, the cap. */
static const struct {
    guint64 seq;
    guint cp;
} default_cp_cases[] = {{2048, 1},  {8192, 1},    {16384, 2},   {24576, 2},
                        {32768, 4}, {131072, 16}, {1048576, 16}};

START_TEST(test_default_max_cp)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    sc.seq_len = default_cp_cases[_i].seq;
    ck_assert_uint_eq(tps_search_default_max_cp(&sc), default_cp_cases[_i].cp);
}
END_TEST

/* A GPU of 1.2 GiB: the layouts that keep too much are pruned before
 * simulating; --all lists them. The pruned ones are exactly those whose
 * simulation says they do not fit. */
START_TEST(test_pruning_is_exact)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    sc.hardware.memory_gib = 1.2;
    g_autoptr(GError) error = NULL;
    TpsSearchOptions opt = {.gpus = 16};
    g_autoptr(TpsSearch) pruned = tps_search_new(&sc, &opt, &error);
    ck_assert_msg(pruned != NULL, "%s", error ? error->message : "");
    opt.all = TRUE;
    g_autoptr(TpsSearch) all = tps_search_new(&sc, &opt, &error);
    const guint n = tps_search_n_points(all);
    ck_assert_uint_eq(n, 1770);
    const TpsSearchCounts *c = tps_search_counts(all);
    ck_assert_uint_gt(c->no_memory, 0);
    ck_assert_uint_lt(c->no_memory, n);
    ck_assert_uint_eq(tps_search_n_points(pruned), n - c->no_memory);

    g_autoptr(GHashTable) kept = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < tps_search_n_points(pruned); i++)
        g_hash_table_add(kept, tps_layout_key(tps_search_layout(pruned, i)));
    guint unfit = 0, checked = 0;
    for (guint i = 0; i < n; i++) {
        TpsSearchRow row;
        TpsResult result;
        ck_assert(tps_search_evaluate(all, i, TRUE, &row, &result, &error));
        g_autofree char *key = tps_layout_key(&row.layout);
        ck_assert_int_eq(row.fits, g_hash_table_contains(kept, key));
        ck_assert_int_eq(row.simulated, row.fits);
        unfit += !row.fits;
        /* A layout not simulated has no times, its band included: the
         * writers leave NAN cells empty. */
        if (!row.fits)
            ck_assert(isnan(result.step_time_s) && isnan(result.step_time_s_low)
                      && isnan(result.step_time_s_high) && !isnan(result.memory_gib));
        /* The simulation of every 7th layout, fitting or not, agrees. */
        if (i % 7 == 0) {
            TpsScenario one = *tps_search_scenario(all);
            tps_layout_apply(&row.layout, &one);
            TpsResult sim;
            ck_assert(tps_simulate(&one, row.layout.strategy, &sim, &error));
            ck_assert_int_eq(sim.fits_memory, row.fits);
            ck_assert(sim.memory_gib == row.memory_gib);
            checked++;
        }
    }
    ck_assert_uint_eq(unfit, c->no_memory);
    ck_assert_uint_gt(checked, 200);
}
END_TEST

/* The pieces cache gives the same bytes as simulating every layer. */
START_TEST(test_cache_is_identical)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    g_autoptr(GError) error = NULL;
    TpsSearchOptions opt = {.gpus = 16};
    g_autoptr(TpsSearch) s = tps_search_new(&sc, &opt, &error);
    for (guint i = 0; i < tps_search_n_points(s); i += 5) {
        TpsSearchRow a, b;
        TpsResult ra, rb;
        ck_assert(tps_search_evaluate(s, i, TRUE, &a, &ra, &error));
        ck_assert(tps_search_evaluate(s, i, FALSE, &b, &rb, &error));
        ck_assert(memcmp(&a, &b, sizeof a) == 0);
        ck_assert(ra.step_time_s == rb.step_time_s && ra.forward_ms == rb.forward_ms &&
                  ra.backward_ms == rb.backward_ms && ra.exposed_comm_ms == rb.exposed_comm_ms);
    }
}
END_TEST

static TpsSearchRow
row(guint index, double step, double memory, gboolean simulated)
{
    TpsSearchRow r = {0};
    r.index = index;
    r.simulated = simulated;
    r.fits = simulated;
    r.step_time_s = simulated ? step : NAN;
    r.tokens_per_s_per_gpu = simulated ? 1000.0 / step : NAN;
    r.memory_gib = memory;
    r.layout.strategy = tps_strategy_lookup("megatron");
    r.layout.tp = r.layout.pp = r.layout.vpp = r.layout.dp = 1;
    r.layout.micro_batch = 1;
    return r;
}

/* Fastest first; equal steps by memory, then by enumeration order; the
 * layouts not simulated last, by memory. Both objectives order alike. */
START_TEST(test_ranking_order)
{
    for (guint objective = 0; objective < 2; objective++) {
        TpsSearchRow rows[] = {
            row(0, 2.0, 10.0, TRUE), row(1, 1.0, 30.0, TRUE), row(2, 1.0, 20.0, TRUE),
            row(3, 0.5, 90.0, FALSE), row(4, 1.0, 20.0, TRUE), row(5, 0.9, 70.0, FALSE),
        };
        const guint expect[] = {2, 4, 1, 0, 5, 3};
        tps_search_rank(rows, G_N_ELEMENTS(rows), (TpsObjective)objective);
        for (guint i = 0; i < G_N_ELEMENTS(rows); i++)
            ck_assert_uint_eq(rows[i].index, expect[i]);
    }
}
END_TEST

/* The paragraph names the differences, largest first, and the rest. */
START_TEST(test_explain)
{
    TpsSearchRow a = row(0, 1.000, 40.0, TRUE), b = row(1, 1.010, 30.0, TRUE);
    a.bubble_s = 0.100, b.bubble_s = 0.108;       /* -8 ms */
    a.exposed_tp_s = 0.020, b.exposed_tp_s = 0.019; /* +1 ms */
    a.dp_exposed_s = b.dp_exposed_s = 0.005;
    a.recompute_s = b.recompute_s = 0.0;
    a.optimizer_s = b.optimizer_s = 0.010;
    g_autofree char *text = tps_search_explain(&a, &b);
    ck_assert_msg(strstr(text, "by 10.0 ms per step (0.99%)"), "%s", text);
    const char *bubble = strstr(text, "pipeline bubble -8.0 ms");
    const char *tp = strstr(text, "exposed TP communication +1.0 ms");
    ck_assert_msg(bubble && tp && bubble < tp, "%s", text);
    /* -10 - (-8 + 1) = -3 ms unexplained. */
    ck_assert_msg(strstr(text, "stage transfers) -3.0 ms"), "%s", text);
    ck_assert(!strstr(text, "DP reduction"));
    ck_assert(strstr(text, "40.0 GiB against 30.0 GiB"));
}
END_TEST

/* The front: no row on it is beaten in both step and memory by another;
 * every row off it is. */
START_TEST(test_pareto_front)
{
    TpsSearchRow rows[] = {
        row(0, 3.0, 10.0, TRUE), row(1, 2.0, 20.0, TRUE), row(2, 2.5, 25.0, TRUE),
        row(3, 1.0, 40.0, TRUE), row(4, 0.5, 90.0, FALSE), row(5, 1.0, 50.0, TRUE),
    };
    g_autoptr(GArray) front = tps_search_pareto(rows, G_N_ELEMENTS(rows));
    const guint expect[] = {0, 1, 3};
    ck_assert_uint_eq(front->len, G_N_ELEMENTS(expect));
    for (guint i = 0; i < front->len; i++)
        ck_assert_uint_eq(g_array_index(front, guint, i), expect[i]);
}
END_TEST

/* What the search keeps as rows stream in (in any order: here shuffled)
 * is what sorting them all gives: the first K of the ranking, the best
 * row that fits with userbuffers, the counts, and the figure's Pareto
 * front. Steps and memories on a coarse grid, so that ties abound. */
START_TEST(test_streamed_best)
{
    enum { N = 400, K = 7 };
    g_autofree TpsSearchRow *rows = g_new0(TpsSearchRow, N);
    g_autoptr(GRand) rand = g_rand_new_with_seed(11);
    const TpsStrategy *ub = tps_strategy_lookup("te-a100");
    ck_assert(ub->userbuffers && !tps_strategy_lookup("megatron")->userbuffers);
    for (guint i = 0; i < N; i++) {
        rows[i] = row(i, 0.5 + 0.25 * g_rand_int_range(rand, 0, 12),
                      4.0 * g_rand_int_range(rand, 1, 20), g_rand_int_range(rand, 0, 8) != 0);
        if (i % 3 == 0)
            rows[i].layout.strategy = ub;
        rows[i].layout.tp = 1u << (i % 4);
    }
    g_autofree guint *shuffled = g_new(guint, N);
    for (guint i = 0; i < N; i++)
        shuffled[i] = i;
    for (guint i = N - 1; i > 0; i--) {
        const guint j = (guint)g_rand_int_range(rand, 0, (gint32)i + 1), t = shuffled[i];
        shuffled[i] = shuffled[j];
        shuffled[j] = t;
    }
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    for (guint objective = 0; objective < 2; objective++) {
        g_autoptr(TpsSearchTop) top = tps_search_top_new(K, (TpsObjective)objective);
        g_autoptr(TpsSearchPlot) plot = tps_search_plot_begin(&sc, 16);
        for (guint i = 0; i < N; i++) {
            tps_search_top_add(top, &rows[shuffled[i]]);
            tps_search_plot_add(plot, &rows[shuffled[i]]);
        }
        g_autofree TpsSearchRow *ranked = g_memdup2(rows, N * sizeof *rows);
        tps_search_rank(ranked, N, (TpsObjective)objective);
        ck_assert_uint_eq(top->rows->len, K);
        for (guint k = 0; k < K; k++)
            ck_assert_uint_eq(g_array_index(top->rows, TpsSearchRow, k).index, ranked[k].index);
        guint simulated = 0, first_ub = N;
        for (guint i = 0; i < N; i++) {
            simulated += ranked[i].simulated;
            if (first_ub == N && ranked[i].simulated && ranked[i].layout.strategy == ub)
                first_ub = i;
        }
        ck_assert_uint_eq(top->n, N);
        ck_assert_uint_eq(top->simulated, simulated);
        ck_assert(top->any_unfit);
        ck_assert(top->has_best_ub);
        ck_assert_uint_eq(top->best_ub.index, ranked[first_ub].index);

        g_autoptr(GArray) front = tps_search_pareto(rows, N);
        guint got[N];
        ck_assert_uint_eq(tps_search_plot_front(plot, got, N), front->len);
        for (guint k = 0; k < front->len; k++)
            ck_assert_uint_eq(got[k], rows[g_array_index(front, guint, k)].index);
    }
}
END_TEST

START_TEST(test_errors)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    g_autoptr(GError) error = NULL;
    /* 7 GPUs: tp 1 (7 is no divisor of the heads), pp 1 (nor of the
     * layers), dp 7 does not divide the batch of 16. */
    TpsSearchOptions opt = {.gpus = 7};
    ck_assert_ptr_null(tps_search_new(&sc, &opt, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_msg(strstr(error->message, "--gpus 7: no layout divides it") &&
                      strstr(error->message, "training.global_batch (16)"),
                  "%s", error->message);
    g_clear_error(&error);
    /* A GPU too small for any layout: the message says memory pruned all. */
    sc.hardware.memory_gib = 0.01;
    opt.gpus = 16;
    ck_assert_ptr_null(tps_search_new(&sc, &opt, &error));
    ck_assert_msg(strstr(error->message, "no layout of 16 GPUs is left: of 2118 layouts, 1770 "
                                         "need more than the 0.01 GiB of one a100-sxm4-80gb"),
                  "%s", error->message);
    ck_assert(strstr(error->message, "141 break a rule"));
    ck_assert(strstr(error->message, "--all lists"));
    g_clear_error(&error);
    /* --all: never an error for memory. */
    opt.all = TRUE;
    g_autoptr(TpsSearch) s = tps_search_new(&sc, &opt, &error);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(tps_search_n_points(s), 1770);
}
END_TEST

/* The table: ranks, the top K only, the explanation after. */
START_TEST(test_table)
{
    g_auto(TpsScenario) sc = {0};
    small(&sc);
    TpsSearchRow rows[] = {row(0, 1.0, 20.0, TRUE), row(1, 2.0, 10.0, TRUE),
                           row(2, 3.0, 5.0, TRUE)};
    g_autofree char *text = tps_search_table(&sc, 16, rows, 3, 2, "WHY", "NOTE");
    ck_assert_msg(strstr(text, "small on 16 GPUs (a100-sxm4-80gb): 3 layouts simulated\nNOTE"),
                  "%s", text);
    ck_assert(strstr(text, "\n   1 "));
    ck_assert(strstr(text, "\n   2 "));
    ck_assert(!strstr(text, "\n   3 "));
    ck_assert(strstr(text, "\nWHY\n"));
    /* fits only when a row does not. */
    ck_assert(!strstr(text, "fits"));
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("search");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_enumeration_counts);
    tcase_add_test(tc, test_context_parallel_space);
    tcase_add_loop_test(tc, test_default_max_cp, 0, G_N_ELEMENTS(default_cp_cases));
    tcase_add_test(tc, test_hierarchical_space);
    tcase_add_test(tc, test_pruning_is_exact);
    tcase_add_test(tc, test_cache_is_identical);
    tcase_add_test(tc, test_ranking_order);
    tcase_add_test(tc, test_explain);
    tcase_add_test(tc, test_pareto_front);
    tcase_add_test(tc, test_streamed_best);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_table);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
