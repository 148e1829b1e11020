/* NCCL's copy-engine all-gather (cost/collective-ce.h, sched/builder-ce.c):
 * where it applies, its closed form against hand arithmetic, the engine's
 * run of it (its time, the SMs a GEMM beside it keeps, the bytes it
 * copies), and the inputs refused with their location. */
#include <check.h>

#include "test-util.h"
#include <stdio.h>
#include <string.h>

#include "cost/collective-ce.h"
#include "cost/kernel-cost.h"
#include "io/input/model-file.h"
#include "io/input/scenario-file.h"
#include "sched/builder.h"

#define MB 1e6

/* Round numbers: 4 copy engines of 200 GB/s, NVLink 300 GB/s x 0.8 = 240
 * GB/s of payload, no NVLS (flags to every peer), 2 us per flag copy. */
static void
fixture(TpsHardware *hw)
{
    *hw = (TpsHardware){
        .sms = 100,
        .copy_engines = 4,
        .gpus_per_node = 8,
        .nvlink_domain_gpus = 8,
        .nvlink_gbps = 300,
        .nvlink_efficiency = 0.8,
        .copy_engine_gbps = 200,
        .nccl_ce_collectives = 1,
        .nccl_ce_op_latency_us = 2.0,
        .host_nccl_us = 10.0,
        .host_launch_us = 3.0,
    };
}

static const struct {
    const char *what;
    guint ranks, engines;
    gboolean nvls, graph;
    double bytes;
    TpsTime copy_ns, total_ns;
    guint host_calls;
} plans[] = {
    /* 4 ranks, 96 MB: shards of 24 MB. All 4 copies at once: the 3 peer
     * copies share 240 GB/s (80 each, under 200), 24e6 / 80 = 300 us; the
     * local copy at 200: 120 us. Syncs: 3 flags x 2 us = 6 us, twice. Host:
     * 2 syncs x (write + 3 flags + wait) + 1 batch = 11 calls. */
    {"all at once", 4, 4, FALSE, FALSE, 96 * MB, 300000, 312000, 11},
    /* One engine: local 120 us, then each peer alone at min(200, 240) =
     * 200: 3 x 120 us; 480 us. */
    {"one engine", 4, 1, FALSE, FALSE, 96 * MB, 480000, 492000, 11},
    /* Two: local and peer 1 at 200 each, done at 120 us; then peers 2 and
     * 3 share 240 (120 each): 24e6 / 120 = 200 us; 320 us. */
    {"two engines", 4, 2, FALSE, FALSE, 96 * MB, 320000, 332000, 11},
    /* NVLS: one flag copy to the multicast address per sync: 2 x 2 us;
     * 2 x (write + flag + wait) + 1 = 7 calls. */
    {"nvls sync", 4, 4, TRUE, FALSE, 96 * MB, 300000, 304000, 7},
    /* In a graph: the copies one after the other (as one engine: 480 us);
     * 2 x 5 + 4 copies = 14 calls. */
    {"graph", 4, 4, FALSE, TRUE, 96 * MB, 480000, 492000, 14},
    /* 16 ranks of 1 GB in a graph: 16 copies of 62.5 MB (> 8, >= 512 MiB):
     * a sync after the 8th copy, and one more since ceil(16/8) = 2 is even:
     * 4 syncs of 15 flags x 2 us = 120 us. Copies: local 62.5e6 / 200 =
     * 312.5 us, 15 peers at 200: 4687.5 us; 5000 us. Calls: 4 x 17 + 16. */
    {"graph intra-batch", 16, 4, FALSE, TRUE, 1000 * MB, 5000000, 5120000, 84},
    /* Outside a graph the batch is not cut by syncs: 4 engines, first
     * {local, p1, p2, p3}: peers at 240/3 = 80 until the local copy ends
     * at 62.5e6/200 = 312.5 us (peers then 25e6 in), p4 joins: 4 peers at
     * 60 ... the replay's sum; here only the syncs are hand-checked: 2 x
     * 30 us (total - copies). */
    {"16 ranks batch", 16, 4, FALSE, FALSE, 1000 * MB, 0, 0, 2 * 17 + 1},
};

START_TEST(test_plan)
{
    TpsHardware hw;
    TpsCeCollPlan p;
    fixture(&hw);
    hw.copy_engines = plans[_i].engines;
    hw.nccl_nvls = plans[_i].nvls;
    tps_ce_coll_plan(&hw, plans[_i].bytes, plans[_i].ranks, plans[_i].graph, &p);
    const TpsTime copy = tps_ce_coll_copy_ns(&p), total = tps_ce_coll_time_ns(&p);
    printf("# %s: copies %.3f us, total %.3f us, %u calls\n", plans[_i].what, copy / 1e3,
           total / 1e3, p.host_calls);
    if (plans[_i].copy_ns > 0) {
        ck_assert_int_eq(copy, plans[_i].copy_ns);
        ck_assert_int_eq(total, plans[_i].total_ns);
    } else {
        ck_assert_int_eq(total - copy, 60000);
        /* At least the link bound: 15 x 62.5e6 / 240 = 3906.25 us. */
        ck_assert_int_ge(copy, 3906250);
    }
    ck_assert_uint_eq(p.host_calls, plans[_i].host_calls);
    /* Host: host.nccl_us and a launch per further call. */
    ck_assert_int_eq(tps_ce_coll_host_ns(&hw, &p),
                     tps_time_from_us(10.0 + 3.0 * (plans[_i].host_calls - 1)));
}
END_TEST

/* All-gathers on one NVLink domain only; never a reduce-scatter or an
 * all-reduce (a copy engine cannot add); off without the key or without
 * copy engines. */
START_TEST(test_applies)
{
    TpsHardware hw;
    fixture(&hw);
    const TpsGroupShape one = {.ranks = 8, .domains = 1, .per_domain = 8, .leaves = 1};
    const TpsGroupShape two = {
        .ranks = 16, .domains = 2, .per_domain = 8, .leaves = 1, .crosses = TRUE};
    const TpsGroupShape alone = {.ranks = 1, .domains = 1, .per_domain = 1, .leaves = 1};
    ck_assert(tps_ce_coll_applies(&hw, TPS_COLL_ALL_GATHER, &one));
    ck_assert(!tps_ce_coll_applies(&hw, TPS_COLL_REDUCE_SCATTER, &one));
    ck_assert(!tps_ce_coll_applies(&hw, TPS_COLL_ALL_REDUCE, &one));
    ck_assert(!tps_ce_coll_applies(&hw, TPS_COLL_ALL_GATHER, &two));
    ck_assert(!tps_ce_coll_applies(&hw, TPS_COLL_ALL_GATHER, &alone));
    hw.nccl_ce_collectives = 0;
    ck_assert(!tps_ce_coll_applies(&hw, TPS_COLL_ALL_GATHER, &one));
    hw.nccl_ce_collectives = 1;
    hw.copy_engines = 0;
    ck_assert(!tps_ce_coll_applies(&hw, TPS_COLL_ALL_GATHER, &one));
}
END_TEST

/* An op scenario of `tp` ranks on `model` (h100-sxm: scenario()) with the
 * fixture's link and copy engines, the host ideal (GPU time alone). */
static void
scenario_on(TpsScenario *sc, const char *model, guint tp, gboolean ce)
{
    GError *error = NULL;
    tps_scenario_init(sc);
    sc->name = g_strdup("ce");
    sc->is_op = TRUE;
    sc->tp = tp;
    sc->sp = TRUE;
    sc->dtype = TPS_DTYPE_BF16;
    ck_assert_msg(tps_model_file_resolve(model, NULL, &sc->hardware, &error), "%s",
                  error ? error->message : "");
    TpsHardware f;
    fixture(&f);
    TpsHardware *hw = &sc->hardware;
    hw->copy_engines = f.copy_engines;
    hw->nvlink_gbps = f.nvlink_gbps;
    hw->nvlink_efficiency = f.nvlink_efficiency;
    hw->copy_engine_gbps = f.copy_engine_gbps;
    hw->nccl_nvls = 0;
    hw->nccl_ce_op_latency_us = f.nccl_ce_op_latency_us;
    hw->nccl_ce_collectives = ce;
    tps_hardware_ideal_host(hw);
}

static void
scenario(TpsScenario *sc, guint tp, gboolean ce)
{
    scenario_on(sc, "h100-sxm", tp, ce);
}

/* The CE all-gather alone on the engine: the plan's time ("all at
 * once" above: 312 us), its copies' bytes the gathered buffer, and no
 * task of it holding an SM. */
START_TEST(test_engine_alone)
{
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    TpsRunStats stats;
    GError *error = NULL;
    scenario(&sc, 4, TRUE);
    tps_builder_init_queues(&b, &sc, TPS_STRATEGY_CUSTOM, FALSE);
    tps_builder_collective(&b, b.side, TPS_COLL_ALL_GATHER, 96 * MB, "ag", NULL);
    ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");
    ck_assert_int_eq(stats.makespan, 312000);
    double copied = 0.0;
    guint copies = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        ck_assert_uint_eq(sp->sms, 0);
        if (sp->rank == 0 && strcmp(sp->name, "ag.copy") == 0) {
            copied += sp->bytes;
            copies++;
        }
    }
    ck_assert_uint_eq(copies, 4);
    ck_assert_double_eq_tol(copied, 96 * MB, 1e-3);
    tps_builder_clear(&b);
}
END_TEST

/* A GEMM beside an all-gather on the side stream: beside the CE one it
 * keeps every SM of the GPU from its start to its end, and takes as long
 * as alone (an 8192^3 GEMM is compute-bound: the copies' HBM traffic does
 * not slow it); beside NCCL's ring it starts with what the channels leave
 * (h100-sxm: sms - channels at full size) and takes longer. */
START_TEST(test_gemm_keeps_sms)
{
    TpsTime took[3];
    for (int mode = 0; mode < 3; mode++) { /* 0: alone; 1: ring; 2: CE */
        g_auto(TpsScenario) sc = {0};
        TpsBuilder b;
        TpsRunStats stats;
        TpsOpIds gemm;
        GError *error = NULL;
        scenario(&sc, 8, mode == 2);
        tps_builder_init_queues(&b, &sc, TPS_STRATEGY_CUSTOM, FALSE);
        if (mode > 0)
            tps_builder_collective(&b, b.side, TPS_COLL_ALL_GATHER, 512 * MB, "ag", NULL);
        tps_builder_gemm(&b, b.main, "gemm", 8192, 8192, 8192, 0, &gemm);
        ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");
        const TpsSpan *sp = tps_engine_span(b.engine, gemm.id[0]);
        const guint channels = tps_coll_channels(&sc.hardware, NULL);
        took[mode] = sp->end - sp->start;
        printf("# gemm %s: %u SMs of %u at its start, %.3f us\n",
               (const char *[]){"alone", "beside the ring all-gather",
                                "beside the CE all-gather"}[mode],
               sp->sms, sc.hardware.sms, took[mode] / 1e3);
        ck_assert_uint_eq(sp->sms, mode == 1 ? sc.hardware.sms - channels : sc.hardware.sms);
        tps_builder_clear(&b);
    }
    ck_assert_int_eq(took[2], took[0]);
    ck_assert_int_gt(took[1], took[0]);
}
END_TEST

/* With one hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1, as Megatron's
 * SP needs) the all-gather's stream-memory waits block the queue: a GEMM
 * launched after it on another stream starts when its last wait is met,
 * at its end (312 us, "all at once"); with several queues at once
 * (NVIDIA/nccl issue #2238). */
START_TEST(test_one_queue_serialises)
{
    for (int one = 0; one <= 1; one++) {
        g_auto(TpsScenario) sc = {0};
        TpsBuilder b;
        TpsRunStats stats;
        TpsOpIds gemm;
        GError *error = NULL;
        scenario(&sc, 4, TRUE);
        tps_builder_init_queues(&b, &sc, TPS_STRATEGY_CUSTOM, one);
        tps_builder_collective(&b, b.side, TPS_COLL_ALL_GATHER, 96 * MB, "ag", NULL);
        tps_builder_gemm(&b, b.main, "gemm", 4096, 4096, 4096, 0, &gemm);
        ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");
        ck_assert_int_eq(tps_engine_span(b.engine, gemm.id[0])->start, one ? 312000 : 0);
        tps_builder_clear(&b);
    }
}
END_TEST

/* Inside a captured graph the copies follow one another on the stream:
 * "graph" above, 492 us. */
START_TEST(test_engine_graph)
{
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    TpsRunStats stats;
    GError *error = NULL;
    scenario(&sc, 4, TRUE);
    tps_builder_init_queues(&b, &sc, TPS_STRATEGY_CUSTOM, FALSE);
    tps_builder_graph_begin(&b);
    tps_builder_collective(&b, b.side, TPS_COLL_ALL_GATHER, 96 * MB, "ag", NULL);
    tps_builder_graph_end(&b);
    ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");
    /* The graph's launch (ideal host: 0) and the plan's 492 us. */
    ck_assert_int_eq(stats.makespan, 492000);
    tps_builder_clear(&b);
}
END_TEST

/* 16 ranks of one NVLink domain (gb200-nvl72's rack) in a graph, 1 GB:
 * NCCL's intra-batch synchronisations after the 8th copy and once more,
 * "graph intra-batch" above: 5120 us. */
START_TEST(test_engine_graph_intra_batch)
{
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    TpsRunStats stats;
    GError *error = NULL;
    scenario_on(&sc, "gb200-nvl72", 16, TRUE);
    tps_builder_init_queues(&b, &sc, TPS_STRATEGY_CUSTOM, FALSE);
    ck_assert_uint_eq(b.tp_shape.domains, 1);
    tps_builder_graph_begin(&b);
    tps_builder_collective(&b, b.side, TPS_COLL_ALL_GATHER, 1000 * MB, "ag", NULL);
    tps_builder_graph_end(&b);
    ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");
    ck_assert_int_eq(stats.makespan, 5120000);
    guint syncs = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        syncs +=
            sp->rank == 0 && sp->kind == TPS_KIND_COPY && g_str_has_prefix(sp->name, "ag.") &&
            (g_str_has_suffix(sp->name, "ce_ready") || g_str_has_suffix(sp->name, "batch_sync") ||
             g_str_has_suffix(sp->name, "ce_complete"));
    }
    ck_assert_uint_eq(syncs, 4);
    tps_builder_clear(&b);
}
END_TEST

/* The closed form the DP and expert collectives take: the CE all-gather
 * on one NVLink domain ("all at once": 312 us, no kernel launch), NCCL's
 * kernel with its launch otherwise. */
START_TEST(test_group_ns)
{
    TpsHardware hw;
    fixture(&hw);
    const TpsGroupShape one = {.ranks = 4, .domains = 1, .per_domain = 4, .leaves = 1};
    ck_assert_int_eq(tps_coll_group_ns(&hw, TPS_COLL_ALL_GATHER, 96 * MB, &one), 312000);
    g_auto(TpsScenario) sc = {0};
    scenario(&sc, 4, TRUE);
    TpsCollPlan plan;
    tps_coll_plan_group(&sc.hardware, TPS_COLL_REDUCE_SCATTER, 96 * MB, &one, &plan);
    ck_assert_int_eq(tps_coll_group_ns(&sc.hardware, TPS_COLL_REDUCE_SCATTER, 96 * MB, &one),
                     tps_cost_launch_ns(&sc.hardware) + tps_coll_time_ns(&sc.hardware, &plan));
}
END_TEST

/* A reduce-scatter keeps NCCL's kernel with the key set: its channels'
 * SMs. */
START_TEST(test_reduce_scatter_keeps_kernel)
{
    g_auto(TpsScenario) sc = {0};
    TpsBuilder b;
    TpsRunStats stats;
    TpsOpIds rs;
    GError *error = NULL;
    scenario(&sc, 8, TRUE);
    tps_builder_init_queues(&b, &sc, TPS_STRATEGY_CUSTOM, FALSE);
    tps_builder_collective(&b, b.side, TPS_COLL_REDUCE_SCATTER, 64 * MB, "rs", &rs);
    ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");
    const TpsSpan *sp = tps_engine_span(b.engine, rs.id[0]);
    ck_assert_int_eq(sp->kind, TPS_KIND_COMM);
    ck_assert_uint_eq(sp->sms, tps_coll_channels(&sc.hardware, NULL));
    tps_builder_clear(&b);
}
END_TEST

/* Refused with their location: the key set on a model without copy
 * engines (at the key), and a value other than 0 or 1. */
static const struct {
    const char *text, *message;
} refused[] = {
    {"name: t\n"
     "hardware:\n"
     "  base: h100-sxm\n"
     "  gpu: {copy_engines: 0}\n"
     "  nccl:\n"
     "    ce_collectives: 1\n"
     "op: {kind: ag_gemm, m: 8192, n: 8192, k: 8192}\n"
     "parallel: {tp: 8}\n",
     "t:6:21: nccl.ce_collectives is 1 but gpu.copy_engines is 0: NCCL's copy-engine all-gather "
     "needs copy engines"},
    {"name: t\n"
     "hardware: {base: h100-sxm, nccl: {ce_collectives: 2}}\n"
     "op: {kind: ag_gemm, m: 8192, n: 8192, k: 8192}\n"
     "parallel: {tp: 8}\n",
     "t:2:51: 'nccl.ce_collectives' is 2, out of range [0, 1]"},
};

START_TEST(test_refused)
{
    g_auto(TpsScenario) sc = {0};
    GError *error = NULL;
    ck_assert(!tps_scenario_file_load_string("t", refused[_i].text, -1, &sc, &error));
    ck_assert_ptr_nonnull(error);
    printf("# %s\n", error->message);
    ck_assert_msg(g_str_has_prefix(error->message, refused[_i].message), "%s", error->message);
    g_error_free(error);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("collective-ce");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_plan, 0, G_N_ELEMENTS(plans));
    tcase_add_test(tc, test_applies);
    tcase_add_test(tc, test_engine_alone);
    tcase_add_test(tc, test_gemm_keeps_sms);
    tcase_add_test(tc, test_one_queue_serialises);
    tcase_add_test(tc, test_engine_graph);
    tcase_add_test(tc, test_engine_graph_intra_batch);
    tcase_add_test(tc, test_group_ns);
    tcase_add_test(tc, test_reduce_scatter_keeps_kernel);
    tcase_add_loop_test(tc, test_refused, 0, G_N_ELEMENTS(refused));
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(suite());
}
