/* A scenario's layout placed on its topology (sched/placement.h): the
 * stages, the layer's slice, the DP group, on the shipped models, and the
 * hand-checked placement of a TP8 CP2 PP4 DP4 job on DGX nodes. Expected
 * figures are worked out by hand in each case. */
#include <check.h>

#include "test-util.h"

#include "cost/topology.h"
#include "io/input/scenario-file.h"
#include "sched/builder.h"
#include "sched/placement.h"
#include "sched/strategy.h"

static void
load(TpsScenario *sc, const char *hardware, guint tp, guint pp, guint dp, const char *order)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: place\nhardware: %s\n"
        "model: {hidden: 4096, heads: 32, layers: 32, seq_len: 2048}\n"
        "training: {micro_batch: 1, global_batch: %u}\n"
        "parallel: {tp: %u, sp: true, pp: %u, dp: %u%s%s}\n",
        hardware, 8 * dp * pp, tp, pp, dp, order ? ", order: " : "", order ? order : "");
    ck_assert_msg(tps_scenario_file_load_string("place", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

static const struct {
    guint tp, pp, dp;
    const char *order;
    guint domain[4]; /* of stages 0..3 */
    double pool_gbps;
} stage_cases[] = {
    /* Stage s is rank s x tp x dp: TP8 DP4 puts it on node 4s, with its 8
     * NICs of 24 GB/s. */
    {8, 4, 4, NULL, {0, 4, 8, 12}, 192.0},
    /* TP4 DP2 fill a node: each stage its own, over its 4 NICs. */
    {4, 4, 2, NULL, {0, 1, 2, 3}, 96.0},
    /* TP2 DP1: the four stages on ranks 0, 2, 4, 6 of node 0 (NVLink). */
    {2, 4, 1, NULL, {0, 0, 0, 0}, 48.0},
    /* pp before dp (--use-tp-pp-dp-mapping): TP2 PP4 DP2 puts stages on
     * ranks 0, 2, 4, 6 again, one node. */
    {2, 4, 2, "tp-cp-ep-pp-dp", {0, 0, 0, 0}, 48.0},
};

START_TEST(test_stages)
{
    g_auto(TpsScenario) sc = {0};
    load(&sc, "a100-sxm4-80gb", stage_cases[_i].tp, stage_cases[_i].pp, stage_cases[_i].dp,
         stage_cases[_i].order);
    TpsPlace place[4];
    tps_place_stages(&sc, place);
    for (guint s = 0; s < 4; s++) {
        ck_assert_msg(place[s].domain == stage_cases[_i].domain[s], "case %d stage %u: %u", _i, s,
                      place[s].domain);
        ck_assert_uint_eq(place[s].pool, s);
        ck_assert_double_eq_tol(place[s].pool_gbps, stage_cases[_i].pool_gbps, 1e-9);
    }
}
END_TEST

START_TEST(test_dp_group)
{
    /* TP2 DP64 on DGX H100 (8 NICs of 48): the DP group of rank 0 is
     * ranks 0, 2, ..., 126, four a node over 16 nodes: each boundary hop
     * has its four members' NICs, 192 GB/s. */
    g_auto(TpsScenario) sc = {0};
    load(&sc, "h100-sxm", 2, 1, 64, NULL);
    TpsGroupShape shape;
    tps_place_group_shape(&sc, TPS_DIM_BIT(TPS_DIM_DP), &shape);
    ck_assert_uint_eq(shape.ranks, 64);
    ck_assert_uint_eq(shape.domains, 16);
    ck_assert_uint_eq(shape.per_domain, 4);
    ck_assert_double_eq_tol(shape.nic_gbps, 192.0, 1e-9);
    /* dp first: the DP group is ranks 0..63 (8 a node, all NICs), and the
     * TP group {0, 64} spans two nodes. */
    g_auto(TpsScenario) other = {0};
    load(&other, "h100-sxm", 2, 1, 64, "dp-tp-pp");
    tps_place_group_shape(&other, TPS_DIM_BIT(TPS_DIM_DP), &shape);
    ck_assert_uint_eq(shape.per_domain, 8);
    ck_assert_double_eq_tol(shape.nic_gbps, 384.0, 1e-9);
    /* Asked again after the hardware changed: 2 NICs a node, a quarter
     * NIC a GPU, the four members 48 (not an answer kept from before). */
    sc.hardware.nics_per_node = 2;
    tps_place_group_shape(&sc, TPS_DIM_BIT(TPS_DIM_DP), &shape);
    ck_assert_double_eq_tol(shape.nic_gbps, 48.0, 1e-9);
    sc.hardware.nics_per_node = 8;
    tps_place_group_shape(&sc, TPS_DIM_BIT(TPS_DIM_DP), &shape);
    ck_assert_double_eq_tol(shape.nic_gbps, 192.0, 1e-9);
    guint domain_gpus;
    ck_assert(tps_place_tp_crosses(&other, &domain_gpus));
    ck_assert_uint_eq(domain_gpus, 8);
    ck_assert(!tps_place_tp_crosses(&sc, NULL));
}
END_TEST

START_TEST(test_layer_slice)
{
    /* TP16 on DGX A100 nodes: members 0-7 on node 0, 8-15 on node 1; each
     * node's 8 NICs one pool, held by its first member. */
    g_auto(TpsScenario) sc = {0};
    load(&sc, "a100-sxm4-80gb", 16, 1, 1, NULL);
    TpsPlace place[16];
    TpsMachine machine;
    tps_builder_machine(&sc, place, &machine);
    ck_assert_ptr_eq(machine.place, place);
    for (guint r = 0; r < 16; r++) {
        ck_assert_uint_eq(place[r].domain, r / 8);
        ck_assert_uint_eq(place[r].pool, r / 8 * 8);
        ck_assert_double_eq_tol(place[r].pool_gbps, 192.0, 1e-9);
    }
    /* The userbuffers presets need one NVLink domain. */
    g_autofree char *why = NULL;
    ck_assert(!tps_strategy_applies(tps_strategy_by_id(TPS_STRATEGY_TE_DEFAULT), &sc, &why));
    ck_assert_msg(strstr(why, "16 exceeds the 8 GPUs of one NVLink domain") != NULL, "%s", why);
}
END_TEST

START_TEST(test_nvl72_slice)
{
    /* An NVL72-like what-if (trays of 4, 72 GPUs an NVLink domain): TP16
     * spans four trays but one domain, and the userbuffers presets apply. */
    g_auto(TpsScenario) sc = {0};
    load(&sc,
         "{base: h100-sxm, node: {gpus: 4, nvlink_domain_gpus: 72}, network: {nics_per_node: 4}}",
         16, 1, 1, NULL);
    TpsPlace place[16];
    TpsMachine machine;
    tps_builder_machine(&sc, place, &machine);
    for (guint r = 0; r < 16; r++)
        ck_assert_uint_eq(place[r].domain, 0);
    ck_assert(!tps_place_tp_crosses(&sc, NULL));
    g_autofree char *why = NULL;
    ck_assert_msg(tps_strategy_applies(tps_strategy_by_id(TPS_STRATEGY_TE_DEFAULT), &sc, &why),
                  "%s", why ? why : "");
}
END_TEST

/* The shipped GB200 NVL72 model (trays of 4 GPUs with 4 NICs of 48 GB/s,
 * racks of 72 an NVLink domain) against HGX B200 (nodes of 8, 8 NICs of
 * 48 GB/s), by hand. TP8 DP9 is one rack: rank 0's TP group 0..7 spans
 * trays 0 and 1 of rack 0 and its DP group 0, 8, ..., 64 stays in rack 0,
 * both on NVLink. DP18 adds rack 1: the DP group 0, 8, ..., 136 has 9
 * members in each rack (0..64 and 72..136), so it crosses racks on the
 * NICs of 9 GPUs a rack, 9 x 4 / 4 x 48 = 432 GB/s, and its 36 trays (0..34
 * of 144 a leaf group) meet in one leaf. On B200 the same DP9 group is one
 * GPU on each of 9 nodes: 9 domains of 1, its NIC 1 x 8 / 8 x 48 = 48. */
static const struct {
    const char *hardware;
    guint dp;
    guint tp_domains, dp_domains, dp_per_domain, dp_leaves;
    gboolean dp_crosses;
    double dp_nic_gbps;
} rack_cases[] = {
    {"gb200-nvl72", 9, 1, 1, 9, 1, FALSE, 0.0},
    {"gb200-nvl72", 18, 1, 2, 9, 1, TRUE, 432.0},
    {"b200", 9, 1, 9, 1, 1, TRUE, 48.0},
};

START_TEST(test_rack_groups)
{
    g_auto(TpsScenario) sc = {0};
    load(&sc, rack_cases[_i].hardware, 8, 1, rack_cases[_i].dp, NULL);
    TpsGroupShape tp, dp;
    tps_place_group_shape(&sc, TPS_DIM_BIT(TPS_DIM_TP), &tp);
    tps_place_group_shape(&sc, TPS_DIM_BIT(TPS_DIM_DP), &dp);
    ck_assert_uint_eq(tp.ranks, 8);
    ck_assert_uint_eq(tp.domains, rack_cases[_i].tp_domains);
    ck_assert(!tp.crosses);
    ck_assert(!tps_place_tp_crosses(&sc, NULL));
    ck_assert_uint_eq(dp.ranks, rack_cases[_i].dp);
    ck_assert_uint_eq(dp.domains, rack_cases[_i].dp_domains);
    ck_assert_uint_eq(dp.per_domain, rack_cases[_i].dp_per_domain);
    ck_assert_uint_eq(dp.leaves, rack_cases[_i].dp_leaves);
    ck_assert_int_eq(dp.crosses, rack_cases[_i].dp_crosses);
    if (dp.crosses)
        ck_assert_double_eq_tol(dp.nic_gbps, rack_cases[_i].dp_nic_gbps, 1e-9);
}
END_TEST

START_TEST(test_tp8_cp2_pp4_dp4)
{
    /* 256 GPUs on 32 DGX A100 nodes, default order (strides tp 1, cp 8,
     * dp 16, pp 64). Rank 77 (tp 5, cp 1, dp 0, pp 1) is GPU 5 of node 9:
     * its TP group fills node 9; its CP peer 69 is GPU 5 of node 8 (the
     * CP ring crosses nodes, on NIC 5 of each); its DP group 77, 93, 109,
     * 125 is GPU 5 of nodes 9, 11, 13, 15, each DP transfer through NIC 5
     * of its node (one NIC a hop); its pipeline neighbours 13 and 141 are
     * GPU 5 of nodes 1 and 17. */
    const TpsHardware *hw = NULL;
    g_auto(TpsScenario) sc = {0};
    load(&sc, "a100-sxm4-80gb", 8, 4, 4, NULL);
    hw = &sc.hardware;
    const guint size[TPS_DIM_COUNT] = {8, 2, 1, 4, 4};
    TpsDim order[TPS_DIM_COUNT];
    tps_scenario_order(&sc, order);
    TpsGrid grid;
    tps_grid_init(&grid, size, order);
    guint m[8];
    struct {
        guint dims, n;
        guint nodes[4];
        guint domains;
        double nic_gbps;
    } want[] = {
        {TPS_DIM_BIT(TPS_DIM_TP), 8, {9, 9, 9, 9}, 1, 0.0},
        {TPS_DIM_BIT(TPS_DIM_CP), 2, {8, 9}, 2, 24.0},
        {TPS_DIM_BIT(TPS_DIM_DP), 4, {9, 11, 13, 15}, 4, 24.0},
        {TPS_DIM_BIT(TPS_DIM_PP), 4, {1, 9, 17, 25}, 4, 24.0},
    };
    for (guint g = 0; g < G_N_ELEMENTS(want); g++) {
        const guint n = tps_grid_group(&grid, 77, want[g].dims, m);
        ck_assert_uint_eq(n, want[g].n);
        for (guint i = 0; i < MIN(n, 4u); i++) {
            ck_assert_uint_eq(tps_topo_node(hw, m[i]), want[g].nodes[i]);
            /* GPU 5 of its node: NIC 5 x 8 / 8. */
            ck_assert_uint_eq(m[i] % hw->gpus_per_node * hw->nics_per_node / hw->gpus_per_node,
                              want[g].dims == TPS_DIM_BIT(TPS_DIM_TP) ? m[i] % 8 : 5);
        }
        TpsGroupShape shape;
        tps_topo_group_shape(hw, m, n, &shape);
        ck_assert_uint_eq(shape.domains, want[g].domains);
        ck_assert_double_eq_tol(shape.nic_gbps, want[g].nic_gbps, 1e-9);
    }
}
END_TEST

START_TEST(test_order_errors)
{
    g_autoptr(GError) error = NULL;
    g_auto(TpsScenario) sc = {0};
    const char *text = "name: bad\nhardware: a100-sxm4-80gb\n"
                       "model: {hidden: 4096, heads: 32, layers: 32, seq_len: 2048}\n"
                       "parallel: {tp: 8, order: tp-xp-dp}\n";
    ck_assert(!tps_scenario_file_load_string("bad.yaml", text, -1, &sc, &error));
    ck_assert_msg(strstr(error->message, "bad.yaml:4:") != NULL, "%s", error->message);
    ck_assert_msg(strstr(error->message, "'xp' is not a parallel dimension") != NULL, "%s",
                  error->message);
}
END_TEST

static Suite *
placement_suite(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = tcase_create("placement");
    tcase_add_loop_test(tc, test_stages, 0, G_N_ELEMENTS(stage_cases));
    tcase_add_test(tc, test_dp_group);
    tcase_add_test(tc, test_layer_slice);
    tcase_add_test(tc, test_nvl72_slice);
    tcase_add_loop_test(tc, test_rack_groups, 0, G_N_ELEMENTS(rack_cases));
    tcase_add_test(tc, test_tp8_cp2_pp4_dp4);
    tcase_add_test(tc, test_order_errors);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(placement_suite());
}
