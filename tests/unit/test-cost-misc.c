/* Memory-bound kernels, flash attention, launch cost and the hardware
 * struct helpers, against hand-derived values on the a100-sxm4-80gb model
 * (written out here: this program links only the cost layer). */
#include <check.h>

#include "test-util.h"
#include <stdlib.h>

#include "cost/kernel-cost.h"

static void
a100_fixture(TpsHardware *hw)
{
    *hw = (TpsHardware){
        .sms = 108,
        .clock_mhz = 1410,
        .peak_tflops = {312, 312},
        .hbm_gbps = 2039,
        .hbm_efficiency = 0.90,
        .sm_mem_gbps = 66.8,
        .launch_us = 3.0,
        .flash_fwd_efficiency = 0.70,
        .flash_bwd_efficiency = 0.55,
    };
}

/* Memory-bound kernels: time alone on s SMs is
 * max(bytes / (s x 66.8), bytes / 1835.1) within one CTA's rounding. */
static const struct {
    double bytes;
    guint sms;
    double expected_ns;
} memory[] = {
    {1e9, 108, 1e9 / 1835.1},             /* HBM-bound: 544929 ns */
    {1e9, 16, 1e9 / (16 * 66.8)},         /* SM-bound: 935629 ns */
    {1e9, 27, 1e9 / 1803.6},              /* 27 x 66.8 = 1803.6 < 1835.1 */
    {201326592, 108, 201326592 / 1835.1}, /* 96 MiB LayerNorm-sized */
    {65536, 108, 65536 / 66.8},           /* one CTA on one SM: 981 ns */
    {6553600, 108, 6553600 / 1835.1},     /* 100 CTAs, HBM-bound: 3571 ns */
};

START_TEST(test_memory)
{
    TpsHardware hw;
    TpsKernelCost cost;
    a100_fixture(&hw);
    tps_cost_memory(&hw, memory[_i].bytes, &cost);
    ck_assert_double_eq_tol(cost.hbm_bytes, memory[_i].bytes, 1e-6);
    ck_assert_uint_ge(cost.ctas, 1);
    TpsTime t = tps_kernel_cost_solo_ns(&hw, &cost, memory[_i].sms);
    /* Wave quantization of at most one wave in 64, plus 1 ns of rounding per
     * wave. */
    ck_assert_double_ge((double)t, memory[_i].expected_ns * 0.999);
    ck_assert_double_le((double)t, memory[_i].expected_ns * (1.0 + 1.0 / 64) + 64 + 2);
}
END_TEST

START_TEST(test_memory_zero)
{
    TpsHardware hw;
    TpsKernelCost cost;
    a100_fixture(&hw);
    tps_cost_memory(&hw, 0.0, &cost);
    ck_assert_uint_eq(cost.ctas, 0);
    ck_assert_int_eq(tps_kernel_cost_solo_ns(&hw, &cost, 108), 0);
}
END_TEST

/* Flash attention, GPT-3 175B on TP 8: b = 1, 12 heads, s = 2048, d = 128.
 *   forward FLOPs 4 x 1 x 2048^2 x 12 x 128 = 25769803776
 *   CTAs 1 x 12 x 16 = 192 -> 2 waves on 108 SMs
 *   CTA FLOPs 4 x 128 x 2048 x 128 = 134217728, at 312e3 / 108 x 0.70
 *   = 2022.22 FLOP/ns -> 66371.7 -> 66372 ns per wave
 *   backward: 2.5 x the FLOPs at 0.55: 335544320 / 1588.89 = 211181.6 -> 211182 */
static const struct {
    gboolean backward;
    double flops;
    guint ctas;
    TpsTime wave_ns;
} attention[] = {
    {FALSE, 25769803776.0, 192, 66372},
    {TRUE, 2.5 * 25769803776.0, 192, 211182},
};

START_TEST(test_flash_attention)
{
    TpsHardware hw;
    TpsKernelCost cost;
    a100_fixture(&hw);
    tps_cost_flash_attention(&hw, TPS_DTYPE_BF16, 1, 12, 2048, 128, attention[_i].backward, &cost);
    ck_assert_double_eq_tol(cost.flops, attention[_i].flops, 1.0);
    ck_assert_uint_eq(cost.ctas, attention[_i].ctas);
    ck_assert_int_eq(cost.wave_ns, attention[_i].wave_ns);
    ck_assert_int_eq(tps_kernel_cost_solo_ns(&hw, &cost, 108), 2 * attention[_i].wave_ns);
    /* Q, K, V, O (forward) or 8 tensors (backward) of 2048 x 12 x 128 bf16. */
    double tensor = 2048.0 * 12 * 128 * 2;
    ck_assert_double_eq_tol(cost.hbm_bytes, (attention[_i].backward ? 8 : 4) * tensor, 1.0);
}
END_TEST

START_TEST(test_flash_attention_efficiency)
{
    /* Many waves: achieved FLOP/s approaches efficiency x peak. */
    TpsHardware hw;
    TpsKernelCost cost;
    a100_fixture(&hw);
    tps_cost_flash_attention(&hw, TPS_DTYPE_BF16, 16, 27, 8192, 128, FALSE, &cost);
    TpsTime t = tps_kernel_cost_solo_ns(&hw, &cost, 108);
    ck_assert_double_eq_tol(cost.flops / (double)t * 1e-3, 0.70 * 312, 0.70 * 312 * 0.01);
}
END_TEST

START_TEST(test_launch_and_hbm)
{
    TpsHardware hw;
    a100_fixture(&hw);
    ck_assert_int_eq(tps_cost_launch_ns(&hw), 3000);
    ck_assert_double_eq_tol(tps_cost_hbm_gbps(&hw), 1835.1, 1e-9);
}
END_TEST

START_TEST(test_hardware_copy_clear)
{
    TpsHardware src, dst;
    a100_fixture(&src);
    src.name = g_strdup("a100-sxm4-80gb");
    src.gpu_name = g_strdup("NVIDIA A100-SXM4-80GB");
    src.tiles[0] = (TpsGemmTile){256, 128, 0.9};
    src.n_tiles = 1;

    tps_hardware_copy(&dst, &src);
    ck_assert_str_eq(dst.name, src.name);
    ck_assert_str_eq(dst.gpu_name, src.gpu_name);
    ck_assert_ptr_ne(dst.name, src.name);
    ck_assert_ptr_ne(dst.gpu_name, src.gpu_name);
    ck_assert_uint_eq(dst.n_tiles, 1);
    ck_assert_double_eq(dst.tiles[0].efficiency, 0.9);
    ck_assert_double_eq(dst.hbm_gbps, 2039);

    tps_hardware_clear(&src);
    ck_assert_ptr_null(src.name);
    ck_assert_ptr_null(src.gpu_name);
    ck_assert_str_eq(dst.name, "a100-sxm4-80gb");
    tps_hardware_clear(&dst);
    tps_hardware_clear(&dst); /* idempotent */
    tps_hardware_clear(NULL);
}
END_TEST

START_TEST(test_name_tables)
{
    ck_assert_str_eq(tps_dtype_names[TPS_DTYPE_BF16], "bf16");
    ck_assert_str_eq(tps_dtype_names[TPS_DTYPE_FP16], "fp16");
    ck_assert_ptr_null(tps_dtype_names[TPS_DTYPE_COUNT]);
    ck_assert_str_eq(tps_protocol_names[TPS_PROTO_LL], "LL");
    ck_assert_str_eq(tps_protocol_names[TPS_PROTO_LL128], "LL128");
    ck_assert_str_eq(tps_protocol_names[TPS_PROTO_SIMPLE], "Simple");
    ck_assert_ptr_null(tps_protocol_names[TPS_PROTO_COUNT]);
}
END_TEST

static Suite *
misc_suite(void)
{
    Suite *s = suite_create("cost-misc");
    TCase *tc;

    tc = tcase_create("memory");
    tcase_add_loop_test(tc, test_memory, 0, G_N_ELEMENTS(memory));
    tcase_add_test(tc, test_memory_zero);
    suite_add_tcase(s, tc);

    tc = tcase_create("attention");
    tcase_add_loop_test(tc, test_flash_attention, 0, G_N_ELEMENTS(attention));
    tcase_add_test(tc, test_flash_attention_efficiency);
    suite_add_tcase(s, tc);

    tc = tcase_create("launch");
    tcase_add_test(tc, test_launch_and_hbm);
    suite_add_tcase(s, tc);

    tc = tcase_create("hardware");
    tcase_add_test(tc, test_hardware_copy_clear);
    tcase_add_test(tc, test_name_tables);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(misc_suite());
}
