/* Fuzz target: arbitrary bytes as what the batch runner reads back
 * (plan/batch.h): the rows of a partial file that --resume continues, and
 * a part that tpsim merge joins. Any input must either be refused with a
 * TPS_ERROR message, writing no final file, or give a final file that
 * is whole: a merge of it alone gives its own bytes. Nothing may crash,
 * leak or emit a critical.
 *
 * The batch is a small synthetic one (5 points, two strategies, a skipped
 * row at every third point), evaluated without simulating. The input is
 * read (1) as the rows of its partial file after the batch's head, resumed;
 * (2) as a part, whole; (3) as the rows of a part after its column line
 * (both with the sidecar of a whole run); (4) as the rows of a ranked part
 * (a search's: "rank,point,..."), with the sidecar and rank keys of the
 * whole ranked run.
 * TPS_FUZZ_BATCH_SEEDS=DIR writes seed inputs for (1), (3) and (4) into
 * DIR: the rows of a partial file cut after point 2, of a whole run and of
 * a whole ranked run. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "plan/batch.h"
#include "sched/strategy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_POINTS 5

static gboolean
eval(const TpsBatchPoint *p, GArray *rows, gpointer user, GError **error)
{
    if (GPOINTER_TO_INT(user) == (gint)p->index + 1) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "stopped at %u", p->index);
        return FALSE;
    }
    if (p->index % 3 == 2) {
        tps_batch_rows_skip(rows, NULL, "does not divide");
        return TRUE;
    }
    static const char *const names[] = {"megatron", "te-a100"};
    for (guint s = 0; s < 2; s++) {
        TpsResult r = {0};
        r.strategy = tps_strategy_lookup(names[s]);
        r.step_time_s = p->index + s / 4.0;
        r.fits_memory = TRUE;
        tps_batch_rows_add(rows, &r);
    }
    return TRUE;
}

typedef struct {
    TpsBatch *batch;
    char *dir;
    char *partial_head; /* the first lines of the batch's partial file (CSV) */
    char *head;         /* the first line of its final file: the column line */
    char *sidecar;      /* the line of its final file's sidecar */
    char *ranked_head;    /* the column line of its ranked file ("rank,point,...") */
    char *ranked_sidecar; /* that file's sidecar: its line and the rows' keys */
} Fixture;

static char *
read_text(const char *path)
{
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return NULL;
    return text;
}

/* A ranked file's order: the longer step first, skipped rows last. */
static char *
rank_key(const TpsBatchPoint *point, const TpsBatchRow *row, gpointer data)
{
    (void)data;
    if (row->skipped != NULL)
        return g_strdup_printf("f%08x", point->index);
    return g_strdup_printf("0%08x", (guint)(1000000 - row->result.step_time_s * 4));
}

static gboolean
run_ranked(const Fixture *f, const char *path, GError **error)
{
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 1;
    opts.output = path;
    opts.progress = TPS_PROGRESS_NEVER;
    opts.rank_key = rank_key;
    return tps_batch_run(f->batch, eval, NULL, &opts, error);
}

/* Run the batch into `path` (stopped at point `stop` - 1 when not 0). */
static gboolean
run(const Fixture *f, const char *path, gboolean resume, gint stop, GError **error)
{
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    opts.jobs = 1;
    opts.output = path;
    opts.resume = resume;
    opts.progress = TPS_PROGRESS_NEVER;
    return tps_batch_run(f->batch, eval, GINT_TO_POINTER(stop), &opts, error);
}

static void
write_seeds(const Fixture *f, const char *seeds)
{
    g_autofree char *path = g_build_filename(f->dir, "seed.csv", NULL);
    g_autofree char *partial = g_strconcat(path, ".partial", NULL);
    g_autoptr(GError) error = NULL;
    g_assert(!run(f, path, FALSE, 4, &error));
    g_autofree char *text = read_text(partial);
    g_autofree char *out = g_build_filename(seeds, "partial-rows.csv", NULL);
    g_assert(g_file_set_contents(out, text + strlen(f->partial_head), -1, NULL));
    g_unlink(partial);
    g_clear_error(&error);
    g_assert(run(f, path, FALSE, 0, &error));
    g_autofree char *whole = read_text(path);
    g_autofree char *out2 = g_build_filename(seeds, "part-rows.csv", NULL);
    g_assert(g_file_set_contents(out2, whole + strlen(f->head), -1, NULL));
    g_unlink(path);
    g_assert(run_ranked(f, path, &error));
    g_autofree char *ranked = read_text(path);
    g_autofree char *out3 = g_build_filename(seeds, "ranked-part-rows.csv", NULL);
    g_assert(g_file_set_contents(out3, ranked + strlen(f->ranked_head), -1, NULL));
    g_autofree char *sidecar = g_strconcat(path, ".batch", NULL);
    g_unlink(path);
    g_unlink(sidecar);
}

static char *scratch;

static void
remove_scratch(void)
{
    g_rmdir(scratch);
}

static const Fixture *
fixture(void)
{
    static Fixture f;
    if (f.batch != NULL)
        return &f;
    static const char *const columns[] = {"model.seq_len", NULL};
    f.batch = tps_batch_new("fuzz", columns);
    TpsScenario sc;
    tps_scenario_init(&sc);
    sc.name = g_strdup("t");
    sc.hardware.name = g_strdup("hw");
    sc.hidden = 4096;
    sc.heads = 32;
    sc.layers = 32;
    sc.seq_len = 2048;
    for (guint i = 0; i < N_POINTS; i++) {
        g_autofree char *seq = g_strdup_printf("%u", 1024 * (i + 1));
        g_autofree char *key = g_strdup_printf("seq=%s", seq);
        const char *labels[] = {seq, NULL};
        tps_batch_add(f.batch, key, &sc, labels);
    }
    tps_scenario_clear(&sc);
    f.dir = g_dir_make_tmp("fuzz-batch-XXXXXX", NULL);
    g_assert(f.dir != NULL);
    scratch = f.dir;
    atexit(remove_scratch);
    g_autofree char *path = g_build_filename(f.dir, "whole.csv", NULL);
    g_assert(run(&f, path, FALSE, 0, NULL));
    g_autofree char *whole = read_text(path);
    g_unlink(path);
    f.head = g_strndup(whole, (gsize)(strchr(whole, '\n') - whole) + 1);
    g_autofree char *sidecar_path = g_strconcat(path, ".batch", NULL);
    f.sidecar = read_text(sidecar_path);
    g_assert(f.sidecar != NULL);
    g_unlink(sidecar_path);
    /* A run stopped at its first point: the partial file's head alone. */
    g_autofree char *partial_path = g_strconcat(path, ".partial", NULL);
    g_assert(!run(&f, path, FALSE, 1, NULL));
    f.partial_head = read_text(partial_path);
    g_assert(f.partial_head != NULL);
    g_unlink(partial_path);
    /* The ranked file of the batch: its column line and sidecar. */
    g_assert(run_ranked(&f, path, NULL));
    g_autofree char *ranked = read_text(path);
    f.ranked_head = g_strndup(ranked, (gsize)(strchr(ranked, '\n') - ranked) + 1);
    f.ranked_sidecar = read_text(sidecar_path);
    g_assert(f.ranked_sidecar != NULL);
    g_unlink(path);
    g_unlink(sidecar_path);
    const char *seeds = g_getenv("TPS_FUZZ_BATCH_SEEDS");
    if (seeds != NULL)
        write_seeds(&f, seeds);
    return &f;
}

/* A refusal is a located TPS_ERROR, and writes nothing. */
static void
refused(GError *error, const char *output)
{
    g_assert(error != NULL && error->domain == TPS_ERROR && error->message != NULL);
    g_assert(!g_file_test(output, G_FILE_TEST_EXISTS));
}

/* The cells of a CSV line (quotes kept), as the runner writes them. */
static GPtrArray *
cells_of(const char *line)
{
    GPtrArray *cells = g_ptr_array_new_with_free_func(g_free);
    const char *start = line;
    gboolean quoted = FALSE;
    for (const char *c = line;; c++) {
        if (*c == '"')
            quoted = !quoted;
        if ((*c == ',' && !quoted) || *c == '\0') {
            g_ptr_array_add(cells, g_strndup(start, (gsize)(c - start)));
            start = c + 1;
        }
        if (*c == '\0')
            break;
    }
    return cells;
}

/* A final file accepted is whole: the batch's head, then every point of
 * the batch once, in order, each row with the cells of the column line,
 * a strategy once per point, no number that is not finite. */
static void
assert_whole(const Fixture *f, const char *text)
{
    const gboolean ranked = g_str_has_prefix(text, "rank,");
    const char *head = ranked ? f->ranked_head : f->head;
    g_assert(g_str_has_prefix(text, head));
    const char *columns = head;
    g_autofree char *column_line = g_strndup(columns, strcspn(columns, "\n"));
    g_autoptr(GPtrArray) names = cells_of(column_line);
    g_auto(GStrv) lines = g_strsplit(text + strlen(head), "\n", -1);
    gint64 point = -1;
    g_autoptr(GHashTable) strategies = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    gboolean seen[N_POINTS] = {FALSE};
    for (guint i = 0; lines[i] && lines[i][0]; i++) {
        g_autoptr(GPtrArray) cells = cells_of(lines[i]);
        g_assert_cmpuint(cells->len, ==, names->len);
        if (ranked) {
            /* Ranks 1, 2, ...; each point and strategy once. */
            g_assert_cmpint(g_ascii_strtoll(g_ptr_array_index(cells, 0), NULL, 10), ==, i + 1);
            g_ptr_array_remove_index(cells, 0);
            const gint64 p = g_ascii_strtoll(g_ptr_array_index(cells, 0), NULL, 10);
            g_assert(p >= 0 && p < N_POINTS);
            seen[p] = TRUE;
            g_assert(g_hash_table_add(strategies,
                                      g_strdup_printf("%" G_GINT64_FORMAT " %s", p,
                                                      (const char *)g_ptr_array_index(cells, 4))));
            continue;
        }
        const gint64 p = g_ascii_strtoll(g_ptr_array_index(cells, 0), NULL, 10);
        if (p != point) {
            g_assert_cmpint(p, ==, point + 1);
            point = p;
            g_hash_table_remove_all(strategies);
        }
        g_assert(g_hash_table_add(strategies, g_strdup(g_ptr_array_index(cells, 4))));
        for (guint c = 0; c < cells->len; c++) {
            const char *cell = g_ptr_array_index(cells, c);
            g_assert(g_ascii_strcasecmp(cell, "nan") != 0 && g_ascii_strcasecmp(cell, "inf") != 0);
        }
    }
    if (ranked) {
        for (guint p = 0; p < N_POINTS; p++)
            g_assert(seen[p]);
        return;
    }
    g_assert_cmpint(point, ==, N_POINTS - 1);
}

/* `path`, a final file of the batch, whole, and merged alone: its own
 * bytes. */
static void
merges_to_itself(const Fixture *f, const char *path)
{
    g_autofree char *again = g_build_filename(f->dir, "again.csv", NULL);
    g_autoptr(GError) error = NULL;
    const char *parts[] = {path};
    g_assert(tps_batch_merge(parts, 1, again, &error));
    g_autofree char *again_batch = g_strconcat(again, ".batch", NULL);
    g_unlink(again_batch);
    g_autofree char *a = read_text(path);
    g_autofree char *b = read_text(again);
    g_assert(a != NULL && b != NULL && strcmp(a, b) == 0);
    assert_whole(f, a);
    g_unlink(again);
}

/* The input as a part (after `head`; its sidecar `sidecar`), merged
 * alone. */
static void
merge_part(const Fixture *f, const char *head, const char *sidecar, const uint8_t *data,
           size_t size)
{
    g_autofree char *part = g_build_filename(f->dir, "part.csv", NULL);
    g_autofree char *merged = g_build_filename(f->dir, "merged.csv", NULL);
    GString *text = g_string_new(head);
    g_string_append_len(text, (const char *)data, (gssize)size);
    g_assert(g_file_set_contents(part, text->str, (gssize)text->len, NULL));
    g_string_free(text, TRUE);
    g_autofree char *part_batch = g_strconcat(part, ".batch", NULL);
    g_autofree char *merged_batch = g_strconcat(merged, ".batch", NULL);
    g_assert(g_file_set_contents(part_batch, sidecar, -1, NULL));
    g_autoptr(GError) error = NULL;
    const char *parts[] = {part};
    if (tps_batch_merge(parts, 1, merged, &error))
        merges_to_itself(f, merged);
    else
        refused(error, merged);
    g_unlink(part);
    g_unlink(part_batch);
    g_unlink(merged);
    g_unlink(merged_batch);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) /* keep single runs fast */
        return 0;
    const Fixture *f = fixture();

    /* (1) The rows of a partial file, resumed. */
    g_autofree char *out = g_build_filename(f->dir, "out.csv", NULL);
    g_autofree char *partial = g_strconcat(out, ".partial", NULL);
    GString *text = g_string_new(f->partial_head);
    g_string_append_len(text, (const char *)data, (gssize)size);
    g_assert(g_file_set_contents(partial, text->str, (gssize)text->len, NULL));
    g_string_free(text, TRUE);
    g_autoptr(GError) error = NULL;
    if (run(f, out, TRUE, 0, &error)) {
        g_assert(!g_file_test(partial, G_FILE_TEST_EXISTS));
        merges_to_itself(f, out);
    } else {
        refused(error, out);
    }
    g_autofree char *out_batch = g_strconcat(out, ".batch", NULL);
    g_unlink(out);
    g_unlink(out_batch);
    g_unlink(partial);

    /* (2) A part as it is; (3) the rows of a part; (4) the rows of a
     * ranked part. */
    merge_part(f, "", f->sidecar, data, size);
    merge_part(f, f->head, f->sidecar, data, size);
    merge_part(f, f->ranked_head, f->ranked_sidecar, data, size);
    return 0;
}
