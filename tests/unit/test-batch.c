/* The batch runner (plan/batch.h): threads, streamed and resumed outputs,
 * shards and merge, the progress bar. The evaluation here is synthetic
 * (numbers made from the point's index), so that the runner is tested on
 * its own and fast. */
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "plan/batch.h"
#include "sched/strategy.h"
#include "test-util.h"

#define N_POINTS 23

static void
scenario_fill(TpsScenario *sc)
{
    tps_scenario_init(sc);
    sc->name = g_strdup("t");
    sc->hardware.name = g_strdup("hw");
    sc->hidden = 4096;
    sc->heads = 32;
    sc->layers = 32;
    sc->seq_len = 2048;
}

static TpsBatch *make_batch_n(const char *input_id, guint n);

static TpsBatch *
make_batch(const char *input_id)
{
    return make_batch_n(input_id, N_POINTS);
}

static TpsBatch *
make_batch_n(const char *input_id, guint n)
{
    static const char *const columns[] = {"parallel.tp", "model.seq_len", NULL};
    TpsBatch *b = tps_batch_new(input_id, columns);
    g_auto(TpsScenario) sc = {0};
    scenario_fill(&sc);
    for (guint i = 0; i < n; i++) {
        g_autofree char *tp = g_strdup_printf("%u", 1u << (i % 4));
        g_autofree char *seq = g_strdup_printf("%u", 1024 * (i + 1));
        g_autofree char *key = g_strdup_printf("tp=%s;seq=%s", tp, seq);
        const char *labels[] = {tp, seq, NULL};
        sc.tp = 1u << (i % 4);
        tps_batch_add(b, key, &sc, labels);
    }
    return b;
}

/* Two rows per point, a skipped one every fifth point; the time the
 * point's index, so that a row out of place shows. A point may be made to
 * fail (a simulated kill: what was streamed stays). */
typedef struct {
    gint fail_at; /* -1: none */
    gint evaluated;
} EvalState;

static gboolean
fake_eval(const TpsBatchPoint *p, GArray *rows, gpointer user, GError **error)
{
    EvalState *st = user;
    if (st != NULL && (gint)p->index == st->fail_at) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "killed at %u", p->index);
        return FALSE;
    }
    if (st != NULL)
        g_atomic_int_inc(&st->evaluated);
    /* Some work, so that threads finish out of order. */
    g_usleep((p->index * 7919) % 5 * 200);
    if (p->index % 5 == 4) {
        tps_batch_rows_skip(rows, NULL, "tp x pp, does not divide \"8\"");
        return TRUE;
    }
    static const char *const names[] = {"megatron", "te-a100"};
    for (guint s = 0; s < 2; s++) {
        TpsResult r = {0};
        r.strategy = tps_strategy_lookup(names[s]);
        r.step_time_s = p->index + s / 4.0;
        r.forward_ms = 1.5;
        r.fits_memory = TRUE;
        tps_batch_rows_add(rows, &r);
    }
    return TRUE;
}

static char *
read_all(const char *path)
{
    char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "%s", path);
    return text;
}

/* Run the whole batch into `dir`/NAME and return the file's text. */
static char *
run_to(const TpsBatch *b, const char *dir, const char *name, guint jobs, TpsFormat format)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = jobs;
    opts.output = path;
    opts.format = format;
    opts.progress = TPS_PROGRESS_NEVER;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_batch_run(b, fake_eval, NULL, &opts, &error), "%s",
                  error ? error->message : "");
    g_autofree char *partial = g_strconcat(path, ".partial", NULL);
    ck_assert_msg(!g_file_test(partial, G_FILE_TEST_EXISTS), "partial file left");
    return read_all(path);
}

START_TEST(test_file_shape)
{
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *csv = run_to(b, dir, "out.csv", 1, TPS_FORMAT_CSV);
    g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
    /* A plain table: the columns first, 2 rows per point but 1 for every
     * fifth, and "". What identifies the batch is in the sidecar. */
    const guint skipped = N_POINTS / 5;
    ck_assert_uint_eq(g_strv_length(lines), 1 + 2 * N_POINTS - skipped + 1);
    ck_assert(g_str_has_prefix(lines[0], "point,parallel.tp,model.seq_len,scenario,hardware,"
                                         "strategy,skipped,time_saved,speedup,gpus,tp,"));
    ck_assert(g_str_has_suffix(lines[0], ",tokens_per_s_cluster,hardware_file,hardware_sha256"));
    g_autofree char *sidecar_path = g_build_filename(dir, "out.csv.batch", NULL);
    g_autofree char *sidecar = read_all(sidecar_path);
    g_autofree char *digest = tps_batch_digest(b);
    g_autofree char *expected_sidecar =
        g_strdup_printf("tpsim batch %s shard all points 23 format csv\n", digest);
    ck_assert_str_eq(sidecar, expected_sidecar);
    /* Point 4: skipped, its layout shown, the reason quoted (a comma). */
    ck_assert_str_eq(lines[1 + 8], "4,1,5120,t,hw,,\"tp x pp, does not divide \"\"8\"\"\",,,"
                                   "1,1,1,1,1,1,none,false,,,,,,,,,,,,,,,,,,");
    ck_assert_msg(g_str_has_prefix(lines[1 + 9], "5,2,6144,t,hw,megatron,,0.000000,1.000000,2,2,"),
                  "%s", lines[1 + 9]); /* simulated: its skipped cell empty */

    g_autofree char *json = run_to(b, dir, "out.json", 2, TPS_FORMAT_JSON);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(json_parser_load_from_data(parser, json, -1, &error), "%s", json);
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    ck_assert_int_eq(json_object_get_int_member(root, "points"), N_POINTS);
    JsonArray *rows = json_object_get_array_member(root, "rows");
    ck_assert_uint_eq(json_array_get_length(rows), 2 * N_POINTS - skipped);
    JsonObject *r8 = json_array_get_object_element(rows, 8);
    ck_assert_int_eq(json_object_get_int_member(r8, "point"), 4);
    ck_assert_int_eq(json_object_get_int_member(r8, "model.seq_len"), 5120);
    ck_assert_str_eq(json_object_get_string_member(r8, "skipped"),
                     "tp x pp, does not divide \"8\"");
    ck_assert(!json_object_has_member(r8, "step_time_s"));
    ck_assert(!json_object_has_member(r8, "strategy"));
    tps_test_remove_dir(dir);
}
END_TEST

/* The final file is sorted by point whatever the thread count. */
START_TEST(test_threads_same_bytes)
{
    const TpsFormat format = _i == 0 ? TPS_FORMAT_CSV : TPS_FORMAT_JSON;
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *one = run_to(b, dir, "one", 1, format);
    g_autofree char *two = run_to(b, dir, "two", 2, format);
    g_autofree char *eight = run_to(b, dir, "eight", 8, format);
    ck_assert_str_eq(one, two);
    ck_assert_str_eq(one, eight);
    tps_test_remove_dir(dir);
}
END_TEST

/* A run stopped at a point (a kill: the partial file stays), the partial
 * file then cut in the middle of a line or of a point; --resume gives the
 * bytes of a run that never stopped, evaluating only what was missing. */
START_TEST(test_resume_after_kill)
{
    const TpsFormat format = _i % 2 == 0 ? TPS_FORMAT_CSV : TPS_FORMAT_JSON;
    const guint cut = _i / 2; /* 0: at a marker, 1: mid-line, 2: after a row, no marker */
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *expected = run_to(b, dir, "whole", 2, format);

    g_autofree char *path = g_build_filename(dir, "out", NULL);
    g_autofree char *partial = g_strconcat(path, ".partial", NULL);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 1; /* points in order: the kill leaves 0..11 */
    opts.output = path;
    opts.format = format;
    opts.progress = TPS_PROGRESS_NEVER;
    EvalState st = {.fail_at = 12};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_batch_run(b, fake_eval, &st, &opts, &error));
    ck_assert_str_eq(error->message, "killed at 12");
    g_clear_error(&error);
    ck_assert(!g_file_test(path, G_FILE_TEST_EXISTS)); /* no final file */
    g_autofree char *text = read_all(partial);
    /* Drop the last marker (point 11 done but not marked), then, for the
     * cut mid-line, half of point 11's last row. */
    char *marker = g_strrstr(text, "#done 11\n");
    ck_assert(marker != NULL && marker[9] == '\0');
    if (cut >= 1)
        *marker = '\0';
    if (cut == 1)
        marker[-7] = '\0';
    ck_assert(g_file_set_contents(partial, text, -1, NULL));

    /* Without --resume the partial file is refused, not overwritten. */
    ck_assert(!tps_batch_run(b, fake_eval, NULL, &opts, &error));
    ck_assert_msg(strstr(error->message, "--resume") != NULL, "%s", error->message);
    g_clear_error(&error);

    /* Resumed and killed again, so that the partial file the first
     * resume continued is read back too. */
    opts.resume = TRUE;
    EvalState again = {.fail_at = 17};
    ck_assert(!tps_batch_run(b, fake_eval, &again, &opts, &error));
    g_clear_error(&error);
    ck_assert_int_eq(again.evaluated, 17 - (cut == 0 ? 12 : 11));
    opts.jobs = 2;
    EvalState last = {.fail_at = -1};
    ck_assert_msg(tps_batch_run(b, fake_eval, &last, &opts, &error), "%s",
                  error ? error->message : "");
    g_autofree char *resumed = read_all(path);
    ck_assert_str_eq(resumed, expected);
    /* Only the points not marked done were evaluated again. */
    ck_assert_int_eq(last.evaluated, N_POINTS - 17);
    ck_assert(!g_file_test(partial, G_FILE_TEST_EXISTS));
    tps_test_remove_dir(dir);
}
END_TEST

/* The partial file of another batch (another input) is refused. */
START_TEST(test_resume_other_batch)
{
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autoptr(TpsBatch) other = make_batch("another input");
    g_autofree char *path = g_build_filename(dir, "out", NULL);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.output = path;
    opts.progress = TPS_PROGRESS_NEVER;
    EvalState st = {.fail_at = 3};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_batch_run(b, fake_eval, &st, &opts, &error));
    g_clear_error(&error);
    opts.resume = TRUE;
    ck_assert(!tps_batch_run(other, fake_eval, NULL, &opts, &error));
    ck_assert_msg(strstr(error->message, "not the partial output of this batch") != NULL, "%s",
                  error->message);
    tps_test_remove_dir(dir);
}
END_TEST

/* Shards in any order merge into the unsharded bytes; parts that do not
 * make one whole are refused. */
START_TEST(test_shard_merge)
{
    const TpsFormat format = _i == 0 ? TPS_FORMAT_CSV : TPS_FORMAT_JSON;
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *whole = run_to(b, dir, "whole", 2, format);
    const guint n = 4;
    char *parts[4];
    for (guint i = 0; i < n; i++) {
        parts[i] = g_build_filename(dir, (const char *[]){"p0", "p1", "p2", "p3"}[i], NULL);
        TpsBatchOptions opts;
        tps_batch_options_init(&opts);
        opts.output = parts[i];
        opts.format = format;
        opts.shard_index = i;
        opts.shard_count = n;
        opts.progress = TPS_PROGRESS_NEVER;
        g_autoptr(GError) error = NULL;
        ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
        g_autofree char *sidecar_path = g_strconcat(parts[i], ".batch", NULL);
        g_autofree char *sidecar = read_all(sidecar_path);
        g_autofree char *shard = g_strdup_printf(" shard %u/%u ", i, n);
        ck_assert_msg(strstr(sidecar, shard) != NULL, "%s", sidecar);
    }
    g_autofree char *merged = g_build_filename(dir, "merged", NULL);
    const char *order[] = {parts[2], parts[0], parts[3], parts[1]};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_batch_merge(order, n, merged, &error), "%s", error ? error->message : "");
    g_autofree char *text = read_all(merged);
    ck_assert_str_eq(text, whole);

    /* A shard missing, one twice, one of another batch. */
    ck_assert(!tps_batch_merge(order, 3, merged, &error));
    ck_assert_msg(strstr(error->message, "shard 1/4 is missing") != NULL, "%s", error->message);
    g_clear_error(&error);
    const char *twice[] = {parts[0], parts[1], parts[2], parts[2]};
    ck_assert(!tps_batch_merge(twice, 4, merged, &error));
    ck_assert_msg(strstr(error->message, "are both shard 2/4") != NULL, "%s", error->message);
    g_clear_error(&error);
    g_autoptr(TpsBatch) other = make_batch("another input");
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.output = parts[3];
    opts.format = format;
    opts.shard_index = 3;
    opts.shard_count = n;
    opts.progress = TPS_PROGRESS_NEVER;
    ck_assert(tps_batch_run(other, fake_eval, NULL, &opts, &error));
    ck_assert(!tps_batch_merge(order, n, merged, &error));
    ck_assert_msg(strstr(error->message, "another batch") != NULL, "%s", error->message);
    g_clear_error(&error);
    /* The final text is unchanged by the refusals. */
    g_autofree char *after = read_all(merged);
    ck_assert_str_eq(after, whole);
    for (guint i = 0; i < n; i++)
        g_free(parts[i]);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_parse_shard)
{
    guint i, n;
    ck_assert(tps_batch_parse_shard("0/1", &i, &n, NULL) && i == 0 && n == 1);
    ck_assert(tps_batch_parse_shard("7/8", &i, &n, NULL) && i == 7 && n == 8);
    static const char *const bad[] = {"8/8", "1", "1/0", "-1/4", "a/b", "1/2/3", "", "1/"};
    for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
        g_autoptr(GError) error = NULL;
        ck_assert_msg(!tps_batch_parse_shard(bad[k], &i, &n, &error), "%s", bad[k]);
        ck_assert(strstr(error->message, "--shard takes I/N") != NULL);
    }
}
END_TEST

/* The progress bar: on standard error only when asked for (or when it is
 * a terminal, which it is not here), never in the output. */
START_TEST(test_progress)
{
    const TpsProgressMode mode = _i == 0 ? TPS_PROGRESS_AUTO : TPS_PROGRESS_ALWAYS;
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autofree char *err_path = g_build_filename(dir, "stderr", NULL);
    g_autofree char *path = g_build_filename(dir, "out", NULL);
    g_autoptr(TpsBatch) b = make_batch("in");
    g_unsetenv("TPSIM_PROGRESS");
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert(saved >= 0 && fd >= 0);
    dup2(fd, STDERR_FILENO);
    close(fd);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.output = path;
    opts.progress = mode;
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_batch_run(b, fake_eval, NULL, &opts, &error);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ck_assert(ok);
    g_autofree char *err = read_all(err_path);
    g_autofree char *out = read_all(path);
    ck_assert(strstr(out, "points/s") == NULL);
    if (mode == TPS_PROGRESS_AUTO) {
        ck_assert_str_eq(err, "");
    } else {
        ck_assert_msg(strstr(err, "23/23 points") != NULL, "%s", err);
        ck_assert(strstr(err, "points/s") != NULL);
        ck_assert(strstr(err, "1/23 points") != NULL);
    }
    tps_test_remove_dir(dir);
}
END_TEST

/* Rows handed back in point order, the shard's only. */
START_TEST(test_collect)
{
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autoptr(GPtrArray) rows =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_batch_collected_free);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 3;
    opts.shard_index = 1;
    opts.shard_count = 2;
    opts.collect = rows;
    opts.progress = TPS_PROGRESS_NEVER;
    g_autoptr(GError) error = NULL;
    ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
    guint expected = 0, last = 0;
    for (guint i = 1; i < N_POINTS; i += 2)
        expected += i % 5 == 4 ? 1 : 2;
    ck_assert_uint_eq(rows->len, expected);
    for (guint k = 0; k < rows->len; k++) {
        const TpsBatchCollected *c = g_ptr_array_index(rows, k);
        ck_assert_uint_eq(c->point->index % 2, 1);
        ck_assert_uint_ge(c->point->index, last);
        last = c->point->index;
        ck_assert((c->row.skipped != NULL) == (c->point->index % 5 == 4));
    }
}
END_TEST

/* The final file is sorted outside memory when the rows are many: runs
 * cut at a few points' rows (the test hook TPSIM_BATCH_SORT_RUN) give the
 * bytes of the sort in memory, for a whole run, a resumed one and merged
 * shards (the merge sorts the same way), with more runs than the merge
 * has ever seen at once; nothing is left next to the output. */
#define MANY_POINTS 600

START_TEST(test_external_sort)
{
    const TpsFormat format = _i == 0 ? TPS_FORMAT_CSV : TPS_FORMAT_JSON;
    g_autofree char *dir = tps_test_tmpdir("batch-sort");
    g_autoptr(TpsBatch) b = make_batch_n("many", MANY_POINTS);
    g_unsetenv("TPSIM_BATCH_SORT_RUN");
    g_autofree char *in_memory = run_to(b, dir, "mem", 2, format);
    /* The rows are in point order: the point numbers never fall. */
    guint64 last = 0, rows = 0;
    for (const char *line = strchr(in_memory, '\n') + 1; *line; line = strchr(line, '\n') + 1) {
        const char *num = g_str_has_prefix(line, "{\"point\":") ? line + 9 : line;
        if (g_ascii_isdigit(*num)) {
            const guint64 index = g_ascii_strtoull(num, NULL, 10);
            ck_assert_uint_ge(index, last);
            last = index;
            rows++;
        }
    }
    ck_assert_uint_eq(last, MANY_POINTS - 1);
    ck_assert_uint_gt(rows, MANY_POINTS);

    g_setenv("TPSIM_BATCH_SORT_RUN", "3", TRUE);
    g_autofree char *external = run_to(b, dir, "ext", 2, format);
    /* Not ck_assert_str_eq: the texts are too long for its message. */
    ck_assert_msg(strcmp(external, in_memory) == 0, "runs of 3: not the bytes of the sort in memory");

    /* Resumed: the partial file's rows go through the sort too. */
    g_autofree char *path = g_build_filename(dir, "resumed", NULL);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 2;
    opts.output = path;
    opts.format = format;
    opts.progress = TPS_PROGRESS_NEVER;
    EvalState st = {.fail_at = 311};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_batch_run(b, fake_eval, &st, &opts, &error));
    g_clear_error(&error);
    opts.resume = TRUE;
    ck_assert_msg(tps_batch_run(b, fake_eval, NULL, &opts, &error), "%s",
                  error ? error->message : "");
    g_autofree char *resumed = read_all(path);
    ck_assert_msg(strcmp(resumed, in_memory) == 0, "resumed: not the bytes of the sort in memory");

    /* Shards, merged with runs of 2 rows. */
    char *parts[3];
    for (guint i = 0; i < 3; i++) {
        parts[i] = g_strdup_printf("%s/part%u", dir, i);
        tps_batch_options_init(&opts);
        opts.output = parts[i];
        opts.format = format;
        opts.shard_index = i;
        opts.shard_count = 3;
        opts.progress = TPS_PROGRESS_NEVER;
        ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
    }
    g_setenv("TPSIM_BATCH_SORT_RUN", "2", TRUE);
    g_autofree char *merged = g_build_filename(dir, "merged", NULL);
    const char *order[] = {parts[1], parts[2], parts[0]};
    ck_assert_msg(tps_batch_merge(order, 3, merged, &error), "%s", error ? error->message : "");
    g_autofree char *text = read_all(merged);
    ck_assert_msg(strcmp(text, in_memory) == 0, "merged: not the bytes of the sort in memory");
    g_unsetenv("TPSIM_BATCH_SORT_RUN");

    /* Only the outputs and their sidecars are in the folder: no run
     * files, no partial, no lock. */
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    guint files = 0;
    for (const char *name; (name = g_dir_read_name(d)); files++)
        ck_assert_msg(!g_str_has_prefix(name, ".") && !g_str_has_suffix(name, ".partial"),
                      "left: %s", name);
    ck_assert_uint_eq(files, 14);
    for (guint i = 0; i < 3; i++)
        g_free(parts[i]);
    tps_test_remove_dir(dir);
}
END_TEST

/* rows_func sees every row of the run once, in point order, whatever the
 * threads, on a batch wider than the window of points in flight. */
typedef struct {
    guint calls, rows;
    gint last;
    gboolean in_order;
} Seen;

static void
see_rows(const TpsBatchPoint *point, const GArray *rows, gpointer data)
{
    Seen *seen = data;
    seen->in_order &= (gint)point->index > seen->last;
    seen->last = (gint)point->index;
    seen->calls++;
    seen->rows += rows->len;
}

START_TEST(test_rows_in_order)
{
    g_autoptr(TpsBatch) b = make_batch_n("many", MANY_POINTS);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 3;
    opts.progress = TPS_PROGRESS_NEVER;
    Seen seen = {.last = -1, .in_order = TRUE};
    opts.rows_func = see_rows;
    opts.rows_data = &seen;
    g_autoptr(GError) error = NULL;
    ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
    ck_assert(seen.in_order);
    ck_assert_uint_eq(seen.calls, MANY_POINTS);
    /* Two rows a point, one every fifth point: 600 - 120. */
    ck_assert_uint_eq(seen.rows, 2 * MANY_POINTS - MANY_POINTS / 5);
}
END_TEST

/* A lazy batch (scenarios built when evaluated) writes the bytes of the
 * same batch with its scenarios stored. */
static void
fill_point(guint index, TpsScenario *sc, gpointer data)
{
    g_atomic_int_inc((gint *)data);
    scenario_fill(sc);
    sc->tp = 1u << (index % 4);
}

START_TEST(test_lazy_points)
{
    g_autofree char *dir = tps_test_tmpdir("batch-lazy");
    g_autoptr(TpsBatch) b = make_batch("in");
    gint built = 0;
    static const char *const columns[] = {"parallel.tp", "model.seq_len", NULL};
    g_autoptr(TpsBatch) lazy = tps_batch_new_lazy("in", columns, fill_point, &built);
    for (guint i = 0; i < N_POINTS; i++) {
        const TpsBatchPoint *p = g_ptr_array_index(b->points, i);
        tps_batch_add(lazy, p->key, NULL, (const char *const *)p->label_values);
    }
    g_autofree char *eager_text = run_to(b, dir, "eager", 2, _i ? TPS_FORMAT_JSON : TPS_FORMAT_CSV);
    g_autofree char *lazy_text = run_to(lazy, dir, "lazy", 2, _i ? TPS_FORMAT_JSON : TPS_FORMAT_CSV);
    ck_assert_str_eq(lazy_text, eager_text);
    /* Once per point, and once for the head. */
    ck_assert_int_eq(built, N_POINTS + 1);
    tps_test_remove_dir(dir);
}
END_TEST

/* `text` with the first `old` replaced by `new` (newly allocated); the
 * offset of the replacement into *at when `at` is not NULL. */
static char *
replace_first(const char *text, const char *old, const char *new, gsize *at)
{
    const char *hit = strstr(text, old);
    ck_assert_msg(hit != NULL, "no '%s'", old);
    if (at)
        *at = (gsize)(hit - text);
    return g_strdup_printf("%.*s%s%s", (int)(hit - text), text, new, hit + strlen(old));
}

static guint
line_of(const char *text, gsize at)
{
    guint line = 1;
    for (gsize i = 0; i < at; i++)
        line += text[i] == '\n';
    return line;
}

/* The first row line of point `index` (with its newline) in a CSV file
 * or partial file, newly allocated. */
static char *
row_of(const char *text, guint index)
{
    g_autofree char *start = g_strdup_printf("\n%u,", index);
    const char *hit = strstr(text, start);
    ck_assert_msg(hit != NULL, "no row of point %u", index);
    hit++;
    return g_strndup(hit, (gsize)(strchr(hit, '\n') - hit) + 1);
}

/* `row` (a CSV line) with its step_time_s cell (the `col`-th) made nan. */
static char *
row_with_nan(const char *row, guint col)
{
    g_auto(GStrv) cells = g_strsplit(row, ",", -1);
    ck_assert_uint_lt(col, g_strv_length(cells));
    g_free(cells[col]);
    cells[col] = g_strdup("nan");
    return g_strjoinv(",", cells);
}

/* The index of column `name` in the column line, the first line of a
 * final file (`partial` FALSE) or the second of a partial file. */
static guint
column_index(const char *text, gboolean partial, const char *name)
{
    const char *columns = partial ? strchr(text, '\n') + 1 : text;
    g_autofree char *line = g_strndup(columns, strcspn(columns, "\n"));
    g_auto(GStrv) cells = g_strsplit(line, ",", -1);
    for (guint i = 0; cells[i]; i++)
        if (strcmp(cells[i], name) == 0)
            return i;
    ck_abort_msg("no column %s", name);
    return 0;
}

/* A partial file changed by hand: another point's rows under a #done, a
 * #done with no rows, a block twice, a stray line, a nan cell. --resume
 * refuses it at the line, says what is wrong, writes no final file and
 * leaves the partial file as it was. */
START_TEST(test_resume_checks_rows)
{
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *path = g_build_filename(dir, "out.csv", NULL);
    g_autofree char *partial = g_strconcat(path, ".partial", NULL);
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 1; /* points 0..11 done */
    opts.output = path;
    opts.progress = TPS_PROGRESS_NEVER;
    EvalState st = {.fail_at = 12};
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_batch_run(b, fake_eval, &st, &opts, &error));
    g_clear_error(&error);
    g_autofree char *text = read_all(partial);
    gsize at = 0;
    char *bad = NULL;
    const char *what = NULL;
    switch (_i) {
    case 0: /* point 3's rows marked as point 13's */
        bad = replace_first(text, "#done 3\n", "#done 13\n", &at);
        what = "#done 13 after the rows of point 3";
        break;
    case 1: /* a marker without rows */
        bad = replace_first(text, "#done 11\n", "#done 11\n#done 13\n", &at);
        at += strlen("#done 11\n");
        what = "#done 13 has no rows";
        break;
    case 2: { /* point 5's block twice */
        const char *from = strstr(text, "#done 4\n") + strlen("#done 4\n");
        const char *to = strstr(text, "#done 5\n") + strlen("#done 5\n");
        at = strlen(text);
        bad = g_strdup_printf("%s%.*s", text, (int)(to - from), from);
        what = "a row of point 5, which a #done line above marks done already";
        break;
    }
    case 3: /* a stray line */
        bad = replace_first(text, "#done 2\n", "#done 2\nhello\n", &at);
        at += strlen("#done 2\n");
        what = "not a whole row";
        break;
    default: { /* a nan cell */
        g_autofree char *row = row_of(text, 2);
        g_autofree char *nan_row = row_with_nan(row, column_index(text, TRUE, "step_time_s"));
        bad = replace_first(text, row, nan_row, &at);
        what = "is 'nan', not a finite number";
        break;
    }
    }
    ck_assert(g_file_set_contents(partial, bad, -1, NULL));
    opts.resume = TRUE;
    ck_assert(!tps_batch_run(b, fake_eval, NULL, &opts, &error));
    g_autofree char *where = g_strdup_printf("%s:%u: ", partial, line_of(bad, at));
    ck_assert_msg(g_str_has_prefix(error->message, where), "%s (not at %s)", error->message,
                  where);
    ck_assert_msg(strstr(error->message, what) != NULL, "%s", error->message);
    ck_assert(!g_file_test(path, G_FILE_TEST_EXISTS));
    g_autofree char *after = read_all(partial);
    ck_assert_str_eq(after, bad);
    g_free(bad);
    tps_test_remove_dir(dir);
}
END_TEST

/* A part changed by hand: a row twice, a point missing, a nan cell, the
 * last row cut short, no rows. The merge is refused naming the shard and
 * the point, and writes nothing. */
START_TEST(test_merge_checks_rows)
{
    g_autofree char *dir = tps_test_tmpdir("batch");
    g_autoptr(TpsBatch) b = make_batch("in");
    char *parts[2];
    for (guint i = 0; i < 2; i++) {
        parts[i] = g_strdup_printf("%s/p%u.csv", dir, i);
        TpsBatchOptions opts;
        tps_batch_options_init(&opts);
        opts.output = parts[i];
        opts.shard_index = i;
        opts.shard_count = 2;
        opts.progress = TPS_PROGRESS_NEVER;
        g_autoptr(GError) error = NULL;
        ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
    }
    g_autofree char *text = read_all(parts[1]); /* points 1, 3, ..., 21 */
    char *bad = NULL;
    const char *what = NULL;
    switch (_i) {
    case 0: { /* a row twice */
        g_autofree char *row = row_of(text, 3);
        g_autofree char *twice = g_strconcat(row, row, NULL);
        bad = replace_first(text, row, twice, NULL);
        what = "shard 1/2, point 3: a second row of strategy 'megatron'";
        break;
    }
    case 1: { /* point 5 missing (it has two rows) */
        g_autofree char *row = row_of(text, 5);
        g_autofree char *once = replace_first(text, row, "", NULL);
        g_autofree char *row2 = row_of(once, 5);
        bad = replace_first(once, row2, "", NULL);
        what = "shard 1/2, point 5: missing";
        break;
    }
    case 2: { /* a nan cell */
        g_autofree char *row = row_of(text, 7);
        g_autofree char *nan_row = row_with_nan(row, column_index(text, FALSE, "step_time_s"));
        bad = replace_first(text, row, nan_row, NULL);
        what = "shard 1/2, point 7: cell";
        break;
    }
    case 3: { /* the last row cut short, at a cell */
        bad = g_strdup(text);
        char *last = g_strrstr_len(bad, (gssize)strlen(bad) - 1, "\n") + 1;
        strcpy(strchr(last, ',') + 1, "1\n");
        what = "shard 1/2, point 21: not a whole row";
        break;
    }
    default: /* the column line alone */
        bad = g_strndup(text, (gsize)(strchr(text, '\n') - text) + 1);
        what = "shard 1/2, point 1: missing (the part has no rows)";
        break;
    }
    ck_assert(g_file_set_contents(parts[1], bad, -1, NULL));
    g_autofree char *merged = g_build_filename(dir, "merged.csv", NULL);
    g_autoptr(GError) error = NULL;
    ck_assert(!tps_batch_merge((const char *const *)parts, 2, merged, &error));
    ck_assert_msg(strstr(error->message, what) != NULL, "%s", error->message);
    g_autofree char *where = g_strdup_printf("merge: %s:", parts[1]);
    ck_assert_msg(g_str_has_prefix(error->message, where), "%s", error->message);
    ck_assert(!g_file_test(merged, G_FILE_TEST_EXISTS));
    g_free(bad);
    for (guint i = 0; i < 2; i++)
        g_free(parts[i]);
    tps_test_remove_dir(dir);
}
END_TEST

/* A run whose points wait at a gate, to be running while another run
 * tries its partial file. */
typedef struct {
    GMutex lock;
    GCond cond;
    gboolean open;
    gint started;
} Gate;

static gboolean
gated_eval(const TpsBatchPoint *p, GArray *rows, gpointer user, GError **error)
{
    Gate *gate = user;
    g_atomic_int_set(&gate->started, 1);
    g_mutex_lock(&gate->lock);
    while (!gate->open)
        g_cond_wait(&gate->cond, &gate->lock);
    g_mutex_unlock(&gate->lock);
    return fake_eval(p, rows, NULL, error);
}

typedef struct {
    const TpsBatch *batch;
    TpsBatchOptions *opts;
    Gate *gate;
} GatedRun;

static gpointer
gated_run(gpointer data)
{
    GatedRun *r = data;
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_batch_run(r->batch, gated_eval, r->gate, r->opts, &error);
    return GINT_TO_POINTER(ok);
}

/* While a run writes OUT.partial, a second one (resuming or not) is
 * refused, naming the running one's pid, and does not tell to resume a
 * stopped run; the first then ends as if alone, its lock gone. */
START_TEST(test_partial_locked)
{
    g_autofree char *dir = tps_test_tmpdir("batch-lock");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *expected = run_to(b, dir, "alone.csv", 1, TPS_FORMAT_CSV);
    g_autofree char *path = g_build_filename(dir, "out.csv", NULL);
    g_autofree char *partial = g_strconcat(path, ".partial", NULL);
    Gate gate = {0};
    g_mutex_init(&gate.lock);
    g_cond_init(&gate.cond);
    TpsBatchOptions first;
    tps_batch_options_init(&first);
    first.jobs = 1;
    first.output = path;
    first.progress = TPS_PROGRESS_NEVER;
    GatedRun r = {b, &first, &gate};
    GThread *thread = g_thread_new("first", gated_run, &r);
    while (!g_atomic_int_get(&gate.started))
        g_usleep(1000);
    g_autofree char *in_use =
        g_strdup_printf("%s is in use by a running tpsim (pid %ld)", partial, (long)getpid());
    for (guint resume = 0; resume < 2; resume++) {
        TpsBatchOptions second;
        tps_batch_options_init(&second);
        second.output = path;
        second.resume = resume;
        second.progress = TPS_PROGRESS_NEVER;
        g_autoptr(GError) error = NULL;
        ck_assert(!tps_batch_run(b, fake_eval, NULL, &second, &error));
        ck_assert_msg(strstr(error->message, in_use) != NULL, "%s", error->message);
        ck_assert_msg(strstr(error->message, "was stopped") == NULL, "%s", error->message);
    }
    g_mutex_lock(&gate.lock);
    gate.open = TRUE;
    g_cond_broadcast(&gate.cond);
    g_mutex_unlock(&gate.lock);
    ck_assert(GPOINTER_TO_INT(g_thread_join(thread)));
    g_autofree char *text = read_all(path);
    ck_assert_str_eq(text, expected);
    g_autofree char *lock = g_strconcat(partial, ".lock", NULL);
    ck_assert(!g_file_test(lock, G_FILE_TEST_EXISTS));
    ck_assert(!g_file_test(partial, G_FILE_TEST_EXISTS));
    g_mutex_clear(&gate.lock);
    g_cond_clear(&gate.cond);
    tps_test_remove_dir(dir);
}
END_TEST

/* A ranked file (a search's): the rows by their rank keys, here the
 * longer step first and the skipped rows last, each with its rank. */
static char *
fake_rank_key(const TpsBatchPoint *point, const TpsBatchRow *row, gpointer data)
{
    (void)data;
    if (row->skipped != NULL)
        return g_strdup_printf("f%08x", point->index);
    return g_strdup_printf("0%08x", (guint)(1000000 - row->result.step_time_s * 4));
}

static void
ranked_options(TpsBatchOptions *opts, const char *path)
{
    tps_batch_options_init(opts);
    opts->output = path;
    opts->progress = TPS_PROGRESS_NEVER;
    opts->rank_key = fake_rank_key;
}

/* The ranked file is a plain table with a first column `rank` (1, 2,
 * ...), its rows in rank order, the point column kept; a resumed run and
 * merged shards give its bytes, and the sidecar's. */
START_TEST(test_ranked)
{
    const TpsFormat format = _i == 0 ? TPS_FORMAT_CSV : TPS_FORMAT_JSON;
    g_autofree char *dir = tps_test_tmpdir("batch-rank");
    g_autoptr(TpsBatch) b = make_batch("in");
    g_autofree char *whole = g_build_filename(dir, "whole", NULL);
    TpsBatchOptions opts;
    ranked_options(&opts, whole);
    opts.format = format;
    opts.jobs = 3;
    g_autoptr(GError) error = NULL;
    ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
    g_autofree char *text = read_all(whole);
    g_autofree char *whole_batch = g_strconcat(whole, ".batch", NULL);
    g_autofree char *sidecar = read_all(whole_batch);
    ck_assert_msg(strstr(sidecar, " format ") != NULL && strstr(sidecar, " ranked\n") != NULL,
                  "%s", sidecar);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    const guint first = 1; /* after the column line, or the JSON head */
    if (format == TPS_FORMAT_CSV)
        ck_assert(g_str_has_prefix(lines[0], "rank,point,parallel.tp,model.seq_len,"));
    /* Point 22's te-a100 row (the longest step) first, the skipped
     * points last, in point order. */
    const char *best = format == TPS_FORMAT_CSV ? "1,22,4,23552,t,hw,te-a100,"
                                                : "{\"rank\":1,\"point\":22,";
    ck_assert_msg(g_str_has_prefix(lines[first], best), "%s", lines[first]);
    const guint n_rows = 2 * N_POINTS - N_POINTS / 5;
    for (guint r = 0; r < n_rows; r++) {
        g_autofree char *rank = format == TPS_FORMAT_CSV ? g_strdup_printf("%u,", r + 1)
                                                         : g_strdup_printf("{\"rank\":%u,", r + 1);
        ck_assert_msg(g_str_has_prefix(lines[first + r], rank), "%s", lines[first + r]);
    }
    const char *last = format == TPS_FORMAT_CSV ? "42,19,8,20480,t,hw,," : "{\"rank\":42,\"point\":19,";
    ck_assert_msg(g_str_has_prefix(lines[first + n_rows - 1], last), "%s",
                  lines[first + n_rows - 1]);

    /* Killed at point 12, resumed. */
    g_autofree char *resumed = g_build_filename(dir, "resumed", NULL);
    ranked_options(&opts, resumed);
    opts.format = format;
    opts.jobs = 1;
    EvalState st = {.fail_at = 12};
    ck_assert(!tps_batch_run(b, fake_eval, &st, &opts, &error));
    g_clear_error(&error);
    opts.resume = TRUE;
    opts.jobs = 2;
    ck_assert_msg(tps_batch_run(b, fake_eval, NULL, &opts, &error), "%s",
                  error ? error->message : "");
    g_autofree char *resumed_text = read_all(resumed);
    ck_assert_str_eq(resumed_text, text);

    /* Shards in any order, merged (sort runs of 2 rows). */
    char *parts[3];
    for (guint i = 0; i < 3; i++) {
        parts[i] = g_strdup_printf("%s/part%u", dir, i);
        ranked_options(&opts, parts[i]);
        opts.format = format;
        opts.shard_index = i;
        opts.shard_count = 3;
        ck_assert(tps_batch_run(b, fake_eval, NULL, &opts, &error));
    }
    g_setenv("TPSIM_BATCH_SORT_RUN", "2", TRUE);
    g_autofree char *merged = g_build_filename(dir, "merged", NULL);
    const char *order[] = {parts[2], parts[0], parts[1]};
    ck_assert_msg(tps_batch_merge(order, 3, merged, &error), "%s", error ? error->message : "");
    g_unsetenv("TPSIM_BATCH_SORT_RUN");
    g_autofree char *merged_text = read_all(merged);
    ck_assert_str_eq(merged_text, text);
    g_autofree char *merged_batch = g_strconcat(merged, ".batch", NULL);
    g_autofree char *merged_sidecar = read_all(merged_batch);
    ck_assert_str_eq(merged_sidecar, sidecar);
    /* A part whose sidecar is gone is refused, saying so. */
    g_autofree char *part_batch = g_strconcat(parts[1], ".batch", NULL);
    ck_assert(g_unlink(part_batch) == 0);
    ck_assert(!tps_batch_merge(order, 3, merged, &error));
    ck_assert_msg(strstr(error->message, "part1.batch") != NULL, "%s", error->message);
    for (guint i = 0; i < 3; i++)
        g_free(parts[i]);
    tps_test_remove_dir(dir);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("runner");
    tcase_add_test(tc, test_file_shape);
    tcase_add_loop_test(tc, test_threads_same_bytes, 0, 2);
    tcase_add_loop_test(tc, test_resume_after_kill, 0, 6);
    tcase_add_test(tc, test_resume_other_batch);
    tcase_add_loop_test(tc, test_shard_merge, 0, 2);
    tcase_add_test(tc, test_parse_shard);
    tcase_add_loop_test(tc, test_progress, 0, 2);
    tcase_add_test(tc, test_collect);
    tcase_add_loop_test(tc, test_external_sort, 0, 2);
    tcase_add_test(tc, test_rows_in_order);
    tcase_add_loop_test(tc, test_lazy_points, 0, 2);
    tcase_add_loop_test(tc, test_resume_checks_rows, 0, 5);
    tcase_add_loop_test(tc, test_merge_checks_rows, 0, 5);
    tcase_add_test(tc, test_partial_locked);
    tcase_add_loop_test(tc, test_ranked, 0, 2);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
