/* Tests of the discrete-event engine: one TCase per mechanism, each built so
 * that removing the mechanism changes a checked time. Times are derived by
 * hand in the comments (bandwidths in bytes/ns, times in ns).
 */
#include <check.h>

#include "test-util.h"
#include <glib.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/engine.h"

/* One node of two A100-like GPUs, with round numbers. */
static TpsMachine
machine_default(void)
{
    return (TpsMachine){
        .ranks = 2,
        .gpus_per_node = 8,
        .sms = 108,
        .hbm_gbps = 1000.0,
        .nvlink_gbps = 100.0,
        .nic_gbps = 25.0,
        .copy_engines = 1,
        .launch_ns = 0,
    };
}

/* A task that takes `ns` alone and uses nothing shared. */
static TpsTaskId
add_timed(TpsEngine *engine, const char *name, guint rank, TpsStreamId stream, TpsTime ns)
{
    TpsTaskSpec spec = {
        .kind = TPS_KIND_MEMORY,
        .name = name,
        .rank = rank,
        .stream = stream,
        .parent = TPS_TASK_NONE,
        .floor_ns = ns,
    };
    return tps_engine_add(engine, &spec);
}

static TpsTaskId
add_flow(TpsEngine *engine, const char *name, guint src, guint dst, TpsStreamId stream,
         double bytes)
{
    TpsTaskSpec spec = {
        .kind = TPS_KIND_FLOW,
        .name = name,
        .rank = src,
        .stream = stream,
        .parent = TPS_TASK_NONE,
        .dst_rank = dst,
        .link_bytes = bytes,
    };
    return tps_engine_add(engine, &spec);
}

static void
run_ok(TpsEngine *engine, TpsRunStats *stats)
{
    g_autoptr(GError) error = NULL;
    TpsRunStats local;
    gboolean ok = tps_engine_run(engine, stats != NULL ? stats : &local, &error);
    ck_assert_msg(ok, "run failed: %s", error != NULL ? error->message : "?");
}

#define START(e, id) (tps_engine_span((e), (id))->start)
#define END(e, id) (tps_engine_span((e), (id))->end)

/* ---- kind names ---- */

static const struct {
    TpsTaskKind kind;
    const char *name;
} kind_cases[] = {
    {TPS_KIND_GEMM, "gemm"},     {TPS_KIND_ATTENTION, "attention"}, {TPS_KIND_MEMORY, "memory"},
    {TPS_KIND_COMM, "comm"},     {TPS_KIND_FLOW, "flow"},           {TPS_KIND_COPY, "copy"},
    {TPS_KIND_MARKER, "marker"},
};

START_TEST(test_kind_names)
{
    ck_assert_str_eq(tps_task_kind_name(kind_cases[_i].kind), kind_cases[_i].name);
}
END_TEST

/* ---- ordering and determinism ---- */

/* A mixed graph drawn from a fixed seed: kernels sharing SMs and HBM, flows
 * between ranks, cross-stream waits, launches, copies. */
static TpsEngine *
build_mixed(guint32 seed)
{
    TpsMachine machine = machine_default();
    machine.ranks = 4;
    machine.gpus_per_node = 2;
    machine.launch_ns = 700;
    TpsEngine *engine = tps_engine_new(&machine);
    GRand *rand = g_rand_new_with_seed(seed);
    TpsStreamId streams[4][3];
    for (guint r = 0; r < 4; r++)
        for (guint s = 0; s < 3; s++)
            streams[r][s] = tps_engine_add_stream(engine, r, (int)s, "s");

    for (guint i = 0; i < 400; i++) {
        guint r = g_rand_int_range(rand, 0, 4);
        guint s = g_rand_int_range(rand, 0, 3);
        TpsTaskSpec spec = {
            .kind = (TpsTaskKind)g_rand_int_range(rand, 0, TPS_KIND_COUNT),
            .name = "t",
            .rank = r,
            .stream = streams[r][s],
            .parent = TPS_TASK_NONE,
            .launch = g_rand_boolean(rand),
            .ctas = g_rand_int_range(rand, 0, 300),
            .wave_ns = g_rand_int_range(rand, 100, 5000),
            .fixed_ns = g_rand_int_range(rand, 0, 300),
            .hbm_bytes = g_rand_double_range(rand, 0, 1e6),
        };
        if (g_rand_int_range(rand, 0, 4) == 0) {
            spec.dst_rank = (r + 1 + g_rand_int_range(rand, 0, 3)) % 4;
            spec.link_bytes = g_rand_double_range(rand, 1e3, 1e6);
            spec.copy_engine = g_rand_boolean(rand);
        }
        TpsTaskId id = tps_engine_add(engine, &spec);
        if (i > 10 && g_rand_int_range(rand, 0, 5) == 0) {
            guint q = g_rand_int_range(rand, 0, 4);
            tps_engine_stream_wait(engine, streams[q][g_rand_int_range(rand, 0, 3)], id);
        }
    }
    g_rand_free(rand);
    return engine;
}

START_TEST(test_determinism)
{
    g_autoptr(TpsEngine) a = build_mixed(42);
    g_autoptr(TpsEngine) b = build_mixed(42);
    TpsRunStats sa, sb;
    run_ok(a, &sa);
    run_ok(b, &sb);
    ck_assert_int_eq(sa.makespan, sb.makespan);
    ck_assert_uint_eq(sa.events, sb.events);
    ck_assert_uint_eq(sa.rate_updates, sb.rate_updates);
    ck_assert_uint_gt(sa.rate_updates, 0);
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(a); id++) {
        const TpsSpan *x = tps_engine_span(a, id), *y = tps_engine_span(b, id);
        ck_assert_int_eq(x->launch, y->launch);
        ck_assert_int_eq(x->start, y->start);
        ck_assert_int_eq(x->end, y->end);
        ck_assert_uint_eq(x->sms, y->sms);
        ck_assert_int_le(x->launch, x->start);
        ck_assert_int_le(x->start, x->end);
        ck_assert_int_le(x->end, sa.makespan);
    }
}
END_TEST

/* The local update gives the allocation of a full re-solve: the same graph
 * in reference mode ends every task at the same time, up to rounding of
 * the finish events (a nanosecond here and there). */
START_TEST(test_incremental_matches_reference)
{
    g_autoptr(TpsEngine) a = build_mixed(7 + _i);
    g_autoptr(TpsEngine) b = build_mixed(7 + _i);
    tps_engine_set_incremental(b, FALSE);
    TpsRunStats sa, sb;
    run_ok(a, &sa);
    run_ok(b, &sb);
    ck_assert_uint_gt(sa.local_updates, 0);
    ck_assert_uint_eq(sb.local_updates, 0);
    ck_assert_uint_lt(sa.rate_updates, sb.rate_updates);
    TpsTime worst = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(a); id++) {
        const TpsSpan *x = tps_engine_span(a, id), *y = tps_engine_span(b, id);
        worst = MAX(worst, ABS(x->start - y->start));
        worst = MAX(worst, ABS(x->end - y->end));
    }
    ck_assert_int_le(worst, 4);
}
END_TEST

/* Equal-time events: tasks made ready at the same instant start in
 * ascending id, which shows as SM hand-out order (same priority). */
START_TEST(test_same_time_order)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskId gate = add_timed(engine, "gate", 0, TPS_STREAM_NONE, 100);
    TpsTaskSpec spec = {
        .kind = TPS_KIND_GEMM, .rank = 0, .parent = TPS_TASK_NONE, .ctas = 100, .wave_ns = 1000};
    spec.name = "first";
    spec.stream = s1;
    TpsTaskId first = tps_engine_add(engine, &spec);
    spec.name = "second";
    spec.stream = s0;
    TpsTaskId second = tps_engine_add(engine, &spec);
    tps_engine_after(engine, second, gate);
    tps_engine_after(engine, first, gate);
    run_ok(engine, NULL);
    ck_assert_uint_eq(tps_engine_span(engine, first)->sms, 100);
    ck_assert_uint_eq(tps_engine_span(engine, second)->sms, 8);
    ck_assert_int_eq(END(engine, first), 1100);
    /* 8 SMs: 13 waves would be 13000; it gets 108 once `first` ends. */
    ck_assert_int_lt(END(engine, second), 13100);
}
END_TEST

/* ---- streams ---- */

START_TEST(test_stream_fifo)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "compute");
    TpsTaskId a = add_timed(engine, "a", 0, s, 100);
    TpsTaskId b = add_timed(engine, "b", 0, s, 50);
    TpsTaskId c = add_timed(engine, "c", 0, s, 10);
    ck_assert_uint_eq(tps_engine_record(engine, s), c);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, a), 0);
    ck_assert_int_eq(START(engine, b), 100);
    ck_assert_int_eq(START(engine, c), 150);
    ck_assert_int_eq(END(engine, c), 160);
}
END_TEST

START_TEST(test_stream_wait)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId sa = tps_engine_add_stream(engine, 0, 0, "a");
    TpsStreamId sb = tps_engine_add_stream(engine, 0, 0, "b");
    ck_assert_uint_eq(tps_engine_record(engine, sb), TPS_TASK_NONE);
    tps_engine_stream_wait(engine, sb, tps_engine_record(engine, sb)); /* no-op */
    TpsTaskId a = add_timed(engine, "a", 0, sa, 100);
    TpsTaskId other = add_timed(engine, "other", 0, sb, 10);
    tps_engine_stream_wait(engine, sb, tps_engine_record(engine, sa));
    TpsTaskId b = add_timed(engine, "b", 0, sb, 10);
    /* A wait delays the waiting stream only. */
    TpsTaskId c = add_timed(engine, "c", 0, sa, 10);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, other), 0);
    ck_assert_int_eq(START(engine, b), END(engine, a));
    ck_assert_int_eq(START(engine, b), 100);
    ck_assert_int_eq(START(engine, c), 100);
}
END_TEST

/* ---- explicit edges: after (end) and after_start ---- */

static const struct {
    gboolean on_start;
    TpsTime expect_start;
} edge_cases[] = {
    {FALSE, 150}, /* a starts at 50 (after x), ends at 150 */
    {TRUE, 50},
};

START_TEST(test_edges)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    add_timed(engine, "x", 0, s0, 50);
    TpsTaskId a = add_timed(engine, "a", 0, s0, 100);
    TpsTaskId b = add_timed(engine, "b", 0, s1, 10);
    if (edge_cases[_i].on_start)
        tps_engine_after_start(engine, b, a);
    else
        tps_engine_after(engine, b, a);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, a), 50);
    ck_assert_int_eq(START(engine, b), edge_cases[_i].expect_start);
}
END_TEST

/* ---- host launch queue ---- */

START_TEST(test_launch_queue)
{
    TpsMachine machine = machine_default();
    machine.launch_ns = 1000;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "s");
    TpsStreamId t = tps_engine_add_stream(engine, 0, 0, "t");
    TpsStreamId other = tps_engine_add_stream(engine, 1, 0, "other");
    TpsTaskId ids[5];
    for (guint k = 0; k < 5; k++) {
        TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                            .name = "k",
                            .rank = 0,
                            .stream = k % 2 ? t : s,
                            .parent = TPS_TASK_NONE,
                            .launch = TRUE,
                            .floor_ns = 10};
        ids[k] = tps_engine_add(engine, &spec);
    }
    /* Not launched: starts at once. Other rank: its own launcher. */
    TpsTaskId free_task = add_timed(engine, "unlaunched", 0, TPS_STREAM_NONE, 10);
    TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                        .name = "r1",
                        .rank = 1,
                        .stream = other,
                        .parent = TPS_TASK_NONE,
                        .launch = TRUE,
                        .floor_ns = 10};
    TpsTaskId r1 = tps_engine_add(engine, &spec);
    TpsRunStats stats;
    run_ok(engine, &stats);
    for (guint k = 0; k < 5; k++) {
        ck_assert_int_eq(tps_engine_span(engine, ids[k])->launch, (k + 1) * 1000);
        ck_assert_int_eq(START(engine, ids[k]), (k + 1) * 1000);
    }
    /* Paid once per kernel: the last ends one launch cost after the 4th. */
    ck_assert_int_eq(END(engine, ids[4]), 5010);
    ck_assert_int_eq(START(engine, free_task), 0);
    ck_assert_int_eq(tps_engine_span(engine, free_task)->launch, 0);
    ck_assert_int_eq(START(engine, r1), 1000);
    ck_assert_int_eq(stats.makespan, 5010);
}
END_TEST

/* The host never waits for the GPU: launches run ahead of a slow stream. */
START_TEST(test_launch_runs_ahead)
{
    TpsMachine machine = machine_default();
    machine.launch_ns = 100;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "s");
    TpsTaskId ids[3];
    for (guint k = 0; k < 3; k++) {
        TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                            .name = "k",
                            .rank = 0,
                            .stream = s,
                            .parent = TPS_TASK_NONE,
                            .launch = TRUE,
                            .floor_ns = 1000};
        ids[k] = tps_engine_add(engine, &spec);
    }
    run_ok(engine, NULL);
    ck_assert_int_eq(tps_engine_span(engine, ids[2])->launch, 300);
    ck_assert_int_eq(START(engine, ids[1]), 1100);
    ck_assert_int_eq(START(engine, ids[2]), 2100);
}
END_TEST

/* ---- the host thread ---- */

/* A launched task of `ns` alone on `stream`, issued with `host` of host
 * time. */
static TpsTaskId
add_issued(TpsEngine *engine, const char *name, guint rank, TpsStreamId stream, TpsTime ns,
           TpsTime host)
{
    TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                        .name = name,
                        .rank = rank,
                        .stream = stream,
                        .parent = TPS_TASK_NONE,
                        .launch = TRUE,
                        .host_ns = host,
                        .floor_ns = ns};
    return tps_engine_add(engine, &spec);
}

/* Four kernels of 200 ns on one stream, issued with 50, 50, 400 and 50 ns
 * of host time. Issues end at 50, 100, 500, 550. GPU: a [50, 250),
 * b [250, 450) (issued long before), c waits for its issue: [500, 700), an
 * idle gap of 50 = the host's deficit (500 - 450); d [700, 900). */
START_TEST(test_host_bound_gaps)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    machine.launch_ns = 999; /* every task states its own */
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "s");
    const TpsTime host[4] = {50, 50, 400, 50};
    const TpsTime issued[4] = {50, 100, 500, 550};
    const TpsTime start[4] = {50, 250, 500, 700};
    TpsTaskId ids[4];
    for (guint k = 0; k < 4; k++)
        ids[k] = add_issued(engine, "k", 0, s, 200, host[k]);
    TpsRunStats stats;
    run_ok(engine, &stats);
    for (guint k = 0; k < 4; k++) {
        ck_assert_int_eq(tps_engine_span(engine, ids[k])->launch, issued[k]);
        ck_assert_int_eq(START(engine, ids[k]), start[k]);
    }
    ck_assert_int_eq(START(engine, ids[2]) - END(engine, ids[1]), 50);
    ck_assert_int_eq(stats.makespan, 900);
    /* The thread's items, back to back from 0. */
    ck_assert_uint_eq(tps_engine_n_host_items(engine, 0), 4);
    for (guint k = 0; k < 4; k++) {
        TpsHostItem item;
        tps_engine_host_item(engine, 0, k, &item);
        ck_assert_int_eq(item.kind, TPS_HOST_ISSUE);
        ck_assert_uint_eq(item.task, ids[k]);
        ck_assert_int_eq(item.start, issued[k] - host[k]);
        ck_assert_int_eq(item.end, issued[k]);
    }
}
END_TEST

/* Syncs stall the issue of what follows. A (1000 ns, stream 1) and C
 * (2000 ns, stream 3) are issued in 10 ns each, at 10 and 20; then a sync,
 * 5 ns of its own, then B (10 ns, stream 2, 10 ns to issue).
 *   no sync:      B issued at 30, runs [30, 40);
 *   sync on A:    A ends at 1010, +5, B issued at 1025, runs [1025, 1035);
 *   device sync:  C ends at 2020 (last launched), B issued 2035, [2035, 2045). */
static const struct {
    int sync; /* 0 none, 1 on A, 2 on the device */
    TpsTime b_start;
} sync_cases[] = {{0, 30}, {1, 1025}, {2, 2035}};

START_TEST(test_host_sync)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsStreamId s2 = tps_engine_add_stream(engine, 0, 0, "s2");
    TpsStreamId s3 = tps_engine_add_stream(engine, 0, 0, "s3");
    TpsTaskId a = add_issued(engine, "A", 0, s1, 1000, 10);
    TpsTaskId c = add_issued(engine, "C", 0, s3, 2000, 10);
    if (sync_cases[_i].sync == 1)
        tps_engine_host_sync(engine, 0, a, 5);
    else if (sync_cases[_i].sync == 2)
        tps_engine_host_sync(engine, 0, TPS_TASK_NONE, 5);
    TpsTaskId b = add_issued(engine, "B", 0, s2, 10, 10);
    run_ok(engine, NULL);
    ck_assert_int_eq(END(engine, a), 1010);
    ck_assert_int_eq(END(engine, c), 2020);
    ck_assert_int_eq(START(engine, b), sync_cases[_i].b_start);
    if (sync_cases[_i].sync == 0)
        return;
    TpsHostItem item;
    tps_engine_host_item(engine, 0, 2, &item);
    ck_assert_int_eq(item.kind, TPS_HOST_SYNC);
    ck_assert_uint_eq(item.task, sync_cases[_i].sync == 1 ? a : TPS_TASK_NONE);
    ck_assert_int_eq(item.start, 20);
    ck_assert_int_eq(item.ready, sync_cases[_i].sync == 1 ? 1010 : 2020);
    ck_assert_int_eq(item.end, item.ready + 5);
}
END_TEST

/* A sync on a task that waits for one the same thread issues only after
 * the sync can never end: a deadlock that names the blocked host. */
START_TEST(test_host_sync_deadlock)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "s");
    TpsStreamId t = tps_engine_add_stream(engine, 0, 0, "t");
    TpsTaskId first = add_issued(engine, "first", 0, s, 10, 10);
    tps_engine_host_sync(engine, 0, first, 0);
    TpsTaskId second = add_issued(engine, "second", 0, t, 10, 10);
    tps_engine_after(engine, first, second);
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_engine_run(engine, NULL, &error));
    ck_assert_ptr_nonnull(strstr(error->message, "host launch (the host waits for 'first')"));
}
END_TEST

/* Stream waits cost the host their event calls (7 ns), and a captured
 * graph costs one launch (50) for everything inside it. Four 100 ns
 * kernels on one stream with 300 ns of host time each, a stream wait
 * before the third, then one more kernel after the graph:
 *   eager: issues end at 300, 600, 907, 1207, 1507; kernels start there.
 *   graph: the four are issued at 50 and run back to back [50, 450); the
 *          last one's issue [50, 350) ends before, so it starts at 450. */
START_TEST(test_host_graph)
{
    const gboolean graph = _i == 1;
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    machine.stream_wait_ns = 7;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "s");
    TpsStreamId other = tps_engine_add_stream(engine, 0, 0, "other");
    TpsTaskId first = add_timed(engine, "first", 0, other, 1); /* not launched */
    TpsTaskId ids[5];
    if (graph)
        tps_engine_graph_begin(engine, 0, 50);
    for (guint k = 0; k < 4; k++) {
        if (k == 2)
            tps_engine_stream_wait(engine, s, first);
        ids[k] = add_issued(engine, "k", 0, s, 100, 300);
    }
    if (graph)
        tps_engine_graph_end(engine, 0);
    ids[4] = add_issued(engine, "after", 0, s, 100, 300);
    run_ok(engine, NULL);
    const TpsTime eager[5] = {300, 600, 907, 1207, 1507};
    const TpsTime graphed[5] = {50, 150, 250, 350, 450};
    const TpsTime *expect = graph ? graphed : eager;
    for (guint k = 0; k < 5; k++)
        ck_assert_int_eq(START(engine, ids[k]), expect[k]);
    /* Five issues; host-only work sits at the start of the issue after it
     * (ready - start): the graph launch before the first, the stream wait
     * before the third. */
    ck_assert_uint_eq(tps_engine_n_host_items(engine, 0), 5);
    TpsHostItem item;
    tps_engine_host_item(engine, 0, 0, &item);
    ck_assert_int_eq(item.kind, TPS_HOST_ISSUE);
    ck_assert_int_eq(item.ready - item.start, (graph ? 50 : 0));
    ck_assert_int_eq(item.end, (graph ? 50 : 300));
    tps_engine_host_item(engine, 0, 2, &item);
    ck_assert_int_eq(item.ready - item.start, (graph ? 0 : 7));
    ck_assert_int_eq(item.end, (graph ? 50 : 907));
}
END_TEST

/* ---- single hardware queue ---- */

static const struct {
    gboolean single;
    TpsTime expect_b_start;
} hwq_cases[] = {
    {FALSE, 20},  /* b launched at 20, independent of a */
    {TRUE, 1000}, /* b starts no earlier than a, which waits for `long` */
};

START_TEST(test_single_hw_queue)
{
    TpsMachine machine = machine_default();
    machine.launch_ns = 10;
    machine.single_hw_queue = hwq_cases[_i].single;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsStreamId s2 = tps_engine_add_stream(engine, 0, 0, "s2");
    TpsTaskId slow = add_timed(engine, "long", 0, s2, 1000); /* not launched */
    tps_engine_stream_wait(engine, s0, slow);
    TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                        .rank = 0,
                        .parent = TPS_TASK_NONE,
                        .launch = TRUE,
                        .floor_ns = 10};
    spec.name = "a";
    spec.stream = s0;
    TpsTaskId a = tps_engine_add(engine, &spec);
    spec.name = "b";
    spec.stream = s1;
    TpsTaskId b = tps_engine_add(engine, &spec);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, a), 1000);
    ck_assert_int_eq(START(engine, b), hwq_cases[_i].expect_b_start);
}
END_TEST

/* ---- SM sharing ---- */

static const struct {
    int comm_priority; /* GEMM stream has priority 0 */
    guint gemm_sms;
    TpsTime gemm_end;
    TpsTime comm_end;
} sm_cases[] = {
    {-1, 108, 0, 0},         /* alone: no comm kernel */
    {1, 92, 30000, 50000},   /* comm first: 216 CTAs on 92 SMs = 3 waves */
    {-2, 108, 20000, 70000}, /* comm last: gets 0 SMs until the GEMM ends */
};

START_TEST(test_sm_sharing)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId compute = tps_engine_add_stream(engine, 0, 0, "compute");
    TpsStreamId comm = tps_engine_add_stream(engine, 0, sm_cases[_i].comm_priority, "comm");
    TpsTaskId c = TPS_TASK_NONE;
    if (sm_cases[_i].comm_priority != -1) {
        TpsTaskSpec cspec = {.kind = TPS_KIND_COMM,
                             .name = "comm",
                             .rank = 0,
                             .stream = comm,
                             .parent = TPS_TASK_NONE,
                             .ctas = 16,
                             .floor_ns = 50000};
        c = tps_engine_add(engine, &cspec);
    }
    TpsTaskSpec spec = {.kind = TPS_KIND_GEMM,
                        .name = "gemm",
                        .rank = 0,
                        .stream = compute,
                        .parent = TPS_TASK_NONE,
                        .ctas = 216,
                        .wave_ns = 10000};
    TpsTaskId g = tps_engine_add(engine, &spec);
    run_ok(engine, NULL);
    ck_assert_uint_eq(tps_engine_span(engine, g)->sms, sm_cases[_i].gemm_sms);
    if (c == TPS_TASK_NONE) {
        ck_assert_int_eq(END(engine, g), 20000);
        return;
    }
    ck_assert_int_eq(END(engine, g), sm_cases[_i].gemm_end);
    ck_assert_int_eq(END(engine, c), sm_cases[_i].comm_end);
}
END_TEST

/* A kernel in its last, partial wave gives back the SMs it no longer fills:
 * K1 (150 CTAs, 10 us waves) runs a full wave on 108 SMs, then 42 CTAs;
 * K2 (60 CTAs), queued beside it with no SM until then, gets the 66 freed
 * SMs at 10 us and ends with K1 at 20 us (not at 30 us, after K1). */
START_TEST(test_sm_tail_release)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsStreamId s2 = tps_engine_add_stream(engine, 0, 0, "s2");
    TpsTaskSpec k1 = {.kind = TPS_KIND_GEMM,
                      .name = "k1",
                      .rank = 0,
                      .stream = s1,
                      .parent = TPS_TASK_NONE,
                      .ctas = 150,
                      .wave_ns = 10000};
    TpsTaskSpec k2 = {.kind = TPS_KIND_GEMM,
                      .name = "k2",
                      .rank = 0,
                      .stream = s2,
                      .parent = TPS_TASK_NONE,
                      .ctas = 60,
                      .wave_ns = 10000};
    TpsTaskId a = tps_engine_add(engine, &k1);
    TpsTaskId b = tps_engine_add(engine, &k2);
    run_ok(engine, NULL);
    ck_assert_uint_eq(tps_engine_span(engine, a)->sms, 108);
    ck_assert_uint_eq(tps_engine_span(engine, b)->sms, 0);
    ck_assert_int_eq(END(engine, a), 20000);
    ck_assert_int_eq(END(engine, b), 20000);
}
END_TEST

/* SMs are handed over CTA by CTA: K1 (96 CTAs, 47 us waves) takes 96 of
 * the 108 SMs, K2 (96 CTAs) beside it the 12 left. At 47 us K1 ends; K2
 * has run 12 CTAs and gets 96 SMs for its 84 others, one whole wave: it
 * ends at 94 us. A fluid share of its waves (7/8 of a wave left) would end
 * it at 88.125 us. */
START_TEST(test_sm_regrant)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsStreamId s2 = tps_engine_add_stream(engine, 0, 0, "s2");
    TpsTaskSpec k = {.kind = TPS_KIND_GEMM,
                     .name = "k1",
                     .rank = 0,
                     .stream = s1,
                     .parent = TPS_TASK_NONE,
                     .ctas = 96,
                     .wave_ns = 47000};
    TpsTaskId a = tps_engine_add(engine, &k);
    k.name = "k2";
    k.stream = s2;
    TpsTaskId b = tps_engine_add(engine, &k);
    run_ok(engine, NULL);
    ck_assert_uint_eq(tps_engine_span(engine, a)->sms, 96);
    ck_assert_uint_eq(tps_engine_span(engine, b)->sms, 12);
    ck_assert_int_eq(END(engine, a), 47000);
    ck_assert_int_eq(END(engine, b), 94000);
}
END_TEST

/* max_sms caps the share; the rest goes to the next task. */
START_TEST(test_sm_max)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId hi = tps_engine_add_stream(engine, 0, 1, "hi");
    TpsStreamId lo = tps_engine_add_stream(engine, 0, 0, "lo");
    TpsTaskSpec spec = {.kind = TPS_KIND_GEMM,
                        .name = "capped",
                        .rank = 0,
                        .stream = hi,
                        .parent = TPS_TASK_NONE,
                        .ctas = 200,
                        .max_sms = 50,
                        .wave_ns = 100};
    TpsTaskId capped = tps_engine_add(engine, &spec);
    spec.name = "rest";
    spec.stream = lo;
    spec.max_sms = 0;
    spec.ctas = 116;
    TpsTaskId rest = tps_engine_add(engine, &spec);
    run_ok(engine, NULL);
    ck_assert_uint_eq(tps_engine_span(engine, capped)->sms, 50);
    ck_assert_uint_eq(tps_engine_span(engine, rest)->sms, 58);
    ck_assert_int_eq(END(engine, capped), 400);
    ck_assert_int_eq(END(engine, rest), 200);
}
END_TEST

/* A task without a stream takes its container's stream priority. */
START_TEST(test_sm_priority_inherited)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId lo = tps_engine_add_stream(engine, 0, 0, "lo");
    TpsStreamId hi = tps_engine_add_stream(engine, 0, 5, "hi");
    TpsTaskSpec spec = {.kind = TPS_KIND_GEMM,
                        .name = "gemm",
                        .rank = 0,
                        .stream = lo,
                        .parent = TPS_TASK_NONE,
                        .ctas = 108,
                        .wave_ns = 1000};
    TpsTaskId g = tps_engine_add(engine, &spec);
    add_timed(engine, "delay", 0, hi, 100);
    TpsTaskSpec cont = {.kind = TPS_KIND_COMM,
                        .name = "container",
                        .rank = 0,
                        .stream = hi,
                        .parent = TPS_TASK_NONE,
                        .container = TRUE};
    TpsTaskId c = tps_engine_add(engine, &cont);
    TpsTaskSpec child = {.kind = TPS_KIND_COMM,
                         .name = "child",
                         .rank = 0,
                         .stream = TPS_STREAM_NONE,
                         .parent = c,
                         .ctas = 54,
                         .wave_ns = 1000};
    TpsTaskId k = tps_engine_add(engine, &child);
    run_ok(engine, NULL);
    /* Started later than the GEMM, yet served first: 54 of its SMs. */
    ck_assert_int_eq(START(engine, k), 100);
    ck_assert_uint_eq(tps_engine_span(engine, k)->sms, 54);
    ck_assert_int_eq(END(engine, k), 1100);
    /* The GEMM: 10% done by 100 on 108 SMs (one 1000 ns wave), then two
     * waves on 54 SMs until 1100 (+50%). Its last 40% are 43.2 CTAs' worth,
     * all in flight on the 54 SMs it kept: the SMs it gets back have no
     * CTA to run, and those in flight end at their pace, 800 ns later
     * (engine-sm.c, gain_sms; a fluid share would end it at 1500). */
    ck_assert_int_eq(END(engine, g), 1900);
}
END_TEST

/* ---- fair sharing of links ---- */

static const struct {
    const char *what;
    TpsTime floor_a; /* 0: uncapped */
    TpsTime end_a, end_b;
} fair_cases[] = {
    /* 1e6 bytes over 100 bytes/ns: 10000 alone, 20000 when two share. */
    {"equal", 0, 20000, 20000},
    /* a capped at 1/3 of the link (1e6 / 30000 ns): b gets 2/3, ends at
     * 15000; a keeps its cap after. */
    {"capped", 30000, 30000, 15000},
};

START_TEST(test_fair_sharing)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskSpec spec = {.kind = TPS_KIND_FLOW,
                        .name = "a",
                        .rank = 0,
                        .stream = s0,
                        .parent = TPS_TASK_NONE,
                        .dst_rank = 1,
                        .link_bytes = 1e6,
                        .floor_ns = fair_cases[_i].floor_a};
    TpsTaskId a = tps_engine_add(engine, &spec);
    TpsTaskId b = add_flow(engine, "b", 0, 1, s1, 1e6);
    TpsRunStats stats;
    run_ok(engine, &stats);
    ck_assert_msg(labs((long)(END(engine, a) - fair_cases[_i].end_a)) <= 1, "%s: a ends %ld",
                  fair_cases[_i].what, (long)END(engine, a));
    ck_assert_msg(labs((long)(END(engine, b) - fair_cases[_i].end_b)) <= 1, "%s: b ends %ld",
                  fair_cases[_i].what, (long)END(engine, b));
}
END_TEST

/* Flows into different receivers only share the sender's egress; flows
 * between disjoint pairs share nothing. */
START_TEST(test_link_directions)
{
    TpsMachine machine = machine_default();
    machine.ranks = 4;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskId a = add_flow(engine, "0->1", 0, 1, TPS_STREAM_NONE, 1e6);
    TpsTaskId b = add_flow(engine, "1->0", 1, 0, TPS_STREAM_NONE, 1e6);
    TpsTaskId c = add_flow(engine, "2->3", 2, 3, TPS_STREAM_NONE, 1e6);
    TpsTaskId d = add_flow(engine, "2->1", 2, 1, TPS_STREAM_NONE, 1e6);
    run_ok(engine, NULL);
    /* 0->1 and 2->1 share 1's ingress; 2->3 and 2->1 share 2's egress:
     * every flow at 50 except 1->0, which has its own links. */
    ck_assert_int_eq(END(engine, b), 10000);
    ck_assert_int_eq(END(engine, a), 20000);
    ck_assert_int_eq(END(engine, c), 20000);
    ck_assert_int_eq(END(engine, d), 20000);
}
END_TEST

/* ---- HBM sharing ---- */

START_TEST(test_hbm_sharing)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsStreamId s2 = tps_engine_add_stream(engine, 1, 0, "s2");
    TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                        .name = "small",
                        .rank = 0,
                        .stream = s0,
                        .parent = TPS_TASK_NONE,
                        .hbm_bytes = 1e6};
    TpsTaskId small = tps_engine_add(engine, &spec);
    spec.name = "big";
    spec.stream = s1;
    spec.hbm_bytes = 3e6;
    TpsTaskId big = tps_engine_add(engine, &spec);
    spec.name = "other rank";
    spec.rank = 1;
    spec.stream = s2;
    spec.hbm_bytes = 1e6;
    TpsTaskId other = tps_engine_add(engine, &spec);
    TpsRunStats stats;
    run_ok(engine, &stats);
    /* 500 bytes/ns each until small ends at 2000; big then has 2e6 left at
     * 1000 bytes/ns: ends at 4000. The other rank's HBM is its own. */
    ck_assert_int_eq(END(engine, small), 2000);
    ck_assert_int_eq(END(engine, big), 4000);
    ck_assert_int_eq(END(engine, other), 1000);
    ck_assert_uint_ge(stats.rate_updates, 2);
}
END_TEST

/* A compute-bound kernel is still bound by its share of HBM: a GEMM of one
 * wave of 1000 ns moving 8e5 bytes needs 800 bytes/ns alone; beside a
 * memory kernel that wants all of the 1000 bytes/ns, each gets 500, so the
 * GEMM takes 8e5 / 500 = 1600 ns. The memory kernel (3e6 bytes) moves 8e5
 * by then and the other 2.2e6 alone: it ends at 1600 + 2200 = 3800. */
START_TEST(test_hbm_bounds_compute)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskSpec spec = {.kind = TPS_KIND_GEMM,
                        .name = "gemm",
                        .rank = 0,
                        .stream = s0,
                        .parent = TPS_TASK_NONE,
                        .ctas = 100,
                        .wave_ns = 1000,
                        .hbm_bytes = 8e5};
    TpsTaskId g = tps_engine_add(engine, &spec);
    spec = (TpsTaskSpec){.kind = TPS_KIND_MEMORY,
                         .name = "hog",
                         .rank = 0,
                         .stream = s1,
                         .parent = TPS_TASK_NONE,
                         .hbm_bytes = 3e6};
    TpsTaskId m = tps_engine_add(engine, &spec);
    run_ok(engine, NULL);
    ck_assert_int_eq(END(engine, g), 1600);
    ck_assert_int_eq(END(engine, m), 3800);
}
END_TEST

/* A flow reads the sender's HBM and writes the receiver's: with HBM as
 * slow as the link, a memory kernel at either end halves the flow. */
START_TEST(test_hbm_link_ends)
{
    TpsMachine machine = machine_default();
    machine.hbm_gbps = 100.0;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskId f = add_flow(engine, "flow", 0, 1, TPS_STREAM_NONE, 1e6);
    TpsTaskSpec spec = {.kind = TPS_KIND_MEMORY,
                        .name = "kernel",
                        .rank = (guint)_i,
                        .stream = TPS_STREAM_NONE,
                        .parent = TPS_TASK_NONE,
                        .hbm_bytes = 1e6};
    TpsTaskId k = tps_engine_add(engine, &spec);
    run_ok(engine, NULL);
    ck_assert_int_eq(END(engine, f), 20000);
    ck_assert_int_eq(END(engine, k), 20000);
}
END_TEST

/* ---- copy engines ---- */

static const struct {
    guint engines;
    TpsTime start_b, end_b;
} ce_cases[] = {
    {1, 10000, 20000}, /* serialised */
    {2, 0, 20000},     /* concurrent, sharing the link: both end at 20000 */
};

START_TEST(test_copy_engines)
{
    TpsMachine machine = machine_default();
    machine.copy_engines = ce_cases[_i].engines;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskSpec spec = {.kind = TPS_KIND_COPY,
                        .name = "a",
                        .rank = 0,
                        .stream = s0,
                        .parent = TPS_TASK_NONE,
                        .copy_engine = TRUE,
                        .dst_rank = 1,
                        .link_bytes = 1e6};
    TpsTaskId a = tps_engine_add(engine, &spec);
    spec.name = "b";
    spec.stream = s1;
    TpsTaskId b = tps_engine_add(engine, &spec);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, a), 0);
    ck_assert_int_eq(START(engine, b), ce_cases[_i].start_b);
    ck_assert_int_eq(END(engine, b), ce_cases[_i].end_b);
}
END_TEST

/* ---- containers ---- */

START_TEST(test_container)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskSpec spec = {.kind = TPS_KIND_COMM,
                        .name = "ring",
                        .rank = 0,
                        .stream = s0,
                        .parent = TPS_TASK_NONE,
                        .container = TRUE,
                        .ctas = 108};
    TpsTaskId ring = tps_engine_add(engine, &spec);
    TpsTaskSpec child = {.kind = TPS_KIND_FLOW,
                         .name = "child1",
                         .rank = 0,
                         .stream = TPS_STREAM_NONE,
                         .parent = ring,
                         .floor_ns = 1000};
    TpsTaskId k1 = tps_engine_add(engine, &child);
    child.name = "child2";
    child.floor_ns = 3000;
    TpsTaskId k2 = tps_engine_add(engine, &child);
    /* A kernel on another stream of the same priority, started later:
     * gets no SMs while the container holds them all. */
    TpsTaskSpec gemm = {.kind = TPS_KIND_GEMM,
                        .name = "gemm",
                        .rank = 0,
                        .stream = s1,
                        .parent = TPS_TASK_NONE,
                        .ctas = 108,
                        .wave_ns = 1000};
    TpsTaskId g = tps_engine_add(engine, &gemm);
    /* An empty container ends after its fixed phase. */
    TpsTaskSpec empty = {.kind = TPS_KIND_COMM,
                         .name = "empty",
                         .rank = 0,
                         .stream = TPS_STREAM_NONE,
                         .parent = TPS_TASK_NONE,
                         .container = TRUE,
                         .fixed_ns = 77};
    TpsTaskId e = tps_engine_add(engine, &empty);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, k1), 0);
    ck_assert_int_eq(END(engine, k1), 1000);
    ck_assert_int_eq(END(engine, k2), 3000);
    ck_assert_int_eq(END(engine, ring), 3000);
    ck_assert_uint_eq(tps_engine_span(engine, ring)->sms, 108);
    ck_assert_uint_eq(tps_engine_span(engine, g)->sms, 0);
    ck_assert_int_eq(START(engine, g), 0);
    ck_assert_int_eq(END(engine, g), 4000);
    ck_assert_int_eq(END(engine, e), 77);
}
END_TEST

/* ---- cross-node flows ---- */

/* Rank 0 sends 1e6 bytes to rank 1 and to rank 2 at once. */
static const struct {
    guint gpus_per_node;
    TpsTime end_to_1, end_to_2;
} node_cases[] = {
    {4, 20000, 20000}, /* one node: both share 0's NVLink egress (100) */
    {2, 10000, 40000}, /* 0 -> 2 crosses nodes: NIC (25), egress apart */
    {1, 80000, 80000}, /* every rank its own node: both share 0's NIC */
};

START_TEST(test_cross_node)
{
    TpsMachine machine = machine_default();
    machine.ranks = 4;
    machine.gpus_per_node = node_cases[_i].gpus_per_node;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskId to1 = add_flow(engine, "0->1", 0, 1, TPS_STREAM_NONE, 1e6);
    TpsTaskId to2 = add_flow(engine, "0->2", 0, 2, TPS_STREAM_NONE, 1e6);
    run_ok(engine, NULL);
    ck_assert_int_eq(END(engine, to1), node_cases[_i].end_to_1);
    ck_assert_int_eq(END(engine, to2), node_cases[_i].end_to_2);
}
END_TEST

/* The NICs of a node are one resource: two GPUs of node 0 sending to two
 * GPUs of node 1 share it (25 bytes/ns), 1e6 bytes each: 80 us both. */
START_TEST(test_nic_per_node)
{
    TpsMachine machine = machine_default();
    machine.ranks = 4;
    machine.gpus_per_node = 2;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskId a = add_flow(engine, "0->2", 0, 2, TPS_STREAM_NONE, 1e6);
    TpsTaskId b = add_flow(engine, "1->3", 1, 3, TPS_STREAM_NONE, 1e6);
    run_ok(engine, NULL);
    ck_assert_int_eq(END(engine, a), 80000);
    ck_assert_int_eq(END(engine, b), 80000);
}
END_TEST

/* Placed ranks (TpsPlace): 24 ranks, three NVLink domains of 8, each
 * domain's NICs one pool of 200 bytes/ns held by its first rank. A TP ring
 * hop 7 -> 8 alone takes 5 us for 1e6 bytes. A DP transfer 3 -> 19
 * (another group, leaving through the same pool of domain 0) shares that
 * pool's egress: 100 each, 10 us both; one 20 -> 9 shares the ingress of
 * domain 1's pool: the same. A transfer 3 -> 4 inside domain 0 goes over
 * NVLink (100): 10 us, beside the hop, which keeps its 5 us. With a pool
 * per rank (each GPU its own NIC of 25, the rails of a DP group) the hop
 * and 3 -> 19 share nothing: 40 us each. */
static const struct {
    gboolean pool_per_rank;
    guint src, dst; /* the other flow (src == dst: none) */
    TpsTime hop, other;
} place_cases[] = {
    {FALSE, 0, 0, 5000, 0},
    {FALSE, 3, 19, 10000, 10000},
    {FALSE, 20, 9, 10000, 10000},
    {FALSE, 3, 4, 5000, 10000},
    {TRUE, 3, 19, 40000, 40000},
};

START_TEST(test_placed_groups_share_links)
{
    TpsMachine machine = machine_default();
    TpsPlace place[24];
    for (guint r = 0; r < 24; r++)
        place[r] = place_cases[_i].pool_per_rank
                       ? (TpsPlace){.domain = r / 8, .pool = r, .pool_gbps = 25.0}
                       : (TpsPlace){.domain = r / 8, .pool = r / 8 * 8, .pool_gbps = 200.0};
    machine.ranks = 24;
    machine.gpus_per_node = 24; /* not read: the placement says where ranks are */
    machine.place = place;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    /* The engine keeps its own copy. */
    memset(place, 0xff, sizeof(place));
    TpsTaskId hop = add_flow(engine, "7->8", 7, 8, TPS_STREAM_NONE, 1e6);
    TpsTaskId other = TPS_TASK_NONE;
    if (place_cases[_i].src != place_cases[_i].dst)
        other = add_flow(engine, "other", place_cases[_i].src, place_cases[_i].dst,
                         TPS_STREAM_NONE, 1e6);
    run_ok(engine, NULL);
    ck_assert_int_eq(END(engine, hop), place_cases[_i].hop);
    if (other != TPS_TASK_NONE)
        ck_assert_int_eq(END(engine, other), place_cases[_i].other);
}
END_TEST

/* ---- end_after: a kernel that spins until another task ends ---- */

/* A 1-CTA receive kernel starts at once, its own work takes 10 ns, but it
 * ends only when the remote copy (1e6 bytes over NVLink at 100: 10 us)
 * ends; meanwhile it holds its SM, so a 108-CTA kernel beside it gets 107.
 * The next task on its stream starts after it. */
START_TEST(test_end_after)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId recv = tps_engine_add_stream(engine, 1, 1, "recv");
    TpsStreamId work = tps_engine_add_stream(engine, 1, 0, "work");
    TpsTaskId copy = add_flow(engine, "copy", 0, 1, TPS_STREAM_NONE, 1e6);
    TpsTaskSpec spin = {
        .kind = TPS_KIND_COMM,
        .name = "recv",
        .rank = 1,
        .stream = recv,
        .parent = TPS_TASK_NONE,
        .ctas = 1,
        .wave_ns = 10,
    };
    TpsTaskId r = tps_engine_add(engine, &spin);
    tps_engine_end_after(engine, r, copy);
    TpsTaskId next = add_timed(engine, "next", 1, recv, 5);
    TpsTaskSpec wide = {
        .kind = TPS_KIND_GEMM,
        .name = "wide",
        .rank = 1,
        .stream = work,
        .parent = TPS_TASK_NONE,
        .ctas = 108,
        .wave_ns = 1000,
    };
    TpsTaskId w = tps_engine_add(engine, &wide);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, r), 0);
    ck_assert_int_eq(END(engine, r), 10000);
    ck_assert_int_eq(START(engine, next), 10000);
    ck_assert_uint_eq(tps_engine_span(engine, w)->sms, 107);
    /* 108 CTAs on 107 SMs: two waves. */
    ck_assert_int_eq(END(engine, w), 2000);
}
END_TEST

/* ---- stream waits are recorded ---- */

/* B follows A (10 ns) on s0 and waits for C (3 ns) on s1: ready otherwise
 * at 3, it queued 7 ns behind A. A and C queued behind nothing. */
START_TEST(test_stream_wait_recorded)
{
    TpsMachine machine = machine_default();
    machine.record_waits = TRUE;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskId a = add_timed(engine, "A", 0, s0, 10);
    TpsTaskId c = add_timed(engine, "C", 0, s1, 3);
    TpsTaskId b = add_timed(engine, "B", 0, s0, 5);
    tps_engine_after(engine, b, c);
    run_ok(engine, NULL);
    ck_assert_int_eq(START(engine, b), 10);
    ck_assert_int_eq(tps_engine_span(engine, b)->stream_wait, 7);
    ck_assert_int_eq(tps_engine_span(engine, a)->stream_wait, 0);
    ck_assert_int_eq(tps_engine_span(engine, c)->stream_wait, 0);
}
END_TEST

/* ---- deadlocks ---- */

START_TEST(test_deadlock_cycle)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsStreamId s0 = tps_engine_add_stream(engine, 0, 0, "s0");
    TpsStreamId s1 = tps_engine_add_stream(engine, 0, 0, "s1");
    TpsTaskId ok = add_timed(engine, "fine", 1, TPS_STREAM_NONE, 10);
    TpsTaskId a = add_timed(engine, "alpha", 0, s0, 10);
    TpsTaskId b = add_timed(engine, "beta", 0, s1, 10);
    add_timed(engine, "gamma", 0, s1, 10);
    tps_engine_after(engine, a, b);
    tps_engine_after_start(engine, b, a);
    g_autoptr(GError) error = NULL;
    TpsRunStats stats;
    ck_assert(!tps_engine_run(engine, &stats, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_DEADLOCK));
    ck_assert_int_eq(END(engine, ok), 10);
    ck_assert_ptr_nonnull(strstr(error->message, "3 of 4 tasks"));
    ck_assert_ptr_nonnull(
        strstr(error->message, "task 'alpha' (rank 0, stream s0) waits on: end of 'beta'"));
    ck_assert_ptr_nonnull(
        strstr(error->message, "task 'beta' (rank 0, stream s1) waits on: start of 'alpha'"));
    ck_assert_ptr_nonnull(strstr(error->message, "stream predecessor 'beta'"));
}
END_TEST

/* A child that needs SMs its container holds can never run. */
START_TEST(test_deadlock_sms)
{
    TpsMachine machine = machine_default();
    machine.ranks = 1;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskSpec spec = {.kind = TPS_KIND_COMM,
                        .name = "holder",
                        .rank = 0,
                        .stream = TPS_STREAM_NONE,
                        .parent = TPS_TASK_NONE,
                        .container = TRUE,
                        .ctas = 200};
    TpsTaskId holder = tps_engine_add(engine, &spec);
    TpsTaskSpec child = {.kind = TPS_KIND_GEMM,
                         .name = "starved",
                         .rank = 0,
                         .stream = TPS_STREAM_NONE,
                         .parent = holder,
                         .ctas = 8,
                         .wave_ns = 100};
    tps_engine_add(engine, &child);
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_engine_run(engine, NULL, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_DEADLOCK));
    ck_assert_ptr_nonnull(
        strstr(error->message, "task 'starved' (rank 0, stream none) waits on: SMs"));
    ck_assert_ptr_nonnull(strstr(error->message, "end of child 'starved'"));
}
END_TEST

START_TEST(test_deadlock_copy_engine)
{
    TpsMachine machine = machine_default();
    machine.copy_engines = 0;
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskSpec spec = {.kind = TPS_KIND_COPY,
                        .name = "copy",
                        .rank = 0,
                        .stream = TPS_STREAM_NONE,
                        .parent = TPS_TASK_NONE,
                        .copy_engine = TRUE,
                        .dst_rank = 1,
                        .link_bytes = 10};
    tps_engine_add(engine, &spec);
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_engine_run(engine, NULL, &error));
    ck_assert_ptr_nonnull(strstr(error->message, "waits on: copy engine"));
}
END_TEST

/* ---- building the graph ---- */

/* Names are interned: one copy per text, whatever buffer it came from; a
 * buffer given again with other text gives that text. 40 names, more than
 * the engine remembers by address, cycled through one buffer and then
 * given again from others, all keep their text and their one copy. */
START_TEST(test_names_interned)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskSpec spec = {.kind = TPS_KIND_MARKER, .rank = 0, .stream = TPS_STREAM_NONE,
                        .parent = TPS_TASK_NONE};
    char buf[16];
    TpsTaskId first[40];
    for (guint i = 0; i < 40; i++) {
        g_snprintf(buf, sizeof buf, "n%u", i);
        spec.name = buf;
        first[i] = tps_engine_add(engine, &spec);
    }
    for (guint round = 0; round < 2; round++)
        for (guint i = 0; i < 40; i++) {
            g_autofree char *again = g_strdup_printf("n%u", i);
            spec.name = round == 0 ? again : buf;
            if (round == 1)
                g_snprintf(buf, sizeof buf, "n%u", i);
            TpsTaskId id = tps_engine_add(engine, &spec);
            ck_assert_str_eq(tps_engine_span(engine, id)->name, again);
            ck_assert_ptr_eq(tps_engine_span(engine, id)->name,
                             tps_engine_span(engine, first[i])->name);
        }
    for (guint i = 0; i < 40; i++) {
        g_autofree char *want = g_strdup_printf("n%u", i);
        ck_assert_str_eq(tps_engine_span(engine, first[i])->name, want);
    }
    spec.name = NULL;
    ck_assert_str_eq(tps_engine_span(engine, tps_engine_add(engine, &spec))->name, "");
}
END_TEST

/* The graph's arrays grow as it is built, with or without room made
 * ahead: a chain of 1000 tasks of 10 ns on one stream, each also after
 * the one before it (two edges a task), ends at 10000 ns; a graph with no
 * task runs and ends at 0. */
START_TEST(test_graph_growth)
{
    TpsMachine machine = machine_default();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    if (_i == 1)
        tps_engine_reserve(engine, 10, 10);
    TpsStreamId s = tps_engine_add_stream(engine, 0, 0, "main");
    TpsTaskId prev = TPS_TASK_NONE;
    for (guint i = 0; i < 1000; i++) {
        TpsTaskId id = add_timed(engine, "t", 0, s, 10);
        if (prev != TPS_TASK_NONE)
            tps_engine_after(engine, id, prev);
        prev = id;
    }
    ck_assert_uint_eq(tps_engine_n_tasks(engine), 1000);
    ck_assert_uint_eq(tps_engine_n_edges(engine), 2 * 999);
    TpsRunStats stats;
    run_ok(engine, &stats);
    ck_assert_int_eq(stats.makespan, 10000);
    ck_assert_int_eq(START(engine, 999), 9990);

    g_autoptr(TpsEngine) empty = tps_engine_new(&machine);
    run_ok(empty, &stats);
    ck_assert_int_eq(stats.makespan, 0);
    ck_assert_uint_eq(stats.events, 0);
}
END_TEST

static Suite *
engine_suite(void)
{
    Suite *s = suite_create("engine");
    struct {
        const char *name;
        const TTest *test;
        int n; /* 0: a plain test */
    } cases[] = {
        {"kind-names", test_kind_names, G_N_ELEMENTS(kind_cases)},
        {"determinism", test_determinism, 0},
        {"same-time-order", test_same_time_order, 0},
        {"incremental", test_incremental_matches_reference, 8},
        {"stream-fifo", test_stream_fifo, 0},
        {"stream-wait", test_stream_wait, 0},
        {"edges", test_edges, G_N_ELEMENTS(edge_cases)},
        {"launch-queue", test_launch_queue, 0},
        {"launch-runs-ahead", test_launch_runs_ahead, 0},
        {"host-bound-gaps", test_host_bound_gaps, 0},
        {"host-sync", test_host_sync, G_N_ELEMENTS(sync_cases)},
        {"host-sync-deadlock", test_host_sync_deadlock, 0},
        {"host-graph", test_host_graph, 2},
        {"single-hw-queue", test_single_hw_queue, G_N_ELEMENTS(hwq_cases)},
        {"sm-sharing", test_sm_sharing, G_N_ELEMENTS(sm_cases)},
        {"sm-max", test_sm_max, 0},
        {"sm-tail-release", test_sm_tail_release, 0},
        {"sm-regrant", test_sm_regrant, 0},
        {"sm-priority-inherited", test_sm_priority_inherited, 0},
        {"fair-sharing", test_fair_sharing, G_N_ELEMENTS(fair_cases)},
        {"link-directions", test_link_directions, 0},
        {"hbm-sharing", test_hbm_sharing, 0},
        {"hbm-link-ends", test_hbm_link_ends, 2},
        {"hbm-bounds-compute", test_hbm_bounds_compute, 0},
        {"copy-engines", test_copy_engines, G_N_ELEMENTS(ce_cases)},
        {"container", test_container, 0},
        {"cross-node", test_cross_node, G_N_ELEMENTS(node_cases)},
        {"nic-per-node", test_nic_per_node, 0},
        {"placed-groups-share-links", test_placed_groups_share_links, G_N_ELEMENTS(place_cases)},
        {"end-after", test_end_after, 0},
        {"stream-wait-recorded", test_stream_wait_recorded, 0},
        {"deadlock-cycle", test_deadlock_cycle, 0},
        {"deadlock-sms", test_deadlock_sms, 0},
        {"deadlock-copy-engine", test_deadlock_copy_engine, 0},
        {"names-interned", test_names_interned, 0},
        {"graph-growth", test_graph_growth, 2},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        TCase *tc = tcase_create(cases[i].name);
        if (cases[i].n > 0)
            tcase_add_loop_test(tc, cases[i].test, 0, cases[i].n);
        else
            tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

int
main(void)
{
    return tps_test_run(engine_suite());
}
