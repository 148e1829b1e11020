/* Figures as text (io/output/report-text.h), as the trace summary and the
 * comparison write them: JSON numbers with trailing zeros dropped (but
 * never the zeros of an integer), "-0" as 0, null for unknown; JSON
 * strings with escapes; aligned table cells. Expected strings written out
 * by hand. */
#include <check.h>

#include "test-util.h"
#include <math.h>

#include "io/output/report-text.h"

static const struct {
    double v;
    int decimals;
    const char *text;
} number_cases[] = {
    {1.5, 3, "1.5"},   /* "1.500" */
    {2.0, 3, "2"},     /* "2.000": the point goes too */
    {100.0, 0, "100"}, /* no point: the zeros are the integer's */
    {1234.56789, 3, "1234.568"},
    {0.00049, 3, "0"},  /* "0.000" */
    {-0.0001, 3, "0"},  /* "-0.000" -> "-0" -> "0" */
    {-2.25, 1, "-2.2"}, /* printf rounds the binary value 2.25 to even */
    {NAN, 3, "null"},
    {INFINITY, 3, "null"},
};

START_TEST(test_json_number)
{
    GString *out = g_string_new("[");
    tps_report_json_number(out, number_cases[_i].v, number_cases[_i].decimals);
    g_autofree char *expected = g_strdup_printf("[%s", number_cases[_i].text);
    ck_assert_str_eq(out->str, expected);
    g_string_free(out, TRUE);
}
END_TEST

START_TEST(test_json_string)
{
    GString *out = g_string_new(NULL);
    tps_report_json_string(out, "a\"b\\c\nd\x01");
    ck_assert_str_eq(out->str, "\"a\\\"b\\\\c\\u000ad\\u0001\"");
    g_string_truncate(out, 0);
    tps_report_json_string(out, "caf\xc3\xa9"); /* UTF-8 as is */
    ck_assert_str_eq(out->str, "\"caf\xc3\xa9\"");
    g_string_truncate(out, 0);
    tps_report_json_string(out, NULL);
    ck_assert_str_eq(out->str, "null");
    g_string_free(out, TRUE);
}
END_TEST

/* A document through tps_report_json_text(): json-glib's layout, doubles
 * in their shortest form, integers, booleans, null, escapes. */
START_TEST(test_json_text)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "a\"b");
    json_builder_add_double_value(jb, 5.247856);
    json_builder_set_member_name(jb, "list");
    json_builder_begin_array(jb);
    json_builder_add_int_value(jb, -3);
    json_builder_add_boolean_value(jb, TRUE);
    json_builder_add_null_value(jb);
    json_builder_add_double_value(jb, 0.1);
    json_builder_end_array(jb);
    json_builder_set_member_name(jb, "empty");
    json_builder_begin_object(jb);
    json_builder_end_object(jb);
    json_builder_set_member_name(jb, "none");
    json_builder_begin_array(jb);
    json_builder_end_array(jb);
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autofree char *text = tps_report_json_text(root);
    ck_assert_str_eq(text, "{\n"
                           "  \"a\\\"b\" : 5.247856,\n"
                           "  \"list\" : [\n"
                           "    -3,\n"
                           "    true,\n"
                           "    null,\n"
                           "    0.1\n"
                           "  ],\n"
                           "  \"empty\" : {},\n"
                           "  \"none\" : []\n"
                           "}\n");
}
END_TEST

START_TEST(test_cell)
{
    GString *out = g_string_new(NULL);
    tps_report_cell(out, 3.14159, 8, 2);
    tps_report_cell(out, NAN, 5, 1);
    tps_report_cell(out, 12345.6, 3, 1); /* wider than the column: all of it */
    ck_assert_str_eq(out->str, "    3.14    -12345.6");
    g_string_free(out, TRUE);
}
END_TEST

static Suite *
report_text_suite(void)
{
    Suite *s = suite_create("report-text");
    TCase *tc = tcase_create("json");
    tcase_add_loop_test(tc, test_json_number, 0, G_N_ELEMENTS(number_cases));
    tcase_add_test(tc, test_json_string);
    tcase_add_test(tc, test_json_text);
    suite_add_tcase(s, tc);
    tc = tcase_create("table");
    tcase_add_test(tc, test_cell);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(report_text_suite());
}
