/* Scenario values (sched/scenario.h): a copy owns everything it points to,
 * the lifetime helpers and cleanup macros, and the validator rule by rule
 * on scenarios built by hand (no file: the loader's side is
 * test-scenario-file.c, the sweep's test-render.c). Run under valgrind
 * (`meson test --setup valgrind scenario`) to see that nothing is shared or
 * leaked. */
#include <check.h>

#include "test-util.h"
#include <string.h>

#include "core/error.h"
#include "sched/scenario.h"

/* A valid model scenario: GPT-3 175B on one node (hidden 12288 = 96 heads
 * of 128, ffn 4 * hidden, tp 8 with sp, pp 4 with 96 / 4 = 24 layers per
 * stage, 64 micro-batches of 1). */
static void
model_base(TpsScenario *sc)
{
    tps_scenario_init(sc);
    sc->name = g_strdup("base");
    sc->hidden = 12288;
    sc->heads = 96;
    sc->ffn_hidden = 49152;
    sc->layers = 96;
    sc->seq_len = 2048;
    sc->global_batch = 64;
    sc->tp = 8;
    sc->sp = TRUE;
    sc->pp = 4;
}

/* A valid op scenario: all-gather + GEMM, 8192 x 49152 x 12288 over tp 8
 * (the loader's defaults leave the model fields at 0). */
static void
op_base(TpsScenario *sc)
{
    tps_scenario_init(sc);
    sc->name = g_strdup("op");
    sc->is_op = TRUE;
    sc->op_kind = TPS_OP_AG_GEMM;
    sc->m = 8192;
    sc->n = 49152;
    sc->k = 12288;
    sc->tp = 8;
    sc->sp = TRUE;
}

/* ---- copy, new/free, g_auto ---- */

START_TEST(test_copy_is_deep)
{
    g_autoptr(TpsScenario) orig = tps_scenario_new();
    model_base(orig);
    orig->hardware_ref = g_strdup("a100-sxm4-80gb");
    orig->file = g_strdup("scenarios/base.yaml");
    orig->strategies = g_strsplit("megatron,ring-ag", ",", -1);
    orig->hardware.name = g_strdup("a100-sxm4-80gb");
    orig->hardware.gpu_name = g_strdup("NVIDIA A100-SXM4-80GB");
    orig->hardware.sms = 108;
    orig->overlap[TPS_GEMM_FC2_FPROP].set = TRUE;
    orig->overlap[TPS_GEMM_FC2_FPROP].method = TPS_METHOD_PIPELINE;
    orig->overlap[TPS_GEMM_FC2_FPROP].num_splits = 4;

    g_auto(TpsScenario) copy = {0};
    tps_scenario_copy(&copy, orig);

    /* Equal values... */
    ck_assert_str_eq(copy.name, "base");
    ck_assert_str_eq(copy.hardware_ref, "a100-sxm4-80gb");
    ck_assert_str_eq(copy.file, "scenarios/base.yaml");
    ck_assert_str_eq(copy.strategies[1], "ring-ag");
    ck_assert_ptr_null(copy.strategies[2]);
    ck_assert_str_eq(copy.hardware.gpu_name, "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(copy.hardware.sms, 108);
    ck_assert_uint_eq(copy.overlap[TPS_GEMM_FC2_FPROP].num_splits, 4);
    ck_assert_uint_eq(copy.tp, 8);

    /* ...in memory of its own: change every owned string in place, replace
     * the list, and change plain values; the original keeps its own. */
    copy.name[0] = 'X';
    copy.hardware_ref[0] = 'X';
    copy.file[0] = 'X';
    copy.strategies[0][0] = 'X';
    copy.hardware.name[0] = 'X';
    copy.hardware.gpu_name[0] = 'X';
    g_strfreev(copy.strategies);
    copy.strategies = g_strsplit("te-a100", ",", -1);
    copy.overlap[TPS_GEMM_FC2_FPROP].num_splits = 8;
    copy.tp = 4;
    copy.hardware.sms = 132;

    ck_assert_str_eq(orig->name, "base");
    ck_assert_str_eq(orig->hardware_ref, "a100-sxm4-80gb");
    ck_assert_str_eq(orig->file, "scenarios/base.yaml");
    ck_assert_str_eq(orig->strategies[0], "megatron");
    ck_assert_str_eq(orig->strategies[1], "ring-ag");
    ck_assert_str_eq(orig->hardware.name, "a100-sxm4-80gb");
    ck_assert_str_eq(orig->hardware.gpu_name, "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(orig->overlap[TPS_GEMM_FC2_FPROP].num_splits, 4);
    ck_assert_uint_eq(orig->tp, 8);
    ck_assert_uint_eq(orig->hardware.sms, 108);

    /* Freed independently: the original first, then the copy at the end of
     * the scope (valgrind sees a double free or a leak if they share). */
    g_clear_pointer(&orig, tps_scenario_free);
    ck_assert_str_eq(copy.file, "Xcenarios/base.yaml");
}
END_TEST

START_TEST(test_copy_without_lists)
{
    /* What the loader leaves absent (strategies: every preset) stays
     * absent, and a copy of a copy is still a value of its own. */
    g_auto(TpsScenario) a = {0};
    g_auto(TpsScenario) b = {0};
    g_auto(TpsScenario) c = {0};
    op_base(&a);
    tps_scenario_copy(&b, &a);
    tps_scenario_copy(&c, &b);
    ck_assert_ptr_null(c.strategies);
    ck_assert_ptr_null(c.hardware.name);
    ck_assert_str_eq(c.name, "op");
    ck_assert_ptr_ne(c.name, a.name);
    ck_assert(c.is_op);
    ck_assert_uint_eq(c.k, 12288);
}
END_TEST

START_TEST(test_new_free)
{
    g_autoptr(TpsScenario) sc = tps_scenario_new();
    /* The defaults of design.md. */
    ck_assert_uint_eq(sc->seed, 1);
    ck_assert_uint_eq(sc->vocab, 51200);
    ck_assert_uint_eq(sc->tp, 1);
    ck_assert_uint_eq(sc->micro_batch, 1);
    ck_assert(sc->overlap_grad_reduce);
    ck_assert_uint_eq(sc->overlap[TPS_GEMM_QKV_FPROP].cga_size, 2);
    tps_scenario_free(NULL);
    tps_scenario_clear(NULL);
    /* Cleared twice: harmless. */
    g_auto(TpsScenario) twice = {0};
    model_base(&twice);
    tps_scenario_clear(&twice);
}
END_TEST

START_TEST(test_field_path)
{
    g_autofree char *heads = tps_scenario_field_path(TPS_FIELD_HEADS, TPS_GEMM_SLOT_COUNT);
    g_autofree char *batch = tps_scenario_field_path(TPS_FIELD_GLOBAL_BATCH, TPS_GEMM_SLOT_COUNT);
    g_autofree char *k = tps_scenario_field_path(TPS_FIELD_OP_K, TPS_GEMM_SLOT_COUNT);
    g_autofree char *splits = tps_scenario_field_path(TPS_FIELD_NUM_SPLITS, TPS_GEMM_FC2_FPROP);
    ck_assert_str_eq(heads, "model.heads");
    ck_assert_str_eq(batch, "training.global_batch");
    ck_assert_str_eq(k, "op.k");
    ck_assert_str_eq(splits, "overlap.fc2_fprop.num_splits");
}
END_TEST

/* ---- the validator, one rule a row ---- */

typedef struct {
    const char *what;
    gboolean op; /* start from op_base(), else model_base() */
    void (*edit)(TpsScenario *sc);
    const char *message; /* the whole message; NULL: valid */
    TpsScenarioField field, fallback;
    TpsGemmSlot slot; /* for TPS_FIELD_NUM_SPLITS */
} RuleCase;

#define EDIT(name, body)                                                                           \
    static void name(TpsScenario *sc)                                                              \
    {                                                                                              \
        body;                                                                                      \
    }

EDIT(nothing, (void)sc)
EDIT(tp_0, sc->tp = 0)
EDIT(tp_128, sc->tp = 128)
EDIT(seq_too_long, sc->seq_len = (1u << 24) + 1)
EDIT(batch_not_filled, sc->global_batch = 0)
EDIT(splits_65, sc->overlap[TPS_GEMM_PROJ_FPROP].num_splits = 65)
EDIT(splits_64, sc->overlap[TPS_GEMM_PROJ_FPROP].num_splits = 64)
EDIT(hidden_12289, sc->hidden = 12289)
EDIT(tp_7, sc->tp = 7)
EDIT(ffn_49156, sc->ffn_hidden = 49156)
EDIT(seq_2044, sc->seq_len = 2044)
EDIT(seq_2044_no_sp, sc->seq_len = 2044; sc->sp = FALSE)
EDIT(pp_5, sc->pp = 5)
EDIT(vpp_without_pp, sc->pp = 1; sc->vpp = 2)
EDIT(pp_4_vpp_5, sc->vpp = 5)
EDIT(batch_9_of_2, sc->pp = 1; sc->micro_batch = 2; sc->global_batch = 9)
EDIT(vpp_6_micro, sc->vpp = 2; sc->global_batch = 6)
EDIT(vpp_8_micro, sc->vpp = 2; sc->global_batch = 8)
EDIT(dp_4_vpp, sc->vpp = 2; sc->dp = 4; sc->global_batch = 32)
EDIT(m_8190, sc->m = 8190)
EDIT(m_8190_rs, sc->m = 8190; sc->op_kind = TPS_OP_GEMM_RS)
EDIT(n_8190, sc->n = 8190)
EDIT(n_8190_rs, sc->n = 8190; sc->op_kind = TPS_OP_GEMM_RS)
EDIT(k_8190, sc->k = 8190)
EDIT(k_8190_rs, sc->k = 8190; sc->op_kind = TPS_OP_GEMM_RS)
EDIT(op_tp_3, sc->tp = 3)
/* Uneven pipelines on the 96 layers of model_base(), pp 4. */
EDIT(first_20_last_20, sc->first_stage_layers = 20; sc->last_stage_layers = 20)
EDIT(first_21, sc->first_stage_layers = 21)
EDIT(first_one_stage, sc->pp = 1; sc->first_stage_layers = 8)
EDIT(first_and_account, sc->first_stage_layers = 20; sc->account_for_embedding = TRUE)
EDIT(first_too_many, sc->first_stage_layers = 90; sc->last_stage_layers = 10)
EDIT(pp2_no_middle, sc->pp = 2; sc->first_stage_layers = 40; sc->last_stage_layers = 50)
EDIT(account_97, sc->account_for_embedding = TRUE)
EDIT(account_98, sc->account_for_embedding = TRUE; sc->account_for_loss = TRUE)
EDIT(first_20_vpp_3, sc->first_stage_layers = 20; sc->last_stage_layers = 20; sc->vpp = 3;
     sc->global_batch = 64)

#define F(x) TPS_FIELD_##x
#define NO_SLOT TPS_GEMM_SLOT_COUNT

/* Messages derived from the numbers in each row by hand. */
static const RuleCase rule_cases[] = {
    {"valid model scenario", FALSE, nothing, NULL, F(NONE), F(NONE), NO_SLOT},
    {"valid op scenario", TRUE, nothing, NULL, F(NONE), F(NONE), NO_SLOT},
    /* Limits. */
    {"tp 0", FALSE, tp_0, "'parallel.tp' is 0, out of range [1, 64]", F(TP), F(NONE), NO_SLOT},
    {"tp 128", TRUE, tp_128, "'parallel.tp' is 128, out of range [1, 64]", F(TP), F(NONE), NO_SLOT},
    {"seq_len beyond 2^24", FALSE, seq_too_long,
     "'model.seq_len' is 16777217, out of range [1, 16777216]", F(SEQ_LEN), F(NONE), NO_SLOT},
    {"global_batch left unfilled", FALSE, batch_not_filled,
     "'training.global_batch' is 0, out of range [1, 4294967296]", F(GLOBAL_BATCH), F(NONE),
     NO_SLOT},
    {"num_splits 65", FALSE, splits_65,
     "'overlap.proj_fprop.num_splits' is 65, out of range [1, 64]", F(NUM_SPLITS), F(NONE),
     TPS_GEMM_PROJ_FPROP},
    {"num_splits 64", FALSE, splits_64, NULL, F(NONE), F(NONE), NO_SLOT},
    /* Model shape and layout. */
    {"hidden not divisible by heads", FALSE, hidden_12289,
     "model.hidden (12289) must be divisible by model.heads (96): each head gets hidden / heads "
     "channels",
     F(HIDDEN), F(NONE), NO_SLOT},
    {"heads not divisible by tp", FALSE, tp_7,
     "model.heads (96) must be divisible by parallel.tp (7): each rank computes heads / tp "
     "attention heads",
     F(HEADS), F(NONE), NO_SLOT},
    {"ffn_hidden not divisible by tp", FALSE, ffn_49156,
     "model.ffn_hidden (49156) must be divisible by parallel.tp (8): FC1 and FC2 are split over tp",
     F(FFN_HIDDEN), F(TP), NO_SLOT},
    {"seq_len not divisible by tp under sp", FALSE, seq_2044,
     "model.seq_len (2044) must be divisible by parallel.tp (8): sequence parallelism shards the "
     "sequence over tp",
     F(SEQ_LEN), F(NONE), NO_SLOT},
    {"seq_len free without sp", FALSE, seq_2044_no_sp, NULL, F(NONE), F(NONE), NO_SLOT},
    {"layers not divisible by pp", FALSE, pp_5,
     "model.layers (96) must be divisible by parallel.pp (5): every pipeline stage holds as many "
     "layers",
     F(LAYERS), F(NONE), NO_SLOT},
    {"vpp without pp", FALSE, vpp_without_pp,
     "parallel.vpp (2) needs pipeline stages (parallel.pp > 1)", F(VPP), F(NONE), NO_SLOT},
    {"layers not divisible by pp * vpp", FALSE, pp_4_vpp_5,
     "model.layers (96) must be divisible by parallel.pp * parallel.vpp (20): every virtual stage "
     "holds as many layers",
     F(LAYERS), F(NONE), NO_SLOT},
    /* Batch. */
    {"global_batch not a multiple of micro_batch * dp", FALSE, batch_9_of_2,
     "training.global_batch (9) must be divisible by training.micro_batch * parallel.dp (2): a "
     "step is a whole number of micro-batches per replica",
     F(GLOBAL_BATCH), F(NONE), NO_SLOT},
    {"interleaving: 6 micro-batches, pp 4", FALSE, vpp_6_micro,
     "the interleaved schedule (parallel.vpp > 1) needs the number of micro-batches (6 = "
     "global_batch / (micro_batch * dp)) to be a multiple of parallel.pp (4)",
     F(GLOBAL_BATCH), F(VPP), NO_SLOT},
    {"interleaving: 8 micro-batches, pp 4", FALSE, vpp_8_micro, NULL, F(NONE), F(NONE), NO_SLOT},
    {"interleaving: 32 / 4 replicas = 8 micro-batches", FALSE, dp_4_vpp, NULL, F(NONE), F(NONE),
     NO_SLOT},
    /* Op scenarios: which dimension tp splits depends on the kind. */
    {"ag_gemm m", TRUE, m_8190,
     "op.m (8190) must be divisible by parallel.tp (8): the input is gathered along m", F(OP_M),
     F(NONE), NO_SLOT},
    {"gemm_rs m", TRUE, m_8190_rs,
     "op.m (8190) must be divisible by parallel.tp (8): the output is reduce-scattered along m",
     F(OP_M), F(NONE), NO_SLOT},
    {"ag_gemm n", TRUE, n_8190,
     "op.n (8190) must be divisible by parallel.tp (8): each rank holds n / tp weight columns",
     F(OP_N), F(NONE), NO_SLOT},
    {"gemm_rs n is whole", TRUE, n_8190_rs, NULL, F(NONE), F(NONE), NO_SLOT},
    {"ag_gemm k is whole", TRUE, k_8190, NULL, F(NONE), F(NONE), NO_SLOT},
    {"gemm_rs k", TRUE, k_8190_rs,
     "op.k (8190) must be divisible by parallel.tp (8): each rank holds k / tp input columns",
     F(OP_K), F(NONE), NO_SLOT},
    /* Uneven pipelines (Megatron's rules; 96 layers, pp 4). */
    {"first 20, last 20: 28 on each middle stage", FALSE, first_20_last_20, NULL, F(NONE), F(NONE),
     NO_SLOT},
    {"first 21: 75 left for 3 stages, 25 each", FALSE, first_21, NULL, F(NONE), F(NONE), NO_SLOT},
    {"first stage layers without stages", FALSE, first_one_stage,
     "parallel.first_stage_layers needs pipeline stages (parallel.pp > 1)", F(FIRST_STAGE_LAYERS),
     F(NONE), NO_SLOT},
    {"first stage layers and the embedding accounted", FALSE, first_and_account,
     "parallel.first_stage_layers cannot be combined with "
     "parallel.account_for_embedding/loss_in_pipeline_split (Megatron refuses both)",
     F(FIRST_STAGE_LAYERS), F(NONE), NO_SLOT},
    {"first 90 + last 10 > 96", FALSE, first_too_many,
     "parallel.first_stage_layers (90) + parallel.last_stage_layers (10) exceed model.layers (96)",
     F(FIRST_STAGE_LAYERS), F(NONE), NO_SLOT},
    {"pp 2: 40 + 50 leave 6 for no middle stage", FALSE, pp2_no_middle,
     "parallel.first_stage_layers leaves 6 of model.layers (96) for 0 middle pipeline stages: "
     "they must split evenly, and there must be middle layers exactly when there are middle "
     "stages (Megatron's rule)",
     F(FIRST_STAGE_LAYERS), F(NONE), NO_SLOT},
    {"embedding accounted: 97 on 4 stages", FALSE, account_97,
     "model.layers (96) with the embedding and loss counted as layers (97) must be divisible by "
     "parallel.pp (4): every pipeline stage holds as many (Megatron's "
     "--account-for-embedding/loss-in-pipeline-split)",
     F(LAYERS), F(ACCOUNT_EMBEDDING), NO_SLOT},
    {"embedding and loss accounted: 98 on 4 stages", FALSE, account_98,
     "model.layers (96) with the embedding and loss counted as layers (98) must be divisible by "
     "parallel.pp (4): every pipeline stage holds as many (Megatron's "
     "--account-for-embedding/loss-in-pipeline-split)",
     F(LAYERS), F(ACCOUNT_EMBEDDING), NO_SLOT},
    {"first 20, vpp 3: 20 not in 3 chunks", FALSE, first_20_vpp_3,
     "pipeline stage 0's 20 layers must be divisible by parallel.vpp (3): each model chunk of a "
     "stage holds as many",
     F(FIRST_STAGE_LAYERS), F(NONE), NO_SLOT},
    {"op tp 3: m first", TRUE, op_tp_3,
     "op.m (8192) must be divisible by parallel.tp (3): the input is gathered along m", F(OP_M),
     F(NONE), NO_SLOT},
};

START_TEST(test_rules)
{
    const RuleCase *c = &rule_cases[_i];
    g_auto(TpsScenario) sc = {0};
    if (c->op)
        op_base(&sc);
    else
        model_base(&sc);
    c->edit(&sc);

    TpsScenarioProblem problem = {F(COUNT), F(COUNT), 0};
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_scenario_validate(&sc, &problem, &error);
    if (c->message == NULL) {
        ck_assert_msg(ok, "%s: %s", c->what, error != NULL ? error->message : "");
        ck_assert_int_eq(problem.field, TPS_FIELD_NONE);
        return;
    }
    ck_assert_msg(!ok, "%s: accepted", c->what);
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_str_eq(error->message, c->message);
    ck_assert_int_eq(problem.field, c->field);
    ck_assert_int_eq(problem.fallback, c->fallback);
    if (c->field == TPS_FIELD_NUM_SPLITS)
        ck_assert_int_eq(problem.slot, c->slot);

    /* Without a problem to fill, the same answer. */
    g_autoptr(GError) again = NULL;
    ck_assert(!tps_scenario_validate(&sc, NULL, &again));
    ck_assert_str_eq(again->message, c->message);
}
END_TEST

/* The layers of each stage and model chunk, derived by hand from
 * Megatron's get_num_layers_to_build(). */
typedef struct {
    guint64 layers;
    guint pp, vpp, first, last;
    gboolean embedding, loss;
    guint chunks[4][2]; /* [stage][chunk] */
} SplitCase;

static const SplitCase split_cases[] = {
    /* Even: 96 / 4 = 24 a stage. */
    {96, 4, 1, 0, 0, FALSE, FALSE, {{24}, {24}, {24}, {24}}},
    /* Llama 3 405B's 126 on 4 stages, first and last 30: (126 - 60) / 2
     * = 33 on each middle stage. */
    {126, 4, 1, 30, 30, FALSE, FALSE, {{30}, {33}, {33}, {30}}},
    /* Only the last given: (30 - 6) / 3 = 8 on the others. */
    {30, 4, 1, 0, 6, FALSE, FALSE, {{8}, {8}, {8}, {6}}},
    /* Interleaved: first 8 = 2 chunks of 4, middle (32 - 16) / 2 = 8 = 2 x
     * 4, last 8. */
    {32, 4, 2, 8, 8, FALSE, FALSE, {{4, 4}, {4, 4}, {4, 4}, {4, 4}}},
    {36, 4, 2, 6, 6, FALSE, FALSE, {{3, 3}, {6, 6}, {6, 6}, {3, 3}}},
    /* The embedding and the loss counted: (30 + 2) / 4 = 8 a stage, the
     * first virtual stage and the last one a layer fewer. */
    {30, 4, 1, 0, 0, TRUE, TRUE, {{7}, {8}, {8}, {7}}},
    {30, 4, 2, 0, 0, TRUE, TRUE, {{3, 4}, {4, 4}, {4, 4}, {4, 3}}},
    /* The embedding alone: (31 + 1) / 4 = 8, stage 0 holds 7. */
    {31, 4, 1, 0, 0, TRUE, FALSE, {{7}, {8}, {8}, {8}}},
};

START_TEST(test_split)
{
    const SplitCase *c = &split_cases[_i];
    g_auto(TpsScenario) sc = {0};
    model_base(&sc);
    sc.layers = c->layers;
    sc.pp = c->pp;
    sc.vpp = c->vpp;
    sc.first_stage_layers = c->first;
    sc.last_stage_layers = c->last;
    sc.account_for_embedding = c->embedding;
    sc.account_for_loss = c->loss;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_validate(&sc, NULL, &error), "case %d: %s", _i,
                  error ? error->message : "");
    guint total = 0, most = 0;
    for (guint s = 0; s < c->pp; s++) {
        guint stage = 0;
        for (guint k = 0; k < c->vpp; k++) {
            ck_assert_uint_eq(tps_scenario_chunk_layers(&sc, s, k), c->chunks[s][k]);
            stage += c->chunks[s][k];
            most = MAX(most, c->chunks[s][k]);
        }
        ck_assert_uint_eq(tps_scenario_stage_layers(&sc, s), stage);
        total += stage;
    }
    ck_assert_uint_eq(total, c->layers);
    ck_assert_uint_eq(tps_scenario_max_chunk_layers(&sc), most);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("scenario");

    TCase *tc = tcase_create("value");
    tcase_add_test(tc, test_copy_is_deep);
    tcase_add_test(tc, test_copy_without_lists);
    tcase_add_test(tc, test_new_free);
    tcase_add_test(tc, test_field_path);
    suite_add_tcase(s, tc);

    tc = tcase_create("validate");
    tcase_add_loop_test(tc, test_rules, 0, G_N_ELEMENTS(rule_cases));
    tcase_add_loop_test(tc, test_split, 0, G_N_ELEMENTS(split_cases));
    suite_add_tcase(s, tc);

    return tps_test_run(s);
}
