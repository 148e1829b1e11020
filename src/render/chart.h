/* Line charts for sweeps: one series per strategy, x the swept parameter,
 * y a result metric. Axes carry their units, the legend sits in its own
 * column right of the plot (so it never covers data), markers differ by
 * series as well as colours (Okabe-Ito), so the chart reads in greyscale.
 *
 * Ownership: the chart owns its strings and points.
 */
#pragma once

#include <cairo.h>
#include <glib.h>

typedef struct TpsChart TpsChart;

/* `subtitle` may be NULL. */
TpsChart *tps_chart_new(const char *title, const char *subtitle, const char *x_label,
                        const char *y_label);
void tps_chart_free(TpsChart *chart);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsChart, tps_chart_free)

/* Powers of two on a log2 axis, ticks at the data's x values (a scatter
 * chart with more than a dozen distinct x values: at powers of two, 1024
 * and up written 1K, 1M, ...). */
void tps_chart_set_x_log2(TpsChart *chart, gboolean log2);

/* Scatter: small translucent markers and no lines, for thousands of points
 * (residual plots); a grey line at y = 0. */
void tps_chart_set_scatter(TpsChart *chart, gboolean scatter);

/* Adds a series; returns its index. */
guint tps_chart_add_series(TpsChart *chart, const char *name);
/* A second, smaller legend line under the series' name: what the name
 * means when it is not a preset a reader knows ("custom"). */
void tps_chart_set_series_note(TpsChart *chart, guint series, const char *note);
/* A point of series `series`; a NAN y is a gap (not applicable there). */
void tps_chart_add_point(TpsChart *chart, guint series, double x, double y);

guint tps_chart_n_series(const TpsChart *chart);
/* Size in points. */
void tps_chart_size(const TpsChart *chart, double *width, double *height);

/* Paint `chart` (a const TpsChart *) on cr. */
void tps_chart_draw(cairo_t *cr, gconstpointer chart);
/* Write to PNG, SVG or PDF (by extension), atomically. */
gboolean tps_chart_write(const TpsChart *chart, const char *path, GError **error);
