/* A small reader of the comma-separated files of the calibration set
 * (the CSV files of shared/calibration/measured): a header line naming the columns,
 * then one record per line. These files use no quoting (a field never holds
 * a comma or a line break), so none is supported: a quote character is
 * kept as text. Fields are kept as strings and converted on request, with
 * the file and line in every error.
 *
 * Ownership: a TpsCsv owns its text and every field; the strings it returns
 * live as long as it does.
 */
#pragma once

#include <glib.h>

typedef struct TpsCsv TpsCsv;

/* Parses `len` bytes of `text` (copied); `name` (usually the path) prefixes
 * every error. Empty lines are skipped, CR before LF is dropped. A record
 * with a different number of fields than the header, or a file without a
 * header: NULL with TPS_ERROR_INPUT "NAME:LINE: ...". */
TpsCsv *tps_csv_parse(const char *text, gsize len, const char *name, GError **error);

/* Reads and parses the file at `path` (TPS_ERROR_IO when it cannot be read). */
TpsCsv *tps_csv_load(const char *path, GError **error);

void tps_csv_free(TpsCsv *csv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsCsv, tps_csv_free)

const char *tps_csv_name(const TpsCsv *csv);
guint tps_csv_n_rows(const TpsCsv *csv);
guint tps_csv_n_columns(const TpsCsv *csv);
const char *tps_csv_header(const TpsCsv *csv, guint column);

/* The first column called `name` (a header may repeat a name: vtrain's two
 * time(ns) columns, out-of-place then in-place); FALSE with
 * TPS_ERROR_INPUT "NAME: no column 'x'" when there is none. */
gboolean tps_csv_column(const TpsCsv *csv, const char *name, guint *column, GError **error);

/* The line of the file that holds record `row` (1-based, for messages). */
guint tps_csv_line(const TpsCsv *csv, guint row);

const char *tps_csv_field(const TpsCsv *csv, guint row, guint column);

/* Field (row, column) as a finite number; otherwise FALSE with
 * TPS_ERROR_INPUT "NAME:LINE: column 'x': 'text' is not a number". */
gboolean tps_csv_double(const TpsCsv *csv, guint row, guint column, double *value, GError **error);

/* Field (row, column) as a whole number >= 0 (written without a fraction or
 * exponent); otherwise FALSE as tps_csv_double. */
gboolean tps_csv_uint(const TpsCsv *csv, guint row, guint column, guint64 *value, GError **error);
