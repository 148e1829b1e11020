/* The comma-separated reader: see csv.h. The text is split in place (one
 * copy of the file, fields point into it), which keeps a 1 MB file of
 * thousands of records to one allocation plus the field index. */
#include "calib/csv.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

struct TpsCsv {
    char *name;
    char *text; /* the file, with every separator replaced by NUL */
    guint columns;
    GPtrArray *fields; /* const char *, row-major, the header first */
    GArray *lines;     /* guint: file line of each record, the header first */
};

void
tps_csv_free(TpsCsv *csv)
{
    if (csv == NULL)
        return;
    g_free(csv->name);
    g_free(csv->text);
    g_ptr_array_unref(csv->fields);
    g_array_unref(csv->lines);
    g_free(csv);
}

TpsCsv *
tps_csv_parse(const char *text, gsize len, const char *name, GError **error)
{
    g_return_val_if_fail(text != NULL || len == 0, NULL);
    g_return_val_if_fail(name != NULL, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    g_autoptr(TpsCsv) csv = g_new0(TpsCsv, 1);
    csv->name = g_strdup(name);
    csv->text = g_malloc(len + 1);
    if (len > 0)
        memcpy(csv->text, text, len);
    csv->text[len] = '\0';
    csv->fields = g_ptr_array_new();
    csv->lines = g_array_new(FALSE, FALSE, sizeof(guint));

    char *p = csv->text, *end = csv->text + len;
    guint line = 0;
    while (p < end) {
        char *eol = memchr(p, '\n', (gsize)(end - p));
        char *next = eol ? eol + 1 : end;
        if (eol == NULL)
            eol = end;
        line++;
        if (eol > p && eol[-1] == '\r')
            eol--;
        *eol = '\0';
        if (eol == p) {
            p = next;
            continue;
        }
        guint n = 1;
        g_ptr_array_add(csv->fields, p);
        for (char *c = p; c < eol; c++)
            if (*c == ',') {
                *c = '\0';
                g_ptr_array_add(csv->fields, c + 1);
                n++;
            }
        if (csv->lines->len == 0) {
            csv->columns = n;
        } else if (n != csv->columns) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:%u: %u fields, the header has %u",
                        name, line, n, csv->columns);
            return NULL;
        }
        g_array_append_val(csv->lines, line);
        p = next;
    }
    if (csv->lines->len == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: empty file, no header line", name);
        return NULL;
    }
    return g_steal_pointer(&csv);
}

TpsCsv *
tps_csv_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) local = NULL;
    if (!g_file_get_contents(path, &text, &len, &local)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s", local->message);
        return NULL;
    }
    return tps_csv_parse(text, len, path, error);
}

const char *
tps_csv_name(const TpsCsv *csv)
{
    g_return_val_if_fail(csv != NULL, NULL);
    return csv->name;
}

guint
tps_csv_n_rows(const TpsCsv *csv)
{
    g_return_val_if_fail(csv != NULL, 0);
    return csv->lines->len - 1;
}

guint
tps_csv_n_columns(const TpsCsv *csv)
{
    g_return_val_if_fail(csv != NULL, 0);
    return csv->columns;
}

const char *
tps_csv_header(const TpsCsv *csv, guint column)
{
    g_return_val_if_fail(csv != NULL && column < csv->columns, NULL);
    return g_ptr_array_index(csv->fields, column);
}

gboolean
tps_csv_column(const TpsCsv *csv, const char *name, guint *column, GError **error)
{
    g_return_val_if_fail(csv != NULL && name != NULL && column != NULL, FALSE);
    for (guint c = 0; c < csv->columns; c++)
        if (strcmp(tps_csv_header(csv, c), name) == 0) {
            *column = c;
            return TRUE;
        }
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no column '%s'", csv->name, name);
    return FALSE;
}

guint
tps_csv_line(const TpsCsv *csv, guint row)
{
    g_return_val_if_fail(csv != NULL && row < tps_csv_n_rows(csv), 0);
    return g_array_index(csv->lines, guint, row + 1);
}

const char *
tps_csv_field(const TpsCsv *csv, guint row, guint column)
{
    g_return_val_if_fail(csv != NULL && row < tps_csv_n_rows(csv) && column < csv->columns, NULL);
    return g_ptr_array_index(csv->fields, (gsize)(row + 1) * csv->columns + column);
}

static gboolean
not_a_number(const TpsCsv *csv, guint row, guint column, const char *what, GError **error)
{
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:%u: column '%s': '%s' is not %s", csv->name,
                tps_csv_line(csv, row), tps_csv_header(csv, column),
                tps_csv_field(csv, row, column), what);
    return FALSE;
}

gboolean
tps_csv_double(const TpsCsv *csv, guint row, guint column, double *value, GError **error)
{
    g_return_val_if_fail(value != NULL, FALSE);
    const char *s = tps_csv_field(csv, row, column);
    g_return_val_if_fail(s != NULL, FALSE);
    char *end;
    errno = 0;
    double v = g_ascii_strtod(s, &end);
    if (*s == '\0' || *end != '\0' || errno != 0 || !isfinite(v))
        return not_a_number(csv, row, column, "a number", error);
    *value = v;
    return TRUE;
}

gboolean
tps_csv_uint(const TpsCsv *csv, guint row, guint column, guint64 *value, GError **error)
{
    g_return_val_if_fail(value != NULL, FALSE);
    const char *s = tps_csv_field(csv, row, column);
    g_return_val_if_fail(s != NULL, FALSE);
    char *end;
    errno = 0;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    if (!g_ascii_isdigit(*s) || *end != '\0' || errno != 0)
        return not_a_number(csv, row, column, "a whole number", error);
    *value = v;
    return TRUE;
}
