/* core: the small shared helpers (median, YAML string quoting, peak RSS) and
 * atomic output files. */
#include <check.h>

#include "test-util.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/output.h"
#include "core/stats.h"
#include "core/text.h"

typedef struct {
    double values[6];
    guint n;
    double median;
} MedianCase;

static const MedianCase median_cases[] = {
    {{5}, 1, 5},         {{3, 1, 2}, 3, 2}, {{4, 1, 3, 2}, 4, 2.5}, {{-1, 7, 7, 0, 7}, 5, 7},
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

/* tps_text_double(): the shortest text that reads back as the same double;
 * the expected texts are the decimal expansions written out by hand, cut
 * at the first length that identifies the double. */
static const struct {
    double v;
    const char *text;
} double_cases[] = {
    {0.1, "0.1"},           /* the double nearest 0.1 is not 0.1: %.17g says 0.10000000000000001 */
    {5.247856, "5.247856"}, /* issue 12's 5.2478559999999996 */
    {1e-9, "1e-09"},
    {1e300, "1e+300"},
    {9007199254740993.0, "9007199254740992"}, /* 2^53 + 1 is not a double: 2^53, 16 digits */
    {-0.0, "0"},
    {0.0, "0"},
    {-2.5, "-2.5"},
    {1.0 / 3.0, "0.3333333333333333"},       /* 15 digits read back as another double */
    {0.1 + 0.2, "0.30000000000000004"},      /* needs all 17 */
    {123456789012345678.0, "1.2345678901234568e+17"},
};

START_TEST(test_double)
{
    char buf[TPS_TEXT_DOUBLE_LEN];
    ck_assert_str_eq(tps_text_double(buf, double_cases[_i].v), double_cases[_i].text);
    ck_assert(g_ascii_strtod(buf, NULL) == double_cases[_i].v);
}
END_TEST

START_TEST(test_peak_rss)
{
    /* Linux reports it; a process this size holds at least 100 KiB. */
    double mib = tps_alloc_peak_rss_mib();
    ck_assert(mib > 0.1 && mib < 1e6);
}
END_TEST

/* Atomic output (core/output.h). Each test works in its own folder, which
 * it checks holds no temporary file at the end. */

static guint
dir_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    ck_assert_ptr_nonnull(d);
    guint n = 0;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    return n;
}

static void
assert_contents(const char *path, const char *expected)
{
    g_autofree char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    ck_assert_str_eq(text, expected);
}

static void
put(const char *path, const char *text)
{
    ck_assert(g_file_set_contents(path, text, -1, NULL));
}

/* Remove the files of `dir`, then `dir`. */
START_TEST(test_write_new)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *path = g_build_filename(dir, "new.txt", NULL);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_write_atomic(path, "abc\n", 4, &error), "%s", error ? error->message : "");
    assert_contents(path, "abc\n");
    /* The mode a new file gets from open(0666), not mkstemp's 0600. */
    mode_t mask = umask(022);
    umask(mask);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0666 & ~mask);
    ck_assert_uint_eq(dir_entries(dir), 1);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_write_replace)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *path = g_build_filename(dir, "out.json", NULL);
    put(path, "old content, longer than the new\n");
    ck_assert_int_eq(chmod(path, 0640), 0);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    g_autoptr(GError) error = NULL;
    ck_assert(tps_write_atomic(path, "new\n", 4, &error));
    assert_contents(path, "new\n");
    ck_assert_int_eq(stat(path, &after), 0);
    /* Renamed into place, not rewritten: a reader holding the old file
     * keeps the old content. Its mode is kept. */
    ck_assert(after.st_ino != before.st_ino);
    ck_assert_uint_eq(after.st_mode & 07777, 0640);
    ck_assert_uint_eq(dir_entries(dir), 1);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_write_symlink)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *target = g_build_filename(dir, "target.txt", NULL);
    g_autofree char *link = g_build_filename(dir, "link.txt", NULL);
    put(target, "old\n");
    ck_assert_int_eq(symlink("target.txt", link), 0); /* relative to the link's folder */
    g_autoptr(GError) error = NULL;
    ck_assert(tps_write_atomic(link, "new\n", 4, &error));
    struct stat st;
    ck_assert_int_eq(lstat(link, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    g_autofree char *points_to = g_file_read_link(link, NULL);
    ck_assert_str_eq(points_to, "target.txt");
    assert_contents(target, "new\n");

    /* A dangling link creates its target; a chain of two is followed. */
    g_autofree char *made = g_build_filename(dir, "made.txt", NULL);
    g_autofree char *dangling = g_build_filename(dir, "dangling", NULL);
    g_autofree char *chain = g_build_filename(dir, "chain", NULL);
    ck_assert_int_eq(symlink(made, dangling), 0);
    ck_assert_int_eq(symlink("dangling", chain), 0);
    ck_assert(tps_write_atomic(chain, "made\n", 5, &error));
    assert_contents(made, "made\n");
    ck_assert_int_eq(lstat(chain, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(lstat(dangling, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_uint_eq(dir_entries(dir), 5);

    /* A loop is an error, not a hang. */
    g_autofree char *a = g_build_filename(dir, "a", NULL);
    g_autofree char *b = g_build_filename(dir, "b", NULL);
    ck_assert_int_eq(symlink("b", a), 0);
    ck_assert_int_eq(symlink("a", b), 0);
    ck_assert(!tps_write_atomic(a, "x", 1, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_IO));
    ck_assert_ptr_nonnull(strstr(error->message, g_strerror(ELOOP)));
    ck_assert_uint_eq(dir_entries(dir), 7);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_write_dev_null)
{
    /* As root a rename over /dev/null would succeed: the device must be
     * written through and stay one. */
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_write_atomic("/dev/null", "x\n", 2, &error), "%s",
                  error ? error->message : "");
    struct stat st;
    ck_assert_int_eq(stat("/dev/null", &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
    ck_assert_int_eq(lstat("/dev/null", &st), 0);
    ck_assert(S_ISCHR(st.st_mode));
}
END_TEST

START_TEST(test_write_fifo)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *fifo = g_build_filename(dir, "fifo", NULL);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    /* A reader first, so that opening for writing does not block. */
    int rd = open(fifo, O_RDONLY | O_NONBLOCK);
    ck_assert_int_ge(rd, 0);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_write_atomic(fifo, "through\n", 8, &error), "%s",
                  error ? error->message : "");
    char buf[16] = "";
    ck_assert_int_eq(read(rd, buf, sizeof buf - 1), 8);
    ck_assert_str_eq(buf, "through\n");
    close(rd);
    struct stat st;
    ck_assert_int_eq(lstat(fifo, &st), 0);
    ck_assert(S_ISFIFO(st.st_mode));
    ck_assert_uint_eq(dir_entries(dir), 1);
    tps_test_remove_dir(dir);
}
END_TEST

/* A TpsWriteFunc writing its user data. */
static gboolean
write_text(FILE *out, gpointer user_data, GError **error)
{
    fputs(user_data, out);
    return TRUE;
}

START_TEST(test_write_dev_full)
{
    /* The few bytes stay in the stream's buffer until the flush fails. */
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_write_atomic("/dev/full", "x\n", 2, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_IO));
    ck_assert_ptr_nonnull(strstr(error->message, "/dev/full"));
    ck_assert_ptr_nonnull(strstr(error->message, g_strerror(ENOSPC)));
    g_clear_error(&error);
    ck_assert(!tps_write_atomic_stream("/dev/full", write_text, "x\n", &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_IO));
    ck_assert_ptr_nonnull(strstr(error->message, g_strerror(ENOSPC)));
    g_clear_error(&error);
    /* Larger than any stdio buffer: fwrite itself fails. */
    gsize big = 1 << 20;
    g_autofree char *block = g_malloc0(big);
    ck_assert(!tps_write_atomic("/dev/full", block, big, &error));
    ck_assert_ptr_nonnull(strstr(error->message, g_strerror(ENOSPC)));
}
END_TEST

/* A TpsWriteFunc that writes half its output, then fails. */
static gboolean
write_then_fail(FILE *out, gpointer user_data, GError **error)
{
    fputs("partial", out);
    g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "drawing failed: %s", (const char *)user_data);
    return FALSE;
}

START_TEST(test_write_failure_keeps_old)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *path = g_build_filename(dir, "fig.svg", NULL);
    put(path, "old\n");
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_write_atomic_stream(path, write_then_fail, "no memory", &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_IO));
    g_autofree char *message = g_strdup_printf("%s: drawing failed: no memory", path);
    ck_assert_str_eq(error->message, message);
    assert_contents(path, "old\n");
    ck_assert_uint_eq(dir_entries(dir), 1);
    g_clear_error(&error);

    /* The same into a new name: nothing at all is left. */
    g_autofree char *fresh = g_build_filename(dir, "fresh.svg", NULL);
    ck_assert(!tps_write_atomic_stream(fresh, write_then_fail, "x", &error));
    ck_assert(!g_file_test(fresh, G_FILE_TEST_EXISTS));
    ck_assert_uint_eq(dir_entries(dir), 1);
    g_clear_error(&error);

    /* And a stream that succeeds writes what it streamed. */
    ck_assert(tps_write_atomic_stream(path, write_text, "streamed\n", &error));
    assert_contents(path, "streamed\n");
    ck_assert_uint_eq(dir_entries(dir), 1);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_write_errors)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autoptr(GError) error = NULL;
    /* A folder is not replaced. */
    ck_assert(!tps_write_atomic(dir, "x", 1, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_IO));
    ck_assert_ptr_nonnull(strstr(error->message, g_strerror(EISDIR)));
    g_clear_error(&error);
    /* A missing folder. */
    g_autofree char *missing = g_build_filename(dir, "no", "such.txt", NULL);
    ck_assert(!tps_write_atomic(missing, "x", 1, &error));
    g_autofree char *message = g_strdup_printf("cannot write %s: %s", missing, g_strerror(ENOENT));
    ck_assert_str_eq(error->message, message);
    ck_assert_uint_eq(dir_entries(dir), 0);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_write_stdout)
{
    /* "-" and /dev/stdout are the process's standard output: point it at a
     * file for the test. */
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *path = g_build_filename(dir, "stdout.txt", NULL);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    dup2(fd, STDOUT_FILENO);
    close(fd);
    struct stat before, after;
    ck_assert_int_eq(stat(path, &before), 0);
    gboolean ok1 = tps_write_atomic("-", "one\n", 4, NULL);
    gboolean ok2 = tps_write_atomic("/dev/stdout", "two\n", 4, NULL);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    ck_assert(ok1 && ok2);
    /* Appended to the same file, which was not replaced. */
    assert_contents(path, "one\ntwo\n");
    ck_assert_int_eq(stat(path, &after), 0);
    ck_assert(after.st_ino == before.st_ino);
    tps_test_remove_dir(dir);
}
END_TEST

/* An output set: nothing changes before the commit, nothing at all when
 * it ends without one; a second write of one file and an output that is
 * an input are refused. */
START_TEST(test_output_set)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-output");
    g_autofree char *a = g_build_filename(dir, "a.txt", NULL);
    g_autofree char *b = g_build_filename(dir, "b.txt", NULL);
    put(a, "old a\n");
    g_autoptr(GError) error = NULL;

    TpsOutputSet *set = tps_output_set_begin("test");
    ck_assert(tps_write_atomic(a, "new a\n", 6, &error));
    ck_assert(tps_write_atomic(b, "new b\n", 6, &error));
    /* Staged only: two temporary files beside the old a. */
    assert_contents(a, "old a\n");
    ck_assert(!g_file_test(b, G_FILE_TEST_EXISTS));
    ck_assert_uint_eq(dir_entries(dir), 3);
    tps_output_set_free(set);
    assert_contents(a, "old a\n");
    ck_assert_uint_eq(dir_entries(dir), 1);

    set = tps_output_set_begin("test");
    ck_assert(tps_write_atomic(a, "new a\n", 6, &error));
    ck_assert(tps_write_atomic(b, "new b\n", 6, &error));
    ck_assert_msg(tps_output_set_commit(set, &error), "%s", error ? error->message : "");
    tps_output_set_free(set);
    assert_contents(a, "new a\n");
    assert_contents(b, "new b\n");
    ck_assert_uint_eq(dir_entries(dir), 2);

    /* The same file twice, spelled differently. */
    set = tps_output_set_begin("test");
    ck_assert(tps_write_atomic(a, "1\n", 2, &error));
    g_autofree char *a2 = g_build_filename(dir, ".", "a.txt", NULL);
    ck_assert(!tps_write_atomic(a2, "2\n", 2, &error));
    ck_assert(g_error_matches(error, TPS_ERROR, TPS_ERROR_INPUT));
    ck_assert_ptr_nonnull(strstr(error->message, "test: the outputs"));
    g_clear_error(&error);
    /* An input, and a claim of it. */
    tps_output_set_add_input(set, b);
    ck_assert(!tps_write_atomic(b, "x\n", 2, &error));
    g_clear_error(&error);
    ck_assert(!tps_output_set_claim(set, b, "--out", &error));
    ck_assert_ptr_nonnull(strstr(error->message, "--out"));
    g_clear_error(&error);
    tps_output_set_free(set);
    assert_contents(a, "new a\n");
    assert_contents(b, "new b\n");
    ck_assert_uint_eq(dir_entries(dir), 2);
    tps_test_remove_dir(dir);
}
END_TEST

/* One "wrote PATH" line per file renamed into place, after the commit
 * only; standard output says nothing; nothing without a stream. */
START_TEST(test_output_announce)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-announce");
    g_autofree char *a = g_build_filename(dir, "a.txt", NULL);
    g_autofree char *b = g_build_filename(dir, "b.txt", NULL);
    g_autoptr(GError) error = NULL;
    char *said = NULL;
    size_t len = 0;
    FILE *log = open_memstream(&said, &len);
    ck_assert_ptr_nonnull(log);
    tps_output_announce(log);

    TpsOutputSet *set = tps_output_set_begin("test");
    ck_assert(tps_write_atomic(a, "a\n", 2, &error));
    ck_assert(tps_write_atomic(b, "b\n", 2, &error));
    ck_assert(tps_write_atomic("-", "", 0, &error));
    fflush(log);
    ck_assert_uint_eq(len, 0); /* staged: nothing written yet */
    ck_assert(tps_output_set_commit(set, &error));
    tps_output_set_free(set);
    fflush(log);
    g_autofree char *expected = g_strdup_printf("wrote %s\nwrote %s\n", a, b);
    ck_assert_str_eq(said, expected);

    /* A set freed without a commit wrote nothing, and says nothing. */
    set = tps_output_set_begin("test");
    ck_assert(tps_write_atomic(a, "c\n", 2, &error));
    tps_output_set_free(set);
    /* Alone (no set): at once. */
    ck_assert(tps_write_atomic(b, "d\n", 2, &error));
    tps_output_announce(NULL);
    ck_assert(tps_write_atomic(a, "e\n", 2, &error));
    fclose(log);
    g_autofree char *expected2 = g_strdup_printf("%swrote %s\n", expected, b);
    ck_assert_str_eq(said, expected2);
    free(said);
    tps_test_remove_dir(dir);
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
    tcase_add_loop_test(tc, test_double, 0, G_N_ELEMENTS(double_cases));
    suite_add_tcase(s, tc);
    tc = tcase_create("alloc");
    tcase_add_test(tc, test_peak_rss);
    suite_add_tcase(s, tc);
    tc = tcase_create("output");
    tcase_add_test(tc, test_write_new);
    tcase_add_test(tc, test_write_replace);
    tcase_add_test(tc, test_write_symlink);
    tcase_add_test(tc, test_write_dev_null);
    tcase_add_test(tc, test_write_fifo);
    tcase_add_test(tc, test_write_dev_full);
    tcase_add_test(tc, test_write_failure_keeps_old);
    tcase_add_test(tc, test_write_errors);
    tcase_add_test(tc, test_write_stdout);
    tcase_add_test(tc, test_output_set);
    tcase_add_test(tc, test_output_announce);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
