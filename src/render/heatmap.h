/* Heatmaps of a sweep: a metric over two varied values, one cell per
 * pair, its value written in it and its colour on a sequential scale
 * (light: low, dark: high; cividis-like, readable by colour-blind readers
 * and in greyscale). An empty cell (no value there, a skipped point) is
 * hatched grey.
 *
 * Ownership: the heatmap owns its strings and values.
 */
#pragma once

#include <cairo.h>
#include <glib.h>

typedef struct TpsHeatmap TpsHeatmap;

/* Axis labels name the varied values; `x_values` and `y_values` are the
 * labels of the columns and rows (in order); `subtitle` may be NULL. */
TpsHeatmap *tps_heatmap_new(const char *title, const char *subtitle, const char *x_label,
                            const char *const *x_values, const char *y_label,
                            const char *const *y_values, const char *value_label);
void tps_heatmap_free(TpsHeatmap *heatmap);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsHeatmap, tps_heatmap_free)

/* The value of cell (x, y) (indices into the value lists); NAN: empty. */
void tps_heatmap_set(TpsHeatmap *heatmap, guint x, guint y, double value);

/* Paint `heatmap` (a const TpsHeatmap *) on cr; its size in points. */
void tps_heatmap_draw(cairo_t *cr, gconstpointer heatmap);
void tps_heatmap_size(const TpsHeatmap *heatmap, double *width, double *height);
/* Write to PNG, SVG or PDF (by extension), atomically. */
gboolean tps_heatmap_write(const TpsHeatmap *heatmap, const char *path, GError **error);
