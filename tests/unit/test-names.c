/* core/names: edit distance and "did you mean" suggestions. */
#include <check.h>

#include "test-util.h"
#include <stdlib.h>

#include "core/names.h"

typedef struct {
    const char *a, *b;
    guint distance;
} DistCase;

static const DistCase dist_cases[] = {
    {"", "", 0},    {"abc", "abc", 0},           {"hidden", "hiden", 1}, {"kitten", "sitting", 3},
    {"", "abc", 3}, {"ffn_hidden", "hidden", 4},
};

START_TEST(test_distance)
{
    const DistCase *c = &dist_cases[_i];
    ck_assert_uint_eq(tps_names_distance(c->a, c->b), c->distance);
    ck_assert_uint_eq(tps_names_distance(c->b, c->a), c->distance);
}
END_TEST

START_TEST(test_closest)
{
    static const char *const names[] = {"hidden", "heads", "layers", "seq_len", NULL};
    ck_assert_str_eq(tps_names_closest("hiden", names), "hidden");
    ck_assert_str_eq(tps_names_closest("seqlen", names), "seq_len");
    ck_assert_str_eq(tps_names_closest("layer", names), "layers");
    ck_assert_ptr_null(tps_names_closest("vocabulary", names));
    ck_assert_ptr_null(tps_names_closest("x", NULL));
}
END_TEST

START_TEST(test_join)
{
    static const char *const names[] = {"a", "b", "c", NULL};
    g_autofree char *s = tps_names_join(names);
    ck_assert_str_eq(s, "a, b, c");
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("names");
    TCase *tc = tcase_create("distance");
    tcase_add_loop_test(tc, test_distance, 0, G_N_ELEMENTS(dist_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("suggest");
    tcase_add_test(tc, test_closest);
    tcase_add_test(tc, test_join);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
