/* The batch runner (see batch.h).
 *
 * File shapes (docs/sweeps.md, "Output files"):
 *
 *   CSV:  [rank,]point,LABELS...,RESULT COLUMNS...   the column line first
 *         [1,]0,...                                  one line per row
 *   JSON: {"tool": "tpsim", "batch": "DIGEST", "shard": "S", "points": N, "rows": [
 *         {["rank": 1,]"point": 0, ...},            one line per row
 *         {"point": 1, ...}
 *         ]}
 *   FILE.batch, the sidecar:
 *         tpsim batch DIGEST shard S points N format csv|json[ ranked]
 *         KEY                                        a ranked file's: a line per row
 *
 * S is "all" or "I/N". A ranked file (a search's: TpsBatchOptions.rank_key)
 * has its rows in the order of their keys, numbered from 1; another, in
 * point order. The partial file starts with a line "# tpsim batch DIGEST
 * shard S points N[ ranked]" and the column line of its rows, which have
 * no rank (JSON: the JSON file's first line), then each finished point's
 * row lines followed by a line "#done INDEX[ KEY...]" (a ranked file's:
 * the key of each of the point's rows); JSON rows there have no trailing
 * comma. Building the final file from the partial one is a sort by point
 * index (or rank key): the same bytes whatever the thread count, and
 * shards merged give the same bytes as one run (the sidecar says "all"
 * in both).
 */
#include "plan/batch.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib/gstdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/output.h"
#include "sched/strategy.h"
#include "version.h"

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
    /* Another tpsim may compute other results: its outputs do not mix. */
    g_checksum_update(sum, (const guchar *)"tpsim " TPS_VERSION, -1);
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

/* The column line of a CSV file of `batch` (without a newline, nor the
 * rank column of a ranked file). */
static char *
file_columns(const TpsBatch *batch)
{
    const TpsBatchPoint *first =
        batch->points->len ? g_ptr_array_index(batch->points, 0) : NULL;
    g_auto(TpsScenario) built = {0};
    const TpsScenario *first_sc = first ? &first->scenario : NULL;
    if (first != NULL && batch->fill != NULL) {
        batch->fill(0, &built, batch->fill_data);
        first_sc = &built;
    }
    GString *s = g_string_new("point");
    for (guint i = 0; batch->label_columns[i]; i++) {
        g_string_append_c(s, ',');
        csv_cell(s, batch->label_columns[i]);
    }
    if (first != NULL) {
        g_string_append_c(s, ',');
        tps_result_csv_header(first_sc, s);
    }
    return g_string_free(s, FALSE);
}

/* The first line(s) of the files of a batch (with a newline): the final
 * file's (`partial` FALSE: CSV, the column line; JSON, the object's start
 * with the batch's identity) or the partial file's (CSV: a line
 * identifying the batch, then the column line of its rows, which have no
 * rank yet). */
static char *
file_head(const char *columns, const char *digest, const char *shard, guint points,
          TpsFormat format, gboolean ranked, gboolean partial)
{
    if (format == TPS_FORMAT_JSON)
        return g_strdup_printf("{\"tool\": \"tpsim\", \"batch\": \"%s\", \"shard\": \"%s\", "
                               "\"points\": %u, \"rows\": [\n",
                               digest, shard, points);
    if (partial)
        return g_strdup_printf("# tpsim batch %s shard %s points %u%s\n%s\n", digest, shard,
                               points, ranked ? " ranked" : "", columns);
    return g_strdup_printf("%s%s\n", ranked ? "rank," : "", columns);
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
    char *key; /* a ranked file's: one row's rank key (rank order is strcmp's); else NULL */
    char *text;
} Block;

static void
block_clear(Block *b)
{
    g_free(b->key);
    g_free(b->text);
}

static gint
block_cmp(gconstpointer a, gconstpointer b)
{
    const Block *x = a, *y = b;
    if (x->key != NULL && y->key != NULL) {
        const int c = strcmp(x->key, y->key);
        if (c != 0)
            return c;
    }
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
    const guint32 head[4] = {b->index, b->seq, b->key ? (guint32)strlen(b->key) + 1 : 0,
                             (guint32)strlen(b->text)};
    fwrite(head, sizeof head, 1, f);
    if (b->key)
        fwrite(b->key, 1, head[2] - 1, f);
    fwrite(b->text, 1, head[3], f);
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
    guint32 head[4];
    g_clear_pointer(&c->b.text, g_free);
    g_clear_pointer(&c->b.key, g_free);
    c->have = FALSE;
    if (fread(head, sizeof head, 1, c->f) != 1)
        return FALSE;
    c->b.index = head[0];
    c->b.seq = head[1];
    if (head[2] > 0) {
        c->b.key = g_malloc(head[2]);
        if (fread(c->b.key, 1, head[2] - 1, c->f) != head[2] - 1) {
            g_clear_pointer(&c->b.key, g_free);
            return FALSE;
        }
        c->b.key[head[2] - 1] = '\0';
    }
    c->b.text = g_malloc(head[3] + 1);
    if (fread(c->b.text, 1, head[3], c->f) != head[3]) {
        g_clear_pointer(&c->b.text, g_free);
        g_clear_pointer(&c->b.key, g_free);
        return FALSE;
    }
    c->b.text[head[3]] = '\0';
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

/* Add a block (takes `key`, which may be NULL, and `text`). */
static gboolean
sorter_add(Sorter *s, guint index, char *key, char *text, GError **error)
{
    Block b = {index, s->seq++, key, text};
    g_array_append_val(s->run, b);
    s->run_bytes += strlen(text) + (key ? strlen(key) : 0) + sizeof b;
    if (s->run_bytes >= SORT_RUN_BYTES || (s->max_blocks && s->run->len >= s->max_blocks))
        return sorter_spill(s, error);
    return TRUE;
}

/* A point's rows (`text`, taken) to the sorter: one block, or, in a
 * ranked file, a block per row with its key (`keys`, one per line). */
static gboolean
add_point_rows(Sorter *sorter, guint index, char *text, const GPtrArray *keys, GError **error)
{
    if (keys == NULL)
        return sorter_add(sorter, index, NULL, text, error);
    gboolean ok = TRUE;
    guint r = 0;
    for (const char *line = text; ok && *line; r++) {
        const char *nl = strchr(line, '\n');
        const gsize n = nl ? (gsize)(nl - line) + 1 : strlen(line);
        g_return_val_if_fail(r < keys->len, FALSE);
        ok = sorter_add(sorter, index, g_strdup(g_ptr_array_index(keys, r)),
                        g_strndup(line, n), error);
        line += n;
    }
    g_free(text);
    return ok;
}

/* Where the sorted blocks go: the final file's rows. */
typedef struct {
    FILE *out;
    TpsFormat format;
    gboolean first; /* no row written yet (JSON joins rows by ",\n") */
    FILE *keys;     /* a ranked file's: each row's key, a line each, in order; else NULL */
    guint64 rank;   /* the rows of a ranked file written */
} RowSink;

static void
sink_block(RowSink *k, const Block *b)
{
    const char *t = b->text;
    if (b->key != NULL) {
        /* A ranked file's block is one row: its rank first. */
        k->rank++;
        if (k->keys)
            fprintf(k->keys, "%s\n", b->key);
        if (k->format != TPS_FORMAT_JSON) {
            fprintf(k->out, "%" G_GUINT64_FORMAT ",", k->rank);
            fputs(t, k->out);
            return;
        }
        if (!k->first)
            fputs(",\n", k->out);
        fprintf(k->out, "{\"rank\":%" G_GUINT64_FORMAT ",", k->rank);
        fwrite(t + 1, 1, strcspn(t + 1, "\n"), k->out);
        k->first = FALSE;
        return;
    }
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
    sink_block(k, b);
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
            sink_block(k, &g_array_index(s->run, Block, i));
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
    FILE *keys; /* where a ranked file's keys go (the sidecar's), or NULL */
} FinalFile;

static gboolean
write_final(FILE *out, gpointer user, GError **error)
{
    FinalFile *f = user;
    RowSink k = {out, f->format, TRUE, f->keys, 0};
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

/* ---- the sidecar file ---- */

/* A final file OUT says which batch it is of in OUT.batch, next to it, so
 * that OUT itself is a plain table (CSV: the column line first): one line
 * "tpsim batch DIGEST shard S points N format F[ ranked]", then, for a
 * ranked file, the rank key of each of its rows, a line each, in the
 * file's order (what tpsim merge ranks the shards' rows by). */
typedef struct {
    const char *line;
    FILE *keys; /* NULL: none */
} Sidecar;

static gboolean
write_sidecar(FILE *out, gpointer user, GError **error)
{
    const Sidecar *c = user;
    fputs(c->line, out);
    if (c->keys == NULL)
        return TRUE;
    if (fflush(c->keys) != 0 || fseek(c->keys, 0, SEEK_SET) != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "the rank keys: %s", g_strerror(errno));
        return FALSE;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, c->keys)) > 0)
        fwrite(buf, 1, n, out);
    if (ferror(c->keys)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "the rank keys: %s", g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

static char *
sidecar_line(const char *digest, const char *shard, guint points, TpsFormat format,
             gboolean ranked)
{
    return g_strdup_printf("tpsim batch %s shard %s points %u format %s%s\n", digest, shard,
                           points, format == TPS_FORMAT_JSON ? "json" : "csv",
                           ranked ? " ranked" : "");
}

/* Write `output` (its rows from the sorter, after `head`) and its
 * sidecar: the sidecar removed first, so that a file whose sidecar is
 * there is the one the sidecar describes (a kill between the two leaves a
 * file without one, which merge refuses). With `text`, the file's text is
 * also (or only, without `output`) returned there. */
static gboolean
write_final_and_sidecar(const char *output, const char *head, Sorter *sorter, TpsFormat format,
                        gboolean ranked, const char *line, char **text, GError **error)
{
    const gboolean file = output != NULL && strcmp(output, "-") != 0;
    g_autofree char *sidecar = file ? g_strconcat(output, ".batch", NULL) : NULL;
    FILE *keys = NULL;
    if (file && ranked && (keys = spill_new(sorter, error)) == NULL)
        return FALSE;
    FinalFile final = {head, sorter, format, keys};
    if (sidecar != NULL)
        g_unlink(sidecar);
    gboolean ok;
    if (text != NULL) {
        g_autofree char *t = final_text(&final, error);
        ok = t != NULL && (output == NULL || tps_write_atomic(output, t, strlen(t), error));
        if (ok)
            *text = g_steal_pointer(&t);
    } else {
        ok = tps_write_atomic_stream(output, write_final, &final, error);
    }
    Sidecar c = {line, keys};
    ok = ok && (sidecar == NULL || tps_write_atomic_stream(sidecar, write_sidecar, &c, error));
    if (keys != NULL)
        fclose(keys);
    return ok;
}

/* ---- checking rows read back (resume, merge) ---- */

/* What every row of a batch file must look like: CSV, as many cells as
 * the column line names (the strategy's among them); JSON, one object. A
 * file changed by hand, or by anything but the runner, is refused here
 * rather than copied into a final file. */
typedef struct {
    TpsFormat format;
    guint n_columns;   /* CSV */
    gint strategy_col; /* CSV: -1 when there is none */
    gboolean *text_col; /* CSV: columns holding names, not numbers */
} RowShape;

static void
row_shape_clear(RowShape *s)
{
    g_clear_pointer(&s->text_col, g_free);
}

/* The cells of a CSV line (quoted cells unquoted), NULL when a quote is
 * not closed. */
static GPtrArray *
csv_split(const char *line, GPtrArray *quoted_flags)
{
    GPtrArray *cells = g_ptr_array_new_with_free_func(g_free);
    const char *c = line;
    for (;;) {
        GString *cell = g_string_new(NULL);
        gboolean quoted = FALSE;
        if (*c == '"') {
            quoted = TRUE;
            for (c++;; c++) {
                if (*c == '\0') {
                    g_string_free(cell, TRUE);
                    g_ptr_array_unref(cells);
                    return NULL;
                }
                if (*c == '"' && c[1] == '"') {
                    g_string_append_c(cell, '"');
                    c++;
                } else if (*c == '"') {
                    c++;
                    break;
                } else {
                    g_string_append_c(cell, *c);
                }
            }
            if (*c != ',' && *c != '\0') {
                g_string_free(cell, TRUE);
                g_ptr_array_unref(cells);
                return NULL;
            }
        } else {
            while (*c != ',' && *c != '\0')
                g_string_append_c(cell, *c++);
        }
        g_ptr_array_add(cells, g_string_free(cell, FALSE));
        if (quoted_flags)
            g_ptr_array_add(quoted_flags, GINT_TO_POINTER(quoted));
        if (*c == '\0')
            return cells;
        c++; /* the comma */
    }
}

/* The shape of the rows under the column line `columns` (CSV; without
 * its newline or with it) or of JSON rows. */
static void
row_shape_init(RowShape *s, TpsFormat format, const char *columns)
{
    memset(s, 0, sizeof *s);
    s->format = format;
    s->strategy_col = -1;
    if (format != TPS_FORMAT_CSV)
        return;
    g_autofree char *line = g_strndup(columns, strcspn(columns, "\r\n"));
    g_autoptr(GPtrArray) cells = csv_split(line, NULL);
    if (cells == NULL)
        return;
    s->n_columns = cells->len;
    s->text_col = g_new0(gboolean, MAX(cells->len, 1));
    static const char *const text_columns[] = {"scenario", "hardware", "strategy", "skipped",
                                               "recompute", NULL};
    for (guint i = 0; i < cells->len; i++) {
        const char *name = g_ptr_array_index(cells, i);
        if (strcmp(name, "strategy") == 0)
            s->strategy_col = (gint)i;
        s->text_col[i] = g_strv_contains(text_columns, name);
    }
}

/* A number cell that is not finite (nan, inf: no result is). */
static gboolean
cell_not_finite(const char *cell)
{
    char *end = NULL;
    double v = g_ascii_strtod(cell, &end);
    return end != cell && *end == '\0' && !isfinite(v);
}

/* One row line (without its newline) checked against the shape: its
 * point into `*point`, its strategy (newly allocated, "" for none) into
 * `*strategy`. FALSE with `*what` saying what is wrong (newly
 * allocated). */
static gboolean
row_check(const RowShape *s, const char *line, guint64 *point, char **strategy, char **what)
{
    *strategy = NULL;
    if (s->format == TPS_FORMAT_JSON) {
        g_autoptr(JsonParser) parser = json_parser_new();
        g_autoptr(GError) local = NULL;
        if (!g_str_has_prefix(line, "{\"point\":") ||
            !json_parser_load_from_data(parser, line, -1, &local) ||
            !JSON_NODE_HOLDS_OBJECT(json_parser_get_root(parser))) {
            *what = g_strdup("not a row (a JSON object that starts with its \"point\")");
            return FALSE;
        }
        JsonObject *o = json_node_get_object(json_parser_get_root(parser));
        JsonNode *p = json_object_get_member(o, "point");
        if (p == NULL || json_node_get_value_type(p) != G_TYPE_INT64 ||
            json_node_get_int(p) < 0) {
            *what = g_strdup("its \"point\" is not a point number");
            return FALSE;
        }
        *point = (guint64)json_node_get_int(p);
        const char *st = json_object_has_member(o, "strategy")
                             ? json_object_get_string_member(o, "strategy")
                             : NULL;
        *strategy = g_strdup(st ? st : "");
        return TRUE;
    }
    g_autoptr(GPtrArray) quoted = g_ptr_array_new();
    g_autoptr(GPtrArray) cells = csv_split(line, quoted);
    if (cells == NULL) {
        *what = g_strdup("not a row (a quote is not closed)");
        return FALSE;
    }
    if (cells->len != s->n_columns) {
        *what = g_strdup_printf("not a whole row: %u cells, the columns are %u", cells->len,
                                s->n_columns);
        return FALSE;
    }
    if (!g_ascii_string_to_unsigned(g_ptr_array_index(cells, 0), 10, 0, G_MAXUINT, point,
                                    NULL)) {
        *what = g_strdup_printf("not a row: its point '%s' is not a point number",
                                (const char *)g_ptr_array_index(cells, 0));
        return FALSE;
    }
    for (guint i = 1; i < cells->len; i++)
        if (!s->text_col[i] && !GPOINTER_TO_INT(g_ptr_array_index(quoted, i)) &&
            cell_not_finite(g_ptr_array_index(cells, i))) {
            *what = g_strdup_printf("cell %u is '%s', not a finite number", i + 1,
                                    (const char *)g_ptr_array_index(cells, i));
            return FALSE;
        }
    *strategy = g_strdup(s->strategy_col >= 0 ? g_ptr_array_index(cells, s->strategy_col) : "");
    return TRUE;
}

/* The rows of one point as they are read: each row's strategy, so that
 * a strategy twice shows. */
typedef struct {
    guint64 point;
    guint first_line;
    GPtrArray *strategies; /* char *, owned */
} PointRows;

static void
point_rows_reset(PointRows *r)
{
    if (r->strategies == NULL)
        r->strategies = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_set_size(r->strategies, 0);
    r->first_line = 0;
}

static void
point_rows_clear(PointRows *r)
{
    g_clear_pointer(&r->strategies, g_ptr_array_unref);
}

/* Add a row of strategy `strategy` (taken): FALSE when the point has one
 * of that strategy already. */
static gboolean
point_rows_add(PointRows *r, char *strategy, guint line_no)
{
    for (guint i = 0; i < r->strategies->len; i++)
        if (strcmp(g_ptr_array_index(r->strategies, i), strategy) == 0) {
            g_free(strategy);
            return FALSE;
        }
    if (r->strategies->len == 0)
        r->first_line = line_no;
    g_ptr_array_add(r->strategies, strategy);
    return TRUE;
}

/* ---- the partial file ---- */

/* Whether the partial file `path` holds no more than a beginning of
 * `head` (nothing, or a head cut short). */
static gboolean
partial_is_head_prefix(const char *path, const char *head)
{
    g_autofree char *text = NULL;
    gsize len = 0;
    const gsize head_len = strlen(head);
    GStatBuf st;
    if (g_stat(path, &st) != 0 || (gsize)st.st_size >= head_len)
        return FALSE;
    if (!g_file_get_contents(path, &text, &len, NULL))
        return FALSE;
    return len < head_len && memcmp(text, head, len) == 0;
}

/* What reading a partial file needs beside the file: the batch's points
 * and shard, the points done so far, the rows of the point being read. */
typedef struct {
    RowShape shape;
    gboolean ranked;
    guint n_points, shard_index, shard_count;
    gboolean *is_done;
    PointRows cur;
    GString *block; /* the rows of cur, as read */
} PartialRead;

/* The partial file `path`, positioned after its head, which must be
 * `head`; NULL with `error` set otherwise. */
static FILE *
open_partial_read(const char *path, const char *head, GError **error)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, g_strerror(errno));
        return NULL;
    }
    const gsize head_len = strlen(head);
    g_autofree char *start = g_malloc(head_len + 1);
    if (fread(start, 1, head_len, in) != head_len || memcmp(start, head, head_len) != 0) {
        fclose(in);
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: is not the partial output of this batch (another input, shard or "
                    "format); remove it, or run without --resume and another --output",
                    path);
        return NULL;
    }
    return in;
}

/* A row of a point (not a #done line): checked and added to the point's
 * rows; what is wrong with it (g_free it), or NULL. */
static char *
partial_row(PartialRead *pr, const char *line, guint line_no)
{
    guint64 p = 0;
    char *strategy = NULL, *why = NULL;
    if (!row_check(&pr->shape, line, &p, &strategy, &why))
        return why;
    PointRows *cur = &pr->cur;
    if (cur->strategies->len > 0 && p != cur->point)
        why = g_strdup_printf("a row of point %" G_GUINT64_FORMAT
                              " among the rows of point %" G_GUINT64_FORMAT
                              " (from line %u), before their #done",
                              p, cur->point, cur->first_line);
    else if (p >= pr->n_points || p % pr->shard_count != pr->shard_index)
        why = g_strdup_printf(
            "a row of point %" G_GUINT64_FORMAT ", which is no point of this batch's shard", p);
    else if (pr->is_done[p])
        why = g_strdup_printf(
            "a row of point %" G_GUINT64_FORMAT ", which a #done line above marks done already", p);
    else if ((cur->point = p, !point_rows_add(cur, g_strdup(strategy), line_no)))
        why = g_strdup_printf("a second row of point %" G_GUINT64_FORMAT " and strategy '%s'", p,
                              strategy);
    g_free(strategy);
    if (why == NULL) {
        g_string_append(pr->block, line);
        g_string_append_c(pr->block, '\n');
    }
    return why;
}

/* The words after "#done N" (a ranked file's rank keys) into `keys`; the
 * line is cut after N. */
static void
done_keys(char *line, GPtrArray *keys)
{
    g_auto(GStrv) words = g_strsplit(line + 6, " ", -1);
    for (guint w = 1; words[0] && words[w]; w++)
        g_ptr_array_add(keys, g_strdup(words[w]));
    if (words[0])
        line[6 + strlen(words[0])] = '\0';
}

/* What is wrong with the line "#done N" (N into `index`) after the rows
 * read, with its rank keys `keys`, or NULL. */
static char *
done_problem(const PartialRead *pr, const char *line, const GPtrArray *keys, guint64 *index)
{
    const PointRows *cur = &pr->cur;
    gboolean keys_ok = pr->ranked ? keys->len == cur->strategies->len : keys->len == 0;
    for (guint k = 0; keys_ok && k < keys->len; k++) {
        const char *key = g_ptr_array_index(keys, k);
        keys_ok = *key != '\0' && strspn(key, "0123456789abcdef") == strlen(key);
    }
    if (!g_ascii_string_to_unsigned(line + 6, 10, 0, pr->n_points - 1, index, NULL))
        return g_strdup_printf("bad point marker '%s'", line + 6);
    if (!keys_ok)
        return pr->ranked
                   ? g_strdup_printf("#done %" G_GUINT64_FORMAT
                                     ": not a rank key for each of its %u rows",
                                     *index, cur->strategies->len)
                   : g_strdup_printf("#done %" G_GUINT64_FORMAT ": more than a point", *index);
    if (*index % pr->shard_count != pr->shard_index)
        return g_strdup_printf("#done %" G_GUINT64_FORMAT ": point %" G_GUINT64_FORMAT
                               " is not of shard %u/%u",
                               *index, *index, pr->shard_index, pr->shard_count);
    if (pr->is_done[*index])
        return g_strdup_printf("#done %" G_GUINT64_FORMAT ": point %" G_GUINT64_FORMAT
                               " is marked done twice",
                               *index, *index);
    if (cur->strategies->len == 0)
        return g_strdup_printf("#done %" G_GUINT64_FORMAT
                               " has no rows before it (a point has one at least: a "
                               "skipped row when nothing else)",
                               *index);
    if (cur->point != *index)
        return g_strdup_printf("#done %" G_GUINT64_FORMAT
                               " after the rows of point %" G_GUINT64_FORMAT " (from line %u)",
                               *index, cur->point, cur->first_line);
    return NULL;
}

/* Read the partial file `path` of the batch whose head is `head`: the
 * points it marks done (into `is_done`, their blocks into `sorter`), and
 * the length of its complete part (what a resume keeps). Line by line: the
 * file may be larger than memory. Every row kept is checked first (its
 * point that of its marker, its cells those of the columns, numbers
 * finite, a strategy once per point, each point once and of the shard):
 * a partial file that the runner did not write so is refused at its line,
 * not copied into the final file. */
static gboolean
read_partial(const char *path, const char *head, TpsFormat format, gboolean ranked, guint n_points,
             guint shard_index, guint shard_count, gboolean *is_done, Sorter *sorter, gsize *keep,
             GError **error)
{
    FILE *in = open_partial_read(path, head, error);
    if (in == NULL)
        return FALSE;
    PartialRead pr = {.ranked = ranked,
                      .n_points = n_points,
                      .shard_index = shard_index,
                      .shard_count = shard_count,
                      .is_done = is_done,
                      .block = g_string_new(NULL)};
    row_shape_init(&pr.shape, format, format == TPS_FORMAT_CSV ? strchr(head, '\n') + 1 : "");
    point_rows_reset(&pr.cur);
    guint line_no = 0;
    for (const char *c = head; *c; c++)
        line_no += *c == '\n';
    *keep = strlen(head);
    gsize pos = *keep;
    char *why = NULL, *line = NULL;
    size_t cap = 0;
    ssize_t n;
    gboolean ok = TRUE;
    while (ok && why == NULL && (n = getline(&line, &cap, in)) > 0) {
        pos += (gsize)n;
        line_no++;
        if (line[n - 1] != '\n')
            break; /* a line cut by the kill */
        line[n - 1] = '\0';
        if (strncmp(line, "#done ", 6) != 0) {
            why = partial_row(&pr, line, line_no);
            continue;
        }
        g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
        done_keys(line, keys);
        guint64 index;
        if ((why = done_problem(&pr, line, keys, &index)) != NULL)
            break;
        is_done[index] = TRUE;
        ok = add_point_rows(sorter, (guint)index, g_strndup(pr.block->str, pr.block->len),
                            ranked ? keys : NULL, error);
        g_string_truncate(pr.block, 0);
        point_rows_reset(&pr.cur);
        *keep = pos;
    }
    if (ok && why != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s:%u: %s: the runner did not write this (the file was changed?); "
                    "nothing resumed: correct or remove it",
                    path, line_no, why);
        ok = FALSE;
    }
    g_free(why);
    free(line);
    g_string_free(pr.block, TRUE);
    point_rows_clear(&pr.cur);
    row_shape_clear(&pr.shape);
    fclose(in);
    return ok;
}

/* ---- the lock of the partial file ---- */

/* OUT.partial belongs to one run at a time: OUT.partial.lock, next to it,
 * holds the run's flock() (a lock of an open file description: two runs
 * in one process exclude each other too) and its pid, which a second run
 * names in its refusal. The lock file is removed when the run ends; a
 * kill leaves it, and its lock went with the process. Returns the
 * descriptor (the lock's path in `*lock_path`), -1 with `error` set. */
static int
partial_lock(const char *partial, char **lock_path, GError **error)
{
    g_autofree char *path = g_strconcat(partial, ".lock", NULL);
    for (guint tries = 0; tries < 16; tries++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, g_strerror(errno));
            return -1;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int e = errno;
            char text[32] = "";
            const ssize_t n = pread(fd, text, sizeof text - 1, 0);
            close(fd);
            const long pid = n > 0 ? strtol(text, NULL, 10) : 0;
            if (e != EWOULDBLOCK)
                g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, g_strerror(e));
            else if (pid > 0)
                g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                            "%s is in use by a running tpsim (pid %ld): let it end, or stop it "
                            "and then resume",
                            partial, pid);
            else
                g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                            "%s is in use by a running tpsim: let it end, or stop it and then "
                            "resume",
                            partial);
            return -1;
        }
        /* The run that held it may have removed the file just before:
         * only the file at the path counts. */
        struct stat held, there;
        if (fstat(fd, &held) == 0 && stat(path, &there) == 0 && held.st_ino == there.st_ino &&
            held.st_dev == there.st_dev) {
            char pid[32];
            const int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
                /* The pid is for the message of another run only. */
            }
            *lock_path = g_steal_pointer(&path);
            return fd;
        }
        close(fd);
    }
    g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: could not be locked", path);
    return -1;
}

static void
partial_unlock(int fd, char *lock_path)
{
    if (fd < 0)
        return;
    g_unlink(lock_path);
    close(fd);
    g_free(lock_path);
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
    TpsBatchRankKey rank_key; /* a ranked file's (TpsBatchOptions.rank_key), or NULL */
    gpointer rank_data;
    gint stop; /* atomic: an evaluation failed, skip the rest */
    GAsyncQueue *done;
} Run;

typedef struct {
    guint pos; /* in Run.order */
    const TpsBatchPoint *point;
    char *text;    /* its row lines */
    GPtrArray *keys; /* a ranked file's: the rank key of each row (char *), or NULL */
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
    if (d->keys)
        g_ptr_array_unref(d->keys);
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
        if (run->rank_key != NULL) {
            d->keys = g_ptr_array_new_with_free_func(g_free);
            for (guint r = 0; r < rows->len; r++)
                g_ptr_array_add(d->keys,
                                run->rank_key(point, &g_array_index(rows, TpsBatchRow, r),
                                              run->rank_data));
        }
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
             gboolean ranked, gboolean *is_done, Sorter *sorter, char **partial_out, FILE **out,
             GError **error)
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
    /* A run stopped before its head was whole (a full disk, a kill at its
     * start) did nothing: begin again. */
    if (exists && partial_is_head_prefix(partial, head))
        exists = FALSE;
    if (exists) {
        gsize keep = 0;
        if (!read_partial(partial, head, opts->format, ranked, MAX(batch->points->len, 1),
                          opts->shard_index, MAX(opts->shard_count, 1), is_done, sorter, &keep,
                          error))
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
                fprintf(out, "#done %u", d->point->index);
                for (guint r = 0; d->keys && r < d->keys->len; r++)
                    fprintf(out, " %s", (const char *)g_ptr_array_index(d->keys, r));
                fputc('\n', out);
                fflush(out);
            }
            if (want_file && first_error == NULL &&
                !add_point_rows(sorter, d->point->index, g_steal_pointer(&d->text), d->keys,
                                &first_error))
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

/* The heads of a batch's files and the line of its sidecar. */
typedef struct {
    char *partial, *final, *sidecar;
    gboolean ranked;
} Heads;

static void
heads_clear(Heads *h)
{
    g_free(h->partial);
    g_free(h->final);
    g_free(h->sidecar);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Heads, heads_clear)

/* The output file from the sorted rows (or opts->text in memory, and the
 * file from it) and its sidecar, then the partial file removed. */
static gboolean
write_output(const TpsBatchOptions *opts, const Heads *heads, Sorter *sorter, const char *partial,
             GError **error)
{
    gboolean ok = write_final_and_sidecar(opts->output, heads->final, sorter, opts->format,
                                          heads->ranked, heads->sidecar, opts->text, error);
    if (ok && partial != NULL)
        g_unlink(partial);
    return ok;
}

static gboolean run_locked(const TpsBatch *batch, TpsBatchEval eval, gpointer user,
                           const TpsBatchOptions *opts, const Heads *heads, gboolean want_file,
                           guint count, GError **error);

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
    g_autofree char *columns = file_columns(batch);
    const gboolean ranked = opts->rank_key != NULL;
    const guint n = batch->points->len;
    g_auto(Heads) heads = {
        .partial = file_head(columns, digest, shard, n, opts->format, ranked, TRUE),
        .final = file_head(columns, digest, shard, n, opts->format, ranked, FALSE),
        .sidecar = sidecar_line(digest, shard, n, opts->format, ranked),
        .ranked = ranked,
    };
    const gboolean want_file = opts->output != NULL || opts->text != NULL;

    /* The partial file is this run's alone while it runs. */
    int lock = -1;
    char *lock_path = NULL;
    if (opts->output != NULL && !to_stdout) {
        g_autofree char *partial_name = g_strconcat(opts->output, ".partial", NULL);
        if ((lock = partial_lock(partial_name, &lock_path, error)) < 0)
            return FALSE;
    }
    gboolean ok = run_locked(batch, eval, user, opts, &heads, want_file, count, error);
    partial_unlock(lock, lock_path);
    return ok;
}

/* tps_batch_run() once the partial file is locked. */
static gboolean
run_locked(const TpsBatch *batch, TpsBatchEval eval, gpointer user, const TpsBatchOptions *opts,
           const Heads *heads, gboolean want_file, guint count, GError **error)
{
    /* What is done already (resume), and the partial file to append to. */
    Sorter sorter;
    sorter_init(&sorter, opts->output);
    g_autofree gboolean *is_done = g_new0(gboolean, MAX(batch->points->len, 1));
    g_autofree char *partial = NULL;
    FILE *out = NULL;
    if (!open_partial(batch, opts, heads->partial, heads->ranked, is_done, &sorter, &partial,
                      &out, error)) {
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
        .rank_key = opts->rank_key,
        .rank_data = opts->rank_data,
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
    ok = !want_file || write_output(opts, heads, &sorter, partial, error);
    sorter_clear(&sorter);
    return ok;
}

/* ---- merge ---- */

/* What a part's sidecar (PART.batch) says of it. */
typedef struct {
    char *digest;
    guint shard_index, shard_count, points;
    TpsFormat format;
    gboolean ranked;
} PartId;

static void
part_id_clear(PartId *id)
{
    g_clear_pointer(&id->digest, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PartId, part_id_clear)

/* The sidecar of `part` opened (`*in`, past its first line) and its first
 * line parsed. */
static gboolean
read_sidecar(const char *part, PartId *id, FILE **in, GError **error)
{
    g_autofree char *path = g_strconcat(part, ".batch", NULL);
    *in = fopen(path, "rb");
    if (*in == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s: %s: every output of a sweep or search has this file next to it "
                    "(it says which batch and shard the output is of): copy it with the part",
                    path, g_strerror(errno));
        return FALSE;
    }
    char *line = NULL;
    size_t cap = 0;
    const ssize_t n = getline(&line, &cap, *in);
    char d[64] = "", sh[32] = "", f[8] = "", rest[16] = "";
    guint points = 0;
    const int got = n > 0 ? sscanf(line, "tpsim batch %63s shard %31s points %u format %7s %15s",
                                   d, sh, &points, f, rest)
                          : 0;
    const gboolean line_end = n > 0 && line[n - 1] == '\n';
    free(line);
    gboolean ok = line_end && (got == 4 || (got == 5 && strcmp(rest, "ranked") == 0)) &&
                  (strcmp(f, "csv") == 0 || strcmp(f, "json") == 0);
    if (ok && strcmp(sh, "all") == 0) {
        id->shard_index = 0;
        id->shard_count = 1;
    } else if (ok) {
        ok = tps_batch_parse_shard(sh, &id->shard_index, &id->shard_count, NULL);
    }
    if (!ok) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s:1: not the sidecar of an output of tpsim sweep or search (its "
                    "line names the batch, the shard, the points and the format)",
                    path);
        fclose(*in);
        *in = NULL;
        return FALSE;
    }
    id->digest = g_strdup(d);
    id->points = points;
    id->format = strcmp(f, "json") == 0 ? TPS_FORMAT_JSON : TPS_FORMAT_CSV;
    id->ranked = got == 5;
    return TRUE;
}

/* A ranked part's row without its rank (`row`: its line without the line
 * end, changed in place; its rank must be `rank`): FALSE when it does not
 * start with it. */
static gboolean
strip_rank(char *row, TpsFormat format, guint64 rank)
{
    g_autofree char *prefix = format == TPS_FORMAT_JSON
                                  ? g_strdup_printf("{\"rank\":%" G_GUINT64_FORMAT ",", rank)
                                  : g_strdup_printf("%" G_GUINT64_FORMAT ",", rank);
    const gsize n = strlen(prefix);
    if (strncmp(row, prefix, n) != 0)
        return FALSE;
    if (format == TPS_FORMAT_JSON) {
        row[0] = '{';
        memmove(row + 1, row + n, strlen(row + n) + 1);
    } else {
        memmove(row, row + n, strlen(row + n) + 1);
    }
    return TRUE;
}

/* How a part's rows are checked: in point order (each point's rows
 * together), or, in a ranked part, in any order (a set of the points and
 * strategies seen). */
typedef struct {
    guint64 expect; /* in order: the next point the part must have */
    PointRows cur;
    gboolean have_cur;
    gboolean *seen;       /* ranked: the points seen */
    GHashTable *pairs;    /* ranked: "POINT STRATEGY" seen */
} PartCheck;

/* Check row `index` of strategy `strategy` against what the part had
 * before: NULL, or what is wrong (newly allocated; `*why_point` the point
 * it is about). */
static char *
part_check_row(PartCheck *c, const PartId *id, gboolean ranked, guint64 index,
               const char *strategy, guint line_no, guint64 *why_point)
{
    *why_point = index;
    if (index >= id->points || index % id->shard_count != id->shard_index)
        return g_strdup_printf("not a point of shard %u/%u of this batch (of %u points)",
                               id->shard_index, id->shard_count, id->points);
    if (ranked) {
        g_autofree char *pair = g_strdup_printf("%" G_GUINT64_FORMAT " %s", index, strategy);
        if (!g_hash_table_add(c->pairs, g_steal_pointer(&pair)))
            return g_strdup_printf("a second row of strategy '%s' (a row given twice)", strategy);
        c->seen[index] = TRUE;
        return NULL;
    }
    if (c->have_cur && index == c->cur.point) {
        if (!point_rows_add(&c->cur, g_strdup(strategy), line_no))
            return g_strdup_printf("a second row of strategy '%s' (a row given twice)", strategy);
        return NULL;
    }
    if (index < c->expect)
        return g_strdup("its rows again (the point is given twice, or out of order)");
    if (index > c->expect) {
        *why_point = c->expect;
        return g_strdup_printf("missing (the rows go on with point %" G_GUINT64_FORMAT ")",
                               index);
    }
    point_rows_reset(&c->cur);
    point_rows_add(&c->cur, g_strdup(strategy), line_no);
    c->cur.point = index;
    c->have_cur = TRUE;
    c->expect = index + id->shard_count;
    return NULL;
}

/* The point of the shard the part lacks, if any (into `*point`). */
static gboolean
part_check_missing(const PartCheck *c, const PartId *id, gboolean ranked, guint64 *point)
{
    if (!ranked) {
        *point = c->expect;
        return c->expect < id->points;
    }
    for (guint64 p = id->shard_index; p < id->points; p += id->shard_count)
        if (!c->seen[p]) {
            *point = p;
            return TRUE;
        }
    return FALSE;
}

/* Reading one part: its shape, the check of its points, where it is. */
typedef struct {
    const char *path;
    const PartId *id;
    FILE *keys; /* a ranked part's sidecar, at its rank keys */
    RowShape shape;
    PartCheck check;
    gboolean ended;    /* a JSON part's ]} was read */
    guint64 rank;      /* rows read (a ranked part's rank) */
    guint64 why_point; /* the point a refusal names */
    char *key;
    size_t key_cap;
} PartRead;

/* The point a row that failed its check says it is of, when it says one
 * (else `fallback`). */
static guint64
row_said_point(const char *row, TpsFormat format, guint64 fallback)
{
    const char *num =
        format == TPS_FORMAT_JSON && g_str_has_prefix(row, "{\"point\":") ? row + 9 : row;
    char *end = NULL;
    guint64 said = g_ascii_strtoull(num, &end, 10);
    return end != num ? said : fallback;
}

/* One line of a part (its newline still there, `len` bytes): checked and
 * handed to `sorter`; what is wrong with it (g_free it), or NULL; FALSE
 * in `*ok` on an error of the sorter (`error` set). */
static char *
part_line(PartRead *pr, char *row, gsize len, guint line_no, Sorter *sorter, gboolean *ok,
          GError **error)
{
    const PartId *id = pr->id;
    pr->why_point = pr->check.expect;
    if (row[len - 1] != '\n')
        return g_strdup("the file ends inside a line (cut short)");
    row[--len] = '\0';
    if (pr->ended)
        return g_strdup("a line after the end of the rows (]})");
    if (id->format == TPS_FORMAT_JSON) {
        if (strcmp(row, "]}") == 0) {
            pr->ended = TRUE;
            return NULL;
        }
        if (g_str_has_suffix(row, ","))
            row[--len] = '\0';
    }
    if (id->ranked && !strip_rank(row, id->format, ++pr->rank))
        return g_strdup_printf("not the row of rank %" G_GUINT64_FORMAT
                               " (a ranked part's rows are numbered from 1)",
                               pr->rank);
    guint64 index = 0;
    char *strategy = NULL, *why = NULL;
    if (!row_check(&pr->shape, row, &index, &strategy, &why)) {
        pr->why_point = row_said_point(row, id->format, pr->why_point);
        return why;
    }
    why = part_check_row(&pr->check, id, id->ranked, index, strategy, line_no, &pr->why_point);
    g_free(strategy);
    if (why != NULL)
        return why;
    char *row_key = NULL;
    if (id->ranked) {
        const ssize_t k = getline(&pr->key, &pr->key_cap, pr->keys);
        if (k <= 1 || pr->key[k - 1] != '\n')
            return g_strdup_printf("its sidecar %s.batch has no rank key for this row", pr->path);
        row_key = g_strndup(pr->key, (gsize)k - 1);
    }
    *ok = sorter_add(sorter, (guint)index, row_key, g_strconcat(row, "\n", NULL), error);
    return NULL;
}

/* What is wrong with a part once its lines are read (its end, its
 * points, its sidecar's keys), or NULL. */
static char *
part_end_problem(PartRead *pr)
{
    const PartId *id = pr->id;
    guint64 missing;
    if (id->format == TPS_FORMAT_JSON && !pr->ended) {
        pr->why_point = pr->check.expect;
        return g_strdup("the rows do not end (no ]}: cut short)");
    }
    if (part_check_missing(&pr->check, id, id->ranked, &missing)) {
        pr->why_point = missing;
        return g_strdup(pr->rank > 0 || pr->check.have_cur ? "missing (not in the part)"
                                                           : "missing (the part has no rows)");
    }
    if (id->ranked && getline(&pr->key, &pr->key_cap, pr->keys) > 0) {
        pr->why_point = id->shard_index;
        return g_strdup_printf("its sidecar %s.batch has more rank keys than the part has rows",
                               pr->path);
    }
    return NULL;
}

/* The row lines of a part after its head (`columns`: its CSV column
 * line, the rank's first in a ranked part), as blocks of one line each,
 * keyed by their point (and in a ranked part by their rank key, read from
 * `keys`, the rest of its sidecar); line by line, so that parts larger
 * than memory merge. Each row is checked (its cells those of the
 * columns, numbers finite), and the part must hold every point of its
 * shard exactly once (in order, unless ranked), each strategy of a point
 * once: a part changed, cut or joined by hand is refused, naming the
 * shard and the point. */
static gboolean
part_rows(const char *path, FILE *in, FILE *keys, const char *columns, const PartId *id,
          Sorter *sorter, GError **error)
{
    PartRead pr = {.path = path,
                   .id = id,
                   .keys = keys,
                   .check = {.expect = id->shard_index},
                   .why_point = id->shard_index};
    row_shape_init(&pr.shape, id->format,
                   id->format != TPS_FORMAT_CSV ? ""
                   : id->ranked                 ? strchr(columns, ',') + 1
                                                : columns);
    point_rows_reset(&pr.check.cur);
    if (id->ranked) {
        pr.check.seen = g_new0(gboolean, MAX(id->points, 1));
        pr.check.pairs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    }
    guint line_no = 1;
    char *why = NULL, *row = NULL;
    size_t cap = 0;
    ssize_t len;
    gboolean ok = TRUE;
    while (ok && why == NULL && (len = getline(&row, &cap, in)) > 0) {
        line_no++;
        why = part_line(&pr, row, (gsize)len, line_no, sorter, &ok, error);
    }
    if (ok && why == NULL)
        why = part_end_problem(&pr);
    if (ok && why != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s:%u: shard %u/%u, point %" G_GUINT64_FORMAT ": %s; nothing merged",
                    path, line_no, id->shard_index, id->shard_count, pr.why_point, why);
        ok = FALSE;
    }
    g_free(why);
    free(row);
    free(pr.key);
    point_rows_clear(&pr.check.cur);
    g_free(pr.check.seen);
    if (pr.check.pairs)
        g_hash_table_unref(pr.check.pairs);
    row_shape_clear(&pr.shape);
    return ok;
}

/* What the first part says of the batch, which every other part must say
 * too, and the part given for each shard. */
typedef struct {
    PartId id;
    char *columns; /* CSV: the column line, with its line end */
    const char **seen;
} MergeFirst;

static void
merge_first_clear(MergeFirst *f)
{
    part_id_clear(&f->id);
    g_free(f->columns);
    g_free(f->seen);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(MergeFirst, merge_first_clear)

/* Part p's identity (`id`) and first line (`head`) against the first
 * part's: the same batch, format, shard count and columns, each shard
 * given once. */
static gboolean
check_part_head(MergeFirst *f, const char *const *parts, guint p, const PartId *id,
                const char *head, GError **error)
{
    const gboolean json_head = g_str_has_prefix(head, "{\"tool\": \"tpsim\", \"batch\": ");
    if (head[0] == '\0' || head[strlen(head) - 1] != '\n' ||
        (id->format == TPS_FORMAT_JSON) != json_head ||
        (id->format == TPS_FORMAT_CSV && id->ranked != g_str_has_prefix(head, "rank,point")) ||
        (id->format == TPS_FORMAT_CSV && !id->ranked && !g_str_has_prefix(head, "point"))) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s:1: not the output its sidecar %s.batch describes (%s%s)", parts[p],
                    parts[p], id->format == TPS_FORMAT_JSON ? "JSON" : "CSV",
                    id->ranked ? ", ranked" : "");
        return FALSE;
    }
    if (p == 0) {
        f->id = *id;
        f->id.digest = g_strdup(id->digest);
        f->columns = g_strdup(head);
        f->seen = g_new0(const char *, id->shard_count);
    } else if (strcmp(id->digest, f->id.digest) != 0 || id->points != f->id.points ||
               id->format != f->id.format || id->ranked != f->id.ranked) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s.batch:1: %s is the output of another batch than %s (batch %s, "
                    "not %s), or of another format",
                    parts[p], parts[p], parts[0], id->digest, f->id.digest);
        return FALSE;
    } else if (id->shard_count != f->id.shard_count) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "merge: %s.batch:1: %s is shard %u/%u, but %s is one of %u shards", parts[p],
                    parts[p], id->shard_index, id->shard_count, parts[0], f->id.shard_count);
        return FALSE;
    }
    if (f->seen[id->shard_index] != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "merge: %s and %s are both shard %u/%u",
                    f->seen[id->shard_index], parts[p], id->shard_index, id->shard_count);
        return FALSE;
    }
    f->seen[id->shard_index] = parts[p];
    /* The column names (CSV) must agree too. */
    if (id->format == TPS_FORMAT_CSV && p > 0 && strcmp(f->columns, head) != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "merge: %s:1: other columns than %s",
                    parts[p], parts[0]);
        return FALSE;
    }
    return TRUE;
}

/* Part p's sidecar and head checked and its rows given to the sorter. */
static gboolean
merge_part(MergeFirst *f, const char *const *parts, guint p, Sorter *sorter, GError **error)
{
    g_auto(PartId) id = {0};
    FILE *keys = NULL;
    if (!read_sidecar(parts[p], &id, &keys, error))
        return FALSE;
    FILE *in = fopen(parts[p], "rb");
    if (in == NULL) {
        g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
                    "Failed to open file “%s”: %s", parts[p], g_strerror(errno));
        fclose(keys);
        return FALSE;
    }
    char *line = NULL;
    size_t cap = 0;
    const ssize_t n = getline(&line, &cap, in);
    g_autofree char *head = g_strndup(n > 0 ? line : "", n > 0 ? (gsize)n : 0);
    free(line);
    gboolean ok = check_part_head(f, parts, p, &id, head, error) &&
                  part_rows(parts[p], in, keys, head, &id, sorter, error);
    if (ok && (ferror(in) || ferror(keys))) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", parts[p], g_strerror(errno));
        ok = FALSE;
    }
    fclose(in);
    fclose(keys);
    return ok;
}

static gboolean
merge_parts(const char *const *parts, guint n_parts, const char *output, Sorter *sorter,
            GError **error)
{
    g_auto(MergeFirst) f = {{0}};
    for (guint p = 0; p < n_parts; p++)
        if (!merge_part(&f, parts, p, sorter, error))
            return FALSE;
    for (guint i = 0; i < f.id.shard_count; i++)
        if (f.seen[i] == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "merge: shard %u/%u is missing (%u shards, %u given)", i,
                        f.id.shard_count, f.id.shard_count, n_parts);
            return FALSE;
        }
    /* The head of the whole batch: shard "all". */
    g_autofree char *head =
        f.id.format == TPS_FORMAT_JSON
            ? file_head(NULL, f.id.digest, "all", f.id.points, f.id.format, f.id.ranked, FALSE)
            : g_strdup(f.columns);
    g_autofree char *line = sidecar_line(f.id.digest, "all", f.id.points, f.id.format, f.id.ranked);
    return write_final_and_sidecar(output, head, sorter, f.id.format, f.id.ranked, line, NULL,
                                   error);
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
