/* The YAML tree: positions, strictness and typed getters. */
#include <check.h>

#include "test-util.h"
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "io/input/yaml-tree.h"

START_TEST(test_positions)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc =
        tps_yaml_load_string("t.yaml", "a: 1\nb:\n  c: [x, y]\n  d: \"q\"\n", -1, &error);
    ck_assert_ptr_nonnull(doc);
    ck_assert_int_eq(doc->root->type, TPS_YAML_MAP);
    TpsYamlNode *b = tps_yaml_get(doc->root, "b");
    ck_assert_ptr_nonnull(b);
    TpsYamlNode *c = tps_yaml_get(b, "c");
    ck_assert_int_eq(c->type, TPS_YAML_SEQ);
    ck_assert_uint_eq(c->line, 3);
    ck_assert_uint_eq(c->column, 6);
    ck_assert_uint_eq(c->items->len, 2);
    TpsYamlNode *d = tps_yaml_get(b, "d");
    ck_assert(!d->plain);
    ck_assert_str_eq(d->value, "q");
    ck_assert_ptr_null(tps_yaml_get(doc->root, "zz"));
}
END_TEST

typedef struct {
    const char *text;
    const char *prefix;
    const char *fragment;
} BadCase;

static const BadCase bad_cases[] = {
    {"a: 1\na: 2\n", "t.yaml:2:1:", "duplicate key 'a'"},
    {"a: &x 1\nb: *x\n", "t.yaml:1:4:", "anchors are not supported"},
    {"a: !!int 1\n", "t.yaml:1:4:", "tags are not supported"},
    {"a: [1, 2\n", "t.yaml:2:1:", "YAML syntax error"},
    {"a: 1\n---\nb: 2\n", "t.yaml:2:1:", "only one YAML document"},
    {"? [1]\n: 2\n", "t.yaml:1:3:", "mapping keys must be scalars"},
};

START_TEST(test_bad)
{
    const BadCase *c = &bad_cases[_i];
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string("t.yaml", c->text, -1, &error);
    ck_assert_ptr_null(doc);
    ck_assert_ptr_nonnull(error);
    ck_assert_msg(g_str_has_prefix(error->message, c->prefix), "'%s' lacks prefix %s",
                  error->message, c->prefix);
    ck_assert_msg(strstr(error->message, c->fragment), "'%s' lacks %s", error->message,
                  c->fragment);
}
END_TEST

START_TEST(test_deep_nesting)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < 200; i++)
        g_string_append_c(s, '[');
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string("t.yaml", s->str, -1, &error);
    ck_assert_ptr_null(doc);
    g_string_free(s, TRUE);
}
END_TEST

/* D1: a map of 200,000 keys with a duplicate at the end is read and the
 * duplicate found at its line. A scan of the earlier keys for each key made
 * this about 20 billion string comparisons (minutes: the test's timeout);
 * a set of the keys seen makes it linear. */
START_TEST(test_many_keys_duplicate)
{
    const guint n = 200000;
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "k%u: 1\n", i);
    g_string_append(s, "k7: 2\n");
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string("t.yaml", s->str, -1, &error);
    ck_assert_ptr_null(doc);
    g_autofree char *want = g_strdup_printf("t.yaml:%u:1: duplicate key 'k7'", n + 1);
    ck_assert_str_eq(error->message, want);
    g_string_free(s, TRUE);
}
END_TEST

START_TEST(test_typed_getters)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string(
        "t.yaml",
        "n: 12\nneg: -3\nq: \"12\"\nf: 2.5\nb: true\ne: fp16\nbig: 99999999999999999999999\n", -1,
        &error);
    ck_assert_ptr_nonnull(doc);
    guint64 u = 0;
    double f = 0;
    gboolean b = FALSE;
    guint idx = 9;
    ck_assert(tps_yaml_uint(doc, tps_yaml_get(doc->root, "n"), "n", 1, 100, &u, NULL));
    ck_assert_uint_eq(u, 12);
    ck_assert(!tps_yaml_uint(doc, tps_yaml_get(doc->root, "n"), "n", 1, 10, &u, &error));
    ck_assert(strstr(error->message, "t.yaml:1:4: 'n' is 12, out of range [1, 10]"));
    g_clear_error(&error);
    ck_assert(!tps_yaml_uint(doc, tps_yaml_get(doc->root, "neg"), "neg", 0, 10, &u, &error));
    ck_assert(strstr(error->message, "non-negative integer"));
    g_clear_error(&error);
    ck_assert(!tps_yaml_uint(doc, tps_yaml_get(doc->root, "q"), "q", 0, 100, &u, &error));
    g_clear_error(&error);
    ck_assert(
        !tps_yaml_uint(doc, tps_yaml_get(doc->root, "big"), "big", 0, G_MAXUINT64, &u, &error));
    ck_assert(strstr(error->message, "out of range"));
    g_clear_error(&error);
    ck_assert(tps_yaml_double(doc, tps_yaml_get(doc->root, "f"), "f", 0, 10, &f, NULL));
    ck_assert_double_eq(f, 2.5);
    ck_assert(tps_yaml_bool(doc, tps_yaml_get(doc->root, "b"), "b", &b, NULL));
    ck_assert(b);
    ck_assert(!tps_yaml_bool(doc, tps_yaml_get(doc->root, "n"), "n", &b, &error));
    g_clear_error(&error);
    static const char *const dtypes[] = {"bf16", "fp16", NULL};
    ck_assert(tps_yaml_enum(doc, tps_yaml_get(doc->root, "e"), "e", dtypes, &idx, NULL));
    ck_assert_uint_eq(idx, 1);
    ck_assert(!tps_yaml_enum(doc, tps_yaml_get(doc->root, "n"), "n", dtypes, &idx, &error));
    ck_assert(strstr(error->message, "must be one of: bf16, fp16"));
}
END_TEST

START_TEST(test_check_keys)
{
    static const char *const known[] = {"hidden", "heads", "layers", NULL};
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string("t.yaml", "hidden: 1\nhiden: 2\n", -1, &error);
    ck_assert(!tps_yaml_check_keys(doc, doc->root, "model", known, &error));
    ck_assert_str_eq(error->message,
                     "t.yaml:2:1: unknown key 'hiden' in model; did you mean 'hidden'?");
    g_clear_error(&error);
    g_autoptr(TpsYamlDoc) doc2 = tps_yaml_load_string("t.yaml", "zzzzzz: 1\n", -1, &error);
    ck_assert(!tps_yaml_check_keys(doc2, doc2->root, "model", known, &error));
    ck_assert(strstr(error->message, "known keys: hidden, heads, layers"));
}
END_TEST

START_TEST(test_empty)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string("t.yaml", "", -1, &error);
    ck_assert_ptr_nonnull(doc);
    ck_assert_ptr_null(doc->root);
}
END_TEST

/* Issue 13, D15: a file that never ends (/dev/zero) is read up to the
 * limit, not until memory runs out; a regular file over the limit is
 * refused by its size without being read. */
START_TEST(test_file_limit)
{
    g_autoptr(GError) error = NULL;
    ck_assert_ptr_null(tps_yaml_load_file("/dev/zero", &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_msg(strstr(error->message, "/dev/zero: more than the 16 MiB"), "%s", error->message);
    g_clear_error(&error);

    g_autofree char *dir = g_dir_make_tmp("tpsim-yaml-XXXXXX", NULL);
    g_autofree char *big = g_build_filename(dir, "big.yaml", NULL);
    int fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)TPS_YAML_MAX_FILE_BYTES + 1), 0); /* sparse */
    close(fd);
    ck_assert_ptr_null(tps_yaml_load_file(big, &error));
    ck_assert_msg(strstr(error->message, "16777217 bytes, more than the 16 MiB"), "%s",
                  error->message);
    g_clear_error(&error);
    /* At the limit exactly: read (and rejected by the parser, on its NULs). */
    fd = open(big, O_WRONLY | O_TRUNC);
    ck_assert_int_eq(ftruncate(fd, 16), 0);
    close(fd);
    ck_assert_ptr_null(tps_yaml_load_file(big, &error));
    ck_assert_ptr_null(strstr(error->message, "MiB"));
    g_unlink(big);
    g_rmdir(dir);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("yaml-tree");
    TCase *tc = tcase_create("positions");
    tcase_add_test(tc, test_positions);
    tcase_add_test(tc, test_empty);
    suite_add_tcase(s, tc);
    tc = tcase_create("rejects");
    tcase_add_loop_test(tc, test_bad, 0, G_N_ELEMENTS(bad_cases));
    tcase_add_test(tc, test_deep_nesting);
    tcase_add_test(tc, test_many_keys_duplicate);
    tcase_add_test(tc, test_file_limit);
    suite_add_tcase(s, tc);
    tc = tcase_create("getters");
    tcase_add_test(tc, test_typed_getters);
    tcase_add_test(tc, test_check_keys);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
