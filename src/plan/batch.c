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
#include <stddef.h>
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
    g_strfreev(p->label_values);
    g_free(p);
}

static void
point_free_eager(TpsBatchPoint *p)
{
    if (p != NULL)
        tps_scenario_clear(&p->scenario);
    point_free(p);
}

TpsBatch *
tps_batch_new(const char *input_id, const char *const *label_columns)
{
    TpsBatch *b = g_new0(TpsBatch, 1);
    b->input_id = g_strdup(input_id);
    b->label_columns = label_columns ? g_strdupv((char **)label_columns) : g_new0(char *, 1);
    b->points = g_ptr_array_new_with_free_func((GDestroyNotify)point_free_eager);
    return b;
}

TpsBatch *
tps_batch_new_lazy(const char *input_id, const char *const *label_columns,
                   TpsBatchScenarioFunc fill, gpointer fill_data)
{
    TpsBatch *b = tps_batch_new(input_id, label_columns);
    g_ptr_array_set_free_func(b->points, (GDestroyNotify)point_free);
    b->fill = fill;
    b->fill_data = fill_data;
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
    g_return_val_if_fail(batch != NULL && key != NULL, NULL);
    g_return_val_if_fail((scenario == NULL) == (batch->fill != NULL), NULL);
    guint n = g_strv_length(batch->label_columns);
    g_return_val_if_fail(n == 0 || (label_values && g_strv_length((char **)label_values) == n),
                         NULL);
    TpsBatchPoint *p = scenario != NULL ? g_new0(TpsBatchPoint, 1)
                                        : g_malloc0(offsetof(TpsBatchPoint, scenario));
    p->key = g_strdup(key);
    p->index = batch->points->len;
    if (scenario != NULL)
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
    g_auto(TpsScenario) built = {0};
    const TpsScenario *first_sc = first ? &first->scenario : NULL;
    if (first != NULL && batch->fill != NULL) {
        batch->fill(0, &built, batch->fill_data);
        first_sc = &built;
    }
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
        tps_result_csv_header(first_sc, s);
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

/* ---- sorting the blocks outside memory ---- */

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

/* The final file is every block sorted by point. A search has tens of
 * thousands of rows of a few KB, so the blocks are not all kept: a Sorter
 * takes them in any order, sorts runs of at most SORT_RUN_BYTES in memory,
 * writes each run to an unnamed temporary file (created next to the
 * output and unlinked at once: nothing is left behind, even after a
 * kill), and merges the runs while the final file is written. Memory is
 * one run plus one block per run, whatever the number of rows. */
#define SORT_RUN_BYTES (4u << 20)

typedef struct {
    GArray *run;       /* Block: the run being filled */
    gsize run_bytes;
    guint max_blocks;  /* a run's blocks, 0: bounded by bytes only */
    GPtrArray *spills; /* FILE *: sorted runs */
    char *dir;         /* where the spills go */
    guint seq;
} Sorter;

typedef struct {
    FILE *f;
    Block b;
    gboolean have;
} SpillCursor;

static void
spill_close(gpointer f)
{
    fclose(f);
}

static void
sorter_init(Sorter *s, const char *output)
{
    memset(s, 0, sizeof *s);
    s->run = g_array_new(FALSE, TRUE, sizeof(Block));
    g_array_set_clear_func(s->run, (GDestroyNotify)block_clear);
    s->spills = g_ptr_array_new_with_free_func(spill_close);
    s->dir = output && strcmp(output, "-") != 0 ? g_path_get_dirname(output)
                                                 : g_strdup(g_get_tmp_dir());
    /* Test hook (docs/sweeps.md, "Batches"): TPSIM_BATCH_SORT_RUN=N cuts
     * the runs at N blocks, so that a small batch takes the path of a
     * large one. */
    const char *env = g_getenv("TPSIM_BATCH_SORT_RUN");
    guint64 n;
    if (env && g_ascii_string_to_unsigned(env, 10, 1, G_MAXUINT, &n, NULL))
        s->max_blocks = (guint)n;
}

static void
sorter_clear(Sorter *s)
{
    g_clear_pointer(&s->run, g_array_unref);
    g_clear_pointer(&s->spills, g_ptr_array_unref);
    g_clear_pointer(&s->dir, g_free);
}

/* A new spill file, unnamed. */
static FILE *
spill_new(const Sorter *s, GError **error)
{
    g_autofree char *tmpl = g_build_filename(s->dir, ".tpsim-sort-XXXXXX", NULL);
    int fd = g_mkstemp(tmpl);
    FILE *f = fd >= 0 ? fdopen(fd, "w+b") : NULL;
    if (f == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", tmpl, g_strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    if (fd >= 0)
        g_unlink(tmpl); /* unnamed from now on: closed, it is gone */
    return f;
}

static void
spill_write(FILE *f, const Block *b)
{
    const guint32 head[3] = {b->index, b->seq, (guint32)strlen(b->text)};
    fwrite(head, sizeof head, 1, f);
    fwrite(b->text, 1, head[2], f);
}

static gboolean
spill_flushed(const Sorter *s, FILE *f, GError **error)
{
    if (fflush(f) != 0 || ferror(f)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: a sorted run: %s", s->dir,
                    g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static gboolean
cursor_next(SpillCursor *c)
{
    guint32 head[3];
    g_clear_pointer(&c->b.text, g_free);
    c->have = FALSE;
    if (fread(head, sizeof head, 1, c->f) != 1)
        return FALSE;
    c->b.index = head[0];
    c->b.seq = head[1];
    c->b.text = g_malloc(head[2] + 1);
    if (fread(c->b.text, 1, head[2], c->f) != head[2]) {
        g_clear_pointer(&c->b.text, g_free);
        return FALSE;
    }
    c->b.text[head[2]] = '\0';
    c->have = TRUE;
    return TRUE;
}

/* The k-way merge of every spill, each block in order to `emit`. */
static gboolean
merge_spills(Sorter *s, void (*emit)(const Block *b, gpointer data), gpointer data,
             GError **error)
{
    const guint n = s->spills->len;
    g_autofree SpillCursor *cur = g_new0(SpillCursor, n);
    for (guint i = 0; i < n; i++) {
        cur[i].f = g_ptr_array_index(s->spills, i);
        rewind(cur[i].f);
        cursor_next(&cur[i]);
    }
    /* The runs are few (at most SORT_MAX_RUNS): a scan for the smallest
     * head is as cheap as keeping a heap. */
    for (;;) {
        SpillCursor *min = NULL;
        for (guint i = 0; i < n; i++)
            if (cur[i].have && (min == NULL || block_cmp(&cur[i].b, &min->b) < 0))
                min = &cur[i];
        if (min == NULL)
            break;
        emit(&min->b, data);
        cursor_next(min);
    }
    gboolean ok = TRUE;
    for (guint i = 0; i < n; i++)
        if (ferror(cur[i].f))
            ok = FALSE;
    if (!ok)
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: reading a sorted run back: %s", s->dir,
                    g_strerror(errno));
    return ok;
}

static void
emit_to_spill(const Block *b, gpointer f)
{
    spill_write(f, b);
}

/* Runs kept open at most: beyond, they are merged into one, so that a
 * huge output needs no more file descriptors than this. */
#define SORT_MAX_RUNS 64u

/* Sort the run in memory and write it to a new spill file. */
static gboolean
sorter_spill(Sorter *s, GError **error)
{
    g_array_sort(s->run, block_cmp);
    FILE *f = spill_new(s, error);
    if (f == NULL)
        return FALSE;
    g_ptr_array_add(s->spills, f);
    for (guint i = 0; i < s->run->len; i++)
        spill_write(f, &g_array_index(s->run, Block, i));
    g_array_set_size(s->run, 0);
    s->run_bytes = 0;
    if (!spill_flushed(s, f, error))
        return FALSE;
    if (s->spills->len < SORT_MAX_RUNS)
        return TRUE;
    FILE *all = spill_new(s, error);
    if (all == NULL)
        return FALSE;
    gboolean ok = merge_spills(s, emit_to_spill, all, error) && spill_flushed(s, all, error);
    g_ptr_array_set_size(s->spills, 0);
    g_ptr_array_add(s->spills, all);
    return ok;
}

/* Add a block (takes `text`). */
static gboolean
sorter_add(Sorter *s, guint index, char *text, GError **error)
{
    Block b = {index, s->seq++, text};
    g_array_append_val(s->run, b);
    s->run_bytes += strlen(text) + sizeof b;
    if (s->run_bytes >= SORT_RUN_BYTES || (s->max_blocks && s->run->len >= s->max_blocks))
        return sorter_spill(s, error);
    return TRUE;
}

/* Where the sorted blocks go: the final file's rows. */
typedef struct {
    FILE *out;
    TpsFormat format;
    gboolean first; /* no row written yet (JSON joins rows by ",\n") */
} RowSink;

static void
sink_block(RowSink *k, const char *t)
{
    if (k->format != TPS_FORMAT_JSON) {
        fputs(t, k->out);
        return;
    }
    /* Each line of a block is one row. */
    for (const char *line = t; *line;) {
        const char *nl = strchr(line, '\n');
        gsize n = nl ? (gsize)(nl - line) : strlen(line);
        if (!k->first)
            fputs(",\n", k->out);
        fwrite(line, 1, n, k->out);
        k->first = FALSE;
        line += n + (nl != NULL);
    }
}

static void
emit_to_sink(const Block *b, gpointer k)
{
    sink_block(k, b->text);
}

/* Every block in order into `k`: the run in memory alone when nothing was
 * spilled, else the merge of the spills (the run in memory spilled
 * first). */
static gboolean
sorter_drain(Sorter *s, RowSink *k, GError **error)
{
    if (s->spills->len == 0) {
        g_array_sort(s->run, block_cmp);
        for (guint i = 0; i < s->run->len; i++)
            sink_block(k, g_array_index(s->run, Block, i).text);
        return TRUE;
    }
    if (s->run->len > 0 && !sorter_spill(s, error))
        return FALSE;
    return merge_spills(s, emit_to_sink, k, error);
}

/* The final file: head, the blocks sorted by point, tail. */
typedef struct {
    const char *head;
    Sorter *sorter;
    TpsFormat format;
} FinalFile;

static gboolean
write_final(FILE *out, gpointer user, GError **error)
{
    FinalFile *f = user;
    RowSink k = {out, f->format, TRUE};
    fputs(f->head, out);
    if (!sorter_drain(f->sorter, &k, error))
        return FALSE;
    if (f->format == TPS_FORMAT_JSON)
        fputs(k.first ? "]}\n" : "\n]}\n", out);
    return TRUE;
}

/* The final file as text (TpsBatchOptions.text: the caller asked for it
 * in memory). */
static char *
final_text(FinalFile *f, GError **error)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "memory stream: %s", g_strerror(errno));
        return NULL;
    }
    gboolean ok = write_final(out, f, error);
    fclose(out);
    if (!ok) {
        free(buf);
        return NULL;
    }
    char *text = g_strndup(buf, len);
    free(buf);
    return text;
}

/* ---- the partial file ---- */

/* Read the partial file `path` of the batch whose head is `head`: the
 * points it marks done (into `is_done`, their blocks into `sorter`), and
 * the length of its complete part (what a resume keeps). Line by line: the
 * file may be larger than memory. */
static gboolean
read_partial(const char *path, const char *head, guint n_points, gboolean *is_done,
             Sorter *sorter, gsize *keep, GError **error)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, g_strerror(errno));
        return FALSE;
    }
    const gsize head_len = strlen(head);
    g_autofree char *start = g_malloc(head_len + 1);
    if (fread(start, 1, head_len, in) != head_len || memcmp(start, head, head_len) != 0) {
        fclose(in);
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: is not the partial output of this batch (another input, shard or "
                    "format); remove it, or run without --resume and another --output",
                    path);
        return FALSE;
    }
    *keep = head_len;
    gsize pos = head_len;
    GString *block = g_string_new(NULL);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    gboolean ok = TRUE;
    while (ok && (n = getline(&line, &cap, in)) > 0) {
        pos += (gsize)n;
        if (line[n - 1] != '\n')
            break; /* a line cut by the kill */
        if (strncmp(line, "#done ", 6) != 0) {
            g_string_append_len(block, line, n);
            continue;
        }
        guint64 index;
        line[n - 1] = '\0';
        if (!g_ascii_string_to_unsigned(line + 6, 10, 0, n_points - 1, &index, NULL)) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: bad point marker '%s' (the file was changed by hand?)", path,
                        line + 6);
            ok = FALSE;
            break;
        }
        is_done[index] = TRUE;
        ok = sorter_add(sorter, (guint)index, g_strndup(block->str, block->len), error);
        g_string_truncate(block, 0);
        *keep = pos;
    }
    free(line);
    g_string_free(block, TRUE);
    fclose(in);
    return ok;
}

/* ---- the run ---- */

/* Points are handed to the threads at most WINDOW ahead of the first one
 * not yet finished, so that the rows can be given to the caller in point
 * order (TpsBatchOptions.rows_func) holding at most WINDOW points'
 * rows, however many points the batch has. A slow point stalls the
 * threads only once WINDOW points after it are done. */
#define WINDOW 256u

typedef struct {
    const TpsBatch *batch;
    const guint *order; /* the points to evaluate, by position */
    TpsBatchEval eval;
    gpointer user;
    TpsFormat format;
    gboolean keep_rows;
    gint stop; /* atomic: an evaluation failed, skip the rest */
    GAsyncQueue *done;
} Run;

typedef struct {
    guint pos; /* in Run.order */
    const TpsBatchPoint *point;
    char *text;    /* its row lines */
    GArray *rows;  /* of TpsBatchRow, when the caller wants them */
    GError *error; /* when the evaluation failed */
    gboolean stopped; /* not evaluated: another point failed first */
} Done;

static void
done_free(Done *d)
{
    if (d == NULL)
        return;
    g_free(d->text);
    if (d->rows) {
        for (guint i = 0; i < d->rows->len; i++)
            row_clear(&g_array_index(d->rows, TpsBatchRow, i));
        g_array_unref(d->rows);
    }
    g_clear_error(&d->error);
    g_free(d);
}

static void
worker(gpointer data, gpointer user_data)
{
    Run *run = user_data;
    Done *d = g_new0(Done, 1);
    d->pos = GPOINTER_TO_UINT(data) - 1;
    d->point = g_ptr_array_index(run->batch->points, run->order[d->pos]);
    if (g_atomic_int_get(&run->stop)) {
        g_set_error(&d->error, TPS_ERROR, TPS_ERROR_INPUT, "stopped");
        d->stopped = TRUE;
        g_async_queue_push(run->done, d);
        return;
    }
    /* A lazy batch's point gets its scenario for the time of its work. */
    TpsBatchPoint built;
    const TpsBatchPoint *point = d->point;
    if (run->batch->fill != NULL) {
        memset(&built, 0, sizeof built);
        built.key = d->point->key;
        built.index = d->point->index;
        built.label_values = d->point->label_values;
        run->batch->fill(built.index, &built.scenario, run->batch->fill_data);
        point = &built;
    }
    GArray *rows = g_array_new(FALSE, TRUE, sizeof(TpsBatchRow));
    if (!run->eval(point, rows, run->user, &d->error)) {
        if (d->error == NULL)
            g_set_error(&d->error, TPS_ERROR, TPS_ERROR_INPUT, "point %s: evaluation failed",
                        d->point->key);
        g_atomic_int_set(&run->stop, 1);
    } else {
        GString *s = g_string_new(NULL);
        format_rows(run->batch, point, rows, run->format, s);
        d->text = g_string_free(s, FALSE);
    }
    if (point == &built)
        tps_scenario_clear(&built.scenario);
    d->rows = rows;
    if (!run->keep_rows || d->error != NULL) {
        for (guint i = 0; i < rows->len; i++)
            row_clear(&g_array_index(rows, TpsBatchRow, i));
        g_array_unref(rows);
        d->rows = NULL;
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

/* Hand a point's rows to the caller (in point order). */
static void
deliver(const TpsBatchOptions *opts, Done *d)
{
    if (d->rows == NULL)
        return;
    if (opts->rows_func)
        opts->rows_func(d->point, d->rows, opts->rows_data);
    if (opts->collect) {
        for (guint r = 0; r < d->rows->len; r++) {
            TpsBatchCollected *c = g_new0(TpsBatchCollected, 1);
            c->point = d->point;
            c->row = g_array_index(d->rows, TpsBatchRow, r);
            g_ptr_array_add(opts->collect, c);
        }
        g_array_set_size(d->rows, 0); /* the collected rows own their reasons now */
    }
}

/* The partial file of --output into `*out` (`*partial` its path): a new
 * one with the file's head, or, resuming, the one there with what it has
 * done read into is_done and the sorter (and what a kill cut dropped).
 * Nothing without an output file. */
static gboolean
open_partial(const TpsBatch *batch, const TpsBatchOptions *opts, const char *head,
             gboolean *is_done, Sorter *sorter, char **partial_out, FILE **out, GError **error)
{
    *out = NULL;
    if (opts->output == NULL || strcmp(opts->output, "-") == 0)
        return TRUE;
    char *partial = *partial_out = g_strconcat(opts->output, ".partial", NULL);
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
        if (!read_partial(partial, head, MAX(batch->points->len, 1), is_done, sorter, &keep, error))
            return FALSE;
        /* Drop what a kill cut (a line, or a point without its
         * marker), so that appending continues a clean file. */
        if (truncate(partial, (off_t)keep) != 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", partial, g_strerror(errno));
            return FALSE;
        }
        *out = fopen(partial, "a");
    } else {
        *out = fopen(partial, "w");
        if (*out)
            fputs(head, *out), fflush(*out);
    }
    if (*out == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", partial, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

/* The points to evaluate, in order: the shard's (`*total` of them), less
 * those done (`*todo` left). */
static guint *
points_to_do(const TpsBatch *batch, const TpsBatchOptions *opts, guint count,
             const gboolean *is_done, guint *total_out, guint *todo_out)
{
    guint total = 0, todo = 0;
    for (guint i = 0; i < batch->points->len; i++)
        if (i % count == opts->shard_index) {
            total++;
            todo += !is_done[i];
        }
    guint *order = g_new(guint, MAX(todo, 1));
    for (guint i = 0, k = 0; i < batch->points->len; i++)
        if (i % count == opts->shard_index && !is_done[i])
            order[k++] = i;
    *total_out = total;
    *todo_out = todo;
    return order;
}

/* The `todo` points of run->order evaluated on the thread pool, a window
 * at a time: each point's text appended to the partial file `out` and
 * given to the sorter (when a file is wanted), its rows delivered in
 * point order. Returns the first real failure, or NULL. */
static GError *
evaluate_points(Run *run, guint todo, guint total, const TpsBatchOptions *opts, FILE *out,
                Sorter *sorter, gboolean want_file)
{
    guint jobs = opts->jobs ? opts->jobs : MAX(g_get_num_processors(), 1);
    GThreadPool *pool = NULL;
    guint pushed = 0;
    if (todo > 0) {
        pool = g_thread_pool_new(worker, run, (gint)MIN(jobs, todo), FALSE, NULL);
        for (; pushed < MIN(todo, WINDOW); pushed++)
            g_thread_pool_push(pool, GUINT_TO_POINTER(pushed + 1), NULL);
    }

    const gboolean progress = progress_wanted(opts->progress);
    /* Stopped by a signal: no half-drawn progress line, and the partial
     * file keeps what is done. */
    tps_output_interrupt_note(progress, out != NULL ? "stopped: continue with --resume\n" : NULL);
    const gint64 start = g_get_monotonic_time();
    const guint done_at_start = total - todo;
    GError *first_error = NULL;
    /* The points finished but not yet delivered: position % WINDOW. */
    Done *pending[WINDOW] = {NULL};
    guint next = 0; /* the first position not delivered */
    for (guint received = 0; received < pushed; received++) {
        Done *d = g_async_queue_pop(run->done);
        if (d->error != NULL) {
            /* The first real failure; the points skipped after it say "stopped". */
            if (first_error == NULL && !d->stopped)
                first_error = g_steal_pointer(&d->error);
        } else {
            if (out != NULL) {
                fputs(d->text, out);
                fprintf(out, "#done %u\n", d->point->index);
                fflush(out);
            }
            if (want_file && first_error == NULL &&
                !sorter_add(sorter, d->point->index, g_steal_pointer(&d->text), &first_error))
                g_atomic_int_set(&run->stop, 1);
            if (progress)
                progress_show(done_at_start + received + 1, total, start, done_at_start);
        }
        g_clear_pointer(&d->text, g_free);
        pending[d->pos % WINDOW] = d;
        /* In order: deliver, and let the window slide. */
        while (next < pushed && pending[next % WINDOW] != NULL) {
            Done *e = g_steal_pointer(&pending[next % WINDOW]);
            if (first_error == NULL && e->error == NULL)
                deliver(opts, e);
            done_free(e);
            next++;
            if (pushed < todo && first_error == NULL && !g_atomic_int_get(&run->stop)) {
                g_thread_pool_push(pool, GUINT_TO_POINTER(pushed + 1), NULL);
                pushed++;
            }
        }
    }
    for (guint i = 0; i < WINDOW; i++)
        done_free(pending[i]);
    if (pool)
        g_thread_pool_free(pool, FALSE, TRUE);
    if (progress)
        fprintf(stderr, "\r\033[K"), fflush(stderr);
    tps_output_interrupt_note(FALSE, NULL);
    return first_error;
}

/* The output file from the sorted rows (or opts->text in memory, and the
 * file from it), then the partial file removed. */
static gboolean
write_output(const TpsBatchOptions *opts, const char *head, Sorter *sorter, const char *partial,
             GError **error)
{
    gboolean ok;
    FinalFile final = {head, sorter, opts->format};
    if (opts->text != NULL) {
        /* In memory, as asked; the file (if any) is written from it. */
        g_autofree char *text = final_text(&final, error);
        ok = text != NULL &&
             (opts->output == NULL || tps_write_atomic(opts->output, text, strlen(text), error));
        if (ok)
            *opts->text = g_steal_pointer(&text);
    } else {
        ok = tps_write_atomic_stream(opts->output, write_final, &final, error);
    }
    if (ok && partial != NULL)
        g_unlink(partial);
    return ok;
}

gboolean
tps_batch_run(const TpsBatch *batch, TpsBatchEval eval, gpointer user, const TpsBatchOptions *opts,
              GError **error)
{
    g_return_val_if_fail(batch != NULL && eval != NULL && opts != NULL, FALSE);
    g_return_val_if_fail(opts->format == TPS_FORMAT_CSV || opts->format == TPS_FORMAT_JSON, FALSE);
    const guint count = MAX(opts->shard_count, 1);
    g_return_val_if_fail(opts->shard_index < count, FALSE);
    const gboolean to_stdout = opts->output && strcmp(opts->output, "-") == 0;
    if (opts->resume && (opts->output == NULL || to_stdout)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "resume needs an output file (its partial file says what is done)");
        return FALSE;
    }

    g_autofree char *digest = tps_batch_digest(batch);
    g_autofree char *shard =
        count > 1 ? g_strdup_printf("%u/%u", opts->shard_index, count) : g_strdup("all");
    g_autofree char *head = file_head(batch, digest, shard, opts->format);
    const gboolean want_file = opts->output != NULL || opts->text != NULL;

    /* What is done already (resume), and the partial file to append to. */
    Sorter sorter;
    sorter_init(&sorter, opts->output);
    g_autofree gboolean *is_done = g_new0(gboolean, MAX(batch->points->len, 1));
    g_autofree char *partial = NULL;
    FILE *out = NULL;
    if (!open_partial(batch, opts, head, is_done, &sorter, &partial, &out, error)) {
        sorter_clear(&sorter);
        return FALSE;
    }
    guint total, todo;
    g_autofree guint *order = points_to_do(batch, opts, count, is_done, &total, &todo);
    g_clear_pointer(&is_done, g_free);

    Run run = {
        .batch = batch,
        .order = order,
        .eval = eval,
        .user = user,
        .format = opts->format,
        .keep_rows = opts->collect != NULL || opts->rows_func != NULL,
        .done = g_async_queue_new(),
    };
    const guint collected_before = opts->collect ? opts->collect->len : 0;
    GError *first_error = evaluate_points(&run, todo, total, opts, out, &sorter, want_file);
    g_async_queue_unref(run.done);

    gboolean ok = first_error == NULL;
    if (out != NULL && fclose(out) != 0 && ok) {
        g_set_error(&first_error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", partial, g_strerror(errno));
        ok = FALSE;
    }
    if (!ok) {
        g_propagate_error(error, first_error);
        /* Nothing handed over when the batch fails. */
        if (opts->collect)
            g_ptr_array_set_size(opts->collect, collected_before);
        sorter_clear(&sorter);
        return FALSE;
    }
    ok = !want_file || write_output(opts, head, &sorter, partial, error);
    sorter_clear(&sorter);
    return ok;
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

/* The head of a part: its first line, and the column names' line of a
 * CSV one (JSON rows start on the second line). */
static char *
read_head(FILE *in)
{
    GString *s = g_string_new(NULL);
    char *line = NULL;
    size_t cap = 0;
    for (guint k = 0; k < 2; k++) {
        ssize_t n = getline(&line, &cap, in);
        if (n <= 0)
            break;
        g_string_append_len(s, line, n);
        if (k == 0 && line[0] != '#')
            break;
    }
    free(line);
    return g_string_free(s, FALSE);
}

/* The row lines of a part after its head, as blocks of one line each
 * keyed by their point; line by line, so that parts larger than memory
 * merge. */
static gboolean
part_rows(const char *path, FILE *in, TpsFormat format, guint points, guint shard_index,
          guint shard_count, Sorter *sorter, GError **error)
{
    guint line_no = format == TPS_FORMAT_CSV ? 3 : 2;
    char *row = NULL;
    size_t cap = 0;
    ssize_t len;
    gboolean ok = TRUE;
    for (; ok && (len = getline(&row, &cap, in)) > 0; line_no++) {
        gsize n = (gsize)len;
        if (row[n - 1] == '\n')
            row[--n] = '\0';
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
            ok = FALSE;
            break;
        }
        ok = sorter_add(sorter, (guint)index, g_strconcat(row, "\n", NULL), error);
    }
    free(row);
    return ok;
}

/* What the first part says of the batch, which every other part must say
 * too, and the part given for each shard. */
typedef struct {
    char *digest, *head;
    guint count, points;
    TpsFormat format;
    const char **seen;
} MergeFirst;

static void
merge_first_clear(MergeFirst *f)
{
    g_free(f->digest);
    g_free(f->head);
    g_free(f->seen);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(MergeFirst, merge_first_clear)

/* The head of part p (`text`) parsed into its shard, shard count, points
 * and format; the first part's is the batch's, every other one's must be
 * of the same batch, format, shard count and columns, each shard given
 * once. */
static gboolean
check_part_head(MergeFirst *f, const char *const *parts, guint p, const char *text, guint *si,
                guint *sc, guint *points, TpsFormat *format, GError **error)
{
    g_autofree char *digest = NULL;
    gsize head_len;
    gboolean ok = parse_head(parts[p], text, &digest, si, sc, points, format, &head_len, error);
    if (ok && p == 0) {
        f->digest = g_strdup(digest);
        f->count = *sc;
        f->points = *points;
        f->format = *format;
        f->head = g_strndup(text, head_len);
        f->seen = g_new0(const char *, *sc);
    } else if (ok &&
               (strcmp(digest, f->digest) != 0 || *points != f->points || *format != f->format)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s:1:1: is the output of another batch than %s (batch %s, not "
                    "%s), or of another format",
                    parts[p], parts[0], digest, f->digest);
        ok = FALSE;
    } else if (ok && *sc != f->count) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s:1:1: is shard %u/%u, but %s is one of %u shards", parts[p], *si, *sc,
                    parts[0], f->count);
        ok = FALSE;
    }
    if (ok && f->seen[*si] != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "merge: %s and %s are both shard %u/%u",
                    f->seen[*si], parts[p], *si, *sc);
        ok = FALSE;
    }
    if (ok)
        f->seen[*si] = parts[p];
    /* The column names (CSV) must agree too. */
    if (ok && *format == TPS_FORMAT_CSV && p > 0) {
        const char *h0 = strchr(f->head, '\n') + 1, *h = strchr(text, '\n') + 1;
        if (strncmp(h0, h, strlen(h0)) != 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "merge: %s:2:1: other columns than %s",
                        parts[p], parts[0]);
            ok = FALSE;
        }
    }
    return ok;
}

/* Part p's head checked and its rows given to the sorter. */
static gboolean
merge_part(MergeFirst *f, const char *const *parts, guint p, Sorter *sorter, GError **error)
{
    FILE *in = fopen(parts[p], "rb");
    if (in == NULL) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
                    "Failed to open file “%s”: %s", parts[p], g_strerror(errno));
        return FALSE;
    }
    g_autofree char *text = read_head(in);
    guint si, sc, points;
    TpsFormat format;
    gboolean ok = check_part_head(f, parts, p, text, &si, &sc, &points, &format, error);
    ok = ok && part_rows(parts[p], in, format, points, si, sc, sorter, error);
    if (ok && ferror(in)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", parts[p], g_strerror(errno));
        ok = FALSE;
    }
    fclose(in);
    return ok;
}

static gboolean
merge_parts(const char *const *parts, guint n_parts, const char *output, Sorter *sorter,
            GError **error)
{
    g_auto(MergeFirst) f = {.format = TPS_FORMAT_CSV};
    for (guint p = 0; p < n_parts; p++)
        if (!merge_part(&f, parts, p, sorter, error))
            return FALSE;
    for (guint i = 0; i < f.count; i++)
        if (f.seen[i] == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "merge: shard %u/%u is missing (%u shards, %u given)", i, f.count, f.count,
                        n_parts);
            return FALSE;
        }
    /* The head of the whole batch: shard "all". */
    g_autofree char *head = NULL;
    if (f.format == TPS_FORMAT_JSON) {
        head = g_strdup_printf("{\"tool\": \"tpsim\", \"batch\": \"%s\", \"shard\": \"all\", "
                               "\"points\": %u, \"rows\": [\n",
                               f.digest, f.points);
    } else {
        const char *columns = strchr(f.head, '\n') + 1;
        head = g_strdup_printf("# tpsim batch %s shard all points %u\n%s", f.digest, f.points,
                               columns);
    }
    FinalFile final = {head, sorter, f.format};
    return tps_write_atomic_stream(output, write_final, &final, error);
}

gboolean
tps_batch_merge(const char *const *parts, guint n_parts, const char *output, GError **error)
{
    g_return_val_if_fail(parts != NULL && output != NULL, FALSE);
    if (n_parts == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "merge: no parts given");
        return FALSE;
    }
    Sorter sorter;
    sorter_init(&sorter, output);
    gboolean ok = merge_parts(parts, n_parts, output, &sorter, error);
    sorter_clear(&sorter);
    return ok;
}
