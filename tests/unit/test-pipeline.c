/* sched/pipeline: the step frame. Expected values are derived by hand from
 * the schedule's definition, with piece times chosen so that the formulas
 * are exact (P2P transfers are tiny against the chunks). */
#include <check.h>

#include "test-util.h"
#include <stdlib.h>
#include <string.h>

#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "io/scenario-file.h"
#include "sched/pipeline.h"

/* A small GPT on one A100 node per stage: 16 layers, hidden 1024, so
 * activations crossing a stage boundary are 2 MiB (a few us on IB). */
static void
model(TpsScenario *sc, guint hidden, guint tp, guint pp, guint vpp, guint dp, guint64 global)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: small\nhardware: a100-sxm4-80gb\n"
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
    const TpsTime micro = 16 * (pc.layer_fwd + pc.layer_bwd) + pc.emb_fwd + pc.emb_bwd +
                          pc.head_fwd + pc.head_bwd;
    ck_assert_int_eq(r.compute_end, 6 * micro);
    ck_assert_int_eq(r.step, 6 * micro + r.optimizer);
    ck_assert(r.optimizer > 0);
    ck_assert_double_eq_tol(r.bubble_fraction, 0.0, 1e-12);
    tps_scenario_clear(&sc);
}
END_TEST

typedef struct {
    guint pp, vpp;
    guint64 micro;
} BubbleCase;

static const BubbleCase bubble_cases[] = {
    {2, 1, 4},  {4, 1, 8},  {4, 1, 16}, {8, 1, 8},  {8, 1, 32},
    {2, 2, 4},  {4, 2, 8},  {4, 4, 16}, {8, 2, 32},
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
    const TpsTime host = tps_time_from_us(hw->host_memcpy_us) +
                         tps_time_from_us(op) + 6 * tps_time_from_us(hw->host_launch_us) +
                         tps_time_from_us(op) + 4 * tps_time_from_us(hw->host_launch_us) +
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
                  "pp %u vpp %u m %" G_GUINT64_FORMAT ": bubble %.5f, expected %.5f", c->pp,
                  c->vpp, c->micro, r.bubble_fraction, expect);
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
    ck_assert_msg(slow.dp_exposed * 4 < serial.dp_exposed, "overlapped %" G_GINT64_FORMAT
                  " vs serial %" G_GINT64_FORMAT, slow.dp_exposed, serial.dp_exposed);
    ck_assert(fast.dp_exposed * 2 > serial.dp_exposed);
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
    const double layer_params = (4 * h * h + 2 * h * 4 * h + 3 * h + 4 * h) / t + 5 * h;
    /* Stage 0: 4 layers, the word and position embeddings. */
    const double p0 = 4 * layer_params + V * h / t + s * h;
    ck_assert_double_eq_tol(tps_stage_params(&sc, 0), p0, 1e-6);
    /* SP with flash attention: sbh x 34 / t per layer. */
    const double act = s * h * 34 / t;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), act, 1e-6);
    /* 1F1B: stage 0 holds pp micro-batches of its 4 layers. */
    TpsStageMemory m;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.activations, 4 * 4 * act, 1e-6);
    ck_assert_double_eq_tol(m.weights_grads, 6 * p0, 1e-6);
    ck_assert_double_eq_tol(m.optimizer, 12 * p0, 1e-6);
    /* The last stage holds one micro-batch, plus its fp32 logits. */
    tps_pipeline_stage_memory(&sc, 3, &m);
    ck_assert_double_eq_tol(m.activations, 4 * act + 4 * s * V / t, 1e-6);

    /* Without SP the LayerNorm/dropout part is replicated:
     * sbh (10 + 24/t); SP divides all of it by t. */
    sc.sp = FALSE;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), s * h * (10 + 24 / t), 1e-6);
    sc.sp = TRUE;
    /* Unfused attention stores the scores: + 5 a s / h. */
    sc.attention = TPS_ATTENTION_UNFUSED;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), s * h * (34 + 5 * 16 * s / h) / t,
                            1e-6);
    /* ... unless selective recompute drops them; full recompute keeps only
     * the layer input, 2 s b h / t with SP. */
    sc.recompute = TPS_RECOMPUTE_SELECTIVE;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), act, 1e-6);
    sc.recompute = TPS_RECOMPUTE_FULL;
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&sc), 2 * s * h / t, 1e-6);
    /* The distributed optimizer shards the optimizer states over dp. */
    sc.distributed_optimizer = TRUE;
    sc.dp = 4;
    sc.global_batch = 32;
    tps_pipeline_stage_memory(&sc, 0, &m);
    ck_assert_double_eq_tol(m.optimizer, 12 * p0 / 4, 1e-6);
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

int
main(void)
{
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("step");
    tcase_add_test(tc, test_no_pipeline_is_the_sum);
    tcase_add_test(tc, test_optimizer_item_blocks);
    tcase_add_loop_test(tc, test_bubble, 0, G_N_ELEMENTS(bubble_cases));
    tcase_add_test(tc, test_dp_overlap);
    suite_add_tcase(s, tc);
    tc = tcase_create("schedule");
    tcase_add_test(tc, test_schedule_order);
    suite_add_tcase(s, tc);
    tc = tcase_create("memory");
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_interleaved_memory);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
