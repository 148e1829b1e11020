/* The rank grid (cost/grid.h): Megatron-Core's rank order. Expected
 * members are worked out by hand from the mixed-radix numbering
 *   rank = tp_rank + tp (cp_rank + cp (ep_rank + ep (dp_rank + dp pp_rank)))
 * or taken from the examples of generate_masked_orthogonal_rank_groups()'s
 * docstring (megatron/core/parallel_state.py). */
#include <check.h>

#include "test-util.h"

#include "cost/grid.h"

#define MAX_MEMBERS 8

static void
grid_of(TpsGrid *grid, guint tp, guint cp, guint dp, guint pp, const char *order)
{
    const guint size[TPS_DIM_COUNT] = {
        [TPS_DIM_TP] = tp, [TPS_DIM_CP] = cp, [TPS_DIM_EP] = 1,
        [TPS_DIM_DP] = dp, [TPS_DIM_PP] = pp,
    };
    TpsDim dims[TPS_DIM_COUNT];
    g_autofree char *problem = NULL;
    ck_assert_msg(tps_grid_parse_order(order, dims, &problem), "%s", problem);
    tps_grid_init(grid, size, dims);
}

/* TP8 CP2 DP4 PP4 (256 GPUs) in the default order: strides tp 1, cp 8,
 * dp 16, pp 64. Rank 77 = 5 + 8 (1 + 2 (0 + 4 x 1)): tp 5, cp 1, dp 0,
 * pp 1. */
static const struct {
    guint rank, dims, n;
    guint members[MAX_MEMBERS];
} groups[] = {
    {0, TPS_DIM_BIT(TPS_DIM_TP), 8, {0, 1, 2, 3, 4, 5, 6, 7}},
    {0, TPS_DIM_BIT(TPS_DIM_CP), 2, {0, 8}},
    {0, TPS_DIM_BIT(TPS_DIM_DP), 4, {0, 16, 32, 48}},
    {0, TPS_DIM_BIT(TPS_DIM_PP), 4, {0, 64, 128, 192}},
    {77, TPS_DIM_BIT(TPS_DIM_TP), 8, {72, 73, 74, 75, 76, 77, 78, 79}},
    {77, TPS_DIM_BIT(TPS_DIM_CP), 2, {69, 77}},
    {77, TPS_DIM_BIT(TPS_DIM_DP), 4, {77, 93, 109, 125}},
    {77, TPS_DIM_BIT(TPS_DIM_PP), 4, {13, 77, 141, 205}},
    /* tp-cp: the first dimension fastest. */
    {77, TPS_DIM_BIT(TPS_DIM_TP) | TPS_DIM_BIT(TPS_DIM_CP), 16, {64, 65, 66, 67, 68, 69, 70, 71}},
    /* cp-dp: cp fastest, then dp. */
    {77,
     TPS_DIM_BIT(TPS_DIM_CP) | TPS_DIM_BIT(TPS_DIM_DP),
     8,
     {69, 77, 85, 93, 101, 109, 117, 125}},
};

START_TEST(test_groups_default_order)
{
    TpsGrid grid;
    grid_of(&grid, 8, 2, 4, 4, TPS_GRID_DEFAULT_ORDER);
    ck_assert_uint_eq(grid.world, 256);
    guint members[256];
    const guint n = tps_grid_group(&grid, groups[_i].rank, groups[_i].dims, members);
    ck_assert_uint_eq(n, groups[_i].n);
    ck_assert_uint_eq(tps_grid_group_size(&grid, groups[_i].dims), groups[_i].n);
    for (guint i = 0; i < MIN(n, (guint)MAX_MEMBERS); i++)
        ck_assert_msg(members[i] == groups[_i].members[i], "case %d member %u: %u, not %u", _i, i,
                      members[i], groups[_i].members[i]);
}
END_TEST

START_TEST(test_coordinates)
{
    TpsGrid grid;
    grid_of(&grid, 8, 2, 4, 4, TPS_GRID_DEFAULT_ORDER);
    ck_assert_uint_eq(tps_grid_coord(&grid, 77, TPS_DIM_TP), 5);
    ck_assert_uint_eq(tps_grid_coord(&grid, 77, TPS_DIM_CP), 1);
    ck_assert_uint_eq(tps_grid_coord(&grid, 77, TPS_DIM_EP), 0);
    ck_assert_uint_eq(tps_grid_coord(&grid, 77, TPS_DIM_DP), 0);
    ck_assert_uint_eq(tps_grid_coord(&grid, 77, TPS_DIM_PP), 1);
    const guint coord[TPS_DIM_COUNT] = {[TPS_DIM_TP] = 5, [TPS_DIM_CP] = 1, [TPS_DIM_PP] = 1};
    ck_assert_uint_eq(tps_grid_rank(&grid, coord), 77);
}
END_TEST

START_TEST(test_docstring_examples)
{
    /* "if the gpu size is 8 and order is 'tp-pp-dp', size is '2-2-2', and
     * the dp_group here is [[0, 4], [1, 5], [2, 6], [3, 7]]" */
    TpsGrid grid;
    grid_of(&grid, 2, 1, 2, 2, "tp-pp-dp");
    guint m[8];
    for (guint g = 0; g < 4; g++) {
        ck_assert_uint_eq(tps_grid_group(&grid, g, TPS_DIM_BIT(TPS_DIM_DP), m), 2);
        ck_assert_uint_eq(m[0], g);
        ck_assert_uint_eq(m[1], g + 4);
    }
    /* parallel_size [tp, dp, pp] = [2, 3, 4], mask dp: dp_group[0] =
     * [0, 2, 4], dp_group[7] = [19, 21, 23] (tp 1, pp 3). */
    grid_of(&grid, 2, 1, 3, 4, "tp-dp-pp");
    ck_assert_uint_eq(tps_grid_group(&grid, 0, TPS_DIM_BIT(TPS_DIM_DP), m), 3);
    ck_assert_uint_eq(m[0], 0);
    ck_assert_uint_eq(m[1], 2);
    ck_assert_uint_eq(m[2], 4);
    ck_assert_uint_eq(tps_grid_group(&grid, 21, TPS_DIM_BIT(TPS_DIM_DP), m), 3);
    ck_assert_uint_eq(m[0], 19);
    ck_assert_uint_eq(m[1], 21);
    ck_assert_uint_eq(m[2], 23);
}
END_TEST

START_TEST(test_tp_outside_dp)
{
    /* dp first: a TP group of 4 strided by dp 2 ({0, 2, 4, 6}). */
    TpsGrid grid;
    grid_of(&grid, 4, 1, 2, 1, "dp-tp-pp");
    guint m[4];
    ck_assert_uint_eq(tps_grid_group(&grid, 0, TPS_DIM_BIT(TPS_DIM_TP), m), 4);
    ck_assert_uint_eq(m[0], 0);
    ck_assert_uint_eq(m[1], 2);
    ck_assert_uint_eq(m[2], 4);
    ck_assert_uint_eq(m[3], 6);
}
END_TEST

START_TEST(test_expert_grid)
{
    /* Dense TP8 DP4 PP2 (64 GPUs); experts with etp 1, ep 8: edp = 64 /
     * (1 x 8 x 2) = 4, strides ep 1, edp 8, pp 32. */
    TpsGrid dense, expert;
    grid_of(&dense, 8, 1, 4, 2, TPS_GRID_DEFAULT_ORDER);
    tps_grid_init_expert(&expert, &dense, 1, 8);
    ck_assert_uint_eq(expert.world, 64);
    ck_assert_uint_eq(expert.size[TPS_DIM_DP], 4);
    guint m[8];
    ck_assert_uint_eq(tps_grid_group(&expert, 42, TPS_DIM_BIT(TPS_DIM_EP), m), 8);
    ck_assert_uint_eq(m[0], 40);
    ck_assert_uint_eq(m[7], 47);
    ck_assert_uint_eq(tps_grid_group(&expert, 42, TPS_DIM_BIT(TPS_DIM_DP), m), 4);
    ck_assert_uint_eq(m[0], 34);
    ck_assert_uint_eq(m[1], 42);
    ck_assert_uint_eq(m[3], 58);
    /* The pipeline groups are the dense grid's. */
    ck_assert_uint_eq(tps_grid_group(&expert, 42, TPS_DIM_BIT(TPS_DIM_PP), m), 2);
    ck_assert_uint_eq(m[0], 10);
    ck_assert_uint_eq(m[1], 42);
}
END_TEST

static const struct {
    const char *text, *normal, *problem;
} orders[] = {
    {"tp-cp-ep-dp-pp", "tp-cp-ep-dp-pp", NULL},
    {"tp-cp-ep-pp-dp", "tp-cp-ep-pp-dp", NULL},
    {"tp-pp-dp", "tp-pp-dp-cp-ep", NULL},
    {"dp", "dp-tp-cp-ep-pp", NULL},
    {"tp-xp-dp", NULL, "'xp' is not a parallel dimension"},
    {"tp-dp-tp", NULL, "'tp' appears twice"},
    {"tp--dp", NULL, "'' is not a parallel dimension"},
    {"", NULL, "'' is not a parallel dimension"},
};

START_TEST(test_parse_order)
{
    TpsDim order[TPS_DIM_COUNT];
    g_autofree char *problem = NULL;
    const gboolean ok = tps_grid_parse_order(orders[_i].text, order, &problem);
    ck_assert_int_eq(ok, orders[_i].normal != NULL);
    if (ok) {
        g_autofree char *text = tps_grid_order_text(order);
        ck_assert_str_eq(text, orders[_i].normal);
    } else {
        ck_assert_msg(strstr(problem, orders[_i].problem) != NULL, "%s", problem);
    }
}
END_TEST

static Suite *
grid_suite(void)
{
    Suite *s = suite_create("grid");
    TCase *tc = tcase_create("groups");
    tcase_add_loop_test(tc, test_groups_default_order, 0, G_N_ELEMENTS(groups));
    tcase_add_test(tc, test_coordinates);
    tcase_add_test(tc, test_docstring_examples);
    tcase_add_test(tc, test_tp_outside_dp);
    tcase_add_test(tc, test_expert_grid);
    suite_add_tcase(s, tc);
    tc = tcase_create("order");
    tcase_add_loop_test(tc, test_parse_order, 0, G_N_ELEMENTS(orders));
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(grid_suite());
}
