/* The batch runner (see batch.h).
 *
 * File shapes (docs/sweeps.md, "Output files"):
 *
 *   CSV:  # tpsim batch DIGEST shard S points N
 *         point,LABELS...,RESULT COLUMNS... (a skipped row: its reason in `skipped`)
 *         0,...                                     one line per row
 *   JSON: {"tool": "tpsim", "batch": "DIGEST", "shard": "S", "points": N, "rows": [
 *         {"point": 0, ...},                        one line per row
 *         {"point": 1, ...}
 *         ]}
 *
 * S is "all" or "I/N". The partial file holds the first line(s) of the
 * final one, then each finished point's row lines followed by a line
 * "#done INDEX"; JSON rows there have no trailing comma. Building the
 * final file from the partial one is a sort by point index: the same
 * bytes whatever the thread count, and shards merged give the same bytes
 * as one run (the shard field says "all" in both).
 */
#include "plan/batch.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "core/error.h"
#include "core/output.h"
#include "sched/strategy.h"

/* ---- points ---- */

static void
point_free(TpsBatchPoint *p)
{
    if (p == NULL)
        return;
    g_free(p->key);
    tps_scenario_clear(&p->scenario);
    g_strfreev(p->label_values);
    g_free(p);
}

TpsBatch *
tps_batch_new(const char *input_id, const char *const *label_columns)
{
    TpsBatch *b = g_new0(TpsBatch, 1);
    b->input_id = g_strdup(input_id);
    b->label_columns = label_columns ? g_strdupv((char **)label_columns) : g_new0(char *, 1);
    b->points = g_ptr_array_new_with_free_func((GDestroyNotify)point_free);
    return b;
}

void
tps_batch_free(TpsBatch *batch)
{
    if (batch == NULL)
        return;
    g_free(batch->input_id);
    g_strfreev(batch->label_columns);
    g_ptr_array_unref(batch->points);
    g_free(batch);
}

TpsBatchPoint *
tps_batch_add(TpsBatch *batch, const char *key, const TpsScenario *scenario,
              const char *const *label_values)
{
    g_return_val_if_fail(batch != NULL && key != NULL && scenario != NULL, NULL);
    guint n = g_strv_length(batch->label_columns);
    g_return_val_if_fail(n == 0 || (label_values && g_strv_length((char **)label_values) == n),
                         NULL);
    TpsBatchPoint *p = g_new0(TpsBatchPoint, 1);
    p->key = g_strdup(key);
    p->index = batch->points->len;
    tps_scenario_copy(&p->scenario, scenario);
    p->label_values = label_values ? g_strdupv((char **)label_values) : g_new0(char *, 1);
    g_ptr_array_add(batch->points, p);
    return p;
}

void
tps_batch_rows_add(GArray *rows, const TpsResult *result)
{
    TpsBatchRow row = {.result = *result, .skipped = NULL};
    g_array_append_val(rows, row);
}

void
tps_batch_rows_skip(GArray *rows, const TpsStrategy *strategy, const char *format, ...)
{
    TpsBatchRow row = {{0}};
    row.result.strategy = strategy;
    row.result.gain = NAN;
    va_list ap;
    va_start(ap, format);
    row.skipped = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_array_append_val(rows, row);
}

static void
row_clear(TpsBatchRow *row)
{
    g_clear_pointer(&row->skipped, g_free);
}

void
tps_batch_collected_free(TpsBatchCollected *collected)
{
    if (collected == NULL)
        return;
    row_clear(&collected->row);
    g_free(collected);
}

void
tps_batch_options_init(TpsBatchOptions *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->format = TPS_FORMAT_CSV;
    opts->progress = TPS_PROGRESS_AUTO;
}

char *
tps_batch_digest(const TpsBatch *batch)
{
    g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
    const char *id = batch->input_id ? batch->input_id : "";
    g_checksum_update(sum, (const guchar *)id, (gssize)strlen(id) + 1);
    for (guint i = 0; batch->label_columns[i]; i++)
        g_checksum_update(sum, (const guchar *)batch->label_columns[i],
                          (gssize)strlen(batch->label_columns[i]) + 1);
    g_checksum_update(sum, (const guchar *)"\n", 1);
    for (guint i = 0; i < batch->points->len; i++) {
        const TpsBatchPoint *p = g_ptr_array_index(batch->points, i);
        g_checksum_update(sum, (const guchar *)p->key, (gssize)strlen(p->key) + 1);
    }
    /* 16 bytes are plenty to tell batches apart and keep the line short. */
    return g_strndup(g_checksum_get_string(sum), 32);
}

gboolean
tps_batch_parse_shard(const char *text, guint *index, guint *count, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, "/", 3);
    guint64 i, n;
    if (g_strv_length(parts) != 2 ||
        !g_ascii_string_to_unsigned(parts[0], 10, 0, G_MAXUINT, &i, NULL) ||
        !g_ascii_string_to_unsigned(parts[1], 10, 1, G_MAXUINT, &n, NULL) || i >= n) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "--shard takes I/N with 0 <= I < N (I counts from 0, as Slurm's "
                    "SLURM_ARRAY_TASK_ID with --array=0-(N-1)), not '%s'",
                    text);
        return FALSE;
    }
    *index = (guint)i;
    *count = (guint)n;
    return TRUE;
}

/* ---- formatting rows ---- */

/* A CSV cell: quoted when it holds a comma, a quote or a line break (line
 * breaks become spaces: a row is one line). */
static void
csv_cell(GString *s, const char *text)
{
    if (strpbrk(text, ",\"\n\r") == NULL) {
        g_string_append(s, text);
        return;
    }
    g_string_append_c(s, '"');
    for (const char *c = text; *c; c++) {
        if (*c == '"')
            g_string_append(s, "\"\"");
        else if (*c == '\n' || *c == '\r')
            g_string_append_c(s, ' ');
        else
            g_string_append_c(s, *c);
    }
    g_string_append_c(s, '"');
}

/* The first line(s) of files of `batch` (with a newline). */
static char *
file_head(const TpsBatch *batch, const char *digest, const char *shard, TpsFormat format)
{
    const TpsBatchPoint *first =
        batch->points->len ? g_ptr_array_index(batch->points, 0) : NULL;
    GString *s = g_string_new(NULL);
    if (format == TPS_FORMAT_JSON) {
        g_string_append_printf(s,
                               "{\"tool\": \"tpsim\", \"batch\": \"%s\", \"shard\": \"%s\", "
                               "\"points\": %u, \"rows\": [\n",
                               digest, shard, batch->points->len);
        return g_string_free(s, FALSE);
    }
    g_string_append_printf(s, "# tpsim batch %s shard %s points %u\n", digest, shard,
                           batch->points->len);
    g_string_append(s, "point");
    for (guint i = 0; batch->label_columns[i]; i++) {
        g_string_append_c(s, ',');
        csv_cell(s, batch->label_columns[i]);
    }
    if (first != NULL) {
        g_string_append_c(s, ',');
        tps_result_csv_header(&first->scenario, s);
    }
    g_string_append_c(s, '\n');
    return g_string_free(s, FALSE);
}

/* A label value in JSON: a number when it reads as one. */
static void
json_label(JsonBuilder *jb, const char *name, const char *value)
{
    json_builder_set_member_name(jb, name);
    char *end = NULL;
    double v = g_ascii_strtod(value, &end);
    if (*value && end && *end == '\0' && isfinite(v)) {
        if (v == floor(v) && fabs(v) < 9e15)
            json_builder_add_int_value(jb, (gint64)v);
        else
            json_builder_add_double_value(jb, v);
    } else {
        json_builder_add_string_value(jb, value);
    }
}

/* The lines of a point's rows, each ending in a newline. */
static void
format_rows(const TpsBatch *batch, const TpsBatchPoint *p, const GArray *rows, TpsFormat format,
            GString *s)
{
    for (guint r = 0; r < rows->len; r++) {
        const TpsBatchRow *row = &g_array_index(rows, TpsBatchRow, r);
        if (format == TPS_FORMAT_JSON) {
            g_autoptr(JsonBuilder) jb = json_builder_new();
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "point");
            json_builder_add_int_value(jb, p->index);
            for (guint i = 0; batch->label_columns[i]; i++)
                json_label(jb, batch->label_columns[i], p->label_values[i]);
            g_autofree char *reason = row->skipped ? g_strdup(row->skipped) : NULL;
            if (reason)
                g_strdelimit(reason, "\n\r", ' ');
            tps_result_json_members(jb, &p->scenario, &row->result, reason);
            json_builder_end_object(jb);
            g_autoptr(JsonNode) root = json_builder_get_root(jb);
            g_autofree char *text = json_to_string(root, FALSE);
            g_string_append(s, text);
            g_string_append_c(s, '\n');
            continue;
        }
        g_string_append_printf(s, "%u", p->index);
        for (guint i = 0; batch->label_columns[i]; i++) {
            g_string_append_c(s, ',');
            csv_cell(s, p->label_values[i]);
        }
        g_string_append_c(s, ',');
        tps_result_csv_row(&p->scenario, &row->result, row->skipped, s);
        g_string_append_c(s, '\n');
    }
}

/* ---- the partial file ---- */

/* A point's rows as text, by index. */
typedef struct {
    guint index;
    guint seq; /* order of arrival: the rows of one point keep theirs */
    char *text;
} Block;

static void
block_clear(Block *b)
{
    g_free(b->text);
}

static gint
block_cmp(gconstpointer a, gconstpointer b)
{
    const Block *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Read the partial file `path` of the batch whose head is `head`: the
 * blocks of the points marked done, and the length of its complete part
 * (what a resume keeps). */
static gboolean
read_partial(const char *path, const char *head, guint n_points, GArray *blocks, gsize *keep,
             GError **error)
{
    g_autofree char *text = NULL;
    gsize len;
    if (!g_file_get_contents(path, &text, &len, error))
        return FALSE;
    gsize head_len = strlen(head);
    if (len < head_len || memcmp(text, head, head_len) != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: is not the partial output of this batch (another input, shard or "
                    "format); remove it, or run without --resume and another --output",
                    path);
        return FALSE;
    }
    gsize pos = head_len, block_start = head_len;
    *keep = head_len;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        if (nl == NULL)
            break; /* a line cut by the kill */
        gsize end = (gsize)(nl - text) + 1;
        if (strncmp(text + pos, "#done ", 6) == 0) {
            guint64 index;
            g_autofree char *num = g_strndup(text + pos + 6, end - pos - 7);
            if (!g_ascii_string_to_unsigned(num, 10, 0, n_points - 1, &index, NULL)) {
                g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                            "%s: bad point marker '%s' (the file was changed by hand?)", path,
                            num);
                return FALSE;
            }
            Block b = {(guint)index, blocks->len, g_strndup(text + block_start, pos - block_start)};
            g_array_append_val(blocks, b);
            block_start = end;
            *keep = end;
        }
        pos = end;
    }
    return TRUE;
}

/* ---- the run ---- */

typedef struct {
    const TpsBatch *batch;
    TpsBatchEval eval;
    gpointer user;
    TpsFormat format;
    gboolean collect;
    gint stop; /* atomic: an evaluation failed, skip the rest */
    GAsyncQueue *done;
} Run;

typedef struct {
    const TpsBatchPoint *point;
    char *text;    /* its row lines */
    GArray *rows;  /* of TpsBatchRow, when collected */
    GError *error; /* when the evaluation failed */
    gboolean stopped; /* not evaluated: another point failed first */
} Done;

static void
worker(gpointer data, gpointer user_data)
{
    Run *run = user_data;
    Done *d = g_new0(Done, 1);
    d->point = data;
    if (g_atomic_int_get(&run->stop)) {
        g_set_error(&d->error, TPS_ERROR, TPS_ERROR_INPUT, "stopped");
        d->stopped = TRUE;
        g_async_queue_push(run->done, d);
        return;
    }
    GArray *rows = g_array_new(FALSE, TRUE, sizeof(TpsBatchRow));
    if (!run->eval(d->point, rows, run->user, &d->error)) {
        if (d->error == NULL)
            g_set_error(&d->error, TPS_ERROR, TPS_ERROR_INPUT, "point %s: evaluation failed",
                        d->point->key);
        g_atomic_int_set(&run->stop, 1);
    } else {
        GString *s = g_string_new(NULL);
        format_rows(run->batch, d->point, rows, run->format, s);
        d->text = g_string_free(s, FALSE);
    }
    if (run->collect && d->error == NULL) {
        d->rows = rows;
    } else {
        for (guint i = 0; i < rows->len; i++)
            row_clear(&g_array_index(rows, TpsBatchRow, i));
        g_array_unref(rows);
    }
    g_async_queue_push(run->done, d);
}

static gboolean
progress_wanted(TpsProgressMode mode)
{
    const char *env = g_getenv("TPSIM_PROGRESS");
    if (mode == TPS_PROGRESS_ALWAYS || (env && strcmp(env, "1") == 0))
        return TRUE;
    return mode == TPS_PROGRESS_AUTO && isatty(STDERR_FILENO);
}

static void
progress_show(guint done, guint total, gint64 start_us, guint done_at_start)
{
    double s = (double)(g_get_monotonic_time() - start_us) / 1e6;
    double rate = s > 0 ? (double)(done - done_at_start) / s : 0;
    guint width = 30, fill = total ? (guint)((guint64)width * done / total) : width;
    char bar[64];
    for (guint i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    if (rate > 0 && done < total)
        fprintf(stderr, "\r[%s] %u/%u points, %.1f points/s, ETA %.0f s\033[K", bar, done, total,
                rate, (double)(total - done) / rate);
    else
        fprintf(stderr, "\r[%s] %u/%u points, %.1f points/s\033[K", bar, done, total, rate);
    fflush(stderr);
}

/* The final file: head, the blocks sorted by point, tail. */
static char *
final_text(const char *head, GArray *blocks, TpsFormat format)
{
    g_array_sort(blocks, block_cmp);
    GString *s = g_string_new(head);
    gboolean first = TRUE;
    for (guint i = 0; i < blocks->len; i++) {
        const char *t = g_array_index(blocks, Block, i).text;
        if (format != TPS_FORMAT_JSON) {
            g_string_append(s, t);
            continue;
        }
        /* Rows joined by ",\n"; each line of a block is one row. */
        for (const char *line = t; *line;) {
            const char *nl = strchr(line, '\n');
            gsize n = nl ? (gsize)(nl - line) : strlen(line);
            if (!first)
                g_string_append(s, ",\n");
            g_string_append_len(s, line, (gssize)n);
            first = FALSE;
            line += n + (nl != NULL);
        }
    }
    if (format == TPS_FORMAT_JSON)
        g_string_append(s, first ? "]}\n" : "\n]}\n");
    return g_string_free(s, FALSE);
}

gboolean
tps_batch_run(const TpsBatch *batch, TpsBatchEval eval, gpointer user,
              const TpsBatchOptions *opts, GError **error)
{
    g_return_val_if_fail(batch != NULL && eval != NULL && opts != NULL, FALSE);
    g_return_val_if_fail(opts->format == TPS_FORMAT_CSV || opts->format == TPS_FORMAT_JSON,
                         FALSE);
    const guint count = MAX(opts->shard_count, 1);
    g_return_val_if_fail(opts->shard_index < count, FALSE);
    const gboolean to_stdout = opts->output && strcmp(opts->output, "-") == 0;
    if (opts->resume && (opts->output == NULL || to_stdout)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "resume needs an output file (its partial file says what is done)");
        return FALSE;
    }

    g_autofree char *digest = tps_batch_digest(batch);
    g_autofree char *shard = count > 1 ? g_strdup_printf("%u/%u", opts->shard_index, count)
                                       : g_strdup("all");
    g_autofree char *head = file_head(batch, digest, shard, opts->format);

    /* What is done already (resume), and the partial file to append to. */
    g_autoptr(GArray) blocks = g_array_new(FALSE, TRUE, sizeof(Block));
    g_array_set_clear_func(blocks, (GDestroyNotify)block_clear);
    g_autofree char *partial = NULL;
    FILE *out = NULL;
    if (opts->output && !to_stdout) {
        partial = g_strconcat(opts->output, ".partial", NULL);
        gboolean exists = g_file_test(partial, G_FILE_TEST_EXISTS);
        if (exists && !opts->resume) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: a partial output is there (a run was stopped): continue it with "
                        "--resume, or remove it",
                        partial);
            return FALSE;
        }
        if (exists) {
            gsize keep = 0;
            if (!read_partial(partial, head, MAX(batch->points->len, 1), blocks, &keep, error))
                return FALSE;
            /* Drop what a kill cut (a line, or a point without its
             * marker), so that appending continues a clean file. */
            if (truncate(partial, (off_t)keep) != 0) {
                g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", partial,
                            g_strerror(errno));
                return FALSE;
            }
            out = fopen(partial, "a");
        } else {
            out = fopen(partial, "w");
            if (out)
                fputs(head, out), fflush(out);
        }
        if (out == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", partial, g_strerror(errno));
            return FALSE;
        }
    }

    /* The points to evaluate: the shard's, less those done. */
    g_autofree gboolean *is_done = g_new0(gboolean, MAX(batch->points->len, 1));
    for (guint i = 0; i < blocks->len; i++)
        is_done[g_array_index(blocks, Block, i).index] = TRUE;
    guint total = 0, todo = 0;
    for (guint i = 0; i < batch->points->len; i++)
        if (i % count == opts->shard_index) {
            total++;
            todo += !is_done[i];
        }

    Run run = {
        .batch = batch,
        .eval = eval,
        .user = user,
        .format = opts->format,
        .collect = opts->collect != NULL,
        .done = g_async_queue_new(),
    };
    guint jobs = opts->jobs ? opts->jobs : MAX(g_get_num_processors(), 1);
    GThreadPool *pool = NULL;
    if (todo > 0) {
        pool = g_thread_pool_new(worker, &run, (gint)MIN(jobs, todo), FALSE, NULL);
        for (guint i = 0; i < batch->points->len; i++)
            if (i % count == opts->shard_index && !is_done[i])
                g_thread_pool_push(pool, g_ptr_array_index(batch->points, i), NULL);
    }

    const gboolean progress = progress_wanted(opts->progress);
    const gint64 start = g_get_monotonic_time();
    const guint done_at_start = total - todo;
    GError *first_error = NULL;
    g_autofree Done **collected = g_new0(Done *, MAX(batch->points->len, 1));
    for (guint k = 0; k < todo; k++) {
        Done *d = g_async_queue_pop(run.done);
        if (d->error != NULL) {
            /* The first real failure; the points skipped after it say "stopped". */
            if (first_error == NULL && !d->stopped)
                first_error = g_steal_pointer(&d->error);
            g_clear_error(&d->error);
            g_free(d);
            continue;
        }
        if (out != NULL) {
            fputs(d->text, out);
            fprintf(out, "#done %u\n", d->point->index);
            fflush(out);
        }
        Block b = {d->point->index, blocks->len, g_steal_pointer(&d->text)};
        g_array_append_val(blocks, b);
        if (d->rows != NULL)
            collected[d->point->index] = d;
        else
            g_free(d);
        if (progress)
            progress_show(done_at_start + k + 1, total, start, done_at_start);
    }
    if (pool)
        g_thread_pool_free(pool, FALSE, TRUE);
    g_async_queue_unref(run.done);
    if (progress)
        fprintf(stderr, "\r\033[K"), fflush(stderr);

    gboolean ok = first_error == NULL;
    if (out != NULL && fclose(out) != 0 && ok) {
        g_set_error(&first_error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", partial, g_strerror(errno));
        ok = FALSE;
    }
    if (!ok)
        g_propagate_error(error, first_error);

    /* Hand the rows over in point order. */
    for (guint i = 0; i < batch->points->len; i++) {
        Done *d = collected[i];
        if (d == NULL)
            continue;
        for (guint r = 0; r < d->rows->len; r++) {
            TpsBatchCollected *c = g_new0(TpsBatchCollected, 1);
            c->point = d->point;
            c->row = g_array_index(d->rows, TpsBatchRow, r);
            if (ok)
                g_ptr_array_add(opts->collect, c);
            else
                tps_batch_collected_free(c);
        }
        g_array_unref(d->rows);
        g_free(d);
    }
    if (!ok)
        return FALSE;

    if (opts->output == NULL && opts->text == NULL)
        return TRUE;
    g_autofree char *text = final_text(head, blocks, opts->format);
    if (opts->output != NULL && !tps_write_atomic(opts->output, text, strlen(text), error))
        return FALSE;
    if (opts->text != NULL)
        *opts->text = g_steal_pointer(&text);
    if (partial != NULL)
        g_unlink(partial);
    return TRUE;
}

/* ---- merge ---- */

/* The first line of a batch file: digest, shard, points, format. */
static gboolean
parse_head(const char *path, const char *text, char **digest, guint *shard_index,
           guint *shard_count, guint *points, TpsFormat *format, gsize *head_len, GError **error)
{
    const char *nl = strchr(text, '\n');
    g_autofree char *line = g_strndup(text, nl ? (gsize)(nl - text) : strlen(text));
    char d[64] = "", s[32] = "";
    guint n = 0;
    if (sscanf(line, "# tpsim batch %63s shard %31s points %u", d, s, &n) == 3) {
        *format = TPS_FORMAT_CSV;
        const char *nl2 = nl ? strchr(nl + 1, '\n') : NULL;
        if (nl2 == NULL)
            goto bad;
        *head_len = (gsize)(nl2 - text) + 1; /* with the column names */
    } else if (sscanf(line,
                      "{\"tool\": \"tpsim\", \"batch\": \"%63[0-9a-f]\", \"shard\": \"%31[^\"]\", "
                      "\"points\": %u",
                      d, s, &n) == 3) {
        *format = TPS_FORMAT_JSON;
        if (nl == NULL)
            goto bad;
        *head_len = (gsize)(nl - text) + 1;
    } else {
        goto bad;
    }
    if (strcmp(s, "all") == 0) {
        *shard_index = 0;
        *shard_count = 1;
    } else if (!tps_batch_parse_shard(s, shard_index, shard_count, NULL)) {
        goto bad;
    }
    *digest = g_strdup(d);
    *points = n;
    return TRUE;
bad:
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                "%s:1:1: not the output of a tpsim sweep or search (its first line names the "
                "batch and the shard)",
                path);
    return FALSE;
}

/* The row lines of a part after its head, as blocks of one line each
 * keyed by their point. */
static gboolean
part_rows(const char *path, const char *text, gsize head_len, TpsFormat format, guint points,
          guint shard_index, guint shard_count, GArray *blocks, GError **error)
{
    guint line_no = format == TPS_FORMAT_CSV ? 3 : 2;
    for (const char *line = text + head_len; *line; line_no++) {
        const char *nl = strchr(line, '\n');
        gsize n = nl ? (gsize)(nl - line) : strlen(line);
        g_autofree char *row = g_strndup(line, n);
        line += n + (nl != NULL);
        if (format == TPS_FORMAT_JSON) {
            if (strcmp(row, "]}") == 0)
                break;
            if (g_str_has_suffix(row, ","))
                row[n - 1] = '\0';
        }
        const char *num = format == TPS_FORMAT_JSON && g_str_has_prefix(row, "{\"point\":")
                              ? row + 9
                              : row;
        char *end = NULL;
        guint64 index = g_ascii_strtoull(num, &end, 10);
        if (end == num || index >= points || index % shard_count != shard_index) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s:%u:1: not a row of shard %u/%u of this batch", path, line_no,
                        shard_index, shard_count);
            return FALSE;
        }
        Block b = {(guint)index, blocks->len, g_strconcat(row, "\n", NULL)};
        g_array_append_val(blocks, b);
    }
    return TRUE;
}

gboolean
tps_batch_merge(const char *const *parts, guint n_parts, const char *output, GError **error)
{
    g_return_val_if_fail(parts != NULL && output != NULL, FALSE);
    if (n_parts == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "merge: no parts given");
        return FALSE;
    }
    g_autofree char *digest0 = NULL, *head0 = NULL;
    guint count0 = 0, points0 = 0;
    TpsFormat format0 = TPS_FORMAT_CSV;
    g_autofree const char **seen = NULL;
    g_autoptr(GArray) blocks = g_array_new(FALSE, TRUE, sizeof(Block));
    g_array_set_clear_func(blocks, (GDestroyNotify)block_clear);
    for (guint p = 0; p < n_parts; p++) {
        g_autofree char *text = NULL;
        if (!g_file_get_contents(parts[p], &text, NULL, error))
            return FALSE;
        g_autofree char *digest = NULL;
        guint si, sc, points;
        TpsFormat format;
        gsize head_len;
        if (!parse_head(parts[p], text, &digest, &si, &sc, &points, &format, &head_len, error))
            return FALSE;
        if (p == 0) {
            digest0 = g_strdup(digest);
            count0 = sc;
            points0 = points;
            format0 = format;
            head0 = g_strndup(text, head_len);
            seen = g_new0(const char *, sc);
        } else if (strcmp(digest, digest0) != 0 || points != points0 || format != format0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "merge: %s:1:1: is the output of another batch than %s (batch %s, not "
                        "%s), or of another format",
                        parts[p], parts[0], digest, digest0);
            return FALSE;
        } else if (sc != count0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "merge: %s:1:1: is shard %u/%u, but %s is one of %u shards", parts[p],
                        si, sc, parts[0], count0);
            return FALSE;
        }
        if (seen[si] != NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "merge: %s and %s are both shard %u/%u", seen[si], parts[p], si, sc);
            return FALSE;
        }
        seen[si] = parts[p];
        /* The column names (CSV) must agree too. */
        if (format == TPS_FORMAT_CSV && p > 0) {
            const char *h0 = strchr(head0, '\n') + 1, *h = strchr(text, '\n') + 1;
            if (strncmp(h0, h, strlen(h0)) != 0) {
                g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                            "merge: %s:2:1: other columns than %s", parts[p], parts[0]);
                return FALSE;
            }
        }
        if (!part_rows(parts[p], text, head_len, format, points, si, sc, blocks, error))
            return FALSE;
    }
    for (guint i = 0; i < count0; i++)
        if (seen[i] == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "merge: shard %u/%u is missing (%u shards, %u given)", i, count0, count0,
                        n_parts);
            return FALSE;
        }
    /* The head of the whole batch: shard "all". */
    g_autofree char *head = NULL;
    if (format0 == TPS_FORMAT_JSON) {
        head = g_strdup_printf("{\"tool\": \"tpsim\", \"batch\": \"%s\", \"shard\": \"all\", "
                               "\"points\": %u, \"rows\": [\n",
                               digest0, points0);
    } else {
        const char *columns = strchr(head0, '\n') + 1;
        head = g_strdup_printf("# tpsim batch %s shard all points %u\n%s", digest0, points0,
                               columns);
    }
    g_autofree char *text = final_text(head, blocks, format0);
    return tps_write_atomic(output, text, strlen(text), error);
}
