/* The streaming JSON reader on its own, without traces: walking an object
 * with the pull functions while parsing some members and skipping others;
 * the tree's accessors; integers and exact thousandths from number text;
 * string escapes into UTF-8; errors with their byte offsets; gzip found by
 * its magic bytes; one tree reused from value to value. Expected values are
 * worked out by hand from the input text. */
#include <check.h>

#include "test-util.h"
#include <gio/gio.h>
#include <string.h>

#include "core/error.h"
#include "io/trace/json-stream.h"

static TpsJsonStream *
stream_of(const char *text)
{
    g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data(text, -1, NULL);
    return tps_json_stream_new(in, NULL);
}

/* Parse `text` as one value; the stream stays alive in *out_stream. */
static TpsJsonNode
parse_one(const char *text, TpsJsonStream **out_stream)
{
    TpsJsonStream *js = stream_of(text);
    g_autoptr(GError) error = NULL;
    TpsJsonNode root = TPS_JSON_NONE;
    ck_assert_msg(tps_json_stream_parse(js, &root, &error), "%s: %s", text,
                  error ? error->message : "");
    *out_stream = js;
    return root;
}

/* ---------------------------------------------------------------------- */
/* Walking                                                                 */

START_TEST(test_walk)
{
    g_autoptr(TpsJsonStream) js = stream_of(" {\"a\": [1, {\"b\": \"x\"}], \"skip\": {\"deep\": "
                                            "[true, null, \"]}\"]},\n \"c\": -2.5}  ");
    g_autoptr(GError) error = NULL;
    ck_assert_int_eq(tps_json_stream_peek(js), '{');
    ck_assert(!tps_json_stream_accept(js, '['));
    ck_assert(tps_json_stream_accept(js, '{'));
    ck_assert_uint_eq(tps_json_stream_offset(js), 2); /* the space and the brace */

    const char *key = tps_json_stream_read_key(js, &error);
    ck_assert_str_eq(key, "a");
    TpsJsonNode a;
    ck_assert(tps_json_stream_parse(js, &a, &error));
    const TpsJsonTree *t = tps_json_stream_tree(js);
    ck_assert_int_eq(tps_json_tree_type(t, a), TPS_JSON_ARRAY);
    TpsJsonNode first = tps_json_tree_first(t, a);
    ck_assert_str_eq(tps_json_tree_text(t, first), "1");
    TpsJsonNode second = tps_json_tree_next(t, first);
    ck_assert_int_eq(tps_json_tree_type(t, second), TPS_JSON_OBJECT);
    ck_assert_str_eq(tps_json_tree_member_string(t, second, "b"), "x");
    ck_assert_uint_eq(tps_json_tree_next(t, second), TPS_JSON_NONE);
    gboolean more = FALSE;
    ck_assert(tps_json_stream_next(js, '}', "expected ',' or '}'", &more, &error));
    ck_assert(more);

    /* A skipped member, whose string holds the closing brackets. */
    ck_assert_str_eq(tps_json_stream_read_key(js, &error), "skip");
    ck_assert(tps_json_stream_skip(js, &error));
    ck_assert(tps_json_stream_next(js, '}', "expected ',' or '}'", &more, &error));
    ck_assert(more);

    ck_assert_str_eq(tps_json_stream_read_key(js, &error), "c");
    TpsJsonNode c;
    ck_assert(tps_json_stream_parse(js, &c, &error));
    ck_assert_int_eq(tps_json_tree_type(tps_json_stream_tree(js), c), TPS_JSON_NUMBER);
    ck_assert_str_eq(tps_json_tree_text(tps_json_stream_tree(js), c), "-2.5");
    ck_assert(tps_json_stream_next(js, '}', "expected ',' or '}'", &more, &error));
    ck_assert(!more);
    ck_assert_int_eq(tps_json_stream_peek(js), -1); /* trailing spaces only */
    ck_assert(!tps_json_stream_read_failed(js));
    ck_assert_ptr_null(error);
}
END_TEST

/* Each parse resets the tree: the root is node 0 every time, so a stream
 * of many values does not grow it. */
START_TEST(test_tree_reused)
{
    g_autoptr(TpsJsonStream) js = stream_of("[{\"x\": 1}, {\"y\": [2, 3]}, {\"z\": 4}]");
    g_autoptr(GError) error = NULL;
    ck_assert(tps_json_stream_accept(js, '['));
    const char *keys[] = {"x", "y", "z"};
    gboolean more = TRUE;
    for (guint i = 0; more; i++) {
        ck_assert_uint_lt(i, 3);
        TpsJsonNode v;
        ck_assert(tps_json_stream_parse(js, &v, &error));
        const TpsJsonTree *t = tps_json_stream_tree(js);
        ck_assert_uint_eq(v, 0);
        ck_assert_uint_ne(tps_json_tree_member(t, v, keys[i]), TPS_JSON_NONE);
        for (guint j = 0; j < 3; j++)
            if (j != i)
                ck_assert_uint_eq(tps_json_tree_member(t, v, keys[j]), TPS_JSON_NONE);
        ck_assert(tps_json_stream_next(js, ']', "expected ',' or ']'", &more, &error));
    }
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Accessors                                                               */

START_TEST(test_members)
{
    TpsJsonStream *js;
    TpsJsonNode o = parse_one("{\"k\": \"first\", \"n\": 7, \"k\": \"second\", \"b\": false, "
                              "\"z\": null, \"s\": \"42\", \"e\": 1e3, \"h\": 2.5, \"w\": \"4x\"}",
                              &js);
    const TpsJsonTree *t = tps_json_stream_tree(js);
    ck_assert_str_eq(tps_json_tree_member_string(t, o, "k"), "first"); /* the first of two */
    ck_assert_ptr_null(tps_json_tree_member_string(t, o, "n"));        /* not a string */
    ck_assert_ptr_null(tps_json_tree_member_string(t, o, "absent"));
    ck_assert_int_eq(tps_json_tree_type(t, tps_json_tree_member(t, o, "b")), TPS_JSON_BOOL);
    ck_assert_int_eq(tps_json_tree_type(t, tps_json_tree_member(t, o, "z")), TPS_JSON_NULL);
    ck_assert_ptr_null(tps_json_tree_text(t, tps_json_tree_member(t, o, "b")));
    /* A member of something that is no object. */
    ck_assert_uint_eq(tps_json_tree_member(t, tps_json_tree_member(t, o, "n"), "k"), TPS_JSON_NONE);
    ck_assert_uint_eq(tps_json_tree_member(t, TPS_JSON_NONE, "k"), TPS_JSON_NONE);

    gint64 v = 0;
    ck_assert(tps_json_tree_member_int(t, o, "n", &v) && v == 7);
    ck_assert(tps_json_tree_member_int(t, o, "s", &v) && v == 42); /* numeric string */
    ck_assert(tps_json_tree_member_int(t, o, "e", &v) && v == 1000);
    ck_assert(tps_json_tree_member_int(t, o, "h", &v) && v == 3); /* 2.5 rounds away from 0 */
    v = -1;
    ck_assert(!tps_json_tree_member_int(t, o, "w", &v)); /* not a number */
    ck_assert(!tps_json_tree_member_int(t, o, "b", &v));
    ck_assert(!tps_json_tree_member_int(t, o, "absent", &v));
    ck_assert_int_eq(v, -1);
    tps_json_stream_free(js);
}
END_TEST

/* Number text -> value times 1000, worked out digit by digit. */
static const struct {
    const char *text;
    gint64 expected;
} thousandths_cases[] = {
    {"12", 12000},
    {"0.1", 100},
    {"3.14159", 3142},  /* 3 141 and a 5 in the fourth place: up */
    {"3.14149", 3141},  /* a 4 in the fourth place: down */
    {"-0.0005", -1},    /* 0 and 000, rounded up, negated */
    {"1.5e3", 1500000}, /* through a double */
    /* Kineto's absolute microseconds: a double holds 1700000000000010.1235
     * only to a quarter (as ...10.0), which would give ...10000. */
    {"1700000000000010.1235", G_GINT64_CONSTANT(1700000000000010124)},
};

START_TEST(test_thousandths)
{
    g_autofree char *doc = g_strdup_printf("[%s]", thousandths_cases[_i].text);
    TpsJsonStream *js;
    TpsJsonNode arr = parse_one(doc, &js);
    const TpsJsonTree *t = tps_json_stream_tree(js);
    gint64 v = 0;
    ck_assert(tps_json_tree_thousandths(t, tps_json_tree_first(t, arr), &v));
    ck_assert_msg(v == thousandths_cases[_i].expected, "%s -> %" G_GINT64_FORMAT,
                  thousandths_cases[_i].text, v);
    tps_json_stream_free(js);
}
END_TEST

START_TEST(test_thousandths_not_a_number)
{
    TpsJsonStream *js;
    TpsJsonNode arr = parse_one("[\"12\", true]", &js);
    const TpsJsonTree *t = tps_json_stream_tree(js);
    gint64 v = 0;
    TpsJsonNode s = tps_json_tree_first(t, arr);
    ck_assert(!tps_json_tree_thousandths(t, s, &v));
    ck_assert(!tps_json_tree_thousandths(t, tps_json_tree_next(t, s), &v));
    ck_assert(!tps_json_tree_thousandths(t, TPS_JSON_NONE, &v));
    tps_json_stream_free(js);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Strings                                                                 */

static const struct {
    const char *json;
    const char *utf8;
} string_cases[] = {
    {"\"a\\nb\\t\\\"q\\\" \\\\ \\/\"", "a\nb\t\"q\" \\ /"},
    {"\"caf\\u00e9\"", "caf\xc3\xa9"},
    {"\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"}, /* U+1F600 from a surrogate pair */
    {"\"x\\u0000y\"", "x\xef\xbf\xbdy"},        /* NUL kept out: U+FFFD */
    {"\"\\udc00\"", "\xef\xbf\xbd"},            /* lone low surrogate: U+FFFD */
    {"\"plain \xc3\xa9\"", "plain \xc3\xa9"},   /* UTF-8 passes through */
};

START_TEST(test_strings)
{
    TpsJsonStream *js;
    TpsJsonNode s = parse_one(string_cases[_i].json, &js);
    const TpsJsonTree *t = tps_json_stream_tree(js);
    ck_assert_int_eq(tps_json_tree_type(t, s), TPS_JSON_STRING);
    ck_assert_str_eq(tps_json_tree_text(t, s), string_cases[_i].utf8);
    tps_json_stream_free(js);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Errors                                                                  */

/* Offsets count the bytes consumed when the error was found. */
static const struct {
    const char *text;
    const char *message;
} bad_values[] = {
    {"[1, 2", "unexpected end of file at byte 5 (truncated?)"},
    {"[tru]", "invalid JSON at byte 5: unknown literal"}, /* "tru]" read: ']' is no 'e' */
    {"{1: 2}", "invalid JSON at byte 1: expected a key"},
    {"{\"a\" 2}", "invalid JSON at byte 5: expected ':'"},
    {"[1 2]", "invalid JSON at byte 4: expected ',' or ']'"}, /* the '2' consumed */
    {"\"\\q\"", "invalid JSON at byte 3: bad escape in a string"},
    {"\"\\ud800x\"", "invalid JSON at byte 8: lone surrogate in \\u escape"},
    {"\"a\tb\"", "invalid JSON at byte 3: control character in a string"},
    {"[-]", "invalid JSON at byte 2: bad number"},
    {"}", "invalid JSON at byte 0: unexpected character"},
};

START_TEST(test_bad_values)
{
    g_autoptr(TpsJsonStream) js = stream_of(bad_values[_i].text);
    g_autoptr(GError) error = NULL;
    TpsJsonNode root;
    ck_assert(!tps_json_stream_parse(js, &root, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_str_eq(error->message, bad_values[_i].message);
}
END_TEST

START_TEST(test_limits)
{
    /* 64 levels are fine, 65 are not. */
    for (int depth = 64; depth <= 65; depth++) {
        GString *doc = g_string_new(NULL);
        for (int i = 0; i < depth; i++)
            g_string_append_c(doc, '[');
        for (int i = 0; i < depth; i++)
            g_string_append_c(doc, ']');
        g_autoptr(TpsJsonStream) js = stream_of(doc->str);
        g_autoptr(GError) error = NULL;
        TpsJsonNode root;
        gboolean ok = tps_json_stream_parse(js, &root, &error);
        ck_assert_msg(ok == (depth == 64), "depth %d", depth);
        if (!ok)
            ck_assert_ptr_nonnull(strstr(error->message, "nesting too deep"));
        g_string_free(doc, TRUE);
    }
    /* 64 characters of number are fine, 65 are not. */
    for (int len = 64; len <= 65; len++) {
        g_autofree char *doc = g_strnfill((gsize)len, '7');
        g_autoptr(TpsJsonStream) js = stream_of(doc);
        g_autoptr(GError) error = NULL;
        gboolean ok = tps_json_stream_skip(js, &error);
        ck_assert_msg(ok == (len == 64), "length %d", len);
        if (!ok)
            ck_assert_ptr_nonnull(strstr(error->message, "number too long"));
    }
}
END_TEST

START_TEST(test_fail_and_next)
{
    g_autoptr(TpsJsonStream) js = stream_of("{\"a\": 1; \"b\": 2}");
    g_autoptr(GError) error = NULL;
    ck_assert(tps_json_stream_accept(js, '{'));
    ck_assert_ptr_nonnull(tps_json_stream_read_key(js, &error));
    ck_assert(tps_json_stream_skip(js, &error));
    gboolean more = TRUE;
    ck_assert(!tps_json_stream_next(js, '}', "expected a comma here", &more, &error));
    ck_assert_str_eq(error->message, "invalid JSON at byte 8: expected a comma here");
    g_clear_error(&error);
    /* The caller's own message, at the current offset. */
    ck_assert(!tps_json_stream_fail(js, "no good", &error));
    ck_assert_str_eq(error->message, "invalid JSON at byte 8: no good");
}
END_TEST

/* ---------------------------------------------------------------------- */
/* gzip                                                                    */

static GBytes *
gzip_bytes(const char *text)
{
    g_autoptr(GZlibCompressor) comp = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
    g_autoptr(GInputStream) plain = g_memory_input_stream_new_from_data(text, -1, NULL);
    g_autoptr(GInputStream) in = g_converter_input_stream_new(plain, G_CONVERTER(comp));
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();
    g_autoptr(GError) error = NULL;
    ck_assert(g_output_stream_splice(out, in, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, &error) >=
              0);
    return g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(out));
}

/* The whole value of `input` (through open_input) as its string. */
static char *
read_through(GInputStream *input, GError **error)
{
    g_autoptr(GInputStream) source = tps_json_stream_open_input(input, NULL, error);
    if (source == NULL)
        return NULL;
    g_autoptr(TpsJsonStream) js = tps_json_stream_new(source, NULL);
    TpsJsonNode root;
    if (!tps_json_stream_parse(js, &root, error))
        return NULL;
    return g_strdup(tps_json_tree_text(tps_json_stream_tree(js), root));
}

START_TEST(test_gzip)
{
    const char *doc = "\"compressed or not\"";
    g_autoptr(GBytes) gz = gzip_bytes(doc);
    gsize gz_len;
    const guint8 *gz_data = g_bytes_get_data(gz, &gz_len);
    ck_assert(gz_len > 2 && gz_data[0] == 0x1f && gz_data[1] == 0x8b);
    g_autoptr(GError) error = NULL;

    g_autoptr(GInputStream) zin = g_memory_input_stream_new_from_bytes(gz);
    g_autofree char *from_gz = read_through(zin, &error);
    ck_assert_msg(from_gz != NULL, "%s", error ? error->message : "");
    ck_assert_str_eq(from_gz, "compressed or not");

    g_autoptr(GInputStream) pin = g_memory_input_stream_new_from_data(doc, -1, NULL);
    g_autofree char *from_plain = read_through(pin, &error);
    ck_assert_str_eq(from_plain, "compressed or not");

    /* Cut in the middle: the decompressor's error, as an I/O error. */
    g_autoptr(GBytes) cut = g_bytes_new_from_bytes(gz, 0, gz_len / 2);
    g_autoptr(GInputStream) cin = g_memory_input_stream_new_from_bytes(cut);
    g_autofree char *from_cut = read_through(cin, &error);
    ck_assert_ptr_null(from_cut);
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_IO));
    ck_assert_msg(g_str_has_prefix(error->message, "truncated gzip data after "), "%s",
                  error->message);
}
END_TEST

/* Issue 13, D9: a string is read up to TPS_JSON_MAX_STRING bytes, parsed
 * or skipped, key or value; a value's tree up to TPS_JSON_MAX_NODES values;
 * the input up to its limit. Each is an input error that says so. */
START_TEST(test_size_limits)
{
    const gsize max = TPS_JSON_MAX_STRING;
    for (int skip = 0; skip < 2; skip++) {
        for (gsize len = max; len <= max + 1; len++) {
            GString *doc = g_string_sized_new(len + 8);
            g_string_append_c(doc, '"');
            for (gsize i = 0; i < len; i++)
                g_string_append_c(doc, 'a');
            g_string_append_c(doc, '"');
            g_autoptr(TpsJsonStream) js = stream_of(doc->str);
            g_autoptr(GError) error = NULL;
            TpsJsonNode root;
            gboolean ok =
                skip ? tps_json_stream_skip(js, &error) : tps_json_stream_parse(js, &root, &error);
            ck_assert_msg(ok == (len == max), "length %zu", len);
            if (!ok) {
                ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
                ck_assert_msg(strstr(error->message, "a string at byte") &&
                                  strstr(error->message, "is longer than 16 MiB"),
                              "%s", error->message);
            }
            g_string_free(doc, TRUE);
        }
    }
    /* A key, with escapes: each escape counts as what it read. */
    {
        g_autoptr(TpsJsonStream) js = stream_of("{\"\\u0041\\u0042xy\": 1}");
        tps_json_stream_set_limits(js, TPS_JSON_MAX_INPUT, 4);
        g_autoptr(GError) error = NULL;
        ck_assert(tps_json_stream_accept(js, '{'));
        ck_assert_ptr_null(tps_json_stream_read_key(js, &error));
        ck_assert_msg(strstr(error->message, "longer than 4 bytes"), "%s", error->message);
    }
    /* An array of one value too many. */
    {
        GString *doc = g_string_new("[");
        for (gsize i = 0; i < TPS_JSON_MAX_NODES; i++)
            g_string_append(doc, "0,");
        g_string_append(doc, "0]");
        g_autoptr(TpsJsonStream) js = stream_of(doc->str);
        g_autoptr(GError) error = NULL;
        TpsJsonNode root;
        ck_assert(!tps_json_stream_parse(js, &root, &error));
        ck_assert_msg(strstr(error->message, "holds more than 4194304 values"), "%s",
                      error->message);
        /* Skipped, it costs no memory and passes. */
        g_autoptr(TpsJsonStream) again = stream_of(doc->str);
        ck_assert(tps_json_stream_skip(again, &error));
        g_string_free(doc, TRUE);
    }
    /* The whole input: 1000 bytes pass a limit of 1000, 1001 do not. */
    for (gsize len = 1000; len <= 1001; len++) {
        g_autofree char *doc = g_strnfill(len, ' ');
        doc[len - 1] = '1';
        g_autoptr(TpsJsonStream) js = stream_of(doc);
        tps_json_stream_set_limits(js, 1000, TPS_JSON_MAX_STRING);
        g_autoptr(GError) error = NULL;
        TpsJsonNode root;
        gboolean ok = tps_json_stream_parse(js, &root, &error);
        ck_assert_msg(ok == (len == 1000), "length %zu: %s", len, error ? error->message : "");
        if (!ok)
            ck_assert_str_eq(error->message, "more than 1000 bytes of JSON (after decompression): "
                                             "tpsim reads at most that");
    }
}
END_TEST

/* The gzip bomb of the issue, scaled down: a small file that inflates to
 * one string of 17 MiB is refused once 16 MiB are read. */
START_TEST(test_gzip_long_string)
{
    const gsize len = TPS_JSON_MAX_STRING + (1u << 20);
    char *doc = g_malloc(len + 3);
    doc[0] = '"';
    memset(doc + 1, 'x', len);
    doc[len + 1] = '"';
    doc[len + 2] = '\0';
    g_autoptr(GBytes) gz = gzip_bytes(doc);
    g_free(doc);
    ck_assert_uint_lt(g_bytes_get_size(gz), 100000);
    g_autoptr(GInputStream) zin = g_memory_input_stream_new_from_bytes(gz);
    g_autoptr(GError) error = NULL;
    g_autofree char *text = read_through(zin, &error);
    ck_assert_ptr_null(text);
    ck_assert_msg(strstr(error->message, "is longer than 16 MiB"), "%s", error->message);
}
END_TEST

static Suite *
json_stream_suite(void)
{
    Suite *s = suite_create("json-stream");
    TCase *tc;

    tc = tcase_create("walk");
    tcase_add_test(tc, test_walk);
    tcase_add_test(tc, test_tree_reused);
    suite_add_tcase(s, tc);

    tc = tcase_create("accessors");
    tcase_add_test(tc, test_members);
    tcase_add_loop_test(tc, test_thousandths, 0, G_N_ELEMENTS(thousandths_cases));
    tcase_add_test(tc, test_thousandths_not_a_number);
    suite_add_tcase(s, tc);

    tc = tcase_create("strings");
    tcase_add_loop_test(tc, test_strings, 0, G_N_ELEMENTS(string_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_bad_values, 0, G_N_ELEMENTS(bad_values));
    tcase_add_test(tc, test_limits);
    tcase_add_test(tc, test_size_limits);
    tcase_add_test(tc, test_fail_and_next);
    suite_add_tcase(s, tc);

    tc = tcase_create("gzip");
    tcase_add_test(tc, test_gzip);
    tcase_add_test(tc, test_gzip_long_string);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(json_stream_suite());
}
