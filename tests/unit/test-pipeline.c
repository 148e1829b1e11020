/* sched/pipeline: the step frame. Expected values are derived by hand from
 * the schedule's definition, with piece times chosen so that the formulas
 * are exact (P2P transfers are tiny against the chunks). */
#include <check.h>

#include "test-util.h"
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "io/input/scenario-file.h"
#include "sched/data-parallel.h"
#include "sched/pipeline-private.h"
#include "sched/pipeline.h"
#include "sched/placement.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* A small GPT on one A100 node per stage: 16 layers, hidden 1024, so
 * activations crossing a stage boundary are 2 MiB (a few us on IB). */
static void
model(TpsScenario *sc, guint hidden, guint tp, guint pp, guint vpp, guint dp, guint64 global)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text =
        g_strdup_printf("name: small\nhardware: a100-sxm4-80gb\n"
                        "model: {hidden: %u, heads: 16, layers: 16, seq_len: 1024}\n"
                        "training: {micro_batch: 1, global_batch: %" G_GUINT64_FORMAT "}\n"
                        "parallel: {tp: %u, sp: true, pp: %u, vpp: %u, dp: %u}\n",
                        hidden, global, tp, pp, vpp, dp);
    ck_assert_msg(tps_scenario_file_load_string("small", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

static void
small(TpsScenario *sc, guint tp, guint pp, guint vpp, guint dp, guint64 global)
{
    model(sc, 1024, tp, pp, vpp, dp, global);
}

static const TpsPieceTimes ms_pieces = {
    .layer_fwd = 1000000, /* 1 ms */
    .layer_bwd = 2000000, /* 2 ms */
};

/* The step figures of a faster path (`fast`: the replay, or the periodic
 * extrapolation) against the engine's simulation of every micro-batch
 * (`full`), `what` naming the case. The replay runs every task, so its
 * figures are the engine's to the bit and its task count equal; the
 * extrapolation runs a shorter schedule (fewer tasks) and adds whole
 * periods, its bubble fraction a quotient of the same times summed in
 * another order. */
static void
assert_same_step(const TpsStepResult *fast, const TpsStepResult *full, gboolean replay,
                 const char *what)
{
    ck_assert_msg(fast->step == full->step, "%" G_GINT64_FORMAT " != %" G_GINT64_FORMAT ": %s",
                  fast->step, full->step, what);
    ck_assert_msg(fast->compute_end == full->compute_end, "%s", what);
    ck_assert_msg(fast->dp_exposed == full->dp_exposed, "%s", what);
    ck_assert_msg(fast->optimizer == full->optimizer, "%s", what);
    ck_assert_msg(fast->param_gather_exposed == full->param_gather_exposed, "%s", what);
    ck_assert_msg(fast->memory.total == full->memory.total, "%s", what);
    ck_assert_msg(fast->busiest_stage == full->busiest_stage, "%s", what);
    if (replay) {
        ck_assert_msg(fast->bubble_fraction == full->bubble_fraction, "%s", what);
        ck_assert_msg(fast->tasks == full->tasks, "%s", what);
    } else {
        ck_assert_msg(fabs(fast->bubble_fraction - full->bubble_fraction) <= 1e-12, "%s", what);
        ck_assert_msg(fast->tasks <= full->tasks, "%s", what);
    }
}

/* scenarios/NAME of the source tree into `sc`. */
static void
load_scenario(TpsScenario *sc, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", name, NULL);
    ck_assert_msg(tps_scenario_file_load(path, sc, &error), "%s", error ? error->message : "");
}

static void
load_1t(TpsScenario *sc)
{
    load_scenario(sc, "gpt-1t.yaml");
}

START_TEST(test_no_pipeline_is_the_sum)
{
    /* pp = 1, dp = 1: micro-batches in sequence; the step is
     * m x (L x (f + b) + embedding + head) + optimizer. */
    TpsScenario sc;
    small(&sc, 8, 1, 1, 1, 6);
    TpsPieceTimes pc = ms_pieces;
    pc.emb_fwd = 10000;
    pc.emb_bwd = 20000;
    pc.head_fwd = 300000;
    pc.head_bwd = 600000;
    TpsStepResult r;
    ck_assert(tps_pipeline_simulate(&sc, &pc, &r, NULL));
    const TpsTime micro =
        16 * (pc.layer_fwd + pc.layer_bwd) + pc.emb_fwd + pc.emb_bwd + pc.head_fwd + pc.head_bwd;
    ck_assert_int_eq(r.compute_end, 6 * micro);
    ck_assert_int_eq(r.step, 6 * micro + r.optimizer);
    ck_assert(r.optimizer > 0);
    ck_assert_double_eq_tol(r.bubble_fraction, 0.0, 1e-12);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- a model that mixes dense and MoE layers ---- */

/* 8 layers of 1024 (its first three dense: DeepSeek-V3's form), 4 experts
 * of 1024 (top 2), over `pp` x `vpp`, dp 2 (`extra`: more training keys),
 * micro micro-batches a replica. */
static void
mixed_model(TpsScenario *sc, guint pp, guint vpp, guint64 micro, const char *extra)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: mixed\nhardware: a100-sxm4-80gb\n"
        "model: {hidden: 1024, heads: 16, layers: 8, seq_len: 1024, "
        "moe: {experts: 4, top_k: 2, ffn_hidden: 1024, layer_freq: [0, 0, 0, 1, 1, 1, 1, 1]}}\n"
        "training: {micro_batch: 1, global_batch: %" G_GUINT64_FORMAT "%s}\n"
        "parallel: {pp: %u, vpp: %u, dp: 2, ep: 2}\n",
        2 * micro, extra, pp, vpp);
    ck_assert_msg(tps_scenario_file_load_string("mixed", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* Layer times of the two kinds with no common factor (an MoE layer's,
 * then a dense one's), in milliseconds and in microseconds. */
static const TpsPieceTimes mixed_pieces[] = {
    {.layer_fwd = 1234567,
     .layer_bwd = 2469131,
     .dense_fwd = 456791,
     .dense_bwd = 913577,
     .emb_fwd = 12347,
     .emb_bwd = 23459,
     .head_fwd = 345679,
     .head_bwd = 691357},
    {.layer_fwd = 1009,
     .layer_bwd = 2003,
     .dense_fwd = 409,
     .dense_bwd = 811,
     .emb_fwd = 101,
     .emb_bwd = 211,
     .head_fwd = 3001,
     .head_bwd = 6007},
};

/* Where a chunk's layers start (Megatron's get_transformer_layer_offset)
 * and which are dense: pp 2 x vpp 2 of 8 layers, 2 a chunk; virtual
 * stages 0, 1, 2, 3 are (stage 0, chunk 0), (1, 0), (0, 1), (1, 1) and
 * start at layers 0, 2, 4, 6: the dense layers 0, 1, 2 are (0, 0)'s two
 * and (1, 0)'s first. A chunk's op is its layers' times: (1, 0)'s forward
 * one dense and one MoE layer, 456791 + 1234567 = 1691358, its backward
 * 913577 + 2469131 = 3382708; (0, 0)'s forward two dense ones and the
 * embedding, 2 x 456791 + 12347 = 925929; (1, 1)'s backward two MoE ones
 * and the head, 2 x 2469131 + 691357 = 5629619. Uneven, pp 3 with 3 on
 * the first stage and 3 on the last: stage 1 holds layers 3 and 4, stage 0
 * the three dense ones. */
START_TEST(test_mixed_chunks)
{
    g_auto(TpsScenario) sc = {0};
    mixed_model(&sc, 2, 2, 4, "");
    static const guint first[2][2] = {{0, 4}, {2, 6}}, dense[2][2] = {{2, 0}, {1, 0}};
    for (guint s = 0; s < 2; s++)
        for (guint c = 0; c < 2; c++) {
            ck_assert_uint_eq(tps_scenario_chunk_first_layer(&sc, s, c), first[s][c]);
            ck_assert_uint_eq(tps_scenario_chunk_dense_layers(&sc, s, c), dense[s][c]);
        }
    const TpsPieceTimes *pc = &mixed_pieces[0];
    TpsPipePiece out[8];
    const TpsPipeOp ops[4] = {{0, 0, FALSE}, {0, 0, TRUE}, {0, 0, FALSE}, {1, 0, TRUE}};
    const guint stage[4] = {1, 1, 0, 1};
    const TpsTime want[4] = {1691358, 3382708, 925929, 5629619};
    for (guint i = 0; i < 4; i++) {
        ck_assert_uint_eq(tps_pipe_op_pieces(&sc, pc, stage[i], &ops[i], 4, out), 1);
        ck_assert_int_eq(out[0].ns, want[i]);
    }
    g_auto(TpsScenario) uneven = {0};
    g_autoptr(GError) error = NULL;
    const char *text = "name: u\nhardware: a100-sxm4-80gb\n"
                       "model: {hidden: 1024, heads: 16, layers: 8, seq_len: 1024, "
                       "moe: {experts: 4, layer_freq: [0, 0, 0, 1, 1, 1, 1, 1]}}\n"
                       "training: {micro_batch: 1, global_batch: 4}\n"
                       "parallel: {pp: 3, first_stage_layers: 3, last_stage_layers: 3}\n";
    ck_assert_msg(tps_scenario_file_load_string("u", text, -1, &uneven, &error), "%s",
                  error ? error->message : "");
    ck_assert_uint_eq(tps_scenario_chunk_first_layer(&uneven, 1, 0), 3);
    ck_assert_uint_eq(tps_scenario_chunk_first_layer(&uneven, 2, 0), 5);
    ck_assert_uint_eq(tps_scenario_stage_dense_layers(&uneven, 0), 3);
    ck_assert_uint_eq(tps_scenario_stage_dense_layers(&uneven, 1), 0);
}
END_TEST

/* Layouts of the mixed model: interleaved, and with the gradient buckets
 * of the last backward (overlap_grad_reduce, the distributed optimizer's
 * parameter all-gathers in the first forwards), whose layers are of both
 * kinds. */
static const struct {
    guint pp, vpp;
    guint64 micro;
    const char *extra;
} mixed_layouts[] = {
    {2, 2, 8, ""},
    {4, 1, 8, ", overlap_grad_reduce: true, distributed_optimizer: true"},
    {2, 1, 6,
     ", overlap_grad_reduce: true, distributed_optimizer: true, overlap_param_gather: true, "
     "ddp_bucket_size: 2000000"},
    {1, 1, 4, ", overlap_grad_reduce: true, ddp_bucket_size: 3000000"},
};

START_TEST(test_mixed_is_exact)
{
    /* The replay and the extrapolation of a step whose chunks mix the two
     * kinds of layer: the engine's simulation of every micro-batch, to the
     * nanosecond. */
    const guint l = _i / G_N_ELEMENTS(mixed_pieces), piece = _i % G_N_ELEMENTS(mixed_pieces);
    const TpsPieceTimes *pc = &mixed_pieces[piece];
    g_auto(TpsScenario) sc = {0};
    mixed_model(&sc, mixed_layouts[l].pp, mixed_layouts[l].vpp, mixed_layouts[l].micro,
                mixed_layouts[l].extra);
    TpsStepResult full, fast, periodic;
    gboolean replayed;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_periodic(&sc, pc, &periodic, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_replay(&sc, pc, &fast, &replayed, &error), "%s",
                  error->message);
    g_autofree char *what = g_strdup_printf("layout %u pieces %u", l, piece);
    assert_same_step(&periodic, &full, FALSE, what);
    if (replayed)
        assert_same_step(&fast, &full, TRUE, what);
    /* With millisecond chunks the replay holds (no two flows meet). */
    ck_assert_msg(replayed || piece == 1, "%s", what);
    /* Not the step of layers all of one kind: with millisecond chunks,
     * which pace the step, the faster dense layers make it shorter (with
     * microsecond ones the transfers and the DP tail pace it). */
    if (piece != 0)
        return;
    TpsPieceTimes uniform = *pc;
    uniform.dense_fwd = uniform.layer_fwd;
    uniform.dense_bwd = uniform.layer_bwd;
    TpsStepResult same;
    ck_assert(tps_pipeline_simulate_full(&sc, &uniform, &same, NULL));
    ck_assert_msg(same.step > full.step,
                  "uniform %" G_GINT64_FORMAT " mixed %" G_GINT64_FORMAT ": %s", same.step,
                  full.step, what);
}
END_TEST

typedef struct {
    guint pp, vpp;
    guint64 micro;
} BubbleCase;

static const BubbleCase bubble_cases[] = {
    {2, 1, 4}, {4, 1, 8}, {4, 1, 16}, {8, 1, 8},  {8, 1, 32},
    {2, 2, 4}, {4, 2, 8}, {4, 4, 16}, {8, 2, 32},
};

/* The optimizer's .item() of the gradient norm blocks the host until the
 * norm's all-reduce has ended, so what follows waits for its issue. A
 * model of hidden 64 keeps every optimizer kernel shorter than a launch
 * call. Its 16 layers have 196 parameter tensors, so apex's multi-tensor
 * ops take ceil(196 / 110) = 2 l2norm kernels, ceil(196 / 36) = 6 Adam
 * kernels and ceil(196 / 64) = 4 copy kernels (the tensor limit binds, not
 * the 320 chunks). After the chunks end, the GPU runs what the host issued
 * long before: the two l2norm kernels, the squared norm (1 ns), the
 * all-reduce (ending at E). Then the host reads the norm (memcpy_us),
 * issues Adam (the op's own elementwise_us - launch_us, then 6 launches),
 * the copy (the same with 4) and the zeroing of the gradient buffer
 * (elementwise_us); each kernel ends before the next issue, so the last
 * one starts when the host has done all that. Without the blocking read
 * the host would have issued everything during the chunks. */
START_TEST(test_optimizer_item_blocks)
{
    TpsScenario sc;
    model(&sc, 64, 8, 1, 1, 1, 1);
    const TpsHardware *hw = &sc.hardware;
    TpsStepResult r;
    ck_assert(tps_pipeline_simulate(&sc, &ms_pieces, &r, NULL));
    const double params = tps_stage_params(&sc, 0);
    TpsKernelCost l2, zero;
    tps_cost_memory(hw, 4.0 * params / 2, &l2);
    tps_cost_memory(hw, 4.0 * params, &zero);
    TpsCollPlan plan;
    tps_coll_plan(hw, TPS_COLL_ALL_REDUCE, 4.0, 8, &plan);
    const TpsTime e =
        2 * tps_kernel_cost_solo_ns(hw, &l2, hw->sms) + 1 + tps_coll_time_ns(hw, &plan);
    const double op = hw->host_elementwise_us - hw->host_launch_us;
    const TpsTime host = tps_time_from_us(hw->host_memcpy_us) + tps_time_from_us(op) +
                         6 * tps_time_from_us(hw->host_launch_us) + tps_time_from_us(op) +
                         4 * tps_time_from_us(hw->host_launch_us) +
                         tps_time_from_us(hw->host_elementwise_us);
    ck_assert_int_eq(r.optimizer, e + host + tps_kernel_cost_solo_ns(hw, &zero, hw->sms));
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_bubble)
{
    /* Equal stages on idle links: the 1F1B bubble is (p-1)(F+B) over a
     * pipeline of m(F+B) + (p-1)(F+B) (fraction (p-1)/(m+p-1)); the
     * interleaved schedule divides the bubble time by vpp (arXiv:2104.04473
     * section 2.2). F and B are the times of one stage's share of the model. */
    const BubbleCase *c = &bubble_cases[_i];
    TpsScenario sc;
    small(&sc, 8, c->pp, c->vpp, 1, c->micro);
    TpsStepResult r;
    ck_assert(tps_pipeline_simulate(&sc, &ms_pieces, &r, NULL));
    const double fb = 16.0 / c->pp * 3e6; /* ns of one stage's forward + backward */
    const double bubble = (c->pp - 1) * fb / c->vpp;
    const double expect = bubble / (c->micro * fb + bubble);
    /* P2P transfers (2 MiB, a few us) make the measured bubble slightly
     * larger, never smaller. */
    ck_assert_msg(r.bubble_fraction >= expect - 1e-9 && r.bubble_fraction <= expect + 0.01,
                  "pp %u vpp %u m %" G_GUINT64_FORMAT ": bubble %.5f, expected %.5f", c->pp, c->vpp,
                  c->micro, r.bubble_fraction, expect);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_dp_overlap)
{
    /* 8 replicas of a model wide enough (hidden 8192: 100M parameters per
     * GPU and layer, more than a 40M bucket) that every layer is a bucket:
     * with a long backward the buckets are reduced under the last
     * micro-batch's backward and little is exposed; with a short one, most
     * of the reduction comes after it. Without overlap the whole reduction
     * follows. */
    TpsScenario sc;
    model(&sc, 8192, 8, 2, 1, 8, 64);
    TpsStepResult slow, fast, serial;
    TpsPieceTimes long_bwd = {.layer_fwd = 1000000, .layer_bwd = 100000000};
    TpsPieceTimes short_bwd = {.layer_fwd = 1000, .layer_bwd = 2000};
    ck_assert(tps_pipeline_simulate(&sc, &long_bwd, &slow, NULL));
    ck_assert(tps_pipeline_simulate(&sc, &short_bwd, &fast, NULL));
    sc.overlap_grad_reduce = FALSE;
    ck_assert(tps_pipeline_simulate(&sc, &long_bwd, &serial, NULL));
    ck_assert(slow.dp_exposed > 0);
    ck_assert_msg(slow.dp_exposed * 4 < serial.dp_exposed,
                  "overlapped %" G_GINT64_FORMAT " vs serial %" G_GINT64_FORMAT, slow.dp_exposed,
                  serial.dp_exposed);
    ck_assert(fast.dp_exposed * 2 > serial.dp_exposed);
    tps_scenario_clear(&sc);
}
END_TEST

/* hidden 8192 at tp 8, per GPU and layer: GEMMs 12 h^2 / 8 =
 * 100,663,296, LayerNorms 4 h = 32,768, biases (3 h + 4 h) / 8 + 2 h =
 * 7,168 + 16,384: 100,719,616 parameters, above a 40M bucket: a bucket a
 * layer. The embedding 51200 x 8192 / 8 + 1024 x 8192 = 60,817,408; the
 * head of one tied stage, the final LayerNorm, 2 h = 16,384. */
#define WIDE_LAYER 100719616.0
#define WIDE_EMBEDDING 60817408.0
#define WIDE_HEAD 16384.0

START_TEST(test_param_gather_overlap)
{
    /* overlap_param_gather, one stage, 8 replicas: 16 buckets of one
     * layer, all-gathered back to back from the step's start, in forward
     * order: the first (layer 0 and the embedding) A0 = AG(2 x (layer +
     * embedding) bytes), then 14 of A = AG(2 x layer), then the last
     * (layer 15 and the head) A15. Forward k starts at max(end of
     * forward k - 1, A0 + ... + Ak). With forwards F longer than any
     * A, only the first bucket waits: A0. With forwards of 1 us, each
     * waits for its bucket: the first forward of layer 15 starts at
     * A0 + 14 A + A15 and the forwards before it took 15 F, so the wait
     * is that sum less 15 F. */
    TpsScenario sc;
    model(&sc, 8192, 8, 1, 1, 8, 64);
    sc.distributed_optimizer = TRUE;
    const TpsTime a0 =
        tps_dp_collective_ns(&sc, TPS_COLL_ALL_GATHER, 2.0 * (WIDE_LAYER + WIDE_EMBEDDING));
    const TpsTime a = tps_dp_collective_ns(&sc, TPS_COLL_ALL_GATHER, 2.0 * WIDE_LAYER);
    const TpsTime a15 =
        tps_dp_collective_ns(&sc, TPS_COLL_ALL_GATHER, 2.0 * (WIDE_LAYER + WIDE_HEAD));
    const TpsTime all = tps_dp_collective_ns(&sc, TPS_COLL_ALL_GATHER,
                                             2.0 * (16 * WIDE_LAYER + WIDE_EMBEDDING + WIDE_HEAD));
    ck_assert(a0 > a && a > 0);
    TpsPieceTimes slow = {.layer_fwd = 100000000, .layer_bwd = 200000000};
    TpsPieceTimes quick = {.layer_fwd = 1000, .layer_bwd = 2000};
    TpsStepResult off, on, on_quick;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &off, NULL));
    sc.overlap_param_gather = TRUE;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &on, NULL));
    ck_assert(tps_pipeline_simulate(&sc, &quick, &on_quick, NULL));
    ck_assert_int_eq(off.param_gather_exposed, 0);
    ck_assert_int_eq(on.param_gather_exposed, a0);
    ck_assert_int_eq(on_quick.param_gather_exposed, a0 + 14 * a + a15 - 15 * quick.layer_fwd);
    /* The optimizer phase no longer holds the stage's all-gather (one
     * collective of all its parameters), and the step is that much
     * shorter but for what the first bucket makes wait. */
    ck_assert_int_eq(off.optimizer - on.optimizer, all);
    ck_assert_int_eq(off.step - on.step, all - a0);
    /* The engine's schedule of every micro-batch gives the same. */
    TpsStepResult full;
    ck_assert(tps_pipeline_simulate_full(&sc, &quick, &full, NULL));
    assert_same_step(&on_quick, &full, TRUE, "gathered");
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_last_bucket_exposed)
{
    /* overlap_grad_reduce, one stage, 8 replicas, backwards of 200 ms: each
     * bucket's reduce-scatter ends under the next layer's backward, and
     * only the last bucket's (layer 0 and the embedding: 4 bytes a
     * parameter in fp32, 2 in bf16) comes after the compute. */
    TpsScenario sc;
    model(&sc, 8192, 8, 1, 1, 8, 64);
    sc.distributed_optimizer = TRUE;
    TpsPieceTimes slow = {.layer_fwd = 100000000, .layer_bwd = 200000000};
    TpsStepResult fp32, bf16;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &fp32, NULL));
    sc.grad_reduce_dtype = TPS_GRAD_REDUCE_BF16;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &bf16, NULL));
    const double last = WIDE_LAYER + WIDE_EMBEDDING;
    ck_assert_int_eq(fp32.dp_exposed,
                     tps_dp_collective_ns(&sc, TPS_COLL_REDUCE_SCATTER, 4.0 * last));
    ck_assert_int_eq(bf16.dp_exposed,
                     tps_dp_collective_ns(&sc, TPS_COLL_REDUCE_SCATTER, 2.0 * last));
    ck_assert(bf16.dp_exposed < fp32.dp_exposed);
    tps_scenario_clear(&sc);
}
END_TEST

/* One stage of 4 layers, tp 8, 8 replicas, one micro-batch, FSDP
 * optim_grads_params: the per-unit all-gather times a_u and
 * reduce-scatter times r_u of the units in backward order (u = 0: layer 3
 * and the final norm; u = 3: layer 0 and the embedding). */
static void
fsdp_units(TpsScenario *sc, TpsTime a[4], TpsTime r[4])
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(
        tps_scenario_file_load_string("f",
                                      "name: f\nhardware: a100-sxm4-80gb\n"
                                      "model: {hidden: 1024, heads: 16, layers: 4, seq_len: 1024}\n"
                                      "training: {global_batch: 8, fsdp: optim_grads_params}\n"
                                      "parallel: {tp: 8, sp: true, dp: 8}\n",
                                      -1, sc, &error),
        "%s", error ? error->message : "");
    TpsDpBucket units[4];
    ck_assert_uint_eq(tps_dp_buckets(sc, 0, 0, units), 4);
    for (guint u = 0; u < 4; u++) {
        ck_assert_uint_eq(units[u].layers, 1);
        a[u] = tps_dp_collective_ns(sc, TPS_COLL_ALL_GATHER, 2.0 * units[u].params);
        r[u] = tps_dp_collective_ns(sc, TPS_COLL_REDUCE_SCATTER, 4.0 * units[u].params);
        ck_assert(a[u] > 1 && r[u] > 1);
    }
}

START_TEST(test_fsdp_prefetch)
{
    /* Forward of layers 0..3, then backward of 3..0. On the DP stream:
     * the forward's AG(3) AG(2) AG(1) AG(0) (units named as above), the
     * backward's AG(0), AG(1), RS(0), AG(2), RS(1), AG(3), RS(2), RS(3);
     * each unit after its all-gather, each all-gather after the unit two
     * before on the stage, each RS after its unit.
     * Long units (F = 10 ms, B = 20 ms, longer than any collective): only
     * the first all-gather waits, and only the last reduce-scatter is
     * after the compute: compute end a3 + 4F + 4B, exposed r3.
     * Units of 1 ns: the stream runs back to back. Forward gathers end at
     * S = a3 + a2 + a1 + a0; backward unit 0 after AG(0): S + a0 + 1; AG(1)
     * ends S + a0 + a1, RS(0) after it, AG(2), RS(1), AG(3): unit 3 ends
     * at S + a0 + a1 + r0 + a2 + r1 + a3 + 1 = compute end; then RS(2)
     * and RS(3): exposed r2 + r3 - 1. */
    g_auto(TpsScenario) sc = {0};
    TpsTime a[4], r[4];
    fsdp_units(&sc, a, r);
    const TpsPieceTimes slow = {.layer_fwd = 10000000, .layer_bwd = 20000000};
    const TpsPieceTimes fast = {.layer_fwd = 1, .layer_bwd = 1};
    TpsStepResult res;
    ck_assert(tps_pipeline_simulate_full(&sc, &slow, &res, NULL));
    ck_assert_int_eq(res.compute_end, a[3] + 4 * 10000000 + 4 * 20000000);
    ck_assert_int_eq(res.dp_exposed, r[3]);
    ck_assert(tps_pipeline_simulate_full(&sc, &fast, &res, NULL));
    const TpsTime S = a[0] + a[1] + a[2] + a[3];
    ck_assert_int_eq(res.compute_end, S + a[0] + a[1] + r[0] + a[2] + r[1] + a[3] + 1);
    ck_assert_int_eq(res.dp_exposed, r[2] + r[3] - 1);
    /* The same schedule replayed where the replay applies. */
    TpsStepResult again;
    ck_assert(tps_pipeline_simulate(&sc, &fast, &again, NULL));
    ck_assert_int_eq(again.step, res.step);
}
END_TEST

START_TEST(test_fsdp_strategies)
{
    /* optim_grads: no all-gather in the ops, the reduce-scatters after each
     * unit of every micro-batch: with 2 micro-batches of long units, the
     * first micro-batch's RS(3) hides under the second's forward and only
     * the last one is exposed (r3). optim: the distributed optimizer's
     * reduce-scatter of the last micro-batch in per-layer buckets: the
     * same exposure; the first micro-batch reduces nothing. Without FSDP
     * and with the distributed optimizer, one 40M bucket holds the 4
     * layers: exposed RS(4 x all the stage's parameters' bytes). */
    g_auto(TpsScenario) sc = {0};
    TpsTime a[4], r[4];
    fsdp_units(&sc, a, r);
    sc.global_batch = 16;
    const TpsPieceTimes slow = {.layer_fwd = 10000000, .layer_bwd = 20000000};
    TpsStepResult grads, optim, none;
    sc.fsdp = TPS_FSDP_OPTIM_GRADS;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &grads, NULL));
    ck_assert_int_eq(grads.dp_exposed, r[3]);
    ck_assert_int_eq(grads.compute_end, 2 * (4 * 10000000 + 4 * 20000000));
    sc.fsdp = TPS_FSDP_OPTIM;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &optim, NULL));
    ck_assert_int_eq(optim.dp_exposed, r[3]);
    sc.fsdp = TPS_FSDP_NONE;
    sc.distributed_optimizer = TRUE;
    ck_assert(tps_pipeline_simulate(&sc, &slow, &none, NULL));
    ck_assert_int_eq(none.dp_exposed, tps_dp_collective_ns(&sc, TPS_COLL_REDUCE_SCATTER,
                                                           4.0 * tps_stage_params(&sc, 0)));
}
END_TEST

START_TEST(test_fsdp_memory)
{
    /* The stage of test_memory_dp_dtypes (32,882,688 parameters per GPU,
     * 16 x 1,572,864 GEMM weights, fp8, dp 8), whose largest FSDP unit is
     * layer 0 with the embedding: 1,579,904 + 7,602,176 = 9,182,080
     * parameters, 1,572,864 of them GEMM weights.
     * optim_grads_params: gradients 4 x 32,882,688 / 8 = 16,441,344 + two
     * units' 2 x 4 x 9,182,080 = 73,456,640; weights 2 x 32,882,688 / 8 =
     * 8,220,672 + two units' 2 x 2 x 9,182,080 = 36,728,320; the units' FP8
     * copy and transpose 2 x 2 x 1,572,864 = 6,291,456: 141,138,432.
     * optim_grads: the unsharded 247,627,776 less its fp32 gradients
     * 131,530,752 plus the sharded ones 89,897,984: 205,995,008.
     * Optimizer states 12 x 32,882,688 / 8 = 49,324,032 under each. */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string(
                      "m",
                      "name: m\nhardware: h100-sxm\n"
                      "model: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024, dtype: fp8}\n"
                      "training: {global_batch: 64, fsdp: optim_grads_params}\n"
                      "parallel: {tp: 8, sp: true, dp: 8}\n",
                      -1, &sc, &error),
                  "%s", error ? error->message : "");
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.weights_grads, 141138432.0, 1e-3);
    ck_assert_double_eq_tol(m.optimizer, 49324032.0, 1e-3);
    sc.fsdp = TPS_FSDP_OPTIM_GRADS;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.weights_grads, 205995008.0, 1e-3);
    ck_assert_double_eq_tol(m.optimizer, 49324032.0, 1e-3);
    sc.fsdp = TPS_FSDP_OPTIM;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.weights_grads, 247627776.0, 1e-3);
    ck_assert_double_eq_tol(m.optimizer, 49324032.0, 1e-3);
}
END_TEST

/* A memory-bound kernel's time, as the step frame costs one. */
static TpsTime
mem_ns(const TpsHardware *hw, double bytes)
{
    TpsKernelCost c;
    tps_cost_memory(hw, bytes, &c);
    return tps_kernel_cost_solo_ns(hw, &c, hw->sms);
}

START_TEST(test_amax_reduction)
{
    /* Delayed scaling, one stage of 16 layers (64 GEMMs), tp 8 x dp 8 on
     * H100s, 8 micro-batches, amax history 1024. Forward: 3 amaxes a GEMM,
     * 192 fp32 = 768 bytes; backward 2, 128 = 512 bytes. Each: a cat
     * (read and write: 1,536 / 1,024 B), the MAX all-reduce of the amaxes
     * over the 64 ranks of tp x dp (with its launch), the fused update
     * (each history read and written, the amax read, each scale and its
     * inverse written: 4 x 192 x (2 x 1024 + 1) + 4 x 192 x 2 = 1,575,168
     * B forward; 4 x 128 x 2049 + 4 x 128 x 2 = 1,050,112 B backward).
     * Serial on one stage, every chunk of the 8 micro-batches ends that
     * much later: compute end under delayed minus under tensorwise (the
     * same given pieces, no amax reduction) = 8 x (fwd + bwd). */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string(
                      "a",
                      "name: a\nhardware: h100-sxm\n"
                      "model: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024, dtype: fp8,\n"
                      "  fp8_amax_history_len: 1024}\n"
                      "training: {global_batch: 64, distributed_optimizer: true}\n"
                      "parallel: {tp: 8, sp: true, dp: 8}\n",
                      -1, &sc, &error),
                  "%s", error ? error->message : "");
    const TpsHardware *hw = &sc.hardware;
    TpsGroupShape shape;
    tps_place_group_shape(&sc, TPS_DIM_BIT(TPS_DIM_TP) | TPS_SCENARIO_GRAD_DIMS, &shape);
    TpsCollPlan fwd_plan, bwd_plan;
    tps_coll_plan_group(hw, TPS_COLL_ALL_REDUCE, 768.0, &shape, &fwd_plan);
    tps_coll_plan_group(hw, TPS_COLL_ALL_REDUCE, 512.0, &shape, &bwd_plan);
    const TpsTime fwd = mem_ns(hw, 1536.0) + tps_cost_launch_ns(hw) +
                        tps_coll_time_ns(hw, &fwd_plan) + mem_ns(hw, 1575168.0);
    const TpsTime bwd = mem_ns(hw, 1024.0) + tps_cost_launch_ns(hw) +
                        tps_coll_time_ns(hw, &bwd_plan) + mem_ns(hw, 1050112.0);
    TpsPieceTimes pc = ms_pieces;
    tps_pipe_amax_times(&sc, &pc);
    ck_assert_int_eq(pc.amax_fwd, fwd);
    ck_assert_int_eq(pc.amax_bwd, bwd);
    /* The all-reduce over 64 GPUs on 8 nodes dominates: no less than
     * the 5 us of the update kernels and a launch. */
    ck_assert(fwd > 5000 && fwd > 2 * mem_ns(hw, 1575168.0));
    TpsStepResult delayed, tensorwise;
    ck_assert(tps_pipeline_simulate(&sc, &ms_pieces, &delayed, NULL));
    sc.fp8_recipe = TPS_FP8_TENSORWISE;
    tps_pipe_amax_times(&sc, &pc);
    ck_assert_int_eq(pc.amax_fwd + pc.amax_bwd, 0);
    ck_assert(tps_pipeline_simulate(&sc, &ms_pieces, &tensorwise, NULL));
    ck_assert_int_eq(delayed.compute_end - tensorwise.compute_end, 8 * (fwd + bwd));
}
END_TEST

START_TEST(test_uneven_stages)
{
    /* 16 layers on 2 stages, 8 micro-batches, forward 1 ms and backward
     * 2 ms a layer, transfers of microseconds. Even (8 + 8): the stages
     * are alike; 1F1B: stage 0's first forward (8 ms), then stage 1 busy
     * with 8 x (8 + 16) ms, then stage 0's last backward (16 ms): 216 ms.
     * first_stage_layers 6 (the last stage 10): stage 1 is the slower, 6
     * + 8 x (10 + 20) + 12 = 258 ms, plus the transfers' microseconds. */
    TpsScenario sc;
    small(&sc, 8, 2, 1, 1, 8);
    TpsStepResult even, uneven;
    ck_assert(tps_pipeline_simulate(&sc, &ms_pieces, &even, NULL));
    sc.first_stage_layers = 6;
    ck_assert(tps_scenario_validate(&sc, NULL, NULL));
    ck_assert(tps_pipeline_simulate(&sc, &ms_pieces, &uneven, NULL));
    ck_assert_msg(even.compute_end >= 216000000 && even.compute_end < 217000000,
                  "%" G_GINT64_FORMAT, even.compute_end);
    ck_assert_msg(uneven.compute_end >= 258000000 && uneven.compute_end < 259000000,
                  "%" G_GINT64_FORMAT, uneven.compute_end);
    /* Memory: the last stage holds 10 layers' weights, the first 6 and the
     * embedding. */
    TpsStageMemory first, last;
    tps_pipeline_stage_memory(&sc, 0, &first);
    tps_pipeline_stage_memory(&sc, 1, &last);
    ck_assert_double_eq_tol(tps_stage_params(&sc, 1) - tps_stage_params(&sc, 0),
                            4 * tps_layer_params_per_gpu(&sc) -
                                (51200.0 * 1024 / 8 + 1024.0 * 1024) + 2 * 1024.0 +
                                51200.0 * 1024 / 8,
                            1e-3);
    /* The engine's schedule gives the same as the replay. */
    TpsStepResult full;
    ck_assert(tps_pipeline_simulate_full(&sc, &ms_pieces, &full, NULL));
    assert_same_step(&uneven, &full, TRUE, "uneven");
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_schedule_order)
{
    static const struct {
        guint pp, vpp;
        guint64 micro;
    } cases[] = {{4, 1, 8}, {4, 1, 2}, {4, 2, 8}, {8, 3, 16}};
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
        for (guint s = 0; s < cases[k].pp; s++) {
            g_autoptr(GArray) ops =
                tps_pipeline_order(cases[k].pp, cases[k].vpp, cases[k].micro, s);
            ck_assert_uint_eq(ops->len, 2 * cases[k].micro * cases[k].vpp);
            /* Every (chunk, micro-batch) once forward, once backward, the
             * forward first; warmup as Megatron computes it. */
            g_autofree gint *seen = g_new0(gint, cases[k].vpp * cases[k].micro);
            guint64 warmup = 0;
            gboolean backward_seen = FALSE;
            for (guint i = 0; i < ops->len; i++) {
                const TpsPipeOp *op = &g_array_index(ops, TpsPipeOp, i);
                gint *state = &seen[op->chunk * cases[k].micro + op->mb];
                if (op->backward) {
                    ck_assert_int_eq(*state, 1);
                    *state = 2;
                    backward_seen = TRUE;
                } else {
                    ck_assert_int_eq(*state, 0);
                    *state = 1;
                    if (!backward_seen)
                        warmup++;
                }
            }
            guint64 expect = cases[k].vpp == 1
                                 ? MIN(cases[k].pp - s - 1, cases[k].micro)
                                 : MIN((cases[k].pp - s - 1) * 2 + (cases[k].vpp - 1) * cases[k].pp,
                                       cases[k].micro * cases[k].vpp);
            /* The steady state starts with one more forward. */
            ck_assert_uint_eq(warmup, MIN(expect + 1, cases[k].micro * cases[k].vpp));
        }
    }
}
END_TEST

START_TEST(test_memory)
{
    /* Hand-derived for the small model, tp 8, pp 4 (4 layers per stage),
     * 8 micro-batches: s = 1024, b = 1, h = 1024, a = 16. */
    TpsScenario sc;
    small(&sc, 8, 4, 1, 1, 8);
    const double s = 1024, h = 1024, t = 8, V = 51200;
    /* QKV, projection, FC1, FC2 weights and the QKV and FC1 biases over
     * tp; replicated: two LayerNorms (gamma and beta, 4 h) and the
     * projection's and FC2's biases (2 h). */
    const double layer_params = (4 * h * h + 2 * h * 4 * h + 3 * h + 4 * h) / t + 6 * h;
    /* Stage 0: 4 layers, the word and position embeddings. */
    const double p0 = 4 * layer_params + V * h / t + s * h;
    ck_assert_double_eq_tol(tps_stage_params(&sc, 0), p0, 1e-6);
    /* SP with flash attention: sbh x 34 / t per layer (arXiv:2205.05198
     * less the scores), plus the two LayerNorms' fp32 mu and rsigma per
     * token (2 x 8 bytes of s b / t) and flash attention's fp32
     * logsumexp per head and token (4 x 16 bytes of s b / t): sb (34 h +
     * 80) / t. */
    const double act = s * (34 * h + 80) / t;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), act, 1e-6);
    /* 1F1B: stage 0 holds pp micro-batches of its 4 layers. */
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.activations, 4 * 4 * act, 1e-6);
    ck_assert_double_eq_tol(m.weights_grads, 6 * p0, 1e-6);
    ck_assert_double_eq_tol(m.optimizer, 12 * p0, 1e-6);
    /* The last stage holds one micro-batch, plus its logits at the loss:
     * the fp32 copy (4 bytes) and the bf16 logits (2) beside it. */
    tps_pipeline_stage_memory(&sc, 3, &m);
    ck_assert_double_eq_tol(m.activations, 4 * act + (4 + 2) * s * V / t, 1e-6);

    /* Without SP the LayerNorm/dropout part is replicated:
     * sb (10 h + 16 + (24 h + 64) / t); SP divides all of it by t. */
    sc.sp = FALSE;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), s * (10 * h + 16 + (24 * h + 64) / t),
                            1e-6);
    sc.sp = TRUE;
    /* Unfused attention stores the scores, + 5 a s / h, and no
     * logsumexp: sb (34 h + 16) / t + the scores. */
    sc.attention = TPS_ATTENTION_UNFUSED;
    const double unfused = s * (34 * h + 16 + 5 * 16 * s) / t;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), unfused, 1e-6);
    /* ... unless selective recompute drops them; flash attention under
     * selective recompute drops its logsumexp (the checkpointed core
     * attention makes it again); full recompute keeps only the layer
     * input, 2 s b h / t with SP. */
    sc.recompute = TPS_RECOMPUTE_SELECTIVE;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), s * (34 * h + 16) / t, 1e-6);
    sc.attention = TPS_ATTENTION_FLASH;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), s * (34 * h + 16) / t, 1e-6);
    sc.attention = TPS_ATTENTION_UNFUSED;
    sc.recompute = TPS_RECOMPUTE_FULL;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), 2 * s * h / t, 1e-6);
    /* Stage 0 holds 4 micro-batches of 4 layer inputs, and the one layer
     * recomputed in its backward keeps its whole forward, scores
     * included: 16 x 2 s h / t + the unfused layer's. */
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.activations, 16 * 2 * s * h / t + unfused, 1e-6);
    /* The distributed optimizer shards the optimizer states over dp. */
    sc.distributed_optimizer = TRUE;
    sc.dp = 4;
    sc.global_batch = 32;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.optimizer, 12 * p0 / 4, 1e-6);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_memory_dp_dtypes)
{
    /* One stage of 16 layers, hidden 1024, tp 8, in FP8 on an H100: per
     * GPU 16 x 1,579,904 layer parameters + 7,602,176 of the embedding +
     * 2,048 of the final LayerNorm = 32,882,688, of which 16 x 1,572,864 =
     * 25,165,824 GEMM weights. Weights and gradients: bf16 weights 2 +
     * fp32 gradients 4 + the FP8 copy and transpose 2 a GEMM weight =
     * 6 x 32,882,688 + 2 x 25,165,824 = 247,627,776 bytes; bf16 gradients
     * take 2 x 32,882,688 = 65,765,376 less; fp8_param_gather drops the
     * bf16 copy of the GEMM weights, 2 x 25,165,824 = 50,331,648. */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string(
                      "m",
                      "name: m\nhardware: h100-sxm\n"
                      "model: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024, dtype: fp8}\n"
                      "training: {global_batch: 64, distributed_optimizer: true}\n"
                      "parallel: {tp: 8, sp: true, dp: 8}\n",
                      -1, &sc, &error),
                  "%s", error ? error->message : "");
    TpsStageMemory fp32, bf16, fp8;
    tps_pipeline_stage_memory(&sc, 0, &fp32);
    ck_assert_double_eq_tol(fp32.weights_grads, 247627776.0, 1e-3);
    sc.grad_reduce_dtype = TPS_GRAD_REDUCE_BF16;
    tps_pipeline_stage_memory(&sc, 0, &bf16);
    ck_assert_double_eq_tol(fp32.weights_grads - bf16.weights_grads, 65765376.0, 1e-3);
    sc.grad_reduce_dtype = TPS_GRAD_REDUCE_FP32;
    sc.fp8_param_gather = TRUE;
    tps_pipeline_stage_memory(&sc, 0, &fp8);
    ck_assert_double_eq_tol(fp32.weights_grads - fp8.weights_grads, 50331648.0, 1e-3);
    /* Nothing else moves. */
    ck_assert_double_eq(fp32.optimizer, fp8.optimizer);
    ck_assert_double_eq(fp32.activations, bf16.activations);
}
END_TEST

START_TEST(test_memory_dropout)
{
    /* 16 layers, hidden 1024, seq 1024, tp 8 with SP, one stage: 8
     * micro-batches, one held at a time (no pipeline), so 16 layers' worth.
     * A layer's two dropout masks are 1 byte an element of s b h / t =
     * 131,072 bytes each; at hidden_dropout 0 they are not kept: 16 x 2 x
     * 131,072 = 4,194,304 bytes less. They are the only tensors of their
     * size and fill two 2 MiB small segments exactly (16 a segment): no
     * allocator rounding changes. */
    TpsScenario sc;
    small(&sc, 8, 1, 1, 1, 8);
    TpsStageMemory with, without;
    tps_pipeline_stage_memory(&sc, 0, &with);
    sc.hidden_dropout = 0.0;
    tps_pipeline_stage_memory(&sc, 0, &without);
    ck_assert_double_eq_tol(with.activations - without.activations, 4194304.0, 1e-6);
    ck_assert_double_eq_tol(with.fragmentation, without.fragmentation, 1e-6);
    tps_scenario_clear(&sc);
}
END_TEST

START_TEST(test_interleaved_memory)
{
    /* Interleaving holds more: stage 0 keeps (1 + (p-1)/(p v)) x p
     * micro-batches' worth of its layers (arXiv:2205.05198 section 4.2.3):
     * pp 4, vpp 2: 16 layers, 2 per chunk. */
    TpsScenario sc;
    small(&sc, 8, 4, 2, 1, 8);
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 0, &m);
    const double act = tps_layer_activation_bytes(&sc);
    const double layers_held = (16.0 / 4) * 4 * (1.0 + 3.0 / (4 * 2));
    ck_assert_double_eq_tol(m.activations, layers_held * act, 1e-6);
    tps_scenario_clear(&sc);
}
END_TEST

/* ---- memory overheads ---- */

/* hidden 1536, seq 1024, tp 8 with SP: s b h / t = 196608 elements, so the
 * kept tensors are 192 KiB (the two dropout masks), 384 KiB (eight of 2
 * bytes per element) and 1536 KiB (the GeLU and FC2 inputs); pp 4, dp 2,
 * 8 micro-batches per replica. */
static void
overhead_scenario(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    const char *text = "name: overheads\nhardware: a100-sxm4-80gb\n"
                       "model: {hidden: 1536, heads: 16, layers: 16, seq_len: 1024}\n"
                       "training: {micro_batch: 1, global_batch: 16}\n"
                       "parallel: {tp: 8, sp: true, pp: 4, dp: 2}\n";
    ck_assert_msg(tps_scenario_file_load_string("overheads", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

START_TEST(test_context)
{
    /* 108 SMs x 2048 threads x 1 KiB of stack, 1 MiB printf FIFO, 8 MiB
     * heap: 225 MiB on every stage. */
    g_auto(TpsScenario) sc = {0};
    overhead_scenario(&sc);
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 2, &m);
    ck_assert_double_eq_tol(m.context, 225.0 * MIB, 1e-3);
}
END_TEST

START_TEST(test_nccl_buffers)
{
    /* A ring connection holds 512 + 4800 + 4096 = 9408 KiB per channel,
     * on 24 channels; a send/recv peer 2 channels of 4096 KiB. Stage 0:
     * TP, DP, model-parallel and embedding rings, one peer: 4 x 24 x 9408
     * + 1 x 2 x 4096 = 911360 KiB. Stage 1: no embedding group, two peers:
     * 3 x 24 x 9408 + 2 x 2 x 4096 = 693760 KiB. */
    g_auto(TpsScenario) sc = {0};
    overhead_scenario(&sc);
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.nccl, 911360.0 * KIB, 1e-3);
    tps_pipeline_stage_memory(&sc, 1, &m);
    ck_assert_double_eq_tol(m.nccl, 693760.0 * KIB, 1e-3);
    /* Without DP (and its ring), a single GPU's stage-less run has none. */
    sc.dp = 1;
    sc.global_batch = 8;
    tps_pipeline_stage_memory(&sc, 1, &m);
    ck_assert_double_eq_tol(m.nccl, 467968.0 * KIB, 1e-3);
    sc.tp = 1;
    sc.pp = 1;
    sc.sp = FALSE;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq(m.nccl, 0.0);
}
END_TEST

/* NVLS buffers (NVIDIA/nccl src/transport/nvls.cc): 16 channels x 2 x 8
 * steps x 128 KiB = 32 MiB per member of a communicator whose collective
 * NCCL runs as NVLS on h100-sxm (nccl.nvls 1). Without SP the TP group
 * all-reduces a layer's 4096 x 4096 bf16 output, 32 MiB, as NVLS (the
 * collective model's choice, test-collective): 8 members 256 MiB, 4
 * members 128; none for 2 GPUs (ncclNvlsInit: <= 2), none with SP (the
 * all-gather and reduce-scatter stay on the ring), none where nccl.algo
 * leaves NVLS out, none on a100-sxm4-80gb (no NVLS). One stage, dp 1:
 * no other group. */
static const struct {
    const char *hardware;
    guint tp;
    gboolean sp;
    const char *algo;
    double mib;
} nvls_cases[] = {
    {"h100-sxm", 8, FALSE, NULL, 256.0},      {"h100-sxm", 4, FALSE, NULL, 128.0},
    {"h100-sxm", 2, FALSE, NULL, 0.0},        {"h100-sxm", 8, TRUE, NULL, 0.0},
    {"h100-sxm", 8, FALSE, "Ring,Tree", 0.0}, {"a100-sxm4-80gb", 8, FALSE, NULL, 0.0},
};

START_TEST(test_nvls_buffers)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: nvls\nhardware: %s\n"
        "model: {hidden: 4096, heads: 32, layers: 2, seq_len: 4096}\n"
        "training: {micro_batch: 1, global_batch: 1}\n"
        "parallel: {tp: %u, sp: %s}\n",
        nvls_cases[_i].hardware, nvls_cases[_i].tp, nvls_cases[_i].sp ? "true" : "false");
    g_auto(TpsScenario) sc = {0};
    ck_assert_msg(tps_scenario_file_load_string("nvls", text, -1, &sc, &error), "%s",
                  error ? error->message : "");
    if (nvls_cases[_i].algo != NULL) {
        g_free(sc.hardware.nccl_algo);
        sc.hardware.nccl_algo = g_strdup(nvls_cases[_i].algo);
    }
    TpsStageMemory with;
    tps_pipeline_stage_memory(&sc, 0, &with);
    ck_assert_double_eq_tol(with.nvls, nvls_cases[_i].mib * MIB, 1e-3);
    /* Part of NCCL's buffers and of the total: nvls_chunk_kib 0 leaves
     * the rest as it is. */
    sc.hardware.mem_nccl_nvls_chunk_kib = 0.0;
    TpsStageMemory without;
    tps_pipeline_stage_memory(&sc, 0, &without);
    ck_assert_double_eq(without.nvls, 0.0);
    ck_assert_double_eq_tol(with.nccl - without.nccl, nvls_cases[_i].mib * MIB, 1e-3);
    ck_assert_double_eq_tol(with.total - without.total, nvls_cases[_i].mib * MIB, 1e-3);
}
END_TEST

START_TEST(test_fragmentation)
{
    /* Stage 0 holds 4 micro-batches of its 4 layers: 16 of each tensor.
     * 192 KiB: 32 requests, 10 per 2 MiB segment, 4 segments: 8192 - 6144
     * = 2048 KiB. 384 KiB: 128 requests, 5 per segment, 26 segments: 53248
     * - 49152 = 4096 KiB. 1536 KiB (above 1 MiB: 20 MiB segments): 32
     * requests, 13 per segment, 3 segments: 61440 - 49152 = 12288 KiB.
     * The LayerNorms' mu and rsigma, 8 bytes x 1024 / 8 tokens = 1 KiB:
     * 32 requests in one 2 MiB segment, 2048 - 32 = 2016 KiB; the
     * logsumexp, 4 x 16 heads x 1024 / 8 = 8 KiB: 16 in one segment,
     * 2048 - 128 = 1920 KiB. */
    g_auto(TpsScenario) sc = {0};
    overhead_scenario(&sc);
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.fragmentation, (2048.0 + 4096.0 + 12288.0 + 2016.0 + 1920.0) * KIB,
                            1e-3);
    /* The last stage holds one micro-batch (4 of each): 1 segment of 2
     * MiB for 8 x 192 KiB (512 KiB left), 7 for 32 x 384 KiB (2048), 1 of
     * 20 MiB for 8 x 1536 KiB (8192); its fp32 logits, 4 x 1024 x 51200 /
     * 8 bytes = 25 MiB, are rounded up to 26 (1024), its bf16 logits,
     * 12.5 MiB, to 14 (1536); 8 x 1 KiB of norm statistics (2040 left)
     * and 4 x 8 KiB of logsumexp (2016). */
    tps_pipeline_stage_memory(&sc, 3, &m);
    ck_assert_double_eq_tol(
        m.fragmentation, (512.0 + 2048.0 + 8192.0 + 1024.0 + 1536.0 + 2040.0 + 2016.0) * KIB, 1e-3);
    /* All of it in the total. */
    ck_assert_double_eq_tol(
        m.total,
        m.weights_grads + m.optimizer + m.activations + m.fragmentation + m.context + m.nccl, 1e-3);
}
END_TEST

START_TEST(test_userbuffers)
{
    /* One buffer of seq x micro_batch x hidden bf16 elements (1024 x 1536
     * x 2 = 3 MiB) per GEMM the strategy overlaps: te-a100 all 10,
     * ring-ag 4, megatron none; ring-rs's two ring-exchange
     * reduce-scatters 2 tp - 1 = 15 chunks of 1/8 each: 2 x 3 x 15 / 8 =
     * 11.25. Under fp8 the gathering buffers hold 1-byte elements (1.5
     * MiB): te-a100's six (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad
     * by ring exchange, qkv_dgrad and fc1_dgrad in bulk) 9 MiB, its four
     * reduce-scatters (proj_fprop, fc2_fprop pipelined, the two wgrads in
     * bulk) bf16, 12 MiB: 21; ring-ag's four 6 MiB. */
    g_auto(TpsScenario) sc = {0};
    overhead_scenario(&sc);
    static const struct {
        const char *strategy;
        gboolean fp8;
        double mib;
    } cases[] = {{"te-a100", FALSE, 30.0},  {"ring-ag", FALSE, 12.0}, {"megatron", FALSE, 0.0},
                 {"ring-rs", FALSE, 11.25}, {"te-a100", TRUE, 21.0},  {"ring-ag", TRUE, 6.0},
                 {"ring-rs", TRUE, 11.25}};
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        sc.dtype = cases[i].fp8 ? TPS_DTYPE_FP8 : TPS_DTYPE_BF16;
        TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT];
        tps_strategy_overlap(tps_strategy_lookup(cases[i].strategy), &sc, overlap);
        TpsStageMemory m;
        tps_pipeline_stage_memory(&sc, 0, &m);
        const double before = m.total;
        tps_stage_memory_add_userbuffers(&sc, overlap, &m);
        ck_assert_double_eq_tol(m.userbuffers, cases[i].mib * MIB, 1e-3);
        ck_assert_double_eq_tol(m.total - before, cases[i].mib * MIB, 1e-3);
    }
}
END_TEST

START_TEST(test_fits_with_overheads)
{
    /* fits_memory counts the overheads: a GPU just large enough for the
     * weights, optimizer states and activations does not hold the step. */
    g_auto(TpsScenario) sc = {0};
    overhead_scenario(&sc);
    TpsResult r;
    g_autoptr(GError) error = NULL;
    const TpsStrategy *te = tps_strategy_lookup("te-a100");
    ck_assert_msg(tps_simulate(&sc, te, &r, &error), "%s", error->message);
    ck_assert(r.memory_overheads_gib > 0.5);
    ck_assert_double_eq_tol(r.memory_gib,
                            r.memory_weights_gib + r.memory_optimizer_gib +
                                r.memory_activations_gib + r.memory_overheads_gib,
                            1e-9);
    sc.hardware.memory_gib =
        r.memory_weights_gib + r.memory_optimizer_gib + r.memory_activations_gib + 0.01;
    ck_assert(tps_simulate(&sc, te, &r, NULL));
    ck_assert(!r.fits_memory);
    sc.hardware.memory_gib = r.memory_gib + 0.01;
    ck_assert(tps_simulate(&sc, te, &r, NULL));
    ck_assert(r.fits_memory);
}
END_TEST

/* ---- the steady state extrapolated ---- */

typedef struct {
    guint tp, pp, vpp, dp;
    guint64 micro;
    guint layers, hidden;
    gboolean overlap_grad_reduce, distributed_optimizer;
    /* With the microsecond pieces, the transfers of this layout never lock
     * into a cycle of at most 16 periods: every micro-batch is simulated. */
    gboolean drifts;
    gboolean overlap_param_gather; /* the parameter all-gathers in the first forwards */
    const char *fsdp;              /* training.fsdp (NULL: none) */
} Layout;

/* pp, vpp, micro-batches, dp with and without overlapped gradient
 * reduction and the distributed optimizer, stages alone in their node
 * (tp 8, 16, or tp x dp 8: transfers over InfiniBand) or sharing one
 * (tp 1, 2, 4 with dp 1: NVLink), wide layers (hidden 8192: a bucket per
 * layer). */
static const Layout layouts[] = {
    {8, 2, 1, 1, 64, 16, 1024, TRUE, FALSE},
    {8, 4, 1, 1, 100, 16, 1024, TRUE, FALSE},
    {8, 8, 1, 1, 64, 16, 1024, TRUE, FALSE},
    {8, 16, 1, 1, 128, 16, 1024, TRUE, FALSE, FALSE},
    {8, 3, 1, 1, 50, 24, 1024, TRUE, FALSE, TRUE},
    {8, 4, 2, 1, 64, 16, 1024, TRUE, FALSE},
    {8, 4, 4, 1, 128, 16, 1024, TRUE, FALSE},
    {8, 8, 2, 1, 128, 16, 1024, TRUE, FALSE, TRUE},
    {8, 2, 2, 1, 32, 16, 1024, TRUE, FALSE},
    {8, 2, 1, 8, 64, 16, 1024, TRUE, FALSE},
    {8, 2, 1, 8, 64, 16, 1024, FALSE, FALSE},
    {8, 4, 1, 4, 64, 16, 1024, TRUE, TRUE},
    {8, 4, 2, 4, 64, 16, 1024, FALSE, TRUE},
    {8, 4, 1, 2, 37, 16, 1024, TRUE, FALSE},
    {4, 4, 1, 1, 64, 16, 1024, TRUE, FALSE},
    {2, 8, 1, 1, 64, 16, 1024, TRUE, FALSE},
    {1, 8, 1, 1, 64, 16, 1024, TRUE, FALSE},
    {2, 8, 2, 2, 128, 16, 1024, TRUE, TRUE, TRUE},
    {16, 4, 1, 1, 64, 16, 1024, TRUE, FALSE, TRUE},
    {8, 1, 1, 1, 64, 16, 1024, TRUE, FALSE},
    {8, 1, 1, 8, 64, 16, 1024, TRUE, TRUE},
    /* tp 4 x dp 2 fill a node: each stage alone in its node, over its
     * TP group's 4 NICs (Megatron's order puts dp inside pp). */
    {4, 4, 2, 2, 64, 16, 8192, TRUE, FALSE},
    {8, 8, 1, 16, 128, 16, 8192, TRUE, TRUE},
    {8, 8, 1, 16, 128, 16, 8192, FALSE, FALSE},
    /* The parameter all-gathers in the first forwards, a bucket per layer
     * (hidden 8192) or one (1024), with and without interleaving. */
    {8, 4, 1, 4, 64, 16, 8192, TRUE, TRUE, FALSE, TRUE},
    {8, 4, 2, 4, 64, 16, 8192, TRUE, TRUE, TRUE, TRUE},
    {8, 1, 1, 8, 64, 16, 1024, TRUE, TRUE, FALSE, TRUE},
    /* FSDP: per-layer all-gathers prefetched a layer ahead and per-layer
     * reduce-scatters in every micro-batch (optim_grads_params), the
     * reduce-scatters alone (optim_grads), per-layer buckets of the
     * distributed optimizer (optim), with stages, interleaving, and
     * without the distributed optimizer's key. */
    {8, 4, 1, 4, 64, 16, 8192, TRUE, TRUE, FALSE, FALSE, "optim_grads_params"},
    {8, 4, 2, 4, 64, 16, 1024, TRUE, FALSE, FALSE, FALSE, "optim_grads_params"},
    {8, 1, 1, 8, 64, 16, 1024, TRUE, TRUE, FALSE, FALSE, "optim_grads_params"},
    {8, 4, 2, 4, 64, 16, 8192, TRUE, TRUE, FALSE, FALSE, "optim_grads"},
    {8, 4, 1, 4, 64, 16, 8192, TRUE, TRUE, FALSE, TRUE, "optim"},
    {2, 8, 1, 2, 64, 16, 1024, FALSE, FALSE, FALSE, FALSE, "optim"},
};

/* Piece times with no common factor, so that a coincidence cannot pass
 * for a period: chunks of milliseconds (the transfers, a few us, hide
 * under them), and of a microsecond (the pipeline runs at the pace of its
 * transfers, which then share links: the fluid, nonlinear case). */
static const TpsPieceTimes odd_pieces[] = {
    {.layer_fwd = 1234567,
     .layer_bwd = 2469131,
     .emb_fwd = 12347,
     .emb_bwd = 23459,
     .head_fwd = 345679,
     .head_bwd = 691357},
    {.layer_fwd = 1009,
     .layer_bwd = 2003,
     .emb_fwd = 101,
     .emb_bwd = 211,
     .head_fwd = 3001,
     .head_bwd = 6007},
};

static void
layout_scenario(TpsScenario *sc, const Layout *l, guint64 micro)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: layout\nhardware: a100-sxm4-80gb\n"
        "model: {hidden: %u, heads: 16, layers: %u, seq_len: 1024}\n"
        "training: {micro_batch: 1, global_batch: %" G_GUINT64_FORMAT ", "
        "overlap_grad_reduce: %s, distributed_optimizer: %s, overlap_param_gather: %s, "
        "fsdp: %s}\n"
        "parallel: {tp: %u, sp: true, pp: %u, vpp: %u, dp: %u}\n",
        l->hidden, l->layers, micro * l->dp, l->overlap_grad_reduce ? "true" : "false",
        l->distributed_optimizer ? "true" : "false", l->overlap_param_gather ? "true" : "false",
        l->fsdp != NULL ? l->fsdp : "none", l->tp, l->pp, l->vpp, l->dp);
    ck_assert_msg(tps_scenario_file_load_string("layout", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

START_TEST(test_extrapolated_is_exact)
{
    /* The step extended by whole periods of the steady state is the step
     * of the whole schedule, to the nanosecond, and so are the figures
     * read from it; and the shorter schedule was really shorter. */
    const Layout *l = &layouts[_i / G_N_ELEMENTS(odd_pieces)];
    const guint piece = _i % G_N_ELEMENTS(odd_pieces);
    const TpsPieceTimes *pc = &odd_pieces[piece];
    /* Paced by its transfers, the schedule takes longer to lock into its
     * cycle: more micro-batches, so that a shorter schedule can show it. */
    const guint64 micro = piece == 0 ? l->micro : l->micro * 32;
    g_auto(TpsScenario) sc = {0};
    layout_scenario(&sc, l, micro);
    TpsStepResult full, fast;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_periodic(&sc, pc, &fast, &error), "%s", error->message);
#define WHAT "tp %u pp %u vpp %u dp %u micro %" G_GUINT64_FORMAT " pieces %u"
#define ARGS l->tp, l->pp, l->vpp, l->dp, micro, piece
    ck_assert_uint_eq(full.micro_simulated, micro);
    /* FSDP's per-layer ops (optim_grads, optim_grads_params): every
     * micro-batch simulated. */
    const gboolean layer_ops = tps_fsdp_layer_op(&sc, TRUE);
    if ((piece == 1 && l->drifts) || layer_ops)
        ck_assert_msg(fast.micro_simulated == micro && fast.period == 0, WHAT, ARGS);
    else
        ck_assert_msg(fast.micro_simulated < micro && fast.period > 0, WHAT, ARGS);
    g_autofree char *what = g_strdup_printf(WHAT, ARGS);
    assert_same_step(&fast, &full, FALSE, what);
#undef WHAT
#undef ARGS
}
END_TEST

START_TEST(test_replayed_is_exact)
{
    /* Where the replay holds, it is the step simulated on the engine, to
     * the nanosecond, figure by figure; where it does not (two transfers
     * met on a link), it says so and tps_pipeline_simulate() is the
     * engine's. */
    const Layout *l = &layouts[_i / G_N_ELEMENTS(odd_pieces)];
    const guint piece = _i % G_N_ELEMENTS(odd_pieces);
    const TpsPieceTimes *pc = &odd_pieces[piece];
    const guint64 micro = piece == 0 ? l->micro : l->micro * 4;
    g_auto(TpsScenario) sc = {0};
    layout_scenario(&sc, l, micro);
    TpsStepResult full, fast, best;
    gboolean replayed;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_replay(&sc, pc, &fast, &replayed, &error), "%s",
                  error->message);
    ck_assert_msg(tps_pipeline_simulate(&sc, pc, &best, &error), "%s", error->message);
#define WHAT "tp %u pp %u vpp %u dp %u micro %" G_GUINT64_FORMAT " pieces %u"
#define ARGS l->tp, l->pp, l->vpp, l->dp, micro, piece
    ck_assert_msg(best.step == full.step, WHAT, ARGS);
    /* FSDP's layouts are replayed with stages (millisecond chunks: no two
     * flows pile up). */
    if (l->fsdp != NULL && l->pp > 1 && piece == 0)
        ck_assert_msg(replayed, WHAT, ARGS);
    if (!replayed)
        return;
    g_autofree char *what = g_strdup_printf(WHAT, ARGS);
    assert_same_step(&fast, &full, TRUE, what);
    ck_assert_uint_eq(fast.micro_simulated, micro);
    /* Millisecond chunks outlast a transfer: flows alone on their links
     * are resolved at their entry (the same ends, checked above); with
     * microsecond chunks none may be, and every flow goes through the
     * events and re-solves. */
    ck_assert_msg((fast.lone > 0) == (l->pp > 1 && piece == 0), "lone %" G_GUINT64_FORMAT ": " WHAT,
                  fast.lone, ARGS);
    /* With stages, the in-order pass gave it only where no two flows met
     * (with microsecond chunks no flow is resolved alone: never); where
     * none met and the pass was not taken, time order was chosen first
     * because it jumps over steady periods, and it did. */
    if (l->pp > 1 && fast.in_order)
        ck_assert_msg(fast.lone > 0 && fast.shared == 0, WHAT, ARGS);
    if (l->pp > 1 && !fast.in_order && fast.lone > 0 && fast.shared == 0)
        ck_assert_msg(fast.periods > 0, WHAT, ARGS);
#undef WHAT
#undef ARGS
}
END_TEST

/* model.moe.overlap_ep_comm's pieces (pp 1): every forward but the first
 * carries the pair with the backward before it (layer_fb), those
 * backwards only the head's and embedding's. On every one-stage layout
 * (FSDP's refused with the overlap) and both sets of odd pieces, a pair
 * 4321 ns (millisecond pieces: 1234567 + 2469131 - 4321 = 3699377) or 7
 * ns (1009 + 2003 - 7 = 3005) shorter than the two passes apart: the
 * engine, its extrapolation and the replay agree to the ns, and the
 * stage's compute ends (micro - 1) x layers x 4321 (or 7) ns earlier
 * than without the pair, the rest unchanged (the first forward and the
 * last backward, with its gradient buckets, run alone in both). */
START_TEST(test_paired_is_exact)
{
    const Layout *l = &layouts[_i / G_N_ELEMENTS(odd_pieces)];
    const guint piece = _i % G_N_ELEMENTS(odd_pieces);
    if (l->pp != 1 || l->fsdp != NULL)
        return;
    const TpsTime shorter = piece == 0 ? 4321 : 7;
    TpsPieceTimes pc = odd_pieces[piece];
    const guint64 micro = piece == 0 ? l->micro : l->micro * 4;
    g_auto(TpsScenario) sc = {0};
    layout_scenario(&sc, l, micro);
    TpsStepResult apart, full, periodic, replay;
    gboolean replayed;
    g_autoptr(GError) error = NULL;
    ck_assert(tps_pipeline_simulate_full(&sc, &pc, &apart, &error));
    pc.layer_fb = pc.layer_fwd + pc.layer_bwd - shorter;
    ck_assert(tps_pipeline_simulate_full(&sc, &pc, &full, &error));
    ck_assert(tps_pipeline_simulate_periodic(&sc, &pc, &periodic, &error));
    ck_assert(tps_pipeline_simulate_replay(&sc, &pc, &replay, &replayed, &error));
    ck_assert(replayed);
    g_autofree char *what = g_strdup_printf("layout %u pieces %u", _i / 2, piece);
    assert_same_step(&periodic, &full, FALSE, what);
    assert_same_step(&replay, &full, TRUE, what);
    ck_assert_int_eq(full.compute_end,
                     apart.compute_end - (TpsTime)(micro - 1) * l->layers * shorter);
}
END_TEST

START_TEST(test_replay_holds)
{
    /* With millisecond chunks the transfers (microseconds) meet at most
     * two at a time on a link, which the replay follows (checked above
     * figure by figure): it must hold for every layout, and flows must
     * have shared a link in some (else the sharing is not tested); with
     * microsecond chunks the pipeline runs at the pace of its transfers,
     * which pile up on links: the replay must say so. */
    guint held[2] = {0, 0}, shared = 0, jumped = 0;
    for (guint i = 0; i < G_N_ELEMENTS(layouts); i++)
        for (guint piece = 0; piece < G_N_ELEMENTS(odd_pieces); piece++) {
            const Layout *l = &layouts[i];
            g_auto(TpsScenario) sc = {0};
            layout_scenario(&sc, l, piece == 0 ? l->micro : l->micro * 4);
            TpsStepResult r;
            gboolean replayed;
            ck_assert(tps_pipeline_simulate_replay(&sc, &odd_pieces[piece], &r, &replayed, NULL));
            held[piece] += replayed ? 1 : 0;
            shared += replayed && r.shared > 0 ? 1 : 0;
            jumped += replayed && r.periods > 0 ? 1 : 0;
        }
    ck_assert_uint_eq(held[0], G_N_ELEMENTS(layouts));
    ck_assert_uint_lt(held[1], G_N_ELEMENTS(layouts) / 2);
    ck_assert_uint_ge(shared, 4);
    /* The ordered replay jumped over steady periods in some of them (7 of
     * the 48 cases: those whose flows met, or whose chunks are shorter
     * than a transfer, and whose steady state repeats every 2 pp vpp ops),
     * which test_replayed_is_exact checks against the engine, figure by
     * figure. */
    ck_assert_uint_ge(jumped, 5);
}
END_TEST

/* Pieces of the 1T-class layer's order (milliseconds: a 25600-wide layer on
 * 8 A100s), prime-ish so that no coincidence passes for exactness. */
static const TpsPieceTimes t1_pieces[] = {
    {.layer_fwd = 17000003,
     .layer_bwd = 46000019,
     .emb_fwd = 120011,
     .emb_bwd = 240007,
     .head_fwd = 6100009,
     .head_bwd = 12200017},
    {.layer_fwd = 151,
     .layer_bwd = 307,
     .emb_fwd = 11,
     .emb_bwd = 23,
     .head_fwd = 401,
     .head_bwd = 809},
};

START_TEST(test_replay_part_period)
{
    /* The 1T-class scenario on chunks of 1.5 ms forward and 3 ms backward
     * (prime-ish, so that no coincidence passes for exactness): the
     * transfers are then a good part of a chunk, flows meet on links (the
     * re-solves), and the steady state is found later than on the
     * layer's own pieces, so fewer whole periods are jumped (4); the
     * state is still moved on beyond them, to the copy of a state kept
     * within the period compared, and every figure is the engine's
     * simulation of every micro-batch, to the ns. A state read back
     * wrong (an input known ahead left out: the stage waits for it for
     * ever) fails here and in test_replay_presets. */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    load_1t(&sc);
    const TpsPieceTimes pc = {.layer_fwd = 1500007,
                              .layer_bwd = 3000017,
                              .emb_fwd = 11,
                              .emb_bwd = 23,
                              .head_fwd = 500009,
                              .head_bwd = 750011};
    TpsStepResult full, fast;
    gboolean replayed;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, &pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_replay(&sc, &pc, &fast, &replayed, &error), "%s",
                  error->message);
    ck_assert(replayed && !fast.in_order);
    ck_assert_uint_gt(fast.shared, 0);
    ck_assert_uint_eq(fast.periods, 4);
    /* Beyond the 4 periods, less than a period of 2 x 64 x 2 = 256 ops. */
    ck_assert_uint_gt(fast.part_ops, 0);
    ck_assert_uint_lt(fast.part_ops, 256);
    assert_same_step(&fast, &full, TRUE, "gpt-1t, 1.5 ms chunks");
}
END_TEST

START_TEST(test_replay_shares_links)
{
    /* The 1T-class scenario (pp 64, vpp 2, 512 micro-batches): forward
     * and backward transfers reach a stage together and share its NIC, the
     * engine's max-min sharing, which the replay reproduces flow by flow:
     * the same figures as the engine's simulation of every micro-batch, to
     * the ns, and the sharing did happen (the replay is not the alone
     * case). With a chunk shorter than a transfer (the second pieces)
     * more flows pile up on a link than the replay follows: it says so,
     * and tps_pipeline_simulate() is still the engine's. */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    load_1t(&sc);
    const TpsPieceTimes *pc = &t1_pieces[_i];
    TpsStepResult full, fast, best;
    gboolean replayed;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_replay(&sc, pc, &fast, &replayed, &error), "%s",
                  error->message);
    ck_assert_msg(tps_pipeline_simulate(&sc, pc, &best, &error), "%s", error->message);
    ck_assert_int_eq(best.step, full.step);
    if (_i == 1) {
        ck_assert(!replayed);
        return;
    }
    ck_assert(replayed);
    ck_assert_uint_gt(fast.shared, 0);
    ck_assert(!fast.in_order);
    /* The steady state repeated: 4 of its periods of 256 ops were jumped
     * over (the figures below are still the engine's). */
    ck_assert_uint_gt(fast.periods, 0);
    /* Both paths taken: nearly every flow resolved alone at its entry,
     * and those that met another on a link (flows: one per micro-batch
     * and boundary between the 128 virtual stages, both ways) through the
     * events and the re-solves. */
    const guint64 flows = (guint64)(sc.pp * sc.vpp - 1) * 2 * full.micro_simulated;
    ck_assert_uint_gt(fast.lone, flows * 99 / 100);
    ck_assert_uint_lt(fast.lone, flows);
    assert_same_step(&fast, &full, TRUE, "gpt-1t");
}
END_TEST

/* `sc` under every preset that applies, on the pieces tps_simulate()
 * simulates for it: the replay holds and is the engine's simulation of
 * every micro-batch, to the ns; each replay's result into `fast` (room
 * for `max`); the number of presets. */
static guint
replay_presets(const TpsScenario *sc, TpsStepResult *fast, guint max)
{
    g_autoptr(GError) error = NULL;
    g_autofree const TpsStrategy **all = tps_strategy_select(sc, NULL, &error);
    ck_assert_msg(all != NULL, "%s", error ? error->message : "");
    guint n = 0;
    for (; all[n]; n++) {
        ck_assert_uint_lt(n, max);
        TpsPieceTimes pc;
        ck_assert_msg(tps_simulate_pieces(sc, all[n], &pc, &error), "%s", error->message);
        TpsStepResult full;
        gboolean replayed;
        ck_assert_msg(tps_pipeline_simulate_full(sc, &pc, &full, &error), "%s", error->message);
        ck_assert_msg(tps_pipeline_simulate_replay(sc, &pc, &fast[n], &replayed, &error), "%s",
                      error->message);
        ck_assert_msg(replayed, "%s", all[n]->name);
        assert_same_step(&fast[n], &full, TRUE, all[n]->name);
    }
    return n;
}

START_TEST(test_replay_presets)
{
    /* The 1T-class scenario under every preset: the replay (its flows
     * nearly all resolved alone) is the engine's, to the ns. */
    g_auto(TpsScenario) sc = {0};
    load_1t(&sc);
    TpsStepResult fast[16];
    const guint n = replay_presets(&sc, fast, G_N_ELEMENTS(fast));
    for (guint i = 0; i < n; i++) {
        ck_assert_uint_gt(fast[i].lone, 0);
        /* Time order first, as it jumps over steady periods, as many as
         * stage 0's steady ops hold: its warm-up (64 - 1) 2 + (2 - 1) 64
         * = 190 ops, its steady ops up to 2 x 1024 - 190 = 1858, a period
         * 2 x 64 x 2 = 256 ops; the first state kept at op 190 at the
         * earliest, its repeat 256 ops later, so at most
         * (1858 - 190 - 256) / 256 = 5 periods (5.5 rounded down) are
         * jumped. (States compared a period apart found the repeat at op
         * 705 and jumped 4.) The repeat is found at op 480 of the state
         * kept at 224 (docs/step-model.md), and states are kept every
         * 256 / 8 = 32 ops of stage 0 after it, at 256, 288, 320, ...: the
         * latest whose copy 5 + 1 periods on is still steady has stage 0
         * at op 1858 - 6 x 256 = 322 at most, so 320, and stage 0 moves
         * on 320 - 224 = 96 ops beyond the 5 periods (from 1760 to 1856)
         * instead of replaying them; the figures are still the engine's
         * (replay_presets()). */
        ck_assert(!fast[i].in_order);
        ck_assert_uint_eq(fast[i].periods, 5);
        ck_assert_uint_eq(fast[i].part_ops, 96);
    }
    ck_assert_uint_ge(n, 4);
}
END_TEST

START_TEST(test_replay_context_parallel)
{
    /* Context parallelism on an uneven pipeline (Llama 3 405B at 128K:
     * cp 16, pp 16 of 7, 8 x 14 and 7 layers, dp 8): gradients reduced
     * and the optimizer sharded over dp x cp = 128 ranks, in the replay as
     * on the engine, figure by figure, under every preset that applies. */
    g_auto(TpsScenario) sc = {0};
    load_scenario(&sc, "llama3-405b-128k-cp16.yaml");
    ck_assert_uint_eq(tps_scenario_grad_ranks(&sc), 128);
    TpsStepResult fast[16];
    ck_assert_uint_ge(replay_presets(&sc, fast, G_N_ELEMENTS(fast)), 4);
}
END_TEST

/* The figures of the replay of `sc` on `pc` with the in-order pass allowed
 * (`in_order`) or not, into `fig`. */
static void
replay_figures(const TpsScenario *sc, const TpsPieceTimes *pc, gboolean in_order,
               TpsPipeFigures *fig)
{
    g_autoptr(GError) error = NULL;
    gboolean replayed;
    const guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
    ck_assert_msg(tps_pipe_replay(sc, pc, micro, in_order ? TPS_REPLAY_IN_ORDER_FIRST : TPS_REPLAY_TIME_ORDER, fig, &replayed, &error), "%s",
                  error ? error->message : "");
    ck_assert(replayed);
}

/* Two replays' figures are the same, to the ns and the count. */
static void
assert_same_figures(const TpsPipeFigures *a, const TpsPipeFigures *b, const char *what)
{
    ck_assert_msg(a->step == b->step, "%" G_GINT64_FORMAT " != %" G_GINT64_FORMAT ": %s", a->step,
                  b->step, what);
    ck_assert_msg(a->compute_end == b->compute_end, "%s", what);
    ck_assert_msg(a->busy0 == b->busy0, "%s", what);
    ck_assert_msg(a->dp_end == b->dp_end, "%s", what);
    ck_assert_msg(a->optimizer == b->optimizer, "%s", what);
    ck_assert_msg(a->tasks == b->tasks && a->events == b->events, "%s", what);
    ck_assert_msg(a->lone == b->lone && a->shared == b->shared, "%s", what);
}

START_TEST(test_in_order_pass)
{
    /* Where no two flows are ever on one link at once (the 1T-class
     * scenario on the bulk preset's pieces: every one of its 130,048
     * flows alone), the in-order pass gives the step: the same figures as
     * the ordered replay and as the engine's simulation of every
     * micro-batch, to the ns. */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    load_1t(&sc);
    /* At a100-sxm4-80gb's LL128 slot of 80 KiB the collectives of its
     * pieces end early enough that two flows meet on a link; at the former
     * 128 KiB none do, the situation this test needs. */
    sc.hardware.nccl_slot_bytes[TPS_PROTO_LL128] = 131072;
    TpsPieceTimes pc;
    ck_assert(tps_simulate_pieces(&sc, tps_strategy_lookup("bulk"), &pc, &error));
    TpsPipeFigures fast, ordered;
    replay_figures(&sc, &pc, TRUE, &fast);
    replay_figures(&sc, &pc, FALSE, &ordered);
    ck_assert(fast.in_order);
    ck_assert(!ordered.in_order);
    ck_assert_uint_eq(ordered.shared, 0);
    ck_assert_uint_eq(fast.lone, (guint64)(sc.pp * sc.vpp - 1) * 2 * 512);
    assert_same_figures(&fast, &ordered, "bulk");
    TpsStepResult full, step;
    gboolean replayed;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, &pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_replay(&sc, &pc, &step, &replayed, &error), "%s",
                  error->message);
    /* The step itself is replayed in time order, which jumps over steady
     * periods (the cheaper pass here): the same figures. */
    ck_assert(replayed && !step.in_order && step.periods > 0);
    assert_same_step(&step, &full, TRUE, "bulk, in time order");
}
END_TEST

START_TEST(test_in_order_pass_not_taken)
{
    /* Where two flows meet on a link the in-order pass stops at the first
     * overlap and the ordered replay gives the step: the same figures as
     * without the pass. Forward and backward flows meet on the 1T-class
     * scenario's NICs under the megatron preset's pieces (60 instants of
     * sharing), as they do under t1_pieces[0] (test_replay_shares_links). */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    load_1t(&sc);
    TpsPieceTimes pc;
    ck_assert(tps_simulate_pieces(&sc, tps_strategy_lookup("megatron"), &pc, &error));
    TpsPipeFigures fast, ordered;
    replay_figures(&sc, &pc, TRUE, &fast);
    replay_figures(&sc, &pc, FALSE, &ordered);
    ck_assert(!fast.in_order);
    ck_assert_uint_gt(fast.shared, 0);
    ck_assert_uint_gt(ordered.periods, 0);
    assert_same_figures(&fast, &ordered, "megatron");
    TpsStepResult full, step;
    gboolean replayed;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, &pc, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate_replay(&sc, &pc, &step, &replayed, &error), "%s",
                  error->message);
    ck_assert(replayed && !step.in_order);
    assert_same_step(&step, &full, TRUE, "megatron, ordered");
}
END_TEST

START_TEST(test_replay_key_range)
{
    /* A tournament key holds a route's first entry in its high bits and
     * the route in the low log2(leaves): on 4 stages (8 routes, 3 bits) an
     * entry fits up to 2^60 ns, and the replay keeps a bit of margin,
     * voiding itself at an entry of 2^59 ns or more (the engine then runs
     * the step). Layers of 2^52 and 2^53 ns (4 a stage, 10 micro-batches:
     * a step of about (10 + 3) x 4 x (2^52 + 2^53) = 39 x 2^54 ns, the
     * last flow entering a backward of stage 0, 4 x 2^53 = 2^55 ns, or
     * more before its end: after 37 x 2^54 > 2^59) put the last entries
     * past 2^59 ns but below 2^60 (64 x 2^54): the
     * replay in time order says it did not hold, and the step is the
     * engine's; at millisecond layers the same replay holds. */
    g_auto(TpsScenario) sc = {0};
    small(&sc, 8, 4, 1, 1, 10);
    const TpsPieceTimes huge = {.layer_fwd = G_GINT64_CONSTANT(1) << 52,
                                .layer_bwd = G_GINT64_CONSTANT(1) << 53};
    g_autoptr(GError) error = NULL;
    TpsPipeFigures fig;
    gboolean replayed;
    ck_assert(tps_pipe_replay(&sc, &ms_pieces, 10, TPS_REPLAY_TIME_ORDER, &fig, &replayed, &error));
    ck_assert(replayed);
    ck_assert_msg(tps_pipe_replay(&sc, &huge, 10, TPS_REPLAY_TIME_ORDER, &fig, &replayed, &error),
                  "%s", error ? error->message : "");
    ck_assert(!replayed);
    TpsStepResult full, best;
    ck_assert_msg(tps_pipeline_simulate_full(&sc, &huge, &full, &error), "%s", error->message);
    ck_assert_msg(tps_pipeline_simulate(&sc, &huge, &best, &error), "%s", error->message);
    ck_assert_int_gt(full.step, G_GINT64_CONSTANT(1) << 59);
    ck_assert_int_lt(full.step, G_GINT64_CONSTANT(1) << 60);
    ck_assert_int_eq(best.step, full.step);
}
END_TEST

START_TEST(test_many_micro_batches)
{
    /* D2 of issue 13: 2^32 micro-batches (the largest global batch) once
     * took an allocation of 512 GB and aborted; the schedule's memory and
     * time no longer depend on the number of micro-batches, and the step
     * is the shorter schedule's plus whole periods. */
    g_auto(TpsScenario) sc = {0};
    small(&sc, 8, 4, 2, 1, G_GUINT64_CONSTANT(1) << 32);
    TpsStepResult r;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_pipeline_simulate(&sc, &ms_pieces, &r, &error), "%s", error->message);
    ck_assert(r.micro_simulated < 1000 && r.tasks < 100000);
    /* 4 layers a stage, 2 chunks of 2: a period of pp = 4 micro-batches
     * is each stage's 8 chunk forwards and backwards of 2 layers, 4 x 2 x
     * (2 x 1 + 2 x 2) ms = 48 ms, with the stages always busy. */
    ck_assert_int_eq(r.period, 48000000);
    ck_assert(r.step > (TpsTime)(G_GUINT64_CONSTANT(1) << 30) * 48000000);
    /* Whatever the micro-batches, the bubble is the 1F1B fill and drain,
     * here a vanishing share. */
    ck_assert(r.bubble_fraction >= 0.0 && r.bubble_fraction < 1e-6);
}
END_TEST

START_TEST(test_errors_not_wraps)
{
    /* Beyond what the simulation holds, an input error naming the key,
     * never an abort (D2: 2^39 bytes asked for) or a wrapped time (D3). */
    g_auto(TpsScenario) sc = {0};
    small(&sc, 8, 4, 1, 1, 8);
    sc.global_batch = G_GUINT64_CONSTANT(1) << 32;
    TpsStepResult r;
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_pipeline_simulate_full(&sc, &ms_pieces, &r, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_msg(strstr(error->message, "training.global_batch (4294967296)") != NULL, "%s",
                  error->message);
    g_clear_error(&error);
    /* A chunk of 4 layers of 2^61 ns each. */
    const TpsPieceTimes huge = {.layer_fwd = G_GINT64_CONSTANT(1) << 61,
                                .layer_bwd = G_GINT64_CONSTANT(1) << 61};
    sc.global_batch = 8;
    ck_assert(!tps_pipeline_simulate(&sc, &huge, &r, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    g_clear_error(&error);
    /* Chunks that fit, but 2^32 micro-batches of them do not: the
     * extrapolation stops at 2^62 ns. */
    const TpsPieceTimes long_layers = {.layer_fwd = G_GINT64_CONSTANT(1) << 28,
                                       .layer_bwd = G_GINT64_CONSTANT(1) << 29};
    sc.global_batch = G_GUINT64_CONSTANT(1) << 32;
    ck_assert(!tps_pipeline_simulate(&sc, &long_layers, &r, &error));
    ck_assert_msg(strstr(error->message, "2^62") != NULL ||
                      strstr(error->message, "4611686018427387904") != NULL,
                  "%s", error->message);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("step");
    tcase_add_test(tc, test_no_pipeline_is_the_sum);
    tcase_add_test(tc, test_optimizer_item_blocks);
    tcase_add_loop_test(tc, test_bubble, 0, G_N_ELEMENTS(bubble_cases));
    tcase_add_test(tc, test_dp_overlap);
    tcase_add_test(tc, test_param_gather_overlap);
    tcase_add_test(tc, test_last_bucket_exposed);
    tcase_add_test(tc, test_uneven_stages);
    tcase_add_test(tc, test_mixed_chunks);
    tcase_add_loop_test(tc, test_mixed_is_exact, 0,
                        G_N_ELEMENTS(mixed_layouts) * G_N_ELEMENTS(mixed_pieces));
    tcase_add_test(tc, test_fsdp_prefetch);
    tcase_add_test(tc, test_fsdp_strategies);
    tcase_add_test(tc, test_amax_reduction);
    suite_add_tcase(s, tc);
    tc = tcase_create("replayed");
    tcase_add_loop_test(tc, test_replayed_is_exact, 0,
                        G_N_ELEMENTS(layouts) * G_N_ELEMENTS(odd_pieces));
    tcase_add_loop_test(tc, test_paired_is_exact, 0,
                        G_N_ELEMENTS(layouts) * G_N_ELEMENTS(odd_pieces));
    tcase_add_test(tc, test_replay_holds);
    tcase_add_loop_test(tc, test_replay_shares_links, 0, G_N_ELEMENTS(t1_pieces));
    tcase_add_test(tc, test_replay_presets);
    tcase_add_test(tc, test_replay_part_period);
    tcase_add_test(tc, test_replay_context_parallel);
    tcase_add_test(tc, test_in_order_pass);
    tcase_add_test(tc, test_in_order_pass_not_taken);
    tcase_add_test(tc, test_replay_key_range);
    tcase_set_timeout(tc, 600);
    suite_add_tcase(s, tc);
    tc = tcase_create("extrapolated");
    tcase_add_loop_test(tc, test_extrapolated_is_exact, 0,
                        G_N_ELEMENTS(layouts) * G_N_ELEMENTS(odd_pieces));
    tcase_add_test(tc, test_many_micro_batches);
    tcase_add_test(tc, test_errors_not_wraps);
    suite_add_tcase(s, tc);
    tc = tcase_create("schedule");
    tcase_add_test(tc, test_schedule_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("memory");
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_interleaved_memory);
    tcase_add_test(tc, test_memory_dp_dtypes);
    tcase_add_test(tc, test_fsdp_memory);
    tcase_add_test(tc, test_memory_dropout);
    suite_add_tcase(s, tc);
    tc = tcase_create("overheads");
    tcase_add_test(tc, test_context);
    tcase_add_test(tc, test_nccl_buffers);
    tcase_add_loop_test(tc, test_nvls_buffers, 0, G_N_ELEMENTS(nvls_cases));
    tcase_add_test(tc, test_fragmentation);
    tcase_add_test(tc, test_userbuffers);
    tcase_add_test(tc, test_fits_with_overheads);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
