/* core: the small shared helpers (median, YAML string quoting, peak RSS). */
#include <check.h>

#include "test-util.h"

#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/stats.h"
#include "core/text.h"

typedef struct {
    double values[6];
    guint n;
    double median;
} MedianCase;

static const MedianCase median_cases[] = {
    {{5}, 1, 5},
    {{3, 1, 2}, 3, 2},
    {{4, 1, 3, 2}, 4, 2.5},
    {{-1, 7, 7, 0, 7}, 5, 7},
    {{1e9, -1e9}, 2, 0},
};

START_TEST(test_median)
{
    const MedianCase *c = &median_cases[_i];
    double v[6];
    memcpy(v, c->values, sizeof v);
    ck_assert_double_eq_tol(tps_median(v, c->n), c->median, 1e-12);
    /* Sorted in place. */
    for (guint i = 1; i < c->n; i++)
        ck_assert(v[i - 1] <= v[i]);
}
END_TEST

START_TEST(test_median_empty)
{
    ck_assert(isnan(tps_median(NULL, 0)));
}
END_TEST

typedef struct {
    const char *in, *out;
} QuoteCase;

static const QuoteCase quote_cases[] = {
    {"NVIDIA A100-SXM4-80GB", "\"NVIDIA A100-SXM4-80GB\""},
    {"a\"b", "\"a\\\"b\""},
    {"back\\slash", "\"back\\\\slash\""},
    {"tab\there\n", "\"tabhere\""},
    {"", "\"\""},
};

START_TEST(test_quote)
{
    g_autoptr(GString) s = g_string_new(NULL);
    tps_text_append_quoted(s, quote_cases[_i].in);
    ck_assert_str_eq(s->str, quote_cases[_i].out);
}
END_TEST

START_TEST(test_peak_rss)
{
    /* Linux reports it; a process this size holds at least 100 KiB. */
    double mib = tps_alloc_peak_rss_mib();
    ck_assert(mib > 0.1 && mib < 1e6);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("core-misc");
    TCase *tc = tcase_create("stats");
    tcase_add_loop_test(tc, test_median, 0, G_N_ELEMENTS(median_cases));
    tcase_add_test(tc, test_median_empty);
    suite_add_tcase(s, tc);
    tc = tcase_create("text");
    tcase_add_loop_test(tc, test_quote, 0, G_N_ELEMENTS(quote_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("alloc");
    tcase_add_test(tc, test_peak_rss);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
