/* The figure of a layout search (`tpsim search --plot`, docs/search.md):
 * step time against memory per GPU for every simulated layout, coloured by
 * tp, the Pareto front (no other layout both faster and smaller) drawn as
 * a line, the best layout labelled. PNG, SVG or PDF by extension. */
#pragma once

#include <glib.h>

#include "sched/search.h"

typedef struct TpsSearchPlot TpsSearchPlot;

/* The figure of `rows` (any order; rows not simulated are left out), for
 * the search of `scenario` on `gpus` GPUs, best row `best` (may be NULL).
 * Copies what it draws. */
TpsSearchPlot *tps_search_plot_new(const TpsScenario *scenario, guint gpus,
                                   const TpsSearchRow *rows, guint n, const TpsSearchRow *best);
void tps_search_plot_free(TpsSearchPlot *plot);

/* The same figure built as the rows come (any number, in any order: the
 * dots are drawn in the order added, kept in a temporary file, and only
 * the Pareto front and the axes' ranges are held in memory):
 * begin, add each row, end with the best row (may be NULL). */
TpsSearchPlot *tps_search_plot_begin(const TpsScenario *scenario, guint gpus);
void tps_search_plot_add(TpsSearchPlot *plot, const TpsSearchRow *row);
void tps_search_plot_end(TpsSearchPlot *plot, const TpsSearchRow *best);

/* The enumeration indices of the rows on the figure's front, by memory
 * ascending: up to `max` into `indices`; returns how many there are (for
 * the tests: the same as tps_search_pareto()'s). */
guint tps_search_plot_front(const TpsSearchPlot *plot, guint *indices, guint max);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsSearchPlot, tps_search_plot_free)

/* The indices into `rows` of the Pareto front, by memory ascending (for
 * the tests): a simulated row is on it when no other is at most as large
 * and as slow and better in one of the two. */
GArray *tps_search_pareto(const TpsSearchRow *rows, guint n);

gboolean tps_search_plot_write(const TpsSearchPlot *plot, const char *path, GError **error);
