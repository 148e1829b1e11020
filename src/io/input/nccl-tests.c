/* nccl-tests logs read as collective measurements (see nccl-tests.h).
 *
 * The layout follows nccl-tests' printing code (src/common.cu and
 * src/util.cu: the rank lines, the two header lines of column names and
 * units, a row of "%12li  %12li  %8s  %6s  %6s" then per placement
 * "%7s  %6s  %6s  %6g" or "N/A" when results were not checked). Columns are
 * found by name in the header rather than by position, so that the
 * per-iteration variant (-I 1) and a trailing timestamp column read too.
 */
#include "io/input/nccl-tests.h"

#include <string.h>

#include "core/error.h"

/* nccl-tests' type names and their sizes (src/common.cu, test_typenames). */
static const struct {
    const char *name;
    guint bytes;
} types[] = {
    {"int8", 1},     {"uint8", 1},  {"int32", 4},  {"uint32", 4},   {"int64", 8},
    {"uint64", 8},   {"half", 2},   {"float", 4},  {"double", 8},   {"bfloat16", 2},
    {"f8e4m3", 1},   {"f8e5m2", 1}, {"char", 1},   {"int", 4},
};

/* The tests whose collectives calibration fits, by the name of their
 * program; the other tests of nccl-tests are recognised to say so. */
static const struct {
    const char *program;
    int kind; /* TpsMeasColl, or -1: not a collective tpsim calibrates */
} programs[] = {
    {"all_gather_perf", TPS_MEAS_ALL_GATHER}, {"reduce_scatter_perf", TPS_MEAS_REDUCE_SCATTER},
    {"all_reduce_perf", TPS_MEAS_ALL_REDUCE}, {"alltoall_perf", -1},
    {"alltoallv_perf", -1},                   {"broadcast_perf", -1},
    {"reduce_perf", -1},                      {"gather_perf", -1},
    {"scatter_perf", -1},                     {"sendrecv_perf", -1},
    {"hypercube_perf", -1},
};

typedef struct {
    const char *file;
    guint line;
    const char *text; /* the line, NUL-terminated */
} Line;

typedef struct {
    char *text;
    guint column; /* 1-based */
} Field;

static gboolean
at_error(const char *file, guint line, guint column, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

static gboolean
at_error(const char *file, guint line, guint column, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tps_input_error_atv(error, file, line, column, fmt, ap);
    va_end(ap);
    return FALSE;
}

static void
field_clear(gpointer p)
{
    g_free(((Field *)p)->text);
}

/* The blank-separated fields of `text` with their columns. */
static GArray *
split_fields(const char *text)
{
    GArray *fields = g_array_new(FALSE, FALSE, sizeof(Field));
    g_array_set_clear_func(fields, field_clear);
    const char *p = text;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (*p == '\0')
            break;
        const char *start = p;
        while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\r')
            p++;
        Field f = {.text = g_strndup(start, (gsize)(p - start)),
                   .column = (guint)(start - text) + 1};
        g_array_append_val(fields, f);
    }
    return fields;
}

/* The state of the run being read. */
typedef struct {
    guint ranks;          /* rank lines of this run */
    int program;          /* index in programs[], -1: not named */
    guint program_line;   /* where it was named */
    guint program_column;
    /* Columns of the table (field indices), found in its header. */
    gboolean have_header;
    guint c_time, c_wrong;
    guint n_fields; /* fields of a row up to the in-place #wrong */
    char *gpu;
} Run;

static int
find_program(const char *text, guint *column)
{
    for (guint i = 0; i < G_N_ELEMENTS(programs); i++) {
        const char *hit = strstr(text, programs[i].program);
        /* Not inside a longer name (reduce_perf in all_reduce_perf). */
        while (hit != NULL && hit > text && (g_ascii_isalnum(hit[-1]) || hit[-1] == '_'))
            hit = strstr(hit + 1, programs[i].program);
        if (hit != NULL) {
            *column = (guint)(hit - text) + 1;
            return (int)i;
        }
    }
    return -1;
}

/* "#  Rank  0 Group  0 Pid 123 on host device  0 [0x07] NVIDIA A100-SXM4-80GB" */
static gboolean
rank_line(const char *text, char **gpu)
{
    const char *p = text + 1;
    while (*p == ' ')
        p++;
    if (!g_str_has_prefix(p, "Rank ") || strstr(p, " device ") == NULL)
        return FALSE;
    const char *bracket = strchr(p, ']');
    if (bracket != NULL && *gpu == NULL) {
        g_autofree char *name = g_strstrip(g_strdup(bracket + 1));
        if (name[0] != '\0')
            *gpu = g_steal_pointer(&name);
    }
    return TRUE;
}

/* The column-name header: "#  size  count  type  redop  root  time ...". */
static gboolean
header_line(const Line *l, Run *run, GError **error)
{
    g_autoptr(GArray) f = split_fields(l->text + 1);
    if (f->len < 5 || strcmp(g_array_index(f, Field, 0).text, "size") != 0)
        return TRUE; /* another comment */
    static const char *const first[] = {"size", "count", "type", "redop", "root"};
    for (guint i = 0; i < G_N_ELEMENTS(first); i++)
        if (strcmp(g_array_index(f, Field, i).text, first[i]) != 0)
            return at_error(l->file, l->line, g_array_index(f, Field, i).column + 1, error,
                            "column %u of the nccl-tests header is '%s', not '%s'", i + 1,
                            g_array_index(f, Field, i).text, first[i]);
    /* Out of place: time (or cputime), algbw, busbw, #wrong, [per-iteration
     * columns]; then the same in place. */
    guint time = 0, wrong = 0, wrongs = 0;
    for (guint i = 5; i < f->len; i++) {
        const char *name = g_array_index(f, Field, i).text;
        if (time == 0 && (strcmp(name, "time") == 0 || strcmp(name, "cputime") == 0))
            time = i;
        if (strcmp(name, "#wrong") == 0 && ++wrongs == 2)
            wrong = i;
    }
    if (time == 0 || wrongs != 2)
        return at_error(l->file, l->line, 1, error,
                        "the nccl-tests header has no out-of-place time and two #wrong columns "
                        "(size count type redop root time algbw busbw #wrong, twice)");
    run->have_header = TRUE;
    run->c_time = time;
    run->c_wrong = time + 3;
    run->n_fields = wrong + 1;
    return TRUE;
}

/* The values of a row, read from its fields. */
typedef struct {
    guint64 size, count;
    guint type_bytes;
    gint64 root;
    double us; /* out of place */
} Row;

/* A row's place in the log: after the header and two rank lines or more,
 * with the header's fields. */
static gboolean
check_row_place(const Line *l, const Run *run, const GArray *f, GError **error)
{
    const Field *fs = (const Field *)f->data;
    if (!run->have_header)
        return at_error(l->file, l->line, fs[0].column, error,
                        "a row before the nccl-tests column header (#  size  count  type ...)");
    if (f->len < run->n_fields) {
        guint col = fs[f->len - 1].column + (guint)strlen(fs[f->len - 1].text);
        return at_error(l->file, l->line, col, error,
                        "%u fields where the header has %u (size count type redop root, then "
                        "time algbw busbw #wrong out of place and in place)",
                        f->len, run->n_fields);
    }
    if (run->ranks < 2)
        return at_error(l->file, l->line, 1, error,
                        "%u rank line(s) (#  Rank N ... device D) before this row: a collective "
                        "needs 2 ranks or more",
                        run->ranks);
    return TRUE;
}

/* Size, count, type, root and the out-of-place time of a row. */
static gboolean
read_row_values(const Line *l, const Run *run, const Field *fs, Row *row, GError **error)
{
    if (!g_ascii_string_to_unsigned(fs[0].text, 10, 1, G_MAXINT64, &row->size, NULL))
        return at_error(l->file, l->line, fs[0].column, error,
                        "size '%s' is not a positive whole number of bytes", fs[0].text);
    if (!g_ascii_string_to_unsigned(fs[1].text, 10, 0, G_MAXINT64, &row->count, NULL))
        return at_error(l->file, l->line, fs[1].column, error,
                        "count '%s' is not a whole number of elements", fs[1].text);
    row->type_bytes = 0;
    for (guint i = 0; i < G_N_ELEMENTS(types); i++)
        if (strcmp(types[i].name, fs[2].text) == 0)
            row->type_bytes = types[i].bytes;
    if (row->type_bytes == 0)
        return at_error(l->file, l->line, fs[2].column, error, "unknown nccl-tests type '%s'",
                        fs[2].text);
    if (!g_ascii_string_to_signed(fs[4].text, 10, -1, G_MAXINT32, &row->root, NULL))
        return at_error(l->file, l->line, fs[4].column, error, "root '%s' is not a rank or -1",
                        fs[4].text);
    const Field *t = &fs[run->c_time];
    char *end;
    row->us = g_ascii_strtod(t->text, &end);
    if (end == t->text || *end != '\0' || !(row->us > 0.0) || row->us > 1e12)
        return at_error(l->file, l->line, t->column, error,
                        "out-of-place time '%s' is not a positive number of microseconds",
                        t->text);
    return TRUE;
}

/* The out-of-place #wrong of a row: N/A or 0. */
static gboolean
check_row_wrong(const Line *l, const Run *run, const Field *fs, GError **error)
{
    char *end;
    const Field *w = &fs[run->c_wrong];
    if (strcmp(w->text, "N/A") != 0) {
        double wrong = g_ascii_strtod(w->text, &end);
        if (end == w->text || *end != '\0' || wrong < 0)
            return at_error(l->file, l->line, w->column, error,
                            "#wrong '%s' is not a count or N/A", w->text);
        if (wrong > 0)
            return at_error(l->file, l->line, w->column, error,
                            "%s wrong results out of place: the run is broken, its times are "
                            "not measurements",
                            w->text);
    }
    return TRUE;
}

/* The collective of a row: by the sizes, checked against the test's name
 * (a TpsMeasColl in *kind_out). */
static gboolean
row_collective(const Line *l, const Run *run, const Field *fs, const Row *row, int *kind_out,
               GError **error)
{
    gboolean reduces = strcmp(fs[3].text, "none") != 0;
    int kind;
    if (row->root != -1)
        kind = -1; /* rooted: broadcast, reduce, gather, scatter */
    else if (row->size == row->count * row->type_bytes && reduces)
        kind = TPS_MEAS_ALL_REDUCE;
    else if (row->size == row->count * row->type_bytes * run->ranks)
        kind = reduces ? TPS_MEAS_REDUCE_SCATTER : TPS_MEAS_ALL_GATHER;
    else
        kind = -1;
    if (run->program >= 0 && programs[run->program].kind < 0)
        return at_error(l->file, l->line, run->program_line != l->line ? 1 : run->program_column,
                        error,
                        "%s: not a collective tpsim calibrates (all_gather_perf, "
                        "reduce_scatter_perf, all_reduce_perf)",
                        programs[run->program].program);
    if (kind < 0)
        return at_error(l->file, l->line, fs[0].column, error,
                        "size %" G_GUINT64_FORMAT " B, count %" G_GUINT64_FORMAT
                        " %s, redop %s, root %" G_GINT64_FORMAT
                        " over %u ranks: not an all-gather, reduce-scatter or all-reduce",
                        row->size, row->count, fs[2].text, fs[3].text, row->root, run->ranks);
    if (run->program >= 0 && programs[run->program].kind != kind)
        return at_error(l->file, l->line, fs[0].column, error,
                        "the sizes are those of %s over %u ranks, but the log is %s's (line %u)",
                        tps_meas_coll_names[kind], run->ranks, programs[run->program].program,
                        run->program_line);
    *kind_out = kind;
    return TRUE;
}

static gboolean
row_line(const Line *l, Run *run, TpsMeasurements *m, guint *added, GError **error)
{
    g_autoptr(GArray) f = split_fields(l->text);
    const Field *fs = (const Field *)f->data;
    Row row = {0};
    int kind = -1;
    if (!check_row_place(l, run, f, error) || !read_row_values(l, run, fs, &row, error) ||
        !check_row_wrong(l, run, fs, error) || !row_collective(l, run, fs, &row, &kind, error))
        return FALSE;
    TpsCollPoint p = {
        .kind = (TpsMeasColl)kind,
        .bytes = (double)row.size,
        .ranks = run->ranks,
        .time_us = row.us,
        .launch_included = TRUE,
    };
    g_array_append_val(m->collectives, p);
    (*added)++;
    return TRUE;
}

gboolean
tps_nccl_tests_load_string(const char *name, const char *text, gssize len, TpsMeasurements *m,
                           guint *added_out, GError **error)
{
    g_return_val_if_fail(name != NULL && m != NULL, FALSE);
    g_return_val_if_fail(text != NULL || len == 0, FALSE);

    gsize n = len < 0 ? strlen(text) : (gsize)len;
    if (n > TPS_NCCL_TESTS_MAX_BYTES)
        return at_error(name, 1, 1, error, "longer than %zu bytes (a log of nccl-tests is a few "
                                           "kilobytes)",
                        TPS_NCCL_TESTS_MAX_BYTES);
    if (memchr(text, '\0', n) != NULL)
        return at_error(name, 1, 1, error, "a NUL byte: not a nccl-tests log");

    g_autofree char *copy = g_strndup(text, n);
    g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
    Run run = {.program = -1};
    guint added = 0;
    gboolean ok = TRUE, any_header = FALSE;
    for (guint i = 0; ok && lines[i] != NULL; i++) {
        Line l = {.file = name, .line = i + 1, .text = lines[i]};
        const char *s = lines[i];
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        guint column;
        int program = find_program(s, &column);
        if (g_str_has_prefix(s, "# nThread")) {
            /* A new run: its ranks and columns are its own. */
            g_free(run.gpu);
            int named = run.program;
            guint named_line = run.program_line, named_column = run.program_column;
            run = (Run){.program = -1};
            /* A name printed before the header (the command line) counts. */
            if (named >= 0 && named_line + 3 >= l.line) {
                run.program = named;
                run.program_line = named_line;
                run.program_column = named_column;
            }
            continue;
        }
        if (program >= 0 && strstr(s, "Collective test concluded") == NULL) {
            run.program = program;
            run.program_line = l.line;
            run.program_column = column + (guint)(s - lines[i]);
            continue;
        }
        if (s[0] == '#') {
            if (rank_line(s, &run.gpu)) {
                run.ranks++;
            } else if (!(ok = header_line(&l, &run, error))) {
                break;
            }
            any_header = any_header || run.have_header;
            continue;
        }
        if (s[0] == '\0' || !g_ascii_isdigit(s[0]))
            continue; /* the program's other output (warnings, NCCL INFO lines) */
        Line row = {.file = name, .line = l.line, .text = lines[i]};
        ok = row_line(&row, &run, m, &added, error);
        if (ok && m->gpu == NULL && run.gpu != NULL)
            m->gpu = g_strdup(run.gpu);
        if (ok && m->gpus == 0)
            m->gpus = run.ranks;
    }
    g_free(run.gpu);
    if (!ok)
        return FALSE;
    if (added == 0)
        return at_error(name, 1, 1, error,
                        any_header ? "no result rows under the nccl-tests header"
                                   : "not a nccl-tests log: no '#  size  count  type  redop  "
                                     "root ...' header");
    if (m->source == NULL)
        m->source = g_strdup("nccl-tests");
    if (added_out != NULL)
        *added_out = added;
    return TRUE;
}

gboolean
tps_nccl_tests_load(const char *path, TpsMeasurements *m, guint *added, GError **error)
{
    g_return_val_if_fail(path != NULL, FALSE);
    g_autofree char *text = NULL;
    gsize len;
    GError *local = NULL;
    if (!g_file_get_contents(path, &text, &len, &local)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s", local->message);
        g_error_free(local);
        return FALSE;
    }
    return tps_nccl_tests_load_string(path, text, (gssize)len, m, added, error);
}
