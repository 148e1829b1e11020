/* sched: layer graphs, presets, composition of the results.
 *
 * Expected values are derived here independently from the cost API and
 * Megatron's shapes, not read back from the graphs under test. */
#include <check.h>

#include "scenario-util.h"
#include "test-util.h"
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/kernel-cost.h"
#include "io/output/result-writer.h"
#include "io/input/scenario-file.h"
#include "sched/layer.h"
#include "sched/pipeline.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* Diagnostics on stderr with TPSIM_TEST_VERBOSE set (the TAP stream is on
 * stdout). */
#define note(...)                                                                                  \
    do {                                                                                           \
        if (g_getenv("TPSIM_TEST_VERBOSE"))                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
    } while (0)

static const TpsStrategy *
preset(const char *name)
{
    const TpsStrategy *s = tps_strategy_lookup(name);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* ---- graph shape: every GEMM once per rank, analytic volumes ---- */

typedef struct {
    const char *scenario;
    const char *strategy;
    guint ag, rs, ar; /* collectives per layer, forward + backward */
} VolumeCase;

static const VolumeCase volume_cases[] = {
    {"gpt3-175b-tp8.yaml", "sp-blocking", 6, 4, 0},
    {"gpt3-175b-tp8.yaml", "megatron", 6, 4, 0},
    {"gpt3-175b-tp8-nosp.yaml", "tp-allreduce", 0, 0, 4},
};

START_TEST(test_layer_volume)
{
    const VolumeCase *c = &volume_cases[_i];
    TpsScenario sc;
    TpsBuilder b;
    TpsRunStats stats;
    tps_test_load_scenario(c->scenario, &sc);
    tps_builder_init(&b, &sc, preset(c->strategy)->id);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert_uint_eq(b.coll_count[TPS_COLL_ALL_GATHER], c->ag);
    ck_assert_uint_eq(b.coll_count[TPS_COLL_REDUCE_SCATTER], c->rs);
    ck_assert_uint_eq(b.coll_count[TPS_COLL_ALL_REDUCE], c->ar);
    const double bsh = (double)sc.micro_batch * sc.seq_len * sc.hidden * 2.0;
    ck_assert_double_eq_tol(b.coll_bytes[TPS_COLL_ALL_GATHER], c->ag * bsh, 1.0);
    ck_assert_double_eq_tol(b.coll_bytes[TPS_COLL_REDUCE_SCATTER], c->rs * bsh, 1.0);
    ck_assert_double_eq_tol(b.coll_bytes[TPS_COLL_ALL_REDUCE], c->ar * bsh, 1.0);

    /* Acyclic and complete: the run finishes (a cycle is a deadlock). */
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_engine_run(b.engine, &stats, &error), "%s", error ? error->message : "");

    /* Each of the 12 GEMMs (4 forward, 4 dgrad, 4 wgrad) once per rank, and
     * the payload each rank sent over its links: (n-1)/n of every AG/RS
     * buffer, 2(n-1)/n of every all-reduce. */
    const double n = sc.tp;
    const double expect_sent = (c->ag + c->rs) * bsh * (n - 1) / n + c->ar * bsh * 2 * (n - 1) / n;
    for (guint r = 0; r < sc.tp; r++) {
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
        double sent = 0.0;
        for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
            const TpsSpan *sp = tps_engine_span(b.engine, id);
            if (sp->rank != r)
                continue;
            ck_assert_msg(sp->end >= sp->start, "task %s ends before it starts", sp->name);
            if (sp->kind == TPS_KIND_GEMM) {
                ck_assert_msg(!g_hash_table_contains(seen, sp->name), "GEMM %s twice", sp->name);
                g_hash_table_add(seen, (gpointer)sp->name);
            }
            if (sp->kind == TPS_KIND_FLOW)
                sent += sp->bytes;
        }
        ck_assert_uint_eq(g_hash_table_size(seen), 12);
        ck_assert_double_eq_tol(sent, expect_sent, expect_sent * 1e-9);
    }
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- a lone collective equals the ring formula ---- */

typedef struct {
    TpsCollKind kind;
    double bytes;
} CollCase;

static const CollCase coll_cases[] = {
    {TPS_COLL_ALL_GATHER, 4096},     {TPS_COLL_ALL_GATHER, 1 << 20},
    {TPS_COLL_ALL_GATHER, 50331648}, {TPS_COLL_REDUCE_SCATTER, 50331648},
    {TPS_COLL_ALL_REDUCE, 1 << 20},  {TPS_COLL_ALL_REDUCE, 1073741824.0},
};

START_TEST(test_lone_collective)
{
    const CollCase *c = &coll_cases[_i];
    TpsScenario sc;
    TpsBuilder b;
    TpsRunStats stats;
    TpsCollPlan plan;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    tps_builder_init(&b, &sc, TPS_STRATEGY_SP_BLOCKING);
    tps_builder_collective(&b, b.main, c->kind, c->bytes, "lone", NULL);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    tps_coll_plan(&sc.hardware, c->kind, c->bytes, sc.tp, &plan);
    /* The kernels start once the host has issued the NCCL call. */
    TpsTime expect =
        tps_time_from_us(sc.hardware.host_nccl_us) + tps_coll_time_ns(&sc.hardware, &plan);
    /* Each step rounds its duration up to whole nanoseconds. */
    ck_assert_msg(llabs(stats.makespan - expect) <= (gint64)plan.steps + 1,
                  "engine %" G_GINT64_FORMAT " ns, formula %" G_GINT64_FORMAT " ns", stats.makespan,
                  expect);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- sp-blocking forward on idle resources = the sum of its parts ---- */

/* A host that costs nothing: every kernel may start as soon as the GPU
 * lets it (the GPU-side sums below). */
static void
ideal_host(TpsScenario *sc)
{
    TpsHardware *hw = &sc->hardware;
    tps_hardware_ideal_host(hw);
}

static TpsTime
solo_gemm(const TpsHardware *hw, TpsDtype dt, guint64 m, guint64 n, guint64 k)
{
    TpsKernelCost cost;
    tps_cost_gemm(hw, dt, m, n, k, 0, &cost);
    return tps_kernel_cost_solo_ns(hw, &cost, hw->sms);
}

static TpsTime
solo_memory(const TpsHardware *hw, double bytes)
{
    TpsKernelCost cost;
    tps_cost_memory(hw, bytes, &cost);
    return tps_kernel_cost_solo_ns(hw, &cost, hw->sms);
}

static TpsTime
solo_coll(const TpsHardware *hw, TpsCollKind kind, double bytes, guint n)
{
    TpsCollPlan plan;
    tps_coll_plan(hw, kind, bytes, n, &plan);
    return tps_coll_time_ns(hw, &plan);
}

START_TEST(test_blocking_forward_sum)
{
    TpsScenario sc;
    TpsBuilder b;
    TpsRunStats stats;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    ideal_host(&sc);
    const TpsHardware *hw = &sc.hardware;
    const guint64 t = sc.tp, T = sc.micro_batch * sc.seq_len, h = sc.hidden, f = sc.ffn_hidden;
    const double e = 2.0, Tl = (double)T / t, full = (double)T * h * e;
    const double x = (double)T * (h / t) * e; /* one of Q, K, V, O on this rank */

    TpsKernelCost attn;
    tps_cost_flash_attention(hw, sc.dtype, sc.micro_batch, sc.heads / t, sc.seq_len, h / sc.heads,
                             FALSE, &attn);
    TpsTime expect = 0;
    expect += solo_memory(hw, 2 * Tl * h * e);                        /* LN1 */
    expect += solo_coll(hw, TPS_COLL_ALL_GATHER, full, (guint)t);     /* AG */
    expect += solo_gemm(hw, sc.dtype, T, 3 * h / t, h);               /* QKV */
    expect += 3 * solo_memory(hw, 2 * x);                             /* Q, K, V to [b, s] */
    expect += tps_kernel_cost_solo_ns(hw, &attn, hw->sms);            /* attention */
    expect += solo_memory(hw, 2 * x);                                 /* output to [s, b] */
    expect += solo_gemm(hw, sc.dtype, T, h, h / t);                   /* proj */
    expect += solo_coll(hw, TPS_COLL_REDUCE_SCATTER, full, (guint)t); /* RS */
    expect += solo_memory(hw, (3 * e + 1) * Tl * h);                  /* bias-dropout-add */
    expect += solo_memory(hw, 2 * Tl * h * e);                        /* LN2 */
    expect += solo_coll(hw, TPS_COLL_ALL_GATHER, full, (guint)t);     /* AG */
    expect += solo_gemm(hw, sc.dtype, T, f / t, h);                   /* FC1 */
    expect += solo_memory(hw, 2 * e * T * (f / t));                   /* GeLU */
    expect += solo_gemm(hw, sc.dtype, T, h, f / t);                   /* FC2 */
    expect += solo_coll(hw, TPS_COLL_REDUCE_SCATTER, full, (guint)t); /* RS */
    expect += solo_memory(hw, (3 * e + 1) * Tl * h);                  /* bias-dropout-add */

    tps_builder_init(&b, &sc, TPS_STRATEGY_SP_BLOCKING);
    tps_layer_forward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    /* Rounding: one ns per kernel and per collective step at most. */
    ck_assert_msg(llabs(stats.makespan - expect) <= 64,
                  "forward %" G_GINT64_FORMAT " ns, sum of parts %" G_GINT64_FORMAT " ns",
                  stats.makespan, expect);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- presets ---- */

/* A run whose nccl.algo leaves a call no algorithm: Tree alone on a TP 8
 * SP layer (its all-gathers and reduce-scatters have no Tree) fails as
 * NCCL 2.24 fails the call, at the key's position in the scenario (line
 * 2, the value at column 47); NCCL 2.21 runs the ring instead, and a
 * per-function list giving the all-gather and reduce-scatter the ring
 * runs on the default constants. */
static const struct {
    const char *nccl;
    gboolean ok;
} forced_runs[] = {
    {"{algo: Tree}", FALSE},
    {"{algo: Tree, version: \"2.21\"}", TRUE},
    {"{algo: \"AllReduce:Tree;AllGather:Ring;ReduceScatter:Ring\"}", TRUE},
};

START_TEST(test_forced_algorithm_run)
{
    g_autofree char *text = g_strdup_printf(
        "name: forced\n"
        "hardware: {base: a100-sxm4-80gb, nccl: %s}\n"
        "model: {hidden: 1024, heads: 8, layers: 2, seq_len: 1024}\n"
        "training: {micro_batch: 1, global_batch: 1}\nparallel: {tp: 8, sp: true}\n",
        forced_runs[_i].nccl);
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("f.yaml", text, -1, &sc, &error), "%s",
                  error ? error->message : "");
    TpsResult r;
    ck_assert_int_eq(tps_simulate(&sc, preset("megatron"), &r, &error), forced_runs[_i].ok);
    if (!forced_runs[_i].ok)
        ck_assert_msg(g_str_has_prefix(error->message,
                                       "f.yaml:2:47: nccl.algo 'Tree' leaves NCCL no algorithm "
                                       "for the AllGather of 8 ranks in one NVLink domain"),
                      "%s", error->message);
}
END_TEST

static const char *const sp_scenarios[] = {"gpt3-175b-tp8.yaml", "gpt-22b-tp8.yaml",
                                           "llama2-70b-tp8.yaml", "gpt3-175b-tp4-unfused.yaml"};

START_TEST(test_megatron_not_slower)
{
    TpsScenario sc;
    TpsResult blocking, megatron;
    g_autoptr(GError) error = NULL;
    tps_test_load_scenario(sp_scenarios[_i], &sc);
    ck_assert(tps_simulate(&sc, preset("sp-blocking"), &blocking, &error));
    ck_assert(tps_simulate(&sc, preset("megatron"), &megatron, &error));
    /* Same forward; backward hides AG under dgrad and RS under wgrad. */
    ck_assert_double_eq_tol(megatron.forward_ms, blocking.forward_ms, 1e-9);
    ck_assert_msg(megatron.backward_ms < blocking.backward_ms, "%s: megatron %f >= blocking %f",
                  sp_scenarios[_i], megatron.backward_ms, blocking.backward_ms);
    ck_assert(megatron.exposed_comm_ms < blocking.exposed_comm_ms);
    ck_assert(megatron.step_time_s <= blocking.step_time_s);
    /* Blocking exposes all of its communication. */
    ck_assert_double_eq_tol(blocking.exposed_comm_ms, blocking.tp_comm_ms, 1e-6);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_megatron_comm_takes_sms)
{
    /* The overlapped dgrad runs beside NCCL's channels: it holds fewer SMs
     * than the GPU has, and is slower than alone. */
    TpsScenario sc;
    TpsBuilder b;
    TpsRunStats stats;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    tps_builder_init(&b, &sc, TPS_STRATEGY_MEGATRON);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    gboolean found = FALSE;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        if (sp->rank == 0 && strcmp(sp->name, "l0.fc1_dgrad") == 0) {
            found = TRUE;
            ck_assert_uint_lt(sp->sms, sc.hardware.sms);
            TpsTime alone = solo_gemm(&sc.hardware, sc.dtype, sc.micro_batch * sc.seq_len,
                                      sc.hidden, sc.ffn_hidden / sc.tp);
            ck_assert_int_gt(sp->end - sp->start, alone);
        }
    }
    ck_assert(found);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* A ring moves about three times its link rate through HBM. A memory-bound
 * kernel beside a lone 384 MiB all-gather on 8 A100s: the flows, capped by
 * their channels (Simple: 24 x 9.689 GB/s), never reach their HBM share, so
 * the kernel gets what they leave, and it ends when HBM has moved its own
 * bytes and every byte the ring moved through rank 0's HBM while they ran
 * together. Per rank the all-gather moves, in 48 MiB chunks, 7 received
 * chunks into the FIFO and back out (14) plus its own chunk read and 8
 * chunks written to its output (9): 23 x 48 MiB = 1104 MiB. With a host
 * that issues at no cost both start at 0; the kernel outlasts the ring. */
START_TEST(test_collective_hbm)
{
    TpsScenario sc;
    TpsBuilder b;
    TpsRunStats stats;
    TpsOpIds kernel;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    ideal_host(&sc);
    tps_builder_init(&b, &sc, TPS_STRATEGY_SP_BLOCKING);
    tps_builder_collective(&b, b.main, TPS_COLL_ALL_GATHER, 384.0 * 1048576, "ag", NULL);
    const double bytes = 4e9;
    tps_builder_memory(&b, b.gemm[0], "stream", bytes, &kernel);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    const TpsSpan *sp = tps_engine_span(b.engine, kernel.id[0]);
    const double hbm = 2039 * 0.90;
    const double expect = (bytes + 1104.0 * 1048576) / hbm;
    ck_assert_msg(fabs((double)sp->end - expect) < 1e-3 * expect,
                  "kernel ends at %" G_GINT64_FORMAT " ns, expected %.0f", sp->end, expect);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_determinism)
{
    TpsScenario sc;
    TpsResult r1[2], r2[2];
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    for (int i = 0; i < 2; i++) {
        const TpsStrategy *s = preset(i ? "megatron" : "sp-blocking");
        ck_assert(tps_simulate(&sc, s, &r1[i], NULL));
        ck_assert(tps_simulate(&sc, s, &r2[i], NULL));
    }
    g_autofree char *a = tps_result_format(&sc, r1, 2, TPS_FORMAT_JSON, TRUE);
    g_autofree char *b = tps_result_format(&sc, r2, 2, TPS_FORMAT_JSON, TRUE);
    ck_assert_str_eq(a, b);
    ck_assert_uint_eq(r1[1].stats.events, r2[1].stats.events);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_strategy_select)
{
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    const char *const ok[] = {"megatron", "sp-blocking", "megatron", NULL};
    g_autofree const TpsStrategy **got = tps_strategy_select(&sc, ok, &error);
    ck_assert_ptr_nonnull(got);
    ck_assert_str_eq(got[0]->name, "megatron");
    ck_assert_str_eq(got[1]->name, "sp-blocking");
    ck_assert_ptr_null(got[2]);

    const char *const typo[] = {"megatorn", NULL};
    ck_assert_ptr_null(tps_strategy_select(&sc, typo, &error));
    ck_assert(strstr(error->message, "did you mean 'megatron'"));
    g_clear_error(&error);
    const char *const nosp[] = {"tp-allreduce", NULL};
    ck_assert_ptr_null(tps_strategy_select(&sc, nosp, &error));
    ck_assert(strstr(error->message, "parallel.sp: false"));
    g_clear_error(&error);
    const char *const custom[] = {"custom", NULL};
    ck_assert_ptr_null(tps_strategy_select(&sc, custom, &error));
    ck_assert(strstr(error->message, "needs an overlap: map"));
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- op scenarios ---- */

START_TEST(test_op_blocking)
{
    static const char *const ops[] = {"op-ag-gemm.yaml", "op-gemm-rs.yaml"};
    for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
        TpsScenario sc;
        TpsResult r;
        tps_test_load_scenario(ops[i], &sc);
        ck_assert(tps_simulate(&sc, preset("sp-blocking"), &r, NULL));
        /* Blocking: the collective then the GEMM (or the reverse), both whole. */
        ck_assert_double_eq_tol(r.op_overlap_efficiency, 0.0, 1e-12);
        ck_assert(r.op_time_ms > r.op_gemm_ms + 0.9 * r.op_comm_ms);
        ck_assert(r.op_time_ms <= r.op_gemm_ms + r.op_comm_ms + 0.01);
        tps_scenario_clear(&sc);
    }
}
END_TEST

/* ---- every scenario runs with every strategy that applies ---- */

START_TEST(test_all_scenarios)
{
    g_autofree char *dir_path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", NULL);
    g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
    ck_assert_ptr_nonnull(dir);
    guint count = 0;
    for (const char *f; (f = g_dir_read_name(dir));) {
        if (!g_str_has_suffix(f, ".yaml"))
            continue;
        TpsScenario sc;
        g_autoptr(GError) error = NULL;
        tps_test_load_scenario(f, &sc);
        g_autofree const TpsStrategy **list = tps_strategy_select(&sc, NULL, &error);
        ck_assert_msg(list != NULL, "%s: %s", f, error ? error->message : "");
        ck_assert_msg(list[0] != NULL, "%s: no strategy runs", f);
        for (guint i = 0; list[i]; i++) {
            TpsResult r;
            ck_assert_msg(tps_simulate(&sc, list[i], &r, &error), "%s/%s: %s", f, list[i]->name,
                          error ? error->message : "");
            if (sc.is_op) {
                ck_assert(r.op_time_ms > 0);
            } else {
                ck_assert(r.step_time_s > 0 && r.forward_ms > 0 && r.backward_ms > r.forward_ms);
                /* A small model on a host-bound step gets a few percent. */
                ck_assert(r.mfu > 0.01 && r.mfu < 1.0);
                ck_assert(r.exposed_comm_ms <= r.tp_comm_ms + 1e-9);
            }
        }
        tps_scenario_clear(&sc);
        count++;
    }
    ck_assert_uint_ge(count, 6);
}
END_TEST

/* ---- sequence parallelism on one rank (issue 13, D5) ---- */

/* tp 1 with sp: true: Megatron accepts the flags (and runs without
 * communication); the layer must then gather nothing and wait on nothing.
 * With G_DEBUG=fatal-criticals (tests/meson.build), a wait on an id that no
 * collective set aborts the test. */
START_TEST(test_sp_on_one_rank)
{
    static const char *const text[2] = {
        "name: one\nhardware: a100-sxm4-80gb\n"
        "model: {hidden: 1024, heads: 16, ffn_hidden: 4096, layers: 2, seq_len: 1024, vocab: "
        "32000}\n"
        "training: {micro_batch: 1, global_batch: 8}\nparallel: {tp: 1, sp: true}\n",
        "name: one\nhardware: a100-sxm4-80gb\n"
        "model: {hidden: 1024, heads: 16, ffn_hidden: 4096, layers: 2, seq_len: 1024, vocab: "
        "32000}\n"
        "training: {micro_batch: 1, global_batch: 8}\nparallel: {tp: 1, sp: false}\n",
    };
    TpsScenario sp, nosp;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("sp.yaml", text[0], -1, &sp, &error), "%s",
                  error ? error->message : "");
    ck_assert_msg(tps_scenario_file_load_string("nosp.yaml", text[1], -1, &nosp, &error), "%s",
                  error ? error->message : "");
    g_autofree const TpsStrategy **list = tps_strategy_select(&sp, NULL, &error);
    ck_assert_ptr_nonnull(list);
    for (guint i = 0; list[i]; i++) {
        TpsResult r;
        ck_assert_msg(tps_simulate(&sp, list[i], &r, &error), "%s: %s", list[i]->name,
                      error ? error->message : "");
        ck_assert_double_eq_tol(r.tp_comm_ms, 0.0, 1e-12);
        ck_assert(r.step_time_s > 0);
    }
    /* No communication on one rank: Megatron's SP schedule is the plain
     * one, kernel for kernel (the same token counts everywhere). On the GPU
     * side: its host still records and waits on the side stream's events. */
    ideal_host(&sp);
    ideal_host(&nosp);
    TpsResult a, b;
    ck_assert(tps_simulate(&sp, preset("megatron"), &a, &error));
    ck_assert(tps_simulate(&nosp, preset("tp-allreduce"), &b, &error));
    ck_assert_double_eq_tol(a.forward_ms, b.forward_ms, 1e-9);
    ck_assert_double_eq_tol(a.backward_ms, b.backward_ms, 1e-9);
    tps_scenario_clear(&sp);
    tps_scenario_clear(&nosp);
}
END_TEST

/* ---- intervals ---- */

typedef struct {
    TpsInterval a[4];
    guint na;
    TpsInterval b[4];
    guint nb;
    TpsTime lo, hi;
    TpsTime measure_a, exposed;
} IntervalCase;

static const IntervalCase interval_cases[] = {
    {{{0, 10}}, 1, {{0, 10}}, 1, 0, 100, 10, 0},
    {{{0, 10}}, 1, {{5, 20}}, 1, 0, 100, 10, 5},
    {{{0, 10}, {5, 15}}, 2, {{12, 13}}, 1, 0, 100, 15, 14},
    {{{0, 10}, {20, 30}}, 2, {{0, 25}}, 1, 5, 28, 13, 3},
    {{{0, 10}}, 1, {{0, 0}}, 0, 0, 100, 10, 10},
    {{{30, 40}, {0, 10}}, 2, {{35, 50}, {2, 3}}, 2, 0, 100, 20, 14},
};

START_TEST(test_intervals)
{
    const IntervalCase *c = &interval_cases[_i];
    g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    g_autoptr(GArray) b = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    g_array_append_vals(a, c->a, c->na);
    g_array_append_vals(b, c->b, c->nb);
    ck_assert_int_eq(tps_intervals_exposed(a, b, c->lo, c->hi), c->exposed);
    ck_assert_int_eq(tps_intervals_measure(a, c->lo, c->hi), c->measure_a);
}
END_TEST

/* ---- memory and FLOPs against hand-derived values ---- */

START_TEST(test_memory_flops)
{
    TpsScenario sc;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    /* The whole model on one TP group, every state kept (the file's
     * layout is a real one: pipeline, recomputation, sharded optimizer). */
    sc.pp = sc.vpp = sc.dp = 1;
    sc.recompute = TPS_RECOMPUTE_NONE;
    sc.distributed_optimizer = FALSE;
    /* arXiv:2104.04473 eq. (3): 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) with
     * ffn = 4h. */
    const double B = sc.global_batch, s = sc.seq_len, l = sc.layers, h = sc.hidden, V = sc.vocab;
    const double paper = 72.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
    ck_assert_double_eq_tol(tps_model_flops_per_iteration(&sc), paper, paper * 1e-9);
    /* Under a causal mask attention counts half its square: eq. (3)'s
     * attention term is 72 B s l h^2 x s / (6h) = 12 B s^2 l h, and half
     * of it goes: 6 B s^2 l h fewer. Selective recompute adds the
     * forward's half square again to the hardware count: 2 x 2 B s^2 h l
     * / 2 = 2 B s^2 h l. */
    sc.causal = TRUE;
    const double half = paper - 6.0 * B * s * s * l * h;
    ck_assert_double_eq_tol(tps_model_flops_per_iteration(&sc), half, half * 1e-9);
    sc.recompute = TPS_RECOMPUTE_SELECTIVE;
    const double hw_flops = half + 2.0 * B * s * s * h * l;
    ck_assert_double_eq_tol(tps_hardware_flops_per_iteration(&sc), hw_flops, hw_flops * 1e-9);
    sc.recompute = TPS_RECOMPUTE_NONE;
    sc.causal = FALSE;
    /* 175B parameters over 8 GPUs, 18 bytes each, plus activations and the
     * overheads (tested in test-pipeline). */
    const double params = tps_stage_params(&sc, 0);
    ck_assert_double_eq_tol(params * 8, 175e9, 3e9);
    /* Per layer, in s b h / t: the paper's 34 (flash: no 5as/h term), the
     * two LayerNorms' fp32 mu and rsigma per token (2 x 8 / h) and flash
     * attention's fp32 logsumexp per head and token (4 x 96 heads / h). */
    const double act = s * sc.micro_batch * h * (34.0 + (2.0 * 8.0 + 4.0 * 96.0) / h) / sc.tp * l;
    /* fp32 copy of the logits kept for the backward, bf16 logits beside it. */
    const double logits = (4.0 + 2.0) * s * sc.micro_batch * V / sc.tp;
    TpsStageMemory mem;
    tps_pipeline_stage_memory(&sc, 0, &mem);
    ck_assert_double_eq_tol(
        mem.total, 18.0 * params + act + logits + mem.fragmentation + mem.context + mem.nccl, 1.0);
    ck_assert_double_eq_tol(mem.activations, act + logits, 1.0);
    tps_scenario_clear(&sc);
}
END_TEST

/* MFU and model_tflops_per_gpu of one layout, by hand, in bf16 and fp8:
 * hidden 1024, 16 heads (no GQA), GeLU MLP of 4096, 2 layers, sequence
 * 512, vocabulary 1024, micro-batch 1, 4 sequences a step, TP2 DP2 (4
 * GPUs) on h100-sxm. A layer's forward over T = 512 tokens: QKV 2 T h 3h
 * = 3221225472, projection 2 T h^2 = 1073741824, FC1 and FC2 2 x 2 T h f
 * = 8589934592, Q K^T and P V 2 x 2 T s h = 1073741824: 13958643712; two
 * layers 27917287424, the logits 2 T h V = 1073741824, 28991029248 a
 * forward, three times that with the backward, 86973087744 a sequence:
 * 347892350976 FLOPs a step. MFU is that over step x 4 GPUs x 989e12,
 * the dense BF16 peak under fp8 too (not the FP8 peak, 1979e12);
 * model TFLOP/s per GPU that over step x 4 / 1e12. */
START_TEST(test_mfu_by_hand)
{
    static const char *const dtypes[] = {"bf16", "fp8"};
    const double flops = 347892350976.0, peak = 989e12;
    double step[2];
    for (guint d = 0; d < 2; d++) {
        g_autofree char *text = g_strdup_printf(
            "name: mfu\nhardware: h100-sxm\n"
            "model: {hidden: 1024, heads: 16, ffn_hidden: 4096, layers: 2, seq_len: 512, "
            "vocab: 1024, dtype: %s}\n"
            "training: {micro_batch: 1, global_batch: 4}\n"
            "parallel: {tp: 2, sp: true, dp: 2}\n",
            dtypes[d]);
        TpsScenario sc;
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_scenario_file_load_string("mfu", text, -1, &sc, &error), "%s",
                      error ? error->message : "");
        ck_assert_double_eq(tps_model_flops_per_iteration(&sc), flops);
        ck_assert_double_eq(tps_mfu_peak_tflops(&sc.hardware), 989.0);
        TpsResult r;
        ck_assert_msg(tps_simulate(&sc, preset("megatron"), &r, &error), "%s",
                      error ? error->message : "");
        step[d] = r.step_time_s;
        ck_assert_double_eq_tol(r.mfu, flops / (r.step_time_s * 4.0 * peak), 1e-12);
        ck_assert_double_eq_tol(r.model_tflops_per_gpu, flops / (r.step_time_s * 4.0) * 1e-12,
                                1e-9);
        ck_assert_double_eq_tol(r.model_tflops_per_gpu, r.mfu * 989.0, 1e-9);
        tps_scenario_clear(&sc);
    }
    note("mfu by hand: bf16 step %.6f s, fp8 step %.6f s\n", step[0], step[1]);
}
END_TEST

/* ---- the host ---- */

/* A small GPT (hidden 1024) at TP=8: every kernel is shorter than the
 * host's time to issue it, so a layer takes exactly its host program.
 * Megatron's layer forward issues 4 NCCL calls (two all-gathers, two
 * reduce-scatters), 5 GEMM-class ops (QKV, attention, projection, FC1,
 * FC2) and 9 elementwise ops (two LayerNorms, the Q, K, V and output
 * layout copies, two bias-dropout-adds, bias-GeLU). Its backward issues 6
 * NCCL calls (the all-gathers of grad_output for the row-parallel dgrads,
 * the all-gathers of the saved inputs and the reduce-scatters of the
 * column-parallel layers), 9 GEMM-class ops (dgrad and wgrad of 4 linear
 * layers, attention), 16 elementwise ops (two bias-dropout-add backwards
 * with their bias gradients, GeLU's backward and its bias gradient, two
 * LayerNorm backwards of three kernels, the attention's dO copy, its two
 * extra kernels and the dQKV join) and 8 stream waits (four per
 * column-parallel backward on NCCL's side stream). */
START_TEST(test_small_gpt_host_bound)
{
    TpsScenario sc;
    TpsResult r;
    tps_test_load_scenario("gpt-345m-tp8.yaml", &sc);
    const TpsHardware *hw = &sc.hardware;
    ck_assert(tps_simulate(&sc, preset("megatron"), &r, NULL));
    const double fwd_us = 4 * hw->host_nccl_us + 5 * hw->host_gemm_us + 9 * hw->host_elementwise_us;
    const double bwd_us = 6 * hw->host_nccl_us + 9 * hw->host_gemm_us +
                          16 * hw->host_elementwise_us +
                          8 * (hw->host_event_record_us + hw->host_stream_wait_us);
    note("small GPT megatron: forward %.3f ms (host %.3f), backward %.3f ms (host %.3f)\n",
         r.forward_ms, fwd_us * 1e-3, r.backward_ms, bwd_us * 1e-3);
    ck_assert_double_eq_tol(r.forward_ms, fwd_us * 1e-3, 1e-6);
    ck_assert_double_eq_tol(r.backward_ms, bwd_us * 1e-3, 1e-6);
    tps_scenario_clear(&sc);
}
END_TEST

/* CUDA graphs remove the host from the layer: one graph launch per layer
 * pass, issued long before the GPU gets there, so the layer takes what it
 * takes on a host that costs nothing. */
START_TEST(test_cuda_graphs)
{
    TpsScenario sc;
    TpsResult eager, graphs, ideal;
    tps_test_load_scenario("gpt-345m-tp8.yaml", &sc);
    ck_assert(tps_simulate(&sc, preset("megatron"), &eager, NULL));
    sc.cuda_graphs = TRUE;
    ck_assert(tps_simulate(&sc, preset("megatron"), &graphs, NULL));
    sc.cuda_graphs = FALSE;
    ideal_host(&sc);
    ck_assert(tps_simulate(&sc, preset("megatron"), &ideal, NULL));
    note("small GPT megatron: forward eager %.3f graphs %.3f ideal host %.3f ms\n",
         eager.forward_ms, graphs.forward_ms, ideal.forward_ms);
    ck_assert_double_eq_tol(graphs.forward_ms, ideal.forward_ms, 1e-9);
    ck_assert_double_eq_tol(graphs.backward_ms, ideal.backward_ms, 1e-9);
    ck_assert(eager.forward_ms > 1.5 * graphs.forward_ms);
    ck_assert(eager.step_time_s > graphs.step_time_s);
    tps_scenario_clear(&sc);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("sched");
    TCase *tc = tcase_create("graph");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_layer_volume, 0, G_N_ELEMENTS(volume_cases));
    tcase_add_loop_test(tc, test_lone_collective, 0, G_N_ELEMENTS(coll_cases));
    tcase_add_test(tc, test_blocking_forward_sum);
    suite_add_tcase(s, tc);
    tc = tcase_create("presets");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_megatron_not_slower, 0, G_N_ELEMENTS(sp_scenarios));
    tcase_add_test(tc, test_megatron_comm_takes_sms);
    tcase_add_test(tc, test_collective_hbm);
    tcase_add_test(tc, test_determinism);
    tcase_add_test(tc, test_strategy_select);
    tcase_add_test(tc, test_op_blocking);
    tcase_add_test(tc, test_all_scenarios);
    tcase_add_test(tc, test_sp_on_one_rank);
    tcase_add_loop_test(tc, test_forced_algorithm_run, 0, G_N_ELEMENTS(forced_runs));
    suite_add_tcase(s, tc);
    tc = tcase_create("figures");
    tcase_add_loop_test(tc, test_intervals, 0, G_N_ELEMENTS(interval_cases));
    tcase_add_test(tc, test_memory_flops);
    tcase_add_test(tc, test_mfu_by_hand);
    suite_add_tcase(s, tc);
    tc = tcase_create("host");
    tcase_add_test(tc, test_small_gpt_host_bound);
    tcase_add_test(tc, test_cuda_graphs);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
