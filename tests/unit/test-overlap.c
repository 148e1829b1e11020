/* overlap: mechanism tests of the communication-overlap methods
 * (src/sched/overlap.c, real-schedules.md section 2.1).
 *
 * Every test names the mechanism it pins: removing that mechanism from the
 * simulator makes the test fail. Bounds are derived from the cost API
 * (tps_cost_gemm, tps_kernel_cost_solo_ns, tps_coll_plan) and the hardware
 * model, not read back from the graph under test.
 */
#include <check.h>

#include "scenario-util.h"
#include "test-util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "io/input/scenario-file.h"
#include "sched/layer.h"
#include "sched/method.h"
#include "sched/overlap-private.h"
#include "sched/overlap.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* ---- helpers ---- */

/* Diagnostics on stderr with TPSIM_TEST_VERBOSE set (the TAP stream is on
 * stdout). */
#define note(...)                                                                                  \
    do {                                                                                           \
        if (g_getenv("TPSIM_TEST_VERBOSE"))                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
    } while (0)

static TpsOverlapConfig
ring_cfg(guint tp)
{
    return (TpsOverlapConfig){.set = TRUE,
                              .method = TPS_METHOD_RING_EXCHANGE,
                              .num_splits = tp,
                              .cga_size = 2,
                              .use_ce = TRUE};
}

static TpsOverlapConfig
pipeline_cfg(guint splits, guint num_sm, gboolean margin)
{
    return (TpsOverlapConfig){.set = TRUE,
                              .method = TPS_METHOD_PIPELINE,
                              .num_splits = splits,
                              .num_sm = num_sm,
                              .cga_size = 2,
                              .set_sm_margin = margin,
                              .use_ce = TRUE};
}

static TpsOverlapConfig
none_cfg(void)
{
    return (TpsOverlapConfig){
        .set = TRUE, .method = TPS_METHOD_NONE, .cga_size = 2, .use_ce = TRUE};
}

/* Build the op graph of `sc` with `cfg` (rank `slow` GEMMs `factor`
 * slower when slow < tp) and run it; the caller clears `b`. */
static TpsTime
op_run(TpsBuilder *b, const TpsScenario *sc, const TpsOverlapConfig *cfg, guint slow, double factor)
{
    g_autoptr(GError) error = NULL;
    TpsRunStats stats;
    tps_builder_init(b, sc, TPS_STRATEGY_CUSTOM);
    b->overlap[TPS_GEMM_OP] = *cfg;
    if (slow < sc->tp)
        b->gemm_slowdown[slow] = factor;
    tps_op_graph(b);
    ck_assert_msg(tps_engine_run(b->engine, &stats, &error), "%s", error ? error->message : "");
    return stats.makespan;
}

static TpsTime
op_time(const TpsScenario *sc, const TpsOverlapConfig *cfg)
{
    TpsBuilder b;
    TpsTime t = op_run(&b, sc, cfg, G_MAXUINT, 1.0);
    tps_builder_clear(&b);
    return t;
}

/* The unsplit GEMM alone, on an idle GPU (one launch included). */
static TpsTime
gemm_alone(const TpsScenario *sc)
{
    TpsBuilder b;
    TpsRunStats stats;
    tps_builder_init(&b, sc, TPS_STRATEGY_CUSTOM);
    tps_op_gemm_alone(&b);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    tps_builder_clear(&b);
    return stats.makespan;
}

static TpsTime
solo_gemm(const TpsScenario *sc, guint64 m, guint64 n, guint64 k, guint max_sms)
{
    TpsKernelCost cost;
    tps_cost_gemm(&sc->hardware, sc->dtype, m, n, k, max_sms, &cost);
    return tps_kernel_cost_solo_ns(&sc->hardware, &cost, sc->hardware.sms);
}

static gboolean
is_chunk_gemm(const TpsSpan *sp)
{
    return sp->kind == TPS_KIND_GEMM && g_str_has_prefix(sp->name, "op.gemm[");
}

/* The span named `name` on `rank` (the first one). */
static const TpsSpan *
find_span(const TpsBuilder *b, guint rank, const char *name)
{
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b->engine); id++) {
        const TpsSpan *sp = tps_engine_span(b->engine, id);
        if (sp->rank == rank && strcmp(sp->name, name) == 0)
            return sp;
    }
    return NULL;
}

/* End of the last task on the streams of `rank` (not counting the flows
 * that `rank` sends into a peer's kernel: they belong to the peer's
 * kernel, whose SMs pull them). */
static TpsTime
rank_end(const TpsBuilder *b, guint rank)
{
    TpsTime end = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b->engine); id++) {
        const TpsSpan *sp = tps_engine_span(b->engine, id);
        if (sp->rank == rank && sp->stream != TPS_STREAM_NONE)
            end = MAX(end, sp->end);
    }
    return end;
}

static double
ms(TpsTime t)
{
    return tps_time_to_ms(t);
}

/* ---- 1. ring-exchange all-gather ---- */

/* Pins: the ring-exchange AG pipeline (copy-engine sends of chunk i under
 * the GEMM of chunk i-1, sends not gated by GEMMs, GEMM i+1 waiting only for
 * receive i). Serialising the sends behind the GEMMs or the GEMMs behind the
 * whole gather would expose up to the whole transfer (7 chunks) and break
 * the bound of about one chunk's transfer. */
START_TEST(test_ring_ag_hides_gather)
{
    TpsScenario sc;
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    const TpsHardware *hw = &sc.hardware;
    const guint t = sc.tp;
    const guint64 n_local = sc.n / t, rows = sc.m / t;
    const TpsTime launch = tps_cost_launch_ns(hw);
    TpsOverlapConfig ring = ring_cfg(t), none = none_cfg();

    const TpsTime alone = gemm_alone(&sc);
    const TpsTime time = op_time(&sc, &ring);
    const TpsTime blocking = op_time(&sc, &none);

    /* One chunk over the copy engine; the chunked GEMMs' loss against the
     * unsplit one (partial waves); the launches before the first GEMM
     * (UB copy-in, then the first chunk) and a few per step of slack. */
    const double chunk_bytes = (double)rows * sc.k * tps_dtype_bytes(sc.dtype);
    const TpsTime transfer = (TpsTime)(chunk_bytes / hw->copy_engine_gbps);
    const TpsTime loss = (TpsTime)t * solo_gemm(&sc, rows, n_local, sc.k, 0) -
                         solo_gemm(&sc, sc.m, n_local, sc.k, 0);
    TpsKernelCost copy_in;
    tps_cost_memory(hw, 2.0 * chunk_bytes, &copy_in);
    const TpsTime bound = transfer + MAX(loss, 0) + tps_kernel_cost_solo_ns(hw, &copy_in, hw->sms) +
                          (TpsTime)(3 * t) * launch;
    const TpsTime exposed = time - alone;
    TpsCollPlan plan;
    tps_coll_plan(hw, TPS_COLL_ALL_GATHER, (double)sc.m * sc.k * 2, t, &plan);
    const TpsTime coll = tps_coll_time_ns(hw, &plan);
    note("ring-ag: alone %.4f ring %.4f blocking %.4f exposed %.4f bound %.4f (transfer %.4f "
         "loss %.4f) coll %.4f\n",
         ms(alone), ms(time), ms(blocking), ms(exposed), ms(bound), ms(transfer), ms(loss),
         ms(coll));
    ck_assert_msg(exposed <= bound, "exposed %.4f ms > bound %.4f ms", ms(exposed), ms(bound));
    /* The communication left exposed (beyond the chunked GEMMs' own loss)
     * is well below the blocking collective: under a quarter of it; and the
     * whole exposed time, GEMM loss included, is still below it. */
    ck_assert_msg(4 * (exposed - MAX(loss, 0)) < coll,
                  "exposed %.4f ms - loss %.4f ms vs "
                  "collective %.4f ms",
                  ms(exposed), ms(loss), ms(coll));
    ck_assert_msg(exposed < coll, "exposed %.4f ms >= collective %.4f ms", ms(exposed), ms(coll));
    ck_assert_msg(time < blocking, "ring %.4f ms >= blocking %.4f ms", ms(time), ms(blocking));
    /* Blocking = collective + unsplit GEMM (sanity of the reference). */
    ck_assert(blocking >= alone + coll);
    tps_scenario_clear(&sc);
}
END_TEST

/* Pins: host launch cost per kernel and per copy (and the GEMM's wave
 * quantisation): with chunks a fraction of a wave, 3t-2 launches of the ring
 * cost more than the one NCCL collective + one GEMM of the blocking path.
 * With free launches the ring would win here too. */
START_TEST(test_ring_ag_tiny_chunks_lose)
{
    TpsScenario sc;
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    sc.m = 64 * sc.tp; /* chunks of 64 rows */
    sc.n = 1024 * sc.tp;
    sc.k = 512;
    const TpsHardware *hw = &sc.hardware;
    TpsOverlapConfig ring = ring_cfg(sc.tp), none = none_cfg();
    /* The chunk GEMM is a fraction of one wave: its time is mostly the
     * GEMM's latency, which every chunk pays. */
    TpsKernelCost chunk;
    tps_cost_gemm(hw, sc.dtype, sc.m / sc.tp, sc.n / sc.tp, sc.k, 0, &chunk);
    ck_assert_uint_lt(chunk.ctas, hw->sms);
    ck_assert_int_lt(tps_kernel_cost_solo_ns(hw, &chunk, hw->sms), 2 * chunk.fixed_ns);

    const TpsTime time = op_time(&sc, &ring);
    const TpsTime blocking = op_time(&sc, &none);
    note("tiny ring-ag: ring %.4f blocking %.4f\n", ms(time), ms(blocking));
    ck_assert_msg(time > blocking, "ring %.4f ms <= blocking %.4f ms", ms(time), ms(blocking));
    /* At least the launches of the chunk GEMMs, sends and receive flags. */
    ck_assert_int_ge(time, (TpsTime)(3 * sc.tp - 2) * tps_cost_launch_ns(hw));
    tps_scenario_clear(&sc);
}
END_TEST

/* Pins: a chunk of a split GEMM is a GEMM of the chunk's shape (ring AG:
 * m/t rows; pipeline RS: n/splits columns): its work is the chunk's FLOPs,
 * and it takes no less than the cost model gives that shape alone, its own
 * latency and waves included (sharing the GPU can only slow it). Costing a
 * chunk as a share of the unsplit GEMM would make a chunked schedule faster
 * than the GEMM it splits. */
START_TEST(test_chunk_gemm_shape)
{
    static const char *const scenarios[] = {"op-ag-gemm.yaml", "op-gemm-rs.yaml"};
    for (guint i = 0; i < G_N_ELEMENTS(scenarios); i++) {
        TpsScenario sc;
        tps_test_load_scenario(scenarios[i], &sc);
        const guint t = sc.tp, splits = 4;
        guint64 m, n, k;
        TpsOverlapConfig cfg;
        if (i == 0) {
            m = sc.m / t, n = sc.n / t, k = sc.k;
            cfg = ring_cfg(t);
        } else {
            m = sc.m, n = sc.n / splits, k = sc.k / t;
            cfg = pipeline_cfg(splits, 16, FALSE);
        }
        TpsBuilder b;
        op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);
        const TpsTime solo = solo_gemm(&sc, m, n, k, 0); /* no SM margin: all SMs */
        guint chunks = 0;
        for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
            const TpsSpan *sp = tps_engine_span(b.engine, id);
            if (sp->rank != 0 || !is_chunk_gemm(sp))
                continue;
            chunks++;
            ck_assert_double_eq_tol(sp->flops, 2.0 * (double)m * (double)n * (double)k, 1.0);
            ck_assert_msg(sp->end - sp->start >= solo,
                          "%s: chunk %.4f ms < its shape alone %.4f ms", scenarios[i],
                          ms(sp->end - sp->start), ms(solo));
        }
        ck_assert_uint_eq(chunks, i == 0 ? t : splits);
        tps_builder_clear(&b);
        tps_scenario_clear(&sc);
    }
}
END_TEST

/* ---- 2. pipeline reduce-scatter ---- */

typedef struct {
    guint num_sm;
    gboolean margin;
} PipelineCase;

static const PipelineCase pipeline_cases[] = {{4, FALSE}, {16, FALSE}, {16, TRUE}};

/* Pins: the pipeline RS (chunk i's RS kernel on the comm stream waits for
 * GEMM chunk i only, and runs under GEMM i+1). Only the last chunk's RS is
 * exposed: the tail after the last GEMM chunk is that kernel (32 CTAs,
 * UB_MAX_SM) plus launch skew. The rest of time - GEMM alone is what the
 * chunked GEMMs lose: partial waves of the chunks, and the SMs that the
 * comm kernels (or the margin) take. Running the RS after all the GEMMs
 * would expose every chunk's RS; gating GEMM i+1 on RS i would expose them
 * too. Transformer Engine launches RS i right after GEMM i, so under one
 * hardware queue GEMM i+1 starts when GEMM i ends (head-of-line). */
START_TEST(test_pipeline_rs_exposes_last_chunk)
{
    const PipelineCase *c = &pipeline_cases[_i];
    TpsScenario sc;
    TpsBuilder b;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    const TpsHardware *hw = &sc.hardware;
    const guint splits = 4;
    const TpsTime launch = tps_cost_launch_ns(hw);
    TpsOverlapConfig cfg = pipeline_cfg(splits, c->num_sm, c->margin);
    const TpsTime alone = gemm_alone(&sc);
    const TpsTime time = op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);

    g_autofree char *last_name = g_strdup_printf("op.gemm.rs[%u]", splits - 1);
    const TpsSpan *last_rs = find_span(&b, 0, last_name);
    ck_assert_ptr_nonnull(last_rs);
    TpsTime last_gemm_end = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        if (sp->rank == 0 && is_chunk_gemm(sp))
            last_gemm_end = MAX(last_gemm_end, sp->end);
    }
    const TpsTime rs_dur = last_rs->end - last_rs->start;
    const TpsTime tail = time - last_gemm_end;
    /* The last kernel's data: t-1 slices of m/t x n/splits, pulled at the
     * rate of NVLink (32 CTAs pull faster than the link). */
    const double slice = (double)(sc.m / sc.tp) * (sc.n / splits) * tps_dtype_bytes(sc.dtype);
    const double link = hw->nvlink_gbps * hw->nvlink_efficiency;
    const TpsTime rs_model = (TpsTime)(slice * (sc.tp - 1) / MIN(link, 32 * hw->sm_mem_gbps));
    ck_assert_int_eq(last_rs->sms, 32); /* UB_MAX_SM */
    ck_assert_msg(llabs(rs_dur - rs_model) <= rs_model * 3 / 10, "last RS %.4f ms, model %.4f ms",
                  ms(rs_dur), ms(rs_model));
    ck_assert_msg(tail >= rs_dur && tail <= rs_dur + 2 * launch, "tail %.4f ms vs last RS %.4f ms",
                  ms(tail), ms(rs_dur));

    /* The chunked GEMMs' loss against the unsplit GEMM: on all SMs (the
     * least they lose), and on SMs - num_sm (the most: the margin, or a
     * comm kernel, all the time). */
    const TpsTime full = solo_gemm(&sc, sc.m, sc.n, sc.k / sc.tp, 0);
    const TpsTime loss_all =
        (TpsTime)splits * solo_gemm(&sc, sc.m, sc.n / splits, sc.k / sc.tp, 0) - full;
    const TpsTime loss_margin =
        (TpsTime)splits * solo_gemm(&sc, sc.m, sc.n / splits, sc.k / sc.tp, hw->sms - c->num_sm) -
        full;
    const TpsTime exposed = time - alone;
    note("pipeline-rs num_sm %u margin %d: alone %.4f time %.4f exposed %.4f tail %.4f last RS "
         "%.4f (model %.4f) loss %.4f..%.4f\n",
         c->num_sm, c->margin, ms(alone), ms(time), ms(exposed), ms(tail), ms(rs_dur), ms(rs_model),
         ms(loss_all), ms(loss_margin));
    /* At least the last RS plus what the chunks lose run one by one: with
     * one hardware queue, RS i waits for GEMM i and holds back GEMM i+1
     * launched behind it, so chunk GEMMs never share the GPU (each is no
     * faster than alone). At most the last RS plus the chunks' loss on
     * SMs - num_sm. */
    ck_assert_msg(exposed >= tail + loss_all - 2 * launch, "exposed %.4f < tail + loss %.4f",
                  ms(exposed), ms(tail + loss_all));
    ck_assert_msg(exposed <= tail + loss_margin + 4 * launch, "exposed %.4f > tail + loss %.4f",
                  ms(exposed), ms(tail + loss_margin));
    /* Far less than the blocking reduce-scatter. */
    TpsCollPlan plan;
    tps_coll_plan(hw, TPS_COLL_REDUCE_SCATTER, (double)sc.m * sc.n * 2, sc.tp, &plan);
    ck_assert(tail < tps_coll_time_ns(hw, &plan) / 2);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* Pins: the two forces of the split count: exposed last-chunk RS (large
 * with few splits) and chunk GEMM inefficiency plus launches (large with
 * many splits). Without either the optimum would sit at an end. */
START_TEST(test_pipeline_rs_split_sweep)
{
    static const guint splits[] = {1, 2, 4, 8, 16, 32, 64};
    TpsScenario sc;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    sc.m = 8192, sc.n = 12288, sc.k = 6144, sc.tp = 8;
    const TpsHardware *hw = &sc.hardware;
    TpsTime time[G_N_ELEMENTS(splits)], gemm_sum[G_N_ELEMENTS(splits)], tail[G_N_ELEMENTS(splits)];
    guint best = 0;
    for (guint i = 0; i < G_N_ELEMENTS(splits); i++) {
        TpsBuilder b;
        TpsOverlapConfig cfg = pipeline_cfg(splits[i], 16, TRUE);
        time[i] = op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);
        gemm_sum[i] = 0;
        TpsTime last_gemm_end = 0;
        for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
            const TpsSpan *sp = tps_engine_span(b.engine, id);
            if (sp->rank == 0 && is_chunk_gemm(sp)) {
                gemm_sum[i] += sp->end - sp->start;
                last_gemm_end = MAX(last_gemm_end, sp->end);
            }
        }
        tail[i] = time[i] - last_gemm_end;
        note("splits %2u: time %.4f gemm sum %.4f tail %.4f\n", splits[i], ms(time[i]),
             ms(gemm_sum[i]), ms(tail[i]));
        if (time[i] < time[best])
            best = i;
        tps_builder_clear(&b);
    }
    ck_assert_msg(best > 0 && best + 1 < G_N_ELEMENTS(splits), "best split count %u at an end",
                  splits[best]);
    const guint last = G_N_ELEMENTS(splits) - 1;
    /* Too few: the exposed RS tail is longer than at the optimum. */
    ck_assert_int_gt(tail[0], 2 * tail[best]);
    /* Too many: the chunk GEMMs together take longer (partial waves,
     * fixed per-tile cost, launches) than at the optimum, and the op is
     * slower for it. (Chunks on different streams overlap, so the sum of
     * their spans need not grow at every step.) */
    ck_assert_int_gt(gemm_sum[last], gemm_sum[best]);
    ck_assert_int_gt(time[last], time[best]);
    /* Consistent with the cost model: 64 chunk GEMMs cost more than 4. */
    ck_assert_int_gt(64 * solo_gemm(&sc, sc.m, sc.n / 64, sc.k / sc.tp, hw->sms - 16),
                     4 * solo_gemm(&sc, sc.m, sc.n / 4, sc.k / sc.tp, hw->sms - 16));
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 3. SM margin and stream priority ---- */

/* Rank 0's chunk GEMM i and RS kernel i spans, in chunk order. */
static void
pipeline_spans(const TpsBuilder *b, guint splits, const TpsSpan **gemm, const TpsSpan **rs)
{
    for (guint i = 0; i < splits; i++) {
        g_autofree char *g = g_strdup_printf("op.gemm[%u]", i);
        g_autofree char *r = g_strdup_printf("op.gemm.rs[%u]", i);
        gemm[i] = find_span(b, 0, g);
        rs[i] = find_span(b, 0, r);
        ck_assert_ptr_nonnull(gemm[i]);
        ck_assert_ptr_nonnull(rs[i]);
    }
}

/* Pins: set_sm_margin (the chunk GEMMs are told to use SMs - num_sm), and
 * the SM hand-out by stream priority (the high-priority comm stream's RS
 * kernel takes its num_sm SMs even while a low-priority chunk GEMM wants
 * all of them, and that GEMM runs on the rest).
 *
 * A span's `sms` is what the task held when it started; chunk GEMMs after
 * the first start (with no SMs) while the previous chunk fills the GPU, so
 * the SMs they run on are read from their durations. */
START_TEST(test_sm_margin)
{
    TpsScenario sc;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    const guint sms = sc.hardware.sms, num_sm = 16, splits = 4;
    const guint64 n_chunk = sc.n / splits, k_local = sc.k / sc.tp;
    const TpsSpan *gemm[4], *rs[4];
    /* The chunk has more tiles than the GPU has SMs: it wants all of them. */
    TpsKernelCost chunk;
    tps_cost_gemm(&sc.hardware, sc.dtype, sc.m, n_chunk, k_local, 0, &chunk);
    ck_assert_uint_gt(chunk.ctas, sms);

    /* With margin: every chunk GEMM holds at most SMs - num_sm, and the
     * first one (nothing else running) exactly that. */
    TpsBuilder b;
    TpsOverlapConfig cfg = pipeline_cfg(splits, num_sm, TRUE);
    op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);
    ck_assert_uint_eq(tps_overlap_gemm_sms(&b, &cfg), sms - num_sm);
    guint n = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        if (is_chunk_gemm(sp)) {
            ck_assert_uint_le(sp->sms, sms - num_sm);
            n++;
        }
    }
    ck_assert_uint_eq(n, splits * sc.tp);
    pipeline_spans(&b, splits, gemm, rs);
    ck_assert_uint_eq(gemm[0]->sms, sms - num_sm);
    /* Alone on SMs - num_sm: the solo time with the margin. */
    ck_assert_int_le(
        llabs(gemm[0]->end - gemm[0]->start - solo_gemm(&sc, sc.m, n_chunk, k_local, sms - num_sm)),
        1);
    tps_builder_clear(&b);

    /* Without margin: the first chunk (no comm kernel yet) gets all SMs
     * and runs at its solo time on them. */
    cfg = pipeline_cfg(splits, num_sm, FALSE);
    op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);
    ck_assert_uint_eq(tps_overlap_gemm_sms(&b, &cfg), 0);
    pipeline_spans(&b, splits, gemm, rs);
    const TpsTime solo = solo_gemm(&sc, sc.m, n_chunk, k_local, 0);
    ck_assert_uint_eq(gemm[0]->sms, sms);
    ck_assert_int_le(llabs(gemm[0]->end - gemm[0]->start - solo), 1);
    for (guint i = 1; i < splits; i++) {
        /* RS i-1 starts while chunk GEMM i wants every SM; by priority it
         * still gets its num_sm. */
        ck_assert_int_ge(rs[i - 1]->start, gemm[i - 1]->end);
        ck_assert_int_lt(rs[i - 1]->start, gemm[i]->end);
        ck_assert_uint_eq(rs[i - 1]->sms, num_sm);
        /* Chunk i computes mostly from the end of chunk i-1 to its own
         * end (it may start in chunk i-1's partial last wave, at most one
         * wave of its work); while RS i-1 runs it has SMs - num_sm, so it
         * takes longer than its solo time on all SMs, by about the waves
         * lost during the RS. */
        const TpsTime ran = gemm[i]->end - gemm[i - 1]->end;
        const TpsTime rs_dur = rs[i - 1]->end - rs[i - 1]->start;
        const double waves_all = ceil((double)chunk.ctas / sms);
        const double waves_rest = ceil((double)chunk.ctas / (sms - num_sm));
        const TpsTime extra = (TpsTime)(rs_dur * (1.0 - waves_all / waves_rest));
        note("no margin: chunk %u ran %.4f solo %.4f extra %.4f (model %.4f)\n", i, ms(ran),
             ms(solo), ms(ran - solo), ms(extra));
        const TpsTime head_start = (TpsTime)(solo / waves_all);
        ck_assert_int_gt(ran, solo - head_start + extra / 2);
        ck_assert_int_le(ran, solo + 2 * extra + 10);
    }
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* Pins: Transformer Engine's P2P overlap runs its GEMM chunks on the SMs
 * the margin leaves too (CommOverlapP2PBase's _math_sms), so a
 * ring_exchange reduce-scatter with set_sm_margin and num_sm 16 (the
 * defaults it takes on proj_fprop / fc2_fprop) holds at most SMs - 16 per
 * chunk GEMM, and without margin its first chunk (alone) holds all SMs. */
START_TEST(test_ring_exchange_margin)
{
    TpsScenario sc;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    const guint sms = sc.hardware.sms;
    for (int margin = 0; margin <= 1; margin++) {
        TpsOverlapConfig cfg = ring_cfg(sc.tp);
        cfg.num_sm = 16;
        cfg.set_sm_margin = margin;
        TpsBuilder b;
        op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);
        guint n = 0, most = 0;
        for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
            const TpsSpan *sp = tps_engine_span(b.engine, id);
            if (sp->rank == 0 && is_chunk_gemm(sp)) {
                most = MAX(most, sp->sms);
                n++;
            }
        }
        ck_assert_uint_eq(n, sc.tp); /* one partial GEMM per rank's slice */
        /* A chunk of m/tp rows x n has more tiles than SMs here, so it
         * takes every SM it is allowed. */
        ck_assert_uint_eq(most, margin ? sms - 16 : sms);
        tps_builder_clear(&b);
    }
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 4. bulk overlap and copy engine vs SM-based sends ---- */

/* Build a bulk AG beside a GEMM the way column_backward does (either part
 * may be left out); returns the makespan and the spans' durations. */
static TpsTime
bulk_run(const TpsScenario *sc, gboolean comm, gboolean gemm, TpsTime *comm_dur, TpsTime *gemm_dur)
{
    TpsBuilder b;
    TpsRunStats stats;
    TpsOpIds ag, mm;
    const guint64 T = sc->micro_batch * sc->seq_len, h = sc->hidden, f = sc->ffn_hidden / sc->tp;
    TpsOverlapConfig cfg = {.set = TRUE,
                            .method = TPS_METHOD_BULK,
                            .num_sm = 16,
                            .cga_size = 2,
                            .set_sm_margin = TRUE,
                            .use_ce = TRUE};
    tps_builder_init(&b, sc, TPS_STRATEGY_CUSTOM);
    if (comm)
        tps_overlap_bulk(&b, TPS_COLL_ALL_GATHER, (double)T * h * 2, &cfg, "bulk.ag", &ag);
    if (gemm)
        tps_builder_gemm(&b, b.main, "dgrad", T, h, f, tps_overlap_gemm_sms(&b, &cfg), &mm);
    if (comm)
        tps_builder_wait(&b, b.main, &ag);
    tps_builder_mark(&b, "end", &mm);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    *comm_dur = *gemm_dur = 0;
    const TpsSpan *sp;
    if (comm && (sp = find_span(&b, 0, "bulk.ag")))
        *comm_dur = sp->end - sp->start;
    if (gemm && (sp = find_span(&b, 0, "dgrad")))
        *gemm_dur = sp->end - sp->start;
    tps_builder_clear(&b);
    return stats.makespan;
}

/* Pins: bulk overlap runs the UB kernel on the comm stream concurrently
 * with the GEMM on main (fork from main, join at the end): the total is
 * the longer of the two (each slowed by sharing), not their sum. */
START_TEST(test_bulk_overlap)
{
    TpsScenario sc;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    /* The GPU side alone: a host that issues at no cost. */
    TpsHardware *hw = &sc.hardware;
    tps_hardware_ideal_host(hw);
    const TpsTime launch = tps_cost_launch_ns(&sc.hardware);
    TpsTime c_alone, g_alone, c_both, g_both, dummy;
    const TpsTime comm_only = bulk_run(&sc, TRUE, FALSE, &c_alone, &dummy);
    const TpsTime gemm_only = bulk_run(&sc, FALSE, TRUE, &dummy, &g_alone);
    const TpsTime both = bulk_run(&sc, TRUE, TRUE, &c_both, &g_both);
    note("bulk: comm alone %.4f (%.4f) gemm alone %.4f (%.4f) both %.4f (comm %.4f gemm "
         "%.4f)\n",
         ms(comm_only), ms(c_alone), ms(gemm_only), ms(g_alone), ms(both), ms(c_both), ms(g_both));
    ck_assert(both >= MAX(comm_only, gemm_only));
    ck_assert_msg(both + launch < comm_only + gemm_only, "both %.4f >= sum %.4f", ms(both),
                  ms(comm_only + gemm_only));
    /* About the longer slowed part, plus the copy-in and the launches. */
    TpsKernelCost copy_in;
    tps_cost_memory(&sc.hardware, 2.0 * sc.seq_len * sc.hidden * 2 / sc.tp, &copy_in);
    const TpsTime head = tps_kernel_cost_solo_ns(&sc.hardware, &copy_in, sc.hardware.sms);
    ck_assert_msg(both <= MAX(c_both, g_both) + head + 4 * launch, "both %.4f vs max %.4f",
                  ms(both), ms(MAX(c_both, g_both)));
    /* Sharing slows neither part below its solo time. */
    ck_assert(g_both >= g_alone && c_both >= c_alone);
    tps_scenario_clear(&sc);
}
END_TEST

/* Pins: use_ce (copy-engine push: no SMs) versus an SM-based send kernel
 * of num_sm CTAs; both move the same bytes. The SM-based sends (high
 * priority) take SMs from the chunk GEMMs, which then take longer. */
START_TEST(test_copy_engine_vs_sm_sends)
{
    TpsScenario sc;
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    double bytes[2] = {0, 0};
    guint send_sms[2] = {0, 0}, sends[2] = {0, 0};
    TpsTime time[2], gemm_busy[2];
    for (guint ce = 0; ce < 2; ce++) {
        TpsBuilder b;
        TpsOverlapConfig cfg = ring_cfg(sc.tp);
        cfg.use_ce = ce;
        cfg.num_sm = 16;
        time[ce] = op_run(&b, &sc, &cfg, G_MAXUINT, 1.0);
        g_autoptr(GArray) gemms = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
        for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
            const TpsSpan *sp = tps_engine_span(b.engine, id);
            if (sp->rank != 0)
                continue;
            if (strcmp(sp->name, "op.gemm.ag_send") == 0) {
                bytes[ce] += sp->bytes;
                send_sms[ce] = MAX(send_sms[ce], sp->sms);
                sends[ce]++;
                ck_assert_int_eq(sp->kind, ce ? TPS_KIND_COPY : TPS_KIND_COMM);
            }
            if (is_chunk_gemm(sp)) {
                TpsInterval iv = {sp->start, sp->end};
                g_array_append_val(gemms, iv);
            }
        }
        gemm_busy[ce] = tps_intervals_measure(gemms, 0, TPS_TIME_NEVER);
        tps_builder_clear(&b);
    }
    note("ce: bytes %.0f/%.0f send sms %u/%u gemm busy %.4f/%.4f time %.4f/%.4f\n", bytes[0],
         bytes[1], send_sms[0], send_sms[1], ms(gemm_busy[0]), ms(gemm_busy[1]), ms(time[0]),
         ms(time[1]));
    ck_assert_uint_eq(sends[0], sc.tp - 1);
    ck_assert_uint_eq(sends[1], sc.tp - 1);
    ck_assert_double_eq_tol(bytes[0], bytes[1], 1.0);
    ck_assert_double_eq_tol(bytes[1], (sc.tp - 1.0) * (sc.m / sc.tp) * sc.k * 2, 1.0);
    ck_assert_uint_eq(send_sms[1], 0);
    ck_assert_uint_eq(send_sms[0], 16);
    /* The GEMMs beside SM-based sends run longer, and so does the op. */
    ck_assert_int_gt(gemm_busy[0], gemm_busy[1]);
    ck_assert_int_gt(time[0], time[1]);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 5. stragglers ---- */

typedef struct {
    const char *scenario;
    TpsMethod method;
    guint64 n_local; /* ag_gemm: the GEMM's n per rank (0: the scenario's) */
    double factor;   /* rank 3's GEMM slowdown */
    guint later;     /* other ranks that must finish later (0: none may) */
    guint spared;    /* ranks before it in the ring (0 .. spared-1) that must not */
} StragglerCase;

static const StragglerCase straggler_cases[] = {
    /* Ring AG with chunk GEMMs about twice the chunk transfer: rank 3's
     * forwarding sends are launched after its (slower) chunk GEMMs (one
     * hardware queue), so its successors receive later and finish later. */
    {"op-ag-gemm.yaml", TPS_METHOD_RING_EXCHANGE, 3072, 1.10, 1},
    /* The same ring with chunk GEMMs 5x the transfer: the sends forward
     * what was received, not gated by GEMMs, and the slack absorbs a 10%
     * straggler for the ranks before it: ranks 0-2 end as without it
     * (rank 3 ends 640 us later). Its successors receive its forwarded
     * chunks later, and their chunk GEMMs, handed SMs CTA by CTA, pack
     * into each other's waves less well: ranks 4-6 end 20-130 us later.
     * Gating sends on GEMMs (or a blocking gather) would make every rank
     * wait for rank 3. */
    {"op-ag-gemm.yaml", TPS_METHOD_RING_EXCHANGE, 0, 1.10, 1, 3},
    /* Pipeline RS: every RS kernel starts with a cross-rank flag barrier,
     * so every rank waits for rank 3's chunks. */
    {"op-gemm-rs.yaml", TPS_METHOD_PIPELINE, 0, 1.10, 7},
    /* Ring RS: each owner's reduction waits for every peer's partial; rank
     * 3's partials come late enough to matter only beyond the 1/t slack
     * of the last (local) chunk, so a larger slowdown. */
    {"op-gemm-rs.yaml", TPS_METHOD_RING_EXCHANGE, 0, 1.50, 1},
};

/* Pins: cross-rank coupling (ring receives with launch order, flag
 * barriers, the ring RS reduction), and, for the uncoupled case, that the
 * AG ring forwards without waiting for GEMMs. */
START_TEST(test_straggler_propagates)
{
    const StragglerCase *c = &straggler_cases[_i];
    TpsScenario sc;
    TpsBuilder nominal, slow;
    tps_test_load_scenario(c->scenario, &sc);
    if (c->n_local)
        sc.n = c->n_local * sc.tp;
    TpsOverlapConfig cfg =
        c->method == TPS_METHOD_PIPELINE ? pipeline_cfg(4, 16, TRUE) : ring_cfg(sc.tp);
    op_run(&nominal, &sc, &cfg, G_MAXUINT, 1.0);
    op_run(&slow, &sc, &cfg, 3, c->factor);
    guint later = 0;
    for (guint r = 0; r < sc.tp; r++) {
        TpsTime a = rank_end(&nominal, r), s = rank_end(&slow, r);
        note("straggler %s/%d/%.2f rank %u: %.4f -> %.4f\n", c->scenario, c->method, c->factor, r,
             ms(a), ms(s));
        /* SMs are handed over CTA by CTA (engine-sm.c, gain_sms), and
         * list schedules have Graham's anomalies: a chunk that arrives
         * later can pack into the waves around it better, and a rank may
         * end a few microseconds earlier. Allowed: 0.1%. */
        ck_assert_msg((double)s >= (double)a * 0.999, "rank %u ends at %.4f ms, before %.4f", r,
                      ms(s), ms(a));
        if (r != 3 && s > a)
            later++;
        if (r < c->spared)
            ck_assert_msg(s == a, "rank %u ends later", r);
    }
    ck_assert_int_gt(rank_end(&slow, 3), rank_end(&nominal, 3));
    if (c->later == 0)
        ck_assert_msg(later == 0, "%u other ranks finish later", later);
    else
        ck_assert_msg(later >= c->later, "%u other ranks finish later, expected %u", later,
                      c->later);
    tps_builder_clear(&nominal);
    tps_builder_clear(&slow);
    tps_scenario_clear(&sc);
}
END_TEST

/* Control: without cross-rank coupling after the GEMM (the GEMM alone)
 * the other ranks are unaffected by the slow rank. */
START_TEST(test_straggler_uncoupled)
{
    TpsScenario sc;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    TpsBuilder b[2];
    TpsRunStats stats;
    for (guint i = 0; i < 2; i++) {
        tps_builder_init(&b[i], &sc, TPS_STRATEGY_CUSTOM);
        if (i)
            b[i].gemm_slowdown[3] = 1.10;
        tps_op_gemm_alone(&b[i]);
        ck_assert(tps_engine_run(b[i].engine, &stats, NULL));
    }
    for (guint r = 0; r < sc.tp; r++) {
        if (r == 3)
            ck_assert_int_gt(rank_end(&b[1], r), rank_end(&b[0], r));
        else
            ck_assert_int_eq(rank_end(&b[1], r), rank_end(&b[0], r));
    }
    tps_builder_clear(&b[0]);
    tps_builder_clear(&b[1]);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 6. rejected combinations ---- */

#define HEAD "name: t\nhardware: a100-sxm4-80gb\n"
#define MODEL "model: {hidden: 12288, heads: 96, layers: 96, seq_len: 2048}\n"
#define OP_AG "op: {kind: ag_gemm, m: 8192, n: 49152, k: 12288}\n"

typedef struct {
    const char *text;
    const char *message;
} RejectCase;

static const RejectCase reject_cases[] = {
    {HEAD MODEL "parallel: {tp: 8, sp: true}\noverlap:\n  qkv_fprop: {method: pipeline}\n",
     "not allowed for all-gather layers"},
    {HEAD MODEL "parallel: {tp: 8, sp: true}\noverlap:\n  fc1_fprop: {method: pipeline}\n",
     "not allowed for all-gather layers"},
    {HEAD OP_AG "parallel: {tp: 8}\noverlap:\n  op: {method: pipeline}\n",
     "not allowed for all-gather layers"},
    {HEAD MODEL "parallel: {tp: 16, sp: true}\noverlap:\n  proj_fprop: {method: pipeline}\n",
     "single-node"},
    {HEAD MODEL "parallel: {tp: 16, sp: true}\noverlap:\n  qkv_fprop: {method: ring_exchange}\n",
     "single-node"},
    {HEAD MODEL "parallel: {tp: 8}\noverlap:\n  proj_fprop: {method: pipeline}\n",
     "needs sequence parallelism"},
};

/* Pins: the scenario loader's checks of TE's rules. */
START_TEST(test_rejected_overlap)
{
    const RejectCase *c = &reject_cases[_i];
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_scenario_file_load_string("bad", c->text, -1, &sc, &error);
    ck_assert_msg(!ok, "accepted: %s", c->text);
    ck_assert_ptr_nonnull(error);
    ck_assert_msg(strstr(error->message, c->message), "'%s' lacks '%s'", error->message,
                  c->message);
    tps_scenario_clear(&sc);
}
END_TEST

typedef struct {
    const char *text;
    const char *strategy;
    const char *message[2];
} SelectCase;

static const SelectCase select_cases[] = {
    {HEAD MODEL "parallel: {tp: 16, sp: true}\n", "te-default", {"single-node", "NVLink domain"}},
    {HEAD MODEL "parallel: {tp: 16, sp: true}\n", "ring-ag", {"single-node", "NVLink domain"}},
    {HEAD MODEL "parallel: {tp: 8, sp: true}\n", "custom", {"needs an overlap: map", NULL}},
    {HEAD OP_AG "parallel: {tp: 8}\n", "ring-rs", {"does not apply", "ag_gemm"}},
    {HEAD OP_AG "parallel: {tp: 8}\n", "pipeline-rs", {"does not apply", NULL}},
};

/* Pins: tps_strategy_applies (single NVLink domain for userbuffers
 * presets, custom needs a map, op kinds of each preset). */
START_TEST(test_rejected_strategy)
{
    const SelectCase *c = &select_cases[_i];
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("s", c->text, -1, &sc, &error), "%s",
                  error ? error->message : "");
    const char *const names[] = {c->strategy, NULL};
    const TpsStrategy **got = tps_strategy_select(&sc, names, &error);
    ck_assert_ptr_null(got);
    ck_assert_ptr_nonnull(error);
    for (guint i = 0; i < 2; i++)
        if (c->message[i])
            ck_assert_msg(strstr(error->message, c->message[i]), "'%s' lacks '%s'", error->message,
                          c->message[i]);
    /* The same scenario without a request never lists the preset. */
    g_autofree const TpsStrategy **all = tps_strategy_select(&sc, NULL, NULL);
    ck_assert_ptr_nonnull(all);
    for (guint i = 0; all[i]; i++)
        ck_assert_str_ne(all[i]->name, c->strategy);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 7. presets on GPT-3 175B ---- */

/* Pins: the presets' per-GEMM tables end to end: userbuffers overlap hides
 * more than Megatron's NCCL schedule, and ring exchange shortens the
 * forward that Megatron runs blocking. */
START_TEST(test_presets_gpt3)
{
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    g_autofree const TpsStrategy **list = tps_strategy_select(&sc, NULL, &error);
    ck_assert_ptr_nonnull(list);
    TpsResult megatron = {0}, te = {0}, ring = {0};
    guint n = 0;
    gboolean seen[3] = {FALSE, FALSE, FALSE};
    for (guint i = 0; list[i]; i++, n++) {
        TpsResult r;
        ck_assert_msg(tps_simulate(&sc, list[i], &r, &error), "%s: %s", list[i]->name,
                      error ? error->message : "");
        note("%-12s fwd %.4f bwd %.4f exposed %.4f comm %.4f step %.3f\n", list[i]->name,
             r.forward_ms, r.backward_ms, r.exposed_comm_ms, r.tp_comm_ms, r.step_time_s);
        ck_assert(r.forward_ms > 0 && r.backward_ms > 0);
        ck_assert(r.tp_comm_ms > 0);
        ck_assert_msg(r.exposed_comm_ms <= r.tp_comm_ms + 1e-9, "%s: exposed %f > comm %f",
                      list[i]->name, r.exposed_comm_ms, r.tp_comm_ms);
        if (strcmp(list[i]->name, "megatron") == 0)
            megatron = r, seen[0] = TRUE;
        if (strcmp(list[i]->name, "te-default") == 0)
            te = r, seen[1] = TRUE;
        if (strcmp(list[i]->name, "ring-ag") == 0)
            ring = r, seen[2] = TRUE;
    }
    ck_assert(seen[0] && seen[1] && seen[2]);
    /* Every implemented SP preset except custom (no map) applies. */
    ck_assert_uint_ge(n, 8);
    ck_assert_msg(te.exposed_comm_ms < megatron.exposed_comm_ms, "te-default %f >= megatron %f",
                  te.exposed_comm_ms, megatron.exposed_comm_ms);
    ck_assert_msg(ring.forward_ms < megatron.forward_ms, "ring-ag %f >= megatron %f",
                  ring.forward_ms, megatron.forward_ms);
    /* te-default adds the pipeline RS of proj_fprop and fc2_fprop (and the
     * bulk backward) to ring-ag's AG overlap: shorter forward, less
     * exposed. */
    ck_assert_msg(te.forward_ms < ring.forward_ms, "te-default %f >= ring-ag %f", te.forward_ms,
                  ring.forward_ms);
    ck_assert_msg(te.exposed_comm_ms < ring.exposed_comm_ms, "te-default %f >= ring-ag %f",
                  te.exposed_comm_ms, ring.exposed_comm_ms);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 8. the method table ---- */

/* What each method is, written out by hand from Transformer Engine's rules
 * (real-schedules.md section 2) and the presets' knobs (design.md). */
typedef struct {
    TpsMethod id;
    const char *name;
    /* '1' where it may be set, in TpsGemmSlot order: qkv_fprop fc1_fprop
     * proj_fprop fc2_fprop proj_dgrad fc2_dgrad qkv_dgrad fc1_dgrad
     * qkv_wgrad fc1_wgrad. */
    const char *slots;
    gboolean op_ag, op_rs;
    gboolean has_splits, splits_per_rank, has_sms;
    guint num_splits, num_sm, cga_size;
    gboolean margin, use_ce, aggregate;
    TpsMethodGemmFunc ag_gemm, gemm_rs;
    TpsMethodBulkFunc bulk;
    /* The loader's message where it is rejected on a slot other than a
     * wgrad, after "overlap.<slot>: ". */
    const char *rejected;
} MethodCase;

static const MethodCase method_cases[] = {
    {TPS_METHOD_NONE, "none", "1111111111", TRUE, TRUE, FALSE, FALSE, FALSE, 0, 0, 2, FALSE, TRUE,
     FALSE, NULL, NULL, NULL, NULL},
    /* TE 2.x get_default_config for ring_exchange: num_sm 1, cga_size 1,
     * no SM margin (base.py, since TE 1.9 for num_sm and cga_size). */
    {TPS_METHOD_RING_EXCHANGE, "ring_exchange", "1111111100", TRUE, TRUE, TRUE, TRUE, FALSE, 0, 1,
     1, FALSE, TRUE, FALSE, tps_overlap_ring_exchange_ag, tps_overlap_ring_exchange_rs, NULL,
     "method 'ring_exchange' only applies to GEMMs with an all-gather or reduce-scatter of their "
     "own"},
    {TPS_METHOD_PIPELINE, "pipeline", "0011001100", FALSE, TRUE, TRUE, FALSE, TRUE, 4, 16, 2, TRUE,
     TRUE, FALSE, NULL, tps_overlap_pipeline_rs, NULL,
     "method 'pipeline' is not allowed for all-gather layers (Transformer Engine rejects it); use "
     "ring_exchange"},
    {TPS_METHOD_BULK, "bulk", "0000001111", FALSE, FALSE, FALSE, FALSE, TRUE, 0, 16, 2, TRUE, TRUE,
     FALSE, NULL, NULL, tps_overlap_bulk,
     "method 'bulk' only applies to qkv_dgrad, fc1_dgrad, qkv_wgrad and fc1_wgrad, whose "
     "communication does not depend on the GEMM"},
};
G_STATIC_ASSERT(G_N_ELEMENTS(method_cases) == TPS_METHOD_COUNT);

/* Pins: every row of the method table (slots, op kinds, flags, defaults,
 * builders), its lookups and tps_method_names. */
START_TEST(test_method_row)
{
    const MethodCase *c = &method_cases[_i];
    const TpsMethodInfo *m = tps_method_info(c->id);
    ck_assert_int_eq(m->id, c->id);
    ck_assert_str_eq(m->name, c->name);
    ck_assert_str_eq(tps_method_names[c->id], c->name);
    ck_assert_ptr_eq(tps_method_lookup(c->name), m);
    ck_assert_ptr_nonnull(m->summary);
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        ck_assert_msg(tps_method_allows(m, s, TPS_OP_AG_GEMM) == (c->slots[s] == '1'), "%s on %s",
                      c->name, tps_gemm_slot_names[s]);
    ck_assert_int_eq(tps_method_allows(m, TPS_GEMM_OP, TPS_OP_AG_GEMM), c->op_ag);
    ck_assert_int_eq(tps_method_allows(m, TPS_GEMM_OP, TPS_OP_GEMM_RS), c->op_rs);
    ck_assert_int_eq(m->has_splits, c->has_splits);
    ck_assert_int_eq(m->splits_per_rank, c->splits_per_rank);
    ck_assert_int_eq(m->has_sms, c->has_sms);
    ck_assert_int_eq(m->defaults.method, c->id);
    ck_assert_uint_eq(m->defaults.num_splits, c->num_splits);
    ck_assert_uint_eq(m->defaults.num_sm, c->num_sm);
    ck_assert_uint_eq(m->defaults.cga_size, c->cga_size);
    ck_assert_int_eq(m->defaults.set_sm_margin, c->margin);
    ck_assert_int_eq(m->defaults.use_ce, c->use_ce);
    ck_assert_int_eq(m->defaults.aggregate, c->aggregate);
    ck_assert(m->ag_gemm == c->ag_gemm);
    ck_assert(m->gemm_rs == c->gemm_rs);
    ck_assert(m->bulk == c->bulk);
    if (c->rejected)
        ck_assert_str_eq(m->rejected, c->rejected);
    else
        ck_assert_ptr_null(m->rejected);
}
END_TEST

/* Pins: the table has no row that a graph could not build: wherever a
 * method other than none may be set, the builder that slot calls is
 * there (AG+GEMM for the GEMMs fed by an all-gather, GEMM+RS for the
 * row-parallel forward, GEMM+RS or bulk for the column-parallel dgrad,
 * bulk for wgrad); none has none (NCCL). Also the unknown names. */
START_TEST(test_method_builders)
{
    /* The builder each slot calls, by hand from layer.c: 'a' AG+GEMM, 'r'
     * GEMM+RS, 'd' GEMM+RS or bulk, 'b' bulk. */
    static const char role[] = "aarraaddbb";
    G_STATIC_ASSERT(sizeof role - 1 == TPS_GEMM_OP);
    for (guint i = 0; i < TPS_METHOD_COUNT; i++) {
        const TpsMethodInfo *m = tps_method_info(i);
        if (i == TPS_METHOD_NONE) {
            ck_assert(m->ag_gemm == NULL && m->gemm_rs == NULL && m->bulk == NULL);
            continue;
        }
        ck_assert_msg(m->ag_gemm || m->gemm_rs || m->bulk, "%s has no builder", m->name);
        ck_assert_ptr_nonnull(m->rejected);
        for (guint s = 0; s < TPS_GEMM_OP; s++) {
            if (!tps_method_allows(m, s, TPS_OP_AG_GEMM))
                continue;
            gboolean ok = role[s] == 'a'   ? m->ag_gemm != NULL
                          : role[s] == 'r' ? m->gemm_rs != NULL
                          : role[s] == 'd' ? m->gemm_rs != NULL || m->bulk != NULL
                                           : m->bulk != NULL;
            ck_assert_msg(ok, "%s on %s has no builder", m->name, tps_gemm_slot_names[s]);
        }
        if (tps_method_allows(m, TPS_GEMM_OP, TPS_OP_AG_GEMM))
            ck_assert_ptr_nonnull(m->ag_gemm);
        if (tps_method_allows(m, TPS_GEMM_OP, TPS_OP_GEMM_RS))
            ck_assert_ptr_nonnull(m->gemm_rs);
    }
    ck_assert_ptr_null(tps_method_lookup("ring"));
    ck_assert_ptr_null(tps_method_lookup(""));
    ck_assert_ptr_null(tps_method_names[TPS_METHOD_COUNT]);
    g_autofree char *all = tps_method_join((1u << TPS_METHOD_COUNT) - 1, "");
    ck_assert_str_eq(all, "none, ring_exchange, pipeline or bulk");
    g_autofree char *two = tps_method_join((1u << TPS_METHOD_NONE) | (1u << TPS_METHOD_BULK), "'");
    ck_assert_str_eq(two, "'none' or 'bulk'");
    g_autofree char *none = tps_method_join(0, "'");
    ck_assert_str_eq(none, "");
}
END_TEST

/* Pins: the loader takes its slot rules and messages from the table: every
 * method on every model slot and on the op slot of both kinds is accepted
 * exactly where method_cases says, and rejected with the method's message
 * (a wgrad slot's own message there). */
START_TEST(test_method_loader)
{
    const MethodCase *c = &method_cases[_i % TPS_METHOD_COUNT];
    const guint place = _i / TPS_METHOD_COUNT; /* model slots, then op ag_gemm, op gemm_rs */
    const gboolean op = place >= TPS_GEMM_OP;
    const TpsGemmSlot slot = op ? TPS_GEMM_OP : place;
    const gboolean allowed = !op                    ? c->slots[place] == '1'
                             : place == TPS_GEMM_OP ? c->op_ag
                                                    : c->op_rs;
    g_autofree char *text = g_strdup_printf(
        HEAD "%s"
             "parallel: {tp: 8, sp: true}\noverlap:\n  %s: {method: %s}\n",
        !op                    ? MODEL
        : place == TPS_GEMM_OP ? OP_AG
                               : "op: {kind: gemm_rs, m: 8192, n: 49152, k: 12288}\n",
        tps_gemm_slot_names[slot], c->name);
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_scenario_file_load_string("m", text, -1, &sc, &error);
    ck_assert_msg(ok == allowed, "%s on place %u: %s", c->name, place,
                  error ? error->message : "accepted");
    if (!allowed) {
        const gboolean wgrad = slot == TPS_GEMM_QKV_WGRAD || slot == TPS_GEMM_FC1_WGRAD;
        g_autofree char *want = g_strdup_printf(
            "overlap.%s: %s", tps_gemm_slot_names[slot],
            wgrad ? "only 'bulk' or 'none' apply (the wgrad GEMM hides the bulk reduce-scatter "
                    "of the dgrad output; its own output is not communicated)"
                  : c->rejected);
        ck_assert_msg(strstr(error->message, want), "'%s' lacks '%s'", error->message, want);
    } else {
        ck_assert_int_eq(sc.overlap[slot].method, c->id);
    }
    tps_scenario_clear(&sc);
}
END_TEST

typedef struct {
    const char *strategy;
    TpsGemmSlot slot;
    TpsMethod method;
    guint num_splits, num_sm;
    gboolean margin;
    guint cga_size;
} PresetCase;

/* Expected values: Transformer Engine 2.x's get_default_config() of the
 * slot's default method (base.py): an AG slot's ring_exchange num_sm 1,
 * cga_size 1, no margin, tp = 8 splits; an RS slot (pipeline defaults)
 * num_sm 16, cga_size 2, margin, 4 splits, which a ring_exchange set there
 * takes too (ring-rs: 16 SMs with margin, 8 splits as ring exchange
 * always has); bulk num_sm 16, cga_size 2, margin; te-a100's tuned SMs
 * written without margin. */
static const PresetCase preset_cases[] = {
    {"megatron", TPS_GEMM_QKV_FPROP, TPS_METHOD_NONE, 0, 0, FALSE, 2},
    {"megatron", TPS_GEMM_QKV_DGRAD, TPS_METHOD_NONE, 0, 0, FALSE, 2},
    {"ring-ag", TPS_GEMM_FC2_DGRAD, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, 1},
    {"ring-ag", TPS_GEMM_PROJ_FPROP, TPS_METHOD_NONE, 0, 0, FALSE, 2},
    {"ring-rs", TPS_GEMM_FC2_FPROP, TPS_METHOD_RING_EXCHANGE, 8, 16, TRUE, 2},
    {"pipeline-rs", TPS_GEMM_PROJ_FPROP, TPS_METHOD_PIPELINE, 4, 16, TRUE, 2},
    {"bulk", TPS_GEMM_FC1_WGRAD, TPS_METHOD_BULK, 0, 16, TRUE, 2},
    {"te-default", TPS_GEMM_QKV_FPROP, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, 1},
    {"te-default", TPS_GEMM_FC2_FPROP, TPS_METHOD_PIPELINE, 4, 16, TRUE, 2},
    {"te-default", TPS_GEMM_QKV_DGRAD, TPS_METHOD_BULK, 0, 16, TRUE, 2},
    {"te-default", TPS_GEMM_OP, TPS_METHOD_PIPELINE, 4, 16, TRUE, 2},
    {"te-a100", TPS_GEMM_PROJ_DGRAD, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, 1},
    {"te-a100", TPS_GEMM_PROJ_FPROP, TPS_METHOD_PIPELINE, 4, 4, FALSE, 2},
    {"te-a100", TPS_GEMM_QKV_WGRAD, TPS_METHOD_BULK, 0, 2, FALSE, 2},
    /* A scenario's entry: knobs left out take TE's defaults of the slot
     * (the margin too: on for pipeline and bulk), written ones stay, ring
     * exchange always splits into tp. */
    {"custom", TPS_GEMM_QKV_FPROP, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, 1},
    {"custom", TPS_GEMM_PROJ_FPROP, TPS_METHOD_PIPELINE, 4, 16, TRUE, 2},
    {"custom", TPS_GEMM_FC2_FPROP, TPS_METHOD_PIPELINE, 2, 8, TRUE, 2},
    {"custom", TPS_GEMM_QKV_DGRAD, TPS_METHOD_BULK, 0, 16, TRUE, 2},
    {"custom", TPS_GEMM_QKV_WGRAD, TPS_METHOD_NONE, 0, 0, FALSE, 2},
    /* A column-parallel dgrad that reduce-scatters takes its own method's
     * defaults (TE moves it to that method's list), not bulk's. */
    {"custom", TPS_GEMM_FC1_DGRAD, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, 1},
    {"custom", TPS_GEMM_PROJ_DGRAD, TPS_METHOD_RING_EXCHANGE, 8, 1, FALSE, 4},
    {"custom", TPS_GEMM_FC2_DGRAD, TPS_METHOD_RING_EXCHANGE, 8, 1, TRUE, 1},
};

#define CUSTOM_MAP                                                                                 \
    "overlap:\n"                                                                                   \
    "  qkv_fprop: {method: ring_exchange, num_splits: 3}\n"                                        \
    "  proj_fprop: {method: pipeline}\n"                                                           \
    "  fc2_fprop: {method: pipeline, num_splits: 2, num_sm: 8, set_sm_margin: true}\n"             \
    "  qkv_dgrad: {method: bulk}\n"                                                                \
    "  proj_dgrad: {method: ring_exchange, cga_size: 4}\n"                                         \
    "  fc2_dgrad: {method: ring_exchange, set_sm_margin: true}\n"                                  \
    "  fc1_dgrad: {method: ring_exchange}\n"

/* Pins: the presets' per-GEMM configurations start from the method table's
 * defaults (A100's tuned SMs and margins on top), and a scenario's knobs
 * left at 0 are filled from it. */
START_TEST(test_preset_defaults)
{
    const PresetCase *c = &preset_cases[_i];
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string(
                      "p", HEAD MODEL "parallel: {tp: 8, sp: true}\n" CUSTOM_MAP, -1, &sc, &error),
                  "%s", error ? error->message : "");
    const TpsStrategy *strategy = tps_strategy_lookup(c->strategy);
    ck_assert_ptr_nonnull(strategy);
    TpsOverlapConfig out[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(strategy, &sc, out);
    const TpsOverlapConfig *o = &out[c->slot];
    ck_assert_msg(o->method == c->method, "%s %s: method %d", c->strategy,
                  tps_gemm_slot_names[c->slot], o->method);
    ck_assert_uint_eq(o->num_splits, c->num_splits);
    ck_assert_uint_eq(o->num_sm, c->num_sm);
    ck_assert_int_eq(o->set_sm_margin, c->margin);
    ck_assert_uint_eq(o->cga_size, c->cga_size);
    ck_assert_int_eq(o->set, c->method != TPS_METHOD_NONE);
    if (c->method != TPS_METHOD_NONE)
        ck_assert(o->use_ce);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- 6. userbuffers as it runs on A100 (no multicast: IPC, flags) ---- */

/* The op graph of `sc` with `cfg` on a machine with one hardware queue or
 * several; the caller clears `b`. */
static void
op_run_queues(TpsBuilder *b, const TpsScenario *sc, const TpsOverlapConfig *cfg, gboolean single)
{
    g_autoptr(GError) error = NULL;
    TpsRunStats stats;
    tps_builder_init_queues(b, sc, TPS_STRATEGY_CUSTOM, single);
    b->overlap[TPS_GEMM_OP] = *cfg;
    tps_op_graph(b);
    ck_assert_msg(tps_engine_run(b->engine, &stats, &error), "%s", error ? error->message : "");
}

/* Head-of-line blocking: Transformer Engine launches the reduce-scatter of
 * chunk 0, which waits for GEMM chunk 0, before GEMM chunk 1. With one
 * hardware queue (CUDA_DEVICE_MAX_CONNECTIONS=1) GEMM 1 cannot start before
 * that waiting kernel has, i.e. before GEMM 0 ends; with several queues it
 * starts as soon as it is launched, beside GEMM 0. */
START_TEST(test_head_of_line)
{
    TpsScenario sc;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    TpsOverlapConfig cfg = pipeline_cfg(4, 4, FALSE);
    for (guint single = 0; single < 2; single++) {
        TpsBuilder b;
        op_run_queues(&b, &sc, &cfg, single);
        const TpsSpan *g0 = find_span(&b, 0, "op.gemm[0]");
        const TpsSpan *g1 = find_span(&b, 0, "op.gemm[1]");
        const TpsSpan *rs0 = find_span(&b, 0, "op.gemm.rs[0]");
        ck_assert_ptr_nonnull(g0);
        ck_assert_ptr_nonnull(g1);
        ck_assert_ptr_nonnull(rs0);
        if (single) {
            ck_assert_int_ge(rs0->start, g0->end);
            ck_assert_int_ge(g1->start, rs0->start);
        } else {
            ck_assert_int_lt(g1->start, g0->end);
        }
        tps_builder_clear(&b);
    }
    tps_scenario_clear(&sc);
}
END_TEST

/* A receive kernel spins on its flag with one CTA and holds its SM (so do
 * the flag kernels behind the pushes): a ring-exchange chunk GEMM of
 * exactly one wave (m/t = 256 rows, n/t = 108 columns of 128, 256x128
 * tiles: 108 CTAs) needs two waves while any of them holds an SM. The
 * first chunk GEMM starts before the receive of step 0 (launched after it).
 * The first one-CTA kernel inside it takes an SM, so one of its CTAs
 * starts only when that kernel ends, and runs one whole wave from there
 * (engine-sm.c, gain_sms): the GEMM ends at least one wave after the first
 * SM comes back, and at most U later (U ns of SMs held in all). Sharing
 * waves fluidly, it would end after latency + one wave + U / 2. */
START_TEST(test_spin_kernel_holds_sm)
{
    TpsScenario sc;
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    sc.m = 256 * sc.tp;
    sc.n = 128 * 108 * sc.tp;
    sc.k = 4096;
    TpsKernelCost cost;
    tps_cost_gemm(&sc.hardware, sc.dtype, 256, 128 * 108, sc.k, 0, &cost);
    ck_assert_uint_eq(cost.ctas, 108);
    const TpsTime one_wave = cost.wave_ns;
    ck_assert_int_eq(tps_kernel_cost_solo_ns(&sc.hardware, &cost, sc.hardware.sms),
                     cost.fixed_ns + one_wave);

    TpsBuilder b;
    TpsOverlapConfig cfg = ring_cfg(sc.tp);
    op_run_queues(&b, &sc, &cfg, TRUE);
    const TpsSpan *g0 = find_span(&b, 0, "op.gemm[0]");
    ck_assert_ptr_nonnull(g0);
    g_autoptr(GArray) held = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    guint recvs = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        if (sp->rank != 0 || sp->kind != TPS_KIND_COMM)
            continue;
        ck_assert_uint_eq(sp->sms, 1);
        if (strcmp(sp->name, "op.gemm.ag_recv") == 0)
            recvs++;
        TpsInterval iv = {sp->start, sp->end};
        g_array_append_val(held, iv);
    }
    ck_assert_uint_eq(recvs, sc.tp - 1);
    const TpsSpan *spin = find_span(&b, 0, "op.gemm.ag_recv");
    ck_assert_int_gt(spin->start, g0->start);
    ck_assert_int_lt(spin->start, g0->end);
    const TpsTime u = tps_intervals_measure(held, g0->start + cost.fixed_ns, g0->end);
    ck_assert_int_gt(u, 0);
    TpsTime released = TPS_TIME_NEVER;
    for (guint i = 0; i < held->len; i++) {
        const TpsInterval *iv = &g_array_index(held, TpsInterval, i);
        if (iv->end > g0->start + cost.fixed_ns && iv->end < g0->end)
            released = MIN(released, iv->end);
    }
    ck_assert_int_lt(released, g0->end);
    ck_assert_msg(g0->end >= released + one_wave - 2 && g0->end <= released + one_wave + u,
                  "GEMM 0 ended at %" G_GINT64_FORMAT " ns, its first SM back at %" G_GINT64_FORMAT
                  " + one wave %" G_GINT64_FORMAT " (+ up to %" G_GINT64_FORMAT ")",
                  g0->end, released, one_wave, u);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* Behind every copy-engine push, a one-CTA kernel on the send stream
 * raises the receiver's flag; the receiver's spin ends no earlier than that
 * flag kernel. */
START_TEST(test_flag_kernels)
{
    TpsScenario sc;
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    TpsBuilder b;
    TpsOverlapConfig cfg = ring_cfg(sc.tp);
    op_run_queues(&b, &sc, &cfg, TRUE);
    const TpsTime flag = tps_time_from_us(sc.hardware.nccl_hw_latency_us[TPS_PROTO_LL]);
    guint flags = 0;
    TpsTime last_copy_end = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        if (sp->rank != 0 || sp->stream == TPS_STREAM_NONE ||
            strcmp(tps_engine_stream_name(b.engine, sp->stream), "ub_send") != 0)
            continue;
        if (sp->kind == TPS_KIND_COPY) {
            last_copy_end = sp->end;
        } else {
            ck_assert_str_eq(sp->name, "op.gemm.ag_send.flag");
            ck_assert_int_eq(sp->kind, TPS_KIND_COMM);
            ck_assert_uint_eq(sp->sms, 1);
            ck_assert_int_ge(sp->start, last_copy_end);
            ck_assert_int_eq(sp->end - sp->start, flag);
            flags++;
        }
    }
    ck_assert_uint_eq(flags, sc.tp - 1);
    /* Rank 1 receives from rank 0: its first spin outlasts rank 0's first
     * flag kernel. */
    const TpsSpan *flag0 = find_span(&b, 0, "op.gemm.ag_send.flag");
    const TpsSpan *recv1 = find_span(&b, 1, "op.gemm.ag_recv");
    ck_assert_int_ge(recv1->end, flag0->end);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* Ring-exchange reduce-scatter: each step's receive kernel waits for the
 * local partial GEMM of that step and spins until the peer's partial has
 * landed; the final reduction on main (t + 1 slices: t read, one written)
 * starts only after every partial sent to this rank has arrived. */
START_TEST(test_ring_rs_receive_and_reduce)
{
    TpsScenario sc;
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    TpsBuilder b;
    TpsOverlapConfig cfg = ring_cfg(sc.tp);
    op_run_queues(&b, &sc, &cfg, TRUE);
    const TpsSpan *reduce = find_span(&b, 0, "op.gemm.rs_reduce");
    ck_assert_ptr_nonnull(reduce);
    const double slice = (double)(sc.m / sc.tp) * sc.n * tps_dtype_bytes(sc.dtype);
    ck_assert_double_eq_tol(reduce->bytes, (sc.tp + 1.0) * slice, 1.0);
    guint incoming = 0, recvs = 0;
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b.engine); id++) {
        const TpsSpan *sp = tps_engine_span(b.engine, id);
        if (sp->kind == TPS_KIND_COPY && sp->rank != 0 &&
            tps_engine_task_dst_rank(b.engine, id) == 0) {
            ck_assert_int_ge(reduce->start, sp->end);
            incoming++;
        }
        if (sp->rank == 0 && strcmp(sp->name, "op.gemm.rs_recv") == 0) {
            ck_assert_uint_eq(sp->sms, 1);
            ck_assert_int_ge(reduce->start, sp->end);
            recvs++;
        }
    }
    ck_assert_uint_eq(incoming, sc.tp - 1);
    ck_assert_uint_eq(recvs, sc.tp - 1);
    /* Receive i waits for the local GEMM i (it is gated like the send). */
    const TpsSpan *g0 = find_span(&b, 0, "op.gemm[0]");
    const TpsSpan *r0 = find_span(&b, 0, "op.gemm.rs_recv");
    ck_assert_int_ge(r0->start, g0->end);
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

/* The LayerNorm-fed all-gather layers (QKV, FC1 forward): the fused
 * LayerNorm writes into the userbuffer, so nothing is copied in, and the
 * local shard is copied out for backward (a copy engine on the send stream,
 * after the ring) before main goes on. The row-parallel dgrad's all-gather
 * copies grad_output in on main instead. */
START_TEST(test_copy_for_backward)
{
    TpsScenario sc;
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    TpsBuilder b;
    TpsRunStats stats;
    tps_builder_init(&b, &sc, TPS_STRATEGY_RING_AG);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    const double shard = (double)sc.micro_batch * sc.seq_len / sc.tp * sc.hidden * 2;
    static const char *const ln_fed[] = {"l0.qkv_fprop", "l0.fc1_fprop"};
    for (guint i = 0; i < G_N_ELEMENTS(ln_fed); i++) {
        g_autofree char *out = g_strdup_printf("%s.ub_copy_out", ln_fed[i]);
        g_autofree char *in = g_strdup_printf("%s.ub_copy", ln_fed[i]);
        for (guint r = 0; r < sc.tp; r++) {
            const TpsSpan *copy = find_span(&b, r, out);
            ck_assert_ptr_nonnull(copy);
            ck_assert_int_eq(copy->kind, TPS_KIND_COPY);
            ck_assert_double_eq_tol(copy->bytes, shard, 1.0);
            ck_assert_str_eq(tps_engine_stream_name(b.engine, copy->stream), "ub_send");
            ck_assert_ptr_null(find_span(&b, r, in));
        }
    }
    /* Main's next op waits for the copy. */
    const TpsSpan *copy = find_span(&b, 0, "l0.qkv_fprop.ub_copy_out");
    const TpsSpan *attn = find_span(&b, 0, "l0.attn_fwd");
    ck_assert_int_ge(attn->start, copy->end);
    /* The dgrad all-gather of grad_output copies in, on main. */
    const TpsSpan *in = find_span(&b, 0, "l0.proj_dgrad.ub_copy");
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_null(find_span(&b, 0, "l0.proj_dgrad.ub_copy_out"));
    tps_builder_clear(&b);
    tps_scenario_clear(&sc);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("overlap");
    TCase *tc = tcase_create("methods");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_ring_ag_hides_gather);
    tcase_add_test(tc, test_ring_ag_tiny_chunks_lose);
    tcase_add_test(tc, test_chunk_gemm_shape);
    tcase_add_loop_test(tc, test_pipeline_rs_exposes_last_chunk, 0, G_N_ELEMENTS(pipeline_cases));
    tcase_add_test(tc, test_pipeline_rs_split_sweep);
    tcase_add_test(tc, test_sm_margin);
    tcase_add_test(tc, test_ring_exchange_margin);
    tcase_add_test(tc, test_bulk_overlap);
    tcase_add_test(tc, test_copy_engine_vs_sm_sends);
    tcase_add_loop_test(tc, test_straggler_propagates, 0, G_N_ELEMENTS(straggler_cases));
    tcase_add_test(tc, test_straggler_uncoupled);
    suite_add_tcase(s, tc);
    tc = tcase_create("userbuffers-a100");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_head_of_line);
    tcase_add_test(tc, test_spin_kernel_holds_sm);
    tcase_add_test(tc, test_flag_kernels);
    tcase_add_test(tc, test_ring_rs_receive_and_reduce);
    tcase_add_test(tc, test_copy_for_backward);
    suite_add_tcase(s, tc);
    tc = tcase_create("rules");
    tcase_add_loop_test(tc, test_rejected_overlap, 0, G_N_ELEMENTS(reject_cases));
    tcase_add_loop_test(tc, test_rejected_strategy, 0, G_N_ELEMENTS(select_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("table");
    tcase_add_loop_test(tc, test_method_row, 0, G_N_ELEMENTS(method_cases));
    tcase_add_test(tc, test_method_builders);
    tcase_add_loop_test(tc, test_method_loader, 0, (TPS_GEMM_OP + 2) * TPS_METHOD_COUNT);
    tcase_add_loop_test(tc, test_preset_defaults, 0, G_N_ELEMENTS(preset_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("presets");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_presets_gpt3);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
