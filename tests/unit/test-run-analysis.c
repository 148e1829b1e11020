/* sched/run-analysis and engine/run: the kind classes, interval arithmetic
 * and exposed communication, pinned once on hand-built runs; the export of
 * a finished engine run as data. */
#include <check.h>

#include "test-util.h"
#include <stdlib.h>
#include <string.h>

#include "engine/run.h"
#include "hand-run.h"
#include "sched/bands.h"
#include "sched/run-analysis.h"

/* ---- kind classes ---- */

typedef struct {
    TpsTaskKind kind;
    TpsKindClass klass;
    gboolean kernel;
} KindCase;

static const KindCase kind_cases[] = {
    {TPS_KIND_GEMM, TPS_CLASS_COMPUTE, TRUE},   {TPS_KIND_ATTENTION, TPS_CLASS_COMPUTE, TRUE},
    {TPS_KIND_MEMORY, TPS_CLASS_COMPUTE, TRUE}, {TPS_KIND_COMM, TPS_CLASS_COMM, TRUE},
    {TPS_KIND_COPY, TPS_CLASS_COMM, FALSE},     {TPS_KIND_FLOW, TPS_CLASS_LINK, FALSE},
    {TPS_KIND_MARKER, TPS_CLASS_NONE, FALSE},
};

START_TEST(test_kind_class)
{
    const KindCase *c = &kind_cases[_i];
    ck_assert_int_eq(tps_kind_class(c->kind), c->klass);
    ck_assert_int_eq(tps_kind_is_kernel(c->kind), c->kernel);
}
END_TEST

START_TEST(test_every_kind_listed)
{
    /* A kind added to the engine must be given a class here. */
    ck_assert_uint_eq(G_N_ELEMENTS(kind_cases), TPS_KIND_COUNT);
    ck_assert_str_eq(tps_kind_class_name(TPS_CLASS_COMM), "comm");
    ck_assert_str_eq(tps_kind_class_name(TPS_CLASS_COMPUTE), "compute");
}
END_TEST

/* ---- intervals ---- */

static GArray *
intervals(const TpsTime *pairs, guint n)
{
    GArray *a = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    for (guint i = 0; i < n; i++) {
        TpsInterval iv = {pairs[2 * i], pairs[2 * i + 1]};
        g_array_append_val(a, iv);
    }
    return a;
}

START_TEST(test_measure)
{
    /* [0,10) [5,20) merge to [0,20); [30,40) apart; [50,50) empty: 30 in all. */
    static const TpsTime p[] = {30, 40, 5, 20, 0, 10, 50, 50};
    g_autoptr(GArray) a = intervals(p, 4);
    ck_assert_int_eq(tps_intervals_measure(a, 0, TPS_TIME_NEVER), 30);
    ck_assert_uint_eq(a->len, 2);
    /* Clipped to [8, 35): [8,20) and [30,35): 17. */
    g_autoptr(GArray) b = intervals(p, 4);
    ck_assert_int_eq(tps_intervals_measure(b, 8, 35), 17);
}
END_TEST

/* Only the last interval is out of order: [5,25) joins [0,10) and
 * [20,30) into [0,30), then [40,50): 40. Taken in the given order it
 * would only extend [40,50), for 30. */
START_TEST(test_measure_sorts)
{
    static const TpsTime p[] = {0, 10, 20, 30, 40, 50, 5, 25};
    g_autoptr(GArray) a = intervals(p, 4);
    ck_assert_int_eq(tps_intervals_measure(a, 0, TPS_TIME_NEVER), 40);
    ck_assert_uint_eq(a->len, 2);
    ck_assert_int_eq(g_array_index(a, TpsInterval, 0).end, 30);
}
END_TEST

START_TEST(test_subtract)
{
    /* A = [0,100) [150,200); B = [30,50) [80,160): A \ B = [0,30) [50,80) [160,200). */
    static const TpsTime pa[] = {0, 100, 150, 200}, pb[] = {80, 160, 30, 50};
    g_autoptr(GArray) a = intervals(pa, 2);
    g_autoptr(GArray) b = intervals(pb, 2);
    g_autoptr(GArray) d = tps_intervals_subtract(a, b, 0, TPS_TIME_NEVER);
    static const TpsTime want[] = {0, 30, 50, 80, 160, 200};
    ck_assert_uint_eq(d->len, 3);
    for (guint i = 0; i < 3; i++) {
        ck_assert_int_eq(g_array_index(d, TpsInterval, i).start, want[2 * i]);
        ck_assert_int_eq(g_array_index(d, TpsInterval, i).end, want[2 * i + 1]);
    }
    g_autoptr(GArray) a2 = intervals(pa, 2);
    g_autoptr(GArray) b2 = intervals(pb, 2);
    ck_assert_int_eq(tps_intervals_exposed(a2, b2, 0, TPS_TIME_NEVER), 30 + 30 + 40);
}
END_TEST

/* ---- a hand-built run (hand-run.c) ---- */

START_TEST(test_exposed_hand_run)
{
    g_autoptr(TpsRun) run = tps_test_hand_run();
    g_autoptr(GArray) ex = tps_run_exposed_intervals(run, 0, 0, TPS_TIME_NEVER);
    static const TpsTime want[] = {0, 30, 50, 80, 150, 200, 390, 400, 410, 420};
    ck_assert_uint_eq(ex->len, 5);
    for (guint i = 0; i < 5; i++) {
        ck_assert_int_eq(g_array_index(ex, TpsInterval, i).start, want[2 * i]);
        ck_assert_int_eq(g_array_index(ex, TpsInterval, i).end, want[2 * i + 1]);
    }
    ck_assert_int_eq(tps_run_exposed(run, 0, 0, TPS_TIME_NEVER), 130);
    /* Window [40, 160): [50,80) and [150,160). */
    ck_assert_int_eq(tps_run_exposed(run, 0, 40, 160), 40);
    /* Rank 1 has no communication. */
    ck_assert_int_eq(tps_run_exposed(run, 1, 0, TPS_TIME_NEVER), 0);
    /* Busy communication of rank 0: [0,100) [150,200) [390,420) = 180. */
    ck_assert_int_eq(tps_run_busy(run, 0, TPS_CLASS_COMM, 0, TPS_TIME_NEVER), 180);
    /* Busy compute of rank 0: [30,50) [80,120) [400,410) = 70. */
    ck_assert_int_eq(tps_run_busy(run, 0, TPS_CLASS_COMPUTE, 0, TPS_TIME_NEVER), 70);
    ck_assert_int_eq(tps_run_busy(run, 0, TPS_CLASS_LINK, 0, TPS_TIME_NEVER), 100);
}
END_TEST

START_TEST(test_intervals_subset)
{
    g_autoptr(TpsRun) run = tps_test_hand_run();
    /* Only tasks 0 (comm) and 3 (copy), and 1 (a GEMM: not of the class). */
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
    const TpsTaskId pick[] = {0, 1, 3};
    g_array_append_vals(ids, pick, 3);
    g_autoptr(GArray) comm = tps_run_intervals(run, 0, TPS_CLASS_COMM, ids);
    ck_assert_uint_eq(comm->len, 2);
    ck_assert_int_eq(tps_intervals_measure(comm, 0, TPS_TIME_NEVER), 150);
}
END_TEST

START_TEST(test_run_strings_owned)
{
    g_autoptr(TpsRun) run = tps_run_new("x", 1, 0);
    char name[] = "gemm";
    TpsSpan sp = {.kind = TPS_KIND_GEMM, .name = name, .stream = TPS_STREAM_NONE};
    tps_run_add_span(run, &sp, 0);
    name[0] = 'X';
    ck_assert_str_eq(tps_run_span(run, 0)->name, "gemm");
    ck_assert_uint_eq(run->gpus_per_node, 1);
    ck_assert_ptr_null(tps_run_stream_name(run, TPS_STREAM_NONE));
}
END_TEST

/* ---- export from the engine ----
 *
 * Two ranks, launch cost 5 ns. Rank 0: kernel a (launched, 100 ns alone) on
 * "main", then a flow to rank 1 after it. Rank 1: kernel b (launched) on its
 * stream after the flow. a's launch completes at 5, b's at 5 (first launch
 * of rank 1). */
START_TEST(test_export_engine_run)
{
    TpsMachine m = {.ranks = 2,
                    .gpus_per_node = 8,
                    .sms = 100,
                    .nvlink_gbps = 100.0,
                    .copy_engines = 1,
                    .launch_ns = 5};
    g_autoptr(TpsEngine) e = tps_engine_new(&m);
    TpsStreamId s0 = tps_engine_add_stream(e, 0, 0, "main");
    TpsStreamId s1 = tps_engine_add_stream(e, 1, 3, "side");
    TpsTaskSpec a = {.kind = TPS_KIND_GEMM,
                     .name = "a",
                     .rank = 0,
                     .stream = s0,
                     .parent = TPS_TASK_NONE,
                     .launch = TRUE,
                     .floor_ns = 100};
    TpsTaskId ta = tps_engine_add(e, &a);
    TpsTaskSpec f = {.kind = TPS_KIND_FLOW,
                     .name = "f",
                     .rank = 0,
                     .stream = TPS_STREAM_NONE,
                     .parent = TPS_TASK_NONE,
                     .dst_rank = 1,
                     .link_bytes = 1000.0};
    TpsTaskId tf = tps_engine_add(e, &f);
    tps_engine_after(e, tf, ta);
    TpsTaskSpec b = {.kind = TPS_KIND_MEMORY,
                     .name = "b",
                     .rank = 1,
                     .stream = s1,
                     .parent = TPS_TASK_NONE,
                     .launch = TRUE,
                     .floor_ns = 10};
    TpsTaskId tb = tps_engine_add(e, &b);
    tps_engine_after(e, tb, tf);
    TpsRunStats stats;
    ck_assert(tps_engine_run(e, &stats, NULL));

    g_autoptr(TpsRun) run = tps_engine_export_run(e);
    ck_assert_uint_eq(run->ranks, 2);
    ck_assert_uint_eq(run->gpus_per_node, 8);
    ck_assert_uint_eq(tps_run_n_spans(run), 3);
    ck_assert_uint_eq(run->streams->len, 2);
    ck_assert_str_eq(tps_run_stream(run, s1)->name, "side");
    ck_assert_int_eq(tps_run_stream(run, s1)->priority, 3);
    ck_assert_uint_eq(tps_run_stream(run, s1)->rank, 1);
    for (TpsTaskId id = 0; id < 3; id++) {
        const TpsSpan *x = tps_run_span(run, id), *y = tps_engine_span(e, id);
        ck_assert_uint_eq(x->id, id);
        ck_assert_str_eq(x->name, y->name);
        ck_assert_int_eq(x->start, y->start);
        ck_assert_int_eq(x->end, y->end);
    }
    ck_assert_uint_eq(tps_run_dst_rank(run, tf), 1);
    ck_assert_uint_eq(tps_run_dst_rank(run, ta), 0);
    /* a starts after its launch at 5 and lasts 100 ns. */
    ck_assert_int_eq(tps_run_span(run, ta)->start, 5);
    ck_assert_int_eq(tps_run_span(run, ta)->end, 105);
    /* Edges: at least the two after() dependencies. */
    guint ends = 0;
    for (guint i = 0; i < run->edges->len; i++) {
        const TpsRunEdge *edge = &g_array_index(run->edges, TpsRunEdge, i);
        if (edge->kind == TPS_EDGE_END)
            ends +=
                (edge->pred == ta && edge->succ == tf) || (edge->pred == tf && edge->succ == tb);
    }
    ck_assert_uint_eq(ends, 2);
    /* Host: one launch per rank, [0, 5), by rank. */
    ck_assert_uint_eq(run->host->len, 2);
    const TpsHostSpan *h0 = &g_array_index(run->host, TpsHostSpan, 0);
    const TpsHostSpan *h1 = &g_array_index(run->host, TpsHostSpan, 1);
    ck_assert_uint_eq(h0->rank, 0);
    ck_assert_uint_eq(h0->task, ta);
    ck_assert_int_eq(h0->start, 0);
    ck_assert_int_eq(h0->end, 5);
    ck_assert_uint_eq(h1->rank, 1);
    ck_assert_uint_eq(h1->task, tb);

    /* The run outlives the engine: it keeps the engine's names (the same
     * copies, not new ones; a sanitizer or valgrind run sees a read of
     * freed memory here without the run's reference), and what is added
     * to it is its own. */
    const char *name_a = tps_engine_span(e, ta)->name;
    g_clear_pointer(&e, tps_engine_free);
    ck_assert_ptr_eq(tps_run_span(run, ta)->name, name_a);
    ck_assert_str_eq(tps_run_span(run, ta)->name, "a");
    ck_assert_str_eq(tps_run_stream(run, s0)->name, "main");
    TpsSpan extra = {.kind = TPS_KIND_MARKER, .name = "extra", .stream = TPS_STREAM_NONE};
    ck_assert_str_eq(tps_run_span(run, tps_run_add_span(run, &extra, 0))->name, "extra");
}
END_TEST

/* The host spans of a thread that issues a (10 ns to issue, runs 100 ns
 * from 10), works 20 ns, blocks in a sync on a until 110, spends 5 ns in
 * the rest of the sync and issues b (10 ns): issue [0, 10), work [10, 30),
 * sync [30, 110), work [110, 115), issue [115, 125). A sync that does not
 * wait shows only its own time. */
START_TEST(test_export_host_spans)
{
    TpsMachine m = {.ranks = 1, .gpus_per_node = 8, .sms = 100};
    g_autoptr(TpsEngine) e = tps_engine_new(&m);
    TpsStreamId s0 = tps_engine_add_stream(e, 0, 0, "main");
    TpsTaskSpec a = {.kind = TPS_KIND_GEMM,
                     .name = "a",
                     .rank = 0,
                     .stream = s0,
                     .parent = TPS_TASK_NONE,
                     .launch = TRUE,
                     .host_ns = 10,
                     .floor_ns = 100};
    TpsTaskId ta = tps_engine_add(e, &a);
    tps_engine_host_work(e, 0, 20);
    tps_engine_host_sync(e, 0, ta, 5);
    tps_engine_host_sync(e, 0, ta, 0); /* met: no wait, no time */
    a.name = "b";
    TpsTaskId tb = tps_engine_add(e, &a);
    ck_assert(tps_engine_run(e, NULL, NULL));
    g_autoptr(TpsRun) run = tps_engine_export_run(e);
    static const struct {
        TpsHostKind kind;
        gboolean on_a, on_b;
        TpsTime start, end;
    } want[] = {
        {TPS_HOST_ISSUE, TRUE, FALSE, 0, 10},    {TPS_HOST_WORK, FALSE, FALSE, 10, 30},
        {TPS_HOST_SYNC, TRUE, FALSE, 30, 110},   {TPS_HOST_WORK, FALSE, FALSE, 110, 115},
        {TPS_HOST_ISSUE, FALSE, TRUE, 115, 125},
    };
    ck_assert_uint_eq(run->host->len, G_N_ELEMENTS(want));
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        const TpsHostSpan *h = &g_array_index(run->host, TpsHostSpan, i);
        ck_assert_uint_eq(h->rank, 0);
        ck_assert_int_eq(h->kind, want[i].kind);
        ck_assert_uint_eq(h->task, want[i].on_a ? ta : want[i].on_b ? tb : TPS_TASK_NONE);
        ck_assert_int_eq(h->start, want[i].start);
        ck_assert_int_eq(h->end, want[i].end);
    }
    ck_assert_int_eq(tps_run_span(run, tb)->start, 125);
}
END_TEST

/* ---- error bands ---- */

/* The hand run cut by class of work (see hand-run.c): rank 0 over [0,500):
 * communication alone [0,30) [50,80) [150,200) [390,400) [410,420) = 130;
 * compute beside it [30,50) [80,100) [400,410) = 50; the memory kernel
 * alone [100,120) = 20; nothing (the flow and the marker are not work of
 * their own) [120,150) [200,390) [420,500) = 300. Over [30,120): 20 + 20
 * interference, 30 collective, 20 memory. Rank 1's GEMM, small: 500. */
typedef struct {
    guint rank;
    TpsTime lo, hi;
    gboolean small;
    TpsTime parts[TPS_BAND_COUNT];
} BandPartsCase;

static const BandPartsCase band_parts_cases[] = {
    {0,
     0,
     500,
     FALSE,
     {[TPS_BAND_COLLECTIVE] = 130,
      [TPS_BAND_INTERFERENCE] = 50,
      [TPS_BAND_MEMORY] = 20,
      [TPS_BAND_HOST] = 300}},
    {0,
     30,
     120,
     FALSE,
     {[TPS_BAND_COLLECTIVE] = 30, [TPS_BAND_INTERFERENCE] = 40, [TPS_BAND_MEMORY] = 20}},
    {1, 0, 500, TRUE, {[TPS_BAND_GEMM_SMALL] = 500}},
    {1, 100, 600, FALSE, {[TPS_BAND_GEMM] = 400, [TPS_BAND_HOST] = 100}},
};

START_TEST(test_band_parts_hand_run)
{
    const BandPartsCase *c = &band_parts_cases[_i];
    g_autoptr(TpsRun) run = tps_test_hand_run();
    TpsTime parts[TPS_BAND_COUNT] = {0};
    tps_band_parts(run, c->rank, c->lo, c->hi, c->small, parts);
    for (guint k = 0; k < TPS_BAND_COUNT; k++)
        ck_assert_msg(parts[k] == c->parts[k], "%s: %" G_GINT64_FORMAT " != %" G_GINT64_FORMAT,
                      tps_band_class_names[k], (gint64)parts[k], (gint64)c->parts[k]);
}
END_TEST

/* Residual quantiles by hand, one pair per class. */
static void
band_hardware(TpsHardware *hw)
{
    static const double p10[TPS_BAND_COUNT] = {-10, -20, -20, -50, -50, -20, -20};
    static const double p90[TPS_BAND_COUNT] = {10, 20, 25, 50, 100, 25, 60};
    memset(hw, 0, sizeof *hw);
    memcpy(hw->band_p10_pct, p10, sizeof p10);
    memcpy(hw->band_p90_pct, p90, sizeof p90);
}

START_TEST(test_band_hand_run)
{
    /* Measured = predicted / (1 + residual): low
     * 130 / 2 + 50 / 1.6 + 20 / 1.25 + 300 / 1.25 = 65 + 31.25 + 16 + 240 =
     * 352.25; high 130 / 0.5 + 50 / 0.8 + 20 / 0.8 + 300 / 0.8 = 260 + 62.5 +
     * 25 + 375 = 722.5. */
    g_autoptr(TpsRun) run = tps_test_hand_run();
    TpsHardware hw;
    band_hardware(&hw);
    TpsTime parts[TPS_BAND_COUNT] = {0};
    tps_band_parts(run, 0, 0, 500, FALSE, parts);
    double low, high;
    tps_band_of_parts(&hw, parts, &low, &high);
    ck_assert_double_eq_tol(low, 352.25, 1e-9);
    ck_assert_double_eq_tol(high, 722.5, 1e-9);
}
END_TEST

/* A class whose residuals spread further widens the band of a time that
 * has a part of that class, and only on the side that spread. */
START_TEST(test_band_widens)
{
    const guint c = (guint)_i;
    TpsHardware hw;
    band_hardware(&hw);
    TpsTime parts[TPS_BAND_COUNT];
    for (guint k = 0; k < TPS_BAND_COUNT; k++)
        parts[k] = 100;
    double low, high, low2, high2;
    tps_band_of_parts(&hw, parts, &low, &high);
    hw.band_p90_pct[c] += 20; /* the model slower on more points: measured lower */
    tps_band_of_parts(&hw, parts, &low2, &high2);
    ck_assert_double_lt(low2, low);
    ck_assert_double_eq(high2, high);
    hw.band_p10_pct[c] -= 20; /* the model faster on more points: measured higher */
    tps_band_of_parts(&hw, parts, &low, &high);
    ck_assert_double_eq(low, low2);
    ck_assert_double_gt(high, high2);
}
END_TEST

static Suite *
run_analysis_suite(void)
{
    Suite *s = suite_create("run-analysis");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_kind_class, 0, G_N_ELEMENTS(kind_cases));
    tcase_add_test(tc, test_every_kind_listed);
    tcase_add_test(tc, test_measure);
    tcase_add_test(tc, test_measure_sorts);
    tcase_add_test(tc, test_subtract);
    tcase_add_test(tc, test_exposed_hand_run);
    tcase_add_test(tc, test_intervals_subset);
    tcase_add_test(tc, test_run_strings_owned);
    tcase_add_test(tc, test_export_engine_run);
    tcase_add_test(tc, test_export_host_spans);
    tcase_add_loop_test(tc, test_band_parts_hand_run, 0, G_N_ELEMENTS(band_parts_cases));
    tcase_add_test(tc, test_band_hand_run);
    tcase_add_loop_test(tc, test_band_widens, 0, TPS_BAND_COUNT);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(run_analysis_suite());
}
