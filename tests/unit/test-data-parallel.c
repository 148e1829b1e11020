/* sched/data-parallel: Megatron DDP's gradient buckets, the bytes of the
 * gradient reduction and of the parameter all-gather by dtype, and where
 * the parameter all-gather goes. Expected values derived by hand (the
 * arithmetic in the comments). */
#include <check.h>

#include "test-util.h"
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "io/input/scenario-file.h"
#include "sched/data-parallel.h"
#include "sched/pipeline.h"

/* A GPT of 16 layers (heads 16, seq 1024, vocab 51200, biases,
 * LayerNorm, learned positions) at tp 8, one stage, dp 8, with `extra`
 * training keys. */
static void
gpt(TpsScenario *sc, guint hidden, const char *extra)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: dp\nhardware: a100-sxm4-80gb\n"
        "model: {hidden: %u, heads: 16, layers: 16, seq_len: 1024}\n"
        "training: {micro_batch: 1, global_batch: 64, distributed_optimizer: true%s%s}\n"
        "parallel: {tp: 8, sp: true, dp: 8}\n",
        hidden, extra[0] ? ", " : "", extra);
    ck_assert_msg(tps_scenario_file_load_string("dp", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* hidden 1024 at tp 8, per GPU and layer: GEMMs 12 h^2 / 8 = 1,572,864;
 * the two LayerNorms 4 h = 4,096; biases (3h + 4h) / 8 + 2 h = 896 +
 * 2,048 = 2,944: 1,579,904 parameters. */
#define SMALL_LAYER 1579904.0
#define SMALL_GEMM 1572864.0
/* The embedding: 51200 x 1024 / 8 + 1024 x 1024 = 6,553,600 +
 * 1,048,576; the head (one stage, tied): the final LayerNorm, 2 h. */
#define SMALL_EMBEDDING 7602176.0
#define SMALL_HEAD 2048.0

START_TEST(test_default_bucket_is_one)
{
    /* max(40M, 1M x 8) = 40M parameters: ceil(40e6 / 1,579,904) = 26
     * layers, more than the 16 of the stage: one bucket of all of them,
     * with the embedding and the head. */
    g_auto(TpsScenario) sc = {0};
    gpt(&sc, 1024, "");
    ck_assert_double_eq(tps_dp_bucket_size(&sc), 40e6);
    TpsDpBucket b[16];
    ck_assert_uint_eq(tps_dp_buckets(&sc, 0, 0, b), 1);
    ck_assert_uint_eq(b[0].layers, 16);
    ck_assert_double_eq_tol(b[0].params, 16 * SMALL_LAYER + SMALL_EMBEDDING + SMALL_HEAD, 1e-3);
    ck_assert_double_eq_tol(b[0].gemm_params, 16 * SMALL_GEMM, 1e-3);
}
END_TEST

START_TEST(test_bucket_size_key)
{
    /* ddp_bucket_size 4,000,000: ceil(4e6 / 1,579,904) = ceil(2.53) = 3
     * layers a bucket; 16 = 5 x 3 + 1: six buckets, from the last layers
     * (with the head) to the first one (with the embedding). */
    g_auto(TpsScenario) sc = {0};
    gpt(&sc, 1024, "ddp_bucket_size: 4000000");
    ck_assert_double_eq(tps_dp_bucket_size(&sc), 4e6);
    TpsDpBucket b[16];
    ck_assert_uint_eq(tps_dp_buckets(&sc, 0, 0, b), 6);
    static const guint layers[] = {3, 3, 3, 3, 3, 1};
    for (guint k = 0; k < 6; k++)
        ck_assert_uint_eq(b[k].layers, layers[k]);
    ck_assert_double_eq_tol(b[0].params, 3 * SMALL_LAYER + SMALL_HEAD, 1e-3);
    ck_assert_double_eq_tol(b[2].params, 3 * SMALL_LAYER, 1e-3);
    /* The first layer's bucket: the embedding, and the head only once
     * (in bucket 0). */
    ck_assert_double_eq_tol(b[5].params, SMALL_LAYER + SMALL_EMBEDDING, 1e-3);
}
END_TEST

START_TEST(test_grad_and_param_bytes)
{
    /* fp32 gradients 4 bytes, bf16 2; parameters 2 bytes, the GEMM
     * weights 1 with fp8_param_gather: 10 parameters, 6 of them GEMM
     * weights: 10 x 4 = 40 and 10 x 2 = 20 gradient bytes; 10 x 2 = 20
     * parameter bytes, with FP8 weights 4 x 2 + 6 x 1 = 14 (FP8 needs
     * Hopper: an H100). */
    g_auto(TpsScenario) sc = {0};
    gpt(&sc, 1024, "");
    ck_assert_double_eq(tps_dp_grad_bytes(&sc, 10.0), 40.0);
    ck_assert_double_eq(tps_dp_param_bytes(&sc, 10.0, 6.0), 20.0);
    tps_scenario_clear(&sc);
    gpt(&sc, 1024, "grad_reduce_dtype: bf16");
    ck_assert_double_eq(tps_dp_grad_bytes(&sc, 10.0), 20.0);
    tps_scenario_clear(&sc);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(
        tps_scenario_file_load_string(
            "dp",
            "name: dp\nhardware: h100-sxm\n"
            "model: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024, dtype: fp8}\n"
            "training: {global_batch: 64, distributed_optimizer: true, fp8_param_gather: true}\n"
            "parallel: {tp: 8, sp: true, dp: 8}\n",
            -1, &sc, &error),
        "%s", error ? error->message : "");
    ck_assert_double_eq(tps_dp_param_bytes(&sc, 10.0, 6.0), 14.0);
    /* Without the distributed optimizer (a search's other layouts) the
     * FP8 gather goes with it. */
    sc.distributed_optimizer = FALSE;
    ck_assert(!tps_dp_fp8_params(&sc));
    ck_assert_double_eq(tps_dp_param_bytes(&sc, 10.0, 6.0), 20.0);
}
END_TEST

START_TEST(test_gathers_in_forward)
{
    /* Only with overlap_param_gather, the distributed optimizer and
     * replicas. */
    g_auto(TpsScenario) sc = {0};
    gpt(&sc, 1024, "");
    ck_assert(!tps_dp_gathers_in_forward(&sc));
    tps_scenario_clear(&sc);
    gpt(&sc, 1024, "overlap_param_gather: true");
    ck_assert(tps_dp_gathers_in_forward(&sc));
    sc.dp = 1;
    ck_assert(!tps_dp_gathers_in_forward(&sc));
}
END_TEST

/* Megatron's rules between the keys, refused where the key is. */
static const struct {
    const char *training, *model, *where, *what;
} refused[] = {
    {"{global_batch: 64, overlap_param_gather: true}", "", "dp:3:", "needs training.distributed"},
    {"{global_batch: 64, distributed_optimizer: true, overlap_grad_reduce: false,\n"
     "  overlap_param_gather: true}",
     "", "dp:4:", "needs training.overlap_grad_reduce"},
    {"{global_batch: 64, fp8_param_gather: true}", ", dtype: fp8",
     "dp:3:", "fp8_param_gather needs training.distributed"},
    {"{global_batch: 64, distributed_optimizer: true, fp8_param_gather: true}", "",
     "dp:3:", "needs model.dtype fp8"},
    {"{global_batch: 64, grad_reduce_dtype: fp16}", "", "dp:3:", "grad_reduce_dtype"},
    {"{global_batch: 64, ddp_bucket_size: 0}", "", "dp:3:", "ddp_bucket_size"},
    {"{global_batch: 64, fsdp: zero3}", "", "dp:3:", "training.fsdp"},
    {"{global_batch: 64, fsdp: optim, fsdp_impl: torch}", "",
     "dp:3:", "fsdp_impl torch needs training.fsdp optim_grads_params"},
    {"{global_batch: 64, fsdp: optim_grads_params,\n  distributed_optimizer: true, fsdp_impl: "
     "torch}",
     "", "dp:4:", "not supported with the distributed optimizer"},
};

START_TEST(test_fsdp_keys)
{
    /* Each strategy shards what its name says; FSDP's optimizer states are
     * sharded without the distributed optimizer's key, and
     * overlap_param_gather is accepted with it (Megatron FSDP); the
     * parameters sharded, no bucketed gathers in the first forwards (each
     * op gathers its own). PyTorch's FSDP2 without pipeline stages, refused
     * at fsdp_impl. */
    static const struct {
        const char *fsdp;
        gboolean grads, params, fwd, bwd, gathers;
    } cases[] = {
        {"none", FALSE, FALSE, FALSE, FALSE, FALSE},
        {"optim", FALSE, FALSE, FALSE, FALSE, TRUE},
        {"optim_grads", TRUE, FALSE, FALSE, TRUE, TRUE},
        {"optim_grads_params", TRUE, TRUE, TRUE, TRUE, FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        g_autofree char *text =
            g_strdup_printf("name: dp\nhardware: h100-sxm\n"
                            "training: {global_batch: 64, fsdp: %s, overlap_param_gather: %s}\n"
                            "model: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024}\n"
                            "parallel: {tp: 8, sp: true, dp: 8}\n",
                            cases[i].fsdp, i == 0 ? "false" : "true");
        ck_assert_msg(tps_scenario_file_load_string("dp", text, -1, &sc, &error), "%s",
                      error ? error->message : "");
        ck_assert_int_eq(tps_dp_sharded_optimizer(&sc), i > 0);
        ck_assert_int_eq(tps_fsdp_grads(&sc), cases[i].grads);
        ck_assert_int_eq(tps_fsdp_params(&sc), cases[i].params);
        ck_assert_int_eq(tps_fsdp_layer_op(&sc, FALSE), cases[i].fwd);
        ck_assert_int_eq(tps_fsdp_layer_op(&sc, TRUE), cases[i].bwd);
        ck_assert_int_eq(tps_dp_gathers_in_forward(&sc), cases[i].gathers);
        /* FSDP's units: a bucket per layer. */
        TpsDpBucket b[16];
        ck_assert_uint_eq(tps_dp_buckets(&sc, 0, 0, b), i == 0 ? 1 : 16);
    }
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_scenario_file_load_string(
        "dp",
        "name: dp\nhardware: h100-sxm\n"
        "training: {global_batch: 64, fsdp: optim_grads_params, fsdp_impl: torch}\n"
        "model: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024}\n"
        "parallel: {tp: 8, sp: true, pp: 2, dp: 4}\n",
        -1, &sc, &error));
    ck_assert_msg(g_str_has_prefix(error->message, "dp:3:67:") &&
                      strstr(error->message, "pipeline parallelism") != NULL,
                  "%s", error->message);
}
END_TEST

START_TEST(test_refused)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: dp\nhardware: h100-sxm\n"
        "training: %s\nmodel: {hidden: 1024, heads: 16, layers: 16, seq_len: 1024%s}\n"
        "parallel: {tp: 8, sp: true, dp: 8}\n",
        refused[_i].training, refused[_i].model);
    ck_assert(!tps_scenario_file_load_string("dp", text, -1, &sc, &error));
    ck_assert_msg(g_str_has_prefix(error->message, refused[_i].where) &&
                      strstr(error->message, refused[_i].what) != NULL,
                  "%s", error->message);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("data-parallel");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_default_bucket_is_one);
    tcase_add_test(tc, test_bucket_size_key);
    tcase_add_test(tc, test_grad_and_param_bytes);
    tcase_add_test(tc, test_gathers_in_forward);
    tcase_add_loop_test(tc, test_refused, 0, G_N_ELEMENTS(refused));
    tcase_add_test(tc, test_fsdp_keys);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
